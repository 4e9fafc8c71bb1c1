/* rt_smoke.c - smoke test of the CUDA runtime and the disk cache on a real GPU.
 *
 *     make build/tests/rt_smoke && build/tests/rt_smoke [tests/gpu/vadd.ptx [device]]
 *
 * Loads tests/gpu/vadd.ptx through the driver's linker, adds two vectors of
 * about a million floats (with a masked tail and a poisoned guard region),
 * prints the device properties and kernel metadata, opts in to more than 48 KB
 * of dynamic shared memory and checks that too much is refused clearly, stores
 * the cubin in a fresh disk cache and runs it again from there, checks the
 * current-context mode and the error messages for bad PTX, bad cubins and bad
 * launches, and finally checks that a faulting kernel is reported as a fault
 * (this poisons the context, so it comes last).  Prints one line per failing
 * check and "rt_smoke: OK" at the end; exits non-zero on failure.
 *
 * tests/c/test_cuda_rt.c includes this file (with RT_SMOKE_NO_MAIN) and runs
 * smoke_run() when a driver and device are present. */
#include "cache.h"
#include "cuda_rt.h"
#include "nereid.h"

#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int smoke_failures;
static int smoke_quiet;  /* no informational output (set when run against a test double) */

#define SMOKE_INFO(...) (smoke_quiet ? (void)0 : (void)printf(__VA_ARGS__))

#define SMOKE_CHECK(cond, ...)                                         \
    do {                                                               \
        if (!(cond)) {                                                 \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            printf(__VA_ARGS__);                                       \
            printf("\n");                                              \
            smoke_failures++;                                          \
        }                                                              \
    } while (0)

enum { SMOKE_BLOCK = 256, SMOKE_GUARD = 1000 };
#define SMOKE_POISON 0x7fc00001u /* a quiet NaN no arithmetic produces */

static char *smoke_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

static uint64_t smoke_rng;

static float smoke_randf(void) {
    smoke_rng ^= smoke_rng << 13;
    smoke_rng ^= smoke_rng >> 7;
    smoke_rng ^= smoke_rng << 17;
    return (float)((smoke_rng >> 11) * (1.0 / 9007199254740992.0)) * 200.0f - 100.0f;
}

static void smoke_print_device(const NrCudaDeviceInfo *d) {
    SMOKE_INFO("device %d: %s, compute capability %d.%d, driver %d.%d\n", d->ordinal, d->name, d->cc_major, d->cc_minor,
           d->driver_version / 1000, d->driver_version % 1000 / 10);
    SMOKE_INFO("  %d SMs, warp %d, %d threads/block, %d threads/SM, %d blocks/SM\n", d->sm_count, d->warp_size,
           d->max_threads_per_block, d->max_threads_per_sm, d->max_blocks_per_sm);
    SMOKE_INFO("  block max %dx%dx%d, grid max %dx%dx%d\n", d->max_block_dim[0], d->max_block_dim[1],
           d->max_block_dim[2], d->max_grid_dim[0], d->max_grid_dim[1], d->max_grid_dim[2]);
    SMOKE_INFO("  shared memory: %d per block, %d per block with opt-in, %d per SM, %d reserved per block\n",
           d->max_shared_per_block, d->max_shared_per_block_optin, d->max_shared_per_sm,
           d->reserved_shared_per_block);
    SMOKE_INFO("  registers: %d per block, %d per SM; L2 %d bytes; memory %zu MiB\n", d->regs_per_block, d->regs_per_sm,
           d->l2_bytes, d->total_mem_bytes >> 20);
    SMOKE_INFO("  clocks: SM %d kHz, memory %d kHz, bus %d bits\n", d->clock_khz, d->mem_clock_khz,
           d->mem_bus_width_bits);
}

static void smoke_print_function(const NrCudaFunction *f) {
    const NrCudaFuncInfo *i = nr_cuda_function_info(f);
    SMOKE_INFO("kernel %s: %d registers, %d bytes local (spills), %d bytes static shared, %d bytes const, "
           "max %d threads/block, PTX %d, binary sm_%d, dynamic shared limit %d\n",
           nr_cuda_function_name(f), i->num_regs, i->local_bytes, i->static_shared_bytes, i->const_bytes,
           i->max_threads_per_block, i->ptx_version, i->binary_version, i->max_dynamic_shared_bytes);
}

