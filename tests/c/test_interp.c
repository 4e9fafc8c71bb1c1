/* test_interp.c - the reference interpreter against independent references.
 *
 * Kernels are built with the IR builder (ir.h).  Inputs are fresh random
 * values (seeded from the clock; NR_TEST_SEED=n repeats a run, and the seed
 * is printed with the first failure); outputs are poisoned before each run.
 * Integer and narrow-float results are compared bit for bit with references
 * computed here in 128-bit integers or doubles; libm results within a
 * relative tolerance of the double-precision function. */
#include "fp.h"
#include "interp.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NR_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* --- checking ----------------------------------------------------------------------------------- */
static int failures, checks;
static uint64_t seed;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            if (failures++ == 0) printf("seed %llu\n", (unsigned long long)seed);                                      \
            if (failures <= 60) {                                                                                      \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd_unit(void) { return (double)(rnd() >> 11) * 0x1p-53; }

/* --- dtypes -------------------------------------------------------------------------------------- */
static int esz(NrDtype dt) { return nr_dtype_info[dt].bytes; }
static int bits_of(NrDtype dt) { return nr_dtype_info[dt].bits; }
static bool is_f(NrDtype dt) { return nr_dt_is_float(dt); }
static bool is_s(NrDtype dt) { return nr_dt_is_signed(dt); }
static const char *dn(NrDtype dt) { return nr_dtype_info[dt].ir; }

static NrFpFormat fmt_of(NrDtype dt) {
    switch (dt) {
    case NR_DT_F8E4NV: return NR_FPF_F8E4NV;
    case NR_DT_F8E5: return NR_FPF_F8E5;
    case NR_DT_F16: return NR_FPF_F16;
    case NR_DT_BF16: return NR_FPF_BF16;
    default: return NR_FPF_F32;
    }
}

/* The exact value of float bits of dt. */
static double fval(NrDtype dt, uint64_t b) {
    switch (dt) {
    case NR_DT_F8E4NV: return nr_f8e4nv_to_f32((uint8_t)b);
    case NR_DT_F8E5: return nr_f8e5_to_f32((uint8_t)b);
    case NR_DT_F16: return nr_f16_to_f32((uint16_t)b);
    case NR_DT_BF16: return nr_bf16_to_f32((uint16_t)b);
    case NR_DT_F32: {
        float f;
        uint32_t u = (uint32_t)b;
        memcpy(&f, &u, 4);
        return f;
    }
    default: {
        double d;
        memcpy(&d, &b, 8);
        return d;
    }
    }
}

/* A double rounded once to dt (RNE; fp8 saturating). */
static uint64_t fenc(NrDtype dt, double v) {
    if (dt == NR_DT_F64) {
        uint64_t b;
        memcpy(&b, &v, 8);
        return b;
    }
    return nr_fp_round(v, fmt_of(dt), false);
}

/* Sign- or zero-extended value of integer bits of dt. */
static int64_t ival(NrDtype dt, uint64_t b) {
    int w = bits_of(dt);
    if (dt == NR_DT_I1) return (int64_t)(b & 1);
    if (w == 64) return (int64_t)b;
    b &= (UINT64_C(1) << w) - 1;
    if (is_s(dt) && (b >> (w - 1))) return (int64_t)(b | ~((UINT64_C(1) << w) - 1));
    return (int64_t)b;
}

/* The value of integer bits of dt, exactly (u64 included). */
static __int128 iv128(NrDtype dt, uint64_t b) {
    if (dt == NR_DT_U64) return (__int128)(unsigned __int128)b;
    return ival(dt, b);
}

/* An integer wrapped to dt's width, as bits. */
static uint64_t iwrap(NrDtype dt, __int128 v) {
    int w = bits_of(dt);
    uint64_t u = (uint64_t)(unsigned __int128)v;
    return w == 64 ? u : u & ((UINT64_C(1) << w) - 1);
}

static bool same_bits(NrDtype dt, uint64_t a, uint64_t b) {
    if (is_f(dt) && isnan(fval(dt, a)) && isnan(fval(dt, b))) return true;
    return a == b;
}

/* Random element bits: a mix of special and random values. */
static uint64_t rand_elem(NrDtype dt) {
    int w = bits_of(dt);
    uint64_t mask = w == 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    if (dt == NR_DT_I1) return rnd() & 1;
    if (is_f(dt)) {
        static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY,
                                         NAN, 0.5,  3.0, -2.5, 1e-30,    65504.0};
        if (rnd() % 8 == 0) return fenc(dt, special[rnd() % NR_COUNTOF(special)]);
        if (rnd() % 2 == 0) return fenc(dt, (rnd_unit() - 0.5) * 200.0);
        return rnd() & mask;
    }
    if (rnd() % 6 == 0) {
        uint64_t sp[] = {0, 1, mask, mask >> 1, (mask >> 1) + 1, 2, mask - 1};
        return sp[rnd() % 7] & mask;
    }
    if (rnd() % 3 == 0) return (uint64_t)((int64_t)(rnd() % 21) - 10) & mask;
    return rnd() & mask;
}

static void *pack(NrDtype dt, const uint64_t *v, int n) {
    int es = esz(dt);
    unsigned char *p = malloc((size_t)(n > 0 ? n : 1) * (size_t)es);
    for (int i = 0; i < n; i++) memcpy(p + (size_t)i * es, &v[i], (size_t)es); /* little-endian host */
    return p;
}
static void unpack(NrDtype dt, const void *p, uint64_t *v, int n) {
    int es = esz(dt);
    for (int i = 0; i < n; i++) {
        v[i] = 0;
        memcpy(&v[i], (const unsigned char *)p + (size_t)i * es, (size_t)es);
    }
}

/* --- building kernels ------------------------------------------------------------------------------- */
typedef NrValId V;

typedef struct Kb {
    NrModule *m;
    NrFunc *f;
    NrBuilder b;
    V arg[16];
} Kb;

static Kb kb_begin(NrModule *m, const char *name, int nargs, const NrTypeId *types, const char *const *names) {
    Kb k;
    memset(&k, 0, sizeof k);
    k.m = m;
    k.f = nr_func_new(m, name, nargs, types, 0, NULL);
    k.f->is_kernel = true;
    for (int i = 0; i < nargs; i++) {
        k.arg[i] = k.f->blocks[k.f->body].args[i];
        if (names) {
            k.f->params[i].name = names[i];
            k.f->vals[k.arg[i]].name = names[i];
        }
    }
    k.b = nr_builder_at_end(k.f, k.f->body);
    return k;
}

static NrTypeId ts(Kb *k, NrDtype dt) { return nr_type_scalar(k->m, dt); }
static NrTypeId tb(Kb *k, NrTypeId elem, int rank, const int32_t *shape) {
    return nr_type_block(k->m, elem, rank, shape);
}
static NrTypeId tb1(Kb *k, NrTypeId elem, int n) { return tb(k, elem, 1, (int32_t[]){n}); }
static NrTypeId tv(Kb *k, V v) { return nr_val_type(k->f, v); }
static const NrType *ty(Kb *k, V v) { return nr_type(k->m, tv(k, v)); }
static NrOpId def(Kb *k, V v) { return k->f->vals[v].def; }

static V cI(Kb *k, NrTypeId t, int64_t v) { return nr_build_const_int(&k->b, t, v); }
static V cF(Kb *k, NrTypeId t, double v) { return nr_build_const_float(&k->b, t, v); }
static V op(Kb *k, NrOpcode opc, NrTypeId rt, int n, ...) {
    V xs[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) xs[i] = va_arg(ap, V);
    va_end(ap);
    return nr_build1(&k->b, opc, rt, n, xs);
}
static V bin(Kb *k, NrOpcode opc, V x, V y) { return nr_build_binary(&k->b, opc, x, y); }
static V sattr(Kb *k, V v, NrAttrName a, const char *s) {
    nr_op_set_str(k->f, def(k, v), a, s);
    return v;
}
static V iattr(Kb *k, V v, NrAttrName a, int64_t x) {
    nr_op_set_int(k->f, def(k, v), a, x);
    return v;
}
static V arange(Kb *k, int n) {
    V r = op(k, NR_OP_ARANGE, tb1(k, ts(k, NR_DT_I32), n), 0);
    iattr(k, r, NR_A_START, 0);
    return iattr(k, r, NR_A_END, n);
}
static V splat(Kb *k, V x, NrTypeId t) { return op(k, NR_OP_SPLAT, t, 1, x); }
static V bcast(Kb *k, V x, NrTypeId t) { return op(k, NR_OP_BROADCAST, t, 1, x); }
static V reshape(Kb *k, V x, int rank, const int32_t *shape) {
    return op(k, NR_OP_RESHAPE, tb(k, nr_type_elem(k->m, tv(k, x)), rank, shape), 1, x);
}
static V expand(Kb *k, V x, int axis) {
    const NrType *t = ty(k, x);
    int32_t s[NR_MAX_RANK];
    int r = 0;
    for (int i = 0; i <= t->rank; i++) s[i] = i == axis ? 1 : t->shape[r++];
    V v = op(k, NR_OP_EXPAND_DIMS, tb(k, nr_type_elem(k->m, tv(k, x)), t->rank + 1, s), 1, x);
    return iattr(k, v, NR_A_AXIS, axis);
}
static V addptr(Kb *k, V p, V off) { return op(k, NR_OP_ADDPTR, tv(k, p), 2, p, off); }
/* The pointee type of pointer (block) p. */
static NrTypeId deref(Kb *k, V p) {
    NrType t = *ty(k, p);
    t.ptr--;
    t.layout = 0;
    return nr_type_intern(k->m, &t);
}
static V load(Kb *k, V p, V mask, V other) { return op(k, NR_OP_LOAD, deref(k, p), 3, p, mask, other); }
static void store(Kb *k, V p, V v, V mask) {
    V xs[3] = {p, v, mask};
    nr_build(&k->b, NR_OP_STORE, 3, xs, 0, NULL, 0);
}
static V cmp(Kb *k, const char *pred, V x, V y) {
    V r = op(k, NR_OP_CMP, nr_type_with_dtype(k->m, tv(k, x), NR_DT_I1), 2, x, y);
    return sattr(k, r, NR_A_PRED, pred);
}
static V cast(Kb *k, V x, NrDtype dt) { return op(k, NR_OP_CAST, nr_type_with_dtype(k->m, tv(k, x), dt), 1, x); }
static void ret(Kb *k) { nr_build(&k->b, NR_OP_RETURN, 0, NULL, 0, NULL, 0); }
/* The pointer block p + arange(n) (n > 0), or p itself for n == 0. */
static V ptrs(Kb *k, V p, int n) {
    if (n == 0) return p;
    return addptr(k, splat(k, p, tb1(k, tv(k, p), n)), arange(k, n));
}
/* The pointer block p + [0, 1, ..., numel) laid out in `shape`. */
static V ptrs_nd(Kb *k, V p, int rank, const int32_t *shape) {
    int n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    V offs = reshape(k, arange(k, n), rank, shape);
    return addptr(k, splat(k, p, tb(k, tv(k, p), rank, shape)), offs);
}

/* --- running ---------------------------------------------------------------------------------------- */
typedef struct Run {
    NrDiags d;
    bool ok;
    const char *msg; /* first diagnostic, or "" */
    NrLoc loc;
} Run;

static NrInterpArg buf(void *p, size_t bytes, const char *name) {
    NrInterpArg a = {NR_IA_BUFFER, p, bytes, name, 0, 0};
    return a;
}
static NrInterpArg iarg(int64_t v) {
    NrInterpArg a = {NR_IA_INT, NULL, 0, NULL, v, 0};
    return a;
}

static Run launch(Kb *k, uint32_t gx, uint32_t gy, uint32_t gz, NrInterpArg *args, int nargs, FILE *out,
                  uint64_t max_steps) {
    Run r;
    nr_diags_init(&r.d, k->m->arena, &k->m->sources);
    uint32_t grid[3] = {gx, gy, gz};
    NrInterpOptions o = {out, max_steps};
    /* Every kernel built here must be IR the verifier accepts. */
    NrDiags vd;
    nr_diags_init(&vd, k->m->arena, &k->m->sources);
    CHECK(nr_module_verify(k->m, &vd), "kernel %s does not verify:\n%s", k->f->name,
          nr_diags_render(k->m->arena, &vd));
    r.ok = nr_interp_launch(k->f, grid, args, nargs, &o, &r.d);
    r.msg = r.d.n ? r.d.v[0].msg : "";
    r.loc = r.d.n ? r.d.v[0].loc : (NrLoc){0, 0, 0};
    return r;
}

/* --- elementwise harness --------------------------------------------------------------------------- */
enum { EW_N = 256 };

typedef struct Ew {
    NrOpcode opc;
    const char *sattr; /* string attribute value (pred / nan / rounding / fn), or NULL */
    NrAttrName aname;
} Ew;

typedef V (*EwBuild)(Kb *k, const V *x, int nin, NrDtype rdt, const Ew *e);

/* out[i] = f(x0[i], x1[i], x2[i]) on blocks of EW_N; in: nin arrays of bits of dt. */
static bool run_ew(NrDtype dt, NrDtype rdt, int nin, EwBuild fn, const Ew *e, uint64_t *const in[3], uint64_t *out) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[4];
    for (int i = 0; i < 4; i++) types[i] = nr_type_ptr(m, i < 3 ? dt : rdt, 1);
    static const char *const names[4] = {"x", "y", "z", "out"};
    Kb k = kb_begin(m, "ew", 4, types, names);
    V x[3];
    for (int i = 0; i < nin; i++) x[i] = load(&k, ptrs(&k, k.arg[i], EW_N), NR_NONE, NR_NONE);
    V r = fn(&k, x, nin, rdt, e);
    store(&k, ptrs(&k, k.arg[3], EW_N), r, NR_NONE);
    ret(&k);
    void *bx[3];
    NrInterpArg args[4];
    for (int i = 0; i < 3; i++) {
        bx[i] = pack(dt, in[i < nin ? i : 0], EW_N);
        args[i] = buf(bx[i], (size_t)EW_N * esz(dt), names[i]);
    }
    uint64_t poison[EW_N];
    for (int i = 0; i < EW_N; i++) poison[i] = 0xa5a5a5a5a5a5a5a5ull;
    void *bo = pack(rdt, poison, EW_N);
    args[3] = buf(bo, (size_t)EW_N * esz(rdt), "out");
    Run res = launch(&k, 1, 1, 1, args, 4, NULL, 0);
    CHECK(res.ok, "%s on %s: launch failed: %s", nr_op_info[e->opc].name, dn(dt), res.msg);
    unpack(rdt, bo, out, EW_N);
    for (int i = 0; i < 3; i++) free(bx[i]);
    free(bo);
    nr_module_free(m);
    return res.ok;
}

static V build_op(Kb *k, const V *x, int nin, NrDtype rdt, const Ew *e) {
    NrTypeId rt = nr_type_with_dtype(k->m, tv(k, x[0]), rdt);
    V xs[3] = {x[0], nin > 1 ? x[1] : 0, nin > 2 ? x[2] : 0};
    V r = nr_build1(&k->b, e->opc, rt, nin, xs);
    if (e->sattr) sattr(k, r, e->aname, e->sattr);
    return r;
}

/* --- integer elementwise ------------------------------------------------------------------------------ */
static const NrDtype int_types[] = {NR_DT_I8, NR_DT_I16, NR_DT_I32, NR_DT_I64,
                                    NR_DT_U8, NR_DT_U16, NR_DT_U32, NR_DT_U64};

