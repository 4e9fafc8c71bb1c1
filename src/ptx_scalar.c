/* ptx_scalar.c - the scalar instruction layer of the PTX emitter.
 *
 * One function per PTX instruction family (bin, un, fma, setp, selp, cvt,
 * predicate logic, moves, loops).  Each either writes the instruction with
 * fresh destination registers, or - when every operand is an immediate and
 * the instruction is exact, or in evaluation mode - computes the result on
 * the host with the instruction's exact semantics:
 *   ints        wrap at the type's width; shift amounts >= the width give 0
 *               (shr.s: the sign fill); division by zero is left to callers
 *   f32, f64    IEEE round to nearest even (.rn); subnormals kept (no .ftz)
 *   f16, bf16   computed in f32 and rounded once (exact for + - *; fma
 *               rounds the double result)
 *   min, max    the non-NaN operand; .NaN forms give the canonical NaN
 *   cvt         float to int truncates/rounds, saturates, NaN -> 0; int and
 *               float narrowing round once (nr_fp_round)
 * Approximate instructions (ex2/lg2/sqrt/rsqrt .approx, div.full) are never
 * folded; evaluation mode computes them with libm.  Evaluation mode exists for tests: it runs the
 * emitter's instruction sequences (integer division, casts, fp8 encoding,
 * the math library) on the CPU against the interpreter and libm. */
#include "fp.h"
#include "ptx.h"

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* --- types ------------------------------------------------------------------------------------------ */
typedef struct PtInfo {
    const char *name;
    int bits;
    NrPk k;
    char cls; /* p pred, b bits, s signed, u unsigned, f float, x packed floats */
} PtInfo;

static const PtInfo pts[NR_PT_COUNT] = {
    [NR_PT_PRED] = {".pred", 1, NR_PK_P, 'p'},     [NR_PT_B16] = {".b16", 16, NR_PK_H, 'b'},
    [NR_PT_B32] = {".b32", 32, NR_PK_I32, 'b'},    [NR_PT_B64] = {".b64", 64, NR_PK_I64, 'b'},
    [NR_PT_S8] = {".s8", 8, NR_PK_I32, 's'},       [NR_PT_S16] = {".s16", 16, NR_PK_I32, 's'},
    [NR_PT_S32] = {".s32", 32, NR_PK_I32, 's'},    [NR_PT_S64] = {".s64", 64, NR_PK_I64, 's'},
    [NR_PT_U8] = {".u8", 8, NR_PK_I32, 'u'},       [NR_PT_U16] = {".u16", 16, NR_PK_I32, 'u'},
    [NR_PT_U32] = {".u32", 32, NR_PK_I32, 'u'},    [NR_PT_U64] = {".u64", 64, NR_PK_I64, 'u'},
    [NR_PT_F16] = {".f16", 16, NR_PK_H, 'f'},      [NR_PT_BF16] = {".bf16", 16, NR_PK_H, 'f'},
    [NR_PT_F32] = {".f32", 32, NR_PK_F32, 'f'},    [NR_PT_F64] = {".f64", 64, NR_PK_F64, 'f'},
    [NR_PT_F16X2] = {".f16x2", 32, NR_PK_I32, 'x'}, [NR_PT_BF16X2] = {".bf16x2", 32, NR_PK_I32, 'x'},
    [NR_PT_U16H] = {".u16", 16, NR_PK_H, 'u'},
};

NrPk nr_pt_kind(NrPt t) { return pts[t].k; }
const char *nr_pt_name(NrPt t) { return pts[t].name; }
int nr_pt_bits(NrPt t) { return pts[t].bits; }

/* The narrow integer types (.s8 .u8 .s16 .u16) name .b32 registers; .u16
 * in a .b16 register is NR_PT_U16H. */

/* --- immediates ---------------------------------------------------------------------------------------- */
NrPv nr_pv_imm(NrPk k, uint64_t bits) {
    NrPv v = {(uint8_t)k, 0, bits};
    return v;
}