/* Host and device buffers of one vector add. */
typedef struct SmokeVadd {
    unsigned n;
    float *x, *y, *out;
    NrCuDevPtr dx, dy, dout;
} SmokeVadd;

static int smoke_vadd_setup(NrCuda *cu, SmokeVadd *v, unsigned n) {
    memset(v, 0, sizeof *v);
    v->n = n;
    v->x = malloc(sizeof(float) * n);
    v->y = malloc(sizeof(float) * n);
    v->out = malloc(sizeof(float) * (n + SMOKE_GUARD));
    if (!v->x || !v->y || !v->out) {
        printf("FAIL vadd setup: out of host memory\n");
        smoke_failures++;
        return -1;
    }
    for (unsigned i = 0; i < n; i++) {
        v->x[i] = smoke_randf();
        v->y[i] = smoke_randf();
    }
    if (nr_cuda_alloc(cu, sizeof(float) * n, &v->dx) || nr_cuda_alloc(cu, sizeof(float) * n, &v->dy) ||
        nr_cuda_alloc(cu, sizeof(float) * (n + SMOKE_GUARD), &v->dout) ||
        nr_cuda_memcpy_htod(cu, v->dx, v->x, sizeof(float) * n) ||
        nr_cuda_memcpy_htod(cu, v->dy, v->y, sizeof(float) * n)) {
        printf("FAIL vadd setup: %s\n", nr_cuda_error(cu));
        smoke_failures++;
        return -1;
    }
    return 0;
}

static void smoke_vadd_free(NrCuda *cu, SmokeVadd *v) {
    nr_cuda_free(cu, v->dx);
    nr_cuda_free(cu, v->dy);
    nr_cuda_free(cu, v->dout);
    free(v->x);
    free(v->y);
    free(v->out);
}

/* Poison out, run vadd on `launcher`, check every element and the guard. */
static void smoke_vadd_run(NrCuda *launcher, NrCudaFunction *f, SmokeVadd *v, NrCuStream stream, const char *what) {
    NrCuda *cu = launcher;
    NrCudaStatus st = nr_cuda_memset32(cu, v->dout, SMOKE_POISON, v->n + SMOKE_GUARD);
    /* The memset runs on the default stream, which a non-blocking stream does
     * not wait for: finish it before launching. */
    if (st == NR_CUDA_OK) st = nr_cuda_stream_synchronize(cu, NULL);
    SMOKE_CHECK(st == NR_CUDA_OK, "%s: poison: %s", what, nr_cuda_error(cu));
    unsigned n = v->n;
    void *params[4] = {&v->dx, &v->dy, &v->dout, &n};
    NrCudaLaunchConfig lc = {{(n + SMOKE_BLOCK - 1) / SMOKE_BLOCK, 1, 1}, {SMOKE_BLOCK, 1, 1}, 0, stream, 1};
    st = nr_cuda_launch(cu, f, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_OK, "%s: launch: %s", what, nr_cuda_error(cu));
    st = nr_cuda_memcpy_dtoh(cu, v->out, v->dout, sizeof(float) * (n + SMOKE_GUARD));
    SMOKE_CHECK(st == NR_CUDA_OK, "%s: copy back: %s", what, nr_cuda_error(cu));
    unsigned bad = 0, first = 0;
    for (unsigned i = 0; i < n; i++) {
        float want = v->x[i] + v->y[i];
        if (memcmp(&want, &v->out[i], sizeof want) != 0 && bad++ == 0) first = i;
    }
    SMOKE_CHECK(bad == 0, "%s: %u of %u sums wrong, first at %u: %g + %g = %g, got %g", what, bad, n, first,
                v->x[first], v->y[first], v->x[first] + v->y[first], v->out[first]);
    unsigned touched = 0;
    for (unsigned i = n; i < n + SMOKE_GUARD; i++) {
        uint32_t bits;
        memcpy(&bits, &v->out[i], 4);
        touched += bits != SMOKE_POISON;
    }
    SMOKE_CHECK(touched == 0, "%s: the masked tail wrote %u elements past n", what, touched);
}

