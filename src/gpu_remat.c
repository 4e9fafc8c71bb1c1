/* gpu_remat.c - fewer layout conversions (pass gpu-remove-converts).
 *
 * Requires GPU IR whose memory ops carry the layouts gpu-coalesce chose and
 * whose dots carry their mma (or FMA) layouts.  Instead of moving
 * conversions one at a time, the pass solves every layout of a function
 * again:
 *   1. Values that must share a layout join one group: the operands and
 *      results of elementwise ops, loads, stores and atomics, broadcast,
 *      hint; a gather's index and result; a histogram's values and mask;
 *      the initial, carried, yielded and result values of for, while and
 *      if; both sides of every convert_layout (all of which go).
 *   2. Anchors fix a group's layout: dot (and warp_group_dot) results and
 *      local_load results first, and the groups related to them (a vector
 *      broadcast into a dot's result, as attention backward's m and delta,
 *      is loaded in the slice of the mma layout, not converted to it
 *      through shared memory); then loads; groups related to decided ones
 *      take the derived layout (reduce result = slice of its operand,
 *      expand_dims operand = slice of its result, trans = permuted); then
 *      groups anchored only by stores or atomics; the rest take the default
 *      blocked layout (higher ranks first, so that their slices follow).
 *   3. A memory op whose own layout vectorizes better than its group's keeps
 *      its own (its operands are converted); otherwise it joins the group.
 *   4. Every value takes its group's layout (reduce, trans, dot and
 *      local_load results what their op gives), and an operand that an op
 *      needs in another layout is rematerialized there when its producer is
 *      cheap (const, splat, arange, broadcast, expand_dims and elementwise
 *      ops over such), else converted once, right after its definition.
 *   5. Ops left without users are deleted.
 * A chain of elementwise ops, loads and stores (vector add, softmax, layer
 * norm) ends with one layout and no conversion. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

enum {
    PRIO_NONE = 0,
    PRIO_DEFAULT = 1,
    PRIO_WEAK = 2,     /* stores and atomics */
    PRIO_DERIVED = 3,  /* from a related group */
    PRIO_LOAD = 4,
    PRIO_FIXED = 5,    /* dot and local_load results */
    MAX_REMAT_DEPTH = 12,
};

typedef struct Rel {
    int kind;          /* 0: child = slice(parent, dim); 1: child = permute(parent, order) */
    NrValId child, parent;
    int dim;
    const int64_t *order;
} Rel;

typedef struct Cache {
    NrValId v;
    int32_t layout;
    NrValId got;
    int32_t next;       /* the previous entry of the same value + 1, 0 at the end */
} Cache;

typedef struct Solve {
    NrModule *m;
    NrFunc *f;
    NrArena scratch;
    NrAxisInfo *ai;
    int nw;
    int32_t *uf;        /* union-find parent, per value */
    uint8_t *cheapv;    /* per value: computed from cheap ops alone (layout-free: rematerialized per use) */
    int32_t *glayout;   /* per group root: its layout */
    uint8_t *gprio;     /* per group root: the priority that set it */
    int32_t *anchor;    /* per op: the layout a memory op, dot or local_load had */
    int32_t *own;       /* per op: the layout a detached memory op keeps (0: the group's) */
    NrOpId *walk; int nwalk, capwalk;  /* ops in program order */
    Rel *rels; int nrels, caprels;
    Cache *cache; int ncache, capcache;
    int32_t *cache_of;  /* per value below cache_nv: its newest cache entry + 1 (0: none) */
    int32_t cache_nv;
    NrOpId *converts; int nconverts, capconverts;  /* the conversions dropped at the start */
} Solve;

static bool is_block(const NrFunc *f, NrValId v) {
    if (v <= 0) return false;
    const NrType *t = &f->mod->types[f->vals[v].type];
    return t->kind == NR_TK_VALUE && t->rank > 0;
}

static int vrank(const Solve *s, NrValId v) { return s->m->types[s->f->vals[v].type].rank; }

static bool is_memory_op(NrOpcode opc) {
    return opc == NR_OP_LOAD || opc == NR_OP_STORE || opc == NR_OP_ATOMIC_RMW || opc == NR_OP_ATOMIC_CAS ||
           opc == NR_OP_ASYNC_COPY;
}