static uint32_t f2u(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static float u2f(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static uint64_t d2u(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}
static double u2d(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}

NrPv nr_pv_f32(float x) { return nr_pv_imm(NR_PK_F32, f2u(x)); }
NrPv nr_pv_f64(double x) { return nr_pv_imm(NR_PK_F64, d2u(x)); }
NrPv nr_pv_i32(int64_t x) { return nr_pv_imm(NR_PK_I32, (uint32_t)x); }
NrPv nr_pv_i64(int64_t x) { return nr_pv_imm(NR_PK_I64, (uint64_t)x); }
NrPv nr_pv_pred(bool b) { return nr_pv_imm(NR_PK_P, b); }

/* An immediate as an operand of an instruction of type t.  16-bit float
 * immediates are not accepted by PTX arithmetic: callers pass registers. */
static const char *imm_str(NrPtx *p, NrPt t, uint64_t c) {
    char *s = p->names[p->name_next];
    p->name_next = (p->name_next + 1) % (int)NR_COUNTOF(p->names);
    switch (pts[t].cls) { /* (no snprintf: a hot path) */
    case 'f':
        s[0] = '0';
        if (pts[t].bits == 32) s[1] = 'f', nr_ptx_put_hex(s + 2, (uint32_t)c, 8);
        else if (pts[t].bits == 64) s[1] = 'd', nr_ptx_put_hex(s + 2, c, 16);
        else s[1] = 'x', nr_ptx_put_hex(s + 2, c & 0xffff, 4);
        break;
    case 's':
        if (pts[t].bits == 64) nr_ptx_put_dec(s, (int64_t)c);
        else nr_ptx_put_dec(s, (int32_t)(uint32_t)c);
        break;
    default:
        if (pts[t].bits == 64) nr_ptx_put_udec(s, c);
        else nr_ptx_put_udec(s, (uint32_t)c);
        break;
    }
    return s;
}

/* Operand text of v in an instruction of type t. */
static const char *opnd(NrPtx *p, NrPt t, NrPv v) {
    if (v.r) return nr_ptx_reg(p, v.r);
    return imm_str(p, t, v.c);
}

/* v as a register if it is an immediate that t's instruction cannot take. */
static NrPv fix(NrPtx *p, NrPt t, NrPv v) {
    if (v.r == 0 && (pts[t].bits == 16 || pts[t].cls == 'x' || v.k == NR_PK_P)) return nr_ptx_inreg(p, v);
    return v;
}

static NrPv fresh(NrPtx *p, NrPk k) {
    NrPv v = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
    return v;
}

/* --- host semantics ------------------------------------------------------------------------------------------ */
static uint64_t wmask(int bits) { return bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1; }
static int64_t sext(uint64_t v, int bits) {
    if (bits >= 64) return (int64_t)v;
    uint64_t m = UINT64_C(1) << (bits - 1);
    v &= wmask(bits);
    return (int64_t)((v ^ m) - m);
}

/* Float bits of type t as a double (exact) and back (rounded once). */
static double fget(NrPt t, uint64_t c) {
    switch (t) {
    case NR_PT_F16: return nr_f16_to_f32((uint16_t)c);
    case NR_PT_BF16: return nr_bf16_to_f32((uint16_t)c);
    case NR_PT_F32: return u2f((uint32_t)c);
    default: return u2d(c);
    }
}
static uint64_t fput(NrPt t, double x, bool rtz) {
    switch (t) {
    case NR_PT_F16: return nr_fp_round(x, NR_FPF_F16, rtz);
    case NR_PT_BF16: return nr_fp_round(x, NR_FPF_BF16, rtz);
    case NR_PT_F32: return nr_fp_round(x, NR_FPF_F32, rtz);
    default: return d2u(x);
    }
}
static uint64_t canon_nan(NrPt t) {
    switch (t) {
    case NR_PT_F16: return 0x7fff;
    case NR_PT_BF16: return 0x7fff;
    case NR_PT_F32: return 0x7fffffff;
    default: return UINT64_C(0x7fffffffffffffff);
    }
}
static bool is_nan(double x) { return x != x; }

/* One float operation in the type's precision.  f16/bf16 compute in f32
 * (doubles here, rounded to f32 first, which is exact for + - * of narrow
 * operands) and round once. */
static uint64_t fbin(NrPo o, NrPt t, uint64_t a, uint64_t b) {
    double x = fget(t, a), y = fget(t, b), z;
    if (t == NR_PT_F64) {
        switch (o) {
        case NR_PO_ADD: return d2u(x + y);
        case NR_PO_SUB: return d2u(x - y);
        case NR_PO_MUL: return d2u(x * y);
        case NR_PO_DIV:
        case NR_PO_DIV_FULL: return d2u(x / y);
        default: break;
        }
    } else if (t == NR_PT_F32 || o == NR_PO_ADD || o == NR_PO_SUB || o == NR_PO_MUL || o == NR_PO_DIV) {
        float fx = (float)x, fy = (float)y, fz;
        switch (o) {
        case NR_PO_ADD: fz = fx + fy; break;
        case NR_PO_SUB: fz = fx - fy; break;
        case NR_PO_MUL: fz = fx * fy; break;
        case NR_PO_DIV:
        case NR_PO_DIV_FULL: fz = fx / fy; break;
        default: goto other;
        }
        return t == NR_PT_F32 ? f2u(fz) : fput(t, fz, false);
    }
other:
    switch (o) {
    case NR_PO_MIN:
    case NR_PO_MAX:
        if (is_nan(x)) return is_nan(y) ? canon_nan(t) : b;
        if (is_nan(y)) return a;
        if (x == y) { /* -0 < +0 */
            bool xs = signbit(x) != 0;
            return (o == NR_PO_MAX) == xs ? b : a;
        }
        return (o == NR_PO_MAX) == (x > y) ? a : b;
    case NR_PO_MIN_NAN:
    case NR_PO_MAX_NAN:
        if (is_nan(x) || is_nan(y)) return canon_nan(t);
        return fbin(o == NR_PO_MIN_NAN ? NR_PO_MIN : NR_PO_MAX, t, a, b);
    case NR_PO_COPYSIGN: {
        uint64_t sb = UINT64_C(1) << (pts[t].bits - 1);
        return (b & ~sb) | (a & sb);
    }
    default: break;
    }
    z = 0;
    NR_UNREACHABLE();
    return d2u(z);
}

static uint64_t ibin(NrPo o, NrPt t, uint64_t a, uint64_t b) {
    int w = pts[t].bits;
    bool sg = pts[t].cls == 's';
    uint64_t m = wmask(w);
    a &= m;
    uint64_t bb = b & m;
    int64_t sa = sext(a, w), sb = sext(bb, w);
    switch (o) {
    case NR_PO_ADD: return (a + bb) & m;
    case NR_PO_SUB: return (a - bb) & m;
    case NR_PO_MUL: return (a * bb) & m;
    case NR_PO_MULHI:
        if (w == 64) {
            if (sg) return (uint64_t)(((__int128)sa * (__int128)sb) >> 64);
            return (uint64_t)(((unsigned __int128)a * bb) >> 64);
        }
        if (sg) return (uint64_t)((sa * sb) >> 32) & m;
        return ((a * bb) >> 32) & m;
    case NR_PO_DIV:
        if (bb == 0) return m; /* undefined in PTX; callers never divide by zero */
        if (sg) {
            if (sb == -1) return (0 - a) & m;
            return (uint64_t)(sa / sb) & m;
        }
        return a / bb;
    case NR_PO_REM:
        if (bb == 0) return a;
        if (sg) {
            if (sb == -1) return 0;
            return (uint64_t)(sa % sb) & m;
        }
        return a % bb;
    case NR_PO_AND: return a & bb;
    case NR_PO_OR: return a | bb;
    case NR_PO_XOR: return a ^ bb;
    case NR_PO_SHL: {
        uint32_t s = (uint32_t)b; /* the amount is a .u32 */
        return s >= (uint32_t)w ? 0 : (a << s) & m;
    }
    case NR_PO_SHR: {
        uint32_t s = (uint32_t)b;
        if (sg) return s >= (uint32_t)w ? (sa < 0 ? m : 0) : (uint64_t)(sa >> s) & m;
        return s >= (uint32_t)w ? 0 : a >> s;
    }
    case NR_PO_MIN: return sg ? (sa < sb ? a : bb) : (a < bb ? a : bb);
    case NR_PO_MAX: return sg ? (sa > sb ? a : bb) : (a > bb ? a : bb);
    default: NR_UNREACHABLE();
    }
}

static uint64_t packed(NrPo o, NrPt t, uint64_t a, uint64_t b, uint64_t c, bool is_fma) {
    NrPt h = t == NR_PT_F16X2 ? NR_PT_F16 : NR_PT_BF16;
    uint64_t r = 0;
    for (int i = 0; i < 2; i++) {
        uint64_t x = a >> (16 * i) & 0xffff, y = b >> (16 * i) & 0xffff, z = c >> (16 * i) & 0xffff, q;
        if (is_fma) q = fput(h, fma(fget(h, x), fget(h, y), fget(h, z)), false);
        else q = fbin(o, h, x, y);
        r |= (q & 0xffff) << (16 * i);
    }
    return r;
}

static bool approx(NrPo o) {
    return o == NR_PO_DIV_FULL || o == NR_PO_SQRT_APPROX || o == NR_PO_RSQRT_APPROX || o == NR_PO_EX2_APPROX ||
           o == NR_PO_LG2_APPROX || o == NR_PO_EX2_APPROX_FTZ;
}

static bool foldable(NrPtx *p, NrPo o) { return p->eval || !approx(o); }

/* --- binary and unary ------------------------------------------------------------------------------------ */
/* Float add, sub and mul round each result (.rn) unless `contract`: then
 * ptxas may fuse a multiply into the add that uses it. */
static const char *bin_name(NrPo o, NrPt t, bool contract) {
    bool f = pts[t].cls == 'f' || pts[t].cls == 'x';
    switch (o) {
    case NR_PO_ADD: return f ? (contract ? "add" : "add.rn") : "add";
    case NR_PO_SUB: return f ? (contract ? "sub" : "sub.rn") : "sub";
    case NR_PO_MUL: return f ? (contract ? "mul" : "mul.rn") : "mul.lo";
    case NR_PO_MULHI: return "mul.hi";
    case NR_PO_DIV: return f ? "div.rn" : "div";
    case NR_PO_DIV_FULL: return "div.full";
    case NR_PO_REM: return "rem";
    case NR_PO_AND: return "and";
    case NR_PO_OR: return "or";
    case NR_PO_XOR: return "xor";
    case NR_PO_SHL: return "shl";
    case NR_PO_SHR: return "shr";
    case NR_PO_MIN: return "min";
    case NR_PO_MAX: return "max";
    case NR_PO_MIN_NAN: return "min.NaN";
    case NR_PO_MAX_NAN: return "max.NaN";
    case NR_PO_COPYSIGN: return "copysign";
    default: NR_UNREACHABLE();
    }
}

/* Integer identities with one immediate operand: x + 0, x * 1, x & ~0,
 * x << 0, ... (never for floats: -0 + 0 is +0). */
static bool identity(NrPo o, NrPt t, NrPv a, NrPv b, NrPv *out) {
    char c = pts[t].cls;
    if (c != 's' && c != 'u' && c != 'b') return false;
    uint64_t m = wmask(pts[t].bits);
    NrPk k = pts[t].k;
    for (int side = 0; side < 2; side++) {
        NrPv x = side ? b : a, imm = side ? a : b;
        if (imm.r != 0 || x.r == 0) continue;
        uint64_t v = imm.c & m;
        bool right_only = o == NR_PO_SUB || o == NR_PO_SHL || o == NR_PO_SHR;
        if (right_only && side == 1) continue;
        if ((o == NR_PO_ADD || o == NR_PO_SUB || o == NR_PO_OR || o == NR_PO_XOR || o == NR_PO_SHL ||
             o == NR_PO_SHR) && v == 0) {
            *out = nr_pb_bits(NULL, k, x);
            return true;
        }
        if ((o == NR_PO_MUL && v == 1) || (o == NR_PO_AND && v == m)) {
            *out = nr_pb_bits(NULL, k, x);
            return true;
        }
        if ((o == NR_PO_MUL || o == NR_PO_AND) && v == 0) {
            *out = nr_pv_imm(k, 0);
            return true;
        }
    }
    return false;
}

NrPv nr_pb_bin(NrPtx *p, NrPo o, NrPt t, NrPv a, NrPv b) {
    NrPk k = pts[t].k;
    if (a.r == 0 && b.r == 0 && foldable(p, o)) {
        uint64_t r;
        char c = pts[t].cls;
        if (c == 'f') r = fbin(o, t, a.c, b.c);
        else if (c == 'x') r = packed(o, t, a.c, b.c, 0, false);
        else r = ibin(o, t, a.c, b.c);
        return nr_pv_imm(k, r);
    }
    NrPv same;
    if (identity(o, t, a, b, &same)) return same;
    NR_ASSERT(!p->eval);
    a = fix(p, t, a);
    b = fix(p, t, b);
    NrPv d = fresh(p, k);
    /* Shift amounts are .u32 whatever the shifted type. */
    const char *bs = (o == NR_PO_SHL || o == NR_PO_SHR) ? opnd(p, NR_PT_U32, b) : opnd(p, t, b);
    nr_ptx_emit(p, "%s%s %s, %s, %s;", bin_name(o, t, p->contract), pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a), bs);
    return d;
}

static uint64_t fun(NrPo o, NrPt t, uint64_t a) {
    double x = fget(t, a);
    uint64_t sb = UINT64_C(1) << (pts[t].bits - 1);
    bool f32 = t != NR_PT_F64;
    switch (o) {
    case NR_PO_NEG: return a ^ sb;
    case NR_PO_ABS: return a & ~sb;
    case NR_PO_SQRT:
    case NR_PO_SQRT_APPROX: return f32 ? fput(t, sqrtf((float)x), false) : d2u(sqrt(x));
    case NR_PO_RSQRT_APPROX: return f32 ? fput(t, 1.0f / sqrtf((float)x), false) : d2u(1.0 / sqrt(x));
    case NR_PO_RCP: return f32 ? fput(t, 1.0f / (float)x, false) : d2u(1.0 / x);
    case NR_PO_EX2_APPROX: return fput(t, exp2f((float)x), false);
    case NR_PO_EX2_APPROX_FTZ: {
        float r = exp2f(fabsf((float)x) < FLT_MIN ? 0.0f : (float)x);
        return fput(t, fabsf(r) < FLT_MIN ? 0.0f : r, false);
    }
    case NR_PO_LG2_APPROX: return fput(t, log2f((float)x), false);
    case NR_PO_RINT: return fput(t, f32 ? rintf((float)x) : rint(x), false);
    case NR_PO_TRUNC: return fput(t, f32 ? truncf((float)x) : trunc(x), false);
    case NR_PO_FLOOR: return fput(t, f32 ? floorf((float)x) : floor(x), false);
    case NR_PO_CEIL: return fput(t, f32 ? ceilf((float)x) : ceil(x), false);
    case NR_PO_TF32: return f2u(nr_f32_round_tf32(u2f((uint32_t)a)));
    default: NR_UNREACHABLE();
    }
}

NrPv nr_pb_un(NrPtx *p, NrPo o, NrPt t, NrPv a) {
    NrPk k = (o == NR_PO_CLZ || o == NR_PO_POPC) ? NR_PK_I32 : pts[t].k;
    if (a.r == 0 && foldable(p, o)) {
        int w = pts[t].bits;
        uint64_t m = wmask(w), c = a.c & m, r;
        switch (pts[t].cls) {
        case 'f': r = fun(o, t, a.c); break;
        case 'x': {
            NrPt h = t == NR_PT_F16X2 ? NR_PT_F16 : NR_PT_BF16;
            r = (fun(o, h, c & 0xffff) & 0xffff) | (fun(o, h, c >> 16) & 0xffff) << 16;
            break;
        }
        default:
            switch (o) {
            case NR_PO_NEG: r = (0 - c) & m; break;
            case NR_PO_ABS: r = sext(c, w) < 0 ? (0 - c) & m : c; break;
            case NR_PO_NOT: r = ~c & m; break;
            case NR_PO_CLZ: r = c == 0 ? (uint64_t)w : (uint64_t)(__builtin_clzll(c) - (64 - w)); break;
            case NR_PO_POPC: r = (uint64_t)__builtin_popcountll(c); break;
            case NR_PO_BREV:
                r = 0;
                for (int i = 0; i < w; i++)
                    if (c >> i & 1) r |= UINT64_C(1) << (w - 1 - i);
                break;
            default: NR_UNREACHABLE();
            }
        }
        return nr_pv_imm(k, r);
    }
    NR_ASSERT(!p->eval);
    a = fix(p, t, a);
    NrPv d = fresh(p, k);
    const char *n;
    switch (o) {
    case NR_PO_NEG: n = "neg"; break;
    case NR_PO_ABS: n = "abs"; break;
    case NR_PO_NOT: n = "not"; break;
    case NR_PO_SQRT: n = "sqrt.rn"; break;
    case NR_PO_SQRT_APPROX: n = "sqrt.approx"; break;
    case NR_PO_RSQRT_APPROX: n = t == NR_PT_F64 ? "rsqrt.approx.ftz" : "rsqrt.approx"; break;
    case NR_PO_RCP: n = "rcp.rn"; break;
    case NR_PO_EX2_APPROX: n = "ex2.approx"; break;
    case NR_PO_EX2_APPROX_FTZ: n = "ex2.approx.ftz"; break;
    case NR_PO_LG2_APPROX: n = "lg2.approx"; break;
    case NR_PO_RINT: n = "cvt.rni"; break;
    case NR_PO_TRUNC: n = "cvt.rzi"; break;
    case NR_PO_FLOOR: n = "cvt.rmi"; break;
    case NR_PO_CEIL: n = "cvt.rpi"; break;
    case NR_PO_CLZ: n = "clz"; break;
    case NR_PO_POPC: n = "popc"; break;
    case NR_PO_BREV: n = "brev"; break;
    case NR_PO_TF32: n = "cvt.rna.tf32"; break;
    default: NR_UNREACHABLE();
    }
    if (o >= NR_PO_RINT && o <= NR_PO_CEIL)
        nr_ptx_emit(p, "%s%s%s %s, %s;", n, pts[t].name, pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a));
    else
        nr_ptx_emit(p, "%s%s %s, %s;", n, pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a));
    return d;
}

