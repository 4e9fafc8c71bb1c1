/* interp.c - the reference interpreter's driver: launch set-up, per-launch
 * storage, the op dispatch table, structured control flow and calls, and the
 * creation ops.  See interp.h for the contract and interp_impl.h for the
 * value representation; docs/interpreter.md describes the semantics.
 *
 *   nr_interp_launch
 *     check arguments -> map buffers to virtual addresses -> allocate the
 *     kernel's frame (storage for every value) and scratch -> for each
 *     program (x fastest, then y, then z): run the body block
 *
 * Every op executes through exec_table, generated from ops.def: an op
 * without an nr_iexec_<ID> does not link. */
#include "interp_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

static const NrIExecFn exec_table[NR_OP_COUNT] = {
#define OP(ID, ...) [NR_OP_##ID] = nr_iexec_##ID,
#include "ops.def"
#undef OP
};

enum {
    MAX_CALL_DEPTH = 64,
    MAX_NESTING = 1000,    /* regions inside regions, per function */
    VALUE_ALIGN = 64,      /* storage alignment of every value (vector loads) */
    HOST_LOW_MASK = 0xfff, /* host address bits kept in a buffer's virtual base */
};
/* Refuse launches whose value storage would exceed this many bytes. */
static const uint64_t MAX_FRAME_BYTES = (uint64_t)16 << 30;

