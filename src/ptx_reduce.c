/* ptx_reduce.c - data movement between threads: layout conversions,
 * reductions, argreduce and the FMA fallback of dot.
 *
 * Conversions.  Layout dst gets element x from layout src's element f(x)
 * (f: a linear map of flats, the identity for convert_layout, a bit
 * selection for broadcast and trans).  Three ways, cheapest first:
 *   alias    every thread already holds its dst elements: the registers are
 *            reused, no instruction (f maps dst's lane and warp bases onto
 *            src's and dst's register bases into src's register span)
 *   shuffle  the elements are in the same warp: shfl.sync.idx from a lane
 *            that is a linear function of the lane id, register by register
 *   smem     every owner stores its elements at their (padded) row-major
 *            index, bar.sync, every thread loads its dst elements
 *
 * Reductions run in three stages: within a thread (registers whose
 * elements differ only along the axis, in four interleaved chains), across
 * lanes (shfl.sync.bfly over the lane bits that step along the axis), and
 * across warps (partials through shared memory, combined in warp order by
 * every thread that needs the result).  The result lands in the result's layout directly when it
 * is the natural slice of the operand's, else through shared memory.  A
 * layout whose bases mix the axis with other dimensions takes a general
 * path: the whole block through shared memory, each result combined by the
 * threads that hold it.  Float sums combine in another order than the
 * interpreter's tree, as docs/interpreter.md allows.
 *
 * Scratch shared memory: every use starts with bar.sync (earlier readers of
 * the same bytes are done) and a bar.sync separates the writes from the
 * reads.  nr_ptx_op_scratch gives the bytes; ops take them at their
 * smem_offset attribute (the allocation pass) or at the emitter's own
 * scratch area. */
#include "ptx.h"

#include <string.h>

/* Interleaved chains of a reduction within a thread (reduce_emit). */
enum { RED_CHAINS = 4 };

/* --- F2 linear algebra ------------------------------------------------------------------------------- */
/* Vectors with labels: solve() expresses a target as an XOR of added
 * vectors and returns the XOR of their labels. */
typedef struct F2 {
    uint32_t piv[32];
    uint64_t lab[32];
} F2;

/* (Both walk the set bits from the top: piv[b] has leading bit b, so
 * XORing it clears bit b and touches only lower bits.) */
static void f2_add(F2 *s, uint32_t v, uint64_t label) {
    while (v) {
        int b = 31 - __builtin_clz(v);
        if (!s->piv[b]) {
            s->piv[b] = v;
            s->lab[b] = label;
            return;
        }
        v ^= s->piv[b];
        label ^= s->lab[b];
    }
}

static bool f2_solve(const F2 *s, uint32_t t, uint64_t *label) {
    uint64_t l = 0;
    while (t) {
        int b = 31 - __builtin_clz(t);
        if (!s->piv[b]) return false;
        t ^= s->piv[b];
        l ^= s->lab[b];
    }
    *label = l;
    return true;
}

enum { LANE_LAB = 32 }; /* labels: register bit i -> 1 << i, lane bit i -> 1 << (32 + i) */

static int64_t numel_of(const NrPtxLay *L) { return (int64_t)1 << L->bits; }

/* --- shared memory ------------------------------------------------------------------------------------- */
int nr_ptx_smem_es(NrDtype dt) { return dt == NR_DT_I1 ? 1 : nr_dtype_info[dt].bytes; }

/* One padding element per 32: strided accesses spread over the banks. */
int64_t nr_ptx_smem_padded_bytes(int64_t numel, int es) {
    int64_t n = numel + (numel >> 5) + 1;
    return (n * es + 15) & ~(int64_t)15;
}

NrPv nr_ptx_smem_index_addr(NrPtx *p, int64_t base, NrPv flat, int es) {
    NrPv idx = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, flat, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, flat, nr_pv_i32(5)));
    NrPv off = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, idx, nr_pv_i32(es));
    return nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, nr_ptx_smem_addr(p, base), off);
}

/* Memory type suffix of an element in shared memory. */
static const char *smem_type(NrDtype dt, bool load) {
    switch (dt) {
    case NR_DT_I1:
    case NR_DT_U8:
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: return load ? ".u8" : ".b8";
    case NR_DT_I8: return load ? ".s8" : ".b8";
    case NR_DT_I16: return load ? ".s16" : ".b16";
    case NR_DT_U16: return load ? ".u16" : ".b16";
    case NR_DT_F16:
    case NR_DT_BF16: return ".b16";
    case NR_DT_I64:
    case NR_DT_U64:
    case NR_DT_F64: return ".b64";
    default: return ".b32";
    }
}

static const char *guard(NrPtx *p, NrPv pred) {
    if (pred.r == 0) return "";
    char *s = p->names[p->name_next];
    p->name_next = (p->name_next + 1) % (int)NR_COUNTOF(p->names);
    snprintf(s, sizeof p->names[0], "@%s ", nr_ptx_reg(p, pred.r));
    return s;
}

void nr_ptx_st_shared(NrPtx *p, NrDtype dt, NrPv addr, NrPv v, NrPv pred) {
    if (pred.r == 0 && !pred.c) return;
    if (dt == NR_DT_I1) v = nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
    v = nr_ptx_inreg(p, v);
    nr_ptx_emit(p, "%sst.shared%s %s, %s;", guard(p, pred), smem_type(dt, false), nr_ptx_addr(p, addr, 0),
                nr_ptx_reg(p, v.r));
}

NrPv nr_ptx_ld_shared(NrPtx *p, NrDtype dt, NrPv addr) {
    NrPk k = dt == NR_DT_I1 ? NR_PK_I32 : nr_ptx_kind(dt);
    NrPv d = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
    nr_ptx_emit(p, "ld.shared%s %s, %s;", smem_type(dt, true), nr_ptx_reg(p, d.r), nr_ptx_addr(p, addr, 0));
    if (dt == NR_DT_I1) return nr_pb_setp(p, NR_PC_NE, NR_PT_B32, d, nr_pv_i32(0));
    return d;
}

