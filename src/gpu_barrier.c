/* gpu_barrier.c - barriers for shared memory (pass gpu-barriers).
 *
 * Requires GPU IR after gpu-smem (smem_offset on every local_alloc and on
 * every op with scratch).  Walks each function in program order keeping the
 * byte ranges of shared memory written and read since the last barrier, and
 * the ranges async copies are still filling.  A `barrier` goes before an op
 *   - that reads a range written since the last barrier (local_store or a
 *     completed async copy, then local_load or warp_group_dot: another thread
 *     may read what one wrote);
 *   - that writes (local_store, local_alloc with a value, async_copy) a range
 *     read or written since the last barrier (reuse of a buffer, or of bytes
 *     another buffer or an op's scratch used before);
 * and nowhere else.  async_wait turns the copies it waits for into ordinary
 * writes (they become visible to the waiting thread only).  TMA copies
 * (tma_load) complete at an mbarrier_wait, where every reader waits itself;
 * an mbarrier_init is a write that its first use must see.  Ops with scratch
 * start with a barrier of the emitter's own and leave their scratch read.
 * Loops are walked until the state at their head stops growing, so that a
 * hazard between the end of one iteration and the start of the next is
 * seen; both branches of an if are walked from the same state. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

enum { MAX_RANGES = 32, MAX_ROUNDS = 8 };
#define ALL_HI INT64_MAX

typedef struct Range {
    int64_t lo, hi;
} Range;

typedef struct Set {
    Range v[MAX_RANGES];
    int n;
} Set;

typedef struct State {
    Set reads, writes, async;
    Set bulk;          /* tma_load writes, visible to each thread once it waits on their mbarrier */
} State;

typedef struct Bar {
    NrModule *m;
    NrFunc *f;
    bool inserted;
} Bar;

/* --- range sets -------------------------------------------------------------------------------------- */
static void set_add(Set *s, Range r) {
    for (int i = 0; i < s->n; i++) {
        if (r.lo <= s->v[i].hi && s->v[i].lo <= r.hi) { /* overlapping or touching: merge */
            Range m = {r.lo < s->v[i].lo ? r.lo : s->v[i].lo, r.hi > s->v[i].hi ? r.hi : s->v[i].hi};
            s->v[i] = s->v[--s->n];
            set_add(s, m);
            return;
        }
    }
    if (s->n == MAX_RANGES) { /* too many: one range over all of them */
        for (int i = 1; i < s->n; i++) {
            if (s->v[i].lo < s->v[0].lo) s->v[0].lo = s->v[i].lo;
            if (s->v[i].hi > s->v[0].hi) s->v[0].hi = s->v[i].hi;
        }
        s->n = 1;
        set_add(s, r);
        return;
    }
    s->v[s->n++] = r;
}

static bool set_hits(const Set *s, Range r) {
    for (int i = 0; i < s->n; i++)
        if (r.lo < s->v[i].hi && s->v[i].lo < r.hi) return true;
    return false;
}

static void set_union(Set *a, const Set *b) {
    for (int i = 0; i < b->n; i++) set_add(a, b->v[i]);
}

/* a covers b */
static bool set_covers(const Set *a, const Set *b) {
    for (int i = 0; i < b->n; i++) {
        bool in = false;
        for (int j = 0; j < a->n && !in; j++) in = a->v[j].lo <= b->v[i].lo && b->v[i].hi <= a->v[j].hi;
        if (!in) return false;
    }
    return true;
}

static void state_union(State *a, const State *b) {
    set_union(&a->reads, &b->reads);
    set_union(&a->writes, &b->writes);
    set_union(&a->async, &b->async);
    set_union(&a->bulk, &b->bulk);
}

static bool state_covers(const State *a, const State *b) {
    return set_covers(&a->reads, &b->reads) && set_covers(&a->writes, &b->writes) && set_covers(&a->async, &b->async) &&
           set_covers(&a->bulk, &b->bulk);
}

/* --- where ops access shared memory ------------------------------------------------------------------- */
/* The bytes buffer value v occupies: its local_alloc's range, or one buffer
 * of it for a memdesc_index with a constant index; all of shared memory when
 * that cannot be known. */