/* --- diagnostics ------------------------------------------------------------------------------- */
NrIStatus nr_ifail(NrInterp *in, const NrOp *op, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *msg = nr_alloc(in->d->arena, (size_t)(n > 0 ? n : 0) + 1);
    vsnprintf(msg, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    nr_error(in->d, op ? op->loc : (NrLoc){0, 0, 0}, "%s", msg);
    return NR_IST_FAIL;
}

const char *nr_iwhere(NrInterp *in, const NrType *t, int64_t lane) {
    NrArena *a = in->d->arena;
    const char *prog = nr_sprintf(a, "program (%u, %u, %u)", in->pid[0], in->pid[1], in->pid[2]);
    if (!t || t->rank == 0) return prog;
    /* Row-major multi-index of the lane. */
    int64_t idx[NR_MAX_RANK];
    int64_t rest = lane;
    for (int k = t->rank - 1; k >= 0; k--) {
        int64_t s = t->shape[k] > 0 ? t->shape[k] : 1;
        idx[k] = rest % s;
        rest /= s;
    }
    char buf[NR_MAX_RANK * 24 + 4];
    size_t len = 0;
    for (int k = 0; k < t->rank; k++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%" PRId64, k ? ", " : "", idx[k]);
    return nr_sprintf(a, "%s, element %" PRId64 " of the block (index [%s])", prog, lane, buf);
}

/* --- frames ------------------------------------------------------------------------------------ */
static int val_kind(const NrType *t) { return t->ptr ? NR_IK_PTR : t->dtype; }

static int64_t type_numel(const NrType *t) {
    int64_t n = 1;
    for (int k = 0; k < t->rank; k++) {
        if (t->shape[k] < 0 || (t->shape[k] > 0 && n > (INT64_C(1) << 40) / t->shape[k])) return -1;
        n *= t->shape[k];
    }
    return n;
}

static int type_esize(const NrType *t) {
    if (t->ptr) return 8;
    int b = t->dtype > NR_DT_INVALID && t->dtype < NR_DT_COUNT ? nr_dtype_info[t->dtype].bytes : 0;
    return b > 0 ? b : 1;
}

static uint64_t val_bytes(const NrType *t) {
    int64_t n = type_numel(t);
    if (n < 0) return UINT64_MAX / 4;
    uint64_t b = (uint64_t)n * (uint64_t)type_esize(t);
    return (b + VALUE_ALIGN - 1) & ~(uint64_t)(VALUE_ALIGN - 1);
}

typedef struct FrameLayout {
    uint64_t *off; /* per value: byte offset + 1 (0 = no storage) */
    uint64_t total;
    bool too_deep; /* regions nest deeper than MAX_NESTING */
} FrameLayout;

static void layout_val(NrFunc *f, FrameLayout *L, NrValId v) {
    if (v <= 0 || v >= f->nvals || L->off[v]) return;
    L->off[v] = L->total + 1;
    uint64_t b = val_bytes(&f->mod->types[f->vals[v].type]);
    L->total = L->total + b > L->total ? L->total + b : UINT64_MAX / 4;
    if (L->total > UINT64_MAX / 4) L->total = UINT64_MAX / 4;
}

/* Assigns storage to the live values of block b and its nested regions. */
static void layout_block(NrFunc *f, FrameLayout *L, NrBlockId b, int depth) {
    if (depth > MAX_NESTING) {
        L->too_deep = true;
        return;
    }
    const NrBlock *blk = &f->blocks[b];
    for (int i = 0; i < blk->nargs; i++) layout_val(f, L, blk->args[i]);
    for (NrOpId o = blk->first; o; o = f->ops[o].next) {
        const NrOp *op = &f->ops[o];
        for (int i = 0; i < op->nresults; i++) layout_val(f, L, op->results[i]);
        for (int r = 0; r < op->nregions; r++) layout_block(f, L, op->regions[r], depth + 1);
    }
}

static NrIFrame *frame_new(NrInterp *in, NrFunc *f, int depth, const NrOp *at) {
    FrameLayout L;
    L.off = calloc((size_t)f->nvals + 1, sizeof(uint64_t));
    L.total = 0;
    L.too_deep = false;
    if (!L.off) {
        nr_ifail(in, at, "out of memory setting up the interpreter");
        return NULL;
    }
    layout_block(f, &L, f->body, 0);
    if (L.too_deep) {
        free(L.off);
        nr_ifail(in, at, "function '%s' nests regions deeper than %d", f->name, MAX_NESTING);
        return NULL;
    }
    if (L.total > MAX_FRAME_BYTES) {
        free(L.off);
        nr_ifail(in, at,
                 "function '%s' needs %" PRIu64 " MiB of block storage; the interpreter's limit is %" PRIu64 " MiB",
                 f->name, L.total >> 20, MAX_FRAME_BYTES >> 20);
        return NULL;
    }
    NrIFrame *fr = calloc(1, sizeof *fr);
    void *storage = NULL;
    NrIVal *vals = calloc((size_t)f->nvals + 1, sizeof(NrIVal));
    if (fr && vals && posix_memalign(&storage, VALUE_ALIGN, L.total ? (size_t)L.total : VALUE_ALIGN) != 0)
        storage = NULL;
    if (!fr || !vals || !storage) {
        free(fr);
        free(vals);
        free(storage);
        free(L.off);
        nr_ifail(in, at, "out of memory: function '%s' needs %" PRIu64 " bytes of block storage", f->name, L.total);
        return NULL;
    }
    memset(storage, 0, (size_t)L.total);
    for (NrValId v = 1; v < f->nvals; v++) {
        const NrType *t = &f->mod->types[f->vals[v].type];
        vals[v].t = t;
        vals[v].kind = (uint8_t)val_kind(t);
        vals[v].esize = (uint8_t)type_esize(t);
        vals[v].n = L.off[v] ? type_numel(t) : 0;
        vals[v].p = L.off[v] ? (unsigned char *)storage + (L.off[v] - 1) : NULL;
    }
    free(L.off);
    fr->f = f;
    fr->v = vals;
    fr->storage = storage;
    fr->depth = depth;
    fr->next = in->frames;
    in->frames = fr;
    return fr;
}

static void frames_free(NrInterp *in) {
    NrIFrame *fr = in->frames;
    while (fr) {
        NrIFrame *next = fr->next;
        free(fr->v);
        free(fr->storage);
        free(fr);
        fr = next;
    }
    in->frames = NULL;
}

/* Scratch and swap sizes: the largest value (8 bytes per element) and the
 * largest set of values one copy may move, over every function that may run. */
static void size_func(NrFunc *f, uint64_t *maxnumel, uint64_t *maxset) {
    for (NrValId v = 1; v < f->nvals; v++) {
        int64_t n = type_numel(&f->mod->types[f->vals[v].type]);
        if (n > 0 && (uint64_t)n > *maxnumel) *maxnumel = (uint64_t)n;
    }
    for (NrBlockId b = 1; b < f->nblocks; b++) {
        uint64_t s = 0;
        for (int i = 0; i < f->blocks[b].nargs; i++) s += val_bytes(&f->mod->types[f->vals[f->blocks[b].args[i]].type]);
        if (s > *maxset) *maxset = s;
    }
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || (!op->nregions && op->opc != NR_OP_CALL)) continue;
        uint64_t s = 0;
        for (int i = 0; i < op->nresults; i++) s += val_bytes(&f->mod->types[f->vals[op->results[i]].type]);
        if (s > *maxset) *maxset = s;
    }
}