static void smoke_time_vadd(NrCuda *cu, NrCudaFunction *f, SmokeVadd *v) {
    NrCuEvent start = NULL, end = NULL;
    unsigned n = v->n;
    void *params[4] = {&v->dx, &v->dy, &v->dout, &n};
    NrCudaLaunchConfig lc = {{(n + SMOKE_BLOCK - 1) / SMOKE_BLOCK, 1, 1}, {SMOKE_BLOCK, 1, 1}, 0, NULL, 0};
    enum { REPS = 20 };
    NrCudaStatus st = nr_cuda_event_create(cu, &start);
    if (st == NR_CUDA_OK) st = nr_cuda_event_create(cu, &end);
    if (st == NR_CUDA_OK) st = nr_cuda_launch(cu, f, &lc, params); /* warm-up */
    if (st == NR_CUDA_OK) st = nr_cuda_event_record(cu, start, NULL);
    for (int i = 0; i < REPS && st == NR_CUDA_OK; i++) st = nr_cuda_launch(cu, f, &lc, params);
    if (st == NR_CUDA_OK) st = nr_cuda_event_record(cu, end, NULL);
    float ms = 0;
    if (st == NR_CUDA_OK) st = nr_cuda_event_elapsed(cu, start, end, &ms);
    SMOKE_CHECK(st == NR_CUDA_OK, "timing: %s", nr_cuda_error(cu));
    SMOKE_CHECK(ms > 0, "timing: elapsed %g ms", ms);
    if (st == NR_CUDA_OK && ms > 0)
        SMOKE_INFO("vadd: %u floats, %.2f us per launch, %.0f GB/s\n", n, 1000.0 * ms / REPS,
               3.0 * 4.0 * n * REPS / (ms * 1e6));
    nr_cuda_event_destroy(cu, start);
    nr_cuda_event_destroy(cu, end);
}

static void smoke_dynamic_shared(NrCuda *cu, NrCudaModule *m) {
    NrCudaFunction *f;
    NrCudaStatus st = nr_cuda_get_function(cu, m, "smem_probe", &f);
    SMOKE_CHECK(st == NR_CUDA_OK, "smem_probe: %s", nr_cuda_error(cu));
    if (st) return;
    const NrCudaDeviceInfo *d = nr_cuda_device_info(cu);
    int stat = nr_cuda_function_info(f)->static_shared_bytes;
    unsigned avail = (unsigned)(d->max_shared_per_block_optin - stat) & ~15u;
    unsigned want = 100 * 1024 < avail ? 100 * 1024 : avail;
    enum { THREADS = 256 };
    NrCuDevPtr dout = 0;
    unsigned host[THREADS];
    st = nr_cuda_alloc(cu, sizeof host, &dout);
    SMOKE_CHECK(st == NR_CUDA_OK, "alloc: %s", nr_cuda_error(cu));
    void *params[2] = {&dout, &want};
    NrCudaLaunchConfig lc = {{1, 1, 1}, {THREADS, 1, 1}, want, NULL, 1};
    st = nr_cuda_launch(cu, f, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_OK, "launch with %u bytes of dynamic shared memory: %s", want, nr_cuda_error(cu));
    SMOKE_CHECK(nr_cuda_function_info(f)->max_dynamic_shared_bytes >= (int)want, "opt-in not recorded: %d",
                nr_cuda_function_info(f)->max_dynamic_shared_bytes);
    memset(host, 0xff, sizeof host);
    st = nr_cuda_memcpy_dtoh(cu, host, dout, sizeof host);
    SMOKE_CHECK(st == NR_CUDA_OK, "copy back: %s", nr_cuda_error(cu));
    unsigned bad = 0;
    for (unsigned t = 0; t < THREADS; t++) bad += host[t] != THREADS - 1 - t;
    SMOKE_CHECK(bad == 0, "smem_probe: %u of %d threads read the wrong word", bad, THREADS);
    SMOKE_INFO("dynamic shared memory: %u bytes opted in and used\n", want);

    /* One byte more than the device allows must be refused, clearly. */
    unsigned too_much = (unsigned)(d->max_shared_per_block_optin - stat) + 1;
    lc.shared_bytes = too_much;
    params[1] = &too_much;
    st = nr_cuda_launch(cu, f, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID, "over-large shared memory request gave status %d: %s", st,
                nr_cuda_error(cu));
    SMOKE_CHECK(strstr(nr_cuda_error(cu), "shared memory") && strstr(nr_cuda_error(cu), "smem_probe"),
                "unclear message: %s", nr_cuda_error(cu));
    SMOKE_INFO("refused as expected: %s\n", nr_cuda_error(cu));
    nr_cuda_free(cu, dout);
}

