/* test_fp.c - exhaustive and randomized checks of the narrow-float conversions (fp.c).
 *
 * The reference here is written separately from fp.c: values are decoded
 * with ldexp from the format's fields, and rounding searches a sorted table
 * of every finite value of the format and compares against the midpoint of
 * the two neighbours (exact in double).  Random inputs are seeded from the
 * clock; the seed is printed with the first failure.  NR_TEST_SEED=n
 * repeats a run. */
#include "fp.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
static uint64_t seed;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            if (failures++ == 0) printf("seed %llu\n", (unsigned long long)seed);                                      \
            if (failures <= 40) {                                                                                      \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) {
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
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
static double u2d(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}

/* --- reference formats ------------------------------------------------------------------------- */
typedef struct Ref {
    const char *name;
    NrFpFormat fmt;
    int nbits, ebits, mbits, bias;
    int fn;  /* e4m3fn: no inf, only S.1111.111 is NaN */
    int sat; /* conversions saturate */
    int ncodes;
    double *val; /* positive finite values by code, 0..maxfin */
    int maxfin;
} Ref;

static Ref refs[] = {
    {"f8e4nv", NR_FPF_F8E4NV, 8, 4, 3, 7, 1, 1, 0, 0, 0},
    {"f8e5", NR_FPF_F8E5, 8, 5, 2, 15, 0, 1, 0, 0, 0},
    {"f16", NR_FPF_F16, 16, 5, 10, 15, 0, 0, 0, 0, 0},
    {"bf16", NR_FPF_BF16, 16, 8, 7, 127, 0, 0, 0, 0, 0},
};

/* Decode by the textbook formula. Returns NaN for NaN codes. */
static double ref_decode(const Ref *r, uint32_t c) {
    int sign = (c >> (r->nbits - 1)) & 1;
    uint32_t emask = (1u << r->ebits) - 1, mmask = (1u << r->mbits) - 1;
    uint32_t e = (c >> r->mbits) & emask, m = c & mmask;
    double v;
    if (!r->fn && e == emask)
        v = m ? NAN : INFINITY;
    else if (r->fn && e == emask && m == mmask)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - r->bias - r->mbits);
    else
        v = ldexp((double)(m + (1u << r->mbits)), (int)e - r->bias - r->mbits);
    return sign ? -v : v;
}

static void ref_init(Ref *r) {
    r->ncodes = 1 << r->nbits;
    int half = r->ncodes / 2;
    r->val = calloc((size_t)half, sizeof(double));
    r->maxfin = 0;
    for (int c = 0; c < half; c++) {
        double v = ref_decode(r, (uint32_t)c);
        if (isnan(v) || isinf(v)) break;
        r->val[c] = v;
        r->maxfin = c;
    }
}

static uint32_t ref_inf(const Ref *r) { return r->fn ? 0 : (uint32_t)r->maxfin + 1; }

/* Round x (not NaN) to r: search the table, compare with the midpoint. */
static uint32_t ref_round(const Ref *r, double x, int rtz) {
    uint32_t sign = signbit(x) ? 1u << (r->nbits - 1) : 0;
    double ax = fabs(x);
    if (isinf(ax)) return sign | (r->sat ? (uint32_t)r->maxfin : ref_inf(r));
    int lo = 0, hi = r->maxfin; /* largest i with val[i] <= ax */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (r->val[mid] <= ax)
            lo = mid;
        else
            hi = mid - 1;
    }
    int i = lo;
    if (r->val[i] == ax || rtz) return sign | (uint32_t)i;
    double next = i < r->maxfin ? r->val[i + 1] : r->val[i] + (r->val[i] - r->val[i - 1]);
    double mid = (r->val[i] + next) / 2; /* exact: one more bit than the format */
    int res = ax < mid ? i : ax > mid ? i + 1 : (i % 2 == 0 ? i : i + 1);
    if (res > r->maxfin) return sign | (r->sat ? (uint32_t)r->maxfin : ref_inf(r));
    return sign | (uint32_t)res;
}