/* --- shuffles ------------------------------------------------------------------------------------------ */
static NrPv shfl32(NrPtx *p, const char *mode, NrPv v, NrPv b) {
    NrPv d = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    v = nr_ptx_inreg(p, v);
    nr_ptx_emit(p, "shfl.sync.%s.b32 %s, %s, %s, 31, -1;", mode, nr_ptx_reg(p, d.r), nr_ptx_reg(p, v.r),
                nr_ptx_opnd(p, b));
    return d;
}

/* v from lane b (mode "idx") or lane ^ b ("bfly"), any kind. */
static NrPv shfl(NrPtx *p, const char *mode, NrPv v, NrPv b) {
    if (v.r == 0) return v; /* the same immediate in every lane */
    switch (v.k) {
    case NR_PK_I32:
    case NR_PK_F32: return nr_pb_bits(p, (NrPk)v.k, shfl32(p, mode, v, b));
    case NR_PK_I64:
    case NR_PK_F64: {
        NrPv lo, hi;
        nr_pb_unpack(p, nr_pb_bits(p, NR_PK_I64, v), &lo, &hi);
        return nr_pb_bits(p, (NrPk)v.k, nr_pb_pack(p, shfl32(p, mode, lo, b), shfl32(p, mode, hi, b)));
    }
    case NR_PK_H: {
        NrPv w = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, v);
        return nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, shfl32(p, mode, w, b));
    }
    default: {
        NrPv w = nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
        return nr_pb_setp(p, NR_PC_NE, NR_PT_B32, shfl32(p, mode, w, b), nr_pv_i32(0));
    }
    }
}

/* XOR over the set bits i of x (a .b32 value) of vec[i]. */
static NrPv xor_bits(NrPtx *p, NrPv x, const uint32_t *vec, int n) {
    NrPv acc = nr_pv_i32(0);
    for (int i = 0; i < n; i++) {
        if (!vec[i]) continue;
        NrPv bit = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, x, nr_pv_i32(i)), nr_pv_i32(1));
        acc = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, acc, nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, bit, nr_pv_i32(vec[i])));
    }
    return acc;
}

static NrPv lane_v(NrPtx *p) { return (NrPv){NR_PK_I32, p->lane, 0}; }
static NrPv warp_v(NrPtx *p) { return (NrPv){NR_PK_I32, p->warp, 0}; }

/* f applied to a layout's thread part: XOR over lane and warp bits of the
 * images of their bases. */
static NrPv mapped_tflat(NrPtx *p, const NrPtxLay *L, const NrFlatMap *f) {
    uint32_t lb[NR_LL_MAX_BITS], wb[NR_LL_MAX_BITS];
    for (int i = 0; i < L->nlane; i++) lb[i] = nr_flatmap_apply(f, L->laneb[i]);
    for (int i = 0; i < L->nwarp; i++) wb[i] = nr_flatmap_apply(f, L->warpb[i]);
    return nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, xor_bits(p, lane_v(p), lb, L->nlane), xor_bits(p, warp_v(p), wb, L->nwarp));
}

/* --- conversion plans ----------------------------------------------------------------------------------- */
typedef struct Plan {
    NrConvKind kind;
    uint64_t regsol[NR_LL_MAX_BITS]; /* per dst register bit: src register bits (and lane bits for shuffles) */
    uint32_t lanemask[NR_LL_MAX_BITS]; /* shuffles: per dst lane bit, the src lane bits */
} Plan;

static void plan_of(const NrPtxLay *S, const NrPtxLay *D, const NrFlatMap *f, int es, Plan *pl, int64_t *scratch) {
    memset(pl, 0, sizeof *pl);
    *scratch = 0;
    bool warps = S->nwarp == D->nwarp && S->nlane == D->nlane;
    for (int i = 0; warps && i < D->nwarp; i++) warps = nr_flatmap_apply(f, D->warpb[i]) == S->warpb[i];
    F2 regs, lanes, both;
    memset(&regs, 0, sizeof regs);
    memset(&lanes, 0, sizeof lanes);
    memset(&both, 0, sizeof both);
    for (int i = 0; i < S->nreg; i++) {
        f2_add(&regs, S->regb[i], UINT64_C(1) << i);
        f2_add(&both, S->regb[i], UINT64_C(1) << i);
    }
    for (int i = 0; i < S->nlane; i++) {
        f2_add(&lanes, S->laneb[i], UINT64_C(1) << (LANE_LAB + i));
        f2_add(&both, S->laneb[i], UINT64_C(1) << (LANE_LAB + i));
    }
    if (warps) {
        bool alias = true;
        for (int i = 0; alias && i < D->nlane; i++) alias = nr_flatmap_apply(f, D->laneb[i]) == S->laneb[i];
        for (int j = 0; alias && j < D->nreg; j++) alias = f2_solve(&regs, nr_flatmap_apply(f, D->regb[j]), &pl->regsol[j]);
        if (alias) {
            pl->kind = NR_CONV_ALIAS;
            return;
        }
        bool sh = true;
        for (int i = 0; sh && i < D->nlane; i++) {
            uint64_t l = 0;
            sh = f2_solve(&lanes, nr_flatmap_apply(f, D->laneb[i]), &l);
            pl->lanemask[i] = (uint32_t)(l >> LANE_LAB);
        }
        for (int j = 0; sh && j < D->nreg; j++) sh = f2_solve(&both, nr_flatmap_apply(f, D->regb[j]), &pl->regsol[j]);
        if (sh) {
            pl->kind = NR_CONV_SHUFFLE;
            return;
        }
    }
    pl->kind = NR_CONV_SMEM;
    *scratch = nr_ptx_smem_padded_bytes(numel_of(S), es);
}

NrConvKind nr_ptx_conv_plan(const NrPtxLay *src, const NrPtxLay *dst, const NrFlatMap *f, int es, int64_t *scratch) {
    Plan pl;
    plan_of(src, dst, f, es, &pl, scratch);
    return pl.kind;
}

/* The src register bits and lane constant of dst register r. */
static uint64_t solve_reg(const Plan *pl, const NrPtxLay *D, int r) {
    uint64_t s = 0;
    for (int j = 0; j < D->nreg; j++)
        if (r >> j & 1) s ^= pl->regsol[j];
    return s;
}

