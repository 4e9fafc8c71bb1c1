/* ptx_math.c - Nereid's math library, written once on the scalar layer
 * (ptx_scalar.c) so that the same code emits PTX and runs on the CPU for
 * tests.  f32 and f64 share each algorithm; the coefficient tables are
 * relative-error minimax polynomials derived with the Remez script in
 * docs/ptx.md (each table's comment gives its interval and error).
 *
 * Every function uses only correctly rounded instructions (.rn arithmetic,
 * fma, div.rn, sqrt.rn, cvt), never the .approx ones, so evaluation mode
 * reproduces the GPU bit for bit.  Subnormals are kept (no .ftz).
 *
 *   exp family   x = k ln2 + r with a two-part ln2 (fma makes the first
 *                product exact), exp(r) = 1 + r + r^2 E(r), 2^k applied in
 *                two exact steps; expm1 keeps r + r^2 E(r) apart from the 1
 *   log family   x = 2^e (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1],
 *                log(1 + f) = f - s (f - s^2 L(s^2)), s = f / (2 + f)
 *   sin cos tan  Cody-Waite reduction by pi/2 in three parts (|x| < 2^17
 *                for f32, 2^20 for f64), Payne-Hanek with the bits of 2/pi
 *                from a .const table beyond; odd/even polynomials on
 *                [-pi/4, pi/4]
 *   atan family  atan(x) = atan(c) + atan((x - c) / (1 + c x)), c in
 *                {0, 1/2, 1, 3/2, inf}; asin/acos on [0, 1/2] directly and
 *                through asin(sqrt((1 - x) / 2)) above
 *   erf, erfc    x * E(x^2) below 1; exp(-x^2) Q(x) with x^2 split exactly
 *                and Q on a few intervals (in 1/x for large x); f32 erf:
 *                x + x P(x^2) below 0.85, 1 - 2^(x H(x - 1)) above
 *   hyperbolic   from expm1 and exp; inverse ones from log1p and log
 *   pow (f64)    log in double-double, the product in double-double, exp
 *                of a double-double argument; f32 pow, cbrt, hypot, fmod,
 *                remainder, lgamma and tgamma compute in f64
 *   gamma        Gamma(1 + t) = 1 + t (t - 1) H(t) on [0, 1] (exact at the
 *                zeros of lgamma), recurrence with a double-double product,
 *                Stirling's series with a double-double log from 12 up,
 *                reflection for negative x */
#include "ptx.h"

#include <math.h>
#include <string.h>

/* --- coefficient tables ------------------------------------------------------------------------------ */
/* sin32: [0, (pi/4)^2], degree 3, relative error 2^-32.4 */
static const double SIN32[] = {-0x1.555556p-3, 0x1.11110ep-7, -0x1.a013ap-13, 0x1.6dbc4p-19};
/* cos32: [0, (pi/4)^2], degree 3, relative error 2^-34.0 */
static const double COS32[] = {0x1.555556p-5, -0x1.6c16cp-10, 0x1.a015c2p-16, -0x1.25238cp-22};
/* tan32: [0, (pi/4)^2], degree 7, relative error 2^-29.4 */
static const double TAN32[] = {0x1.555556p-2, 0x1.11111ep-3, 0x1.ba14d6p-5, 0x1.66fc3p-6,
                               0x1.1a1a3ep-7, 0x1.220b04p-8, -0x1.eb2e34p-22, 0x1.d518cap-10};
/* exp32: [-ln2/2, ln2/2], degree 5, relative error 2^-28.5 */
static const double EXP32[] = {0x1p-1, 0x1.555556p-3, 0x1.5554eap-5, 0x1.11114cp-7, 0x1.6d42cap-10, 0x1.a072e2p-13};
/* log32: [0, ((sqrt2-1)/(sqrt2+1))^2], degree 3, relative error 2^-29.1 */
static const double LOG32[] = {0x1.555556p-1, 0x1.9999ecp-2, 0x1.245c34p-2, 0x1.ddd1ap-3};
/* atan32: [0, (7/16)^2], degree 6, relative error 2^-33.0 */
static const double ATAN32[] = {-0x1.555556p-2, 0x1.999996p-3, -0x1.24916cp-3, 0x1.c6e53p-4,
                                -0x1.710778p-4, 0x1.1ff80cp-4, -0x1.3a03f4p-5};
/* asin32: [0, 1/4], degree 5, relative error 2^-25.5 */
static const double ASIN32[] = {0x1.555554p-3, 0x1.33343cp-4, 0x1.6d5904p-5, 0x1.fdcaecp-6, 0x1.17de8ep-6, 0x1.14e26p-5};
/* erf32: [0, 1] in x^2, degree 6, relative error 2^-29.6 */
static const double ERF32[] = {0x1.20dd74p+0, -0x1.81273ep-2, 0x1.ce2cf8p-4, -0x1.b7f90ep-6,
                               0x1.5405b8p-8, -0x1.a3f72ep-11, 0x1.496ab4p-14};
/* f32 erf (erf32): weighted minimax fits, the coefficients rounded to f32 one
 * at a time with the rest refit.  ERFS32: erf(x) = x + x P(x^2) on [0, 0.85],
 * P degree 5, relative error 2^-27.1.  ERFT32: log2 erfc(x) = x H(x - 1) on
 * [0.85, 3.925], H degree 5, error weighted by erfc(x) (the absolute error it
 * puts into erf): 0.08 ulp of erf.  EXP2M32: 2^f - 1 = -f R(f) on [-1/2, 1/2],
 * R degree 5 (negated), relative error 2^-28.3. */
static const double ERFS32[] = {0x1.06eba8p-3,  -0x1.812726p-2, 0x1.ce256ap-4,
                                -0x1.b735eap-6, 0x1.4b7630p-8,  -0x1.4cd860p-11};
static const double ERFT32[] = {-0x1.558eaep+1, -0x1.2388f8p+0, -0x1.3d9604p-4,
                                0x1.1fe95ep-6,  -0x1.9859a0p-9, 0x1.4c2088p-12};
static const double EXP2M32[] = {-0x1.62e430p-1, -0x1.ebfbdcp-3, -0x1.c6af7cp-5,
                                 -0x1.3b2de0p-7, -0x1.5f082ep-10, -0x1.416b54p-13};
/* erfc(x) exp(x^2): [0.5, 2], t = x - 1.25, degree 10, relative error 2^-28.8 */
static const double ERFCQ32A[] = {0x1.78a692p-2,  -0x1.abaadp-3, 0x1.b56f44p-4,  -0x1.9b627cp-5,
                                  0x1.68a2aap-6,  -0x1.29b918p-7, 0x1.d1bf9p-9,  -0x1.5721ecp-10,
                                  0x1.edb74cp-12, -0x1.932ea6p-13, 0x1.0285c6p-14};
/* [2, 4], t = x - 3, degree 9, relative error 2^-28.1 */
static const double ERFCQ32B[] = {0x1.6e9828p-3,  -0x1.bd6ae4p-5,  0x1.043fcp-6,   -0x1.25905cp-8,  0x1.40adccp-10,
                                  -0x1.53e8a6p-12, 0x1.5b7ed6p-14, -0x1.5deadcp-16, 0x1.8e24f6p-18, -0x1.7804a2p-20};
/* erfc(1/u) exp(1/u^2) / u: u in [1/10.1, 1/4], t = u - 0x1.6562d9faee41ep-3, degree 6, 2^-31.8 */
static const double ERFCU32[] = {0x1.1ca764p-1, -0x1.721ef8p-4, -0x1.bc98f8p-3, 0x1.abd4dap-3,
                                 0x1.c074dep-4, -0x1.c341f4p-2, 0x1.167bbap-2};
static const double ERFCU32_C = 0x1.6562d9faee41ep-3;
/* ERFCU32[0] to double precision: the rest of the constant term */
static const double ERFCU32_C0L = -0x1.9f3830p-26;

/* sin64: degree 7, relative error 2^-74.7 */
static const double SIN64[] = {-0x1.5555555555555p-3, 0x1.1111111111111p-7,  -0x1.a01a01a01a019p-13,
                               0x1.71de3a556c2c1p-19, -0x1.ae64567e7215ap-26, 0x1.61245fb3c96bfp-33,
                               -0x1.ae7c5256a2703p-41, 0x1.92420f5923007p-49};
/* cos64: degree 7, relative error 2^-77.1 */
static const double COS64[] = {0x1.5555555555555p-5,  -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a019p-16,
                               -0x1.27e4fb7789d96p-22, 0x1.1eed8eff3325ep-29,  -0x1.93974953a285ap-37,
                               0x1.ae7ce81d1cb03p-45,  -0x1.65d2660bce945p-53};
/* tan64: degree 16, relative error 2^-63.6 */
static const double TAN64[] = {0x1.5555555555555p-2,  0x1.1111111111110p-3,  0x1.ba1ba1ba1bc09p-5,  0x1.664f4882b245cp-6,
                               0x1.226e3562254d9p-7,  0x1.d6d3cfbeca918p-9,  0x1.7da3817331459p-10, 0x1.35561e78f9a23p-11,
                               0x1.f5b10f181bf53p-13, 0x1.949caeb6b82c2p-14, 0x1.567966c031a76p-15, 0x1.91438e0c6eb3ep-17,
                               0x1.d26744000cea1p-17, -0x1.f4c0309ee54f8p-18, 0x1.5ec5d2a5b0fefp-17, -0x1.569c93ab461c3p-18,
                               0x1.eda95ed7c4beap-20};
/* exp64: degree 11, relative error 2^-64.7 */
static const double EXP64[] = {0x1.0000000000000p-1, 0x1.5555555555555p-3, 0x1.5555555555557p-5, 0x1.111111111110dp-7,
                               0x1.6c16c16c15a7bp-10, 0x1.a01a01a01cdd0p-13, 0x1.a01a01a9e286fp-16,
                               0x1.71de3a4a40befp-19, 0x1.27e4d42a97e70p-22, 0x1.ae6470d0181f1p-26,
                               0x1.1f7f0a1be33b5p-29, 0x1.61583f0c960fcp-33};
/* log64: degree 8, relative error 2^-65.4 */
static const double LOG64[] = {0x1.5555555555555p-1, 0x1.9999999999998p-2, 0x1.249249249295dp-2,
                               0x1.c71c71c64c126p-3, 0x1.745d17d3930efp-3, 0x1.3b137b22628cep-3,
                               0x1.111d2a1492f1cp-3, 0x1.debe65022cb34p-4, 0x1.e6b3b8b39edf2p-4};
/* atan64: [0, (7/16)^2], degree 12, relative error 2^-60.9 */
static const double ATAN64[] = {-0x1.5555555555555p-2, 0x1.9999999999990p-3,  -0x1.2492492491924p-3,
                                0x1.c71c71c676d81p-4,  -0x1.745d171ecb124p-4, 0x1.3b13abbe4f008p-4,
                                -0x1.111091d2d5a39p-4, 0x1.e1d25b32f7f68p-5,  -0x1.ae8121ccbd276p-5,
                                0x1.8132e3201fd1ap-5,  -0x1.4ad4c2cd25f8ap-5, 0x1.de3ad8313f7ebp-6,
                                -0x1.9a9e9a1b6a03bp-7};
/* asin64: [0, 1/4], degree 12, relative error 2^-53.6 */
static const double ASIN64[] = {0x1.5555555555556p-3, 0x1.3333333332e84p-4, 0x1.6db6db6e3887ep-5, 0x1.f1c71c19d131ep-6,
                                0x1.6e8bb25e6c5f7p-6, 0x1.1c4d286041a5ap-6, 0x1.c9d08cecb82e8p-7, 0x1.7817cecfabc69p-7,
                                0x1.529e52f6b8686p-7, 0x1.62a2e527b1ebfp-8, 0x1.1f1c2b7cfc910p-6, -0x1.ecd2d16887287p-7,
                                0x1.d93a0a68a3e36p-6};
/* erf64: [0, 1] in x^2, degree 12, relative error 2^-62.7 */
static const double ERF64[] = {0x1.20dd750429b6dp+0,  -0x1.812746b0379e6p-2, 0x1.ce2f21a042b20p-4,  -0x1.b82ce31284998p-6,
                               0x1.565bcd0db0258p-8,  -0x1.c02db3d8ebc32p-11, 0x1.f9a321a0fa2e9p-14, -0x1.f4d1df36e8d6bp-17,
                               0x1.b9def1827f985p-20, -0x1.5f1d35f02213ap-23, 0x1.f7a40a291e784p-27, -0x1.386aaa20288f0p-30,
                               0x1.057972739754fp-34};
/* erfc(x) exp(x^2) on [0.5, 1.25], t = x - 0.875, degree 15, 2^-58.5 */
static const double ERFCQ64A[] = {
    0x1.db747ee409ac5p-2,  -0x1.4369f60195edcp-2, 0x1.80ef8f454cfadp-3,  -0x1.9d5868de0b519p-4,
    0x1.9831c2c84aac9p-5,  -0x1.779dd2a3e07ebp-6, 0x1.452648daeef7bp-7,  -0x1.0ab383295b2d9p-8,
    0x1.a0ef7abb6756fp-10, -0x1.37fe7109cad2cp-11, 0x1.c0b57614b0387p-13, -0x1.370acb62bb9f2p-14,
    0x1.a04f43a46357dp-16, -0x1.0e69cff4245a2p-17, 0x1.6716982021a85p-19, -0x1.b37959aa9bed2p-21};
/* [1.25, 2.25], t = x - 1.75, degree 15, 2^-57.0 */
static const double ERFCQ64B[] = {
    0x1.23cfc2f1dc7e0p-2,  -0x1.0c3d538446448p-3, 0x1.c8d0cef0f81a2p-5,  -0x1.6cb52fe489398p-6,
    0x1.13648a11f3a8ap-7,  -0x1.8bf716a8f5a08p-9, 0x1.106bd5cc87577p-10, -0x1.6838884936d4ap-12,
    0x1.cb4c5c70dda02p-14, -0x1.1b2910f9f513bp-15, 0x1.527729045de30p-17, -0x1.88fd06a8605a3p-19,
    0x1.bb1e5963e1f77p-21, -0x1.e865f73334f6dp-23, 0x1.1958f57bf81b0p-24, -0x1.24d8b384aaafcp-26};
/* [2.25, 3.75], t = x - 3, degree 16, 2^-57.6 */
static const double ERFCQ64C[] = {
    0x1.6e9827d229d2dp-3,  -0x1.bd6ae4d14b16cp-5, 0x1.043fe1a98c0d0p-6,  -0x1.259061ba85ddcp-8,
    0x1.409cc2ed3fb11p-10, -0x1.53dec9cfd3b9ep-12, 0x1.5e7393047db45p-14, -0x1.602510baef51ep-16,
    0x1.595f1b8782339p-18, -0x1.4b14339f0f267p-20, 0x1.3698ed27b2ab8p-22, -0x1.1d82e57817c58p-24,
    0x1.01569f5f8fbfep-26, -0x1.c4fd54f811fd1p-29, 0x1.8a1cf62cd7157p-31, -0x1.77600b12d7838p-33,
    0x1.38ad150a0b369p-35};
/* [3.75, 6], t = x - 4.875, degree 17, 2^-59.1 */
static const double ERFCQ64D[] = {
    0x1.d0a2236d493eap-4,  -0x1.6ea9db64452a6p-6, 0x1.1c3200b14f2d5p-8,  -0x1.b1138bae636e2p-11,
    0x1.44a17930adec6p-13, -0x1.df2332f43f384p-16, 0x1.5c5596cf09084p-18, -0x1.f33ef813999dcp-21,
    0x1.60d9bf7079432p-23, -0x1.ec27d3fa73f9bp-26, 0x1.52d59663a38d0p-28, -0x1.ccc966497d3fdp-31,
    0x1.35abfd5a7fb14p-33, -0x1.9b3ab51509da7p-36, 0x1.0b440aee7db96p-38, -0x1.5b7b96cf4bc39p-41,
    0x1.03fc7b7c335abp-43, -0x1.48442e8ee40bfp-46};
/* erfc(1/u) exp(1/u^2) / u: u in [1/27.5, 1/6], t = u - 0x1.9fce59fce59fdp-4, degree 13, 2^-59.6 */
static const double ERFCU64[] = {
    0x1.1f6629fc84a7bp-1,  -0x1.c7377273f4495p-5, -0x1.07b0db8cc7522p-2, 0x1.36b9f90629555p-3,
    0x1.22933fe66b37cp-2,  -0x1.dcf8c8415098fp-2, -0x1.23f98894f5237p-2, 0x1.848099427c3bdp+0,
    -0x1.55234b169d98bp-1, -0x1.24cac563bc1ecp+2, 0x1.0aaaf26f0bab5p+3,  0x1.0833b014ad1c7p+3,
    -0x1.7fba44799709fp+5, 0x1.e27e30ef1e0dfp+4};
