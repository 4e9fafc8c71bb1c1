/* gpu_pipeline.c - the GPU pass pipeline and the software pipelining hook.
 * The passes are registered with the block passes (passes.c).
 *
 *   block IR (after the block pipeline)
 *     -> gpu-convert          layouts on every block; mma layouts for dots
 *     -> gpu-coalesce         memory ops take the layouts that vectorize them
 *     -> gpu-remove-converts  one layout per chain; rematerialize cheap ops
 *     -> gpu-pipeline         multi-buffered cp.async loops (num_stages > 1)
 *     -> gpu-remove-converts  again, for what pipelining changed
 *     -> gpu-hoist-loads      global loads issued before earlier reductions
 *     -> gpu-tma-loads        sm_90a: one-off descriptor tiles for wgmma by TMA
 *     -> gpu-tma-stores       sm_90a: descriptor block stores by TMA
 *     -> gpu-smem             shared-memory offsets, liveness-based reuse
 *     -> gpu-barriers         bar.sync where shared memory is reused or read
 *   GPU IR, ready for the PTX emitter (nr_emit_ptx)
 *
 * The target (num_warps, sm) is the module's; nr_run_gpu_pipeline writes the
 * options into it first, so every pass also runs alone on IR text. */
#include "gpu_impl.h"
#include "passes_impl.h"
#include "ptx.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* --- software pipelining ----------------------------------------------------------------------- */
/* A loop is pipelined `num_stages` (S) deep when its loop attribute (from
 * tl.range, or set from the pipeline's option) says S > 1 and its body loads
 * tiles that feed dots:
 *   load p, mask, _|0  ->  convert_layout to a dot_op layout  ->  dot
 * with the mask computed from the induction variable and loop-invariant
 * values alone (pure ops of the body), and p either
 *   - a loop-carried pointer block advanced by a loop-invariant step
 *     (`yield addptr(p, d)`), or
 *   - computed, like the mask, from the induction variable and loop
 *     invariants alone (`k_base + offs_d[:, None] + (start + offs_n)[None, :]
 *     * stride`, attention's K and V): the copy for iteration iv' clones
 *     that chain with iv replaced by iv'.
 * Each such load becomes a cp.async copy into an S-buffered local_alloc,
 * issued S - 1 iterations ahead:
 *
 *   buf = local_alloc : !smem<S x tile, shared>
 *   for s in 0 .. S-2:                        (prologue, iv_s = lb + s step)
 *     async_copy p(iv_s), buf[s], mask(iv_s) & (iv_s < ub); async_commit_group
 *   for iv ... carrying q (carried pointers S-1 iterations ahead), r (read
 *       buffer), w (write buffer):
 *     async_wait {num = S - 2}                (iteration iv's copies are done)
 *     async_copy q | p(iv'), buf[w], mask(iv') & (iv' < ub)   iv' = iv + (S-1) step
 *     async_commit_group
 *     ...
 *     a = local_load buf[r]                   (where the load was converted,
 *     ...                                      straight into the dot_op layout)
 *     yield ..., addptr(q, d), (r + 1) % S, (w + 1) % S
 *   async_wait {num = 0}
 *
 * gpu-barriers then puts one barrier after the wait: it orders the copies of
 * this iteration after every thread's reads of that buffer in the previous
 * one (by every dot that reads it), and the reads after every thread's
 * copies.  When the body's only dot reads both its operands from the
 * stages, the copies move after it (see after_dot below), and gpu-barriers
 * puts a second barrier before them.  Copies past the end of the loop are
 * masked off (cp.async zero-fills); gpu-smem keeps the buffers live until
 * the drain.  Loads with another `other` than 0, or whose pointers or masks
 * depend on other loop-carried values, stay as they are.
 *
 * S is capped so that the S buffers fit in shared memory beside what else
 * the loop keeps there (other buffers, the largest scratch of its ops).  A
 * local_alloc of the body that stages a loop-invariant value (attention's Q
 * for wgmma) moves in front of the loop.
 *
 * On sm_90a the tiles of a warp_group_dot are staged in the nvmma buffer
 * gpu-convert gave them (load -> local_alloc -> warp_group_dot): the view
 * buf[r] replaces the local_alloc.  When the dot may run asynchronously
 * (async_dot: S >= 3, its accumulator carried in place), its group stays in
 * flight into the next iteration:
 *
 *   for iv ...:
 *     async_wait {num = D - 1}; barrier (gpu-barriers)
 *     async_copy q, buf[w], ...; async_commit_group      w: the stage of iv - 2
 *     acc' = warp_group_dot buf[r], ..., acc {is_async}
 *     acc'' = warp_group_dot_wait acc' {num = 1}        the dot of iv - 1 is done
 *     yield acc'', ...
 *   acc = warp_group_dot_wait acc {num = 0}
 *
 * with the copies D = NB - 2 iterations ahead in NB buffers: the stage
 * they overwrite was read by the dot two iterations back, which every
 * warpgroup has waited for before the barrier.  NB is S + 1 where shared
 * memory has room (the copies stay S - 1 ahead), else S.
 *
 * The second of two dots (attention's P V after Q K^T, chain_async_dot)
 * may instead stay in flight into the next iteration, its accumulator
 * waited for after the next iteration's first dot:
 *
 *   for iv ... carrying acc:
 *     s = warp_group_dot q, buf_k[r], 0          (waits for all its groups)
 *     acc' = warp_group_dot_wait acc {num = 0}
 *     ... x = acc' * alpha ...
 *     r2 = warp_group_dot p, buf_v[r], x {is_async}
 *     yield r2
 *   acc = warp_group_dot_wait acc {num = 0}
 *
 * with the same buffers and look-ahead as an async single dot. */
enum { MAX_CLONE = 128, MAX_CANDS = 8 };

typedef struct Cand {
    NrOpId load, conv;
    NrOpId trans;            /* a 2-D trans between the load and its staging (K^T of attention): the
                              * tile is staged as loaded and read through a memdesc_trans view */
    NrOpId mid;              /* a convert_layout between the load and that trans */
    int32_t layout;          /* of the staged tile, when conv is a local_alloc */
    bool tma;                /* copied by TMA from the tensor map of the host descriptor it loads */
    NrValId tmap;            /* the tensormap value (TMA) */
    int arg;                 /* index of the carried pointer among the body's arguments; -1 when
                              * the pointers are computed from the induction variable */
    NrValId inc;             /* the loop-invariant step of carried pointers */
    NrValId buf;             /* the S-buffered allocation */
    NrValId q;               /* body argument: carried pointers S-1 iterations ahead */
    NrTypeId view;           /* !smem type of one buffer */
} Cand;

/* The tensor maps a function's TMA copies use: one per host descriptor,
 * so every copy of a descriptor must fill buffers of one layout. */
typedef struct TmaUse {
    NrValId arg;
    int32_t layout;
    bool nan;
} TmaUse;

typedef struct Pipe {
    NrModule *m;
    NrFunc *f;
    NrOpId loop;
    NrOpId outer;            /* a warp-specialized persistent loop around it (ws_wanted) */
    int stages;
    TmaUse *tma;             /* per function, shared by its loops */
    int *ntma;
    NrValId map_from[MAX_CLONE], map_to[MAX_CLONE];
    int nmap;
} Pipe;

/* Whether block b is the body of `loop` or nested in it. */
static bool nested_in(const NrFunc *f, NrOpId loop, NrBlockId b) {
    for (int depth = 0; b && depth < 1000; depth++) {
        NrOpId parent = f->blocks[b].parent;
        if (parent == loop) return true;
        if (!parent) return false;
        b = f->ops[parent].block;
    }
    return false;
}

/* Whether block b is the loop's body or nested in it. */
static bool block_inside(const Pipe *p, NrBlockId b) {
    return nested_in(p->f, p->loop, b);
}

/* Whether value v is defined inside the loop's body (or deeper). */
static bool inside(const Pipe *p, NrValId v) {
    NrFunc *f = p->f;
    return block_inside(p, f->vals[v].def ? f->ops[f->vals[v].def].block : f->vals[v].block);
}

/* Whether an op inside the loop uses v. */
static bool read_inside(const Pipe *p, NrValId v) {
    NrFunc *f = p->f;
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block || !block_inside(p, uo->block)) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == v) return true;
    }
    return false;
}

/* v is computed from the induction variable and loop invariants by pure
 * ops of the body itself. */
static bool from_iv(const Pipe *p, NrValId v, NrValId iv, int depth) {
    NrFunc *f = p->f;
    if (!inside(p, v)) return true;
    if (v == iv) return true;
    NrOpId def = f->vals[v].def;
    if (!def || depth > 32 || f->ops[def].block != f->ops[p->loop].regions[0]) return false;
    const NrOp *o = &f->ops[def];
    if (!(nr_op_info[o->opc].flags & NR_OPF_PURE) || o->nregions || o->nresults != 1 || o->nopnds > 8) return false;
    for (int i = 0; i < o->nopnds; i++)
        if (o->opnds[i] && !from_iv(p, o->opnds[i], iv, depth + 1)) return false;
    return true;
}

/* A copy of v's computation at builder b with the induction variable iv
 * replaced by iv2 (requires from_iv). */
static NrValId clone_at(Pipe *p, NrBuilder *b, NrValId v, NrValId iv, NrValId iv2) {
    NrFunc *f = p->f;
    if (!inside(p, v)) return v;
    if (v == iv) return iv2;
    for (int i = 0; i < p->nmap; i++)
        if (p->map_from[i] == v) return p->map_to[i];
    NrOpId def = f->vals[v].def;
    int n = f->ops[def].nopnds;
    NrValId ops[8];
    NR_ASSERT(n <= 8);
    for (int i = 0; i < n; i++) ops[i] = f->ops[def].opnds[i] ? clone_at(p, b, f->ops[def].opnds[i], iv, iv2) : NR_NONE;
    NrTypeId t = f->vals[v].type;
    NrOpId c = nr_build(b, (NrOpcode)f->ops[def].opc, n, ops, 1, &t, 0);
    nr_op_copy_attrs(f, c, f, def);
    NrValId r = f->ops[c].results[0];
    if (p->nmap < MAX_CLONE) {
        p->map_from[p->nmap] = v;
        p->map_to[p->nmap++] = r;
    }
    return r;
}

bool nr_gpu_is_zero_const(const NrFunc *f, NrValId v) {
    NrOpId d = f->vals[v].def;
    if (!d || f->ops[d].opc != NR_OP_CONST) return false;
    const NrAttr *a = nr_op_attr(f, d, NR_A_VALUE);
    if (!a) return false;
    return (a->kind == NR_AK_INT && a->v.i == 0) || (a->kind == NR_AK_FLOAT && a->v.f == 0.0 && !signbit(a->v.f));
}

/* Buffer v (a local_alloc's result) is a single buffer with a shared
 * layout that only ops of the loop body read, none of them a region op or
 * a terminator: a view of this iteration's stage can replace it. */
static bool staged_in_body(const Pipe *p, NrValId v) {
    NrFunc *f = p->f;
    const NrType *t = &p->m->types[f->vals[v].type];
    if (t->kind != NR_TK_MEMDESC || t->rank != p->m->layouts[t->layout].rank) return false;
    NrBlockId body = f->ops[p->loop].regions[0];
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == v && (uo->block != body || uo->nregions || (nr_op_info[uo->opc].flags & NR_OPF_TERM)))
                return false;
    }
    return true;
}

bool nr_gpu_is_nan_const(const NrFunc *f, NrValId v) {
    NrOpId d = f->vals[v].def;
    if (!d || f->ops[d].opc != NR_OP_CONST) return false;
    const NrAttr *a = nr_op_attr(f, d, NR_A_VALUE);
    return a && a->kind == NR_AK_FLOAT && isnan(a->v.f);
}

/* Candidate c may be copied by TMA (sm_90a): the load is a block of a host
 * tensor descriptor (operands 3...: the kernel argument that is its base,
 * the block's coordinates, computed from the induction variable and loop
 * invariants), staged for wgmma in an nvmma buffer TMA boxes can fill, the
 * descriptor's contiguous last dimension fastest; out-of-bounds elements
 * read as 0 (or NaN: padding "nan"), as TMA fills them; and the
 * descriptor's other TMA copies fill buffers of the same layout (one
 * tensor map each). */
static bool tma_ok(Pipe *p, const Cand *c, bool *nan) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    const NrOp *o = &f->ops[c->load];
    if (!m->sm_a || m->no_tma || nr_gpu_sm(m) < 90 || !f->is_kernel) return false;
    int32_t lay = c->layout;
    if (f->ops[c->conv].opc != NR_OP_LOCAL_ALLOC || !nr_gpu_tma_fills(m, f, o, lay, nan)) return false;
    for (int i = 4; i < o->nopnds; i++)
        if (!from_iv(p, o->opnds[i], f->blocks[f->ops[p->loop].regions[0]].args[0], 0)) return false;
    NrValId d = o->opnds[3];
    for (int i = 0; i < *p->ntma; i++)
        if (p->tma[i].arg == d) return p->tma[i].layout == lay && p->tma[i].nan == *nan;
    return *p->ntma < NR_MAX_TMAPS;
}

static void tma_record(Pipe *p, NrValId arg, int32_t layout, bool nan) {
    for (int i = 0; i < *p->ntma; i++)
        if (p->tma[i].arg == arg) return;
    p->tma[(*p->ntma)++] = (TmaUse){arg, layout, nan};
}

static bool same_bytes_transposed(NrModule *m, NrTypeId a, NrTypeId t);

NrOpId nr_gpu_sole_user(const NrFunc *f, NrValId v) {
    NrOpId user = NR_NONE;
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == v) {
                if (user) return NR_NONE;
                user = u;
            }
    }
    return user;
}

/* Load `op` of the loop body qualifies (see above); fills c. */
static bool candidate(Pipe *p, NrOpId op, Cand *c) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    const NrOp *o = &f->ops[op];
    NrBlockId body = f->ops[p->loop].regions[0];
    const NrBlock *blk = &f->blocks[body];
    if (o->opc != NR_OP_LOAD || o->block != body || !nr_gpu_layout_of(f, o->results[0])) return false;
    const NrType *rt = &m->types[f->vals[o->results[0]].type];
    if (rt->rank < 2 || rt->ptr) return false;
    /* its only user converts it to a dot operand, or stages it in a buffer
     * (for warp_group_dot) that only ops of the body read */
    NrOpId conv = nr_gpu_sole_user(f, o->results[0]), trans = NR_NONE, mid = NR_NONE;
    if (conv && f->ops[conv].opc == NR_OP_CONVERT_LAYOUT && rt->rank == 2 && m->sm_a) {
        NrOpId t = nr_gpu_sole_user(f, f->ops[conv].results[0]);
        if (t && f->ops[t].opc == NR_OP_TRANS) mid = conv, conv = t;
    }
    /* or a 2-D trans of it is staged for wgmma (k.T of a descriptor's block):
     * the tile is staged as loaded, in the layout whose bytes the staging's
     * layout reads transposed */
    if (conv && f->ops[conv].opc == NR_OP_TRANS && f->ops[conv].block == body && rt->rank == 2 && m->sm_a) {
        trans = conv;
        conv = nr_gpu_sole_user(f, f->ops[trans].results[0]);
        if (!conv || f->ops[conv].opc != NR_OP_LOCAL_ALLOC) return false;
    } else if (mid) {
        return false;
    }
    if (!conv || f->ops[conv].block != body ||
        (f->ops[conv].opc != NR_OP_CONVERT_LAYOUT && f->ops[conv].opc != NR_OP_LOCAL_ALLOC))
        return false;
    if (f->ops[conv].opc == NR_OP_LOCAL_ALLOC) {
        if (!staged_in_body(p, f->ops[conv].results[0])) return false;
    } else {
        int32_t cl = nr_gpu_layout_of(f, f->ops[conv].results[0]);
        if (!cl || m->layouts[cl].kind != NR_LK_DOT_OP) return false;
    }
    /* pointers: a carried argument advanced by an invariant step, or
     * computed from the induction variable and loop invariants */
    NrValId ptr = o->opnds[0];
    int arg = -1;
    for (int i = 1; i < blk->nargs; i++)
        if (blk->args[i] == ptr) arg = i;
    c->inc = NR_NONE;
    if (arg >= 0) {
        NrOpId y = nr_block_terminator(f, body);
        if (!y || arg - 1 >= f->ops[y].nopnds) return false;
        NrValId next = f->ops[y].opnds[arg - 1];
        NrOpId nd = f->vals[next].def;
        if (!nd || f->ops[nd].opc != NR_OP_ADDPTR || f->ops[nd].opnds[0] != ptr || inside(p, f->ops[nd].opnds[1]))
            return false;
        c->inc = f->ops[nd].opnds[1];
    } else if (!from_iv(p, ptr, blk->args[0], 0)) {
        return false;
    }
    if (o->opnds[1] && !from_iv(p, o->opnds[1], blk->args[0], 0)) return false;
    c->load = op;
    c->conv = conv;
    c->trans = trans;
    c->mid = mid;
    c->layout = 0;
    if (f->ops[conv].opc == NR_OP_LOCAL_ALLOC) {
        NrTypeId at = f->vals[f->ops[conv].results[0]].type;
        c->layout = m->types[at].layout;
        if (trans) {
            const NrLayout *la = &m->layouts[c->layout];
            if (!la->nvmma || la->rank != 2) return false;
            int32_t rev[2] = {la->order[1], la->order[0]};
            NrType st = m->types[at];
            st.shape[0] = rt->shape[0];
            st.shape[1] = rt->shape[1];
            st.layout = nr_layout_nvmma(m, 2, la->swizzle_bytes, rev);
            if (!same_bytes_transposed(m, nr_type_intern(m, &st), at)) return false;
            c->layout = st.layout;
        }
    }
    c->arg = arg;
    c->tma = false;
    c->tmap = NR_NONE;
    bool nan = false;
    if (tma_ok(p, c, &nan)) {
        c->tma = true;
        tma_record(p, o->opnds[3], c->layout, nan);
        return true;
    }
    if (o->opnds[2] && !nr_gpu_is_zero_const(f, o->opnds[2])) return false;
    return true;
}

