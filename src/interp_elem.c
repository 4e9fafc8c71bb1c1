/* interp_elem.c - the interpreter's elementwise ops: integer and float
 * arithmetic, math functions, comparison, selection, casts and pointer
 * arithmetic.
 *
 * Each op switches on the element type once and then runs a tight loop over
 * the block.  Integers compute in 64-bit unsigned arithmetic and truncate,
 * which is two's complement wrapping for every width (i1 wraps modulo 2).
 * fp16, bf16 and fp8 compute in f32 and round each result to the dtype: the
 * operands are decoded in bulk to f32 scratch arrays, the f32 kernel runs,
 * and the result is encoded back.  For + - * / and sqrt this gives the
 * correctly rounded narrow result, since f32 has more than twice the bits. */
#include "interp_impl.h"

#include <math.h>

/* --- scalar access ----------------------------------------------------------------------------- */
static NrFpFormat fp_format(int kind) {
    switch (kind) {
    case NR_DT_F8E4NV: return NR_FPF_F8E4NV;
    case NR_DT_F8E5: return NR_FPF_F8E5;
    case NR_DT_F16: return NR_FPF_F16;
    case NR_DT_BF16: return NR_FPF_BF16;
    default: return NR_FPF_F32;
    }
}

/* An integer rounded to 53 bits by round-to-odd, so that a second rounding
 * to any narrower format is a correct single rounding of the integer. */
static double int_to_f64_odd(int64_t v, bool uns) {
    bool neg = !uns && v < 0;
    uint64_t mag = neg ? 0 - (uint64_t)v : (uint64_t)v;
    if (mag >> 53) {
        int drop = 11 - __builtin_clzll(mag);
        uint64_t lost = mag & ((UINT64_C(1) << drop) - 1);
        mag = (mag >> drop) << drop;
        if (lost) mag |= UINT64_C(1) << drop;
    }
    double d = (double)mag;
    return neg ? -d : d;
}

/* Saturating float -> int of `kind` (NaN -> 0), as the bits to store. */
static int64_t f64_to_int_sat(double d, int kind) {
    if (kind == NR_DT_I1) return d != 0; /* NaN != 0 */
    if (d != d) return 0;
    int bits = kind < NR_DT_COUNT ? nr_dtype_info[kind].bits : 64;
    if (!nr_ik_unsigned(kind)) {
        double lim = ldexp(1.0, bits - 1);
        if (d <= -lim) return bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
        if (d >= lim) return bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
        return (int64_t)d;
    }
    if (d <= 0) return 0;
    if (d >= ldexp(1.0, bits)) return bits == 64 ? -1 : (int64_t)((UINT64_C(1) << bits) - 1);
    return (int64_t)(uint64_t)d;
}

double nr_iget_f64(int kind, const void *p, int64_t i) {
    switch (kind) {
    case NR_DT_F32: return ((const float *)p)[i];
    case NR_DT_F64: return ((const double *)p)[i];
    case NR_DT_F16: return nr_f16_to_f32(((const uint16_t *)p)[i]);
    case NR_DT_BF16: return nr_bf16_to_f32(((const uint16_t *)p)[i]);
    case NR_DT_F8E4NV: return nr_f8e4nv_to_f32(((const uint8_t *)p)[i]);
    case NR_DT_F8E5: return nr_f8e5_to_f32(((const uint8_t *)p)[i]);
    default: {
        int64_t v = nr_iget_i64(kind, p, i);
        return nr_ik_unsigned(kind) ? (double)(uint64_t)v : (double)v;
    }
    }
}

int64_t nr_iget_i64(int kind, const void *p, int64_t i) {
    switch (kind) {
    case NR_DT_I1:
    case NR_DT_U8: return ((const uint8_t *)p)[i];
    case NR_DT_I8: return ((const int8_t *)p)[i];
    case NR_DT_I16: return ((const int16_t *)p)[i];
    case NR_DT_I32: return ((const int32_t *)p)[i];
    case NR_DT_I64: return ((const int64_t *)p)[i];
    case NR_DT_U16: return ((const uint16_t *)p)[i];
    case NR_DT_U32: return ((const uint32_t *)p)[i];
    case NR_DT_U64:
    case NR_IK_PTR: return (int64_t)((const uint64_t *)p)[i];
    default: return f64_to_int_sat(nr_iget_f64(kind, p, i), NR_DT_I64);
    }
}

