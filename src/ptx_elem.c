/* ptx_elem.c - the IR's elementwise ops, per element, on the scalar layer
 * (ptx_scalar.c), and the op-level driver that applies them to every
 * element a thread holds.
 *
 * Semantics are the interpreter's (docs/interpreter.md), with the checks PTX
 * leaves out: integer division by zero gives -1 (all ones) and a % 0 = a,
 * MIN / -1 = MIN and MIN % -1 = 0; 64-bit shift amounts are clamped before
 * they are narrowed to the .u32 PTX wants.  Integers narrower than 32 bits
 * are kept sign- or zero-extended in .b32 registers and re-normalized after
 * every operation that can leave the range.
 *
 * Floats: f32/f64 use .rn instructions (never contracted into fma); f16 uses
 * native .f16 arithmetic (packed .f16x2 when a thread holds pairs); bf16
 * uses .bf16 on sm_90 and fma.rn.bf16 with 1.0 / -0.0 on sm_80 (which has
 * no bf16 add or mul); fp8 computes in f32 and rounds back.  Division and
 * remainder of narrow floats run in f32, which gives the correctly rounded
 * narrow result.  The fast math ops follow Triton: exp(x) = ex2.approx(x *
 * log2 e), log(x) = lg2.approx(x) * ln 2, sqrt = sqrt.approx, rsqrt =
 * rsqrt.approx, f32 `div` = div.full; the `_rn` ops are exact.  sin, cos,
 * erf and the `math` family come from ptx_math.c.
 *
 * Casts follow docs/ir.md#cast with one rounding everywhere: conversions
 * PTX lacks on a target (int or f64 to bf16 on sm_80, every fp8 conversion
 * on sm_80, fp8 with rtz) go through a round-to-odd f32 or a bit-exact
 * software encoder. */
#include "fp.h"
#include "ptx.h"

#include <ctype.h>

#include <math.h>
#include <string.h>

/* --- types ------------------------------------------------------------------------------------------ */
static int dt_bits(NrDtype dt) { return dt == NR_DT_INVALID ? 64 : nr_dt_bits(dt); }

/* The 32- or 64-bit computation type of an integer dtype. */
static NrPt int_pt(NrDtype dt) {
    bool s = nr_dt_is_signed(dt);
    return dt_bits(dt) == 64 ? (s ? NR_PT_S64 : NR_PT_U64) : (s ? NR_PT_S32 : NR_PT_U32);
}

static NrPt bit_pt(NrDtype dt) { return dt_bits(dt) == 64 ? NR_PT_B64 : NR_PT_B32; }


static NrPv imm_for(NrDtype dt, uint64_t bits) { return nr_pv_imm(nr_ptx_kind(dt), bits); }

/* Re-normalize an 8/16-bit value held in 32 bits. */
static NrPv norm(NrPtx *p, NrDtype dt, NrPv v) {
    int w = dt_bits(dt);
    if (w >= 32) return v;
    if (nr_dt_is_signed(dt)) return nr_pb_cvt(p, NR_PR_NONE, NR_PT_S32, w == 8 ? NR_PT_S8 : NR_PT_S16, v);
    return nr_pb_bin(p, NR_PO_AND, NR_PT_B32, v, nr_pv_i32(w == 8 ? 0xff : 0xffff));
}

/* All ones of an integer dtype, normalized. */
static NrPv all_ones(NrDtype dt) {
    int w = dt_bits(dt);
    if (w == 64) return nr_pv_i64(-1);
    if (nr_dt_is_signed(dt)) return nr_pv_i32(-1);
    return nr_pv_i32(w == 32 ? -1 : (1 << w) - 1);
}

/* --- fp8 ----------------------------------------------------------------------------------------------- */
/* f32 bits (I32) -> fp8 code in an H: round to nearest even (or toward
 * zero) and saturate to the largest finite value; NaN -> 0x7f.  Bit-exact
 * with nr_fp_round(x, fmt, rtz). */
static NrPv f8_encode_sw(NrPtx *p, NrPv u, bool e5m2, bool rtz) {
    int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, shift = 23 - mb;
    uint32_t maxfin = e5m2 ? 0x7b : 0x7e;
    NrPv sign = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, u, nr_pv_i32(24)),
                          nr_pv_i32(0x80));
    NrPv a = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, u, nr_pv_i32(0x7fffffff));
    NrPv isnan = nr_pb_setp(p, NR_PC_GT, NR_PT_U32, a, nr_pv_i32(0x7f800000));
    /* Normal results: round the dropped mantissa bits, then rebias. */
    NrPv r = a;
    if (!rtz) {
        NrPv odd = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, a, nr_pv_i32(shift)),
                             nr_pv_i32(1));
        r = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, a, nr_pv_i32((1 << (shift - 1)) - 1)),
                      odd);
    }
    r = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, r, nr_pv_i32(shift));
    NrPv normal = nr_pb_bin(p, NR_PO_SUB, NR_PT_U32, r, nr_pv_i32((127 - bias) << mb));
    /* Subnormal results: the value in units of the smallest subnormal,
     * rounded as an integer (scaling by a power of two is exact). */
    NrPv xf = nr_pb_bits(p, NR_PK_F32, a);
    NrPv scaled = nr_pb_bin(p, NR_PO_MUL, NR_PT_F32, xf, nr_pv_f32(ldexpf(1.0f, bias - 1 + mb)));
    NrPv q = nr_pb_cvt(p, rtz ? NR_PR_RZI : NR_PR_RNI, NR_PT_U32, NR_PT_F32, scaled);
    NrPv small = nr_pb_setp(p, NR_PC_LT, NR_PT_U32, a, nr_pv_i32((uint32_t)(128 - bias) << 23));
    NrPv code = nr_pb_selp(p, small, q, normal);
    code = nr_pb_bin(p, NR_PO_MIN, NR_PT_U32, code, nr_pv_i32(maxfin));
    code = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, code, sign);
    code = nr_pb_selp(p, isnan, nr_pv_i32(0x7f), code);
    return nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, code);
}

/* fp8 code (H) -> f32, exactly. */
static NrPv f8_decode_sw(NrPtx *p, NrPv b, bool e5m2) {
    NrPv u = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, b);
    if (e5m2) { /* e5m2 is the top byte of an f16 */
        NrPv h = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, u, nr_pv_i32(8)));
        return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F32, NR_PT_F16, h);
    }
    /* e4m3fn shifted into an f16's fields is the value scaled by 2^-8. */
    NrPv s = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, u, nr_pv_i32(0x80)), nr_pv_i32(8));
    NrPv m = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, u, nr_pv_i32(0x7f)), nr_pv_i32(7));
    NrPv h = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, nr_pb_bin(p, NR_PO_OR, NR_PT_B32, s, m));
    NrPv f = nr_pb_bin(p, NR_PO_MUL, NR_PT_F32, nr_pb_cvt(p, NR_PR_NONE, NR_PT_F32, NR_PT_F16, h), nr_pv_f32(256.0f));
    NrPv isnan = nr_pb_setp(p, NR_PC_EQ, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, u, nr_pv_i32(0x7f)),
                            nr_pv_i32(0x7f));
    NrPv nan = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, s, nr_pv_i32(16)),
                         nr_pv_i32(0x7fc00000));
    return nr_pb_selp(p, isnan, nr_pb_bits(p, NR_PK_F32, nan), f);
}

/* Native fp8 conversions (sm_89+): cvt.rn.satfinite.e4m3x2.f32 and
 * cvt.rn.f16x2.e4m3x2, one lane of the pair. */
static NrPv f8_from_f32_hw(NrPtx *p, NrPv x, bool e5m2) {
    if (x.r == 0 || p->eval) return f8_encode_sw(p, nr_pb_bits(p, NR_PK_I32, x), e5m2, false);
    NrPv d = {NR_PK_H, nr_ptx_newreg(p, NR_PK_H), 0};
    nr_ptx_emit(p, "cvt.rn.satfinite.%s.f32 %s, 0f00000000, %s;", e5m2 ? "e5m2x2" : "e4m3x2", nr_ptx_reg(p, d.r),
                nr_ptx_reg(p, x.r));
    return d;
}

static NrPv f8_from_f16_hw(NrPtx *p, NrPv h, bool e5m2) {
    NrPv two = nr_pb_pack(p, h, nr_pv_imm(NR_PK_H, 0));
    two = nr_ptx_inreg(p, two);
    NrPv d = {NR_PK_H, nr_ptx_newreg(p, NR_PK_H), 0};
    nr_ptx_emit(p, "cvt.rn.satfinite.%s.f16x2 %s, %s;", e5m2 ? "e5m2x2" : "e4m3x2", nr_ptx_reg(p, d.r),
                nr_ptx_reg(p, two.r));
    return d;
}

static NrPv f8_to_f16_hw(NrPtx *p, NrPv b, bool e5m2) {
    NrPv d = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "cvt.rn.f16x2.%s %s, %s;", e5m2 ? "e5m2x2" : "e4m3x2", nr_ptx_reg(p, d.r), nr_ptx_reg(p, b.r));
    NrPv lo, hi;
    nr_pb_unpack(p, d, &lo, &hi);
    return lo;
}

static bool f8_native(NrPtx *p) { return p->sm >= 89 && !p->eval; }

/* --- round-to-odd helpers ----------------------------------------------------------------------------- */
/* f64 -> f32 rounded to odd: a following rounding to any narrower format
 * is then a correct single rounding of the double. */