static int smoke_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Store the cubin in a fresh disk cache, read it back, load and run it. */
static void smoke_cache(NrCuda *cu, NrCudaModule *m, const char *ptx, size_t ptx_len, SmokeVadd *v) {
    char dir[] = "/tmp/nereid-rt-smoke-XXXXXX";
    if (!mkdtemp(dir)) {
        SMOKE_CHECK(0, "mkdtemp failed");
        return;
    }
    NrCache *c;
    NrCacheMode mode = nr_cache_open(dir, &c);
    SMOKE_CHECK(mode == NR_CACHE_READ_WRITE, "cache open: %s", nr_cache_warning(c));
    const NrCudaDeviceInfo *d = nr_cuda_device_info(cu);
    char target[32];
    snprintf(target, sizeof target, "sm_%d%d", d->cc_major, d->cc_minor);
    NrCachePart parts[3] = {NR_CACHE_BYTES(ptx, ptx_len), NR_CACHE_STR(target), NR_CACHE_STR(NEREID_VERSION)};
    NrCacheKey key = nr_cache_key(parts, 3);
    NrArena a;
    nr_arena_init(&a);
    const void *data;
    size_t len;
    SMOKE_CHECK(nr_cache_get(c, &key, &a, &data, &len) == 0, "fresh cache hit");
    size_t cubin_size;
    const void *cubin = nr_cuda_module_cubin(m, &cubin_size);
    SMOKE_CHECK(cubin && cubin_size > 0, "module has no cubin");
    SMOKE_CHECK(nr_cache_put(c, &key, cubin, cubin_size) == 0, "cache put: %s", nr_cache_warning(c));
    int hit = nr_cache_get(c, &key, &a, &data, &len);
    SMOKE_CHECK(hit && len == cubin_size && memcmp(data, cubin, len) == 0, "cache did not return the cubin");
    if (hit) {
        NrCudaModule *m2;
        NrCudaFunction *f2;
        NrCudaStatus st = nr_cuda_module_load_cubin(cu, data, len, &m2);
        SMOKE_CHECK(st == NR_CUDA_OK, "load cubin from cache: %s", nr_cuda_error(cu));
        if (st == NR_CUDA_OK) {
            st = nr_cuda_get_function(cu, m2, "vadd", &f2);
            SMOKE_CHECK(st == NR_CUDA_OK, "vadd from cached cubin: %s", nr_cuda_error(cu));
            for (unsigned i = 0; i < v->n; i++) v->x[i] = smoke_randf();
            nr_cuda_memcpy_htod(cu, v->dx, v->x, sizeof(float) * v->n);
            if (st == NR_CUDA_OK) smoke_vadd_run(cu, f2, v, NULL, "vadd from the cache");
            nr_cuda_module_unload(cu, m2);
        }
        SMOKE_INFO("cache: %zu-byte cubin stored in %s and reloaded\n", len, dir);
    }
    nr_arena_free(&a);
    nr_cache_close(c);
    nftw(dir, smoke_rm, 8, FTW_DEPTH | FTW_PHYS);
}