NrPv *nr_ptx_convert(NrPtx *p, const NrPv *src, int sl, int dl, const NrFlatMap *f, NrDtype dt, int64_t off) {
    const NrPtxLay *S = &p->lays[sl], *D = &p->lays[dl];
    int n = 1 << D->nreg;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    int es = nr_ptx_smem_es(dt);
    Plan pl;
    int64_t scratch;
    plan_of(S, D, f, es, &pl, &scratch);
    if (pl.kind == NR_CONV_ALIAS) {
        for (int r = 0; r < n; r++) out[r] = src[solve_reg(&pl, D, r) & 0xfffff];
        return out;
    }
    if (pl.kind == NR_CONV_SHUFFLE) {
        NrPv base = xor_bits(p, lane_v(p), pl.lanemask, D->nlane);
        for (int r = 0; r < n; r++) {
            uint64_t s = solve_reg(&pl, D, r);
            NrPv from = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, base, nr_pv_i32((uint32_t)(s >> LANE_LAB)));
            out[r] = shfl(p, "idx", src[s & 0xfffff], from);
        }
        return out;
    }
    /* Through shared memory. */
    nr_ptx_bar_scratch(p);
    NrPv owner = {NR_PK_P, nr_ptx_owner(p, sl), 0};
    for (int r = 0; r < 1 << S->nreg; r++) {
        if (S->dup[r]) continue;
        NrPv addr = nr_ptx_smem_index_addr(p, off, nr_ptx_flat(p, sl, r), es);
        nr_ptx_st_shared(p, dt, addr, src[r], owner);
    }
    nr_ptx_bar(p);
    NrPv t = mapped_tflat(p, D, f);
    for (int r = 0; r < n; r++) {
        NrPv flat = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, t, nr_pv_i32(nr_flatmap_apply(f, D->regflat[r])));
        out[r] = nr_ptx_ld_shared(p, dt, nr_ptx_smem_index_addr(p, off, flat, es));
    }
    return out;
}

/* --- reductions ------------------------------------------------------------------------------------------ */
typedef struct Red {
    int off, w;              /* the axis field of the operand's flats: bits [off, off + w) */
    uint32_t amask;
    bool generic;            /* bases mix the axis with other dimensions */
    uint32_t lane_ax, warp_ax; /* lane / warp bits stepping along the axis */
    int nwax;
    bool direct;             /* the result layout is the natural slice: no shared memory */
    int64_t numel_out;
} Red;

static uint32_t compress(const Red *R, uint32_t x) {
    return (x & ((1u << R->off) - 1)) | ((x >> (R->off + R->w)) << R->off);
}

static NrPv compress_rt(NrPtx *p, const Red *R, NrPv x) {
    NrPv lo = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x, nr_pv_i32((1u << R->off) - 1));
    NrPv hi = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, x, nr_pv_i32(R->off + R->w)),
                        nr_pv_i32(R->off));
    return nr_pb_bin(p, NR_PO_OR, NR_PT_B32, lo, hi);
}

static NrPv expand_rt(NrPtx *p, const Red *R, NrPv o) {
    NrPv lo = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, o, nr_pv_i32((1u << R->off) - 1));
    NrPv hi = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, o, nr_pv_i32(R->off)),
                        nr_pv_i32(R->off + R->w));
    return nr_pb_bin(p, NR_PO_OR, NR_PT_B32, lo, hi);
}

/* S: the operand's layout; D: the result's (NULL for a scalar result). */
static void red_analyze(const NrPtxLay *S, const NrPtxLay *D, int axis, Red *R) {
    memset(R, 0, sizeof *R);
    R->off = S->off[axis];
    int w = 0;
    while ((1 << w) < S->shape[axis]) w++;
    R->w = w;
    R->amask = ((1u << w) - 1) << R->off;
    R->numel_out = ((int64_t)1 << S->bits) >> w;
    const uint32_t *sets[3] = {S->regb, S->laneb, S->warpb};
    int counts[3] = {S->nreg, S->nlane, S->nwarp};
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < counts[s]; i++) {
            uint32_t b = sets[s][i];
            if ((b & R->amask) && (b & ~R->amask)) R->generic = true;
            if (s == 1 && b && (S->rep_lane >> i & 1)) R->generic = true;
            if (s == 2 && b && (S->rep_warp >> i & 1)) R->generic = true;
            if (s == 1 && b && !(b & ~R->amask)) R->lane_ax |= 1u << i;
            if (s == 2 && b && !(b & ~R->amask)) R->warp_ax |= 1u << i;
        }
    R->nwax = __builtin_popcount(R->warp_ax);
    if (R->generic || R->warp_ax) return;
    if (!D) {
        R->direct = true;
        return;
    }
    bool ok = D->nlane == S->nlane && D->nwarp == S->nwarp && D->bits == S->bits - w;
    for (int i = 0; ok && i < S->nlane; i++) ok = D->laneb[i] == compress(R, S->laneb[i] & ~R->amask);
    for (int i = 0; ok && i < S->nwarp; i++) ok = D->warpb[i] == compress(R, S->warpb[i] & ~R->amask);
    F2 keys;
    memset(&keys, 0, sizeof keys);
    for (int i = 0; i < S->nreg; i++)
        if (!(S->regb[i] & R->amask)) f2_add(&keys, compress(R, S->regb[i]), UINT64_C(1) << i);
    for (int j = 0; ok && j < D->nreg; j++) {
        uint64_t l = 0;
        ok = f2_solve(&keys, D->regb[j], &l);
    }
    R->direct = ok;
}

/* Accumulator dtype and combine opcode of a reduction of dt by kind. */
static NrDtype acc_dt(NrDtype dt) {
    if (dt == NR_DT_I1) return NR_DT_U32;
    if (dt == NR_DT_F16 || dt == NR_DT_BF16 || nr_dt_is_fp8(dt)) return NR_DT_F32;
    return dt;
}