static NrPv f64_to_f32_odd(NrPtx *p, NrPv x) {
    NrPv t = nr_pb_cvt(p, NR_PR_RZ, NR_PT_F32, NR_PT_F64, x);
    NrPv back = nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, t);
    NrPv inexact = nr_pb_setp(p, NR_PC_NEU, NR_PT_F64, back, x);
    NrPv odd = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, nr_pb_bits(p, NR_PK_I32, t), nr_pv_i32(1));
    return nr_pb_bits(p, NR_PK_F32, nr_pb_selp(p, inexact, odd, nr_pb_bits(p, NR_PK_I32, t)));
}

/* Integer (a 32- or 64-bit PTX int type) -> f64, rounded to odd when the
 * integer has more than 53 significant bits. */
static NrPv int_to_f64_odd(NrPtx *p, NrPt it, NrPv x) {
    if (nr_pt_bits(it) <= 32) return nr_pb_cvt(p, NR_PR_RN, NR_PT_F64, it, x); /* exact */
    NrPv t = nr_pb_cvt(p, NR_PR_RZ, NR_PT_F64, it, x);
    NrPv back = nr_pb_cvt(p, NR_PR_RZI, it, NR_PT_F64, t);
    NrPv inexact = nr_pb_setp(p, NR_PC_NE, NR_PT_B64, back, x);
    NrPv odd = nr_pb_bin(p, NR_PO_OR, NR_PT_B64, nr_pb_bits(p, NR_PK_I64, t), nr_pv_i64(1));
    return nr_pb_bits(p, NR_PK_F64, nr_pb_selp(p, inexact, odd, nr_pb_bits(p, NR_PK_I64, t)));
}

/* --- float conversions ---------------------------------------------------------------------------------- */
NrPv nr_pe_to_f32(NrPtx *p, NrDtype dt, NrPv a) {
    switch (dt) {
    case NR_DT_F32: return a;
    case NR_DT_F16: return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F32, NR_PT_F16, a);
    case NR_DT_BF16: {
        /* bf16 is the top half of an f32 (exact, NaN kept). */
        NrPv u = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, a);
        return nr_pb_bits(p, NR_PK_F32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, u, nr_pv_i32(16)));
    }
    case NR_DT_F8E4NV:
    case NR_DT_F8E5:
        if (f8_native(p) && a.r)
            return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F32, NR_PT_F16, f8_to_f16_hw(p, a, dt == NR_DT_F8E5));
        return f8_decode_sw(p, a, dt == NR_DT_F8E5);
    case NR_DT_F64: return nr_pb_cvt(p, NR_PR_RN, NR_PT_F32, NR_PT_F64, a);
    default: NR_UNREACHABLE();
    }
}

/* f32 -> narrow float (or f32), one rounding (rtz: toward zero). */
static NrPv from_f32(NrPtx *p, NrDtype dt, NrPv x, bool rtz) {
    NrPr r = rtz ? NR_PR_RZ : NR_PR_RN;
    switch (dt) {
    case NR_DT_F32: return x;
    case NR_DT_F64: return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, x);
    case NR_DT_F16: return nr_pb_cvt(p, r, NR_PT_F16, NR_PT_F32, x);
    case NR_DT_BF16: return nr_pb_cvt(p, r, NR_PT_BF16, NR_PT_F32, x);
    case NR_DT_F8E4NV:
    case NR_DT_F8E5:
        if (f8_native(p) && !rtz) return f8_from_f32_hw(p, x, dt == NR_DT_F8E5);
        return f8_encode_sw(p, nr_pb_bits(p, NR_PK_I32, x), dt == NR_DT_F8E5, rtz);
    default: NR_UNREACHABLE();
    }
}

NrPv nr_pe_from_f32(NrPtx *p, NrDtype dt, NrPv a) { return from_f32(p, dt, a, false); }

static NrPv float_to_float(NrPtx *p, NrDtype from, NrDtype to, bool rtz, NrPv a) {
    if (from == to) return a;
    NrPr r = rtz ? NR_PR_RZ : NR_PR_RN;
    if (to == NR_DT_F64) {
        if (from == NR_DT_F16) return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F16, a);
        return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, nr_pe_to_f32(p, from, a));
    }
    if (from == NR_DT_F64) {
        switch (to) {
        case NR_DT_F32: return nr_pb_cvt(p, r, NR_PT_F32, NR_PT_F64, a);
        case NR_DT_F16: return nr_pb_cvt(p, r, NR_PT_F16, NR_PT_F64, a);
        case NR_DT_BF16:
            if (p->sm >= 90) return nr_pb_cvt(p, r, NR_PT_BF16, NR_PT_F64, a);
            if (rtz) return nr_pb_cvt(p, NR_PR_RZ, NR_PT_BF16, NR_PT_F32, nr_pb_cvt(p, NR_PR_RZ, NR_PT_F32, NR_PT_F64, a));
            return from_f32(p, to, f64_to_f32_odd(p, a), false);
        default: /* fp8 */
            if (rtz) return from_f32(p, to, nr_pb_cvt(p, NR_PR_RZ, NR_PT_F32, NR_PT_F64, a), true);
            return from_f32(p, to, f64_to_f32_odd(p, a), false);
        }
    }
    if (from == NR_DT_F16 && nr_dt_is_fp8(to) && f8_native(p) && !rtz && a.r)
        return f8_from_f16_hw(p, a, to == NR_DT_F8E5);
    if (nr_dt_is_fp8(from) && to == NR_DT_F16 && f8_native(p) && a.r) return f8_to_f16_hw(p, a, from == NR_DT_F8E5);
    /* Every other pair: the source is exact in f32, so one rounding from there. */
    return from_f32(p, to, nr_pe_to_f32(p, from, a), rtz);
}

/* --- casts ------------------------------------------------------------------------------------------- */
static NrPv int_to_int(NrPtx *p, NrDtype from, NrDtype to, NrPv a) {
    int fw = dt_bits(from), tw = dt_bits(to);
    if (from == NR_DT_I1) {
        if (to == NR_DT_I1) return a;
        return tw == 64 ? nr_pb_selp(p, a, nr_pv_i64(1), nr_pv_i64(0)) : nr_pb_selp(p, a, nr_pv_i32(1), nr_pv_i32(0));
    }
    if (to == NR_DT_I1) return nr_pb_setp(p, NR_PC_NE, bit_pt(from), a, fw == 64 ? nr_pv_i64(0) : nr_pv_i32(0));
    if (fw == 64 && tw == 64) return a;
    if (fw == 64) return norm(p, to, nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, a));
    if (tw == 64)
        return nr_pb_cvt(p, NR_PR_NONE, nr_dt_is_signed(from) ? NR_PT_S64 : NR_PT_U64,
                         nr_dt_is_signed(from) ? NR_PT_S32 : NR_PT_U32, a);
    /* Both in 32-bit registers, extended by the source's signedness. */
    if (tw == 32) return a;
    bool fits = fw < tw && (nr_dt_is_signed(to) || !nr_dt_is_signed(from));
    return fits ? a : norm(p, to, a);
}

static NrPv float_to_int(NrPtx *p, NrDtype from, NrDtype to, NrPv a) {
    if (from == NR_DT_BF16 || nr_dt_is_fp8(from)) {
        a = nr_pe_to_f32(p, from, a);
        from = NR_DT_F32;
    }
    NrPt ft = from == NR_DT_F64 ? NR_PT_F64 : from == NR_DT_F16 ? NR_PT_F16 : NR_PT_F32;
    if (to == NR_DT_I1)
        return nr_pb_setp(p, NR_PC_NEU, ft, a,
                          from == NR_DT_F64 ? nr_pv_f64(0) : from == NR_DT_F16 ? nr_pv_imm(NR_PK_H, 0) : nr_pv_f32(0));
    static const NrPt sg[] = {NR_PT_S8, NR_PT_S16, NR_PT_S32, NR_PT_S64}, us[] = {NR_PT_U8, NR_PT_U16, NR_PT_U32,
                                                                                   NR_PT_U64};
    int w = dt_bits(to), i = w == 8 ? 0 : w == 16 ? 1 : w == 32 ? 2 : 3;
    /* cvt.rzi saturates to the destination's range and turns NaN into 0, except from f64
     * or into 64-bit integers, where the H100 gives other values: NaN is made 0 there by a
     * select. */
    NrPv r = nr_pb_cvt(p, NR_PR_RZI, nr_dt_is_signed(to) ? sg[i] : us[i], ft, a);
    if (w < 32) {
        r.k = NR_PK_I32;
        r = norm(p, to, r);
    }
    if (w == 64 || from == NR_DT_F64)
        r = nr_pb_selp(p, nr_pb_setp(p, NR_PC_NAN, ft, a, a), w == 64 ? nr_pv_i64(0) : nr_pv_i32(0), r);
    return r;
}

