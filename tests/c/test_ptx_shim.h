/* test_ptx_shim.h - weak stand-ins for the layout core and axis analysis,
 * so that the PTX emitter's tests run before (and independently of) the
 * GPU passes.  The library's own definitions, when linked, replace these.
 *
 * Blocked layouts follow Triton's linear form: size_per_thread register
 * bases, then lanes, then warps, each along `order` (fastest first), then
 * register bases for repetitions of the tile over a larger shape; bases
 * beyond a smaller shape become zero (replication).  A slice is its parent
 * over the shape with the sliced dimension set to 1, that coordinate dropped.
 * The axis analysis knows arange, splat, const, add/sub/mul, addptr,
 * broadcast, expand_dims and comparisons; everything else gets the
 * conservative answer. */
#include "gpu.h"

#include <string.h>

#define WEAK __attribute__((weak))

WEAK int32_t nr_layout_intern(NrModule *m, const NrLayout *l) {
    for (int i = 1; i < m->nlayouts; i++)
        if (memcmp(&m->layouts[i], l, sizeof *l) == 0) return i;
    if (m->nlayouts == 0) (void)NR_PUSH(m->arena, m->layouts, m->nlayouts, m->caplayouts);
    *NR_PUSH(m->arena, m->layouts, m->nlayouts, m->caplayouts) = *l;
    return m->nlayouts - 1;
}

WEAK NrTypeId nr_type_with_layout(NrModule *m, NrTypeId t, int32_t layout) {
    NrType ty = m->types[t];
    ty.layout = layout;
    return nr_type_intern(m, &ty);
}

WEAK int32_t nr_layout_slice(NrModule *m, int32_t parent, int dim) {
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_SLICE;
    l.rank = (uint8_t)(m->layouts[parent].rank - 1);
    l.parent = parent;
    l.dim = dim;
    return nr_layout_intern(m, &l);
}

static int32_t shim_blocked(NrModule *m, int rank, const int32_t *spt, const int32_t *tpw, const int32_t *wpc,
                            const int32_t *order) {
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_BLOCKED;
    l.rank = (uint8_t)rank;
    for (int d = 0; d < rank; d++) {
        l.size_per_thread[d] = spt[d];
        l.threads_per_warp[d] = tpw[d];
        l.warps_per_cta[d] = wpc[d];
        l.order[d] = order[d];
    }
    return nr_layout_intern(m, &l);
}

WEAK int32_t nr_layout_default_blocked(NrModule *m, int rank, const int32_t *shape, int num_warps) {
    int32_t spt[NR_MAX_RANK], tpw[NR_MAX_RANK], wpc[NR_MAX_RANK], order[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) order[i] = rank - 1 - i;
    int lanes = 32, warps = num_warps;
    for (int i = 0; i < rank; i++) {
        int d = order[i];
        spt[d] = 1;
        tpw[d] = i == rank - 1 ? lanes : (shape[d] < lanes ? shape[d] : lanes);
        lanes /= tpw[d];
    }
    for (int i = 0; i < rank; i++) {
        int d = order[i], left = shape[d] / tpw[d] > 1 ? shape[d] / tpw[d] : 1;
        wpc[d] = i == rank - 1 ? warps : (left < warps ? left : warps);
        warps /= wpc[d];
    }
    return shim_blocked(m, rank, spt, tpw, wpc, order);
}

static void shim_add(int32_t (*b)[NR_MAX_RANK], int *n, int d, int32_t v, int rank, const int32_t *shape) {
    for (int k = 0; k < rank; k++) b[*n][k] = 0;
    if (v < shape[d]) b[*n][d] = v;
    (*n)++;
}

