/* test_cuda_rt.c - the CUDA runtime without a GPU.
 *
 *  1. With no driver (CI), nr_cuda_open fails cleanly with the "no NVIDIA
 *     driver found (libcuda.so.1 could not be loaded: ...)" message.
 *  2. Against a test double of the driver (entry points handed over through
 *     NrCudaConfig.resolve; device memory is host memory and kernels are
 *     simulated by name), every path of the runtime: open failures, context
 *     handling, the JIT and its logs, metadata, shared-memory opt-in, launch
 *     checks, faults, memory, streams and events, and the whole GPU smoke
 *     test (tests/gpu/rt_smoke.c).
 *  3. When a real driver and device are present, the smoke test on the GPU. */
#define RT_SMOKE_NO_MAIN
#include "../gpu/rt_smoke.c"

#include <dlfcn.h>

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

static const char *PTX_PATH = "tests/gpu/vadd.ptx";

/* ======================= the driver test double ======================= */

enum { FAKE_OPTIN = 232448, FAKE_DEFAULT_SHARED = 49152, FAKE_MAX_DEPTH = 16 };

typedef struct FakeFunc {
    struct FakeFunc *next;
    char name[64];
    int static_shared;
    int max_dyn;
    int max_threads;
} FakeFunc;

typedef struct FakeModule {
    char *text;  /* the PTX embedded in the fake cubin */
    FakeFunc *funcs;
} FakeModule;

typedef struct FakeLink {
    char *info, *elog;
    size_t info_size, elog_size;
    int verbose;
    char *ptx;
    unsigned char *cubin;
    size_t cubin_size;
} FakeLink;

static struct {
    NrCuResult init_result;
    int device_count;
    const char *missing[4];     /* symbols the resolver pretends are absent */
    NrCuContext stack[FAKE_MAX_DEPTH];
    int depth;                  /* the calling thread's context stack */
    int primary_refs;
    NrCuResult sticky;          /* a fault: returned by every later call */
    int live_allocs, live_streams, live_events, live_modules, live_links;
    int last_opt_level, last_max_regs, set_attr_calls;
    int launches, pushes;
    int encodes;                /* cuTensorMapEncodeTiled calls */
    NrCuResult encode_result;   /* what the next encodes return */
    NrTensorMapArgs encoded;    /* the arguments of the last one */
    NrCuContext encode_ctx;     /* the context current during it */
} fake;

static int fake_primary_obj, fake_user_obj;
#define FAKE_PRIMARY ((NrCuContext)(void *)&fake_primary_obj)
#define FAKE_USER ((NrCuContext)(void *)&fake_user_obj)

static void fake_reset(void) {
    memset(&fake, 0, sizeof fake);
    fake.device_count = 2;
}

static NrCuContext fake_current(void) { return fake.depth ? fake.stack[fake.depth - 1] : NULL; }

static NrCuResult fake_Init(unsigned flags) { return flags ? NR_CU_ERROR_INVALID_VALUE : fake.init_result; }
static NrCuResult fake_DriverGetVersion(int *v) {
    *v = 13000;
    return NR_CU_SUCCESS;
}