static NrPv int_to_float(NrPtx *p, NrDtype from, NrDtype to, bool rtz, NrPv a) {
    if (from == NR_DT_I1) {
        uint64_t one;
        switch (to) {
        case NR_DT_F64: one = 0x3ff0000000000000ull; break;
        case NR_DT_F32: one = 0x3f800000; break;
        case NR_DT_F16: one = 0x3c00; break;
        case NR_DT_BF16: one = 0x3f80; break;
        case NR_DT_F8E4NV: one = 0x38; break;
        default: one = 0x3c; break;
        }
        return nr_pb_selp(p, a, imm_for(to, one), imm_for(to, 0));
    }
    NrPt it = int_pt(from);
    NrPr r = rtz ? NR_PR_RZ : NR_PR_RN;
    switch (to) {
    case NR_DT_F64: return nr_pb_cvt(p, r, NR_PT_F64, it, a);
    case NR_DT_F32: return nr_pb_cvt(p, r, NR_PT_F32, it, a);
    case NR_DT_F16: return nr_pb_cvt(p, r, NR_PT_F16, it, a);
    case NR_DT_BF16:
        if (p->sm >= 90) return nr_pb_cvt(p, r, NR_PT_BF16, it, a);
        if (rtz) return nr_pb_cvt(p, NR_PR_RZ, NR_PT_BF16, NR_PT_F32, nr_pb_cvt(p, NR_PR_RZ, NR_PT_F32, it, a));
        if (dt_bits(from) < 32) /* exact in f32 */
            return nr_pb_cvt(p, NR_PR_RN, NR_PT_BF16, NR_PT_F32, nr_pb_cvt(p, NR_PR_RN, NR_PT_F32, it, a));
        return from_f32(p, to, f64_to_f32_odd(p, int_to_f64_odd(p, it, a)), false);
    default:
        /* fp8: integers beyond 2^24 (where f32 rounds) saturate anyway. */
        return from_f32(p, to, nr_pb_cvt(p, r, NR_PT_F32, it, a), rtz);
    }
}

NrPv nr_pe_cast(NrPtx *p, NrDtype from, NrDtype to, bool rtz, NrPv a) {
    if (from == to) return a;
    bool ff = nr_dt_is_float(from), tf = nr_dt_is_float(to);
    if (ff && tf) return float_to_float(p, from, to, rtz, a);
    if (ff) return float_to_int(p, from, to, a);
    if (tf) return int_to_float(p, from, to, false, a); /* rounding applies to float narrowing only */
    return int_to_int(p, from, to, a);
}

/* Same-width reinterpretation. */
static NrPv bitcast(NrPtx *p, NrDtype from, NrDtype to, NrPv a) {
    NrPk fk = nr_ptx_kind(from), tk = nr_ptx_kind(to);
    if (from == NR_DT_I1 || to == NR_DT_I1) return a;
    if (fk == tk || (fk != NR_PK_H && tk != NR_PK_H)) {
        NrPv r = nr_pb_bits(p, tk, a);
        return tk == NR_PK_I32 && dt_bits(to) < 32 ? norm(p, to, r) : r;
    }
    if (tk == NR_PK_H) { /* 8/16-bit int -> 16-bit float bits */
        NrPv h = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, a);
        if (dt_bits(to) == 8) h = nr_pb_bin(p, NR_PO_AND, NR_PT_B16, h, nr_pv_imm(NR_PK_H, 0xff));
        return h;
    }
    return norm(p, to, nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, a));
}

/* --- arithmetic ---------------------------------------------------------------------------------------- */
static NrPv bool_binary(NrPtx *p, NrOpcode opc, NrPv a, NrPv b) {
    switch (opc) {
    case NR_OP_ADD:
    case NR_OP_SUB:
    case NR_OP_XOR: return nr_pb_pxor(p, a, b);
    case NR_OP_MUL:
    case NR_OP_AND:
    case NR_OP_MIN: return nr_pb_pand(p, a, b);
    case NR_OP_OR:
    case NR_OP_MAX: return nr_pb_por(p, a, b);
    case NR_OP_DIV: return nr_pb_por(p, a, nr_pb_pnot(p, b));  /* a / 0 = 1 */
    case NR_OP_REM:                                             /* a % 0 = a, a % 1 = 0 */
    case NR_OP_SHL:                                             /* a << 1 = 0 */
    case NR_OP_SHR: return nr_pb_pand(p, a, nr_pb_pnot(p, b));
    case NR_OP_UMULHI: return nr_pv_pred(false);
    default: NR_UNREACHABLE();
    }
}

static NrPv int_divrem(NrPtx *p, bool rem, NrDtype dt, NrPv a, NrPv b) {
    NrPt t = int_pt(dt);
    bool w64 = dt_bits(dt) == 64;
    NrPv zero = w64 ? nr_pv_i64(0) : nr_pv_i32(0), one = w64 ? nr_pv_i64(1) : nr_pv_i32(1);
    NrPv z = nr_pb_setp(p, NR_PC_EQ, t, b, zero);
    if (!nr_dt_is_signed(dt)) {
        NrPv q = nr_pb_bin(p, rem ? NR_PO_REM : NR_PO_DIV, t, a, nr_pb_selp(p, z, one, b));
        return nr_pb_selp(p, z, rem ? a : all_ones(dt), q);
    }
    NrPv m1 = nr_pb_setp(p, NR_PC_EQ, t, b, w64 ? nr_pv_i64(-1) : nr_pv_i32(-1));
    NrPv q = nr_pb_bin(p, rem ? NR_PO_REM : NR_PO_DIV, t, a, nr_pb_selp(p, nr_pb_por(p, z, m1), one, b));
    if (rem) return nr_pb_selp(p, z, a, nr_pb_selp(p, m1, zero, q));
    q = nr_pb_selp(p, m1, nr_pb_un(p, NR_PO_NEG, t, a), q); /* MIN / -1 = MIN by wrapping */
    return norm(p, dt, nr_pb_selp(p, z, all_ones(dt), q));
}

static NrPv int_binary(NrPtx *p, NrOpcode opc, NrDtype dt, NrPv a, NrPv b) {
    NrPt t = int_pt(dt), bt = bit_pt(dt);
    int w = dt_bits(dt);
    switch (opc) {
    case NR_OP_ADD: return norm(p, dt, nr_pb_bin(p, NR_PO_ADD, t, a, b));
    case NR_OP_SUB: return norm(p, dt, nr_pb_bin(p, NR_PO_SUB, t, a, b));
    case NR_OP_MUL: return norm(p, dt, nr_pb_bin(p, NR_PO_MUL, t, a, b));
    case NR_OP_DIV: return int_divrem(p, false, dt, a, b);
    case NR_OP_REM: return int_divrem(p, true, dt, a, b);
    case NR_OP_AND: return nr_pb_bin(p, NR_PO_AND, bt, a, b);
    case NR_OP_OR: return nr_pb_bin(p, NR_PO_OR, bt, a, b);
    case NR_OP_XOR: return nr_pb_bin(p, NR_PO_XOR, bt, a, b);
    case NR_OP_SHL:
    case NR_OP_SHR: {
        NrPv amt = b;
        if (w == 64) /* the PTX amount is a .u32: clamp first */
            amt = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, nr_pb_bin(p, NR_PO_MIN, NR_PT_U64, b, nr_pv_i64(64)));
        if (opc == NR_OP_SHL) return norm(p, dt, nr_pb_bin(p, NR_PO_SHL, bt, a, amt));
        return nr_pb_bin(p, NR_PO_SHR, t, a, amt); /* shr.s fills with the sign; the value stays normalized */
    }
    case NR_OP_MAX: return nr_pb_bin(p, NR_PO_MAX, t, a, b);
    case NR_OP_MIN: return nr_pb_bin(p, NR_PO_MIN, t, a, b);
    case NR_OP_UMULHI:
        if (w >= 32) return nr_pb_bin(p, NR_PO_MULHI, w == 64 ? NR_PT_U64 : NR_PT_U32, a, b);
        else {
            NrPv m = nr_pv_i32(w == 8 ? 0xff : 0xffff);
            NrPv x = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, a, m), y = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, b, m);
            NrPv prod = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, x, y);
            return norm(p, dt, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, prod, nr_pv_i32(w)));
        }
    default: NR_UNREACHABLE();
    }
}

/* f64 max/min with NaN propagation (PTX has no max.NaN.f64). */
static NrPv f64_minmax(NrPtx *p, bool max, bool nanall, NrPv a, NrPv b) {
    NrPv r = nr_pb_bin(p, max ? NR_PO_MAX : NR_PO_MIN, NR_PT_F64, a, b);
    if (!nanall) return r;
    NrPv nan = nr_pb_setp(p, NR_PC_NAN, NR_PT_F64, a, b);
    return nr_pb_selp(p, nan, nr_pv_imm(NR_PK_F64, 0x7fffffffffffffffull), r);
}

static NrPt float_pt(NrDtype dt) {
    switch (dt) {
    case NR_DT_F64: return NR_PT_F64;
    case NR_DT_F16: return NR_PT_F16;
    case NR_DT_BF16: return NR_PT_BF16;
    default: return NR_PT_F32;
    }
}

/* A float add, sub or mul of the kernel's arithmetic: contractable into an
 * fma with fp_fusion (ptxas fuses it with the multiply or add next to it). */
static NrPv farith(NrPtx *p, NrOpcode opc, NrPt t, NrPv a, NrPv b) {
    NrPo o = opc == NR_OP_ADD ? NR_PO_ADD : opc == NR_OP_SUB ? NR_PO_SUB : NR_PO_MUL;
    p->contract = p->fp_fusion;
    NrPv r = nr_pb_bin(p, o, t, a, b);
    p->contract = false;
    return r;
}

/* bf16 add / sub / mul on sm_80, which has only fma.rn.bf16: a*1 + b,
 * b*-1 + a and a*b + -0 are each one correctly rounded operation. */