static Range range_of(Bar *b, NrValId v, int depth) {
    NrFunc *f = b->f;
    Range all = {0, ALL_HI};
    NrOpId def = f->vals[v].def;
    if (!def || depth > 16) return all;
    const NrOp *o = &f->ops[def];
    if (o->opc == NR_OP_LOCAL_ALLOC) {
        const NrAttr *off = nr_op_attr(f, def, NR_A_SMEM_OFFSET);
        if (!off || off->kind != NR_AK_INT) return all;
        NrTypeId t = f->vals[v].type;
        int64_t bytes = nr_type_numel(b->m, t) * nr_dtype_info[b->m->types[t].dtype].bytes;
        return (Range){off->v.i, off->v.i + bytes};
    }
    if (o->opc == NR_OP_MEMDESC_TRANS) return range_of(b, o->opnds[0], depth + 1); /* the same bytes */
    if (o->opc == NR_OP_MEMDESC_INDEX) {
        Range whole = range_of(b, o->opnds[0], depth + 1);
        NrOpId idx = f->vals[o->opnds[1]].def;
        const NrAttr *c = idx && f->ops[idx].opc == NR_OP_CONST ? nr_op_attr(f, idx, NR_A_VALUE) : NULL;
        if (whole.hi == ALL_HI || !c || c->kind != NR_AK_INT) return whole;
        NrTypeId t = f->vals[v].type;
        int64_t bytes = nr_type_numel(b->m, t) * nr_dtype_info[b->m->types[t].dtype].bytes;
        if (c->v.i < 0 || whole.lo + (c->v.i + 1) * bytes > whole.hi) return whole;
        return (Range){whole.lo + c->v.i * bytes, whole.lo + (c->v.i + 1) * bytes};
    }
    return all;
}

static void insert_barrier(Bar *b, NrOpId before, State *st) {
    NrBuilder bl = nr_builder_before(b->f, before);
    nr_build(&bl, NR_OP_BARRIER, 0, NULL, 0, NULL, 0);
    st->reads.n = st->writes.n = 0;
    b->inserted = true;
}

static void on_read(Bar *b, NrOpId op, State *st, Range r) {
    if (set_hits(&st->writes, r)) insert_barrier(b, op, st);
    set_add(&st->reads, r);
}

static void on_write(Bar *b, NrOpId op, State *st, Range r, bool async) {
    if (set_hits(&st->writes, r) || set_hits(&st->reads, r)) insert_barrier(b, op, st);
    set_add(async ? &st->async : &st->writes, r);
}

/* A TMA copy: like an async copy, but complete for each thread at its
 * mbarrier_wait (no barrier needed before reading it there). */
static void on_bulk_write(Bar *b, NrOpId op, State *st, Range r) {
    if (set_hits(&st->writes, r) || set_hits(&st->reads, r)) insert_barrier(b, op, st);
    set_add(&st->bulk, r);
}

static void walk_block(Bar *b, NrBlockId blk, State *st, int depth);

/* The shared memory op o reads (at most two ranges in r): a local_load's
 * buffer, a warp_group_dot's buffers (it is done with them when it ends,
 * wait_group 0), an mbarrier its expect, arrive or wait uses, a TMA copy's
 * mbarrier. */
static int read_ranges(Bar *b, const NrOp *o, Range *r) {
    switch ((NrOpcode)o->opc) {
    case NR_OP_LOCAL_LOAD:
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_ARRIVE:
    case NR_OP_MBARRIER_WAIT: r[0] = range_of(b, o->opnds[0], 0); return 1;
    case NR_OP_TMA_LOAD: r[0] = range_of(b, o->opnds[2], 0); return 1;
    case NR_OP_WARP_GROUP_DOT: {
        int n = 0;
        for (int i = 0; i < 2; i++)
            if (b->m->types[b->f->vals[o->opnds[i]].type].kind == NR_TK_MEMDESC) r[n++] = range_of(b, o->opnds[i], 0);
        return n;
    }
    default: return 0;
    }
}

static void on_reads(Bar *b, NrOpId op, State *st) {
    Range r[2];
    int n = read_ranges(b, &b->f->ops[op], r);
    for (int i = 0; i < n; i++) on_read(b, op, st, r[i]);
}

/* Whether an op of block blk (or nested in it) reads shared memory in set s. */
static bool block_reads(Bar *b, NrBlockId blk, const Set *s, int depth) {
    NrFunc *f = b->f;
    if (depth > 1000) return true;
    NR_FOR_OPS(f, blk, op) {
        const NrOp *o = &f->ops[op];
        Range r[2];
        int n = read_ranges(b, o, r);
        for (int i = 0; i < n; i++)
            if (set_hits(s, r[i])) return true;
        for (int i = 0; i < o->nregions; i++)
            if (block_reads(b, o->regions[i], s, depth + 1)) return true;
    }
    return false;
}

/* A loop whose body runs region after region: walks it until the state at
 * its head covers the state at its end.  Where the body reads what was
 * written before the loop (attention's Q tile, staged once), the barrier
 * goes in front of the loop, not into every iteration. */
