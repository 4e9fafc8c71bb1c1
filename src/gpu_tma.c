/* gpu_tma.c - the sm_90a passes that move host tensor descriptors' blocks
 * with TMA outside pipelined loops.
 *
 *   gpu-tma-loads   a block loaded once (not in a loop, or once per
 *                   iteration of a tile loop) and staged for wgmma (load ->
 *                   local_alloc) is copied by TMA straight into its buffer,
 *                   on an mbarrier of its own
 *   gpu-tma-stores  a block store goes through an nvmma buffer and a TMA
 *                   store
 *
 * Both require GPU IR after gpu-pipeline (whose TMA copies fix each
 * descriptor's buffer layout: one tensor map per descriptor argument) and
 * run before gpu-smem and gpu-barriers, which place the buffers and the
 * barriers the new shared-memory accesses need.  A host descriptor's block
 * load or store names, after its pointer operands, the kernel argument that
 * is the descriptor's base and the block's coordinates (sema_desc.c). */
#include "gpu_impl.h"
#include "passes.h"
#include "ptx.h"
#include "util.h"

#include <string.h>

/* Whether op o accesses a block of a host tensor descriptor of the block's
 * rank: operand `first` is the descriptor's base argument (a kernel
 * argument marked tensordesc), the rank coordinates follow it. */
static bool host_block(const NrFunc *f, const NrOp *o, int first, int rank) {
    if (o->nopnds != first + 1 + rank || rank < 1 || rank > 5) return false;
    NrValId d = o->opnds[first];
    return d && !f->vals[d].def && f->vals[d].block == f->body && f->params[f->vals[d].index].tensordesc == rank;
}

bool nr_gpu_tma_fills(const NrModule *m, const NrFunc *f, const NrOp *load, int32_t layout, bool *nan) {
    if (!load->nresults) return false;
    const NrType *rt = &m->types[f->vals[load->results[0]].type];
    if (rt->kind != NR_TK_VALUE || rt->rank < 1 || !host_block(f, load, 3, rt->rank)) return false;
    NrValId other = load->opnds[2];
    *nan = other && nr_gpu_is_nan_const(f, other);
    if (other && !*nan && !nr_gpu_is_zero_const(f, other)) return false;
    if (*nan && nr_dtype_info[rt->dtype].bytes == 1) return false; /* TMA fills no 8-bit type with NaN */
    const NrLayout *l = &m->layouts[layout];
    NrTmaPlan plan;
    return l->kind == NR_LK_SHARED && l->nvmma && l->order[0] == rt->rank - 1 &&
           nr_tma_plan(l, rt->rank, rt->shape, nr_dtype_info[rt->dtype].bytes, &plan);
}

/* The layout of the tensor map kernel argument `arg` has in the tma_loads
 * of f (0: none reads it); *conflict when two of them differ. */
static int32_t tma_load_layout(const NrModule *m, const NrFunc *f, NrValId arg, bool *conflict) {
    int32_t lay = 0;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || op->opc != NR_OP_TMA_LOAD) continue;
        NrOpId tm = f->vals[op->opnds[0]].def;
        if (!tm || f->ops[tm].opc != NR_OP_TENSORMAP || f->ops[tm].opnds[0] != arg) continue;
        int32_t l = m->types[f->vals[op->opnds[1]].type].layout;
        if (lay && l != lay) *conflict = true;
        lay = l;
    }
    return lay;
}

/* Whether f has a tensormap op of `arg`; *nan: whether it fills
 * out-of-bounds elements with NaN. */
static bool tensormap_fill(const NrFunc *f, NrValId arg, bool *nan) {
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || op->opc != NR_OP_TENSORMAP || op->opnds[0] != arg) continue;
        *nan = strcmp(nr_op_str(f, o, NR_A_NAN, ""), "fill") == 0;
        return true;
    }
    return false;
}

/* The number of distinct descriptor arguments f's tensormap ops read. */
static int tensormap_args(const NrFunc *f) {
    NrValId seen[NR_MAX_TMAPS + 1];
    int n = 0;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || op->opc != NR_OP_TENSORMAP) continue;
        int j = 0;
        while (j < n && seen[j] != op->opnds[0]) j++;
        if (j == n && n <= NR_MAX_TMAPS) seen[n++] = op->opnds[0];
    }
    return n;
}