/* --- union-find -------------------------------------------------------------------------------- */
static int32_t find(Solve *s, int32_t v) {
    while (s->uf[v] != v) {
        s->uf[v] = s->uf[s->uf[v]];
        v = s->uf[v];
    }
    return v;
}

/* Cheap values join no group: every use gets its own copy in its layout,
 * so that address arithmetic shared by unrelated loads and stores does not
 * tie their layouts together. */
static void join(Solve *s, NrValId a, NrValId b) {
    if (!is_block(s->f, a) || !is_block(s->f, b) || vrank(s, a) != vrank(s, b)) return;
    if (s->cheapv[a] || s->cheapv[b]) return;
    int32_t ra = find(s, a), rb = find(s, b);
    if (ra != rb) s->uf[rb] = ra;
}

/* Joins every block operand and result of op. */
static void join_all(Solve *s, NrOpId op) {
    const NrOp *o = &s->f->ops[op];
    NrValId first = NR_NONE;
    for (int i = 0; i < o->nresults + o->nopnds; i++) {
        NrValId v = i < o->nresults ? o->results[i] : o->opnds[i - o->nresults];
        if (!is_block(s->f, v)) continue;
        if (!first) first = v;
        else join(s, first, v);
    }
}

/* Joins value lists a[i] ~ b[i]. */
static void join_lists(Solve *s, const NrValId *a, int na, const NrValId *b, int nb) {
    for (int i = 0; i < na && i < nb; i++) join(s, a[i], b[i]);
}

static const NrOp *terminator(Solve *s, NrBlockId b) {
    NrOpId t = nr_block_terminator(s->f, b);
    return t ? &s->f->ops[t] : NULL;
}

/* --- 1. groups and relations -------------------------------------------------------------------- */
static void add_rel(Solve *s, Rel r) {
    if (!s->cheapv[r.child] && !s->cheapv[r.parent]) *NR_PUSH(&s->scratch, s->rels, s->nrels, s->caprels) = r;
}

static void collect(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    const NrOp *o = &f->ops[op];
    NrOpcode opc = (NrOpcode)o->opc;
    switch (opc) {
    case NR_OP_BROADCAST:
    case NR_OP_HINT:
    case NR_OP_LOAD:
    case NR_OP_STORE:
    case NR_OP_ATOMIC_RMW:
    case NR_OP_ATOMIC_CAS: join_all(s, op); break;
    case NR_OP_GATHER: join(s, o->results[0], o->opnds[1]); break;  /* the source is free */
    case NR_OP_HISTOGRAM:
        if (o->opnds[1]) join(s, o->opnds[0], o->opnds[1]);
        break;
    case NR_OP_WARP_GROUP_DOT_WAIT: join_lists(s, o->results, o->nresults, o->opnds, o->nopnds); break;
    case NR_OP_ASYNC_COPY:
        join(s, o->opnds[0], o->opnds[2]);
        join(s, o->opnds[0], o->opnds[3]);
        break;
    case NR_OP_REDUCE:
    case NR_OP_ARGREDUCE:
        for (int i = 0; i < o->nresults; i++)
            if (is_block(f, o->results[i]))
                add_rel(s, (Rel){0, o->results[i], o->opnds[0], (int)nr_op_int(f, op, NR_A_AXIS, 0), NULL});
        break;
    case NR_OP_EXPAND_DIMS:
        if (is_block(f, o->opnds[0]))
            add_rel(s, (Rel){0, o->opnds[0], o->results[0], (int)nr_op_int(f, op, NR_A_AXIS, 0), NULL});
        break;
    case NR_OP_TRANS: {
        const NrAttr *order = nr_op_attr(f, op, NR_A_ORDER);
        if (order && order->kind == NR_AK_INTS)
            add_rel(s, (Rel){1, o->results[0], o->opnds[0], 0, order->v.ints});
        break;
    }
    case NR_OP_FOR: {
        const NrBlock *body = &f->blocks[o->regions[0]];
        int n = o->nopnds - 3;
        /* through the region arguments: a cheap initial value joins nothing */
        join_lists(s, body->args + 1, body->nargs - 1, o->opnds + 3, n);
        join_lists(s, body->args + 1, body->nargs - 1, o->results, o->nresults);
        const NrOp *y = terminator(s, o->regions[0]);
        if (y) join_lists(s, body->args + 1, body->nargs - 1, y->opnds, y->nopnds);
        break;
    }
    case NR_OP_WHILE: {
        const NrBlock *r0 = &f->blocks[o->regions[0]], *r1 = &f->blocks[o->regions[1]];
        join_lists(s, r0->args, r0->nargs, o->opnds, o->nopnds);
        const NrOp *y = terminator(s, o->regions[1]);
        if (y) join_lists(s, r0->args, r0->nargs, y->opnds, y->nopnds);
        const NrOp *c = terminator(s, o->regions[0]);
        join_lists(s, o->results, o->nresults, r1->args, r1->nargs);
        if (c && c->nopnds > 0) join_lists(s, o->results, o->nresults, c->opnds + 1, c->nopnds - 1);
        break;
    }
    case NR_OP_IF:
        for (int r = 0; r < 2; r++) {
            const NrOp *y = terminator(s, o->regions[r]);
            if (y) join_lists(s, o->results, o->nresults, y->opnds, y->nopnds);
        }
        break;
    default:
        if (nr_op_info[opc].flags & NR_OPF_ELEM) join_all(s, op);
        break;
    }
}