static void walk_loop(Bar *b, NrOpId op, State *st, int depth) {
    NrOpcode opc = (NrOpcode)b->f->ops[op].opc;
    int nregions = b->f->ops[op].nregions;
    for (int r = 0; r < nregions && st->writes.n; r++)
        if (block_reads(b, b->f->ops[op].regions[r], &st->writes, depth + 1))
            insert_barrier(b, op, st);
    State head = *st, exit = *st;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        State cur = head;
        for (int r = 0; r < nregions; r++) {
            walk_block(b, b->f->ops[op].regions[r], &cur, depth + 1);
            if (opc == NR_OP_WHILE && r == 0) state_union(&exit, &cur); /* leaves after the condition */
        }
        if (opc == NR_OP_FOR) state_union(&exit, &cur);
        if (state_covers(&head, &cur)) break;
        state_union(&head, &cur);
    }
    *st = exit;
}

static void walk_op(Bar *b, NrOpId op, State *st, int depth) {
    NrFunc *f = b->f;
    const NrOp *o = &f->ops[op];
    switch ((NrOpcode)o->opc) {
    case NR_OP_LOCAL_ALLOC:
        if (o->nopnds == 1) on_write(b, op, st, range_of(b, o->results[0], 0), false);
        return;
    case NR_OP_LOCAL_STORE: on_write(b, op, st, range_of(b, o->opnds[1], 0), false); return;
    case NR_OP_LOCAL_LOAD:
    case NR_OP_WARP_GROUP_DOT: on_reads(b, op, st); return;
    case NR_OP_ASYNC_COPY: on_write(b, op, st, range_of(b, o->opnds[1], 0), true); return;
    case NR_OP_ASYNC_WAIT:
        set_union(&st->writes, &st->async);
        if (nr_op_int(f, op, NR_A_NUM, 0) == 0) st->async.n = 0;
        return;
    case NR_OP_BARRIER: st->reads.n = st->writes.n = 0; return;
    /* an mbarrier's init is a write every later use reads (one barrier after
     * the init); arrivals and waits are the hardware's own synchronization */
    case NR_OP_MBARRIER_INIT:
    case NR_OP_MBARRIER_INVAL: /* (after every thread's last wait on it) */
        on_write(b, op, st, range_of(b, o->opnds[0], 0), false);
        return;
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_ARRIVE: on_reads(b, op, st); return;
    /* The producer warpgroup's region synchronizes with the other warps
     * through mbarriers alone; what every warp wrote before it (the
     * mbarriers' inits) is published by one barrier of all the warps, in
     * front of the split. */
    case NR_OP_WARP_SPECIALIZE:
        if (st->writes.n || st->reads.n) insert_barrier(b, op, st);
        return;
    case NR_OP_MBARRIER_WAIT:
        on_reads(b, op, st);
        st->bulk.n = 0;
        return;
    case NR_OP_TMA_LOAD:
        on_reads(b, op, st);
        on_bulk_write(b, op, st, range_of(b, o->opnds[1], 0));
        return;
    case NR_OP_TMA_STORE: /* the emitter's fence and barrier before it; its read ends before the next barrier */
        st->reads.n = st->writes.n = 0;
        set_add(&st->reads, range_of(b, o->opnds[1], 0));
        return;
    case NR_OP_FOR:
    case NR_OP_WHILE: walk_loop(b, op, st, depth); return;
    case NR_OP_IF: {
        State other = *st;
        NrBlockId then = o->regions[0];
        walk_block(b, then, st, depth + 1);
        walk_block(b, f->ops[op].regions[1], &other, depth + 1);
        state_union(st, &other);
        return;
    }
    default: break;
    }
    const NrAttr *off = nr_op_attr(f, op, NR_A_SMEM_OFFSET);
    if (off && off->kind == NR_AK_INT) {
        int64_t bytes = nr_gpu_scratch_bytes(f, op);
        if (bytes > 0) {
            st->reads.n = st->writes.n = 0; /* the emitter's barrier before its stores */
            set_add(&st->reads, (Range){off->v.i, off->v.i + bytes});
        }
    }
}

static void walk_block(Bar *b, NrBlockId blk, State *st, int depth) {
    if (depth > 1000) return;
    NR_FOR_OPS(b->f, blk, o) walk_op(b, o, st, depth);
}

bool nr_gpu_barriers(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        Bar b = {m, m->funcs[i], false};
        State st;
        memset(&st, 0, sizeof st);
        walk_block(&b, b.f->body, &st, 0);
    }
    return true;
}