/* Erases the pure ops that computed v, now that nothing reads it (a
 * replaced load's addresses and masks). */
static void erase_unused(NrFunc *f, NrValId v, int depth) {
    NrOpId d = v > 0 ? f->vals[v].def : NR_NONE;
    if (!d || depth > 64 || f->ops[d].dead || f->ops[d].nregions || !(nr_op_info[f->ops[d].opc].flags & NR_OPF_PURE))
        return;
    for (int i = 0; i < f->ops[d].nresults; i++)
        if (nr_gpu_uses_of(f, f->ops[d].results[i])) return;
    int n = f->ops[d].nopnds;
    NrValId opnds[16];
    if (n > 16) return;
    memcpy(opnds, f->ops[d].opnds, sizeof(NrValId) * (size_t)n);
    nr_op_erase(f, d);
    for (int i = 0; i < n; i++) erase_unused(f, opnds[i], depth + 1);
}

/* --- one-off TMA loads (sm_90a) ----------------------------------------------------------------------- */
/* A block of a host descriptor loaded once, in the kernel's top block (or
 * in the body of a tile loop there, see tile_loop), and staged for wgmma
 * (its only user a local_alloc into an nvmma layout TMA boxes can fill;
 * attention's Q tile) is copied by TMA:
 *
 *   bar = local_alloc : !smem<1x1xi64>; mbarrier_init bar[0] {count = 1}
 *   buf = local_alloc : (the staging buffer's type)
 *   mbarrier_expect bar[0] {bytes}; tma_load tensormap(desc), buf, bar[0], coords
 *   ...                              (what follows: a loop's prologue copies)
 *   mbarrier_wait bar[0], 0          before the first op that reads buf
 *   ...
 *   mbarrier_inval bar[0]            at the end
 *
 * in place of the pointer load (its address math, masks and registers) and
 * the store into the buffer: the copy is in flight while the program
 * issues the loop's first copies.  Its out-of-bounds elements are TMA's
 * fill, so the load's `other` must be 0 (or NaN with padding "nan", not for
 * 8-bit types); the descriptor's other TMA copies must fill buffers of the
 * same layout with the same fill (one tensor map per descriptor).  In a
 * kernel that splits into warp-specialized roles, only loads after the
 * split qualify: the ops in front of it run on the producer's warps too,
 * which would issue the copy a second time (gpu-pipeline sinks the
 * consumers' one-off loads past it). */
static bool tma_load_ok(NrModule *m, NrFunc *f, NrOpId op, NrBlockId blk, NrOpId *alloc, bool *nan) {
    const NrOp *o = &f->ops[op];
    if (o->block != blk || o->nresults != 1) return false;
    NrOpId a = nr_gpu_sole_user(f, o->results[0]);
    if (!a || f->ops[a].opc != NR_OP_LOCAL_ALLOC || f->ops[a].nopnds != 1 || f->ops[a].block != blk) return false;
    int32_t lay = m->types[f->vals[f->ops[a].results[0]].type].layout;
    if (!nr_gpu_tma_fills(m, f, o, lay, nan)) return false;
    *alloc = a;
    NrValId d = o->opnds[3];
    bool conflict = false, fill = false;
    int32_t loaded = tma_load_layout(m, f, d, &conflict);
    if (conflict || (loaded && loaded != lay)) return false;
    if (tensormap_fill(f, d, &fill)) return fill == *nan;
    return tensormap_args(f) < NR_MAX_TMAPS;
}