/* Records the layouts the anchors have now (before conversions go). */
static void record_anchor(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    const NrOp *o = &f->ops[op];
    *NR_PUSH(&s->scratch, s->walk, s->nwalk, s->capwalk) = op;
    if (is_memory_op((NrOpcode)o->opc) && o->nopnds && is_block(f, o->opnds[0]))
        s->anchor[op] = nr_gpu_layout_of(f, o->opnds[0]);
    else if ((o->opc == NR_OP_DOT || o->opc == NR_OP_WARP_GROUP_DOT || o->opc == NR_OP_LOCAL_LOAD) &&
             is_block(f, o->results[0]))
        s->anchor[op] = nr_gpu_layout_of(f, o->results[0]);
}

/* Replaces the uses of every convert_layout by its operand, and erases it. */
static void find_converts(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    if (f->ops[op].opc == NR_OP_CONVERT_LAYOUT) *NR_PUSH(&s->scratch, s->converts, s->nconverts, s->capconverts) = op;
}

/* Every use of a conversion's result reads its operand instead (the start
 * of a chain of conversions), in one pass over the ops; the conversions go. */
static void drop_converts(Solve *s) {
    NrFunc *f = s->f;
    nr_walk(f, find_converts, s);
    if (!s->nconverts) return;
    NrValId *to = nr_alloc(&s->scratch, sizeof(NrValId) * (size_t)f->nvals);
    for (int i = 0; i < s->nconverts; i++) to[f->ops[s->converts[i]].results[0]] = f->ops[s->converts[i]].opnds[0];
    for (NrOpId op = 1; op < f->nops; op++) {
        NrOp *o = &f->ops[op];
        if (o->dead) continue;
        for (int i = 0; i < o->nopnds; i++)
            for (int n = 0; to[o->opnds[i]] && n <= s->nconverts; n++) o->opnds[i] = to[o->opnds[i]];
    }
    for (int i = 0; i < s->nconverts; i++) nr_op_erase(f, s->converts[i]);
}

/* --- 2. deciding group layouts ----------------------------------------------------------------- */
static bool decide(Solve *s, NrValId v, int32_t layout, int prio) {
    int32_t g = find(s, v);
    if (s->gprio[g] >= prio || !layout) return false;
    if (s->gprio[g] && s->gprio[g] != PRIO_WEAK) return false;
    s->glayout[g] = layout;
    s->gprio[g] = (uint8_t)prio;
    return true;
}

/* The first block result or operand of op that belongs to a group. */
static NrValId member(Solve *s, NrOpId op) {
    const NrOp *o = &s->f->ops[op];
    for (int i = 0; i < o->nresults + o->nopnds; i++) {
        NrValId v = i < o->nresults ? o->results[i] : o->opnds[i - o->nresults];
        if (is_block(s->f, v) && !s->cheapv[v]) return v;
    }
    return NR_NONE;
}

/* Anchors of one level, in program order: PRIO_FIXED (dot and local_load
 * results), PRIO_LOAD (loads and async copies) or PRIO_WEAK (stores and
 * atomics, only where nothing decided the group). */