static const double ERFCU64_C = 0x1.9fce59fce59fdp-4;

/* sinh(x) = x + x^3 S(x^2) on [0, 1] (degree 4, 2^-39.0; degree 8, 2^-79.9) */
static const double SINH32[] = {0x1.555556p-3, 0x1.111112p-7, 0x1.a01a12p-13, 0x1.71d218p-19, 0x1.b553bep-26};
static const double SINH64[] = {0x1.5555555555555p-3, 0x1.1111111111111p-7, 0x1.a01a01a01a01ap-13, 0x1.71de3a556c724p-19,
                                0x1.ae64567f56d16p-26, 0x1.61246136e3ec3p-33, 0x1.ae7f44a151311p-41, 0x1.952658ea54119p-49,
                                0x1.328ccb0c2858dp-57};
/* tanh(x) = x + x^3 T(x^2) on [0, 0.55] (degree 5, 2^-29.7; degree 11, 2^-60.4) */
static const double TANH32[] = {-0x1.555556p-2, 0x1.111104p-3, -0x1.ba142ep-5, 0x1.657942p-6, -0x1.17646ep-7, 0x1.4b2586p-9};
static const double TANH64[] = {-0x1.5555555555555p-2, 0x1.1111111111109p-3, -0x1.ba1ba1ba1a735p-5, 0x1.664f48822ea9dp-6,
                                -0x1.226e3539bc62ap-7, 0x1.d6d3c600d3103p-9, -0x1.7da25db43da4dp-10, 0x1.3547c0673febcp-11,
                                -0x1.f41d1d7f988c3p-13, 0x1.8c93f20e80205p-14, -0x1.1adf8122d3d55p-15, 0x1.083908c854efcp-17};

/* The bits of 2/pi, 32 per word, after two zero words (Payne-Hanek). */
static const uint32_t TWO_OVER_PI[] = {
    0, 0, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561,
    0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b, 0x1ff897ff, 0xde05980f,
    0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b,
    0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08, 0x56033046, 0xfc7b6bab, 0xf0cfbc20, 0x9af4361d,
    0xa9e39161, 0x5ee61b08};

/* --- the type-generic helpers ----------------------------------------------------------------------------- */
typedef struct M {
    NrPtx *p;
    bool d;               /* f64 */
    NrPt t, bt, st, ut;   /* float, bits, signed and unsigned int of the width */
    NrPk k, ik;
    int mb, bias;         /* mantissa bits, exponent bias */
} M;

static M mk(NrPtx *p, bool d) {
    M m;
    m.p = p;
    m.d = d;
    m.t = d ? NR_PT_F64 : NR_PT_F32;
    m.bt = d ? NR_PT_B64 : NR_PT_B32;
    m.st = d ? NR_PT_S64 : NR_PT_S32;
    m.ut = d ? NR_PT_U64 : NR_PT_U32;
    m.k = d ? NR_PK_F64 : NR_PK_F32;
    m.ik = d ? NR_PK_I64 : NR_PK_I32;
    m.mb = d ? 52 : 23;
    m.bias = d ? 1023 : 127;
    return m;
}

static NrPv K(M *m, double c) { return m->d ? nr_pv_f64(c) : nr_pv_f32((float)c); }
static NrPv KI(M *m, int64_t v) { return m->d ? nr_pv_i64(v) : nr_pv_i32(v); }
static NrPv add(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_ADD, m->t, a, b); }
static NrPv sub(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_SUB, m->t, a, b); }
static NrPv mul(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_MUL, m->t, a, b); }
static NrPv dvd(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_DIV, m->t, a, b); }
static NrPv fma3(M *m, NrPv a, NrPv b, NrPv c) { return nr_pb_fma(m->p, m->t, a, b, c); }
static NrPv sqr(M *m, NrPv a) { return nr_pb_un(m->p, NR_PO_SQRT, m->t, a); }
static NrPv neg(M *m, NrPv a) { return nr_pb_un(m->p, NR_PO_NEG, m->t, a); }
static NrPv fab(M *m, NrPv a) { return nr_pb_un(m->p, NR_PO_ABS, m->t, a); }
static NrPv rnd(M *m, NrPv a) { return nr_pb_un(m->p, NR_PO_RINT, m->t, a); }
static NrPv trn(M *m, NrPv a) { return nr_pb_un(m->p, NR_PO_TRUNC, m->t, a); }
static NrPv fmin_(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_MIN, m->t, a, b); }
static NrPv fmax_(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_MAX, m->t, a, b); }
/* |mag| with the sign of sgn. */
static NrPv csign(M *m, NrPv mag, NrPv sgn) { return nr_pb_bin(m->p, NR_PO_COPYSIGN, m->t, sgn, mag); }
static NrPv cmp(M *m, NrPc c, NrPv a, NrPv b) { return nr_pb_setp(m->p, c, m->t, a, b); }
static NrPv sel(M *m, NrPv c, NrPv a, NrPv b) { return nr_pb_selp(m->p, c, a, b); }
static NrPv isnan_(M *m, NrPv a) { return cmp(m, NR_PC_NAN, a, a); }
static NrPv isinf_(M *m, NrPv a) { return cmp(m, NR_PC_EQ, fab(m, a), K(m, INFINITY)); }
static NrPv por(M *m, NrPv a, NrPv b) { return nr_pb_por(m->p, a, b); }
static NrPv pand(M *m, NrPv a, NrPv b) { return nr_pb_pand(m->p, a, b); }
static NrPv pnot(M *m, NrPv a) { return nr_pb_pnot(m->p, a); }
static NrPv nan_(M *m) { return m->d ? nr_pv_imm(NR_PK_F64, 0x7ff8000000000000ull) : nr_pv_imm(NR_PK_F32, 0x7fc00000); }
/* Integer helpers on the width's ints. */
static NrPv bits(M *m, NrPv x) { return nr_pb_bits(m->p, m->ik, x); }
static NrPv fbits(M *m, NrPv i) { return nr_pb_bits(m->p, m->k, i); }
static NrPv iadd(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_ADD, m->st, a, b); }
static NrPv isub(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_SUB, m->st, a, b); }
static NrPv iand(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_AND, m->bt, a, b); }
static NrPv ior(M *m, NrPv a, NrPv b) { return nr_pb_bin(m->p, NR_PO_OR, m->bt, a, b); }
static NrPv ishl(M *m, NrPv a, int n) { return nr_pb_bin(m->p, NR_PO_SHL, m->bt, a, nr_pv_i32(n)); }
static NrPv ishr(M *m, NrPv a, int n) { return nr_pb_bin(m->p, NR_PO_SHR, m->st, a, nr_pv_i32(n)); }
static NrPv ushr(M *m, NrPv a, int n) { return nr_pb_bin(m->p, NR_PO_SHR, m->ut, a, nr_pv_i32(n)); }
static NrPv icmp(M *m, NrPc c, NrPv a, NrPv b) { return nr_pb_setp(m->p, c, m->st, a, b); }
/* An integral float to int, and back. */
static NrPv f2i(M *m, NrPv x) { return nr_pb_cvt(m->p, NR_PR_RZI, m->st, m->t, x); }
static NrPv i2f(M *m, NrPv i) { return nr_pb_cvt(m->p, NR_PR_RN, m->t, m->st, i); }

/* c[0] + x (c[1] + x (c[2] + ...)), n coefficients. */
static NrPv poly(M *m, NrPv x, const double *c, int n) {
    NrPv r = K(m, c[n - 1]);
    for (int i = n - 2; i >= 0; i--) r = fma3(m, r, x, K(m, c[i]));
    return r;
}
#define POLY(m, x, c) poly(m, x, c, (int)NR_COUNTOF(c))

/* 2^k for an integer k in [1 - bias, bias]. */
static NrPv pow2i(M *m, NrPv k) { return fbits(m, ishl(m, iadd(m, k, KI(m, m->bias)), m->mb)); }

/* x * 2^k in two exact steps (k in [2 - 2 bias, 2 bias]): one rounding at most. */
static NrPv ldexp_(M *m, NrPv x, NrPv k) {
    NrPv k1 = ishr(m, k, 1), k2 = isub(m, k, k1);
    return mul(m, mul(m, x, pow2i(m, k1)), pow2i(m, k2));
}

/* --- double-double helpers (f64) --------------------------------------------------------------------------- */
typedef struct DD {
    NrPv h, l;
} DD;

static DD two_sum(M *m, NrPv a, NrPv b) {
    NrPv s = add(m, a, b), bb = sub(m, s, a);
    NrPv e = add(m, sub(m, a, sub(m, s, bb)), sub(m, b, bb));
    return (DD){s, e};
}
static DD fast_two_sum(M *m, NrPv a, NrPv b) { /* |a| >= |b| */
    NrPv s = add(m, a, b);
    return (DD){s, sub(m, b, sub(m, s, a))};
}
static DD dd_mul_d(M *m, DD a, NrPv b) {
    NrPv h = mul(m, a.h, b);
    NrPv l = fma3(m, a.l, b, fma3(m, a.h, b, neg(m, h)));
    return fast_two_sum(m, h, l);
}
static DD dd_add(M *m, DD a, DD b) {
    DD s = two_sum(m, a.h, b.h);
    return fast_two_sum(m, s.h, add(m, s.l, add(m, a.l, b.l)));
}

/* --- exp ------------------------------------------------------------------------------------------------ */
static const double LN2_HI64 = 0x1.62e42fefa39efp-1, LN2_LO64 = 0x1.abc9e3b39803fp-56;
static const float LN2_HI32 = 0x1.62e430p-1f, LN2_LO32 = -0x1.05c610p-29f;
static const double LOG2E = 0x1.71547652b82fep+0;

/* x = k ln2 + r (k returned as an int), |r| <= ln2/2 + tiny, for |x| within the callers' clamps. */
static NrPv exp_reduce(M *m, NrPv x, NrPv *ki) {
    NrPv k = rnd(m, mul(m, x, K(m, LOG2E)));
    NrPv r = fma3(m, k, K(m, m->d ? -LN2_HI64 : -LN2_HI32), x);
    r = fma3(m, k, K(m, m->d ? -LN2_LO64 : -LN2_LO32), r);
    *ki = f2i(m, k);
    return r;
}

/* expm1(r) for |r| <= ln2/2: r + r^2 E(r). */
static NrPv expm1_r(M *m, NrPv r) {
    NrPv e = m->d ? POLY(m, r, EXP64) : POLY(m, r, EXP32);
    return fma3(m, mul(m, r, r), e, r);
}