/* Reference integer op on extended values (128-bit arithmetic), wrapped to dt. */
static uint64_t ref_int(NrOpcode opc, NrDtype dt, uint64_t xb, uint64_t yb) {
    int w = bits_of(dt);
    __int128 x = iv128(dt, xb), y = iv128(dt, yb);
    bool sg = is_s(dt);
    __int128 mn = sg ? -((__int128)1 << (w - 1)) : 0;
    unsigned __int128 ux = (uint64_t)iwrap(dt, x), uy = (uint64_t)iwrap(dt, y);
    uint64_t sh = (uint64_t)iwrap(dt, y); /* the shift amount as unsigned */
    switch (opc) {
    case NR_OP_ADD: return iwrap(dt, x + y);
    case NR_OP_SUB: return iwrap(dt, x - y);
    case NR_OP_MUL: return iwrap(dt, (__int128)((unsigned __int128)x * (unsigned __int128)y));
    case NR_OP_DIV:
        if (y == 0) return iwrap(dt, -1);
        if (sg && x == mn && y == -1) return iwrap(dt, mn);
        return iwrap(dt, x / y);
    case NR_OP_REM:
        if (y == 0) return iwrap(dt, x);
        if (sg && x == mn && y == -1) return 0;
        return iwrap(dt, x % y);
    case NR_OP_AND: return iwrap(dt, x & y);
    case NR_OP_OR: return iwrap(dt, x | y);
    case NR_OP_XOR: return iwrap(dt, x ^ y);
    case NR_OP_SHL: return sh >= (uint64_t)w ? 0 : iwrap(dt, (__int128)(ux << sh));
    case NR_OP_SHR:
        if (sh >= (uint64_t)w) return sg && x < 0 ? iwrap(dt, -1) : 0;
        return sg ? iwrap(dt, x >> sh) : iwrap(dt, (__int128)(ux >> sh));
    case NR_OP_MAX: return iwrap(dt, x > y ? x : y);
    case NR_OP_MIN: return iwrap(dt, x < y ? x : y);
    case NR_OP_UMULHI: return iwrap(dt, (__int128)((ux * uy) >> w));
    case NR_OP_NEG: return iwrap(dt, -x);
    case NR_OP_ABS: return iwrap(dt, x < 0 ? -x : x);
    default: return 0;
    }
}

static void test_int_elementwise(void) {
    static const NrOpcode ops2[] = {NR_OP_ADD, NR_OP_SUB, NR_OP_MUL,    NR_OP_DIV, NR_OP_REM,
                                    NR_OP_AND, NR_OP_OR,  NR_OP_XOR,    NR_OP_SHL, NR_OP_SHR,
                                    NR_OP_MAX, NR_OP_MIN, NR_OP_UMULHI, NR_OP_NEG, NR_OP_ABS};
    uint64_t x[EW_N], y[EW_N], out[EW_N];
    uint64_t *in[3] = {x, y, x};
    for (size_t t = 0; t < NR_COUNTOF(int_types); t++) {
        NrDtype dt = int_types[t];
        for (size_t o = 0; o < NR_COUNTOF(ops2); o++) {
            NrOpcode opc = ops2[o];
            int nin = opc == NR_OP_NEG || opc == NR_OP_ABS ? 1 : 2;
            for (int i = 0; i < EW_N; i++) {
                x[i] = rand_elem(dt);
                y[i] = rand_elem(dt);
                if ((opc == NR_OP_SHL || opc == NR_OP_SHR) && i % 2) /* amounts around the width */
                    y[i] = iwrap(dt, (int64_t)(rnd() % (uint64_t)(bits_of(dt) + 8)) - 4);
            }
            Ew e = {opc, NULL, 0};
            if (!run_ew(dt, dt, nin, build_op, &e, in, out)) continue;
            int bad = 0;
            for (int i = 0; i < EW_N && bad < 3; i++) {
                uint64_t want = ref_int(opc, dt, x[i], nin > 1 ? y[i] : 0);
                if (want != out[i]) {
                    bad++;
                    CHECK(0, "%s %s(0x%" PRIx64 ", 0x%" PRIx64 "): want 0x%" PRIx64 ", got 0x%" PRIx64, dn(dt),
                          nr_op_info[opc].name, x[i], y[i], want, out[i]);
                }
            }
            checks++;
        }
    }
    /* i1: the bitwise ops, max/min (unsigned 0 < 1) and wrapping add. */
    static const NrOpcode bops[] = {NR_OP_AND, NR_OP_OR, NR_OP_XOR, NR_OP_MAX, NR_OP_MIN, NR_OP_ADD};
    for (size_t o = 0; o < NR_COUNTOF(bops); o++) {
        for (int i = 0; i < EW_N; i++) {
            x[i] = rnd() & 1;
            y[i] = rnd() & 1;
        }
        Ew e = {bops[o], NULL, 0};
        if (!run_ew(NR_DT_I1, NR_DT_I1, 2, build_op, &e, in, out)) continue;
        for (int i = 0; i < EW_N; i++) {
            uint64_t want = bops[o] == NR_OP_AND                           ? x[i] & y[i]
                            : bops[o] == NR_OP_OR                          ? x[i] | y[i]
                            : bops[o] == NR_OP_XOR || bops[o] == NR_OP_ADD ? x[i] ^ y[i]
                            : bops[o] == NR_OP_MAX                         ? (x[i] | y[i])
                                                                           : (x[i] & y[i]);
            CHECK(out[i] == want, "i1 %s(%d, %d) = %d", nr_op_info[bops[o]].name, (int)x[i], (int)y[i], (int)out[i]);
        }
    }
}

/* Known values of division, remainder and shifts, written out by hand. */
static void test_int_known(void) {
    struct {
        NrOpcode opc;
        NrDtype dt;
        int64_t x, y, want;
    } cases[] = {
        {NR_OP_DIV, NR_DT_I32, -7, 2, -3},
        {NR_OP_REM, NR_DT_I32, -7, 2, -1},
        {NR_OP_REM, NR_DT_I32, 7, -2, 1},
        {NR_OP_DIV, NR_DT_I32, 7, -2, -3},
        {NR_OP_DIV, NR_DT_I32, 5, 0, -1},
        {NR_OP_REM, NR_DT_I32, 5, 0, 5},
        {NR_OP_DIV, NR_DT_I32, INT32_MIN, -1, INT32_MIN},
        {NR_OP_REM, NR_DT_I32, INT32_MIN, -1, 0},
        {NR_OP_DIV, NR_DT_I64, INT64_MIN, -1, INT64_MIN},
        {NR_OP_REM, NR_DT_I64, INT64_MIN, -1, 0},
        {NR_OP_DIV, NR_DT_U32, 7, 0, 0xffffffff},
        {NR_OP_REM, NR_DT_U32, 7, 0, 7},
        {NR_OP_DIV, NR_DT_U8, 200, 7, 28},
        {NR_OP_DIV, NR_DT_I8, -128, -1, -128},
        {NR_OP_SHL, NR_DT_I32, 1, 31, INT32_MIN},
        {NR_OP_SHL, NR_DT_I32, 1, 32, 0},
        {NR_OP_SHL, NR_DT_I32, 1, -1, 0},
        {NR_OP_SHR, NR_DT_I32, -8, 1, -4},
        {NR_OP_SHR, NR_DT_I32, -8, 100, -1},
        {NR_OP_SHR, NR_DT_I32, 8, 100, 0},
        {NR_OP_SHR, NR_DT_U32, 0x80000000, 31, 1},
        {NR_OP_SHR, NR_DT_U32, 0x80000000, 32, 0},
        {NR_OP_SHR, NR_DT_I16, -1, 15, -1},
        {NR_OP_SHL, NR_DT_U64, 3, 63, INT64_MIN},
        {NR_OP_ABS, NR_DT_I32, INT32_MIN, 0, INT32_MIN},
        {NR_OP_NEG, NR_DT_I8, -128, 0, -128},
        {NR_OP_UMULHI, NR_DT_I32, -1, -1, -2},
        {NR_OP_UMULHI, NR_DT_U64, -1, 2, 1},
        {NR_OP_MAX, NR_DT_U32, -1, 1, 0xffffffff},
        {NR_OP_MAX, NR_DT_I32, -1, 1, 1},
    };
    for (size_t c = 0; c < NR_COUNTOF(cases); c++) {
        NrDtype dt = cases[c].dt;
        uint64_t x[EW_N], y[EW_N], out[EW_N];
        uint64_t *in[3] = {x, y, x};
        for (int i = 0; i < EW_N; i++) {
            x[i] = iwrap(dt, cases[c].x);
            y[i] = iwrap(dt, cases[c].y);
        }
        int nin = cases[c].opc == NR_OP_ABS || cases[c].opc == NR_OP_NEG ? 1 : 2;
        Ew e = {cases[c].opc, NULL, 0};
        if (!run_ew(dt, dt, nin, build_op, &e, in, out)) continue;
        CHECK(ival(dt, out[0]) == cases[c].want && out[7] == out[0],
              "%s %s(%" PRId64 ", %" PRId64 ") = %" PRId64 ", want %" PRId64, dn(dt), nr_op_info[cases[c].opc].name,
              cases[c].x, cases[c].y, ival(dt, out[0]), cases[c].want);
    }
}

/* --- float elementwise ---------------------------------------------------------------------------------- */
static const NrDtype float_types[] = {NR_DT_F16, NR_DT_BF16, NR_DT_F32, NR_DT_F64, NR_DT_F8E4NV, NR_DT_F8E5};

static double maxnum(double x, double y, bool all) {
    if (isnan(x) || isnan(y)) return all ? NAN : isnan(x) ? y : x;
    if (x == y) return signbit(x) ? y : x;
    return x > y ? x : y;
}
static double minnum(double x, double y, bool all) {
    if (isnan(x) || isnan(y)) return all ? NAN : isnan(x) ? y : x;
    if (x == y) return signbit(x) ? x : y;
    return x < y ? x : y;
}

/* Exact references: + - * / and fmod computed in double (exact or with an
 * innocuous double rounding) and rounded once to the dtype.  f32 rem is
 * fmod, which is exact. */
static uint64_t ref_float(NrOpcode opc, NrDtype dt, uint64_t xb, uint64_t yb, uint64_t zb, bool all) {
    double x = fval(dt, xb), y = fval(dt, yb), z = fval(dt, zb), r;
    switch (opc) {
    case NR_OP_ADD: r = x + y; break;
    case NR_OP_SUB: r = x - y; break;
    case NR_OP_MUL: r = x * y; break;
    case NR_OP_DIV:
    case NR_OP_DIV_RN: r = x / y; break;
    case NR_OP_REM: r = fmod(x, y); break;
    case NR_OP_MAX: r = maxnum(x, y, all); break;
    case NR_OP_MIN: r = minnum(x, y, all); break;
    case NR_OP_NEG: r = -x; break;
    case NR_OP_ABS: r = fabs(x); break;
    case NR_OP_FMA: r = fma(x, y, z); break;
    case NR_OP_SQRT_RN: r = sqrt(x); break;
    case NR_OP_FLOOR: r = floor(x); break;
    case NR_OP_CEIL: r = ceil(x); break;
    default: r = 0; break;
    }
    if (dt == NR_DT_F64 && opc == NR_OP_FMA) return fenc(dt, fma(x, y, z));
    return fenc(dt, r);
}

static void test_float_elementwise(void) {
    static const NrOpcode ops[] = {NR_OP_ADD, NR_OP_SUB, NR_OP_MUL, NR_OP_DIV, NR_OP_DIV_RN,  NR_OP_REM,   NR_OP_MAX,
                                   NR_OP_MIN, NR_OP_NEG, NR_OP_ABS, NR_OP_FMA, NR_OP_SQRT_RN, NR_OP_FLOOR, NR_OP_CEIL};
    uint64_t x[EW_N], y[EW_N], z[EW_N], out[EW_N];
    uint64_t *in[3] = {x, y, z};
    for (size_t t = 0; t < NR_COUNTOF(float_types); t++) {
        NrDtype dt = float_types[t];
        for (size_t o = 0; o < NR_COUNTOF(ops); o++) {
            NrOpcode opc = ops[o];
            /* f16/bf16/fp8 fma rounds a double fma once; with f32 products
             * that are exact the reference is the same.  f32 fma is fmaf. */
            int nin = opc == NR_OP_FMA ? 3
                      : (opc == NR_OP_NEG || opc == NR_OP_ABS || opc == NR_OP_SQRT_RN || opc == NR_OP_FLOOR ||
                         opc == NR_OP_CEIL)
                          ? 1
                          : 2;
            for (int pass = 0; pass < (opc == NR_OP_MAX || opc == NR_OP_MIN ? 2 : 1); pass++) {
                for (int i = 0; i < EW_N; i++) {
                    x[i] = rand_elem(dt);
                    y[i] = i % 5 == 0 ? x[i] : rand_elem(dt);
                    if (i % 7 == 0) y[i] = fenc(dt, -fval(dt, x[i])); /* (x, -x): includes (0, -0) */
                    if (i % 37 == 0) x[i] = fenc(dt, 0.0), y[i] = fenc(dt, -0.0);
                    if (i % 41 == 0) x[i] = fenc(dt, -0.0), y[i] = fenc(dt, 0.0);
                    z[i] = rand_elem(dt);
                    if (opc == NR_OP_REM && dt != NR_DT_F64 && dt != NR_DT_F32) {
                        /* keep fmod's exact result representable: same-ish magnitudes */
                        x[i] = fenc(dt, (rnd_unit() - 0.5) * 16);
                        y[i] = fenc(dt, (rnd_unit() - 0.5) * 4);
                    }
                }
                Ew e = {opc, pass ? "all" : NULL, NR_A_NAN};
                if (!run_ew(dt, dt, nin, build_op, &e, in, out)) continue;
                int bad = 0;
                for (int i = 0; i < EW_N && bad < 3; i++) {
                    uint64_t want = ref_float(opc, dt, x[i], y[i], z[i], pass == 1);
                    if (dt == NR_DT_F32 && opc == NR_OP_FMA) {
                        float r = fmaf((float)fval(dt, x[i]), (float)fval(dt, y[i]), (float)fval(dt, z[i]));
                        want = fenc(dt, r);
                    }
                    if (!same_bits(dt, want, out[i])) {
                        bad++;
                        CHECK(0, "%s %s%s(%a, %a, %a): want %a (0x%" PRIx64 "), got %a (0x%" PRIx64 ")", dn(dt),
                              nr_op_info[opc].name, pass ? "[nan=all]" : "", fval(dt, x[i]), fval(dt, y[i]),
                              fval(dt, z[i]), fval(dt, want), want, fval(dt, out[i]), out[i]);
                    }
                }
            }
        }
    }
}

/* libm functions: within a few ulps of the double function, rounded to the dtype. */
static void test_float_math(void) {
    struct {
        NrOpcode opc;
        const char *fn;
        double (*ref1)(double);
        double (*ref2)(double, double);
        double lo, hi;
    } fns[] = {
        {NR_OP_EXP, NULL, exp, NULL, -20, 20},          {NR_OP_EXP2, NULL, exp2, NULL, -20, 20},
        {NR_OP_LOG, NULL, log, NULL, 0.001, 1000},      {NR_OP_LOG2, NULL, log2, NULL, 0.001, 1000},
        {NR_OP_SQRT, NULL, sqrt, NULL, 0, 1000},        {NR_OP_SIN, NULL, sin, NULL, -10, 10},
        {NR_OP_COS, NULL, cos, NULL, -10, 10},          {NR_OP_ERF, NULL, erf, NULL, -3, 3},
        {NR_OP_MATH, "tanh", tanh, NULL, -5, 5},        {NR_OP_MATH, "atan2", NULL, atan2, -5, 5},
        {NR_OP_MATH, "pow", NULL, pow, 0.1, 4},         {NR_OP_MATH, "log1p", log1p, NULL, 0, 10},
        {NR_OP_MATH, "__nv_cbrt", cbrt, NULL, -50, 50},
    };
    uint64_t x[EW_N], y[EW_N], out[EW_N];
    uint64_t *in[3] = {x, y, x};
    static const NrDtype tys[] = {NR_DT_F16, NR_DT_BF16, NR_DT_F32, NR_DT_F64};
    for (size_t t = 0; t < NR_COUNTOF(tys); t++) {
        NrDtype dt = tys[t];
        double tol = dt == NR_DT_F64 ? 1e-14 : dt == NR_DT_F32 ? 2e-6 : dt == NR_DT_F16 ? 2e-3 : 1.6e-2;
        for (size_t f = 0; f < NR_COUNTOF(fns); f++) {
            for (int i = 0; i < EW_N; i++) {
                x[i] = fenc(dt, fns[f].lo + (fns[f].hi - fns[f].lo) * rnd_unit());
                y[i] = fenc(dt, fns[f].lo + (fns[f].hi - fns[f].lo) * rnd_unit());
            }
            Ew e = {fns[f].opc, fns[f].fn, NR_A_FN};
            int nin = fns[f].ref2 ? 2 : 1;
            if (!run_ew(dt, dt, nin, build_op, &e, in, out)) continue;
            int bad = 0;
            for (int i = 0; i < EW_N && bad < 3; i++) {
                double a = fval(dt, x[i]), b = fval(dt, y[i]);
                double want = fns[f].ref1 ? fns[f].ref1(a) : fns[f].ref2(a, b);
                want = fval(dt, fenc(dt, want)); /* overflow to inf, as the dtype does */
                double got = fval(dt, out[i]);
                double err = fabs(got - want) / (fabs(want) > 1e-3 ? fabs(want) : 1e-3);
                if (isinf(want) && got == want) err = 0;
                if (!(err <= tol)) {
                    bad++;
                    CHECK(0, "%s %s(%a, %a): want %.17g, got %.17g", dn(dt),
                          fns[f].fn ? fns[f].fn : nr_op_info[fns[f].opc].name, a, b, want, got);
                }
            }
        }
    }
}