static void decide_anchors(Solve *s, int level) {
    NrFunc *f = s->f;
    for (int k = 0; k < s->nwalk; k++) {
        NrOpId op = s->walk[k];
        const NrOp *o = &f->ops[op];
        if (o->dead || !s->anchor[op]) continue;
        NrOpcode opc = (NrOpcode)o->opc;
        int prio = opc == NR_OP_DOT || opc == NR_OP_WARP_GROUP_DOT || opc == NR_OP_LOCAL_LOAD ? PRIO_FIXED
                   : opc == NR_OP_LOAD || opc == NR_OP_ASYNC_COPY ? PRIO_LOAD
                                                                   : PRIO_WEAK;
        if (prio != level) continue;
        NrValId v = member(s, op);
        if (!v) {
            s->own[op] = s->anchor[op]; /* only cheap operands: they follow the op */
            continue;
        }
        if (prio == PRIO_WEAK && s->gprio[find(s, v)]) continue;
        decide(s, v, s->anchor[op], prio);
    }
}

static int32_t known(Solve *s, NrValId v) {
    int32_t g = find(s, v);
    return s->gprio[g] && s->gprio[g] != PRIO_WEAK ? s->glayout[g] : 0;
}

/* One sweep over the relations; true if a group was decided. */
static bool propagate(Solve *s) {
    bool changed = false;
    NrModule *m = s->m;
    for (int i = 0; i < s->nrels; i++) {
        Rel *r = &s->rels[i];
        int32_t p = known(s, r->parent), c = known(s, r->child);
        if (r->kind == 0) {
            if (p && !c) changed |= decide(s, r->child, nr_layout_slice(m, p, r->dim), PRIO_DERIVED);
            else if (c && !p && m->layouts[c].kind == NR_LK_SLICE && m->layouts[c].dim == r->dim &&
                     m->layouts[m->layouts[c].parent].rank == vrank(s, r->parent))
                changed |= decide(s, r->parent, m->layouts[c].parent, PRIO_DERIVED);
        } else {
            if (p && !c && m->layouts[p].kind == NR_LK_BLOCKED)
                changed |= decide(s, r->child, nr_gpu_permute_blocked(m, p, r->order, false), PRIO_DERIVED);
            else if (c && !p && m->layouts[c].kind == NR_LK_BLOCKED)
                changed |= decide(s, r->parent, nr_gpu_permute_blocked(m, c, r->order, true), PRIO_DERIVED);
        }
    }
    return changed;
}

/* The order in which groups take default layouts: the candidate values
 * (blocks, not cheap) by rank, highest first, then by value id; and per
 * group root its member of most elements (the first of them).  Groups do
 * not change while layouts are decided. */
typedef struct Defaults {
    NrValId *order;
    int n, next;
    NrValId *big;
} Defaults;

static void defaults_init(Solve *s, Defaults *d) {
    NrFunc *f = s->f;
    memset(d, 0, sizeof *d);
    d->order = nr_alloc(&s->scratch, sizeof(NrValId) * (size_t)(f->nvals > 0 ? f->nvals : 1));
    d->big = nr_alloc(&s->scratch, sizeof(NrValId) * (size_t)(f->nvals > 0 ? f->nvals : 1));
    int64_t *most = nr_alloc(&s->scratch, sizeof(int64_t) * (size_t)(f->nvals > 0 ? f->nvals : 1));
    for (int r = NR_MAX_RANK; r >= 1; r--)
        for (NrValId v = 1; v < f->nvals; v++)
            if (is_block(f, v) && !s->cheapv[v] && vrank(s, v) == r) d->order[d->n++] = v;
    for (NrValId v = 1; v < f->nvals; v++) {
        if (!is_block(f, v) || s->cheapv[v]) continue;
        int32_t g = find(s, v);
        int64_t n = nr_type_numel(s->m, f->vals[v].type);
        if (!d->big[g] || n > most[g]) most[g] = n, d->big[g] = v;
    }
}

/* The undecided group of highest rank (then lowest value id) takes the
 * default layout of its largest shape; false if none is left. */
static bool decide_default(Solve *s, Defaults *d) {
    while (d->next < d->n && known(s, d->order[d->next])) d->next++;
    if (d->next == d->n) return false;
    NrValId big = d->big[find(s, d->order[d->next])];
    const NrType *t = &s->m->types[s->f->vals[big].type];
    decide(s, big, nr_layout_default_blocked(s->m, t->rank, t->shape, s->nw), PRIO_DEFAULT);
    return true;
}