static NrPv bf16_arith(NrPtx *p, NrOpcode opc, NrPv a, NrPv b, bool packed) {
    NrPt t = packed ? NR_PT_BF16X2 : NR_PT_BF16;
    uint64_t one = packed ? 0x3f803f80 : 0x3f80, mone = packed ? 0xbf80bf80 : 0xbf80, mzero = packed ? 0x80008000 : 0x8000;
    NrPk k = packed ? NR_PK_I32 : NR_PK_H;
    if (p->sm >= 90) return farith(p, opc, t, a, b);
    switch (opc) {
    case NR_OP_ADD: return nr_pb_fma(p, t, a, nr_pv_imm(k, one), b);
    case NR_OP_SUB: return nr_pb_fma(p, t, b, nr_pv_imm(k, mone), a);
    default: return nr_pb_fma(p, t, a, b, nr_pv_imm(k, mzero));
    }
}

static NrPv float_binary(NrPtx *p, NrOpcode opc, NrDtype dt, bool nanall, NrPv a, NrPv b) {
    if (nr_dt_is_fp8(dt)) /* compute in f32, round once */
        return nr_pe_from_f32(p, dt, float_binary(p, opc, NR_DT_F32, nanall, nr_pe_to_f32(p, dt, a),
                                                  nr_pe_to_f32(p, dt, b)));
    NrPt t = float_pt(dt);
    switch (opc) {
    case NR_OP_ADD:
    case NR_OP_SUB:
    case NR_OP_MUL:
        if (dt == NR_DT_BF16) return bf16_arith(p, opc, a, b, false);
        return farith(p, opc, t, a, b);
    case NR_OP_DIV:
    case NR_OP_DIV_RN:
        if (dt == NR_DT_F32) return nr_pb_bin(p, opc == NR_OP_DIV ? NR_PO_DIV_FULL : NR_PO_DIV, t, a, b);
        if (dt == NR_DT_F64) return nr_pb_bin(p, NR_PO_DIV, t, a, b);
        /* f32 has enough bits for the correctly rounded narrow quotient. */
        return nr_pe_from_f32(p, dt, nr_pb_bin(p, NR_PO_DIV, NR_PT_F32, nr_pe_to_f32(p, dt, a), nr_pe_to_f32(p, dt, b)));
    case NR_OP_REM: {
        NrPv x[2] = {a, b};
        return nr_pe_math(p, "fmod", dt, 2, x);
    }
    case NR_OP_MAX:
    case NR_OP_MIN:
        if (dt == NR_DT_F64) return f64_minmax(p, opc == NR_OP_MAX, nanall, a, b);
        if (opc == NR_OP_MAX) return nr_pb_bin(p, nanall ? NR_PO_MAX_NAN : NR_PO_MAX, t, a, b);
        return nr_pb_bin(p, nanall ? NR_PO_MIN_NAN : NR_PO_MIN, t, a, b);
    default: NR_UNREACHABLE();
    }
}

NrPv nr_pe_binary(NrPtx *p, NrOpcode opc, NrDtype dt, bool nanall, NrPv a, NrPv b) {
    if (dt == NR_DT_I1) return bool_binary(p, opc, a, b);
    if (nr_dt_is_float(dt)) return float_binary(p, opc, dt, nanall, a, b);
    return int_binary(p, opc, dt, a, b);
}

NrPv nr_pe_fma(NrPtx *p, NrDtype dt, NrPv a, NrPv b, NrPv c) {
    switch (dt) {
    case NR_DT_F32:
    case NR_DT_F64:
    case NR_DT_F16:
    case NR_DT_BF16: return nr_pb_fma(p, float_pt(dt), a, b, c);
    default: { /* fp8: fma in f64 (exact product), then one rounding */
        NrPv x = nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, nr_pe_to_f32(p, dt, a));
        NrPv y = nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, nr_pe_to_f32(p, dt, b));
        NrPv z = nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, nr_pe_to_f32(p, dt, c));
        return float_to_float(p, NR_DT_F64, dt, false, nr_pb_fma(p, NR_PT_F64, x, y, z));
    }
    }
}

/* --- unary ops and math --------------------------------------------------------------------------------- */
static const double LOG2E = 1.4426950408889634, LN2 = 0.6931471805599453;

/* f32 fast math: the Triton-style approximations. */
static NrPv fast_f32(NrPtx *p, NrOpcode opc, NrPv x) {
    switch (opc) {
    case NR_OP_EXP:
        return nr_pb_un(p, NR_PO_EX2_APPROX, NR_PT_F32, nr_pb_bin(p, NR_PO_MUL, NR_PT_F32, x, nr_pv_f32((float)LOG2E)));
    case NR_OP_EXP2: return nr_pb_un(p, NR_PO_EX2_APPROX_FTZ, NR_PT_F32, x); /* results below 2^-126 are 0 */
    case NR_OP_LOG:
        return nr_pb_bin(p, NR_PO_MUL, NR_PT_F32, nr_pb_un(p, NR_PO_LG2_APPROX, NR_PT_F32, x), nr_pv_f32((float)LN2));
    case NR_OP_LOG2: return nr_pb_un(p, NR_PO_LG2_APPROX, NR_PT_F32, x);
    case NR_OP_SQRT: return nr_pb_un(p, NR_PO_SQRT_APPROX, NR_PT_F32, x);
    case NR_OP_SQRT_RN: return nr_pb_un(p, NR_PO_SQRT, NR_PT_F32, x);
    case NR_OP_RSQRT: return nr_pb_un(p, NR_PO_RSQRT_APPROX, NR_PT_F32, x);
    case NR_OP_FLOOR: return nr_pb_un(p, NR_PO_FLOOR, NR_PT_F32, x);
    case NR_OP_CEIL: return nr_pb_un(p, NR_PO_CEIL, NR_PT_F32, x);
    case NR_OP_SIN: return nr_pe_math(p, "sin", NR_DT_F32, 1, &x);
    case NR_OP_COS: return nr_pe_math(p, "cos", NR_DT_F32, 1, &x);
    case NR_OP_ERF: return nr_pe_math(p, "erf", NR_DT_F32, 1, &x);
    default: NR_UNREACHABLE();
    }
}

static NrPv f64_unary(NrPtx *p, NrOpcode opc, NrPv x) {
    switch (opc) {
    case NR_OP_SQRT:
    case NR_OP_SQRT_RN: return nr_pb_un(p, NR_PO_SQRT, NR_PT_F64, x);
    case NR_OP_RSQRT: return nr_pb_bin(p, NR_PO_DIV, NR_PT_F64, nr_pv_f64(1.0), nr_pb_un(p, NR_PO_SQRT, NR_PT_F64, x));
    case NR_OP_FLOOR: return nr_pb_un(p, NR_PO_FLOOR, NR_PT_F64, x);
    case NR_OP_CEIL: return nr_pb_un(p, NR_PO_CEIL, NR_PT_F64, x);
    default: {
        static const char *const names[] = {[NR_OP_EXP] = "exp", [NR_OP_EXP2] = "exp2", [NR_OP_LOG] = "log",
                                            [NR_OP_LOG2] = "log2", [NR_OP_SIN] = "sin", [NR_OP_COS] = "cos",
                                            [NR_OP_ERF] = "erf"};
        return nr_pe_math(p, names[opc], NR_DT_F64, 1, &x);
    }
    }
}

NrPv nr_pe_unary(NrPtx *p, NrOpcode opc, NrDtype dt, NrPv a) {
    if (!nr_dt_is_float(dt)) {
        if (dt == NR_DT_I1) return a; /* -a and |a| are a modulo 2 */
        NrPt t = int_pt(dt);
        if (opc == NR_OP_NEG) /* neg wants a signed type; the bits are the same */
            return norm(p, dt, nr_pb_un(p, NR_PO_NEG, dt_bits(dt) == 64 ? NR_PT_S64 : NR_PT_S32, a));
        if (nr_dt_is_signed(dt)) return norm(p, dt, nr_pb_un(p, NR_PO_ABS, t, a));
        return a;
    }
    if (opc == NR_OP_NEG || opc == NR_OP_ABS) {
        if (nr_dt_is_fp8(dt)) /* through f32: e5m2 infinities saturate on the way back */
            return nr_pe_from_f32(p, dt, nr_pb_un(p, opc == NR_OP_NEG ? NR_PO_NEG : NR_PO_ABS, NR_PT_F32,
                                                  nr_pe_to_f32(p, dt, a)));
        return nr_pb_un(p, opc == NR_OP_NEG ? NR_PO_NEG : NR_PO_ABS, float_pt(dt), a);
    }
    if (dt == NR_DT_F64) return f64_unary(p, opc, a);
    if (dt == NR_DT_F32) return fast_f32(p, opc, a);
    NrPv x = nr_pe_to_f32(p, dt, a);
    /* Narrow floats: exact f32 square roots round correctly to them. */
    NrPv r = opc == NR_OP_SQRT ? nr_pb_un(p, NR_PO_SQRT, NR_PT_F32, x) : fast_f32(p, opc, x);
    return nr_pe_from_f32(p, dt, r);
}

NrPv nr_pe_math(NrPtx *p, const char *fn, NrDtype dt, int n, const NrPv *x) {
    if (!fn) fn = "";
    if (strncmp(fn, "__nv_", 5) == 0) fn += 5;
    if (dt != NR_DT_F32 && dt != NR_DT_F64) {
        NrPv y[4];
        for (int i = 0; i < n && i < 4; i++) y[i] = nr_pe_to_f32(p, dt, x[i]);
        if (strcmp(fn, "fma") == 0 && n == 3) return nr_pe_fma(p, dt, x[0], x[1], x[2]);
        return nr_pe_from_f32(p, dt, nr_pe_math(p, fn, NR_DT_F32, n, y));
    }
    NrPv out;
    if (nr_pm_call(p, fn, dt == NR_DT_F64 ? NR_PK_F64 : NR_PK_F32, n, x, &out)) return out;
    nr_ptx_error(p, "math function '%s' of %d operand%s is not supported", fn, n, n == 1 ? "" : "s");
    return x[0];
}