static NrOpcode combine_op(const char *kind, NrDtype dt) {
    bool b = dt == NR_DT_I1; /* i1 sums wrap modulo 2 */
    if (strcmp(kind, "add") == 0) return b ? NR_OP_XOR : NR_OP_ADD;
    if (strcmp(kind, "max") == 0) return b ? NR_OP_OR : NR_OP_MAX;
    if (strcmp(kind, "min") == 0) return b ? NR_OP_AND : NR_OP_MIN;
    if (strcmp(kind, "xor") == 0) return NR_OP_XOR;
    if (strcmp(kind, "and") == 0) return NR_OP_AND;
    if (strcmp(kind, "or") == 0) return NR_OP_OR;
    return NR_OP_INVALID;
}

static NrPv to_acc(NrPtx *p, NrDtype dt, NrPv v) {
    if (dt == NR_DT_I1) return nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
    if (acc_dt(dt) == NR_DT_F32 && dt != NR_DT_F32) return nr_pe_to_f32(p, dt, v);
    return v;
}

static NrPv from_acc(NrPtx *p, NrDtype dt, NrPv v) {
    if (dt == NR_DT_I1) return nr_pb_setp(p, NR_PC_NE, NR_PT_B32, v, nr_pv_i32(0));
    if (acc_dt(dt) == NR_DT_F32 && dt != NR_DT_F32) return nr_pe_from_f32(p, dt, v);
    return v;
}

/* The reduction being emitted: plain or arg (value, index) pairs. */
typedef struct Comb {
    bool arg, is_max, nanall;
    NrOpcode opc;
    NrDtype adt;             /* accumulator dtype */
} Comb;

/* (v1, i1) <- the better of (v1, i1) and (v2, i2): the larger (max) value,
 * ties to the smaller index; NaN as the `nan` attribute says ("none":
 * skipped, "all": the first NaN wins). */
static void arg_combine(NrPtx *p, const Comb *c, NrPv *v1, NrPv *i1, NrPv v2, NrPv i2) {
    NrPv lt_i = nr_pb_setp(p, NR_PC_LT, NR_PT_S32, i2, *i1);
    NrPv better, tie;
    if (nr_dt_is_float(c->adt)) {
        NrPt t = c->adt == NR_DT_F64 ? NR_PT_F64 : NR_PT_F32;
        NrPv n1 = nr_pb_setp(p, NR_PC_NAN, t, *v1, *v1), n2 = nr_pb_setp(p, NR_PC_NAN, t, v2, v2);
        better = nr_pb_setp(p, c->is_max ? NR_PC_GT : NR_PC_LT, t, v2, *v1);
        NrPv nanwin = c->nanall ? nr_pb_pand(p, n2, nr_pb_pnot(p, n1)) : nr_pb_pand(p, n1, nr_pb_pnot(p, n2));
        better = nr_pb_por(p, better, nanwin);
        tie = nr_pb_por(p, nr_pb_setp(p, NR_PC_EQ, t, v2, *v1), nr_pb_pand(p, n1, n2));
    } else {
        NrPt t = nr_dt_bits(c->adt) == 64 ? (nr_dt_is_signed(c->adt) ? NR_PT_S64 : NR_PT_U64)
                                          : (nr_dt_is_signed(c->adt) ? NR_PT_S32 : NR_PT_U32);
        better = nr_pb_setp(p, c->is_max ? NR_PC_GT : NR_PC_LT, t, v2, *v1);
        tie = nr_pb_setp(p, NR_PC_EQ, t, v2, *v1);
    }
    NrPv take = nr_pb_por(p, better, nr_pb_pand(p, tie, lt_i));
    *v1 = nr_pb_selp(p, take, v2, *v1);
    *i1 = nr_pb_selp(p, take, i2, *i1);
}

static void combine(NrPtx *p, const Comb *c, NrPv *v1, NrPv *i1, NrPv v2, NrPv i2) {
    if (c->arg) arg_combine(p, c, v1, i1, v2, i2);
    else *v1 = nr_pe_binary(p, c->opc, c->adt, c->nanall, *v1, v2);
}

/* Axis coordinate of register r's element (i32). */
/* Combines (v, i) with the value (and index) of lane ^ bit. */
static void combine_lane(NrPtx *p, const Comb *c, NrPv *v, NrPv *i, int bit) {
    NrPv v2 = shfl(p, "bfly", *v, nr_pv_i32(bit));
    NrPv i2 = c->arg ? shfl(p, "bfly", *i, nr_pv_i32(bit)) : nr_pv_i32(0);
    combine(p, c, v, i, v2, i2);
}

static NrPv axis_index(NrPtx *p, int sl, const Red *R, int r) {
    NrPv f = nr_ptx_flat(p, sl, r);
    return nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, f, nr_pv_i32(R->off)),
                     nr_pv_i32((1u << R->w) - 1));
}

/* Scratch bytes of a reduction (per stored element: the accumulator, plus
 * an i32 index for argreduce). */
static int64_t red_scratch(const Red *R, const NrPtxLay *S, NrDtype dt, bool arg) {
    int es = nr_ptx_smem_es(acc_dt(dt)), n = 1;
    int64_t numel;
    if (R->generic) numel = numel_of(S);
    else if (R->direct) return 0;
    else numel = R->numel_out << R->nwax;
    (void)n;
    int64_t b = nr_ptx_smem_padded_bytes(numel, es);
    if (arg) b += nr_ptx_smem_padded_bytes(numel, 4);
    return b;
}

