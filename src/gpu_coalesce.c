/* gpu_coalesce.c - memory access layouts (pass gpu-coalesce).
 *
 * Requires GPU IR.  For each load, store, atomic and async copy of a block
 * of pointers, picks the blocked layout that lets each thread access the
 * widest contiguous, aligned vector (up to 16 bytes) and lets consecutive
 * lanes access consecutive vectors:
 *   order  the pointer's dimensions by contiguity (axis analysis), most
 *          contiguous first (ties: the last dimension first)
 *   vector min(contiguity, divisibility, 16 bytes, the mask's constancy)
 *          along order[0], then no more than the block's elements per
 *          thread, so that small blocks spread over every thread; atomics
 *          are scalar.  Unaligned pointers (divisibility 1) give 1.
 * The op's operands are converted to that layout and its result converted
 * back; gpu-remove-converts then moves whole chains onto it. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

typedef struct Co {
    NrModule *m;
    NrFunc *f;
    NrAxisInfo *ai;
    int nw;
} Co;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Bytes of the elements a block of pointers points to. */
static int pointee_bytes(const NrType *t) { return t->ptr > 1 ? 8 : nr_dtype_info[t->dtype].bytes; }

static bool is_memory_op(NrOpcode opc) {
    return opc == NR_OP_LOAD || opc == NR_OP_STORE || opc == NR_OP_ATOMIC_RMW || opc == NR_OP_ATOMIC_CAS ||
           opc == NR_OP_ASYNC_COPY;
}

/* The operand holding the mask, or -1. */
static int mask_index(NrOpcode opc) {
    switch (opc) {
    case NR_OP_LOAD: return 1;
    case NR_OP_STORE:
    case NR_OP_ATOMIC_RMW:
    case NR_OP_ASYNC_COPY: return 2;
    default: return -1;
    }
}

static int32_t preferred_layout(Co *c, NrOpId op) {
    NrFunc *f = c->f;
    const NrOp *o = &f->ops[op];
    NrValId p = o->opnds[0];
    const NrType *t = &c->m->types[f->vals[p].type];
    int rank = t->rank;
    const NrAxisInfo *a = &c->ai[p];
    int32_t order[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) order[i] = rank - 1 - i;
    /* stable sort by contiguity, most contiguous first */
    for (int i = 1; i < rank; i++) {
        int32_t d = order[i];
        int j = i;
        while (j > 0 && a->contiguity[order[j - 1]] < a->contiguity[d]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    int d0 = order[0];
    int eb = pointee_bytes(t);
    int64_t vec = min64(a->contiguity[d0], a->divisibility[d0]);
    vec = min64(vec, 16 / eb > 0 ? 16 / eb : 1);
    int mi = mask_index((NrOpcode)o->opc);
    if (mi >= 0 && mi < o->nopnds && o->opnds[mi]) vec = min64(vec, c->ai[o->opnds[mi]].constancy[d0]);
    if (o->opc == NR_OP_ATOMIC_RMW || o->opc == NR_OP_ATOMIC_CAS) vec = 1;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= t->shape[i];
    int64_t per_thread = numel / (32 * (int64_t)c->nw);
    vec = min64(vec, per_thread > 1 ? per_thread : 1);
    if (vec < 1 || !nr_is_pow2(vec)) vec = 1;
    int32_t spt[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) spt[i] = 1;
    spt[d0] = (int32_t)vec;
    return nr_gpu_blocked_for(c->m, rank, t->shape, spt, order, c->nw);
}

/* Moves op onto layout `l`: block operands converted to it, the result
 * produced in it and converted back for its users. */
static void relayout(Co *c, NrOpId op, int32_t l) {
    NrFunc *f = c->f;
    for (int i = 0; i < f->ops[op].nopnds; i++) {
        NrValId v = f->ops[op].opnds[i];
        if (nr_gpu_layout_of(f, v) && nr_gpu_layout_of(f, v) != l)
            f->ops[op].opnds[i] = nr_gpu_convert_before(f, op, v, l);
    }
    if (f->ops[op].nresults == 0) return;
    NrValId r = f->ops[op].results[0];
    int32_t old = nr_gpu_layout_of(f, r);
    if (!old || old == l) return;
    nr_gpu_set_layout(f, r, l);
    NrBuilder b = nr_builder_after(f, op);
    NrTypeId back = nr_type_with_layout(c->m, f->vals[r].type, old);
    NrOpId cv = nr_build(&b, NR_OP_CONVERT_LAYOUT, 1, &r, 1, &back, 0);
    NrValId nv = f->ops[cv].results[0];
    nr_replace_all_uses(f, r, nv);
    f->ops[cv].opnds[0] = r;
}

static void visit(NrFunc *f, NrOpId op, void *ctx) {
    Co *c = ctx;
    const NrOp *o = &f->ops[op];
    if (!is_memory_op((NrOpcode)o->opc) || o->nopnds < 1 || !nr_gpu_layout_of(f, o->opnds[0])) return;
    int32_t l = preferred_layout(c, op);
    if (l != nr_gpu_layout_of(f, o->opnds[0]) || (o->nresults && l != nr_gpu_layout_of(f, o->results[0])))
        relayout(c, op, l);
}

bool nr_gpu_coalesce(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        NrArena scratch;
        nr_arena_init(&scratch);
        Co c = {m, f, nr_axis_analysis_in(f, &scratch), nr_gpu_num_warps(m)};
        nr_walk(f, visit, &c);
        nr_arena_free(&scratch);
    }
    nr_gpu_compact_layouts(m);
    return true;
}