static const struct {
    NrCuResult r;
    const char *name, *str;
} fake_errors[] = {
    {NR_CU_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {NR_CU_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {NR_CU_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {NR_CU_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {NR_CU_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {NR_CU_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {NR_CU_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NR_CU_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {NR_CU_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {NR_CU_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static NrCuResult fake_GetErrorName(NrCuResult r, const char **s) {
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (fake_errors[i].r == r) return *s = fake_errors[i].name, NR_CU_SUCCESS;
    *s = NULL;
    return NR_CU_ERROR_INVALID_VALUE;
}

static NrCuResult fake_GetErrorString(NrCuResult r, const char **s) {
    for (size_t i = 0; i < sizeof fake_errors / sizeof fake_errors[0]; i++)
        if (fake_errors[i].r == r) return *s = fake_errors[i].str, NR_CU_SUCCESS;
    *s = NULL;
    return NR_CU_ERROR_INVALID_VALUE;
}

static NrCuResult fake_DeviceGetCount(int *n) {
    *n = fake.device_count;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DeviceGet(NrCuDevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= fake.device_count) return NR_CU_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DeviceGetName(char *name, int len, NrCuDevice d) {
    snprintf(name, (size_t)len, "Fake GPU %d", d);
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DeviceGetAttribute(int *v, int attr, NrCuDevice d) {
    (void)d;
    switch (attr) {
    case NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case NR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case NR_CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = FAKE_DEFAULT_SHARED; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = FAKE_OPTIN; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 233472; break;
    case NR_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case NR_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
    case NR_CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return NR_CU_ERROR_INVALID_VALUE;  /* optional: reads as 0 */
    case NR_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case NR_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    default: return NR_CU_ERROR_INVALID_VALUE;
    }
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DeviceTotalMem(size_t *bytes, NrCuDevice d) {
    (void)d;
    *bytes = (size_t)80 << 30;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DevicePrimaryCtxRetain(NrCuContext *c, NrCuDevice d) {
    (void)d;
    fake.primary_refs++;
    *c = FAKE_PRIMARY;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_DevicePrimaryCtxRelease(NrCuDevice d) {
    (void)d;
    if (fake.primary_refs <= 0) return NR_CU_ERROR_INVALID_CONTEXT;
    fake.primary_refs--;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_CtxGetCurrent(NrCuContext *c) {
    *c = fake_current();
    return NR_CU_SUCCESS;
}

static NrCuResult fake_CtxPushCurrent(NrCuContext c) {
    if (!c || fake.depth == FAKE_MAX_DEPTH) return NR_CU_ERROR_INVALID_CONTEXT;
    fake.stack[fake.depth++] = c;
    fake.pushes++;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_CtxPopCurrent(NrCuContext *c) {
    if (!fake.depth) return NR_CU_ERROR_INVALID_CONTEXT;
    *c = fake.stack[--fake.depth];
    return NR_CU_SUCCESS;
}

static NrCuResult fake_CtxGetDevice(NrCuDevice *d) {
    if (!fake_current()) return NR_CU_ERROR_INVALID_CONTEXT;
    *d = 0;
    return NR_CU_SUCCESS;
}

/* Calls that need a context fail without one, and report a fault once one happened. */
static NrCuResult fake_need_ctx(void) {
    if (!fake_current()) return NR_CU_ERROR_INVALID_CONTEXT;
    return fake.sticky;
}

static NrCuResult fake_CtxSynchronize(void) { return fake_need_ctx(); }

static NrCuResult fake_LinkCreate(unsigned n, int *opts, void **vals, NrCuLinkState *st) {
    FakeLink *l = calloc(1, sizeof *l);
    fake.last_opt_level = -1;
    fake.last_max_regs = 0;
    for (unsigned i = 0; i < n; i++) {
        uintptr_t v = (uintptr_t)vals[i];
        switch (opts[i]) {
        case NR_CU_JIT_INFO_LOG_BUFFER: l->info = vals[i]; break;
        case NR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: l->info_size = v; break;
        case NR_CU_JIT_ERROR_LOG_BUFFER: l->elog = vals[i]; break;
        case NR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: l->elog_size = v; break;
        case NR_CU_JIT_LOG_VERBOSE: l->verbose = (int)v; break;
        case NR_CU_JIT_OPTIMIZATION_LEVEL: fake.last_opt_level = (int)v; break;
        case NR_CU_JIT_MAX_REGISTERS: fake.last_max_regs = (int)v; break;
        case NR_CU_JIT_GENERATE_LINE_INFO: break;
        default: free(l); return NR_CU_ERROR_INVALID_VALUE;
        }
    }
    fake.live_links++;
    *st = (NrCuLinkState)(void *)l;
    return fake_need_ctx();
}

static NrCuResult fake_LinkAddData(NrCuLinkState st, int type, void *data, size_t size, const char *name,
                                   unsigned n, int *opts, void **vals) {
    (void)name, (void)n, (void)opts, (void)vals;
    FakeLink *l = (FakeLink *)(void *)st;
    const char *text = data;
    if (type != NR_CU_JIT_INPUT_PTX || size == 0 || text[size - 1] != 0) return NR_CU_ERROR_INVALID_VALUE;
    /* A register used without any declaration is what the real JIT rejects in rt_smoke. */
    const char *bad = strstr(text, "BAD") ? "BAD" : (!strstr(text, ".reg") && strstr(text, "%r1")) ? "%r1" : NULL;
    if (bad) {
        if (l->elog)
            snprintf(l->elog, l->elog_size, "ptxas application ptx input, line 6; error   : Unknown symbol '%s'\n"
                     "ptxas fatal   : Ptx assembly aborted due to errors\n", bad);
        return NR_CU_ERROR_INVALID_PTX;
    }
    free(l->ptx);
    l->ptx = strdup(text);
    return NR_CU_SUCCESS;
}

/* A fake cubin: a minimal ELF64 header followed by the PTX text and a NUL. */
static NrCuResult fake_LinkComplete(NrCuLinkState st, void **cubin, size_t *size) {
    FakeLink *l = (FakeLink *)(void *)st;
    if (!l->ptx) return NR_CU_ERROR_INVALID_VALUE;
    size_t n = strlen(l->ptx);
    l->cubin_size = 64 + n + 1;
    l->cubin = calloc(1, l->cubin_size);
    memcpy(l->cubin, "\177ELF\2\1\1", 7);
    memcpy(l->cubin + 64, l->ptx, n + 1);
    if (l->verbose && l->info) snprintf(l->info, l->info_size, "ptxas info    : Used 12 registers\n\n");
    *cubin = l->cubin;
    *size = l->cubin_size;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_LinkDestroy(NrCuLinkState st) {
    FakeLink *l = (FakeLink *)(void *)st;
    free(l->ptx);
    free(l->cubin);
    free(l);
    fake.live_links--;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_ModuleLoadDataEx(NrCuModule *m, const void *image, unsigned n, int *opts, void **vals) {
    NrCuResult r = fake_need_ctx();
    if (r) return r;
    const unsigned char *p = image;
    if (memcmp(p, "\177ELF", 4) != 0) return NR_CU_ERROR_INVALID_IMAGE;
    if (!strstr((const char *)p + 64, ".entry")) {
        for (unsigned i = 0; i < n; i++)
            if (opts[i] == NR_CU_JIT_ERROR_LOG_BUFFER) snprintf(vals[i], 64, "no kernels in image\n");
        return NR_CU_ERROR_INVALID_IMAGE;
    }
    FakeModule *fm = calloc(1, sizeof *fm);
    fm->text = strdup((const char *)p + 64);
    fake.live_modules++;
    *m = (NrCuModule)(void *)fm;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_ModuleUnload(NrCuModule m) {
    FakeModule *fm = (FakeModule *)(void *)m;
    for (FakeFunc *f = fm->funcs, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    free(fm->text);
    free(fm);
    fake.live_modules--;
    return fake.sticky;
}

static NrCuResult fake_ModuleGetFunction(NrCuFunction *fn, NrCuModule m, const char *name) {
    NrCuResult r = fake_need_ctx();
    if (r) return r;
    FakeModule *fm = (FakeModule *)(void *)m;
    char pattern[80];
    snprintf(pattern, sizeof pattern, ".entry %s(", name);
    if (!strstr(fm->text, pattern)) return NR_CU_ERROR_NOT_FOUND;
    FakeFunc *f = calloc(1, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->static_shared = strstr(name, "static") ? 1024 : 0;
    f->max_dyn = FAKE_DEFAULT_SHARED - f->static_shared;
    f->max_threads = strcmp(name, "heavy") == 0 ? 128 : 1024;
    f->next = fm->funcs;
    fm->funcs = f;
    *fn = (NrCuFunction)(void *)f;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_FuncGetAttribute(int *v, int attr, NrCuFunction fn) {
    FakeFunc *f = (FakeFunc *)(void *)fn;
    switch (attr) {
    case NR_CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 12; break;
    case NR_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case NR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = f->static_shared; break;
    case NR_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case NR_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = f->max_threads; break;
    case NR_CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 70; break;
    case NR_CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
    case NR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn; break;
    default: return NR_CU_ERROR_INVALID_VALUE;
    }
    return fake_need_ctx();
}

static NrCuResult fake_FuncSetAttribute(NrCuFunction fn, int attr, int v) {
    FakeFunc *f = (FakeFunc *)(void *)fn;
    fake.set_attr_calls++;
    if (attr != NR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v < 0 || v + f->static_shared > FAKE_OPTIN)
        return NR_CU_ERROR_INVALID_VALUE;
    f->max_dyn = v;
    return fake_need_ctx();
}

static void *fake_host(NrCuDevPtr p) { return (void *)(uintptr_t)p; }

/* Simulate the kernels of tests/gpu/vadd.ptx. */
static NrCuResult fake_LaunchKernel(NrCuFunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, NrCuStream s, void **params, void **extra) {
    (void)s;
    FakeFunc *f = (FakeFunc *)(void *)fn;
    NrCuResult r = fake_need_ctx();
    if (r) return r;
    if (extra || !gx || !gy || !gz || (unsigned long long)bx * by * bz > (unsigned)f->max_threads ||
        shared > (unsigned)f->max_dyn)
        return NR_CU_ERROR_INVALID_VALUE;
    fake.launches++;
    if (strcmp(f->name, "heavy") == 0) return NR_CU_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (strcmp(f->name, "fault") == 0) {
        fake.sticky = NR_CU_ERROR_ILLEGAL_ADDRESS;  /* surfaces at the next synchronisation */
    } else if (strcmp(f->name, "vadd") == 0) {
        float *x = fake_host(*(NrCuDevPtr *)params[0]), *y = fake_host(*(NrCuDevPtr *)params[1]);
        float *out = fake_host(*(NrCuDevPtr *)params[2]);
        unsigned n = *(unsigned *)params[3];
        for (unsigned long long i = 0; i < (unsigned long long)gx * bx; i++)
            if (i < n) out[i] = x[i] + y[i];
    } else if (strcmp(f->name, "smem_probe") == 0) {
        unsigned *out = fake_host(*(NrCuDevPtr *)params[0]);
        unsigned nbytes = *(unsigned *)params[1];
        if (nbytes > shared || nbytes < 4 * bx) fake.sticky = NR_CU_ERROR_ILLEGAL_ADDRESS;
        else
            for (unsigned t = 0; t < bx; t++) out[t] = bx - 1 - t;
    }
    return NR_CU_SUCCESS;
}

static NrCuResult fake_MemAlloc(NrCuDevPtr *p, size_t bytes) {
    NrCuResult r = fake_need_ctx();
    if (r) return r;
    if (bytes > ((size_t)1 << 34)) return NR_CU_ERROR_OUT_OF_MEMORY;
    void *h = malloc(bytes);
    if (!h) return NR_CU_ERROR_OUT_OF_MEMORY;
    fake.live_allocs++;
    *p = (NrCuDevPtr)(uintptr_t)h;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_MemFree(NrCuDevPtr p) {
    if (!fake_current()) return NR_CU_ERROR_INVALID_CONTEXT;
    free(fake_host(p));  /* freed even after a fault, so the test leaks nothing */
    fake.live_allocs--;
    return fake.sticky;
}

static NrCuResult fake_MemcpyHtoD(NrCuDevPtr dst, const void *src, size_t n) {
    NrCuResult r = fake_need_ctx();
    if (!r) memcpy(fake_host(dst), src, n);
    return r;
}

static NrCuResult fake_MemcpyDtoH(void *dst, NrCuDevPtr src, size_t n) {
    NrCuResult r = fake_need_ctx();
    if (!r) memcpy(dst, fake_host(src), n);
    return r;
}

static NrCuResult fake_MemsetD8(NrCuDevPtr dst, unsigned char v, size_t n) {
    NrCuResult r = fake_need_ctx();
    if (!r) memset(fake_host(dst), v, n);
    return r;
}

static NrCuResult fake_MemsetD32(NrCuDevPtr dst, unsigned v, size_t n) {
    NrCuResult r = fake_need_ctx();
    uint32_t *p = fake_host(dst);
    for (size_t i = 0; !r && i < n; i++) p[i] = v;
    return r;
}

static NrCuResult fake_StreamCreate(NrCuStream *s, unsigned flags) {
    NrCuResult r = fake_need_ctx();
    if (r || flags > 1) return r ? r : NR_CU_ERROR_INVALID_VALUE;
    *s = malloc(16);
    fake.live_streams++;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_StreamDestroy(NrCuStream s) {
    free(s);
    fake.live_streams--;
    return fake_need_ctx();
}

static NrCuResult fake_StreamSynchronize(NrCuStream s) {
    (void)s;
    return fake_need_ctx();
}

static NrCuResult fake_EventCreate(NrCuEvent *e, unsigned flags) {
    NrCuResult r = fake_need_ctx();
    if (r || flags != NR_CU_EVENT_DEFAULT) return r ? r : NR_CU_ERROR_INVALID_VALUE;
    *e = malloc(16);
    fake.live_events++;
    return NR_CU_SUCCESS;
}

static NrCuResult fake_EventDestroy(NrCuEvent e) {
    free(e);
    fake.live_events--;
    return fake_need_ctx();
}

static NrCuResult fake_EventRecord(NrCuEvent e, NrCuStream s) {
    (void)e, (void)s;
    return fake_need_ctx();
}

static NrCuResult fake_EventSynchronize(NrCuEvent e) {
    (void)e;
    return fake_need_ctx();
}

static NrCuResult fake_EventElapsedTime(float *ms, NrCuEvent a, NrCuEvent b) {
    if (!a || !b) return NR_CU_ERROR_INVALID_VALUE;
    *ms = 1.25f;
    return fake_need_ctx();
}

static NrCuResult fake_TensorMapEncodeTiled(NrCuTensorMap *map, int dtype, unsigned rank, void *base,
                                            const uint64_t *dims, const uint64_t *strides, const unsigned *box,
                                            const unsigned *elem_strides, int interleave, int swizzle,
                                            int l2_promotion, int oob_fill) {
    fake.encodes++;
    fake.encode_ctx = fake_current();
    if ((uintptr_t)map % 64) return NR_CU_ERROR_INVALID_VALUE; /* as the driver requires */
    if (fake.encode_result) return fake.encode_result;
    NrTensorMapArgs *t = &fake.encoded;
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    t->base = (uint64_t)(uintptr_t)base;
    for (unsigned i = 0; i < rank && i < 5; i++) {
        t->dims[i] = dims[i];
        t->box[i] = box[i];
        t->elem_strides[i] = elem_strides[i];
        if (i + 1 < rank) t->strides[i] = strides[i];
    }
    t->interleave = interleave;
    t->swizzle = swizzle;
    t->l2_promotion = l2_promotion;
    t->oob_fill = oob_fill;
    memset(map, 0xab, sizeof *map);
    return NR_CU_SUCCESS;
}

static int fake_is_missing(const char *sym) {
    for (int i = 0; i < 4; i++)
        if (fake.missing[i] && strcmp(fake.missing[i], sym) == 0) return 1;
    return 0;
}

static int sym_is(const char *sym, const char *name) { return name && strcmp(sym, name) == 0; }

/* The resolver: each fake is assigned to a pointer of the runtime's declared
 * type first, so a signature that drifts from cuda_rt.h fails to compile. */
static void *fake_resolve(void *user, const char *sym) {
    (void)user;
    if (fake_is_missing(sym)) return NULL;
#define FAKE_ENTRY(field, name, alt, params)                                               \
    if (sym_is(sym, name) || sym_is(sym, alt)) {                                           \
        NrCuResult(*fp) params = fake_##field;                                             \
        void *p;                                                                           \
        memcpy(&p, &fp, sizeof p);                                                         \
        return p;                                                                          \
    }
    NR_CU_ENTRY_POINTS(FAKE_ENTRY)
#undef FAKE_ENTRY
    if (sym_is(sym, "cuTensorMapEncodeTiled")) {
        NrCuTensorMapEncodeTiled fp = fake_TensorMapEncodeTiled;
        void *p;
        memcpy(&p, &fp, sizeof p);
        return p;
    }
    return NULL;
}

static NrCudaConfig fake_config(void) {
    NrCudaConfig cfg;
    nr_cuda_config_default(&cfg);
    cfg.resolve = fake_resolve;
    return cfg;
}

static NrCuda *fake_open(void) {
    NrCudaConfig cfg = fake_config();
    NrCuda *cu = NULL;
    char err[512];
    NrCudaStatus st = nr_cuda_open(&cfg, &cu, err, sizeof err);
    CHECK(st == NR_CUDA_OK && cu, "fake open: %s", err);
    return cu;
}

/* ============================== the tests ============================== */

static void test_no_driver(void) {
    NrCudaConfig cfg;
    nr_cuda_config_default(&cfg);
    cfg.driver_path = "/nonexistent/libcuda.so.1";
    NrCuda *cu = (NrCuda *)1;
    char err[512];
    NrCudaStatus st = nr_cuda_open(&cfg, &cu, err, sizeof err);
    CHECK(st == NR_CUDA_NO_DRIVER && cu == NULL, "status %d", st);
    const char *want = "no NVIDIA driver found (/nonexistent/libcuda.so.1 could not be loaded: ";
    CHECK(strncmp(err, want, strlen(want)) == 0 && err[strlen(err) - 1] == ')', "message: %s", err);
    /* A tiny buffer truncates, never overflows. */
    char tiny[8];
    st = nr_cuda_open(&cfg, &cu, tiny, sizeof tiny);
    CHECK(st == NR_CUDA_NO_DRIVER && strlen(tiny) == 7, "truncated message '%s'", tiny);
    st = nr_cuda_open(&cfg, &cu, NULL, 0);
    CHECK(st == NR_CUDA_NO_DRIVER, "no buffer: status %d", st);
    nr_cuda_close(NULL);

    /* The toolkit's stub library is not a driver. */
    static const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) == 0) {
        cfg.driver_path = stub;
        st = nr_cuda_open(&cfg, &cu, err, sizeof err);
        CHECK(st == NR_CUDA_NO_DRIVER && (strstr(err, "no NVIDIA driver found (/usr/local/cuda/lib64/stubs/libcuda.so is "
                                                  "the CUDA toolkit's stub library") ||
                                           strstr(err, "lacks the entry point")),
              "stub: %d %s", st, err);
    }
}

static void test_open_failures(void) {
    NrCudaConfig cfg = fake_config();
    NrCuda *cu;
    char err[512];

    fake_reset();
    fake.missing[0] = "cuLinkCreate_v2";
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_NO_DRIVER && !cu, "missing entry point opened");
    CHECK(strstr(err, "lacks the entry point cuLinkCreate_v2"), "message: %s", err);

    fake_reset();
    fake.missing[0] = "cuEventElapsedTime_v2";  /* older drivers: the fallback name serves */
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_OK, "fallback symbol: %s", err);
    nr_cuda_close(cu);

    fake_reset();
    fake.init_result = NR_CU_ERROR_NO_DEVICE;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_NO_DEVICE, "cuInit NO_DEVICE");
    CHECK(strcmp(err, "no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected)") == 0,
          "message: %s", err);

    fake_reset();
    fake.init_result = NR_CU_ERROR_STUB_LIBRARY;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_NO_DRIVER, "stub");
    CHECK(strstr(err, "no NVIDIA driver found") && strstr(err, "stub library") &&
              strstr(err, "CUDA_ERROR_STUB_LIBRARY"),
          "message: %s", err);

    fake_reset();
    fake.init_result = NR_CU_ERROR_UNKNOWN;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_ERR_DRIVER, "cuInit unknown");
    CHECK(strcmp(err, "cuInit failed: CUDA_ERROR_UNKNOWN: unknown error") == 0, "message: %s", err);

    fake_reset();
    fake.init_result = 12345;  /* a code the driver has no name for */
    nr_cuda_open(&cfg, &cu, err, sizeof err);
    CHECK(strcmp(err, "cuInit failed: CUDA_ERROR_12345: unknown error") == 0, "message: %s", err);

    fake_reset();
    fake.device_count = 0;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_NO_DEVICE && strcmp(err, "no CUDA device") == 0,
          "no devices: %s", err);

    fake_reset();
    cfg.device = 5;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_NO_DEVICE, "device 5");
    CHECK(strcmp(err, "CUDA device 5 does not exist (2 devices found)") == 0, "message: %s", err);
    cfg.device = 1;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_OK, "device 1: %s", err);
    if (cu) {
        CHECK(nr_cuda_device_info(cu)->ordinal == 1 && strcmp(nr_cuda_device_info(cu)->name, "Fake GPU 1") == 0,
              "device 1 info");
        nr_cuda_close(cu);
    }
    cfg.device = 0;

    fake_reset();
    cfg.mode = NR_CUDA_CURRENT_CONTEXT;
    CHECK(nr_cuda_open(&cfg, &cu, err, sizeof err) == NR_CUDA_ERR_INVALID, "current mode without a context");
    CHECK(strstr(err, "no CUDA context is current on the calling thread"), "message: %s", err);
    CHECK(fake.primary_refs == 0 && fake.depth == 0, "failed opens leaked state");
}

static void test_contexts(void) {
    fake_reset();
    NrCuda *cu = fake_open();
    if (!cu) return;
    CHECK(fake.primary_refs == 1, "primary context not retained");
    CHECK(nr_cuda_context(cu) == FAKE_PRIMARY, "context");
    CHECK(fake.depth == 0, "open left a context current");
    const NrCudaDeviceInfo *d = nr_cuda_device_info(cu);
    CHECK(d->cc_major == 9 && d->cc_minor == 0 && d->sm_count == 132 && d->max_shared_per_block_optin == FAKE_OPTIN &&
              d->max_grid_dim[1] == 65535 && d->max_block_dim[2] == 64 && d->l2_bytes == 52428800 &&
              d->driver_version == 13000 && d->total_mem_bytes == (size_t)80 << 30,
          "device info");
    CHECK(d->clock_khz == 0, "an optional attribute the driver refuses reads as 0, got %d", d->clock_khz);

    /* Calls push the handle's context only around themselves. */
    NrCuDevPtr p;
    CHECK(nr_cuda_alloc(cu, 100, &p) == NR_CUDA_OK && p, "alloc: %s", nr_cuda_error(cu));
    CHECK(fake.depth == 0, "alloc left a context current");
    fake_CtxPushCurrent(FAKE_USER);
    CHECK(nr_cuda_memset8(cu, p, 7, 100) == NR_CUDA_OK, "memset under a user context");
    CHECK(fake.depth == 1 && fake_current() == FAKE_USER, "the caller's context was not restored");
    fake_CtxPushCurrent(FAKE_PRIMARY);
    int before = fake.depth, pushes = fake.pushes;
    CHECK(nr_cuda_free(cu, p) == NR_CUDA_OK, "free");
    CHECK(fake.depth == before && fake.pushes == pushes, "pushed although the context was already current");
    NrCuContext c;
    fake_CtxPopCurrent(&c);
    fake_CtxPopCurrent(&c);

    /* Current-context mode adopts the caller's context and never releases it. */
    NrCudaConfig cfg = fake_config();
    cfg.mode = NR_CUDA_CURRENT_CONTEXT;
    fake_CtxPushCurrent(FAKE_USER);
    NrCuda *cur;
    char err[256];
    CHECK(nr_cuda_open(&cfg, &cur, err, sizeof err) == NR_CUDA_OK, "current mode: %s", err);
    if (cur) {
        CHECK(nr_cuda_context(cur) == FAKE_USER, "adopted the wrong context");
        CHECK(nr_cuda_alloc(cur, 8, &p) == NR_CUDA_OK && nr_cuda_free(cur, p) == NR_CUDA_OK, "alloc in current mode");
        CHECK(fake.depth == 1, "current mode pushed");
        nr_cuda_close(cur);
        CHECK(fake.primary_refs == 1, "current mode touched the primary context");
    }
    fake_CtxPopCurrent(&c);

    /* push/pop for callers that use the driver themselves. */
    CHECK(nr_cuda_push_context(cu) == NR_CUDA_OK && fake_current() == FAKE_PRIMARY, "push");
    CHECK(nr_cuda_pop_context(cu) == NR_CUDA_OK && fake.depth == 0, "pop");
    CHECK(nr_cuda_pop_context(cu) == NR_CUDA_ERR_DRIVER && strstr(nr_cuda_error(cu), "cuCtxPopCurrent failed"),
          "pop of an empty stack: %s", nr_cuda_error(cu));
    CHECK(nr_cuda_last_result(cu) == NR_CU_ERROR_INVALID_CONTEXT, "last result %d", nr_cuda_last_result(cu));
    CHECK(nr_cuda_driver(cu)->Init == fake_Init, "driver table");

    /* Zero-byte allocations and frees are no-ops. */
    CHECK(nr_cuda_alloc(cu, 0, &p) == NR_CUDA_OK && p == 0 && nr_cuda_free(cu, 0) == NR_CUDA_OK, "zero bytes");
    CHECK(nr_cuda_memset32(cu, 2, 0, 4) == NR_CUDA_ERR_INVALID, "unaligned memset32 accepted");
    nr_cuda_close(cu);
    CHECK(fake.primary_refs == 0, "primary context not released");
    CHECK(fake.live_allocs == 0, "allocations leaked");
}

static const char GOOD_PTX[] = ".version 7.0\n.target sm_80\n.reg .b32 %r<2>;\n"
                               ".visible .entry vadd(\n)\n{ ret; }\n"
                               ".visible .entry with_static(\n)\n{ ret; }\n"
                               ".visible .entry heavy(\n)\n{ ret; }\n";

static void test_modules(void) {
    fake_reset();
    NrCuda *cu = fake_open();
    if (!cu) return;
    NrCudaModule *m = NULL;
    NrCudaJitOptions o;
    nr_cuda_jit_options_default(&o);
    o.verbose = 1;
    o.opt_level = 3;
    o.max_registers = 64;
    /* No NUL terminator in the input: the runtime adds one. */
    NrCudaStatus st = nr_cuda_module_load_ptx(cu, GOOD_PTX, sizeof GOOD_PTX - 1, &o, &m);
    CHECK(st == NR_CUDA_OK && m, "load: %s", nr_cuda_error(cu));
    if (!m) return;
    CHECK(fake.last_opt_level == 3 && fake.last_max_regs == 64, "JIT options not passed: %d %d", fake.last_opt_level,
          fake.last_max_regs);
    CHECK(strcmp(nr_cuda_module_log(m), "ptxas info    : Used 12 registers") == 0, "info log '%s'",
          nr_cuda_module_log(m));
    CHECK(fake.live_links == 0, "link state leaked");
    CHECK(fake.depth == 0, "module load left a context current");
    size_t size;
    const unsigned char *cubin = nr_cuda_module_cubin(m, &size);
    CHECK(size == 64 + sizeof GOOD_PTX && memcmp(cubin, "\177ELF", 4) == 0, "cubin not kept");

    nr_cuda_jit_options_default(&o);
    NrCudaModule *m2 = NULL;
    CHECK(nr_cuda_module_load_ptx(cu, GOOD_PTX, sizeof GOOD_PTX - 1, &o, &m2) == NR_CUDA_OK, "default options");
    CHECK(fake.last_opt_level == -1 && fake.last_max_regs == 0, "defaults passed options");
    CHECK(nr_cuda_module_log(m2)[0] == 0, "log without verbose: '%s'", nr_cuda_module_log(m2));
    nr_cuda_module_unload(cu, m2);

    /* The same cubin loads directly (as from the disk cache). */
    CHECK(nr_cuda_module_load_cubin(cu, cubin, size, &m2) == NR_CUDA_OK, "cubin: %s", nr_cuda_error(cu));
    NrCudaFunction *f2 = NULL;
    CHECK(nr_cuda_get_function(cu, m2, "heavy", &f2) == NR_CUDA_OK, "function of a cubin module");
    nr_cuda_module_unload(cu, m2);

    /* Functions and their metadata. */
    NrCudaFunction *f, *again;
    CHECK(nr_cuda_get_function(cu, m, "vadd", &f) == NR_CUDA_OK, "vadd: %s", nr_cuda_error(cu));
    CHECK(nr_cuda_get_function(cu, m, "vadd", &again) == NR_CUDA_OK && again == f, "lookups not cached");
    const NrCudaFuncInfo *fi = nr_cuda_function_info(f);
    CHECK(fi->num_regs == 12 && fi->ptx_version == 70 && fi->binary_version == 90 && fi->max_threads_per_block == 1024 &&
              fi->max_dynamic_shared_bytes == FAKE_DEFAULT_SHARED,
          "metadata");
    CHECK(strcmp(nr_cuda_function_name(f), "vadd") == 0 && nr_cuda_function_handle(f), "name/handle");
    st = nr_cuda_get_function(cu, m, "missing_kernel", &f);
    CHECK(st == NR_CUDA_ERR_INVALID && !f && strcmp(nr_cuda_error(cu), "no kernel named 'missing_kernel' in the module") == 0,
          "missing kernel: %s", nr_cuda_error(cu));
    CHECK(nr_cuda_get_function(cu, m, "", &f) == NR_CUDA_ERR_INVALID, "empty name");
    nr_cuda_module_unload(cu, m);
    nr_cuda_module_unload(cu, NULL);
    CHECK(fake.live_modules == 0, "modules leaked: %d", fake.live_modules);

    /* JIT errors carry the driver's name, string and the error log. */
    static const char bad[] = ".version 7.0\n.visible .entry k()\n{ BAD; }\n";
    st = nr_cuda_module_load_ptx(cu, bad, sizeof bad - 1, NULL, &m);
    CHECK(st == NR_CUDA_ERR_JIT && !m, "bad PTX status %d", st);
    CHECK(strcmp(nr_cuda_error(cu),
                 "cuLinkAddData failed: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed\n"
                 "ptxas application ptx input, line 6; error   : Unknown symbol 'BAD'\n"
                 "ptxas fatal   : Ptx assembly aborted due to errors") == 0,
          "message:\n%s", nr_cuda_error(cu));
    CHECK(fake.live_links == 0 && fake.depth == 0, "failed JIT leaked state");

    /* Option and input checks. */
    o.opt_level = 7;
    CHECK(nr_cuda_module_load_ptx(cu, GOOD_PTX, sizeof GOOD_PTX - 1, &o, &m) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "0..4, got 7"),
          "opt level 7: %s", nr_cuda_error(cu));
    o.opt_level = -1;
    o.max_registers = 300;
    CHECK(nr_cuda_module_load_ptx(cu, GOOD_PTX, sizeof GOOD_PTX - 1, &o, &m) == NR_CUDA_ERR_INVALID,
          "max registers 300");
    CHECK(nr_cuda_module_load_ptx(cu, "", 0, NULL, &m) == NR_CUDA_ERR_INVALID, "empty PTX");

    /* Cubins are checked before the driver, which is given no size, reads them. */
    unsigned char img[128] = "\177ELF\2\1\1";
    CHECK(nr_cuda_module_load_cubin(cu, img, 10, &m) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "not a cubin"),
          "short ELF: %s", nr_cuda_error(cu));
    img[40] = 200;  /* section headers at offset 200, beyond the image */
    img[60] = 1;
    img[58] = 64;
    CHECK(nr_cuda_module_load_cubin(cu, img, sizeof img, &m) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "truncated cubin"),
          "truncated ELF: %s", nr_cuda_error(cu));
    img[4] = 1;
    CHECK(nr_cuda_module_load_cubin(cu, img, sizeof img, &m) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "64-bit"),
          "ELF32: %s", nr_cuda_error(cu));
    unsigned char fat[32] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 200};
    CHECK(nr_cuda_module_load_cubin(cu, fat, sizeof fat, &m) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "truncated fatbinary"),
          "fatbin: %s", nr_cuda_error(cu));
    CHECK(nr_cuda_module_load_cubin(cu, NULL, 0, &m) == NR_CUDA_ERR_INVALID, "empty cubin");
    /* A well-formed image the driver rejects: its error log is included. */
    unsigned char noentry[100] = "\177ELF\2\1\1";
    st = nr_cuda_module_load_cubin(cu, noentry, sizeof noentry, &m);
    CHECK(st == NR_CUDA_ERR_JIT && strcmp(nr_cuda_error(cu), "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_IMAGE: "
                                                             "device kernel image is invalid\nno kernels in image") == 0,
          "rejected image: %s", nr_cuda_error(cu));
    CHECK(fake.live_modules == 0 && fake.depth == 0, "failed loads leaked state");

    /* Errors as diagnostics. */
    NrArena a;
    nr_arena_init(&a);
    NrSources srcs;
    nr_sources_init(&srcs, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &srcs);
    nr_cuda_report(cu, &d, (NrLoc){0, 0, 0});
    CHECK(d.nerrors == 1 && strstr(d.v[0].msg, "CUDA_ERROR_INVALID_IMAGE"), "report");
    nr_arena_free(&a);
    nr_cuda_close(cu);
}

static void test_launches(void) {
    fake_reset();
    NrCuda *cu = fake_open();
    NrCudaModule *m = NULL;
    if (!cu || nr_cuda_module_load_ptx(cu, GOOD_PTX, sizeof GOOD_PTX - 1, NULL, &m) != NR_CUDA_OK) return;
    NrCudaFunction *f, *heavy, *stat;
    nr_cuda_get_function(cu, m, "vadd", &f);
    nr_cuda_get_function(cu, m, "heavy", &heavy);
    nr_cuda_get_function(cu, m, "with_static", &stat);
    NrCuDevPtr dx = 0;
    unsigned n = 0;
    void *params[4] = {&dx, &dx, &dx, &n};
    NrCudaLaunchConfig lc = {{4, 1, 1}, {128, 1, 1}, 0, NULL, 1};
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK && fake.launches == 1, "launch: %s", nr_cuda_error(cu));

    /* Checked before the driver sees them. */
    lc.block[0] = 0;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_ERR_INVALID &&
              strcmp(nr_cuda_error(cu), "block dimensions of kernel 'vadd' must be positive, got 0x1x1") == 0,
          "zero block: %s", nr_cuda_error(cu));
    lc.block[0] = 1;
    lc.block[2] = 65;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_ERR_INVALID &&
              strcmp(nr_cuda_error(cu), "block dimension z = 65 of kernel 'vadd' exceeds the device limit 64") == 0,
          "block z: %s", nr_cuda_error(cu));
    lc.block[2] = 1;
    lc.grid[2] = 70000;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_ERR_INVALID && strstr(nr_cuda_error(cu), "grid dimension z = 70000"),
          "grid z: %s", nr_cuda_error(cu));
    lc.grid[2] = 1;
    lc.block[0] = 256;
    CHECK(nr_cuda_launch(cu, heavy, &lc, params) == NR_CUDA_ERR_INVALID &&
              strcmp(nr_cuda_error(cu), "a block of 256 threads exceeds the 128 threads per block kernel 'heavy' "
                                        "allows (it uses 12 registers per thread)") == 0,
          "heavy: %s", nr_cuda_error(cu));
    lc.block[0] = 32;
    CHECK(nr_cuda_launch(cu, heavy, &lc, params) == NR_CUDA_ERR_LAUNCH, "driver refusal");
    CHECK(strstr(nr_cuda_error(cu), "cuLaunchKernel of kernel 'heavy' (grid 4x1x1, block 32x1x1, 0 bytes of dynamic "
                                    "shared memory) failed: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources "
                                    "requested for launch (the kernel needs more registers") == nr_cuda_error(cu),
          "message: %s", nr_cuda_error(cu));
    int launches = fake.launches;
    lc.grid[0] = 0;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK && fake.launches == launches, "empty grid launched");
    lc.grid[0] = 1;
    CHECK(nr_cuda_launch(cu, NULL, &lc, params) == NR_CUDA_ERR_INVALID, "NULL function");

    /* Dynamic shared memory: opted in on demand, bounded by the device. */
    int calls = fake.set_attr_calls;
    lc.shared_bytes = 40000;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK && fake.set_attr_calls == calls, "below 48 KB opted in");
    lc.shared_bytes = 100000;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK, "100000 bytes: %s", nr_cuda_error(cu));
    CHECK(fake.set_attr_calls == calls + 1 && nr_cuda_function_info(f)->max_dynamic_shared_bytes == 100000,
          "no opt-in");
    lc.shared_bytes = 90000;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK && fake.set_attr_calls == calls + 1, "opted in again");
    CHECK(nr_cuda_function_set_dynamic_shared(cu, stat, FAKE_OPTIN - 1024) == NR_CUDA_OK, "exact maximum: %s",
          nr_cuda_error(cu));
    CHECK(nr_cuda_function_set_dynamic_shared(cu, stat, FAKE_OPTIN - 1023) == NR_CUDA_ERR_INVALID, "one byte over");
    CHECK(strcmp(nr_cuda_error(cu), "kernel 'with_static' needs 232449 bytes of shared memory per block (1024 static "
                                    "+ 231425 dynamic), but Fake GPU 0 allows at most 232448") == 0,
          "message: %s", nr_cuda_error(cu));
    lc.shared_bytes = 4000000000u;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_ERR_INVALID, "4 GB of shared memory");
    lc.shared_bytes = 0;

    /* Streams and events. */
    NrCuStream s;
    CHECK(nr_cuda_stream_create(cu, 1, &s) == NR_CUDA_OK && s, "stream");
    lc.stream = s;
    CHECK(nr_cuda_launch(cu, f, &lc, params) == NR_CUDA_OK, "launch on a stream");
    CHECK(nr_cuda_stream_synchronize(cu, s) == NR_CUDA_OK && nr_cuda_stream_destroy(cu, s) == NR_CUDA_OK, "stream ops");
    CHECK(nr_cuda_stream_destroy(cu, NULL) == NR_CUDA_OK, "destroying the default stream");
    lc.stream = NULL;
    NrCuEvent e0 = NULL, e1 = NULL;
    float ms = -1;
    CHECK(nr_cuda_event_create(cu, &e0) == NR_CUDA_OK && nr_cuda_event_create(cu, &e1) == NR_CUDA_OK, "events");
    CHECK(nr_cuda_event_record(cu, e0, NULL) == NR_CUDA_OK && nr_cuda_event_record(cu, e1, NULL) == NR_CUDA_OK, "record");
    CHECK(nr_cuda_event_elapsed(cu, e0, e1, &ms) == NR_CUDA_OK && ms == 1.25f, "elapsed %g", ms);
    CHECK(nr_cuda_event_destroy(cu, e0) == NR_CUDA_OK && nr_cuda_event_destroy(cu, e1) == NR_CUDA_OK, "destroy");
    CHECK(nr_cuda_synchronize(cu) == NR_CUDA_OK, "synchronize");
    CHECK(fake.live_streams == 0 && fake.live_events == 0, "streams or events leaked");

    /* A fault surfaces at the synchronisation and makes everything after it fail. */
    fake.sticky = NR_CU_ERROR_ILLEGAL_ADDRESS;
    NrCuDevPtr p;
    CHECK(nr_cuda_alloc(cu, 4, &p) == NR_CUDA_ERR_FAULT && p == 0, "alloc after a fault");
    CHECK(strcmp(nr_cuda_error(cu), "cuMemAlloc of 4 bytes failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory "
                                    "access was encountered; the CUDA context is unusable from now on (restart the "
                                    "process to use the GPU again)") == 0,
          "message: %s", nr_cuda_error(cu));
    CHECK(nr_cuda_synchronize(cu) == NR_CUDA_ERR_FAULT && strstr(nr_cuda_error(cu), "a kernel faulted earlier"),
          "second report: %s", nr_cuda_error(cu));
    nr_cuda_module_unload(cu, m);
    nr_cuda_close(cu);
    CHECK(fake.primary_refs == 0 && fake.depth == 0 && fake.live_modules == 0, "close after a fault");
}