static bool alloc_scratch(NrInterp *in, NrFunc *f) {
    uint64_t maxnumel = 1, maxset = VALUE_ALIGN;
    size_func(f, &maxnumel, &maxset);
    for (int i = 0; i < f->mod->nfuncs; i++)
        if (f->mod->funcs[i] != f) size_func(f->mod->funcs[i], &maxnumel, &maxset);
    if (maxnumel > (UINT64_C(1) << 32) || maxset > MAX_FRAME_BYTES) {
        nr_error(in->d, f->loc, "kernel '%s' has blocks too large for the interpreter", f->name);
        return false;
    }
    in->scratch_bytes = (size_t)(maxnumel * 8 + VALUE_ALIGN);
    in->swap_bytes = (size_t)maxset;
    for (int i = 0; i < NR_ISCRATCH; i++)
        if (posix_memalign(&in->scratch[i], VALUE_ALIGN, in->scratch_bytes) != 0) in->scratch[i] = NULL;
    if (posix_memalign(&in->swap, VALUE_ALIGN, in->swap_bytes) != 0) in->swap = NULL;
    bool ok = in->swap != NULL;
    for (int i = 0; i < NR_ISCRATCH; i++) ok = ok && in->scratch[i] != NULL;
    if (!ok) nr_error(in->d, f->loc, "out of memory setting up the interpreter");
    return ok;
}

/* --- copying values ------------------------------------------------------------------------------ */
static void copy_slot(NrIVal *d, const NrIVal *s) {
    if (d == s || !d->p || !s->p) return;
    uint64_t db = (uint64_t)d->n * d->esize, sb = (uint64_t)s->n * s->esize;
    memcpy(d->p, s->p, (size_t)(db < sb ? db : sb));
}

void nr_icopy_vals(NrInterp *in, NrIFrame *dfr, const NrValId *dst, NrIFrame *sfr, const NrValId *src, int n) {
    bool conflict = false;
    if (dfr == sfr)
        for (int i = 0; i < n && !conflict; i++)
            for (int j = 0; j < i; j++)
                if (dst[j] == src[i] && src[i] != dst[i]) conflict = true;
    if (!conflict) {
        for (int i = 0; i < n; i++) copy_slot(&dfr->v[dst[i]], &sfr->v[src[i]]);
        return;
    }
    /* A permutation (yield %b, %a): stage every source first. */
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            NrIVal *d = &dfr->v[dst[i]];
            const NrIVal *s = &sfr->v[src[i]];
            size_t sb = (size_t)s->n * s->esize, db = (size_t)d->n * d->esize, b = sb < db ? sb : db;
            /* The destinations are one block's arguments: swap holds them all. */
            if (!d->p || !s->p || off + b > in->swap_bytes) continue;
            if (pass == 0)
                memcpy((unsigned char *)in->swap + off, s->p, b);
            else
                memcpy(d->p, (unsigned char *)in->swap + off, b);
            off += (b + VALUE_ALIGN - 1) & ~(size_t)(VALUE_ALIGN - 1);
        }
    }
}

