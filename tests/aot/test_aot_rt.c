/* test_aot_rt.c - the C that `nereid aot` generates, run against the fake
 * driver (fake_cuda.c): which binary is loaded for which device, which
 * specialization and config a launch uses, the grid computed from the grid
 * expression, the bytes of every kernel parameter, tuning, and every driver
 * failure coming back as the CUresult of the call.  Kernels loaded from PTX
 * run on Nereid's interpreter, so results are checked too.
 *
 * tests/aot/run.sh generates the aot_*.{h,c} this includes (from
 * tests/aot/kernels.py and the examples' kernels) and builds this with -std=c99. */
#include "aot_big.h"
#include "aot_clash.h"
#include "aot_empty.h"
#include "aot_grid.h"
#include "aot_huge.h"
#include "aot_mix.h"
#include "aot_ptxonly.h"
#include "aot_rules.h"
#include "aot_tuned.h"
#include "fake_cuda.h"
#include "fp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
            failures++;                                            \
        }                                                          \
    } while (0)

#define EQ(a, b) CHECK((long long)(a) == (long long)(b), "%lld != %lld", (long long)(a), (long long)(b))
#define STREQ(a, b)                                                                        \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        CHECK(a_ && b_ && strcmp(a_, b_) == 0, "'%s' != '%s'", a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)

static CUcontext ctx;

/* A fresh fake device of compute capability cc with a current context. */
static void fresh(int cc) {
    CUdevice dev;
    fake_cuda_reset();
    fake_cuda_set_cc(cc);
    EQ(cuInit(0), CUDA_SUCCESS);
    EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

static const FakeLaunch *last_launch(void) { return fake_cuda_launch(fake_cuda_launch_count() - 1); }

/* ---- loading ---- */

static void test_binary_choice(void) {
    static const struct {
        int cc;
        const char *want;
    } cases[] = {{80, "sm_80 cubin"}, {86, "sm_80 cubin"}, {89, "sm_80 cubin"}, {90, "sm_90a cubin"},
                 {100, "sm_90 PTX"},  {120, "sm_90 PTX"}};
    int i, v;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        fresh(cases[i].cc);
        EQ(aot_mix_load(), CUDA_SUCCESS);
        for (v = 0; v < AOT_MIX_NUM_VARIANTS; v++) {
            STREQ(aot_mix_binary(v), cases[i].want);
            CHECK(aot_mix_function(v) != NULL, "no function for variant %d", v);
        }
        EQ(fake_cuda_live_modules(), AOT_MIX_NUM_VARIANTS);
        EQ(aot_mix_load(), CUDA_SUCCESS); /* again: nothing more */
        EQ(fake_cuda_live_modules(), AOT_MIX_NUM_VARIANTS);
        EQ(aot_mix_unload(), CUDA_SUCCESS);
        EQ(fake_cuda_live_modules(), 0);
        CHECK(aot_mix_binary(0) == NULL && aot_mix_function(0) == NULL, "state kept after unload");
    }
    /* Nothing fits a 7.5 device: no cubin of its major version, PTX for sm_90. */
    fresh(75);
    EQ(aot_mix_load(), CUDA_ERROR_NO_BINARY_FOR_GPU);
    EQ(fake_cuda_live_modules(), 0);
    /* --ptx-only: PTX per target. */
    fresh(90);
    EQ(aot_ptxonly_load(), CUDA_SUCCESS);
    STREQ(aot_ptxonly_binary(0), "sm_90a PTX");
    aot_ptxonly_unload();
    fresh(86);
    EQ(aot_ptxonly_load(), CUDA_SUCCESS);
    STREQ(aot_ptxonly_binary(0), "sm_80 PTX");
    aot_ptxonly_unload();
    fresh(100);
    EQ(aot_ptxonly_load(), CUDA_SUCCESS);
    STREQ(aot_ptxonly_binary(0), "sm_80 PTX");
    aot_ptxonly_unload();
}

