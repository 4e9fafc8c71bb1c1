/* matmul.c - fp16 matrix multiplication (fp32 accumulation, leaky ReLU fused)
 * on the GPU from plain C, with the kernel of examples/matmul.py compiled
 * ahead of time for several block configurations, tuned per problem size.
 *
 *     nereid aot examples/matmul.py -k matmul_kernel \
 *         -s '*fp16, *fp16, *fp16, i32, i32, i32, i32, i32, i32, i32, i32, i32,
 *             BLOCK_M, BLOCK_N, BLOCK_K, 8, "leaky_relu"' \
 *         -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1,
 *             i32:16, i32:1, BLOCK_M, BLOCK_N, BLOCK_K, 8, "leaky_relu"' \
 *         -c 'BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4' \
 *         -c 'BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8' \
 *         -c 'BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, num_warps=4' \
 *         --key M,N,K -g 'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)' -o matmul_aot
 *     cc -std=c99 -I. matmul.c matmul_aot.c -lcuda -lm -o matmul
 *     ./matmul [M N K]...
 *
 * The first launch for each (M, N, K) times the three configs and keeps the
 * fastest; the specialization for row-major operands with sizes divisible by
 * 16 is used when the arguments allow it, the general one otherwise.  Each
 * product is checked against one computed on the CPU in double precision from
 * the same fp16 inputs. */
#include "example.h"
#include "matmul_aot.h"

#include <math.h>

typedef struct Run {
    CUstream stream;
    CUdeviceptr a, b, c;
    int m, n, k;
} Run;

static void launch(void *arg) {
    const Run *r = arg;
    /* Row-major A (M x K), B (K x N), C (M x N): strides (K, 1), (N, 1), (N, 1). */
    CHECK(matmul_aot_launch(r->stream, r->a, r->b, r->c, r->m, r->n, r->k, r->k, 1, r->n, 1, r->n, 1));
}

static int check_shape(CUstream stream, int m, int n, int k, int reps) {
    size_t na = (size_t)m * (size_t)k, nb = (size_t)k * (size_t)n, nc = (size_t)m * (size_t)n, i;
    uint16_t *a = example_alloc(na * 2), *b = example_alloc(nb * 2), *c = example_alloc(nc * 2);
    double num = 0.0, den = 0.0, worst = 0.0;
    int row, col, j, config = -1, bad, full;
    long t, checks;
    Run r;
    for (i = 0; i < na; i++) a[i] = example_to_half((float)example_uniform(-1.0, 1.0));
    for (i = 0; i < nb; i++) b[i] = example_to_half((float)example_uniform(-1.0, 1.0));
    r.stream = stream;
    r.m = m;
    r.n = n;
    r.k = k;
    CHECK(cuMemAlloc(&r.a, na * 2));
    CHECK(cuMemAlloc(&r.b, nb * 2));
    CHECK(cuMemAlloc(&r.c, nc * 2));
    CHECK(cuMemcpyHtoD(r.a, a, na * 2));
    CHECK(cuMemcpyHtoD(r.b, b, nb * 2));
    CHECK(cuMemsetD8(r.c, 0xff, nc * 2)); /* NaN: what the kernel leaves unwritten shows */
    launch(&r);
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(c, r.c, nc * 2));
    /* Every entry of small products; 4096 random ones (and the corners) of large ones. */
    full = (double)m * n * k <= 3e8;
    checks = full ? (long)nc : 4096;
    for (t = 0; t < checks; t++) {
        double ref = 0.0, got, e;
        if (full) {
            row = (int)(t / n);
            col = (int)(t % n);
        } else if (t < 4) {
            row = t < 2 ? 0 : m - 1;
            col = t % 2 ? n - 1 : 0;
        } else {
            row = (int)example_uniform(0, m);
            col = (int)example_uniform(0, n);
        }
        got = example_from_half(c[(size_t)row * (size_t)n + (size_t)col]);
        for (j = 0; j < k; j++)
            ref += (double)example_from_half(a[(size_t)row * (size_t)k + (size_t)j]) *
                   (double)example_from_half(b[(size_t)j * (size_t)n + (size_t)col]);
        ref = ref >= 0 ? ref : 0.01 * ref;
        e = fabs(got - ref);
        num += e * e;
        den += ref * ref;
        /* fp16 output: an ulp of the result, plus the accumulation's rounding. */
        e /= fabs(ref) * 0x1p-10 + 1e-3 * sqrt((double)k);
        if (!(e <= worst)) worst = e; /* NaN wins */
    }
    bad = !(worst <= 1.0);
    CHECK(matmul_aot_choose_config(stream, &config, r.a, r.b, r.c, m, n, k, k, 1, n, 1, n, 1));
    printf("matmul %5d x %5d x %5d  config %d (%s), specialization %d: relative error %.2e", m, n, k, config,
           matmul_aot_config(config), matmul_aot_select(r.a, r.b, r.c, m, n, k, k, 1, n, 1, n, 1),
           sqrt(num / (den > 0 ? den : 1)));
    if (reps > 0) {
        float ms = example_time(stream, launch, &r, reps);
        printf(", %.3f ms, %.1f TFLOP/s", ms, 2.0 * m * n * (double)k / (ms * 1e9));
    }
    printf("%s\n", bad ? "  MISMATCH" : "");
    CHECK(cuMemFree(r.a));
    CHECK(cuMemFree(r.b));
    CHECK(cuMemFree(r.c));
    free(a);
    free(b);
    free(c);
    return bad;
}

int main(int argc, char **argv) {
    static const int shapes[][3] = {{1024, 1024, 1024}, {4096, 4096, 4096}, {300, 200, 170}, {2048, 512, 1024}};
    CUstream stream;
    int failures = 0, i, v, reps = 10;
    example_init();
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(matmul_aot_load());
    for (v = 0; v < MATMUL_AOT_NUM_VARIANTS; v++) printf("variant %d: %s\n", v, matmul_aot_binary(v));
    if (argc > 1 && strcmp(argv[1], "--no-timing") == 0) {
        reps = 0;
        argc--;
        argv++;
    }
    if (argc >= 4) {
        for (i = 1; i + 2 < argc; i += 3)
            failures += check_shape(stream, atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]), reps);
    } else {
        for (i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
            failures += check_shape(stream, shapes[i][0], shapes[i][1], shapes[i][2], reps);
    }
    CHECK(matmul_aot_unload());
    CHECK(cuStreamDestroy(stream));
    example_finish();
    printf("matmul: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
