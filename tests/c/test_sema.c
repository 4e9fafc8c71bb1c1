/* test_sema.c - signatures, compile-time values and lowering end to end:
 * parse a module from a string, lower a kernel, verify the IR and look at
 * it; and check that errors carry the right message and location. */
#include "ast.h"
#include "ir.h"
#include "sema.h"
#include "sema_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(c)                                                          \
    do {                                                                  \
        if (!(c)) {                                                       \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);           \
            failures++;                                                   \
        }                                                                 \
    } while (0)

/* --- signatures ----------------------------------------------------------------------------------- */
static void test_signature_ok(void) {
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrSignature sig;
    const char *text = "*fp32:16, **fp16, *i1, i32, i32:16, i64:1, u64, fp32, bf16, *fp8e4nv, *fp8e5, *kfp32, "
                       "1024, -3, 0x10, 0b11, 0o17, 1_000, 2.5, -1e-05, inf, -inf, True, False, None, \"leaky, relu\", "
                       "'a\\'b', tl.float16, tl.fp8e5, triton.language.int8, 18446744073709551615, u1, B";
    CHECK(nr_signature_parse(&a, text, &sig, &d));
    CHECK(!nr_has_errors(&d));
    CHECK(sig.nargs == 33);
    if (sig.nargs == 33) {
        CHECK(sig.args[0].kind == NR_SIG_PTR && sig.args[0].dtype == NR_DT_F32 && sig.args[0].ptr == 1 &&
              sig.args[0].divisibility == 16);
        CHECK(sig.args[1].kind == NR_SIG_PTR && sig.args[1].dtype == NR_DT_F16 && sig.args[1].ptr == 2);
        CHECK(sig.args[2].dtype == NR_DT_I1);
        CHECK(sig.args[3].kind == NR_SIG_SCALAR && sig.args[3].dtype == NR_DT_I32 && sig.args[3].divisibility == 1);
        CHECK(sig.args[4].divisibility == 16);
        CHECK(sig.args[5].equal_to_1 && sig.args[5].dtype == NR_DT_I64);
        CHECK(sig.args[6].dtype == NR_DT_U64);
        CHECK(sig.args[11].kind == NR_SIG_PTR && sig.args[11].ptr == 1 && sig.args[11].dtype == NR_DT_F32);
        CHECK(sig.args[12].kind == NR_SIG_CONSTEXPR && sig.args[12].cval.kind == NR_CV_INT && sig.args[12].cval.i == 1024);
        CHECK(sig.args[13].cval.i == -3);
        CHECK(sig.args[14].cval.i == 16);
        CHECK(sig.args[15].cval.i == 3);
        CHECK(sig.args[16].cval.i == 15);
        CHECK(sig.args[17].cval.i == 1000);
        CHECK(sig.args[18].cval.kind == NR_CV_FLOAT && sig.args[18].cval.f == 2.5);
        CHECK(sig.args[19].cval.f == -1e-05);
        CHECK(isinf(sig.args[20].cval.f) && sig.args[20].cval.f > 0);
        CHECK(isinf(sig.args[21].cval.f) && sig.args[21].cval.f < 0);
        CHECK(sig.args[22].cval.kind == NR_CV_BOOL && sig.args[22].cval.b);
        CHECK(sig.args[23].cval.kind == NR_CV_BOOL && !sig.args[23].cval.b);
        CHECK(sig.args[24].cval.kind == NR_CV_NONE);
        CHECK(sig.args[25].cval.kind == NR_CV_STR && strcmp(sig.args[25].cval.str.s, "leaky, relu") == 0);
        CHECK(sig.args[26].cval.kind == NR_CV_STR && strcmp(sig.args[26].cval.str.s, "a'b") == 0);
        CHECK(sig.args[27].cval.kind == NR_CV_DTYPE && sig.args[27].cval.dt == NR_DT_F16);
        CHECK(sig.args[28].cval.dt == NR_DT_F8E5);
        CHECK(sig.args[29].cval.dt == NR_DT_I8);
        CHECK(sig.args[30].cval.kind == NR_CV_INT && sig.args[30].cval.is_unsigned &&
              (uint64_t)sig.args[30].cval.i == UINT64_MAX);
        CHECK(sig.args[31].kind == NR_SIG_SCALAR && sig.args[31].dtype == NR_DT_I1);
        CHECK(sig.args[32].dtype == NR_DT_I1);
    }
    /* rendering reads back to the same signature */
    char *str = nr_signature_str(&a, &sig);
    NrSignature sig2;
    CHECK(nr_signature_parse(&a, str, &sig2, &d));
    CHECK(strcmp(nr_signature_str(&a, &sig2), str) == 0);
    CHECK(strncmp(str, "*fp32:16, **fp16, *i1, i32, i32:16, i64:1, u64, fp32, bf16", 58) == 0);
    CHECK(strstr(str, "\"leaky, relu\"") != NULL);
    CHECK(strstr(str, "tl.float16") != NULL);
    CHECK(nr_signature_parse(&a, "", &sig, &d) && sig.nargs == 0);
    CHECK(nr_signature_parse(&a, "  ", &sig, &d) && sig.nargs == 0);
    nr_arena_free(&a);
}