/* --- running blocks -------------------------------------------------------------------------------- */
NrIStatus nr_irun_block(NrInterp *in, NrIFrame *fr, NrBlockId b, const NrOp **term) {
    const NrFunc *f = fr->f;
    *term = NULL;
    for (NrOpId o = f->blocks[b].first; o; o = f->ops[o].next) {
        const NrOp *op = &f->ops[o];
        if (in->max_steps && ++in->steps > in->max_steps)
            return nr_ifail(in, op,
                            "the launch exceeded its limit of %" PRIu64 " executed ops in %s; "
                            "the kernel may loop forever",
                            in->max_steps, nr_iwhere(in, NULL, 0));
        if (op->opc <= NR_OP_INVALID || op->opc >= NR_OP_COUNT) return nr_ifail(in, op, "invalid op %d", op->opc);
        NrIStatus st = exec_table[op->opc](in, fr, op);
        if (st == NR_IST_OK) continue;
        if (st == NR_IST_TERM) {
            *term = op;
            return NR_IST_OK;
        }
        return st;
    }
    return NR_IST_OK;
}

/* Runs region r of op; on success *term is its terminator (or NULL). */
static NrIStatus run_region(NrInterp *in, NrIFrame *fr, const NrOp *op, int r, const NrOp **term) {
    if (r >= op->nregions) {
        *term = NULL;
        return NR_IST_OK;
    }
    return nr_irun_block(in, fr, op->regions[r], term);
}

/* The terminator must be `want` with `n` operands (n < 0: any count). */
static NrIStatus check_term(NrInterp *in, const NrOp *op, const NrOp *term, NrOpcode want, int n) {
    if (term && term->opc == want && (n < 0 || term->nopnds == n)) return NR_IST_OK;
    if (!term && n == 0) return NR_IST_OK;
    return nr_ifail(in, op, "malformed '%s': a region does not end in '%s' with %d values", nr_op_info[op->opc].name,
                    nr_op_info[want].name, n);
}

/* --- control flow ---------------------------------------------------------------------------------- */
/* iv + step, unless it leaves the range of the iv's type. */
static bool next_iv(int kind, int64_t iv, int64_t step, int64_t *out) {
    int bits = kind < NR_DT_COUNT ? nr_dtype_info[kind].bits : 64;
    if (nr_ik_unsigned(kind)) {
        uint64_t s = (uint64_t)iv + (uint64_t)step;
        if (bits == 64) {
            /* A negative step (as a signed quantity) counts down; either way, stop on wrap. */
            if ((step >= 0 && s < (uint64_t)iv) || (step < 0 && s > (uint64_t)iv)) return false;
        } else if (s >> bits) {
            return false;
        }
        *out = (int64_t)s;
        return true;
    }
    int64_t s;
    if (__builtin_add_overflow(iv, step, &s)) return false;
    if (bits < 64) {
        int64_t lim = INT64_C(1) << (bits - 1);
        if (s < -lim || s >= lim) return false;
    }
    *out = s;
    return true;
}

/* Passes a loop body's yielded values to its carried arguments.  When every
 * yielded value is computed by an op of the body itself (the usual case), the
 * storage of each pair is exchanged instead of copied: the yielded value is
 * recomputed before it is read again, so its old contents are dead. */
static void carry(NrInterp *in, NrIFrame *fr, NrBlockId body, const NrValId *dst, const NrValId *src, int n) {
    const NrFunc *f = fr->f;
    bool swap = true;
    for (int i = 0; i < n && swap; i++) {
        NrOpId d = f->vals[src[i]].def;
        const NrIVal *a = &fr->v[dst[i]], *b = &fr->v[src[i]];
        swap = d && f->ops[d].block == body && a->n == b->n && a->esize == b->esize && a->p && b->p;
        for (int j = 0; j < i && swap; j++) swap = src[j] != src[i];
    }
    if (!swap) {
        nr_icopy_vals(in, fr, dst, fr, src, n);
        return;
    }
    for (int i = 0; i < n; i++) {
        void *t = fr->v[dst[i]].p;
        fr->v[dst[i]].p = fr->v[src[i]].p;
        fr->v[src[i]].p = t;
    }
}

