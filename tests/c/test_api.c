/* test_api.c - the public C API: compile, metadata, interpreter launches,
 * diagnostics, error paths, and separate contexts on separate threads. */
#include "nereid.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(c, ...)                                                      \
    do {                                                                   \
        if (!(c)) {                                                        \
            failures++;                                                    \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);            \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

static const char *SRC =
    "import nereid\n"
    "import nereid.language as tl\n"
    "\n"
    "@nereid.jit\n"
    "def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    y = tl.load(y_ptr + offs, mask=mask)\n"
    "    tl.store(out_ptr + offs, a * x + y, mask=mask)\n"
    "\n"
    "@nereid.jit\n"
    "def broken(x_ptr, BLOCK: tl.constexpr):\n"
    "    offs = tl.arange(0, BLOCK)\n"
    "    tl.store(x_ptr + offs, tl.nope(offs))\n"
    "\n"
    "@nereid.jit\n"
    "def reads_past_end(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
    "    offs = tl.arange(0, BLOCK)\n"
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs))\n";

static unsigned seed;

static float frand(void) { return (float)rand_r(&seed) / (float)RAND_MAX * 2.0f - 1.0f; }

/* Run axpy on n random elements with a fresh context; returns the max relative error. */
static double run_axpy(int n) {
    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32, *fp32, *fp32, fp32, i32, 128", NULL, &k);
    if (st != NR_OK) {
        printf("%s", nr_error_text(ctx));
        nr_context_destroy(ctx);
        return INFINITY;
    }
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    float *out = malloc(sizeof(float) * (size_t)n);
    unsigned s = seed + (unsigned)n;
    for (int i = 0; i < n; i++) {
        x[i] = (float)rand_r(&s) / (float)RAND_MAX;
        y[i] = (float)rand_r(&s) / (float)RAND_MAX;
        out[i] = NAN;
    }
    float a = 1.75f;
    NrArg args[5] = {NR_BUFFER(x, sizeof(float) * (size_t)n), NR_BUFFER(y, sizeof(float) * (size_t)n),
                     NR_BUFFER(out, sizeof(float) * (size_t)n), NR_FLOAT(a), NR_INT(n)};
    unsigned grid[3] = {(unsigned)(n + 127) / 128, 1, 1};
    double err = INFINITY;
    if (nr_launch_interp(ctx, k, grid, args, 5) == NR_OK) {
        err = 0;
        for (int i = 0; i < n; i++) {
            double ref = (double)a * x[i] + y[i];
            double e = fabs(out[i] - ref) / fmax(fabs(ref), 1e-30);
            if (!(e <= err)) err = e; /* NaN propagates */
        }
    } else {
        printf("%s", nr_error_text(ctx));
    }
    free(x);
    free(y);
    free(out);
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    return err;
}

static void test_compile_and_launch(void) {
    CHECK(run_axpy(1000) < 1e-6, "axpy error");
    CHECK(run_axpy(1) < 1e-6, "axpy n=1");
    CHECK(run_axpy(128) < 1e-6, "axpy n=128");

    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32:16, *fp32:16, *fp32:16, fp32, i32, 64",
                             NULL, &k);
    CHECK(st == NR_OK, "%s", nr_error_text(ctx));
    if (st == NR_OK) {
        CHECK(strcmp(nr_kernel_name(k), "axpy") == 0, "name");
        CHECK(nr_kernel_num_args(k) == 5, "%d args", nr_kernel_num_args(k));
        NrArgInfo ai;
        CHECK(nr_kernel_arg_info(k, 0, &ai) == 0 && ai.kind == NR_ARG_BUFFER && strcmp(ai.name, "x_ptr") == 0 &&
                  strcmp(ai.dtype, "fp32") == 0,
              "arg 0");
        CHECK(nr_kernel_arg_info(k, 3, &ai) == 0 && ai.kind == NR_ARG_FLOAT && strcmp(ai.name, "a") == 0, "arg 3");
        CHECK(nr_kernel_arg_info(k, 4, &ai) == 0 && ai.kind == NR_ARG_INT && strcmp(ai.dtype, "i32") == 0, "arg 4");
        CHECK(nr_kernel_arg_info(k, 5, &ai) != 0, "arg 5 does not exist");
        CHECK(strstr(nr_kernel_ir(k), "func @axpy") != NULL, "IR text");
        CHECK(strstr(nr_kernel_ir(k), "divisibility = 16") != NULL, "divisibility fact in IR");

        /* wrong argument count and kind */
        float buf[4];
        NrArg bad[5] = {NR_BUFFER(buf, 16), NR_BUFFER(buf, 16), NR_BUFFER(buf, 16), NR_INT(1), NR_INT(4)};
        unsigned grid[3] = {1, 1, 1};
        CHECK(nr_launch_interp(ctx, k, grid, bad, 4) == NR_ERR_INVALID, "arg count");
        CHECK(strstr(nr_error_text(ctx), "takes 5 runtime arguments") != NULL, "%s", nr_error_text(ctx));
        CHECK(nr_launch_interp(ctx, k, grid, bad, 5) == NR_ERR_INVALID, "arg kind");
        CHECK(strstr(nr_error_text(ctx), "'a'") != NULL, "%s", nr_error_text(ctx));
    }
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
}

