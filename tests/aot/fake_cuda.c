/* fake_cuda.c - a stand-in for libcuda.so.1 with no GPU behind it, for the
 * tests of ahead-of-time generated code, the C examples and the C API.
 *
 * Built as a shared library named libcuda.so.1 (make test-aot), it exports
 * the driver entry points of cuda.h that Nereid, the generated code and the
 * examples call, with the driver's error behavior: calls need cuInit and a
 * current context, launches are checked against the kernel's block size and
 * shared-memory limit, copies against the allocations.
 *
 *   Memory      device addresses are host addresses (256-byte aligned,
 *               filled with 0xff bytes when allocated).
 *   Modules     PTX, and the "cubins" cuLinkComplete makes (PTX behind a
 *               tag), run: the fake finds the kernel's source - from the
 *               `// nereid-aot-*` lines `nereid aot` writes into the PTX it
 *               embeds, or from fake_cuda_register() - recompiles it, checks
 *               that the PTX is exactly what Nereid emits for it, and runs
 *               each launch on Nereid's interpreter, with every access
 *               checked against the allocations.  Real cubins (ELF) load when
 *               their architecture fits the device; their launches are
 *               recorded, not run.
 *   Tensor maps cuTensorMapEncodeTiled checks the driver's documented rules
 *               and writes its arguments into the map; a launch of a kernel
 *               that takes maps (the `_tmap_` parameters Nereid emits after
 *               the arguments) checks each against the descriptor's
 *               arguments in the same launch.
 *   Devices     one, of compute capability FAKE_CUDA_CC (default 100: newer
 *               than any cubin, so that PTX is used), or fake_cuda_set_cc().
 *   Time        each stream has a clock; a launch advances it by a cost
 *               (fake_cuda_set_cost), which events measure.
 *   Failures    fake_cuda_fail("cuLaunchKernel", n, result), or
 *               FAKE_CUDA_FAIL=cuLaunchKernel:n:result, makes the n-th call
 *               from now fail.
 * Control functions (fake_cuda_*) are declared in fake_cuda.h. */
#include "fake_cuda.h"

#include "fp.h"
#include "nereid.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { MAX_FAILS = 16, MAX_DEPTH = 16, DEFAULT_SHARED = 49152 };

typedef struct Alloc {
    struct Alloc *next;
    unsigned char *p;
    size_t size;
} Alloc;

typedef struct Kernel {
    struct Kernel *next;
    char *ptx;               /* what Nereid emits for it */
    char *name;
    char *signature;
    NrKernel *interp;        /* compiled for the interpreter */
    int threads, shared;
    int ntmaps;              /* tensor-map parameters after the arguments */
    NrTensorMapInfo tmaps[16];
} Kernel;

typedef struct CUmod_st {
    int live;
    int is_elf;
    int sm;                  /* ELF: the cubin's architecture */
    const unsigned char *elf;
    size_t elf_size;
    Kernel *k;               /* NULL for ELF, and for PTX of no known kernel (loads, does not run) */
    char *ptx;               /* PTX modules: the text */
    char desc[64];
    struct CUfunc_st *funcs;
} Module;

typedef struct CUfunc_st {
    struct CUfunc_st *next;
    Module *m;
    char name[128];
    int max_dyn;
} Function;

typedef struct CUstream_st {
    int live;
    double clock;
} Stream;

typedef struct CUevent_st {
    int live, recorded;
    double time;
} Event;

typedef struct CUlinkState_st {
    char *elog;
    size_t elog_size;
    Kernel *k;
    char *ptx;
    unsigned char *image;
} Link;

typedef struct CUctx_st {
    int device;
} Ctx;

static struct {
    int initialized, cc, refs;
    Ctx primary;
    Ctx *stack[MAX_DEPTH];
    int depth;
    CUresult sticky;
    Alloc *allocs;
    Kernel *kernels;
    Stream default_stream;
    int live_modules, live_streams, live_events, live_allocs;
    struct {
        char fn[64];
        int nth;
        CUresult r;
    } fails[MAX_FAILS];
    int nfails;
    FakeLaunch *launches;
    int nlaunches, caplaunches;
    double (*cost)(const FakeLaunch *, void *);
    void *cost_user;
    int set_attribute_calls, links, encodes;
    int env_read;
    void **objects;          /* every handle made: destroyed ones stay (not live) until a reset */
    int nobjects, capobjects;
} F;

static void *track(void *p) {
    if (!p) abort();
    if (F.nobjects == F.capobjects) {
        F.capobjects = F.capobjects * 2 + 16;
        F.objects = realloc(F.objects, sizeof(void *) * (size_t)F.capobjects);
        if (!F.objects) abort();
    }
    F.objects[F.nobjects++] = p;
    return p;
}

/* ---- control ---- */

