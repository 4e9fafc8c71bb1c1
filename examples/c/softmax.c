/* softmax.c - row-wise softmax on the GPU from plain C, with the kernel of
 * examples/softmax.py compiled ahead of time (no Python, no compiler at run
 * time: the program needs libcuda and the two generated files).
 *
 *     nereid aot examples/softmax.py -k softmax_kernel \
 *         -s '*fp32, *fp32, i32, i32, i32, i32, BLOCK_SIZE' \
 *         -s '*fp32:16, *fp32:16, i32:16, i32:16, i32, i32, BLOCK_SIZE' \
 *         -c 'BLOCK_SIZE=256, num_warps=2 if n_cols <= 256' \
 *         -c 'BLOCK_SIZE=1024, num_warps=4 if n_cols <= 1024' \
 *         -c 'BLOCK_SIZE=4096, num_warps=8 if n_cols <= 4096' \
 *         -c 'BLOCK_SIZE=16384, num_warps=16 if n_cols <= 16384' \
 *         -g n_rows -o softmax_aot
 *     cc -std=c99 -I. softmax.c softmax_aot.c -lcuda -o softmax
 *     ./softmax [ROWS COLS]...
 *
 * The launcher picks the config from n_cols (the first whose condition
 * holds) and the specialization from the arguments (16-byte aligned rows
 * when the strides divide by 16).  Each shape is checked against a softmax
 * computed on the CPU in double precision. */
#include "example.h"
#include "softmax_aot.h"

#include <math.h>

typedef struct Run {
    CUstream stream;
    CUdeviceptr x, y;
    int rows, cols;
} Run;

static void launch(void *arg) {
    const Run *r = arg;
    CHECK(softmax_aot_launch(r->stream, r->y, r->x, r->cols, r->cols, r->rows, r->cols));
}

static void cpu_softmax(const float *x, double *y, int rows, int cols) {
    int i, j;
    for (i = 0; i < rows; i++) {
        const float *row = x + (size_t)i * (size_t)cols;
        double m = -INFINITY, s = 0.0;
        for (j = 0; j < cols; j++) m = row[j] > m ? row[j] : m;
        for (j = 0; j < cols; j++) s += exp(row[j] - m);
        for (j = 0; j < cols; j++) y[(size_t)i * (size_t)cols + (size_t)j] = exp(row[j] - m) / s;
    }
}

/* Run one shape; returns 0 when the result matches the CPU's. */
static int check_shape(CUstream stream, int rows, int cols, int reps) {
    size_t n = (size_t)rows * (size_t)cols, i;
    float *x = example_alloc(n * sizeof *x), *y = example_alloc(n * sizeof *y);
    double *ref = example_alloc(n * sizeof *ref), err = 0.0;
    Run r;
    int config = -1;
    for (i = 0; i < n; i++) x[i] = (float)example_uniform(-8.0, 8.0);
    r.stream = stream;
    r.rows = rows;
    r.cols = cols;
    CHECK(cuMemAlloc(&r.x, n * sizeof *x));
    CHECK(cuMemAlloc(&r.y, n * sizeof *y));
    CHECK(cuMemcpyHtoD(r.x, x, n * sizeof *x));
    CHECK(cuMemsetD32(r.y, 0x7fc00000u, n)); /* NaN: what the kernel leaves unwritten shows */
    launch(&r);
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(y, r.y, n * sizeof *y));
    cpu_softmax(x, ref, rows, cols);
    for (i = 0; i < n; i++) {
        double e = fabs((double)y[i] - ref[i]);
        if (!(e <= err)) err = e; /* NaN wins */
    }
    CHECK(softmax_aot_choose_config(stream, &config, r.y, r.x, cols, cols, rows, cols));
    printf("softmax %6d x %-6d config %d (%s), specialization %d: max abs error %.2e", rows, cols, config,
           softmax_aot_config(config), softmax_aot_select(r.y, r.x, cols, cols, rows, cols), err);
    if (reps > 0) {
        float ms = example_time(stream, launch, &r, reps);
        printf(", %.3f ms, %.0f GB/s", ms, 2.0 * (double)n * sizeof(float) / (ms * 1e6));
    }
    printf("%s\n", err <= 1e-6 ? "" : "  MISMATCH");
    CHECK(cuMemFree(r.x));
    CHECK(cuMemFree(r.y));
    free(x);
    free(y);
    free(ref);
    return err <= 1e-6 ? 0 : 1;
}

int main(int argc, char **argv) {
    static const int shapes[][2] = {{4096, 1024}, {1823, 781}, {4096, 4096}, {512, 16384}, {1000, 100}};
    CUstream stream;
    int failures = 0, i, v, reps = 20;
    example_init();
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(softmax_aot_load());
    for (v = 0; v < SOFTMAX_AOT_NUM_VARIANTS; v++) printf("variant %d: %s\n", v, softmax_aot_binary(v));
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
    CHECK(softmax_aot_unload());
    CHECK(cuStreamDestroy(stream));
    example_finish();
    printf("softmax: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
