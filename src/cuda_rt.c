/* cuda_rt.c - the CUDA driver runtime; see cuda_rt.h.
 *
 *   nr_cuda_open:  dlopen libcuda -> resolve entry points -> cuInit
 *                  -> device + context (primary or current) -> device queries
 *   PTX modules:   cuLinkCreate -> cuLinkAddData(PTX) -> cuLinkComplete
 *                  -> copy the cubin -> cuModuleLoadDataEx
 *   launches:      check the configuration against the device and kernel
 *                  -> opt in to dynamic shared memory -> cuLaunchKernel
 *                  -> optionally synchronize and report faults
 *   tensor maps:   check the driver's limits -> cuTensorMapEncodeTiled (an
 *                  optional entry point: drivers before CUDA 12 lack it)
 *
 * Each call that needs a context brackets its driver calls with enter() and
 * leave(), which push the handle's context only when another one is current,
 * so the calling thread's context stack is left as it was found. */
#include "cuda_rt.h"

#include "util.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    JIT_LOG_BYTES = 64 * 1024,  /* per log buffer; longer logs are truncated by the driver */
    MAX_JIT_OPTIONS = 8,
};

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function and data pointers differ in size");

struct NrCudaFunction {
    NrCudaFunction *next;
    NrCuFunction handle;
    NrCudaFuncInfo info;
    char name[];
};

struct NrCudaModule {
    NrCuModule handle;
    unsigned char *cubin;
    size_t cubin_size;
    char *log;                 /* JIT info log, never NULL */
    NrCudaFunction *funcs;     /* functions looked up so far */
};

struct NrCuda {
    void *lib;                 /* dlopen handle; NULL with a resolver */
    char lib_name[256];        /* for messages */
    int initialized;           /* cuInit succeeded */
    NrCuDriver drv;
    NrCudaContextMode mode;
    NrCuDevice dev;
    NrCuContext ctx;
    int retained;              /* we hold a reference on the primary context */
    NrCudaDeviceInfo info;
    NrCuResult last;           /* last failing CUresult */
    int faulted;               /* a sticky error was seen */
    char *err;                 /* message of the last failure (malloc'd) or NULL */
    /* cuTensorMapEncodeTiled, optional (CUDA 12+): NULL when the driver lacks it */
    NrCuTensorMapEncodeTiled encode_tiled;
};

/* ---- messages ---- */

/* A growable malloc'd string. */
typedef struct Str {
    char *p;
    size_t len, cap;
} Str;

