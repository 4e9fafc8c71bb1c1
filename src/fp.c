/* fp.c - bit-exact conversions between f32/f64 and the narrow float formats;
 * see fp.h.
 *
 * Two paths.  The hot conversions (f32 <-> f16, f32 <-> bf16, fp8 -> f32) are
 * short bit manipulations.  Everything else (fp8 encodings, rtz, every f64
 * source) goes through nr_fp_round, which rounds the exact binary value of a
 * double once to any format; since every f32 is a double, it is also the
 * general f32 path.  Nothing here depends on the FPU's rounding mode or
 * flush-to-zero state except the final (float) of a decoded value, which is
 * always exact.
 *
 * NaN: f16, bf16 and f32 results keep the sign and the top payload bits and
 * set the quiet bit; fp8 results are the canonical 0x7f, as the GPU's
 * satfinite conversions produce. */
#include "fp.h"

#include <string.h>

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

/* --- the general rounding routine -------------------------------------------------------------- */
typedef struct FpFmt {
    int mbits; /* explicit mantissa bits */
    int bias;
    int signbit;     /* bit position of the sign */
    uint32_t maxfin; /* bits of the largest finite value */
    uint32_t inf;    /* bits of +inf; 0 if the format has none */
    bool sat;        /* overflow and inf saturate to maxfin (fp8 satfinite) */
    uint32_t nan;    /* canonical NaN: 0 = build one from the payload */
} FpFmt;

static const FpFmt fp_fmts[] = {
    [NR_FPF_F8E4NV] = {3, 7, 7, 0x7e, 0, true, 0x7f},
    [NR_FPF_F8E5] = {2, 15, 7, 0x7b, 0x7c, true, 0x7f},
    [NR_FPF_F16] = {10, 15, 15, 0x7bff, 0x7c00, false, 0},
    [NR_FPF_BF16] = {7, 127, 15, 0x7f7f, 0x7f80, false, 0},
    [NR_FPF_F32] = {23, 127, 31, 0x7f7fffff, 0x7f800000, false, 0},
};

uint32_t nr_fp_round(double x, NrFpFormat fmt, bool rtz) {
    const FpFmt *F = &fp_fmts[fmt];
    uint64_t u;
    memcpy(&u, &x, 8);
    uint32_t sign = (u >> 63) ? (uint32_t)1 << F->signbit : 0;
    uint64_t a = u & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) { /* NaN */
        if (F->nan) return F->nan;
        uint32_t payload = (uint32_t)((a & 0xfffffffffffffull) >> (52 - F->mbits));
        return sign | F->inf | ((uint32_t)1 << (F->mbits - 1)) | payload;
    }
    if (a == 0x7ff0000000000000ull) return sign | (F->sat ? F->maxfin : F->inf);
    int e = (int)(a >> 52);
    /* Zeros and double subnormals (< 2^-1022) lie below half the smallest
     * subnormal of every format: they round to a signed zero. */
    if (e == 0) return sign;
    int E = e - 1023, emin = 1 - F->bias;
    /* Far above the largest finite: skip the arithmetic, it is an overflow. */
    if (E > F->bias + 2) return sign | (rtz || F->sat ? F->maxfin : F->inf);
    uint64_t sig = (a & 0xfffffffffffffull) | (1ull << 52);
    int shift = 52 - F->mbits;
    if (E < emin) shift += emin - E; /* subnormal result: fewer bits survive */
    if (shift > 63) shift = 63;      /* sig < 2^53 <= half: rounds to zero either way */
    uint64_t q = sig >> shift, rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (!rtz && (rem > half || (rem == half && (q & 1)))) q++;
    /* A carry out of the mantissa moves into the exponent by plain addition. */
    uint64_t code = E < emin ? q : ((uint64_t)(E + F->bias) << F->mbits) + q - (1ull << F->mbits);
    if (code > F->maxfin) code = rtz || F->sat ? F->maxfin : F->inf;
    return sign | (uint32_t)code;
}

