/* test_ptx_math.h - the math library on the CPU (part of test_ptx.c).
 *
 * Evaluation mode runs the exact instruction sequence the GPU runs (every
 * instruction is correctly rounded, so the CPU reproduces it bit for bit).
 * f32 functions are compared with the double libm result, f64 ones with
 * the long double libm result; the error is in units in the last place of
 * the result.  NR_TEST_MATH_N sets the number of random inputs per
 * function (default 20000; the bounds in docs/ptx.md were measured with
 * 10^6); NR_TEST_MATH_REPORT=1 prints each function's largest error. */

typedef long double (*RefFn1)(long double);
typedef long double (*RefFn2)(long double, long double);

static long double ref_rsqrt(long double x) { return 1.0L / sqrtl(x); }
static long double ref_rcp(long double x) { return 1.0L / x; }
static long double ref_neg(long double x) { return -x; }
static long double ref_rcbrt(long double x) { return 1.0L / cbrtl(x); }
static long double ref_rhypot(long double x, long double y) { return 1.0L / hypotl(x, y); }
static long double ref_ldexp(long double x, long double k) { return ldexpl(x, (int)fmaxl(fminl(k, 5000), -5000)); }

/* sin(pi x), cos(pi x) after the exact reduction of x to r in [-1/4, 1/4]. */
static long double pi_red(long double x, int *q) {
    long double t = fmodl(x, 2.0L), n = rintl(2 * t);
    *q = (int)fmodl(n + 8, 4.0L);
    return t - n / 2;
}
static long double ref_sinpi(long double x) {
    if (isinf(x)) return NAN;
    int q;
    long double r = pi_red(x, &q), p = 3.14159265358979323846264338327950288L * r;
    if (r == 0 && !(q & 1)) return copysignl(0.0L, x);
    long double y = q & 1 ? cosl(p) : sinl(p);
    return q & 2 ? -y : y;
}
static long double ref_cospi(long double x) {
    if (isinf(x)) return NAN;
    int q;
    long double r = pi_red(x, &q), p = 3.14159265358979323846264338327950288L * r;
    if (r == 0 && (q & 1)) return 0.0L;
    long double y = q & 1 ? -sinl(p) : cosl(p);
    return q & 2 ? -y : y;
}

/* erfinv by Newton steps in long double on erfl / erfcl. */
static long double ref_erfinv(long double y) {
    if (isnan(y) || fabsl(y) > 1) return NAN;
    if (fabsl(y) == 1) return copysignl(INFINITY, y);
    if (y == 0) return y;
    long double a = fabsl(y), z = 1 - a, x = a < 0.5L ? a * 0.886L : sqrtl(-logl(z));
    const long double c = 1.12837916709551257389615890312154517L;
    for (int i = 0; i < 60; i++) {
        long double f = a <= 0.5L ? erfl(x) - a : z - erfcl(x);
        long double fp = c * expl(-x * x);
        if (fp == 0) break;
        long double nx = x - f / fp;
        if (nx == x) break;
        x = nx;
    }
    return copysignl(x, y);
}
static long double ref_erfcinv(long double z) {
    if (isnan(z) || z < 0 || z > 2) return NAN;
    if (z == 0) return INFINITY;
    if (z == 2) return -INFINITY;
    if (z > 1) return -ref_erfcinv(2 - z);
    if (z >= 0.5L) return ref_erfinv(1 - z);
    long double x = sqrtl(-logl(z)), c = 1.12837916709551257389615890312154517L;
    for (int i = 0; i < 80; i++) {
        long double fp = -c * expl(-x * x);
        if (fp == 0) break;
        long double nx = x - (erfcl(x) - z) / fp;
        if (nx == x) break;
        x = nx;
    }
    return x;
}
static long double ref_normcdfinv(long double p) { return -sqrtl(2.0L) * ref_erfcinv(2 * p); }
static long double ref_normcdf(long double x) { return 0.5L * erfcl(-x / sqrtl(2.0L)); }
static long double ref_erfcx(long double x) {
    if (isnan(x)) return x;
    if (x < -27) return INFINITY;
    if (x > 26) { /* the asymptotic series */
        long double z = 1 / (2 * x * x), term = 1, s = 1;
        for (int k = 1; k <= 20; k++) term *= -(2 * k - 1) * z, s += term;
        return s / (x * sqrtl(3.14159265358979323846264338327950288L));
    }
    long double h = x * x, l = fmal(x, x, -h);
    return expl(h) * (1 + l) * erfcl(x);
}

