/* test_c_api.c - the C API's JIT path from C, on the fake driver (fake_cuda.c):
 * compile from source at run time for the device's target, query the
 * kernel's metadata, launch on a stream with device memory the program
 * allocated itself, and share the disk cache of cubins with the Python
 * package (same directory, same key); launch a kernel that loads host
 * tensor descriptors with TMA (its tensor maps encoded from the launch's
 * arguments, through nr_launch_gpu and the repeated-launch entry, whose
 * cache of maps follows the arguments).  Built and run by tests/aot/run.sh. */
#include "cache.h"
#include "fake_cuda.h"
#include "fp.h"
#include "nereid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- host tensor descriptors through TMA ---- */

static const char *DESC_FILE = "tests/aot/desc_kernels.py";
static const char *DESC_SIG = "tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32, i32, i32:16, 64, 64, 64";
static unsigned seed;

typedef struct Mm {
    int M, N, K, lda, ldb;     /* A: M x K in rows of lda, B: K x N in rows of ldb (elements) */
    CUdeviceptr a, b, c;
    float *ha, *hb;            /* the fp16 values, as floats */
} Mm;

static int mm_alloc(Mm *m) {
    size_t na = (size_t)m->M * (size_t)m->lda, nb = (size_t)m->K * (size_t)m->ldb, nc = (size_t)m->M * (size_t)m->N;
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
    m->ha = malloc(na * sizeof(float));
    m->hb = malloc(nb * sizeof(float));
    for (size_t i = 0; i < na; i++) a[i] = nr_f32_to_f16((float)rand_r(&seed) / (float)RAND_MAX * 2 - 1);
    for (size_t i = 0; i < nb; i++) b[i] = nr_f32_to_f16((float)rand_r(&seed) / (float)RAND_MAX * 2 - 1);
    for (size_t i = 0; i < na; i++) m->ha[i] = nr_f16_to_f32(a[i]);
    for (size_t i = 0; i < nb; i++) m->hb[i] = nr_f16_to_f32(b[i]);
    int ok = cuMemAlloc(&m->a, na * 2) == CUDA_SUCCESS && cuMemAlloc(&m->b, nb * 2) == CUDA_SUCCESS &&
             cuMemAlloc(&m->c, nc * 4) == CUDA_SUCCESS && cuMemcpyHtoD(m->a, a, na * 2) == CUDA_SUCCESS &&
             cuMemcpyHtoD(m->b, b, nb * 2) == CUDA_SUCCESS;
    free(a);
    free(b);
    return ok;
}

static void mm_free(Mm *m) {
    cuMemFree(m->a);
    cuMemFree(m->b);
    cuMemFree(m->c);
    free(m->ha);
    free(m->hb);
}

/* Poison C (NaN), so that a launch that writes nothing fails the comparison. */
static void mm_poison(const Mm *m) { cuMemsetD32(m->c, 0x7fc00000u, (size_t)m->M * (size_t)m->N); }

/* The largest relative error of C against a float64 reference. */
static double mm_error(const Mm *m) {
    size_t nc = (size_t)m->M * (size_t)m->N;
    float *c = malloc(nc * 4);
    double worst = 0;
    if (cuMemcpyDtoH(c, m->c, nc * 4) != CUDA_SUCCESS) worst = INFINITY;
    for (int i = 0; i < m->M && worst < INFINITY; i++)
        for (int j = 0; j < m->N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < m->K; k++) {
                double p = (double)m->ha[(size_t)i * (size_t)m->lda + (size_t)k] *
                           (double)m->hb[(size_t)k * (size_t)m->ldb + (size_t)j];
                ref += p;
                mag += fabs(p);
            }
            double e = fabs((double)c[(size_t)i * (size_t)m->N + (size_t)j] - ref) / (mag + 1e-30);
            if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
        }
    free(c);
    return worst;
}

static void mm_args(const Mm *m, NrArg args[14]) {
    NrArg v[14] = {NR_DEVPTR(m->a), NR_INT(m->M), NR_INT(m->K), NR_INT(m->lda), NR_INT(1),
                   NR_DEVPTR(m->b), NR_INT(m->K), NR_INT(m->N), NR_INT(m->ldb), NR_INT(1),
                   NR_DEVPTR(m->c), NR_INT(m->M), NR_INT(m->N), NR_INT(m->K)};
    memcpy(args, v, sizeof v);
}

/* Values at their parameter sizes, as the Python extension packs them. */
typedef struct Packed {
    uint64_t a, b, c;
    int32_t sa[2], sb[2], mnk[3];
    int64_t ta[2], tb[2];
    void *p[14];
} Packed;