/* The shared layout a dot operand tile is staged in: 16-byte vectors along
 * its contiguous dimension, swizzled over 128-byte rows. */
static int32_t staging_layout(NrModule *m, const NrType *t, int32_t ptr_layout) {
    const NrLayout *l = &m->layouts[ptr_layout];
    int32_t order[NR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) order[i] = l->kind == NR_LK_BLOCKED ? l->order[i] : t->rank - 1 - i;
    int eb = nr_dtype_info[t->dtype].bytes;
    int64_t cols = t->shape[order[0]];
    int vec = 16 / eb;
    if (vec > cols) vec = (int)cols;
    int64_t per_phase = 128 / (cols * eb);
    if (per_phase < 1) per_phase = 1;
    int64_t max_phase = 8 / per_phase;
    if (max_phase > cols / vec) max_phase = cols / vec;
    if (max_phase < 1) max_phase = 1;
    return nr_layout_shared(m, t->rank, vec, (int)per_phase, (int)max_phase, order);
}

static NrValId const_i32(NrBuilder *b, NrModule *m, int64_t v) {
    return nr_build_const_int(b, nr_type_scalar(m, NR_DT_I32), v);
}

/* ptr-shaped i1 splat of scalar c, and-ed with mask (if any). */
static NrValId full_mask(Pipe *p, NrBuilder *b, NrValId ptr, NrValId mask, NrValId c) {
    NrModule *m = p->m;
    NrTypeId pt = p->f->vals[ptr].type;
    NrTypeId mt = nr_type_with_dtype(m, pt, NR_DT_I1);
    NrValId s = nr_build1(b, NR_OP_SPLAT, mt, 1, &c);
    if (!mask) return s;
    NrValId ops[2] = {mask, s};
    return nr_build1(b, NR_OP_AND, mt, 2, ops);
}

static void copy_into(NrBuilder *b, const Cand *c, NrValId ptr, NrValId index, NrValId mask) {
    NrValId ops[2] = {c->buf, index};
    NrValId view = nr_build1(b, NR_OP_MEMDESC_INDEX, c->view, 2, ops);
    NrValId cp[4] = {ptr, view, mask, NR_NONE};
    nr_build(b, NR_OP_ASYNC_COPY, 4, cp, 0, NULL, 0);
}

/* Mbarrier `index` of the NB in bars (view: the type of one). */
static NrValId bar_at(NrBuilder *b, NrValId bars, NrTypeId view, NrValId index) {
    NrValId bi[2] = {bars, index};
    return nr_build1(b, NR_OP_MEMDESC_INDEX, view, 2, bi);
}

/* TMA copies of stage `index` (the TMA candidates), predicated by pred,
 * completing on the stage's mbarrier, which expects their bytes. */
static void tma_copies(Pipe *p, NrBuilder *b, Cand *cands, int nc, NrValId bars, NrTypeId bar_view, NrValId index,
                       NrValId pred, int64_t bytes, NrValId iv, NrValId at_iv) {
    NrFunc *f = p->f;
    NrValId bar = bar_at(b, bars, bar_view, index);
    NrValId ex[2] = {bar, pred};
    NrOpId e = nr_build(b, NR_OP_MBARRIER_EXPECT, 2, ex, 0, NULL, 0);
    nr_op_set_int(f, e, NR_A_BYTES, bytes);
    for (int k = 0; k < nc; k++) {
        Cand *c = &cands[k];
        if (!c->tma) continue;
        const NrOp *o = &f->ops[c->load];
        int rank = o->nopnds - 4;
        NrValId vi[2] = {c->buf, index};
        NrValId view = nr_build1(b, NR_OP_MEMDESC_INDEX, c->view, 2, vi);
        NrValId ops[4 + 5] = {c->tmap, view, bar, pred};
        for (int i = 0; i < rank; i++) ops[4 + i] = clone_at(p, b, f->ops[c->load].opnds[4 + i], iv, at_iv);
        nr_build(b, NR_OP_TMA_LOAD, 4 + rank, ops, 0, NULL, 0);
    }
}

/* (x + 1) % S for a buffer index x, with the constants one, S and zero. */
static NrValId next_index(Pipe *p, NrBuilder *b, NrValId x, const NrValId *k) {
    NrModule *m = p->m;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), i1 = nr_type_scalar(m, NR_DT_I1);
    NrValId one = k[0], s = k[1], zero = k[2];
    NrValId a[2] = {x, one};
    NrValId x1 = nr_build1(b, NR_OP_ADD, i32, 2, a);
    NrValId c[2] = {x1, s};
    NrOpId cmp = nr_build(b, NR_OP_CMP, 2, c, 1, &i1, 0);
    nr_op_set_str(p->f, cmp, NR_A_PRED, "lt");
    NrValId sel[3] = {p->f->ops[cmp].results[0], x1, zero};
    return nr_build1(b, NR_OP_SELECT, i32, 3, sel);
}

/* The loop op with `extra` more carried values (initial values inits[]):
 * a new for op takes over the body; returns it. */
static NrOpId widen_loop(Pipe *p, int extra, const NrValId *inits) {
    NrFunc *f = p->f;
    NrOpId old = p->loop;
    int n = f->ops[old].nopnds, nr = f->ops[old].nresults;
    NrValId *ops = nr_alloc(p->m->arena, sizeof(NrValId) * (size_t)(n + extra));
    NrTypeId *types = nr_alloc(p->m->arena, sizeof(NrTypeId) * (size_t)(nr + extra + 1));
    memcpy(ops, f->ops[old].opnds, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < nr; i++) types[i] = f->vals[f->ops[old].results[i]].type;
    for (int i = 0; i < extra; i++) {
        ops[n + i] = inits[i];
        types[nr + i] = f->vals[inits[i]].type;
    }
    NrOpId loop = nr_op_new(f, NR_OP_FOR, n + extra, ops, nr + extra, types, 0, f->ops[old].loc);
    nr_op_copy_attrs(f, loop, f, old);
    NrBlockId body = f->ops[old].regions[0];
    f->ops[loop].regions = nr_alloc(p->m->arena, sizeof(NrBlockId));
    f->ops[loop].regions[0] = body;
    f->ops[loop].nregions = 1;
    f->blocks[body].parent = loop;
    f->ops[old].nregions = 0;
    nr_op_insert_before(f, old, loop);
    nr_replace_all_uses_n(f, f->ops[old].results, f->ops[loop].results, nr);
    nr_op_erase(f, old);
    for (int i = 0; i < extra; i++) nr_block_add_arg(f, body, types[nr + i]);
    p->loop = loop;
    return loop;
}

/* The terminator of block blk passes n more values on (the loop's new
 * carried arguments). */
static void yield_also(Pipe *p, NrBlockId blk, int n, const NrValId *more) {
    NrFunc *f = p->f;
    NrOpId y = nr_block_terminator(f, blk);
    int ny = f->ops[y].nopnds;
    NrValId *ops = nr_alloc(p->m->arena, sizeof(NrValId) * (size_t)(ny + n));
    memcpy(ops, f->ops[y].opnds, sizeof(NrValId) * (size_t)ny);
    memcpy(ops + ny, more, sizeof(NrValId) * (size_t)n);
    nr_op_set_operands(f, y, ny + n, ops);
}

int nr_gpu_uses_of(const NrFunc *f, NrValId v) {
    int n = 0;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block) continue;
        for (int i = 0; i < op->nopnds; i++) n += op->opnds[i] == v;
    }
    return n;
}

/* The loop-carried pointers the copies replaced, if nothing else uses them:
 * body argument `arg`, its advance in the body, its yield slot and result. */
static void drop_dead_pointers(Pipe *p, int arg) {
    NrFunc *f = p->f;
    NrOpId loop = p->loop;
    NrBlockId body = f->ops[loop].regions[0];
    NrOpId y = nr_block_terminator(f, body);
    NrValId v = f->blocks[body].args[arg], next = f->ops[y].opnds[arg - 1];
    NrValId res = f->ops[loop].results[arg - 1];
    NrOpId adv = f->vals[next].def;
    if (!adv || nr_gpu_uses_of(f, v) != 1 || nr_gpu_uses_of(f, next) != 1 || nr_gpu_uses_of(f, res) != 0) return;
    nr_op_erase(f, adv);
    nr_op_remove_operand(f, y, arg - 1);
    nr_op_remove_operand(f, loop, 3 + arg - 1);
    nr_op_remove_result(f, loop, arg - 1);
    nr_block_remove_arg(f, body, arg);
}

/* The body's only dot (of either kind) when it is an `opc` op both of whose
 * operands are candidates' `staging` ops (a local_alloc staging a tile for
 * warp_group_dot, a convert_layout into an mma.sync operand layout). */
static NrOpId staged_dot(Pipe *p, const Cand *cands, int nc, NrOpcode opc, NrOpcode staging) {
    NrFunc *f = p->f;
    NrOpId dot = NR_NONE;
    NR_FOR_OPS(f, f->ops[p->loop].regions[0], o) {
        if (f->ops[o].opc != NR_OP_DOT && f->ops[o].opc != NR_OP_WARP_GROUP_DOT) continue;
        if (dot || f->ops[o].opc != opc) return NR_NONE;
        dot = o;
    }
    if (!dot) return NR_NONE;
    for (int i = 0; i < 2; i++) {
        bool staged = false;
        for (int k = 0; k < nc; k++) staged |= f->ops[cands[k].conv].opc == staging &&
                                              f->ops[cands[k].conv].results[0] == f->ops[dot].opnds[i];
        if (!staged) return NR_NONE;
    }
    return dot;
}

/* Dot d of the loop body accumulates into a carried value: its
 * accumulator is a body argument that d alone uses, with 32-bit elements
 * (wgmma updates its registers in place), and its result is only yielded
 * back into that argument. */
static bool carried_accumulator(const Pipe *p, NrOpId d) {
    NrFunc *f = p->f;
    NrBlockId body = f->ops[p->loop].regions[0];
    const NrOp *w = &f->ops[d];
    NrValId acc = w->opnds[2], r = w->results[0];
    if (!acc || f->vals[acc].def || f->vals[acc].block != body || nr_gpu_uses_of(f, acc) != 1 ||
        nr_gpu_uses_of(f, r) != 1)
        return false;
    if (nr_dtype_info[p->m->types[f->vals[r].type].dtype].bytes != 4) return false;
    NrOpId y = nr_block_terminator(f, body);
    int arg = f->vals[acc].index;
    return y && arg >= 1 && arg - 1 < f->ops[y].nopnds && f->ops[y].opnds[arg - 1] == r;
}

/* The loop's warp_group_dot, if it may run asynchronously, one group in
 * flight across iterations: S >= 3; it is the body's only dot; both its
 * operands are staged by the candidates; its accumulator is a carried
 * value (a body argument used by it alone, 32-bit elements so that wgmma
 * updates its registers in place) and its result is only yielded back
 * into that argument. */
static NrOpId async_dot(Pipe *p, const Cand *cands, int nc) {
    if (p->stages < 3) return NR_NONE;
    NrOpId wg = staged_dot(p, cands, nc, NR_OP_WARP_GROUP_DOT, NR_OP_LOCAL_ALLOC);
    return wg && carried_accumulator(p, wg) ? wg : NR_NONE;
}

/* The second of two warp_group_dots, when it may stay in flight into the
 * next iteration (attention's P V, after Q K^T):
 *   s = warp_group_dot a1, b1, c1          d1: synchronous, it waits for every group
 *   ...
 *   x = <ops of acc>                       (acc * alpha)
 *   r = warp_group_dot a2, buf[r], x       d2
 *   yield ..., r, ...                      into argument acc
 * d1 and d2 are the body's only dots, in this order, in the body itself;
 * d2's B operand and any buffer A are staged by the candidates (a
 * register A is rewritten only after d1's wait); its accumulator x has
 * 32-bit elements and d2 alone uses it; r is used only by the yield; and
 * no op before d1 or after d2 reads acc.  Its group then completes at d1
 * of the next iteration, where a wait for acc goes (*d1_out). */
static NrOpId chain_async_dot(Pipe *p, const Cand *cands, int nc, NrOpId *d1_out) {
    NrFunc *f = p->f;
    NrBlockId body = f->ops[p->loop].regions[0];
    if (p->stages < 3) return NR_NONE;
    NrOpId dots[2];
    int nd = 0;
    NR_FOR_OPS(f, body, o) {
        if (f->ops[o].opc != NR_OP_DOT && f->ops[o].opc != NR_OP_WARP_GROUP_DOT) continue;
        if (nd == 2 || f->ops[o].opc != NR_OP_WARP_GROUP_DOT) return NR_NONE;
        dots[nd++] = o;
    }
    if (nd != 2) return NR_NONE;
    const NrOp *d2 = &f->ops[dots[1]];
    for (int i = 0; i < 2; i++) {
        NrValId v = d2->opnds[i];
        if (i == 0 && p->m->types[f->vals[v].type].kind != NR_TK_MEMDESC) continue;
        bool staged = false;
        for (int k = 0; k < nc; k++)
            staged |= f->ops[cands[k].conv].opc == NR_OP_LOCAL_ALLOC && f->ops[cands[k].conv].results[0] == v;
        if (!staged) return NR_NONE;
    }
    NrValId x = d2->opnds[2], r = d2->results[0];
    if (!f->vals[x].def || f->ops[f->vals[x].def].block != body || nr_gpu_uses_of(f, x) != 1 ||
        nr_gpu_uses_of(f, r) != 1)
        return NR_NONE;
    if (nr_dtype_info[p->m->types[f->vals[r].type].dtype].bytes != 4) return NR_NONE;
    NrOpId y = nr_block_terminator(f, body);
    int slot = -1;
    for (int i = 0; y && i < f->ops[y].nopnds; i++)
        if (f->ops[y].opnds[i] == r) slot = i;
    if (slot < 0) return NR_NONE;
    NrValId acc = f->blocks[body].args[slot + 1];
    if (f->vals[acc].type != f->vals[r].type) return NR_NONE;
    /* before d1 the previous group may still write acc's registers; after
     * d2, its own group writes them */
    for (NrOpId o = f->blocks[body].first; o != dots[0]; o = f->ops[o].next)
        if (nr_op_reads(f, o, acc)) return NR_NONE;
    for (NrOpId o = f->ops[dots[1]].next; o && o != y; o = f->ops[o].next)
        if (nr_op_reads(f, o, acc)) return NR_NONE;
    /* While d1 runs, d2's group still owns acc and its register A operand
     * (P): with d1's result they must fit a thread's registers, else
     * ptxas spills (128x128 tiles at head dim 128 on 4 warps: 128 + 128 +
     * 64 words spilled 2.8 KB) and the overlap costs more than it saves. */
    int64_t threads = 32 * (int64_t)nr_gpu_num_warps(p->m), words = 0;
    NrValId live[3] = {x, f->ops[dots[0]].results[0], d2->opnds[0]};
    for (int i = 0; i < 3; i++) {
        const NrType *t = &p->m->types[f->vals[live[i]].type];
        if (t->kind == NR_TK_MEMDESC) continue;
        words += (nr_type_numel(p->m, f->vals[live[i]].type) * nr_dtype_info[t->dtype].bytes + 3) / 4;
    }
    if (words > 256 * threads) return NR_NONE;
    *d1_out = dots[0];
    return dots[1];
}