/* --- comparison and selection ---------------------------------------------------------------------------- */
static void test_cmp_select(void) {
    static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    static const NrDtype tys[] = {NR_DT_I8,  NR_DT_I32,  NR_DT_I64, NR_DT_U8,  NR_DT_U32,    NR_DT_U64, NR_DT_I1,
                                  NR_DT_F16, NR_DT_BF16, NR_DT_F32, NR_DT_F64, NR_DT_F8E4NV, NR_DT_F8E5};
    uint64_t x[EW_N], y[EW_N], out[EW_N];
    uint64_t *in[3] = {x, y, x};
    for (size_t t = 0; t < NR_COUNTOF(tys); t++) {
        NrDtype dt = tys[t];
        for (int p = 0; p < 6; p++) {
            for (int i = 0; i < EW_N; i++) {
                x[i] = rand_elem(dt);
                y[i] = i % 4 == 0 ? x[i] : rand_elem(dt);
            }
            Ew e = {NR_OP_CMP, preds[p], NR_A_PRED};
            if (!run_ew(dt, NR_DT_I1, 2, build_op, &e, in, out)) continue;
            int bad = 0;
            for (int i = 0; i < EW_N && bad < 3; i++) {
                bool want;
                if (is_f(dt)) {
                    double a = fval(dt, x[i]), b = fval(dt, y[i]);
                    bool un = isnan(a) || isnan(b);
                    want = p == 0   ? !un && a == b
                           : p == 1 ? un || a != b
                           : p == 2 ? !un && a < b
                           : p == 3 ? !un && a <= b
                           : p == 4 ? !un && a > b
                                    : !un && a >= b;
                } else {
                    __int128 a = iv128(dt, x[i]), b = iv128(dt, y[i]);
                    want = p == 0   ? a == b
                           : p == 1 ? a != b
                           : p == 2 ? a < b
                           : p == 3 ? a <= b
                           : p == 4 ? a > b
                                    : a >= b;
                }
                if (out[i] != (uint64_t)want) {
                    bad++;
                    CHECK(0, "%s cmp %s (0x%" PRIx64 ", 0x%" PRIx64 ") = %d", dn(dt), preds[p], x[i], y[i],
                          (int)out[i]);
                }
            }
        }
    }
    /* select on every element size, with a random condition block */
    static const NrDtype stys[] = {NR_DT_I8, NR_DT_F16, NR_DT_F32, NR_DT_I64};
    for (size_t t = 0; t < NR_COUNTOF(stys); t++) {
        NrDtype dt = stys[t];
        NrModule *m = nr_module_new(NULL);
        NrTypeId types[4] = {nr_type_ptr(m, NR_DT_I1, 1), nr_type_ptr(m, dt, 1), nr_type_ptr(m, dt, 1),
                             nr_type_ptr(m, dt, 1)};
        Kb k = kb_begin(m, "sel", 4, types, NULL);
        V c = load(&k, ptrs(&k, k.arg[0], EW_N), 0, 0);
        V a = load(&k, ptrs(&k, k.arg[1], EW_N), 0, 0), b = load(&k, ptrs(&k, k.arg[2], EW_N), 0, 0);
        store(&k, ptrs(&k, k.arg[3], EW_N), op(&k, NR_OP_SELECT, tv(&k, a), 3, c, a, b), 0);
        ret(&k);
        uint8_t cb[EW_N];
        uint64_t av[EW_N], bv[EW_N], ov[EW_N];
        for (int i = 0; i < EW_N; i++) {
            cb[i] = (uint8_t)(rnd() % 3 == 0 ? 0 : (rnd() % 2 ? 1 : 7)); /* any non-zero byte is true */
            av[i] = rand_elem(dt);
            bv[i] = rand_elem(dt);
            ov[i] = 0;
        }
        void *pa = pack(dt, av, EW_N), *pb = pack(dt, bv, EW_N), *po = pack(dt, ov, EW_N);
        NrInterpArg args[4] = {buf(cb, sizeof cb, "c"), buf(pa, (size_t)EW_N * esz(dt), "a"),
                               buf(pb, (size_t)EW_N * esz(dt), "b"), buf(po, (size_t)EW_N * esz(dt), "o")};
        Run r = launch(&k, 1, 1, 1, args, 4, NULL, 0);
        CHECK(r.ok, "select: %s", r.msg);
        unpack(dt, po, ov, EW_N);
        for (int i = 0; i < EW_N; i++) CHECK(ov[i] == (cb[i] ? av[i] : bv[i]), "%s select lane %d", dn(dt), i);
        free(pa);
        free(pb);
        free(po);
        nr_module_free(m);
    }
}

/* --- casts ------------------------------------------------------------------------------------------- */
static const NrDtype all_types[] = {NR_DT_I1,   NR_DT_I8,  NR_DT_I16,  NR_DT_I32, NR_DT_I64,
                                    NR_DT_U8,   NR_DT_U16, NR_DT_U32,  NR_DT_U64, NR_DT_F8E4NV,
                                    NR_DT_F8E5, NR_DT_F16, NR_DT_BF16, NR_DT_F32, NR_DT_F64};

static int precision(NrDtype dt) {
    switch (dt) {
    case NR_DT_F8E4NV: return 4;
    case NR_DT_F8E5: return 3;
    case NR_DT_F16: return 11;
    case NR_DT_BF16: return 8;
    case NR_DT_F32: return 24;
    default: return 53;
    }
}

/* An integer magnitude rounded to `prec` significant bits, to nearest even,
 * done in integers (so independent of any float conversion). */