/* The fast entry points of fp.h for format r. */
static uint32_t fast_from_f32(const Ref *r, float x) {
    switch (r->fmt) {
    case NR_FPF_F8E4NV: return nr_f32_to_f8e4nv(x);
    case NR_FPF_F8E5: return nr_f32_to_f8e5(x);
    case NR_FPF_F16: return nr_f32_to_f16(x);
    case NR_FPF_BF16: return nr_f32_to_bf16(x);
    default: return 0;
    }
}
static float fast_to_f32(const Ref *r, uint32_t c) {
    switch (r->fmt) {
    case NR_FPF_F8E4NV: return nr_f8e4nv_to_f32((uint8_t)c);
    case NR_FPF_F8E5: return nr_f8e5_to_f32((uint8_t)c);
    case NR_FPF_F16: return nr_f16_to_f32((uint16_t)c);
    case NR_FPF_BF16: return nr_bf16_to_f32((uint16_t)c);
    default: return 0;
    }
}

static int is_nan_code(const Ref *r, uint32_t c) { return isnan(ref_decode(r, c)); }

/* --- exhaustive checks of every bit pattern ---------------------------------------------------- */
static void test_decode_all(Ref *r) {
    for (int c = 0; c < r->ncodes; c++) {
        double want = ref_decode(r, (uint32_t)c);
        float got = fast_to_f32(r, (uint32_t)c);
        if (isnan(want)) {
            CHECK(isnan(got), "%s decode 0x%x: want nan, got %a", r->name, c, (double)got);
            CHECK(!!signbit(got) == !!(c >> (r->nbits - 1)), "%s decode 0x%x: NaN sign lost", r->name, c);
        } else {
            CHECK((double)got == want && !!signbit(got) == !!signbit(want), "%s decode 0x%x: want %a, got %a", r->name,
                  c, want, (double)got);
        }
    }
}

static void test_roundtrip_all(Ref *r) {
    for (int c = 0; c < r->ncodes; c++) {
        float v = fast_to_f32(r, (uint32_t)c);
        uint32_t back = fast_from_f32(r, v);
        uint32_t back64 = nr_fp_round((double)v, r->fmt, 0);
        uint32_t back_rtz = nr_fp_round((double)v, r->fmt, 1);
        if (is_nan_code(r, (uint32_t)c)) {
            if (r->nbits == 8) {
                CHECK(back == 0x7f && back64 == 0x7f, "%s: NaN 0x%x -> 0x%x (want canonical 0x7f)", r->name, c, back);
            } else {
                uint32_t quiet = 1u << (r->mbits - 1);
                CHECK(back == ((uint32_t)c | quiet), "%s: NaN 0x%x -> 0x%x (want 0x%x)", r->name, c, back,
                      (uint32_t)c | quiet);
                CHECK(back64 == back && back_rtz == back, "%s: NaN 0x%x via f64 -> 0x%x", r->name, c, back64);
            }
            continue;
        }
        uint32_t want = (uint32_t)c;
        if (isinf(v) && r->sat) want = (c >> (r->nbits - 1) ? 1u << (r->nbits - 1) : 0) | (uint32_t)r->maxfin;
        CHECK(back == want, "%s roundtrip 0x%x -> %a -> 0x%x", r->name, c, (double)v, back);
        CHECK(back64 == want, "%s roundtrip via f64 0x%x -> 0x%x", r->name, c, back64);
        CHECK(back_rtz == want, "%s rtz roundtrip 0x%x -> 0x%x", r->name, c, back_rtz);
    }
    if (r->fmt == NR_FPF_F16 || r->fmt == NR_FPF_BF16) {
        for (int c = 0; c < r->ncodes; c++) {
            if (is_nan_code(r, (uint32_t)c)) continue;
            double v = (double)fast_to_f32(r, (uint32_t)c);
            uint32_t b1 = r->fmt == NR_FPF_F16 ? nr_f64_to_f16(v) : nr_f64_to_bf16(v);
            uint32_t b2 = r->fmt == NR_FPF_F16 ? nr_f32_to_f16_rtz((float)v) : nr_f32_to_bf16_rtz((float)v);
            CHECK(b1 == (uint32_t)c && b2 == (uint32_t)c, "%s f64/rtz roundtrip 0x%x -> 0x%x 0x%x", r->name, c, b1, b2);
        }
    }
}