/* The operand index of value v in the terminator of block b. */
static int yield_slot(NrFunc *f, NrBlockId b, NrValId v) {
    NrOpId y = nr_block_terminator(f, b);
    int slot = -1;
    for (int i = 0; y && i < f->ops[y].nopnds; i++)
        if (f->ops[y].opnds[i] == v) slot = i;
    NR_ASSERT(slot >= 0);
    return slot;
}

/* A wait for every group of the loop's result `slot` (an asynchronous
 * dot's accumulator), at after_loop; the result's users read the wait's. */
static void wait_after_loop(Pipe *p, int slot, NrBuilder *after_loop) {
    NrFunc *f = p->f;
    NrValId res = f->ops[p->loop].results[slot];
    NrTypeId t = f->vals[res].type;
    NrOpId w0 = nr_build(after_loop, NR_OP_WARP_GROUP_DOT_WAIT, 1, &res, 1, &t, 0);
    nr_op_set_int(f, w0, NR_A_NUM, 0);
    nr_replace_all_uses(f, res, f->ops[w0].results[0]);
    f->ops[w0].opnds[0] = res;
}

/* The accumulating warp_group_dots of a loop of several dots (attention
 * backward's dV += P^T dO and dK += dS^T Q), which may run asynchronously
 * until the next wait: each has a carried accumulator (a body argument it
 * alone uses, 32-bit elements) and its result is only yielded back into
 * that argument.  The body's first dot must be synchronous (not one of
 * them): its wait for every group completes the previous iteration's
 * accumulating dots, whose stages the copies, issued after it, may then
 * refill.  Every dot is in the body itself.  Returns how many (into acc),
 * and that first dot. */
static int accumulating_dots(Pipe *p, NrOpId *acc, int max, NrOpId *first) {
    NrFunc *f = p->f;
    NrBlockId body = f->ops[p->loop].regions[0];
    int n = 0, ndots = 0;
    *first = NR_NONE;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || (op->opc != NR_OP_DOT && op->opc != NR_OP_WARP_GROUP_DOT) ||
            !block_inside(p, op->block))
            continue;
        if (op->block != body || op->opc != NR_OP_WARP_GROUP_DOT) return 0;
    }
    NR_FOR_OPS(f, body, o) {
        if (f->ops[o].opc != NR_OP_WARP_GROUP_DOT) continue;
        ndots++;
        bool accumulates = carried_accumulator(p, o);
        if (!*first) {
            if (accumulates) return 0;
            *first = o;
        } else if (accumulates && n < max) {
            acc[n++] = o;
        }
    }
    return ndots >= 2 ? n : 0;
}

/* Accumulating dot d (see accumulating_dots) becomes asynchronous: the
 * loop's result is waited for after the loop. */
static void make_acc_async(Pipe *p, NrOpId d, NrBuilder *after_loop) {
    NrFunc *f = p->f;
    nr_op_set_bool(f, d, NR_A_IS_ASYNC, true);
    wait_after_loop(p, yield_slot(f, f->ops[d].block, f->ops[d].results[0]), after_loop);
}

/* Dot d2 (see chain_async_dot) becomes asynchronous: its argument is
 * waited for right after d1, and the loop's result after the loop.  (Its
 * yield slot is found again: dropping carried pointers renumbered them.) */
static void make_chain_async(Pipe *p, NrOpId d1, NrOpId d2, NrBuilder *after_loop) {
    NrFunc *f = p->f;
    nr_op_set_bool(f, d2, NR_A_IS_ASYNC, true);
    NrBlockId body = f->ops[p->loop].regions[0];
    int slot = yield_slot(f, body, f->ops[d2].results[0]);
    NrValId acc = f->blocks[body].args[slot + 1];
    NrTypeId t = f->vals[acc].type;
    NrBuilder b = nr_builder_after(f, d1);
    b.loc = f->ops[d2].loc;
    NrOpId w1 = nr_build(&b, NR_OP_WARP_GROUP_DOT_WAIT, 1, &acc, 1, &t, 0);
    nr_op_set_int(f, w1, NR_A_NUM, 0);
    nr_replace_all_uses(f, acc, f->ops[w1].results[0]);
    f->ops[w1].opnds[0] = acc;
    wait_after_loop(p, slot, after_loop);
}

/* Shared memory an extra stage of an async dot's loop may take: sm_90's
 * 227 KiB less room for other buffers and the epilogue's scratch. */
enum { ASYNC_SMEM_BUDGET = 227 * 1024 - 16 * 1024 };

/* Bytes of one stage: every candidate's tile. */
static int64_t stage_bytes(const Pipe *p, const Cand *cands, int nc) {
    int64_t n = 0;
    for (int k = 0; k < nc; k++) {
        NrTypeId t = p->f->vals[p->f->ops[cands[k].load].results[0]].type;
        n += nr_type_numel(p->m, t) * nr_dtype_info[p->m->types[t].dtype].bytes;
    }
    return n;
}

/* Dot wg (see async_dot) becomes asynchronous: a wait for all but its own
 * group follows it in the body (at_end: at the end of the body), and one
 * for every group the loop's result. */
static void make_async(Pipe *p, NrOpId wg, NrBuilder *after_loop, bool at_end) {
    NrFunc *f = p->f;
    nr_op_set_bool(f, wg, NR_A_IS_ASYNC, true);
    NrValId r = f->ops[wg].results[0];
    NrTypeId t = f->vals[r].type;
    /* right after the dot, or (at_end) before the yield, its only user */
    NrBuilder b = at_end ? nr_builder_before(f, nr_block_terminator(f, f->ops[wg].block)) : nr_builder_after(f, wg);
    b.loc = f->ops[wg].loc;
    NrOpId w1 = nr_build(&b, NR_OP_WARP_GROUP_DOT_WAIT, 1, &r, 1, &t, 0);
    nr_op_set_int(f, w1, NR_A_NUM, 1);
    NrOpId y = nr_block_terminator(f, f->ops[wg].block);
    int slot = yield_slot(f, f->ops[wg].block, r);
    f->ops[y].opnds[slot] = f->ops[w1].results[0];
    wait_after_loop(p, slot, after_loop);
}

/* Local_allocs of the body that stage a loop-invariant value (the Q tile
 * of attention: `local_alloc %q` feeding a warp_group_dot) write the same
 * bytes every iteration: they move in front of the loop, which saves the
 * stores and the barrier between them and their readers each iteration.
 * Only allocs that ops of the body alone read (staged_in_body) move. */
static void hoist_invariant_allocs(Pipe *p) {
    NrFunc *f = p->f;
    NrBlockId body = f->ops[p->loop].regions[0];
    for (NrOpId o = f->blocks[body].first, next; o; o = next) {
        next = f->ops[o].next;
        const NrOp *op = &f->ops[o];
        if (op->opc != NR_OP_LOCAL_ALLOC || op->nopnds != 1 || inside(p, op->opnds[0])) continue;
        if (!staged_in_body(p, op->results[0])) continue;
        nr_op_unlink(f, o);
        nr_op_insert_before(f, p->loop, o);
    }
}

/* Every use of buffer v only reads it (a wgmma operand, a local_load, a
 * transposed view that is only read). */
static bool read_only_buffer(const NrFunc *f, NrValId v, int depth) {
    if (depth > 4) return false;
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block) continue;
        for (int i = 0; i < uo->nopnds; i++) {
            if (uo->opnds[i] != v) continue;
            if (uo->opc == NR_OP_MEMDESC_TRANS && read_only_buffer(f, uo->results[0], depth + 1)) continue;
            if (!(uo->opc == NR_OP_LOCAL_LOAD || (uo->opc == NR_OP_WARP_GROUP_DOT && i < 2))) return false;
        }
    }
    return true;
}

/* Buffer types a (rank 2) and t hold the same bytes with t transposed:
 * element (j, i) of t sits where (i, j) of a does (checked on every pair of
 * single-bit coordinates, which pins the XOR swizzles down). */
static bool same_bytes_transposed(NrModule *m, NrTypeId a, NrTypeId t) {
    const NrType *ta = &m->types[a], *tt = &m->types[t];
    if (ta->kind != NR_TK_MEMDESC || tt->kind != NR_TK_MEMDESC || ta->rank != 2 || tt->rank != 2 ||
        ta->dtype != tt->dtype || tt->shape[0] != ta->shape[1] || tt->shape[1] != ta->shape[0])
        return false;
    const NrLayout *la = &m->layouts[ta->layout], *lt = &m->layouts[tt->layout];
    if (la->kind != lt->kind || la->rank != 2 || lt->rank != 2 || la->nvmma != lt->nvmma) return false;
    int es = nr_dtype_info[ta->dtype].bytes;
    int32_t sa[2] = {(int32_t)ta->shape[0], (int32_t)ta->shape[1]}, st[2] = {sa[1], sa[0]};
    for (int32_t i = 0; i < sa[0]; i = i ? 2 * i : 1)
        for (int32_t j = 0; j < sa[1]; j = j ? 2 * j : 1) {
            int32_t ca[2] = {i, j}, ct[2] = {j, i};
            if (nr_shared_offset(m, ta->layout, 2, sa, es, ca) != nr_shared_offset(m, tt->layout, 2, st, es, ct))
                return false;
        }
    return true;
}

static bool used(const NrFunc *f, NrValId v) {
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == v) return true;
    }
    return false;
}

bool nr_gpu_comes_before(const NrFunc *f, NrOpId a, NrOpId b) {
    for (NrOpId o = f->ops[a].next; o; o = f->ops[o].next)
        if (o == b) return true;
    return false;
}

NrOpId nr_gpu_ancestor_in(const NrFunc *f, NrOpId u, NrBlockId b) {
    while (u && f->ops[u].block != b) {
        NrBlockId ub = f->ops[u].block;
        u = ub ? f->blocks[ub].parent : NR_NONE;
    }
    return u;
}

/* A tile staged twice in one block, as it is and transposed (attention
 * backward reads Q^T for one dot and Q for another): when the transposed
 * buffer holds the same bytes (the same swizzle, the order reversed) it
 * becomes a memdesc_trans view of the other, which saves its stores and
 * leaves the load one user, so that it can be pipelined. */
static void trans_views(NrModule *m, NrFunc *f, NrBlockId b) {
    for (NrOpId o = f->blocks[b].first, next; o; o = next) {
        next = f->ops[o].next;
        const NrOp *op = &f->ops[o];
        if (op->opc != NR_OP_LOCAL_ALLOC || op->nopnds != 1) continue;
        NrOpId t = f->vals[op->opnds[0]].def;
        if (!t || f->ops[t].opc != NR_OP_TRANS || f->ops[t].block != b) continue;
        NrValId x = f->ops[t].opnds[0];
        /* (a tile converted to another register layout holds the same values) */
        NrOpId cv = f->vals[x].def;
        NrValId y = cv && f->ops[cv].opc == NR_OP_CONVERT_LAYOUT ? f->ops[cv].opnds[0] : x;
        NrOpId a1 = NR_NONE;
        for (NrOpId u = f->blocks[b].first; u && !a1; u = f->ops[u].next)
            if (f->ops[u].opc == NR_OP_LOCAL_ALLOC && f->ops[u].nopnds == 1 &&
                (f->ops[u].opnds[0] == x || f->ops[u].opnds[0] == y))
                a1 = u;
        if (!a1 || !read_only_buffer(f, f->ops[a1].results[0], 0) || !read_only_buffer(f, op->results[0], 0) ||
            !same_bytes_transposed(m, f->vals[f->ops[a1].results[0]].type, f->vals[op->results[0]].type))
            continue;
        if (!nr_gpu_comes_before(f, a1, o)) { /* x is defined before the trans, so before o */
            if (next == a1) next = f->ops[a1].next;
            nr_op_unlink(f, a1);
            nr_op_insert_before(f, o, a1);
        }
        NrBuilder bl = nr_builder_before(f, o);
        NrValId src = f->ops[a1].results[0];
        NrValId view = nr_build1(&bl, NR_OP_MEMDESC_TRANS, f->vals[op->results[0]].type, 1, &src);
        nr_replace_all_uses(f, f->ops[o].results[0], view);
        nr_op_erase(f, o);
        if (!used(f, f->ops[t].results[0])) {
            if (next == t) next = f->ops[t].next;
            nr_op_erase(f, t);
            if (cv && y != x && f->ops[cv].block == b && !used(f, x)) {
                if (next == cv) next = f->ops[cv].next;
                nr_op_erase(f, cv);
            }
        }
    }
}

/* Hoisting leaves one staging per loop of the same tile in front of each of
 * several loops (the masked and unmasked key blocks of attention backward),
 * and a body may stage one tile twice for two dots (Q^T of attention
 * backward): a later local_alloc of the same value in the same block,
 * read-only like the first, reads the first one's buffer instead, which
 * saves its stores and barrier, and lets the tile's registers die after the
 * first staging. */
static void merge_invariant_allocs(NrFunc *f, NrBlockId b) {
    for (NrOpId o = f->blocks[b].first; o; o = f->ops[o].next) {
        const NrOp *op = &f->ops[o];
        if (op->opc != NR_OP_LOCAL_ALLOC || op->nopnds != 1 || !read_only_buffer(f, op->results[0], 0)) continue;
        for (NrOpId l = f->ops[o].next, next; l; l = next) {
            next = f->ops[l].next;
            const NrOp *lo = &f->ops[l];
            if (lo->opc != NR_OP_LOCAL_ALLOC || lo->nopnds != 1 || lo->opnds[0] != op->opnds[0] ||
                f->vals[lo->results[0]].type != f->vals[op->results[0]].type || !read_only_buffer(f, lo->results[0], 0))
                continue;
            nr_replace_all_uses(f, lo->results[0], op->results[0]);
            nr_op_erase(f, l);
        }
    }
}

/* Shared memory one program may use, as gpu-smem enforces it. */
static int64_t smem_limit(int sm) {
    if (sm >= 90) return 227 * 1024;
    if (sm == 80 || sm == 87) return 163 * 1024;
    return 99 * 1024;
}

static int64_t alloc_bytes(const Pipe *p, NrValId v) {
    NrTypeId t = p->f->vals[v].type;
    return nr_type_numel(p->m, t) * nr_dtype_info[p->m->types[t].dtype].bytes;
}

/* Bytes of shared memory the ring buffers cannot have while the loop runs:
 * the buffers live in it (allocated in the body, or before it and read in
 * it) other than the tiles the candidates stage, and the largest scratch of
 * an op of the body other than the conversions the candidates stage, with
 * room for alignment. */
static int64_t other_smem(const Pipe *p, const Cand *cands, int nc) {
    NrFunc *f = p->f;
    int64_t allocs = 0, scratch = 0;
    /* which ops are inside the loop, and which values they read (one walk, not one per buffer) */
    NrArena a;
    nr_arena_init(&a);
    uint8_t *in_op = nr_alloc(&a, (size_t)f->nops), *read_in = nr_alloc(&a, (size_t)f->nvals);
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || !block_inside(p, op->block)) continue;
        in_op[o] = 1;
        for (int i = 0; i < op->nopnds; i++)
            if (op->opnds[i] > 0 && op->opnds[i] < f->nvals) read_in[op->opnds[i]] = 1;
    }
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || o == p->loop) continue;
        /* what the candidates stage (a tile's local_alloc, or the conversions
         * it replaces, with their scratch) goes away */
        bool staged = false;
        for (int k = 0; k < nc; k++) staged |= cands[k].conv == o || cands[k].mid == o;
        if (staged) continue;
        bool in = in_op[o];
        if (op->opc == NR_OP_LOCAL_ALLOC) {
            if (in || read_in[op->results[0]]) allocs += alloc_bytes(p, op->results[0]) + 1024;
        } else if (in) {
            int64_t b = nr_gpu_scratch_bytes(f, o);
            if (b > scratch) scratch = b;
        }
    }
    nr_arena_free(&a);
    return allocs + scratch;
}