static void tma_load(NrModule *m, NrFunc *f, NrOpId op, NrOpId alloc, bool nan, NrOpId loop) {
    const NrOp *o = &f->ops[op];
    int rank = o->nopnds - 4;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), i64 = nr_type_scalar(m, NR_DT_I64);
    NrBlockId blk = o->block;
    /* the mbarrier and the tensor map in front of the loop, if any */
    NrBuilder pre = nr_builder_before(f, loop ? loop : op);
    pre.loc = o->loc;
    NrBuilder b = nr_builder_before(f, op);
    b.loc = o->loc;
    /* the mbarrier: one, of one arrival (the issuing thread's expect) */
    NrTypeId view;
    NrValId bars = nr_gpu_alloc_mbarriers(m, f, &pre, 1, 1, &view);
    NrValId zero = nr_build_const_int(&pre, i32, 0);
    NrValId bi[2] = {bars, zero};
    NrValId bar = nr_build1(&pre, NR_OP_MEMDESC_INDEX, view, 2, bi);
    NrValId d = f->ops[op].opnds[3];
    NrOpId tm = nr_build(&pre, NR_OP_TENSORMAP, 1, &d, 1, &i64, 0);
    if (nan) nr_op_set_str(f, tm, NR_A_NAN, "fill");
    /* in a loop, iteration i waits for phase i: parity ((iv - lb) / step) & 1 */
    NrValId parity = zero;
    if (loop) {
        const NrValId *bounds = f->ops[loop].opnds;
        NrValId iv = f->blocks[blk].args[0];
        NrTypeId it = f->vals[iv].type;
        NrValId sub[2] = {iv, bounds[0]};
        NrValId n = nr_build1(&b, NR_OP_SUB, it, 2, sub);
        NrValId dv[2] = {n, bounds[2]};
        NrValId i = nr_build1(&b, NR_OP_DIV, it, 2, dv);
        NrValId one = nr_build_const_int(&b, it, 1);
        NrValId an[2] = {i, one};
        parity = nr_build1(&b, NR_OP_AND, it, 2, an);
        if (it != i32) parity = nr_build1(&b, NR_OP_CAST, i32, 1, &parity);
    }
    NrValId buf = nr_build1(&b, NR_OP_LOCAL_ALLOC, f->vals[f->ops[alloc].results[0]].type, 0, NULL);
    const NrType *t = &m->types[f->vals[f->ops[op].results[0]].type];
    NrValId ex[2] = {bar, NR_NONE};
    NrOpId e = nr_build(&b, NR_OP_MBARRIER_EXPECT, 2, ex, 0, NULL, 0);
    int64_t bytes = nr_type_numel(m, f->vals[f->ops[op].results[0]].type) * nr_dtype_info[t->dtype].bytes;
    nr_op_set_int(f, e, NR_A_BYTES, bytes);
    NrValId ops[4 + 5] = {f->ops[tm].results[0], buf, bar, NR_NONE};
    for (int i = 0; i < rank; i++) ops[4 + i] = f->ops[op].opnds[4 + i];
    NrOpId copy = nr_build(&b, NR_OP_TMA_LOAD, 4 + rank, ops, 0, NULL, 0);
    nr_replace_all_uses(f, f->ops[alloc].results[0], buf);
    nr_op_erase(f, alloc);
    NrValId addr[3] = {f->ops[op].opnds[0], f->ops[op].opnds[1], f->ops[op].opnds[2]};
    nr_op_erase(f, op);
    for (int i = 0; i < 3; i++) erase_unused(f, addr[i], 0);
    /* the wait before the first op of the top block that reads the buffer
     * (early returns are structured into the branches of an `if` by then:
     * the function's only return is its last op); the invalidation at the
     * end (gpu-barriers orders it after every thread's wait): not right
     * after the last reader, where the barrier in front of it could stop
     * one warpgroup of a ping-pong pair before it hands the other its turn */
    NrOpId first = NR_NONE, ret = nr_block_terminator(f, f->body), end = nr_block_terminator(f, blk);
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block || u == copy) continue;
        bool reads = false;
        for (int i = 0; i < uo->nopnds; i++) reads |= uo->opnds[i] == buf;
        if (!reads) continue;
        NrOpId top = nr_gpu_ancestor_in(f, u, blk);
        if (!first || nr_gpu_comes_before(f, top, first)) first = top;
    }
    NrBuilder w = first || end ? nr_builder_before(f, first ? first : end) : nr_builder_at_end(f, blk);
    w.loc = b.loc;
    NrValId wt[2] = {bar, parity};
    nr_build(&w, NR_OP_MBARRIER_WAIT, 2, wt, 0, NULL, 0);
    NrBuilder iv = ret ? nr_builder_before(f, ret) : nr_builder_at_end(f, f->body);
    iv.loc = b.loc;
    nr_build(&iv, NR_OP_MBARRIER_INVAL, 1, &bar, 0, NULL, 0);
}

