/* interp_math.c - the interpreter's `math` op (libdevice's float functions)
 * and `imath` op (its integer functions).
 *
 * Every float function is evaluated in double precision from the exact
 * operands and rounded once to the result's dtype, so f32 results are the
 * correctly rounded value except when the double result lies within an ulp
 * of double of an f32 rounding boundary.  The functions that must not be
 * rounded twice have an f32 form of their own: fma, nextafter and the
 * directed roundings (add_rz, div_ru, sqrt_rd, ...), which run in the
 * requested rounding mode of the host (restored after each op).  f64
 * results come from libm's double functions, or from the implementations
 * below (erfinv and its relatives, sinpi, erfcx) that refine an estimate to
 * double precision with libm's erf and erfc. */
#include "interp_impl.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

/* --- functions libm lacks ---------------------------------------------------------------------------- */
/* These work in long double (64-bit significands on x86, whose exponent
 * range keeps erfc's far tail normal), so that their double results are
 * accurate to about half an ulp. */
typedef long double LD;
static const LD PI_L = 3.14159265358979323846264338327950288L;
static const LD TWO_OVER_SQRTPI_L = 1.12837916709551257389615890312154517L;

/* The root x >= 0 of erf(x) = a (a <= 1/2) or erfc(x) = z (else), by
 * Newton steps from a rough estimate. */
static LD erf_root(LD a, LD z, bool small) {
    LD x = small ? a * 0.886L : sqrtl(-logl(z));
    for (int i = 0; i < 100; i++) {
        LD f = small ? erfl(x) - a : z - erfcl(x);
        LD fp = TWO_OVER_SQRTPI_L * expl(-x * x);
        if (fp == 0) break;
        LD nx = x - f / fp;
        if (nx == x || fabsl(nx - x) <= fabsl(x) * 0x1p-62L) {
            x = nx;
            break;
        }
        x = nx;
    }
    return x;
}

static double erfinv_d(double y) {
    if (isnan(y) || fabs(y) > 1) return NAN;
    if (fabs(y) == 1) return copysign(INFINITY, y);
    if (y == 0) return y;
    LD a = fabsl((LD)y);
    return (double)copysignl(erf_root(a, 1 - a, a <= 0.5L), y);
}

static double erfcinv_d(double z) {
    if (isnan(z) || z < 0 || z > 2) return NAN;
    if (z == 0) return INFINITY;
    if (z == 2) return -INFINITY;
    if (z > 1) return -erfcinv_d(2 - z); /* exact */
    return (double)erf_root(1 - (LD)z, z, z >= 0.5);
}

/* erfcinv in long double, for normcdfinv's product with sqrt 2. */
static LD erfcinv_l(LD z) {
    if (z > 1) return -erfcinv_l(2 - z);
    return erf_root(1 - z, z, z >= 0.5L);
}

static double normcdfinv_d(double p) {
    if (isnan(p) || p < 0 || p > 1) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    return (double)(-sqrtl(2.0L) * erfcinv_l(2 * (LD)p));
}

static double normcdf_d(double x) {
    if (isnan(x)) return x;
    return (double)(0.5L * erfcl(-(LD)x / sqrtl(2.0L)));
}

/* exp(x^2) erfc(x): the asymptotic series far out, else the product with
 * x^2 split exactly. */
static double erfcx_d(double x) {
    if (isnan(x)) return x;
    if (x < -27) return INFINITY;
    if (x >= 26) {
        LD z = 1 / (2 * (LD)x * x), term = 1, sum = 1;
        for (int k = 1; k <= 20; k++) {
            term *= -(2 * k - 1) * z;
            sum += term;
        }
        return (double)(sum / (x * sqrtl(PI_L)));
    }
    LD h = (LD)x * x, l = fmal(x, x, -h);
    return (double)(expl(h) * (1 + l) * erfcl(x));
}

/* sin(pi x) and cos(pi x): x = 2j + n/2 + r exactly, |r| <= 1/4, q = n mod 4. */
static LD pi_reduce(double x, int *q) {
    double t = x - 2 * rint(x * 0.5); /* |t| <= 1, exact */
    double n = rint(2 * t);
    *q = (int)n & 3;
    return (LD)t - (LD)n * 0.5L;
}

static double sinpi_d(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    int q;
    LD r = pi_reduce(x, &q), y;
    if (r == 0 && !(q & 1)) return copysign(0.0, x);
    y = q & 1 ? cosl(PI_L * r) : sinl(PI_L * r);
    return (double)(q & 2 ? -y : y);
}

