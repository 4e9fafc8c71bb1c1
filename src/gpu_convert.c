/* gpu_convert.c - block IR to GPU IR (pass gpu-convert), and the layout
 * rules every GPU pass shares (gpu_impl.h).
 *
 * Requires: block IR whose calls are to noinline functions (the block
 * pipeline inlines the rest).
 * Gives every block value a layout:
 *   - Triton's default blocked layout for its shape, the same for every
 *     value of one shape (so elementwise chains need no conversion);
 *   - reduce results: the slice of the operand's layout along the axis;
 *   - broadcast results: the operand's layout; trans results: the operand's
 *     blocked layout with the dimensions permuted;
 *   - gather: the index in the result's layout, the source in any;
 *     histogram: the mask in the values' layout, the bins the default;
 *   - dot results: an mma (tensor-core) layout, operands converted to its
 *     dot_op layouts; on mma.sync, the dots of a chain (one dot's result
 *     feeds another's A operand) put their warps along M, so that each
 *     warp owns whole rows; where tensor cores cannot run the dot, a blocked
 *     accumulator with dot_op operands of it (the FMA fallback, docs/gpu.md);
 *     on sm_90a, dots wgmma can run become warp_group_dot with an mma
 *     version 3 accumulator and operands in nvmma buffers (A may stay in
 *     registers);
 *   - loop-carried values and if results: the default of their shape;
 *   - a function's block parameters and results, and so the operands and
 *     results of its calls: the default of their shape.
 * Then every operand whose layout differs from what its op requires is
 * converted (convert_layout); gpu-remove-converts removes what it can. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

/* --- shared helpers -------------------------------------------------------------------------------- */
int nr_gpu_num_warps(const NrModule *m) { return m->num_warps > 0 ? m->num_warps : 4; }
int nr_gpu_sm(const NrModule *m) { return m->sm > 0 ? m->sm : 80; }

int32_t nr_gpu_layout_of(const NrFunc *f, NrValId v) {
    if (v <= 0 || v >= f->nvals) return 0;
    const NrType *t = &f->mod->types[f->vals[v].type];
    return t->kind == NR_TK_VALUE && t->rank > 0 && t->layout > 0 ? t->layout : 0;
}

void nr_gpu_set_layout(NrFunc *f, NrValId v, int32_t layout) {
    f->vals[v].type = nr_type_with_layout(f->mod, f->vals[v].type, layout);
}

static bool is_block(const NrFunc *f, NrValId v) {
    if (v <= 0) return false;
    const NrType *t = &f->mod->types[f->vals[v].type];
    return t->kind == NR_TK_VALUE && t->rank > 0;
}

int nr_gpu_k_width(const NrModule *m, int32_t acc, NrDtype dt) {
    if (m->layouts[acc].kind != NR_LK_MMA) return 0;
    int bytes = nr_dtype_info[dt].bytes;
    return bytes >= 4 ? 1 : 4 / bytes;
}

/* The layout the terminator `op` must pass out as its operand i (a yield or
 * condition: what its parent's region arguments or results have). */
static int32_t required_by_parent(NrFunc *f, NrOpId op, int i) {
    NrOpId parent = f->blocks[f->ops[op].block].parent;
    if (!parent) return 0;
    const NrOp *p = &f->ops[parent];
    NrBlockId here = f->ops[op].block;
    switch ((NrOpcode)p->opc) {
    case NR_OP_FOR: {
        const NrBlock *body = &f->blocks[p->regions[0]];
        return i + 1 < body->nargs ? nr_gpu_layout_of(f, body->args[i + 1]) : 0;
    }
    case NR_OP_IF: return i < p->nresults ? nr_gpu_layout_of(f, p->results[i]) : 0;
    case NR_OP_WHILE:
        if (here == p->regions[0]) /* condition: flag, then the results */
            return i >= 1 && i - 1 < p->nresults ? nr_gpu_layout_of(f, p->results[i - 1]) : 0;
        else {
            const NrBlock *r0 = &f->blocks[p->regions[0]];
            return i < r0->nargs ? nr_gpu_layout_of(f, r0->args[i]) : 0;
        }
    default: return 0;
    }
}