static void read_env(void) {
    if (F.env_read) return;
    F.env_read = 1;
    if (!F.cc) {
        const char *cc = getenv("FAKE_CUDA_CC");
        F.cc = cc && *cc ? atoi(cc) : 100;
    }
    const char *fail = getenv("FAKE_CUDA_FAIL");
    if (fail && *fail) {
        char fn[64];
        int nth, r;
        if (sscanf(fail, "%63[^:]:%d:%d", fn, &nth, &r) == 3) fake_cuda_fail(fn, nth, (CUresult)r);
    }
}

EXPORT void fake_cuda_reset(void) {
    for (Alloc *a = F.allocs, *n; a; a = n) {
        n = a->next;
        free(a->p);
        free(a);
    }
    for (Kernel *k = F.kernels, *n; k; k = n) {
        n = k->next;
        nr_kernel_destroy(k->interp);
        free(k->ptx);
        free(k->name);
        free(k->signature);
        free(k);
    }
    free(F.launches);
    for (int i = 0; i < F.nobjects; i++) free(F.objects[i]);
    free(F.objects);
    memset(&F, 0, sizeof F);
    F.env_read = 1;
    F.cc = 100;
}

EXPORT void fake_cuda_set_cc(int cc) {
    read_env();
    F.cc = cc;
}

EXPORT void fake_cuda_fail(const char *fn, int nth, CUresult r) {
    if (F.nfails == MAX_FAILS) return;
    snprintf(F.fails[F.nfails].fn, sizeof F.fails[0].fn, "%s", fn);
    F.fails[F.nfails].nth = nth;
    F.fails[F.nfails].r = r;
    F.nfails++;
}

EXPORT int fake_cuda_launch_count(void) { return F.nlaunches; }
EXPORT const FakeLaunch *fake_cuda_launch(int i) { return i >= 0 && i < F.nlaunches ? &F.launches[i] : NULL; }
EXPORT int fake_cuda_live_modules(void) { return F.live_modules; }
EXPORT int fake_cuda_live_allocations(void) { return F.live_allocs; }
EXPORT int fake_cuda_set_attribute_calls(void) { return F.set_attribute_calls; }
EXPORT int fake_cuda_link_count(void) { return F.links; }
EXPORT int fake_cuda_encode_count(void) { return F.encodes; }

EXPORT void fake_cuda_set_cost(double (*cost)(const FakeLaunch *, void *), void *user) {
    F.cost = cost;
    F.cost_user = user;
}

EXPORT const char *fake_cuda_function_binary(CUfunction f) { return f ? f->m->desc : NULL; }

EXPORT const char *fake_cuda_function_signature(CUfunction f) {
    return f && f->m->k ? f->m->k->signature : NULL;
}

/* The injected failure of this call, or CUDA_SUCCESS; a sticky fault too. */
static CUresult injected(const char *fn) {
    read_env();
    if (F.sticky) return F.sticky;
    for (int i = 0; i < F.nfails; i++) {
        if (strcmp(F.fails[i].fn, fn) != 0) continue;
        if (--F.fails[i].nth == 0) {
            CUresult r = F.fails[i].r;
            F.fails[i] = F.fails[--F.nfails];
            return r;
        }
    }
    return CUDA_SUCCESS;
}