static double cospi_d(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    int q;
    LD r = pi_reduce(x, &q), y;
    if (r == 0 && (q & 1)) return 0.0;
    y = q & 1 ? -sinl(PI_L * r) : cosl(PI_L * r);
    return (double)(q & 2 ? -y : y);
}

/* sqrt of the sum of n squares (inf if any is infinite, even with a NaN). */
static LD norm_l(const double *x, int n) {
    LD acc = 0;
    bool inf = false;
    for (int i = 0; i < n; i++) {
        inf = inf || isinf(x[i]);
        acc = hypotl(acc, x[i]);
    }
    return inf ? INFINITY : acc;
}

/* --- the table ----------------------------------------------------------------------------------------- */
typedef double (*MathD)(const double *x);
typedef float (*MathF)(const float *x);

typedef struct MathFn {
    const char *name;
    int nargs;
    MathD d;  /* the value in double precision */
    MathF f;  /* f32 form where rounding the double would be wrong; NULL: round d */
} MathFn;

#define D1(n, e)                                                                                                       \
    static double d_##n(const double *x) { return e; }
#define D2(n, e)                                                                                                       \
    static double d_##n(const double *x) { return e; }
/* The transcendental functions in long double, rounded once to double: the C
 * library's double ones are off by up to several ulp (cbrt 4, erfc 5, tgamma 9) */
D1(exp, (double)expl(x[0]))
D1(exp2, (double)exp2l(x[0]))
D1(exp10, (double)exp10l(x[0]))
D1(expm1, (double)expm1l(x[0]))
D1(log, (double)logl(x[0]))
D1(log2, (double)log2l(x[0]))
D1(log10, (double)log10l(x[0]))
D1(log1p, (double)log1pl(x[0]))
D1(sqrt, sqrt(x[0]))
D1(rsqrt, (double)(1.0L / sqrtl(x[0])))
D1(cbrt, (double)cbrtl(x[0]))
D1(rcbrt, (double)(1.0L / cbrtl(x[0])))
D1(rcp, 1.0 / x[0])
D1(sin, (double)sinl(x[0]))
D1(cos, (double)cosl(x[0]))
D1(tan, (double)tanl(x[0]))
D1(sinpi, sinpi_d(x[0]))
D1(cospi, cospi_d(x[0]))
D1(asin, (double)asinl(x[0]))
D1(acos, (double)acosl(x[0]))
D1(atan, (double)atanl(x[0]))
D1(sinh, (double)sinhl(x[0]))
D1(cosh, (double)coshl(x[0]))
D1(tanh, (double)tanhl(x[0]))
D1(asinh, (double)asinhl(x[0]))
D1(acosh, (double)acoshl(x[0]))
D1(atanh, (double)atanhl(x[0]))
D1(erf, (double)erfl(x[0]))
D1(erfc, (double)erfcl(x[0]))
D1(erfinv, erfinv_d(x[0]))
D1(erfcinv, erfcinv_d(x[0]))
D1(erfcx, erfcx_d(x[0]))
D1(normcdf, normcdf_d(x[0]))
D1(normcdfinv, normcdfinv_d(x[0]))
D1(lgamma, (double)lgammal(x[0]))
D1(tgamma, (double)tgammal(x[0]))
D1(logb, logb(x[0]))
D1(floor, floor(x[0]))
D1(ceil, ceil(x[0]))
D1(trunc, trunc(x[0]))
D1(round, round(x[0]))
D1(rint, rint(x[0]))
D1(abs, fabs(x[0]))
D1(neg, -x[0])
D2(atan2, (double)atan2l(x[0], x[1]))
D2(pow, (double)powl(x[0], x[1]))
D2(hypot, hypot(x[0], x[1]))
D2(rhypot, (double)(1.0L / hypotl(x[0], x[1])))
D2(fmod, fmod(x[0], x[1]))
D2(remainder, remainder(x[0], x[1]))
D2(copysign, copysign(x[0], x[1]))
D2(fdim, fdim(x[0], x[1]))
/* a NaN operand, signalling or quiet, yields the other one (as PTX's max/min) */
D2(fmax, isnan(x[0]) ? x[1] : isnan(x[1]) ? x[0] : fmax(x[0], x[1]))
D2(fmin, isnan(x[0]) ? x[1] : isnan(x[1]) ? x[0] : fmin(x[0], x[1]))
D2(nextafter, nextafter(x[0], x[1]))
/* ldexp's exponent arrives as a float of the operand's dtype (libdevice's int32);
 * a NaN exponent counts as a large negative one, as PTX's max/min clamp
 * (which ignore a NaN operand, signalling or quiet) makes it. */