static void decide_all(Solve *s) {
    decide_anchors(s, PRIO_FIXED);
    while (propagate(s)) {}
    decide_anchors(s, PRIO_LOAD);
    while (propagate(s)) {}
    decide_anchors(s, PRIO_WEAK);
    /* weak (store) anchors count as decided from here */
    for (NrValId v = 1; v < s->f->nvals; v++) {
        int32_t g = find(s, v);
        if (s->gprio[g] == PRIO_WEAK) s->gprio[g] = PRIO_DERIVED;
    }
    Defaults d;
    defaults_init(s, &d);
    for (;;) {
        while (propagate(s)) {}
        if (!decide_default(s, &d)) break;
    }
}

/* --- 3. memory ops that keep their own layout ---------------------------------------------------- */
typedef struct Access {
    int64_t vec;        /* elements per vector access */
    int64_t segment;    /* contiguous bytes consecutive lanes cover, from lane 0 on */
} Access;

/* How memory op `op` would access memory under layout l: the register run
 * along the pointer's most contiguous dimension d0 (within what contiguity
 * and alignment allow), and how far consecutive lanes continue along d0. */
static Access access_under(Solve *s, NrOpId op, int32_t l) {
    NrFunc *f = s->f;
    NrValId p = f->ops[op].opnds[0];
    const NrType *t = &s->m->types[f->vals[p].type];
    const NrAxisInfo *a = &s->ai[p];
    Access acc = {1, 0};
    int d0 = t->rank - 1;
    for (int d = 0; d < t->rank; d++)
        if (a->contiguity[d] > a->contiguity[d0]) d0 = d;
    int eb = t->ptr > 1 ? 8 : nr_dtype_info[t->dtype].bytes;
    int64_t cap = a->contiguity[d0] < a->divisibility[d0] ? a->contiguity[d0] : a->divisibility[d0];
    if (cap > 16 / eb) cap = 16 / eb > 0 ? 16 / eb : 1;
    NrLinear ll;
    if (!nr_layout_linear(s->m, l, t->rank, t->shape, s->nw, &ll)) return acc;
    int64_t span = 1;
    for (int i = 0; i < ll.nreg; i++) {
        bool step = ll.reg[i][d0] == span;
        for (int k = 0; k < t->rank && step; k++)
            if (k != d0 && ll.reg[i][k]) step = false;
        if (!step) break;
        span *= 2;
    }
    acc.vec = span < cap ? span : cap;
    for (int i = 0; i < ll.nlane; i++) {
        bool zero = true, step = ll.lane[i][d0] == span;
        for (int k = 0; k < t->rank; k++) {
            zero &= ll.lane[i][k] == 0;
            if (k != d0 && ll.lane[i][k]) step = false;
        }
        if (zero) continue; /* replicated lanes */
        if (!step) break;
        span *= 2;
    }
    acc.segment = (span < a->contiguity[d0] ? span : a->contiguity[d0]) * eb;
    return acc;
}

/* A memory op keeps its own layout (at the price of conversions) only where
 * its group's would leave 32-byte sectors partly used while its own fills
 * them, or leave it below 4-byte accesses that its own layout widens;
 * narrower vectors over full sectors cost less than a conversion through
 * shared memory. */
static void detach_memory_ops(Solve *s) {
    NrFunc *f = s->f;
    for (NrOpId op = 1; op < f->nops; op++) {
        const NrOp *o = &f->ops[op];
        if (o->dead || !s->anchor[op] || !is_memory_op((NrOpcode)o->opc) || s->own[op]) continue;
        NrValId v = member(s, op);
        if (!v) continue;
        int32_t g = s->glayout[find(s, v)];
        if (g == s->anchor[op]) continue;
        const NrType *t = &s->m->types[f->vals[o->opnds[0]].type];
        int eb = t->ptr > 1 ? 8 : nr_dtype_info[t->dtype].bytes;
        Access in_group = access_under(s, op, g), alone = access_under(s, op, s->anchor[op]);
        bool sectors = in_group.segment < 32 && alone.segment > in_group.segment;
        bool narrow = in_group.vec * eb < 4 && alone.vec > in_group.vec;
        if (sectors || narrow) s->own[op] = s->anchor[op];
    }
}