/* How inputs are drawn: uniform in [lo, hi], and random bit patterns
 * (restricted to finite values with |x| <= wide) in `bits` of the cases. */
typedef struct MathCase {
    const char *name;
    RefFn1 f1;
    RefFn2 f2;
    double lo, hi, wide;
    double bound32, bound64; /* ulp */
} MathCase;

static const MathCase math_cases[] = {
    {"exp", expl, NULL, -110, 90, 800, 1.0, 1.0},
    {"exp2", exp2l, NULL, -155, 130, 1100, 1.0, 1.0},
    {"exp10", exp10l, NULL, -48, 40, 330, 1.5, 1.5},
    {"expm1", expm1l, NULL, -3, 3, 800, 1.5, 1.5},
    {"log", logl, NULL, 0, 4, 1e300, 1.0, 1.0},
    {"log2", log2l, NULL, 0, 4, 1e300, 2.0, 1.0},
    {"log10", log10l, NULL, 0, 4, 1e300, 2.0, 1.0},
    {"log1p", log1pl, NULL, -1, 3, 1e300, 1.5, 1.5},
    {"sqrt", sqrtl, NULL, 0, 100, 1e300, 0.5, 0.5},
    {"rsqrt", ref_rsqrt, NULL, 0, 100, 1e300, 1.5, 1.5},
    {"rcp", ref_rcp, NULL, -100, 100, 1e300, 0.5, 0.5},
    {"cbrt", cbrtl, NULL, -100, 100, 1e300, 1.0, 1.0},
    {"sin", sinl, NULL, -10, 10, 1e300, 1.5, 1.5},
    {"cos", cosl, NULL, -10, 10, 1e300, 1.5, 1.5},
    {"tan", tanl, NULL, -10, 10, 1e300, 2.0, 2.0},
    {"asin", asinl, NULL, -1, 1, 2, 1.5, 1.5},
    {"acos", acosl, NULL, -1, 1, 2, 1.5, 1.5},
    {"atan", atanl, NULL, -10, 10, 1e300, 1.0, 1.0},
    {"sinh", sinhl, NULL, -10, 10, 800, 2.0, 2.0},
    {"cosh", coshl, NULL, -10, 10, 800, 2.0, 2.0},
    {"tanh", tanhl, NULL, -10, 10, 800, 2.0, 2.0},
    /* asinh and acosh go through log1p of a computed argument: about 2 ulp at worst in
     * millions of draws; held to 3, CUDA's documented bound for both */
    {"asinh", asinhl, NULL, -10, 10, 1e300, 3.0, 3.0},
    {"acosh", acoshl, NULL, 1, 10, 1e300, 3.0, 3.0},
    {"atanh", atanhl, NULL, -1, 1, 2, 2.0, 2.5},
    {"erf", erfl, NULL, -6, 6, 1e300, 1.0, 1.5},
    {"erfc", erfcl, NULL, -6, 12, 30, 4.0, 4.0},
    {"lgamma", lgammal, NULL, 0, 30, 1e300, 1.0, 3.0},
    {"tgamma", tgammal, NULL, 0, 40, 180, 1.0, 3.0},
    {"floor", floorl, NULL, -100, 100, 1e300, 0, 0},
    {"ceil", ceill, NULL, -100, 100, 1e300, 0, 0},
    {"trunc", truncl, NULL, -100, 100, 1e300, 0, 0},
    {"round", roundl, NULL, -100, 100, 1e300, 0, 0},
    {"rint", rintl, NULL, -100, 100, 1e300, 0, 0},
    {"nearbyint", nearbyintl, NULL, -100, 100, 1e300, 0, 0},
    {"abs", fabsl, NULL, -100, 100, 1e300, 0, 0},
    {"fabs", fabsl, NULL, -100, 100, 1e300, 0, 0},
    {"neg", ref_neg, NULL, -100, 100, 1e300, 0, 0},
    {"atan2", NULL, atan2l, -10, 10, 1e300, 1.5, 2.0},
    {"pow", NULL, powl, 0, 10, 1e300, 1.0, 1.5},
    {"hypot", NULL, hypotl, -10, 10, 1e300, 0.5, 2.0}, /* f64: CUDA documents 2 ulp; ours reaches 1.02 */
    {"fmod", NULL, fmodl, -100, 100, 1e300, 0, 0},
    {"remainder", NULL, remainderl, -100, 100, 1e300, 0, 0},
    {"copysign", NULL, copysignl, -100, 100, 1e300, 0, 0},
    {"fdim", NULL, fdiml, -100, 100, 1e300, 0.5, 0.5},
    {"fmax", NULL, fmaxl, -100, 100, 1e300, 0, 0},
    {"fmin", NULL, fminl, -100, 100, 1e300, 0, 0},
    {"nextafter", NULL, nextafterl, -100, 100, 1e300, 0, 0},
    {"logb", logbl, NULL, -100, 100, 1e300, 0, 0},
    {"ldexp", NULL, ref_ldexp, -10, 10, 1e300, 0.5, 0.5},
    {"sinpi", ref_sinpi, NULL, -10, 10, 1e300, 1.5, 1.5},
    {"cospi", ref_cospi, NULL, -10, 10, 1e300, 1.5, 1.5},
    {"erfinv", ref_erfinv, NULL, -1, 1, 1, 1.0, 2.0},
    {"erfcinv", ref_erfcinv, NULL, 0, 2, 2, 2.0, 2.5},
    {"normcdf", ref_normcdf, NULL, -10, 10, 30, 1.0, 4.0},
    {"normcdfinv", ref_normcdfinv, NULL, 0, 1, 1, 2.0, 4.5},
    {"erfcx", ref_erfcx, NULL, -5, 30, 1e300, 1.0, 3.0},
    {"rcbrt", ref_rcbrt, NULL, -100, 100, 1e300, 1.0, 1.5},
    {"rhypot", NULL, ref_rhypot, -10, 10, 1e300, 1.0, 2.5},
    {"rsqrt_rn", ref_rsqrt, NULL, 0, 100, 1e300, 0.5, 1.5},
};