/* Errors that must be reported clearly and leave the context usable. */
static void smoke_errors(NrCuda *cu, NrCudaModule *m, NrCudaFunction *vadd) {
    static const char bad_ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n"
                                  ".visible .entry bad()\n{\n    mov.u32 %r1, 1;\n    ret;\n}\n";
    NrCudaModule *bm = NULL;
    NrCudaStatus st = nr_cuda_module_load_ptx(cu, bad_ptx, strlen(bad_ptx), NULL, &bm);
    SMOKE_CHECK(st == NR_CUDA_ERR_JIT && !bm, "bad PTX gave status %d", st);
    SMOKE_CHECK(strstr(nr_cuda_error(cu), "CUDA_ERROR_") && strstr(nr_cuda_error(cu), "%r1"),
                "bad PTX message lacks the error name or the JIT log: %s", nr_cuda_error(cu));
    SMOKE_INFO("bad PTX refused as expected:\n%s\n", nr_cuda_error(cu));

    static const unsigned char junk[128] = "this is no cubin";
    st = nr_cuda_module_load_cubin(cu, junk, sizeof junk, &bm);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID && !bm, "junk cubin gave status %d: %s", st, nr_cuda_error(cu));

    NrCudaFunction *f;
    st = nr_cuda_get_function(cu, m, "no_such_kernel", &f);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID && strstr(nr_cuda_error(cu), "no_such_kernel"), "missing kernel: %d %s",
                st, nr_cuda_error(cu));

    NrCuDevPtr p = 0;
    unsigned n = 0;
    void *params[4] = {&p, &p, &p, &n};
    NrCudaLaunchConfig lc = {{1, 1, 1}, {2048, 1, 1}, 0, NULL, 1};
    st = nr_cuda_launch(cu, vadd, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID && strstr(nr_cuda_error(cu), "2048"), "block of 2048: %d %s", st,
                nr_cuda_error(cu));
    lc.block[0] = 1;
    lc.grid[1] = 1u << 20;
    st = nr_cuda_launch(cu, vadd, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID && strstr(nr_cuda_error(cu), "grid dimension y"), "grid y 2^20: %d %s",
                st, nr_cuda_error(cu));
    lc.grid[1] = 0;
    st = nr_cuda_launch(cu, vadd, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_OK, "empty grid: %s", nr_cuda_error(cu));
    st = nr_cuda_synchronize(cu);
    SMOKE_CHECK(st == NR_CUDA_OK, "context unusable after refused launches: %s", nr_cuda_error(cu));
}

/* The current-context mode adopts the context current on the thread. */
static void smoke_current_context(NrCuda *cu, const NrCudaConfig *base, NrCudaFunction *vadd, SmokeVadd *v) {
    NrCudaConfig cfg = *base;
    cfg.mode = NR_CUDA_CURRENT_CONTEXT;
    char err[512];
    NrCuda *cur = NULL;
    NrCudaStatus st = nr_cuda_open(&cfg, &cur, err, sizeof err);
    SMOKE_CHECK(st == NR_CUDA_ERR_INVALID && !cur && strstr(err, "no CUDA context is current"),
                "current mode with no context: %d %s (calls must leave no context current)", st, err);
    nr_cuda_close(cur);
    st = nr_cuda_push_context(cu);
    SMOKE_CHECK(st == NR_CUDA_OK, "push: %s", nr_cuda_error(cu));
    st = nr_cuda_open(&cfg, &cur, err, sizeof err);
    SMOKE_CHECK(st == NR_CUDA_OK, "current mode: %s", err);
    if (st == NR_CUDA_OK) {
        SMOKE_CHECK(nr_cuda_context(cur) == nr_cuda_context(cu), "current mode adopted another context");
        smoke_vadd_run(cur, vadd, v, NULL, "vadd in the current-context mode");
        nr_cuda_close(cur);
    }
    st = nr_cuda_pop_context(cu);
    SMOKE_CHECK(st == NR_CUDA_OK, "pop: %s", nr_cuda_error(cu));
}

/* Last: a kernel that stores to address 0 must be reported as a fault. */
static void smoke_fault(NrCuda *cu, NrCudaModule *m) {
    NrCudaFunction *f;
    NrCudaStatus st = nr_cuda_get_function(cu, m, "fault", &f);
    SMOKE_CHECK(st == NR_CUDA_OK, "fault kernel: %s", nr_cuda_error(cu));
    if (st) return;
    NrCuDevPtr null_ptr = 0;
    void *params[1] = {&null_ptr};
    NrCudaLaunchConfig lc = {{1, 1, 1}, {32, 1, 1}, 0, NULL, 1};
    st = nr_cuda_launch(cu, f, &lc, params);
    SMOKE_CHECK(st == NR_CUDA_ERR_FAULT, "faulting kernel gave status %d: %s", st, nr_cuda_error(cu));
    SMOKE_CHECK(strstr(nr_cuda_error(cu), "kernel 'fault'") && strstr(nr_cuda_error(cu), "CUDA_ERROR_") &&
                    strstr(nr_cuda_error(cu), "unusable"),
                "unclear fault message: %s", nr_cuda_error(cu));
    SMOKE_INFO("fault reported as expected: %s\n", nr_cuda_error(cu));
    NrCuDevPtr p;
    st = nr_cuda_alloc(cu, 64, &p);
    SMOKE_CHECK(st != NR_CUDA_OK, "allocation after a fault succeeded");
    if (st != NR_CUDA_OK) SMOKE_INFO("later call refused as expected: %s\n", nr_cuda_error(cu));
    else nr_cuda_free(cu, p);
}