/* --- random rounding --------------------------------------------------------------------------- */
static void check_f32_input(Ref *r, float x) {
    if (isnan(x)) {
        uint32_t got = fast_from_f32(r, x);
        CHECK(is_nan_code(r, got), "%s: NaN input %08x gave non-NaN 0x%x", r->name, f2u(x), got);
        return;
    }
    uint32_t want = ref_round(r, x, 0), want_rtz = ref_round(r, x, 1);
    uint32_t got = fast_from_f32(r, x);
    CHECK(got == want, "%s(%a = %08x): want 0x%x, got 0x%x", r->name, (double)x, f2u(x), want, got);
    uint32_t g2 = nr_fp_round(x, r->fmt, 0);
    CHECK(g2 == want, "%s nr_fp_round(%a): want 0x%x, got 0x%x", r->name, (double)x, want, g2);
    uint32_t g3 = nr_fp_round(x, r->fmt, 1);
    CHECK(g3 == want_rtz, "%s rtz(%a): want 0x%x, got 0x%x", r->name, (double)x, want_rtz, g3);
    if (r->fmt == NR_FPF_F16) {
        uint32_t g4 = nr_f32_to_f16_rtz(x);
        CHECK(g4 == want_rtz, "f16 rtz(%a): want 0x%x, got 0x%x", (double)x, want_rtz, g4);
    }
    if (r->fmt == NR_FPF_BF16) {
        uint32_t g4 = nr_f32_to_bf16_rtz(x);
        CHECK(g4 == want_rtz, "bf16 rtz(%a): want 0x%x, got 0x%x", (double)x, want_rtz, g4);
    }
}

static void check_f64_input(Ref *r, double x) {
    if (isnan(x)) return;
    uint32_t want = ref_round(r, x, 0);
    uint32_t got = nr_fp_round(x, r->fmt, 0);
    CHECK(got == want, "%s from f64 %a: want 0x%x, got 0x%x", r->name, x, want, got);
    uint32_t want_rtz = ref_round(r, x, 1);
    uint32_t got_rtz = nr_fp_round(x, r->fmt, 1);
    CHECK(got_rtz == want_rtz, "%s rtz from f64 %a: want 0x%x, got 0x%x", r->name, x, want_rtz, got_rtz);
    if (r->fmt == NR_FPF_F16) CHECK(nr_f64_to_f16(x) == want, "nr_f64_to_f16(%a)", x);
    if (r->fmt == NR_FPF_BF16) CHECK(nr_f64_to_bf16(x) == want, "nr_f64_to_bf16(%a)", x);
}

/* A value of r near a random code: the code itself, the midpoint to its
 * neighbour (a tie), and one step either side of that midpoint. */
static double near_value(Ref *r, int variant) {
    int i = (int)(rnd() % (uint64_t)(r->maxfin + 1));
    double v = r->val[i];
    double next = i < r->maxfin ? r->val[i + 1] : v + (v - r->val[i - 1]);
    double mid = (v + next) / 2;
    double x;
    switch (variant % 6) {
    case 0: x = v; break;
    case 1: x = mid; break;
    case 2: x = nextafter(mid, INFINITY); break;
    case 3: x = nextafter(mid, 0); break;
    case 4: x = v + (next - v) * ((double)(rnd() % 1000) / 1000.0); break;
    default: x = r->val[r->maxfin] * (1.0 + (double)(rnd() % 100000) / 1000.0); break; /* above max */
    }
    return (rnd() & 1) ? -x : x;
}

static void test_random_round(Ref *r, int n) {
    for (int k = 0; k < n; k++) {
        float x = u2f((uint32_t)rnd()); /* any f32 at all */
        check_f32_input(r, x);
        double y = near_value(r, k);
        check_f32_input(r, (float)y); /* near the format's grid, as f32 */
        check_f32_input(r, nextafterf((float)y, (rnd() & 1) ? INFINITY : -INFINITY));
        check_f64_input(r, y); /* ties exactly, and one f64 ulp away */
        /* f32 subnormals and the smallest normals */
        check_f32_input(r, u2f((uint32_t)(rnd() & 0x80ffffff)));
        /* a double with a random exponent around the format's range */
        int e = (int)(rnd() % 300) - 160;
        double z = ldexp(1.0 + (double)(rnd() >> 12) * 0x1p-52, e);
        check_f64_input(r, (rnd() & 1) ? -z : z);
    }
    check_f32_input(r, INFINITY);
    check_f32_input(r, -INFINITY);
    check_f32_input(r, 0.0f);
    check_f32_input(r, -0.0f);
    check_f32_input(r, FLT_MAX);
    check_f32_input(r, FLT_TRUE_MIN);
    check_f64_input(r, DBL_TRUE_MIN);
    check_f64_input(r, -DBL_MAX);
}

/* --- f64 -> f32 ----------------------------------------------------------------------------------- */
/* Reference: the largest float <= |x| (found by stepping, not by a cast's
 * rounding), then the midpoint rule. */