int32_t nr_gpu_required(NrFunc *f, NrOpId op, int i) {
    const NrOp *o = &f->ops[op];
    NrModule *m = f->mod;
    if (i >= o->nopnds || !is_block(f, o->opnds[i])) return 0;
    int32_t r0 = o->nresults ? nr_gpu_layout_of(f, o->results[0]) : 0;
    switch ((NrOpcode)o->opc) {
    case NR_OP_LOAD:
    case NR_OP_ATOMIC_RMW:
    case NR_OP_ATOMIC_CAS:
    case NR_OP_BROADCAST:
    case NR_OP_HINT: return r0;
    case NR_OP_STORE: return i == 0 ? 0 : nr_gpu_layout_of(f, o->opnds[0]);
    case NR_OP_GATHER: return i == 1 ? r0 : 0; /* the source: any distributed layout */
    case NR_OP_HISTOGRAM: return i == 1 ? nr_gpu_layout_of(f, o->opnds[0]) : 0;
    case NR_OP_ASYNC_COPY: return i == 0 ? 0 : nr_gpu_layout_of(f, o->opnds[0]);
    case NR_OP_EXPAND_DIMS: return r0 ? nr_layout_slice(m, r0, (int)nr_op_int(f, op, NR_A_AXIS, 0)) : 0;
    case NR_OP_TRANS: {
        const NrAttr *order = nr_op_attr(f, op, NR_A_ORDER);
        if (!r0 || !order || m->layouts[r0].kind != NR_LK_BLOCKED) return 0;
        return nr_gpu_permute_blocked(m, r0, order->v.ints, true);
    }
    case NR_OP_DOT:
        if (!r0) return 0;
        if (i == 2) return r0;
        return nr_layout_dot_op(m, r0, i, nr_gpu_k_width(m, r0, nr_type_dtype(m, f->vals[o->opnds[i]].type)));
    case NR_OP_WARP_GROUP_DOT_WAIT: return i < o->nresults ? nr_gpu_layout_of(f, o->results[i]) : 0;
    case NR_OP_WARP_GROUP_DOT: /* A in registers, and the accumulator; buffers have no distributed layout */
        if (!r0 || i == 1) return 0;
        if (i == 2) return r0;
        return nr_layout_dot_op(m, r0, 0, nr_gpu_k_width(m, r0, nr_type_dtype(m, f->vals[o->opnds[i]].type)));
    case NR_OP_FOR: {
        const NrBlock *body = &f->blocks[o->regions[0]];
        return i >= 3 && i - 2 < body->nargs ? nr_gpu_layout_of(f, body->args[i - 2]) : 0;
    }
    case NR_OP_WHILE: {
        const NrBlock *r0b = &f->blocks[o->regions[0]];
        return i < r0b->nargs ? nr_gpu_layout_of(f, r0b->args[i]) : 0;
    }
    case NR_OP_YIELD:
    case NR_OP_CONDITION: return required_by_parent(f, op, i);
    case NR_OP_CALL: { /* a function's block parameters (and results) have the default layout of their shape */
        const NrType *t = &m->types[f->vals[o->opnds[i]].type];
        return nr_layout_default_blocked(m, t->rank, t->shape, nr_gpu_num_warps(m));
    }
    case NR_OP_RETURN: {
        const NrType *t = i < f->nrtypes ? &m->types[f->rtypes[i]] : NULL;
        return t && t->rank > 0 && t->layout > 0 ? t->layout : 0;
    }
    default:
        if (nr_op_info[o->opc].flags & NR_OPF_ELEM) return r0;
        return 0;
    }
}

NrValId nr_gpu_convert_before(NrFunc *f, NrOpId before, NrValId v, int32_t layout) {
    NrBuilder b = nr_builder_before(f, before);
    NrTypeId t = nr_type_with_layout(f->mod, f->vals[v].type, layout);
    return nr_build1(&b, NR_OP_CONVERT_LAYOUT, t, 1, &v);
}