static void test_load_failures(void) {
    /* A cubin the driver rejects: the PTX is tried next. */
    fresh(90);
    fake_cuda_fail("cuModuleLoadData", 1, CUDA_ERROR_NO_BINARY_FOR_GPU);
    EQ(aot_mix_load(), CUDA_SUCCESS);
    STREQ(aot_mix_binary(0), "sm_90 PTX");
    STREQ(aot_mix_binary(1), "sm_90a cubin");
    aot_mix_unload();
    /* Every other failure comes back, with nothing left loaded. */
    fresh(90);
    fake_cuda_fail("cuModuleLoadData", 2, CUDA_ERROR_OUT_OF_MEMORY);
    EQ(aot_mix_load(), CUDA_ERROR_OUT_OF_MEMORY);
    EQ(fake_cuda_live_modules(), 0);
    CHECK(aot_mix_binary(0) == NULL, "a failed load left a binary");
    fresh(90);
    fake_cuda_fail("cuModuleGetFunction", 3, CUDA_ERROR_NOT_FOUND);
    EQ(aot_mix_load(), CUDA_ERROR_NOT_FOUND);
    EQ(fake_cuda_live_modules(), 0);
    fresh(90);
    fake_cuda_fail("cuDeviceGetAttribute", 1, CUDA_ERROR_INVALID_DEVICE);
    EQ(aot_mix_load(), CUDA_ERROR_INVALID_DEVICE);
    /* No context current. */
    fresh(90);
    EQ(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
    EQ(aot_mix_load(), CUDA_ERROR_INVALID_CONTEXT);
    /* Launches need a load. */
    fresh(100);
    EQ(aot_mix_launch(NULL, 0, 0, 16, 1, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0.0f, 0.0), CUDA_ERROR_NOT_INITIALIZED);
    EQ(aot_mix_launch_grid(NULL, 1, 1, 1, 0, 0, 16, 1, 0, 0, 0, 0.0f, 0.0f, 0.0f, 0.0f, 0.0),
       CUDA_ERROR_NOT_INITIALIZED);
    /* Shared memory beyond 48 KB is opted in at load; a refusal comes back. */
    fresh(86);
    EQ(aot_big_load(), CUDA_SUCCESS);
    EQ(fake_cuda_set_attribute_calls(), AOT_BIG_NUM_VARIANTS);
    aot_big_unload();
    fresh(86);
    fake_cuda_fail("cuFuncSetAttribute", 1, CUDA_ERROR_INVALID_VALUE);
    EQ(aot_big_load(), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_live_modules(), 0);
}

/* ---- dispatch and parameters ---- */

typedef struct MixArgs {
    int flag;
    int8_t a;
    uint16_t b;
    int64_t c;
    float h, bf, e4, e5;
    double d;
} MixArgs;

static double mix_sum(const MixArgs *m) {
    /* The kernel adds in fp32 the scalars as the GPU holds them. */
    float s = (float)m->a + (float)m->b + (float)m->c + nr_f16_to_f32(nr_f32_to_f16(m->h)) +
              nr_bf16_to_f32(nr_f32_to_bf16(m->bf));
    s = s + nr_f8e4nv_to_f32(nr_f32_to_f8e4nv(m->e4)) + nr_f8e5_to_f32(nr_f32_to_f8e5(m->e5)) + (float)m->d;
    return s;
}

static CUresult mix_launch(CUdeviceptr out, CUdeviceptr x, int32_t n, const MixArgs *m) {
    return aot_mix_launch(NULL, out, x, n, m->flag, m->a, m->b, m->c, m->h, m->bf, m->e4, m->e5, m->d);
}

static int mix_select(CUdeviceptr out, CUdeviceptr x, int32_t n, const MixArgs *m) {
    return aot_mix_select(out, x, n, m->flag, m->a, m->b, m->c, m->h, m->bf, m->e4, m->e5, m->d);
}

static void test_dispatch(void) {
    enum { N = 1024 };
    CUdeviceptr out, x;
    float hx[N + 8], hy[N + 8];
    MixArgs m = {1, -3, 60000, 1, 1.5f, 2.25f, 0.75f, -12.0f, 0.125};
    int i;
    static const struct {
        int dout, dx;   /* byte offsets of the pointers */
        int32_t n;
        int64_t c;
        int want;       /* specialization */
    } cases[] = {
        {0, 0, 1024, 1, 1}, {0, 0, 1000, 1, 2}, {0, 0, 1024, 2, 2}, {4, 0, 1024, 1, 0},
        {0, 8, 1024, 1, 0}, {16, 32, 992, 1, 1}, {0, 0, 0, 1, 1},
    };
    fresh(100);
    EQ(aot_mix_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&out, (N + 8) * 4), CUDA_SUCCESS);
    EQ(cuMemAlloc(&x, (N + 8) * 4), CUDA_SUCCESS);
    for (i = 0; i < N + 8; i++) hx[i] = (float)i * 0.5f - 100.0f;
    EQ(cuMemcpyHtoD(x, hx, sizeof hx), CUDA_SUCCESS);
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        int s, count = fake_cuda_launch_count(), k;
        m.c = cases[i].c;
        m.flag = i % 2;
        s = mix_select(out + (CUdeviceptr)cases[i].dout, x + (CUdeviceptr)cases[i].dx, cases[i].n, &m);
        CHECK(s == cases[i].want, "case %d: specialization %d, want %d", i, s, cases[i].want);
        EQ(cuMemsetD32(out, 0x7fc00000u, N + 8), CUDA_SUCCESS);
        EQ(mix_launch(out + (CUdeviceptr)cases[i].dout, x + (CUdeviceptr)cases[i].dx, cases[i].n, &m), CUDA_SUCCESS);
        if (cases[i].n == 0) {
            EQ(fake_cuda_launch_count(), count); /* an empty grid launches nothing */
            continue;
        }
        EQ(fake_cuda_launch_count(), count + 1);
        CHECK(last_launch()->function == aot_mix_function(cases[i].want), "case %d: launched another variant", i);
        STREQ(fake_cuda_function_signature(last_launch()->function), aot_mix_specialization(cases[i].want));
        EQ(last_launch()->grid[0], (cases[i].n + 255) / 256);
        EQ(last_launch()->grid[1], 1);
        EQ(last_launch()->block[0], 128);
        CHECK(last_launch()->ran, "case %d: not run", i);
        EQ(cuMemcpyDtoH(hy, out, sizeof hy), CUDA_SUCCESS);
        for (k = 0; k < cases[i].n; k++) {
            double want = (double)hx[k + cases[i].dx / 4] + (m.flag ? 1 : -1) * mix_sum(&m);
            float got = hy[k + cases[i].dout / 4];
            if (fabs(got - want) > 1e-3 * (1 + fabs(want))) {
                CHECK(0, "case %d: out[%d] = %g, want %g", i, k, got, want);
                break;
            }
        }
        /* Nothing written outside. */
        CHECK(isnan(hy[cases[i].dout / 4 + cases[i].n]), "case %d: wrote past the end", i);
    }
    EQ(cuMemFree(out), CUDA_SUCCESS);
    EQ(cuMemFree(x), CUDA_SUCCESS);
    aot_mix_unload();
}