static double mrand_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* An input: uniform, random bits, or a special value. */
static double math_input(const MathCase *c, bool f64, int i) {
    static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 0x1p-149, -0x1p-149, 0x1p-126, 0x1p-1074,
                                      0x1p-1022, 1e-30, -1e-30, 3.0, 100.0, -100.0, 1e10, -1e10, 1e30, 1e300,
                                      INFINITY, -INFINITY, NAN, 0.25, 0.75, 1.5, -1.5, 0.9999999, 1.0000001,
                                      88.7, 89.5, -103.9, 709.7, -745.1, 3.14159265358979, 1.5707963267948966,
                                      0x1.fffffep127, 0x1.fffffffffffffp1023, 10.5, 11.5, -2.5, -3.5, 171.6,
                                      /* just below lgamma's overflow, where (x - 1/2) log x alone overflows */
                                      0x1.74d0d12979efap+1014, 0x1.754d9278b51a6p+1014};
    if (i < (int)NR_COUNTOF(specials)) return specials[i];
    uint64_t k = rnd() % 8;
    if (k < 4) return c->lo + (c->hi - c->lo) * mrand_unit();
    if (k < 6) { /* random magnitudes across exponents */
        double e = (mrand_unit() * 2 - 1) * log2(c->wide);
        double v = exp2(e) * (1 + mrand_unit());
        if (c->lo < 0 && (rnd() & 1)) v = -v;
        return v;
    }
    if (f64) {
        uint64_t b = rnd();
        double d;
        memcpy(&d, &b, 8);
        return d;
    }
    uint32_t b = (uint32_t)rnd();
    float fl;
    memcpy(&fl, &b, 4);
    return fl;
}