static void fix_op(NrFunc *f, NrOpId op, void *ctx) {
    (void)ctx;
    for (int i = 0; i < f->ops[op].nopnds; i++) {
        NrValId v = f->ops[op].opnds[i];
        int32_t want = nr_gpu_required(f, op, i);
        if (want && nr_gpu_layout_of(f, v) != want) f->ops[op].opnds[i] = nr_gpu_convert_before(f, op, v, want);
    }
}

void nr_gpu_fix_operands(NrFunc *f) { nr_walk(f, fix_op, NULL); }

/* --- dots ------------------------------------------------------------------------------------------ */
/* Warps over the M x N tile of m16n8 instructions: Triton's rule, doubling
 * the dimension with more instruction tiles left per warp. */
static void mma_warps(int64_t M, int64_t N, int nw, int32_t *wm, int32_t *wn) {
    *wm = *wn = 1;
    while (*wm * *wn < nw) {
        if (M / 16 / *wm >= N / (8 * (int64_t)*wn)) {
            if (*wm < M / 16) *wm *= 2;
            else *wn *= 2;
        } else {
            *wn *= 2;
        }
    }
}

/* Warps of the mma.sync accumulators of chained dots: along M only, as
 * many as M has 16-row tiles for (a power of two), the rest along N.  A
 * warp then owns whole rows of the first dot's result: row reductions of
 * it stay within the warp (shuffles), and it converts to the next dot's A
 * operand in registers when both dots have these warps. */
static void chain_warps(int64_t M, int nw, int32_t *wm, int32_t *wn) {
    *wm = 1;
    while (*wm < nw && 16 * (int64_t)*wm * 2 <= M) *wm *= 2;
    *wn = nw / *wm;
}

/* k_width of mma.sync for operands of dt (0: no tensor-core form), and the
 * dtype operands must be cast to first (fp8 before sm_89: f16). */
static int mma_k_width(NrDtype dt, const char *precision, int sm, NrDtype *cast_to) {
    *cast_to = NR_DT_INVALID;
    switch (dt) {
    case NR_DT_F16:
    case NR_DT_BF16: return 2;
    case NR_DT_F32: return !strcmp(precision, "tf32") || !strcmp(precision, "tf32x3") ? 1 : 0;
    case NR_DT_I8: return 4;
    case NR_DT_F8E4NV:
    case NR_DT_F8E5:
        if (sm >= 89) return 4;
        *cast_to = NR_DT_F16;
        return 2;
    default: return 0;
    }
}

typedef struct Conv {
    NrModule *m;
    NrFunc *f;
    NrDiags *d;
    int nw, sm;
    bool sm_a;
    bool ok;
    NrAxisInfo *ai;      /* axis info of f, computed when a dot first needs it (in scratch) */
    NrArena scratch;
    bool *chained;       /* per op (ids below nchained): a dot of a chain */
    int32_t nchained;
    NrOpId wg[64];       /* dots given an mma version 3 layout, rewritten after the walk */
    int nwg;
} Conv;

static int32_t default_of(Conv *c, NrValId v) {
    const NrType *t = &c->m->types[c->f->vals[v].type];
    return nr_layout_default_blocked(c->m, t->rank, t->shape, c->nw);
}

static void cast_operand(Conv *c, NrOpId op, int i, NrDtype dt) {
    NrFunc *f = c->f;
    NrValId v = f->ops[op].opnds[i];
    NrBuilder b = nr_builder_before(f, op);
    NrValId r = nr_build1(&b, NR_OP_CAST, nr_type_with_dtype(c->m, f->vals[v].type, dt), 1, &v);
    f->ops[op].opnds[i] = r;
}

/* --- wgmma (sm_90a) ---------------------------------------------------------------------------------- */
/* k_width of wgmma for operands of dt: 2 for 16-bit floats, 1 for tf32, 4
 * for i8 and fp8; 0 where wgmma has no form (tf32x3, ieee, ...). */
static int wgmma_k_width(NrDtype dt, const char *precision) {
    switch (dt) {
    case NR_DT_F16:
    case NR_DT_BF16: return 2;
    case NR_DT_F32: return !strcmp(precision, "tf32") ? 1 : 0;
    case NR_DT_I8:
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: return 4;
    default: return 0;
    }
}