NrPv nr_pb_fma(NrPtx *p, NrPt t, NrPv a, NrPv b, NrPv c) {
    NrPk k = pts[t].k;
    if (a.r == 0 && b.r == 0 && c.r == 0) {
        uint64_t r;
        if (t == NR_PT_F32) r = f2u(fmaf(u2f((uint32_t)a.c), u2f((uint32_t)b.c), u2f((uint32_t)c.c)));
        else if (t == NR_PT_F64) r = d2u(fma(u2d(a.c), u2d(b.c), u2d(c.c)));
        else if (pts[t].cls == 'x') r = packed(NR_PO_ADD, t, a.c, b.c, c.c, true);
        else r = fput(t, fma(fget(t, a.c), fget(t, b.c), fget(t, c.c)), false);
        return nr_pv_imm(k, r);
    }
    NR_ASSERT(!p->eval);
    a = fix(p, t, a);
    b = fix(p, t, b);
    c = fix(p, t, c);
    NrPv d = fresh(p, k);
    nr_ptx_emit(p, "fma.rn%s %s, %s, %s, %s;", pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a), opnd(p, t, b),
                opnd(p, t, c));
    return d;
}

/* --- directed rounding and three-operand integer instructions --------------------------------------------- */
/* The host computes in the requested mode; operands and results pass
 * through volatile objects so that the arithmetic stays between the mode
 * changes. */