static float ref_f64_to_f32(double x) {
    double ax = fabs(x);
    float lo;
    if (ax >= 0x1p128)
        lo = FLT_MAX;
    else {
        lo = (float)ax;
        while ((double)lo > ax) lo = nextafterf(lo, 0);
        while (lo < FLT_MAX && (double)nextafterf(lo, INFINITY) <= ax) lo = nextafterf(lo, INFINITY);
    }
    float res;
    if (isinf(ax))
        res = INFINITY;
    else if ((double)lo == ax)
        res = lo;
    else {
        double next = lo == FLT_MAX ? 0x1p128 : (double)nextafterf(lo, INFINITY);
        double mid = ((double)lo + next) / 2;
        int odd = f2u(lo) & 1;
        if (ax < mid || (ax == mid && !odd))
            res = lo;
        else
            res = lo == FLT_MAX ? INFINITY : nextafterf(lo, INFINITY);
    }
    return signbit(x) ? -res : res;
}

static void test_f64_to_f32(int n) {
    for (int k = 0; k < n; k++) {
        double x;
        switch (k % 4) {
        case 0: x = u2d(rnd()); break;
        case 1: { /* f32 range, including subnormals */
            int e = (int)(rnd() % 290) - 155;
            x = ldexp(1.0 + (double)(rnd() >> 12) * 0x1p-52, e);
            break;
        }
        case 2: { /* ties and their neighbours */
            float f = u2f((uint32_t)rnd() & 0x7fffffff);
            if (isnan(f) || isinf(f) || f == FLT_MAX) f = 1.0f;
            double mid = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
            int v = (int)(rnd() % 3);
            x = v == 0 ? mid : v == 1 ? nextafter(mid, 0) : nextafter(mid, INFINITY);
            break;
        }
        default: x = (double)FLT_MAX + ldexp((double)(rnd() % 4096), 92); break; /* around the overflow threshold */
        }
        if (rnd() & 1) x = -x;
        if (isnan(x)) {
            CHECK(isnan(nr_f64_to_f32(x)), "f64->f32 NaN");
            continue;
        }
        float want = ref_f64_to_f32(x), got = nr_f64_to_f32(x);
        CHECK(f2u(want) == f2u(got), "f64->f32 %a: want %a, got %a", x, (double)want, (double)got);
        float got_rtz = u2f(nr_fp_round(x, NR_FPF_F32, 1));
        float want_rtz;
        {
            double ax = fabs(x);
            float lo = ax >= 0x1p128 ? FLT_MAX : (float)ax;
            while ((double)lo > ax) lo = nextafterf(lo, 0);
            if (isinf(ax)) lo = INFINITY;
            want_rtz = signbit(x) ? -lo : lo;
        }
        CHECK(f2u(want_rtz) == f2u(got_rtz), "f64->f32 rtz %a: want %a, got %a", x, (double)want_rtz, (double)got_rtz);
    }
}

/* --- tf32 ---------------------------------------------------------------------------------------- */
static float ref_tf32(float x) {
    double ax = fabs((double)x);
    if (ax == 0 || isinf(ax)) return x;
    int e;
    frexp(ax, &e);                          /* ax in [2^(e-1), 2^e) */
    int lead = e - 1 < -126 ? -126 : e - 1; /* subnormals share the smallest exponent */
    double ulp = ldexp(1.0, lead - 10);
    double q = floor(ax / ulp);
    if (ax - q * ulp >= ulp / 2) q += 1; /* ties away from zero */
    double res = q * ulp;
    float f = res >= 0x1p128 ? INFINITY : (float)res;
    return x < 0 ? -f : f;
}

static void test_tf32(int n) {
    for (int k = 0; k < n; k++) {
        uint32_t u = (uint32_t)rnd();
        if (k % 3 == 1) u = (u & ~0x1fffu) | 0x1000; /* an exact tie */
        if (k % 3 == 2) u &= 0x807fffff;             /* subnormal */
        float x = u2f(u);
        float got = nr_f32_round_tf32(x);
        if (isnan(x)) {
            CHECK(isnan(got) && (f2u(got) & 0x1fff) == 0, "tf32 NaN %08x -> %08x", u, f2u(got));
            continue;
        }
        float want = ref_tf32(x);
        CHECK(f2u(got) == f2u(want), "tf32(%a = %08x): want %a, got %a", (double)x, u, (double)want, (double)got);
    }
    CHECK(isinf(nr_f32_round_tf32(FLT_MAX)), "tf32(FLT_MAX) should round to inf");
    CHECK(nr_f32_round_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f, "tf32 tie goes away from zero");
    CHECK(nr_f32_round_tf32(-1.0f - 0x1p-11f) == -1.0f - 0x1p-10f, "tf32 negative tie goes away from zero");
}