static double round_int_mag(uint64_t mag, int prec) {
    if (mag == 0) return 0;
    int top = 63 - __builtin_clzll(mag);
    if (top < prec) return (double)mag;
    int drop = top + 1 - prec;
    uint64_t q = mag >> drop, rem = mag & ((UINT64_C(1) << drop) - 1), half = UINT64_C(1) << (drop - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return ldexp((double)q, drop); /* exact: q has at most prec + 1 bits */
}

/* Reference cast of one element. */
static uint64_t ref_cast(NrDtype s, NrDtype d, uint64_t b, bool rtz) {
    if (s == d) return b; /* a cast to the same type is the identity */
    if (is_f(s)) {
        double v = fval(s, b);
        if (is_f(d)) {
            if (d == NR_DT_F64) return fenc(d, v);
            return nr_fp_round(v, fmt_of(d), rtz && bits_of(d) < bits_of(s));
        }
        if (d == NR_DT_I1) return v != 0;
        if (isnan(v)) return 0;
        double t = trunc(v);
        int w = bits_of(d);
        if (is_s(d)) {
            double lim = ldexp(1, w - 1);
            if (t >= lim) return iwrap(d, ((__int128)1 << (w - 1)) - 1);
            if (t < -lim) return iwrap(d, -((__int128)1 << (w - 1)));
            return iwrap(d, (__int128)t);
        }
        if (t <= 0) return 0;
        if (t >= ldexp(1, w)) return iwrap(d, ((__int128)1 << w) - 1);
        return iwrap(d, (__int128)(unsigned __int128)t);
    }
    int64_t v = ival(s, b);
    bool neg = is_s(s) && v < 0;
    if (d == NR_DT_I1) return v != 0;
    if (!is_f(d)) return iwrap(d, is_s(s) ? (__int128)v : (__int128)(uint64_t)v);
    uint64_t mag = neg ? 0 - (uint64_t)v : (uint64_t)v;
    double r = round_int_mag(mag, precision(d));
    if (neg) r = -r;
    if (d == NR_DT_F64) return fenc(d, r);
    return nr_fp_round(r, fmt_of(d), false); /* r is exact in the format or overflows it */
}

static void test_casts(void) {
    uint64_t x[EW_N], out[EW_N];
    uint64_t *in[3] = {x, x, x};
    for (size_t si = 0; si < NR_COUNTOF(all_types); si++)
        for (size_t di = 0; di < NR_COUNTOF(all_types); di++) {
            NrDtype s = all_types[si], d = all_types[di];
            for (int rtz = 0; rtz < 2; rtz++) {
                bool narrowing = is_f(s) && is_f(d) && bits_of(d) < bits_of(s);
                if (rtz && !narrowing) continue;
                for (int i = 0; i < EW_N; i++) {
                    x[i] = rand_elem(s);
                    if (is_f(s) && i % 3 == 0) /* values in the integer ranges */
                        x[i] = fenc(s, ldexp(rnd_unit() - 0.5, (int)(rnd() % 70)));
                }
                Ew e = {NR_OP_CAST, rtz ? "rtz" : NULL, NR_A_ROUNDING};
                if (!run_ew(s, d, 1, build_op, &e, in, out)) continue;
                int bad = 0;
                for (int i = 0; i < EW_N && bad < 3; i++) {
                    uint64_t want = ref_cast(s, d, x[i], rtz);
                    if (!same_bits(d, want, out[i])) {
                        bad++;
                        CHECK(0, "cast %s -> %s%s of 0x%" PRIx64 " (%.17g): want 0x%" PRIx64 ", got 0x%" PRIx64, dn(s),
                              dn(d), rtz ? " rtz" : "", x[i], is_f(s) ? fval(s, x[i]) : (double)ival(s, x[i]), want,
                              out[i]);
                    }
                }
            }
        }
    /* A few by heart. */
    struct {
        NrDtype s, d;
        uint64_t x, want;
    } known[] = {
        {NR_DT_F32, NR_DT_I32, 0x4f000000 /* 2^31 */, 0x7fffffff},
        {NR_DT_F32, NR_DT_I32, 0xcf800000 /* -2^32 */, 0x80000000},
        {NR_DT_F32, NR_DT_I32, 0x7fc00000 /* nan */, 0},
        {NR_DT_F32, NR_DT_U8, 0xbf800000 /* -1 */, 0},
        {NR_DT_F32, NR_DT_U8, 0x43800000 /* 256 */, 255},
        {NR_DT_F32, NR_DT_I8, 0xc2fe6666 /* -127.2 */, 0x81},
        {NR_DT_F32, NR_DT_I1, 0x7fc00000 /* nan != 0 */, 1},
        {NR_DT_I8, NR_DT_I32, 0x80, 0xffffff80},
        {NR_DT_U8, NR_DT_I32, 0x80, 0x80},
        {NR_DT_I64, NR_DT_I16, 0x123456789abcdef0ull, 0xdef0},
        {NR_DT_I32, NR_DT_I1, 0x100, 1},
        {NR_DT_I1, NR_DT_I32, 1, 1},
        {NR_DT_I64, NR_DT_BF16, 0x4040000000000001ull /* 2^62 + 2^54 + 1: just above a tie */, 0x5e81},
        {NR_DT_I64, NR_DT_BF16, 0x4040000000000000ull /* 2^62 + 2^54: a tie, to even */, 0x5e80},
        {NR_DT_F32, NR_DT_F8E4NV, 0x44000000 /* 512 */, 0x7e},
        {NR_DT_F32, NR_DT_F8E5, 0x7f800000 /* inf */, 0x7b},
        {NR_DT_F64, NR_DT_F16, 0x3ff0020000000001ull /* 1 + 2^-11 + tiny */, 0x3c01},
    };
    for (size_t c = 0; c < NR_COUNTOF(known); c++) {
        for (int i = 0; i < EW_N; i++) x[i] = known[c].x;
        Ew e = {NR_OP_CAST, NULL, 0};
        if (!run_ew(known[c].s, known[c].d, 1, build_op, &e, in, out)) continue;
        CHECK(out[0] == known[c].want, "cast %s -> %s of 0x%" PRIx64 ": want 0x%" PRIx64 ", got 0x%" PRIx64,
              dn(known[c].s), dn(known[c].d), known[c].x, known[c].want, out[0]);
    }
    /* bitcast f32 <-> i32 keeps the bits */
    for (int i = 0; i < EW_N; i++) x[i] = rnd() & 0xffffffff;
    Ew e = {NR_OP_BITCAST, NULL, 0};
    if (run_ew(NR_DT_F32, NR_DT_I32, 1, build_op, &e, in, out))
        for (int i = 0; i < EW_N; i++) CHECK(out[i] == x[i], "bitcast f32 -> i32 lane %d", i);
    if (run_ew(NR_DT_I16, NR_DT_BF16, 1, build_op, &e, in, out))
        for (int i = 0; i < EW_N; i++) CHECK(out[i] == (x[i] & 0xffff), "bitcast i16 -> bf16 lane %d", i);
}

/* --- reductions ---------------------------------------------------------------------------------------- */
static int numel(int rank, const int32_t *shape) {
    int n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* Runs reduce (or argreduce when arg) of a `rank`-d block of dt along axis.
 * out: the reduced values (bits); idx: argreduce's indices. */
static bool run_reduce(NrDtype dt, int rank, const int32_t *shape, int axis, const char *kind, const char *nan,
                       bool arg, const uint64_t *x, uint64_t *out, int32_t *idx) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[3] = {nr_type_ptr(m, dt, 1), nr_type_ptr(m, dt, 1), nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "red", 3, types, NULL);
    int n = numel(rank, shape);
    int32_t rs[NR_MAX_RANK];
    int rr = 0;
    for (int i = 0; i < rank; i++)
        if (i != axis) rs[rr++] = shape[i];
    int rn = numel(rr, rs);
    V a = load(&k, ptrs_nd(&k, k.arg[0], rank, shape), 0, 0);
    NrTypeId rt = tb(&k, ts(&k, dt), rr, rs);
    V vals, ids = 0;
    if (arg) {
        NrTypeId rts[2] = {rt, tb(&k, ts(&k, NR_DT_I32), rr, rs)};
        NrOpId o = nr_build(&k.b, NR_OP_ARGREDUCE, 1, &a, 2, rts, 0);
        vals = nr_op_result(k.f, o, 0);
        ids = nr_op_result(k.f, o, 1);
    } else {
        vals = op(&k, NR_OP_REDUCE, rt, 1, a);
    }
    nr_op_set_int(k.f, def(&k, vals), NR_A_AXIS, axis);
    nr_op_set_str(k.f, def(&k, vals), NR_A_KIND, kind);
    if (nan) nr_op_set_str(k.f, def(&k, vals), NR_A_NAN, nan);
    V po = rr ? ptrs_nd(&k, k.arg[1], rr, rs) : k.arg[1];
    store(&k, po, vals, 0);
    if (arg) store(&k, rr ? ptrs_nd(&k, k.arg[2], rr, rs) : k.arg[2], ids, 0);
    ret(&k);
    void *px = pack(dt, x, n);
    uint64_t poison[512];
    for (int i = 0; i < rn; i++) poison[i] = 0x5a5a5a5a5a5a5a5aull;
    void *po_ = pack(dt, poison, rn);
    int32_t *pi = malloc(sizeof(int32_t) * (size_t)rn);
    for (int i = 0; i < rn; i++) pi[i] = -99;
    NrInterpArg args[3] = {buf(px, (size_t)n * esz(dt), "x"), buf(po_, (size_t)rn * esz(dt), "out"),
                           buf(pi, sizeof(int32_t) * (size_t)rn, "idx")};
    Run r = launch(&k, 1, 1, 1, args, 3, NULL, 0);
    CHECK(r.ok, "reduce %s on %s: %s", kind, dn(dt), r.msg);
    unpack(dt, po_, out, rn);
    if (idx) memcpy(idx, pi, sizeof(int32_t) * (size_t)rn);
    free(px);
    free(po_);
    free(pi);
    nr_module_free(m);
    return r.ok;
}

/* The documented float tree: x[j] op= x[j + h], h = ceil(len / 2), in the
 * working type (f64 for f64, f32 otherwise), rounded once to dt at the end. */
static uint64_t tree_ref(NrDtype dt, const double *v, int len, int kind, bool all) {
    if (dt == NR_DT_F64) {
        double w[64];
        for (int i = 0; i < len; i++) w[i] = v[i];
        for (int l = len; l > 1;) {
            int h = (l + 1) / 2;
            for (int j = 0; j < l - h; j++)
                w[j] = kind == 0   ? w[j] + w[j + h]
                       : kind == 1 ? maxnum(w[j], w[j + h], all)
                                   : minnum(w[j], w[j + h], all);
            l = h;
        }
        return fenc(dt, w[0]);
    }
    float w[64];
    for (int i = 0; i < len; i++) w[i] = (float)v[i];
    for (int l = len; l > 1;) {
        int h = (l + 1) / 2;
        for (int j = 0; j < l - h; j++)
            w[j] = kind == 0 ? w[j] + w[j + h]
                             : (float)(kind == 1 ? maxnum(w[j], w[j + h], all) : minnum(w[j], w[j + h], all));
        l = h;
    }
    return fenc(dt, w[0]);
}

static void test_reduce(void) {
    static const int32_t s2[2] = {8, 16}, s3[3] = {4, 8, 2};
    static const char *const ikinds[] = {"add", "max", "min", "xor", "and", "or"};
    static const NrDtype itys[] = {NR_DT_I8, NR_DT_I32, NR_DT_U32, NR_DT_I64, NR_DT_U8};
    static const NrDtype ftys[] = {NR_DT_F32, NR_DT_F16, NR_DT_BF16, NR_DT_F64};
    uint64_t x[256], out[256];
    for (int rank = 2; rank <= 3; rank++) {
        const int32_t *shape = rank == 2 ? s2 : s3;
        int n = numel(rank, shape);
        for (int axis = 0; axis < rank; axis++) {
            int outer = 1, inner = 1, len = shape[axis];
            for (int i = 0; i < axis; i++) outer *= shape[i];
            for (int i = axis + 1; i < rank; i++) inner *= shape[i];
            for (size_t t = 0; t < NR_COUNTOF(itys); t++)
                for (int kd = 0; kd < 6; kd++) {
                    NrDtype dt = itys[t];
                    for (int i = 0; i < n; i++) x[i] = rand_elem(dt);
                    if (!run_reduce(dt, rank, shape, axis, ikinds[kd], NULL, false, x, out, NULL)) continue;
                    for (int o = 0; o < outer; o++)
                        for (int q = 0; q < inner; q++) {
                            __int128 acc = iv128(dt, x[o * len * inner + q]);
                            for (int j = 1; j < len; j++) {
                                __int128 v = iv128(dt, x[(o * len + j) * inner + q]);
                                acc = kd == 0   ? acc + v
                                      : kd == 1 ? (v > acc ? v : acc)
                                      : kd == 2 ? (v < acc ? v : acc)
                                      : kd == 3 ? acc ^ v
                                      : kd == 4 ? acc & v
                                                : acc | v;
                            }
                            uint64_t want = iwrap(dt, acc), got = out[o * inner + q];
                            CHECK(want == got, "reduce %s %s rank %d axis %d at %d: want 0x%" PRIx64 ", got 0x%" PRIx64,
                                  ikinds[kd], dn(dt), rank, axis, o * inner + q, want, got);
                        }
                }
            for (size_t t = 0; t < NR_COUNTOF(ftys); t++)
                for (int kd = 0; kd < 3; kd++)
                    for (int all = 0; all < (kd ? 2 : 1); all++) {
                        NrDtype dt = ftys[t];
                        for (int i = 0; i < n; i++) {
                            x[i] = fenc(dt, (rnd_unit() - 0.3) * 100);
                            if (kd && rnd() % 16 == 0) x[i] = fenc(dt, NAN);
                        }
                        if (!run_reduce(dt, rank, shape, axis, ikinds[kd], all ? "all" : NULL, false, x, out, NULL))
                            continue;
                        for (int o = 0; o < outer; o++)
                            for (int q = 0; q < inner; q++) {
                                double v[64], exact = 0, mag = 0;
                                for (int j = 0; j < len; j++) {
                                    v[j] = fval(dt, x[(o * len + j) * inner + q]);
                                    exact += v[j];
                                    mag += fabs(v[j]);
                                }
                                uint64_t want = tree_ref(dt, v, len, kd, all), got = out[o * inner + q];
                                CHECK(same_bits(dt, want, got), "reduce %s%s %s rank %d axis %d at %d: want %a, got %a",
                                      ikinds[kd], all ? "[all]" : "", dn(dt), rank, axis, o * inner + q, fval(dt, want),
                                      fval(dt, got));
                                if (kd == 0) { /* and close to the exact sum */
                                    double tol = dt == NR_DT_F64   ? 1e-15
                                                 : dt == NR_DT_F32 ? 1e-6
                                                 : dt == NR_DT_F16 ? 1e-3
                                                                   : 8e-3;
                                    CHECK(fabs(fval(dt, got) - exact) <= tol * (mag + 1e-30),
                                          "reduce add %s: %g vs exact %g", dn(dt), fval(dt, got), exact);
                                }
                            }
                    }
        }
    }
    /* a 1-D block reduces to a scalar */
    for (int i = 0; i < 16; i++) x[i] = iwrap(NR_DT_I32, i * 3 - 7);
    int32_t s1[1] = {16};
    if (run_reduce(NR_DT_I32, 1, s1, 0, "add", NULL, false, x, out, NULL))
        CHECK(ival(NR_DT_I32, out[0]) == 3 * 120 - 7 * 16, "1-d sum to scalar: %" PRId64, ival(NR_DT_I32, out[0]));
}

static void test_argreduce(void) {
    static const int32_t s2[2] = {8, 16};
    static const NrDtype tys[] = {NR_DT_I32, NR_DT_U8, NR_DT_I8, NR_DT_F32, NR_DT_F16, NR_DT_BF16, NR_DT_F64};
    uint64_t x[128], out[128];
    int32_t idx[128];
    for (size_t t = 0; t < NR_COUNTOF(tys); t++)
        for (int axis = 0; axis < 2; axis++)
            for (int mode = 0; mode < 4; mode++) {
                NrDtype dt = tys[t];
                bool big = mode % 2, all = mode >= 2; /* kind max / min; nan = "all" / "none" */
                if (all && !is_f(dt)) continue;
                for (int i = 0; i < 128; i++) { /* few distinct values: many ties */
                    int v = (int)(rnd() % 5) - 2;
                    x[i] = is_f(dt) ? fenc(dt, v) : iwrap(dt, v);
                    if (is_f(dt) && rnd() % 12 == 0) x[i] = fenc(dt, NAN);
                    if (dt == NR_DT_U8 && rnd() % 9 == 0) x[i] = 200; /* above every "negative" */
                }
                if (is_f(dt)) /* one slice entirely NaN */
                    for (int j = 0; j < s2[axis]; j++) x[axis == 0 ? j * 16 + 5 : 3 * 16 + j] = fenc(dt, NAN);
                if (!run_reduce(dt, 2, s2, axis, big ? "max" : "min", all ? "all" : NULL, true, x, out, idx)) continue;
                int outer = axis == 0 ? 1 : 8, inner = axis == 0 ? 16 : 1, len = s2[axis];
                for (int o = 0; o < outer; o++)
                    for (int q = 0; q < inner; q++) {
                        int best = 0;
                        for (int j = 1; j < len; j++) {
                            uint64_t e = x[(o * len + j) * inner + q], b = x[(o * len + best) * inner + q];
                            if (is_f(dt)) {
                                /* "all": the first NaN wins; "none": NaNs are skipped */
                                double ev = fval(dt, e), bv = fval(dt, b);
                                if (all && isnan(bv)) break;
                                if (isnan(ev) ? all : isnan(bv) || (big ? ev > bv : ev < bv)) best = j;
                            } else if (big ? iv128(dt, e) > iv128(dt, b) : iv128(dt, e) < iv128(dt, b)) {
                                best = j;
                            }
                        }
                        int at = o * inner + q;
                        CHECK(idx[at] == best && same_bits(dt, out[at], x[(o * len + best) * inner + q]),
                              "arg%s%s %s axis %d at %d: want index %d, got %d", big ? "max" : "min",
                              all ? "[all]" : "", dn(dt), axis, at, best, idx[at]);
                    }
                if (is_f(dt) && !all) { /* argreduce's value is reduce's value */
                    uint64_t red[128];
                    if (run_reduce(dt, 2, s2, axis, big ? "max" : "min", NULL, false, x, red, NULL))
                        for (int i = 0; i < (axis == 0 ? 16 : 8); i++)
                            CHECK(same_bits(dt, red[i], out[i]), "argreduce and reduce disagree at %d", i);
                }
            }
}

/* --- dot ------------------------------------------------------------------------------------------------- */
/* C = A @ B + Acc on [B]xMxK, [B]xKxN, [B]xMxN blocks. */
static bool run_dot(NrDtype dta, NrDtype dtb, NrDtype dtc, int batch, int M, int N, int K, const char *prec, const uint64_t *a,
                    const uint64_t *b, const uint64_t *c, uint64_t *out) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[4] = {nr_type_ptr(m, dta, 1), nr_type_ptr(m, dtb, 1), nr_type_ptr(m, dtc, 1),
                         nr_type_ptr(m, dtc, 1)};
    Kb k = kb_begin(m, "dot", 4, types, NULL);
    int rank = batch ? 3 : 2;
    int32_t sa[3], sb[3], sc[3];
    int o = 0;
    if (batch) sa[o] = sb[o] = sc[o] = batch, o++;
    sa[o] = M, sa[o + 1] = K;
    sb[o] = K, sb[o + 1] = N;
    sc[o] = M, sc[o + 1] = N;
    V av = load(&k, ptrs_nd(&k, k.arg[0], rank, sa), 0, 0), bv = load(&k, ptrs_nd(&k, k.arg[1], rank, sb), 0, 0);
    V cv = load(&k, ptrs_nd(&k, k.arg[2], rank, sc), 0, 0);
    V r = op(&k, NR_OP_DOT, tv(&k, cv), 3, av, bv, cv);
    if (prec) sattr(&k, r, NR_A_PRECISION, prec);
    store(&k, ptrs_nd(&k, k.arg[3], rank, sc), r, 0);
    ret(&k);
    int nb = batch ? batch : 1;
    void *pa = pack(dta, a, nb * M * K), *pb = pack(dtb, b, nb * K * N), *pc = pack(dtc, c, nb * M * N);
    uint64_t *poison = calloc((size_t)(nb * M * N), 8);
    void *po = pack(dtc, poison, nb * M * N);
    NrInterpArg args[4] = {buf(pa, (size_t)(nb * M * K * esz(dta)), "a"), buf(pb, (size_t)(nb * K * N * esz(dtb)), "b"),
                           buf(pc, (size_t)(nb * M * N * esz(dtc)), "c"),
                           buf(po, (size_t)(nb * M * N * esz(dtc)), "out")};
    memset(po, 0xee, (size_t)(nb * M * N * esz(dtc)));
    Run res = launch(&k, 1, 1, 1, args, 4, NULL, 0);
    CHECK(res.ok, "dot %s: %s", dn(dta), res.msg);
    unpack(dtc, po, out, nb * M * N);
    free(pa);
    free(pb);
    free(pc);
    free(po);
    free(poison);
    nr_module_free(m);
    return res.ok;
}

static void test_dot(void) {
    struct {
        NrDtype a, bt, c;
        const char *prec;
        int batch, M, N, K;
    } cases[] = {
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, NULL, 0, 16, 32, 16},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, "ieee", 0, 16, 16, 32},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, "tf32x3", 0, 32, 16, 16},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, "tf32", 0, 16, 16, 16},
        {NR_DT_F16, NR_DT_F16, NR_DT_F32, NULL, 0, 16, 16, 16},
        {NR_DT_BF16, NR_DT_BF16, NR_DT_F32, NULL, 0, 16, 64, 16},
        {NR_DT_F16, NR_DT_F16, NR_DT_F16, NULL, 0, 16, 16, 32},
        {NR_DT_F8E4NV, NR_DT_F8E4NV, NR_DT_F32, NULL, 0, 16, 16, 32},
        {NR_DT_F8E5, NR_DT_F8E5, NR_DT_F32, NULL, 0, 32, 16, 32},
        {NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F32, NULL, 0, 16, 32, 16},
        {NR_DT_F8E5, NR_DT_F8E4NV, NR_DT_F16, NULL, 0, 16, 16, 16},
        {NR_DT_I8, NR_DT_I8, NR_DT_I32, NULL, 0, 16, 32, 64},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, NULL, 4, 16, 16, 16},
        {NR_DT_F16, NR_DT_F16, NR_DT_F32, NULL, 2, 32, 16, 16},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, "ieee", 0, 64, 16, 16},
    };
    for (size_t c = 0; c < NR_COUNTOF(cases); c++) {
        int nb = cases[c].batch ? cases[c].batch : 1, M = cases[c].M, N = cases[c].N, K = cases[c].K;
        NrDtype da = cases[c].a, db = cases[c].bt, dc = cases[c].c;
        uint64_t *a = malloc(sizeof(uint64_t) * (size_t)(nb * M * K)),
                 *b = malloc(sizeof(uint64_t) * (size_t)(nb * K * N));
        uint64_t *acc = malloc(sizeof(uint64_t) * (size_t)(nb * M * N)),
                 *out = malloc(sizeof(uint64_t) * (size_t)(nb * M * N));
        for (int i = 0; i < nb * M * K; i++)
            a[i] = is_f(da) ? fenc(da, rnd_unit() * 4 - 2) : iwrap(da, (int64_t)(rnd() % 256) - 128);
        for (int i = 0; i < nb * K * N; i++)
            b[i] = is_f(db) ? fenc(db, rnd_unit() * 4 - 2) : iwrap(db, (int64_t)(rnd() % 256) - 128);
        for (int i = 0; i < nb * M * N; i++)
            acc[i] = is_f(dc) ? fenc(dc, rnd_unit() * 10 - 5) : iwrap(dc, (int64_t)(rnd() % 2000000) - 1000000);
        bool tf32 = da == NR_DT_F32 && (!cases[c].prec || strcmp(cases[c].prec, "tf32") == 0);
        if (!run_dot(da, db, dc, cases[c].batch, M, N, K, cases[c].prec, a, b, acc, out)) goto next;
        int bad = 0;
        for (int bi = 0; bi < nb; bi++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    int at = (bi * M + i) * N + j;
                    uint64_t want;
                    double exact = 0, mag = 0;
                    if (!is_f(da)) {
                        int64_t s = ival(dc, acc[at]);
                        for (int q = 0; q < K; q++)
                            s += ival(da, a[(bi * M + i) * K + q]) * ival(db, b[(bi * K + q) * N + j]);
                        want = iwrap(dc, s);
                    } else if (da == NR_DT_F64) {
                        double s = 0;
                        for (int q = 0; q < K; q++)
                            s += fval(da, a[(bi * M + i) * K + q]) * fval(db, b[(bi * K + q) * N + j]);
                        want = fenc(dc, s + fval(dc, acc[at]));
                    } else {
                        /* the documented order: f32 products and partial sums from 0, then + acc */
                        float s = 0;
                        for (int q = 0; q < K; q++) {
                            float x = (float)fval(da, a[(bi * M + i) * K + q]),
                                  y = (float)fval(db, b[(bi * K + q) * N + j]);
                            exact += (double)x * y;
                            mag += fabs((double)x * y);
                            if (tf32) {
                                x = nr_f32_round_tf32(x);
                                y = nr_f32_round_tf32(y);
                            }
                            float p = x * y;
                            s = s + p;
                        }
                        want = dc == NR_DT_F32 ? fenc(dc, (float)(s + (float)fval(dc, acc[at])))
                                               : fenc(dc, (double)s + fval(dc, acc[at]));
                        exact += fval(dc, acc[at]);
                        double got = fval(dc, out[at]);
                        double tol = tf32 ? 2e-3 : dc == NR_DT_F16 ? 2e-3 : 1e-5;
                        CHECK(fabs(got - exact) <= tol * (mag + fabs(fval(dc, acc[at])) + 1e-30),
                              "dot %s: %g too far from the exact %g", dn(da), got, exact);
                    }
                    if (!same_bits(dc, want, out[at]) && bad++ < 3)
                        CHECK(0, "dot %s->%s%s batch %d [%d,%d,%d] at (%d, %d, %d): want %.9g, got %.9g", dn(da),
                              dn(dc), cases[c].prec ? cases[c].prec : "", cases[c].batch, M, N, K, bi, i, j,
                              is_f(dc) ? fval(dc, want) : (double)ival(dc, want),
                              is_f(dc) ? fval(dc, out[at]) : (double)ival(dc, out[at]));
                }
    next:
        free(a);
        free(b);
        free(acc);
        free(out);
    }
}