/* A loop of the kernel's top block whose body's one-off loads qualify too
 * (a persistent kernel's tile loop): a positive constant step, so that
 * iteration i's wait is for the mbarrier's phase i. */
static bool tile_loop(const NrFunc *f, NrOpId loop) {
    NrOpId s = f->vals[f->ops[loop].opnds[2]].def;
    if (!s || f->ops[s].opc != NR_OP_CONST) return false;
    const NrAttr *a = nr_op_attr(f, s, NR_A_VALUE);
    return a && a->kind == NR_AK_INT && a->v.i > 0;
}

bool nr_gpu_tma_loads(NrModule *m, NrDiags *d) {
    if (!m->sm_a || m->no_tma || nr_gpu_sm(m) < 90) return true;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        if (!f->is_kernel) continue;
        /* the ops after a split run on the consumer warps alone */
        NrOpId split = NR_NONE;
        bool nested = false;
        for (NrOpId o = 1; o < f->nops; o++)
            if (!f->ops[o].dead && f->ops[o].block && f->ops[o].opc == NR_OP_WARP_SPECIALIZE) {
                nested |= f->ops[o].block != f->body || split;
                split = o;
            }
        if (nested) continue;
        for (NrOpId op = split ? f->ops[split].next : f->blocks[f->body].first, next; op; op = next) {
            next = f->ops[op].next;
            NrOpId alloc;
            bool nan;
            if (f->ops[op].opc == NR_OP_FOR && tile_loop(f, op)) {
                NrBlockId body = f->ops[op].regions[0];
                for (NrOpId in = f->blocks[body].first, nin; in; in = nin) {
                    nin = f->ops[in].next;
                    if (f->ops[in].opc != NR_OP_LOAD || !tma_load_ok(m, f, in, body, &alloc, &nan)) continue;
                    if (f->ops[in].next == alloc) nin = f->ops[alloc].next;
                    tma_load(m, f, in, alloc, nan, op);
                }
                continue;
            }
            if (f->ops[op].opc != NR_OP_LOAD || !tma_load_ok(m, f, op, f->body, &alloc, &nan)) continue;
            if (f->ops[op].next == alloc) next = f->ops[alloc].next;
            tma_load(m, f, op, alloc, nan, NR_NONE);
        }
    }
    (void)d;
    return true;
}

/* --- TMA stores (sm_90a) ------------------------------------------------------------------------------- */
/* Whether every use of v is in block b. */
static bool used_only_in(const NrFunc *f, NrValId v, NrBlockId b) {
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == v && uo->block != b) return false;
    }
    return true;
}

/* The pure ops in front of `iff` whose values only region b reads (the
 * masked store's pointers and mask) move into b, so that they are not live
 * (nor computed) on the TMA path. */
static void sink_into(NrFunc *f, NrOpId iff, NrBlockId b) {
    for (NrOpId o = f->ops[iff].prev, prev; o; o = prev) {
        prev = f->ops[o].prev;
        const NrOp *op = &f->ops[o];
        if (!(nr_op_info[op->opc].flags & NR_OPF_PURE) || op->nregions || op->nresults != 1 ||
            !used_only_in(f, op->results[0], b))
            continue;
        nr_op_unlink(f, o);
        NrOpId first = f->blocks[b].first;
        if (first) nr_op_insert_before(f, first, o);
        else nr_op_append(f, b, o);
    }
}

/* A host descriptor's block store (store operands 3...: its base, a kernel
 * argument marked tensordesc, and the block's coordinates) becomes a TMA
 * store: the block goes to an nvmma buffer (stmatrix for 16-bit
 * tensor-core fragments), one thread copies the buffer to the tensor map's
 * tile, and TMA writes its in-bounds elements, which is the store's mask,
 * but in whole 16-byte chunks of a row: where the innermost size is not a
 * multiple of 16 bytes it would also write the elements up to the next
 * 16-byte boundary.  So the TMA store runs under
 *   if size[rank - 1] % (16 / elem_bytes) == 0
 * (the same for every program of a launch) and the masked store stays in
 * the else branch.  Where the descriptor is also loaded by TMA, the buffer
 * takes the layout of those loads (one tensor map). */