/* Every scalar reaches the kernel with the bits the GPU expects. */
static void test_params(void) {
    static const float values[] = {0.0f, -0.0f, 1.0f, -1.5f, 3.14159f, 65504.0f, 65520.0f, 1e5f, 448.0f, 464.0f,
                                   57344.0f, 1e-8f, 6e-8f, 2.98e-8f, 1e-40f, -7.3e-5f, 1.0009765625f};
    MixArgs m = {7, 127, 0, -5, 0, 0, 0, 0, 2.5};
    CUdeviceptr buf;
    size_t i;
    fresh(100);
    EQ(aot_mix_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&buf, 1024), CUDA_SUCCESS);
    for (i = 0; i < sizeof values / sizeof values[0] + 3; i++) {
        const FakeLaunch *l;
        uint16_t h16, b16;
        float v = i < sizeof values / sizeof values[0] ? values[i]
                  : i % 3 == 0                         ? INFINITY
                  : i % 3 == 1                         ? -INFINITY
                                                       : NAN;
        int64_t c;
        double d;
        m.h = m.bf = m.e4 = m.e5 = v;
        m.b = (uint16_t)(i * 4099);
        EQ(mix_launch(buf, buf, 16, &m), CUDA_SUCCESS);
        l = last_launch();
        EQ(l->nparams, 12);
        EQ(l->param_size[3], 1);
        EQ(l->params[3][0], 1); /* flag: any non-zero int is true */
        EQ((int8_t)l->params[4][0], 127);
        memcpy(&h16, l->params[5], 2);
        EQ(h16, m.b);
        memcpy(&c, l->params[6], 8);
        EQ(c, -5);
        memcpy(&h16, l->params[7], 2);
        memcpy(&b16, l->params[8], 2);
        CHECK(h16 == nr_f32_to_f16(v), "fp16 of %g: %04x, want %04x", v, h16, nr_f32_to_f16(v));
        CHECK(b16 == nr_f32_to_bf16(v), "bf16 of %g: %04x, want %04x", v, b16, nr_f32_to_bf16(v));
        CHECK(l->params[9][0] == nr_f32_to_f8e4nv(v), "fp8e4nv of %g: %02x, want %02x", v, l->params[9][0],
              nr_f32_to_f8e4nv(v));
        CHECK(l->params[10][0] == nr_f32_to_f8e5(v), "fp8e5 of %g: %02x, want %02x", v, l->params[10][0],
              nr_f32_to_f8e5(v));
        memcpy(&d, l->params[11], 8);
        CHECK(d == 2.5, "fp64 %g", d);
    }
    EQ(cuMemFree(buf), CUDA_SUCCESS);
    aot_mix_unload();
}