/* --- memory ------------------------------------------------------------------------------------------------ */
/* A source file for locations: diagnostics must point at "line 3". */
static NrLoc add_source(NrModule *m) {
    static const char src[] = "@jit\ndef k(x_ptr, out_ptr):\n    v = tl.load(x_ptr + offs)\n";
    NrLoc l = {nr_sources_add(&m->sources, m->arena, "k.py", src, sizeof src - 1), 3, 9};
    return l;
}

static void test_masked_loads(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[2] = {nr_type_ptr(m, NR_DT_F32, 1), nr_type_ptr(m, NR_DT_F32, 1)};
    static const char *const names[2] = {"x_ptr", "out_ptr"};
    Kb k = kb_begin(m, "masked", 2, types, names);
    NrTypeId f32 = ts(&k, NR_DT_F32), i32 = ts(&k, NR_DT_I32), i64 = ts(&k, NR_DT_I64);
    enum { NB = 64, NX = 20 };
    V offs = arange(&k, NB);
    V mask = cmp(&k, "lt", offs, splat(&k, cI(&k, i32, NX), tv(&k, offs)));
    /* Lanes >= NX point far outside x (offset * 1000); masked off, they must not fault. */
    V far = op(&k, NR_OP_SELECT, tv(&k, offs), 3, mask, offs,
               bin(&k, NR_OP_MUL, offs, splat(&k, cI(&k, i32, 100000), tv(&k, offs))));
    V p = addptr(&k, splat(&k, k.arg[0], tb1(&k, tv(&k, k.arg[0]), NB)), far);
    V v = load(&k, p, mask, cF(&k, tb1(&k, f32, NB), -1.5));
    /* Without `other`, masked-off lanes read 0; a garbage address under a false mask is fine. */
    V garbage =
        op(&k, NR_OP_INTTOPTR, tb1(&k, tv(&k, k.arg[0]), NB), 1, splat(&k, cI(&k, i64, 0xdeadbeef), tb1(&k, i64, NB)));
    V none = cmp(&k, "lt", offs, splat(&k, cI(&k, i32, 0), tv(&k, offs)));
    V z = load(&k, garbage, none, NR_NONE);
    store(&k, ptrs(&k, k.arg[1], NB), bin(&k, NR_OP_ADD, v, z), NR_NONE);
    /* A masked store through the garbage pointers writes nothing. */
    store(&k, garbage, v, none);
    ret(&k);
    float x[NX], out[NB];
    for (int i = 0; i < NX; i++) x[i] = (float)(rnd_unit() * 10);
    for (int i = 0; i < NB; i++) out[i] = NAN;
    NrInterpArg args[2] = {buf(x, sizeof x, NULL), buf(out, sizeof out, NULL)};
    Run r = launch(&k, 1, 1, 1, args, 2, NULL, 0);
    CHECK(r.ok, "masked loads: %s", r.msg);
    for (int i = 0; i < NB; i++) CHECK(out[i] == (i < NX ? x[i] : -1.5f), "masked load lane %d: %g", i, out[i]);
    nr_module_free(m);
}

/* One faulting access; returns the first diagnostic. */
typedef enum {
    F_LOAD_OOB,
    F_LOAD_NEG,
    F_STORE_OOB,
    F_WILD,
    F_MISALIGNED,
    F_SCALAR_OOB,
    F_ATOMIC_OOB,
    F_STORE_PARTIAL
} Fault;

static void check_fault(Fault fault, const char *want) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[2] = {nr_type_ptr(m, NR_DT_F32, 1), nr_type_ptr(m, NR_DT_F32, 1)};
    static const char *const names[2] = {"x_ptr", "out_ptr"};
    Kb k = kb_begin(m, "fault", 2, types, names);
    NrTypeId f32 = ts(&k, NR_DT_F32), i32 = ts(&k, NR_DT_I32), i64 = ts(&k, NR_DT_I64);
    NrLoc loc = add_source(m);
    enum { NB = 32 };
    V pid = iattr(&k, op(&k, NR_OP_PROGRAM_ID, i32, 0), NR_A_AXIS, 0);
    V base = bin(&k, NR_OP_MUL, pid, cI(&k, i32, NB));
    V offs = bin(&k, NR_OP_ADD, splat(&k, base, tb1(&k, i32, NB)), arange(&k, NB));
    V xp = addptr(&k, splat(&k, k.arg[0], tb1(&k, tv(&k, k.arg[0]), NB)), offs);
    V op_ = 0;
    switch (fault) {
    case F_LOAD_OOB:
        k.b.loc = loc;
        op_ = load(&k, xp, 0, 0);
        break;
    case F_LOAD_NEG: {
        V p = addptr(&k, k.arg[0], cI(&k, i32, -3));
        k.b.loc = loc;
        op_ = load(&k, p, 0, 0);
        break;
    }
    case F_STORE_OOB:
        k.b.loc = loc;
        store(&k, xp, cF(&k, tb1(&k, f32, NB), 1.0), 0);
        break;
    case F_STORE_PARTIAL: { /* lanes 0..2 are fine, lane 3 is not: nothing may be written */
        V q = addptr(&k, splat(&k, k.arg[1], tb1(&k, tv(&k, k.arg[1]), 4)),
                     bin(&k, NR_OP_MUL, arange(&k, 4), splat(&k, cI(&k, i32, 11), tb1(&k, i32, 4))));
        k.b.loc = loc;
        store(&k, q, cF(&k, tb1(&k, f32, 4), 7.0), 0);
        break;
    }
    case F_WILD: {
        V p = op(&k, NR_OP_INTTOPTR, tv(&k, k.arg[0]), 1, cI(&k, i64, 0x1234));
        k.b.loc = loc;
        op_ = load(&k, p, 0, 0);
        break;
    }
    case F_MISALIGNED: {
        V a = op(&k, NR_OP_PTRTOINT, i64, 1, k.arg[0]);
        V p = op(&k, NR_OP_INTTOPTR, tv(&k, k.arg[0]), 1, bin(&k, NR_OP_ADD, a, cI(&k, i64, 6)));
        k.b.loc = loc;
        op_ = load(&k, p, 0, 0);
        break;
    }
    case F_SCALAR_OOB: {
        V p = addptr(&k, k.arg[0], cI(&k, i32, 16));
        k.b.loc = loc;
        op_ = load(&k, p, 0, 0);
        break;
    }
    case F_ATOMIC_OOB:
        k.b.loc = loc;
        op_ = op(&k, NR_OP_ATOMIC_RMW, tb1(&k, f32, NB), 3, xp, cF(&k, tb1(&k, f32, NB), 1.0), NR_NONE);
        sattr(&k, op_, NR_A_KIND, "add");
        break;
    }
    k.b.loc = (NrLoc){0, 0, 0};
    if (op_) {
        if (ty(&k, op_)->rank == 0)
            store(&k, k.arg[1], op_, 0);
        else
            store(&k, ptrs(&k, k.arg[1], NB), op_, 0);
    }
    ret(&k);
    /* x starts a page, so a read 12 bytes before it leaves x's region of
     * the interpreter's address space: the message must still name x. */
    static _Alignas(4096) float x[16];
    float out[NB];
    for (int i = 0; i < 16; i++) x[i] = 1;
    for (int i = 0; i < NB; i++) out[i] = -1;
    /* x has 16 floats (64 bytes); 32-lane blocks of program 0 overrun it at lane 16. */
    NrInterpArg args[2] = {buf(x, sizeof x, NULL), buf(out, sizeof out, NULL)};
    Run r = launch(&k, 2, 1, 1, args, 2, NULL, 0);
    CHECK(!r.ok && r.d.nerrors == 1, "fault %d: expected one error, got ok=%d n=%d", (int)fault, r.ok, r.d.nerrors);
    CHECK(strcmp(r.msg, want) == 0, "fault message:\n    got  %s\n    want %s", r.msg, want);
    CHECK(r.loc.line == 3 && r.loc.col == 9, "fault %d at line %u col %u, want 3:9", (int)fault, r.loc.line, r.loc.col);
    if (fault == F_STORE_PARTIAL)
        for (int i = 0; i < NB; i++) CHECK(out[i] == -1, "a faulting store wrote lane %d", i);
    if (r.d.n) { /* the rendered form names the Python line */
        char *text = nr_diag_render(m->arena, &m->sources, &r.d.v[0]);
        CHECK(strstr(text, "k.py:3:9: error: ") && strstr(text, "v = tl.load(x_ptr + offs)"), "rendered: %s", text);
    }
    nr_module_free(m);
}

static void test_faults(void) {
    check_fault(F_LOAD_OOB, "out-of-bounds load: program (0, 0, 0), element 16 of the block (index [16]) reads "
                            "bytes 64..67 of argument 'x_ptr' (64 bytes)");
    check_fault(F_LOAD_NEG, "out-of-bounds load: program (0, 0, 0) reads bytes -12..-9 of argument 'x_ptr' (64 bytes)");
    check_fault(F_STORE_OOB, "out-of-bounds store: program (0, 0, 0), element 16 of the block (index [16]) writes "
                             "bytes 64..67 of argument 'x_ptr' (64 bytes)");
    check_fault(F_STORE_PARTIAL, "out-of-bounds store: program (0, 0, 0), element 3 of the block (index [3]) writes "
                                 "bytes 132..135 of argument 'out_ptr' (128 bytes)");
    check_fault(F_WILD, "out-of-bounds load: program (0, 0, 0) reads 4 bytes at address 0x1234, which is not inside "
                        "any argument buffer");
    check_fault(F_MISALIGNED, "misaligned load: program (0, 0, 0) reads a 4-byte element at byte 6 of argument "
                              "'x_ptr', which is not a multiple of 4");
    check_fault(F_SCALAR_OOB,
                "out-of-bounds load: program (0, 0, 0) reads bytes 64..67 of argument 'x_ptr' (64 bytes)");
    check_fault(F_ATOMIC_OOB, "out-of-bounds atomic_rmw: program (0, 0, 0), element 16 of the block (index [16]) "
                              "accesses bytes 64..67 of argument 'x_ptr' (64 bytes)");
}

/* The out-of-bounds lane of a 2-D block is named by its index. */
static void test_fault_2d(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[1] = {nr_type_ptr(m, NR_DT_I16, 1)};
    static const char *const names[1] = {"buf"};
    Kb k = kb_begin(m, "f2", 1, types, names);
    int32_t shape[2] = {4, 8};
    V v = load(&k, ptrs_nd(&k, k.arg[0], 2, shape), 0, 0);
    store(&k, ptrs_nd(&k, k.arg[0], 2, shape), v, 0);
    ret(&k);
    int16_t b[21];
    NrInterpArg args[1] = {buf(b, sizeof b, NULL)};
    Run r = launch(&k, 1, 1, 1, args, 1, NULL, 0);
    CHECK(!r.ok && strcmp(r.msg, "out-of-bounds load: program (0, 0, 0), element 21 of the block (index [2, 5]) "
                                 "reads bytes 42..43 of argument 'buf' (42 bytes)") == 0,
          "2-d fault: %s", r.msg);
    nr_module_free(m);
}

/* Random addresses around a buffer, in runs and alone, under random masks:
 * either every active lane is valid and the load returns the right values,
 * or the launch reports exactly the first bad active lane. */
static void test_random_addresses(void) {
    enum { NB = 64, NX = 16 };
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[4] = {nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I64, 1), nr_type_ptr(m, NR_DT_I1, 1),
                         nr_type_ptr(m, NR_DT_I32, 1)};
    static const char *const names[4] = {"x", "offs", "mask", "out"};
    Kb k = kb_begin(m, "addr", 4, types, names);
    NrTypeId i64 = ts(&k, NR_DT_I64), vi64 = tb1(&k, i64, NB);
    V base = splat(&k, op(&k, NR_OP_PTRTOINT, i64, 1, k.arg[0]), vi64);
    V offs = load(&k, ptrs(&k, k.arg[1], NB), 0, 0), mask = load(&k, ptrs(&k, k.arg[2], NB), 0, 0);
    V p = op(&k, NR_OP_INTTOPTR, tb1(&k, tv(&k, k.arg[0]), NB), 1, bin(&k, NR_OP_ADD, base, offs));
    V v = load(&k, p, mask, cI(&k, tb1(&k, ts(&k, NR_DT_I32), NB), -7));
    store(&k, ptrs(&k, k.arg[3], NB), v, 0);
    ret(&k);
    for (int trial = 0; trial < 300; trial++) {
        int32_t x[NX], out[NB];
        int64_t off[NB];
        uint8_t mk[NB];
        for (int i = 0; i < NX; i++) x[i] = (int32_t)rnd();
        for (int i = 0; i < NB; i++) {
            int kind = (int)(rnd() % 4);
            if (i > 0 && kind < 2)
                off[i] = off[i - 1] + 4; /* continue a run */
            else if (kind == 2)
                off[i] = 4 * ((int64_t)(rnd() % (NX + 4)) - 2); /* aligned, maybe outside */
            else
                off[i] = (int64_t)(rnd() % (4 * NX + 16)) - 8; /* anything near */
            mk[i] = rnd() % 8 != 0;
            out[i] = 12345;
        }
        if (trial % 3 == 0) /* most trials stay valid */
            for (int i = 0; i < NB; i++) {
                off[i] = ((off[i] % (4 * NX)) + 4 * NX) % (4 * NX);
                off[i] -= off[i] % 4;
            }
        int bad = -1;
        for (int i = 0; i < NB && bad < 0; i++)
            if (mk[i] && (off[i] < 0 || off[i] + 4 > 4 * NX || off[i] % 4)) bad = i;
        NrInterpArg args[4] = {buf(x, sizeof x, NULL), buf(off, sizeof off, NULL), buf(mk, sizeof mk, NULL),
                               buf(out, sizeof out, NULL)};
        Run r = launch(&k, 1, 1, 1, args, 4, NULL, 0);
        if (bad < 0) {
            CHECK(r.ok, "random addresses: unexpected fault %s", r.msg);
            for (int i = 0; i < NB; i++)
                CHECK(out[i] == (mk[i] ? x[off[i] / 4] : -7), "random addresses lane %d: %d", i, out[i]);
        } else {
            char want[200];
            snprintf(want, sizeof want, "element %d of the block (index [%d])", bad, bad);
            bool in = off[bad] >= 0 && off[bad] + 4 <= 4 * NX;
            CHECK(!r.ok && strstr(r.msg, want) && strstr(r.msg, in ? "misaligned load" : "out-of-bounds load"),
                  "random addresses: want a fault at lane %d (offset %" PRId64 "), got %s", bad, off[bad], r.msg);
        }
    }
    nr_module_free(m);
}