static void mm_pack(const Mm *m, Packed *q) {
    q->a = m->a, q->b = m->b, q->c = m->c;
    q->sa[0] = m->M, q->sa[1] = m->K, q->ta[0] = m->lda, q->ta[1] = 1;
    q->sb[0] = m->K, q->sb[1] = m->N, q->tb[0] = m->ldb, q->tb[1] = 1;
    q->mnk[0] = m->M, q->mnk[1] = m->N, q->mnk[2] = m->K;
    void *p[14] = {&q->a, &q->sa[0], &q->sa[1], &q->ta[0], &q->ta[1], &q->b, &q->sb[0],
                   &q->sb[1], &q->tb[0], &q->tb[1], &q->c, &q->mnk[0], &q->mnk[1], &q->mnk[2]};
    memcpy(q->p, p, sizeof p);
}

static void test_tensor_maps(void) {
    size_t len;
    char *src = read_text(DESC_FILE, &len);
    NrContext *ctx = nr_context_create();
    NrOptions o;
    NrKernel *k = NULL;
    nr_options_default(&o);
    o.arch = "sm_90a";
    if (!src || nr_compile(ctx, src, len, DESC_FILE, "desc_mm", DESC_SIG, &o, &k) != NR_OK) {
        CHECK(0, "compile desc_mm: %s", nr_error_text(ctx));
        free(src);
        nr_context_destroy(ctx);
        return;
    }
    CHECK(fake_cuda_register(DESC_FILE, "desc_mm", DESC_SIG, "sm_90a", 4, 3) == 0, "register desc_mm");
    CHECK(nr_kernel_num_tensor_maps(k) == 2, "desc_mm takes %d tensor maps", nr_kernel_num_tensor_maps(k));

    /* A 100 x 72 by 72 x 90 product: ragged blocks; B's rows padded to 96 elements. */
    Mm m = {100, 90, 72, 72, 96, 0, 0, 0, NULL, NULL};
    if (!mm_alloc(&m)) {
        CHECK(0, "device memory");
        return;
    }
    NrArg args[14];
    mm_args(&m, args);
    NrLaunchConfig lc = {{2, 2, 1}, NULL, 0, 1};
    int launches = fake_cuda_launch_count(), encodes = fake_cuda_encode_count();
    mm_poison(&m);
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 14) == NR_OK, "launch: %s", nr_error_text(ctx));
    const FakeLaunch *l = fake_cuda_launch(fake_cuda_launch_count() - 1);
    CHECK(fake_cuda_launch_count() == launches + 1 && l->ntmaps == 2 && l->ran, "the launch: %d maps",
          l ? l->ntmaps : -1);
    CHECK(fake_cuda_encode_count() == encodes + 2, "%d maps encoded", fake_cuda_encode_count() - encodes);
    double err = mm_error(&m);
    CHECK(err < 1e-5, "nr_launch_gpu: relative error %g", err);

    /* What TMA cannot take is refused before the driver sees it. */
    launches = fake_cuda_launch_count(), encodes = fake_cuda_encode_count();
    args[8] = NR_INT(92);
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 14) == NR_ERR_INVALID &&
              strstr(nr_error_text(ctx), "error: kernel 'desc_mm': tensor descriptor 'b_desc': stride 0 (92 elements "
                                         "of 2 bytes) is not a multiple of 16 bytes\n"),
          "unaligned rows: %s", nr_error_text(ctx));
    args[8] = NR_INT(m.ldb);
    args[0] = NR_DEVPTR(m.a + 8);
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 14) == NR_ERR_INVALID && strstr(nr_error_text(ctx), "tensor descriptor "
                                                                                               "'a_desc': base address") &&
              strstr(nr_error_text(ctx), "is not 16-byte aligned"),
          "unaligned base: %s", nr_error_text(ctx));
    args[0] = NR_DEVPTR(m.a);
    CHECK(fake_cuda_launch_count() == launches && fake_cuda_encode_count() == encodes, "refused launches ran");
    /* ... and the driver's refusal is reported with the descriptor's name. */
    fake_cuda_fail("cuTensorMapEncodeTiled", 2, CUDA_ERROR_INVALID_VALUE);
    CHECK(nr_launch_gpu(ctx, k, &lc, args, 14) == NR_ERR_LAUNCH &&
              strstr(nr_error_text(ctx), "kernel 'desc_mm': tensor descriptor 'b_desc': cuTensorMapEncodeTiled") &&
              strstr(nr_error_text(ctx), "CUDA_ERROR_INVALID_VALUE"),
          "driver refusal: %s", nr_error_text(ctx));
    /* An empty grid launches nothing and encodes nothing, whatever the sizes. */
    NrLaunchConfig empty = {{0, 2, 1}, NULL, 0, 1};
    args[1] = NR_INT(0);
    launches = fake_cuda_launch_count(), encodes = fake_cuda_encode_count();
    CHECK(nr_launch_gpu(ctx, k, &empty, args, 14) == NR_OK && fake_cuda_launch_count() == launches &&
              fake_cuda_encode_count() == encodes,
          "empty grid: %s", nr_error_text(ctx));
    args[1] = NR_INT(m.M);

    /* The repeated-launch entry: maps encoded once per distinct descriptor. */
    const NrGpuEntry *e = NULL;
    CHECK(nr_kernel_gpu_entry(ctx, k, 0, &e) == NR_OK && e, "entry: %s", nr_error_text(ctx));
    if (e) {
        Packed q;
        unsigned grid[3] = {2, 2, 1};
        mm_pack(&m, &q);
        encodes = fake_cuda_encode_count();
        launches = fake_cuda_launch_count();
        for (int rep = 0; rep < 3; rep++) {
            mm_poison(&m);
            CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == 0, "entry launch %d", rep);
            err = mm_error(&m);
            CHECK(err < 1e-5, "entry launch %d: relative error %g", rep, err);
        }
        CHECK(fake_cuda_launch_count() == launches + 3 &&
                  fake_cuda_launch(fake_cuda_launch_count() - 1)->ntmaps == 2,
              "entry launches");
        CHECK(fake_cuda_encode_count() == encodes + 2, "%d encodes for 3 launches of the same descriptors",
              fake_cuda_encode_count() - encodes);
        /* New B (another buffer, another pitch): its map alone is encoded again. */
        Mm m2 = {100, 90, 72, 72, 104, 0, 0, 0, NULL, NULL};
        if (mm_alloc(&m2)) {
            cuMemFree(m2.a);
            m2.a = m.a;
            memcpy(m2.ha, m.ha, sizeof(float) * (size_t)m.M * (size_t)m.lda);
            mm_pack(&m2, &q);
            encodes = fake_cuda_encode_count();
            mm_poison(&m2);
            CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == 0, "entry launch with a new B");
            err = mm_error(&m2);
            CHECK(err < 1e-5, "new B: relative error %g", err);
            CHECK(fake_cuda_encode_count() == encodes + 1, "%d encodes for a new B", fake_cuda_encode_count() - encodes);
            /* and back: the slot holds the last map, so B's first map is encoded anew */
            mm_pack(&m, &q);
            mm_poison(&m);
            CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == 0 && mm_error(&m) < 1e-5, "back to the first B");
            CHECK(fake_cuda_encode_count() == encodes + 2, "%d encodes", fake_cuda_encode_count() - encodes);
            m2.a = 0;
            mm_free(&m2);
        }
        /* Arguments TMA cannot take: CUDA_ERROR_INVALID_VALUE, nothing launched. */
        launches = fake_cuda_launch_count();
        q.tb[0] = 92;
        CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == CUDA_ERROR_INVALID_VALUE, "unaligned rows launched");
        q.tb[0] = m.ldb;
        q.sa[0] = -1;
        CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == CUDA_ERROR_INVALID_VALUE, "a negative size launched");
        q.sa[0] = m.M;
        fake_cuda_fail("cuTensorMapEncodeTiled", 1, CUDA_ERROR_INVALID_VALUE);
        q.a = m.b; /* a new A: encoded, and refused by the driver */
        CHECK(nr_gpu_entry_launch(e, grid, NULL, q.p) == CUDA_ERROR_INVALID_VALUE, "a driver refusal launched");
        CHECK(fake_cuda_launch_count() == launches, "refused entry launches ran");
        q.a = m.a;
        CHECK(nr_gpu_entry_launch(e, grid, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "no parameters");
    }
    mm_free(&m);
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    free(src);
}