/* The dimension of a 2-D dot operand that is contiguous in memory: for a
 * loaded tile, its pointers' most contiguous dimension (ties: the last);
 * for a computed one, the last (its default layout's fastest). */
static int natural_fast_dim(Conv *c, NrValId v) {
    NrFunc *f = c->f;
    NrOpId def = f->vals[v].def;
    /* a transposed load (k.T of a descriptor's block) has the other one */
    if (def && f->ops[def].opc == NR_OP_TRANS && f->ops[def].nopnds == 1 &&
        c->m->types[f->vals[v].type].rank == 2) {
        NrValId x = f->ops[def].opnds[0];
        NrOpId xd = f->vals[x].def;
        if (xd && f->ops[xd].opc == NR_OP_CONVERT_LAYOUT) x = f->ops[xd].opnds[0], xd = f->vals[x].def;
        if (xd && f->ops[xd].opc == NR_OP_LOAD) return 1 - natural_fast_dim(c, x);
        return 1;
    }
    if (!def || f->ops[def].opc != NR_OP_LOAD) return 1;
    if (!c->ai) c->ai = nr_axis_analysis_in(f, &c->scratch);
    const NrAxisInfo *a = &c->ai[f->ops[def].opnds[0]];
    return a->contiguity[0] > a->contiguity[1] ? 0 : 1;
}

/* The swizzle of an nvmma buffer whose contiguous dimension holds `bytes`:
 * the widest of 128, 64 and 32 bytes that fits; 0 if none does (wgmma
 * reads no unswizzled layout of ours). */
static int swizzle_for(int64_t bytes) {
    return bytes >= 128 ? 128 : bytes >= 64 ? 64 : bytes >= 32 ? 32 : 0;
}

/* Warps of a wgmma accumulator: one warpgroup along M, doubling M while
 * rows are left for it (16 per warp), then N (Triton's rule). */
static void wgmma_warps(int64_t M, int nw, int32_t *wm, int32_t *wn) {
    *wm = 4, *wn = 1;
    while (*wm * *wn < nw) {
        if (M > 16 * (int64_t)*wm) *wm *= 2;
        else *wn *= 2;
    }
}

/* The mma version 3 layout for dot `op`, or 0 where wgmma cannot run it:
 * 2-D, 4 warps or a multiple, M a multiple of 64 per warpgroup, N at least
 * 8 per warpgroup column, K a multiple of the instruction's, operands whose
 * buffers can be laid out as wgmma reads them (8- and 32-bit operands only
 * K-contiguous: B must be, A comes from registers otherwise). */
static int32_t wgmma_layout(Conv *c, NrOpId op) {
    NrFunc *f = c->f;
    const NrOp *o = &f->ops[op];
    const NrType *a = &c->m->types[f->vals[o->opnds[0]].type], *b = &c->m->types[f->vals[o->opnds[1]].type];
    const NrType *rt = &c->m->types[f->vals[o->results[0]].type];
    if (c->sm != 90 || !c->sm_a || rt->rank != 2 || c->nw < 4 || c->nw % 4 || c->nwg >= (int)NR_COUNTOF(c->wg))
        return 0;
    const char *precision = nr_op_str(f, op, NR_A_PRECISION, "tf32");
    int kw = wgmma_k_width((NrDtype)a->dtype, precision);
    if (!kw || kw != wgmma_k_width((NrDtype)b->dtype, precision)) return 0;
    bool fp8 = nr_dt_is_fp8((NrDtype)a->dtype) && nr_dt_is_fp8((NrDtype)b->dtype);
    if (a->dtype != b->dtype && !fp8) return 0;
    NrDtype acc = (NrDtype)rt->dtype;
    bool acc_ok = acc == NR_DT_F32 ? a->dtype != NR_DT_I8 : acc == NR_DT_F16 ? (a->dtype == NR_DT_F16 || fp8)
                                                                              : acc == NR_DT_I32 && a->dtype == NR_DT_I8;
    if (!acc_ok) return 0;
    int64_t M = rt->shape[0], N = rt->shape[1], K = a->shape[1];
    int32_t wm, wn;
    wgmma_warps(M, c->nw, &wm, &wn);
    int64_t kinst = 8 * kw, nmax = a->dtype == NR_DT_I8 ? 128 : 256;
    if (M % (16 * (int64_t)wm) || N % (8 * (int64_t)wn) || K % kinst) return 0;
    int es = nr_dtype_info[b->dtype].bytes;
    int bfast = natural_fast_dim(c, o->opnds[1]);
    if (es != 2 && bfast != 0) return 0;
    int64_t binner = (bfast == 0 ? K : N) * es;
    if (!swizzle_for(binner)) return 0;
    int64_t n = N / wn < nmax ? N / wn : nmax;
    int32_t wpc[2] = {wm, wn}, instr[3] = {16, (int32_t)n, (int32_t)kinst};
    c->wg[c->nwg++] = op;
    return nr_layout_mma(c->m, 3, 2, wpc, instr);
}