/* --- atomics ---------------------------------------------------------------------------------------------- */
static void test_atomics(void) {
    /* Histogram over 4 programs: counts, and the old values show lane-order serialization. */
    {
        NrModule *m = nr_module_new(NULL);
        NrTypeId types[3] = {nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I32, 1)};
        Kb k = kb_begin(m, "hist", 3, types, NULL);
        NrTypeId i32 = ts(&k, NR_DT_I32);
        enum { NB = 128, BINS = 16 };
        V pid = iattr(&k, op(&k, NR_OP_PROGRAM_ID, i32, 0), NR_A_AXIS, 0);
        V offs =
            bin(&k, NR_OP_ADD, splat(&k, bin(&k, NR_OP_MUL, pid, cI(&k, i32, NB)), tb1(&k, i32, NB)), arange(&k, NB));
        V d = load(&k, addptr(&k, splat(&k, k.arg[0], tb1(&k, tv(&k, k.arg[0]), NB)), offs), 0, 0);
        V p = addptr(&k, splat(&k, k.arg[1], tb1(&k, tv(&k, k.arg[1]), NB)), d);
        V old = op(&k, NR_OP_ATOMIC_RMW, tb1(&k, i32, NB), 3, p, cI(&k, tb1(&k, i32, NB), 1), NR_NONE);
        sattr(&k, old, NR_A_KIND, "add");
        store(&k, addptr(&k, splat(&k, k.arg[2], tb1(&k, tv(&k, k.arg[2]), NB)), offs), old, 0);
        ret(&k);
        int32_t data[4 * NB], bins[BINS] = {0}, olds[4 * NB], want[BINS] = {0};
        for (int i = 0; i < 4 * NB; i++) data[i] = (int32_t)(rnd() % BINS);
        NrInterpArg args[3] = {buf(data, sizeof data, "data"), buf(bins, sizeof bins, "bins"),
                               buf(olds, sizeof olds, "old")};
        Run r = launch(&k, 4, 1, 1, args, 3, NULL, 0);
        CHECK(r.ok, "histogram: %s", r.msg);
        for (int i = 0; i < 4 * NB; i++) {
            CHECK(olds[i] == want[data[i]], "histogram old value at %d: %d, want %d", i, olds[i], want[data[i]]);
            want[data[i]]++;
        }
        for (int i = 0; i < BINS; i++) CHECK(bins[i] == want[i], "bin %d: %d, want %d", i, bins[i], want[i]);
        nr_module_free(m);
    }
    /* Every kind and dtype, all lanes on few addresses: the serial result in lane order. */
    static const char *const kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
    static const NrDtype tys[] = {NR_DT_I32, NR_DT_U32, NR_DT_I64, NR_DT_F32, NR_DT_F16, NR_DT_BF16, NR_DT_F64};
    for (size_t t = 0; t < NR_COUNTOF(tys); t++)
        for (int kd = 0; kd < 7; kd++) {
            NrDtype dt = tys[t];
            if (is_f(dt) && kd >= 3 && kd <= 5) continue;
            NrModule *m = nr_module_new(NULL);
            NrTypeId types[4] = {nr_type_ptr(m, dt, 1), nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, dt, 1),
                                 nr_type_ptr(m, dt, 1)};
            Kb k = kb_begin(m, "rmw", 4, types, NULL);
            enum { NB = 64, NA = 4 };
            V where = load(&k, ptrs(&k, k.arg[1], NB), 0, 0);
            V vals = load(&k, ptrs(&k, k.arg[2], NB), 0, 0);
            V mask = cmp(&k, "ne", where, splat(&k, cI(&k, ts(&k, NR_DT_I32), 3), tv(&k, where)));
            V p = addptr(&k, splat(&k, k.arg[0], tb1(&k, tv(&k, k.arg[0]), NB)), where);
            V old = op(&k, NR_OP_ATOMIC_RMW, tv(&k, vals), 3, p, vals, mask);
            sattr(&k, old, NR_A_KIND, kinds[kd]);
            store(&k, ptrs(&k, k.arg[3], NB), old, 0);
            ret(&k);
            uint64_t mem[NA], v[NB], olds[NB];
            int32_t wh[NB];
            for (int i = 0; i < NA; i++) mem[i] = is_f(dt) ? fenc(dt, rnd_unit() * 8 - 4) : rand_elem(dt);
            for (int i = 0; i < NB; i++) {
                wh[i] = (int32_t)(rnd() % NA);
                v[i] = is_f(dt) ? fenc(dt, rnd_unit() * 8 - 4) : rand_elem(dt);
            }
            void *pm = pack(dt, mem, NA), *pv = pack(dt, v, NB), *po = pack(dt, v, NB);
            NrInterpArg args[4] = {buf(pm, (size_t)NA * esz(dt), "mem"), buf(wh, sizeof wh, "where"),
                                   buf(pv, (size_t)NB * esz(dt), "v"), buf(po, (size_t)NB * esz(dt), "old")};
            Run r = launch(&k, 1, 1, 1, args, 4, NULL, 0);
            CHECK(r.ok, "atomic %s %s: %s", kinds[kd], dn(dt), r.msg);
            unpack(dt, po, olds, NB);
            uint64_t got[NA];
            unpack(dt, pm, got, NA);
            for (int i = 0; i < NB; i++) {
                uint64_t *cell = &mem[wh[i]];
                if (wh[i] == 3) { /* masked off: old reads 0, memory untouched */
                    CHECK(olds[i] == 0, "atomic %s %s masked lane %d old 0x%" PRIx64, kinds[kd], dn(dt), i, olds[i]);
                    continue;
                }
                CHECK(olds[i] == *cell, "atomic %s %s lane %d: old 0x%" PRIx64 ", want 0x%" PRIx64, kinds[kd], dn(dt),
                      i, olds[i], *cell);
                if (is_f(dt)) {
                    double a = fval(dt, *cell), b = fval(dt, v[i]);
                    *cell = kd == 0   ? fenc(dt, a + b)
                            : kd == 1 ? fenc(dt, maxnum(a, b, false))
                            : kd == 2 ? fenc(dt, minnum(a, b, false))
                                      : v[i];
                } else {
                    __int128 a = iv128(dt, *cell), b = iv128(dt, v[i]);
                    *cell = kd == 0   ? iwrap(dt, a + b)
                            : kd == 1 ? iwrap(dt, a > b ? a : b)
                            : kd == 2 ? iwrap(dt, a < b ? a : b)
                            : kd == 3 ? iwrap(dt, a & b)
                            : kd == 4 ? iwrap(dt, a | b)
                            : kd == 5 ? iwrap(dt, a ^ b)
                                      : v[i];
                }
            }
            for (int i = 0; i < NA; i++)
                CHECK(got[i] == mem[i], "atomic %s %s cell %d: 0x%" PRIx64 ", want 0x%" PRIx64, kinds[kd], dn(dt), i,
                      got[i], mem[i]);
            free(pm);
            free(pv);
            free(po);
            nr_module_free(m);
        }
    /* CAS: one lane of a block wins the lock; a spin loop (while cas != 0) in
     * every program acquires it, counts, and releases it with xchg. */
    {
        NrModule *m = nr_module_new(NULL);
        NrTypeId types[3] = {nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I32, 1)};
        Kb k = kb_begin(m, "cas", 3, types, NULL);
        NrTypeId i32 = ts(&k, NR_DT_I32);
        enum { NB = 8 };
        V lock = k.arg[0];
        V lanes = splat(&k, lock, tb1(&k, tv(&k, lock), NB));
        V ids = bin(&k, NR_OP_ADD, arange(&k, NB), splat(&k, cI(&k, i32, 1), tb1(&k, i32, NB)));
        V olds = op(&k, NR_OP_ATOMIC_CAS, tb1(&k, i32, NB), 3, lanes, splat(&k, cI(&k, i32, 0), tb1(&k, i32, NB)), ids);
        store(&k, ptrs(&k, k.arg[2], NB), olds, 0);
        V rel = op(&k, NR_OP_ATOMIC_RMW, i32, 3, lock, cI(&k, i32, 0), NR_NONE);
        sattr(&k, rel, NR_A_KIND, "xchg");
        /* while (atomic_cas(lock, 0, 1) != 0) {} */
        NrOpId w = nr_build(&k.b, NR_OP_WHILE, 0, NULL, 0, NULL, 2);
        Kb kc = k;
        kc.b = nr_builder_at_end(k.f, k.f->ops[w].regions[0]);
        V got = op(&kc, NR_OP_ATOMIC_CAS, i32, 3, lock, cI(&kc, i32, 0), cI(&kc, i32, 1));
        V busy = cmp(&kc, "ne", got, cI(&kc, i32, 0));
        nr_build(&kc.b, NR_OP_CONDITION, 1, &busy, 0, NULL, 0);
        Kb kb2 = k;
        kb2.b = nr_builder_at_end(k.f, k.f->ops[w].regions[1]);
        nr_build(&kb2.b, NR_OP_YIELD, 0, NULL, 0, NULL, 0);
        V cnt = op(&k, NR_OP_ATOMIC_RMW, i32, 3, k.arg[1], cI(&k, i32, 1), NR_NONE);
        sattr(&k, cnt, NR_A_KIND, "add");
        V rel2 = op(&k, NR_OP_ATOMIC_RMW, i32, 3, lock, cI(&k, i32, 0), NR_NONE);
        sattr(&k, rel2, NR_A_KIND, "xchg");
        ret(&k);
        int32_t lk = 0, count = 0, o[NB];
        NrInterpArg args[3] = {buf(&lk, 4, "lock"), buf(&count, 4, "count"), buf(o, sizeof o, "old")};
        Run r = launch(&k, 5, 1, 1, args, 3, NULL, 100000);
        CHECK(r.ok, "cas: %s", r.msg);
        CHECK(count == 5 && lk == 0, "cas spin: count %d lock %d", count, lk);
        /* the last program's block cas: lane 0 saw the free lock and took it (1), the rest saw 1 */
        CHECK(o[0] == 0, "cas lane 0 old %d", o[0]);
        for (int i = 1; i < NB; i++) CHECK(o[i] == 1, "cas lane %d old %d", i, o[i]);
        nr_module_free(m);
    }
}

/* --- control flow ------------------------------------------------------------------------------------------ */
/* for iv in range(lb, ub, step) over iv type dt: out = [sum of iv, trip count]. */
static void check_for(NrDtype dt, int64_t lb, int64_t ub, int64_t step) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[4] = {nr_type_scalar(m, dt), nr_type_scalar(m, dt), nr_type_scalar(m, dt),
                         nr_type_ptr(m, NR_DT_I64, 1)};
    Kb k = kb_begin(m, "loop", 4, types, NULL);
    NrTypeId i64 = ts(&k, NR_DT_I64);
    V fops[5] = {k.arg[0], k.arg[1], k.arg[2], cI(&k, i64, 0), cI(&k, i64, 0)};
    NrTypeId rts[2] = {i64, i64};
    NrOpId loop = nr_build(&k.b, NR_OP_FOR, 5, fops, 2, rts, 1);
    NrBlockId body = k.f->ops[loop].regions[0];
    V iv = nr_block_add_arg(k.f, body, ts(&k, dt)), s = nr_block_add_arg(k.f, body, i64),
      c = nr_block_add_arg(k.f, body, i64);
    Kb l = k;
    l.b = nr_builder_at_end(k.f, body);
    V y[2] = {bin(&l, NR_OP_ADD, s, cast(&l, iv, NR_DT_I64)), bin(&l, NR_OP_ADD, c, cI(&l, i64, 1))};
    nr_build(&l.b, NR_OP_YIELD, 2, y, 0, NULL, 0);
    store(&k, k.arg[3], nr_op_result(k.f, loop, 0), 0);
    store(&k, addptr(&k, k.arg[3], cI(&k, ts(&k, NR_DT_I32), 1)), nr_op_result(k.f, loop, 1), 0);
    ret(&k);
    int64_t out[2] = {-1, -1};
    NrInterpArg args[4] = {iarg(lb), iarg(ub), iarg(step), buf(out, sizeof out, "out")};
    Run r = launch(&k, 1, 1, 1, args, 4, NULL, 1000000);
    CHECK(r.ok, "for %s(%" PRId64 ", %" PRId64 ", %" PRId64 "): %s", dn(dt), lb, ub, step, r.msg);
    /* reference: Python's range over the type's values, stopping where iv + step leaves the type */
    int64_t sum = 0, trips = 0;
    __int128 lo = is_s(dt) ? -((__int128)1 << (bits_of(dt) - 1)) : 0;
    __int128 hi = is_s(dt) ? ((__int128)1 << (bits_of(dt) - 1)) : ((__int128)1 << bits_of(dt));
    __int128 v = ival(dt, iwrap(dt, lb)), u = ival(dt, iwrap(dt, ub)), st = ival(dt, iwrap(dt, step));
    if (!is_s(dt) && bits_of(dt) == 64) {
        v = (uint64_t)lb;
        u = (uint64_t)ub;
        st = step;
    }
    while (v < u && trips < 100000) {
        sum = (int64_t)((uint64_t)sum + (uint64_t)(int64_t)v); /* wraps like the kernel's i64 add */
        trips++;
        v += st;
        if (v < lo || v >= hi) break;
    }
    CHECK(out[0] == sum && out[1] == trips,
          "for %s(%" PRId64 ", %" PRId64 ", %" PRId64 "): sum %" PRId64 " trips %" PRId64 ", want %" PRId64 " %" PRId64,
          dn(dt), lb, ub, step, out[0], out[1], sum, trips);
    nr_module_free(m);
}