/* exp(x) with an optional correction xl (the low part of x: exp(x + xl)). */
static NrPv exp_full(M *m, NrPv x, NrPv xl) {
    double lo = m->d ? -746.0 : -105.0, hi = m->d ? 710.0 : 89.0;
    NrPv xc = fmin_(m, fmax_(m, x, K(m, lo)), K(m, hi));
    NrPv k, r = exp_reduce(m, xc, &k);
    r = add(m, r, xl);
    NrPv y = ldexp_(m, add(m, expm1_r(m, r), K(m, 1.0)), k);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_exp(M *m, NrPv x) { return exp_full(m, x, K(m, 0)); }

static NrPv m_exp2(M *m, NrPv x) {
    double lo = m->d ? -1076.0 : -152.0, hi = m->d ? 1025.0 : 129.0;
    NrPv xc = fmin_(m, fmax_(m, x, K(m, lo)), K(m, hi));
    NrPv k = rnd(m, xc), f = sub(m, xc, k); /* exact */
    NrPv r = m->d ? fma3(m, f, K(m, LN2_HI64), mul(m, f, K(m, LN2_LO64)))
                  : fma3(m, f, K(m, LN2_HI32), mul(m, f, K(m, LN2_LO32)));
    NrPv y = ldexp_(m, add(m, expm1_r(m, r), K(m, 1.0)), f2i(m, k));
    return sel(m, isnan_(m, x), x, y);
}

/* exp(x ln 10): x ln10 as a double-double minus k ln2. */
static NrPv m_exp10(M *m, NrPv x) {
    double lo = m->d ? -324.5 : -46.0, hi = m->d ? 309.0 : 39.0;
    double l10h = m->d ? 0x1.26bb1bbb55516p+1 : (double)0x1.26bb1cp+1f;
    double l10l = m->d ? -0x1.f48ad494ea3e9p-53 : (double)-0x1.12aabap-25f;
    NrPv xc = fmin_(m, fmax_(m, x, K(m, lo)), K(m, hi));
    NrPv h = mul(m, xc, K(m, l10h));
    NrPv l = fma3(m, xc, K(m, l10l), fma3(m, xc, K(m, l10h), neg(m, h)));
    NrPv k = rnd(m, mul(m, h, K(m, LOG2E)));
    NrPv r = fma3(m, k, K(m, m->d ? -LN2_HI64 : -LN2_HI32), h);
    r = add(m, fma3(m, k, K(m, m->d ? -LN2_LO64 : -LN2_LO32), r), l);
    NrPv y = ldexp_(m, add(m, expm1_r(m, r), K(m, 1.0)), f2i(m, k));
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_expm1(M *m, NrPv x) {
    double lo = m->d ? -746.0 : -105.0, hi = m->d ? 710.0 : 89.0;
    int big = m->d ? 53 : 24;
    NrPv xc = fmin_(m, fmax_(m, x, K(m, lo)), K(m, hi));
    NrPv k, r = exp_reduce(m, xc, &k);
    NrPv q = mul(m, mul(m, r, r), m->d ? POLY(m, r, EXP64) : POLY(m, r, EXP32)); /* expm1(r) - r */
    /* |k| <= big: 2^k (1 + r + q) - 1 = ((2^k - 1) + 2^k r) + 2^k q; the first
     * sum is exact for k = 1, where the result cancels most. */
    NrPv kc = nr_pb_bin(m->p, NR_PO_MAX, m->st, nr_pb_bin(m->p, NR_PO_MIN, m->st, k, KI(m, big)), KI(m, -big));
    NrPv t = pow2i(m, kc);
    NrPv small = fma3(m, t, q, fma3(m, t, r, sub(m, t, K(m, 1.0))));
    NrPv large = sub(m, ldexp_(m, add(m, add(m, r, q), K(m, 1.0)), k), K(m, 1.0));
    NrPv inrange = pand(m, icmp(m, NR_PC_LE, k, KI(m, big)), icmp(m, NR_PC_GE, k, KI(m, -big)));
    NrPv y = sel(m, inrange, small, large);
    /* tiny x: x itself (keeps -0 and subnormals exact) */
    y = sel(m, cmp(m, NR_PC_LT, fab(m, x), K(m, m->d ? 0x1p-60 : 0x1p-30)), x, y);
    return sel(m, isnan_(m, x), x, y);
}

/* --- log ------------------------------------------------------------------------------------------------- */
/* ln2 with 32 significant bits (e * hi is exact) and the rest */
static const double LN2_HI64L = 0x1.62e42fee00000p-1, LN2_LO64L = 0x1.a39ef35793c76p-33;

/* x > 0 finite: x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)); f exact, e a float. */
static NrPv log_reduce(M *m, NrPv x, NrPv *ef) {
    double minn = m->d ? 0x1p-1022 : 0x1p-126;
    int pre = m->d ? 54 : 24;
    NrPv sub_ = cmp(m, NR_PC_LT, x, K(m, minn));
    NrPv xs = sel(m, sub_, mul(m, x, K(m, ldexp(1.0, pre))), x);
    NrPv i = bits(m, xs);
    NrPv e = isub(m, ushr(m, i, m->mb), KI(m, m->bias));
    e = sel(m, sub_, isub(m, e, KI(m, pre)), e);
    int64_t mask = m->d ? 0x000fffffffffffffll : 0x7fffff;
    NrPv mant = fbits(m, ior(m, iand(m, i, KI(m, mask)), KI(m, (int64_t)m->bias << m->mb)));
    NrPv big = cmp(m, NR_PC_GT, mant, K(m, 1.4142135623730951));
    mant = sel(m, big, mul(m, mant, K(m, 0.5)), mant);
    e = sel(m, big, iadd(m, e, KI(m, 1)), e);
    *ef = i2f(m, e);
    return sub(m, mant, K(m, 1.0));
}

/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]. */
static NrPv log1p_core(M *m, NrPv f) {
    NrPv s = dvd(m, f, add(m, f, K(m, 2.0)));
    NrPv z = mul(m, s, s);
    NrPv L = m->d ? POLY(m, z, LOG64) : POLY(m, z, LOG32);
    return sub(m, f, mul(m, s, fma3(m, neg(m, z), L, f)));
}

/* log's special values on top of y: NaN below 0 (and for NaN), -inf at 0, inf at inf. */
static NrPv log_special(M *m, NrPv x, NrPv y) {
    y = sel(m, cmp(m, NR_PC_EQ, x, K(m, INFINITY)), x, y);
    y = sel(m, cmp(m, NR_PC_EQ, x, K(m, 0.0)), K(m, -INFINITY), y);
    return sel(m, cmp(m, NR_PC_LTU, x, K(m, 0.0)), nan_(m), y);
}

static DD log_dd(M *m, NrPv x);

/* f64 log, log2, log10: the double-double log times a double-double constant. */
static NrPv log_scaled64(M *m, NrPv x, double ch, double cl) {
    NrPv xs = sel(m, pand(m, cmp(m, NR_PC_GT, x, K(m, 0.0)), cmp(m, NR_PC_LT, x, K(m, INFINITY))), x, K(m, 1.0));
    DD l = log_dd(m, xs);
    NrPv h = mul(m, l.h, K(m, ch));
    NrPv lo = add(m, fma3(m, l.h, K(m, ch), neg(m, h)), fma3(m, l.h, K(m, cl), mul(m, l.l, K(m, ch))));
    return log_special(m, x, add(m, h, lo));
}

static NrPv m_log(M *m, NrPv x) {
    if (m->d) return log_scaled64(m, x, 1.0, 0.0);
    NrPv e, f = log_reduce(m, x, &e);
    NrPv lp = log1p_core(m, f);
    NrPv y = m->d ? fma3(m, e, K(m, LN2_HI64L), fma3(m, e, K(m, LN2_LO64L), lp))
                  : fma3(m, e, K(m, LN2_HI32), fma3(m, e, K(m, LN2_LO32), lp));
    return log_special(m, x, y);
}

static NrPv m_log2(M *m, NrPv x) {
    if (m->d) return log_scaled64(m, x, 0x1.71547652b82fep+0, 0x1.777d0ffda0d24p-56);
    NrPv e, f = log_reduce(m, x, &e);
    NrPv lp = log1p_core(m, f);
    double hi = m->d ? 0x1.71547652b82fep+0 : (double)0x1.715476p+0f;
    double lo = m->d ? 0x1.777d0ffda0d24p-56 : (double)0x1.4ae0c0p-26f;
    NrPv y = fma3(m, lp, K(m, hi), fma3(m, lp, K(m, lo), e));
    return log_special(m, x, y);
}

static NrPv m_log10(M *m, NrPv x) {
    if (m->d) return log_scaled64(m, x, 0x1.bcb7b1526e50ep-2, 0x1.95355baaafad3p-57);
    NrPv e, f = log_reduce(m, x, &e);
    NrPv lp = log1p_core(m, f);
    double eh = m->d ? 0x1.bcb7b1526e50ep-2 : (double)0x1.bcb7b2p-2f;
    double el = m->d ? 0x1.95355baaafad3p-57 : (double)-0x1.5b235ep-27f;
    double th = m->d ? 0x1.34413509f79ffp-2 : (double)0x1.344136p-2f;
    double tl = m->d ? -0x1.9dc1da994fd21p-59 : (double)-0x1.ec10c0p-27f;
    NrPv y = fma3(m, e, K(m, th), fma3(m, lp, K(m, eh), fma3(m, lp, K(m, el), mul(m, e, K(m, tl)))));
    return log_special(m, x, y);
}

static NrPv m_log1p(M *m, NrPv x) {
    NrPv in = pand(m, cmp(m, NR_PC_GT, x, K(m, -0.2928932188134524)), cmp(m, NR_PC_LT, x, K(m, 0.41421356237309503)));
    NrPv u = add(m, x, K(m, 1.0));
    NrPv uu = sel(m, in, K(m, 1.0), u); /* keep the reduction of u finite and positive when unused */
    uu = sel(m, cmp(m, NR_PC_GT, uu, K(m, 0.0)), uu, K(m, 1.0));
    NrPv e, f = log_reduce(m, uu, &e);
    NrPv corr = dvd(m, sub(m, x, sub(m, u, K(m, 1.0))), u);
    f = sel(m, in, x, f);
    e = sel(m, in, K(m, 0.0), e);
    corr = sel(m, in, K(m, 0.0), corr);
    NrPv lp = add(m, log1p_core(m, f), corr);
    NrPv y = m->d ? fma3(m, e, K(m, LN2_HI64L), fma3(m, e, K(m, LN2_LO64L), lp))
                  : fma3(m, e, K(m, LN2_HI32), fma3(m, e, K(m, LN2_LO32), lp));
    y = sel(m, cmp(m, NR_PC_EQ, x, K(m, INFINITY)), x, y);
    y = sel(m, cmp(m, NR_PC_EQ, x, K(m, -1.0)), K(m, -INFINITY), y);
    y = sel(m, cmp(m, NR_PC_LT, x, K(m, -1.0)), nan_(m), y);
    y = sel(m, cmp(m, NR_PC_EQ, x, K(m, 0.0)), x, y); /* -0 stays -0 */
    return sel(m, isnan_(m, x), x, y);
}

/* --- hyperbolic -------------------------------------------------------------------------------------------- */
/* exp(a) / 2 for large a without overflowing early: 2^(k-1) exp(r). */
static NrPv half_exp(M *m, NrPv a) {
    NrPv k, r = exp_reduce(m, fmin_(m, a, K(m, m->d ? 711.0 : 90.0)), &k);
    return ldexp_(m, add(m, expm1_r(m, r), K(m, 1.0)), isub(m, k, KI(m, 1)));
}

static NrPv m_sinh(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv E = m_expm1(m, fmin_(m, a, K(m, 30.0)));
    NrPv s = mul(m, add(m, E, dvd(m, E, add(m, E, K(m, 1.0)))), K(m, 0.5));
    NrPv big = cmp(m, NR_PC_GT, a, K(m, m->d ? 20.0 : 9.0));
    NrPv y = sel(m, big, half_exp(m, a), s);
    NrPv z = mul(m, a, a);
    NrPv sm = fma3(m, mul(m, a, z), m->d ? POLY(m, z, SINH64) : POLY(m, z, SINH32), a);
    y = sel(m, cmp(m, NR_PC_LT, a, K(m, 1.0)), sm, y);
    y = csign(m, y, x);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_cosh(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv E = m_expm1(m, fmin_(m, a, K(m, 30.0)));
    NrPv small = add(m, K(m, 1.0), dvd(m, mul(m, E, E), mul(m, K(m, 2.0), add(m, E, K(m, 1.0)))));
    NrPv t = add(m, E, K(m, 1.0));
    NrPv mid = fma3(m, t, K(m, 0.5), dvd(m, K(m, 0.5), t));
    NrPv y = sel(m, cmp(m, NR_PC_LT, a, K(m, 1.0)), small, mid);
    y = sel(m, cmp(m, NR_PC_GT, a, K(m, m->d ? 20.0 : 9.0)), half_exp(m, a), y);
    return sel(m, isnan_(m, x), a, y);
}

static NrPv m_tanh(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv lim = K(m, m->d ? 19.5 : 9.5);
    NrPv E = m_expm1(m, mul(m, K(m, 2.0), fmin_(m, a, lim)));
    NrPv t = sub(m, K(m, 1.0), dvd(m, K(m, 2.0), add(m, E, K(m, 2.0)))); /* 1 - 2 / (e^2a + 1) */
    NrPv z = mul(m, a, a);
    NrPv sm = fma3(m, mul(m, a, z), m->d ? POLY(m, z, TANH64) : POLY(m, z, TANH32), a);
    t = sel(m, cmp(m, NR_PC_LT, a, K(m, 0.55)), sm, t);
    t = sel(m, cmp(m, NR_PC_GE, a, lim), K(m, 1.0), t);
    t = csign(m, t, x);
    return sel(m, isnan_(m, x), x, t);
}

static NrPv m_asinh(M *m, NrPv x) {
    NrPv a = fab(m, x);
    double big = m->d ? 0x1p28 : 0x1p12;
    NrPv ac = fmin_(m, a, K(m, big));
    NrPv a2 = mul(m, ac, ac);
    NrPv t = add(m, ac, dvd(m, a2, add(m, K(m, 1.0), sqr(m, add(m, K(m, 1.0), a2)))));
    NrPv y = m_log1p(m, t);
    NrPv yl = add(m, m_log(m, a), K(m, 0.6931471805599453));
    y = sel(m, cmp(m, NR_PC_GT, a, K(m, big)), yl, y);
    y = sel(m, cmp(m, NR_PC_LT, a, K(m, m->d ? 0x1p-28 : 0x1p-12)), a, y);
    y = csign(m, y, x);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_acosh(M *m, NrPv x) {
    double big = m->d ? 0x1p28 : 0x1p12;
    NrPv t = sub(m, fmin_(m, x, K(m, big)), K(m, 1.0)); /* exact */
    NrPv y = m_log1p(m, add(m, t, sqr(m, fma3(m, t, t, mul(m, K(m, 2.0), t)))));
    NrPv yl = add(m, m_log(m, x), K(m, 0.6931471805599453));
    y = sel(m, cmp(m, NR_PC_GT, x, K(m, big)), yl, y);
    y = sel(m, cmp(m, NR_PC_LT, x, K(m, 1.0)), nan_(m), y);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_atanh(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv om = sub(m, K(m, 1.0), a);
    NrPv twoa = add(m, a, a);
    NrPv lo = fma3(m, twoa, dvd(m, a, om), twoa); /* 2a + 2a^2 / (1 - a) */
    NrPv hi = dvd(m, twoa, om);
    NrPv y = mul(m, K(m, 0.5), m_log1p(m, sel(m, cmp(m, NR_PC_LT, a, K(m, 0.5)), lo, hi)));
    y = sel(m, cmp(m, NR_PC_EQ, a, K(m, 1.0)), K(m, INFINITY), y);
    y = sel(m, cmp(m, NR_PC_GT, a, K(m, 1.0)), nan_(m), y);
    y = csign(m, y, x);
    return sel(m, isnan_(m, x), x, y);
}

/* --- sin, cos, tan ---------------------------------------------------------------------------------------- */
/* Payne-Hanek for f32, |x| >= 2^17 finite: r (f32) and the quadrant. */
typedef struct Red {
    NrPv r, rl, q; /* r + rl = x - q pi/2 (rl only for f64), q an int of the width */
} Red;

typedef struct PhCtx {
    M *m;
    NrPv x;
} PhCtx;

static NrPv ph32_body(NrPtx *p, NrPv *st, void *vctx) {
    PhCtx *c = vctx;
    M mm = mk(p, false), *m = &mm;
    NrPv i = bits(m, fab(m, c->x));
    NrPv e = isub(m, ushr(m, i, 23), KI(m, 127));
    NrPv mant = ior(m, iand(m, i, KI(m, 0x7fffff)), KI(m, 0x800000));
    /* B[i] (i = 1, 2, ...: bit 2^-i of 2/pi) is bit i - 1 of word 2; the
     * window starts at B[e - 24]: bit s = e - 25 + 64 of the table. */
    NrPv s = iadd(m, e, KI(m, 39));
    NrPv w = ushr(m, s, 5), sh = iand(m, s, KI(m, 31));
    NrPv rsh = isub(m, KI(m, 32), sh);
    NrPv Z[4];
    for (int k = 0; k < 4; k++)
        Z[k] = nr_pb_table(p, "nr_two_over_pi", TWO_OVER_PI, (int)NR_COUNTOF(TWO_OVER_PI), iadd(m, w, KI(m, k)));
    NrPv W[3];
    for (int k = 0; k < 3; k++)
        W[k] = ior(m, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, Z[k], sh), nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, Z[k + 1], rsh));
    NrPv m64 = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, mant);
    NrPv p2 = nr_pb_bin(p, NR_PO_MUL, NR_PT_U64, m64, nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, W[2]));
    NrPv p1 = nr_pb_bin(p, NR_PO_MUL, NR_PT_U64, m64, nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, W[1]));
    NrPv p0 = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, mant, W[0]);
    NrPv lo = nr_pb_bin(p, NR_PO_ADD, NR_PT_U64, p2, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, p1, nr_pv_i32(32)));
    NrPv carry = nr_pb_selp(p, nr_pb_setp(p, NR_PC_LT, NR_PT_U64, lo, p2), nr_pv_i32(1), nr_pv_i32(0));
    NrPv hi = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, nr_pb_bin(p, NR_PO_SHR, NR_PT_U64, p1, nr_pv_i32(32)));
    hi = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, hi, p0), carry);
    NrPv q = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, hi, nr_pv_i32(30));
    /* The 94 fraction bits, the top 64 as a signed fixed point: negative
     * when the fraction is >= 1/2 (then the nearest quadrant is q + 1). */
    NrPv hi64 = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32, hi);
    NrPv G = nr_pb_bin(p, NR_PO_OR, NR_PT_B64, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, hi64, nr_pv_i32(34)),
                       nr_pb_bin(p, NR_PO_SHR, NR_PT_U64, lo, nr_pv_i32(30)));
    NrPv negf = nr_pb_setp(p, NR_PC_LT, NR_PT_S64, G, nr_pv_i64(0));
    q = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, q, nr_pb_selp(p, negf, nr_pv_i32(1), nr_pv_i32(0)));
    NrPv rd = nr_pb_bin(p, NR_PO_MUL, NR_PT_F64, nr_pb_cvt(p, NR_PR_RN, NR_PT_F64, NR_PT_S64, G),
                        nr_pv_f64(0x1.921fb54442d18p+0 * 0x1p-64));
    NrPv r = nr_pb_cvt(p, NR_PR_RN, NR_PT_F32, NR_PT_F64, rd);
    NrPv negx = nr_pb_setp(p, NR_PC_LT, NR_PT_F32, c->x, nr_pv_f32(0));
    st[0] = nr_pb_selp(p, negx, nr_pb_un(p, NR_PO_NEG, NR_PT_F32, r), r);
    st[1] = nr_pb_selp(p, negx, nr_pb_un(p, NR_PO_NEG, NR_PT_S32, q), q);
    return nr_pv_pred(false);
}

