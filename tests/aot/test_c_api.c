/* test_c_api.c - the C API's JIT path from C, on the fake driver (fake_cuda.c):
 * compile from source at run time for the device's target, query the
 * kernel's metadata, launch on a stream with device memory the program
 * allocated itself, and share the disk cache of cubins with the Python
 * package (same directory, same key).  Built and run by tests/aot/run.sh. */
#include "cache.h"
#include "fake_cuda.h"
#include "nereid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = 0;
    fclose(f);
    return s;
}

static const char *FILE_NAME = "examples/vector_add.py";
static const char *SIG = "*fp32:16, *fp32:16, *fp32:16, i32, 1024";

/* Compile add_kernel for arch; the fake driver learns its PTX. */
static NrKernel *compile(NrContext *ctx, const char *src, size_t len, const char *arch) {
    NrOptions o;
    NrKernel *k = NULL;
    nr_options_default(&o);
    o.arch = arch;
    NrStatus st = nr_compile(ctx, src, len, FILE_NAME, "add_kernel", SIG, &o, &k);
    CHECK(st == NR_OK, "compile: %s", nr_error_text(ctx));
    CHECK(fake_cuda_register(FILE_NAME, "add_kernel", SIG, arch, 4, 3) == 0, "register");
    return k;
}

static int count_entries(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "find '%s' -name '*.nrc' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1) n = -1;
        pclose(p);
    }
    return n;
}