/* --- libdevice's integer functions (the imath op) ----------------------------------------------------- */
/* Operands and result of dtype dt (8- and 16-bit ones normalized in .b32). */
NrPv nr_pe_imath(NrPtx *p, const char *fn, NrDtype dt, const NrPv *x) {
    NrPt it = int_pt(dt), bt = bit_pt(dt);
    bool w64 = dt_bits(dt) == 64, sg = nr_dt_is_signed(dt);
    NrPv r;
    if (!fn) fn = "";
    if (strcmp(fn, "clz") == 0 || strcmp(fn, "popc") == 0 || strcmp(fn, "ffs") == 0) {
        NrPv v = x[0];
        if (!w64 && dt_bits(dt) < 32) v = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, v, nr_pv_i32(dt_bits(dt) == 8 ? 0xff : 0xffff));
        NrPv c;
        if (strcmp(fn, "ffs") == 0) {
            NrPv z = nr_pb_setp(p, NR_PC_EQ, bt, v, imm_for(dt, 0));
            c = nr_pb_un(p, NR_PO_CLZ, bt, nr_pb_un(p, NR_PO_BREV, bt, v));
            c = nr_pb_selp(p, z, nr_pv_i32(0), nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, c, nr_pv_i32(1)));
        } else {
            c = nr_pb_un(p, fn[0] == 'c' ? NR_PO_CLZ : NR_PO_POPC, bt, v);
            if (fn[0] == 'c' && dt_bits(dt) < 32) c = nr_pb_bin(p, NR_PO_SUB, NR_PT_U32, c, nr_pv_i32(32 - dt_bits(dt)));
        }
        return w64 ? nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, c) : c;
    }
    if (strcmp(fn, "brev") == 0) {
        r = nr_pb_un(p, NR_PO_BREV, bt, x[0]);
        if (dt_bits(dt) < 32) r = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, r, nr_pv_i32(32 - dt_bits(dt)));
        return norm(p, dt, r);
    }
    if (strcmp(fn, "mulhi") == 0) return nr_pb_bin(p, NR_PO_MULHI, it, x[0], x[1]);
    if (strcmp(fn, "mul24") == 0) {
        NrPv a = sg ? nr_pb_bin(p, NR_PO_SHR, NR_PT_S32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, x[0], nr_pv_i32(8)), nr_pv_i32(8))
                    : nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x[0], nr_pv_i32(0xffffff));
        NrPv b = sg ? nr_pb_bin(p, NR_PO_SHR, NR_PT_S32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, x[1], nr_pv_i32(8)), nr_pv_i32(8))
                    : nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x[1], nr_pv_i32(0xffffff));
        return nr_pb_bin(p, NR_PO_MUL, NR_PT_S32, a, b);
    }
    if (strcmp(fn, "hadd") == 0 || strcmp(fn, "rhadd") == 0) { /* (a & b) + ((a ^ b) >> 1), (a | b) - (...) */
        bool up = fn[0] == 'r';
        NrPv h = nr_pb_bin(p, NR_PO_SHR, it, nr_pb_bin(p, NR_PO_XOR, bt, x[0], x[1]), nr_pv_i32(1));
        NrPv c = nr_pb_bin(p, up ? NR_PO_OR : NR_PO_AND, bt, x[0], x[1]);
        return nr_pb_bin(p, up ? NR_PO_SUB : NR_PO_ADD, it, c, h);
    }
    if (strcmp(fn, "sad") == 0) return nr_pb_op3(p, "sad", it, x[0], x[1], x[2]);
    if (strcmp(fn, "byte_perm") == 0)
        return nr_pb_op3(p, "prmt", NR_PT_B32, x[0], x[1], nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x[2], nr_pv_i32(0x7777)));
    nr_ptx_error(p, "integer function '%s' is not supported", fn);
    return x[0];
}

/* --- comparison ----------------------------------------------------------------------------------------- */
NrPv nr_pe_cmp(NrPtx *p, int pred, NrDtype dt, NrPv a, NrPv b) {
    if (dt == NR_DT_I1) { /* unsigned: false < true */
        switch (pred) {
        case 0: return nr_pb_pnot(p, nr_pb_pxor(p, a, b));
        case 1: return nr_pb_pxor(p, a, b);
        case 2: return nr_pb_pand(p, nr_pb_pnot(p, a), b);
        case 3: return nr_pb_por(p, nr_pb_pnot(p, a), b);
        case 4: return nr_pb_pand(p, a, nr_pb_pnot(p, b));
        default: return nr_pb_por(p, a, nr_pb_pnot(p, b));
        }
    }
    static const NrPc ord[] = {NR_PC_EQ, NR_PC_NEU, NR_PC_LT, NR_PC_LE, NR_PC_GT, NR_PC_GE};
    if (nr_dt_is_float(dt)) {
        if (dt == NR_DT_F64 || dt == NR_DT_F32 || dt == NR_DT_F16 || (dt == NR_DT_BF16 && p->sm >= 90))
            return nr_pb_setp(p, ord[pred], float_pt(dt), a, b);
        return nr_pb_setp(p, ord[pred], NR_PT_F32, nr_pe_to_f32(p, dt, a), nr_pe_to_f32(p, dt, b));
    }
    static const NrPc ic[] = {NR_PC_EQ, NR_PC_NE, NR_PC_LT, NR_PC_LE, NR_PC_GT, NR_PC_GE};
    return nr_pb_setp(p, ic[pred], int_pt(dt), a, b);
}

/* --- the op-level driver --------------------------------------------------------------------------------- */
static NrDtype val_dt(NrPtx *p, NrValId v) {
    const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
    return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
}

/* Operand i's elements in layout rl (the result's): aliased when they are
 * already in place, else converted (through scratch shared memory). */
static NrPv *opnd_in(NrPtx *p, NrOpId op, int i, int rl, int n) {
    NrValId v = p->f->ops[op].opnds[i];
    NrPtxVal *x = nr_ptx_val(p, v);
    if (x->lay == rl && x->n == n) return x->e;
    if (x->lay < 0 || rl < 0) { /* a scalar applies to every element */
        NrPv *e = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
        for (int j = 0; j < n; j++) e[j] = x->e[0];
        return e;
    }
    NrFlatMap f;
    memset(&f, 0, sizeof f);
    f.bits = p->lays[rl].bits;
    for (int b = 0; b < f.bits; b++) f.img[b] = 1u << b;
    return nr_ptx_convert(p, x->e, x->lay, rl, &f, val_dt(p, v), nr_ptx_scratch_off(p, op));
}

static bool attr_is(NrPtx *p, NrOpId op, NrAttrName a, const char *want) {
    const char *s = nr_op_str(p->f, op, a, "");
    return strcmp(s, want) == 0;
}