/* Dot `op` (whose result has an mma version 3 layout) becomes
 *   bb = local_alloc b : !smem<KxN, nvmma_shared>
 *   [ab = local_alloc a : !smem<MxK, nvmma_shared>]   A loaded from memory
 *   r = warp_group_dot ab|a, bb, acc
 * Buffers keep the operand's contiguous dimension when wgmma can read it
 * that way (16-bit types transpose), else K; A that is computed rather
 * than loaded, or that wgmma cannot read from its natural layout, stays in
 * registers (the dot_op layout, converted by nr_gpu_fix_operands). */
static void to_warp_group_dot(Conv *c, NrOpId op) {
    NrFunc *f = c->f;
    NrModule *m = c->m;
    NrValId opnds[3] = {f->ops[op].opnds[0], f->ops[op].opnds[1], f->ops[op].opnds[2]};
    NrBuilder b = nr_builder_before(f, op);
    b.loc = f->ops[op].loc;
    for (int i = 0; i < 2; i++) {
        NrValId v = opnds[i];
        const NrType *t = &m->types[f->vals[v].type];
        int es = nr_dtype_info[t->dtype].bytes, kdim = i == 0 ? 1 : 0;
        int fast = natural_fast_dim(c, v);
        if (es != 2) fast = kdim;
        NrOpId def = f->vals[v].def;
        bool loaded = def && f->ops[def].opc == NR_OP_LOAD;
        if (i == 0 && (!loaded || (es != 2 && natural_fast_dim(c, v) != kdim))) continue; /* A in registers */
        int32_t order[2] = {fast, 1 - fast};
        NrType bt = *t;
        bt.kind = NR_TK_MEMDESC;
        bt.layout = nr_layout_nvmma(m, 2, swizzle_for((int64_t)t->shape[fast] * es), order);
        opnds[i] = nr_build1(&b, NR_OP_LOCAL_ALLOC, nr_type_intern(m, &bt), 1, &v);
    }
    NrTypeId rt = f->vals[f->ops[op].results[0]].type;
    NrOpId w = nr_build(&b, NR_OP_WARP_GROUP_DOT, 3, opnds, 1, &rt, 0);
    nr_op_copy_attrs(f, w, f, op);
    nr_replace_all_uses(f, f->ops[op].results[0], f->ops[w].results[0]);
    nr_op_erase(f, op);
}