/* for iv = lb; iv < ub; iv += step: the region's arguments are (iv, carried...). */
NrIStatus nr_iexec_FOR(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrFunc *f = fr->f;
    int nc = op->nopnds - 3;
    if (nc < 0 || op->nregions < 1 || op->nresults != nc || f->blocks[op->regions[0]].nargs != nc + 1)
        return nr_ifail(in, op, "malformed 'for'");
    const NrBlock *body = &f->blocks[op->regions[0]];
    NrIVal *lbv = nr_iopnd(fr, op, 0);
    int kind = lbv->kind;
    if (!nr_ik_int(kind)) return nr_ifail(in, op, "malformed 'for': the induction variable is not an integer");
    int64_t lb = nr_iget_i64(kind, lbv->p, 0);
    int64_t ub = nr_iget_i64(nr_iopnd(fr, op, 1)->kind, nr_iopnd(fr, op, 1)->p, 0);
    int64_t step = nr_iget_i64(nr_iopnd(fr, op, 2)->kind, nr_iopnd(fr, op, 2)->p, 0);
    bool uns = nr_ik_unsigned(kind);
    NrIVal *ivv = &fr->v[body->args[0]];
    nr_icopy_vals(in, fr, body->args + 1, fr, op->opnds + 3, nc);
    for (int64_t iv = lb; uns ? (uint64_t)iv < (uint64_t)ub : iv < ub;) {
        nr_iput_i64(ivv->kind, ivv->p, 0, iv);
        const NrOp *term;
        NrIStatus st = nr_irun_block(in, fr, op->regions[0], &term);
        if (st != NR_IST_OK) return st;
        if (check_term(in, op, term, NR_OP_YIELD, nc) != NR_IST_OK) return NR_IST_FAIL;
        if (term) carry(in, fr, op->regions[0], body->args + 1, term->opnds, nc);
        if (!next_iv(kind, iv, step, &iv)) break;
    }
    nr_icopy_vals(in, fr, op->results, fr, body->args + 1, nc);
    return NR_IST_OK;
}

NrIStatus nr_iexec_IF(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *c = nr_iopnd(fr, op, 0);
    int r = nr_iget_i64(c->kind, c->p, 0) != 0 ? 0 : 1;
    const NrOp *term;
    NrIStatus st = run_region(in, fr, op, r, &term);
    if (st != NR_IST_OK) return st;
    if (check_term(in, op, term, NR_OP_YIELD, op->nresults) != NR_IST_OK) return NR_IST_FAIL;
    if (term) nr_icopy_vals(in, fr, op->results, fr, term->opnds, op->nresults);
    return NR_IST_OK;
}

/* Region 0 (carried...) ends in condition(c, v...); while c, region 1 (v...)
 * yields the next carried values; the results are the last v... */
NrIStatus nr_iexec_WHILE(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrFunc *f = fr->f;
    if (op->nregions < 2 || f->blocks[op->regions[0]].nargs != op->nopnds ||
        f->blocks[op->regions[1]].nargs != op->nresults)
        return nr_ifail(in, op, "malformed 'while'");
    const NrBlock *before = &f->blocks[op->regions[0]], *after = &f->blocks[op->regions[1]];
    nr_icopy_vals(in, fr, before->args, fr, op->opnds, op->nopnds);
    for (;;) {
        const NrOp *term;
        NrIStatus st = nr_irun_block(in, fr, op->regions[0], &term);
        if (st != NR_IST_OK) return st;
        if (check_term(in, op, term, NR_OP_CONDITION, op->nresults + 1) != NR_IST_OK) return NR_IST_FAIL;
        NrIVal *c = nr_iopnd(fr, term, 0);
        if (nr_iget_i64(c->kind, c->p, 0) == 0) {
            nr_icopy_vals(in, fr, op->results, fr, term->opnds + 1, op->nresults);
            return NR_IST_OK;
        }
        nr_icopy_vals(in, fr, after->args, fr, term->opnds + 1, op->nresults);
        st = nr_irun_block(in, fr, op->regions[1], &term);
        if (st != NR_IST_OK) return st;
        if (check_term(in, op, term, NR_OP_YIELD, op->nopnds) != NR_IST_OK) return NR_IST_FAIL;
        if (term) nr_icopy_vals(in, fr, before->args, fr, term->opnds, op->nopnds);
    }
}