/* ---- grids ---- */

static void test_grid(void) {
    CUdeviceptr out;
    /* x = cdiv(n, 3) * (m % 7 + 1), y = (m - 1) // 2 + 1,
     * z = min(max(k, 1), 4) * next_power_of_2(k) // next_power_of_2(k) */
    static const struct {
        int32_t n, m, k;
        CUresult want;
        unsigned g[3];
    } cases[] = {
        {7, 3, 3, CUDA_SUCCESS, {12, 2, 3}},
        {1, 0, 9, CUDA_SUCCESS, {1, 0, 4}},                /* y = (-1) // 2 + 1 = 0: nothing launched */
        {-5, 2, 1, CUDA_ERROR_INVALID_VALUE, {0, 0, 0}},   /* x = cdiv(-5, 3) * 3 = -3 */
        {5, -9, 1, CUDA_ERROR_INVALID_VALUE, {0, 0, 0}},   /* m % 7 = 5 as in Python; y = -4 */
        {6, 1, 0, CUDA_ERROR_INVALID_VALUE, {0, 0, 0}},    /* next_power_of_2(0) = 0: division by zero */
        {2147483647, 6, 1, CUDA_ERROR_INVALID_VALUE, {0, 0, 0}}, /* x = 715827883 * 7 > 2^31 - 1 */
        {4, 200000, 1, CUDA_ERROR_INVALID_VALUE, {0, 0, 0}},     /* y = 100000 > 65535 */
        {1, 1, 1, CUDA_SUCCESS, {2, 1, 1}},
    };
    int i;
    fresh(100);
    EQ(aot_grid_load(), CUDA_SUCCESS);
    EQ(aot_huge_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&out, 1 << 20), CUDA_SUCCESS);
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        int count = fake_cuda_launch_count();
        unsigned total = cases[i].g[0] * cases[i].g[1] * cases[i].g[2], j;
        CUresult r = aot_grid_launch(NULL, out, cases[i].n, cases[i].m, cases[i].k);
        CHECK(r == cases[i].want, "case %d: %d, want %d", i, r, cases[i].want);
        if (r != CUDA_SUCCESS || total == 0) {
            EQ(fake_cuda_launch_count(), count);
            continue;
        }
        EQ(fake_cuda_launch_count(), count + 1);
        EQ(last_launch()->grid[0], cases[i].g[0]);
        EQ(last_launch()->grid[1], cases[i].g[1]);
        EQ(last_launch()->grid[2], cases[i].g[2]);
        {
            /* Each program wrote its linear index. */
            int32_t *h = malloc(total * 4);
            EQ(cuMemcpyDtoH(h, out, total * 4), CUDA_SUCCESS);
            for (j = 0; j < total; j++)
                if (h[j] != (int32_t)j) {
                    CHECK(0, "case %d: out[%u] = %d", i, j, h[j]);
                    break;
                }
            free(h);
        }
    }
    /* int64 overflow: n * n * n * m. */
    EQ(aot_huge_launch(NULL, out, 2, 3, 1), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 24);
    EQ(aot_huge_launch(NULL, out, 2147483647, 4, 1), CUDA_ERROR_INVALID_VALUE);
    EQ(aot_huge_launch(NULL, out, -2147483647, 2147483647, 1), CUDA_ERROR_INVALID_VALUE);
    /* An explicit grid is passed as given. */
    EQ(aot_grid_launch_grid(NULL, 2, 3, 4, out, 0, 0, 0), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 2);
    EQ(last_launch()->grid[2], 4);
    EQ(aot_grid_launch_grid(NULL, 0, 3, 4, out, 0, 0, 0), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 2); /* nothing launched */
    EQ(cuMemFree(out), CUDA_SUCCESS);
    aot_grid_unload();
    aot_huge_unload();
}