/* Payne-Hanek for f64, |x| >= 2^20 finite: r + rl and the quadrant. */
static NrPv ph64_body(NrPtx *p, NrPv *st, void *vctx) {
    PhCtx *c = vctx;
    M mm = mk(p, true), *m = &mm;
    M m32 = mk(p, false);
    NrPv i = bits(m, fab(m, c->x));
    NrPv e = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, isub(m, ushr(m, i, 52), KI(m, 1023)));
    NrPv mant = ior(m, iand(m, i, KI(m, 0x000fffffffffffffll)), KI(m, 0x0010000000000000ll));
    /* The window starts at B[e - 53]: table bit e - 54 + 64. */
    NrPv s = iadd(&m32, e, KI(&m32, 10));
    NrPv w = ushr(&m32, s, 5), sh = iand(&m32, s, KI(&m32, 31)), rsh = isub(&m32, KI(&m32, 32), sh);
    NrPv Z[7], W[6];
    for (int k = 0; k < 7; k++)
        Z[k] = nr_pb_table(p, "nr_two_over_pi", TWO_OVER_PI, (int)NR_COUNTOF(TWO_OVER_PI), iadd(&m32, w, KI(&m32, k)));
    for (int k = 0; k < 6; k++)
        W[k] = ior(&m32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, Z[k], sh), nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, Z[k + 1], rsh));
    NrPv A = nr_pb_pack(p, W[1], W[0]), B = nr_pb_pack(p, W[3], W[2]), C = nr_pb_pack(p, W[5], W[4]);
    NrPv bl = nr_pb_bin(p, NR_PO_MUL, NR_PT_U64, mant, B), bh = nr_pb_bin(p, NR_PO_MULHI, NR_PT_U64, mant, B);
    NrPv ch = nr_pb_bin(p, NR_PO_MULHI, NR_PT_U64, mant, C);
    NrPv al = nr_pb_bin(p, NR_PO_MUL, NR_PT_U64, mant, A);
    NrPv mid = nr_pb_bin(p, NR_PO_ADD, NR_PT_U64, bl, ch);
    NrPv c1 = nr_pb_selp(p, nr_pb_setp(p, NR_PC_LT, NR_PT_U64, mid, bl), nr_pv_i64(1), nr_pv_i64(0));
    NrPv top = nr_pb_bin(p, NR_PO_ADD, NR_PT_U64, nr_pb_bin(p, NR_PO_ADD, NR_PT_U64, al, bh), c1);
    NrPv q = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, nr_pb_bin(p, NR_PO_SHR, NR_PT_U64, top, nr_pv_i32(62)));
    NrPv G = nr_pb_bin(p, NR_PO_OR, NR_PT_B64, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, top, nr_pv_i32(2)),
                       nr_pb_bin(p, NR_PO_SHR, NR_PT_U64, mid, nr_pv_i32(62)));
    NrPv Gl = nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, mid, nr_pv_i32(2));
    NrPv negf = nr_pb_setp(p, NR_PC_LT, NR_PT_S64, G, nr_pv_i64(0));
    q = nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, q, nr_pb_selp(p, negf, nr_pv_i32(1), nr_pv_i32(0)));
    /* |G:Gl| (128-bit two's complement negation when negative). */
    NrPv nGl = nr_pb_un(p, NR_PO_NEG, NR_PT_S64, Gl);
    NrPv nG = nr_pb_bin(p, NR_PO_ADD, NR_PT_U64, nr_pb_un(p, NR_PO_NOT, NR_PT_B64, G),
                        nr_pb_selp(p, nr_pb_setp(p, NR_PC_EQ, NR_PT_B64, Gl, nr_pv_i64(0)), nr_pv_i64(1), nr_pv_i64(0)));
    G = nr_pb_selp(p, negf, nG, G);
    Gl = nr_pb_selp(p, negf, nGl, Gl);
    NrPv lz = nr_pb_un(p, NR_PO_CLZ, NR_PT_B64, G);
    lz = nr_pb_bin(p, NR_PO_MIN, NR_PT_U32, lz, nr_pv_i32(63));
    NrPv Gn = nr_pb_bin(p, NR_PO_OR, NR_PT_B64, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, G, lz),
                        nr_pb_bin(p, NR_PO_SHR, NR_PT_U64, Gl, nr_pb_bin(p, NR_PO_SUB, NR_PT_U32, nr_pv_i32(64), lz)));
    /* value = Gn 2^(-64 - lz) quadrants: top 53 bits and the rest. */
    NrPv scale = nr_pb_bits(p, NR_PK_F64, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64,
                                                   nr_pb_cvt(p, NR_PR_NONE, NR_PT_U64, NR_PT_U32,
                                                             nr_pb_bin(p, NR_PO_SUB, NR_PT_U32, nr_pv_i32(1023 - 64), lz)),
                                                   nr_pv_i32(52)));
    NrPv h53 = nr_pb_bin(p, NR_PO_AND, NR_PT_B64, Gn, nr_pv_i64((int64_t)0xfffffffffffff800ull));
    NrPv rh = mul(m, nr_pb_cvt(p, NR_PR_RN, NR_PT_F64, NR_PT_U64, h53), scale);
    NrPv rl = mul(m, nr_pb_cvt(p, NR_PR_RN, NR_PT_F64, NR_PT_U64, nr_pb_bin(p, NR_PO_AND, NR_PT_B64, Gn, nr_pv_i64(0x7ff))),
                  scale);
    /* (rh + rl) (pio2_hi + pio2_lo) as a double-double. */
    NrPv ph = K(m, 0x1.921fb54442d18p+0), pl = K(m, 0x1.1a62633145c07p-54);
    NrPv yh = mul(m, rh, ph);
    NrPv yl = add(m, fma3(m, rh, ph, neg(m, yh)), fma3(m, rh, pl, mul(m, rl, ph)));
    DD y = fast_two_sum(m, yh, yl);
    NrPv sgn = nr_pb_pxor(p, negf, cmp(m, NR_PC_LT, c->x, K(m, 0.0)));
    NrPv negx = cmp(m, NR_PC_LT, c->x, K(m, 0.0));
    st[0] = sel(m, sgn, neg(m, y.h), y.h);
    st[1] = sel(m, sgn, neg(m, y.l), y.l);
    st[2] = nr_pb_selp(p, negx, nr_pb_un(p, NR_PO_NEG, NR_PT_S32, q), q);
    return nr_pv_pred(false);
}

/* x = q pi/2 + r + rl, |r| <= pi/4 (+ rounding); q as an s32. */
static Red trig_reduce(M *m, NrPv x) {
    Red R;
    NrPv j = rnd(m, mul(m, x, K(m, 0x1.45f306dc9c883p-1)));
    if (!m->d) {
        NrPv r = fma3(m, j, K(m, -0x1.921fb6p+0), x);
        r = fma3(m, j, K(m, 0x1.777a5cp-25), r);
        r = fma3(m, j, K(m, 0x1.ee59dap-50), r);
        NrPv st[2] = {r, nr_pb_cvt(m->p, NR_PR_RZI, NR_PT_S32, NR_PT_F32, j)};
        PhCtx c = {m, x};
        NrPv huge = pand(m, cmp(m, NR_PC_GE, fab(m, x), K(m, 0x1p17)), pnot(m, isinf_(m, x)));
        huge = pand(m, huge, pnot(m, isnan_(m, x)));
        nr_pb_cond(m->p, huge, st, 2, ph32_body, &c);
        R.r = st[0];
        R.rl = K(m, 0.0);
        R.q = st[1];
        return R;
    }
    /* Three parts of pi/2: the first with 33 bits, so j * hi is exact for |j| < 2^20. */
    NrPv r = fma3(m, j, K(m, -0x1.921fb54400000p+0), x);
    r = fma3(m, j, K(m, -0x1.0b4611a600000p-34), r);
    NrPv w = mul(m, j, K(m, 0x1.3198a2e037073p-69));
    NrPv rh = sub(m, r, w);
    NrPv rl = sub(m, sub(m, r, rh), w);
    NrPv st[3] = {rh, rl, nr_pb_cvt(m->p, NR_PR_RZI, NR_PT_S32, NR_PT_F64, fmin_(m, fmax_(m, j, K(m, -2e9)), K(m, 2e9)))};
    PhCtx c = {m, x};
    NrPv huge = pand(m, cmp(m, NR_PC_GE, fab(m, x), K(m, 0x1p20)), pnot(m, isinf_(m, x)));
    huge = pand(m, huge, pnot(m, isnan_(m, x)));
    nr_pb_cond(m->p, huge, st, 3, ph64_body, &c);
    R.r = st[0];
    R.rl = st[1];
    R.q = st[2];
    return R;
}

/* sin(r + rl) and cos(r + rl) for |r| <= pi/4. */
static NrPv ksin(M *m, NrPv r, NrPv rl) {
    NrPv z = mul(m, r, r);
    NrPv S = m->d ? POLY(m, z, SIN64) : POLY(m, z, SIN32);
    NrPv tail = fma3(m, mul(m, r, z), S, fma3(m, mul(m, z, K(m, -0.5)), rl, rl));
    return add(m, r, tail);
}

static NrPv kcos(M *m, NrPv r, NrPv rl) {
    NrPv z = mul(m, r, r);
    NrPv C = m->d ? POLY(m, z, COS64) : POLY(m, z, COS32);
    NrPv hz = mul(m, z, K(m, 0.5));
    NrPv w = sub(m, K(m, 1.0), hz);
    NrPv tail = fma3(m, mul(m, z, z), C, neg(m, mul(m, r, rl)));
    return add(m, w, add(m, sub(m, sub(m, K(m, 1.0), w), hz), tail));
}

static NrPv trig_special(M *m, NrPv x, NrPv y, bool odd) {
    if (odd) y = sel(m, cmp(m, NR_PC_EQ, x, K(m, 0.0)), x, y); /* sin(-0) = -0 */
    return sel(m, por(m, isinf_(m, x), isnan_(m, x)), nan_(m), y);
}

static NrPv sin_or_cos(M *m, NrPv x, bool cosine) {
    Red R = trig_reduce(m, x);
    NrPv s = ksin(m, R.r, R.rl), c = kcos(m, R.r, R.rl);
    NrPv q = R.q;
    if (cosine) q = nr_pb_bin(m->p, NR_PO_ADD, NR_PT_S32, q, nr_pv_i32(1));
    NrPv odd = nr_pb_setp(m->p, NR_PC_NE, NR_PT_B32, nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, q, nr_pv_i32(1)), nr_pv_i32(0));
    NrPv negq = nr_pb_setp(m->p, NR_PC_NE, NR_PT_B32, nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, q, nr_pv_i32(2)), nr_pv_i32(0));
    NrPv y = sel(m, odd, c, s);
    y = sel(m, negq, neg(m, y), y);
    return trig_special(m, x, y, !cosine);
}

static NrPv m_sin(M *m, NrPv x) { return sin_or_cos(m, x, false); }
static NrPv m_cos(M *m, NrPv x) { return sin_or_cos(m, x, true); }

static NrPv m_tan(M *m, NrPv x) {
    Red R = trig_reduce(m, x);
    NrPv z = mul(m, R.r, R.r);
    NrPv T = m->d ? POLY(m, z, TAN64) : POLY(m, z, TAN32);
    /* tan(r + rl) = tan r + rl (1 + tan^2 r) */
    NrPv rz = mul(m, R.r, z);
    NrPv t = fma3(m, rz, T, R.r);
    NrPv tl = fma3(m, rz, T, sub(m, R.r, t)); /* t + tl = r + r^3 T to twice the precision */
    tl = fma3(m, fma3(m, t, t, K(m, 1.0)), R.rl, tl);
    NrPv odd = nr_pb_setp(m->p, NR_PC_NE, NR_PT_B32, nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, R.q, nr_pv_i32(1)), nr_pv_i32(0));
    /* -1 / (t + tl): a quotient and one correction step */
    NrPv c = dvd(m, K(m, -1.0), t);
    NrPv res = fma3(m, c, tl, fma3(m, c, t, K(m, 1.0)));
    c = fma3(m, c, res, c);
    NrPv y = sel(m, odd, c, add(m, t, tl));
    return trig_special(m, x, y, true);
}

/* --- atan, asin, acos, atan2 ---------------------------------------------------------------------------- */
/* atan(a) for a >= 0 (a may be inf), with the result's two parts; da (or
 * NULL) is a small correction to a, added to the low part (da / (1 + a^2)
 * already applied by the caller). */
static NrPv atan_pos(M *m, NrPv a, const NrPv *da) {
    /* Intervals [0, 7/16), [7/16, 11/16), [11/16, 19/16), [19/16, 39/16), beyond. */
    NrPv i1 = cmp(m, NR_PC_GE, a, K(m, 0.4375)), i2 = cmp(m, NR_PC_GE, a, K(m, 0.6875));
    NrPv i3 = cmp(m, NR_PC_GE, a, K(m, 1.1875)), i4 = cmp(m, NR_PC_GE, a, K(m, 2.4375));
    NrPv c = sel(m, i3, K(m, 1.5), sel(m, i2, K(m, 1.0), sel(m, i1, K(m, 0.5), K(m, 0.0))));
    double bh[5], bl[5];
    if (m->d) {
        double h[5] = {0, 0x1.dac670561bb4fp-2, 0x1.921fb54442d18p-1, 0x1.f730bd281f69bp-1, 0x1.921fb54442d18p+0};
        double l[5] = {0, 0x1.a2b7f222f65e2p-56, 0x1.1a62633145c07p-55, 0x1.007887af0cbbdp-56, 0x1.1a62633145c07p-54};
        memcpy(bh, h, sizeof h), memcpy(bl, l, sizeof l);
    } else {
        double h[5] = {0, 0x1.dac670p-2, 0x1.921fb6p-1, 0x1.f730bep-1, 0x1.921fb6p+0};
        double l[5] = {0, 0x1.586ed4p-28, -0x1.777a5cp-26, -0x1.afc12cp-26, -0x1.777a5cp-25};
        memcpy(bh, h, sizeof h), memcpy(bl, l, sizeof l);
    }
    NrPv num = sel(m, i4, K(m, -1.0), sub(m, a, c));
    NrPv den = sel(m, i4, a, fma3(m, c, a, K(m, 1.0)));
    NrPv u = dvd(m, num, den);
    NrPv z = mul(m, u, u);
    NrPv P = m->d ? POLY(m, z, ATAN64) : POLY(m, z, ATAN32);
    NrPv pu = fma3(m, mul(m, u, z), P, u);
    NrPv hi = sel(m, i4, K(m, bh[4]), sel(m, i3, K(m, bh[3]), sel(m, i2, K(m, bh[2]), sel(m, i1, K(m, bh[1]), K(m, 0)))));
    NrPv lo = sel(m, i4, K(m, bl[4]), sel(m, i3, K(m, bl[3]), sel(m, i2, K(m, bl[2]), sel(m, i1, K(m, bl[1]), K(m, 0)))));
    if (da) lo = add(m, lo, *da);
    return add(m, hi, add(m, pu, lo));
}

static NrPv m_atan(M *m, NrPv x) {
    NrPv y = csign(m, atan_pos(m, fab(m, x), NULL), x);
    return sel(m, isnan_(m, x), x, y);
}

/* asin(a) for a in [0, 1]: direct below 1/2, else pi/2 - 2 asin(sqrt((1 - a)/2)). */
static NrPv asin_pos(M *m, NrPv a, bool want_acos) {
    NrPv low = cmp(m, NR_PC_LE, a, K(m, 0.5));
    NrPv z = sel(m, low, mul(m, a, a), mul(m, sub(m, K(m, 1.0), a), K(m, 0.5)));
    NrPv s = sqr(m, z);
    NrPv B = m->d ? POLY(m, z, ASIN64) : POLY(m, z, ASIN32);
    double ph = m->d ? 0x1.921fb54442d18p+0 : (double)0x1.921fb6p+0f;
    double pl = m->d ? 0x1.1a62633145c07p-54 : (double)-0x1.777a5cp-25f;
    /* s^2 = z up to the rounding of the square root: s + ds is sqrt(z) to twice the precision. */
    NrPv ds = dvd(m, fma3(m, neg(m, s), s, z), add(m, s, s));
    ds = sel(m, cmp(m, NR_PC_EQ, s, K(m, 0.0)), K(m, 0.0), ds);
    NrPv hi_asin = fma3(m, mul(m, s, z), B, ds); /* asin(sqrt z) - s */
    if (!want_acos) {
        NrPv direct = fma3(m, mul(m, a, z), B, a);
        /* pi/2 - 2 (s + t) */
        NrPv far = sub(m, K(m, ph), add(m, add(m, s, s), sub(m, add(m, hi_asin, hi_asin), K(m, pl))));
        return sel(m, low, direct, far);
    }
    /* acos(a) = pi/2 - asin(a) below 1/2, 2 asin(sqrt((1 - a)/2)) above. */
    NrPv direct = sub(m, K(m, ph), add(m, a, sub(m, mul(m, mul(m, a, z), B), K(m, pl))));
    NrPv far = add(m, add(m, s, s), add(m, hi_asin, hi_asin));
    return sel(m, low, direct, far);
}