/* --- 4. materializing ------------------------------------------------------------------------------ */
static void assign_values(Solve *s) {
    NrFunc *f = s->f;
    for (NrValId v = 1; v < f->nvals; v++) {
        if (!is_block(f, v)) continue;
        if (s->cheapv[v]) {
            const NrType *t = &s->m->types[f->vals[v].type];
            nr_gpu_set_layout(f, v, nr_layout_default_blocked(s->m, t->rank, t->shape, s->nw));
        } else {
            nr_gpu_set_layout(f, v, s->glayout[find(s, v)]);
        }
    }
}

/* Layouts ops give their results, in program order (operands first). */
static void forced_results(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    const NrOp *o = &f->ops[op];
    NrModule *m = s->m;
    switch ((NrOpcode)o->opc) {
    case NR_OP_REDUCE:
    case NR_OP_ARGREDUCE: {
        int32_t src = nr_gpu_layout_of(f, o->opnds[0]);
        for (int i = 0; i < o->nresults; i++)
            if (is_block(f, o->results[i]))
                nr_gpu_set_layout(f, o->results[i], nr_layout_slice(m, src, (int)nr_op_int(f, op, NR_A_AXIS, 0)));
        break;
    }
    case NR_OP_TRANS: {
        int32_t src = nr_gpu_layout_of(f, o->opnds[0]);
        const NrAttr *order = nr_op_attr(f, op, NR_A_ORDER);
        if (m->layouts[src].kind == NR_LK_BLOCKED && order)
            nr_gpu_set_layout(f, o->results[0], nr_gpu_permute_blocked(m, src, order->v.ints, false));
        else if (m->layouts[nr_gpu_layout_of(f, o->results[0])].kind != NR_LK_BLOCKED)
            nr_gpu_set_layout(f, o->results[0], nr_layout_default_blocked(m, vrank(s, o->results[0]),
                                                                          m->types[f->vals[o->results[0]].type].shape,
                                                                          s->nw));
        break;
    }
    case NR_OP_DOT:
    case NR_OP_WARP_GROUP_DOT:
    case NR_OP_LOCAL_LOAD:
        if (s->anchor[op]) nr_gpu_set_layout(f, o->results[0], s->anchor[op]);
        break;
    case NR_OP_CALL: /* the callee's results: the default layout of their shape */
        for (int i = 0; i < o->nresults; i++)
            if (is_block(f, o->results[i])) {
                const NrType *t = &m->types[f->vals[o->results[i]].type];
                nr_gpu_set_layout(f, o->results[i], nr_layout_default_blocked(m, t->rank, t->shape, s->nw));
            }
        break;
    default:
        if (s->own[op] && o->nresults && is_block(f, o->results[0])) nr_gpu_set_layout(f, o->results[0], s->own[op]);
        break;
    }
}

/* Where a value defined by v's definition can be used from: right after
 * its op, or at the start of its block for block arguments. */
static NrBuilder after_def(NrFunc *f, NrValId v) {
    NrOpId def = f->vals[v].def;
    if (!def) {
        NrBlockId b = f->vals[v].block;
        NrOpId first = f->blocks[b].first;
        return first ? nr_builder_before(f, first) : nr_builder_at_end(f, b);
    }
    return nr_builder_after(f, def);
}

static bool cheap(const NrOp *o) {
    switch ((NrOpcode)o->opc) {
    case NR_OP_CONST:
    case NR_OP_SPLAT:
    case NR_OP_ARANGE:
    case NR_OP_BROADCAST:
    case NR_OP_EXPAND_DIMS: return true;
    default:
        return (nr_op_info[o->opc].flags & (NR_OPF_ELEM | NR_OPF_PURE)) == (NR_OPF_ELEM | NR_OPF_PURE) &&
               o->nresults == 1 && o->nregions == 0;
    }
}

/* Values computed from cheap ops over scalars alone, in program order. */
static void mark_cheap(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    const NrOp *o = &f->ops[op];
    if (!cheap(o) || !is_block(f, o->results[0])) return;
    for (int i = 0; i < o->nopnds; i++)
        if (is_block(f, o->opnds[i]) && !s->cheapv[o->opnds[i]]) return;
    s->cheapv[o->results[0]] = 1;
}

/* The layout operand i of `op` (a cheap op) needs when its result has layout l. */
static int32_t need_for(Solve *s, NrOpId op, int i, int32_t l) {
    const NrOp *o = &s->f->ops[op];
    if (!is_block(s->f, o->opnds[i])) return 0;
    if (o->opc == NR_OP_EXPAND_DIMS) return nr_layout_slice(s->m, l, (int)nr_op_int(s->f, op, NR_A_AXIS, 0));
    return l;
}