/* ---- configs ---- */

static void test_rules(void) {
    CUdeviceptr x;
    int c = -1;
    fresh(100);
    EQ(aot_rules_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&x, 4 << 20), CUDA_SUCCESS);
    EQ(aot_rules_choose_config(NULL, &c, x, x, x, 500), CUDA_SUCCESS);
    EQ(c, 0);
    EQ(aot_rules_launch(NULL, x, x, x, 500), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 4);
    EQ(last_launch()->block[0], 32);
    EQ(aot_rules_choose_config(NULL, &c, x, x, x, 5000), CUDA_SUCCESS);
    EQ(c, 1);
    EQ(aot_rules_launch(NULL, x, x, x, 5000), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 5);
    EQ(last_launch()->block[0], 128);
    EQ(aot_rules_choose_config(NULL, &c, x, x, x, 1000000), CUDA_ERROR_INVALID_VALUE);
    EQ(aot_rules_launch(NULL, x, x, x, 1000000), CUDA_ERROR_INVALID_VALUE);
    /* An explicit config and grid. */
    EQ(aot_rules_launch_grid(NULL, 1, 7, 1, 1, x, x, x, 5000), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 7);
    EQ(last_launch()->block[0], 128);
    EQ(aot_rules_launch_grid(NULL, 2, 7, 1, 1, x, x, x, 5000), CUDA_ERROR_INVALID_VALUE);
    STREQ(aot_rules_config(1), "BLOCK_SIZE=1024, num_warps=4 if n_elements < 1000000");
    CHECK(aot_rules_config(2) == NULL, "config 2 exists");
    EQ(cuMemFree(x), CUDA_SUCCESS);
    aot_rules_unload();
}

/* The fake's cost: config 1 (128 threads) is the fastest unless told otherwise. */
static int fastest_threads = 128;

static double cost(const FakeLaunch *l, void *user) {
    (void)user;
    return l->block[0] == (unsigned)fastest_threads ? 1.0 : 2.0 + l->block[0] / 1024.0;
}

