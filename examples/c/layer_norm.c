/* layer_norm.c - layer normalization (forward) on the GPU from plain C, with
 * the kernel of examples/layer_norm.py compiled ahead of time.  The kernel
 * takes no row count, so the program gives the grid itself (one program per
 * row) through layer_norm_aot_launch_grid.
 *
 *     nereid aot examples/layer_norm.py -k layer_norm_fwd \
 *         -s '*fp32:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, i32, i32, fp32, 1024' \
 *         -o layer_norm_aot
 *     cc -std=c99 -I. layer_norm.c layer_norm_aot.c -lcuda -lm -o layer_norm
 *     ./layer_norm [ROWS COLS]...
 *
 * Each shape is checked (output, mean and 1/std per row) against a layer
 * norm computed on the CPU in double precision. */
#include "example.h"
#include "layer_norm_aot.h"

#include <math.h>

typedef struct Run {
    CUstream stream;
    CUdeviceptr x, y, w, b, mean, rstd;
    int rows, cols;
} Run;

static const float EPS = 1e-5f;

static void launch(void *arg) {
    const Run *r = arg;
    CHECK(layer_norm_aot_launch_grid(r->stream, (unsigned)r->rows, 1, 1, r->x, r->y, r->w, r->b, r->mean, r->rstd,
                                     r->cols, r->cols, EPS));
}

static int check_shape(CUstream stream, int rows, int cols, int reps) {
    size_t n = (size_t)rows * (size_t)cols, i;
    float *x = example_alloc(n * 4), *y = example_alloc(n * 4), *w = example_alloc((size_t)cols * 4);
    float *b = example_alloc((size_t)cols * 4), *mean = example_alloc((size_t)rows * 4);
    float *rstd = example_alloc((size_t)rows * 4);
    double err = 0.0;
    int row, col;
    Run r;
    for (i = 0; i < n; i++) x[i] = (float)example_uniform(-3.0, 5.0);
    for (col = 0; col < cols; col++) {
        w[col] = (float)example_uniform(0.5, 1.5);
        b[col] = (float)example_uniform(-0.5, 0.5);
    }
    r.stream = stream;
    r.rows = rows;
    r.cols = cols;
    CHECK(cuMemAlloc(&r.x, n * 4));
    CHECK(cuMemAlloc(&r.y, n * 4));
    CHECK(cuMemAlloc(&r.w, (size_t)cols * 4));
    CHECK(cuMemAlloc(&r.b, (size_t)cols * 4));
    CHECK(cuMemAlloc(&r.mean, (size_t)rows * 4));
    CHECK(cuMemAlloc(&r.rstd, (size_t)rows * 4));
    CHECK(cuMemcpyHtoD(r.x, x, n * 4));
    CHECK(cuMemcpyHtoD(r.w, w, (size_t)cols * 4));
    CHECK(cuMemcpyHtoD(r.b, b, (size_t)cols * 4));
    CHECK(cuMemsetD32(r.y, 0x7fc00000u, n)); /* NaN: what the kernel leaves unwritten shows */
    launch(&r);
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, r.y, n * 4));
    CHECK(cuMemcpyDtoH(mean, r.mean, (size_t)rows * 4));
    CHECK(cuMemcpyDtoH(rstd, r.rstd, (size_t)rows * 4));
    for (row = 0; row < rows; row++) {
        const float *xr = x + (size_t)row * (size_t)cols;
        double m = 0.0, v = 0.0, rs, e;
        for (col = 0; col < cols; col++) m += xr[col];
        m /= cols;
        for (col = 0; col < cols; col++) v += (xr[col] - m) * (xr[col] - m);
        v /= cols;
        rs = 1.0 / sqrt(v + EPS);
        e = fabs(mean[row] - m) + fabs(rstd[row] - rs) / rs;
        if (!(e <= err)) err = e;
        for (col = 0; col < cols; col++) {
            e = fabs(y[(size_t)row * (size_t)cols + (size_t)col] - ((xr[col] - m) * rs * w[col] + b[col]));
            if (!(e <= err)) err = e; /* NaN wins */
        }
    }
    printf("layer_norm %6d x %-6d specialization %d: max error %.2e", rows, cols,
           layer_norm_aot_select(r.x, r.y, r.w, r.b, r.mean, r.rstd, cols, cols, EPS), err);
    if (reps > 0) {
        float ms = example_time(stream, launch, &r, reps);
        printf(", %.3f ms, %.0f GB/s", ms, 3.0 * (double)n * 4 / (ms * 1e6));
    }
    printf("%s\n", err <= 1e-4 ? "" : "  MISMATCH");
    CHECK(cuMemFree(r.x));
    CHECK(cuMemFree(r.y));
    CHECK(cuMemFree(r.w));
    CHECK(cuMemFree(r.b));
    CHECK(cuMemFree(r.mean));
    CHECK(cuMemFree(r.rstd));
    free(x);
    free(y);
    free(w);
    free(b);
    free(mean);
    free(rstd);
    return err <= 1e-4 ? 0 : 1;
}

int main(int argc, char **argv) {
    static const int shapes[][2] = {{4096, 1024}, {1000, 4000}, {8192, 768}, {17, 10000}};
    CUstream stream;
    int failures = 0, i, reps = 20;
    example_init();
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(layer_norm_aot_load());
    printf("variant 0: %s\n", layer_norm_aot_binary(0));
    if (argc > 1 && strcmp(argv[1], "--no-timing") == 0) {
        reps = 0;
        argc--;
        argv++;
    }
    if (argc >= 3) {
        for (i = 1; i + 1 < argc; i += 2) failures += check_shape(stream, atoi(argv[i]), atoi(argv[i + 1]), reps);
    } else {
        for (i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++)
            failures += check_shape(stream, shapes[i][0], shapes[i][1], reps);
    }
    CHECK(layer_norm_aot_unload());
    CHECK(cuStreamDestroy(stream));
    example_finish();
    printf("layer_norm: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