static void str_vprintf(Str *s, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if (s->len + (size_t)n + 1 > s->cap) {
        size_t cap = (s->len + (size_t)n + 1) * 2;
        char *p = realloc(s->p, cap);
        if (!p) nr_fatal_oom();
        s->p = p;
        s->cap = cap;
    }
    vsnprintf(s->p + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
}

static void str_printf(Str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void str_printf(Str *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    str_vprintf(s, fmt, ap);
    va_end(ap);
}

static void set_error(NrCuda *cu, Str *s) {
    free(cu->err);
    cu->err = s->p ? s->p : NULL;
}

static NrCudaStatus fail(NrCuda *cu, NrCudaStatus st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static NrCudaStatus fail(NrCuda *cu, NrCudaStatus st, const char *fmt, ...) {
    Str s = {0};
    va_list ap;
    va_start(ap, fmt);
    str_vprintf(&s, fmt, ap);
    va_end(ap);
    set_error(cu, &s);
    return st;
}

/* Names of the results declared in cuda_rt.h, for drivers that cannot name
 * them (the toolkit's stub library, very old drivers). */
static const struct {
    NrCuResult r;
    const char *name;
} RESULT_NAMES[] = {
    {NR_CU_SUCCESS, "CUDA_SUCCESS"},
    {NR_CU_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
    {NR_CU_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
    {NR_CU_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {NR_CU_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY"},
    {NR_CU_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
    {NR_CU_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
    {NR_CU_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
    {NR_CU_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
    {NR_CU_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {NR_CU_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE"},
    {NR_CU_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
    {NR_CU_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {NR_CU_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
    {NR_CU_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
    {NR_CU_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {NR_CU_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"},
    {NR_CU_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT"},
    {NR_CU_ERROR_ASSERT, "CUDA_ERROR_ASSERT"},
    {NR_CU_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
    {NR_CU_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    {NR_CU_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS"},
    {NR_CU_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE"},
    {NR_CU_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC"},
    {NR_CU_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
    {NR_CU_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
};

const char *nr_cuda_result_name(const NrCuda *cu, NrCuResult r, char *buf, size_t size) {
    const char *s = NULL;
    if (cu->drv.GetErrorName && cu->drv.GetErrorName(r, &s) == NR_CU_SUCCESS && s) return s;
    for (size_t i = 0; i < NR_COUNTOF(RESULT_NAMES); i++)
        if (RESULT_NAMES[i].r == r) return RESULT_NAMES[i].name;
    snprintf(buf, size, "CUDA_ERROR_%d", r);
    return buf;
}

static const char *result_string(const NrCuda *cu, NrCuResult r) {
    const char *s = NULL;
    if (cu->drv.GetErrorString && cu->drv.GetErrorString(r, &s) == NR_CU_SUCCESS && s) return s;
    return "unknown error";
}

/* Errors after which the context cannot be used again. */
static int is_sticky(NrCuResult r) {
    switch (r) {
    case NR_CU_ERROR_ILLEGAL_ADDRESS:
    case NR_CU_ERROR_LAUNCH_TIMEOUT:
    case NR_CU_ERROR_ASSERT:
    case NR_CU_ERROR_HARDWARE_STACK_ERROR:
    case NR_CU_ERROR_ILLEGAL_INSTRUCTION:
    case NR_CU_ERROR_MISALIGNED_ADDRESS:
    case NR_CU_ERROR_INVALID_ADDRESS_SPACE:
    case NR_CU_ERROR_INVALID_PC:
    case NR_CU_ERROR_LAUNCH_FAILED:
    case NR_CU_ERROR_ECC_UNCORRECTABLE:
        return 1;
    default:
        return 0;
    }
}

/* Drop trailing blank space (JIT logs end in newlines). */
static size_t trimmed_len(const char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    return n;
}

/* Record a failed driver call: "<what> failed: NAME: string[; hint][\n<log>]".
 * A sticky error turns the status into NR_CUDA_ERR_FAULT. */
static NrCudaStatus drv_fail(NrCuda *cu, NrCudaStatus st, NrCuResult r, const char *log, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static NrCudaStatus drv_fail(NrCuda *cu, NrCudaStatus st, NrCuResult r, const char *log, const char *fmt, ...) {
    Str s = {0};
    char buf[32];
    va_list ap;
    va_start(ap, fmt);
    str_vprintf(&s, fmt, ap);
    va_end(ap);
    str_printf(&s, " failed: %s: %s", nr_cuda_result_name(cu, r, buf, sizeof buf), result_string(cu, r));
    if (is_sticky(r)) {
        str_printf(&s, "; %sthe CUDA context is unusable from now on (restart the process to use the GPU again)",
                   cu->faulted ? "a kernel faulted earlier and " : "");
        cu->faulted = 1;
        st = NR_CUDA_ERR_FAULT;
    } else if (r == NR_CU_ERROR_LAUNCH_OUT_OF_RESOURCES) {
        str_printf(&s, " (the kernel needs more registers or shared memory than this launch allows)");
    }
    if (log && trimmed_len(log)) str_printf(&s, "\n%.*s", (int)trimmed_len(log), log);
    cu->last = r;
    set_error(cu, &s);
    return st;
}

const char *nr_cuda_error(const NrCuda *cu) { return cu && cu->err ? cu->err : ""; }
NrCuResult nr_cuda_last_result(const NrCuda *cu) { return cu->last; }

void nr_cuda_report(const NrCuda *cu, NrDiags *d, NrLoc loc) { nr_error(d, loc, "%s", nr_cuda_error(cu)); }

/* ---- context scope ---- */

/* Make cu's context current for the calls that follow; *pushed says whether
 * leave() must pop it. */
static NrCudaStatus enter(NrCuda *cu, int *pushed) {
    NrCuContext cur = NULL;
    *pushed = 0;
    NrCuResult r = cu->drv.CtxGetCurrent(&cur);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxGetCurrent");
    if (cur == cu->ctx) return NR_CUDA_OK;
    r = cu->drv.CtxPushCurrent(cu->ctx);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxPushCurrent");
    *pushed = 1;
    return NR_CUDA_OK;
}

static void leave(NrCuda *cu, int pushed) {
    NrCuContext popped;
    if (pushed) (void)cu->drv.CtxPopCurrent(&popped);
}

NrCudaStatus nr_cuda_push_context(NrCuda *cu) {
    NrCuResult r = cu->drv.CtxPushCurrent(cu->ctx);
    return r ? drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxPushCurrent") : NR_CUDA_OK;
}

NrCudaStatus nr_cuda_pop_context(NrCuda *cu) {
    NrCuContext popped;
    NrCuResult r = cu->drv.CtxPopCurrent(&popped);
    return r ? drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxPopCurrent") : NR_CUDA_OK;
}

/* ---- opening ---- */

void nr_cuda_config_default(NrCudaConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->mode = NR_CUDA_PRIMARY_CONTEXT;
}

static void *lookup(NrCuda *cu, const NrCudaConfig *cfg, const char *sym) {
    if (!sym) return NULL;
    if (cfg->resolve) return cfg->resolve(cfg->resolve_user, sym);
    return dlsym(cu->lib, sym);
}

static NrCudaStatus resolve_entry_points(NrCuda *cu, const NrCudaConfig *cfg) {
    void *p;
#define NR_CU_RESOLVE(field, sym, alt, params)                                                               \
    p = lookup(cu, cfg, sym);                                                                                \
    if (!p) p = lookup(cu, cfg, alt);                                                                        \
    if (!p)                                                                                                  \
        return fail(cu, NR_CUDA_NO_DRIVER, "the NVIDIA driver %s lacks the entry point %s (the driver is too old)", \
                    cu->lib_name, sym);                                                                      \
    memcpy(&cu->drv.field, &p, sizeof p);
    NR_CU_ENTRY_POINTS(NR_CU_RESOLVE)
#undef NR_CU_RESOLVE
    p = lookup(cu, cfg, "cuTensorMapEncodeTiled"); /* optional: TMA only */
    memcpy(&cu->encode_tiled, &p, sizeof p);
    return NR_CUDA_OK;
}

static NrCudaStatus load_driver(NrCuda *cu, const NrCudaConfig *cfg) {
    if (cfg->resolve) {
        snprintf(cu->lib_name, sizeof cu->lib_name, "(resolved by the embedding program)");
        return resolve_entry_points(cu, cfg);
    }
    const char *names[2] = {cfg->driver_path ? cfg->driver_path : "libcuda.so.1",
                            cfg->driver_path ? NULL : "libcuda.so"};
    char first_error[512] = "";
    for (int i = 0; i < 2 && names[i] && !cu->lib; i++) {
        cu->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!cu->lib && i == 0) {
            const char *e = dlerror();
            snprintf(first_error, sizeof first_error, "%s", e ? e : "unknown error");
        }
        if (cu->lib) snprintf(cu->lib_name, sizeof cu->lib_name, "%s", names[i]);
    }
    if (!cu->lib)
        return fail(cu, NR_CUDA_NO_DRIVER, "no NVIDIA driver found (%s could not be loaded: %s)", names[0],
                    first_error);
    return resolve_entry_points(cu, cfg);
}

static NrCudaStatus init_driver(NrCuda *cu) {
    char buf[32];
    NrCuResult r = cu->drv.Init(0);
    if (r == NR_CU_ERROR_STUB_LIBRARY)
        return fail(cu, NR_CUDA_NO_DRIVER,
                    "no NVIDIA driver found (%s is the CUDA toolkit's stub library, not a driver: cuInit failed: "
                    "%s: %s)",
                    cu->lib_name, nr_cuda_result_name(cu, r, buf, sizeof buf), result_string(cu, r));
    if (r == NR_CU_ERROR_NO_DEVICE)
        return fail(cu, NR_CUDA_NO_DEVICE, "no CUDA device (cuInit failed: %s: %s)",
                    nr_cuda_result_name(cu, r, buf, sizeof buf), result_string(cu, r));
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuInit");
    cu->initialized = 1;
    r = cu->drv.DriverGetVersion(&cu->info.driver_version);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDriverGetVersion");
    return NR_CUDA_OK;
}

static NrCudaStatus bind_primary(NrCuda *cu, int ordinal) {
    int count = 0;
    NrCuResult r = cu->drv.DeviceGetCount(&count);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDeviceGetCount");
    if (count <= 0) return fail(cu, NR_CUDA_NO_DEVICE, "no CUDA device");
    if (ordinal < 0 || ordinal >= count)
        return fail(cu, NR_CUDA_NO_DEVICE, "CUDA device %d does not exist (%d device%s found)", ordinal, count,
                    count == 1 ? "" : "s");
    r = cu->drv.DeviceGet(&cu->dev, ordinal);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDeviceGet(%d)", ordinal);
    r = cu->drv.DevicePrimaryCtxRetain(&cu->ctx, cu->dev);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDevicePrimaryCtxRetain");
    cu->retained = 1;
    cu->info.ordinal = ordinal;
    return NR_CUDA_OK;
}

static NrCudaStatus bind_current(NrCuda *cu) {
    NrCuResult r = cu->drv.CtxGetCurrent(&cu->ctx);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxGetCurrent");
    if (!cu->ctx)
        return fail(cu, NR_CUDA_ERR_INVALID,
                    "no CUDA context is current on the calling thread (the current-context mode needs one)");
    r = cu->drv.CtxGetDevice(&cu->dev);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuCtxGetDevice");
    /* Device handles are ordinals in every driver so far. */
    cu->info.ordinal = (int)cu->dev;
    return NR_CUDA_OK;
}

/* Device attributes read at open; `required` ones fail the open. */
#define INFO_AT(field) offsetof(NrCudaDeviceInfo, field)
static const struct DeviceAttr {
    int attr;
    size_t offset;
    int required;
} DEVICE_ATTRS[] = {
    {NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, INFO_AT(cc_major), 1},
    {NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, INFO_AT(cc_minor), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, INFO_AT(sm_count), 1},
    {NR_CU_DEVICE_ATTRIBUTE_WARP_SIZE, INFO_AT(warp_size), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, INFO_AT(max_threads_per_block), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, INFO_AT(max_block_dim), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, INFO_AT(max_block_dim) + sizeof(int), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, INFO_AT(max_block_dim) + 2 * sizeof(int), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, INFO_AT(max_grid_dim), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, INFO_AT(max_grid_dim) + sizeof(int), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, INFO_AT(max_grid_dim) + 2 * sizeof(int), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, INFO_AT(max_shared_per_block), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, INFO_AT(max_shared_per_block_optin), 0},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, INFO_AT(max_shared_per_sm), 0},
    {NR_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, INFO_AT(reserved_shared_per_block), 0},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, INFO_AT(regs_per_block), 1},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, INFO_AT(regs_per_sm), 0},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, INFO_AT(max_threads_per_sm), 0},
    {NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, INFO_AT(max_blocks_per_sm), 0},
    {NR_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, INFO_AT(l2_bytes), 0},
    {NR_CU_DEVICE_ATTRIBUTE_CLOCK_RATE, INFO_AT(clock_khz), 0},
    {NR_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, INFO_AT(mem_clock_khz), 0},
    {NR_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, INFO_AT(mem_bus_width_bits), 0},
};
#undef INFO_AT

static NrCudaStatus query_device(NrCuda *cu) {
    NrCudaDeviceInfo *in = &cu->info;
    NrCuResult r = cu->drv.DeviceGetName(in->name, (int)sizeof in->name, cu->dev);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDeviceGetName");
    in->name[sizeof in->name - 1] = 0;
    for (size_t i = 0; i < NR_COUNTOF(DEVICE_ATTRS); i++) {
        int v = 0;
        r = cu->drv.DeviceGetAttribute(&v, DEVICE_ATTRS[i].attr, cu->dev);
        if (r != NR_CU_SUCCESS && DEVICE_ATTRS[i].required)
            return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDeviceGetAttribute(%d)", DEVICE_ATTRS[i].attr);
        if (r != NR_CU_SUCCESS) v = 0;
        memcpy((char *)in + DEVICE_ATTRS[i].offset, &v, sizeof v);
    }
    /* Devices without opt-in report 0: their limit is the plain one. */
    if (in->max_shared_per_block_optin < in->max_shared_per_block)
        in->max_shared_per_block_optin = in->max_shared_per_block;
    r = cu->drv.DeviceTotalMem(&in->total_mem_bytes, cu->dev);
    if (r != NR_CU_SUCCESS) return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuDeviceTotalMem");
    return NR_CUDA_OK;
}

NrCudaStatus nr_cuda_open(const NrCudaConfig *cfg_in, NrCuda **out, char *err, size_t errsize) {
    NrCudaConfig cfg;
    if (cfg_in) cfg = *cfg_in;
    else nr_cuda_config_default(&cfg);
    *out = NULL;
    if (errsize) err[0] = 0;
    NrCuda *cu = calloc(1, sizeof *cu);
    if (!cu) nr_fatal_oom();
    cu->mode = cfg.mode;
    NrCudaStatus st = load_driver(cu, &cfg);
    if (st == NR_CUDA_OK) st = init_driver(cu);
    if (st == NR_CUDA_OK) st = cfg.mode == NR_CUDA_CURRENT_CONTEXT ? bind_current(cu) : bind_primary(cu, cfg.device);
    if (st == NR_CUDA_OK) st = query_device(cu);
    if (st != NR_CUDA_OK) {
        if (errsize) snprintf(err, errsize, "%s", nr_cuda_error(cu));
        nr_cuda_close(cu);
        return st;
    }
    *out = cu;
    return NR_CUDA_OK;
}

void nr_cuda_close(NrCuda *cu) {
    if (!cu) return;
    if (cu->retained) (void)cu->drv.DevicePrimaryCtxRelease(cu->dev);
    /* Once initialised, the driver keeps threads and state of its own that
     * outlive this handle; unloading it under them is not safe, so the
     * library stays loaded (dlopen counts references). */
    if (cu->lib && !cu->initialized) dlclose(cu->lib);
    free(cu->err);
    free(cu);
}

const NrCudaDeviceInfo *nr_cuda_device_info(const NrCuda *cu) { return &cu->info; }
NrCuContext nr_cuda_context(const NrCuda *cu) { return cu->ctx; }
const NrCuDriver *nr_cuda_driver(const NrCuda *cu) { return &cu->drv; }

/* ---- modules ---- */

void nr_cuda_jit_options_default(NrCudaJitOptions *o) {
    memset(o, 0, sizeof *o);
    o->opt_level = -1;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Whether image[0..size) is a whole ELF64 cubin or fatbinary, so that the
 * driver (which is given no size) cannot read past its end.  Returns NULL if
 * so, else what is wrong. */
static const char *check_image(const unsigned char *p, size_t size) {
    if (size >= 16 && le(p, 4) == 0xba55ed50u) {  /* fatbinary: magic, version, header size, body size */
        uint64_t hdr = le(p + 6, 2), body = le(p + 8, 8);
        if (hdr < 16 || hdr > size || body > size - hdr) return "truncated fatbinary";
        return NULL;
    }
    if (size < 64 || memcmp(p, "\177ELF", 4) != 0) return "not a cubin (no ELF header)";
    if (p[4] != 2 || p[5] != 1) return "not a 64-bit little-endian ELF cubin";
    uint64_t phoff = le(p + 32, 8), shoff = le(p + 40, 8);
    uint64_t phsize = le(p + 54, 2) * le(p + 56, 2), shsize = le(p + 58, 2) * le(p + 60, 2);
    if (phoff > size || phsize > size - phoff || shoff > size || shsize > size - shoff) return "truncated cubin";
    return NULL;
}

static NrCudaModule *module_new(void) {
    NrCudaModule *m = calloc(1, sizeof *m);
    if (!m) nr_fatal_oom();
    m->log = calloc(1, 1);
    if (!m->log) nr_fatal_oom();
    return m;
}

static void module_free(NrCudaModule *m) {
    for (NrCudaFunction *f = m->funcs, *next; f; f = next) {
        next = f->next;
        free(f);
    }
    free(m->cubin);
    free(m->log);
    free(m);
}

/* Load m->cubin into the current context.  Precondition: inside enter(). */
static NrCudaStatus load_image(NrCuda *cu, NrCudaModule *m) {
    const char *bad = check_image(m->cubin, m->cubin_size);
    if (bad) return fail(cu, NR_CUDA_ERR_INVALID, "cannot load module: %s", bad);
    char *elog = calloc(1, JIT_LOG_BYTES);
    if (!elog) nr_fatal_oom();
    int opts[2] = {NR_CU_JIT_ERROR_LOG_BUFFER, NR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {elog, (void *)(uintptr_t)JIT_LOG_BYTES};
    NrCuResult r = cu->drv.ModuleLoadDataEx(&m->handle, m->cubin, 2, opts, vals);
    NrCudaStatus st = NR_CUDA_OK;
    if (r != NR_CU_SUCCESS) {
        elog[JIT_LOG_BYTES - 1] = 0;
        st = drv_fail(cu, NR_CUDA_ERR_JIT, r, elog, "cuModuleLoadDataEx");
    }
    free(elog);
    return st;
}

NrCudaStatus nr_cuda_module_load_cubin(NrCuda *cu, const void *cubin, size_t size, NrCudaModule **out) {
    *out = NULL;
    if (!cubin || size == 0) return fail(cu, NR_CUDA_ERR_INVALID, "cannot load module: empty cubin");
    NrCudaModule *m = module_new();
    m->cubin = malloc(size);
    if (!m->cubin) nr_fatal_oom();
    memcpy(m->cubin, cubin, size);
    m->cubin_size = size;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st == NR_CUDA_OK) {
        st = load_image(cu, m);
        leave(cu, pushed);
    }
    if (st != NR_CUDA_OK) {
        module_free(m);
        return st;
    }
    *out = m;
    return NR_CUDA_OK;
}

/* Options for cuLinkCreate.  The size options are passed by value in the
 * pointer slots, as the driver API specifies. */
static unsigned link_options(const NrCudaJitOptions *o, char *info, char *elog, int *keys, void **vals) {
    unsigned n = 0;
    keys[n] = NR_CU_JIT_INFO_LOG_BUFFER, vals[n++] = info;
    keys[n] = NR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, vals[n++] = (void *)(uintptr_t)JIT_LOG_BYTES;
    keys[n] = NR_CU_JIT_ERROR_LOG_BUFFER, vals[n++] = elog;
    keys[n] = NR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, vals[n++] = (void *)(uintptr_t)JIT_LOG_BYTES;
    keys[n] = NR_CU_JIT_LOG_VERBOSE, vals[n++] = (void *)(uintptr_t)(o->verbose ? 1 : 0);
    if (o->opt_level >= 0) keys[n] = NR_CU_JIT_OPTIMIZATION_LEVEL, vals[n++] = (void *)(uintptr_t)o->opt_level;
    if (o->max_registers > 0) keys[n] = NR_CU_JIT_MAX_REGISTERS, vals[n++] = (void *)(uintptr_t)o->max_registers;
    if (o->line_info) keys[n] = NR_CU_JIT_GENERATE_LINE_INFO, vals[n++] = (void *)(uintptr_t)1;
    NR_ASSERT(n <= MAX_JIT_OPTIONS);
    return n;
}

/* PTX -> cubin through the driver's linker; m->cubin receives a copy.
 * Precondition: inside enter(). */
static NrCudaStatus link_ptx(NrCuda *cu, const char *src, size_t len, const NrCudaJitOptions *o,
                             NrCudaModule *m) {
    char *info = calloc(1, JIT_LOG_BYTES), *elog = calloc(1, JIT_LOG_BYTES);
    if (!info || !elog) nr_fatal_oom();
    int keys[MAX_JIT_OPTIONS];
    void *vals[MAX_JIT_OPTIONS];
    unsigned n = link_options(o, info, elog, keys, vals);
    NrCuLinkState state = NULL;
    NrCudaStatus st = NR_CUDA_OK;
    NrCuResult r = cu->drv.LinkCreate(n, keys, vals, &state);
    if (r != NR_CU_SUCCESS) st = drv_fail(cu, NR_CUDA_ERR_JIT, r, NULL, "cuLinkCreate");
    if (st == NR_CUDA_OK) {
        r = cu->drv.LinkAddData(state, NR_CU_JIT_INPUT_PTX, (void *)src, len + 1, "nereid.ptx", 0, NULL, NULL);
        elog[JIT_LOG_BYTES - 1] = 0;
        if (r != NR_CU_SUCCESS) st = drv_fail(cu, NR_CUDA_ERR_JIT, r, elog, "cuLinkAddData");
    }
    void *cubin = NULL;
    size_t size = 0;
    if (st == NR_CUDA_OK) {
        r = cu->drv.LinkComplete(state, &cubin, &size);
        elog[JIT_LOG_BYTES - 1] = 0;
        if (r != NR_CU_SUCCESS) st = drv_fail(cu, NR_CUDA_ERR_JIT, r, elog, "cuLinkComplete");
        else if (!cubin || size == 0) st = fail(cu, NR_CUDA_ERR_JIT, "cuLinkComplete produced no cubin");
    }
    if (st == NR_CUDA_OK) {
        /* The linker owns its output: copy it before cuLinkDestroy. */
        m->cubin = malloc(size);
        if (!m->cubin) nr_fatal_oom();
        memcpy(m->cubin, cubin, size);
        m->cubin_size = size;
        info[JIT_LOG_BYTES - 1] = 0;
        size_t ln = trimmed_len(info);
        free(m->log);
        m->log = malloc(ln + 1);
        if (!m->log) nr_fatal_oom();
        memcpy(m->log, info, ln);
        m->log[ln] = 0;
    }
    if (state) (void)cu->drv.LinkDestroy(state);
    free(info);
    free(elog);
    return st;
}

NrCudaStatus nr_cuda_module_load_ptx(NrCuda *cu, const char *ptx, size_t len, const NrCudaJitOptions *opts,
                                     NrCudaModule **out) {
    NrCudaJitOptions o;
    *out = NULL;
    if (opts) o = *opts;
    else nr_cuda_jit_options_default(&o);
    if (!ptx || len == 0) return fail(cu, NR_CUDA_ERR_INVALID, "cannot load module: empty PTX");
    if (o.opt_level < -1 || o.opt_level > 4)
        return fail(cu, NR_CUDA_ERR_INVALID, "JIT optimization level must be 0..4, got %d", o.opt_level);
    if (o.max_registers < 0 || o.max_registers > 255)
        return fail(cu, NR_CUDA_ERR_INVALID, "JIT register limit must be 0..255, got %d", o.max_registers);
    /* The driver reads PTX up to a NUL byte. */
    char *src = malloc(len + 1);
    if (!src) nr_fatal_oom();
    memcpy(src, ptx, len);
    src[len] = 0;
    NrCudaModule *m = module_new();
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st == NR_CUDA_OK) {
        st = link_ptx(cu, src, len, &o, m);
        if (st == NR_CUDA_OK) st = load_image(cu, m);
        leave(cu, pushed);
    }
    free(src);
    if (st != NR_CUDA_OK) {
        module_free(m);
        return st;
    }
    *out = m;
    return NR_CUDA_OK;
}

void nr_cuda_module_unload(NrCuda *cu, NrCudaModule *m) {
    if (!m) return;
    int pushed;
    if (m->handle && enter(cu, &pushed) == NR_CUDA_OK) {
        (void)cu->drv.ModuleUnload(m->handle);
        leave(cu, pushed);
    }
    module_free(m);
}

const void *nr_cuda_module_cubin(const NrCudaModule *m, size_t *size) {
    *size = m->cubin_size;
    return m->cubin;
}

const char *nr_cuda_module_log(const NrCudaModule *m) { return m->log; }

/* ---- functions ---- */

static const struct FuncAttr {
    int attr;
    size_t offset;
    const char *name;
} FUNC_ATTRS[] = {
    {NR_CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(NrCudaFuncInfo, num_regs), "NUM_REGS"},
    {NR_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(NrCudaFuncInfo, local_bytes), "LOCAL_SIZE_BYTES"},
    {NR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(NrCudaFuncInfo, static_shared_bytes), "SHARED_SIZE_BYTES"},
    {NR_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(NrCudaFuncInfo, const_bytes), "CONST_SIZE_BYTES"},
    {NR_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(NrCudaFuncInfo, max_threads_per_block),
     "MAX_THREADS_PER_BLOCK"},
    {NR_CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(NrCudaFuncInfo, ptx_version), "PTX_VERSION"},
    {NR_CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(NrCudaFuncInfo, binary_version), "BINARY_VERSION"},
    {NR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, offsetof(NrCudaFuncInfo, max_dynamic_shared_bytes),
     "MAX_DYNAMIC_SHARED_SIZE_BYTES"},
};

/* Precondition: inside enter(). */
static NrCudaStatus query_function(NrCuda *cu, NrCudaFunction *f) {
    for (size_t i = 0; i < NR_COUNTOF(FUNC_ATTRS); i++) {
        int v = 0;
        NrCuResult r = cu->drv.FuncGetAttribute(&v, FUNC_ATTRS[i].attr, f->handle);
        if (r != NR_CU_SUCCESS)
            return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuFuncGetAttribute(%s) of kernel '%s'",
                            FUNC_ATTRS[i].name, f->name);
        memcpy((char *)&f->info + FUNC_ATTRS[i].offset, &v, sizeof v);
    }
    return NR_CUDA_OK;
}

NrCudaStatus nr_cuda_get_function(NrCuda *cu, NrCudaModule *m, const char *name, NrCudaFunction **out) {
    *out = NULL;
    if (!m || !name || !*name) return fail(cu, NR_CUDA_ERR_INVALID, "no module or kernel name given");
    for (NrCudaFunction *f = m->funcs; f; f = f->next)
        if (strcmp(f->name, name) == 0) {
            *out = f;
            return NR_CUDA_OK;
        }
    size_t len = strlen(name);
    NrCudaFunction *f = calloc(1, sizeof *f + len + 1);
    if (!f) nr_fatal_oom();
    memcpy(f->name, name, len + 1);
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st == NR_CUDA_OK) {
        NrCuResult r = cu->drv.ModuleGetFunction(&f->handle, m->handle, name);
        if (r == NR_CU_ERROR_NOT_FOUND) st = fail(cu, NR_CUDA_ERR_INVALID, "no kernel named '%s' in the module", name);
        else if (r != NR_CU_SUCCESS) st = drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuModuleGetFunction('%s')", name);
        if (st == NR_CUDA_OK) st = query_function(cu, f);
        leave(cu, pushed);
    }
    if (st != NR_CUDA_OK) {
        free(f);
        return st;
    }
    f->next = m->funcs;
    m->funcs = f;
    *out = f;
    return NR_CUDA_OK;
}

const NrCudaFuncInfo *nr_cuda_function_info(const NrCudaFunction *f) { return &f->info; }
const char *nr_cuda_function_name(const NrCudaFunction *f) { return f->name; }
NrCuFunction nr_cuda_function_handle(const NrCudaFunction *f) { return f->handle; }

NrCudaStatus nr_cuda_function_set_dynamic_shared(NrCuda *cu, NrCudaFunction *f, size_t bytes) {
    size_t stat = (size_t)f->info.static_shared_bytes;
    size_t limit = (size_t)cu->info.max_shared_per_block_optin;
    if (bytes > (size_t)INT_MAX || stat + bytes > limit)
        return fail(cu, NR_CUDA_ERR_INVALID,
                    "kernel '%s' needs %zu bytes of shared memory per block (%zu static + %zu dynamic), but %s "
                    "allows at most %zu",
                    f->name, stat + bytes, stat, bytes, cu->info.name, limit);
    if (bytes <= (size_t)f->info.max_dynamic_shared_bytes) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st != NR_CUDA_OK) return st;
    NrCuResult r = cu->drv.FuncSetAttribute(f->handle, NR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)bytes);
    leave(cu, pushed);
    if (r != NR_CU_SUCCESS)
        return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL,
                        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = %zu) of kernel '%s'", bytes, f->name);
    f->info.max_dynamic_shared_bytes = (int)bytes;
    return NR_CUDA_OK;
}

/* ---- launches ---- */

static NrCudaStatus check_launch(NrCuda *cu, const NrCudaFunction *f, const NrCudaLaunchConfig *lc) {
    static const char axis[3] = {'x', 'y', 'z'};
    const unsigned *b = lc->block;
    if (b[0] == 0 || b[1] == 0 || b[2] == 0)
        return fail(cu, NR_CUDA_ERR_INVALID, "block dimensions of kernel '%s' must be positive, got %ux%ux%u",
                    f->name, b[0], b[1], b[2]);
    for (int i = 0; i < 3; i++) {
        int bmax = cu->info.max_block_dim[i], gmax = cu->info.max_grid_dim[i];
        if (bmax > 0 && b[i] > (unsigned)bmax)
            return fail(cu, NR_CUDA_ERR_INVALID, "block dimension %c = %u of kernel '%s' exceeds the device limit %d",
                        axis[i], b[i], f->name, bmax);
        if (gmax > 0 && lc->grid[i] > (unsigned)gmax)
            return fail(cu, NR_CUDA_ERR_INVALID, "grid dimension %c = %u of kernel '%s' exceeds the device limit %d",
                        axis[i], lc->grid[i], f->name, gmax);
    }
    unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    int tmax = f->info.max_threads_per_block;
    if (tmax > 0 && threads > (unsigned long long)tmax)
        return fail(cu, NR_CUDA_ERR_INVALID,
                    "a block of %llu threads exceeds the %d threads per block kernel '%s' allows (it uses %d "
                    "registers per thread)",
                    threads, tmax, f->name, f->info.num_regs);
    return NR_CUDA_OK;
}

NrCudaStatus nr_cuda_launch(NrCuda *cu, NrCudaFunction *f, const NrCudaLaunchConfig *lc, void **params) {
    if (!f || !lc) return fail(cu, NR_CUDA_ERR_INVALID, "launch without a kernel or configuration");
    const unsigned *g = lc->grid, *b = lc->block;
    if (g[0] == 0 || g[1] == 0 || g[2] == 0) return NR_CUDA_OK;  /* an empty grid runs no program */
    NrCudaStatus st = check_launch(cu, f, lc);
    if (st == NR_CUDA_OK && lc->shared_bytes > (unsigned)f->info.max_dynamic_shared_bytes)
        st = nr_cuda_function_set_dynamic_shared(cu, f, lc->shared_bytes);
    if (st != NR_CUDA_OK) return st;
    int pushed;
    st = enter(cu, &pushed);
    if (st != NR_CUDA_OK) return st;
    NrCuResult r = cu->drv.LaunchKernel(f->handle, g[0], g[1], g[2], b[0], b[1], b[2], lc->shared_bytes, lc->stream,
                                        params, NULL);
    if (r != NR_CU_SUCCESS) {
        leave(cu, pushed);
        return drv_fail(cu, NR_CUDA_ERR_LAUNCH, r, NULL,
                        "cuLaunchKernel of kernel '%s' (grid %ux%ux%u, block %ux%ux%u, %u bytes of dynamic shared "
                        "memory)",
                        f->name, g[0], g[1], g[2], b[0], b[1], b[2], lc->shared_bytes);
    }
    if (lc->sync) r = cu->drv.StreamSynchronize(lc->stream);
    leave(cu, pushed);
    if (r != NR_CU_SUCCESS)
        return drv_fail(cu, NR_CUDA_ERR_FAULT, r, NULL, "kernel '%s' (grid %ux%ux%u, block %ux%ux%u)", f->name, g[0],
                        g[1], g[2], b[0], b[1], b[2]);
    return NR_CUDA_OK;
}

/* ---- tensor maps ---- */

static bool why_not(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool why_not(char *why, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (n) vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

int nr_tensor_map_elem_bytes(int dtype) {
    static const int bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2}; /* UINT8 .. BFLOAT16 */
    return dtype >= 0 && dtype < (int)NR_COUNTOF(bytes) ? bytes[dtype] : 0;
}

/* NaN fill applies to the float types alone (FLOAT16 .. BFLOAT16). */
static bool is_float_map_type(int dtype) {
    return dtype >= NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && dtype <= NR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

bool nr_tensor_map_check(const NrTensorMapArgs *t, char *why, size_t n) {
    if (t->rank < 1 || t->rank > 5) return why_not(why, n, "a tensor map has 1 to 5 dimensions, not %u", t->rank);
    int esize = nr_tensor_map_elem_bytes(t->dtype);
    if (!esize) return why_not(why, n, "tensor map data type %d is not one Nereid uses (0 to 9)", t->dtype);
    if (!t->base) return why_not(why, n, "the tensor's address is null");
    if (t->base % 16)
        return why_not(why, n, "the tensor's address 0x%llx is not 16-byte aligned", (unsigned long long)t->base);
    if (t->interleave != NR_CU_TENSOR_MAP_INTERLEAVE_NONE)
        return why_not(why, n, "interleave %d (only non-interleaved maps are made)", t->interleave);
    if (t->swizzle < NR_CU_TENSOR_MAP_SWIZZLE_NONE || t->swizzle > NR_CU_TENSOR_MAP_SWIZZLE_128B)
        return why_not(why, n, "swizzle mode %d (0 to 3)", t->swizzle);
    if (t->l2_promotion < 0 || t->l2_promotion > NR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
        return why_not(why, n, "L2 promotion %d (0 to 3)", t->l2_promotion);
    if (t->oob_fill != NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
        (t->oob_fill != NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA || !is_float_map_type(t->dtype)))
        return why_not(why, n, "out-of-bounds fill %d of data type %d (NaN fill needs a float type)", t->oob_fill,
                       t->dtype);
    for (unsigned i = 0; i < t->rank; i++) {
        if (t->dims[i] < 1 || t->dims[i] > ((uint64_t)1 << 32))
            return why_not(why, n, "dimension %u has %llu elements (1 to 2^32)", i, (unsigned long long)t->dims[i]);
        if (t->box[i] < 1 || t->box[i] > 256)
            return why_not(why, n, "the box has %u elements along dimension %u (1 to 256)", t->box[i], i);
        if (t->elem_strides[i] < 1 || t->elem_strides[i] > 8)
            return why_not(why, n, "element stride %u along dimension %u (1 to 8)", t->elem_strides[i], i);
        if (i + 1 < t->rank && (t->strides[i] % 16 || t->strides[i] >= ((uint64_t)1 << 40)))
            return why_not(why, n, "the stride of dimension %u, %llu bytes, is not a multiple of 16 below 2^40", i + 1,
                           (unsigned long long)t->strides[i]);
    }
    uint64_t inner = (uint64_t)t->box[0] * (uint64_t)esize;
    if (inner % 16) return why_not(why, n, "the box's rows of %llu bytes are not a multiple of 16", (unsigned long long)inner);
    int sw = t->swizzle ? 16 << t->swizzle : 0; /* 32, 64, 128 bytes */
    if (sw && inner > (uint64_t)sw)
        return why_not(why, n, "the box's rows of %llu bytes are wider than the %d-byte swizzle", (unsigned long long)inner,
                       sw);
    return true;
}

NrCuTensorMapEncodeTiled nr_cuda_tensor_map_encoder(const NrCuda *cu) { return cu->encode_tiled; }

NrCuResult nr_tensor_map_encode_with(NrCuTensorMapEncodeTiled encode, const NrTensorMapArgs *t, NrCuTensorMap *out) {
    memset(out, 0, sizeof *out);
    return encode(out, t->dtype, t->rank, (void *)(uintptr_t)t->base, t->dims, t->strides, t->box, t->elem_strides,
                  t->interleave, t->swizzle, t->l2_promotion, t->oob_fill);
}

NrCudaStatus nr_cuda_tensor_map_tiled(NrCuda *cu, const NrTensorMapArgs *t, NrCuTensorMap *out) {
    char why[256];
    if (!t || !out) return fail(cu, NR_CUDA_ERR_INVALID, "invalid tensor map: no description");
    if (!nr_tensor_map_check(t, why, sizeof why)) return fail(cu, NR_CUDA_ERR_INVALID, "invalid tensor map: %s", why);
    if (!cu->encode_tiled)
        return fail(cu, NR_CUDA_NO_DRIVER, "the NVIDIA driver %s lacks cuTensorMapEncodeTiled (TMA needs CUDA 12 or "
                                           "newer)", cu->lib_name);
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st != NR_CUDA_OK) return st;
    NrCuResult r = nr_tensor_map_encode_with(cu->encode_tiled, t, out);
    leave(cu, pushed);
    return r ? drv_fail(cu, NR_CUDA_ERR_INVALID, r, NULL, "cuTensorMapEncodeTiled") : NR_CUDA_OK;
}

/* ---- simple calls ---- */

/* Finish a call made inside enter(): leave, and record a failure. */
static NrCudaStatus finish(NrCuda *cu, int pushed, NrCuResult r, const char *what) {
    leave(cu, pushed);
    return r == NR_CU_SUCCESS ? NR_CUDA_OK : drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "%s", what);
}

NrCudaStatus nr_cuda_synchronize(NrCuda *cu) {
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.CtxSynchronize(), "cuCtxSynchronize");
}

NrCudaStatus nr_cuda_alloc(NrCuda *cu, size_t bytes, NrCuDevPtr *ptr) {
    *ptr = 0;
    if (bytes == 0) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st) return st;
    NrCuResult r = cu->drv.MemAlloc(ptr, bytes);
    leave(cu, pushed);
    if (r != NR_CU_SUCCESS) {
        *ptr = 0;
        return drv_fail(cu, NR_CUDA_ERR_DRIVER, r, NULL, "cuMemAlloc of %zu bytes", bytes);
    }
    return NR_CUDA_OK;
}

NrCudaStatus nr_cuda_free(NrCuda *cu, NrCuDevPtr ptr) {
    if (!ptr) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.MemFree(ptr), "cuMemFree");
}

NrCudaStatus nr_cuda_memcpy_htod(NrCuda *cu, NrCuDevPtr dst, const void *src, size_t bytes) {
    if (bytes == 0) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

NrCudaStatus nr_cuda_memcpy_dtoh(NrCuda *cu, void *dst, NrCuDevPtr src, size_t bytes) {
    if (bytes == 0) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

NrCudaStatus nr_cuda_memset8(NrCuda *cu, NrCuDevPtr dst, uint8_t value, size_t count) {
    if (count == 0) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.MemsetD8(dst, value, count), "cuMemsetD8");
}

NrCudaStatus nr_cuda_memset32(NrCuda *cu, NrCuDevPtr dst, uint32_t value, size_t count) {
    if (count == 0) return NR_CUDA_OK;
    if (dst % 4 != 0) return fail(cu, NR_CUDA_ERR_INVALID, "32-bit memset of a device address not 4-byte aligned");
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.MemsetD32(dst, value, count), "cuMemsetD32");
}

NrCudaStatus nr_cuda_stream_create(NrCuda *cu, int non_blocking, NrCuStream *out) {
    *out = NULL;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    unsigned flags = non_blocking ? NR_CU_STREAM_NON_BLOCKING : NR_CU_STREAM_DEFAULT;
    return st ? st : finish(cu, pushed, cu->drv.StreamCreate(out, flags), "cuStreamCreate");
}

NrCudaStatus nr_cuda_stream_destroy(NrCuda *cu, NrCuStream s) {
    if (!s) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.StreamDestroy(s), "cuStreamDestroy");
}

NrCudaStatus nr_cuda_stream_synchronize(NrCuda *cu, NrCuStream s) {
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.StreamSynchronize(s), "cuStreamSynchronize");
}

NrCudaStatus nr_cuda_event_create(NrCuda *cu, NrCuEvent *out) {
    *out = NULL;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.EventCreate(out, NR_CU_EVENT_DEFAULT), "cuEventCreate");
}

NrCudaStatus nr_cuda_event_destroy(NrCuda *cu, NrCuEvent e) {
    if (!e) return NR_CUDA_OK;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.EventDestroy(e), "cuEventDestroy");
}

NrCudaStatus nr_cuda_event_record(NrCuda *cu, NrCuEvent e, NrCuStream s) {
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    return st ? st : finish(cu, pushed, cu->drv.EventRecord(e, s), "cuEventRecord");
}

NrCudaStatus nr_cuda_event_elapsed(NrCuda *cu, NrCuEvent start, NrCuEvent end, float *ms) {
    *ms = 0;
    int pushed;
    NrCudaStatus st = enter(cu, &pushed);
    if (st) return st;
    NrCuResult r = cu->drv.EventSynchronize(end);
    if (r != NR_CU_SUCCESS) return finish(cu, pushed, r, "cuEventSynchronize");
    return finish(cu, pushed, cu->drv.EventElapsedTime(ms, start, end), "cuEventElapsedTime");
}