int main(void) {
    enum { N = 5000 };
    char dir[] = "/tmp/nereid-capi-XXXXXX", arch[16], got_dir[4096];
    size_t len;
    char *src = read_text(FILE_NAME, &len);
    if (!src || !mkdtemp(dir)) {
        printf("FAIL: setup\n");
        return 1;
    }
    setenv("NEREID_CACHE_DIR", dir, 1);
    unsetenv("NEREID_NO_CACHE");
    unsetenv("NEREID_ARCH");
    fake_cuda_reset();
    fake_cuda_set_cc(90);

    /* The same directory as the Python package. */
    CHECK(nr_cache_directory(got_dir, sizeof got_dir) == 0 && strcmp(got_dir, dir) == 0, "cache directory '%s'",
          got_dir);
    CHECK(nr_cache_directory(got_dir, 4) == -1, "a short buffer was accepted");

    NrContext *ctx = nr_context_create();
    /* The device's target: sm_90 on 9.0, sm_90 (PTX for the driver) on 10.0, sm_86 on 8.6. */
    CHECK(nr_device_arch(ctx, 0, arch, sizeof arch) == NR_OK && strcmp(arch, "sm_90") == 0, "arch %s: %s", arch,
          nr_error_text(ctx));
    setenv("NEREID_ARCH", "sm_80", 1);
    CHECK(nr_device_arch(ctx, 0, arch, sizeof arch) == NR_OK && strcmp(arch, "sm_80") == 0, "NEREID_ARCH: %s", arch);
    unsetenv("NEREID_ARCH");
    CHECK(nr_device_arch(ctx, 7, arch, sizeof arch) == NR_ERR_LAUNCH && strstr(nr_error_text(ctx), "device 7"),
          "device 7: %s", nr_error_text(ctx));

    /* Memory and a stream of the program's own, in the primary context. */
    CUdevice dev;
    CUcontext cu;
    CUstream stream;
    CUdeviceptr x, y, out;
    CHECK(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CHECK(cuDeviceGet(&dev, 0) == CUDA_SUCCESS, "cuDeviceGet");
    CHECK(cuDevicePrimaryCtxRetain(&cu, dev) == CUDA_SUCCESS, "retain");
    CHECK(cuCtxSetCurrent(cu) == CUDA_SUCCESS, "set current");
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS, "stream");
    CHECK(cuMemAlloc(&x, N * 4) == CUDA_SUCCESS && cuMemAlloc(&y, N * 4) == CUDA_SUCCESS &&
              cuMemAlloc(&out, N * 4) == CUDA_SUCCESS,
          "alloc");
    float hx[N], hy[N], ho[N];
    for (int i = 0; i < N; i++) hx[i] = (float)i * 0.25f, hy[i] = 1000.0f - (float)i;
    CHECK(cuMemcpyHtoD(x, hx, sizeof hx) == CUDA_SUCCESS && cuMemcpyHtoD(y, hy, sizeof hy) == CUDA_SUCCESS, "copy");

    /* Compile at run time, launch on the stream. */
    NrKernel *k = compile(ctx, src, len, "sm_90");
    NrArg args[4] = {NR_DEVPTR(x), NR_DEVPTR(y), NR_DEVPTR(out), NR_INT(N)};
    NrLaunchConfig lc = {{(N + 1023) / 1024, 1, 1}, stream, 0, 1};
    int before = fake_cuda_launch_count();
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 4) == NR_OK, "launch: %s", nr_error_text(ctx));
    CHECK(fake_cuda_launch_count() == before + 1, "launches");
    const FakeLaunch *l = fake_cuda_launch(fake_cuda_launch_count() - 1);
    CHECK(l && l->stream == stream && l->grid[0] == 5 && l->block[0] == 128 && l->ran, "the launch");
    CHECK(cuMemcpyDtoH(ho, out, sizeof ho) == CUDA_SUCCESS, "copy back");
    for (int i = 0; i < N; i++)
        if (ho[i] != hx[i] + hy[i]) {
            CHECK(0, "out[%d] = %g", i, ho[i]);
            break;
        }

    /* Metadata, from the driver. */
    NrGpuKernelInfo gi;
    CHECK(nr_kernel_gpu_info(ctx, k, 0, &gi) == NR_OK, "gpu info: %s", nr_error_text(ctx));
    CHECK(gi.num_regs == 40 && gi.max_threads_per_block == 1024 && gi.threads == 128 && gi.sm == 90 &&
              strcmp(gi.device_name, "Fake GPU") == 0 && gi.spill_bytes == 0,
          "gpu info: %d regs, %d max threads, %d threads, sm_%d, '%s'", gi.num_regs, gi.max_threads_per_block,
          gi.threads, gi.sm, gi.device_name);

    /* The cubin went to the cache under the key the Python package uses. */
    char cc[16], drv[16], path[4200];
    snprintf(cc, sizeof cc, "sm_%d", 90);
    snprintf(drv, sizeof drv, "%d", 13000);
    NrCachePart parts[5] = {NR_CACHE_STR("nereid-cubin"), NR_CACHE_STR(NEREID_VERSION), NR_CACHE_STR(nr_kernel_ptx(k)),
                            NR_CACHE_STR(cc), NR_CACHE_STR(drv)};
    NrCacheKey key = nr_cache_key(parts, 5);
    NrCache *cache;
    nr_cache_open(NULL, &cache);
    CHECK(nr_cache_entry_path(cache, &key, path, sizeof path) == 0 && access(path, R_OK) == 0, "no entry %s", path);
    nr_cache_close(cache);
    CHECK(count_entries(dir) == 1, "%d cache entries", count_entries(dir));

    /* A second kernel object of the same source loads from the cache: no new link. */
    NrKernel *k2 = compile(ctx, src, len, "sm_90");
    int links = fake_cuda_link_count();
    CHECK(nr_launch_gpu(ctx, k2, &lc, args, 4) == NR_OK, "cached launch: %s", nr_error_text(ctx));
    CHECK(fake_cuda_link_count() == links, "the cache was not used");
    CHECK(count_entries(dir) == 1, "%d cache entries", count_entries(dir));

    /* Failures come back with the driver's words. */
    fake_cuda_fail("cuLaunchKernel", 1, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 4) == NR_ERR_LAUNCH &&
              strstr(nr_error_text(ctx), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
          "launch failure: %s", nr_error_text(ctx));
    NrArg wrong[4] = {NR_DEVPTR(x), NR_INT(1), NR_DEVPTR(out), NR_INT(N)};
    CHECK(nr_launch_gpu(ctx, k, &lc, wrong, 4) == NR_ERR_INVALID &&
              strstr(nr_error_text(ctx), "must be a device buffer"),
          "wrong argument: %s", nr_error_text(ctx));

    /* Resource use without a driver: ptxas, when installed. */
    NrAsmInfo ai;
    void *cubin = NULL;
    size_t size = 0;
    NrStatus st = nr_kernel_assemble(ctx, k, NULL, &cubin, &size, &ai);
    if (st == NR_OK)
        CHECK(ai.num_regs > 0 && ai.threads == 128 && strcmp(ai.arch, "sm_90") == 0 && size > 64 &&
                  memcmp(cubin, "\177ELF", 4) == 0,
              "assemble: %d regs, %d threads, %s", ai.num_regs, ai.threads, ai.arch);
    else
        CHECK(st == NR_ERR_UNAVAILABLE && strstr(nr_error_text(ctx), "ptxas not found"), "assemble: %s",
              nr_error_text(ctx));
    free(cubin);
    CHECK(nr_kernel_assemble(ctx, k, "/nonexistent/ptxas", NULL, NULL, &ai) == NR_ERR_UNAVAILABLE &&
              strstr(nr_error_text(ctx), "ptxas '/nonexistent/ptxas' cannot be run"),
          "missing ptxas: %s", nr_error_text(ctx));

    nr_kernel_destroy(k);
    nr_kernel_destroy(k2);
    nr_context_destroy(ctx);
    cuMemFree(x);
    cuMemFree(y);
    cuMemFree(out);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(dev);
    free(src);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    fake_cuda_reset();
    if (failures) {
        printf("test_c_api: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("test_c_api: OK\n");
    return 0;
}