static uint64_t host_rounded(const char *op, int mode, NrPt t, const NrPv *x) {
    static const int modes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
    int saved = fegetround();
    fesetround(modes[mode & 3]);
    uint64_t r;
    if (t == NR_PT_F64) {
        volatile double a = u2d(x[0].c), b = 0, c = 0, d;
        if (strcmp(op, "fma") == 0) b = u2d(x[1].c), c = u2d(x[2].c);
        else if (strcmp(op, "sqrt") != 0 && strcmp(op, "rcp") != 0) b = u2d(x[1].c);
        if (strcmp(op, "add") == 0) d = a + b;
        else if (strcmp(op, "sub") == 0) d = a - b;
        else if (strcmp(op, "mul") == 0) d = a * b;
        else if (strcmp(op, "div") == 0) d = a / b;
        else if (strcmp(op, "fma") == 0) d = fma(a, b, c);
        else if (strcmp(op, "sqrt") == 0) d = sqrt(a);
        else d = 1.0 / a;
        r = d2u(d);
    } else {
        volatile float a = u2f((uint32_t)x[0].c), b = 0, c = 0, d;
        if (strcmp(op, "fma") == 0) b = u2f((uint32_t)x[1].c), c = u2f((uint32_t)x[2].c);
        else if (strcmp(op, "sqrt") != 0 && strcmp(op, "rcp") != 0) b = u2f((uint32_t)x[1].c);
        if (strcmp(op, "add") == 0) d = a + b;
        else if (strcmp(op, "sub") == 0) d = a - b;
        else if (strcmp(op, "mul") == 0) d = a * b;
        else if (strcmp(op, "div") == 0) d = a / b;
        else if (strcmp(op, "fma") == 0) d = fmaf(a, b, c);
        else if (strcmp(op, "sqrt") == 0) d = sqrtf(a);
        else d = 1.0f / a;
        r = f2u(d);
    }
    fesetround(saved);
    return r;
}