/* Results out[0..nout) (and indices) of layout dl (or a scalar, dl < 0). */
static void reduce_emit(NrPtx *p, NrOpId op, const Comb *c, NrDtype dt, const NrPv *src, int sl, int dl, int axis,
                        NrPv *out, NrPv *outi) {
    const NrPtxLay *S = &p->lays[sl], *D = dl >= 0 ? &p->lays[dl] : NULL;
    Red R;
    red_analyze(S, D, axis, &R);
    int nout = D ? 1 << D->nreg : 1;
    int es = nr_ptx_smem_es(c->adt);
    int64_t off = nr_ptx_scratch_off(p, op);
    int64_t ioff = 0;
    if (R.generic || !R.direct) ioff = off + nr_ptx_smem_padded_bytes(R.generic ? numel_of(S) : R.numel_out << R.nwax, es);
    NrPv dtflat = D ? (NrPv){NR_PK_I32, nr_ptx_tflat(p, dl), 0} : nr_pv_i32(0);
    if (R.generic) {
        /* Everything through shared memory; each result combined in axis order. */
        nr_ptx_bar_scratch(p);
        NrPv owner = {NR_PK_P, nr_ptx_owner(p, sl), 0};
        for (int r = 0; r < 1 << S->nreg; r++) {
            if (S->dup[r]) continue;
            NrPv flat = nr_ptx_flat(p, sl, r);
            nr_ptx_st_shared(p, c->adt, nr_ptx_smem_index_addr(p, off, flat, es), to_acc(p, dt, src[r]), owner);
        }
        nr_ptx_bar(p);
        for (int r = 0; r < nout; r++) {
            NrPv o = D ? nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, dtflat, nr_pv_i32(D->regflat[r])) : nr_pv_i32(0);
            NrPv key = expand_rt(p, &R, o), v = {0}, idx = nr_pv_i32(0);
            for (int j = 0; j < 1 << R.w; j++) {
                NrPv flat = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, key, nr_pv_i32((uint32_t)j << R.off));
                NrPv x = nr_ptx_ld_shared(p, c->adt, nr_ptx_smem_index_addr(p, off, flat, es));
                if (j == 0) v = x;
                else combine(p, c, &v, &idx, x, nr_pv_i32(j));
            }
            out[r] = v;
            if (outi) outi[r] = idx;
        }
        return;
    }
    /* 1. Within the thread: one group per distinct non-axis key, its
     * registers combined in RED_CHAINS interleaved chains (register j into
     * chain j % RED_CHAINS), then the chains' results pairwise: about
     * n / RED_CHAINS + 2 dependent steps where one chain would take n (what
     * a long softmax row waits for), for RED_CHAINS - 1 more live values. */
    int R_ = 1 << S->nreg, ng = 0;
    uint32_t *key = nr_alloc(p->a, sizeof(uint32_t) * (size_t)R_);
    NrPv *gv = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_), *gi = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_);
    int *grp = nr_alloc(p->a, sizeof(int) * (size_t)R_);
    NrPv *ev = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_), *ei = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_);
    for (int r = 0; r < R_; r++) {
        grp[r] = -1;
        if (S->dup[r]) continue;
        uint32_t k = S->regflat[r] & ~R.amask;
        int g = 0;
        while (g < ng && key[g] != k) g++;
        if (g == ng) key[ng++] = k;
        grp[r] = g;
        ev[r] = to_acc(p, dt, src[r]);
        ei[r] = c->arg ? axis_index(p, sl, &R, r) : nr_pv_i32(0);
    }
    NrPv *tv = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_), *ti = nr_alloc(p->a, sizeof(NrPv) * (size_t)R_);
    for (int g = 0; g < ng; g++) {
        int n = 0, m = 0;
        for (int r = 0; r < R_; r++) {
            if (grp[r] != g) continue;
            if (n < RED_CHAINS) {
                tv[n] = ev[r], ti[n++] = ei[r];
                continue;
            }
            int j = m++ % RED_CHAINS;
            combine(p, c, &tv[j], &ti[j], ev[r], ei[r]);
        }
        while (n > 1) {
            for (int j = 0; j < n / 2; j++) {
                tv[j] = tv[2 * j], ti[j] = ti[2 * j];
                combine(p, c, &tv[j], &ti[j], tv[2 * j + 1], ti[2 * j + 1]);
            }
            if (n % 2) tv[n / 2] = tv[n - 1], ti[n / 2] = ti[n - 1];
            n = (n + 1) / 2;
        }
        gv[g] = tv[0];
        gi[g] = ti[0];
    }
    /* 2. Across the lanes along the axis. */
    for (int i = 0; i < S->nlane; i++) {
        if (!(R.lane_ax >> i & 1)) continue;
        for (int g = 0; g < ng; g++) combine_lane(p, c, &gv[g], &gi[g], 1 << i);
    }
    if (R.direct) {
        for (int r = 0; r < nout; r++) {
            int g = 0;
            if (D)
                while (g < ng && compress(&R, key[g]) != D->regflat[r]) g++;
            if (g == ng) NR_ICE("reduction result register without a group");
            out[r] = gv[g];
            if (outi) outi[r] = gi[g];
        }
        return;
    }
    /* 3. Across warps: partials at [warp index along the axis][result flat]. */
    nr_ptx_bar_scratch(p);
    uint32_t wsel[NR_LL_MAX_BITS];
    int k = 0;
    for (int i = 0; i < S->nwarp; i++) wsel[i] = (R.warp_ax >> i & 1) ? 1u << k++ : 0;
    NrPv widx = xor_bits(p, warp_v(p), wsel, S->nwarp);
    NrPv stflat = {NR_PK_I32, nr_ptx_tflat(p, sl), 0};
    NrPv tkey = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, stflat, nr_pv_i32(~R.amask));
    NrPv wbase = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, widx, nr_pv_i32((uint32_t)R.numel_out));
    for (int g = 0; g < ng; g++) {
        NrPv o = compress_rt(p, &R, nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, tkey, nr_pv_i32(key[g])));
        NrPv slot = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, wbase, o);
        nr_ptx_st_shared(p, c->adt, nr_ptx_smem_index_addr(p, off, slot, es), gv[g], nr_pv_pred(true));
        if (c->arg) nr_ptx_st_shared(p, NR_DT_I32, nr_ptx_smem_index_addr(p, ioff, slot, 4), gi[g], nr_pv_pred(true));
    }
    nr_ptx_bar(p);
    bool same = nout == 1 && R.nwax >= 2 && R.nwax <= 5;
    for (int i = 0; same && D && i < R.nwax; i++) same = i >= D->nlane || !D->laneb[i];
    if (same) {
        /* One result per thread, the same in the W lanes of each group of
         * lanes 0..W-1 (a scalar, or replicated there): lane l reads the
         * partial of warp l mod W for its result, and a butterfly over
         * those lanes combines the W partials, so each thread holds one
         * partial instead of W. */
        NrPv o = D ? nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, dtflat, nr_pv_i32(D->regflat[0])) : nr_pv_i32(0);
        NrPv lw = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, lane_v(p), nr_pv_i32((1u << R.nwax) - 1));
        NrPv slot = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, o,
                              nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, lw, nr_pv_i32((uint32_t)R.numel_out)));
        NrPv v = nr_ptx_ld_shared(p, c->adt, nr_ptx_smem_index_addr(p, off, slot, es));
        NrPv idx = c->arg ? nr_ptx_ld_shared(p, NR_DT_I32, nr_ptx_smem_index_addr(p, ioff, slot, 4)) : nr_pv_i32(0);
        for (int i = 0; i < R.nwax; i++) combine_lane(p, c, &v, &idx, 1 << i);
        out[0] = v;
        if (outi) outi[0] = idx;
        return;
    }
    for (int r = 0; r < nout; r++) {
        NrPv o = D ? nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, dtflat, nr_pv_i32(D->regflat[r])) : nr_pv_i32(0);
        NrPv v = {0}, idx = nr_pv_i32(0);
        for (int w = 0; w < 1 << R.nwax; w++) {
            NrPv slot = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, o, nr_pv_i32((uint32_t)(w * R.numel_out)));
            NrPv x = nr_ptx_ld_shared(p, c->adt, nr_ptx_smem_index_addr(p, off, slot, es));
            NrPv xi = c->arg ? nr_ptx_ld_shared(p, NR_DT_I32, nr_ptx_smem_index_addr(p, ioff, slot, 4)) : idx;
            if (w == 0) {
                v = x;
                idx = xi;
            } else {
                combine(p, c, &v, &idx, x, xi);
            }
        }
        out[r] = v;
        if (outi) outi[r] = idx;
    }
}