static int pred_index(const char *s) {
    static const char *const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    for (int i = 0; i < 6; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* One element of op's result from its operands' elements x[]. */
static NrPv elem(NrPtx *p, NrOpId op, const NrPv *x) {
    const NrOp *o = &p->f->ops[op];
    NrOpcode opc = (NrOpcode)o->opc;
    NrDtype rdt = val_dt(p, o->results[0]), adt = o->nopnds ? val_dt(p, o->opnds[0]) : rdt;
    switch (opc) {
    case NR_OP_ADD:
    case NR_OP_SUB:
    case NR_OP_MUL:
    case NR_OP_DIV:
    case NR_OP_DIV_RN:
    case NR_OP_REM:
    case NR_OP_AND:
    case NR_OP_OR:
    case NR_OP_XOR:
    case NR_OP_SHL:
    case NR_OP_SHR:
    case NR_OP_MAX:
    case NR_OP_MIN:
    case NR_OP_UMULHI: return nr_pe_binary(p, opc, rdt, attr_is(p, op, NR_A_NAN, "all"), x[0], x[1]);
    case NR_OP_NEG:
    case NR_OP_ABS:
    case NR_OP_EXP:
    case NR_OP_EXP2:
    case NR_OP_LOG:
    case NR_OP_LOG2:
    case NR_OP_SQRT:
    case NR_OP_SQRT_RN:
    case NR_OP_RSQRT:
    case NR_OP_SIN:
    case NR_OP_COS:
    case NR_OP_FLOOR:
    case NR_OP_CEIL:
    case NR_OP_ERF: return nr_pe_unary(p, opc, rdt, x[0]);
    case NR_OP_FMA: return nr_pe_fma(p, rdt, x[0], x[1], x[2]);
    case NR_OP_MATH: return nr_pe_math(p, nr_op_str(p->f, op, NR_A_FN, NULL), rdt, o->nopnds, x);
    case NR_OP_IMATH: return nr_pe_imath(p, nr_op_str(p->f, op, NR_A_FN, NULL), rdt, x);
    case NR_OP_CMP: return nr_pe_cmp(p, pred_index(nr_op_str(p->f, op, NR_A_PRED, "eq")), adt, x[0], x[1]);
    case NR_OP_SELECT: return nr_pb_selp(p, x[0], x[1], x[2]);
    case NR_OP_CAST: return nr_pe_cast(p, adt, rdt, attr_is(p, op, NR_A_ROUNDING, "rtz"), x[0]);
    case NR_OP_BITCAST: return bitcast(p, adt, rdt, x[0]);
    case NR_OP_PTRTOINT:
    case NR_OP_INTTOPTR: return nr_pe_cast(p, adt == NR_DT_U64 ? NR_DT_I64 : adt, NR_DT_I64, false, x[0]);
    case NR_OP_ADDPTR: {
        const NrType *pt = nr_type(p->m, nr_val_type(p->f, o->opnds[0]));
        int64_t es = pt->ptr > 1 ? 8 : nr_dtype_info[pt->dtype].bytes;
        NrDtype bdt = val_dt(p, o->opnds[1]);
        if ((bdt == NR_DT_I32 || bdt == NR_DT_U32) && x[1].r && !p->eval) {
            /* one mul.wide (IMAD.WIDE) for the widening and the scaling */
            NrPv off = {NR_PK_I64, nr_ptx_newreg(p, NR_PK_I64), 0};
            nr_ptx_emit(p, "mul.wide.%c32 %s, %s, %lld;", bdt == NR_DT_I32 ? 's' : 'u', nr_ptx_reg(p, off.r),
                        nr_ptx_reg(p, x[1].r), (long long)es);
            return nr_pb_bin(p, NR_PO_ADD, NR_PT_S64, x[0], off);
        }
        NrPv off = nr_pe_cast(p, bdt, nr_dt_is_signed(bdt) ? NR_DT_I64 : NR_DT_U64, false, x[1]);
        off = nr_pb_bin(p, NR_PO_MUL, NR_PT_S64, off, nr_pv_i64(es));
        return nr_pb_bin(p, NR_PO_ADD, NR_PT_S64, x[0], off);
    }
    default: NR_UNREACHABLE();
    }
}

/* Packed f16x2 / bf16x2 arithmetic on elements 2j and 2j+1, and f32 to
 * f16 / bf16 narrowing two at a time (cvt.rn.f16x2.f32). */
static bool pairable(NrPtx *p, NrOpId op, NrDtype dt) {
    NrOpcode opc = (NrOpcode)p->f->ops[op].opc;
    if (dt != NR_DT_F16 && dt != NR_DT_BF16) return false;
    switch (opc) {
    case NR_OP_CAST: return val_dt(p, p->f->ops[op].opnds[0]) == NR_DT_F32;
    case NR_OP_ADD:
    case NR_OP_SUB:
    case NR_OP_MUL:
    case NR_OP_FMA: return true;
    case NR_OP_MAX:
    case NR_OP_MIN: return true;
    default: return false;
    }
}

/* Elements j and j+1 of f32 x narrowed to dt (f16 or bf16) by one cvt:
 * its first source goes to the upper half. */
static void cast_pair(NrPtx *p, NrOpId op, NrDtype dt, const NrPv *x, int j, NrPv *r) {
    bool rtz = attr_is(p, op, NR_A_ROUNDING, "rtz");
    if (p->eval || (x[j].r == 0 && x[j + 1].r == 0)) {
        for (int u = 0; u < 2; u++) r[j + u] = nr_pe_cast(p, NR_DT_F32, dt, rtz, x[j + u]);
        return;
    }
    NrPv lo = nr_ptx_inreg(p, x[j]), hi = nr_ptx_inreg(p, x[j + 1]);
    NrPv d = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "cvt.%s.%s.f32 %s, %s, %s;", rtz ? "rz" : "rn", dt == NR_DT_F16 ? "f16x2" : "bf16x2",
                nr_ptx_reg(p, d.r), nr_ptx_reg(p, hi.r), nr_ptx_reg(p, lo.r));
    nr_pb_unpack(p, d, &r[j], &r[j + 1]);
}

static void elem_pair(NrPtx *p, NrOpId op, NrDtype dt, NrPv *const *x, int nx, int j, NrPv *r) {
    NrOpcode opc = (NrOpcode)p->f->ops[op].opc;
    NrPv w[3];
    if (opc == NR_OP_CAST) {
        cast_pair(p, op, dt, x[0], j, r);
        return;
    }
    for (int i = 0; i < nx; i++) w[i] = nr_pb_pack(p, x[i][j], x[i][j + 1]);
    NrPt t = dt == NR_DT_F16 ? NR_PT_F16X2 : NR_PT_BF16X2;
    NrPv v;
    bool nanall = attr_is(p, op, NR_A_NAN, "all");
    switch (opc) {
    case NR_OP_FMA: v = nr_pb_fma(p, t, w[0], w[1], w[2]); break;
    case NR_OP_MAX: v = nr_pb_bin(p, nanall ? NR_PO_MAX_NAN : NR_PO_MAX, t, w[0], w[1]); break;
    case NR_OP_MIN: v = nr_pb_bin(p, nanall ? NR_PO_MIN_NAN : NR_PO_MIN, t, w[0], w[1]); break;
    default:
        if (dt == NR_DT_BF16) v = bf16_arith(p, opc, w[0], w[1], true);
        else v = farith(p, opc, t, w[0], w[1]);
        break;
    }
    nr_pb_unpack(p, v, &r[j], &r[j + 1]);
}

/* Whether every read element (j & skip == 0) of every operand is the same. */
static bool uniform(NrPv *const *x, int nx, int n, uint32_t skip) {
    for (int i = 0; i < nx; i++)
        for (int j = 1; j < n; j++)
            if (!(j & skip) && (x[i][j].r != x[i][0].r || x[i][j].c != x[i][0].c)) return false;
    return true;
}

/* The units (elements, or pairs of them) of an elementwise op computed so
 * far, by their operands: open addressing over unit start + 1 (0 empty). */
typedef struct Seen {
    int32_t *slot;
    uint32_t mask;
} Seen;

static void seen_init(NrPtx *p, Seen *s, int units) {
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)units) cap *= 2;
    s->slot = nr_alloc(p->a, sizeof(int32_t) * cap);
    s->mask = cap - 1;
}

static bool same_opnds(NrPv *const *x, int nx, int a, int b, int unit) {
    for (int i = 0; i < nx; i++)
        for (int u = 0; u < unit; u++)
            if (x[i][a + u].r != x[i][b + u].r || x[i][a + u].c != x[i][b + u].c) return false;
    return true;
}

/* The start of an earlier unit with unit j's operands, or -1 (then j is
 * recorded). */
static int seen_find(Seen *s, NrPv *const *x, int nx, int j, int unit) {
    uint64_t h = 14695981039346656037u;
    for (int i = 0; i < nx; i++)
        for (int u = 0; u < unit; u++) h = (h ^ ((uint64_t)(uint32_t)x[i][j + u].r << 32 ^ x[i][j + u].c)) * 1099511628211u;
    uint32_t at = (uint32_t)(h ^ h >> 29) & s->mask;
    for (; s->slot[at]; at = (at + 1) & s->mask)
        if (same_opnds(x, nx, s->slot[at] - 1, j, unit)) return s->slot[at] - 1;
    s->slot[at] = j + 1;
    return -1;
}

/* Elements 2j, 2j+1 go together in f16x2 / bf16x2 instructions. */
static bool paired(NrPtx *p, NrOpId op, NrDtype dt, int n) { return pairable(p, op, dt) && n % 2 == 0; }

void nr_ptx_elem_demand(NrPtx *p, NrOpId op, uint32_t *skip) {
    const NrOp *o = &p->f->ops[op];
    NrValId r = o->results[0];
    int rl = nr_ptx_lay(p, nr_val_type(p->f, r));
    uint32_t k = skip[r];
    if (rl >= 0 && paired(p, op, val_dt(p, r), 1 << p->lays[rl].nreg)) k &= ~1u;
    for (int i = 0; i < o->nopnds; i++) {
        NrValId x = o->opnds[i];
        /* an operand in the result's layout is read element by element;
         * scalars and operands that are converted first, whole */
        if (rl >= 0 && nr_ptx_lay(p, nr_val_type(p->f, x)) == rl) skip[x] &= k;
        else skip[x] = 0;
    }
}

/* Register bits along which value v (of layout rl) is constant: element j
 * holds what element j & ~bits holds.  Axis analysis says v is constant on
 * aligned runs of C along a dimension; a register bit that moves the element
 * by 2^k < C along that dimension alone stays inside the run (element
 * coordinates are the thread's XOR the register's).  `cols < n` with n a
 * multiple of 16 is one compare per 16 columns. */
static uint32_t const_bits(NrPtx *p, NrValId v, int rl) {
    if (!p->ax || rl < 0) return 0;
    const NrPtxLay *L = &p->lays[rl];
    const NrAxisInfo *ai = &p->ax[v];
    uint32_t bits = 0;
    for (int b = 0; b < L->nreg; b++) {
        uint32_t f = L->regb[b];
        if (!nr_is_pow2(f)) continue;
        int pos = nr_log2_floor(f);
        for (int d = 0; d < L->rank; d++) {
            /* shape[d] is a power of two: dimension d has bits off[d] .. off[d] + log2(shape[d]) - 1 */
            if (pos < L->off[d] || pos >= L->off[d] + nr_log2_floor(L->shape[d])) continue;
            /* (the run is that of the largest power of two <= constancy) */
            if (pos - L->off[d] < nr_log2_floor(ai->constancy[d])) bits |= UINT32_C(1) << b;
        }
    }
    return bits;
}