WEAK bool nr_layout_linear(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int num_warps,
                           NrLinear *out) {
    if (layout <= 0 || layout >= m->nlayouts) return false;
    const NrLayout *L = &m->layouts[layout];
    memset(out, 0, sizeof *out);
    out->rank = rank;
    for (int d = 0; d < rank; d++) out->shape[d] = shape[d];
    if (L->kind == NR_LK_SLICE) {
        int32_t ps[NR_MAX_RANK];
        for (int d = 0, j = 0; d < rank + 1; d++) ps[d] = d == L->dim ? 1 : shape[j++];
        NrLinear pl;
        if (!nr_layout_linear(m, L->parent, rank + 1, ps, num_warps, &pl)) return false;
        out->nreg = pl.nreg;
        out->nlane = pl.nlane;
        out->nwarp = pl.nwarp;
        for (int i = 0; i < NR_LL_MAX_BITS; i++)
            for (int d = 0, j = 0; d < rank + 1; d++) {
                if (d == L->dim) continue;
                out->reg[i][j] = pl.reg[i][d];
                out->lane[i][j] = pl.lane[i][d];
                out->warp[i][j] = pl.warp[i][d];
                j++;
            }
        return true;
    }
    if (L->kind != NR_LK_BLOCKED || L->rank != rank) return false;
    int wp = 1;
    for (int d = 0; d < rank; d++) wp *= L->warps_per_cta[d];
    if (wp != num_warps) return false;
    for (int i = 0; i < rank; i++) {
        int d = L->order[i];
        for (int v = 1; v < L->size_per_thread[d]; v <<= 1) shim_add(out->reg, &out->nreg, d, v, rank, shape);
    }
    for (int i = 0; i < rank; i++) {
        int d = L->order[i];
        for (int v = 1; v < L->threads_per_warp[d]; v <<= 1)
            shim_add(out->lane, &out->nlane, d, v * L->size_per_thread[d], rank, shape);
    }
    for (int i = 0; i < rank; i++) {
        int d = L->order[i];
        for (int v = 1; v < L->warps_per_cta[d]; v <<= 1)
            shim_add(out->warp, &out->nwarp, d, v * L->size_per_thread[d] * L->threads_per_warp[d], rank, shape);
    }
    for (int i = 0; i < rank; i++) {
        int d = L->order[i];
        int tile = L->size_per_thread[d] * L->threads_per_warp[d] * L->warps_per_cta[d];
        for (int v = tile; v < shape[d]; v <<= 1) {
            if (out->nreg >= NR_LL_MAX_BITS) return false;
            shim_add(out->reg, &out->nreg, d, v, rank, shape);
        }
    }
    return out->nlane == 5;
}

/* --- axis info --------------------------------------------------------------------------------------- */
static int64_t shim_pow2_div(int64_t v) {
    if (v == 0) return (int64_t)1 << 30;
    int64_t d = 1;
    while (!(v & d) && d < ((int64_t)1 << 30)) d <<= 1;
    return d;
}

static int64_t shim_gcd2(int64_t a, int64_t b) { return a < b ? a : b; } /* powers of two */

static void shim_axis_block(NrFunc *f, NrBlockId b, NrAxisInfo *ax);

static bool shim_all_const(const NrType *t, const NrAxisInfo *a) {
    for (int d = 0; d < t->rank; d++)
        if (a->constancy[d] < t->shape[d]) return false;
    return true;
}