NrPv nr_pb_rounded(NrPtx *p, const char *op, int mode, NrPt t, const NrPv *x) {
    NR_ASSERT(t == NR_PT_F32 || t == NR_PT_F64);
    int n = strcmp(op, "fma") == 0 ? 3 : strcmp(op, "sqrt") == 0 || strcmp(op, "rcp") == 0 ? 1 : 2;
    bool imm = true;
    for (int i = 0; i < n; i++) imm = imm && x[i].r == 0;
    if (imm) return nr_pv_imm(pts[t].k, host_rounded(op, mode, t, x));
    NR_ASSERT(!p->eval);
    static const char *const rm[] = {".rn", ".rz", ".rm", ".rp"};
    NrPv d = fresh(p, pts[t].k);
    if (n == 1)
        nr_ptx_emit(p, "%s%s%s %s, %s;", op, rm[mode & 3], pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, x[0]));
    else if (n == 2)
        nr_ptx_emit(p, "%s%s%s %s, %s, %s;", op, rm[mode & 3], pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, x[0]),
                    opnd(p, t, x[1]));
    else
        nr_ptx_emit(p, "%s%s%s %s, %s, %s, %s;", op, rm[mode & 3], pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, x[0]),
                    opnd(p, t, x[1]), opnd(p, t, x[2]));
    return d;
}

NrPv nr_pb_op3(NrPtx *p, const char *op, NrPt t, NrPv a, NrPv b, NrPv c) {
    bool prmt = strcmp(op, "prmt") == 0;
    if (prmt) t = NR_PT_B32;
    NrPk k = pts[t].k;
    if (a.r == 0 && b.r == 0 && c.r == 0) {
        int w = pts[t].bits;
        uint64_t m = wmask(w), x = a.c & m, y = b.c & m, z = c.c & m, r;
        if (prmt) { /* selector nibbles: bit 3 replicates the byte's sign */
            uint64_t v = x | y << 32;
            r = 0;
            for (int i = 0; i < 4; i++) {
                int s = (int)(z >> (4 * i) & 15);
                uint64_t byte = v >> (8 * (s & 7)) & 0xff;
                if (s & 8) byte = byte & 0x80 ? 0xff : 0;
                r |= byte << (8 * i);
            }
        } else {
            bool sg = pts[t].cls == 's';
            int64_t sx = sext(x, w), sy = sext(y, w);
            uint64_t dd = sg ? (uint64_t)(sx > sy ? sx - sy : sy - sx) : (x > y ? x - y : y - x);
            r = (dd + z) & m;
        }
        return nr_pv_imm(k, r);
    }
    NR_ASSERT(!p->eval);
    a = fix(p, t, a);
    b = fix(p, t, b);
    c = fix(p, t, c);
    NrPv d = fresh(p, k);
    nr_ptx_emit(p, "%s%s %s, %s, %s, %s;", op, pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a), opnd(p, t, b),
                opnd(p, t, c));
    return d;
}