NrIStatus nr_iexec_YIELD(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in, (void)fr, (void)op;
    return NR_IST_TERM;
}

NrIStatus nr_iexec_CONDITION(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in, (void)fr, (void)op;
    return NR_IST_TERM;
}

NrIStatus nr_iexec_RETURN(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    if (fr->caller) {
        if (op->nopnds != fr->call->nresults)
            return nr_ifail(in, op, "function '%s' returns %d values, its call expects %d", fr->f->name, op->nopnds,
                            fr->call->nresults);
        nr_icopy_vals(in, fr->caller, fr->call->results, fr, op->opnds, op->nopnds);
    }
    return NR_IST_RET;
}

/* Calls run the callee's body in a frame of its own, one per call depth, so
 * that recursion (up to MAX_CALL_DEPTH) keeps every activation's values. */
NrIStatus nr_iexec_CALL(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    const char *name = nr_iattr_str(op, NR_A_CALLEE, NULL);
    NrFunc *g = name ? nr_module_find_func(in->m, name) : NULL;
    if (!g) return nr_ifail(in, op, "call to unknown function '%s'", name ? name : "");
    const NrBlock *body = &g->blocks[g->body];
    if (body->nargs != op->nopnds)
        return nr_ifail(in, op, "function '%s' takes %d arguments, the call passes %d", g->name, body->nargs,
                        op->nopnds);
    if (in->call_depth + 1 > MAX_CALL_DEPTH)
        return nr_ifail(in, op, "calls nest deeper than %d in %s", MAX_CALL_DEPTH, nr_iwhere(in, NULL, 0));
    int depth = in->call_depth + 1;
    NrIFrame *cf = in->frames;
    while (cf && !(cf->f == g && cf->depth == depth)) cf = cf->next;
    if (!cf && !(cf = frame_new(in, g, depth, op))) return NR_IST_FAIL;
    nr_icopy_vals(in, cf, body->args, fr, op->opnds, op->nopnds);
    cf->caller = fr;
    cf->call = op;
    in->call_depth = depth;
    const NrOp *term;
    NrIStatus st = nr_irun_block(in, cf, g->body, &term);
    in->call_depth = depth - 1;
    cf->caller = NULL;
    cf->call = NULL;
    if (st == NR_IST_FAIL) return st;
    if (st != NR_IST_RET && op->nresults > 0)
        return nr_ifail(in, op, "function '%s' ended without returning its values", g->name);
    return NR_IST_OK;
}