D2(ldexp, ldexp(x[0], isnan(x[1]) ? -3000 : (int)fmin(fmax(x[1], -3000.0), 3000.0)))
D2(fma, fma(x[0], x[1], x[2]))
D2(norm3d, (double)norm_l(x, 3))
D2(rnorm3d, (double)(1.0L / norm_l(x, 3)))
D2(norm4d, (double)norm_l(x, 4))
D2(rnorm4d, (double)(1.0L / norm_l(x, 4)))
#undef D1
#undef D2

static float f_fma(const float *x) { return fmaf(x[0], x[1], x[2]); }
static float f_nextafter(const float *x) { return nextafterf(x[0], x[1]); }

static const MathFn math_fns[] = {
    {"exp", 1, d_exp, NULL},         {"exp2", 1, d_exp2, NULL},       {"exp10", 1, d_exp10, NULL},
    {"expm1", 1, d_expm1, NULL},     {"log", 1, d_log, NULL},         {"log2", 1, d_log2, NULL},
    {"log10", 1, d_log10, NULL},     {"log1p", 1, d_log1p, NULL},     {"sqrt", 1, d_sqrt, NULL},
    {"sqrt_rn", 1, d_sqrt, NULL},    {"rsqrt", 1, d_rsqrt, NULL},     {"rsqrt_rn", 1, d_rsqrt, NULL},
    {"cbrt", 1, d_cbrt, NULL},       {"rcbrt", 1, d_rcbrt, NULL},     {"rcp", 1, d_rcp, NULL},
    {"sin", 1, d_sin, NULL},         {"cos", 1, d_cos, NULL},         {"tan", 1, d_tan, NULL},
    {"sinpi", 1, d_sinpi, NULL},     {"cospi", 1, d_cospi, NULL},     {"asin", 1, d_asin, NULL},
    {"acos", 1, d_acos, NULL},       {"atan", 1, d_atan, NULL},       {"sinh", 1, d_sinh, NULL},
    {"cosh", 1, d_cosh, NULL},       {"tanh", 1, d_tanh, NULL},       {"asinh", 1, d_asinh, NULL},
    {"acosh", 1, d_acosh, NULL},     {"atanh", 1, d_atanh, NULL},     {"erf", 1, d_erf, NULL},
    {"erfc", 1, d_erfc, NULL},       {"erfinv", 1, d_erfinv, NULL},   {"erfcinv", 1, d_erfcinv, NULL},
    {"erfcx", 1, d_erfcx, NULL},     {"normcdf", 1, d_normcdf, NULL}, {"normcdfinv", 1, d_normcdfinv, NULL},
    {"lgamma", 1, d_lgamma, NULL},   {"tgamma", 1, d_tgamma, NULL},   {"logb", 1, d_logb, NULL},
    {"floor", 1, d_floor, NULL},     {"ceil", 1, d_ceil, NULL},       {"trunc", 1, d_trunc, NULL},
    {"round", 1, d_round, NULL},     {"rint", 1, d_rint, NULL},       {"nearbyint", 1, d_rint, NULL},
    {"abs", 1, d_abs, NULL},         {"fabs", 1, d_abs, NULL},        {"neg", 1, d_neg, NULL},
    {"atan2", 2, d_atan2, NULL},     {"pow", 2, d_pow, NULL},         {"hypot", 2, d_hypot, NULL},
    {"rhypot", 2, d_rhypot, NULL},   {"fmod", 2, d_fmod, NULL},       {"remainder", 2, d_remainder, NULL},
    {"copysign", 2, d_copysign, NULL}, {"fdim", 2, d_fdim, NULL},     {"fmax", 2, d_fmax, NULL},
    {"fmin", 2, d_fmin, NULL},       {"nextafter", 2, d_nextafter, f_nextafter},
    {"ldexp", 2, d_ldexp, NULL},     {"fma", 3, d_fma, f_fma},        {"norm3d", 3, d_norm3d, NULL},
    {"rnorm3d", 3, d_rnorm3d, NULL}, {"norm4d", 4, d_norm4d, NULL},   {"rnorm4d", 4, d_rnorm4d, NULL},
};

/* --- directed rounding ----------------------------------------------------------------------------------- */
/* add sub mul div fma sqrt rcp with suffix _rn _rz _rd _ru. */
typedef enum { R_ADD, R_SUB, R_MUL, R_DIV, R_FMA, R_SQRT, R_RCP } ROp;

