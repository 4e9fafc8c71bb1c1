/* test_ptx_sem.h - the emitter's per-element instruction sequences,
 * evaluated on the CPU, against the interpreter (part of test_ptx.c). */

enum { SEM_N = 512 };

/* An element of dtype dt as the emitter holds it. */
static NrPv sem_imm(NrDtype dt, uint64_t bits) {
    int w = nr_dtype_info[dt].bits;
    switch (nr_ptx_kind(dt)) {
    case NR_PK_P: return nr_pv_pred(bits & 1);
    case NR_PK_I32:
        if (w < 32) {
            uint64_t m = (1ull << w) - 1;
            bits &= m;
            if (nr_dt_is_signed(dt) && (bits >> (w - 1) & 1)) bits |= ~m;
        }
        return nr_pv_imm(NR_PK_I32, bits & 0xffffffffu);
    case NR_PK_H: return nr_pv_imm(NR_PK_H, bits & (w == 8 ? 0xff : 0xffff));
    default: return nr_pv_imm(nr_ptx_kind(dt), bits);
    }
}

/* The storage bits of an evaluated element. */
static uint64_t sem_bits(NrDtype dt, NrPv v) {
    int w = dt == NR_DT_I1 ? 1 : nr_dtype_info[dt].bits;
    return w >= 64 ? v.c : v.c & ((1ull << w) - 1);
}

static double sem_fval(NrDtype dt, uint64_t b) {
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

/* Interesting values of dt (as bits) followed by random ones. */
static void sem_inputs(NrDtype dt, uint64_t *v, int n, int salt) {
    int k = 0, w = nr_dtype_info[dt].bits;
    uint64_t mask = w >= 64 ? ~0ull : (1ull << w) - 1;
    if (nr_dt_is_float(dt)) {
        static const double specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, 1e10, -1e10,
                                          1e-3, 65504.0, 448.0, 57344.0, 1e30, -1e30, 1e-30, 1e300, 1e-300,
                                          INFINITY, -INFINITY, NAN, 0.1, -0.1, 3.14159, 100.0, 0.75};
        for (size_t i = 0; i < NR_COUNTOF(specials) && k < n; i++) {
            double x = specials[i];
            uint64_t b;
            switch (dt) {
            case NR_DT_F64: memcpy(&b, &x, 8); break;
            case NR_DT_F32: b = nr_fp_round(x, NR_FPF_F32, false); break;
            case NR_DT_F16: b = nr_fp_round(x, NR_FPF_F16, false); break;
            case NR_DT_BF16: b = nr_fp_round(x, NR_FPF_BF16, false); break;
            case NR_DT_F8E4NV: b = nr_fp_round(x, NR_FPF_F8E4NV, false); break;
            default: b = nr_fp_round(x, NR_FPF_F8E5, false); break;
            }
            v[k++] = b;
        }
        /* The smallest and largest subnormals and normals. */
        if (k + 4 < n) {
            v[k++] = 1;
            v[k++] = mask >> 1 & (dt == NR_DT_F64 ? 0x000fffffffffffffull : dt == NR_DT_F32 ? 0x7fffff : 0x3ff);
            v[k++] = (1ull << (w - 1)) | 1;
            v[k++] = dt == NR_DT_F32 ? 0x7f7fffff : dt == NR_DT_F64 ? 0x7fefffffffffffffull : mask >> 2;
        }
    } else {
        int64_t specials[] = {0, 1, -1, 2, -2, 3, 7, w - 1, w, w + 1, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256,
                              -128, -129, 32767, -32768, 65535, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, 1000, -1000};
        for (size_t i = 0; i < NR_COUNTOF(specials) && k < n; i++) v[k++] = (uint64_t)specials[i] & mask;
        if (k < n) v[k++] = (mask >> 1) + 1; /* MIN */
        if (k < n) v[k++] = mask >> 1;       /* MAX */
    }
    for (int i = 0; i < salt % 7 && k < n; i++) v[k++] = rnd() & 3;
    while (k < n) {
        uint64_t r = rnd();
        if (rnd() % 4 == 0) r &= 0xff; /* small values for division and shifts */
        v[k++] = r & mask;
    }
    if (dt == NR_DT_I1)
        for (int i = 0; i < n; i++) v[i] &= 1;
}