static void test_tuning(void) {
    CUdeviceptr x;
    int c = -1, before;
    fresh(100);
    fake_cuda_set_cost(cost, NULL);
    EQ(aot_tuned_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&x, 16 << 20), CUDA_SUCCESS);
    EQ(aot_tuned_get_config(1000), -1);
    /* n = 1000: configs 0 and 1 (config 2 needs n >= 2048), 6 launches each, then the launch. */
    before = fake_cuda_launch_count();
    EQ(aot_tuned_launch(NULL, x, x, x, 1000), CUDA_SUCCESS);
    EQ(fake_cuda_launch_count() - before, 13);
    EQ(aot_tuned_get_config(1000), 1);
    EQ(last_launch()->block[0], 128);
    EQ(last_launch()->grid[0], 2);
    /* Known now: one launch. */
    before = fake_cuda_launch_count();
    EQ(aot_tuned_launch(NULL, x, x, x, 1000), CUDA_SUCCESS);
    EQ(fake_cuda_launch_count() - before, 1);
    /* n = 4096: three candidates; the 256-thread config is made the fastest. */
    fastest_threads = 256;
    before = fake_cuda_launch_count();
    EQ(aot_tuned_choose_config(NULL, &c, x, x, x, 4096), CUDA_SUCCESS);
    EQ(c, 2);
    EQ(fake_cuda_launch_count() - before, 18);
    /* Pinned: no timing. */
    EQ(aot_tuned_set_config(777, 0), CUDA_SUCCESS);
    EQ(aot_tuned_set_config(777, 3), CUDA_ERROR_INVALID_VALUE);
    before = fake_cuda_launch_count();
    EQ(aot_tuned_launch(NULL, x, x, x, 777), CUDA_SUCCESS);
    EQ(fake_cuda_launch_count() - before, 1);
    EQ(last_launch()->block[0], 32);
    /* A config the device cannot launch is skipped. */
    fastest_threads = 32;
    fake_cuda_fail("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    EQ(aot_tuned_launch(NULL, x, x, x, 100), CUDA_SUCCESS);
    EQ(aot_tuned_get_config(100), 1);
    /* Other failures come back, and nothing is remembered. */
    fake_cuda_fail("cuEventCreate", 2, CUDA_ERROR_OUT_OF_MEMORY);
    EQ(aot_tuned_launch(NULL, x, x, x, 101), CUDA_ERROR_OUT_OF_MEMORY);
    EQ(aot_tuned_get_config(101), -1);
    fake_cuda_fail("cuEventElapsedTime", 1, CUDA_ERROR_LAUNCH_FAILED);
    EQ(aot_tuned_launch(NULL, x, x, x, 102), CUDA_ERROR_LAUNCH_FAILED);
    EQ(aot_tuned_get_config(102), -1);
    fake_cuda_fail("cuLaunchKernel", 3, CUDA_ERROR_ILLEGAL_ADDRESS);
    EQ(aot_tuned_launch(NULL, x, x, x, 103), CUDA_ERROR_ILLEGAL_ADDRESS);
    /* The specialization follows the arguments during tuning too. */
    EQ(aot_tuned_unload(), CUDA_SUCCESS);
    fresh(100);
    fake_cuda_set_cost(cost, NULL);
    EQ(aot_tuned_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&x, 1 << 20), CUDA_SUCCESS);
    EQ(aot_tuned_launch(NULL, x + 4, x, x, 64), CUDA_SUCCESS);
    CHECK(last_launch()->function == aot_tuned_function(aot_tuned_get_config(64) * 2 + 0), "not the general one");
    EQ(aot_tuned_launch(NULL, x, x, x, 64), CUDA_SUCCESS);
    CHECK(last_launch()->function == aot_tuned_function(aot_tuned_get_config(64) * 2 + 1), "not the aligned one");
    /* Unloading forgets the choices. */
    EQ(aot_tuned_unload(), CUDA_SUCCESS);
    EQ(aot_tuned_get_config(64), -1);
    fake_cuda_set_cost(NULL, NULL);
}

/* Kernel parameters named like the generated code's own names. */
static void test_clash(void) {
    enum { N = 300 };
    CUdeviceptr in, out;
    int32_t h[N], r[N];
    int i;
    fresh(100);
    EQ(aot_clash_load(), CUDA_SUCCESS);
    EQ(cuMemAlloc(&in, N * 4), CUDA_SUCCESS);
    EQ(cuMemAlloc(&out, N * 4), CUDA_SUCCESS);
    for (i = 0; i < N; i++) h[i] = i * 3;
    EQ(cuMemcpyHtoD(in, h, sizeof h), CUDA_SUCCESS);
    /* stream_, grid_x_, cuda_ptr_, aot_arg0_, config_, n */
    EQ(aot_clash_launch(NULL, out, 10, in, 200, 3000, N), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 3);
    EQ(cuMemcpyDtoH(r, out, sizeof r), CUDA_SUCCESS);
    for (i = 0; i < N; i++)
        if (r[i] != h[i] + 3210) {
            CHECK(0, "out[%d] = %d", i, r[i]);
            break;
        }
    aot_clash_unload();
}

/* A kernel without arguments. */
static void test_empty(void) {
    fresh(100);
    EQ(aot_empty_load(), CUDA_SUCCESS);
    EQ(aot_empty_select(), 0);
    EQ(aot_empty_launch(NULL), CUDA_SUCCESS);
    EQ(last_launch()->grid[0], 4);
    EQ(last_launch()->nparams, 0);
    CHECK(last_launch()->ran, "not run");
    aot_empty_unload();
}

int main(void) {
    test_binary_choice();
    test_load_failures();
    test_dispatch();
    test_params();
    test_grid();
    test_rules();
    test_tuning();
    test_clash();
    test_empty();
    fake_cuda_reset();
    if (failures) {
        printf("test_aot_rt: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("test_aot_rt: OK\n");
    return 0;
}
