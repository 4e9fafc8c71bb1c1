/* ptx_gather.c - gather and histogram through shared memory.
 *
 * gather.  The source block goes to scratch shared memory in row-major
 * order (each element once, by its owner, at its padded index as layout
 * conversions store it), then bar.sync, then each thread loads each of its
 * result elements: its coordinates with the gather axis replaced by the
 * index.  Source and result flats differ only in the axis field (their
 * other dimensions are equal), so the source flat is the result flat with
 * that field swapped for the index.  An index outside [0, n) (compared as
 * unsigned, so negative ones are outside too) reads a clamped position and
 * gives 0.  Work and shared memory are linear in the block sizes.
 *
 * histogram.  A bins-sized i32 buffer in scratch: zeroed by all threads,
 * bar.sync, one red.shared.add per element by its owner where the mask
 * holds and the value lies in [0, bins), bar.sync, then each thread loads
 * its elements of the result layout.
 *
 * Both start with bar.sync (earlier users of the same bytes are done), as
 * every op with scratch does (gpu_barrier.c relies on it). */
#include "ptx.h"

#include <string.h>

static const NrType *vtype(NrPtx *p, NrValId v) { return nr_type(p->m, nr_val_type(p->f, v)); }

static NrDtype vdt(NrPtx *p, NrValId v) {
    const NrType *t = vtype(p, v);
    return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
}

static int log2i(int64_t n) {
    int k = 0;
    while (((int64_t)1 << k) < n) k++;
    return k;
}

/* Whether integer element x (kind I32: 8- to 32-bit ints, extended; I64)
 * lies in [0, n) as an unsigned number; *low gets its low 32 bits. */
static NrPv in_range(NrPtx *p, NrPv x, int64_t n, NrPv *low) {
    if (x.k == NR_PK_I64) {
        *low = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, x);
        return nr_pb_setp(p, NR_PC_LT, NR_PT_U64, x, nr_pv_i64(n));
    }
    *low = x;
    return nr_pb_setp(p, NR_PC_LT, NR_PT_U32, x, nr_pv_i32(n));
}

static NrPv zero_of(NrPk k) { return k == NR_PK_P ? nr_pv_pred(false) : nr_pv_imm(k, 0); }

/* --- gather ------------------------------------------------------------------------------------------ */
bool nr_ptx_op_gather(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0], x = o->opnds[1], r = o->results[0];
    const NrType *at = vtype(p, a), *rt = vtype(p, r);
    int64_t axis = nr_op_int(p->f, op, NR_A_AXIS, 0);
    NrPtxVal *av = nr_ptx_val(p, a), *xv = nr_ptx_val(p, x);
    int rl = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (rl == -2) return false;
    if (rl < 0 || av->lay < 0 || xv->lay < 0 || axis < 0 || axis >= at->rank || at->rank != rt->rank ||
        p->lays[xv->lay].layout != p->lays[rl].layout) {
        nr_ptx_error(p, "malformed 'gather'");
        return false;
    }
    NrDtype dt = vdt(p, a);
    int es = nr_ptx_smem_es(dt);
    int64_t off = nr_ptx_scratch_off(p, op);
    const NrPtxLay *S = &p->lays[av->lay];
    nr_ptx_bar(p);
    NrPv owner = {NR_PK_P, nr_ptx_owner(p, av->lay), 0};
    for (int k = 0; k < 1 << S->nreg; k++) {
        if (S->dup[k]) continue;
        nr_ptx_st_shared(p, dt, nr_ptx_smem_index_addr(p, off, nr_ptx_flat(p, av->lay, k), es), av->e[k], owner);
    }
    nr_ptx_bar(p);
    const NrPtxLay *R = &p->lays[rl];
    int64_t n = at->shape[axis];
    int lo = R->off[axis], wr = log2i(rt->shape[axis]), ws = log2i(n);
    int nout = 1 << R->nreg;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)nout);
    for (int k = 0; k < nout; k++) {
        NrPv flat = nr_ptx_flat(p, rl, k), j;
        NrPv ok = in_range(p, xv->e[k], n, &j);
        j = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, j, nr_pv_i32(n - 1));
        NrPv sflat = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, j, nr_pv_i32(lo));
        if (lo) sflat = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, sflat, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, flat, nr_pv_i32((1u << lo) - 1)));
        if (lo + wr < R->bits) {
            NrPv hi = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, flat, nr_pv_i32(lo + wr));
            sflat = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, sflat, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, hi, nr_pv_i32(lo + ws)));
        }
        NrPv v = nr_ptx_ld_shared(p, dt, nr_ptx_smem_index_addr(p, off, sflat, es));
        out[k] = nr_pb_selp(p, ok, v, zero_of((NrPk)v.k));
    }
    nr_ptx_set(p, r, out, nout);
    return true;
}

