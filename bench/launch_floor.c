/* launch_floor.c - what a launch costs below Python: the kernel of
 * bench/launch.py (bench/kernels/launch.py, six runtime arguments) launched
 * from C, timed on the host clock per launch, two ways:
 *
 *   entry     nr_gpu_entry_launch: what the Python fast path calls after its
 *             lookup (the context check and cuLaunchKernel)
 *   entry0    the same on the default stream (torch's current stream unless
 *             the program chose another)
 *   c_api     nr_launch_gpu: the C API's checked launch (argument kinds,
 *             packing, loading on first use)
 *
 * Prints one JSON object per line: {"system", "median_us", "p20_us",
 * "p80_us", "mean_us", "launches"}; bench/launch.py reads them.
 *
 *     cc -O2 -Iinclude -I$CUDA_HOME/include bench/launch_floor.c build/libnereid.a -lcuda -lm -lpthread -ldl
 *     ./a.out bench/kernels/launch.py [launches] */
#define _POSIX_C_SOURCE 200809L
#include "nereid.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 128

static void check_cu(CUresult r, const char *what) {
    const char *name = NULL;
    if (r == CUDA_SUCCESS) return;
    cuGetErrorName(r, &name);
    fprintf(stderr, "launch_floor: %s failed: %s\n", what, name ? name : "?");
    exit(1);
}

static void check_nr(NrStatus st, NrContext *ctx, const char *what) {
    if (st == NR_OK) return;
    fprintf(stderr, "launch_floor: %s failed:\n%s", what, nr_error_text(ctx));
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double at(const double *sorted, int n, double q) { return sorted[(int)(q * (n - 1) + 0.5)]; }

static void report(const char *system, double *t, int n, double total) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("{\"system\": \"%s\", \"median_us\": %.4f, \"p20_us\": %.4f, \"p80_us\": %.4f, \"mean_us\": %.4f, "
           "\"launches\": %d}\n",
           system, 1e6 * at(t, n, 0.5), 1e6 * at(t, n, 0.2), 1e6 * at(t, n, 0.8), 1e6 * total / n, n);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *text;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc((size_t)n + 1);
    if (!text) exit(1);
    *len = fread(text, 1, (size_t)n, f);
    text[*len] = 0;
    fclose(f);
    return text;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "bench/kernels/launch.py";
    int launches = argc > 2 ? atoi(argv[2]) : 10000, warmup = 1000;
    size_t len = 0;
    char *src = read_file(path, &len), arch[16];
    double *t = malloc(sizeof(double) * (size_t)(launches > 0 ? launches : 1));
    if (!src || !t || launches < 1) {
        fprintf(stderr, "launch_floor: cannot read %s (or no launches)\n", path);
        return 1;
    }
    CUdevice dev;
    CUcontext cuctx;
    CUstream stream;
    CUdeviceptr dx, dy, dout;
    check_cu(cuInit(0), "cuInit");
    check_cu(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check_cu(cuDevicePrimaryCtxRetain(&cuctx, dev), "cuDevicePrimaryCtxRetain");
    check_cu(cuCtxSetCurrent(cuctx), "cuCtxSetCurrent");
    check_cu(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check_cu(cuMemAlloc(&dx, N * 4), "cuMemAlloc");
    check_cu(cuMemAlloc(&dy, N * 4), "cuMemAlloc");
    check_cu(cuMemAlloc(&dout, N * 4), "cuMemAlloc");
    check_cu(cuMemsetD32(dx, 0x3f800000u, N), "cuMemsetD32");
    check_cu(cuMemsetD32(dy, 0x40000000u, N), "cuMemsetD32");

    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    NrOptions opts;
    check_nr(nr_device_arch(ctx, 0, arch, sizeof arch), ctx, "nr_device_arch");
    nr_options_default(&opts);
    opts.arch = arch;
    /* the specialization the Python launch gets: aligned pointers, n = 128 divisible by 16 */
    check_nr(nr_compile(ctx, src, len, path, "axpby_kernel", "*fp32:16, *fp32:16, *fp32:16, i32:16, fp32, fp32, 128",
                        &opts, &k),
             ctx, "nr_compile");

    /* entry: the fast path's launch */
    const NrGpuEntry *e = NULL;
    check_nr(nr_kernel_gpu_entry(ctx, k, 0, &e), ctx, "nr_kernel_gpu_entry");
    int n = N;
    float alpha = 2.0f, beta = 0.5f;
    void *params[6] = {&dx, &dy, &dout, &n, &alpha, &beta};
    unsigned grid[3] = {1, 1, 1};
    for (int i = 0; i < warmup; i++) check_cu((CUresult)nr_gpu_entry_launch(e, grid, stream, params), "launch");
    check_cu(cuStreamSynchronize(stream), "cuStreamSynchronize");
    double start = now();
    for (int i = 0; i < launches; i++) {
        double t0 = now();
        nr_gpu_entry_launch(e, grid, stream, params);
        t[i] = now() - t0;
    }
    check_cu(cuStreamSynchronize(stream), "cuStreamSynchronize");
    report("entry", t, launches, now() - start);

    /* entry0: the same on the default stream, where torch launches unless told otherwise */
    for (int i = 0; i < warmup; i++) check_cu((CUresult)nr_gpu_entry_launch(e, grid, NULL, params), "launch");
    check_cu(cuCtxSynchronize(), "cuCtxSynchronize");
    start = now();
    for (int i = 0; i < launches; i++) {
        double t0 = now();
        nr_gpu_entry_launch(e, grid, NULL, params);
        t[i] = now() - t0;
    }
    check_cu(cuCtxSynchronize(), "cuCtxSynchronize");
    report("entry0", t, launches, now() - start);

    /* c_api: nr_launch_gpu */
    NrArg args[6] = {NR_DEVPTR(dx), NR_DEVPTR(dy), NR_DEVPTR(dout), NR_INT(N), NR_FLOAT(2.0), NR_FLOAT(0.5)};
    NrLaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    lc.grid[0] = lc.grid[1] = lc.grid[2] = 1;
    lc.stream = stream;
    lc.device = 0;
    for (int i = 0; i < warmup; i++) check_nr(nr_launch_gpu(ctx, k, &lc, args, 6), ctx, "nr_launch_gpu");
    check_cu(cuStreamSynchronize(stream), "cuStreamSynchronize");
    start = now();
    for (int i = 0; i < launches; i++) {
        double t0 = now();
        nr_launch_gpu(ctx, k, &lc, args, 6);
        t[i] = now() - t0;
    }
    check_cu(cuStreamSynchronize(stream), "cuStreamSynchronize");
    report("c_api", t, launches, now() - start);

    /* the result of the last launch: out = 2 * 1 + 0.5 * 2 */
    float out[N];
    check_cu(cuMemcpyDtoH(out, dout, sizeof out), "cuMemcpyDtoH");
    for (int i = 0; i < N; i++)
        if (out[i] != 3.0f) {
            fprintf(stderr, "launch_floor: out[%d] = %g, expected 3\n", i, (double)out[i]);
            return 1;
        }
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    cuMemFree(dx);
    cuMemFree(dy);
    cuMemFree(dout);
    cuStreamDestroy(stream);
    free(src);
    free(t);
    return 0;
}