/* Runs `op` of the generated kernel text on the interpreter. */
static bool sem_interp(const char *text, void **bufs, const size_t *bytes, int nbufs, Kern *k) {
    if (!kern_parse(k, text, 4)) return false;
    CHECK(k->f != NULL, "kernel does not parse without its layouts:\n%s", text);
    if (!k->f) return false;
    NrInterpArg args[8];
    memset(args, 0, sizeof args);
    for (int i = 0; i < nbufs; i++) {
        args[i].kind = NR_IA_BUFFER;
        args[i].data = bufs[i];
        args[i].bytes = bytes[i];
    }
    uint32_t grid[3] = {1, 1, 1};
    bool ok = nr_interp_launch(k->f, grid, args, nbufs, NULL, &k->d);
    CHECK(ok, "interpreter: %s\n%s", nr_diags_render(&k->a, &k->d), text);
    return ok;
}

static void sem_store(NrDtype dt, void *buf, int i, uint64_t b) {
    switch (dt == NR_DT_I1 ? 1 : esz(dt)) {
    case 1: ((uint8_t *)buf)[i] = (uint8_t)b; break;
    case 2: ((uint16_t *)buf)[i] = (uint16_t)b; break;
    case 4: ((uint32_t *)buf)[i] = (uint32_t)b; break;
    default: ((uint64_t *)buf)[i] = b; break;
    }
}

static uint64_t sem_load(NrDtype dt, const void *buf, int i) {
    switch (dt == NR_DT_I1 ? 1 : esz(dt)) {
    case 1: return ((const uint8_t *)buf)[i];
    case 2: return ((const uint16_t *)buf)[i];
    case 4: return ((const uint32_t *)buf)[i];
    default: return ((const uint64_t *)buf)[i];
    }
}

/* Equal bits, or both NaN, or (tol > 0) within tol ulps-ish relative error. */
static bool sem_same(NrDtype dt, uint64_t got, uint64_t want, double tol) {
    if (got == want) return true;
    if (!nr_dt_is_float(dt)) return false;
    double g = sem_fval(dt, got), w = sem_fval(dt, want);
    if (g != g && w != w) return true;
    if (tol <= 0) return false;
    /* an infinity matches only itself, or (within tol >= 1 ulp) the largest
     * finite value next to it: a result 0.7 ulp above that value rounds to
     * infinity, and one computed 1 ulp low stays finite */
    if (isinf(w) || isinf(g)) return g == w || (tol >= 1 && (got > want ? got - want : want - got) == 1);
    double eps = dt == NR_DT_F64 ? 0x1p-52 : dt == NR_DT_F32 ? 0x1p-23 : dt == NR_DT_F16 ? 0x1p-10
                 : dt == NR_DT_BF16 ? 0x1p-7 : 0x1p-2;
    double tiny = dt == NR_DT_F64 ? 0x1p-1000 : dt == NR_DT_F32 ? 0x1p-120 : 0x1p-10;
    return fabs(g - w) <= tol * eps * fabs(w) + tiny;
}

/* A kernel applying `op` elementwise to nin inputs of dtype in, result out. */
static char *sem_kernel(const char *op, const char *attrs, NrDtype in, NrDtype out, int nin, int n) {
    Txt t = {0};
    tx(&t, "module {\n  func @k(");
    for (int i = 0; i < nin; i++) tx(&t, "%%a%d: ptr<%s> {divisibility = 16}, ", i, dn(in));
    tx(&t, "%%o: ptr<%s> {divisibility = 16}) kernel {\n", dn(out));
    tx(&t, "    %%i = arange {end = %d, start = 0} : tensor<%dxi32, #L1>\n", n, n);
    for (int i = 0; i < nin; i++) {
        tx(&t, "    %%p%d = splat %%a%d : tensor<%dxptr<%s>, #L1>\n", i, i, n, dn(in));
        tx(&t, "    %%q%d = addptr %%p%d, %%i : tensor<%dxptr<%s>, #L1>\n", i, i, n, dn(in));
        tx(&t, "    %%x%d = load %%q%d, _, _ : tensor<%dx%s, #L1>\n", i, i, n, dn(in));
    }
    tx(&t, "    %%r = %s", op);
    for (int i = 0; i < nin; i++) tx(&t, "%s%%x%d", i ? ", " : " ", i);
    tx(&t, "%s%s%s : tensor<%dx%s, #L1>\n", *attrs ? " {" : "", attrs, *attrs ? "}" : "", n, dn(out));
    tx(&t, "    %%po = splat %%o : tensor<%dxptr<%s>, #L1>\n", n, dn(out));
    tx(&t, "    %%qo = addptr %%po, %%i : tensor<%dxptr<%s>, #L1>\n", n, dn(out));
    tx(&t, "    store %%qo, %%r, _\n    return\n  }\n}\n");
    return t.s;
}