/* --- histogram --------------------------------------------------------------------------------------- */
bool nr_ptx_op_histogram(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId x = o->opnds[0], mk = o->opnds[1], r = o->results[0];
    NrPtxVal *xv = nr_ptx_val(p, x), *mv = mk ? nr_ptx_val(p, mk) : NULL;
    int rl = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (rl == -2) return false;
    if (rl < 0 || xv->lay < 0 || (mv && (mv->lay < 0 || p->lays[mv->lay].layout != p->lays[xv->lay].layout))) {
        nr_ptx_error(p, "malformed 'histogram'");
        return false;
    }
    int64_t bins = vtype(p, r)->shape[0], threads = 32 * (int64_t)p->num_warps;
    NrPv base = nr_ptx_smem_addr(p, nr_ptx_scratch_off(p, op));
    NrPv tid = {NR_PK_I32, p->tid, 0};
    nr_ptx_bar(p);
    /* zero: thread t clears words t, t + threads, ... */
    NrPv zero = nr_ptx_inreg(p, nr_pv_i32(0));
    NrPv mine = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, tid, nr_pv_i32(2)));
    for (int64_t w = 0; w < bins; w += threads) {
        NrPv pred = w + threads <= bins ? nr_pv_pred(true) : nr_pb_setp(p, NR_PC_LT, NR_PT_U32, tid, nr_pv_i32(bins - w));
        NrPv addr = w ? nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, mine, nr_pv_i32(4 * w)) : mine;
        nr_ptx_st_shared(p, NR_DT_I32, addr, zero, pred);
    }
    nr_ptx_bar(p);
    const NrPtxLay *X = &p->lays[xv->lay];
    NrPv owner = {NR_PK_P, nr_ptx_owner(p, xv->lay), 0};
    for (int k = 0; k < 1 << X->nreg; k++) {
        if (X->dup[k]) continue;
        NrPv v;
        NrPv ok = nr_pb_pand(p, in_range(p, xv->e[k], bins, &v), owner);
        if (mv) ok = nr_pb_pand(p, ok, mv->e[k]);
        if (nr_pv_is_imm(ok) && !ok.c) continue;
        v = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, v, nr_pv_i32(bins - 1));
        NrPv addr = nr_ptx_inreg(p, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, v, nr_pv_i32(2))));
        if (nr_pv_is_imm(ok)) {
            nr_ptx_emit(p, "red.shared.add.u32 [%s], 1;", nr_ptx_reg(p, addr.r));
        } else {
            ok = nr_ptx_inreg(p, ok);
            nr_ptx_emit(p, "@%s red.shared.add.u32 [%s], 1;", nr_ptx_reg(p, ok.r), nr_ptx_reg(p, addr.r));
        }
    }
    nr_ptx_bar(p);
    int nout = 1 << p->lays[rl].nreg;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)nout);
    for (int k = 0; k < nout; k++) {
        NrPv flat = nr_ptx_flat(p, rl, k);
        NrPv addr = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, flat, nr_pv_i32(2)));
        out[k] = nr_ptx_ld_shared(p, NR_DT_I32, addr);
    }
    nr_ptx_set(p, r, out, nout);
    return true;
}

/* --- scratch ----------------------------------------------------------------------------------------- */
int64_t nr_ptx_gather_scratch(NrModule *m, NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    if (o->opc == NR_OP_GATHER) {
        const NrType *t = nr_type(m, nr_val_type(f, o->opnds[0]));
        NrDtype dt = t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
        return nr_ptx_smem_padded_bytes(nr_type_numel(m, nr_val_type(f, o->opnds[0])), nr_ptx_smem_es(dt));
    }
    if (o->opc == NR_OP_HISTOGRAM) return (nr_type_numel(m, nr_val_type(f, o->results[0])) * 4 + 15) & ~(int64_t)15;
    return 0;
}
