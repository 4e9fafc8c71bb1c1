/* gpu_smem.c - shared-memory allocation (pass gpu-smem).
 *
 * Requires GPU IR.  Two kinds of users share the kernel's shared memory:
 *   buffers  each local_alloc, live from the alloc to the last use of it or
 *            of a view of it (memdesc_index); a use inside a loop that the
 *            alloc is outside of keeps it live to the end of that loop; one that
 *            async copies write, to the next async_wait {num = 0} after that
 *   scratch  what the PTX emitter needs inside one op (a reduction across
 *            warps, a conversion through shared memory, ...): the emitter's
 *            nr_ptx_scratch_bytes, live during that op only
 * Users whose lifetimes overlap get disjoint byte ranges; the others may
 * share.  Placement is first fit, largest users first, 16-byte aligned
 * (nvmma buffers: aligned to their swizzle pattern, 8 x swizzle bytes).
 * Each user's op gets `smem_offset` (bytes) and the function its total,
 * NrFunc.smem_bytes (printed `smem = N`). */
#include "gpu_impl.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef struct User {
    NrOpId op;
    int64_t bytes, align;
    int32_t start, end;    /* program positions, inclusive */
    int64_t offset;
    bool async;            /* async copies write it */
} User;

typedef struct Smem {
    NrModule *m;
    NrFunc *f;
    NrArena scratch;
    int32_t *pos;          /* per op: preorder position */
    int32_t *last;         /* per op: the last position inside it (itself if it has no regions) */
    int32_t npos;
    User *users; int nusers, capusers;
} Smem;

static void number(Smem *s, NrBlockId b, int depth) {
    if (depth > 1000) return;
    NR_FOR_OPS(s->f, b, o) {
        s->pos[o] = s->npos++;
        for (int r = 0; r < s->f->ops[o].nregions; r++) number(s, s->f->ops[o].regions[r], depth + 1);
        s->last[o] = s->npos - 1;
    }
}

/* Whether op `anc` (an op with regions) contains op `o`. */
static bool contains(Smem *s, NrOpId anc, NrOpId o) { return s->pos[o] > s->pos[anc] && s->pos[o] <= s->last[anc]; }

/* The last position at which a use by op `use` needs a buffer defined by
 * op `def`: the use itself, or the end of the outermost loop around the use
 * that does not contain the definition. */
static int32_t live_until(Smem *s, NrOpId def, NrOpId use) {
    NrFunc *f = s->f;
    int32_t end = s->pos[use];
    for (NrOpId p = f->blocks[f->ops[use].block].parent; p; p = f->blocks[f->ops[p].block].parent) {
        bool loop = f->ops[p].opc == NR_OP_FOR || f->ops[p].opc == NR_OP_WHILE;
        if (loop && !contains(s, p, def) && s->last[p] > end) end = s->last[p];
    }
    return end;
}

/* Extends the lifetime of buffer u through every use of value v (and of
 * the views made from it). */
static void extend(Smem *s, User *u, NrValId v, int depth) {
    NrFunc *f = s->f;
    if (depth > 16) return;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block) continue;
        for (int i = 0; i < op->nopnds; i++) {
            if (op->opnds[i] != v) continue;
            int32_t e = live_until(s, u->op, o);
            if (op->opc == NR_OP_FOR || op->opc == NR_OP_WHILE || op->opc == NR_OP_IF || op->opc == NR_OP_YIELD ||
                op->opc == NR_OP_CONDITION || op->opc == NR_OP_CALL || op->opc == NR_OP_RETURN)
                e = s->npos; /* carried or passed on: live to the end */
            if (e > u->end) u->end = e;
            if (op->opc == NR_OP_ASYNC_COPY && i == 1) u->async = true;
            if (op->opc == NR_OP_MEMDESC_INDEX || op->opc == NR_OP_MEMDESC_TRANS) extend(s, u, op->results[0], depth + 1);
        }
    }
}

/* The PTX emitter answers nr_ptx_scratch_bytes.  The reference is weak so
 * that programs without the emitter (tools and tests of other phases) still
 * link; running gpu-smem or gpu-barriers without it is an internal error. */
#pragma weak nr_ptx_scratch_bytes
int64_t nr_gpu_scratch_bytes(NrFunc *f, NrOpId op) {
    if (!nr_ptx_scratch_bytes) NR_ICE("the GPU passes need the PTX emitter's nr_ptx_scratch_bytes");
    return nr_ptx_scratch_bytes(f, op);
}