typedef NrPv (*SemFn)(NrPtx *p, const void *ctx, const NrPv *x);

/* Runs op on the interpreter and the evaluated sequence on the same inputs. */
static void sem_compare(const char *what, const char *op, const char *attrs, NrDtype in, NrDtype out, int nin,
                        SemFn fn, const void *ctx, double tol, int sm) {
    uint64_t *v[4];
    void *bufs[5];
    size_t bytes[5];
    int es_in = in == NR_DT_I1 ? 1 : esz(in), es_out = out == NR_DT_I1 ? 1 : esz(out);
    for (int i = 0; i < nin; i++) {
        v[i] = malloc(sizeof(uint64_t) * SEM_N);
        sem_inputs(in, v[i], SEM_N, i);
        if (i > 0) /* pair every special with every other in the first block */
            for (int j = 0; j < 40 && j < SEM_N / 8; j++) v[i][j] = v[0][(j * 7 + i) % 40];
        bufs[i] = malloc((size_t)es_in * SEM_N);
        bytes[i] = (size_t)es_in * SEM_N;
        for (int j = 0; j < SEM_N; j++) sem_store(in, bufs[i], j, v[i][j]);
    }
    bufs[nin] = malloc((size_t)es_out * SEM_N);
    bytes[nin] = (size_t)es_out * SEM_N;
    memset(bufs[nin], 0xa5, bytes[nin]);
    char *text = sem_kernel(op, attrs, in, out, nin, SEM_N);
    Kern k;
    if (sem_interp(text, bufs, bytes, nin + 1, &k)) {
        NrArena ea;
        nr_arena_init(&ea);
        NrPtx *p = nr_ptx_eval_new(&ea, sm);
        int bad = 0;
        for (int j = 0; j < SEM_N; j++) {
            NrPv x[4];
            for (int i = 0; i < nin; i++) x[i] = sem_imm(in, v[i][j]);
            NrPv r = fn(p, ctx, x);
            uint64_t got = sem_bits(out, r), want = sem_load(out, bufs[nin], j);
            if (!sem_same(out, got, want, tol) && bad++ < 4)
                CHECK(0, "%s sm_%d on %s(%#llx, %#llx, %#llx): got %#llx (%g), want %#llx (%g)", what, sm, dn(in),
                      (unsigned long long)v[0][j], (unsigned long long)(nin > 1 ? v[1][j] : 0),
                      (unsigned long long)(nin > 2 ? v[2][j] : 0), (unsigned long long)got,
                      nr_dt_is_float(out) ? sem_fval(out, got) : 0.0, (unsigned long long)want,
                      nr_dt_is_float(out) ? sem_fval(out, want) : 0.0);
        }
        checks++;
        nr_arena_free(&ea);
    }
    kern_free(&k);
    free(text);
    for (int i = 0; i <= nin; i++) free(bufs[i]);
    for (int i = 0; i < nin; i++) free(v[i]);
}

typedef struct SemOp {
    NrOpcode opc;
    NrDtype dt, to;
    bool nanall, rtz;
    int pred;
} SemOp;

static NrPv sem_binary(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemOp *s = ctx;
    return nr_pe_binary(p, s->opc, s->dt, s->nanall, x[0], x[1]);
}
static NrPv sem_unary(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemOp *s = ctx;
    return nr_pe_unary(p, s->opc, s->dt, x[0]);
}
static NrPv sem_fma(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemOp *s = ctx;
    return nr_pe_fma(p, s->dt, x[0], x[1], x[2]);
}
static NrPv sem_cmp(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemOp *s = ctx;
    return nr_pe_cmp(p, s->pred, s->dt, x[0], x[1]);
}
static NrPv sem_cast(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemOp *s = ctx;
    return nr_pe_cast(p, s->dt, s->to, s->rtz, x[0]);
}

static const NrDtype all_dts[] = {NR_DT_I1,  NR_DT_I8,  NR_DT_I16,    NR_DT_I32,   NR_DT_I64,
                                  NR_DT_U8,  NR_DT_U16, NR_DT_U32,    NR_DT_U64,   NR_DT_F8E4NV,
                                  NR_DT_F8E5, NR_DT_F16, NR_DT_BF16, NR_DT_F32, NR_DT_F64};