/* Whether v can be recomputed in layout l from cheap ops alone. */
static bool can_remat(Solve *s, NrValId v, int32_t l, int depth) {
    NrFunc *f = s->f;
    NrOpId def = f->vals[v].def;
    if (!def || depth > MAX_REMAT_DEPTH || !cheap(&f->ops[def])) return false;
    if (f->ops[def].opc == NR_OP_EXPAND_DIMS && s->m->layouts[l].rank < 2) return false;
    for (int i = 0; i < f->ops[def].nopnds; i++) {
        NrValId a = f->ops[def].opnds[i];
        int32_t need = need_for(s, def, i, l);
        if (need && nr_gpu_layout_of(f, a) != need && !can_remat(s, a, need, depth + 1)) return false;
    }
    return true;
}

static NrValId cached(Solve *s, NrValId v, int32_t l) {
    if (v >= s->cache_nv) return NR_NONE;
    for (int32_t i = s->cache_of[v]; i; i = s->cache[i - 1].next)
        if (s->cache[i - 1].layout == l) return s->cache[i - 1].got;
    return NR_NONE;
}

static void cache_put(Solve *s, NrValId v, int32_t l, NrValId got) {
    if (v >= s->cache_nv) { /* values made since (rematerialized copies): room for them */
        int32_t nv = s->f->nvals > 2 * s->cache_nv ? s->f->nvals : 2 * s->cache_nv;
        s->cache_of = nr_arena_grow(&s->scratch, s->cache_of, sizeof(int32_t) * (size_t)s->cache_nv,
                                    sizeof(int32_t) * (size_t)nv);
        s->cache_nv = nv;
    }
    *NR_PUSH(&s->scratch, s->cache, s->ncache, s->capcache) = (Cache){v, l, got, s->cache_of[v]};
    s->cache_of[v] = s->ncache;
}

/* v in layout l: v itself, a rematerialized copy of its cheap producers, or
 * one conversion placed right after v's definition. */
static NrValId in_layout(Solve *s, NrValId v, int32_t l, int depth) {
    NrFunc *f = s->f;
    if (nr_gpu_layout_of(f, v) == l) return v;
    NrValId got = cached(s, v, l);
    if (got) return got;
    if (depth <= MAX_REMAT_DEPTH && can_remat(s, v, l, depth)) {
        NrOpId def = f->vals[v].def;
        int n = f->ops[def].nopnds;
        NrValId ops[8];
        NR_ASSERT(n <= 8);
        for (int i = 0; i < n; i++) {
            NrValId a = f->ops[def].opnds[i];
            int32_t need = need_for(s, def, i, l);
            ops[i] = need ? in_layout(s, a, need, depth + 1) : a;
        }
        NrBuilder b = after_def(f, v);
        NrTypeId t = nr_type_with_layout(s->m, f->vals[v].type, l);
        NrOpId c = nr_build(&b, (NrOpcode)f->ops[def].opc, n, ops, 1, &t, 0);
        nr_op_copy_attrs(f, c, f, def);
        got = f->ops[c].results[0];
    } else {
        NrBuilder b = after_def(f, v);
        NrTypeId t = nr_type_with_layout(s->m, f->vals[v].type, l);
        got = nr_build1(&b, NR_OP_CONVERT_LAYOUT, t, 1, &v);
    }
    cache_put(s, v, l, got);
    return got;
}

static void fix_uses(NrFunc *f, NrOpId op, void *ctx) {
    Solve *s = ctx;
    const NrOp *o = &f->ops[op];
    /* A store or async copy works in the layout of its pointers: its own if
     * it keeps one, else its group's (cheap pointers have no group). */
    if (s->anchor[op] && !o->nresults && is_memory_op((NrOpcode)o->opc) && is_block(f, o->opnds[0])) {
        NrValId v = member(s, op);
        int32_t l = s->own[op] ? s->own[op] : v ? s->glayout[find(s, v)] : s->anchor[op];
        f->ops[op].opnds[0] = in_layout(s, o->opnds[0], l, 0);
    }
    for (int i = 0; i < f->ops[op].nopnds; i++) {
        NrValId v = f->ops[op].opnds[i];
        int32_t want = nr_gpu_required(f, op, i);
        if (want && nr_gpu_layout_of(f, v) != want) f->ops[op].opnds[i] = in_layout(s, v, want, 0);
    }
}