/* The accumulator layout of dot `op`: mma where the tensor cores can run it. */
static int32_t dot_layout(Conv *c, NrOpId op) {
    NrFunc *f = c->f;
    const NrType *a = &c->m->types[f->vals[f->ops[op].opnds[0]].type];
    const NrType *b = &c->m->types[f->vals[f->ops[op].opnds[1]].type];
    NrValId r = f->ops[op].results[0];
    const NrType *rt = &c->m->types[f->vals[r].type];
    int rank = rt->rank;
    int64_t M = rt->shape[rank - 2], N = rt->shape[rank - 1], K = a->shape[rank - 1];
    int32_t v3 = wgmma_layout(c, op);
    if (v3) return v3;
    const char *precision = nr_op_str(f, op, NR_A_PRECISION, "tf32");
    NrDtype ca, cb;
    int kwa = mma_k_width((NrDtype)a->dtype, precision, c->sm, &ca);
    int kwb = mma_k_width((NrDtype)b->dtype, precision, c->sm, &cb);
    bool mma = c->sm >= 80 && kwa && kwa == kwb && M % 16 == 0 && N % 8 == 0 && K % (8 * kwa) == 0;
    if (!mma) return default_of(c, r);
    if (ca != NR_DT_INVALID) cast_operand(c, op, 0, ca);
    if (cb != NR_DT_INVALID) cast_operand(c, op, 1, cb);
    int32_t wpc[3] = {1, 1, 1};
    if (rank == 2 && op < c->nchained && c->chained[op])
        chain_warps(M, c->nw, &wpc[0], &wpc[1]);
    else
        mma_warps(M, N, c->nw, &wpc[rank - 2], &wpc[rank - 1]);
    int32_t instr[3] = {16, 8, 8 * kwa};
    return nr_layout_mma(c->m, 2, rank, wpc, instr);
}

/* --- chained dots --------------------------------------------------------------------------------- */
/* A dot is chained when its result reaches another dot's A operand through
 * ops of that dot's block that keep rows together: elementwise ops,
 * converts, broadcasts, expand_dims and reductions (attention's
 * P = exp2(S - max(S)) into P V).  Both dots are marked. */
typedef struct ChainWalk {
    bool *chained;
    int32_t *seen;  /* per value: the dot whose walk last reached it */
    NrValId *stack; /* nvals entries: each value is pushed at most once per walk */
} ChainWalk;

static bool passes_rows(const NrOp *o) {
    switch ((NrOpcode)o->opc) {
    case NR_OP_CONVERT_LAYOUT:
    case NR_OP_BROADCAST:
    case NR_OP_EXPAND_DIMS:
    case NR_OP_REDUCE: return true;
    default: return (nr_op_info[o->opc].flags & NR_OPF_ELEM) != 0;
    }
}

/* Walk back from dot `op`'s A operand over the ops of its block. */
static void chain_op(NrFunc *f, NrOpId op, void *ctx) {
    ChainWalk *w = ctx;
    const NrOp *o = &f->ops[op];
    if (o->opc != NR_OP_DOT || o->nopnds < 1 || !is_block(f, o->opnds[0])) return;
    int n = 0;
    w->stack[n++] = o->opnds[0];
    w->seen[o->opnds[0]] = op;
    while (n > 0) {
        NrValId v = w->stack[--n];
        NrOpId def = f->vals[v].def;
        if (!def || f->ops[def].block != o->block) continue;
        const NrOp *d = &f->ops[def];
        if (d->opc == NR_OP_DOT) {
            w->chained[def] = w->chained[op] = true;
            continue;
        }
        if (!passes_rows(d)) continue;
        for (int i = 0; i < d->nopnds; i++) {
            NrValId u = d->opnds[i];
            if (is_block(f, u) && w->seen[u] != op) {
                w->seen[u] = op;
                w->stack[n++] = u;
            }
        }
    }
}

/* Marks the chained dots of c->f (mma.sync only: wgmma's warps stay). */
static void find_chains(Conv *c) {
    NrFunc *f = c->f;
    NrArena *a = c->m->arena;
    ChainWalk w;
    w.chained = nr_alloc(a, sizeof(bool) * (size_t)f->nops);
    w.seen = nr_alloc(a, sizeof(int32_t) * (size_t)f->nvals);
    w.stack = nr_alloc(a, sizeof(NrValId) * (size_t)f->nvals);
    memset(w.chained, 0, sizeof(bool) * (size_t)f->nops);
    memset(w.seen, 0, sizeof(int32_t) * (size_t)f->nvals);
    nr_walk(f, chain_op, &w);
    c->chained = w.chained;
    c->nchained = f->nops;
}