static void sem_binaries(int sm) {
    static const struct {
        NrOpcode opc;
        const char *name;
        bool ints, floats;
    } ops[] = {
        {NR_OP_ADD, "add", true, true},      {NR_OP_SUB, "sub", true, true},       {NR_OP_MUL, "mul", true, true},
        {NR_OP_DIV, "div", true, true},      {NR_OP_DIV_RN, "div_rn", false, true}, {NR_OP_REM, "rem", true, false},
        {NR_OP_AND, "and", true, false},     {NR_OP_OR, "or", true, false},        {NR_OP_XOR, "xor", true, false},
        {NR_OP_SHL, "shl", true, false},     {NR_OP_SHR, "shr", true, false},      {NR_OP_MAX, "max", true, true},
        {NR_OP_MIN, "min", true, true},      {NR_OP_UMULHI, "umulhi", true, false},
    };
    for (size_t d = 0; d < NR_COUNTOF(all_dts); d++) {
        NrDtype dt = all_dts[d];
        bool flt = nr_dt_is_float(dt);
        for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
            if (flt ? !ops[i].floats : !ops[i].ints) continue;
            for (int nan = 0; nan < (flt && (ops[i].opc == NR_OP_MAX || ops[i].opc == NR_OP_MIN) ? 2 : 1); nan++) {
                SemOp s = {ops[i].opc, dt, dt, nan == 1, false, 0};
                char what[64];
                snprintf(what, sizeof what, "%s%s", ops[i].name, nan ? " nan=all" : "");
                sem_compare(what, ops[i].name, nan ? "nan = \"all\"" : "", dt, dt, 2, sem_binary, &s, 0, sm);
            }
        }
        SemOp s = {NR_OP_NEG, dt, dt, false, false, 0};
        if (dt != NR_DT_I1) {
            sem_compare("neg", "neg", "", dt, dt, 1, sem_unary, &s, 0, sm);
            s.opc = NR_OP_ABS;
            sem_compare("abs", "abs", "", dt, dt, 1, sem_unary, &s, 0, sm);
        }
        static const char *const preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        for (int pr = 0; pr < 6; pr++) {
            SemOp c = {NR_OP_CMP, dt, NR_DT_I1, false, false, pr};
            char attrs[32];
            snprintf(attrs, sizeof attrs, "pred = \"%s\"", preds[pr]);
            sem_compare(preds[pr], "cmp", attrs, dt, NR_DT_I1, 2, sem_cmp, &c, 0, sm);
        }
        if (flt) {
            SemOp f = {NR_OP_FMA, dt, dt, false, false, 0};
            sem_compare("fma", "fma", "", dt, dt, 3, sem_fma, &f, 0, sm);
        }
    }
}

static void sem_casts(int sm) {
    for (size_t a = 0; a < NR_COUNTOF(all_dts); a++)
        for (size_t b = 0; b < NR_COUNTOF(all_dts); b++)
            for (int rtz = 0; rtz < 2; rtz++) {
                NrDtype from = all_dts[a], to = all_dts[b];
                if (rtz && !nr_dt_is_float(to)) continue;
                SemOp s = {NR_OP_CAST, from, to, false, rtz == 1, 0};
                char what[64];
                snprintf(what, sizeof what, "cast %s -> %s%s", dn(from), dn(to), rtz ? " rtz" : "");
                sem_compare(what, "cast", rtz ? "rounding = \"rtz\"" : "", from, to, 1, sem_cast, &s, 0, sm);
            }
}

/* The fast math ops against libm: the approximations' documented error
 * (ex2/lg2.approx about 2 ulp, relative 2^-22 after the scaling) is not
 * modelled in evaluation mode, which uses libm; this checks the scaling
 * and the narrow-type rounding around them. */
static void sem_math_ops(int sm) {
    static const struct {
        NrOpcode opc;
        const char *name;
    } ops[] = {{NR_OP_EXP, "exp"},   {NR_OP_EXP2, "exp2"}, {NR_OP_LOG, "log"},   {NR_OP_LOG2, "log2"},
               {NR_OP_SQRT, "sqrt"}, {NR_OP_SQRT_RN, "sqrt_rn"}, {NR_OP_RSQRT, "rsqrt"},
               {NR_OP_FLOOR, "floor"}, {NR_OP_CEIL, "ceil"}};
    static const NrDtype fl[] = {NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F16, NR_DT_BF16, NR_DT_F32};
    for (size_t d = 0; d < NR_COUNTOF(fl); d++)
        for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
            SemOp s = {ops[i].opc, fl[d], fl[d], false, false, 0};
            bool exact = ops[i].opc == NR_OP_FLOOR || ops[i].opc == NR_OP_CEIL || ops[i].opc == NR_OP_SQRT_RN ||
                         (ops[i].opc == NR_OP_SQRT && fl[d] != NR_DT_F32);
            /* exp(x) = ex2(x * log2 e): the rounded product costs |x| * 2^-24 relative. */
            double tol = exact ? 0 : ops[i].opc == NR_OP_EXP && fl[d] == NR_DT_F32 ? 160 : 4;
            sem_compare(ops[i].name, ops[i].name, "", fl[d], fl[d], 1, sem_unary, &s, tol, sm);
        }
}