/* --- comparison and selection ----------------------------------------------------------------------------- */
static const char *const pc_names[NR_PC_COUNT] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                                  "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

static bool fcmp(NrPc c, double x, double y) {
    bool un = is_nan(x) || is_nan(y);
    switch (c) {
    case NR_PC_EQ: return x == y;
    case NR_PC_NE: return !un && x != y;
    case NR_PC_LT: return x < y;
    case NR_PC_LE: return x <= y;
    case NR_PC_GT: return x > y;
    case NR_PC_GE: return x >= y;
    case NR_PC_EQU: return un || x == y;
    case NR_PC_NEU: return un || x != y;
    case NR_PC_LTU: return un || x < y;
    case NR_PC_LEU: return un || x <= y;
    case NR_PC_GTU: return un || x > y;
    case NR_PC_GEU: return un || x >= y;
    case NR_PC_NUM: return !un;
    case NR_PC_NAN: return un;
    default: NR_UNREACHABLE();
    }
}

NrPv nr_pb_setp(NrPtx *p, NrPc c, NrPt t, NrPv a, NrPv b) {
    bool flt = pts[t].cls == 'f';
    if (a.r == 0 && b.r == 0) {
        bool r;
        if (flt) {
            r = fcmp(c, fget(t, a.c), fget(t, b.c));
        } else {
            int w = pts[t].bits;
            bool sg = pts[t].cls == 's';
            uint64_t x = a.c & wmask(w), y = b.c & wmask(w);
            int64_t sx = sext(x, w), sy = sext(y, w);
            switch (c) {
            case NR_PC_EQ: r = x == y; break;
            case NR_PC_NE: r = x != y; break;
            case NR_PC_LT: r = sg ? sx < sy : x < y; break;
            case NR_PC_LE: r = sg ? sx <= sy : x <= y; break;
            case NR_PC_GT: r = sg ? sx > sy : x > y; break;
            case NR_PC_GE: r = sg ? sx >= sy : x >= y; break;
            default: NR_UNREACHABLE();
            }
        }
        return nr_pv_pred(r);
    }
    NR_ASSERT(!p->eval);
    a = fix(p, t, a);
    b = fix(p, t, b);
    NrPv d = fresh(p, NR_PK_P);
    const char *cn = pc_names[c];
    if (!flt && pts[t].cls == 'u') { /* unsigned comparisons: lo ls hi hs */
        static const char *const un[] = {"eq", "ne", "lo", "ls", "hi", "hs"};
        cn = un[c];
    }
    nr_ptx_emit(p, "setp.%s%s %s, %s, %s;", cn, pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a), opnd(p, t, b));
    return d;
}

static NrPt bits_type(NrPk k) {
    switch (k) {
    case NR_PK_H: return NR_PT_B16;
    case NR_PK_I64:
    case NR_PK_F64: return NR_PT_B64;
    default: return NR_PT_B32;
    }
}

NrPv nr_pb_selp(NrPtx *p, NrPv c, NrPv a, NrPv b) {
    if (c.r == 0) return c.c ? a : b;
    if (a.r == b.r && (a.r != 0 || (a.c == b.c && a.k == b.k))) return a;
    NR_ASSERT(!p->eval);
    if (a.k == NR_PK_P) /* (c & a) | (!c & b) */
        return nr_pb_por(p, nr_pb_pand(p, c, a), nr_pb_pand(p, nr_pb_pnot(p, c), b));
    NrPt t = bits_type((NrPk)a.k);
    a = fix(p, t, a);
    b = fix(p, t, b);
    NrPv d = fresh(p, (NrPk)a.k);
    nr_ptx_emit(p, "selp%s %s, %s, %s, %s;", pts[t].name, nr_ptx_reg(p, d.r), opnd(p, t, a), opnd(p, t, b),
                nr_ptx_reg(p, c.r));
    return d;
}

static NrPv plogic(NrPtx *p, const char *name, NrPv a, NrPv b) {
    a = nr_ptx_inreg(p, a);
    b = nr_ptx_inreg(p, b);
    NrPv d = fresh(p, NR_PK_P);
    nr_ptx_emit(p, "%s.pred %s, %s, %s;", name, nr_ptx_reg(p, d.r), nr_ptx_reg(p, a.r), nr_ptx_reg(p, b.r));
    return d;
}

NrPv nr_pb_pand(NrPtx *p, NrPv a, NrPv b) {
    if (a.r == 0) return a.c ? b : a;
    if (b.r == 0) return b.c ? a : b;
    if (a.r == b.r) return a;
    return plogic(p, "and", a, b);
}

NrPv nr_pb_por(NrPtx *p, NrPv a, NrPv b) {
    if (a.r == 0) return a.c ? a : b;
    if (b.r == 0) return b.c ? b : a;
    if (a.r == b.r) return a;
    return plogic(p, "or", a, b);
}

NrPv nr_pb_pxor(NrPtx *p, NrPv a, NrPv b) {
    if (a.r == 0 && b.r == 0) return nr_pv_pred((a.c ^ b.c) & 1);
    if (a.r == 0) return a.c ? nr_pb_pnot(p, b) : b;
    if (b.r == 0) return b.c ? nr_pb_pnot(p, a) : a;
    return plogic(p, "xor", a, b);
}

NrPv nr_pb_pnot(NrPtx *p, NrPv a) {
    if (a.r == 0) return nr_pv_pred(!a.c);
    NR_ASSERT(!p->eval);
    NrPv d = fresh(p, NR_PK_P);
    nr_ptx_emit(p, "not.pred %s, %s;", nr_ptx_reg(p, d.r), nr_ptx_reg(p, a.r));
    return d;
}