/* The error of signature `text`, as "col: message". */
static const char *sig_error(NrArena *a, const char *text) {
    NrSources src;
    nr_sources_init(&src, a);
    NrDiags d;
    nr_diags_init(&d, a, &src);
    NrSignature sig;
    if (nr_signature_parse(a, text, &sig, &d) || d.n == 0) return "";
    return nr_sprintf(a, "%u: %s", d.v[0].loc.col, d.v[0].msg);
}

static void test_signature_errors(void) {
    NrArena a;
    nr_arena_init(&a);
    CHECK(strncmp(sig_error(&a, "*fp33"), "2: unknown pointee type 'fp33'", 30) == 0);
    CHECK(strncmp(sig_error(&a, "*fp32, i31"), "8: unknown type 'i31'", 21) == 0);
    CHECK(strncmp(sig_error(&a, "i32:8"), "5: expected '16'", 16) == 0);
    CHECK(strncmp(sig_error(&a, "fp32:16"), "5: ':16' (divisible by 16) applies", 34) == 0);
    CHECK(strncmp(sig_error(&a, "*fp32:1"), "6: ':1' (equal to 1) applies to integers", 40) == 0);
    CHECK(strncmp(sig_error(&a, "i32, , i32"), "6: empty entry", 14) == 0);
    CHECK(strncmp(sig_error(&a, "\"abc"), "1: unterminated string", 22) == 0);
    CHECK(strncmp(sig_error(&a, "12x"), "3: invalid digit", 16) == 0);
    CHECK(strncmp(sig_error(&a, "99999999999999999999999"), "1: integer out of range", 23) == 0);
    CHECK(strncmp(sig_error(&a, "tl.float17"), "1: unknown name", 15) == 0);
    CHECK(strncmp(sig_error(&a, "float16"), "1: unknown type 'float16' (a runtime scalar", 43) == 0);
    CHECK(strncmp(sig_error(&a, "*"), "2: expected the pointee type", 28) == 0);
    nr_arena_free(&a);
}

/* --- compile-time values -------------------------------------------------------------------------- */
static void test_cval_str(void) {
    NrArena a;
    nr_arena_init(&a);
    struct { double x; const char *s; } fl[] = {
        {1.0, "1.0"}, {0.1, "0.1"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {1e-4, "0.0001"},
        {1e-5, "1e-05"}, {-2.5, "-2.5"}, {123.456, "123.456"}, {1.5e300, "1.5e+300"}, {0.0, "0.0"},
    };
    for (size_t i = 0; i < NR_COUNTOF(fl); i++) {
        NrCVal c = nr_cv_float(fl[i].x);
        const char *got = nr_cv_str_of(&a, &c);
        if (strcmp(got, fl[i].s) != 0) printf("  float %g: got %s, want %s\n", fl[i].x, got, fl[i].s);
        CHECK(strcmp(got, fl[i].s) == 0);
    }
    NrCVal c = nr_cv_dtype(NR_DT_I32, 0);
    CHECK(strcmp(nr_cv_str_of(&a, &c), "int32") == 0);
    c = nr_cv_dtype(NR_DT_F32, 1);
    CHECK(strcmp(nr_cv_str_of(&a, &c), "pointer<fp32>") == 0);
    c = nr_cv_uint(UINT64_MAX);
    CHECK(strcmp(nr_cv_str_of(&a, &c), "18446744073709551615") == 0);
    /* the dtypes numbers take as tensors */
    CHECK(nr_cv_default_dtype(&(NrCVal){.kind = NR_CV_INT, .i = 2147483647}) == NR_DT_I32);
    c = nr_cv_int(2147483648);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_U32);
    c = nr_cv_int(-2147483649);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_I64);
    c = nr_cv_uint(1ull << 63);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_U64);
    c = nr_cv_float(1e-40);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_F64);
    c = nr_cv_float(1e38);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_F32);
    c = nr_cv_bool(true);
    CHECK(nr_cv_default_dtype(&c) == NR_DT_I1);
    nr_arena_free(&a);
}

/* --- lowering ------------------------------------------------------------------------------------- */
typedef struct Lowered {
    NrModule *m;
    NrDiags d;
    NrFunc *f;
    char *ir;
    char *err;
} Lowered;

static Lowered lower(const char *src, const char *kernel, const char *sigtext) {
    Lowered L;
    memset(&L, 0, sizeof L);
    L.m = nr_module_new(NULL);
    NrArena *a = L.m->arena;
    uint32_t file = nr_sources_add(&L.m->sources, a, "k.py", src, strlen(src));
    nr_diags_init(&L.d, a, &L.m->sources);
    NrAstModule *ast = nr_parse_module(a, &L.m->sources, file, &L.d);
    NrSignature sig;
    if (ast && !nr_has_errors(&L.d) && nr_signature_parse(a, sigtext, &sig, &L.d))
        L.f = nr_lower_kernel(L.m, ast, kernel, &sig, &L.d);
    if (L.f && !nr_has_errors(&L.d)) {
        if (!nr_module_verify(L.m, &L.d)) printf("  verifier: %s\n", nr_diags_render(a, &L.d));
        CHECK(!nr_has_errors(&L.d));
        L.ir = nr_module_to_string(L.m, &(NrPrintOptions){false});
    }
    L.err = nr_diags_render(a, &L.d);
    return L;
}