/* Programs an SM holds (at most 32) when the loop's NB stages of `stage`
 * bytes come beside the rest of its shared memory, `room` being the block
 * limit less that rest: the fewer of what sm_90's 228 KiB of shared memory
 * (1 KiB reserved per program) and its 64K registers allow.  Registers are
 * not known before ptxas; they are estimated from the blocks the loop keeps
 * in registers, the carried ones and its largest dot result, at 7/4
 * registers per 32-bit element plus 16 (the H100's attention and matmul
 * loops: 1.7 to 2 per element).  The extra buffer of an async dot is not
 * worth a program per SM (64x64 attention at d64: 3 programs with 4
 * stages, 2 with 5), but costs nothing where registers bind first.  This
 * holds for loops of two dots, whose iterations are long enough for copies
 * S - 2 ahead; a single dot's loop keeps its copies S - 1 ahead (a 1024^3
 * fp16 matmul, one wave of 64x128x64 programs, was 8% slower with 4
 * buffers and 2 programs an SM than with 5 and 1). */
/* Registers a thread of the loop needs, estimated from the blocks it
 * carries and its largest dot result (extra: more 32-bit words): 7/4 per
 * word plus 16 (see programs_per_sm). */
static int64_t loop_regs(const Pipe *p, int64_t extra) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrBlockId body = f->ops[p->loop].regions[0];
    int64_t threads = 32 * (int64_t)nr_gpu_num_warps(m), words = extra, dot = 0;
    for (int i = 1; i < f->blocks[body].nargs; i++) {
        const NrType *t = &m->types[f->vals[f->blocks[body].args[i]].type];
        if (t->kind == NR_TK_VALUE && t->rank > 0)
            words += (nr_type_numel(m, f->vals[f->blocks[body].args[i]].type) + threads - 1) / threads *
                     (t->ptr || nr_dtype_info[t->dtype].bytes > 4 ? 2 : 1);
    }
    NR_FOR_OPS(f, body, o) {
        if (f->ops[o].opc != NR_OP_DOT && f->ops[o].opc != NR_OP_WARP_GROUP_DOT) continue;
        int64_t n = (nr_type_numel(m, f->vals[f->ops[o].results[0]].type) + threads - 1) / threads;
        if (n > dot) dot = n;
    }
    return 7 * (words + dot) / 4 + 16;
}

static int64_t programs_per_sm(const Pipe *p, int64_t room, int NB, int64_t stage) {
    NrModule *m = p->m;
    int64_t threads = 32 * (int64_t)nr_gpu_num_warps(m);
    int64_t regs = loop_regs(p, 0);
    regs = regs < 32 ? 32 : regs > 255 ? 255 : (regs + 7) / 8 * 8;
    int64_t by_regs = 65536 / (regs * threads);
    int64_t bytes = 227 * 1024 - room + NB * stage;
    int64_t by_smem = (228 * 1024) / (bytes + 1024);
    int64_t n = by_regs < by_smem ? by_regs : by_smem;
    return n > 32 ? 32 : n;
}

NrValId nr_gpu_alloc_mbarriers(NrModule *m, NrFunc *f, NrBuilder *b, int n, int64_t count, NrTypeId *view) {
    int32_t order[1] = {0};
    NrType bt;
    memset(&bt, 0, sizeof bt);
    bt.kind = NR_TK_MEMDESC;
    bt.dtype = NR_DT_I64;
    bt.rank = 1;
    bt.shape[0] = 1;
    bt.layout = nr_layout_shared(m, 1, 1, 1, 1, order);
    *view = nr_type_intern(m, &bt);
    bt.rank = 2;
    bt.shape[0] = n;
    bt.shape[1] = 1;
    NrValId bars = nr_build1(b, NR_OP_LOCAL_ALLOC, nr_type_intern(m, &bt), 0, NULL);
    for (int s = 0; s < n; s++) {
        NrValId bar = bar_at(b, bars, *view, const_i32(b, m, s));
        NrOpId init = nr_build(b, NR_OP_MBARRIER_INIT, 1, &bar, 0, NULL, 0);
        nr_op_set_int(f, init, NR_A_ARRIVALS, count);
    }
    return bars;
}

/* The mbarriers are invalidated once every thread is done with them, so
 * that their bytes may hold other buffers (or another loop's mbarriers). */
static void inval_bars(Pipe *p, NrBuilder *b, NrValId bars, NrTypeId view, int NB) {
    for (int s = 0; s < NB; s++) {
        NrValId bar = bar_at(b, bars, view, const_i32(b, p->m, s));
        nr_build(b, NR_OP_MBARRIER_INVAL, 1, &bar, 0, NULL, 0);
    }
}

/* The tensormap of each TMA candidate's host descriptor. */
static void tensor_maps(Pipe *p, NrBuilder *b, Cand *cands, int nc) {
    NrFunc *f = p->f;
    NrTypeId i64 = nr_type_scalar(p->m, NR_DT_I64);
    for (int k = 0; k < nc; k++) {
        if (!cands[k].tma) continue;
        const NrOp *o = &f->ops[cands[k].load];
        NrValId d = o->opnds[3];
        NrOpId tm = nr_build(b, NR_OP_TENSORMAP, 1, &d, 1, &i64, 0);
        if (o->opnds[2] && nr_gpu_is_nan_const(f, o->opnds[2])) nr_op_set_str(f, tm, NR_A_NAN, "fill");
        cands[k].tmap = f->ops[tm].results[0];
    }
}

/* Each candidate's NB-stage buffer (c->buf) and the type of one stage
 * (c->view). */
static void alloc_stages(Pipe *p, NrBuilder *b, Cand *cands, int nc, int NB) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    for (int k = 0; k < nc; k++) {
        Cand *c = &cands[k];
        const NrType *t = &m->types[f->vals[f->ops[c->load].results[0]].type];
        NrType bt = *t;
        bt.kind = NR_TK_MEMDESC;
        if (f->ops[c->conv].opc == NR_OP_LOCAL_ALLOC) bt.layout = c->layout;
        else bt.layout = staging_layout(m, t, nr_gpu_layout_of(f, f->ops[c->load].opnds[0]));
        c->view = nr_type_intern(m, &bt);
        bt.rank = (uint8_t)(t->rank + 1);
        bt.shape[0] = NB;
        for (int i = 0; i < t->rank; i++) bt.shape[i + 1] = t->shape[i];
        c->buf = nr_build1(b, NR_OP_LOCAL_ALLOC, nr_type_intern(m, &bt), 0, NULL);
    }
}

/* Each tile is read from stage r where it was converted or staged, so
 * that it is live no longer than the load's value was; the loads and
 * their conversions go. */
static void read_stages(Pipe *p, Cand *cands, int nc, NrValId r) {
    NrFunc *f = p->f;
    for (int j = 0; j < nc; j++) {
        Cand *c = &cands[j];
        NrBuilder at = nr_builder_before(f, c->conv);
        at.loc = f->ops[c->conv].loc;
        NrValId ops[2] = {c->buf, r};
        NrValId view = nr_build1(&at, NR_OP_MEMDESC_INDEX, c->view, 2, ops);
        NrValId x = view; /* a staged buffer is the view itself (seen transposed after a trans) */
        if (c->trans) x = nr_build1(&at, NR_OP_MEMDESC_TRANS, f->vals[f->ops[c->conv].results[0]].type, 1, &view);
        else if (f->ops[c->conv].opc != NR_OP_LOCAL_ALLOC)
            x = nr_build1(&at, NR_OP_LOCAL_LOAD, f->vals[f->ops[c->conv].results[0]].type, 1, &view);
        nr_replace_all_uses(f, f->ops[c->conv].results[0], x);
    }
    /* (only now: a builder at the body's top inserts before its first op, which may be one of these) */
    for (int j = 0; j < nc; j++) {
        nr_op_erase(f, cands[j].conv);
        if (cands[j].trans) nr_op_erase(f, cands[j].trans);
        if (cands[j].mid) nr_op_erase(f, cands[j].mid);
        nr_op_erase(f, cands[j].load);
    }
}

/* The mbarrier phase parity after stage x: it flips when x + 1 wraps
 * around to 0 (k: the constants one and NB). */
static NrValId next_parity(Pipe *p, NrBuilder *b, NrValId x, NrValId phase, const NrValId *k) {
    NrModule *m = p->m;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), i1 = nr_type_scalar(m, NR_DT_I1);
    NrValId a1[2] = {x, k[0]};
    NrValId x1 = nr_build1(b, NR_OP_ADD, i32, 2, a1);
    NrValId c2[2] = {x1, k[1]};
    NrOpId lt = nr_build(b, NR_OP_CMP, 2, c2, 1, &i1, 0);
    nr_op_set_str(p->f, lt, NR_A_PRED, "lt");
    NrValId x2[2] = {phase, k[0]};
    NrValId flipped = nr_build1(b, NR_OP_XOR, i32, 2, x2);
    NrValId sel[3] = {p->f->ops[lt].results[0], phase, flipped};
    return nr_build1(b, NR_OP_SELECT, i32, 3, sel);
}

/* --- warp specialization ------------------------------------------------------------------------ */
/* Ops that may run in front of a warp_specialize, where the producer's
 * warps run them too as aliases of warps 0-3: no stores, atomics or
 * scratch (whose writes the aliases would repeat), no control flow
 * (reshape and trans move no data on the GPU). */
static bool ws_prefix_op(const NrFunc *f, NrOpId o) {
    const NrOp *op = &f->ops[o];
    switch ((NrOpcode)op->opc) {
    case NR_OP_CONST:
    case NR_OP_ARANGE:
    case NR_OP_SPLAT:
    case NR_OP_PROGRAM_ID:
    case NR_OP_NUM_PROGRAMS:
    case NR_OP_BROADCAST:
    case NR_OP_EXPAND_DIMS:
    case NR_OP_RESHAPE:
    case NR_OP_TRANS:
    case NR_OP_HINT:
    case NR_OP_ASSUME:
    case NR_OP_LOAD:
    case NR_OP_MEMDESC_INDEX:
    case NR_OP_MBARRIER_INIT:
    case NR_OP_TENSORMAP:
    case NR_OP_BARRIER: return true;
    case NR_OP_LOCAL_ALLOC: return op->nopnds == 0;
    default: {
        unsigned fl = nr_op_info[op->opc].flags;
        return (fl & NR_OPF_PURE) && (fl & NR_OPF_ELEM) && !op->nregions;
    }
    }
}

/* A local_alloc in front of the split that stages a tile only the split
 * loop's body reads (attention's Q, hoisted by hoist_invariant_allocs):
 * ws_sink_prefix moves it, and the load it stores, behind the split, where
 * the program's warps alone run them. */
static bool ws_staged_tile(const Pipe *p, NrOpId o) {
    const NrFunc *f = p->f;
    const NrOp *op = &f->ops[o];
    if (op->opc != NR_OP_LOCAL_ALLOC || op->nopnds != 1) return false;
    for (NrOpId u = 1; u < f->nops; u++) {
        const NrOp *uo = &f->ops[u];
        if (uo->dead || !uo->block || block_inside(p, uo->block)) continue;
        for (int i = 0; i < uo->nopnds; i++)
            if (uo->opnds[i] == op->results[0]) return false;
    }
    return true;
}

/* Whether v can be computed again in the producer from the ivs of the
 * loop `outer` and the loop nested in it (loop): v is defined outside
 * outer, or by pure ops of either body. */
static bool ws_clonable(const Pipe *p, NrOpId outer, NrValId v, int depth) {
    NrFunc *f = p->f;
    NrBlockId ob = f->ops[outer].regions[0], ib = f->ops[p->loop].regions[0];
    NrBlockId vb = f->vals[v].def ? f->ops[f->vals[v].def].block : f->vals[v].block;
    if (!nested_in(f, outer, vb)) return true;
    if (vb != ob && vb != ib) return false;
    if (v == f->blocks[ob].args[0] || v == f->blocks[ib].args[0]) return true;
    NrOpId def = f->vals[v].def;
    if (!def || depth > 32) return false;
    const NrOp *o = &f->ops[def];
    if (!(nr_op_info[o->opc].flags & NR_OPF_PURE) || o->nregions || o->nresults != 1 || o->nopnds > 8) return false;
    for (int i = 0; i < o->nopnds; i++)
        if (o->opnds[i] && !ws_clonable(p, outer, o->opnds[i], depth + 1)) return false;
    return true;
}

/* Shared memory the ops of a persistent loop's body (outer) beside the
 * inner loop hold while the ring is live: their buffers and the
 * epilogue's TMA store tiles (added later by gpu-tma-stores), and the
 * largest scratch.  The buffers the inner loop reads are other_smem's; the
 * room of those that no op after the inner loop reads (attention's Q) is
 * the epilogue's to reuse (gpu-smem reuses it), so what comes after the
 * inner loop counts only beyond it. */
static int64_t ws_outer_smem(const Pipe *p, NrOpId outer) {
    NrFunc *f = p->f;
    NrBlockId ob = f->ops[outer].regions[0];
    int64_t before = 0, after = 0, freed = 0, scratch_before = 0, scratch_after = 0;
    for (NrOpId o = 1; o < f->nops; o++) {
        const NrOp *op = &f->ops[o];
        if (op->dead || !op->block || o == p->loop || block_inside(p, op->block) || !nested_in(f, outer, op->block))
            continue;
        bool late = nr_gpu_comes_before(f, p->loop, nr_gpu_ancestor_in(f, o, ob));
        int64_t bytes = 0;
        if (op->opc == NR_OP_LOCAL_ALLOC) {
            bytes = alloc_bytes(p, op->results[0]) + 1024;
            if (!late && read_inside(p, op->results[0])) {
                bool read_after = false;
                for (NrOpId u = 1; u < f->nops && !read_after; u++) {
                    const NrOp *uo = &f->ops[u];
                    if (uo->dead || !uo->block || !nested_in(f, outer, uo->block) || !nr_op_reads(f, u, op->results[0]))
                        continue;
                    read_after = nr_gpu_comes_before(f, p->loop, nr_gpu_ancestor_in(f, u, ob));
                }
                if (!read_after) freed += bytes;
                continue;
            }
        }
        if (op->opc == NR_OP_STORE && op->nopnds >= 5) bytes = alloc_bytes(p, op->opnds[1]) + 1024;
        int64_t sb = nr_gpu_scratch_bytes(f, o);
        if (late) {
            after += bytes;
            if (sb > scratch_after) scratch_after = sb;
        } else {
            before += bytes;
            if (sb > scratch_before) scratch_before = sb;
        }
    }
    int64_t late_need = after + scratch_after - freed;
    if (late_need < scratch_before) late_need = scratch_before;
    return before + (late_need > 0 ? late_need : 0);
}

/* A loop of tl.range(warp_specialize=True) is split between a producer
 * warpgroup and the program's warps where: the target is sm_90a; its one
 * warp_group_dot may run asynchronously (wg), or its two dots are a chain
 * (attention: wg the second, d1 the first); every
 * tile it stages comes by TMA; the program has one or two warpgroups and
 * calls no function; and the split comes in the kernel's own body, with
 * only ws_prefix_op ops (or ws_staged_tile allocs) before it.  The split
 * is the loop itself, or (p->outer) a persistent loop around it that has
 * the hint: one loop of the kernel's body whose only loop is this one,
 * whose bounds and copy coordinates the producer can compute again from
 * the two induction variables (ws_clonable).  Elsewhere the hint is a
 * no-op. */