/* --- f16 --------------------------------------------------------------------------------------- */
uint16_t nr_f32_to_f16(float x) {
    uint32_t u = f2u(x);
    uint32_t sign = (u >> 16) & 0x8000;
    u &= 0x7fffffff;
    if (u >= 0x7f800000) return (uint16_t)(sign | (u == 0x7f800000 ? 0x7c00 : 0x7e00 | ((u >> 13) & 0x3ff)));
    if (u >= 0x47800000) return (uint16_t)(sign | 0x7c00); /* >= 2^16 */
    if (u >= 0x38800000) {                                 /* f16 normal range, >= 2^-14 */
        /* Round the 13 dropped bits to nearest even, then rebias 127 -> 15;
         * a carry into the exponent (even up to inf) is correct. */
        uint32_t r = u + 0xfff + ((u >> 13) & 1);
        return (uint16_t)(sign | ((r - 0x38000000) >> 13));
    }
    if (u <= 0x33000000) return (uint16_t)sign; /* <= 2^-25: ties to the even zero */
    /* Subnormal result: x = m * 2^(e-150), in units of 2^-24 that is m >> (126 - e). */
    int e = (int)(u >> 23);
    uint32_t m = (u & 0x7fffff) | 0x800000;
    int shift = 126 - e; /* 14 .. 24 */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

float nr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f) return u2f(sign | 0x7f800000 | (m << 13));
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t nr_f32_to_f16_rtz(float x) { return (uint16_t)nr_fp_round(x, NR_FPF_F16, true); }

uint16_t nr_f64_to_f16(double x) { return (uint16_t)nr_fp_round(x, NR_FPF_F16, false); }

/* --- bf16 -------------------------------------------------------------------------------------- */
uint16_t nr_f32_to_bf16(float x) {
    uint32_t u = f2u(x);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    /* Round the low half to nearest even; overflow carries into inf. */
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float nr_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t nr_f32_to_bf16_rtz(float x) {
    uint32_t u = f2u(x);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)(u >> 16);
}

uint16_t nr_f64_to_bf16(double x) { return (uint16_t)nr_fp_round(x, NR_FPF_BF16, false); }

/* --- fp8 --------------------------------------------------------------------------------------- */
uint8_t nr_f32_to_f8e4nv(float x) { return (uint8_t)nr_fp_round(x, NR_FPF_F8E4NV, false); }

/* e4m3fn's bit pattern, shifted into an f16's exponent and mantissa fields,
 * is the value scaled by 2^-8 (normals and subnormals alike). */
float nr_f8e4nv_to_f32(uint8_t b) {
    if ((b & 0x7f) == 0x7f) return u2f(((uint32_t)(b & 0x80) << 24) | 0x7fc00000);
    uint16_t h = (uint16_t)(((b & 0x80) << 8) | ((b & 0x7f) << 7));
    return nr_f16_to_f32(h) * 256.0f;
}

uint8_t nr_f32_to_f8e5(float x) { return (uint8_t)nr_fp_round(x, NR_FPF_F8E5, false); }

/* e5m2 is the top byte of an f16. */
float nr_f8e5_to_f32(uint8_t b) { return nr_f16_to_f32((uint16_t)(b << 8)); }

/* --- tf32 and f64 ------------------------------------------------------------------------------ */
float nr_f32_round_tf32(float x) {
    uint32_t u = f2u(x);
    if ((u & 0x7f800000) == 0x7f800000) { /* inf stays; NaN stays a (quiet) NaN */
        if (u & 0x7fffff) u = (u | 0x400000) & ~0x1fffu;
        return u2f(u);
    }
    /* Ties away from zero on the magnitude: add half an ulp of the 10-bit
     * mantissa and truncate; a carry may reach the exponent (or inf). */
    return u2f((u + 0x1000) & ~0x1fffu);
}

float nr_f64_to_f32(double x) { return u2f(nr_fp_round(x, NR_FPF_F32, false)); }