static const char *const prelude = "import triton\nimport triton.language as tl\n\n";

static void test_lower_vector_add(void) {
    char src[1024];
    snprintf(src, sizeof src,
             "%s@triton.jit\n"
             "def add(x, y, out, n, BLOCK: tl.constexpr):\n"
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
             "    m = offs < n\n"
             "    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)\n",
             prelude);
    Lowered L = lower(src, "add", "*fp32:16, *fp32:16, *fp32:16, i32, 256");
    CHECK(L.f != NULL);
    if (L.f) {
        CHECK(L.f->is_kernel);
        CHECK(nr_block(L.f, L.f->body)->nargs == 4);
        CHECK(L.f->params[0].divisibility == 16 && strcmp(L.f->params[0].name, "x") == 0);
        CHECK(L.f->params[3].divisibility == 1 && strcmp(L.f->params[3].name, "n") == 0);
        CHECK(strcmp(L.f->vals[f_arg(L.f, 2)].name, "out") == 0);
        CHECK(strstr(L.ir, "arange {end = 256, start = 0} : tensor<256xi32>") != NULL);
        CHECK(strstr(L.ir, "store ") != NULL);
    }
    nr_module_free(L.m);
}

static void test_lower_errors(void) {
    struct { const char *body, *sig, *want; } cases[] = {
        {"    tl.foo(p)\n", "*fp32", "k.py:6:8: error: 'tl.foo' is not a function of triton.language"},
        {"    x = tl.arange(0, 100)\n", "*fp32", "k.py:6:9: error: arange's range must be a power of 2, got 100"},
        {"    x = y\n", "*fp32", "k.py:6:9: error: 'y' is not defined"},
        {"    tl.static_assert(False, 'no')\n", "*fp32", "k.py:6:5: error: static_assert failed: no"},
        {"    pass\n", "*fp32, i32", "k.py:5:5: error: kernel 'k' takes 1 parameter, but the signature gives 2"},
        {"    a = tl.zeros((64, 32), tl.float32) + tl.zeros((16,), tl.float32)\n", "*fp32",
         "k.py:6:40: error: cannot broadcast shapes [64, 32] and [16]"},
        {"    acc = tl.zeros((4,), tl.float32)\n    for i in range(3):\n        acc = acc.to(tl.int32)\n", "*fp32",
         "k.py:8:9: error: loop-carried variable 'acc' changes type from tensor<4xf32> to tensor<4xi32> inside the loop"},
    };
    for (size_t i = 0; i < NR_COUNTOF(cases); i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s@triton.jit\ndef k(p):\n%s", prelude, cases[i].body);
        Lowered L = lower(src, "k", cases[i].sig);
        CHECK(L.f == NULL);
        if (strncmp(L.err, cases[i].want, strlen(cases[i].want)) != 0)
            printf("  case %zu: got '%s', want '%s'\n", i, L.err, cases[i].want);
        CHECK(strncmp(L.err, cases[i].want, strlen(cases[i].want)) == 0);
        /* a failed lowering leaves no functions behind */
        CHECK(L.m->nfuncs == 0);
        nr_module_free(L.m);
    }
    Lowered L = lower("import triton\n", "nope", "");
    CHECK(strcmp(L.err, "k.py: error: no @jit function named 'nope' in this module\n") == 0);
    nr_module_free(L.m);
}

/* The same source lowers to the same text twice. */
static void test_deterministic(void) {
    char src[2048];
    snprintf(src, sizeof src,
             "%s@triton.jit\n"
             "def h(x, F: tl.constexpr):\n"
             "    return x * F, x + 1\n"
             "@triton.jit\n"
             "def k(p, n):\n"
             "    acc = tl.zeros((16,), tl.float32)\n"
             "    for i in range(n):\n"
             "        a, b = h(tl.load(p + i + tl.arange(0, 16)), 2.0)\n"
             "        acc += a * b\n"
             "    if n > 3:\n"
             "        acc = tl.exp(acc)\n"
             "    tl.store(p + tl.arange(0, 16), acc)\n",
             prelude);
    Lowered A = lower(src, "k", "*fp32, i32");
    Lowered B = lower(src, "k", "*fp32, i32");
    CHECK(A.ir && B.ir && strcmp(A.ir, B.ir) == 0);
    CHECK(A.m->nfuncs == 2);
    nr_module_free(A.m);
    nr_module_free(B.m);
}

int main(void) {
    test_signature_ok();
    test_signature_errors();
    test_cval_str();
    test_lower_vector_add();
    test_lower_errors();
    test_deterministic();
    if (failures) printf("%d check(s) failed\n", failures);
    else printf("test_sema: all checks passed\n");
    return failures != 0;
}