static bool ws_wanted(Pipe *p, const Cand *cands, int nc, NrOpId wg) {
    NrFunc *f = p->f;
    const NrAttr *a = nr_op_attr(f, p->loop, NR_A_WARP_SPECIALIZE);
    int nw = nr_gpu_num_warps(p->m);
    NrOpId split = p->loop, outer = NR_NONE;
    NrOpId parent = f->blocks[f->ops[p->loop].block].parent;
    if ((!a || !a->v.i) && parent && f->ops[parent].opc == NR_OP_FOR) {
        const NrAttr *oa = nr_op_attr(f, parent, NR_A_WARP_SPECIALIZE);
        if (oa && oa->v.i) a = oa, split = outer = parent;
    }
    if (!a || !a->v.i || !wg || !p->m->sm_a || !f->is_kernel || f->ops[split].block != f->body || (nw != 4 && nw != 8))
        return false;
    for (int k = 0; k < nc; k++)
        if (!cands[k].tma || cands[k].arg >= 0) return false;
    for (NrOpId o = f->blocks[f->body].first; o && o != split; o = f->ops[o].next)
        if (!ws_prefix_op(f, o) && !ws_staged_tile(p, o)) return false;
    /* a called function's barriers would count every warp, the producer's too */
    for (NrOpId o = 1; o < f->nops; o++)
        if (!f->ops[o].dead && f->ops[o].block && f->ops[o].opc == NR_OP_CALL) return false;
    if (outer) {
        for (NrOpId o = 1; o < f->nops; o++) {
            const NrOp *op = &f->ops[o];
            if (!op->dead && op->block && o != p->loop && (op->opc == NR_OP_FOR || op->opc == NR_OP_WHILE) &&
                nested_in(f, outer, op->block))
                return false;
        }
        for (int i = 0; i < 3; i++)
            if (!ws_clonable(p, outer, f->ops[p->loop].opnds[i], 0)) return false;
        for (int k = 0; k < nc; k++)
            for (int i = 4; i < f->ops[cands[k].load].nopnds; i++)
                if (!ws_clonable(p, outer, f->ops[cands[k].load].opnds[i], 0)) return false;
        /* the ring stays live through the epilogue */
        int64_t room = smem_limit(nr_gpu_sm(p->m)) - other_smem(p, cands, nc) - ws_outer_smem(p, outer) - 1024;
        int64_t stage = stage_bytes(p, cands, nc);
        int S = p->stages;
        while (S > 2 && S * stage > room) S--;
        if (S * stage > room) return false;
        p->stages = S;
    }
    p->outer = outer;
    return true;
}

/* The warp-specialized loop: a ring of NB = S stages, each with a `full`
 * mbarrier (the producer's expect and its TMA bytes) and an `empty` one
 * (one arrival per consumer warp):
 *
 *   warp_specialize {regs}                      the producer warpgroup's first warp
 *     for iv ... carrying w = 0, ph = 1:
 *       mbarrier_wait empty[w], ph              (a fresh mbarrier passes parity 1)
 *       mbarrier_expect full[w] {bytes}; tma_load ..., buf[w], full[w], coords(iv)
 *       yield (w + 1) % NB, ph flipped when w + 1 wraps
 *   for iv ... carrying acc, r = 0, ph = 0:     the num_warps warps
 *     mbarrier_wait full[r], ph
 *     acc' = warp_group_dot buf[r], ..., acc {is_async}
 *     acc'' = warp_group_dot_wait acc' {num = 1}
 *     mbarrier_arrive empty[r - 1], iv != lb    (the previous iteration's dot is done)
 *     yield acc'', (r + 1) % NB, ph flipped when r + 1 wraps
 *   acc = warp_group_dot_wait acc {num = 0}
 *
 * The producer fills every stage as soon as it is free, NB - 1 ahead at
 * most, with no barrier of the program's warps in the loop.
 *
 * With a persistent loop around it (p->outer), the producer runs that loop
 * too, computing the inner loop's bounds and the copies' coordinates again
 * from its own induction variables, and both sides carry their ring
 * position (w, ph and r, ph) across tiles: the producer fills the next
 * tile's stages while the program's warps run the epilogue.  After each
 * inner loop, the consumers free its last stage once its dot is done:
 *   acc = warp_group_dot_wait acc {num = 0}
 *   mbarrier_arrive empty[r - 1], lb < ub */
/* cmp(x, y) under predicate pred (an i1). */
static NrValId compare(Pipe *p, NrBuilder *b, const char *pred, NrValId x, NrValId y) {
    NrTypeId i1 = nr_type_scalar(p->m, NR_DT_I1);
    NrValId xy[2] = {x, y};
    NrOpId c = nr_build(b, NR_OP_CMP, 2, xy, 1, &i1, 0);
    nr_op_set_str(p->f, c, NR_A_PRED, pred);
    return p->f->ops[c].results[0];
}

/* (r - 1) mod NB, with the constants one, NB and zero. */
static NrValId prev_index(Pipe *p, NrBuilder *b, NrValId r, const NrValId *k) {
    NrTypeId i32 = nr_type_scalar(p->m, NR_DT_I32);
    NrValId ab[2] = {r, k[0]};
    NrValId rm1 = nr_build1(b, NR_OP_SUB, i32, 2, ab);
    NrValId at0 = compare(p, b, "eq", r, k[2]);
    NrValId sel[3] = {at0, const_i32(b, p->m, p->stages - 1), rm1};
    return nr_build1(b, NR_OP_SELECT, i32, 3, sel);
}

/* The producer's loop over the inner loop's iterations (bounds lb, ub,
 * step), at pb, carrying the ring position (w, ph): the coordinates of
 * iteration `iv` are computed from `iv` and, in a persistent loop, from
 * the producer's tile `ptile` for the outer induction variable.  Returns
 * the for op. */
static NrOpId ws_producer_loop(Pipe *p, NrBuilder *pb, Cand *cands, int nc, NrValId bars[2], NrTypeId bar_view,
                               const NrValId *bounds, NrValId w0, NrValId ph0, const NrValId *consts,
                               NrValId ptile) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
    NrBlockId body = f->ops[p->loop].regions[0];
    NrValId iv = f->blocks[body].args[0];
    NrValId pin[5] = {bounds[0], bounds[1], bounds[2], w0, ph0};
    NrTypeId pt[2] = {i32, i32};
    NrOpId pl = nr_build(pb, NR_OP_FOR, 5, pin, 2, pt, 1);
    NrBlockId pbody = f->ops[pl].regions[0];
    NrValId piv = nr_block_add_arg(f, pbody, f->vals[bounds[0]].type), w = nr_block_add_arg(f, pbody, i32);
    NrValId ph = nr_block_add_arg(f, pbody, i32);
    NrBuilder in = nr_builder_at_end(f, pbody);
    in.loc = pb->loc;
    NrValId wt[2] = {bar_at(&in, bars[1], bar_view, w), ph};
    nr_build(&in, NR_OP_MBARRIER_WAIT, 2, wt, 0, NULL, 0);
    NrOpId inner = p->loop;
    if (p->outer) {
        /* clone_at works in the outer loop, the inner induction variable mapped */
        NR_ASSERT(p->nmap < MAX_CLONE);
        p->map_from[p->nmap] = iv;
        p->map_to[p->nmap++] = piv;
        p->loop = p->outer;
        NrValId oiv = f->blocks[f->ops[p->outer].regions[0]].args[0];
        tma_copies(p, &in, cands, nc, bars[0], bar_view, w, NR_NONE, stage_bytes(p, cands, nc), oiv, ptile);
        p->loop = inner;
    } else {
        p->nmap = 0;
        tma_copies(p, &in, cands, nc, bars[0], bar_view, w, NR_NONE, stage_bytes(p, cands, nc), iv, piv);
    }
    NrValId py[2] = {next_index(p, &in, w, consts), next_parity(p, &in, w, ph, consts)};
    nr_build(&in, NR_OP_YIELD, 2, py, 0, NULL, 0);
    return pl;
}

/* Pure ops in front of the split whose values only the program's warps
 * use (the epilogue's offsets and masks) move behind it: computed before
 * it, they would be live across it in the registers both sides have on
 * entry, where ptxas spills them.  So do such loads and the local_allocs
 * that stage them (ws_staged_tile): the producer's warps would repeat
 * their stores. */
static void ws_sink_prefix(NrFunc *f, NrOpId ws) {
    NrOpId at = ws;
    for (NrOpId o = f->ops[ws].prev, prev; o; o = prev) {
        prev = f->ops[o].prev;
        const NrOp *op = &f->ops[o];
        bool movable = (nr_op_info[op->opc].flags & NR_OPF_PURE) || op->opc == NR_OP_LOAD ||
                       (op->opc == NR_OP_LOCAL_ALLOC && op->nopnds == 1);
        if (!movable || op->nregions || op->nresults != 1) continue;
        bool stays = false;
        for (NrOpId u = 1; u < f->nops && !stays; u++) {
            const NrOp *uo = &f->ops[u];
            if (uo->dead || !uo->block || !nr_op_reads(f, u, op->results[0])) continue;
            stays = nested_in(f, ws, uo->block) || (uo->block == f->ops[ws].block && nr_gpu_comes_before(f, u, ws));
        }
        if (stays) continue;
        nr_op_unlink(f, o);
        nr_op_insert_before(f, f->ops[at].next, o);
        at = ws;
    }
}

/* Clones at b (the producer's tile loop) of the values v reads that are
 * defined in the persistent loop's body (p->loop being that loop) beside
 * the inner loop's body `inner`, whose ops are looked through. */
static void ws_hoist_clones(Pipe *p, NrBuilder *b, NrValId v, NrBlockId inner, NrValId oiv, NrValId ptile) {
    NrFunc *f = p->f;
    NrOpId def = f->vals[v].def;
    if (!def) return;
    if (f->ops[def].block == inner) {
        for (int i = 0; i < f->ops[def].nopnds; i++)
            if (f->ops[def].opnds[i]) ws_hoist_clones(p, b, f->ops[def].opnds[i], inner, oiv, ptile);
    } else if (f->ops[def].block == f->ops[p->loop].regions[0]) {
        clone_at(p, b, v, oiv, ptile);
    }
}

/* Two consumer warpgroups that each own rows of a chain's dots (an mma
 * layout with every warp along M, so that a row's softmax stays in its
 * warp) take turns at the tensor cores: warpgroup k issues P V of one key
 * block and Q K^T of the next, then hands the turn to the other, and runs
 * its softmax while the other's dots run.  A turn is an mbarrier per
 * warpgroup (four arrivals: the other warpgroup's warps), tb[k]:
 *
 *   wg = warpgroup_id
 *   mbarrier_arrive tb[1 - wg], wg == 1        (warpgroup 0 has the first turn)
 *   for iv ... carrying ..., t = 0:
 *     mbarrier_wait tb[wg], t                  (iteration 0: the first turn; after: passed)
 *     ...
 *     s' = warp_group_dot q, k, 0 {is_async}
 *     mbarrier_arrive tb[1 - wg]                (the turn goes to the other warpgroup)
 *     s = warp_group_dot_wait s' {num = 0}
 *     ... softmax ...
 *     mbarrier_wait tb[wg], t ^ 1               (the turn comes back)
 *     acc' = warp_group_dot p, v, x {is_async}
 *     yield ..., t ^ 1
 *   mbarrier_arrive tb[1 - wg]                  (the turn of the last P V ends)
 *
 * The turns alternate strictly (a warpgroup passes only after waiting), so
 * no phase of tb[k] completes twice before warpgroup k waits for it, and
 * the wait at the top of iteration iv > 0 waits for a phase already
 * complete.  Returns false (nothing changed) where the layout does not fit. */
static bool pingpong_fits(Pipe *p, NrOpId d1, NrOpId d2) {
    NrFunc *f = p->f;
    if (nr_gpu_num_warps(p->m) != 8) return false;
    for (int i = 0; i < 2; i++) {
        const NrType *t = &p->m->types[f->vals[f->ops[i ? d2 : d1].results[0]].type];
        const NrLayout *l = &p->m->layouts[t->layout];
        if (t->rank != 2 || l->kind != NR_LK_MMA || l->warps_per_cta[0] != 8 || l->warps_per_cta[1] != 1) return false;
    }
    return true;
}

/* The turns' setup in front of the loop (or its tile loop): this
 * warpgroup's mbarrier and the other's (*mine, *other), warpgroup 0 given
 * the first turn; returns the parity of the loop's first turn (0, or the
 * tile loop's, which then carries it). */
static NrValId turns_setup(Pipe *p, NrValId tb, NrTypeId view, const NrValId *consts, NrValId *mine,
                           NrValId *other) {
    NrFunc *f = p->f;
    NrTypeId i32 = nr_type_scalar(p->m, NR_DT_I32);
    NrBuilder pre = nr_builder_before(f, p->outer ? p->outer : p->loop);
    pre.loc = f->ops[p->loop].loc;
    NrValId wg = nr_build1(&pre, NR_OP_WARPGROUP_ID, i32, 0, NULL);
    NrValId ow[2] = {consts[0], wg};
    NrValId o = nr_build1(&pre, NR_OP_SUB, i32, 2, ow);
    *mine = bar_at(&pre, tb, view, wg);
    *other = bar_at(&pre, tb, view, o);
    NrValId first_turn[2] = {*other, compare(p, &pre, "eq", wg, consts[0])};
    nr_build(&pre, NR_OP_MBARRIER_ARRIVE, 2, first_turn, 0, NULL, 0);
    if (!p->outer) return consts[2];
    /* the tile loop carries the parity of the next turn */
    NrOpId inner = p->loop;
    p->loop = p->outer;
    widen_loop(p, 1, &consts[2]);
    p->outer = p->loop;
    p->loop = inner;
    NrBlockId ob = f->ops[p->outer].regions[0];
    return f->blocks[ob].args[f->blocks[ob].nargs - 1];
}

static void ws_pingpong(Pipe *p, NrOpId d1, NrOpId d2, NrValId tb, NrTypeId view, const NrValId *consts) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
    NrValId mine_b, other_b;
    NrValId init = turns_setup(p, tb, view, consts, &mine_b, &other_b);
    NrLoc loc = f->ops[p->loop].loc;
    widen_loop(p, 1, &init);
    NrBlockId body = f->ops[p->loop].regions[0];
    NrValId t = f->blocks[body].args[f->blocks[body].nargs - 1];
    NrBuilder top = nr_builder_before(f, f->blocks[body].first);
    top.loc = loc;
    NrValId wt[2] = {mine_b, t};
    nr_build(&top, NR_OP_MBARRIER_WAIT, 2, wt, 0, NULL, 0);
    /* Q K^T leaves its group in flight while the turn is handed over */
    nr_op_set_bool(f, d1, NR_A_IS_ASYNC, true);
    NrValId s = f->ops[d1].results[0];
    NrTypeId st = f->vals[s].type;
    NrBuilder after = nr_builder_after(f, d1);
    after.loc = loc;
    NrValId pass[2] = {other_b, NR_NONE};
    nr_build(&after, NR_OP_MBARRIER_ARRIVE, 2, pass, 0, NULL, 0);
    NrOpId w = nr_build(&after, NR_OP_WARP_GROUP_DOT_WAIT, 1, &s, 1, &st, 0);
    nr_op_set_int(f, w, NR_A_NUM, 0);
    nr_replace_all_uses(f, s, f->ops[w].results[0]);
    f->ops[w].opnds[0] = s;
    NrBuilder back = nr_builder_before(f, d2);
    back.loc = loc;
    NrValId tx[2] = {t, consts[0]};
    NrValId t1 = nr_build1(&back, NR_OP_XOR, i32, 2, tx);
    NrValId wb[2] = {mine_b, t1};
    nr_build(&back, NR_OP_MBARRIER_WAIT, 2, wb, 0, NULL, 0);
    yield_also(p, body, 1, &t1);
    /* the last P V ends a turn too: warpgroup 1 waits for warpgroup 0's */
    NrBuilder post = nr_builder_after(f, p->loop);
    post.loc = loc;
    if (!p->outer) {
        NrValId last[2] = {other_b, NR_NONE};
        nr_build(&post, NR_OP_MBARRIER_ARRIVE, 2, last, 0, NULL, 0);
        return;
    }
    /* In a tile loop, a tile whose key loop ran passes its last turn on,
     * and the next tile's first turn is the phase after the last one
     * waited for: the loop's parity flipped.  A tile with no keys passes
     * nothing (neither warpgroup waited), and the parity stays. */
    NrValId ran = compare(p, &post, "lt", f->ops[p->loop].opnds[0], f->ops[p->loop].opnds[1]);
    NrValId last[2] = {other_b, ran};
    nr_build(&post, NR_OP_MBARRIER_ARRIVE, 2, last, 0, NULL, 0);
    NrValId tf[2] = {f->ops[p->loop].results[f->ops[p->loop].nresults - 1], consts[0]};
    NrValId flipped = nr_build1(&post, NR_OP_XOR, i32, 2, tf);
    NrValId sel[3] = {ran, flipped, init};
    NrValId next = nr_build1(&post, NR_OP_SELECT, i32, 3, sel);
    yield_also(p, f->ops[p->outer].regions[0], 1, &next);
}