/* Stores an integer (signed, or unsigned when uns) into element i of any kind. */
static void put_int(int kind, void *p, int64_t i, int64_t v, bool uns) {
    switch (kind) {
    case NR_DT_I1: ((uint8_t *)p)[i] = v != 0; break;
    case NR_DT_I8:
    case NR_DT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case NR_DT_I16:
    case NR_DT_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case NR_DT_I32:
    case NR_DT_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case NR_DT_I64:
    case NR_DT_U64:
    case NR_IK_PTR: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case NR_DT_F64: ((double *)p)[i] = uns ? (double)(uint64_t)v : (double)v; break;
    case NR_DT_F32: ((float *)p)[i] = uns ? (float)(uint64_t)v : (float)v; break;
    case NR_DT_F16:
    case NR_DT_BF16: ((uint16_t *)p)[i] = (uint16_t)nr_fp_round(int_to_f64_odd(v, uns), fp_format(kind), false); break;
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: ((uint8_t *)p)[i] = (uint8_t)nr_fp_round(int_to_f64_odd(v, uns), fp_format(kind), false); break;
    default: break;
    }
}

void nr_iput_i64(int kind, void *p, int64_t i, int64_t v) { put_int(kind, p, i, v, false); }

/* Rounds a double once to a float kind (rtz: toward zero). */
static void put_float(int kind, void *p, int64_t i, double v, bool rtz) {
    switch (kind) {
    case NR_DT_F64: ((double *)p)[i] = v; break;
    case NR_DT_F32: {
        uint32_t b = nr_fp_round(v, NR_FPF_F32, rtz);
        memcpy((float *)p + i, &b, 4);
        break;
    }
    case NR_DT_F16:
    case NR_DT_BF16: ((uint16_t *)p)[i] = (uint16_t)nr_fp_round(v, fp_format(kind), rtz); break;
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: ((uint8_t *)p)[i] = (uint8_t)nr_fp_round(v, fp_format(kind), rtz); break;
    default: put_int(kind, p, i, f64_to_int_sat(v, kind), nr_ik_unsigned(kind)); break;
    }
}

void nr_iput_f64(int kind, void *p, int64_t i, double v) { put_float(kind, p, i, v, false); }

/* --- bulk f32 conversion ------------------------------------------------------------------------- */
void nr_idecode_f32(int kind, const void *src, float *dst, int64_t n) {
    switch (kind) {
    case NR_DT_F16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = nr_f16_to_f32(s[i]);
        break;
    }
    case NR_DT_BF16: {
        const uint16_t *s = src;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)s[i] << 16;
            memcpy(&dst[i], &u, 4);
        }
        break;
    }
    case NR_DT_F8E4NV: {
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = nr_f8e4nv_to_f32(s[i]);
        break;
    }
    case NR_DT_F8E5: {
        const uint8_t *s = src;
        for (int64_t i = 0; i < n; i++) dst[i] = nr_f8e5_to_f32(s[i]);
        break;
    }
    case NR_DT_F32: memcpy(dst, src, (size_t)n * 4); break;
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)nr_iget_f64(kind, src, i);
        break;
    }
}

void nr_iencode_f32(int kind, const float *src, void *dst, int64_t n) {
    switch (kind) {
    case NR_DT_F16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = nr_f32_to_f16(src[i]);
        break;
    }
    case NR_DT_BF16: {
        uint16_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = nr_f32_to_bf16(src[i]);
        break;
    }
    case NR_DT_F8E4NV: {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = nr_f32_to_f8e4nv(src[i]);
        break;
    }
    case NR_DT_F8E5: {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = nr_f32_to_f8e5(src[i]);
        break;
    }
    case NR_DT_F32: memcpy(dst, src, (size_t)n * 4); break;
    default:
        for (int64_t i = 0; i < n; i++) put_float(kind, dst, i, src[i], false);
        break;
    }
}

/* --- integer kernels ------------------------------------------------------------------------------ */
/* Division never traps: a/0 = -1 (all ones), MIN/-1 = MIN; a%0 = a, MIN%-1 = 0. */
static inline uint64_t sdiv64(int64_t x, int64_t y) {
    if (y == 0) return ~UINT64_C(0);
    if (y == -1) return 0 - (uint64_t)x;
    return (uint64_t)(x / y);
}
static inline uint64_t srem64(int64_t x, int64_t y) {
    if (y == 0) return (uint64_t)x;
    if (y == -1) return 0;
    return (uint64_t)(x % y);
}
static inline uint64_t udiv64(uint64_t x, uint64_t y) { return y ? x / y : ~UINT64_C(0); }
static inline uint64_t urem64(uint64_t x, uint64_t y) { return y ? x % y : x; }