#define ENTER(name)                                          \
    do {                                                     \
        CUresult r_ = injected(name);                        \
        if (r_ != CUDA_SUCCESS) return r_;                   \
        if (!F.initialized) return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

#define NEED_CONTEXT()                                        \
    do {                                                      \
        if (!F.depth || !F.stack[F.depth - 1]) return CUDA_ERROR_INVALID_CONTEXT; \
    } while (0)

/* ---- kernels ---- */

static char *dup(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (!r) abort();
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* Compile a kernel for arch (PTX) and for the interpreter; NULL with a message in err. */
static Kernel *compile_kernel(const char *file, const char *name, const char *sig, const char *arch, int warps,
                              int stages, char *err, size_t errsize) {
    size_t len;
    char *src = read_all(file, &len);
    if (!src) {
        snprintf(err, errsize, "fake driver: cannot read the kernel source '%s'", file);
        return NULL;
    }
    NrContext *ctx = nr_context_create();
    NrOptions o;
    nr_options_default(&o);
    o.num_warps = warps;
    o.num_stages = stages;
    o.arch = arch;
    NrKernel *gpu = NULL, *interp = NULL;
    Kernel *k = NULL;
    if (nr_compile(ctx, src, len, file, name, sig, &o, &gpu) != NR_OK) {
        snprintf(err, errsize, "fake driver: %s", nr_error_text(ctx));
    } else {
        o.arch = NULL;
        if (nr_compile(ctx, src, len, file, name, sig, &o, &interp) != NR_OK) {
            snprintf(err, errsize, "fake driver: %s", nr_error_text(ctx));
        } else {
            k = calloc(1, sizeof *k);
            k->ptx = dup(nr_kernel_ptx(gpu), strlen(nr_kernel_ptx(gpu)));
            k->name = dup(name, strlen(name));
            k->signature = dup(sig, strlen(sig));
            k->interp = interp;
            k->threads = 32 * nr_kernel_num_warps(gpu);
            k->shared = nr_kernel_shared_bytes(gpu);
            k->ntmaps = nr_kernel_num_tensor_maps(gpu);
            if (k->ntmaps > 16) abort();
            for (int j = 0; j < k->ntmaps; j++) nr_kernel_tensor_map_info(gpu, j, &k->tmaps[j]);
            k->next = F.kernels;
            F.kernels = k;
        }
    }
    nr_kernel_destroy(gpu);
    nr_context_destroy(ctx);
    free(src);
    return k;
}

EXPORT int fake_cuda_register(const char *file, const char *kernel, const char *sig, const char *arch, int warps,
                              int stages) {
    char err[4096];
    Kernel *k = compile_kernel(file, kernel, sig, arch, warps, stages, err, sizeof err);
    if (!k) fprintf(stderr, "%s\n", err);
    return k ? 0 : -1;
}

/* Register the kernels of the file FAKE_CUDA_KERNELS names, once: lines of
 * FILE|KERNEL|SIGNATURE|ARCH|NUM_WARPS|NUM_STAGES. */
static void read_manifest(void) {
    static int done;
    const char *path = getenv("FAKE_CUDA_KERNELS");
    char line[4096];
    if (done || !path || !*path) return;
    done = 1;
    FILE *f = fopen(path, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *fields[6], *p = line;
        int n = 0;
        line[strcspn(line, "\n")] = 0;
        while (n < 6 && p) {
            fields[n++] = p;
            p = strchr(p, '|');
            if (p) *p++ = 0;
        }
        if (n == 6) fake_cuda_register(fields[0], fields[1], fields[2], fields[3], atoi(fields[4]), atoi(fields[5]));
    }
    fclose(f);
}

/* The value of a `// nereid-aot-NAME: value` line, or NULL. */
static char *aot_field(const char *ptx, const char *name) {
    char tag[64];
    snprintf(tag, sizeof tag, "// nereid-aot-%s: ", name);
    const char *p = strstr(ptx, tag);
    if (!p) return NULL;
    p += strlen(tag);
    return dup(p, strcspn(p, "\n"));
}

/* The PTX after the nereid-aot lines. */
static const char *ptx_body(const char *ptx) {
    while (strncmp(ptx, "// nereid-aot-", 14) == 0) {
        const char *nl = strchr(ptx, '\n');
        if (!nl) return "";
        ptx = nl + 1;
    }
    return ptx;
}

/* The kernel of PTX text; NULL with a message.  PTX from nereid aot names its
 * kernel; other PTX must have been registered. */
static Kernel *find_kernel(const char *ptx, char *err, size_t errsize) {
    const char *body = ptx_body(ptx);
    char *file = aot_field(ptx, "file"), *name = aot_field(ptx, "kernel"), *sig = aot_field(ptx, "signature"),
         *opts = aot_field(ptx, "options");
    Kernel *k = NULL;
    char arch[16] = "";
    int warps = 4, stages = 3;
    if (!file && !name && !sig && !opts) {
        for (int pass = 0; pass < 2 && !k; pass++) {
            if (pass) read_manifest();
            for (k = F.kernels; k; k = k->next)
                if (strcmp(k->ptx, body) == 0) break;
        }
        if (!k)
            snprintf(err, errsize, "fake driver: PTX of an unknown kernel (neither registered nor from nereid aot)");
    } else if (!file || !name || !sig || !opts ||
               sscanf(opts, "arch=%15s num_warps=%d num_stages=%d", arch, &warps, &stages) != 3) {
        snprintf(err, errsize, "fake driver: incomplete nereid-aot lines in the PTX");
    } else {
        for (k = F.kernels; k; k = k->next)
            if (strcmp(k->ptx, body) == 0 && strcmp(k->name, name) == 0 && strcmp(k->signature, sig) == 0) break;
        if (!k && (k = compile_kernel(file, name, sig, arch, warps, stages, err, errsize)) &&
            strcmp(k->ptx, body) != 0) {
            snprintf(err, errsize, "fake driver: the PTX of %s (%s) is not what Nereid emits for it", name, sig);
            k = NULL;
        }
    }
    free(file);
    free(name);
    free(sig);
    free(opts);
    return k;
}

/* The target of PTX (".target sm_90a" -> 90, *a = 1). */
static int ptx_target(const char *ptx, int *a) {
    const char *p = strstr(ptx, ".target sm_");
    *a = 0;
    if (!p) return 0;
    int sm = atoi(p + 11);
    const char *q = p + 11;
    while (*q >= '0' && *q <= '9') q++;
    *a = *q == 'a';
    return sm;
}

/* The cubins of the fake linker: a 64-byte ELF64 header with this tag in its
 * padding (bytes 9..14), then the PTX. */
static const char FAKE_TAG[] = "NRFAKE";
enum { FAKE_HEADER = 64 };

static int is_fake_cubin(const unsigned char *b) {
    return memcmp(b, "\177ELF", 4) == 0 && memcmp(b + 9, FAKE_TAG, 6) == 0;
}

/* Load an image: ELF cubin, fake cubin (header + PTX) or PTX text. */
static CUresult load_image(Module **out, const void *image, char *err, size_t errsize) {
    const unsigned char *b = image;
    Module *m = calloc(1, sizeof *m);
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F' && !is_fake_cubin(b)) {
        /* 64-bit ELF: e_flags at 48 holds the architecture in bits 8..15. */
        uint32_t flags;
        memcpy(&flags, b + 48, 4);
        m->is_elf = 1;
        m->sm = (int)((flags >> 8) & 0xff);
        uint64_t shoff;
        uint16_t shnum, shentsize;
        memcpy(&shoff, b + 40, 8);
        memcpy(&shentsize, b + 58, 2);
        memcpy(&shnum, b + 60, 2);
        m->elf = b;
        m->elf_size = (size_t)(shoff + (uint64_t)shnum * shentsize);
        snprintf(m->desc, sizeof m->desc, "sm_%d cubin", m->sm);
        if (m->sm / 10 != F.cc / 10 || m->sm > F.cc) {
            snprintf(err, errsize, "fake driver: an sm_%d cubin does not run on compute capability %d.%d", m->sm,
                     F.cc / 10, F.cc % 10);
            free(m);
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
        }
    } else {
        const char *text = image;
        int fake = is_fake_cubin(b);
        if (fake) text += FAKE_HEADER;
        int a, sm = ptx_target(text, &a);
        if (!sm) {
            free(m);
            snprintf(err, errsize, "fake driver: the image is neither a cubin nor PTX");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if (sm > F.cc || (a && sm != F.cc)) {
            free(m);
            snprintf(err, errsize, "fake driver: PTX for sm_%d%s cannot be compiled for compute capability %d.%d", sm,
                     a ? "a" : "", F.cc / 10, F.cc % 10);
            return CUDA_ERROR_INVALID_PTX;
        }
        m->k = find_kernel(text, err, errsize);
        if (!m->k && strstr(text, "// nereid-aot-")) {
            free(m);
            return CUDA_ERROR_INVALID_PTX; /* from nereid aot, yet not what Nereid emits */
        }
        m->ptx = track(dup(text, strlen(text)));
        snprintf(m->desc, sizeof m->desc, "sm_%d%s %s", sm, a ? "a" : "", fake ? "linked PTX" : "PTX");
    }
    m->live = 1;
    F.live_modules++;
    *out = track(m);
    return CUDA_SUCCESS;
}

/* ---- initialization, devices, contexts ---- */

EXPORT CUresult cuInit(unsigned int flags) {
    CUresult r = injected("cuInit");
    if (r) return r;
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    F.initialized = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}

static const struct {
    CUresult r;
    const char *name, *str;
} ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].r == r) return *s = ERRORS[i].name, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
    for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
        if (ERRORS[i].r == r) return *s = ERRORS[i].str, CUDA_SUCCESS;
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *n) {
    ENTER("cuDeviceGetCount");
    *n = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    ENTER("cuDeviceGet");
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    ENTER("cuDeviceGetName");
    if (d != 0 || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake GPU");
    return CUDA_SUCCESS;
}

static int optin_shared(void) { return F.cc == 86 || F.cc == 89 ? 101376 : F.cc == 80 ? 166912 : 232448; }

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d) {
    ENTER("cuDeviceGetAttribute");
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = F.cc / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = F.cc % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = DEFAULT_SHARED; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = optin_shared(); break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = optin_shared() + 1024; break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice d) {
    ENTER("cuDeviceTotalMem");
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    ENTER("cuDevicePrimaryCtxRetain");
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    F.refs++;
    *c = &F.primary;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice d) {
    ENTER("cuDevicePrimaryCtxRelease");
    if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (F.refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    F.refs--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
    ENTER("cuCtxSetCurrent");
    if (!c) {
        if (F.depth) F.depth--;
        return CUDA_SUCCESS;
    }
    if (!F.depth) F.depth = 1;
    F.stack[F.depth - 1] = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c) {
    ENTER("cuCtxGetCurrent");
    *c = F.depth ? F.stack[F.depth - 1] : NULL;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent(CUcontext c) {
    ENTER("cuCtxPushCurrent");
    if (!c || F.depth == MAX_DEPTH) return CUDA_ERROR_INVALID_CONTEXT;
    F.stack[F.depth++] = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *c) {
    ENTER("cuCtxPopCurrent");
    if (!F.depth) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext top = F.stack[--F.depth];
    if (c) *c = top;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
    ENTER("cuCtxGetDevice");
    NEED_CONTEXT();
    *d = 0;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
    ENTER("cuCtxSynchronize");
    NEED_CONTEXT();
    return CUDA_SUCCESS;
}

/* ---- modules ---- */

EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image) {
    ENTER("cuModuleLoadData");
    NEED_CONTEXT();
    if (!mod || !image) return CUDA_ERROR_INVALID_VALUE;
    char err[4096];
    CUresult r = load_image(mod, image, err, sizeof err);
    if (r != CUDA_SUCCESS && getenv("FAKE_CUDA_VERBOSE")) fprintf(stderr, "%s\n", err);
    return r;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n, CUjit_option *o, void **v) {
    (void)n;
    (void)o;
    (void)v;
    ENTER("cuModuleLoadDataEx");
    return cuModuleLoadData(mod, image);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
    ENTER("cuModuleUnload");
    if (!m || !m->live) return CUDA_ERROR_INVALID_HANDLE;
    m->live = 0;
    F.live_modules--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
    ENTER("cuModuleGetFunction");
    NEED_CONTEXT();
    if (!m || !m->live || !name) return CUDA_ERROR_INVALID_HANDLE;
    int found;
    if (m->is_elf) {
        size_t n = strlen(name) + 1;
        found = 0;
        for (size_t i = 0; i + n <= m->elf_size && !found; i++) found = memcmp(m->elf + i, name, n) == 0;
    } else {
        const char *e = strstr(m->ptx, ".entry ");
        found = e && strncmp(e + 7, name, strlen(name)) == 0 && e[7 + strlen(name)] == '(';
    }
    if (!found) return CUDA_ERROR_NOT_FOUND;
    for (Function *f = m->funcs; f; f = f->next)
        if (strcmp(f->name, name) == 0) return *out = f, CUDA_SUCCESS;
    Function *f = track(calloc(1, sizeof *f));
    f->m = m;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->max_dyn = DEFAULT_SHARED;
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute attr, CUfunction f) {
    ENTER("cuFuncGetAttribute");
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    switch (attr) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 40; break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 80; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = F.cc; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int v) {
    ENTER("cuFuncSetAttribute");
    NEED_CONTEXT();
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_NOT_SUPPORTED;
    if (v < 0 || v > optin_shared()) return CUDA_ERROR_INVALID_VALUE;
    F.set_attribute_calls++;
    f->max_dyn = v;
    return CUDA_SUCCESS;
}

/* ---- the linker ---- */

EXPORT CUresult cuLinkCreate(unsigned n, CUjit_option *opts, void **vals, CUlinkState *out) {
    ENTER("cuLinkCreate");
    NEED_CONTEXT();
    Link *l = calloc(1, sizeof *l);
    for (unsigned i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) l->elog = vals[i];
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) l->elog_size = (size_t)(uintptr_t)vals[i];
    }
    *out = l;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLinkAddData(CUlinkState l, CUjitInputType type, void *data, size_t size, const char *name,
                              unsigned n, CUjit_option *o, void **v) {
    (void)size;
    (void)name;
    (void)n;
    (void)o;
    (void)v;
    ENTER("cuLinkAddData");
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    if (type != CU_JIT_INPUT_PTX) return CUDA_ERROR_NOT_SUPPORTED;
    char err[4096];
    int a, sm = ptx_target(data, &a);
    if (!sm || sm > F.cc || (a && sm != F.cc)) {
        snprintf(err, sizeof err, "fake driver: PTX for sm_%d%s cannot be compiled for compute capability %d.%d", sm,
                 a ? "a" : "", F.cc / 10, F.cc % 10);
        l->k = NULL;
    } else {
        l->k = find_kernel(data, err, sizeof err);
        free(l->ptx);
        l->ptx = dup(data, strlen(data));
        if (l->k || !strstr(data, "// nereid-aot-")) return CUDA_SUCCESS;
    }
    if (l->elog && l->elog_size) snprintf(l->elog, l->elog_size, "%s", err);
    return CUDA_ERROR_INVALID_PTX;
}