/* Run everything with the driver and device cfg selects; returns the number
 * of failed checks. */
static int smoke_run(const char *ptx_path, const NrCudaConfig *cfg) {
    smoke_failures = 0;
    smoke_rng = (uint64_t)time(NULL) * 2654435761u + 1;
    SMOKE_INFO("rt_smoke: seed %" PRIu64 "\n", smoke_rng);
    size_t ptx_len;
    char *ptx = smoke_read_file(ptx_path, &ptx_len);
    if (!ptx) {
        printf("FAIL cannot read %s (run from the repository root, or pass the path of vadd.ptx)\n", ptx_path);
        return 1;
    }
    NrCuda *cu;
    char err[1024];
    if (nr_cuda_open(cfg, &cu, err, sizeof err) != NR_CUDA_OK) {
        printf("FAIL nr_cuda_open: %s\n", err);
        free(ptx);
        return 1;
    }
    smoke_print_device(nr_cuda_device_info(cu));
    NrCudaJitOptions jo;
    nr_cuda_jit_options_default(&jo);
    jo.verbose = 1;
    NrCudaModule *m = NULL;
    NrCudaFunction *vadd = NULL;
    NrCudaStatus st = nr_cuda_module_load_ptx(cu, ptx, ptx_len, &jo, &m);
    SMOKE_CHECK(st == NR_CUDA_OK, "load %s: %s", ptx_path, nr_cuda_error(cu));
    if (st == NR_CUDA_OK) {
        SMOKE_INFO("JIT log:\n%s\n", nr_cuda_module_log(m));
        st = nr_cuda_get_function(cu, m, "vadd", &vadd);
        SMOKE_CHECK(st == NR_CUDA_OK, "vadd: %s", nr_cuda_error(cu));
    }
    SmokeVadd v;
    memset(&v, 0, sizeof v);
    if (vadd && smoke_vadd_setup(cu, &v, (1u << 20) + 77) == 0) {
        smoke_print_function(vadd);
        const NrCudaFuncInfo *fi = nr_cuda_function_info(vadd);
        SMOKE_CHECK(fi->num_regs > 0 && fi->max_threads_per_block >= SMOKE_BLOCK && fi->binary_version >= 80 &&
                        fi->ptx_version >= 70,
                    "implausible metadata");
        smoke_vadd_run(cu, vadd, &v, NULL, "vadd");
        NrCuStream s;
        st = nr_cuda_stream_create(cu, 1, &s);
        SMOKE_CHECK(st == NR_CUDA_OK, "stream: %s", nr_cuda_error(cu));
        if (st == NR_CUDA_OK) {
            smoke_vadd_run(cu, vadd, &v, s, "vadd on a stream");
            SMOKE_CHECK(nr_cuda_stream_synchronize(cu, s) == NR_CUDA_OK, "%s", nr_cuda_error(cu));
            SMOKE_CHECK(nr_cuda_stream_destroy(cu, s) == NR_CUDA_OK, "%s", nr_cuda_error(cu));
        }
        smoke_time_vadd(cu, vadd, &v);
        smoke_dynamic_shared(cu, m);
        smoke_cache(cu, m, ptx, ptx_len, &v);
        smoke_errors(cu, m, vadd);
        smoke_current_context(cu, cfg, vadd, &v);
        smoke_fault(cu, m);
    }
    smoke_vadd_free(cu, &v);
    nr_cuda_module_unload(cu, m);
    nr_cuda_close(cu);
    free(ptx);
    if (smoke_failures) printf("rt_smoke: %d checks FAILED\n", smoke_failures);
    else SMOKE_INFO("rt_smoke: OK\n");
    return smoke_failures;
}

#ifndef RT_SMOKE_NO_MAIN
int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *path = argc > 1 ? argv[1] : "tests/gpu/vadd.ptx";
    NrCudaConfig cfg;
    nr_cuda_config_default(&cfg);
    cfg.device = argc > 2 ? atoi(argv[2]) : 0;
    return smoke_run(path, &cfg) ? 1 : 0;
}
#endif