/* x < 0 for a value already converted to int64 (a function, so that
 * instantiations on unsigned types do not warn about a constant comparison). */
static inline bool is_neg(int64_t x) { return x < 0; }

#define WRAPB(BITS, v) ((BITS) == 1 ? ((uint64_t)(v)&1) : (uint64_t)(v))
#define ILOOP(EXPR)                                                                                                    \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
        T x = a[i], y = b[i];                                                                                          \
        r[i] = (T)WRAPB(BITS, (EXPR));                                                                                 \
    }                                                                                                                  \
    break

/* One function per integer type: T its storage type, UT the unsigned type
 * of the same width, BITS the width, SGN its signedness. */
#define DEF_IBIN(NAME, T_, UT_, BITS_, SGN_)                                                                           \
    static void NAME(NrOpcode opc, const T_ *restrict a, const T_ *restrict b, T_ *restrict r, int64_t n) {            \
        typedef T_ T;                                                                                                  \
        typedef UT_ UT;                                                                                                \
        enum { BITS = BITS_, SGN = SGN_ };                                                                             \
        switch (opc) {                                                                                                 \
        case NR_OP_ADD: ILOOP((uint64_t)x + (uint64_t)y);                                                              \
        case NR_OP_SUB: ILOOP((uint64_t)x - (uint64_t)y);                                                              \
        case NR_OP_MUL: ILOOP((uint64_t)x *(uint64_t)y);                                                               \
        case NR_OP_DIV: ILOOP(SGN ? sdiv64((int64_t)x, (int64_t)y) : udiv64((UT)x, (UT)y));                            \
        case NR_OP_REM: ILOOP(SGN ? srem64((int64_t)x, (int64_t)y) : urem64((UT)x, (UT)y));                            \
        case NR_OP_AND: ILOOP((uint64_t)x &(uint64_t)y);                                                               \
        case NR_OP_OR: ILOOP((uint64_t)x | (uint64_t)y);                                                               \
        case NR_OP_XOR: ILOOP((uint64_t)x ^ (uint64_t)y);                                                              \
        case NR_OP_SHL: ILOOP((UT)y >= BITS ? 0 : (uint64_t)x << (UT)y);                                               \
        case NR_OP_SHR:                                                                                                \
            ILOOP(SGN ? ((UT)y >= BITS ? (is_neg((int64_t)x) ? ~UINT64_C(0) : 0) : (uint64_t)((int64_t)x >> (UT)y))    \
                      : ((UT)y >= BITS ? 0 : (uint64_t)(UT)x >> (UT)y));                                               \
        case NR_OP_MAX: ILOOP(x > y ? x : y);                                                                          \
        case NR_OP_MIN: ILOOP(x < y ? x : y);                                                                          \
        case NR_OP_UMULHI:                                                                                             \
            ILOOP(BITS == 64 ? (uint64_t)(((unsigned __int128)(UT)x * (UT)y) >> 64)                                    \
                             : ((uint64_t)(UT)x * (uint64_t)(UT)y) >> (BITS & 63));                                    \
        case NR_OP_NEG: ILOOP(0 - (uint64_t)x + 0 * (uint64_t)y);                                                      \
        case NR_OP_ABS: ILOOP((SGN && is_neg((int64_t)x) ? 0 - (uint64_t)x : (uint64_t)x) + 0 * (uint64_t)y);          \
        default: NR_UNREACHABLE();                                                                                     \
        }                                                                                                              \
    }

DEF_IBIN(ibin_i1, uint8_t, uint8_t, 1, 0)
DEF_IBIN(ibin_i8, int8_t, uint8_t, 8, 1)
DEF_IBIN(ibin_i16, int16_t, uint16_t, 16, 1)
DEF_IBIN(ibin_i32, int32_t, uint32_t, 32, 1)
DEF_IBIN(ibin_i64, int64_t, uint64_t, 64, 1)
DEF_IBIN(ibin_u8, uint8_t, uint8_t, 8, 0)
DEF_IBIN(ibin_u16, uint16_t, uint16_t, 16, 0)
DEF_IBIN(ibin_u32, uint32_t, uint32_t, 32, 0)
DEF_IBIN(ibin_u64, uint64_t, uint64_t, 64, 0)