/* The whole GPU smoke test against the double. */
/* Tensor maps through the driver: checked first, encoded with the context
 * current, and a driver without the entry point refused clearly. */
static void test_tensor_maps(void) {
    fake_reset();
    NrCuda *cu = fake_open();
    if (!cu) return;
    NrTensorMapArgs t;
    memset(&t, 0, sizeof t);
    t.dtype = NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    t.rank = 2;
    t.base = 0x7f0000001000ull;
    t.dims[0] = 200, t.dims[1] = 300;
    t.strides[0] = 400;
    t.box[0] = 64, t.box[1] = 128;
    t.elem_strides[0] = t.elem_strides[1] = 1;
    t.swizzle = NR_CU_TENSOR_MAP_SWIZZLE_128B;
    t.l2_promotion = NR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    NrCuTensorMap map;
    CHECK(nr_cuda_tensor_map_encoder(cu) != NULL, "the encoder was not resolved");
    CHECK(nr_cuda_tensor_map_tiled(cu, &t, &map) == NR_CUDA_OK && fake.encodes == 1, "encode: %s", nr_cuda_error(cu));
    CHECK(memcmp(&fake.encoded, &t, sizeof t) == 0, "the driver got other arguments");
    CHECK(fake.encode_ctx == FAKE_PRIMARY && fake.depth == 0, "context %p during the encode, depth %d after",
          (void *)fake.encode_ctx, fake.depth);
    CHECK(map.opaque[0] == 0xababababababababull, "the map was not written");

    NrTensorMapArgs bad = t;
    bad.strides[0] = 200;
    CHECK(nr_cuda_tensor_map_tiled(cu, &bad, &map) == NR_CUDA_ERR_INVALID && fake.encodes == 1 &&
              strstr(nr_cuda_error(cu), "invalid tensor map: the stride of dimension 1, 200 bytes, is not a multiple "
                                        "of 16 below 2^40"),
          "bad stride: %s", nr_cuda_error(cu));
    fake.encode_result = NR_CU_ERROR_INVALID_VALUE;
    CHECK(nr_cuda_tensor_map_tiled(cu, &t, &map) == NR_CUDA_ERR_INVALID &&
              strstr(nr_cuda_error(cu), "cuTensorMapEncodeTiled") &&
              strstr(nr_cuda_error(cu), "CUDA_ERROR_INVALID_VALUE"),
          "driver refusal: %s", nr_cuda_error(cu));
    fake.encode_result = NR_CU_SUCCESS;
    CHECK(nr_cuda_tensor_map_tiled(cu, NULL, &map) == NR_CUDA_ERR_INVALID, "no arguments");
    nr_cuda_close(cu);

    /* A driver before CUDA 12: opens, and refuses tensor maps alone. */
    fake_reset();
    fake.missing[0] = "cuTensorMapEncodeTiled";
    cu = fake_open();
    if (!cu) return;
    CHECK(nr_cuda_tensor_map_encoder(cu) == NULL, "a missing encoder was found");
    CHECK(nr_cuda_tensor_map_tiled(cu, &t, &map) == NR_CUDA_NO_DRIVER &&
              strstr(nr_cuda_error(cu), "lacks cuTensorMapEncodeTiled (TMA needs CUDA 12 or newer)"),
          "old driver: %s", nr_cuda_error(cu));
    CHECK(fake.encodes == 0, "encoded without an encoder");
    nr_cuda_close(cu);
}