static NrPv m_asin(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv y = csign(m, asin_pos(m, fmin_(m, a, K(m, 1.0)), false), x);
    y = sel(m, cmp(m, NR_PC_GT, a, K(m, 1.0)), nan_(m), y);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_acos(M *m, NrPv x) {
    NrPv a = fmin_(m, fab(m, x), K(m, 1.0));
    NrPv y = asin_pos(m, a, true);
    /* acos(-a) = pi - acos(a) */
    double pih = m->d ? 0x1.921fb54442d18p+1 : (double)0x1.921fb6p+1f;
    double pil = m->d ? 0x1.1a62633145c07p-53 : (double)-0x1.777a5cp-24f;
    NrPv yn = add(m, K(m, pih), sub(m, K(m, pil), y));
    y = sel(m, cmp(m, NR_PC_LT, x, K(m, 0.0)), yn, y);
    y = sel(m, cmp(m, NR_PC_GT, fab(m, x), K(m, 1.0)), nan_(m), y);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_atan2(M *m, NrPv y, NrPv x) {
    NrPv ax = fab(m, x), ay = fab(m, y);
    NrPv swap = cmp(m, NR_PC_GT, ay, ax);
    NrPv num = sel(m, swap, ax, ay), den = sel(m, swap, ay, ax);
    /* atan(min / max) in [0, pi/4].  The quotient's rounding error, r = num -
     * q den exactly, moves the result by r / (den (1 + q^2)) to first order:
     * added to the low part (zero where den is 0 or infinite). */
    NrPv u = dvd(m, num, den);
    NrPv r = fma3(m, neg(m, u), den, num);
    NrPv da = dvd(m, r, mul(m, den, fma3(m, u, u, K(m, 1.0))));
    da = sel(m, por(m, isnan_(m, da), isinf_(m, da)), K(m, 0.0), da);
    NrPv t = atan_pos(m, u, &da);
    double ph = m->d ? 0x1.921fb54442d18p+0 : (double)0x1.921fb6p+0f;
    double pl = m->d ? 0x1.1a62633145c07p-54 : (double)-0x1.777a5cp-25f;
    double pih = 2 * ph, pil = 2 * pl;
    t = sel(m, swap, add(m, K(m, ph), sub(m, K(m, pl), t)), t);
    NrPv xneg = icmp(m, NR_PC_LT, bits(m, x), KI(m, 0));
    t = sel(m, xneg, add(m, K(m, pih), sub(m, K(m, pil), t)), t);
    /* both infinite: pi/4 or 3pi/4 */
    NrPv bothinf = pand(m, isinf_(m, x), isinf_(m, y));
    NrPv q = sel(m, xneg, K(m, 2.356194490192345), K(m, 0.7853981633974483));
    t = sel(m, bothinf, q, t);
    /* zero over zero: 0 or pi by the sign of x */
    NrPv zz = pand(m, cmp(m, NR_PC_EQ, ay, K(m, 0.0)), cmp(m, NR_PC_EQ, ax, K(m, 0.0)));
    t = sel(m, zz, sel(m, xneg, K(m, pih), K(m, 0.0)), t);
    t = csign(m, t, y);
    return sel(m, por(m, isnan_(m, x), isnan_(m, y)), add(m, x, y), t);
}

/* --- erf, erfc ------------------------------------------------------------------------------------------- */
/* exp(-a^2) with a^2 split exactly (a >= 0), times q. */
static NrPv exp_negsq(M *m, NrPv a, NrPv q) {
    NrPv h = mul(m, a, a), l = fma3(m, a, a, neg(m, h));
    NrPv e = exp_full(m, neg(m, h), neg(m, l));
    return mul(m, e, q);
}

/* erfc(a) exp(a^2) for a >= 0.5 (Q on intervals, then in 1/a). */
static NrPv erfc_q(M *m, NrPv a) {
    if (!m->d) {
        NrPv qa = POLY(m, sub(m, a, K(m, 1.25)), ERFCQ32A);
        NrPv qb = POLY(m, sub(m, a, K(m, 3.0)), ERFCQ32B);
        NrPv u = dvd(m, K(m, 1.0), a);
        NrPv ul = mul(m, fma3(m, neg(m, u), a, K(m, 1.0)), u); /* 1/a = u + ul */
        NrPv t = add(m, sub(m, u, K(m, ERFCU32_C)), ul);
        NrPv pq = mul(m, t, poly(m, t, ERFCU32 + 1, (int)NR_COUNTOF(ERFCU32) - 1));
        NrPv P = add(m, K(m, 0x1.1ca764p-1), add(m, K(m, ERFCU32_C0L), pq));
        NrPv qu = fma3(m, ul, P, mul(m, u, P));
        return sel(m, cmp(m, NR_PC_LT, a, K(m, 2.0)), qa, sel(m, cmp(m, NR_PC_LT, a, K(m, 4.0)), qb, qu));
    }
    NrPv qa = POLY(m, sub(m, a, K(m, 0.875)), ERFCQ64A);
    NrPv qb = POLY(m, sub(m, a, K(m, 1.75)), ERFCQ64B);
    NrPv qc = POLY(m, sub(m, a, K(m, 3.0)), ERFCQ64C);
    NrPv qd = POLY(m, sub(m, a, K(m, 4.875)), ERFCQ64D);
    NrPv u = dvd(m, K(m, 1.0), a);
    NrPv ul = mul(m, fma3(m, neg(m, u), a, K(m, 1.0)), u); /* 1/a = u + ul */
    NrPv P = POLY(m, add(m, sub(m, u, K(m, ERFCU64_C)), ul), ERFCU64);
    NrPv qu = fma3(m, ul, P, mul(m, u, P));
    NrPv y = sel(m, cmp(m, NR_PC_LT, a, K(m, 6.0)), qd, qu);
    y = sel(m, cmp(m, NR_PC_LT, a, K(m, 3.75)), qc, y);
    y = sel(m, cmp(m, NR_PC_LT, a, K(m, 2.25)), qb, y);
    return sel(m, cmp(m, NR_PC_LT, a, K(m, 1.25)), qa, y);
}

static NrPv erf_small(M *m, NrPv a) {
    NrPv z = mul(m, a, a);
    /* a (c0 + z P(z)) with c0 = 2/sqrt(pi) in two parts (its rounding alone would cost an ulp) */
    const double *c = m->d ? ERF64 : ERF32;
    int n = m->d ? (int)NR_COUNTOF(ERF64) : (int)NR_COUNTOF(ERF32);
    NrPv q = mul(m, z, poly(m, z, c + 1, n - 1));
    double hi = m->d ? 0x1.20dd750429b6dp+0 : (double)0x1.20dd76p+0f;
    double lo = m->d ? 0x1.1ae3a914fed80p-56 : (double)-0x1.f7ac92p-25f;
    return fma3(m, a, K(m, hi), mul(m, a, add(m, K(m, lo), q)));
}

/* f32 erf in about 30 instructions, both branches computed and one selected
 * (max error 0.93 ulp over every f32).  Below 0.85: a + a P(a^2).  From 0.85:
 * 1 - 2^Q with Q = a H(a - 1), a clamped to 3.925 (where erf rounds to 1).
 * Q = k + f splits exactly: k = rint(h a) from the 1.5 2^23 shift, f = fma(h,
 * a, -k) with one rounding on |f| <= 1/2.  Then 2^k is built from k's bits
 * (k in [-25, -1]) and 1 - 2^k (1 + u) = fma(2^k, -u, 1 - 2^k), 1 - 2^k
 * exact: one rounding after the polynomials.  A NaN takes the first branch
 * (the compare is false), which keeps it. */
static NrPv erf32(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv small = fma3(m, a, POLY(m, mul(m, a, a), ERFS32), a);
    NrPv ac = fmin_(m, a, K(m, 3.925));
    NrPv h = POLY(m, sub(m, ac, K(m, 1.0)), ERFT32);
    NrPv j = fma3(m, h, ac, K(m, 0x1.8p23)); /* 1.5 2^23 + k */
    NrPv nk = sub(m, K(m, 0x1.8p23), j);     /* -k, exact */
    NrPv f = fma3(m, h, ac, nk);
    NrPv nu = mul(m, f, POLY(m, f, EXP2M32)); /* -(2^f - 1) */
    NrPv s = fbits(m, iadd(m, ishl(m, bits(m, j), 23), KI(m, 0x3f800000))); /* 2^k */
    NrPv big = fma3(m, s, nu, sub(m, K(m, 1.0), s));
    return csign(m, sel(m, cmp(m, NR_PC_GE, a, K(m, 0.85)), big, small), x);
}

static NrPv m_erf(M *m, NrPv x) {
    if (!m->d) return erf32(m, x);
    NrPv a = fab(m, x);
    NrPv ac = fmin_(m, fmax_(m, a, K(m, 0.5)), K(m, m->d ? 27.0 : 10.0));
    NrPv big = sub(m, K(m, 1.0), exp_negsq(m, ac, erfc_q(m, ac)));
    NrPv y = sel(m, cmp(m, NR_PC_LT, a, K(m, 1.0)), erf_small(m, fmin_(m, a, K(m, 1.0))), big);
    y = sel(m, cmp(m, NR_PC_GE, a, K(m, m->d ? 6.0 : 4.0)), K(m, 1.0), y);
    y = csign(m, y, x);
    return sel(m, isnan_(m, x), x, y);
}

static NrPv m_erfc(M *m, NrPv x) {
    NrPv a = fab(m, x);
    double lim = m->d ? 27.3 : 10.1;
    NrPv ac = fmin_(m, fmax_(m, a, K(m, 0.5)), K(m, lim));
    NrPv tail = exp_negsq(m, ac, erfc_q(m, ac));
    tail = sel(m, cmp(m, NR_PC_GE, a, K(m, lim)), K(m, 0.0), tail);
    NrPv small = erf_small(m, fmin_(m, a, K(m, 0.5)));
    NrPv lo = cmp(m, NR_PC_LT, a, K(m, 0.5));
    NrPv pos = sel(m, lo, sub(m, K(m, 1.0), small), tail);          /* erfc(a) */
    NrPv negv = sel(m, lo, add(m, K(m, 1.0), small), sub(m, K(m, 2.0), tail)); /* erfc(-a) */
    NrPv y = sel(m, cmp(m, NR_PC_LT, x, K(m, 0.0)), negv, pos);
    return sel(m, isnan_(m, x), x, y);
}

/* --- rounding and simple functions ----------------------------------------------------------------------- */
static NrPv m_round(M *m, NrPv x) { /* half away from zero */
    NrPv t = trn(m, x);
    NrPv up = cmp(m, NR_PC_GE, fab(m, sub(m, x, t)), K(m, 0.5));
    return add(m, t, sel(m, up, csign(m, K(m, 1.0), x), K(m, 0.0)));
}

static NrPv m_fdim(M *m, NrPv x, NrPv y) {
    NrPv d = sub(m, x, y);
    NrPv r = sel(m, cmp(m, NR_PC_GT, x, y), d, K(m, 0.0));
    return sel(m, por(m, isnan_(m, x), isnan_(m, y)), add(m, x, y), r);
}

static NrPv m_nextafter(M *m, NrPv x, NrPv y) {
    NrPv i = bits(m, x);
    /* The bits move up (in magnitude) when (y > x) == (x >= 0). */
    NrPv upw = cmp(m, NR_PC_GT, y, x);
    NrPv xpos = nr_pb_setp(m->p, NR_PC_GE, m->st, i, KI(m, 0));
    NrPv inc = nr_pb_pxor(m->p, upw, pnot(m, xpos));
    NrPv r = fbits(m, sel(m, inc, iadd(m, i, KI(m, 1)), isub(m, i, KI(m, 1))));
    NrPv tiny = fbits(m, KI(m, 1));
    r = sel(m, cmp(m, NR_PC_EQ, x, K(m, 0.0)), csign(m, tiny, y), r);
    r = sel(m, cmp(m, NR_PC_EQ, x, y), y, r);
    return sel(m, por(m, isnan_(m, x), isnan_(m, y)), add(m, x, y), r);
}

/* --- f64 helpers for the functions that f32 computes in f64 ------------------------------------------------ */
/* log(x) as a double-double for finite x > 0 (relative error about 2^-66):
 * log(1 + f) = 2s + s z L(z) with s = f / (2 + f), z = s^2, every part of
 * the sum in double-double except the small tail z L'(z) of L = 2/3 + z L'. */
static DD log_dd(M *m, NrPv x) {
    NrPv e, f = log_reduce(m, x, &e);
    NrPv u = add(m, f, K(m, 2.0));
    NrPv ul = sub(m, f, sub(m, u, K(m, 2.0))); /* u + ul = 2 + f exactly */
    NrPv s = dvd(m, f, u);
    NrPv sl = dvd(m, sub(m, fma3(m, neg(m, s), u, f), mul(m, s, ul)), u);
    NrPv zh = mul(m, s, s);
    NrPv zl = fma3(m, add(m, s, s), sl, fma3(m, s, s, neg(m, zh)));
    NrPv tail = mul(m, zh, poly(m, zh, LOG64 + 1, (int)NR_COUNTOF(LOG64) - 1));
    DD L = fast_two_sum(m, K(m, 0x1.5555555555555p-1), tail);
    L.l = add(m, L.l, K(m, 0x1.5555555555555p-55));
    NrPv szh = mul(m, s, zh);
    NrPv szl = add(m, fma3(m, s, zh, neg(m, szh)), fma3(m, s, zl, mul(m, sl, zh)));
    NrPv th = mul(m, szh, L.h);
    NrPv tl = add(m, fma3(m, szh, L.h, neg(m, th)), fma3(m, szh, L.l, mul(m, szl, L.h)));
    DD a = two_sum(m, add(m, s, s), th);
    a = fast_two_sum(m, a.h, add(m, a.l, add(m, add(m, sl, sl), tl)));
    /* + e ln2 (ln2's high part has trailing zeros: e * hi is exact) */
    DD b = {mul(m, e, K(m, LN2_HI64L)), mul(m, e, K(m, LN2_LO64L))};
    return dd_add(m, b, a);
}

/* exp of a double-double argument. */
static NrPv exp_dd(M *m, DD z) { return exp_full(m, z.h, z.l); }

static NrPv to64(NrPtx *p, NrPv x) { return nr_pb_cvt(p, NR_PR_NONE, NR_PT_F64, NR_PT_F32, x); }
static NrPv to32(NrPtx *p, NrPv x) { return nr_pb_cvt(p, NR_PR_RN, NR_PT_F32, NR_PT_F64, x); }

/* --- pow --------------------------------------------------------------------------------------------------- */
static NrPv m_pow(M *m, NrPv x, NrPv y) {
    /* |x|^y = exp(y log|x|), log and product in double-double (f64). */
    M d = mk(m->p, true), *D = &d;
    NrPv x64 = m->d ? x : to64(m->p, x), y64 = m->d ? y : to64(m->p, y);
    NrPv ax = fab(D, x64);
    NrPv axs = sel(D, pand(D, cmp(D, NR_PC_GT, ax, K(D, 0)), cmp(D, NR_PC_LT, ax, K(D, INFINITY))), ax, K(D, 1.0));
    DD l = log_dd(D, axs);
    NrPv ph = mul(D, y64, l.h);
    NrPv pl = fma3(D, y64, l.l, fma3(D, y64, l.h, neg(D, ph)));
    pl = sel(D, cmp(D, NR_PC_LT, fab(D, ph), K(D, 2048.0)), pl, K(D, 0.0)); /* beyond: 0 or inf anyway */
    NrPv r = exp_dd(D, (DD){ph, pl});
    /* Integer and odd-integer exponents (|y| >= 2^53 is even). */
    NrPv yint = cmp(D, NR_PC_EQ, trn(D, y64), y64);
    NrPv yhalf = mul(D, y64, K(D, 0.5));
    NrPv yodd = pand(D, yint, cmp(D, NR_PC_NE, trn(D, yhalf), yhalf));
    NrPv xneg = nr_pb_setp(m->p, NR_PC_LT, NR_PT_S64, bits(D, x64), KI(D, 0));
    r = sel(D, pand(D, xneg, yodd), neg(D, r), r);
    r = sel(D, pand(D, cmp(D, NR_PC_LT, x64, K(D, 0)), pnot(D, yint)), nan_(D), r);
    /* zeros and infinities of x */
    NrPv yneg = cmp(D, NR_PC_LT, y64, K(D, 0));
    NrPv zx = cmp(D, NR_PC_EQ, x64, K(D, 0));
    NrPv zres = sel(D, yneg, K(D, INFINITY), K(D, 0.0));
    zres = sel(D, pand(D, yodd, xneg), neg(D, zres), zres);
    r = sel(D, zx, zres, r);
    NrPv ix = isinf_(D, x64);
    NrPv ires = sel(D, yneg, K(D, 0.0), K(D, INFINITY));
    ires = sel(D, pand(D, yodd, xneg), neg(D, ires), ires);
    r = sel(D, ix, ires, r);
    /* infinite y */
    NrPv iy = isinf_(D, y64);
    NrPv gt1 = cmp(D, NR_PC_GT, ax, K(D, 1.0));
    NrPv yres = sel(D, nr_pb_pxor(m->p, gt1, yneg), K(D, INFINITY), K(D, 0.0));
    yres = sel(D, cmp(D, NR_PC_EQ, ax, K(D, 1.0)), K(D, 1.0), yres);
    r = sel(D, iy, yres, r);
    r = sel(D, por(D, isnan_(D, x64), isnan_(D, y64)), add(D, x64, y64), r);
    r = sel(D, por(D, cmp(D, NR_PC_EQ, y64, K(D, 0)), cmp(D, NR_PC_EQ, x64, K(D, 1.0))), K(D, 1.0), r);
    return m->d ? r : to32(m->p, r);
}

/* --- cbrt, hypot --------------------------------------------------------------------------------------------- */
static NrPv m_cbrt(M *m, NrPv x) {
    M d = mk(m->p, true), *D = &d;
    NrPv x64 = m->d ? x : to64(m->p, x);
    NrPv a = fab(D, x64);
    NrPv sub_ = cmp(D, NR_PC_LT, a, K(D, 0x1p-1022));
    NrPv as = sel(D, sub_, mul(D, a, K(D, 0x1p54)), a);
    /* bits / 3 + 2/3 of the bias: a few correct bits to start Newton from. */
    NrPv i = bits(D, as);
    NrPv third = nr_pb_bin(m->p, NR_PO_SHR, NR_PT_U64, nr_pb_bin(m->p, NR_PO_MULHI, NR_PT_U64, i, nr_pv_i64((int64_t)0xaaaaaaaaaaaaaaabull)),
                           nr_pv_i32(1));
    NrPv y = fbits(D, iadd(D, third, KI(D, 0x2a9f7893782da1ceLL)));
    for (int k = 0; k < 4; k++) /* y = (2y + a / y^2) / 3 */
        y = mul(D, fma3(D, K(D, 2.0), y, dvd(D, as, mul(D, y, y))), K(D, 1.0 / 3));
    /* One more step with the residual computed exactly: y += (a - y^3) / (3 y^2). */
    NrPv y2 = mul(D, y, y), y2l = fma3(D, y, y, neg(D, y2));
    NrPv res = sub(D, fma3(D, neg(D, y2), y, as), mul(D, y2l, y));
    y = fma3(D, dvd(D, res, mul(D, K(D, 3.0), y2)), K(D, 1.0), y);
    y = sel(D, sub_, mul(D, y, K(D, 0x1p-18)), y);
    y = csign(D, y, x64);
    y = sel(D, por(D, cmp(D, NR_PC_EQ, a, K(D, 0)), por(D, isinf_(D, a), isnan_(D, a))), add(D, x64, x64), y);
    return m->d ? y : to32(m->p, y);
}

static NrPv m_hypot(M *m, NrPv x, NrPv y) {
    M d = mk(m->p, true), *D = &d;
    NrPv r;
    if (!m->d) { /* exact squares in f64, one rounding of the sum, one of the square root */
        NrPv a = to64(m->p, x), b = to64(m->p, y);
        r = to32(m->p, sqr(D, fma3(D, a, a, mul(D, b, b))));
    } else {
        NrPv ax = fab(D, x), ay = fab(D, y);
        NrPv big = fmax_(D, ax, ay), sm = fmin_(D, ax, ay);
        /* scale both by 2^(1023 - E), E the biased exponent of big: no overflow or underflow in the squares */
        NrPv E = ushr(D, bits(D, big), 52);
        NrPv k = isub(D, KI(D, 1023), E);
        NrPv bs = ldexp_(D, big, k), ss = ldexp_(D, sm, k);
        r = ldexp_(D, sqr(D, fma3(D, bs, bs, mul(D, ss, ss))), isub(D, E, KI(D, 1023)));
    }
    NrPv fx = m->d ? x : to64(m->p, x), fy = m->d ? y : to64(m->p, y);
    NrPv inf = por(D, isinf_(D, fx), isinf_(D, fy));
    NrPv nan = por(D, isnan_(D, fx), isnan_(D, fy));
    M *T = m;
    r = sel(T, nan, add(T, x, y), r);
    return sel(T, inf, K(T, INFINITY), r);
}

/* --- fmod, remainder ------------------------------------------------------------------------------------- */
/* a mod b for f64 values a, b > 0 whose ratio is below 2^300 (f32 inputs):
 * each step removes up to 28 bits of quotient exactly. */
static NrPv fmod_steps(M *D, NrPv a, NrPv b) {
    for (int step = 0; step < 12; step++) {
        NrPv ge = cmp(D, NR_PC_GE, a, b);
        NrPv ea = ushr(D, bits(D, a), 52), eb = ushr(D, bits(D, b), 52);
        NrPv s = nr_pb_bin(D->p, NR_PO_MAX, NR_PT_S64, isub(D, isub(D, ea, eb), KI(D, 28)), KI(D, 0));
        NrPv bs = fbits(D, iadd(D, bits(D, b), ishl(D, s, 52))); /* b 2^s, exact */
        NrPv q = trn(D, dvd(D, a, bs));
        NrPv r = fma3(D, neg(D, q), bs, a); /* exact: q has at most 29 bits */
        r = sel(D, cmp(D, NR_PC_LT, r, K(D, 0)), add(D, r, bs), r);
        a = sel(D, ge, r, a);
    }
    return a;
}

static NrPv fmod_special(M *m, NrPv x, NrPv y, NrPv r) {
    NrPv bad = por(m, por(m, isinf_(m, x), cmp(m, NR_PC_EQ, y, K(m, 0))), por(m, isnan_(m, x), isnan_(m, y)));
    r = sel(m, isinf_(m, y), x, r);
    return sel(m, bad, nan_(m), r);
}

static NrPv fmod32(NrPtx *p, NrPv x, NrPv y) {
    M d = mk(p, true), f = mk(p, false);
    NrPv a = fmod_steps(&d, fab(&d, to64(p, x)), fab(&d, to64(p, y)));
    NrPv r = csign(&f, to32(p, a), x);
    return fmod_special(&f, x, y, r);
}

/* f64 fmod: the mantissas' long division, 11 bits per step through rem.u64. */
typedef struct FmodCtx {
    NrPv my;
} FmodCtx;

static NrPv fmod_body(NrPtx *p, NrPv *st, void *vctx) {
    FmodCtx *c = vctx;
    NrPv k = nr_pb_bin(p, NR_PO_MIN, NR_PT_S32, st[1], nr_pv_i32(11));
    st[0] = nr_pb_bin(p, NR_PO_REM, NR_PT_U64, nr_pb_bin(p, NR_PO_SHL, NR_PT_B64, st[0], k), c->my);
    st[1] = nr_pb_bin(p, NR_PO_SUB, NR_PT_S32, st[1], k);
    return nr_pb_setp(p, NR_PC_GT, NR_PT_S32, st[1], nr_pv_i32(0));
}

/* |x| mod |y| for f64 (no special values). */
static NrPv fmod64_abs(M *D, NrPv x, NrPv y) {
    NrPtx *p = D->p;
    NrPv ix = bits(D, fab(D, x)), iy = bits(D, fab(D, y));
    NrPv ex = ushr(D, ix, 52), ey = ushr(D, iy, 52);
    NrPv frac = KI(D, 0x000fffffffffffffLL), one = KI(D, 0x0010000000000000LL);
    NrPv mx = sel(D, icmp(D, NR_PC_EQ, ex, KI(D, 0)), iand(D, ix, frac), ior(D, iand(D, ix, frac), one));
    NrPv my = sel(D, icmp(D, NR_PC_EQ, ey, KI(D, 0)), iand(D, iy, frac), ior(D, iand(D, iy, frac), one));
    ex = nr_pb_bin(p, NR_PO_MAX, NR_PT_S64, ex, KI(D, 1));
    ey = nr_pb_bin(p, NR_PO_MAX, NR_PT_S64, ey, KI(D, 1));
    my = sel(D, icmp(D, NR_PC_EQ, my, KI(D, 0)), KI(D, 1), my);
    NrPv n = nr_pb_cvt(p, NR_PR_NONE, NR_PT_S32, NR_PT_S64, nr_pb_bin(p, NR_PO_MAX, NR_PT_S64, isub(D, ex, ey), KI(D, 0)));
    NrPv st[2] = {nr_pb_bin(p, NR_PO_REM, NR_PT_U64, mx, my), n};
    FmodCtx c = {my};
    nr_pb_loop(p, st, 2, fmod_body, &c);
    /* the remainder (an integer below 2^53) times the unit of y's mantissa, 2^(ey - 1075) */
    NrPv r = ldexp_(D, nr_pb_cvt(p, NR_PR_RN, NR_PT_F64, NR_PT_U64, st[0]), isub(D, ey, KI(D, 1075)));
    return sel(D, cmp(D, NR_PC_LT, fab(D, x), fab(D, y)), fab(D, x), r);
}

static NrPv fmod64(NrPtx *p, NrPv x, NrPv y) {
    M d = mk(p, true);
    NrPv r = csign(&d, fmod64_abs(&d, x, y), x);
    return fmod_special(&d, x, y, r);
}

static NrPv m_fmod(M *m, NrPv x, NrPv y) { return m->d ? fmod64(m->p, x, y) : fmod32(m->p, x, y); }

/* x - n y, n the integer nearest x / y (ties to even). */
static NrPv m_remainder(M *m, NrPv x, NrPv y) {
    M d = mk(m->p, true), *D = &d;
    NrPv x64 = m->d ? x : to64(m->p, x), y64 = m->d ? y : to64(m->p, y);
    NrPv a = fab(D, x64), b = fab(D, y64);
    NrPv b2 = add(D, b, b);
    NrPv r;
    if (m->d) {
        NrPv fin = cmp(D, NR_PC_LT, b2, K(D, INFINITY));
        r = sel(D, fin, fmod64_abs(D, a, sel(D, fin, b2, K(D, 1.0))), a);
    } else {
        r = fmod_steps(D, a, b2);
    }
    /* r in [0, 2b): subtract b once or twice (ties to the even quotient). */
    NrPv h = mul(D, b, K(D, 0.5));
    NrPv t1 = cmp(D, NR_PC_GT, r, h);
    NrPv r1 = sel(D, t1, sub(D, r, b), r);
    NrPv t2 = pand(D, t1, cmp(D, NR_PC_GE, r1, h));
    r1 = sel(D, t2, sub(D, r1, b), r1);
    if (m->d) { /* b tiny: halving b is inexact, compare 2r with b instead */
        NrPv s1 = cmp(D, NR_PC_GT, add(D, r, r), b);
        NrPv q1 = sel(D, s1, sub(D, r, b), r);
        NrPv s2 = pand(D, s1, cmp(D, NR_PC_GE, add(D, q1, q1), b));
        q1 = sel(D, s2, sub(D, q1, b), q1);
        r1 = sel(D, cmp(D, NR_PC_LT, b, K(D, 0x1p-1021)), q1, r1);
    }
    NrPv res = m->d ? r1 : to32(m->p, r1);
    res = nr_pb_bin(m->p, NR_PO_XOR, m->bt, bits(m, res), iand(m, bits(m, x), KI(m, m->d ? INT64_MIN : INT32_MIN)));
    return fmod_special(m, x, y, fbits(m, res));
}

/* --- gamma ---------------------------------------------------------------------------------------------------- */
/* (Gamma(1 + t) - 1) / (t (t - 1)) on [0, 1/2], t - 1/4 (degree 18, 2^-62.1) and on [1/2, 1], t - 3/4 (2^-71.8) */
static const double GAMHA[] = {
    0x1.ff2ad2560b63dp-2,  -0x1.da5c2437692c5p-3, 0x1.0b2ae71e72e06p-2,  -0x1.8c70ae22d2afcp-3, 0x1.4c6aaccc4acacp-3,
    -0x1.094be6330898cp-3, 0x1.ab70d6101c5f4p-4,  -0x1.568687ea187b4p-4, 0x1.126daa17b2fb3p-4,  -0x1.b764dbfbba390p-5,
    0x1.5fa9a2059eef2p-5,  -0x1.1963638efe77dp-5, 0x1.c246b65bfd73ep-6,  -0x1.688a039f9bfb3p-6, 0x1.207b8a4ecc2b4p-6,
    -0x1.c5045748c8d34p-7, 0x1.69bc95a0c8639p-7,  -0x1.65f26a8838c11p-7, 0x1.20c830cbf25adp-7};
static const double GAMHB[] = {
    0x1.ba06ca045f295p-2,  -0x1.fb38e791192f7p-5, 0x1.d449cf652eac2p-4,  -0x1.5926336c11cc6p-5, 0x1.03a4161713c54p-5,
    -0x1.0e6317cdea6ccp-6, 0x1.454b170b46968p-7,  -0x1.6fb72f298ac21p-8, 0x1.a7e9885916915p-9,  -0x1.e49b0b335bfc1p-10,
    0x1.156cf653feedap-10, -0x1.3d45fea87d506p-11, 0x1.6ace1b1ef858ep-12, -0x1.9ecf9f75f775bp-13, 0x1.da2ff0ee164cep-14,
    -0x1.0dcfa3dbd22bep-14, 0x1.34242ea7b83c9p-15, -0x1.8649a9a3bd756p-16, 0x1.c17dc958c5838p-17};
/* lgamma's Stirling series: B_2k / (2k (2k - 1)), in 1/x^2 */
static const double STIRLING[] = {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360, 1.0 / 156,
                                  -3617.0 / 122400};

/* Gamma(1 + t) - 1 for t in [0, 1], with its relative accuracy at both zeros. */
static NrPv gamma1m(M *D, NrPv t) {
    NrPv h = sel(D, cmp(D, NR_PC_LT, t, K(D, 0.5)), POLY(D, sub(D, t, K(D, 0.25)), GAMHA),
                 POLY(D, sub(D, t, K(D, 0.75)), GAMHB));
    return mul(D, mul(D, t, sub(D, t, K(D, 1.0))), h);
}

/* prod_{i=1..k} (x - i) for k = floor(x) - 2 (x in [2, 12)), double-double. */
static DD shift_product(M *D, NrPv x) {
    NrPv k = sub(D, nr_pb_un(D->p, NR_PO_FLOOR, NR_PT_F64, x), K(D, 2.0));
    DD P = {K(D, 1.0), K(D, 0.0)};
    for (int i = 1; i <= 9; i++) {
        NrPv f = sel(D, cmp(D, NR_PC_LE, K(D, i), k), sub(D, x, K(D, i)), K(D, 1.0));
        P = dd_mul_d(D, P, f);
    }
    return P;
}

/* Gamma(2 + t) - 1 = t + g + t g (g = Gamma(1 + t) - 1) for t in [0, 1]: no
 * cancellation at the zero t = 0. */
static NrPv gamma2m(M *D, NrPv t) {
    NrPv g = gamma1m(D, t);
    return add(D, t, fma3(D, t, g, g));
}

/* lgamma(a) for a >= 12: Stirling, as a double-double.  (a - 1/2) log a - a
 * is formed as (a - 1/2)(log a - 1) - 1/2: near lgamma's overflow (a ~
 * 2^1014) the product (a - 1/2) log a alone exceeds the largest double.
 * log a - 1 is exact in the high part (log a >= 2.48). */
static DD stirling(M *D, NrPv a) {
    DD L = log_dd(D, a);
    DD Lm1 = {sub(D, L.h, K(D, 1.0)), L.l};
    DD A = dd_mul_d(D, Lm1, sub(D, a, K(D, 0.5)));
    DD B = dd_add(D, A, (DD){K(D, -0.5), K(D, 0)});
    NrPv w = dvd(D, K(D, 1.0), a);
    NrPv s = mul(D, w, POLY(D, mul(D, w, w), STIRLING));
    DD C = {K(D, 0x1.d67f1c864beb5p-1), add(D, K(D, -0x1.65b5a1b7ff5dfp-55), s)}; /* log sqrt(2 pi) + series */
    return dd_add(D, B, C);
}

/* |sin(pi a)| for finite a. */
static NrPv abs_sinpi(M *D, NrPv a) {
    NrPv r = fab(D, sub(D, a, rnd(D, a))); /* in [0, 1/2], exact */
    NrPv near = cmp(D, NR_PC_LE, r, K(D, 0.25));
    NrPv u = sel(D, near, r, sub(D, K(D, 0.5), r));
    NrPv h = mul(D, u, K(D, 0x1.921fb54442d18p+1));
    NrPv l = fma3(D, u, K(D, 0x1.1a62633145c07p-53), fma3(D, u, K(D, 0x1.921fb54442d18p+1), neg(D, h)));
    return sel(D, near, ksin(D, h, l), kcos(D, h, l));
}

/* lgamma(a) for a > 0 finite, double-double (the low part is 0 below 12):
 * (0, 1): lgamma(1 + a) - log a; [1, 2): log1p(Gamma(1 + t) - 1);
 * [2, 12): log(prod) + log1p(Gamma(2 + t) - 1); above: Stirling. */
static DD lgamma_pos(M *D, NrPv a) {
    NrPv lt1 = cmp(D, NR_PC_LT, a, K(D, 1.0)), lt2 = cmp(D, NR_PC_LT, a, K(D, 2.0));
    NrPv small = sel(D, cmp(D, NR_PC_LT, a, K(D, 12.0)), a, K(D, 11.5));
    NrPv fl = nr_pb_un(D->p, NR_PO_FLOOR, NR_PT_F64, small);
    NrPv t = sel(D, lt1, small, sub(D, small, fl)); /* exact */
    NrPv g = sel(D, lt2, gamma1m(D, t), gamma2m(D, t));
    NrPv lg = m_log1p(D, g); /* lgamma(1 + t) or lgamma(2 + t) */
    DD P = shift_product(D, fmax_(D, small, K(D, 2.0)));
    DD lp = log_dd(D, P.h);
    NrPv mid = add(D, add(D, lp.h, add(D, lp.l, dvd(D, P.l, P.h))), lg);
    NrPv low = sub(D, lg, m_log(D, fmax_(D, small, K(D, 0x1p-1074))));
    NrPv y = sel(D, lt1, low, sel(D, lt2, lg, mid));
    DD big = stirling(D, fmax_(D, a, K(D, 12.0)));
    NrPv isbig = cmp(D, NR_PC_GE, a, K(D, 12.0));
    return (DD){sel(D, isbig, big.h, y), sel(D, isbig, big.l, K(D, 0))};
}

static NrPv lgamma64(M *D, NrPv x) {
    NrPv a = fab(D, x);
    NrPv af = sel(D, pand(D, cmp(D, NR_PC_GT, a, K(D, 0)), cmp(D, NR_PC_LT, a, K(D, INFINITY))), a, K(D, 1.0));
    DD lp = lgamma_pos(D, af);
    NrPv pos = add(D, lp.h, lp.l);
    /* x < 0: log(pi / |x sin(pi x)|) - lgamma(|x|) */
    NrPv lden = add(D, m_log(D, af), m_log(D, abs_sinpi(D, af)));
    NrPv negv = sub(D, sub(D, K(D, 0x1.250d048e7a1bdp+0), lden), pos);
    NrPv y = sel(D, cmp(D, NR_PC_LT, x, K(D, 0)), negv, pos);
    NrPv pole = por(D, cmp(D, NR_PC_EQ, x, K(D, 0)), pand(D, cmp(D, NR_PC_LT, x, K(D, 0)), cmp(D, NR_PC_EQ, x, rnd(D, x))));
    y = sel(D, por(D, pole, isinf_(D, x)), K(D, INFINITY), y);
    y = sel(D, cmp(D, NR_PC_GT, a, K(D, 0x1.754d9278b51a7p+1014)), K(D, INFINITY), y); /* lgamma overflows */
    return sel(D, isnan_(D, x), x, y);
}

static NrPv tgamma64(M *D, NrPv x) {
    NrPv a = fab(D, x);
    NrPv af = sel(D, pand(D, cmp(D, NR_PC_GT, a, K(D, 0)), cmp(D, NR_PC_LT, a, K(D, INFINITY))), a, K(D, 1.0));
    NrPv small = sel(D, cmp(D, NR_PC_LT, af, K(D, 12.0)), af, K(D, 11.5));
    NrPv lt1 = cmp(D, NR_PC_LT, af, K(D, 1.0)), lt2 = cmp(D, NR_PC_LT, af, K(D, 2.0));
    NrPv t = sel(D, lt1, small, sub(D, small, nr_pb_un(D->p, NR_PO_FLOOR, NR_PT_F64, small)));
    NrPv g1 = add(D, K(D, 1.0), sel(D, lt2, gamma1m(D, t), gamma2m(D, t))); /* Gamma(1 + t) or Gamma(2 + t) */
    DD P = shift_product(D, fmax_(D, small, K(D, 2.0)));
    DD G = dd_mul_d(D, P, g1);
    NrPv g = sel(D, lt1, dvd(D, g1, small), sel(D, lt2, g1, add(D, G.h, G.l)));
    DD S = stirling(D, fmax_(D, af, K(D, 12.0)));
    NrPv gs = exp_dd(D, S);
    NrPv pos = sel(D, cmp(D, NR_PC_GE, af, K(D, 12.0)), gs, g);
    /* x < 0: -pi / (sin(pi a) a Gamma(a)); in logarithms past 170 */
    NrPv sp = abs_sinpi(D, af);
    NrPv odd = cmp(D, NR_PC_NE, nr_pb_un(D->p, NR_PO_FLOOR, NR_PT_F64, mul(D, af, K(D, 0.5))),
                   mul(D, nr_pb_un(D->p, NR_PO_FLOOR, NR_PT_F64, af), K(D, 0.5)));
    /* sin(pi x) for x = -a has the sign of -sin(pi a); sin(pi a) > 0 for floor(a) even */
    NrPv direct = dvd(D, K(D, 0x1.921fb54442d18p+1), mul(D, sp, mul(D, af, pos)));
    DD lg = lgamma_pos(D, af);
    NrPv viaexp = m_exp(D, sub(D, sub(D, K(D, 0x1.250d048e7a1bdp+0), m_log(D, mul(D, sp, af))), add(D, lg.h, lg.l)));
    NrPv negmag = sel(D, cmp(D, NR_PC_GT, af, K(D, 170.0)), viaexp, direct);
    /* Gamma(x) < 0 when floor(a) is even (x in (-1, 0), (-3, -2), ...) */
    NrPv negv = sel(D, odd, negmag, neg(D, negmag));
    NrPv y = sel(D, cmp(D, NR_PC_LT, x, K(D, 0)), negv, pos);
    /* |x| < 2^-54: Gamma(x) = 1/x - euler + O(x), and 1/x alone rounds correctly */
    y = sel(D, cmp(D, NR_PC_LT, a, K(D, 0x1p-54)), dvd(D, K(D, 1.0), x), y);
    y = sel(D, cmp(D, NR_PC_GT, x, K(D, 171.62437695630272)), K(D, INFINITY), y);
    y = sel(D, cmp(D, NR_PC_EQ, x, K(D, 0)), csign(D, K(D, INFINITY), x), y);
    NrPv bad = por(D, cmp(D, NR_PC_EQ, x, K(D, -INFINITY)), pand(D, cmp(D, NR_PC_LT, x, K(D, 0)), cmp(D, NR_PC_EQ, x, rnd(D, x))));
    y = sel(D, bad, nan_(D), y);
    return sel(D, isnan_(D, x), x, y);
}

static NrPv m_lgamma(M *m, NrPv x) {
    M d = mk(m->p, true);
    if (m->d) return lgamma64(&d, x);
    return to32(m->p, lgamma64(&d, to64(m->p, x)));
}

static NrPv m_tgamma(M *m, NrPv x) {
    M d = mk(m->p, true);
    if (m->d) return tgamma64(&d, x);
    return to32(m->p, tgamma64(&d, to64(m->p, x)));
}

/* --- logb, ldexp ------------------------------------------------------------------------------------------- */
static NrPv m_logb(M *m, NrPv x) {
    NrPv a = fab(m, x);
    NrPv sub_ = cmp(m, NR_PC_LT, a, K(m, m->d ? 0x1p-1022 : 0x1p-126));
    NrPv as = sel(m, sub_, mul(m, a, K(m, m->d ? 0x1p54 : 0x1p24)), a);
    NrPv e = isub(m, ushr(m, bits(m, as), m->mb), KI(m, m->bias));
    e = isub(m, e, sel(m, sub_, KI(m, m->d ? 54 : 24), KI(m, 0)));
    NrPv y = i2f(m, e);
    y = sel(m, cmp(m, NR_PC_EQ, a, K(m, 0.0)), K(m, -INFINITY), y);
    y = sel(m, isinf_(m, x), K(m, INFINITY), y);
    return sel(m, isnan_(m, x), x, y);
}

/* x 2^k, k an integral float of x's type: the exponent field is set
 * directly, and a result below the normal range takes one rounding
 * multiplication by 2^-off. */
static NrPv m_ldexp(M *m, NrPv x, NrPv kf) {
    int off = m->d ? 128 : 64;
    NrPv k = f2i(m, fmin_(m, fmax_(m, kf, K(m, -10000.0)), K(m, 10000.0)));
    NrPv a = fab(m, x);
    NrPv sub_ = cmp(m, NR_PC_LT, a, K(m, m->d ? 0x1p-1022 : 0x1p-126));
    NrPv as = sel(m, sub_, mul(m, a, K(m, m->d ? 0x1p54 : 0x1p24)), a);
    k = isub(m, k, sel(m, sub_, KI(m, m->d ? 54 : 24), KI(m, 0)));
    NrPv ia = bits(m, as);
    int64_t mmask = m->d ? 0x000fffffffffffffll : 0x7fffff;
    NrPv mant = iand(m, ia, KI(m, mmask));
    NrPv e = iadd(m, ushr(m, ia, m->mb), k);
    /* normal: the new exponent in place */
    NrPv norm = fbits(m, ior(m, mant, ishl(m, e, m->mb)));
    /* below: exponent e + off (at least 1), then the rounding product */
    NrPv eu = nr_pb_bin(m->p, NR_PO_MAX, m->st, iadd(m, e, KI(m, off)), KI(m, 1));
    NrPv under = mul(m, fbits(m, ior(m, mant, ishl(m, eu, m->mb))), K(m, ldexp(1.0, -off)));
    NrPv y = sel(m, icmp(m, NR_PC_LT, e, KI(m, 1)), under, norm);
    y = sel(m, icmp(m, NR_PC_GT, e, KI(m, 2 * m->bias)), K(m, INFINITY), y);
    y = csign(m, y, x);
    NrPv keep = por(m, por(m, cmp(m, NR_PC_EQ, a, K(m, 0.0)), isinf_(m, x)), isnan_(m, x));
    return sel(m, keep, add(m, x, x), y);
}

/* --- sinpi, cospi ------------------------------------------------------------------------------------------ */
/* x = 2j + n/2 + r exactly, |r| <= 1/4, q = n mod 4; pi r as a double-double. */
static NrPv pi_reduce(M *m, NrPv x, NrPv *rh, NrPv *rl) {
    NrPv t = sub(m, x, mul(m, K(m, 2.0), rnd(m, mul(m, x, K(m, 0.5))))); /* |t| <= 1, exact */
    NrPv n = rnd(m, add(m, t, t));
    NrPv r = fma3(m, n, K(m, -0.5), t);                                  /* exact */
    NrPv q = nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, nr_pb_cvt(m->p, NR_PR_RZI, NR_PT_S32, m->t, n), nr_pv_i32(3));
    double ph = m->d ? 0x1.921fb54442d18p+1 : (double)0x1.921fb6p+1f;
    double pl = m->d ? 0x1.1a62633145c07p-53 : (double)-0x1.777a5cp-24f;
    *rh = mul(m, r, K(m, ph));
    *rl = fma3(m, r, K(m, pl), fma3(m, r, K(m, ph), neg(m, *rh)));
    return q;
}

static NrPv sincospi(M *m, NrPv x, bool cosine) {
    NrPv rh, rl, q = pi_reduce(m, x, &rh, &rl);
    if (cosine) q = nr_pb_bin(m->p, NR_PO_ADD, NR_PT_S32, q, nr_pv_i32(1));
    NrPv s = ksin(m, rh, rl), c = kcos(m, rh, rl);
    NrPv odd = nr_pb_setp(m->p, NR_PC_NE, NR_PT_B32, nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, q, nr_pv_i32(1)), nr_pv_i32(0));
    NrPv negq = nr_pb_setp(m->p, NR_PC_NE, NR_PT_B32, nr_pb_bin(m->p, NR_PO_AND, NR_PT_B32, q, nr_pv_i32(2)), nr_pv_i32(0));
    NrPv y = sel(m, odd, c, s);
    y = sel(m, negq, neg(m, y), y);
    /* exact zeros: sinpi(n) has x's sign, cospi(n + 1/2) is +0 */
    NrPv zero = cmp(m, NR_PC_EQ, rh, K(m, 0.0));
    if (cosine) y = sel(m, zero, add(m, y, K(m, 0.0)), y);
    else y = sel(m, pand(m, zero, pnot(m, odd)), csign(m, K(m, 0.0), x), y);
    return sel(m, por(m, isinf_(m, x), isnan_(m, x)), nan_(m), y);
}