static bool rounded_name(const char *name, ROp *op, int *nargs, int *mode) {
    static const struct {
        const char *p;
        ROp op;
        int n;
    } ops[] = {{"add_", R_ADD, 2}, {"sub_", R_SUB, 2}, {"mul_", R_MUL, 2}, {"div_", R_DIV, 2},
               {"fma_", R_FMA, 3}, {"sqrt_", R_SQRT, 1}, {"rcp_", R_RCP, 1}};
    static const char *const sfx[] = {"rn", "rz", "rd", "ru"};
    static const int modes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
    for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
        size_t k = strlen(ops[i].p);
        if (strncmp(name, ops[i].p, k) != 0) continue;
        for (int j = 0; j < 4; j++)
            if (strcmp(name + k, sfx[j]) == 0) {
                *op = ops[i].op;
                *nargs = ops[i].n;
                *mode = modes[j];
                return true;
            }
    }
    return false;
}

/* One operation in the current rounding mode: the operands and the result
 * pass through volatile objects so that the compiler evaluates it between
 * the mode changes. */
static double rop_d(ROp op, const double *x) {
    volatile double a = x[0], b = x[1], c = x[2];
    volatile double r;
    switch (op) {
    case R_ADD: r = a + b; break;
    case R_SUB: r = a - b; break;
    case R_MUL: r = a * b; break;
    case R_DIV: r = a / b; break;
    case R_FMA: r = fma(a, b, c); break;
    case R_SQRT: r = sqrt(a); break;
    default: r = 1.0 / a; break;
    }
    return r;
}

static float rop_f(ROp op, const float *x) {
    volatile float a = x[0], b = x[1], c = x[2];
    volatile float r;
    switch (op) {
    case R_ADD: r = a + b; break;
    case R_SUB: r = a - b; break;
    case R_MUL: r = a * b; break;
    case R_DIV: r = a / b; break;
    case R_FMA: r = fmaf(a, b, c); break;
    case R_SQRT: r = sqrtf(a); break;
    default: r = 1.0f / a; break;
    }
    return r;
}

/* --- the math op ----------------------------------------------------------------------------------------- */
static const MathFn *find_fn(const char *name) {
    for (size_t i = 0; i < NR_COUNTOF(math_fns); i++)
        if (strcmp(math_fns[i].name, name) == 0) return &math_fns[i];
    return NULL;
}

NrIStatus nr_iexec_MATH(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    const char *name = nr_iattr_str(op, NR_A_FN, "");
    if (strncmp(name, "__nv_", 5) == 0) name += 5;
    const MathFn *fn = find_fn(name);
    ROp rop = R_ADD;
    int nargs = 0, mode = FE_TONEAREST;
    bool rounded = !fn && rounded_name(name, &rop, &nargs, &mode);
    if (!fn && !rounded) return nr_ifail(in, op, "math function '%s' is not supported", name);
    if (fn) nargs = fn->nargs;
    if (op->nopnds != nargs)
        return nr_ifail(in, op, "math function '%s' takes %d operands, got %d", name, nargs, op->nopnds);
    NrIVal *r = nr_ires(fr, op, 0), *x[4];
    int k = r->kind;
    if (!nr_ik_float(k))
        return nr_ifail(in, op, "'math' is not defined on %s", k == NR_IK_PTR ? "pointers" : nr_dtype_info[k].ir);
    for (int j = 0; j < nargs; j++) {
        x[j] = nr_iopnd(fr, op, j);
        if (x[j]->n != r->n || x[j]->kind != k)
            return nr_ifail(in, op, "malformed 'math': operand and result shapes differ");
    }
    int saved = fegetround();
    if (rounded) fesetround(mode);
    for (int64_t i = 0; i < r->n; i++) {
        double a[4] = {0, 0, 0, 0};
        for (int j = 0; j < nargs; j++) a[j] = nr_iget_f64(k, x[j]->p, i);
        if (k == NR_DT_F64) {
            ((double *)r->p)[i] = rounded ? rop_d(rop, a) : fn->d(a);
        } else if (rounded || fn->f) {
            float b[4] = {(float)a[0], (float)a[1], (float)a[2], (float)a[3]};
            float v = rounded ? rop_f(rop, b) : fn->f(b);
            if (k == NR_DT_F32) ((float *)r->p)[i] = v;
            else nr_iput_f64(k, r->p, i, v);
        } else {
            nr_iput_f64(k, r->p, i, fn->d(a));
        }
    }
    if (rounded) fesetround(saved);
    return NR_IST_OK;
}

/* --- the imath op ---------------------------------------------------------------------------------------- */
static int clz64(uint64_t v, int w) { return v ? __builtin_clzll(v) - (64 - w) : w; }

/* One element: a, b, c are the operands' bits (zero-extended to 64 bits),
 * w the width, sg whether the type is signed. */