/* A kernel without descriptors launches with its arguments alone, through
 * both paths, as before tensor maps existed. */
static void test_no_tensor_maps(NrContext *ctx, NrKernel *k, CUdeviceptr x, CUdeviceptr y, CUdeviceptr out, int n) {
    CHECK(nr_kernel_num_tensor_maps(k) == 0 && !strstr(nr_kernel_ptx(k), "_tmap_"), "add_kernel has tensor maps");
    const NrGpuEntry *e = NULL;
    CHECK(nr_kernel_gpu_entry(ctx, k, 0, &e) == NR_OK && e, "entry: %s", nr_error_text(ctx));
    if (!e) return;
    uint64_t px = x, py = y, po = out;
    int32_t pn = n;
    void *p[4] = {&px, &py, &po, &pn};
    unsigned grid[3] = {(unsigned)(n + 1023) / 1024, 1, 1};
    int launches = fake_cuda_launch_count(), encodes = fake_cuda_encode_count();
    CHECK(nr_gpu_entry_launch(e, grid, NULL, p) == 0, "entry launch");
    const FakeLaunch *l = fake_cuda_launch(fake_cuda_launch_count() - 1);
    CHECK(fake_cuda_launch_count() == launches + 1 && l->ran && l->nparams == 4 && l->ntmaps == 0 &&
              memcmp(l->params[0], &px, 8) == 0 && memcmp(l->params[3], &pn, 4) == 0 && l->param_size[3] == 4,
          "the entry launch");
    CHECK(fake_cuda_encode_count() == encodes, "a kernel without maps encoded some");
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

    test_no_tensor_maps(ctx, k, x, y, out, N);
    seed = (unsigned)time(NULL);
    test_tensor_maps();

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