static NrDtype vdt(NrPtx *p, NrValId v) {
    const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
    return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
}

static bool reduce_common(NrPtx *p, NrOpId op, bool arg) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0];
    const NrType *at = nr_type(p->m, nr_val_type(p->f, a));
    int64_t axis = nr_op_int(p->f, op, NR_A_AXIS, 0);
    if (axis < 0) axis += at->rank;
    NrPtxVal *av = nr_ptx_val(p, a);
    if (av->lay < 0 || axis < 0 || axis >= at->rank) {
        nr_ptx_error(p, "malformed '%s'", nr_op_info[o->opc].name);
        return false;
    }
    NrDtype dt = vdt(p, a);
    Comb c;
    memset(&c, 0, sizeof c);
    c.arg = arg;
    c.nanall = strcmp(nr_op_str(p->f, op, NR_A_NAN, "none"), "all") == 0;
    const char *kind = nr_op_str(p->f, op, NR_A_KIND, arg ? "max" : "");
    c.is_max = strcmp(kind, "max") == 0;
    c.adt = acc_dt(dt);
    if (!arg) {
        c.opc = combine_op(kind, dt);
        if (c.opc == NR_OP_INVALID || (nr_dt_is_float(dt) && c.opc != NR_OP_ADD && c.opc != NR_OP_MAX &&
                                       c.opc != NR_OP_MIN)) {
            nr_ptx_error(p, "reduce kind '%s' is not defined on %s", kind, nr_dtype_info[dt].ir);
            return false;
        }
    } else if (!c.is_max && strcmp(kind, "min") != 0) {
        nr_ptx_error(p, "argreduce kind must be max or min, got '%s'", kind);
        return false;
    }
    if (arg && dt == NR_DT_I1) c.adt = NR_DT_U32;
    int dl = nr_ptx_lay(p, nr_val_type(p->f, o->results[0]));
    if (dl == -2) return false;
    int nout = dl >= 0 ? 1 << p->lays[dl].nreg : 1;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)nout);
    NrPv *outi = arg ? nr_alloc(p->a, sizeof(NrPv) * (size_t)nout) : NULL;
    reduce_emit(p, op, &c, dt, av->e, av->lay, dl, (int)axis, out, outi);
    for (int r = 0; r < nout; r++) out[r] = from_acc(p, dt, out[r]);
    nr_ptx_set(p, o->results[0], out, nout);
    if (arg) {
        int il = nr_ptx_lay(p, nr_val_type(p->f, o->results[1]));
        if (il != dl) {
            nr_ptx_error(p, "argreduce results in different layouts");
            return false;
        }
        nr_ptx_set(p, o->results[1], outi, nout);
    }
    return true;
}

bool nr_ptx_op_reduce(NrPtx *p, NrOpId op) { return reduce_common(p, op, false); }
bool nr_ptx_op_argreduce(NrPtx *p, NrOpId op) { return reduce_common(p, op, true); }

/* --- dot on FMA units ---------------------------------------------------------------------------------- */
/* Layouts that hold, for each (batch, m) of the result layout C, every k of
 * A in registers (and for each (batch, n) every k of B): the result
 * layout's bases with n (resp. m) dropped, plus a register basis per k bit.
 * ka: the operand's k dimension; drop: C's dimension to drop. */
static bool dot_operand_lay(const NrPtxLay *C, const NrType *t, int kdim, int drop, NrArena *a, NrPtxLay *L) {
    memset(L, 0, sizeof *L);
    L->layout = -1;
    L->rank = t->rank;
    int bits = 0;
    for (int d = t->rank - 1; d >= 0; d--) {
        L->shape[d] = t->shape[d];
        L->off[d] = bits;
        int w = 0;
        while ((1 << w) < t->shape[d]) w++;
        bits += w;
    }
    L->bits = bits;
    /* C's flat -> L's flat: every dimension but `drop` keeps its bits; C's
     * remaining two-dimensional position moves to L's non-k dimension. */
    NrFlatMap g;
    memset(&g, 0, sizeof g);
    g.bits = C->bits;
    for (int d = 0; d < C->rank; d++) {
        if (d == drop) continue;
        int ld = d;
        if (d >= C->rank - 2) ld = kdim == t->rank - 1 ? t->rank - 2 : t->rank - 1; /* m -> A's row, n -> B's column */
        for (int j = 0; (1 << j) < C->shape[d]; j++) g.img[C->off[d] + j] = 1u << (L->off[ld] + j);
    }
    for (int i = 0; i < C->nreg; i++) {
        uint32_t b = nr_flatmap_apply(&g, C->regb[i]);
        if (b && L->nreg < NR_LL_MAX_BITS) L->regb[L->nreg++] = b;
    }
    for (int j = 0; (1 << j) < t->shape[kdim]; j++) {
        if (L->nreg >= NR_LL_MAX_BITS) return false;
        L->regb[L->nreg++] = 1u << (L->off[kdim] + j);
    }
    L->nlane = C->nlane;
    L->nwarp = C->nwarp;
    for (int i = 0; i < C->nlane; i++) L->laneb[i] = nr_flatmap_apply(&g, C->laneb[i]);
    for (int i = 0; i < C->nwarp; i++) L->warpb[i] = nr_flatmap_apply(&g, C->warpb[i]);
    return nr_ptx_lay_finish(L, a);
}