/* --- conversions ------------------------------------------------------------------------------------------ */
/* An integer rounded to 53 bits by round-to-odd, so that one more rounding
 * to a narrower format is a correct single rounding. */
static double int_odd(uint64_t v, bool sg) {
    bool neg = sg && (int64_t)v < 0;
    uint64_t mag = neg ? 0 - v : v;
    if (mag >> 53) {
        int drop = 11 - __builtin_clzll(mag);
        uint64_t lost = mag & ((UINT64_C(1) << drop) - 1);
        mag = (mag >> drop) << drop;
        if (lost) mag |= UINT64_C(1) << drop;
    }
    double d = (double)mag;
    return neg ? -d : d;
}

/* Float -> int of width w (signedness sg): truncated or rounded value,
 * saturated, NaN -> 0; the result sign/zero-extended to 64 bits. */
static uint64_t f2i(double x, NrPr r, int w, bool sg) {
    if (is_nan(x)) return 0;
    switch (r) {
    case NR_PR_RNI: x = rint(x); break;
    case NR_PR_RMI: x = floor(x); break;
    case NR_PR_RPI: x = ceil(x); break;
    default: x = trunc(x); break;
    }
    if (sg) {
        double lo = -ldexp(1.0, w - 1), hi = ldexp(1.0, w - 1);
        if (x <= lo) return (uint64_t)(w == 64 ? INT64_MIN : -(INT64_C(1) << (w - 1)));
        if (x >= hi) return (uint64_t)(w == 64 ? INT64_MAX : (INT64_C(1) << (w - 1)) - 1);
        return (uint64_t)(int64_t)x;
    }
    if (x <= 0) return 0;
    if (x >= ldexp(1.0, w)) return wmask(w);
    return (uint64_t)x;
}

static uint64_t cvt_eval(NrPr r, NrPt dt, NrPt st, uint64_t a) {
    const PtInfo *D = &pts[dt], *S = &pts[st];
    bool rz = r == NR_PR_RZ;
    if (S->cls != 'f' && D->cls != 'f') { /* int -> int: extend by the source, chop to the destination */
        uint64_t v = S->cls == 's' ? (uint64_t)sext(a, S->bits) : a & wmask(S->bits);
        v &= wmask(D->bits);
        if (D->cls == 's') v = (uint64_t)sext(v, D->bits);
        return v;
    }
    if (S->cls == 'f' && D->cls != 'f') {
        uint64_t v = f2i(fget(st, a), r, D->bits, D->cls == 's');
        return v;
    }
    if (S->cls != 'f') { /* int -> float */
        uint64_t v = S->cls == 's' ? (uint64_t)sext(a, S->bits) : a & wmask(S->bits);
        if (dt == NR_PT_F64) {
            bool neg = S->cls == 's' && (int64_t)v < 0;
            uint64_t mag = neg ? 0 - v : v;
            double d;
            if (rz && mag >> 53) {
                int drop = 11 - __builtin_clzll(mag);
                d = (double)((mag >> drop) << drop);
            } else {
                d = (double)mag; /* exact, or rounded to nearest even by the C conversion */
            }
            return d2u(neg ? -d : d);
        }
        return fput(dt, int_odd(v, S->cls == 's'), rz);
    }
    double x = fget(st, a); /* float -> float */
    switch (r) {
    case NR_PR_RNI: return fput(dt, rint(x), false);
    case NR_PR_RZI: return fput(dt, trunc(x), false);
    case NR_PR_RMI: return fput(dt, floor(x), false);
    case NR_PR_RPI: return fput(dt, ceil(x), false);
    default: break;
    }
    if (dt == NR_PT_F64) return d2u(x);
    return fput(dt, x, rz);
}

static const char *const pr_names[] = {"", ".rn", ".rz", ".rni", ".rzi", ".rmi", ".rpi"};

NrPv nr_pb_cvt(NrPtx *p, NrPr r, NrPt dt, NrPt st, NrPv a) {
    NrPk k = pts[dt].k;
    if (a.r == 0) return nr_pv_imm(k, cvt_eval(r, dt, st, a.c));
    NR_ASSERT(!p->eval);
    NrPv d = fresh(p, k);
    nr_ptx_emit(p, "cvt%s%s%s %s, %s;", pr_names[r], pts[dt].name, pts[st].name, nr_ptx_reg(p, d.r),
                nr_ptx_reg(p, a.r));
    return d;
}

/* --- moves ---------------------------------------------------------------------------------------------- */
NrPv nr_pb_bits(NrPtx *p, NrPk k, NrPv a) {
    (void)p;
    a.k = (uint8_t)k; /* bit-size registers serve every type of their width */
    return a;
}

NrPv nr_pb_pack(NrPtx *p, NrPv lo, NrPv hi) {
    bool h = lo.k == NR_PK_H;
    NrPk k = h ? NR_PK_I32 : NR_PK_I64;
    int w = h ? 16 : 32;
    if (lo.r == 0 && hi.r == 0) return nr_pv_imm(k, (lo.c & wmask(w)) | (hi.c & wmask(w)) << w);
    NR_ASSERT(!p->eval);
    NrPt t = h ? NR_PT_B16 : NR_PT_B32;
    lo = lo.r ? lo : nr_ptx_inreg(p, lo); /* the braces take registers */
    hi = hi.r ? hi : nr_ptx_inreg(p, hi);
    NrPv d = fresh(p, k);
    nr_ptx_emit(p, "mov.b%d %s, {%s, %s};", 2 * w, nr_ptx_reg(p, d.r), opnd(p, t, lo), opnd(p, t, hi));
    return d;
}