/* --- 5. cleaning up -------------------------------------------------------------------------------- */
static bool erasable(const NrFunc *f, NrOpId op, const int32_t *uses) {
    const NrOp *o = &f->ops[op];
    if (o->dead || !o->block || o->nregions || !(nr_op_info[o->opc].flags & NR_OPF_PURE)) return false;
    for (int i = 0; i < o->nresults; i++)
        if (uses[o->results[i]] > 0) return false;
    return true;
}

/* Pure ops (no regions) whose results nothing uses, transitively: uses are
 * counted once, and an erased op's operands lose a use each (a worklist of
 * the ops that may have become unused). */
static void erase_dead(Solve *s) {
    NrFunc *f = s->f;
    int32_t *uses = nr_alloc(&s->scratch, sizeof(int32_t) * (size_t)f->nvals);
    /* pushed: each op once at the start, then a value's def when its uses reach 0 (once per value) */
    NrOpId *work = nr_alloc(&s->scratch, sizeof(NrOpId) * ((size_t)f->nops + (size_t)f->nvals));
    int nwork = 0;
    for (NrOpId op = 1; op < f->nops; op++) {
        const NrOp *o = &f->ops[op];
        if (o->dead || !o->block) continue;
        for (int i = 0; i < o->nopnds; i++)
            if (o->opnds[i] > 0 && o->opnds[i] < f->nvals) uses[o->opnds[i]]++;
    }
    for (NrOpId op = f->nops - 1; op >= 1; op--)
        if (erasable(f, op, uses)) work[nwork++] = op;
    while (nwork > 0) {
        NrOpId op = work[--nwork];
        if (!erasable(f, op, uses)) continue; /* (erased already) */
        const NrOp *o = &f->ops[op];
        for (int i = 0; i < o->nopnds; i++) {
            NrValId v = o->opnds[i];
            if (v <= 0 || v >= f->nvals || --uses[v] > 0) continue;
            NrOpId def = f->vals[v].def;
            if (def && erasable(f, def, uses)) work[nwork++] = def;
        }
        nr_op_erase(f, op);
    }
}

static void solve(NrModule *m, NrFunc *f) {
    Solve s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.f = f;
    s.nw = nr_gpu_num_warps(m);
    nr_arena_init(&s.scratch);
    size_t nv = (size_t)f->nvals, no = (size_t)f->nops;
    s.uf = nr_alloc(&s.scratch, sizeof(int32_t) * nv);
    s.glayout = nr_alloc(&s.scratch, sizeof(int32_t) * nv);
    s.gprio = nr_alloc(&s.scratch, nv);
    s.anchor = nr_alloc(&s.scratch, sizeof(int32_t) * no);
    s.own = nr_alloc(&s.scratch, sizeof(int32_t) * no);
    for (NrValId v = 0; v < f->nvals; v++) s.uf[v] = v;
    s.ai = nr_axis_analysis_in(f, &s.scratch);
    s.cheapv = nr_alloc(&s.scratch, nv);
    nr_walk(f, record_anchor, &s);
    drop_converts(&s);
    nr_walk(f, mark_cheap, &s);
    nr_walk(f, collect, &s);
    decide_all(&s);
    detach_memory_ops(&s);
    assign_values(&s);
    /* a function's block parameters keep the layout its calls pass them in */
    const NrBlock *body = &f->blocks[f->body];
    for (int i = 0; i < body->nargs; i++)
        if (is_block(f, body->args[i])) {
            const NrType *t = &m->types[f->vals[body->args[i]].type];
            nr_gpu_set_layout(f, body->args[i], nr_layout_default_blocked(m, t->rank, t->shape, s.nw));
        }
    nr_walk(f, forced_results, &s);
    nr_walk(f, fix_uses, &s);
    erase_dead(&s);
    nr_arena_free(&s.scratch);
}

bool nr_gpu_remove_converts(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        bool gpu = false;
        for (NrValId v = 1; v < f->nvals && !gpu; v++) gpu = nr_gpu_layout_of(f, v) != 0;
        if (gpu) solve(m, f);
    }
    nr_gpu_compact_layouts(m);
    return true;
}