/* The register of layout L (built with the k bases last) holding flat x's
 * element in this thread. */
static int reg_of(const NrPtxLay *L, uint32_t x) {
    F2 s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < L->nreg; i++) f2_add(&s, L->regb[i], UINT64_C(1) << i);
    uint64_t l;
    if (!f2_solve(&s, x, &l)) return -1;
    return (int)l;
}

/* C's flat -> A's (or B's) flat for one register's compile-time part. */
static uint32_t row_flat(const NrPtxLay *C, const NrPtxLay *L, int kdim, int drop, uint32_t cflat) {
    uint32_t x = 0;
    for (int d = 0; d < C->rank; d++) {
        if (d == drop) continue;
        int ld = d >= C->rank - 2 ? (kdim == L->rank - 1 ? L->rank - 2 : L->rank - 1) : d;
        uint32_t coord = cflat >> C->off[d] & (uint32_t)(C->shape[d] - 1);
        x |= coord << L->off[ld];
    }
    return x;
}

bool nr_ptx_op_dot(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0], b = o->opnds[1], c = o->opnds[2], r = o->results[0];
    const NrType *at = nr_type(p->m, nr_val_type(p->f, a)), *bt = nr_type(p->m, nr_val_type(p->f, b));
    int rank = at->rank;
    int cl = nr_ptx_lay(p, nr_val_type(p->f, r));
    NrPtxVal *av = nr_ptx_val(p, a), *bv = nr_ptx_val(p, b);
    if (cl < 0 || av->lay < 0 || bv->lay < 0 || (rank != 2 && rank != 3)) {
        nr_ptx_error(p, "malformed 'dot'");
        return false;
    }
    NrPtxLay A, B;
    if (!dot_operand_lay(&p->lays[cl], at, rank - 1, rank - 1, p->a, &A) ||
        !dot_operand_lay(&p->lays[cl], bt, rank - 2, rank - 2, p->a, &B)) {
        nr_ptx_error(p, "dot: the operands need too many registers per thread for the FMA path");
        return false;
    }
    *NR_PUSH(p->a, p->lays, p->nlays, p->caplays) = A;
    int al = p->nlays - 1;
    *NR_PUSH(p->a, p->lays, p->nlays, p->caplays) = B;
    int bl = p->nlays - 1;
    NrFlatMap id;
    memset(&id, 0, sizeof id);
    id.bits = 32;
    for (int i = 0; i < 32; i++) id.img[i] = 1u << i;
    int64_t off = nr_ptx_scratch_off(p, op);
    NrDtype adt = vdt(p, a), bdt = vdt(p, b), rdt = vdt(p, r);
    NrPv *ae = nr_ptx_convert(p, av->e, av->lay, al, &id, adt, off);
    NrPv *be = nr_ptx_convert(p, bv->e, bv->lay, bl, &id, bdt, off);
    const NrPtxLay *C = &p->lays[cl];
    NrPv *ce = nr_ptx_val(p, c)->e;
    int n = 1 << C->nreg, K = at->shape[rank - 1];
    bool ints = nr_dt_is_int(adt);
    bool tf32 = adt == NR_DT_F32 && strcmp(nr_op_str(p->f, op, NR_A_PRECISION, "tf32"), "tf32") == 0;
    /* Operands as f32 (tf32-rounded when asked), each converted once. */
    NrPv *af = nr_alloc(p->a, sizeof(NrPv) * (size_t)(1 << A.nreg)), *bf = nr_alloc(p->a, sizeof(NrPv) * (size_t)(1 << B.nreg));
    for (int i = 0; i < 1 << A.nreg; i++) {
        af[i] = ints ? ae[i] : nr_pe_to_f32(p, adt, ae[i]);
        if (tf32) af[i] = nr_pb_un(p, NR_PO_TF32, NR_PT_F32, af[i]);
    }
    for (int i = 0; i < 1 << B.nreg; i++) {
        bf[i] = ints ? be[i] : nr_pe_to_f32(p, bdt, be[i]);
        if (tf32) bf[i] = nr_pb_un(p, NR_PO_TF32, NR_PT_F32, bf[i]);
    }
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    for (int i = 0; i < n; i++) {
        uint32_t arow = row_flat(C, &A, rank - 1, rank - 1, C->regflat[i]);
        uint32_t bcol = row_flat(C, &B, rank - 2, rank - 2, C->regflat[i]);
        NrPv s = ints ? nr_pv_i32(0) : nr_pv_f32(0.0f);
        for (int k = 0; k < K; k++) {
            int ra = reg_of(&A, arow | (uint32_t)k << A.off[rank - 1]);
            int rb = reg_of(&B, bcol | (uint32_t)k << B.off[rank - 2]);
            if (ra < 0 || rb < 0) NR_ICE("dot operand element not in registers");
            if (ints) {
                NrPv prod = nr_pb_bin(p, NR_PO_MUL, NR_PT_S32, af[ra], bf[rb]);
                s = nr_pb_bin(p, NR_PO_ADD, NR_PT_S32, s, prod);
            } else {
                NrPv prod = nr_pb_bin(p, NR_PO_MUL, NR_PT_F32, af[ra], bf[rb]);
                s = nr_pb_bin(p, NR_PO_ADD, NR_PT_F32, s, prod);
            }
        }
        if (ints) {
            out[i] = nr_pe_binary(p, NR_OP_ADD, rdt, false, ce[i], nr_pe_cast(p, NR_DT_I32, rdt, false, s));
        } else if (rdt == NR_DT_F32) {
            out[i] = nr_pb_bin(p, NR_PO_ADD, NR_PT_F32, ce[i], s);
        } else { /* acc + s in double, one rounding to the result's dtype */
            NrPv x = nr_pe_cast(p, rdt, NR_DT_F64, false, ce[i]);
            NrPv y = nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, s);
            out[i] = nr_pe_cast(p, NR_DT_F64, rdt, false, nr_pb_bin(p, NR_PO_ADD, NR_PT_F64, x, y));
        }
    }
    nr_ptx_set(p, r, out, n);
    return true;
}