/* Integer op on blocks of `kind`; unary ops pass b = a. */
static void ibin(int kind, NrOpcode opc, const void *a, const void *b, void *r, int64_t n) {
    switch (kind) {
    case NR_DT_I1: ibin_i1(opc, a, b, r, n); break;
    case NR_DT_I8: ibin_i8(opc, a, b, r, n); break;
    case NR_DT_I16: ibin_i16(opc, a, b, r, n); break;
    case NR_DT_I32: ibin_i32(opc, a, b, r, n); break;
    case NR_DT_I64: ibin_i64(opc, a, b, r, n); break;
    case NR_DT_U8: ibin_u8(opc, a, b, r, n); break;
    case NR_DT_U16: ibin_u16(opc, a, b, r, n); break;
    case NR_DT_U32: ibin_u32(opc, a, b, r, n); break;
    case NR_DT_U64: ibin_u64(opc, a, b, r, n); break;
    default: NR_UNREACHABLE();
    }
}

/* --- float kernels -------------------------------------------------------------------------------- */
#define FLOOP(EXPR)                                                                                                    \
    for (int64_t i = 0; i < n; i++) {                                                                                  \
        T x = a[i], y = b[i];                                                                                          \
        r[i] = (EXPR);                                                                                                 \
    }                                                                                                                  \
    break

#define DEF_FBIN(NAME, T_, FMOD)                                                                                       \
    static void NAME(NrOpcode opc, bool nanall, const T_ *restrict a, const T_ *restrict b, T_ *restrict r,            \
                     int64_t n) {                                                                                      \
        typedef T_ T;                                                                                                  \
        switch (opc) {                                                                                                 \
        case NR_OP_ADD: FLOOP(x + y);                                                                                  \
        case NR_OP_SUB: FLOOP(x - y);                                                                                  \
        case NR_OP_MUL: FLOOP(x *y);                                                                                   \
        case NR_OP_DIV:                                                                                                \
        case NR_OP_DIV_RN: FLOOP(x / y);                                                                               \
        case NR_OP_REM: FLOOP(FMOD(x, y));                                                                             \
        case NR_OP_MAX:                                                                                                \
            if (nanall) {                                                                                              \
                FLOOP(NR_FMAXALL(x, y));                                                                               \
            }                                                                                                          \
            FLOOP(NR_FMAXNUM(x, y));                                                                                   \
        case NR_OP_MIN:                                                                                                \
            if (nanall) {                                                                                              \
                FLOOP(NR_FMINALL(x, y));                                                                               \
            }                                                                                                          \
            FLOOP(NR_FMINNUM(x, y));                                                                                   \
        default: NR_UNREACHABLE();                                                                                     \
        }                                                                                                              \
    }

DEF_FBIN(fbin_f32, float, fmodf)
DEF_FBIN(fbin_f64, double, fmod)

/* --- math functions ------------------------------------------------------------------------------- */
static float neg_f(float x) { return -x; }
static double neg_d(double x) { return -x; }
static float rsqrt_f(float x) { return 1.0f / sqrtf(x); }
static double rsqrt_d(double x) { return 1.0 / sqrt(x); }

typedef struct MathFn {
    const char *name;
    float (*f1)(float);
    double (*d1)(double);
} MathFn;

/* The functions of the unary float ops (the `math` op is interp_math.c's). */
static const MathFn math_fns[] = {
    {"exp", expf, exp},     {"exp2", exp2f, exp2},   {"log", logf, log},
    {"log2", log2f, log2},  {"sqrt", sqrtf, sqrt},   {"rsqrt", rsqrt_f, rsqrt_d},
    {"sin", sinf, sin},     {"cos", cosf, cos},      {"erf", erff, erf},
    {"floor", floorf, floor}, {"ceil", ceilf, ceil}, {"abs", fabsf, fabs},
    {"neg", neg_f, neg_d},
};

static const MathFn *math_find(const char *name) {
    if (!name) return NULL;
    if (strncmp(name, "__nv_", 5) == 0) name += 5;
    for (size_t i = 0; i < NR_COUNTOF(math_fns); i++)
        if (strcmp(math_fns[i].name, name) == 0) return &math_fns[i];
    return NULL;
}

static const MathFn *unary_fn(NrOpcode opc) {
    switch (opc) {
    case NR_OP_NEG: return math_find("neg");
    case NR_OP_ABS: return math_find("abs");
    case NR_OP_EXP: return math_find("exp");
    case NR_OP_EXP2: return math_find("exp2");
    case NR_OP_LOG: return math_find("log");
    case NR_OP_LOG2: return math_find("log2");
    case NR_OP_SQRT:
    case NR_OP_SQRT_RN: return math_find("sqrt");
    case NR_OP_RSQRT: return math_find("rsqrt");
    case NR_OP_SIN: return math_find("sin");
    case NR_OP_COS: return math_find("cos");
    case NR_OP_FLOOR: return math_find("floor");
    case NR_OP_CEIL: return math_find("ceil");
    case NR_OP_ERF: return math_find("erf");
    default: return NULL;
    }
}