static int64_t buffer_bytes(const NrModule *m, NrTypeId t) {
    return nr_type_numel(m, t) * nr_dtype_info[m->types[t].dtype].bytes;
}

/* A buffer that async copies write stays live until every copy is done:
 * to the first `async_wait {num = 0}` after its last use (copies past the
 * end of a pipelined loop are still landing there; an op placed between
 * the loop and that wait must not take those bytes). */
static void extend_to_drain(Smem *s, User *u) {
    NrFunc *f = s->f;
    int32_t drain = -1;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || op->opc != NR_OP_ASYNC_WAIT || nr_op_int(f, o, NR_A_NUM, 0) != 0) continue;
        if (s->pos[o] > u->end && (drain < 0 || s->pos[o] < drain)) drain = s->pos[o];
    }
    if (drain > u->end) u->end = drain;
}

static void collect(NrFunc *f, NrOpId op, void *ctx) {
    Smem *s = ctx;
    const NrOp *o = &f->ops[op];
    if (o->opc == NR_OP_LOCAL_ALLOC) {
        NrTypeId t = f->vals[o->results[0]].type;
        const NrLayout *l = nr_layout(s->m, s->m->types[t].layout);
        User u = {op, buffer_bytes(s->m, t), 16, s->pos[op], s->pos[op], 0, false};
        if (l->nvmma && l->swizzle_bytes) u.align = 8 * (int64_t)l->swizzle_bytes;
        extend(s, &u, o->results[0], 0);
        if (u.async) extend_to_drain(s, &u);
        *NR_PUSH(&s->scratch, s->users, s->nusers, s->capusers) = u;
        return;
    }
    int64_t bytes = nr_gpu_scratch_bytes(f, op);
    if (bytes > 0)
        *NR_PUSH(&s->scratch, s->users, s->nusers, s->capusers) = (User){op, bytes, 16, s->pos[op], s->pos[op], 0, false};
}

static int by_size(const void *a, const void *b) {
    const User *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The lowest aligned offset where u fits beside the placed users that are
 * live at the same time. */
static int64_t place(const Smem *s, int placed, const User *u) {
    int64_t off = 0;
    for (bool moved = true; moved;) {
        moved = false;
        off = (off + u->align - 1) / u->align * u->align;
        for (int i = 0; i < placed; i++) {
            const User *p = &s->users[i];
            bool live = p->start <= u->end && u->start <= p->end;
            if (live && off < p->offset + p->bytes && p->offset < off + u->bytes) {
                off = p->offset + p->bytes;
                moved = true;
            }
        }
    }
    return off;
}

/* Shared memory one program (CTA) may use, in bytes, by compute capability. */
static int64_t smem_limit(int sm) {
    if (sm >= 90) return 227 * 1024;
    if (sm == 80 || sm == 87) return 163 * 1024;
    return 99 * 1024;
}

static bool alloc_func(NrModule *m, NrFunc *f, NrDiags *d) {
    Smem s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.f = f;
    nr_arena_init(&s.scratch);
    s.pos = nr_alloc(&s.scratch, sizeof(int32_t) * (size_t)f->nops);
    s.last = nr_alloc(&s.scratch, sizeof(int32_t) * (size_t)f->nops);
    number(&s, f->body, 0);
    nr_walk(f, collect, &s);
    if (s.nusers) qsort(s.users, (size_t)s.nusers, sizeof(User), by_size);
    int64_t total = 0;
    for (int i = 0; i < s.nusers; i++) {
        User *u = &s.users[i];
        u->offset = place(&s, i, u);
        nr_op_set_int(f, u->op, NR_A_SMEM_OFFSET, u->offset);
        if (u->offset + u->bytes > total) total = u->offset + u->bytes;
    }
    f->smem_bytes = (total + 15) / 16 * 16;
    nr_arena_free(&s.scratch);
    int sm = nr_gpu_sm(m);
    if (f->is_kernel && f->smem_bytes > smem_limit(sm)) {
        nr_error(d, f->loc, "kernel @%s needs %lld bytes of shared memory, more than the %lld that sm_%d allows",
                 f->name, (long long)f->smem_bytes, (long long)smem_limit(sm), sm);
        return false;
    }
    return true;
}

bool nr_gpu_alloc_smem(NrModule *m, NrDiags *d) {
    bool ok = true;
    for (int i = 0; i < m->nfuncs; i++) ok = alloc_func(m, m->funcs[i], d) && ok;
    return ok;
}