/* A few values known by heart, so that a shared misunderstanding in both the
 * reference and the implementation still fails. */
static void test_known(void) {
    CHECK(nr_f32_to_f16(65504.0f) == 0x7bff, "f16 max");
    CHECK(nr_f32_to_f16(65520.0f) == 0x7c00, "65520 -> inf");
    CHECK(nr_f32_to_f16(65519.99f) == 0x7bff, "just below 65520 -> max");
    CHECK(nr_f32_to_f16(0x1p-24f) == 0x0001, "f16 min subnormal");
    CHECK(nr_f32_to_f16(0x1p-25f) == 0x0000, "2^-25 ties to zero");
    CHECK(nr_f32_to_f16(0x1.8p-25f) == 0x0001, "1.5*2^-25 rounds up");
    CHECK(nr_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00, "tie to even (down)");
    CHECK(nr_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02, "tie to even (up)");
    CHECK(nr_f32_to_f16_rtz(65535.0f) == 0x7bff, "f16 rtz overflow -> max");
    CHECK(nr_f32_to_f16_rtz(INFINITY) == 0x7c00, "f16 rtz inf -> inf");
    CHECK(nr_f32_to_bf16(1.00390625f) == 0x3f80, "bf16 tie to even");
    CHECK(nr_f32_to_bf16(FLT_MAX) == 0x7f80, "bf16 overflow -> inf");
    CHECK(nr_f32_to_bf16_rtz(FLT_MAX) == 0x7f7f, "bf16 rtz overflow -> max");
    CHECK(nr_f32_to_f8e4nv(448.0f) == 0x7e, "e4m3 max");
    CHECK(nr_f32_to_f8e4nv(1e9f) == 0x7e && nr_f32_to_f8e4nv(-1e9f) == 0xfe, "e4m3 saturates");
    CHECK(nr_f32_to_f8e4nv(INFINITY) == 0x7e && nr_f32_to_f8e4nv(-INFINITY) == 0xfe, "e4m3 inf saturates");
    CHECK(nr_f32_to_f8e4nv(NAN) == 0x7f, "e4m3 NaN");
    CHECK(nr_f32_to_f8e4nv(0x1p-9f) == 0x01 && nr_f32_to_f8e4nv(0x1p-10f) == 0x00, "e4m3 subnormal");
    CHECK(nr_f8e4nv_to_f32(0x7e) == 448.0f && nr_f8e4nv_to_f32(0x01) == 0x1p-9f, "e4m3 decode");
    CHECK(nr_f32_to_f8e5(57344.0f) == 0x7b && nr_f32_to_f8e5(INFINITY) == 0x7b, "e5m2 max / inf saturates");
    CHECK(nr_f32_to_f8e5(-1e30f) == 0xfb, "e5m2 saturates negative");
    CHECK(nr_f32_to_f8e5(NAN) == 0x7f, "e5m2 NaN");
    CHECK(nr_f8e5_to_f32(0x7c) == INFINITY && nr_f8e5_to_f32(0x01) == 0x1p-16f, "e5m2 decode");
    CHECK(nr_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01, "f64 -> f16 single rounding (not via f32)");
    CHECK(nr_f64_to_f32(0x1.000001p0) == 1.0f, "f64 -> f32 tie to even");
    CHECK(nr_fp_round(1.0 + 0x1p-11 + 0x1p-40, NR_FPF_F16, 1) == 0x3c00, "rtz drops");
}

int main(void) {
    const char *env = getenv("NR_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    rng_state = seed;
    test_known();
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        ref_init(&refs[i]);
        test_decode_all(&refs[i]);
        test_roundtrip_all(&refs[i]);
        test_random_round(&refs[i], 300000);
    }
    test_f64_to_f32(300000);
    test_tf32(1000000);
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) free(refs[i].val);
    if (failures) {
        printf("test_fp: %d failures (seed %llu)\n", failures, (unsigned long long)seed);
        return 1;
    }
    printf("test_fp: ok\n");
    return 0;
}