static NrPv m_sinpi(M *m, NrPv x) { return sincospi(m, x, false); }
static NrPv m_cospi(M *m, NrPv x) { return sincospi(m, x, true); }

/* --- erfinv and its relatives (computed in f64) ---------------------------------------------------------- */
static const double TWO_OVER_SQRTPI = 0x1.20dd750429b6dp+0;

static NrPv erfcx64(M *D, NrPv x);

/* x >= 0 with erf(x) = a (small: a <= 1/2) or erfc(x) = z (else).  The
 * estimate is Winitzki's, or for z < 1e-10 the asymptotic x^2 = -log z -
 * log(x sqrt(pi)) + log(1 - 1/(2x^2)) iterated twice; then Halley steps
 * x -= u / (1 + x u), u = f / f' (f'' = -2x f').  Below 2^-1000, erfc would
 * lose bits in the subnormal range: Newton steps on log erfc(x) - log z =
 * log erfcx(x) - x^2 - log z instead. */
static NrPv erfinv_core(M *D, NrPv a, NrPv z, NrPv small) {
    NrPv lz = m_log(D, z);
    NrPv w = m_log(D, mul(D, z, sub(D, K(D, 2.0), z))); /* log(1 - a^2) */
    const double c = 0.147;
    NrPv t = fma3(D, w, K(D, 0.5), K(D, 2 / (M_PI * c)));
    NrPv x = sqr(D, sub(D, sqr(D, fma3(D, t, t, mul(D, w, K(D, -1 / c)))), t));
    NrPv xa = sqr(D, neg(D, lz));
    for (int i = 0; i < 2; i++) {
        NrPv corr = m_log1p(D, dvd(D, K(D, -0.5), mul(D, xa, xa)));
        xa = sqr(D, add(D, sub(D, neg(D, lz), m_log(D, mul(D, xa, K(D, 1.7724538509055159)))), corr));
    }
    x = sel(D, pand(D, pnot(D, small), cmp(D, NR_PC_LT, z, K(D, 1e-10))), xa, x);
    NrPv tiny = pand(D, pnot(D, small), cmp(D, NR_PC_LT, z, K(D, 0x1p-1000)));
    for (int i = 0; i < 4; i++) {
        NrPv lo = sub(D, erf_small(D, fmin_(D, x, K(D, 1.0))), a);
        NrPv hi = sub(D, z, m_erfc(D, x));
        NrPv f = sel(D, small, lo, hi);
        NrPv fp = exp_negsq(D, x, K(D, TWO_OVER_SQRTPI));
        NrPv u = dvd(D, f, fp);
        NrPv nx = sub(D, x, dvd(D, u, fma3(D, x, u, K(D, 1.0))));
        nx = sel(D, cmp(D, NR_PC_GT, fp, K(D, 0.0)), nx, x);
        /* the log form: g = log erfcx(x) - x^2 - log z, g' = -2 / (sqrt(pi) erfcx(x)) */
        NrPv ex = erfcx64(D, x);
        NrPv h = mul(D, x, x), hl = fma3(D, x, x, neg(D, h));
        NrPv g = sub(D, sub(D, sub(D, m_log(D, ex), lz), h), hl);
        NrPv tx = fma3(D, mul(D, g, ex), K(D, 0.88622692545275801), x); /* x - g / g' */
        x = sel(D, tiny, tx, nx);
    }
    return x;
}