bool nr_ptx_op_elem(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId r = o->results[0];
    int rl = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (rl == -2) return false;
    int n = rl >= 0 ? 1 << p->lays[rl].nreg : 1;
    int nx = o->nopnds;
    if (nx > 4) {
        nr_ptx_error(p, "'%s' with %d operands", nr_op_info[o->opc].name, nx);
        return false;
    }
    NrPv *x[4];
    for (int i = 0; i < nx; i++) x[i] = opnd_in(p, op, i, rl, n);
    NrPv *e = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    NrDtype dt = val_dt(p, r);
    /* elements no op reads are not computed */
    uint32_t skip = p->skip && rl >= 0 ? p->skip[r] : 0;
    if (uniform(x, nx, n, skip)) { /* splats and constants: compute once */
        NrPv xs[4];
        for (int i = 0; i < nx; i++) xs[i] = x[i][0];
        NrPv v = elem(p, op, xs);
        for (int j = 0; j < n; j++) e[j] = v;
    } else {
        int unit = paired(p, op, dt, n) ? 2 : 1;
        NrPk k = nr_ptx_kind(dt);
        uint32_t same_as = const_bits(p, r, rl) & (unit == 2 ? ~UINT32_C(1) : ~UINT32_C(0));
        Seen seen;
        seen_init(p, &seen, n / unit);
        for (int j = 0; j < n; j += unit) {
            if ((j & skip) && (unit == 1 || ((j + 1) & skip))) {
                for (int u = 0; u < unit; u++) e[j + u] = nr_pv_unused(k);
                continue;
            }
            if (j & same_as) { /* constant along these bits: an earlier unit's result */
                for (int u = 0; u < unit; u++) e[j + u] = e[(j & ~same_as) + u];
                continue;
            }
            /* elements whose operands an earlier one had (a broadcast
             * repeats registers) are that one's result: ops are pure */
            int same = seen_find(&seen, x, nx, j, unit);
            if (same >= 0) {
                for (int u = 0; u < unit; u++) e[j + u] = e[same + u];
                continue;
            }
            if (unit == 2) {
                elem_pair(p, op, dt, x, nx, j, e);
                continue;
            }
            NrPv xs[4];
            for (int i = 0; i < nx; i++) xs[i] = x[i][j];
            e[j] = elem(p, op, xs);
        }
    }
    nr_ptx_set(p, r, e, n);
    return true;
}

/* --- element-major runs ---------------------------------------------------------------------------------- */
/* A run of elementwise ops on one layout (GELU after a dot: add, mul, erf,
 * add, mul, cast over 128 accumulators a thread) emitted op by op keeps
 * every intermediate of every element live at once, and ptxas does not
 * undo that order: the epilogue of a 128x256 wgmma tile then spills.  So
 * such a run is emitted element-major instead: each pair of elements goes
 * through the whole chain before the next pair starts, and only the run's
 * results stay live.  A run is a maximal sequence of consecutive ops that
 * are either consts (emitted first; they depend on nothing) or elementwise
 * ops whose result has the run's layout and whose operands are results of
 * the run, values already in that layout, or scalars: nothing in a run
 * needs a layout conversion, so nothing in it touches shared memory. */
enum { RUN_MAX = 64 };

static bool elem_opc(NrOpcode opc) {
    switch (opc) {
    case NR_OP_ADD: case NR_OP_SUB: case NR_OP_MUL: case NR_OP_DIV: case NR_OP_DIV_RN: case NR_OP_REM:
    case NR_OP_AND: case NR_OP_OR: case NR_OP_XOR: case NR_OP_SHL: case NR_OP_SHR: case NR_OP_MAX:
    case NR_OP_MIN: case NR_OP_UMULHI: case NR_OP_NEG: case NR_OP_ABS: case NR_OP_EXP: case NR_OP_EXP2:
    case NR_OP_LOG: case NR_OP_LOG2: case NR_OP_SQRT: case NR_OP_SQRT_RN: case NR_OP_RSQRT: case NR_OP_SIN:
    case NR_OP_COS: case NR_OP_FLOOR: case NR_OP_CEIL: case NR_OP_ERF: case NR_OP_FMA: case NR_OP_MATH:
    case NR_OP_IMATH: case NR_OP_CMP: case NR_OP_SELECT: case NR_OP_CAST: case NR_OP_BITCAST:
    case NR_OP_PTRTOINT: case NR_OP_INTTOPTR: case NR_OP_ADDPTR: return true;
    default: return false;
    }
}

typedef struct Run {
    NrOpId op[RUN_MAX];
    bool is_const[RUN_MAX];
    int n;                 /* ops in the run */
    int nelem;             /* elementwise ops among them */
} Run;

static int run_index(const Run *run, NrValId v, const NrFunc *f) {
    for (int k = 0; k < run->n; k++)
        if (f->ops[run->op[k]].results[0] == v) return k;
    return -1;
}

/* Operand v of a run op in layout rl with n elements: from the run, in
 * place, or a scalar. */
static bool run_operand_ok(NrPtx *p, const Run *run, NrValId v, int rl, int n) {
    int k = run_index(run, v, p->f);
    if (k >= 0) {
        if (!run->is_const[k]) return true;
        int cl = nr_ptx_lay(p, nr_val_type(p->f, v));
        return cl == rl || cl == -1;
    }
    if (!p->vals[v].e) return false;
    const NrPtxVal *x = &p->vals[v];
    return x->lay < 0 || (x->lay == rl && x->n == n);
}

static void run_scan(NrPtx *p, NrOpId first, int rl, int n, Run *run) {
    run->n = run->nelem = 0;
    for (NrOpId o = first; o && run->n < RUN_MAX; o = p->f->ops[o].next) {
        const NrOp *op = &p->f->ops[o];
        NrOpcode opc = (NrOpcode)op->opc;
        if (opc == NR_OP_CONST && op->nresults == 1) {
            int cl = nr_ptx_lay(p, nr_val_type(p->f, op->results[0]));
            if (cl < -1) break;
            run->op[run->n] = o;
            run->is_const[run->n++] = true;
            continue;
        }
        if (!elem_opc(opc) || op->nresults != 1 || op->nopnds > 4 ||
            nr_ptx_lay(p, nr_val_type(p->f, op->results[0])) != rl)
            break;
        bool ok = true;
        for (int i = 0; ok && i < op->nopnds; i++) ok = run_operand_ok(p, run, op->opnds[i], rl, n);
        if (!ok) break;
        run->op[run->n] = o;
        run->is_const[run->n++] = false;
        run->nelem++;
    }
    /* Trailing consts belong to what follows. */
    while (run->n && run->is_const[run->n - 1]) run->n--;
}

NrOpId nr_ptx_elem_run(NrPtx *p, NrOpId first) {
    const NrOp *fo = &p->f->ops[first];
    if (!elem_opc((NrOpcode)fo->opc) || fo->nresults != 1) return NR_NONE;
    int rl = nr_ptx_lay(p, nr_val_type(p->f, fo->results[0]));
    if (rl < 0) return NR_NONE;
    int n = 1 << p->lays[rl].nreg;
    if (n < 4) return NR_NONE;
    Run run;
    run_scan(p, first, rl, n, &run);
    if (run.nelem < 2) return NR_NONE;

    /* Consts first, then ops whose operands are all uniform (computed once,
     * in order), then the rest element-major. */
    for (int k = 0; k < run.n; k++)
        if (run.is_const[k]) {
            p->op = run.op[k];
            nr_ptx_op_const(p, run.op[k]);
        }
    NrPv *res[RUN_MAX];
    NrPv *const *xin[RUN_MAX];
    bool uni[RUN_MAX];
    uint32_t skip[RUN_MAX], same_as[RUN_MAX];
    int unit[RUN_MAX];
    Seen seen[RUN_MAX];
    for (int k = 0; k < run.n; k++) {
        if (run.is_const[k]) continue;
        const NrOp *o = &p->f->ops[run.op[k]];
        NrPv **x = nr_alloc(p->a, sizeof(NrPv *) * 4);
        /* elements no op reads are not computed (NrPtx.skip) */
        skip[k] = p->skip ? p->skip[o->results[0]] : 0;
        uni[k] = true;
        for (int i = 0; i < o->nopnds; i++) {
            NrValId v = o->opnds[i];
            int j = run_index(&run, v, p->f);
            if (j >= 0 && !run.is_const[j]) {
                x[i] = res[j];
                uni[k] = uni[k] && uni[j];
            } else {
                x[i] = opnd_in(p, run.op[k], i, rl, n);
                uni[k] = uni[k] && uniform(&x[i], 1, n, skip[k]);
            }
        }
        xin[k] = x;
        res[k] = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
        NrDtype dt = val_dt(p, o->results[0]);
        unit[k] = paired(p, run.op[k], dt, n) ? 2 : 1;
        same_as[k] = const_bits(p, o->results[0], rl) & (unit[k] == 2 ? ~UINT32_C(1) : ~UINT32_C(0));
        if (uni[k]) {
            p->op = run.op[k];
            NrPv xs[4];
            for (int i = 0; i < o->nopnds; i++) xs[i] = x[i][0];
            NrPv v = elem(p, run.op[k], xs);
            for (int j = 0; j < n; j++) res[k][j] = v;
        } else {
            seen_init(p, &seen[k], n / unit[k]);
        }
    }
    for (int j = 0; j < n; j += 2)
        for (int k = 0; k < run.n; k++) {
            if (run.is_const[k] || uni[k]) continue;
            NrOpId op = run.op[k];
            const NrOp *o = &p->f->ops[op];
            NrDtype dt = val_dt(p, o->results[0]);
            int u = unit[k], nx = o->nopnds;
            p->op = op;
            for (int jj = j; jj < j + 2; jj += u) {
                if ((jj & skip[k]) && (u == 1 || ((jj + 1) & skip[k]))) {
                    for (int t = 0; t < u; t++) res[k][jj + t] = nr_pv_unused(nr_ptx_kind(dt));
                    continue;
                }
                if (jj & same_as[k]) { /* constant along these bits (const_bits) */
                    for (int t = 0; t < u; t++) res[k][jj + t] = res[k][(jj & ~same_as[k]) + t];
                    continue;
                }
                /* a unit whose operands an earlier one had is that one's result */
                int same = seen_find(&seen[k], xin[k], nx, jj, u);
                if (same >= 0) {
                    for (int t = 0; t < u; t++) res[k][jj + t] = res[k][same + t];
                    continue;
                }
                if (u == 2) {
                    elem_pair(p, op, dt, xin[k], nx, jj, res[k]);
                    continue;
                }
                NrPv xs[4];
                for (int i = 0; i < nx; i++) xs[i] = xin[k][i][jj];
                res[k][jj] = elem(p, op, xs);
            }
        }
    for (int k = 0; k < run.n; k++)
        if (!run.is_const[k]) nr_ptx_set(p, p->f->ops[run.op[k]].results[0], res[k], n);
    return run.op[run.n - 1];
}