/* --- scratch sizes ----------------------------------------------------------------------------------------- */
static bool lay_of(NrModule *m, NrFunc *f, NrValId v, int nw, NrArena *a, NrPtxLay *L) {
    (void)a;
    return nr_ptx_lay_of_type(m, nr_val_type(f, v), nw, L);
}

static NrDtype type_dt(const NrType *t) { return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype; }

int64_t nr_ptx_op_scratch(NrModule *m, NrFunc *f, NrOpId op, int nw, NrArena *a) {
    const NrOp *o = &f->ops[op];
    if (o->dead || o->nresults < 1) return 0;
    int64_t tc;
    if (nr_ptx_mma_scratch(m, f, op, nw, a, &tc)) return tc; /* tensor-core and buffer ops: ptx_mma.c */
    NrPtxLay S, D, C;
    NrValId r = o->results[0];
    const NrType *rt = nr_type(m, nr_val_type(f, r));
    switch ((NrOpcode)o->opc) {
    case NR_OP_BROADCAST:
    case NR_OP_EXPAND_DIMS:
    case NR_OP_RESHAPE:
    case NR_OP_TRANS: {
        const NrType *at = nr_type(m, nr_val_type(f, o->opnds[0]));
        if (!lay_of(m, f, o->opnds[0], nw, a, &S) || !lay_of(m, f, r, nw, a, &D)) return 0;
        if (o->opc == NR_OP_RESHAPE && nr_op_int(f, op, NR_A_CAN_REORDER, 0) && S.nreg == D.nreg) return 0;
        NrFlatMap fm;
        if (!nr_ptx_shape_map(m, o, rt, at, &fm)) return 0;
        int64_t b;
        nr_ptx_conv_plan(&S, &D, &fm, nr_ptx_smem_es(type_dt(at)), &b);
        return b;
    }
    case NR_OP_REDUCE:
    case NR_OP_ARGREDUCE: {
        const NrType *at = nr_type(m, nr_val_type(f, o->opnds[0]));
        int64_t axis = nr_op_int(f, op, NR_A_AXIS, 0);
        if (axis < 0) axis += at->rank;
        if (axis < 0 || axis >= at->rank || !lay_of(m, f, o->opnds[0], nw, a, &S)) return 0;
        bool hasd = rt->rank > 0 && lay_of(m, f, r, nw, a, &D);
        Red R;
        red_analyze(&S, hasd ? &D : NULL, (int)axis, &R);
        return red_scratch(&R, &S, type_dt(at), o->opc == NR_OP_ARGREDUCE);
    }
    case NR_OP_DOT: {
        const NrType *at = nr_type(m, nr_val_type(f, o->opnds[0])), *bt = nr_type(m, nr_val_type(f, o->opnds[1]));
        int rank = at->rank;
        if ((rank != 2 && rank != 3) || !lay_of(m, f, r, nw, a, &C)) return 0;
        NrPtxLay A, B, SA, SB;
        if (!dot_operand_lay(&C, at, rank - 1, rank - 1, a, &A) || !dot_operand_lay(&C, bt, rank - 2, rank - 2, a, &B))
            return 0;
        if (!lay_of(m, f, o->opnds[0], nw, a, &SA) || !lay_of(m, f, o->opnds[1], nw, a, &SB)) return 0;
        NrFlatMap id;
        memset(&id, 0, sizeof id);
        id.bits = 32;
        for (int i = 0; i < 32; i++) id.img[i] = 1u << i;
        int64_t x, y;
        nr_ptx_conv_plan(&SA, &A, &id, nr_ptx_smem_es(type_dt(at)), &x);
        nr_ptx_conv_plan(&SB, &B, &id, nr_ptx_smem_es(type_dt(bt)), &y);
        return x > y ? x : y;
    }
    case NR_OP_ATOMIC_RMW:
    case NR_OP_ATOMIC_CAS: {
        /* Replicated holders receive the old values through shared memory. */
        int es = nr_ptx_smem_es(type_dt(rt));
        if (rt->rank == 0) return 16;
        if (!lay_of(m, f, r, nw, a, &D)) return 0;
        if (!D.rep_lane && !D.rep_warp) return 0;
        return nr_ptx_smem_padded_bytes(numel_of(&D), es);
    }
    case NR_OP_GATHER:
    case NR_OP_HISTOGRAM: return nr_ptx_gather_scratch(m, f, op);
    case NR_OP_LOAD:
    case NR_OP_STORE:
    case NR_OP_PRINT:
    case NR_OP_ASSERT: return 0;
    default: break;
    }
    /* Elementwise ops whose operands come in other layouts than the result. */
    if (!(nr_op_info[o->opc].flags & NR_OPF_ELEM) || rt->rank == 0 || !lay_of(m, f, r, nw, a, &D)) return 0;
    int64_t most = 0;
    for (int i = 0; i < o->nopnds; i++) {
        const NrType *t = nr_type(m, nr_val_type(f, o->opnds[i]));
        if (!o->opnds[i] || t->rank == 0 || t->layout == rt->layout) continue;
        if (!lay_of(m, f, o->opnds[i], nw, a, &S)) continue;
        NrFlatMap id;
        memset(&id, 0, sizeof id);
        id.bits = D.bits;
        for (int b = 0; b < D.bits; b++) id.img[b] = 1u << b;
        int64_t bytes;
        nr_ptx_conv_plan(&S, &D, &id, nr_ptx_smem_es(type_dt(t)), &bytes);
        if (bytes > most) most = bytes;
    }
    return most;
}