static NrPv erfinv64(M *D, NrPv y) {
    NrPv a = fab(D, y);
    NrPv ac = fmin_(D, a, K(D, 0x1.fffffffffffffp-1));
    NrPv z = sub(D, K(D, 1.0), ac);
    NrPv x = erfinv_core(D, ac, z, cmp(D, NR_PC_LE, a, K(D, 0.5)));
    x = sel(D, cmp(D, NR_PC_EQ, a, K(D, 1.0)), K(D, INFINITY), x);
    x = csign(D, x, y);
    x = sel(D, cmp(D, NR_PC_EQ, a, K(D, 0.0)), y, x);
    x = sel(D, cmp(D, NR_PC_GT, a, K(D, 1.0)), nan_(D), x);
    return sel(D, isnan_(D, y), y, x);
}

static NrPv erfcinv64(M *D, NrPv z) {
    NrPv upper = cmp(D, NR_PC_GT, z, K(D, 1.0));
    NrPv zz = sel(D, upper, sub(D, K(D, 2.0), z), z); /* exact */
    NrPv zc = fmax_(D, zz, K(D, 0x1p-1074));
    NrPv a = sub(D, K(D, 1.0), zc);
    NrPv x = erfinv_core(D, a, zc, cmp(D, NR_PC_GE, zc, K(D, 0.5)));
    x = sel(D, cmp(D, NR_PC_EQ, zz, K(D, 0.0)), K(D, INFINITY), x);
    x = sel(D, upper, neg(D, x), x);
    x = sel(D, cmp(D, NR_PC_EQ, z, K(D, 1.0)), K(D, 0.0), x);
    x = sel(D, por(D, cmp(D, NR_PC_LT, z, K(D, 0.0)), cmp(D, NR_PC_GT, z, K(D, 2.0))), nan_(D), x);
    return sel(D, isnan_(D, z), z, x);
}

/* 0.5 erfc(-x / sqrt 2), the quotient's rounding corrected to first order. */
static NrPv normcdf64(M *D, NrPv x) {
    const double r = 0x1.6a09e667f3bcdp-1, rl = -0x1.bdd3413b26456p-55;
    NrPv nx = neg(D, x);
    NrPv t = mul(D, nx, K(D, r));
    NrPv tl = fma3(D, nx, K(D, rl), fma3(D, nx, K(D, r), neg(D, t)));
    tl = sel(D, isinf_(D, x), K(D, 0.0), tl);
    NrPv e = m_erfc(D, t);
    NrPv c = mul(D, exp_negsq(D, fmin_(D, fab(D, t), K(D, 30.0)), K(D, TWO_OVER_SQRTPI)), tl);
    NrPv y = mul(D, sub(D, e, c), K(D, 0.5));
    return sel(D, isnan_(D, x), x, y);
}

/* -sqrt(2) erfcinv(2p), the product with sqrt(2) in two parts. */
static NrPv normcdfinv64(M *D, NrPv p) {
    const double sh = -0x1.6a09e667f3bcdp+0, sl = -0x1.bdd3413b26456p-54;
    NrPv x = erfcinv64(D, add(D, p, p));
    NrPv h = mul(D, x, K(D, sh));
    NrPv y = add(D, h, fma3(D, x, K(D, sl), fma3(D, x, K(D, sh), neg(D, h))));
    return sel(D, isinf_(D, x), h, y);
}

/* exp(x^2) erfc(x): the erfc tail factor from 1/2 on, the asymptotic series
 * beyond 27, and exp(x^2) erfc(x) with x^2 split exactly below 1/2. */