/* --- rotation of a chain's loop ------------------------------------------------------------------ */
/* A warp-specialized chain (attention's s = Q K^T, then acc = P V into
 * acc * alpha) may instead overlap one warpgroup's softmax with its own
 * P V: the loop is rotated by half an iteration, so that iteration iv
 * issues Q K^T of its key block, then P V of the previous one, and runs
 * its softmax while that P V is in flight:
 *
 *   if lb < ub:                                   (the prologue: iteration lb's first half)
 *     wait the turn; s = Q K^T; pass the turn; softmax -> p, alpha; x = acc * alpha
 *   for iv = lb + step .. ub carrying ..., x, p', t:
 *     mbarrier_wait tb[wg], t                     (the turn, with pingpong)
 *     s' = warp_group_dot q, k[r], 0 {is_async}
 *     acc' = warp_group_dot p', v[r - 1], x {is_async}
 *     mbarrier_arrive tb[1 - wg]
 *     s = warp_group_dot_wait s' {num = 1}        (P V may still run)
 *     ... softmax -> p, alpha ...
 *     acc = warp_group_dot_wait acc' {num = 0}
 *     mbarrier_arrive empty[r - 1]                (its K and V are read)
 *     x = acc * alpha
 *     yield ..., x, p, t ^ 1
 *   if lb < ub:                                   (the epilogue: the last P V)
 *     wait the turn; acc = warp_group_dot p', v[r - 1], x; pass the turn; mbarrier_arrive empty[r - 1]
 *
 * A turn is one per iteration (both dots), and one each for the prologue
 * and the epilogue.  The ops of the second half are P V, the views of its
 * B operand (the stage's V), and the ops that compute from acc (acc *
 * alpha, moved to the end of the iteration): they are the ops rotated.
 * The others (the first half) may not read them, and must be pure but for
 * the stage's full-barrier wait and Q K^T. */
typedef struct Rot {
    NrOpId d1, d2;
    NrValId acc;             /* the body argument P V accumulates into */
    int slot;                /* its yield slot */
    uint8_t *x;              /* by op id: the ops computing from acc */
    int32_t nx;              /* ops when x was taken */
    NrOpId v[4];             /* P V's B operand: memdesc_index buf, r (then views of it), last first */
    int nv;
} Rot;

/* Whether op o (of the body when rt was filled) computes from acc. */
static bool rot_is_x(const Rot *rt, NrOpId o) {
    return o > 0 && o < (NrOpId)rt->nx && rt->x[o];
}

static bool rot_in_v(const Rot *rt, NrOpId o) {
    for (int i = 0; i < rt->nv; i++)
        if (rt->v[i] == o) return true;
    return false;
}

/* Whether the chain d1, d2 of the loop's body (its stages read at ring
 * position r) may be rotated; fills rt. */
static bool rotate_fits(Pipe *p, NrOpId d1, NrOpId d2, NrValId r, Rot *rt) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrBlockId body = f->ops[p->loop].regions[0];
    NrOpId y = nr_block_terminator(f, body);
    const NrOp *o2 = &f->ops[d2];
    NrValId a = o2->opnds[0];
    if (m->types[f->vals[a].type].kind == NR_TK_MEMDESC) return false;
    memset(rt, 0, sizeof *rt);
    rt->d1 = d1;
    rt->d2 = d2;
    rt->slot = yield_slot(f, body, o2->results[0]);
    rt->acc = f->blocks[body].args[rt->slot + 1];
    for (NrValId v = o2->opnds[1];;) {
        NrOpId def = f->vals[v].def;
        if (!def || f->ops[def].block != body || rt->nv == 4 || nr_gpu_uses_of(f, v) != 1) return false;
        rt->v[rt->nv++] = def;
        if (f->ops[def].opc == NR_OP_MEMDESC_INDEX) {
            if (f->ops[def].opnds[1] != r || inside(p, f->ops[def].opnds[0])) return false;
            break;
        }
        if (f->ops[def].opc != NR_OP_MEMDESC_TRANS) return false;
        v = f->ops[def].opnds[0];
    }
    rt->nx = f->nops;
    rt->x = nr_alloc(m->arena, (size_t)f->nops);
    NR_FOR_OPS(f, body, o) {
        if (o == d2 || o == y || rot_in_v(rt, o)) continue;
        bool rd = nr_op_reads(f, o, rt->acc);
        for (int i = 0; !rd && i < f->ops[o].nopnds; i++) {
            NrValId u = f->ops[o].opnds[i];
            rd = u && f->vals[u].def && rot_is_x(rt, f->vals[u].def);
        }
        if (rd) {
            if (!(nr_op_info[f->ops[o].opc].flags & NR_OPF_PURE) || f->ops[o].nregions) return false;
            rt->x[o] = 1;
        } else if (!(nr_op_info[f->ops[o].opc].flags & NR_OPF_PURE) && o != d1 &&
                   f->ops[o].opc != NR_OP_MBARRIER_WAIT) {
            return false;
        }
    }
    /* what acc's ops compute goes only to P V's accumulator, and P is not theirs */
    NrValId c = o2->opnds[2];
    if (c != rt->acc && !(f->vals[c].def && rot_is_x(rt, f->vals[c].def))) return false;
    if (f->vals[a].def && rot_is_x(rt, f->vals[a].def)) return false;
    for (NrOpId o = f->blocks[body].first; o; o = f->ops[o].next) {
        if (rot_is_x(rt, o)) continue;
        for (int i = 0; i < f->ops[o].nopnds; i++) {
            NrValId u = f->ops[o].opnds[i];
            if (u && f->vals[u].def && rot_is_x(rt, f->vals[u].def) && !(o == d2 && i == 2)) return false;
        }
    }
    /* while P V runs, its accumulator and P stay live beside s and the next P */
    int64_t threads = 32 * (int64_t)nr_gpu_num_warps(m), words = 0;
    NrValId live[4] = {rt->acc, f->ops[d1].results[0], a, a};
    for (int i = 0; i < 4; i++) {
        const NrType *t = &m->types[f->vals[live[i]].type];
        words += (nr_type_numel(m, f->vals[live[i]].type) * nr_dtype_info[t->dtype].bytes + 3) / 4;
    }
    return words <= 200 * threads;
}

static NrValId rot_mapped(const NrValId *map, int32_t n, NrValId v) {
    return v > 0 && v < n && map[v] ? map[v] : v;
}

/* A copy of op so (with its regions) at the end of block `to`, its
 * operands renamed through map (n values); its results are recorded there. */
static NrOpId rot_clone(Pipe *p, NrValId *map, int32_t n, NrOpId so, NrBlockId to) {
    return nr_op_clone(p->f, so, map, n, to, NR_NONE);
}

static NrValId rot_wait(NrBuilder *b, NrValId v, int num) {
    NrFunc *f = b->f;
    NrTypeId t = f->vals[v].type;
    NrOpId w = nr_build(b, NR_OP_WARP_GROUP_DOT_WAIT, 1, &v, 1, &t, 0);
    nr_op_set_int(f, w, NR_A_NUM, num);
    return f->ops[w].results[0];
}

/* The views of P V's B operand at stage `at` (rt->v cloned), at the end of block `to`. */
static NrValId rot_v_at(Pipe *p, const Rot *rt, NrValId *map, int32_t n, NrValId r, NrValId at, NrBlockId to) {
    map[r] = at;
    NrOpId last = NR_NONE;
    for (int i = rt->nv - 1; i >= 0; i--) last = rot_clone(p, map, n, rt->v[i], to);
    return p->f->ops[last].results[0];
}

static void ws_rotate(Pipe *p, Rot *rt, NrValId r, NrValId empty, NrTypeId bar_view, NrValId turns,
                      const NrValId *consts) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
    NrOpId loop = p->loop;
    NrBlockId body = f->ops[loop].regions[0];
    NrOpId y = nr_block_terminator(f, body);
    NrLoc loc = f->ops[loop].loc;
    NrValId iv = f->blocks[body].args[0];
    int nargs = f->blocks[body].nargs, rslot = -1;
    for (int k = 1; k < nargs; k++)
        if (f->blocks[body].args[k] == r) rslot = k - 1;
    NR_ASSERT(rslot >= 0);
    int32_t n = f->nvals;
    NrValId *map = nr_alloc(m->arena, sizeof(NrValId) * (size_t)n);
    NrValId a = f->ops[rt->d2].opnds[0], s = f->ops[rt->d1].results[0];
    NrTypeId at = f->vals[a].type, acc_t = f->vals[rt->acc].type;
    NrValId mine = NR_NONE, other = NR_NONE, t0 = consts[2];
    if (turns) t0 = turns_setup(p, turns, bar_view, consts, &mine, &other);
    /* the prologue */
    NrBuilder b = nr_builder_before(f, loop);
    b.loc = loc;
    NrValId lb = f->ops[loop].opnds[0], ub = f->ops[loop].opnds[1], step = f->ops[loop].opnds[2];
    NrValId ran = compare(p, &b, "lt", lb, ub);
    int nc = nargs - 1, npro = nc + 1 + (turns ? 1 : 0);
    NrTypeId *pt = nr_alloc(m->arena, sizeof(NrTypeId) * (size_t)npro);
    for (int k = 0; k < nc; k++) pt[k] = f->vals[f->blocks[body].args[k + 1]].type;
    pt[nc] = at;
    if (turns) pt[nc + 1] = i32;
    NrOpId pro = nr_build(&b, NR_OP_IF, 1, &ran, npro, pt, 2);
    NrBlockId then = f->ops[pro].regions[0], els = f->ops[pro].regions[1];
    map[iv] = lb;
    for (int k = 1; k < nargs; k++) map[f->blocks[body].args[k]] = f->ops[loop].opnds[3 + k - 1];
    NrBuilder tb = nr_builder_at_end(f, then);
    tb.loc = loc;
    if (turns) {
        NrValId w[2] = {mine, t0};
        nr_build(&tb, NR_OP_MBARRIER_WAIT, 2, w, 0, NULL, 0);
    }
    NR_FOR_OPS(f, body, o) {
        if (o == y || o == rt->d2 || rot_is_x(rt, o) || rot_in_v(rt, o)) continue;
        NrOpId c = rot_clone(p, map, n, o, then);
        if (o != rt->d1) continue;
        nr_op_set_bool(f, c, NR_A_IS_ASYNC, true);
        if (turns) {
            NrValId pass[2] = {other, NR_NONE};
            nr_build(&tb, NR_OP_MBARRIER_ARRIVE, 2, pass, 0, NULL, 0);
        }
        map[s] = rot_wait(&tb, f->ops[c].results[0], 0);
    }
    NR_FOR_OPS(f, body, o)
        if (rot_is_x(rt, o)) rot_clone(p, map, n, o, then);
    NrValId *py = nr_alloc(m->arena, sizeof(NrValId) * (size_t)npro);
    for (int k = 0; k < nc; k++)
        py[k] = rot_mapped(map, n, k == rt->slot ? f->ops[rt->d2].opnds[2] : f->ops[y].opnds[k]);
    py[nc] = rot_mapped(map, n, a);
    NrValId one_t[2] = {t0, consts[0]};
    if (turns) py[nc + 1] = nr_build1(&tb, NR_OP_XOR, i32, 2, one_t);
    nr_build(&tb, NR_OP_YIELD, npro, py, 0, NULL, 0);
    NrBuilder eb = nr_builder_at_end(f, els);
    eb.loc = loc;
    for (int k = 0; k < nc; k++) py[k] = f->ops[loop].opnds[3 + k];
    NrOpId zero = nr_build(&eb, NR_OP_CONST, 0, NULL, 1, &at, 0);
    nr_op_set_float(f, zero, NR_A_VALUE, 0.0);
    py[nc] = f->ops[zero].results[0];
    if (turns) py[nc + 1] = t0;
    nr_build(&eb, NR_OP_YIELD, npro, py, 0, NULL, 0);
    /* the loop, from lb + step */
    NrValId ls[2] = {lb, step};
    NrValId lb1 = nr_build1(&b, NR_OP_ADD, f->vals[lb].type, 2, ls);
    {
        int no = f->ops[loop].nopnds;
        NrValId *lo = nr_alloc(m->arena, sizeof(NrValId) * (size_t)no);
        memcpy(lo, f->ops[loop].opnds, sizeof(NrValId) * (size_t)no);
        lo[0] = lb1;
        for (int k = 0; k < nc; k++) lo[3 + k] = f->ops[pro].results[k];
        nr_op_set_operands(f, loop, no, lo);
    }
    NrValId extra[2] = {f->ops[pro].results[nc], turns ? f->ops[pro].results[nc + 1] : NR_NONE};
    loop = widen_loop(p, turns ? 2 : 1, extra);
    NrValId parg = f->blocks[body].args[nargs], targ = turns ? f->blocks[body].args[nargs + 1] : NR_NONE;
    /* the epilogue (cloning P V's views before they move) */
    NrValId xr = f->ops[loop].results[rt->slot], pr = f->ops[loop].results[nc];
    NrValId tr = turns ? f->ops[loop].results[nc + 1] : NR_NONE, rr = f->ops[loop].results[rslot];
    NrBuilder qb = nr_builder_after(f, loop);
    qb.loc = loc;
    NrTypeId et[2] = {acc_t, i32};
    NrOpId epi = nr_build(&qb, NR_OP_IF, 1, &ran, turns ? 2 : 1, et, 2);
    then = f->ops[epi].regions[0];
    els = f->ops[epi].regions[1];
    tb = nr_builder_at_end(f, then);
    tb.loc = loc;
    if (turns) {
        NrValId w[2] = {mine, tr};
        nr_build(&tb, NR_OP_MBARRIER_WAIT, 2, w, 0, NULL, 0);
    }
    NrValId rl = prev_index(p, &tb, rr, consts);
    NrValId vl = rot_v_at(p, rt, map, n, r, rl, then);
    NrValId dops[3] = {pr, vl, xr};
    NrOpId dl = nr_build(&tb, NR_OP_WARP_GROUP_DOT, 3, dops, 1, &acc_t, 0);
    nr_op_copy_attrs(f, dl, f, rt->d2);
    nr_op_set_bool(f, dl, NR_A_IS_ASYNC, false);
    if (turns) {
        NrValId pass[2] = {other, NR_NONE};
        nr_build(&tb, NR_OP_MBARRIER_ARRIVE, 2, pass, 0, NULL, 0);
    }
    NrValId fr[2] = {bar_at(&tb, empty, bar_view, rl), NR_NONE};
    nr_build(&tb, NR_OP_MBARRIER_ARRIVE, 2, fr, 0, NULL, 0);
    NrValId ey[2] = {f->ops[dl].results[0], NR_NONE};
    NrValId tt[2] = {tr, consts[0]};
    if (turns) ey[1] = nr_build1(&tb, NR_OP_XOR, i32, 2, tt);
    nr_build(&tb, NR_OP_YIELD, turns ? 2 : 1, ey, 0, NULL, 0);
    eb = nr_builder_at_end(f, els);
    eb.loc = loc;
    NrValId ez[2] = {xr, tr};
    NrOpId ezy = nr_build(&eb, NR_OP_YIELD, turns ? 2 : 1, ez, 0, NULL, 0);
    nr_replace_all_uses(f, xr, f->ops[epi].results[0]);
    f->ops[dl].opnds[2] = xr;
    f->ops[ezy].opnds[0] = xr;
    if (turns && p->outer) yield_also(p, f->ops[p->outer].regions[0], 1, &f->ops[epi].results[1]);
    /* the body: Q K^T, then P V of the previous stage */
    NrOpId nx = f->ops[rt->d1].next;
    NrBuilder ab = nr_builder_before(f, nx);
    ab.loc = loc;
    NrValId rp = prev_index(p, &ab, r, consts);
    for (int i = rt->nv - 1; i >= 0; i--) {
        nr_op_unlink(f, rt->v[i]);
        nr_op_insert_before(f, nx, rt->v[i]);
        for (int j = 0; j < f->ops[rt->v[i]].nopnds; j++)
            if (f->ops[rt->v[i]].opnds[j] == r) f->ops[rt->v[i]].opnds[j] = rp;
    }
    nr_op_unlink(f, rt->d2);
    nr_op_insert_before(f, nx, rt->d2);
    NrValId c2 = f->ops[rt->d2].opnds[2];
    f->ops[rt->d2].opnds[0] = parg;
    f->ops[rt->d2].opnds[2] = rt->acc;
    nr_op_set_bool(f, rt->d1, NR_A_IS_ASYNC, true);
    nr_op_set_bool(f, rt->d2, NR_A_IS_ASYNC, true);
    if (turns) {
        NrBuilder top = nr_builder_before(f, f->blocks[body].first);
        top.loc = loc;
        NrValId w[2] = {mine, targ};
        nr_build(&top, NR_OP_MBARRIER_WAIT, 2, w, 0, NULL, 0);
        NrValId pass[2] = {other, NR_NONE};
        nr_build(&ab, NR_OP_MBARRIER_ARRIVE, 2, pass, 0, NULL, 0);
    }
    NrValId sw = rot_wait(&ab, s, 1);
    nr_replace_all_uses(f, s, sw);
    f->ops[f->vals[sw].def].opnds[0] = s;
    /* the end: P V's group completes, its stage is freed, acc is rescaled */
    NrBuilder end = nr_builder_before(f, y);
    end.loc = loc;
    NrValId accn = rot_wait(&end, f->ops[rt->d2].results[0], 0);
    NrValId rel[2] = {bar_at(&end, empty, bar_view, rp), NR_NONE};
    nr_build(&end, NR_OP_MBARRIER_ARRIVE, 2, rel, 0, NULL, 0);
    for (NrOpId o = f->blocks[body].first, next; o; o = next) {
        next = f->ops[o].next;
        if (!rot_is_x(rt, o)) continue;
        nr_op_unlink(f, o);
        nr_op_insert_before(f, y, o);
        for (int j = 0; j < f->ops[o].nopnds; j++)
            if (f->ops[o].opnds[j] == rt->acc) f->ops[o].opnds[j] = accn;
    }
    f->ops[y].opnds[rt->slot] = c2 == rt->acc ? accn : c2;
    NrValId more[2] = {a, NR_NONE};
    if (turns) {
        NrValId tx[2] = {targ, consts[0]};
        more[1] = nr_build1(&end, NR_OP_XOR, i32, 2, tx);
    }
    yield_also(p, body, turns ? 2 : 1, more);
}