static void test_control_flow(void) {
    check_for(NR_DT_I32, 0, 10, 1);
    check_for(NR_DT_I32, -7, 20, 3);
    check_for(NR_DT_I32, 5, 5, 1);                             /* zero trips */
    check_for(NR_DT_I32, 9, -3, 2);                            /* zero trips */
    check_for(NR_DT_I32, INT32_MAX - 5, INT32_MAX, 4);         /* stops before iv overflows */
    check_for(NR_DT_I32, 0x7ffffff0, (int32_t)0x80000010u, 4); /* signed: zero trips */
    check_for(NR_DT_U32, 0x7ffffff0, 0x80000010, 4);           /* unsigned: 8 trips */
    check_for(NR_DT_I64, -((int64_t)1 << 40), -((int64_t)1 << 40) + 50, 7);
    check_for(NR_DT_I8, 100, 127, 20);
    check_for(NR_DT_U64, 0xfffffffffffffff0ull, 0xffffffffffffffffull, 5);
    check_for(NR_DT_U64, 0xfffffffffffffff0ull, 0xffffffffffffffffull, 7); /* the next iv would wrap */
    check_for(NR_DT_I64, INT64_MAX - 5, INT64_MAX, 4);
    for (int t = 0; t < 5; t++)
        check_for(NR_DT_I32, (int64_t)(rnd() % 41) - 20, (int64_t)(rnd() % 41) - 20, (int64_t)(rnd() % 5) + 1);

    /* Carried values that permute: (a, b) = (b, a) n times; and nested loops, if, while. */
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[3] = {nr_type_scalar(m, NR_DT_I32), nr_type_scalar(m, NR_DT_I32), nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "cf", 3, types, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32), v8 = tb1(&k, i32, 8);
    V n = k.arg[0], x = k.arg[1];
    V a0 = arange(&k, 8), b0 = bin(&k, NR_OP_MUL, arange(&k, 8), splat(&k, cI(&k, i32, 10), v8));
    V fops[5] = {cI(&k, i32, 0), n, cI(&k, i32, 1), a0, b0};
    NrTypeId rts[2] = {v8, v8};
    NrOpId sw = nr_build(&k.b, NR_OP_FOR, 5, fops, 2, rts, 1);
    NrBlockId body = k.f->ops[sw].regions[0];
    nr_block_add_arg(k.f, body, i32);
    V a = nr_block_add_arg(k.f, body, v8), b = nr_block_add_arg(k.f, body, v8);
    Kb l = k;
    l.b = nr_builder_at_end(k.f, body);
    V yy[2] = {b, a};
    nr_build(&l.b, NR_OP_YIELD, 2, yy, 0, NULL, 0);
    store(&k, ptrs(&k, k.arg[2], 8), nr_op_result(k.f, sw, 0), 0);
    /* nested: s = sum over i < n, j < i of i*j */
    V f2ops[4] = {cI(&k, i32, 0), n, cI(&k, i32, 1), cI(&k, i32, 0)};
    NrOpId outer = nr_build(&k.b, NR_OP_FOR, 4, f2ops, 1, &i32, 1);
    NrBlockId ob = k.f->ops[outer].regions[0];
    V oi = nr_block_add_arg(k.f, ob, i32), os = nr_block_add_arg(k.f, ob, i32);
    Kb lo = k;
    lo.b = nr_builder_at_end(k.f, ob);
    V f3ops[4] = {cI(&lo, i32, 0), oi, cI(&lo, i32, 1), os};
    NrOpId inner = nr_build(&lo.b, NR_OP_FOR, 4, f3ops, 1, &i32, 1);
    NrBlockId ib = k.f->ops[inner].regions[0];
    V ij = nr_block_add_arg(k.f, ib, i32), is = nr_block_add_arg(k.f, ib, i32);
    Kb li = k;
    li.b = nr_builder_at_end(k.f, ib);
    V isum = bin(&li, NR_OP_ADD, is, bin(&li, NR_OP_MUL, oi, ij));
    nr_build(&li.b, NR_OP_YIELD, 1, &isum, 0, NULL, 0);
    V ires = nr_op_result(k.f, inner, 0);
    nr_build(&lo.b, NR_OP_YIELD, 1, &ires, 0, NULL, 0);
    store(&k, addptr(&k, k.arg[2], cI(&k, i32, 8)), nr_op_result(k.f, outer, 0), 0);
    /* if x > 0: x * 2 else: -x */
    NrOpId iff = nr_build(&k.b, NR_OP_IF, 1, (V[]){cmp(&k, "gt", x, cI(&k, i32, 0))}, 1, &i32, 2);
    Kb t0 = k, t1 = k;
    t0.b = nr_builder_at_end(k.f, k.f->ops[iff].regions[0]);
    t1.b = nr_builder_at_end(k.f, k.f->ops[iff].regions[1]);
    V tv0 = bin(&t0, NR_OP_MUL, x, cI(&t0, i32, 2)), tv1 = op(&t1, NR_OP_NEG, i32, 1, x);
    nr_build(&t0.b, NR_OP_YIELD, 1, &tv0, 0, NULL, 0);
    nr_build(&t1.b, NR_OP_YIELD, 1, &tv1, 0, NULL, 0);
    store(&k, addptr(&k, k.arg[2], cI(&k, i32, 9)), nr_op_result(k.f, iff, 0), 0);
    /* while: the Collatz step count of n (n >= 1) */
    V wops[2] = {n, cI(&k, i32, 0)};
    NrTypeId wts[2] = {i32, i32};
    NrOpId wh = nr_build(&k.b, NR_OP_WHILE, 2, wops, 2, wts, 2);
    NrBlockId w0 = k.f->ops[wh].regions[0], w1 = k.f->ops[wh].regions[1];
    V wv = nr_block_add_arg(k.f, w0, i32), wc = nr_block_add_arg(k.f, w0, i32);
    Kb lw0 = k, lw1 = k;
    lw0.b = nr_builder_at_end(k.f, w0);
    V go = cmp(&lw0, "gt", wv, cI(&lw0, i32, 1));
    V cond[3] = {go, wv, wc};
    nr_build(&lw0.b, NR_OP_CONDITION, 3, cond, 0, NULL, 0);
    V uv = nr_block_add_arg(k.f, w1, i32), uc = nr_block_add_arg(k.f, w1, i32);
    lw1.b = nr_builder_at_end(k.f, w1);
    V odd = cmp(&lw1, "ne", bin(&lw1, NR_OP_REM, uv, cI(&lw1, i32, 2)), cI(&lw1, i32, 0));
    V up = bin(&lw1, NR_OP_ADD, bin(&lw1, NR_OP_MUL, uv, cI(&lw1, i32, 3)), cI(&lw1, i32, 1));
    V down = bin(&lw1, NR_OP_DIV, uv, cI(&lw1, i32, 2));
    V next[2] = {op(&lw1, NR_OP_SELECT, i32, 3, odd, up, down), bin(&lw1, NR_OP_ADD, uc, cI(&lw1, i32, 1))};
    nr_build(&lw1.b, NR_OP_YIELD, 2, next, 0, NULL, 0);
    store(&k, addptr(&k, k.arg[2], cI(&k, i32, 10)), nr_op_result(k.f, wh, 1), 0);
    ret(&k);
    for (int trial = 0; trial < 6; trial++) {
        int nn = trial == 0 ? 0 : (int)(rnd() % 30) + 1, xx = (int)(rnd() % 21) - 10;
        int32_t out[11];
        for (int i = 0; i < 11; i++) out[i] = -12345;
        NrInterpArg args[3] = {iarg(nn), iarg(xx), buf(out, sizeof out, "out")};
        Run r = launch(&k, 1, 1, 1, args, 3, NULL, 0);
        CHECK(r.ok, "control flow: %s", r.msg);
        for (int i = 0; i < 8; i++) CHECK(out[i] == (nn % 2 ? i * 10 : i), "swap n=%d lane %d: %d", nn, i, out[i]);
        int s = 0;
        for (int i = 0; i < nn; i++)
            for (int j = 0; j < i; j++) s += i * j;
        CHECK(out[8] == s, "nested loops n=%d: %d, want %d", nn, out[8], s);
        CHECK(out[9] == (xx > 0 ? 2 * xx : -xx), "if x=%d: %d", xx, out[9]);
        int c = 0;
        for (int64_t v = nn; v > 1; c++) v = v % 2 ? 3 * v + 1 : v / 2;
        CHECK(out[10] == c, "while collatz(%d): %d, want %d", nn, out[10], c);
    }
    nr_module_free(m);
}

/* An endless while loop is stopped by max_steps. */
static void test_max_steps(void) {
    NrModule *m = nr_module_new(NULL);
    Kb k = kb_begin(m, "spin", 0, NULL, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32);
    NrLoc loc = add_source(m);
    V z = cI(&k, i32, 0);
    NrOpId w = nr_build(&k.b, NR_OP_WHILE, 1, &z, 1, &i32, 2);
    Kb a = k, b = k;
    a.b = nr_builder_at_end(k.f, k.f->ops[w].regions[0]);
    V v = nr_block_add_arg(k.f, k.f->ops[w].regions[0], i32);
    a.b.loc = loc;
    V t = cmp(&a, "ge", v, cI(&a, i32, 0));
    V cond[2] = {t, v};
    nr_build(&a.b, NR_OP_CONDITION, 2, cond, 0, NULL, 0);
    b.b = nr_builder_at_end(k.f, k.f->ops[w].regions[1]);
    V u = nr_block_add_arg(k.f, k.f->ops[w].regions[1], i32);
    nr_build(&b.b, NR_OP_YIELD, 1, &u, 0, NULL, 0);
    ret(&k);
    Run r = launch(&k, 1, 1, 1, NULL, 0, NULL, 1000);
    CHECK(!r.ok && strstr(r.msg, "exceeded its limit of 1000 executed ops in program (0, 0, 0)") && r.loc.line == 3,
          "max_steps: ok=%d %s", r.ok, r.msg);
    nr_module_free(m);
}

/* --- grids, calls, shapes ------------------------------------------------------------------------------------ */
static void test_grid(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[1] = {nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "grid", 1, types, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32);
    V p[3], g[3];
    for (int a = 0; a < 3; a++) {
        p[a] = iattr(&k, op(&k, NR_OP_PROGRAM_ID, i32, 0), NR_A_AXIS, a);
        g[a] = iattr(&k, op(&k, NR_OP_NUM_PROGRAMS, i32, 0), NR_A_AXIS, a);
    }
    /* linear = x + gx * (y + gy * z); out[linear] = x + 10 y + 100 z + 1000 gx + 10000 gy + 100000 gz */
    V lin =
        bin(&k, NR_OP_ADD, p[0], bin(&k, NR_OP_MUL, g[0], bin(&k, NR_OP_ADD, p[1], bin(&k, NR_OP_MUL, g[1], p[2]))));
    V val = p[0];
    int w = 10;
    for (int a = 1; a < 6; a++, w *= 10)
        val = bin(&k, NR_OP_ADD, val, bin(&k, NR_OP_MUL, a < 3 ? p[a] : g[a - 3], cI(&k, i32, w)));
    store(&k, addptr(&k, k.arg[0], lin), val, 0);
    ret(&k);
    int32_t out[12];
    for (int i = 0; i < 12; i++) out[i] = -1;
    NrInterpArg args[1] = {buf(out, sizeof out, "out")};
    Run r = launch(&k, 3, 2, 2, args, 1, NULL, 0);
    CHECK(r.ok, "grid: %s", r.msg);
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++)
                CHECK(out[x + 3 * (y + 2 * z)] == x + 10 * y + 100 * z + 3000 + 20000 + 200000, "grid (%d, %d, %d): %d",
                      x, y, z, out[x + 3 * (y + 2 * z)]);
    for (int i = 0; i < 12; i++) out[i] = -1;
    r = launch(&k, 0, 1, 1, args, 1, NULL, 0);
    CHECK(r.ok && out[0] == -1, "an empty grid runs nothing");
    r = launch(&k, 4, 1, 1, args, 1, NULL, 0); /* program 3 writes out[3 + ...]: in bounds */
    CHECK(r.ok, "grid 4: %s", r.msg);
    nr_module_free(m);
}

static void test_call(void) {
    NrModule *m = nr_module_new(NULL);
    /* helper(x, y) -> x * x + y on 16 floats */
    NrTypeId f32 = nr_type_scalar(m, NR_DT_F32), v16 = nr_type_block(m, f32, 1, (int32_t[]){16});
    NrTypeId ht[2] = {v16, v16};
    NrFunc *h = nr_func_new(m, "helper", 2, ht, 1, &v16);
    NrBuilder hb = nr_builder_at_end(h, h->body);
    V hx = h->blocks[h->body].args[0], hy = h->blocks[h->body].args[1];
    V sq = nr_build_binary(&hb, NR_OP_MUL, hx, hx);
    V res = nr_build_binary(&hb, NR_OP_ADD, sq, hy);
    nr_build(&hb, NR_OP_RETURN, 1, &res, 0, NULL, 0);
    NrTypeId types[2] = {nr_type_ptr(m, NR_DT_F32, 1), nr_type_ptr(m, NR_DT_F32, 1)};
    Kb k = kb_begin(m, "caller", 2, types, NULL);
    V x = load(&k, ptrs(&k, k.arg[0], 16), 0, 0);
    V c1 = nr_op_result(k.f, nr_build(&k.b, NR_OP_CALL, 2, (V[]){x, x}, 1, &v16, 0), 0);
    nr_op_set_str(k.f, def(&k, c1), NR_A_CALLEE, "helper");
    V c2 = nr_op_result(k.f, nr_build(&k.b, NR_OP_CALL, 2, (V[]){c1, x}, 1, &v16, 0), 0);
    nr_op_set_str(k.f, def(&k, c2), NR_A_CALLEE, "helper");
    store(&k, ptrs(&k, k.arg[1], 16), c2, 0);
    ret(&k);
    float in[16], out[16];
    for (int i = 0; i < 16; i++) in[i] = (float)(rnd_unit() * 2 - 1), out[i] = NAN;
    NrInterpArg args[2] = {buf(in, sizeof in, "x"), buf(out, sizeof out, "out")};
    Run r = launch(&k, 2, 1, 1, args, 2, NULL, 0);
    CHECK(r.ok, "call: %s", r.msg);
    for (int i = 0; i < 16; i++) {
        float c = in[i] * in[i] + in[i];
        float want = c * c + in[i];
        CHECK(out[i] == want, "call lane %d: %g, want %g", i, out[i], want);
    }
    nr_module_free(m);
}

static void test_shapes(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[2] = {nr_type_ptr(m, NR_DT_I32, 1), nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "shapes", 2, types, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32);
    int32_t s3[3] = {2, 4, 8}, s2[2] = {4, 8};
    /* trans of a 3-D block with order [2, 0, 1]: r[i][j][l] = a[j][l][i] */
    V a = reshape(&k, arange(&k, 32), 2, s2);
    V a3 = load(&k, ptrs_nd(&k, k.arg[0], 3, s3), 0, 0);
    int32_t ts3[3] = {8, 2, 4};
    V t3 = op(&k, NR_OP_TRANS, tb(&k, i32, 3, ts3), 1, a3);
    nr_op_set_ints(k.f, def(&k, t3), NR_A_ORDER, 3, (int64_t[]){2, 0, 1});
    V p = ptrs_nd(&k, k.arg[1], 3, ts3);
    store(&k, p, t3, 0);
    /* 2-D trans, then broadcasts of both kinds */
    int32_t t2s[2] = {8, 4};
    V t2 = op(&k, NR_OP_TRANS, tb(&k, i32, 2, t2s), 1, a);
    nr_op_set_ints(k.f, def(&k, t2), NR_A_ORDER, 2, (int64_t[]){1, 0});
    V base = addptr(&k, k.arg[1], cI(&k, i32, 64));
    store(&k, ptrs_nd(&k, base, 2, t2s), t2, 0);
    V row = expand(&k, arange(&k, 8), 0), col = expand(&k, arange(&k, 4), 1);
    V sum =
        bin(&k, NR_OP_ADD, bcast(&k, row, tb(&k, i32, 2, s2)),
            bin(&k, NR_OP_MUL, bcast(&k, col, tb(&k, i32, 2, s2)), splat(&k, cI(&k, i32, 100), tb(&k, i32, 2, s2))));
    store(&k, ptrs_nd(&k, addptr(&k, k.arg[1], cI(&k, i32, 96)), 2, s2), sum, 0);
    ret(&k);
    int32_t in[64], out[128];
    for (int i = 0; i < 64; i++) in[i] = (int32_t)(rnd() % 1000);
    for (int i = 0; i < 128; i++) out[i] = -1;
    NrInterpArg args[2] = {buf(in, sizeof in, "in"), buf(out, sizeof out, "out")};
    Run r = launch(&k, 1, 1, 1, args, 2, NULL, 0);
    CHECK(r.ok, "shapes: %s", r.msg);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 2; j++)
            for (int l = 0; l < 4; l++)
                CHECK(out[(i * 2 + j) * 4 + l] == in[(j * 4 + l) * 8 + i], "trans 3-d [%d,%d,%d]", i, j, l);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) CHECK(out[64 + i * 4 + j] == j * 8 + i, "trans 2-d [%d,%d]", i, j);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) CHECK(out[96 + i * 8 + j] == j + 100 * i, "broadcast [%d,%d]", i, j);
    nr_module_free(m);
}

/* Pointers: pointer-to-pointer arithmetic scales by 8, pointers stored in
 * memory can be loaded and followed, and constants of every float type
 * round once. */
static void test_pointers_consts(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[4] = {nr_type_ptr(m, NR_DT_F32, 2), nr_type_ptr(m, NR_DT_F32, 1), nr_type_ptr(m, NR_DT_I64, 1),
                         nr_type_ptr(m, NR_DT_U16, 1)};
    Kb k = kb_begin(m, "ptrs", 4, types, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32), i64 = ts(&k, NR_DT_I64);
    V q = addptr(&k, k.arg[0], cI(&k, i32, 3));
    store(&k, k.arg[2], op(&k, NR_OP_PTRTOINT, i64, 1, q), 0);
    V fp = load(&k, addptr(&k, k.arg[0], cI(&k, i32, 1)), 0, 0); /* the second pointer stored in arg 0 */
    V f = load(&k, addptr(&k, fp, cI(&k, i32, 2)), 0, 0);
    store(&k, addptr(&k, k.arg[1], cI(&k, i32, 3)), f, 0);
    V h = op(&k, NR_OP_BITCAST, ts(&k, NR_DT_U16), 1, cF(&k, ts(&k, NR_DT_F16), 0.1));
    store(&k, k.arg[3], h, 0);
    V bh = op(&k, NR_OP_BITCAST, ts(&k, NR_DT_U16), 1, cF(&k, ts(&k, NR_DT_BF16), -3.14159));
    store(&k, addptr(&k, k.arg[3], cI(&k, i32, 1)), bh, 0);
    ret(&k);
    uint64_t pp[2];
    float fl[4] = {1, 2, 3, -1};
    int64_t addr = 0;
    uint16_t hs[2] = {0, 0};
    pp[0] = 0;
    pp[1] = NR_INTERP_BASE(1) + ((uintptr_t)fl & 0xfff); /* the virtual address of argument 1 */
    NrInterpArg args[4] = {buf(pp, sizeof pp, "pp"), buf(fl, sizeof fl, "fl"), buf(&addr, 8, "addr"), buf(hs, 4, "h")};
    Run r = launch(&k, 1, 1, 1, args, 4, NULL, 0);
    CHECK(r.ok, "pointers: %s", r.msg);
    CHECK((uint64_t)addr == NR_INTERP_BASE(0) + ((uintptr_t)pp & 0xfff) + 24,
          "addptr on ptr<ptr<f32>> scales by 8: 0x%" PRIx64, (uint64_t)addr);
    CHECK(fl[3] == 3.0f, "load through a loaded pointer: %g", fl[3]);
    CHECK(hs[0] == nr_f64_to_f16(0.1) && hs[1] == nr_f64_to_bf16(-3.14159), "f16/bf16 constants: 0x%x 0x%x", hs[0],
          hs[1]);
    nr_module_free(m);
}