/* --- creation ops ----------------------------------------------------------------------------------- */
static void fill(void *dst, const void *elem, int64_t n, int es) {
    switch (es) {
    case 1: memset(dst, *(const uint8_t *)elem, (size_t)n); break;
    case 2: {
        uint16_t v, *d = dst;
        memcpy(&v, elem, 2);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    case 4: {
        uint32_t v, *d = dst;
        memcpy(&v, elem, 4);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    default: {
        uint64_t v, *d = dst;
        memcpy(&v, elem, 8);
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    }
}

NrIStatus nr_iexec_CONST(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *r = nr_ires(fr, op, 0);
    const NrAttr *a = nr_iattr(op, NR_A_VALUE);
    if (!a) return nr_ifail(in, op, "malformed 'const': no value");
    if (r->n == 0) return NR_IST_OK;
    if (a->kind == NR_AK_FLOAT) {
        if (nr_ik_float(r->kind)) {
            nr_iput_f64(r->kind, r->p, 0, a->v.f);
        } else {
            /* A float constant of integer type converts as a cast would. */
            double v = a->v.f;
            int64_t iv = v != v                        ? 0
                         : v >= 9223372036854775807.0  ? INT64_MAX
                         : v <= -9223372036854775808.0 ? INT64_MIN
                                                       : (int64_t)v;
            nr_iput_i64(r->kind, r->p, 0, iv);
        }
    } else {
        nr_iput_i64(r->kind, r->p, 0, a->v.i);
    }
    fill((unsigned char *)r->p + r->esize, r->p, r->n - 1, r->esize);
    return NR_IST_OK;
}

NrIStatus nr_iexec_ARANGE(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in;
    NrIVal *r = nr_ires(fr, op, 0);
    int64_t start = nr_iattr_int(op, NR_A_START, 0);
    if (r->kind == NR_DT_I32) {
        int32_t *d = r->p;
        for (int64_t i = 0; i < r->n; i++) d[i] = (int32_t)(uint32_t)((uint64_t)start + (uint64_t)i);
    } else {
        for (int64_t i = 0; i < r->n; i++) nr_iput_i64(r->kind, r->p, i, (int64_t)((uint64_t)start + (uint64_t)i));
    }
    return NR_IST_OK;
}

NrIStatus nr_iexec_SPLAT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in;
    NrIVal *r = nr_ires(fr, op, 0), *a = nr_iopnd(fr, op, 0);
    if (r->n && a->n) fill(r->p, a->p, r->n, r->esize);
    return NR_IST_OK;
}

static NrIStatus grid_query(NrInterp *in, NrIFrame *fr, const NrOp *op, const uint32_t *v) {
    int64_t axis = nr_iattr_int(op, NR_A_AXIS, 0);
    if (axis < 0 || axis > 2)
        return nr_ifail(in, op, "'%s' axis must be 0, 1 or 2, got %" PRId64, nr_op_info[op->opc].name, axis);
    NrIVal *r = nr_ires(fr, op, 0);
    nr_iput_i64(r->kind, r->p, 0, (int64_t)v[axis]);
    fill((unsigned char *)r->p + r->esize, r->p, r->n - 1, r->esize);
    return NR_IST_OK;
}

NrIStatus nr_iexec_PROGRAM_ID(NrInterp *in, NrIFrame *fr, const NrOp *op) { return grid_query(in, fr, op, in->pid); }
NrIStatus nr_iexec_NUM_PROGRAMS(NrInterp *in, NrIFrame *fr, const NrOp *op) { return grid_query(in, fr, op, in->grid); }

/* --- hints and no-ops ---------------------------------------------------------------------------------- */
NrIStatus nr_iexec_HINT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in;
    copy_slot(nr_ires(fr, op, 0), nr_iopnd(fr, op, 0));
    return NR_IST_OK;
}

NrIStatus nr_iexec_ASSUME(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in, (void)fr, (void)op;
    return NR_IST_OK;
}

NrIStatus nr_iexec_BARRIER(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in, (void)fr, (void)op;
    return NR_IST_OK;
}

/* --- launch ---------------------------------------------------------------------------------------- */
static const char *arg_name(NrInterp *in, NrFunc *f, const NrInterpArg *a, int i) {
    if (a->name) return a->name;
    if (f->params && f->params[i].name) return f->params[i].name;
    const char *vn = f->vals[f->blocks[f->body].args[i]].name;
    if (vn) return vn;
    return nr_sprintf(in->d->arena, "#%d", i);
}

/* Checks argument i against parameter type t and stores it in body arg v. */
static bool bind_arg(NrInterp *in, NrFunc *f, NrIVal *v, const NrInterpArg *a, int i) {
    const NrType *t = v->t;
    NrIBuf *b = &in->bufs[i];
    b->name = arg_name(in, f, a, i);
    if (t->rank != 0) {
        nr_error(in->d, f->loc, "parameter '%s' is a block; kernel parameters must be scalars or pointers", b->name);
        return false;
    }
    if (t->ptr) {
        if (a->kind != NR_IA_BUFFER) {
            nr_error(in->d, f->loc, "argument '%s' must be a buffer (the parameter is a pointer)", b->name);
            return false;
        }
        if (a->bytes >= (UINT64_C(1) << NR_INTERP_SHIFT) - HOST_LOW_MASK - 1) {
            nr_error(in->d, f->loc, "buffer '%s' is too large for the interpreter (%zu bytes)", b->name, a->bytes);
            return false;
        }
        if (a->bytes && !a->data) {
            nr_error(in->d, f->loc, "buffer '%s' has %zu bytes but no memory", b->name, a->bytes);
            return false;
        }
        b->is_buf = true;
        b->host = a->data;
        b->bytes = a->bytes;
        /* Keep the host address's low bits so alignment facts carry over. */
        b->vbase = NR_INTERP_BASE(i) + ((uintptr_t)a->data & HOST_LOW_MASK);
        memcpy(v->p, &b->vbase, 8);
        return true;
    }
    if (nr_ik_float(v->kind)) {
        if (a->kind == NR_IA_FLOAT)
            nr_iput_f64(v->kind, v->p, 0, a->f);
        else if (a->kind == NR_IA_INT)
            nr_iput_f64(v->kind, v->p, 0, (double)a->i);
        else {
            nr_error(in->d, f->loc, "argument '%s' must be a number (the parameter is %s)", b->name,
                     nr_dtype_info[v->kind].ir);
            return false;
        }
        return true;
    }
    if (a->kind != NR_IA_INT) {
        nr_error(in->d, f->loc, "argument '%s' must be an integer (the parameter is %s)", b->name,
                 nr_dtype_info[v->kind].ir);
        return false;
    }
    nr_iput_i64(v->kind, v->p, 0, a->i);
    return true;
}

static void run_programs(NrInterp *in, NrIFrame *kf) {
    NrFunc *f = kf->f;
    for (uint32_t z = 0; z < in->grid[2]; z++)
        for (uint32_t y = 0; y < in->grid[1]; y++)
            for (uint32_t x = 0; x < in->grid[0]; x++) {
                in->pid[0] = x;
                in->pid[1] = y;
                in->pid[2] = z;
                const NrOp *term;
                if (nr_irun_block(in, kf, f->body, &term) == NR_IST_FAIL) return;
            }
}

bool nr_interp_launch(NrFunc *f, const uint32_t grid[3], const NrInterpArg *args, int nargs, const NrInterpOptions *opt,
                      NrDiags *d) {
    NrInterp in;
    memset(&in, 0, sizeof in);
    in.m = f->mod;
    in.d = d;
    in.out = opt && opt->print_out ? opt->print_out : stdout;
    in.max_steps = opt ? opt->max_steps : 0;
    int errors0 = d->nerrors;
    const NrBlock *body = &f->blocks[f->body];
    if (nargs != body->nargs || (nargs > 0 && !args)) {
        nr_error(d, f->loc, "kernel '%s' takes %d runtime arguments, got %d", f->name, body->nargs, nargs);
        return false;
    }
    for (int k = 0; k < 3; k++) {
        in.grid[k] = grid[k];
        if (grid[k] > INT32_MAX) {
            nr_error(d, f->loc, "grid dimension %d is %u; the largest is %d", k, grid[k], INT32_MAX);
            return false;
        }
    }
    in.bufs = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof(NrIBuf));
    in.nbufs = nargs;
    if (!in.bufs) {
        nr_error(d, f->loc, "out of memory setting up the interpreter");
        return false;
    }
    NrIFrame *kf = NULL;
    bool ok = alloc_scratch(&in, f) && (kf = frame_new(&in, f, 0, NULL)) != NULL;
    for (int i = 0; ok && i < nargs; i++) ok = bind_arg(&in, f, &kf->v[body->args[i]], &args[i], i);
    if (ok && grid[0] && grid[1] && grid[2]) run_programs(&in, kf);
    frames_free(&in);
    for (int i = 0; i < NR_ISCRATCH; i++) free(in.scratch[i]);
    free(in.swap);
    free(in.bufs);
    return d->nerrors == errors0;
}