/* --- exec helpers --------------------------------------------------------------------------------- */
static NrIStatus shape_fail(NrInterp *in, const NrOp *op) {
    return nr_ifail(in, op, "malformed '%s': operand and result shapes differ", nr_op_info[op->opc].name);
}

static NrIStatus type_fail(NrInterp *in, const NrOp *op, int kind) {
    return nr_ifail(in, op, "'%s' is not defined on %s", nr_op_info[op->opc].name,
                    kind == NR_IK_PTR ? "pointers" : nr_dtype_info[kind].ir);
}

static float *scratch_f32(NrInterp *in, int i) { return in->scratch[i]; }

/* Binary arithmetic: add sub mul div div_rn rem and or xor shl shr max min umulhi. */
static NrIStatus exec_binary(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *b = nr_iopnd(fr, op, 1), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || b->n != r->n || a->kind != r->kind || b->kind != r->kind) return shape_fail(in, op);
    NrOpcode opc = (NrOpcode)op->opc;
    int k = r->kind;
    int64_t n = r->n;
    if (nr_ik_int(k)) {
        if (opc == NR_OP_DIV_RN) return type_fail(in, op, k);
        ibin(k, opc, a->p, b->p, r->p, n);
        return NR_IST_OK;
    }
    if (!nr_ik_float(k)) return type_fail(in, op, k);
    if (opc == NR_OP_AND || opc == NR_OP_OR || opc == NR_OP_XOR || opc == NR_OP_SHL || opc == NR_OP_SHR ||
        opc == NR_OP_UMULHI)
        return type_fail(in, op, k);
    bool nanall = strcmp(nr_iattr_str(op, NR_A_NAN, "none"), "all") == 0;
    if (k == NR_DT_F32) {
        fbin_f32(opc, nanall, a->p, b->p, r->p, n);
    } else if (k == NR_DT_F64) {
        fbin_f64(opc, nanall, a->p, b->p, r->p, n);
    } else {
        float *x = scratch_f32(in, 0), *y = scratch_f32(in, 1), *z = scratch_f32(in, 2);
        nr_idecode_f32(k, a->p, x, n);
        nr_idecode_f32(k, b->p, y, n);
        fbin_f32(opc, nanall, x, y, z, n);
        nr_iencode_f32(k, z, r->p, n);
    }
    return NR_IST_OK;
}