void nr_pb_unpack(NrPtx *p, NrPv v, NrPv *lo, NrPv *hi) {
    bool h = v.k == NR_PK_I32 || v.k == NR_PK_F32;
    NrPk k = h ? NR_PK_H : NR_PK_I32;
    int w = h ? 16 : 32;
    if (v.r == 0) {
        *lo = nr_pv_imm(k, v.c & wmask(w));
        *hi = nr_pv_imm(k, v.c >> w & wmask(w));
        return;
    }
    NR_ASSERT(!p->eval);
    *lo = fresh(p, k);
    *hi = fresh(p, k);
    nr_ptx_emit(p, "mov.b%d {%s, %s}, %s;", 2 * w, nr_ptx_reg(p, lo->r), nr_ptx_reg(p, hi->r), nr_ptx_reg(p, v.r));
}

void nr_pb_mov_to(NrPtx *p, NrPv dst, NrPv a) {
    NR_ASSERT(dst.r != 0);
    if (a.r == dst.r) return;
    if (dst.k == NR_PK_P) {
        if (a.r == 0) nr_ptx_emit(p, "mov.pred %s, %d;", nr_ptx_reg(p, dst.r), (int)(a.c & 1));
        else nr_ptx_emit(p, "mov.pred %s, %s;", nr_ptx_reg(p, dst.r), nr_ptx_reg(p, a.r));
        return;
    }
    NrPt t = bits_type((NrPk)dst.k);
    nr_ptx_emit(p, "mov%s %s, %s;", pts[t].name, nr_ptx_reg(p, dst.r), opnd(p, t, a));
}

NrPv nr_pb_mov(NrPtx *p, NrPv a) {
    NR_ASSERT(!p->eval);
    NrPv d = fresh(p, (NrPk)a.k);
    nr_pb_mov_to(p, d, a);
    return d;
}

/* --- loops -------------------------------------------------------------------------------------------- */
enum { MAX_EVAL_TRIPS = 1 << 16 };

void nr_pb_loop(NrPtx *p, NrPv *state, int n, NrPbBody body, void *ctx) {
    if (p->eval) {
        for (int trip = 0; trip < MAX_EVAL_TRIPS; trip++) {
            NrPv c = body(p, state, ctx);
            NR_ASSERT(c.r == 0);
            if (!c.c) return;
        }
        NR_ICE("evaluated loop did not end");
    }
    NrPv *regs = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 0 ? n : 1));
    NrPv *next = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) regs[i] = nr_pb_mov(p, state[i]);
    int top = nr_ptx_label(p);
    nr_ptx_emit(p, "$L%d:", top);
    for (int i = 0; i < n; i++) next[i] = regs[i];
    NrPv c = body(p, next, ctx);
    c = nr_ptx_inreg(p, c);
    /* Parallel copy next -> regs: stage values that are themselves state registers. */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (next[i].r && next[i].r == regs[j].r && i != j) {
                next[i] = nr_pb_mov(p, next[i]);
                break;
            }
    for (int i = 0; i < n; i++) nr_pb_mov_to(p, regs[i], next[i]);
    nr_ptx_emit(p, "@%s bra $L%d;", nr_ptx_reg(p, c.r), top);
    for (int i = 0; i < n; i++) state[i] = regs[i];
}

void nr_pb_cond(NrPtx *p, NrPv c, NrPv *state, int n, NrPbBody body, void *ctx) {
    if (c.r == 0) {
        if (c.c) body(p, state, ctx);
        return;
    }
    NR_ASSERT(!p->eval);
    NrPv *regs = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) regs[i] = nr_pb_mov(p, state[i]);
    int skip = nr_ptx_label(p);
    nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, c.r), skip);
    NrPv *next = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) next[i] = regs[i];
    body(p, next, ctx);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (next[i].r && next[i].r == regs[j].r && i != j) {
                next[i] = nr_pb_mov(p, next[i]);
                break;
            }
    for (int i = 0; i < n; i++) nr_pb_mov_to(p, regs[i], next[i]);
    nr_ptx_emit(p, "$L%d:", skip);
    for (int i = 0; i < n; i++) state[i] = regs[i];
}

NrPv nr_pb_table(NrPtx *p, const char *name, const uint32_t *table, int n, NrPv index) {
    if (index.r == 0) {
        uint32_t i = (uint32_t)index.c;
        return nr_pv_i32(i < (uint32_t)n ? table[i] : 0);
    }
    NR_ASSERT(!p->eval);
    bool have = false;
    for (int i = 0; i < p->ntables && !have; i++) have = strcmp(p->tables[i], name) == 0;
    if (!have) {
        *NR_PUSH(p->a, p->tables, p->ntables, p->captables) = name;
        NrPtxBuf *saved = p->out;
        p->out = &p->glob;
        char *line = nr_alloc(p->a, (size_t)n * 12 + 96);
        size_t len = (size_t)sprintf(line, ".const .align 4 .b32 %s[%d] = {", name, n);
        for (int i = 0; i < n; i++) len += (size_t)sprintf(line + len, "%s0x%08x", i ? ", " : "", table[i]);
        sprintf(line + len, "};");
        nr_ptx_emit(p, "%s", line);
        p->out = saved;
    }
    NrPv base = {NR_PK_I64, nr_ptx_newreg(p, NR_PK_I64), 0};
    nr_ptx_emit(p, "mov.u64 %s, %s;", nr_ptx_reg(p, base.r), name);
    NrPv off = nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, index), nr_pv_i32(2));
    NrPv addr = nr_pb_bin(p, NR_PO_ADD, NR_PT_S64, base, off);
    NrPv d = fresh(p, NR_PK_I32);
    nr_ptx_emit(p, "ld.const.b32 %s, %s;", nr_ptx_reg(p, d.r), nr_ptx_addr(p, addr, 0));
    return d;
}