static void shim_axis_op(NrFunc *f, NrOpId o, NrAxisInfo *ax) {
    NrOp *op = &f->ops[o];
    for (int r = 0; r < op->nregions; r++) shim_axis_block(f, op->regions[r], ax);
    if (op->nresults < 1) return;
    NrValId res = op->results[0];
    const NrType *t = nr_type(f->mod, nr_val_type(f, res));
    NrAxisInfo *R = &ax[res];
    const NrAxisInfo *A = op->nopnds > 0 && op->opnds[0] ? &ax[op->opnds[0]] : NULL;
    const NrAxisInfo *B = op->nopnds > 1 && op->opnds[1] ? &ax[op->opnds[1]] : NULL;
    const NrType *at = A ? nr_type(f->mod, nr_val_type(f, op->opnds[0])) : NULL;
    const NrType *bt = B ? nr_type(f->mod, nr_val_type(f, op->opnds[1])) : NULL;
    switch (op->opc) {
    case NR_OP_CONST: {
        const NrAttr *a = nr_op_attr(f, o, NR_A_VALUE);
        int64_t dv = a && a->kind == NR_AK_INT ? shim_pow2_div(a->v.i) : 1;
        for (int d = 0; d < t->rank; d++) R->constancy[d] = t->shape[d], R->divisibility[d] = dv;
        R->divisibility[0] = dv;
        break;
    }
    case NR_OP_ARANGE:
        R->contiguity[0] = t->shape[0];
        R->divisibility[0] = shim_pow2_div(nr_op_int(f, o, NR_A_START, 0));
        break;
    case NR_OP_SPLAT:
        for (int d = 0; d < t->rank; d++) R->constancy[d] = t->shape[d], R->divisibility[d] = A->divisibility[0];
        R->divisibility_bytes = A->divisibility_bytes;
        break;
    case NR_OP_ADD:
    case NR_OP_SUB:
    case NR_OP_ADDPTR: {
        int64_t es = 1;
        if (op->opc == NR_OP_ADDPTR) es = at->ptr > 1 ? 8 : nr_dtype_info[at->dtype].bytes;
        for (int d = 0; d < t->rank; d++) {
            bool ac = A->constancy[d] >= t->shape[d], bc = B->constancy[d] >= t->shape[d];
            R->contiguity[d] = ac ? B->contiguity[d] : bc ? A->contiguity[d] : 1;
            R->constancy[d] = A->constancy[d] < B->constancy[d] ? A->constancy[d] : B->constancy[d];
            R->divisibility[d] = shim_gcd2(A->divisibility[d], B->divisibility[d]);
        }
        if (t->rank == 0) R->divisibility[0] = shim_gcd2(A->divisibility[0], B->divisibility[0]);
        if (op->opc == NR_OP_ADDPTR) {
            int64_t bd = B->divisibility[t->rank ? t->rank - 1 : 0] * es;
            for (int d = 0; d < t->rank; d++)
                if (B->divisibility[d] * es < bd) bd = B->divisibility[d] * es;
            R->divisibility_bytes = shim_gcd2(A->divisibility_bytes, bd);
        }
        (void)bt;
        break;
    }
    case NR_OP_MUL:
        for (int d = 0; d < (t->rank ? t->rank : 1); d++) {
            R->divisibility[d] = A->divisibility[d] * B->divisibility[d];
            if (R->divisibility[d] > ((int64_t)1 << 30)) R->divisibility[d] = (int64_t)1 << 30;
            R->constancy[d] = A->constancy[d] < B->constancy[d] ? A->constancy[d] : B->constancy[d];
        }
        break;
    case NR_OP_BROADCAST:
        for (int d = 0; d < t->rank; d++) {
            bool st = at->shape[d] == 1 && t->shape[d] > 1;
            R->contiguity[d] = st ? 1 : A->contiguity[d];
            R->constancy[d] = st ? t->shape[d] : A->constancy[d];
            R->divisibility[d] = A->divisibility[d];
        }
        R->divisibility_bytes = A->divisibility_bytes;
        break;
    case NR_OP_EXPAND_DIMS: {
        int axis = (int)nr_op_int(f, o, NR_A_AXIS, 0);
        for (int d = 0, j = 0; d < t->rank; d++) {
            if (d == axis) {
                R->contiguity[d] = R->constancy[d] = 1;
                R->divisibility[d] = (int64_t)1 << 30;
                continue;
            }
            R->contiguity[d] = A->contiguity[j];
            R->constancy[d] = A->constancy[j];
            R->divisibility[d] = A->divisibility[j++];
        }
        R->divisibility_bytes = A->divisibility_bytes;
        break;
    }
    case NR_OP_CMP:
        for (int d = 0; d < t->rank; d++) {
            if (shim_all_const(bt, B) || B->constancy[d] >= t->shape[d]) {
                int64_t c = A->contiguity[d] > A->constancy[d] ? A->contiguity[d] : A->constancy[d];
                c = shim_gcd2(c, B->divisibility[d]);
                if (A->contiguity[d] > 1) c = shim_gcd2(c, A->divisibility[d]);
                R->constancy[d] = (int32_t)(c < t->shape[d] ? c : t->shape[d]);
            }
        }
        break;
    default: break;
    }
}

static void shim_axis_block(NrFunc *f, NrBlockId b, NrAxisInfo *ax) {
    NR_FOR_OPS(f, b, o) shim_axis_op(f, o, ax);
}

WEAK NrAxisInfo *nr_axis_analysis(NrFunc *f) {
    NrAxisInfo *ax = nr_alloc(f->mod->arena, sizeof(NrAxisInfo) * (size_t)(f->nvals + 1));
    for (NrValId v = 1; v < f->nvals; v++) {
        const NrType *t = nr_type(f->mod, f->vals[v].type);
        for (int d = 0; d < NR_MAX_RANK; d++) {
            ax[v].contiguity[d] = 1;
            ax[v].constancy[d] = 1;
            ax[v].divisibility[d] = 1;
        }
        ax[v].divisibility_bytes = t->ptr ? 8 : 1;
        if (t->ptr && t->ptr == 1) ax[v].divisibility_bytes = nr_dtype_info[t->dtype].bytes;
    }
    NrBlock *body = &f->blocks[f->body];
    for (int i = 0; i < body->nargs; i++) {
        NrAxisInfo *a = &ax[body->args[i]];
        int div = f->params ? f->params[i].divisibility : 1;
        if (div < 1) div = 1;
        a->divisibility[0] = div;
        if (nr_type_is_ptr(f->mod, f->vals[body->args[i]].type) && div > a->divisibility_bytes)
            a->divisibility_bytes = div;
    }
    shim_axis_block(f, f->body, ax);
    return ax;
}