EXPORT CUresult cuLinkComplete(CUlinkState l, void **cubin, size_t *size) {
    ENTER("cuLinkComplete");
    if (!l || !l->ptx) return CUDA_ERROR_INVALID_HANDLE;
    size_t t = FAKE_HEADER, n = strlen(l->ptx);
    free(l->image);
    l->image = calloc(1, t + n + 1);
    memcpy(l->image, "\177ELF\2\1\1", 7);
    memcpy(l->image + 9, FAKE_TAG, 6);
    memcpy(l->image + t, l->ptx, n + 1);
    *cubin = l->image;
    *size = t + n + 1;
    F.links++;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLinkDestroy(CUlinkState l) {
    if (!l) return CUDA_ERROR_INVALID_HANDLE;
    free(l->image);
    free(l->ptx);
    free(l);
    return CUDA_SUCCESS;
}

/* ---- memory ---- */

/* The allocation holding [p, p + n), or NULL. */
static Alloc *find_alloc(CUdeviceptr p, size_t n) {
    for (Alloc *a = F.allocs; a; a = a->next) {
        uintptr_t b = (uintptr_t)a->p;
        if (p >= b && p - b <= a->size && n <= a->size - (size_t)(p - b)) return a;
    }
    return NULL;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
    ENTER("cuMemAlloc");
    NEED_CONTEXT();
    if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    Alloc *a = calloc(1, sizeof *a);
    a->p = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!a->p) {
        free(a);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memset(a->p, 0xff, bytes);
    a->size = bytes;
    a->next = F.allocs;
    F.allocs = a;
    F.live_allocs++;
    *p = (CUdeviceptr)(uintptr_t)a->p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(CUdeviceptr p) {
    ENTER("cuMemFree");
    NEED_CONTEXT();
    for (Alloc **pp = &F.allocs; *pp; pp = &(*pp)->next) {
        Alloc *a = *pp;
        if ((uintptr_t)a->p != p) continue;
        *pp = a->next;
        free(a->p);
        free(a);
        F.live_allocs--;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
    ENTER("cuMemcpyHtoD");
    NEED_CONTEXT();
    if (!find_alloc(dst, n)) return CUDA_ERROR_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
    ENTER("cuMemcpyDtoH");
    NEED_CONTEXT();
    if (!find_alloc(src, n)) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8(CUdeviceptr dst, unsigned char v, size_t n) {
    ENTER("cuMemsetD8");
    NEED_CONTEXT();
    if (!find_alloc(dst, n)) return CUDA_ERROR_INVALID_VALUE;
    memset((void *)(uintptr_t)dst, v, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32(CUdeviceptr dst, unsigned int v, size_t n) {
    ENTER("cuMemsetD32");
    NEED_CONTEXT();
    if (dst % 4 || !find_alloc(dst, n * 4)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) memcpy((char *)(uintptr_t)dst + 4 * i, &v, 4);
    return CUDA_SUCCESS;
}

/* ---- streams and events ---- */

static Stream *stream_of(CUstream s) { return s ? s : &F.default_stream; }

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    (void)flags;
    ENTER("cuStreamCreate");
    NEED_CONTEXT();
    Stream *st = track(calloc(1, sizeof *st));
    st->live = 1;
    F.live_streams++;
    *s = st;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy(CUstream s) {
    ENTER("cuStreamDestroy");
    if (!s || !s->live) return CUDA_ERROR_INVALID_HANDLE;
    s->live = 0;
    F.live_streams--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
    ENTER("cuStreamSynchronize");
    NEED_CONTEXT();
    if (s && !s->live) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags) {
    (void)flags;
    ENTER("cuEventCreate");
    NEED_CONTEXT();
    Event *ev = track(calloc(1, sizeof *ev));
    ev->live = 1;
    F.live_events++;
    *e = ev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy(CUevent e) {
    ENTER("cuEventDestroy");
    if (!e || !e->live) return CUDA_ERROR_INVALID_HANDLE;
    e->live = 0;
    F.live_events--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
    ENTER("cuEventRecord");
    NEED_CONTEXT();
    if (!e || !e->live || (s && !s->live)) return CUDA_ERROR_INVALID_HANDLE;
    e->recorded = 1;
    e->time = stream_of(s)->clock;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
    ENTER("cuEventSynchronize");
    if (!e || !e->live) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
    ENTER("cuEventElapsedTime");
    if (!a || !b || !a->live || !b->live) return CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded) return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)(b->time - a->time);
    return CUDA_SUCCESS;
}

/* ---- launches ---- */

static size_t param_size(const NrArgInfo *ai) {
    if (ai->kind == NR_ARG_BUFFER) return 8;
    static const struct {
        const char *dt;
        size_t n;
    } sizes[] = {{"i1", 1}, {"i8", 1}, {"u8", 1}, {"fp8e4nv", 1}, {"fp8e5", 1}, {"i16", 2},  {"u16", 2},
                 {"fp16", 2}, {"bf16", 2}, {"i32", 4}, {"u32", 4},    {"fp32", 4},  {"i64", 8}, {"u64", 8},
                 {"fp64", 8}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].dt, ai->dtype) == 0) return sizes[i].n;
    return 4;
}

/* A launch argument for the interpreter from the parameter bytes. */
static CUresult decode_arg(const NrArgInfo *ai, const unsigned char *p, NrArg *out) {
    const char *dt = ai->dtype;
    if (ai->kind == NR_ARG_BUFFER) {
        CUdeviceptr d;
        memcpy(&d, p, 8);
        Alloc *al = find_alloc(d, 0);
        *out = NR_BUFFER((void *)(uintptr_t)d, al ? al->size - (size_t)(d - (uintptr_t)al->p) : 0);
        return CUDA_SUCCESS;
    }
    if (ai->kind == NR_ARG_INT) {
        int64_t v = 0;
        if (!strcmp(dt, "i1") || !strcmp(dt, "u8")) v = p[0];
        else if (!strcmp(dt, "i8")) v = (int8_t)p[0];
        else if (!strcmp(dt, "i16")) { int16_t x; memcpy(&x, p, 2); v = x; }
        else if (!strcmp(dt, "u16")) { uint16_t x; memcpy(&x, p, 2); v = x; }
        else if (!strcmp(dt, "i32")) { int32_t x; memcpy(&x, p, 4); v = x; }
        else if (!strcmp(dt, "u32")) { uint32_t x; memcpy(&x, p, 4); v = x; }
        else memcpy(&v, p, 8);
        *out = NR_INT(v);
        return CUDA_SUCCESS;
    }
    double f = 0;
    if (!strcmp(dt, "fp32")) { float x; memcpy(&x, p, 4); f = x; }
    else if (!strcmp(dt, "fp64")) memcpy(&f, p, 8);
    else if (!strcmp(dt, "fp16")) { uint16_t x; memcpy(&x, p, 2); f = nr_f16_to_f32(x); }
    else if (!strcmp(dt, "bf16")) { uint16_t x; memcpy(&x, p, 2); f = nr_bf16_to_f32(x); }
    else if (!strcmp(dt, "fp8e4nv")) f = nr_f8e4nv_to_f32(p[0]);
    else if (!strcmp(dt, "fp8e5")) f = nr_f8e5_to_f32(p[0]);
    else return CUDA_ERROR_INVALID_VALUE;
    *out = NR_FLOAT(f);
    return CUDA_SUCCESS;
}

/* ---- tensor maps ---- */

/* The fake's tensor map: a tag, then cuTensorMapEncodeTiled's arguments. */
typedef struct FakeMap {
    char tag[8];
    uint8_t dtype, rank, interleave, swizzle, l2, oob, pad[2];
    uint64_t base;
    uint64_t dims[5];
    uint64_t strides[4];
    uint16_t box[5];
    uint8_t elem_strides[5];
} FakeMap;
_Static_assert(sizeof(FakeMap) <= sizeof(CUtensorMap), "the fake map does not fit");
static const char MAP_TAG[8] = "NRFAKETM";

static int map_elem_bytes(int dtype) {
    static const int bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
    return dtype >= 0 && dtype < 13 ? bytes[dtype] : 0;
}

/* As the driver documents it (cuda.h); the packed 4- and 6-bit types are not modelled. */
EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *base,
                                       const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                       const cuuint32_t *elem_strides, CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                                       CUtensorMapFloatOOBfill oob) {
    ENTER("cuTensorMapEncodeTiled");
    int es = map_elem_bytes((int)dtype);
    if (!map || (uintptr_t)map % 64 || !es || rank < 1 || rank > 5 || (uintptr_t)base % 16 || !dims || !box ||
        !elem_strides || (rank > 1 && !strides))
        return CUDA_ERROR_INVALID_VALUE;
    if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || (int)swizzle > 3 || (int)l2 > 3 || (int)oob > 1)
        return CUDA_ERROR_INVALID_VALUE;
    if (oob && dtype < CU_TENSOR_MAP_DATA_TYPE_FLOAT16) return CUDA_ERROR_INVALID_VALUE; /* NaN fill: floats */
    for (unsigned i = 0; i < rank; i++) {
        if (dims[i] == 0 || dims[i] > ((cuuint64_t)1 << 32)) return CUDA_ERROR_INVALID_VALUE;
        if (box[i] == 0 || box[i] > 256 || elem_strides[i] == 0 || elem_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
        if (i + 1 < rank && (strides[i] % 16 || strides[i] >= ((cuuint64_t)1 << 40))) return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned inner = box[0] * (unsigned)es;
    if (inner % 16 || (swizzle && inner > (16u << swizzle))) return CUDA_ERROR_INVALID_VALUE;
    FakeMap m;
    memset(&m, 0, sizeof m);
    memcpy(m.tag, MAP_TAG, sizeof m.tag);
    m.dtype = (uint8_t)dtype, m.rank = (uint8_t)rank, m.interleave = (uint8_t)interleave;
    m.swizzle = (uint8_t)swizzle, m.l2 = (uint8_t)l2, m.oob = (uint8_t)oob;
    m.base = (uint64_t)(uintptr_t)base;
    for (unsigned i = 0; i < rank; i++) {
        m.dims[i] = dims[i];
        m.box[i] = (uint16_t)box[i];
        m.elem_strides[i] = (uint8_t)elem_strides[i];
        if (i + 1 < rank) m.strides[i] = strides[i];
    }
    memset(map, 0, sizeof *map);
    memcpy(map, &m, sizeof m);
    F.encodes++;
    return CUDA_SUCCESS;
}

/* Whether tensor map j of kernel k, as passed, describes the descriptor in
 * the launch's arguments with the kernel's box, swizzle and fill. */
static int map_matches(const Kernel *k, int j, const void *param, const unsigned char (*args)[8], char *why,
                       size_t n) {
    const NrTensorMapInfo *t = &k->tmaps[j];
    static const struct {
        const char *dt;
        int type;
    } types[] = {{"fp16", 6}, {"bf16", 9}, {"fp32", 7}, {"fp64", 8}, {"fp8e4nv", 0}, {"fp8e5", 0}, {"i8", 0},
                 {"u8", 0},   {"i16", 1},  {"u16", 1},  {"i32", 3},  {"u32", 2},     {"i64", 5},   {"u64", 4}};
    int type = -1;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].dt, t->dtype) == 0) type = types[i].type;
    FakeMap m;
    memcpy(&m, param, sizeof m);
    if (memcmp(m.tag, MAP_TAG, sizeof m.tag) != 0) {
        snprintf(why, n, "parameter %s_tmap_%d is not a tensor map cuTensorMapEncodeTiled wrote", k->name, j);
        return 0;
    }
    int r = t->rank, b = t->base_arg, ok = m.rank == r && m.dtype == type && m.interleave == 0 && m.l2 == 2 &&
                                          m.oob == (t->nan_fill != 0) &&
                                          m.swizzle == (t->swizzle ? (t->swizzle == 32 ? 1 : t->swizzle == 64 ? 2 : 3) : 0);
    uint64_t base;
    memcpy(&base, args[b], 8);
    ok = ok && m.base == base;
    for (int i = 0; ok && i < r; i++) {
        int d = r - 1 - i; /* the descriptor's dimension */
        int32_t size;
        int64_t stride;
        memcpy(&size, args[b + 1 + d], 4);
        memcpy(&stride, args[b + 1 + r + d], 8);
        ok = m.dims[i] == (uint64_t)size && m.box[i] == t->box[d] && m.elem_strides[i] == 1 &&
             (i == 0 ? stride == 1 : m.strides[i - 1] == (uint64_t)stride * (uint64_t)t->elem_bytes);
    }
    if (!ok) snprintf(why, n, "tensor map %d does not describe the arguments of its descriptor", j);
    return ok;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra) {
    ENTER("cuLaunchKernel");
    NEED_CONTEXT();
    if (!f || !f->m->live || (s && !s->live)) return CUDA_ERROR_INVALID_HANDLE;
    if (extra) return CUDA_ERROR_NOT_SUPPORTED;
    if (!gx || !gy || !gz || gx > 2147483647u || gy > 65535 || gz > 65535) return CUDA_ERROR_INVALID_VALUE;
    if (!bx || !by || !bz || bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
    if ((int)shared > f->max_dyn) return CUDA_ERROR_INVALID_VALUE;
    Kernel *k = f->m->k;
    if (k && (bx != (unsigned)k->threads || by != 1 || bz != 1)) return CUDA_ERROR_INVALID_VALUE;
    FakeLaunch *l =
        (F.nlaunches == F.caplaunches)
            ? (F.launches = realloc(F.launches, sizeof(FakeLaunch) * (size_t)(F.caplaunches = F.caplaunches * 2 + 16)),
               &F.launches[F.nlaunches])
            : &F.launches[F.nlaunches];
    memset(l, 0, sizeof *l);
    l->function = f;
    l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
    l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
    l->shared = shared;
    l->stream = s;
    F.nlaunches++;
    /* The parameter bytes (the sizes are known for Nereid's kernels only). */
    NrArg args[FAKE_MAX_PARAMS];
    int nargs = k ? nr_kernel_num_args(k->interp) : 0;
    if (nargs > FAKE_MAX_PARAMS) return CUDA_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < nargs; i++) {
        NrArgInfo ai;
        nr_kernel_arg_info(k->interp, i, &ai);
        size_t n = param_size(&ai);
        if (!params || !params[i]) return CUDA_ERROR_INVALID_VALUE;
        memcpy(l->params[i], params[i], n);
        l->param_size[i] = (int)n;
        if (decode_arg(&ai, l->params[i], &args[i]) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    }
    l->nparams = nargs;
    for (int j = 0; k && j < k->ntmaps; j++) {
        char why[256];
        if (!params[nargs + j] || !map_matches(k, j, params[nargs + j], l->params, why, sizeof why)) {
            fprintf(stderr, "fake driver: %s: %s\n", k->name, params[nargs + j] ? why : "a tensor map is missing");
            F.nlaunches--; /* refused */
            return CUDA_ERROR_INVALID_VALUE;
        }
        l->ntmaps++;
    }
    stream_of(s)->clock += F.cost ? F.cost(l, F.cost_user) : 1e-3 * gx * gy * gz;
    if (!k) return f->m->is_elf ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED; /* a real cubin: recorded, not run */
    if (shared < (unsigned)k->shared) {
        fprintf(stderr, "fake driver: %s needs %d bytes of dynamic shared memory, the launch gives %u\n", k->name,
                k->shared, shared);
        return F.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    NrContext *ctx = nr_context_create();
    unsigned grid[3] = {gx, gy, gz};
    NrStatus st = nr_launch_interp(ctx, k->interp, grid, args, nargs);
    if (st != NR_OK) {
        fprintf(stderr, "fake driver: %s (%s) faulted:\n%s", k->name, k->signature, nr_error_text(ctx));
        F.sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    nr_context_destroy(ctx);
    l->ran = st == NR_OK;
    return st == NR_OK ? CUDA_SUCCESS : CUDA_ERROR_ILLEGAL_ADDRESS;
}