static void tma_store(NrModule *m, NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    if (o->nopnds < 5) return;
    const NrType *vt = &m->types[f->vals[o->opnds[1]].type];
    int rank = vt->rank, es = nr_dtype_info[vt->dtype].bytes;
    NrValId d = o->opnds[3];
    if (!host_block(f, o, 3, rank) || vt->dtype == NR_DT_I1 || !nr_gpu_layout_of(f, o->opnds[1])) return;
    int32_t order[5];
    for (int i = 0; i < rank; i++) order[i] = rank - 1 - i;
    int64_t inner = (int64_t)vt->shape[rank - 1] * es;
    int32_t lay = nr_layout_nvmma(m, rank, inner >= 128 ? 128 : inner >= 64 ? 64 : inner >= 32 ? 32 : 0, order);
    bool conflict = false;
    int32_t loaded = tma_load_layout(m, f, d, &conflict);
    if (conflict) return;
    if (loaded) lay = loaded;
    NrTmaPlan plan;
    if (!nr_tma_plan(&m->layouts[lay], rank, vt->shape, es, &plan) || m->layouts[lay].order[0] != rank - 1) return;
    NrType bt = *vt;
    bt.kind = NR_TK_MEMDESC;
    bt.layout = lay;
    NrLoc loc = o->loc;
    NrBuilder b = nr_builder_before(f, op);
    b.loc = loc;
    /* the guard: the descriptor's innermost size (the argument after its
     * other sizes) in whole 16-byte chunks */
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), i1 = nr_type_scalar(m, NR_DT_I1);
    NrValId size = f->blocks[f->body].args[f->vals[d].index + rank];
    NrValId rq[2] = {size, nr_build_const_int(&b, i32, 16 / es)};
    NrValId rem = nr_build1(&b, NR_OP_REM, i32, 2, rq);
    NrValId cq[2] = {rem, nr_build_const_int(&b, i32, 0)};
    NrOpId cmp = nr_build(&b, NR_OP_CMP, 2, cq, 1, &i1, 0);
    nr_op_set_str(f, cmp, NR_A_PRED, "eq");
    NrValId cond = f->ops[cmp].results[0];
    NrOpId iff = nr_op_new(f, NR_OP_IF, 1, &cond, 0, NULL, 2, loc);
    nr_op_insert_before(f, op, iff);
    NrBlockId then = f->ops[iff].regions[0], other = f->ops[iff].regions[1];
    NrBuilder t = nr_builder_at_end(f, then);
    t.loc = loc;
    NrValId v = f->ops[op].opnds[1];
    NrValId buf = nr_build1(&t, NR_OP_LOCAL_ALLOC, nr_type_intern(m, &bt), 1, &v);
    NrTypeId i64 = nr_type_scalar(m, NR_DT_I64);
    NrOpId tm = nr_build(&t, NR_OP_TENSORMAP, 1, &d, 1, &i64, 0);
    NrValId ops[2 + 5] = {f->ops[tm].results[0], buf};
    for (int i = 0; i < rank; i++) ops[2 + i] = f->ops[op].opnds[4 + i];
    nr_build(&t, NR_OP_TMA_STORE, 2 + rank, ops, 0, NULL, 0);
    nr_build(&t, NR_OP_YIELD, 0, NULL, 0, NULL, 0);
    nr_op_unlink(f, op);
    nr_op_append(f, other, op);
    nr_op_append(f, other, nr_op_new(f, NR_OP_YIELD, 0, NULL, 0, NULL, 0, loc));
    sink_into(f, iff, other);
}

bool nr_gpu_tma_stores(NrModule *m, NrDiags *d) {
    (void)d;
    if (!m->sm_a || m->no_tma || m->sm < 90) return true;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        if (!f->is_kernel) continue;
        int32_t n = f->nops; /* (the ops it adds are no stores) */
        for (NrOpId op = 1; op < n; op++)
            if (!f->ops[op].dead && f->ops[op].block && f->ops[op].opc == NR_OP_STORE) tma_store(m, f, op);
    }
    return true;
}