/* Argument checking. */
static void test_args(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[2] = {nr_type_ptr(m, NR_DT_F32, 1), nr_type_scalar(m, NR_DT_I32)};
    static const char *const names[2] = {"x_ptr", "n"};
    Kb k = kb_begin(m, "args", 2, types, names);
    ret(&k);
    float x[4];
    NrInterpArg good[2] = {buf(x, sizeof x, NULL), iarg(4)};
    Run r = launch(&k, 1, 1, 1, good, 1, NULL, 0);
    CHECK(!r.ok && strcmp(r.msg, "kernel 'args' takes 2 runtime arguments, got 1") == 0, "arg count: %s", r.msg);
    NrInterpArg swapped[2] = {iarg(4), buf(x, sizeof x, NULL)};
    r = launch(&k, 1, 1, 1, swapped, 2, NULL, 0);
    CHECK(!r.ok && strcmp(r.msg, "argument 'x_ptr' must be a buffer (the parameter is a pointer)") == 0, "arg kind: %s",
          r.msg);
    r = launch(&k, 1, 1, 1, good, 2, NULL, 0);
    CHECK(r.ok, "good args: %s", r.msg);
    nr_module_free(m);
}

/* --- print and assert ------------------------------------------------------------------------------------------ */
static void test_print(void) {
    NrModule *m = nr_module_new(NULL);
    Kb k = kb_begin(m, "pr", 0, NULL, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32), f32 = ts(&k, NR_DT_F32), f16 = ts(&k, NR_DT_F16);
    V pid = iattr(&k, op(&k, NR_OP_PROGRAM_ID, i32, 0), NR_A_AXIS, 0);
    V x = bin(&k, NR_OP_SUB, arange(&k, 4), splat(&k, pid, tb1(&k, i32, 4)));
    nr_build(&k.b, NR_OP_PRINT, 1, &x, 0, NULL, 0);
    nr_op_set_str(k.f, k.f->blocks[k.f->body].last, NR_A_PREFIX, "x: ");
    V fv = cF(&k, f32, 0.1), hv = cF(&k, f16, -2.5), inf = cF(&k, f32, INFINITY);
    V two[2] = {fv, hv};
    nr_build(&k.b, NR_OP_PRINT, 2, two, 0, NULL, 0);
    nr_op_set_str(k.f, k.f->blocks[k.f->body].last, NR_A_PREFIX, "pair ");
    nr_build(&k.b, NR_OP_PRINT, 1, &inf, 0, NULL, 0);
    V m2 = reshape(&k, arange(&k, 4), 2, (int32_t[]){2, 2});
    nr_build(&k.b, NR_OP_PRINT, 1, &m2, 0, NULL, 0);
    nr_op_set_bool(k.f, k.f->blocks[k.f->body].last, NR_A_HEX, true);
    ret(&k);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    Run r = launch(&k, 2, 1, 1, NULL, 0, out, 0);
    fclose(out);
    CHECK(r.ok, "print: %s", r.msg);
    const char *want = "pid (0, 0, 0) idx (0) x: 0\n"
                       "pid (0, 0, 0) idx (1) x: 1\n"
                       "pid (0, 0, 0) idx (2) x: 2\n"
                       "pid (0, 0, 0) idx (3) x: 3\n"
                       "pid (0, 0, 0) idx () pair (operand 0) 0.1\n"
                       "pid (0, 0, 0) idx () pair (operand 1) -2.5\n"
                       "pid (0, 0, 0) idx () inf\n"
                       "pid (0, 0, 0) idx (0, 0) 0x00000000\n"
                       "pid (0, 0, 0) idx (0, 1) 0x00000001\n"
                       "pid (0, 0, 0) idx (1, 0) 0x00000002\n"
                       "pid (0, 0, 0) idx (1, 1) 0x00000003\n"
                       "pid (1, 0, 0) idx (0) x: -1\n"
                       "pid (1, 0, 0) idx (1) x: 0\n"
                       "pid (1, 0, 0) idx (2) x: 1\n"
                       "pid (1, 0, 0) idx (3) x: 2\n"
                       "pid (1, 0, 0) idx () pair (operand 0) 0.1\n"
                       "pid (1, 0, 0) idx () pair (operand 1) -2.5\n"
                       "pid (1, 0, 0) idx () inf\n"
                       "pid (1, 0, 0) idx (0, 0) 0x00000000\n"
                       "pid (1, 0, 0) idx (0, 1) 0x00000001\n"
                       "pid (1, 0, 0) idx (1, 0) 0x00000002\n"
                       "pid (1, 0, 0) idx (1, 1) 0x00000003\n";
    CHECK(text && strcmp(text, want) == 0, "print output:\n%s\nwant:\n%s", text ? text : "", want);
    free(text);
    nr_module_free(m);
}

static void test_assert(void) {
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[1] = {nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "as", 1, types, NULL);
    NrTypeId i32 = ts(&k, NR_DT_I32);
    NrLoc loc = add_source(m);
    V pid = iattr(&k, op(&k, NR_OP_PROGRAM_ID, i32, 0), NR_A_AXIS, 0);
    V offs = bin(&k, NR_OP_ADD, arange(&k, 8), splat(&k, bin(&k, NR_OP_MUL, pid, cI(&k, i32, 8)), tb1(&k, i32, 8)));
    V c = cmp(&k, "lt", offs, splat(&k, cI(&k, i32, 13), tb1(&k, i32, 8)));
    k.b.loc = loc;
    nr_build(&k.b, NR_OP_ASSERT, 1, &c, 0, NULL, 0);
    nr_op_set_str(k.f, k.f->blocks[k.f->body].last, NR_A_MSG, "offs < 13");
    k.b.loc = (NrLoc){0, 0, 0};
    store(&k, addptr(&k, k.arg[0], pid), pid, 0);
    ret(&k);
    int32_t out[4] = {-1, -1, -1, -1};
    NrInterpArg args[1] = {buf(out, sizeof out, "out")};
    Run r = launch(&k, 4, 1, 1, args, 1, NULL, 0);
    CHECK(!r.ok &&
              strcmp(r.msg, "device assertion failed: offs < 13, in program (1, 0, 0), element 5 of the block "
                            "(index [5])") == 0 &&
              r.loc.line == 3,
          "assert: %s", r.msg);
    CHECK(out[0] == 0 && out[1] == -1 && out[2] == -1, "the launch stops at the failing program");
    nr_module_free(m);
}

/* --- kernels from IR text ------------------------------------------------------------------------------- */
static NrModule *parse_ir(NrArena *a, NrDiags *d, const char *text, size_t len, const char *name) {
    NrModule *m = nr_module_parse(a, text, len, name, d);
    CHECK(m != NULL, "%s does not parse:\n%s", name, nr_diags_render(a, d));
    return m;
}

/* The benchmark's matmul kernel, bench/interp_matmul.ir, on sizes that are
 * not multiples of the blocks (masked K tail, wrapped rows, masked store),
 * against the documented dot order applied block by block. */
static void test_ir_matmul(void) {
    FILE *fp = fopen("bench/interp_matmul.ir", "rb");
    CHECK(fp != NULL, "cannot open bench/interp_matmul.ir (run the tests from the repository root)");
    if (!fp) return;
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrModule *m = parse_ir(&a, &d, text, len, "bench/interp_matmul.ir");
    NrFunc *f = m ? nr_module_find_func(m, "matmul_kernel") : NULL;
    if (f) {
        enum { M = 96, N = 80, K = 72 };
        static float A[M * K], B[K * N], C[M * N];
        for (int i = 0; i < M * K; i++) A[i] = (float)(rnd_unit() * 2 - 1);
        for (int i = 0; i < K * N; i++) B[i] = (float)(rnd_unit() * 2 - 1);
        for (int i = 0; i < M * N; i++) C[i] = NAN;
        NrInterpArg args[12] = {buf(A, sizeof A, NULL), buf(B, sizeof B, NULL), buf(C, sizeof C, NULL),
                                iarg(M), iarg(N), iarg(K), iarg(K), iarg(1), iarg(N), iarg(1), iarg(N), iarg(1)};
        uint32_t grid[3] = {((M + 63) / 64) * ((N + 63) / 64), 1, 1};
        NrInterpOptions o = {NULL, 0};
        bool ok = nr_interp_launch(f, grid, args, 12, &o, &d);
        CHECK(ok, "matmul.ir: %s", nr_diags_render(&a, &d));
        int bad = 0;
        for (int i = 0; i < M && ok; i++)
            for (int j = 0; j < N; j++) {
                float acc = 0;
                for (int k0 = 0; k0 < K; k0 += 32) {
                    float s = 0;
                    for (int k = k0; k < k0 + 32; k++) {
                        float p = k < K ? nr_f32_round_tf32(A[i * K + k]) * nr_f32_round_tf32(B[k * N + j]) : 0.0f;
                        s = s + p;
                    }
                    acc = acc + s;
                }
                if (acc != C[i * N + j] && bad++ < 3)
                    CHECK(0, "matmul.ir C[%d][%d] = %.9g, want %.9g", i, j, C[i * N + j], acc);
            }
    }
    nr_arena_free(&a);
}

/* A kernel written as IR text: its ops' locations are their lines in the
 * text, and a fault points there. */
static void test_ir_text_fault(void) {
    static const char text[] =
        "module {\n"
        "  func @copy(%x: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}) kernel {\n"
        "    %0 = arange {end = 64, start = 0} : tensor<64xi32>\n"
        "    %1 = splat %x : tensor<64xptr<f32>>\n"
        "    %2 = addptr %1, %0 : tensor<64xptr<f32>>\n"
        "    %3 = load %2, _, _ : tensor<64xf32>\n"
        "    %4 = splat %out : tensor<64xptr<f32>>\n"
        "    %5 = addptr %4, %0 : tensor<64xptr<f32>>\n"
        "    store %5, %3, _\n"
        "    return\n"
        "  }\n"
        "}\n";
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrModule *m = parse_ir(&a, &d, text, sizeof text - 1, "copy.ir");
    if (m) {
        float x[64], out[64];
        for (int i = 0; i < 64; i++) x[i] = (float)i, out[i] = -1;
        NrInterpArg args[2] = {buf(x, sizeof x, NULL), buf(out, sizeof out, NULL)};
        uint32_t grid[3] = {1, 1, 1};
        bool ok = nr_interp_launch(m->funcs[0], grid, args, 2, NULL, &d);
        CHECK(ok && out[63] == 63.0f, "copy.ir: %s", nr_diags_render(&a, &d));
        args[0].bytes = 60 * sizeof(float); /* the load now overruns x at lane 60 */
        ok = nr_interp_launch(m->funcs[0], grid, args, 2, NULL, &d);
        const char *text_out = nr_diags_render(&a, &d);
        CHECK(!ok && strstr(text_out, "copy.ir:6:") && strstr(text_out, "out-of-bounds load: program (0, 0, 0), "
              "element 60 of the block (index [60]) reads bytes 240..243 of argument 'x' (240 bytes)"),
              "copy.ir fault:\n%s", text_out);
    }
    nr_arena_free(&a);
}

/* gather (out-of-range indices give 0) and histogram (masked, values
 * outside the bins not counted) on fresh random data. */
static void test_gather_histogram(void) {
    enum { N = 64, NI = 32, BINS = 16 };
    NrModule *m = nr_module_new(NULL);
    NrTypeId types[5] = {nr_type_ptr(m, NR_DT_F32, 1), nr_type_ptr(m, NR_DT_I64, 1), nr_type_ptr(m, NR_DT_F32, 1),
                         nr_type_ptr(m, NR_DT_I16, 1), nr_type_ptr(m, NR_DT_I32, 1)};
    Kb k = kb_begin(m, "gh", 5, types, NULL);
    NrTypeId i16 = ts(&k, NR_DT_I16);
    V src = load(&k, addptr(&k, splat(&k, k.arg[0], tb1(&k, tv(&k, k.arg[0]), N)), arange(&k, N)), 0, 0);
    V idx = load(&k, addptr(&k, splat(&k, k.arg[1], tb1(&k, tv(&k, k.arg[1]), NI)), arange(&k, NI)), 0, 0);
    V g = iattr(&k, op(&k, NR_OP_GATHER, tb1(&k, ts(&k, NR_DT_F32), NI), 2, src, idx), NR_A_AXIS, 0);
    store(&k, addptr(&k, splat(&k, k.arg[2], tb1(&k, tv(&k, k.arg[2]), NI)), arange(&k, NI)), g, 0);
    V x = load(&k, addptr(&k, splat(&k, k.arg[3], tb1(&k, tv(&k, k.arg[3]), N)), arange(&k, N)), 0, 0);
    V mk = cmp(&k, "ne", x, cI(&k, tb1(&k, i16, N), 5));
    V h = op(&k, NR_OP_HISTOGRAM, tb1(&k, ts(&k, NR_DT_I32), BINS), 2, x, mk);
    store(&k, addptr(&k, splat(&k, k.arg[4], tb1(&k, tv(&k, k.arg[4]), BINS)), arange(&k, BINS)), h, 0);
    ret(&k);
    float sv[N], gv[NI];
    int64_t iv[NI];
    int16_t xv[N];
    int32_t hv[BINS], want[BINS] = {0};
    for (int i = 0; i < N; i++) sv[i] = (float)(rnd_unit() * 100 - 50), xv[i] = (int16_t)(rnd() % (BINS + 8)) - 4;
    for (int i = 0; i < NI; i++) iv[i] = (int64_t)(rnd() % (N + 16)) - 8;
    iv[0] = INT64_MIN, iv[1] = (int64_t)1 << 32; /* wide indices far outside */
    for (int i = 0; i < NI; i++) gv[i] = NAN;
    for (int i = 0; i < BINS; i++) hv[i] = -1;
    for (int i = 0; i < N; i++)
        if (xv[i] != 5 && xv[i] >= 0 && xv[i] < BINS) want[xv[i]]++;
    NrInterpArg args[5] = {buf(sv, sizeof sv, "src"), buf(iv, sizeof iv, "idx"), buf(gv, sizeof gv, "g"),
                           buf(xv, sizeof xv, "x"), buf(hv, sizeof hv, "h")};
    Run r = launch(&k, 1, 1, 1, args, 5, NULL, 0);
    CHECK(r.ok, "gather/histogram: %s", r.msg);
    for (int i = 0; i < NI; i++) {
        float w = iv[i] >= 0 && iv[i] < N ? sv[iv[i]] : 0.0f;
        CHECK(memcmp(&gv[i], &w, sizeof w) == 0, "gather %d (index %lld): %g, want %g", i, (long long)iv[i], gv[i], w);
    }
    for (int i = 0; i < BINS; i++) CHECK(hv[i] == want[i], "histogram bin %d: %d, want %d", i, hv[i], want[i]);
    nr_module_free(m);
}

int main(void) {
    const char *env = getenv("NR_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    rng_state = seed;
    test_int_elementwise();
    test_int_known();
    test_float_elementwise();
    test_float_math();
    test_cmp_select();
    test_casts();
    test_reduce();
    test_argreduce();
    test_dot();
    test_masked_loads();
    test_faults();
    test_fault_2d();
    test_random_addresses();
    test_atomics();
    test_gather_histogram();
    test_control_flow();
    test_max_steps();
    test_grid();
    test_call();
    test_shapes();
    test_pointers_consts();
    test_args();
    test_print();
    test_assert();
    test_ir_matmul();
    test_ir_text_fault();
    if (failures) {
        printf("test_interp: %d of %d checks failed (seed %llu)\n", failures, checks, (unsigned long long)seed);
        return 1;
    }
    printf("test_interp: ok (%d checks)\n", checks);
    return 0;
}