static void ws_loop(Pipe *p, Cand *cands, int nc, NrOpId wg, NrOpId d1) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    int NB = p->stages, nw = nr_gpu_num_warps(m);
    NrBlockId body = f->ops[p->loop].regions[0];
    const NrValId *bounds = f->ops[p->loop].opnds;
    NrValId lb = bounds[0];
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
    NrValId iv = f->blocks[body].args[0];
    NrOpId split = p->outer ? p->outer : p->loop;
    NrBuilder b = nr_builder_before(f, split);
    b.loc = f->ops[split].loc;
    NrTypeId bar_view;
    NrValId bars[2];
    bars[0] = nr_gpu_alloc_mbarriers(p->m, p->f, &b, NB, 1, &bar_view);  /* full */
    bars[1] = nr_gpu_alloc_mbarriers(p->m, p->f, &b, NB, nw, &bar_view); /* empty */
    bool pingpong = d1 && pingpong_fits(p, d1, wg);
    NrValId turns = pingpong ? nr_gpu_alloc_mbarriers(p->m, p->f, &b, 2, 4, &bar_view) : NR_NONE;
    tensor_maps(p, &b, cands, nc);
    alloc_stages(p, &b, cands, nc, NB);
    NrValId consts[3] = {const_i32(&b, m, 1), const_i32(&b, m, NB), const_i32(&b, m, 0)};
    /* the producer: two warpgroups give it 40 registers and the others 232
     * (of 64K: 3 x 128 threads at 168 on entry) */
    NrOpId ws = nr_build(&b, NR_OP_WARP_SPECIALIZE, 0, NULL, 0, NULL, 1);
    nr_op_set_int(f, ws, NR_A_REGS, nw == 8 ? 40 : 0);
    nr_op_set_int(f, ws, NR_A_CONSUMER_REGS, nw == 8 ? 232 : 0);
    NrBuilder pb = nr_builder_at_end(f, f->ops[ws].regions[0]);
    pb.loc = b.loc;
    p->nmap = 0;
    if (p->outer) {
        /* for tile ... carrying w, ph: the inner loop's bounds, then its copies */
        const NrValId *ob = f->ops[p->outer].opnds;
        NrValId oin[5] = {ob[0], ob[1], ob[2], consts[2], consts[0]};
        NrTypeId ot[2] = {i32, i32};
        NrOpId po = nr_build(&pb, NR_OP_FOR, 5, oin, 2, ot, 1);
        NrBlockId pobody = f->ops[po].regions[0];
        NrValId ptile = nr_block_add_arg(f, pobody, f->vals[ob[0]].type);
        NrValId w = nr_block_add_arg(f, pobody, i32), ph = nr_block_add_arg(f, pobody, i32);
        NrBuilder ib = nr_builder_at_end(f, pobody);
        ib.loc = b.loc;
        NrOpId inner = p->loop;
        NrValId oiv = f->blocks[f->ops[p->outer].regions[0]].args[0];
        NrValId pbounds[3];
        p->loop = p->outer;
        p->nmap = 0;
        for (int i = 0; i < 3; i++) pbounds[i] = clone_at(p, &ib, bounds[i], oiv, ptile);
        /* what the copies' coordinates compute from the tile alone is
         * computed once a tile, not in the K loop */
        for (int k = 0; k < nc; k++)
            for (int i = 4; i < f->ops[cands[k].load].nopnds; i++)
                ws_hoist_clones(p, &ib, f->ops[cands[k].load].opnds[i], f->ops[inner].regions[0], oiv, ptile);
        p->loop = inner;
        NrOpId pl = ws_producer_loop(p, &ib, cands, nc, bars, bar_view, pbounds, w, ph, consts, ptile);
        NrValId oy[2] = {f->ops[pl].results[0], f->ops[pl].results[1]};
        nr_build(&ib, NR_OP_YIELD, 2, oy, 0, NULL, 0);
    } else {
        ws_producer_loop(p, &pb, cands, nc, bars, bar_view, bounds, consts[2], consts[0], consts, NR_NONE);
    }
    nr_build(&pb, NR_OP_YIELD, 0, NULL, 0, NULL, 0);
    /* the consumers: the ring position is carried by the inner loop, and by
     * the outer one across tiles */
    NrValId inits[2] = {consts[2], consts[2]};
    if (p->outer) {
        NrOpId inner = p->loop;
        p->loop = p->outer;
        widen_loop(p, 2, inits);
        NrBlockId ob = f->ops[p->loop].regions[0];
        p->outer = p->loop;
        p->loop = inner;
        inits[0] = f->blocks[ob].args[f->blocks[ob].nargs - 2];
        inits[1] = f->blocks[ob].args[f->blocks[ob].nargs - 1];
    }
    NrOpId loop = widen_loop(p, 2, inits);
    NrValId r = f->blocks[body].args[f->blocks[body].nargs - 2], phase = f->blocks[body].args[f->blocks[body].nargs - 1];
    NrBuilder top = nr_builder_before(f, f->blocks[body].first);
    top.loc = b.loc;
    NrValId ft[2] = {bar_at(&top, bars[0], bar_view, r), phase};
    nr_build(&top, NR_OP_MBARRIER_WAIT, 2, ft, 0, NULL, 0);
    read_stages(p, cands, nc, r);
    NrBuilder end = nr_builder_before(f, nr_block_terminator(f, body));
    NrValId ring[2] = {next_index(p, &end, r, consts), next_parity(p, &end, r, phase, consts)};
    yield_also(p, body, 2, ring);
    NrOpId after = f->ops[loop].next;
    NrBuilder tail = after ? nr_builder_before(f, after) : nr_builder_at_end(f, f->ops[loop].block);
    tail.loc = b.loc;
    Rot rt;
    bool rotated = d1 && rotate_fits(p, d1, wg, r, &rt);
    if (!rotated && d1) make_chain_async(p, d1, wg, &tail); /* (a rotated loop: ws_rotate, below) */
    else if (!rotated) make_async(p, wg, &tail, false);
    if (p->outer) {
        /* the last stage of this tile is freed once its dot is done (a
         * rotated loop's epilogue frees it); the outer loop yields the ring
         * position on */
        int nr = f->ops[loop].nresults;
        NrValId rout = f->ops[loop].results[nr - 2];
        if (!rotated) {
            NrValId ran = compare(p, &tail, "lt", f->ops[loop].opnds[0], f->ops[loop].opnds[1]);
            NrValId ar[2] = {bar_at(&tail, bars[1], bar_view, prev_index(p, &tail, rout, consts)), ran};
            nr_build(&tail, NR_OP_MBARRIER_ARRIVE, 2, ar, 0, NULL, 0);
        }
        NrValId on[2] = {rout, f->ops[loop].results[nr - 1]};
        yield_also(p, f->ops[p->outer].regions[0], 2, on);
        NrOpId oafter = f->ops[p->outer].next;
        tail = oafter ? nr_builder_before(f, oafter) : nr_builder_at_end(f, f->ops[p->outer].block);
        tail.loc = b.loc;
    }
    inval_bars(p, &tail, bars[0], bar_view, NB);
    inval_bars(p, &tail, bars[1], bar_view, NB);
    if (pingpong) inval_bars(p, &tail, turns, bar_view, 2);
    ws_sink_prefix(f, ws);
    if (rotated) {
        ws_rotate(p, &rt, r, bars[1], bar_view, turns, consts);
        return;
    }
    /* the release of the previous iteration's stage, after the wait that
     * completes its dot (of a chain: the first dot, which waits for the
     * second one's group of the previous iteration) */
    NrOpId w1 = f->ops[d1 ? d1 : wg].next;
    NR_ASSERT(w1 && f->ops[w1].opc == NR_OP_WARP_GROUP_DOT_WAIT);
    NrBuilder rel = nr_builder_after(f, w1);
    rel.loc = b.loc;
    NrValId ar[2] = {bar_at(&rel, bars[1], bar_view, prev_index(p, &rel, r, consts)), compare(p, &rel, "ne", iv, lb)};
    nr_build(&rel, NR_OP_MBARRIER_ARRIVE, 2, ar, 0, NULL, 0);
    if (pingpong) ws_pingpong(p, d1, wg, turns, bar_view, consts);
}

/* A copy at b of load `op` of the loop body for iteration `at`, masked
 * off unless at < ub. */
static NrValId load_at(Pipe *p, NrBuilder *b, NrOpId op, NrValId at, NrValId ub) {
    NrFunc *f = p->f;
    NrValId iv = f->blocks[f->ops[p->loop].regions[0]].args[0];
    NrTypeId i1 = nr_type_scalar(p->m, NR_DT_I1);
    NrValId cc[2] = {at, ub};
    NrOpId in = nr_build(b, NR_OP_CMP, 2, cc, 1, &i1, 0);
    nr_op_set_str(f, in, NR_A_PRED, "lt");
    p->nmap = 0;
    NrValId opnd[3] = {NR_NONE, NR_NONE, NR_NONE};
    for (int i = 0; i < 3 && i < f->ops[op].nopnds; i++)
        if (f->ops[op].opnds[i]) opnd[i] = clone_at(p, b, f->ops[op].opnds[i], iv, at);
    opnd[1] = full_mask(p, b, opnd[0], opnd[1], f->ops[in].results[0]);
    NrTypeId t = f->vals[f->ops[op].results[0]].type;
    NrOpId l = nr_build(b, NR_OP_LOAD, 3, opnd, 1, &t, 0);
    nr_op_copy_attrs(f, l, f, op);
    return f->ops[l].results[0];
}

/* Vector loads of a pipelined loop's body that feed no dot (attention
 * backward's m and delta rows), their pointers, mask and `other` computed
 * from the induction variable and loop invariants, are prefetched one
 * iteration ahead into registers: the loop carries the current value,
 * loaded for the first iteration in front of it, and each iteration issues
 * the next one's load at its top (masked off past the end), so that its
 * latency hides behind the iteration's dots.  Only where the loop's
 * registers (loop_regs, with the carried vectors: a thread's registers of
 * their layouts) stay within 255: the dK/dV loop at d64 on 64x64 tiles and
 * 4 warps (the estimate 240; ptxas 228, from 195) takes it, at d128 (over
 * 255 already; ptxas spilled 380 bytes with it) not. */
static void prefetch_vectors(Pipe *p, const Cand *cands, int nc) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrBlockId body = f->ops[p->loop].regions[0];
    NrOpId loads[8];
    int n = 0;
    int64_t extra = 0;
    NR_FOR_OPS(f, body, o) {
        const NrOp *op = &f->ops[o];
        if (op->opc != NR_OP_LOAD || op->nresults != 1 || op->nopnds > 3 || n == 8) continue;
        bool cand = false;
        for (int k = 0; k < nc; k++) cand |= cands[k].load == o;
        const NrType *t = &m->types[f->vals[op->results[0]].type];
        if (cand || t->rank != 1 || t->ptr || nr_op_int(f, o, NR_A_VOLATILE, 0)) continue;
        bool ok = true;
        for (int i = 0; i < op->nopnds && ok; i++)
            if (op->opnds[i]) ok = from_iv(p, op->opnds[i], f->blocks[body].args[0], 0);
        NrLinear ll;
        if (!ok || !nr_layout_linear(m, t->layout, 1, t->shape, nr_gpu_num_warps(m), &ll)) continue;
        extra += ((int64_t)1 << ll.nreg) * (nr_dtype_info[t->dtype].bytes > 4 ? 2 : 1);
        loads[n++] = o;
    }
    if (!n || loop_regs(p, extra) > 255) return;
    NrValId lb = f->ops[p->loop].opnds[0], ub = f->ops[p->loop].opnds[1], step = f->ops[p->loop].opnds[2];
    NrValId iv = f->blocks[body].args[0];
    NrBuilder pre = nr_builder_before(f, p->loop);
    pre.loc = f->ops[p->loop].loc;
    NrValId inits[8];
    for (int j = 0; j < n; j++) inits[j] = load_at(p, &pre, loads[j], lb, ub);
    widen_loop(p, n, inits);
    NrBuilder top = nr_builder_before(f, f->blocks[body].first);
    top.loc = pre.loc;
    NrValId ad[2] = {iv, step};
    NrValId ivn = nr_build1(&top, NR_OP_ADD, f->vals[iv].type, 2, ad);
    NrValId next[8];
    int base = f->blocks[body].nargs - n;
    NrValId from[8];
    for (int j = 0; j < n; j++) {
        next[j] = load_at(p, &top, loads[j], ivn, ub);
        from[j] = f->ops[loads[j]].results[0];
    }
    nr_replace_all_uses_n(f, from, f->blocks[body].args + base, n);
    for (int j = 0; j < n; j++) nr_op_erase(f, loads[j]);
    yield_also(p, body, n, next);
}