static NrPv erfcx64(M *D, NrPv x) {
    NrPv q = erfc_q(D, fmin_(D, fmax_(D, x, K(D, 0.5)), K(D, 27.0)));
    NrPv xa = fmax_(D, x, K(D, 27.0));
    NrPv u = dvd(D, K(D, 1.0), xa);
    NrPv zz = mul(D, mul(D, u, u), K(D, 0.5));
    double coef[13];
    double term = 1;
    for (int k = 0; k < 13; k++) {
        coef[k] = term;
        term *= -(2 * k + 1);
    }
    NrPv ser = mul(D, mul(D, poly(D, zz, coef, 13), u), K(D, 0x1.20dd750429b6dp-1)); /* 1/sqrt(pi) */
    NrPv xs = fmin_(D, x, K(D, 0.5));
    NrPv h = mul(D, xs, xs), l = fma3(D, xs, xs, neg(D, h));
    NrPv low = mul(D, exp_full(D, h, l), m_erfc(D, xs));
    NrPv y = sel(D, cmp(D, NR_PC_LT, x, K(D, 0.5)), low, sel(D, cmp(D, NR_PC_LE, x, K(D, 27.0)), q, ser));
    y = sel(D, cmp(D, NR_PC_LT, x, K(D, -27.0)), K(D, INFINITY), y);
    y = sel(D, cmp(D, NR_PC_EQ, x, K(D, INFINITY)), K(D, 0.0), y);
    return sel(D, isnan_(D, x), x, y);
}

#define VIA64(name, fn64)                                                                                              \
    static NrPv name(M *m, NrPv x) {                                                                                   \
        M d = mk(m->p, true);                                                                                          \
        if (m->d) return fn64(&d, x);                                                                                  \
        return to32(m->p, fn64(&d, to64(m->p, x)));                                                                    \
    }
VIA64(m_erfinv, erfinv64)
VIA64(m_erfcinv, erfcinv64)
VIA64(m_normcdf, normcdf64)
VIA64(m_normcdfinv, normcdfinv64)
VIA64(m_erfcx, erfcx64)
#undef VIA64

/* --- reciprocals and norms ----------------------------------------------------------------------------------- */
static NrPv m_rcbrt(M *m, NrPv x) {
    M d = mk(m->p, true), *D = &d;
    NrPv x64 = m->d ? x : to64(m->p, x);
    NrPv y = dvd(D, K(D, 1.0), m_cbrt(D, x64));
    return m->d ? y : to32(m->p, y);
}

/* sqrt of the sum of n squares: f32 from exact f64 squares; f64 scaled by
 * the largest magnitude's exponent, as hypot.  rec: its reciprocal. */
static NrPv norm_n(M *m, const NrPv *x, int n, bool rec) {
    M d = mk(m->p, true), *D = &d;
    NrPv r;
    if (!m->d) {
        NrPv acc = K(D, 0.0);
        for (int i = 0; i < n; i++) {
            NrPv a = to64(m->p, x[i]);
            acc = fma3(D, a, a, acc);
        }
        NrPv s = sqr(D, acc);
        r = to32(m->p, rec ? dvd(D, K(D, 1.0), s) : s);
    } else {
        NrPv big = fab(D, x[0]);
        for (int i = 1; i < n; i++) big = fmax_(D, big, fab(D, x[i]));
        NrPv E = ushr(D, bits(D, big), 52);
        NrPv k = isub(D, KI(D, 1023), E);
        NrPv acc = K(D, 0.0);
        for (int i = 0; i < n; i++) {
            NrPv a = ldexp_(D, fab(D, x[i]), k);
            acc = fma3(D, a, a, acc);
        }
        NrPv s = sqr(D, acc);
        if (rec) r = ldexp_(D, dvd(D, K(D, 1.0), s), k);
        else r = ldexp_(D, s, isub(D, E, KI(D, 1023)));
        r = sel(D, cmp(D, NR_PC_EQ, big, K(D, 0.0)), K(D, rec ? INFINITY : 0.0), r);
    }
    NrPv inf = pnot(m, nr_pv_pred(true)), nan = inf;
    NrPv sum = x[0];
    for (int i = 0; i < n; i++) {
        inf = por(m, inf, isinf_(m, x[i]));
        nan = por(m, nan, isnan_(m, x[i]));
        if (i) sum = add(m, sum, x[i]);
    }
    r = sel(m, nan, sum, r);
    return sel(m, inf, K(m, rec ? 0.0 : INFINITY), r);
}

static NrPv m_rhypot(M *m, NrPv x, NrPv y) {
    NrPv v[2] = {x, y};
    return norm_n(m, v, 2, true);
}
static NrPv m_norm3d(M *m, NrPv a, NrPv b, NrPv c) {
    NrPv v[3] = {a, b, c};
    return norm_n(m, v, 3, false);
}
static NrPv m_rnorm3d(M *m, NrPv a, NrPv b, NrPv c) {
    NrPv v[3] = {a, b, c};
    return norm_n(m, v, 3, true);
}
static NrPv m_norm4d(M *m, const NrPv *x) { return norm_n(m, x, 4, false); }
static NrPv m_rnorm4d(M *m, const NrPv *x) { return norm_n(m, x, 4, true); }

static NrPv m_rsqrt(M *m, NrPv x);

/* f32 1 / sqrt(x) correctly rounded: the f64 quotient rounded to f32, then
 * moved by an ulp where the midpoint test m^2 x <> 1 (exact sign through
 * fma, m^2 exact) says the rounding went the wrong way. */
static NrPv m_rsqrt_rn(M *m, NrPv x) {
    if (m->d) return m_rsqrt(m, x);
    M d = mk(m->p, true), *D = &d;
    NrPv x64 = to64(m->p, x);
    NrPv y = to32(m->p, dvd(D, K(D, 1.0), sqr(D, x64)));
    NrPv yb = bits(m, y);
    NrPv up = fbits(m, iadd(m, yb, KI(m, 1))), dn = fbits(m, isub(m, yb, KI(m, 1)));
    NrPv y64 = to64(m->p, y);
    NrPv mhi = mul(D, add(D, y64, to64(m->p, up)), K(D, 0.5)), mlo = mul(D, add(D, y64, to64(m->p, dn)), K(D, 0.5));
    NrPv hi_lt = cmp(D, NR_PC_LT, fma3(D, mul(D, mhi, mhi), x64, K(D, -1.0)), K(D, 0.0)); /* 1/sqrt x > mhi */
    NrPv lo_gt = cmp(D, NR_PC_GT, fma3(D, mul(D, mlo, mlo), x64, K(D, -1.0)), K(D, 0.0)); /* 1/sqrt x < mlo */
    NrPv r = sel(m, hi_lt, up, sel(m, lo_gt, dn, y));
    NrPv fin = pand(m, cmp(m, NR_PC_GT, x, K(m, 0.0)), cmp(m, NR_PC_LT, x, K(m, INFINITY)));
    return sel(m, fin, r, y);
}

/* --- the rest, and the dispatch --------------------------------------------------------------------------------- */
static NrPv m_sqrt(M *m, NrPv x) { return sqr(m, x); }
/* 1 / sqrt(x), then one Newton step with the exact residual 1 - x y^2. */
static NrPv m_rsqrt(M *m, NrPv x) {
    NrPv y = dvd(m, K(m, 1.0), sqr(m, x));
    NrPv u = mul(m, y, y), ul = fma3(m, y, y, neg(m, u));
    NrPv e = fma3(m, neg(m, x), ul, fma3(m, neg(m, x), u, K(m, 1.0)));
    NrPv r = fma3(m, mul(m, y, K(m, 0.5)), e, y);
    /* (below the normal range y^2 overflows: keep the first quotient) */
    NrPv fin = pand(m, cmp(m, NR_PC_GE, x, K(m, m->d ? 0x1p-1022 : 0x1p-126)), cmp(m, NR_PC_LT, x, K(m, INFINITY)));
    return sel(m, fin, r, y);
}
static NrPv m_rcp(M *m, NrPv x) { return dvd(m, K(m, 1.0), x); }
static NrPv m_floor(M *m, NrPv x) { return nr_pb_un(m->p, NR_PO_FLOOR, m->t, x); }
static NrPv m_ceil(M *m, NrPv x) { return nr_pb_un(m->p, NR_PO_CEIL, m->t, x); }
static NrPv m_trunc(M *m, NrPv x) { return trn(m, x); }
static NrPv m_rint(M *m, NrPv x) { return rnd(m, x); }
static NrPv m_abs(M *m, NrPv x) { return fab(m, x); }
static NrPv m_neg(M *m, NrPv x) { return neg(m, x); }
static NrPv m_copysign(M *m, NrPv x, NrPv y) { return csign(m, x, y); }
static NrPv m_fmax(M *m, NrPv x, NrPv y) { return fmax_(m, x, y); }
static NrPv m_fmin(M *m, NrPv x, NrPv y) { return fmin_(m, x, y); }

typedef struct MathFn {
    const char *name;
    NrPv (*f1)(M *m, NrPv x);
    NrPv (*f2)(M *m, NrPv x, NrPv y);
    NrPv (*f3)(M *m, NrPv x, NrPv y, NrPv z);
    NrPv (*f4)(M *m, const NrPv *x);
} MathFn;

static const MathFn fns[] = {
    {"exp", m_exp, NULL, NULL, NULL},       {"exp2", m_exp2, NULL, NULL, NULL},     {"exp10", m_exp10, NULL, NULL, NULL},   {"expm1", m_expm1, NULL, NULL, NULL},
    {"log", m_log, NULL, NULL, NULL},       {"log2", m_log2, NULL, NULL, NULL},     {"log10", m_log10, NULL, NULL, NULL},   {"log1p", m_log1p, NULL, NULL, NULL},
    {"sqrt", m_sqrt, NULL, NULL, NULL},     {"sqrt_rn", m_sqrt, NULL, NULL, NULL},  {"rsqrt", m_rsqrt, NULL, NULL, NULL},   {"cbrt", m_cbrt, NULL, NULL, NULL},
    {"rcp", m_rcp, NULL, NULL, NULL},       {"sin", m_sin, NULL, NULL, NULL},       {"cos", m_cos, NULL, NULL, NULL},       {"tan", m_tan, NULL, NULL, NULL},
    {"asin", m_asin, NULL, NULL, NULL},     {"acos", m_acos, NULL, NULL, NULL},     {"atan", m_atan, NULL, NULL, NULL},     {"sinh", m_sinh, NULL, NULL, NULL},
    {"cosh", m_cosh, NULL, NULL, NULL},     {"tanh", m_tanh, NULL, NULL, NULL},     {"asinh", m_asinh, NULL, NULL, NULL},   {"acosh", m_acosh, NULL, NULL, NULL},
    {"atanh", m_atanh, NULL, NULL, NULL},   {"erf", m_erf, NULL, NULL, NULL},       {"erfc", m_erfc, NULL, NULL, NULL},     {"lgamma", m_lgamma, NULL, NULL, NULL},
    {"tgamma", m_tgamma, NULL, NULL, NULL}, {"floor", m_floor, NULL, NULL, NULL},   {"ceil", m_ceil, NULL, NULL, NULL},     {"trunc", m_trunc, NULL, NULL, NULL},
    {"round", m_round, NULL, NULL, NULL},   {"rint", m_rint, NULL, NULL, NULL},     {"nearbyint", m_rint, NULL, NULL, NULL}, {"abs", m_abs, NULL, NULL, NULL},
    {"fabs", m_abs, NULL, NULL, NULL},      {"neg", m_neg, NULL, NULL, NULL},       {"atan2", NULL, m_atan2, NULL, NULL},   {"pow", NULL, m_pow, NULL, NULL},
    {"hypot", NULL, m_hypot, NULL, NULL},   {"fmod", NULL, m_fmod, NULL, NULL},     {"remainder", NULL, m_remainder, NULL, NULL},
    {"copysign", NULL, m_copysign, NULL, NULL}, {"fdim", NULL, m_fdim, NULL, NULL}, {"fmax", NULL, m_fmax, NULL, NULL},     {"fmin", NULL, m_fmin, NULL, NULL},
    {"nextafter", NULL, m_nextafter, NULL, NULL},
    {"logb", m_logb, NULL, NULL, NULL},     {"ldexp", NULL, m_ldexp, NULL, NULL},   {"sinpi", m_sinpi, NULL, NULL, NULL},   {"cospi", m_cospi, NULL, NULL, NULL},
    {"erfinv", m_erfinv, NULL, NULL, NULL}, {"erfcinv", m_erfcinv, NULL, NULL, NULL}, {"normcdf", m_normcdf, NULL, NULL, NULL},
    {"normcdfinv", m_normcdfinv, NULL, NULL, NULL}, {"erfcx", m_erfcx, NULL, NULL, NULL}, {"rcbrt", m_rcbrt, NULL, NULL, NULL},
    {"rhypot", NULL, m_rhypot, NULL, NULL}, {"rsqrt_rn", m_rsqrt_rn, NULL, NULL, NULL},
    {"norm3d", NULL, NULL, m_norm3d, NULL}, {"rnorm3d", NULL, NULL, m_rnorm3d, NULL},
    {"norm4d", NULL, NULL, NULL, m_norm4d}, {"rnorm4d", NULL, NULL, NULL, m_rnorm4d},
};

const char *const nr_pm_names[] = {
    "exp",   "exp2",  "exp10", "expm1", "log",    "log2",   "log10", "log1p", "sqrt", "sqrt_rn", "rsqrt",     "cbrt",
    "rcp",   "sin",   "cos",   "tan",   "asin",   "acos",   "atan",  "sinh",  "cosh", "tanh",    "asinh",     "acosh",
    "atanh", "erf",   "erfc",  "lgamma", "tgamma", "floor", "ceil",  "trunc", "round", "rint",   "nearbyint", "abs",
    "fabs",  "neg",   "atan2", "pow",   "hypot",  "fmod",   "remainder", "copysign", "fdim", "fmax", "fmin", "nextafter",
    "fma",   "logb",  "ldexp", "sinpi", "cospi", "erfinv", "erfcinv", "normcdf", "normcdfinv", "erfcx", "rcbrt",
    "rhypot", "rsqrt_rn", "norm3d", "rnorm3d", "norm4d", "rnorm4d",
    "add_rn", "add_rz", "add_rd", "add_ru", "sub_rn", "sub_rz", "sub_rd", "sub_ru", "mul_rn", "mul_rz", "mul_rd",
    "mul_ru", "div_rn", "div_rz", "div_rd", "div_ru", "fma_rn", "fma_rz", "fma_rd", "fma_ru", "sqrt_rz", "sqrt_rd",
    "sqrt_ru", "rcp_rn", "rcp_rz", "rcp_rd", "rcp_ru", NULL};

/* add_rz, div_ru, sqrt_rd, ...: one instruction in that rounding mode. */
static bool rounded_call(NrPtx *p, const char *name, NrPk k, int n, const NrPv *x, NrPv *out) {
    static const char *const ops[] = {"add", "sub", "mul", "div", "fma", "sqrt", "rcp"};
    static const int nargs[] = {2, 2, 2, 2, 3, 1, 1};
    static const char *const sfx[] = {"rn", "rz", "rd", "ru"};
    const char *us = strchr(name, '_');
    if (!us) return false;
    for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
        if (strlen(ops[i]) != (size_t)(us - name) || strncmp(name, ops[i], (size_t)(us - name)) != 0) continue;
        for (int j = 0; j < 4; j++)
            if (strcmp(us + 1, sfx[j]) == 0 && n == nargs[i]) {
                *out = nr_pb_rounded(p, ops[i], j, k == NR_PK_F64 ? NR_PT_F64 : NR_PT_F32, x);
                return true;
            }
    }
    return false;
}

bool nr_pm_call(NrPtx *p, const char *name, NrPk k, int n, const NrPv *x, NrPv *out) {
    if (!name) return false;
    if (strncmp(name, "__nv_", 5) == 0) name += 5;
    M m = mk(p, k == NR_PK_F64);
    if (strcmp(name, "fma") == 0 && n == 3) {
        *out = fma3(&m, x[0], x[1], x[2]);
        return true;
    }
    for (size_t i = 0; i < NR_COUNTOF(fns); i++) {
        if (strcmp(fns[i].name, name) != 0) continue;
        if (fns[i].f1 && n == 1) {
            *out = fns[i].f1(&m, x[0]);
            return true;
        }
        if (fns[i].f2 && n == 2) {
            *out = fns[i].f2(&m, x[0], x[1]);
            return true;
        }
        if (fns[i].f3 && n == 3) {
            *out = fns[i].f3(&m, x[0], x[1], x[2]);
            return true;
        }
        if (fns[i].f4 && n == 4) {
            *out = fns[i].f4(&m, x);
            return true;
        }
        return false;
    }
    return rounded_call(p, name, k, n, x, out);
}
