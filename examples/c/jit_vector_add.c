/* jit_vector_add.c - a kernel compiled from its source at run time, from C:
 * the C API of libnereid (include/nereid.h) with the CUDA driver API.
 *
 *     cc -std=c99 -Iinclude jit_vector_add.c build/libnereid.a -lcuda -lm -lpthread -ldl -o jit_vector_add
 *     ./jit_vector_add [examples/vector_add.py [N]]
 *
 * Steps: find the target for the device, compile the kernel for it, report
 * what it uses (registers, shared memory, occupancy), allocate and fill
 * device memory with the driver API, launch on a stream of our own, check the
 * result.  The cubin the driver makes from the PTX goes to the disk cache the
 * Python package uses, so the next run (or a Python program launching the
 * same kernel) loads it without compiling. */
#include "example.h"
#include "nereid.h"

#include <math.h>

static char *read_source(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *text;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = example_alloc((size_t)n + 1);
    *len = fread(text, 1, (size_t)n, f);
    text[*len] = 0;
    fclose(f);
    return text;
}

/* Stop with the diagnostics of a failing Nereid call. */
static void nr_check(NrStatus st, NrContext *ctx, const char *what) {
    if (st == NR_OK) return;
    fprintf(stderr, "%s failed:\n%s", what, nr_error_text(ctx));
    exit(1);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "examples/vector_add.py";
    int n = argc > 2 ? atoi(argv[2]) : 1000000, i, bad = 0;
    size_t len, bytes = (size_t)n * sizeof(float);
    char *src = read_source(path, &len), arch[16], cache[4096];
    float *x = example_alloc(bytes), *y = example_alloc(bytes), *out = example_alloc(bytes);
    NrContext *ctx;
    NrKernel *k = NULL;
    NrOptions opts;
    NrGpuKernelInfo info;
    NrOccupancy occ;
    const NrSmLimits *limits;
    CUstream stream;
    CUdeviceptr dx, dy, dout;
    if (!src) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }

    /* 1. The device and its target. */
    example_init();
    ctx = nr_context_create();
    nr_check(nr_device_arch(ctx, 0, arch, sizeof arch), ctx, "nr_device_arch");

    /* 2. Compile for it: 16-byte aligned pointers (cuMemAlloc gives 256), blocks of 1024. */
    nr_options_default(&opts);
    opts.arch = arch;
    opts.num_warps = 4;
    nr_check(nr_compile(ctx, src, len, path, "add_kernel", "*fp32:16, *fp32:16, *fp32:16, i32, 1024", &opts, &k), ctx,
             "nr_compile");

    /* 3. What it uses on this device (the driver compiles the PTX here, or loads it from the cache). */
    nr_check(nr_kernel_gpu_info(ctx, k, 0, &info), ctx, "nr_kernel_gpu_info");
    printf("add_kernel for %s: %d registers, %d bytes of local memory, %d + %d bytes of shared memory, %d threads\n",
           arch, info.num_regs, info.spill_bytes, info.static_shared_bytes, info.dynamic_shared_bytes, info.threads);
    limits = nr_sm_limits(info.sm);
    if (limits && nr_occupancy(limits, info.threads, info.num_regs,
                               info.static_shared_bytes + info.dynamic_shared_bytes, &occ) == 0)
        printf("occupancy on sm_%d: %d programs per SM (%.0f%%), limited by %s\n", info.sm, occ.blocks_per_sm,
               100.0 * occ.occupancy, occ.limiter);
    if (nr_cache_directory(cache, sizeof cache) == 0) printf("disk cache: %s\n", cache);

    /* 4. Data on the device, and a stream of our own. */
    for (i = 0; i < n; i++) {
        x[i] = (float)example_uniform(-1.0, 1.0);
        y[i] = (float)example_uniform(-1.0, 1.0);
    }
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&dx, bytes));
    CHECK(cuMemAlloc(&dy, bytes));
    CHECK(cuMemAlloc(&dout, bytes));
    CHECK(cuMemcpyHtoD(dx, x, bytes));
    CHECK(cuMemcpyHtoD(dy, y, bytes));

    /* 5. Launch: one program per 1024 elements, on the stream. */
    {
        NrArg args[4];
        NrLaunchConfig lc;
        args[0] = NR_DEVPTR(dx);
        args[1] = NR_DEVPTR(dy);
        args[2] = NR_DEVPTR(dout);
        args[3] = NR_INT(n);
        memset(&lc, 0, sizeof lc);
        lc.grid[0] = (unsigned)((n + 1023) / 1024);
        lc.grid[1] = lc.grid[2] = 1;
        lc.stream = stream;
        lc.device = 0;
        nr_check(nr_launch_gpu(ctx, k, &lc, args, 4), ctx, "nr_launch_gpu");
    }
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH(out, dout, bytes));
    for (i = 0; i < n; i++)
        if (!(out[i] == x[i] + y[i])) bad++;
    printf("jit_vector_add of %d elements: %d wrong\n", n, bad);

    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
    CHECK(cuMemFree(dout));
    CHECK(cuStreamDestroy(stream));
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    example_finish();
    free(src);
    free(x);
    free(y);
    free(out);
    printf("jit_vector_add: %s\n", bad ? "FAILED" : "OK");
    return bad ? 1 : 0;
}