static void pipeline_loop(Pipe *p) {
    NrFunc *f = p->f;
    NrModule *m = p->m;
    NrBlockId body = f->ops[p->loop].regions[0];
    Cand cands[MAX_CANDS];
    int nc = 0;
    merge_invariant_allocs(f, body);
    trans_views(m, f, body);
    NR_FOR_OPS(f, body, o) {
        if (nc < MAX_CANDS && candidate(p, o, &cands[nc])) nc++;
    }
    if (!nc) {
        /* Nothing to pipeline (attention backward: its Q and dO tiles are
         * read twice, once transposed), but the K and V tiles it stages for
         * wgmma every iteration are loop-invariant: they move in front of
         * the loop when every buffer the loop uses fits at once. */
        if (other_smem(p, NULL, 0) <= smem_limit(nr_gpu_sm(m))) hoist_invariant_allocs(p);
        return;
    }
    hoist_invariant_allocs(p);
    /* as deep as shared memory allows */
    int64_t room = smem_limit(nr_gpu_sm(m)) - other_smem(p, cands, nc), stage = stage_bytes(p, cands, nc);
    while (p->stages > 1 && p->stages * stage > room) p->stages--;
    if (p->stages < 2) return;
    int S = p->stages;
    /* an async warp_group_dot reads its stage until the next iteration's
     * wait: the stage the copies overwrite must be the one two dots back.
     * With NB buffers the copies run NB - 2 iterations ahead: one more
     * buffer than stages keeps them S - 1 ahead where shared memory allows,
     * else they run S - 2 ahead in S buffers. */
    NrOpId wg = async_dot(p, cands, nc), d1 = NR_NONE;
    NrOpId chain = wg ? NR_NONE : chain_async_dot(p, cands, nc, &d1);
    if (ws_wanted(p, cands, nc, wg ? wg : chain)) {
        ws_loop(p, cands, nc, wg ? wg : chain, d1);
        return;
    }
    int NB = S;
    if ((wg || chain) && (S + 1) * stage <= ASYNC_SMEM_BUDGET && (S + 1) * stage <= room &&
        (!chain || programs_per_sm(p, room, S + 1, stage) >= programs_per_sm(p, room, S, stage)))
        NB = S + 1;
    int D = wg || chain ? NB - 2 : S - 1;
    NrValId lb = f->ops[p->loop].opnds[0], ub = f->ops[p->loop].opnds[1], step = f->ops[p->loop].opnds[2];
    NrTypeId ivt = f->vals[lb].type, i1 = nr_type_scalar(m, NR_DT_I1);
    NrValId iv = f->blocks[body].args[0];
    /* TMA copies complete on one mbarrier per stage (bars[NB]); the others
     * are cp.async groups */
    bool any_tma = false, any_cp = false;
    int64_t tma_bytes = 0;
    for (int k = 0; k < nc; k++) {
        any_tma |= cands[k].tma;
        any_cp |= !cands[k].tma;
        if (cands[k].tma) {
            NrTypeId t = f->vals[f->ops[cands[k].load].results[0]].type;
            tma_bytes += nr_type_numel(m, t) * nr_dtype_info[m->types[t].dtype].bytes;
        }
    }
    /* buffers and prologue */
    NrBuilder b = nr_builder_before(f, p->loop);
    NrValId bars = NR_NONE;
    NrTypeId bar_view = 0;
    if (any_tma) {
        bars = nr_gpu_alloc_mbarriers(p->m, p->f, &b, NB, 1, &bar_view); /* thread 0's arrive.expect_tx */
        tensor_maps(p, &b, cands, nc);
    }
    alloc_stages(p, &b, cands, nc, NB);
    NrValId ptr[MAX_CANDS];
    for (int k = 0; k < nc; k++) ptr[k] = cands[k].arg >= 0 ? f->ops[p->loop].opnds[3 + cands[k].arg - 1] : NR_NONE;
    for (int s = 0; s < D; s++) {
        p->nmap = 0;
        NrValId iv_s = lb;
        if (s) {
            NrValId k = nr_build_const_int(&b, ivt, s);
            NrValId mk[2] = {step, k};
            NrValId off = nr_build1(&b, NR_OP_MUL, ivt, 2, mk);
            NrValId ad[2] = {lb, off};
            iv_s = nr_build1(&b, NR_OP_ADD, ivt, 2, ad);
        }
        NrValId cc[2] = {iv_s, ub};
        NrOpId cmp = nr_build(&b, NR_OP_CMP, 2, cc, 1, &i1, 0);
        nr_op_set_str(f, cmp, NR_A_PRED, "lt");
        NrValId in_range = f->ops[cmp].results[0];
        for (int k = 0; k < nc; k++) {
            Cand *c = &cands[k];
            if (c->tma) continue;
            NrValId at = ptr[k];
            if (c->arg < 0) {
                at = clone_at(p, &b, f->ops[c->load].opnds[0], iv, iv_s);
            } else if (s) {
                NrValId ad[2] = {ptr[k], c->inc};
                at = ptr[k] = nr_build1(&b, NR_OP_ADDPTR, f->vals[ptr[k]].type, 2, ad);
            }
            NrValId mask = f->ops[c->load].opnds[1] ? clone_at(p, &b, f->ops[c->load].opnds[1], iv, iv_s) : NR_NONE;
            copy_into(&b, c, at, const_i32(&b, m, s), full_mask(p, &b, at, mask, in_range));
        }
        if (any_tma) tma_copies(p, &b, cands, nc, bars, bar_view, const_i32(&b, m, s), in_range, tma_bytes, iv, iv_s);
        if (any_cp) nr_build(&b, NR_OP_ASYNC_COMMIT_GROUP, 0, NULL, 0, NULL, 0);
    }
    /* the loop carries the carried pointers D iterations ahead and both
     * buffer indices */
    NrValId inits[MAX_CANDS + 2];
    int nq = 0;
    for (int k = 0; k < nc; k++) {
        if (cands[k].arg < 0) continue;
        NrValId ad[2] = {ptr[k], cands[k].inc};
        inits[nq++] = nr_build1(&b, NR_OP_ADDPTR, f->vals[ptr[k]].type, 2, ad);
    }
    inits[nq] = const_i32(&b, m, 0);
    inits[nq + 1] = const_i32(&b, m, D);
    int nextra = nq + 2 + (any_tma ? 1 : 0);
    if (any_tma) inits[nq + 2] = inits[nq]; /* the parity of the mbarrier phase the loop waits for */
    NrValId consts[3] = {const_i32(&b, m, 1), const_i32(&b, m, NB), inits[nq]};
    NrValId k_ahead = nr_build_const_int(&b, ivt, D);
    NrValId mk[2] = {step, k_ahead};
    NrValId ahead = nr_build1(&b, NR_OP_MUL, ivt, 2, mk); /* D * step, loop-invariant */
    NrOpId loop = widen_loop(p, nextra, inits);
    NrBlock *blk = &f->blocks[body];
    int base = blk->nargs - nextra;
    for (int k = 0, j = 0; k < nc; k++) cands[k].q = cands[k].arg >= 0 ? blk->args[base + j++] : NR_NONE;
    NrValId r = blk->args[base + nq], w = blk->args[base + nq + 1];
    NrValId phase = any_tma ? blk->args[base + nq + 2] : NR_NONE;
    /* the body: wait, issue the copies D iterations ahead; each tile is read
     * from this iteration's buffer where it was converted or staged, so that
     * it is live no longer than the load's value was */
    NrBuilder top = nr_builder_before(f, f->blocks[body].first);
    top.loc = f->ops[loop].loc;
    if (any_cp) {
        NrOpId wait = nr_build(&top, NR_OP_ASYNC_WAIT, 0, NULL, 0, NULL, 0);
        nr_op_set_int(f, wait, NR_A_NUM, D - 1);
    }
    p->nmap = 0;
    NrValId ad[2] = {iv, ahead};
    NrValId iv_ahead = nr_build1(&top, NR_OP_ADD, ivt, 2, ad);
    NrValId cc[2] = {iv_ahead, ub};
    NrOpId cmp = nr_build(&top, NR_OP_CMP, 2, cc, 1, &i1, 0);
    nr_op_set_str(f, cmp, NR_A_PRED, "lt");
    /* With cp.async alone, the copies are issued right after the dot
     * (their addresses and masks still computed up here): the tensor cores
     * get this iteration's wgmma, or its first mma.sync, as soon as its
     * stage is in, and the copies' issue overlaps the dot.  The buffer they
     * fill is one the previous iterations read (two dots back for an async
     * wgmma), which this iteration's wait and barrier have freed. */
    NrOpId sdot = wg ? NR_NONE : staged_dot(p, cands, nc, NR_OP_DOT, NR_OP_CONVERT_LAYOUT);
    /* with accumulating dots running asynchronously (accumulating_dots),
     * the copies come after the first dot, whose wait completes them */
    NrOpId accs[8], first = NR_NONE;
    int nacc = wg || chain || sdot ? 0 : accumulating_dots(p, accs, 8, &first);
    bool after_dot = (wg || sdot || nacc) && any_cp && !any_tma;
    NrBuilder cpb = top;
    if (after_dot) cpb = nr_builder_after(f, wg ? wg : sdot ? sdot : first);
    for (int j = 0; j < nc; j++) {
        Cand *c = &cands[j];
        if (c->tma) continue;
        NrValId at = c->arg >= 0 ? c->q : clone_at(p, &top, f->ops[c->load].opnds[0], iv, iv_ahead);
        NrValId mask = f->ops[c->load].opnds[1] ? clone_at(p, &top, f->ops[c->load].opnds[1], iv, iv_ahead) : NR_NONE;
        copy_into(&cpb, c, at, w, full_mask(p, &top, at, mask, f->ops[cmp].results[0]));
    }
    if (any_cp) nr_build(&cpb, NR_OP_ASYNC_COMMIT_GROUP, 0, NULL, 0, NULL, 0);
    if (any_tma) {
        /* this iteration's copies D ahead first, then the wait for this
         * iteration's stage: the copies are in flight during the wait.
         * With accumulating dots in flight into this iteration, the copies
         * come after the first dot instead: its wait completes them, and
         * with them the reads of the stage the copies refill. */
        NrBuilder tb = top;
        if (nacc) {
            tb = nr_builder_after(f, first);
            tb.loc = top.loc;
        }
        tma_copies(p, &tb, cands, nc, bars, bar_view, w, f->ops[cmp].results[0], tma_bytes, iv, iv_ahead);
        NrValId wt[2] = {bar_at(&top, bars, bar_view, r), phase};
        nr_build(&top, NR_OP_MBARRIER_WAIT, 2, wt, 0, NULL, 0);
    }
    read_stages(p, cands, nc, r);
    /* the yield passes the new carried values on */
    NrOpId y = nr_block_terminator(f, body);
    NrBuilder end = nr_builder_before(f, y);
    int ny = f->ops[y].nopnds;
    NrValId *yops = nr_alloc(m->arena, sizeof(NrValId) * (size_t)(ny + nextra));
    memcpy(yops, f->ops[y].opnds, sizeof(NrValId) * (size_t)ny);
    for (int j = 0, k = 0; j < nc; j++) {
        if (cands[j].arg < 0) continue;
        NrValId a2[2] = {cands[j].q, cands[j].inc};
        yops[ny + k++] = nr_build1(&end, NR_OP_ADDPTR, f->vals[cands[j].q].type, 2, a2);
    }
    yops[ny + nq] = next_index(p, &end, r, consts);
    yops[ny + nq + 1] = next_index(p, &end, w, consts);
    if (any_tma) yops[ny + nq + 2] = next_parity(p, &end, r, phase, consts);
    nr_op_set_operands(f, y, ny + nextra, yops);
    /* highest argument first: removing one renumbers those after it */
    for (bool left = true; left;) {
        int hi = -1;
        for (int j = 0; j < nc; j++)
            if (cands[j].arg >= 0 && (hi < 0 || cands[j].arg > cands[hi].arg)) hi = j;
        left = hi >= 0;
        if (left) {
            drop_dead_pointers(p, cands[hi].arg);
            cands[hi].arg = -1;
        }
    }
    /* drain after the loop */
    NrOpId after = f->ops[loop].next;
    NrBuilder tail = after ? nr_builder_before(f, after) : nr_builder_at_end(f, f->ops[loop].block);
    if (any_cp) {
        NrOpId drain = nr_build(&tail, NR_OP_ASYNC_WAIT, 0, NULL, 0, NULL, 0);
        nr_op_set_int(f, drain, NR_A_NUM, 0);
    }
    /* the mbarriers are invalidated once every thread is done with them, so
     * that their bytes may hold other buffers (or another loop's mbarriers) */
    if (any_tma) inval_bars(p, &tail, bars, bar_view, NB);
    if (wg) make_async(p, wg, &tail, after_dot);
    if (chain) make_chain_async(p, d1, chain, &tail);
    for (int i = 0; i < nacc; i++) make_acc_async(p, accs[i], &tail);
    if (nacc) prefetch_vectors(p, cands, nc);
}

static bool has_dot(const NrFunc *f, NrBlockId b) {
    NR_FOR_OPS(f, b, o) {
        if (f->ops[o].opc == NR_OP_DOT || f->ops[o].opc == NR_OP_WARP_GROUP_DOT) return true;
    }
    return false;
}

typedef struct Loops {
    NrOpId v[256];
    int n;
} Loops;

/* Loops are collected first: pipelining replaces the loop op. */
static void collect_loops(NrFunc *f, NrOpId op, void *ctx) {
    Loops *l = ctx;
    if (f->ops[op].opc == NR_OP_FOR && nr_op_int(f, op, NR_A_NUM_STAGES, 0) > 1 && has_dot(f, f->ops[op].regions[0]) &&
        l->n < 256)
        l->v[l->n++] = op;
}

bool nr_gpu_pipeline_loops(NrModule *m, NrDiags *d) {
    (void)d;
    if (nr_gpu_sm(m) < 80) return true; /* cp.async is sm_80's */
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        Loops loops;
        loops.n = 0;
        TmaUse tma[NR_MAX_TMAPS];
        int ntma = 0;
        nr_walk(f, collect_loops, &loops);
        NrBlockId outer[256];
        for (int k = 0; k < loops.n; k++) outer[k] = f->ops[loops.v[k]].block;
        for (int k = 0; k < loops.n; k++) {
            Pipe p;
            memset(&p, 0, sizeof p);
            p.m = m;
            p.f = f;
            p.loop = loops.v[k];
            p.stages = (int)nr_op_int(f, p.loop, NR_A_NUM_STAGES, 0);
            p.tma = tma;
            p.ntma = &ntma;
            if (p.stages > 8) p.stages = 8;
            pipeline_loop(&p);
        }
        /* (pipelined loops were rebuilt; their blocks stay) */
        for (int k = 0; k < loops.n; k++) {
            bool seen = false; /* loops side by side share their block */
            for (int j = 0; j < k && !seen; j++) seen = outer[j] == outer[k];
            if (outer[k] && !seen) merge_invariant_allocs(f, outer[k]);
        }
        nr_gpu_compact_layouts(m);
    }
    return true;
}

/* Loops with dots that tl.range gave no depth take the pipeline's. */
static void default_stages(NrFunc *f, NrOpId op, void *ctx) {
    int stages = *(int *)ctx;
    if (f->ops[op].opc == NR_OP_FOR && !nr_op_has(f, op, NR_A_NUM_STAGES) && has_dot(f, f->ops[op].regions[0]))
        nr_op_set_int(f, op, NR_A_NUM_STAGES, stages);
}

typedef struct Run {
    NrModule *m;
    const NrGpuOptions *opt;
    NrDiags *d;
    bool done, ok;
} Run;

static void verify_after(Run *r, const char *name) {
    NrArena a;
    nr_arena_init(&a);
    NrDiags vd;
    nr_diags_init(&vd, &a, &r->m->sources);
    if (!nr_module_verify(r->m, &vd)) NR_ICE("the IR is invalid after pass '%s':\n%s", name, nr_diags_render(&a, &vd));
    nr_arena_free(&a);
}

static void run(Run *r, const char *name, NrPassFn fn) {
    if (r->done) return;
    if (!fn(r->m, r->d)) {
        r->ok = false;
        r->done = true;
        return;
    }
    if (r->opt->verify_each) verify_after(r, name);
    if (r->opt->dump) {
        fprintf(r->opt->dump, "// after %s\n", name);
        nr_module_print(r->m, NULL, r->opt->dump);
    }
    if (r->opt->stop_after && strcmp(r->opt->stop_after, name) == 0) r->done = true;
}

bool nr_run_gpu_pipeline(NrModule *m, const NrGpuOptions *opt, NrDiags *d) {
    NrGpuOptions dflt = {4, 1, 80, false, NULL, false, NULL, false, false, 0};
    if (!opt) opt = &dflt;
    NrLoc none = {0, 0, 0};
    if (opt->num_warps < 1 || opt->num_warps > 16 || !nr_is_pow2(opt->num_warps)) {
        nr_error(d, none, "num_warps must be 1, 2, 4, 8 or 16, got %d", opt->num_warps);
        return false;
    }
    if (opt->sm < 80) {
        nr_error(d, none, "the GPU target must be sm_80 or newer, got sm_%d", opt->sm);
        return false;
    }
    m->num_warps = opt->num_warps;
    m->sm = opt->sm;
    m->sm_a = opt->sm_a && opt->sm == 90;
    m->no_tma = opt->no_tma;
    Run r = {m, opt, d, false, true};
    run(&r, "gpu-convert", nr_gpu_convert);
    run(&r, "gpu-coalesce", nr_gpu_coalesce);
    run(&r, "gpu-remove-converts", nr_gpu_remove_converts);
    if (opt->num_stages > 1) {
        int stages = opt->num_stages;
        for (int i = 0; i < m->nfuncs && !r.done; i++) nr_walk(m->funcs[i], default_stages, &stages);
        run(&r, "gpu-pipeline", nr_gpu_pipeline_loops);
        run(&r, "gpu-remove-converts", nr_gpu_remove_converts);
    }
    run(&r, "gpu-hoist-loads", nr_gpu_hoist_loads);
    run(&r, "gpu-tma-loads", nr_gpu_tma_loads);
    run(&r, "gpu-tma-stores", nr_gpu_tma_stores);
    run(&r, "gpu-smem", nr_gpu_alloc_smem);
    run(&r, "gpu-barriers", nr_gpu_barriers);
    return r.ok;
}