/* --- inline assembly ------------------------------------------------------------------------------------ */
/* How an element type travels through an asm operand: elements per
 * register (narrow types pack into 32-bit words when pack > 1), and the
 * register kind of a single element. */
static int asm_epr(NrDtype dt, int pack) {
    int bw = nr_dt_bits(dt);
    if (bw >= 32 || pack <= 1) return 1;
    int epr = 32 / bw;
    return epr < pack ? epr : pack;
}

/* An operand's registers for elements e[0..pack) (e holds pack entries). */
static int asm_in_regs(NrPtx *p, NrDtype dt, int pack, const NrPv *e, NrPv *out) {
    int epr = asm_epr(dt, pack), nreg = (pack + epr - 1) / epr;
    for (int r = 0; r < nreg; r++) {
        if (epr == 1) {
            out[r] = nr_ptx_inreg(p, e[r]);
            continue;
        }
        NrPv w[4];
        int per = 32 / nr_dt_bits(dt);
        for (int j = 0; j < per; j++) w[j] = j < epr && r * epr + j < pack ? e[r * epr + j] : nr_pv_imm(nr_ptx_kind(dt), 0);
        out[r] = nr_ptx_inreg(p, nr_ptx_pack_word(p, dt, w));
    }
    return nreg;
}

static int asm_out_regs(NrPtx *p, NrDtype dt, int pack, NrPv *out) {
    int epr = asm_epr(dt, pack), nreg = (pack + epr - 1) / epr;
    NrPk k = epr > 1 ? NR_PK_I32 : nr_ptx_kind(dt);
    for (int r = 0; r < nreg; r++) out[r] = (NrPv){(uint8_t)k, nr_ptx_newreg(p, k), 0};
    return nreg;
}

/* Elements e[0..pack) of result dtype dt from its registers, in the emitter's form. */
static void asm_unpack(NrPtx *p, NrDtype dt, int pack, const NrPv *regs, NrPv *e) {
    int epr = asm_epr(dt, pack), nreg = (pack + epr - 1) / epr;
    for (int r = 0; r < nreg; r++) {
        if (epr == 1) {
            NrPv v = regs[r];
            int bw = nr_dt_bits(dt);
            if (nr_ptx_kind(dt) == NR_PK_I32 && bw < 32) v = norm(p, dt, v); /* the asm may leave any upper bits */
            else if (nr_dt_is_fp8(dt)) v = nr_pb_bin(p, NR_PO_AND, NR_PT_B16, v, nr_pv_imm(NR_PK_H, 0xff));
            e[r] = v;
            continue;
        }
        NrPv w[4];
        nr_ptx_unpack_word(p, dt, regs[r], w);
        for (int j = 0; j < epr && r * epr + j < pack; j++) e[r * epr + j] = w[j];
    }
}

/* The asm text with $N / ${N} replaced by operand N's register and $$ by $. */
static char *asm_subst(NrPtx *p, const char *text, char **names, int n, bool *ok) {
    size_t len = strlen(text), cap = len * 2 + 64, o = 0;
    char *out = nr_alloc(p->a, cap);
    for (size_t i = 0; i < len; i++) {
        const char *rep = NULL;
        char one[2] = {text[i], 0};
        if (text[i] == '$' && i + 1 < len && text[i + 1] == '$') {
            rep = "$";
            i++;
        } else if (text[i] == '$' && i + 1 < len && (isdigit((unsigned char)text[i + 1]) || text[i + 1] == '{')) {
            size_t j = i + 1;
            bool brace = text[j] == '{';
            if (brace) j++;
            long v = 0;
            size_t d0 = j;
            while (j < len && isdigit((unsigned char)text[j]) && v < 100000) v = v * 10 + (text[j++] - '0');
            if (j == d0 || (brace && (j >= len || text[j] != '}')) || v >= n) {
                nr_ptx_error(p, "inline assembly names operand $%.*s, but it has %d operands ($0 to $%d)",
                             (int)(j - i - 1 + (brace && j < len)), text + i + 1, n, n - 1);
                *ok = false;
                return out;
            }
            if (brace) j++;
            rep = names[v];
            i = j - 1;
        } else {
            rep = one;
        }
        size_t rl = strlen(rep);
        if (o + rl + 1 > cap) {
            size_t nc = (o + rl + 1) * 2;
            out = nr_arena_grow(p->a, out, cap, nc);
            cap = nc;
        }
        memcpy(out + o, rep, rl);
        o += rl;
        out[o] = 0;
    }
    return out;
}

bool nr_ptx_op_inline_asm(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    int nres = o->nresults, nin = o->nopnds;
    int rl = nr_ptx_lay(p, nr_val_type(p->f, o->results[0]));
    if (rl == -2) return false;
    int n = rl >= 0 ? 1 << p->lays[rl].nreg : 1;
    int pack = (int)nr_op_int(p->f, op, NR_A_PACK, 1);
    if (pack < 1 || pack > 64) {
        nr_ptx_error(p, "inline assembly with pack %d", pack);
        return false;
    }
    const char *text = nr_op_str(p->f, op, NR_A_ASM, "");
    const char *cons = nr_op_str(p->f, op, NR_A_CONSTRAINTS, "");
    NrPv **in = nr_alloc(p->a, sizeof(NrPv *) * (size_t)(nin + 1));
    for (int i = 0; i < nin; i++) in[i] = opnd_in(p, op, i, rl, n);
    NrPv **out = nr_alloc(p->a, sizeof(NrPv *) * (size_t)nres);
    for (int r = 0; r < nres; r++) out[r] = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n + pack));
    /* operands per instance: the results' registers, then the inputs' */
    int nops = 0;
    for (int r = 0; r < nres; r++) {
        int epr = asm_epr(val_dt(p, o->results[r]), pack);
        nops += (pack + epr - 1) / epr;
    }
    for (int i = 0; i < nin; i++) {
        int epr = asm_epr(val_dt(p, o->opnds[i]), pack);
        nops += (pack + epr - 1) / epr;
    }
    int ncons = 0;
    for (const char *c = cons; *c;) {
        while (*c == ' ') c++;
        if (!*c) break;
        if (*c != '~') ncons++;
        while (*c && *c != ',') c++;
        if (*c == ',') c++;
    }
    if (ncons != nops) {
        nr_ptx_error(p, "inline assembly: %d constraints for %d operands (%d results and %d inputs, pack %d)", ncons,
                     nops, nres, nin, pack);
        return false;
    }
    char **names = nr_alloc(p->a, sizeof(char *) * (size_t)nops);
    NrPv *regs = nr_alloc(p->a, sizeof(NrPv) * (size_t)nops);
    NrPv *el = nr_alloc(p->a, sizeof(NrPv) * (size_t)pack);
    for (int base = 0; base < n; base += pack) {
        int k = 0;
        for (int r = 0; r < nres; r++) k += asm_out_regs(p, val_dt(p, o->results[r]), pack, regs + k);
        for (int i = 0; i < nin; i++) {
            for (int j = 0; j < pack; j++) el[j] = in[i][(base + j) % n]; /* a short tail repeats elements */
            k += asm_in_regs(p, val_dt(p, o->opnds[i]), pack, el, regs + k);
        }
        for (int q = 0; q < nops; q++) names[q] = nr_strdup(p->a, nr_ptx_reg(p, regs[q].r));
        bool ok = true;
        char *body = asm_subst(p, text, names, nops, &ok);
        if (!ok) return false;
        nr_ptx_emit(p, "{");
        nr_ptx_emit(p, "%s", body);
        nr_ptx_emit(p, "}");
        k = 0;
        for (int r = 0; r < nres; r++) {
            NrDtype dt = val_dt(p, o->results[r]);
            int epr = asm_epr(dt, pack);
            asm_unpack(p, dt, pack, regs + k, out[r] + base);
            k += (pack + epr - 1) / epr;
        }
    }
    for (int r = 0; r < nres; r++) nr_ptx_set(p, o->results[r], out[r], n);
    return true;
}