static double ulp_of(long double y, bool f64) {
    long double a = fabsl(y);
    int e;
    if (a == 0) return f64 ? 0x1p-1074 : 0x1p-149;
    frexpl(a, &e); /* a = m 2^e, m in [0.5, 1) */
    double u = ldexp(1.0, e - 1 - (f64 ? 52 : 23));
    double minu = f64 ? 0x1p-1074 : 0x1p-149;
    return u < minu ? minu : u;
}

/* Error of got against the exact ref in ulps; -1 for a wrong special value. */
static double ulp_err(double got, long double ref, bool f64) {
    double maxf = f64 ? 0x1.fffffffffffffp1023 : 0x1.fffffep127;
    if (isnan(ref)) return isnan(got) ? 0 : -1;
    if (isnan(got)) return -1;
    if (isinfl(ref) || fabsl(ref) > (long double)maxf * (1 + 0x1p-25L)) {
        if (fabsl(ref) > maxf * (1 + (f64 ? 0x1p-54 : 0x1p-25)) || isinfl(ref))
            return isinf(got) && (got > 0) == (ref > 0) ? 0 : (fabs(got) == maxf ? 1 : -1);
    }
    if (isinf(got)) return fabsl(ref) >= maxf ? 0.5 : -1;
    return (double)(fabsl((long double)got - ref) / ulp_of(ref, f64));
}

static void math_check(const MathCase *c, bool f64, int n, bool report) {
    NrArena ea;
    nr_arena_init(&ea);
    NrPtx *p = nr_ptx_eval_new(&ea, 80);
    NrPk k = f64 ? NR_PK_F64 : NR_PK_F32;
    double worst = 0, wx = 0, wy = 0;
    long double wref = 0;
    double wgot = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double x = math_input(c, f64, i), y = c->f2 ? math_input(c, f64, (i * 7 + 3) % (n + 1)) : 0;
        if (c->f2 && (strcmp(c->name, "pow") == 0) && i % 3 == 0) y = trunc(y); /* integer powers of negatives */
        if (c->f2 && strcmp(c->name, "pow") == 0 && i % 5 == 1) x = -x;
        if (strcmp(c->name, "ldexp") == 0) y = isfinite(y) ? rint(fmod(y, f64 ? 2200.0 : 300.0)) : 7;
        if (strcmp(c->name, "ldexp") == 0 && i % 4 == 0) y = rint((mrand_unit() * 2 - 1) * (f64 ? 2200 : 300));
        if (!f64) x = (float)x, y = (float)y;
        NrPv in[2] = {f64 ? nr_pv_f64(x) : nr_pv_f32((float)x), f64 ? nr_pv_f64(y) : nr_pv_f32((float)y)};
        NrPv out;
        bool ok = nr_pm_call(p, c->name, k, c->f2 ? 2 : 1, in, &out);
        if (!ok) {
            CHECK(0, "math %s is missing", c->name);
            break;
        }
        double got;
        if (f64) memcpy(&got, &out.c, 8);
        else {
            float g;
            uint32_t u = (uint32_t)out.c;
            memcpy(&g, &u, 4);
            got = g;
        }
        long double ref = c->f2 ? c->f2(x, y) : c->f1(x);
        if (strcmp(c->name, "nextafter") == 0) ref = f64 ? nextafter(x, y) : nextafterf((float)x, (float)y);
        if (!f64 && !isnan(ref) && !isinf(ref)) {
            /* the f32 function of exact f32 inputs; references in long double are exact enough */
        }
        double e = ulp_err(got, ref, f64);
        bool within = e >= 0 && e <= (f64 ? c->bound64 : c->bound32) + 1e-9;
        /* lgamma and tgamma near their negative poles are ill-conditioned: only the magnitude order */
        if (!within && (strcmp(c->name, "lgamma") == 0 || strcmp(c->name, "tgamma") == 0) && x < 0 && e >= 0) within = true;
        /* lgamma near its zeros at 1 and 2: the ulp of a result near 0 is tiny, so the error is held
         * to a few ulp of 1 (absolute), as for any implementation that is accurate to the argument */
        if (!within && strcmp(c->name, "lgamma") == 0 && fabsl(ref) < 0.25L &&
            fabsl((long double)got - ref) <= 4.0L * (f64 ? DBL_EPSILON : FLT_EPSILON))
            within = true;
        if (e < 0 || e > worst) {
            if (e < 0 && bad == 0) worst = 1e9;
            if (e > worst || e < 0) worst = e < 0 ? 1e9 : e;
            wx = x, wy = y, wref = ref, wgot = got;
        }
        if (!within && bad++ < 3)
            CHECK(0, "math %s %s(%a%s%a) = %a, want %La (%.2f ulp, bound %.1f)", f64 ? "f64" : "f32", c->name, x,
                  c->f2 ? ", " : "", c->f2 ? y : 0.0, got, ref, e, f64 ? c->bound64 : c->bound32);
        checks++;
    }
    if (report)
        printf("math %-10s %s max %.3f ulp at (%a, %a): got %a, want %La\n", c->name, f64 ? "f64" : "f32", worst, wx,
               wy, wgot, wref);
    nr_arena_free(&ea);
}