static uint64_t imath1(int f, int w, bool sg, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t m = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    int64_t sa = w == 64 ? (int64_t)a : (int64_t)(a << (64 - w)) >> (64 - w);
    int64_t sb = w == 64 ? (int64_t)b : (int64_t)(b << (64 - w)) >> (64 - w);
    switch (f) {
    case 0: return (uint64_t)clz64(a & m, w);                           /* clz */
    case 1: return (uint64_t)__builtin_popcountll(a & m);               /* popc */
    case 2: {                                                           /* brev */
        uint64_t r = 0;
        for (int i = 0; i < w; i++)
            if (a >> i & 1) r |= UINT64_C(1) << (w - 1 - i);
        return r;
    }
    case 3: return (a & m) ? (uint64_t)__builtin_ctzll(a & m) + 1 : 0; /* ffs */
    case 4:                                                             /* mulhi */
        if (w == 64) {
            if (sg) return (uint64_t)(((__int128)sa * (__int128)sb) >> 64);
            return (uint64_t)(((unsigned __int128)a * b) >> 64);
        }
        if (sg) return (uint64_t)((sa * sb) >> w) & m;
        return ((a & m) * (b & m)) >> w & m;
    case 5: {                                                           /* mul24: low 32 bits of the 24-bit product */
        int64_t x = sg ? (int64_t)(a << 40) >> 40 : (int64_t)(a & 0xffffff);
        int64_t y = sg ? (int64_t)(b << 40) >> 40 : (int64_t)(b & 0xffffff);
        return (uint64_t)(x * y) & m;
    }
    case 6: return (uint64_t)(sg ? (sa + sb) >> 1 : (int64_t)(((a & m) + (b & m)) >> 1)) & m;          /* hadd */
    case 7: return (uint64_t)(sg ? (sa + sb + 1) >> 1 : (int64_t)(((a & m) + (b & m) + 1) >> 1)) & m;  /* rhadd */
    case 8: {                                                           /* sad: |a - b| + c */
        uint64_t d = sg ? (uint64_t)(sa > sb ? sa - sb : sb - sa) : ((a & m) > (b & m) ? a - b : b - a);
        return (d + c) & m;
    }
    default: {                                                          /* byte_perm */
        uint64_t v = (a & 0xffffffff) | (b & 0xffffffff) << 32, r = 0;
        for (int i = 0; i < 4; i++) {
            int sel = (int)(c >> (4 * i) & 7);
            r |= (v >> (8 * sel) & 0xff) << (8 * i);
        }
        return r;
    }
    }
}

NrIStatus nr_iexec_IMATH(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    static const char *const names[] = {"clz", "popc", "brev", "ffs", "mulhi", "mul24", "hadd", "rhadd", "sad",
                                        "byte_perm"};
    static const int nargs[] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3};
    const char *name = nr_iattr_str(op, NR_A_FN, "");
    int f = 0;
    while (f < (int)NR_COUNTOF(names) && strcmp(names[f], name) != 0) f++;
    if (f == (int)NR_COUNTOF(names)) return nr_ifail(in, op, "integer function '%s' is not supported", name);
    if (op->nopnds != nargs[f])
        return nr_ifail(in, op, "integer function '%s' takes %d operands, got %d", name, nargs[f], op->nopnds);
    NrIVal *r = nr_ires(fr, op, 0), *x[3] = {NULL, NULL, NULL};
    int k = r->kind;
    if (!nr_ik_int(k) || k == NR_DT_I1)
        return nr_ifail(in, op, "'imath' is not defined on %s", k == NR_IK_PTR ? "pointers" : nr_dtype_info[k].ir);
    for (int j = 0; j < nargs[f]; j++) {
        x[j] = nr_iopnd(fr, op, j);
        if (x[j]->n != r->n || x[j]->kind != k)
            return nr_ifail(in, op, "malformed 'imath': operand and result shapes differ");
    }
    int w = nr_dtype_info[k].bits;
    bool sg = nr_dt_is_signed((NrDtype)k);
    uint64_t m = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    for (int64_t i = 0; i < r->n; i++) {
        uint64_t v[3] = {0, 0, 0};
        for (int j = 0; j < nargs[f]; j++) v[j] = (uint64_t)nr_iget_i64(k, x[j]->p, i) & m;
        nr_iput_i64(k, r->p, i, (int64_t)imath1(f, w, sg, v[0], v[1], v[2]));
    }
    return NR_IST_OK;
}

/* --- inline assembly -------------------------------------------------------------------------------------- */
NrIStatus nr_iexec_INLINE_ASM(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)fr;
    return nr_ifail(in, op, "tl.inline_asm_elementwise cannot run on the interpreter: its PTX assembly runs only on "
                            "the GPU");
}