static void test_diagnostics(void) {
    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "broken", "*fp32, 16", NULL, &k);
    CHECK(st == NR_ERR_COMPILE && k == NULL, "broken kernel must fail");
    CHECK(nr_error_count(ctx) >= 1, "a diagnostic");
    NrDiagnostic d;
    CHECK(nr_error_get(ctx, 0, &d) == 0, "get diag");
    CHECK(strcmp(d.severity, "error") == 0 && strcmp(d.file, "axpy.py") == 0 && d.line == 15 && d.col > 1,
          "%s %s:%d:%d", d.severity, d.file, d.line, d.col);
    CHECK(strstr(d.message, "nope") != NULL, "%s", d.message);
    CHECK(strstr(d.source_line, "tl.nope(offs)") != NULL, "%s", d.source_line);
    CHECK(strstr(nr_error_text(ctx), "axpy.py:15:") != NULL && strchr(nr_error_text(ctx), '^'), "%s",
          nr_error_text(ctx));
    CHECK(nr_error_get(ctx, 99, &d) != 0, "out of range");

    st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "missing", "i32", NULL, &k);
    CHECK(st == NR_ERR_COMPILE, "unknown kernel");
    CHECK(strstr(nr_error_text(ctx), "missing") != NULL, "%s", nr_error_text(ctx));

    st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32, *fp32", NULL, &k);
    CHECK(st == NR_ERR_COMPILE, "short signature");

    st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32, %%%", NULL, &k);
    CHECK(st == NR_ERR_COMPILE, "garbage signature");

    const char *syntax = "import triton\n@triton.jit\ndef k(x):\n    y = (x +\n";
    CHECK(nr_check_source(ctx, syntax, strlen(syntax), "s.py") == NR_ERR_COMPILE, "syntax error");
    CHECK(nr_error_count(ctx) >= 1, "syntax diag");
    CHECK(nr_check_source(ctx, SRC, strlen(SRC), "axpy.py") == NR_OK, "%s", nr_error_text(ctx));
    CHECK(nr_error_count(ctx) == 0, "clean check has no diagnostics");

    /* invalid API use */
    CHECK(nr_compile(NULL, SRC, 1, "f", "k", "i32", NULL, &k) == NR_ERR_INVALID, "null ctx");
    CHECK(nr_compile(ctx, SRC, 1, "f", NULL, "i32", NULL, &k) == NR_ERR_INVALID, "null kernel");
    nr_context_destroy(ctx);
}

static void test_launch_fault(void) {
    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "reads_past_end", "*fp32, *fp32, 64", NULL, &k);
    CHECK(st == NR_OK, "%s", nr_error_text(ctx));
    if (st == NR_OK) {
        float x[60], out[64];
        for (int i = 0; i < 60; i++) x[i] = frand();
        NrArg args[2] = {NR_BUFFER(x, sizeof x), NR_BUFFER(out, sizeof out)};
        unsigned grid[3] = {1, 1, 1};
        CHECK(nr_launch_interp(ctx, k, grid, args, 2) == NR_ERR_LAUNCH, "out-of-bounds read must fault");
        NrDiagnostic d;
        CHECK(nr_error_get(ctx, 0, &d) == 0 && d.line == 20, "fault at the load's line (%d)", d.line);
        CHECK(strstr(nr_error_text(ctx), "x_ptr") != NULL, "%s", nr_error_text(ctx));
    }
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
}

static void *thread_main(void *arg) {
    double *err = arg;
    for (int i = 0; i < 20; i++) {
        double e = run_axpy(300 + i * 17);
        if (!(e <= *err)) *err = e;
    }
    return NULL;
}

static void test_threads(void) {
    enum { N = 4 };
    pthread_t t[N];
    double errs[N] = {0};
    for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, thread_main, &errs[i]);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) CHECK(errs[i] < 1e-6, "thread %d error %g", i, errs[i]);
}

/* Compiling the same kernel twice gives the same IR. */
static void test_deterministic(void) {
    NrContext *ctx = nr_context_create();
    NrKernel *a = NULL, *b = NULL;
    nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32, *fp32, *fp32, fp32, i32, 256", NULL, &a);
    nr_compile(ctx, SRC, strlen(SRC), "axpy.py", "axpy", "*fp32, *fp32, *fp32, fp32, i32, 256", NULL, &b);
    CHECK(a && b && strcmp(nr_kernel_ir(a), nr_kernel_ir(b)) == 0, "identical IR");
    nr_kernel_destroy(a);
    nr_kernel_destroy(b);
    nr_context_destroy(ctx);
}

int main(void) {
    seed = (unsigned)time(NULL);
    test_compile_and_launch();
    test_diagnostics();
    test_launch_fault();
    test_threads();
    test_deterministic();
    if (failures) {
        printf("test_api: %d failures (seed %u)\n", failures, seed);
        return 1;
    }
    printf("test_api: ok\n");
    return 0;
}