/* f32 erf over a regular sweep of bit patterns: every 4093rd float of [0, 4]
 * (beyond, it is 1), every 31st of [0.85, 1] where its error peaks (0.93 ulp
 * over every f32, measured against erfl), and negatives, NaN and infinities.
 * Held to 1 ulp. */
static void erf32_sweep(void) {
    NrArena ea;
    nr_arena_init(&ea);
    NrPtx *p = nr_ptx_eval_new(&ea, 80);
    double worst = 0;
    float wx = 0;
    int bad = 0;
    for (int pass = 0; pass < 3; pass++) {
        uint32_t lo = pass == 1 ? 0x3f59999au : 0, hi = pass == 1 ? 0x3f800000u : pass == 0 ? 0x40800000u : 0xffffffffu;
        uint32_t step = pass == 0 ? 4093 : pass == 1 ? 31 : 65537;
        for (uint64_t u = lo; u <= hi; u += step) {
            float x, g;
            uint32_t b = (uint32_t)u;
            memcpy(&x, &b, 4);
            NrPv in = nr_pv_f32(x), out;
            if (!nr_pm_call(p, "erf", NR_PK_F32, 1, &in, &out)) break;
            uint32_t gb = (uint32_t)out.c;
            memcpy(&g, &gb, 4);
            double e = ulp_err(g, erfl(x), false);
            if (e < 0 || e > 1.0) {
                if (bad++ < 3) CHECK(0, "math f32 erf(%a) = %a, want %La (%.2f ulp, bound 1)", x, g, erfl(x), e);
            }
            if (e > worst) worst = e, wx = x;
            checks++;
        }
    }
    if (getenv("NR_TEST_MATH_REPORT")) printf("math erf sweep f32 max %.3f ulp at %a\n", worst, wx);
    nr_arena_free(&ea);
}

static void run_math_tests(void) {
    erf32_sweep();
    const char *s = getenv("NR_TEST_MATH_N");
    int n = s ? atoi(s) : 20000;
    bool report = getenv("NR_TEST_MATH_REPORT") != NULL;
    const char *only = getenv("NR_TEST_MATH_ONLY");
    for (size_t i = 0; i < NR_COUNTOF(math_cases); i++) {
        if (only && strcmp(only, math_cases[i].name) != 0) continue;
        math_check(&math_cases[i], false, n, report);
        math_check(&math_cases[i], true, n, report);
    }
    /* Every name the library lists is callable. */
    NrArena ea;
    nr_arena_init(&ea);
    NrPtx *p = nr_ptx_eval_new(&ea, 80);
    for (int i = 0; nr_pm_names[i]; i++) {
        NrPv in[4] = {nr_pv_f32(0.5f), nr_pv_f32(0.25f), nr_pv_f32(1.0f), nr_pv_f32(2.0f)}, out;
        bool ok = false;
        for (int na = 1; na <= 4 && !ok; na++) ok = nr_pm_call(p, nr_pm_names[i], NR_PK_F32, na, in, &out);
        CHECK(ok, "math name %s not callable", nr_pm_names[i]);
    }
    nr_arena_free(&ea);
}