NrIStatus nr_iexec_ADD(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_SUB(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_MUL(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_DIV(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_DIV_RN(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_REM(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_AND(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_OR(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_XOR(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_SHL(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_SHR(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_MAX(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_MIN(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }
NrIStatus nr_iexec_UMULHI(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_binary(in, fr, op); }

/* Applies a unary libm function: the f32 one for f32 and the narrow floats
 * (whose results are then rounded), the double one for f64. */
static NrIStatus apply_math(NrInterp *in, const NrOp *op, const MathFn *fn, NrIVal *x, NrIVal *r) {
    int k = r->kind;
    int64_t n = r->n;
    if (x->n != n || x->kind != k) return shape_fail(in, op);
    if (!nr_ik_float(k)) return type_fail(in, op, k);
    if (k == NR_DT_F64) {
        const double *a = x->p;
        double *d = r->p;
        for (int64_t i = 0; i < n; i++) d[i] = fn->d1(a[i]);
        return NR_IST_OK;
    }
    const float *a = x->p;
    float *d = r->p;
    if (k != NR_DT_F32) {
        float *sa = scratch_f32(in, 0);
        nr_idecode_f32(k, x->p, sa, n);
        a = sa;
        d = scratch_f32(in, 2);
    }
    for (int64_t i = 0; i < n; i++) d[i] = fn->f1(a[i]);
    if (k != NR_DT_F32) nr_iencode_f32(k, d, r->p, n);
    return NR_IST_OK;
}

/* Unary ops: neg and abs on ints and floats, the math ops on floats. */
static NrIStatus exec_unary(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || a->kind != r->kind) return shape_fail(in, op);
    NrOpcode opc = (NrOpcode)op->opc;
    if (nr_ik_int(r->kind)) {
        if (opc != NR_OP_NEG && opc != NR_OP_ABS) return type_fail(in, op, r->kind);
        ibin(r->kind, opc, a->p, a->p, r->p, r->n);
        return NR_IST_OK;
    }
    return apply_math(in, op, unary_fn(opc), a, r);
}

NrIStatus nr_iexec_NEG(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_ABS(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_EXP(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_EXP2(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_LOG(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_LOG2(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_SQRT(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_SQRT_RN(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_RSQRT(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_SIN(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_COS(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_FLOOR(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_CEIL(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }
NrIStatus nr_iexec_ERF(NrInterp *in, NrIFrame *fr, const NrOp *op) { return exec_unary(in, fr, op); }

/* r = a*b + c with one rounding: fmaf/fma for f32/f64; the narrow floats
 * compute fma in double and round that once to the dtype. */
static NrIStatus exec_fma(NrInterp *in, const NrOp *op, NrIVal **x, NrIVal *r) {
    int k = r->kind;
    int64_t n = r->n;
    for (int j = 0; j < 3; j++)
        if (x[j]->n != n || x[j]->kind != k) return shape_fail(in, op);
    if (k == NR_DT_F32) {
        const float *a = x[0]->p, *b = x[1]->p, *c = x[2]->p;
        float *d = r->p;
        for (int64_t i = 0; i < n; i++) d[i] = fmaf(a[i], b[i], c[i]);
    } else if (k == NR_DT_F64) {
        const double *a = x[0]->p, *b = x[1]->p, *c = x[2]->p;
        double *d = r->p;
        for (int64_t i = 0; i < n; i++) d[i] = fma(a[i], b[i], c[i]);
    } else if (nr_ik_float(k)) {
        float *a = scratch_f32(in, 0), *b = scratch_f32(in, 1), *c = scratch_f32(in, 2);
        nr_idecode_f32(k, x[0]->p, a, n);
        nr_idecode_f32(k, x[1]->p, b, n);
        nr_idecode_f32(k, x[2]->p, c, n);
        for (int64_t i = 0; i < n; i++) put_float(k, r->p, i, fma((double)a[i], (double)b[i], (double)c[i]), false);
    } else {
        return type_fail(in, op, k);
    }
    return NR_IST_OK;
}

NrIStatus nr_iexec_FMA(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *x[3] = {nr_iopnd(fr, op, 0), nr_iopnd(fr, op, 1), nr_iopnd(fr, op, 2)};
    return exec_fma(in, op, x, nr_ires(fr, op, 0));
}

/* --- comparison and selection --------------------------------------------------------------------- */
typedef enum { P_EQ, P_NE, P_LT, P_LE, P_GT, P_GE } Pred;

#define CMPLOOP(T)                                                                                                     \
    do {                                                                                                               \
        const T *x = a, *y = b;                                                                                        \
        switch (p) {                                                                                                   \
        case P_EQ:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] == y[i];                                                       \
            break;                                                                                                     \
        case P_NE:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] != y[i];                                                       \
            break;                                                                                                     \
        case P_LT:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] < y[i];                                                        \
            break;                                                                                                     \
        case P_LE:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] <= y[i];                                                       \
            break;                                                                                                     \
        case P_GT:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] > y[i];                                                        \
            break;                                                                                                     \
        case P_GE:                                                                                                     \
            for (int64_t i = 0; i < n; i++) r[i] = x[i] >= y[i];                                                       \
            break;                                                                                                     \
        }                                                                                                              \
    } while (0)

/* C comparisons are exactly the IR's: by the type's signedness, and for
 * floats ordered (false on NaN) except != (true on NaN). */
static void cmp_kind(int kind, Pred p, const void *a, const void *b, uint8_t *restrict r, int64_t n) {
    switch (kind) {
    case NR_DT_I1:
    case NR_DT_U8: CMPLOOP(uint8_t); break;
    case NR_DT_I8: CMPLOOP(int8_t); break;
    case NR_DT_I16: CMPLOOP(int16_t); break;
    case NR_DT_I32: CMPLOOP(int32_t); break;
    case NR_DT_I64: CMPLOOP(int64_t); break;
    case NR_DT_U16: CMPLOOP(uint16_t); break;
    case NR_DT_U32: CMPLOOP(uint32_t); break;
    case NR_DT_U64:
    case NR_IK_PTR: CMPLOOP(uint64_t); break;
    case NR_DT_F32: CMPLOOP(float); break;
    case NR_DT_F64: CMPLOOP(double); break;
    default: NR_UNREACHABLE();
    }
}

NrIStatus nr_iexec_CMP(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *b = nr_iopnd(fr, op, 1), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || b->n != r->n || a->kind != b->kind || r->kind != NR_DT_I1) return shape_fail(in, op);
    static const char *const names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    const char *ps = nr_iattr_str(op, NR_A_PRED, "");
    int p = 0;
    while (p < 6 && strcmp(names[p], ps) != 0) p++;
    if (p == 6) return nr_ifail(in, op, "unknown comparison predicate '%s'", ps);
    int k = a->kind;
    if (!nr_ik_int(k) && !nr_ik_float(k) && k != NR_IK_PTR) return type_fail(in, op, k);
    if (nr_ik_float(k) && k != NR_DT_F32 && k != NR_DT_F64) {
        float *x = scratch_f32(in, 0), *y = scratch_f32(in, 1);
        nr_idecode_f32(k, a->p, x, r->n);
        nr_idecode_f32(k, b->p, y, r->n);
        cmp_kind(NR_DT_F32, (Pred)p, x, y, r->p, r->n);
    } else {
        cmp_kind(k, (Pred)p, a->p, b->p, r->p, r->n);
    }
    return NR_IST_OK;
}

#define SELLOOP(T)                                                                                                     \
    do {                                                                                                               \
        const T *x = a->p, *y = b->p;                                                                                  \
        T *d = r->p;                                                                                                   \
        for (int64_t i = 0; i < n; i++) d[i] = c[i] ? x[i] : y[i];                                                     \
    } while (0)

NrIStatus nr_iexec_SELECT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *cv = nr_iopnd(fr, op, 0), *a = nr_iopnd(fr, op, 1), *b = nr_iopnd(fr, op, 2), *r = nr_ires(fr, op, 0);
    int64_t n = r->n;
    if (a->n != n || b->n != n || a->esize != r->esize || b->esize != r->esize || (cv->n != n && cv->n != 1) ||
        cv->kind != NR_DT_I1)
        return shape_fail(in, op);
    const uint8_t *c = cv->p;
    if (cv->n != n) { /* a scalar condition picks a whole operand */
        memcpy(r->p, c[0] ? a->p : b->p, (size_t)n * r->esize);
        return NR_IST_OK;
    }
    switch (r->esize) {
    case 1: SELLOOP(uint8_t); break;
    case 2: SELLOOP(uint16_t); break;
    case 4: SELLOOP(uint32_t); break;
    default: SELLOOP(uint64_t); break;
    }
    return NR_IST_OK;
}

/* --- casts ---------------------------------------------------------------------------------------- */
/* Integer (or pointer) values, sign- or zero-extended per kind, to int64. */
static void ints_to_i64(int kind, const void *src, int64_t *d, int64_t n) {
#define EXT(T)                                                                                                         \
    do {                                                                                                               \
        const T *s = src;                                                                                              \
        for (int64_t i = 0; i < n; i++) d[i] = (int64_t)s[i];                                                          \
    } while (0)
    switch (kind) {
    case NR_DT_I1:
    case NR_DT_U8: EXT(uint8_t); break;
    case NR_DT_I8: EXT(int8_t); break;
    case NR_DT_I16: EXT(int16_t); break;
    case NR_DT_I32: EXT(int32_t); break;
    case NR_DT_I64: EXT(int64_t); break;
    case NR_DT_U16: EXT(uint16_t); break;
    case NR_DT_U32: EXT(uint32_t); break;
    default: EXT(uint64_t); break;
    }
#undef EXT
}

/* int64 -> an integer or pointer kind, truncating (i1: != 0). */
static void i64_to_ints(int kind, const int64_t *s, void *dst, int64_t n) {
#define TRUNC(T)                                                                                                       \
    do {                                                                                                               \
        T *d = dst;                                                                                                    \
        for (int64_t i = 0; i < n; i++) d[i] = (T)s[i];                                                                \
    } while (0)
    switch (kind) {
    case NR_DT_I1: {
        uint8_t *d = dst;
        for (int64_t i = 0; i < n; i++) d[i] = s[i] != 0;
        break;
    }
    case NR_DT_I8:
    case NR_DT_U8: TRUNC(uint8_t); break;
    case NR_DT_I16:
    case NR_DT_U16: TRUNC(uint16_t); break;
    case NR_DT_I32:
    case NR_DT_U32: TRUNC(uint32_t); break;
    default: TRUNC(uint64_t); break;
    }
#undef TRUNC
}

NrIStatus nr_iexec_CAST(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n) return shape_fail(in, op);
    int sk = a->kind, dk = r->kind;
    int64_t n = r->n;
    bool rtz = strcmp(nr_iattr_str(op, NR_A_ROUNDING, "rtne"), "rtz") == 0;
    if (sk == dk || (sk == NR_IK_PTR && (dk == NR_DT_I64 || dk == NR_DT_U64)) ||
        (dk == NR_IK_PTR && (sk == NR_DT_I64 || sk == NR_DT_U64))) {
        memcpy(r->p, a->p, (size_t)n * r->esize);
        return NR_IST_OK;
    }
    /* Hot paths: narrow floats to and from f32. */
    if (dk == NR_DT_F32 && nr_ik_float(sk) && sk != NR_DT_F64) {
        nr_idecode_f32(sk, a->p, r->p, n);
        return NR_IST_OK;
    }
    if (sk == NR_DT_F32 && nr_ik_float(dk) && dk != NR_DT_F64 && !rtz) {
        nr_iencode_f32(dk, a->p, r->p, n);
        return NR_IST_OK;
    }
    if (nr_ik_float(sk)) {
        /* Every float is exact in double: decode, then round or saturate once. */
        double *d = in->scratch[0];
        for (int64_t i = 0; i < n; i++) d[i] = nr_iget_f64(sk, a->p, i);
        if (nr_ik_float(dk)) {
            if (dk == NR_DT_F64)
                memcpy(r->p, d, (size_t)n * 8);
            else
                for (int64_t i = 0; i < n; i++) put_float(dk, r->p, i, d[i], rtz);
        } else {
            int64_t *iv = in->scratch[1];
            int tk = dk == NR_IK_PTR ? NR_DT_U64 : dk;
            for (int64_t i = 0; i < n; i++) iv[i] = f64_to_int_sat(d[i], tk);
            i64_to_ints(dk, iv, r->p, n);
        }
        return NR_IST_OK;
    }
    int64_t *iv = in->scratch[0];
    ints_to_i64(sk, a->p, iv, n);
    if (!nr_ik_float(dk)) {
        i64_to_ints(dk, iv, r->p, n);
        return NR_IST_OK;
    }
    bool uns = nr_ik_unsigned(sk);
    if (dk == NR_DT_F32 && !uns) {
        float *d = r->p;
        for (int64_t i = 0; i < n; i++) d[i] = (float)iv[i];
    } else {
        for (int64_t i = 0; i < n; i++) put_int(dk, r->p, i, iv[i], uns);
    }
    return NR_IST_OK;
}

NrIStatus nr_iexec_BITCAST(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || a->esize != r->esize) return shape_fail(in, op);
    memcpy(r->p, a->p, (size_t)r->n * r->esize);
    if (r->kind == NR_DT_I1) { /* keep i1 storage canonical */
        uint8_t *d = r->p;
        for (int64_t i = 0; i < r->n; i++) d[i] &= 1;
    }
    return NR_IST_OK;
}

NrIStatus nr_iexec_PTRTOINT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || !nr_ik_int(r->kind)) return shape_fail(in, op);
    i64_to_ints(r->kind, a->p, r->p, r->n);
    return NR_IST_OK;
}

NrIStatus nr_iexec_INTTOPTR(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || !nr_ik_int(a->kind) || r->kind != NR_IK_PTR) return shape_fail(in, op);
    ints_to_i64(a->kind, a->p, r->p, r->n);
    return NR_IST_OK;
}

/* r = a + b * sizeof(*a), wrapping modulo 2^64; b sign- or zero-extends. */
NrIStatus nr_iexec_ADDPTR(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *b = nr_iopnd(fr, op, 1), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || (b->n != r->n && b->n != 1) || a->kind != NR_IK_PTR || !nr_ik_int(b->kind))
        return shape_fail(in, op);
    uint64_t es = a->t->ptr > 1 ? 8 : (uint64_t)nr_dtype_info[a->t->dtype].bytes;
    const uint64_t *p = a->p;
    uint64_t *d = r->p;
    int64_t n = r->n;
    if (b->n != n) {
        uint64_t off = (uint64_t)nr_iget_i64(b->kind, b->p, 0) * es;
        for (int64_t i = 0; i < n; i++) d[i] = p[i] + off;
    } else if (b->kind == NR_DT_I32) {
        const int32_t *o = b->p;
        for (int64_t i = 0; i < n; i++) d[i] = p[i] + (uint64_t)(int64_t)o[i] * es;
    } else if (b->kind == NR_DT_I64) {
        const int64_t *o = b->p;
        for (int64_t i = 0; i < n; i++) d[i] = p[i] + (uint64_t)o[i] * es;
    } else {
        for (int64_t i = 0; i < n; i++) d[i] = p[i] + (uint64_t)nr_iget_i64(b->kind, b->p, i) * es;
    }
    return NR_IST_OK;
}