/* The math op by name, against the interpreter's double-precision
 * functions: exact functions and directed roundings bit for bit, the
 * others within the library's ulp bounds (plus the interpreter's half ulp). */
typedef struct SemNamed {
    const char *fn;
    NrDtype dt;
    int n;
} SemNamed;

static NrPv sem_named_math(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemNamed *s = ctx;
    return nr_pe_math(p, s->fn, s->dt, s->n, x);
}
static NrPv sem_named_imath(NrPtx *p, const void *ctx, const NrPv *x) {
    const SemNamed *s = ctx;
    return nr_pe_imath(p, s->fn, s->dt, x);
}

static void sem_named(int sm) {
    static const struct {
        const char *fn;
        int n;
        double tol;
    } fl[] = {{"logb", 1, 0},     {"ldexp", 2, 0},    {"sinpi", 1, 3},    {"cospi", 1, 3},     {"erfinv", 1, 4},
              {"erfcinv", 1, 4},  {"normcdf", 1, 6},  {"normcdfinv", 1, 6}, {"erfcx", 1, 4},  {"rcbrt", 1, 3},
              {"rhypot", 2, 4},   {"rsqrt_rn", 1, 3}, {"norm3d", 3, 3},   {"rnorm3d", 3, 4},   {"norm4d", 4, 3},
              {"rnorm4d", 4, 4},  {"add_rz", 2, 0},   {"add_rd", 2, 0},   {"add_ru", 2, 0},    {"sub_rz", 2, 0},
              {"sub_rd", 2, 0},   {"sub_ru", 2, 0},   {"mul_rz", 2, 0},   {"mul_rd", 2, 0},    {"mul_ru", 2, 0},
              {"div_rz", 2, 0},   {"div_rd", 2, 0},   {"div_ru", 2, 0},   {"fma_rz", 3, 0},    {"fma_rd", 3, 0},
              {"fma_ru", 3, 0},   {"sqrt_rz", 1, 0},  {"sqrt_rd", 1, 0},  {"sqrt_ru", 1, 0},   {"rcp_rz", 1, 0},
              {"rcp_rd", 1, 0},   {"rcp_ru", 1, 0},   {"rcp_rn", 1, 0},   {"add_rn", 2, 0},    {"fma_rn", 3, 0}};
    static const NrDtype fdt[] = {NR_DT_F32, NR_DT_F64};
    for (size_t d = 0; d < NR_COUNTOF(fdt); d++)
        for (size_t i = 0; i < NR_COUNTOF(fl); i++) {
            SemNamed s = {fl[i].fn, fdt[d], fl[i].n};
            char attrs[64];
            snprintf(attrs, sizeof attrs, "fn = \"%s\"", fl[i].fn);
            sem_compare(fl[i].fn, "math", attrs, fdt[d], fdt[d], fl[i].n, sem_named_math, &s, fl[i].tol, sm);
        }
    static const struct {
        const char *fn;
        int n;
        bool only32;
    } in[] = {{"clz", 1, false},  {"popc", 1, false}, {"brev", 1, false}, {"ffs", 1, false},     {"mulhi", 2, false},
              {"mul24", 2, true}, {"hadd", 2, true},  {"rhadd", 2, true}, {"sad", 3, true}, {"byte_perm", 3, true}};
    static const NrDtype idt[] = {NR_DT_I32, NR_DT_U32, NR_DT_I64, NR_DT_U64};
    for (size_t d = 0; d < NR_COUNTOF(idt); d++)
        for (size_t i = 0; i < NR_COUNTOF(in); i++) {
            if (in[i].only32 && nr_dtype_info[idt[d]].bits == 64) continue;
            SemNamed s = {in[i].fn, idt[d], in[i].n};
            char attrs[64];
            snprintf(attrs, sizeof attrs, "fn = \"%s\"", in[i].fn);
            sem_compare(in[i].fn, "imath", attrs, idt[d], idt[d], in[i].n, sem_named_imath, &s, 0, sm);
        }
}