static void test_smoke_on_fake(void) {
    fake_reset();
    NrCudaConfig cfg = fake_config();
    smoke_quiet = 1;
    int bad = smoke_run(PTX_PATH, &cfg);
    smoke_quiet = 0;
    CHECK(bad == 0, "%d smoke checks failed against the driver double", bad);
    CHECK(fake.sticky == NR_CU_ERROR_ILLEGAL_ADDRESS, "the smoke test's fault kernel did not run");
    CHECK(fake.primary_refs == 0 && fake.depth == 0 && fake.live_allocs == 0 && fake.live_modules == 0 &&
              fake.live_streams == 0 && fake.live_events == 0 && fake.live_links == 0,
          "smoke test leaked driver objects: refs %d depth %d allocs %d modules %d streams %d events %d links %d",
          fake.primary_refs, fake.depth, fake.live_allocs, fake.live_modules, fake.live_streams, fake.live_events,
          fake.live_links);
}

/* The real driver: absent in CI; when present, the smoke test on the GPU. */
static void test_real_driver(void) {
    NrCuda *cu;
    char err[1024];
    NrCudaStatus st = nr_cuda_open(NULL, &cu, err, sizeof err);
    if (st == NR_CUDA_NO_DRIVER) {
        CHECK(strncmp(err, "no NVIDIA driver found (", 24) == 0, "message: %s", err);
        printf("test_cuda_rt: no NVIDIA driver (%s); GPU smoke test skipped\n", err);
        return;
    }
    if (st == NR_CUDA_NO_DEVICE) {
        CHECK(strstr(err, "CUDA device") != NULL, "message: %s", err);
        printf("test_cuda_rt: %s; GPU smoke test skipped\n", err);
        return;
    }
    CHECK(st == NR_CUDA_OK, "open: %s", err);
    nr_cuda_close(cu);
    if (st != NR_CUDA_OK) return;
    NrCudaConfig cfg;
    nr_cuda_config_default(&cfg);
    int bad = smoke_run(PTX_PATH, &cfg);
    CHECK(bad == 0, "%d smoke checks failed on the GPU", bad);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_no_driver();
    test_open_failures();
    test_contexts();
    test_modules();
    test_launches();
    test_tensor_maps();
    test_smoke_on_fake();
    test_real_driver();
    if (failures) printf("test_cuda_rt: %d checks FAILED\n", failures);
    else printf("test_cuda_rt: OK\n");
    return failures ? 1 : 0;
}