/* --- assigning layouts ----------------------------------------------------------------------------- */
static void set_default(Conv *c, NrValId v) {
    if (is_block(c->f, v) && !nr_gpu_layout_of(c->f, v)) nr_gpu_set_layout(c->f, v, default_of(c, v));
}

static void convert_block(Conv *c, NrBlockId b, int depth);

static void convert_op(Conv *c, NrOpId op, int depth) {
    NrFunc *f = c->f;
    NrModule *m = c->m;
    const NrOp *o = &f->ops[op];
    NrValId r = o->nresults ? o->results[0] : NR_NONE;
    switch ((NrOpcode)o->opc) {
    case NR_OP_REDUCE:
    case NR_OP_ARGREDUCE: {
        int32_t src = nr_gpu_layout_of(f, o->opnds[0]);
        int axis = (int)nr_op_int(f, op, NR_A_AXIS, 0);
        for (int i = 0; i < o->nresults; i++)
            if (is_block(f, o->results[i])) nr_gpu_set_layout(f, o->results[i], nr_layout_slice(m, src, axis));
        break;
    }
    case NR_OP_BROADCAST: nr_gpu_set_layout(f, r, nr_gpu_layout_of(f, o->opnds[0])); break;
    case NR_OP_TRANS: {
        const NrAttr *order = nr_op_attr(f, op, NR_A_ORDER);
        int32_t a = nr_gpu_layout_of(f, o->opnds[0]);
        if (m->layouts[a].kind != NR_LK_BLOCKED) a = default_of(c, o->opnds[0]);
        nr_gpu_set_layout(f, r, nr_gpu_permute_blocked(m, a, order->v.ints, false));
        break;
    }
    case NR_OP_DOT: nr_gpu_set_layout(f, r, dot_layout(c, op)); break;
    default: break;
    }
    o = &f->ops[op];
    for (int i = 0; i < o->nresults; i++) set_default(c, o->results[i]);
    for (int g = 0; g < o->nregions; g++) {
        NrBlock *blk = &f->blocks[o->regions[g]];
        for (int i = 0; i < blk->nargs; i++) set_default(c, blk->args[i]);
        convert_block(c, o->regions[g], depth + 1);
    }
}

static void convert_block(Conv *c, NrBlockId b, int depth) {
    if (depth > 1000) return;
    NR_FOR_OPS(c->f, b, o) {
        convert_op(c, o, depth);
        if (!c->ok) return;
    }
}

static bool has_layouts(const NrFunc *f) {
    for (NrValId v = 1; v < f->nvals; v++)
        if (nr_gpu_layout_of(f, v) || f->mod->types[f->vals[v].type].kind == NR_TK_MEMDESC) return true;
    return false;
}

bool nr_gpu_convert(NrModule *m, NrDiags *d) {
    if (m->num_warps <= 0) m->num_warps = 4;
    if (m->sm <= 0) m->sm = 80;
    bool ok = true;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        if (has_layouts(f)) continue; /* already GPU IR */
        Conv c;
        memset(&c, 0, sizeof c);
        c.m = m, c.f = f, c.d = d, c.nw = m->num_warps, c.sm = m->sm, c.sm_a = m->sm_a, c.ok = true;
        NrBlock *body = &f->blocks[f->body];
        for (int a = 0; a < body->nargs; a++) set_default(&c, body->args[a]);
        for (int r = 0; r < f->nrtypes; r++) {
            const NrType *t = &m->types[f->rtypes[r]];
            if (t->rank > 0 && t->kind == NR_TK_VALUE) {
                int32_t l = nr_layout_default_blocked(m, t->rank, t->shape, c.nw);
                f->rtypes[r] = nr_type_with_layout(m, f->rtypes[r], l);
            }
        }
        find_chains(&c);
        convert_block(&c, f->body, 0);
        if (c.ok) {
            for (int k = 0; k < c.nwg; k++) to_warp_group_dot(&c, c.wg[k]);
            nr_gpu_fix_operands(f);
        }
        ok = ok && c.ok;
        nr_arena_free(&c.scratch);
    }
    nr_gpu_compact_layouts(m);
    return ok;
}