/* s = a + b rounded, *err = the exact a + b - s (Knuth's two-sum). */
static long double two_sum_ld(long double a, long double b, long double *err) {
    long double s = a + b, bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}

/* The sign of x - (ex + res), where ex + res is an exact value held as a
 * long double and the (at most half an ulp of ex) remainder res. */
static int cmp_exact(long double x, long double ex, long double res) {
    if (x != ex) return x > ex ? 1 : -1;
    return res > 0 ? -1 : res < 0 ? 1 : 0;
}

/* f32 directed roundings against their definition: the exact result (a
 * long double and its remainder: an fma's small addend can fall below the
 * long double's precision) lies on the right side of the rounded one and
 * within an ulp of it. */
static void sem_directed_f32(void) {
    static const char *const ops[] = {"add", "sub", "mul", "fma", "sqrt", "div"};
    static const char *const sfx[] = {"rz", "rd", "ru"};
    NrArena ea;
    nr_arena_init(&ea);
    NrPtx *p = nr_ptx_eval_new(&ea, 80);
    for (int t = 0; t < 3000; t++) {
        float a = (float)((rnd() % 2 ? -1 : 1) * ldexp((double)(rnd() % 1000000 + 1), (int)(rnd() % 40) - 30));
        float b = (float)((rnd() % 2 ? -1 : 1) * ldexp((double)(rnd() % 1000000 + 1), (int)(rnd() % 40) - 30));
        float c = (float)((rnd() % 2 ? -1 : 1) * ldexp((double)(rnd() % 1000000 + 1), (int)(rnd() % 40) - 30));
        if (t % 5 == 0) b = a * 0.75f;
        for (size_t o = 0; o < NR_COUNTOF(ops); o++)
            for (int m = 0; m < 3; m++) {
                char fn[16];
                snprintf(fn, sizeof fn, "%s_%s", ops[o], sfx[m]);
                float aa = ops[o][1] == 'q' ? fabsf(a) : a;
                NrPv x[3] = {nr_pv_f32(aa), nr_pv_f32(b), nr_pv_f32(c)};
                int n = o == 3 ? 3 : o == 4 ? 1 : 2;
                NrPv r = nr_pe_math(p, fn, NR_DT_F32, n, x);
                float got;
                uint32_t u = (uint32_t)r.c;
                memcpy(&got, &u, 4);
                long double A = aa, B = b, C = c, ex, res = 0;
                switch (o) {
                case 0: ex = two_sum_ld(A, B, &res); break;
                case 1: ex = two_sum_ld(A, -B, &res); break;
                case 2: ex = A * B; break; /* 48 bits: exact */
                case 3: ex = two_sum_ld(A * B, C, &res); break;
                case 4: ex = sqrtl(A); break;
                default: ex = A / B; break;
                }
                if (o == 5 || o == 4) { /* inexact in long double: only the sign of the error is reliable */
                    long double back = o == 5 ? (long double)got * B : (long double)got * got;
                    long double target = o == 5 ? A : A;
                    bool ok = true;
                    if (back != target) {
                        bool over = o == 5 ? ((back > target) == (B > 0)) : back > target; /* got > exact */
                        if (m == 1) ok = !over;
                        else if (m == 2) ok = over;
                        else ok = (got > 0) ? !over : over;
                    }
                    CHECK(ok, "%s(%a, %a) = %a has the wrong direction", fn, aa, b, got);
                    continue;
                }
                float lo = nextafterf(got, -INFINITY), hi = nextafterf(got, INFINITY);
                bool ok;
                int sign = cmp_exact(0, ex, res); /* 0 - exact: -1 for a positive result */
                if (m == 1 || (m == 0 && sign < 0)) ok = cmp_exact(got, ex, res) <= 0 && cmp_exact(hi, ex, res) > 0;
                else if (m == 2 || (m == 0 && sign > 0)) ok = cmp_exact(got, ex, res) >= 0 && cmp_exact(lo, ex, res) < 0;
                else ok = got == 0;
                CHECK(ok, "%s(%a, %a, %a) = %a, exact %La", fn, aa, b, c, got, ex);
            }
    }
    nr_arena_free(&ea);
}

static void run_semantics_tests(void) {
    for (int pass = 0; pass < 2; pass++) {
        int sm = pass ? 90 : 80;
        sem_binaries(sm);
        sem_casts(sm);
        sem_math_ops(sm);
        sem_named(sm);
    }
    sem_directed_f32();
}
