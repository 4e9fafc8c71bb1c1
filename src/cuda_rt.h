/* cuda_rt.h - the CUDA driver runtime: load PTX, launch kernels, query devices.
 *
 * Nereid talks to the NVIDIA driver alone (libcuda.so.1, opened with dlopen
 * at run time): no CUDA headers, no runtime library, no NVRTC.  The few
 * driver types, enum values and entry-point signatures Nereid needs are
 * declared below with an NR_CU prefix; their numeric values are the driver
 * API's (cuda.h), which NVIDIA keeps stable across releases.
 *
 * An NrCuda is one handle on one device and one CUDA context:
 *   - NR_CUDA_PRIMARY_CONTEXT (default): the device's primary context,
 *     retained at open and released at close; this is the context the CUDA
 *     runtime and PyTorch use, so memory and modules are shared with them.
 *   - NR_CUDA_CURRENT_CONTEXT: the context current on the calling thread at
 *     open (not owned, never destroyed).
 * Every call makes the handle's context current for its duration (pushing it
 * only when another one is current) and restores the caller's state.
 *
 * Errors: every call returns an NrCudaStatus; on failure nr_cuda_error() holds
 * one clear message naming the failing driver call, the driver's error name
 * and string, and for PTX compilation the JIT error log, e.g.
 *     cuLinkAddData failed: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed
 *     ptxas application ptx input, line 12; error   : Unknown symbol '%r9'
 * The library never prints.
 *
 * Threads: no global mutable state.  An NrCuda (and the modules loaded through
 * it) is used by one thread at a time, like an NrContext; use one NrCuda per
 * thread or per user context.  The driver calls themselves are thread-safe. */
#ifndef NR_CUDA_RT_H
#define NR_CUDA_RT_H

#include "diag.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- driver API declarations (values from the CUDA driver API) ---- */

typedef int NrCuResult;                      /* CUresult */
typedef int NrCuDevice;                      /* CUdevice */
typedef unsigned long long NrCuDevPtr;       /* CUdeviceptr (64-bit) */
typedef struct NrCuCtxSt *NrCuContext;       /* CUcontext */
typedef struct NrCuModSt *NrCuModule;        /* CUmodule */
typedef struct NrCuFuncSt *NrCuFunction;     /* CUfunction */
typedef struct NrCuStreamSt *NrCuStream;     /* CUstream; NULL is the default stream */
typedef struct NrCuEventSt *NrCuEvent;       /* CUevent */
typedef struct NrCuLinkSt *NrCuLinkState;    /* CUlinkState */

/* CUresult values Nereid treats specially. */
enum {
    NR_CU_SUCCESS = 0,
    NR_CU_ERROR_INVALID_VALUE = 1,
    NR_CU_ERROR_OUT_OF_MEMORY = 2,
    NR_CU_ERROR_NOT_INITIALIZED = 3,
    NR_CU_ERROR_STUB_LIBRARY = 34,
    NR_CU_ERROR_NO_DEVICE = 100,
    NR_CU_ERROR_INVALID_DEVICE = 101,
    NR_CU_ERROR_INVALID_IMAGE = 200,
    NR_CU_ERROR_INVALID_CONTEXT = 201,
    NR_CU_ERROR_NO_BINARY_FOR_GPU = 209,
    NR_CU_ERROR_ECC_UNCORRECTABLE = 214,
    NR_CU_ERROR_INVALID_PTX = 218,
    NR_CU_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    NR_CU_ERROR_NOT_FOUND = 500,
    NR_CU_ERROR_NOT_READY = 600,
    NR_CU_ERROR_ILLEGAL_ADDRESS = 700,
    NR_CU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    NR_CU_ERROR_LAUNCH_TIMEOUT = 702,
    NR_CU_ERROR_ASSERT = 710,
    NR_CU_ERROR_HARDWARE_STACK_ERROR = 714,
    NR_CU_ERROR_ILLEGAL_INSTRUCTION = 715,
    NR_CU_ERROR_MISALIGNED_ADDRESS = 716,
    NR_CU_ERROR_INVALID_ADDRESS_SPACE = 717,
    NR_CU_ERROR_INVALID_PC = 718,
    NR_CU_ERROR_LAUNCH_FAILED = 719,
    NR_CU_ERROR_UNKNOWN = 999,
};

/* CUdevice_attribute */
enum {
    NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    NR_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    NR_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    NR_CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    NR_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    NR_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    NR_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    NR_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    NR_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    NR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    NR_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    NR_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    NR_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    NR_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111,
};

/* CUfunction_attribute */
enum {
    NR_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    NR_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    NR_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    NR_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    NR_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    NR_CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
    NR_CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
    NR_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* CUjit_option */
enum {
    NR_CU_JIT_MAX_REGISTERS = 0,
    NR_CU_JIT_WALL_TIME = 2,
    NR_CU_JIT_INFO_LOG_BUFFER = 3,
    NR_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    NR_CU_JIT_ERROR_LOG_BUFFER = 5,
    NR_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    NR_CU_JIT_OPTIMIZATION_LEVEL = 7,
    NR_CU_JIT_TARGET_FROM_CUCONTEXT = 8,
    NR_CU_JIT_LOG_VERBOSE = 12,
    NR_CU_JIT_GENERATE_LINE_INFO = 13,
};

/* CUjitInputType */
enum {
    NR_CU_JIT_INPUT_CUBIN = 0,
    NR_CU_JIT_INPUT_PTX = 1,
};

/* Stream and event creation flags. */
enum {
    NR_CU_STREAM_DEFAULT = 0,
    NR_CU_STREAM_NON_BLOCKING = 1,
    NR_CU_EVENT_DEFAULT = 0,
    NR_CU_EVENT_DISABLE_TIMING = 2,
};

/* The driver entry points Nereid uses:
 *     X(field, symbol, fallback symbol or NULL, parameter list)
 * Every one returns a CUresult.  The _v2 symbols are the current ABI of the
 * functions cuda.h renames with a macro; the fallback serves older drivers. */
#define NR_CU_ENTRY_POINTS(X)                                                                               \
    X(Init, "cuInit", NULL, (unsigned flags))                                                               \
    X(DriverGetVersion, "cuDriverGetVersion", NULL, (int *version))                                         \
    X(GetErrorName, "cuGetErrorName", NULL, (NrCuResult r, const char **name))                              \
    X(GetErrorString, "cuGetErrorString", NULL, (NrCuResult r, const char **str))                           \
    X(DeviceGetCount, "cuDeviceGetCount", NULL, (int *count))                                               \
    X(DeviceGet, "cuDeviceGet", NULL, (NrCuDevice *dev, int ordinal))                                       \
    X(DeviceGetName, "cuDeviceGetName", NULL, (char *name, int len, NrCuDevice dev))                        \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", NULL, (int *value, int attr, NrCuDevice dev))             \
    X(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL, (size_t *bytes, NrCuDevice dev))                         \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL, (NrCuContext *ctx, NrCuDevice dev))          \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", (NrCuDevice dev)) \
    X(CtxGetCurrent, "cuCtxGetCurrent", NULL, (NrCuContext *ctx))                                           \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", NULL, (NrCuContext ctx))                                       \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", NULL, (NrCuContext *ctx))                                        \
    X(CtxGetDevice, "cuCtxGetDevice", NULL, (NrCuDevice *dev))                                              \
    X(CtxSynchronize, "cuCtxSynchronize", NULL, (void))                                                     \
    X(LinkCreate, "cuLinkCreate_v2", NULL, (unsigned nopts, int *opts, void **vals, NrCuLinkState *state))  \
    X(LinkAddData, "cuLinkAddData_v2", NULL,                                                                \
      (NrCuLinkState state, int type, void *data, size_t size, const char *name, unsigned nopts, int *opts,  \
       void **vals))                                                                                        \
    X(LinkComplete, "cuLinkComplete", NULL, (NrCuLinkState state, void **cubin, size_t *size))              \
    X(LinkDestroy, "cuLinkDestroy", NULL, (NrCuLinkState state))                                            \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL,                                                         \
      (NrCuModule *mod, const void *image, unsigned nopts, int *opts, void **vals))                         \
    X(ModuleUnload, "cuModuleUnload", NULL, (NrCuModule mod))                                               \
    X(ModuleGetFunction, "cuModuleGetFunction", NULL, (NrCuFunction *fn, NrCuModule mod, const char *name)) \
    X(FuncGetAttribute, "cuFuncGetAttribute", NULL, (int *value, int attr, NrCuFunction fn))                \
    X(FuncSetAttribute, "cuFuncSetAttribute", NULL, (NrCuFunction fn, int attr, int value))                 \
    X(LaunchKernel, "cuLaunchKernel", NULL,                                                                 \
      (NrCuFunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,       \
       unsigned shared_bytes, NrCuStream stream, void **params, void **extra))                              \
    X(MemAlloc, "cuMemAlloc_v2", NULL, (NrCuDevPtr *ptr, size_t bytes))                                     \
    X(MemFree, "cuMemFree_v2", NULL, (NrCuDevPtr ptr))                                                      \
    X(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (NrCuDevPtr dst, const void *src, size_t bytes))                 \
    X(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *dst, NrCuDevPtr src, size_t bytes))                       \
    X(MemsetD8, "cuMemsetD8_v2", NULL, (NrCuDevPtr dst, unsigned char value, size_t count))                 \
    X(MemsetD32, "cuMemsetD32_v2", NULL, (NrCuDevPtr dst, unsigned value, size_t count))                    \
    X(StreamCreate, "cuStreamCreate", NULL, (NrCuStream *stream, unsigned flags))                           \
    X(StreamDestroy, "cuStreamDestroy_v2", NULL, (NrCuStream stream))                                       \
    X(StreamSynchronize, "cuStreamSynchronize", NULL, (NrCuStream stream))                                  \
    X(EventCreate, "cuEventCreate", NULL, (NrCuEvent *event, unsigned flags))                               \
    X(EventDestroy, "cuEventDestroy_v2", NULL, (NrCuEvent event))                                           \
    X(EventRecord, "cuEventRecord", NULL, (NrCuEvent event, NrCuStream stream))                             \
    X(EventSynchronize, "cuEventSynchronize", NULL, (NrCuEvent event))                                      \
    X(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime", (float *ms, NrCuEvent start, NrCuEvent end))

/* The resolved entry points. */
typedef struct NrCuDriver {
#define NR_CU_FIELD(field, sym, alt, params) NrCuResult (*field) params;
    NR_CU_ENTRY_POINTS(NR_CU_FIELD)
#undef NR_CU_FIELD
} NrCuDriver;

/* ---- the runtime ---- */

typedef enum NrCudaStatus {
    NR_CUDA_OK = 0,
    NR_CUDA_NO_DRIVER = 1,    /* libcuda could not be loaded, lacks an entry point, or is a stub */
    NR_CUDA_NO_DEVICE = 2,    /* no CUDA device, or the requested ordinal does not exist */
    NR_CUDA_ERR_INVALID = 3,  /* bad arguments (checked before calling the driver) */
    NR_CUDA_ERR_DRIVER = 4,   /* a driver call failed */
    NR_CUDA_ERR_JIT = 5,      /* PTX could not be compiled or linked, or a cubin loaded */
    NR_CUDA_ERR_LAUNCH = 6,   /* the driver refused a launch */
    NR_CUDA_ERR_FAULT = 7,    /* a kernel faulted (illegal address, assert...); the context is unusable */
} NrCudaStatus;

typedef enum NrCudaContextMode {
    NR_CUDA_PRIMARY_CONTEXT = 0,
    NR_CUDA_CURRENT_CONTEXT = 1,
} NrCudaContextMode;

/* Looks up a driver entry point by symbol name; returns NULL if absent. */
typedef void *(*NrCudaResolver)(void *user, const char *symbol);

typedef struct NrCudaConfig {
    int device;                /* device ordinal (primary-context mode); default 0 */
    NrCudaContextMode mode;
    const char *driver_path;   /* NULL: "libcuda.so.1", then "libcuda.so" */
    /* When set, entry points come from resolve() instead of dlopen (a driver
     * already loaded by the embedding program, or a test double). */
    NrCudaResolver resolve;
    void *resolve_user;
} NrCudaConfig;

void nr_cuda_config_default(NrCudaConfig *cfg);

typedef struct NrCudaDeviceInfo {
    int ordinal;
    char name[256];
    int cc_major, cc_minor;               /* compute capability, e.g. 9.0 */
    int sm_count;                         /* multiprocessors */
    int warp_size;
    int max_threads_per_block;
    int max_block_dim[3];
    int max_grid_dim[3];
    int max_shared_per_block;             /* without opt-in (48 KB) */
    int max_shared_per_block_optin;       /* with cuFuncSetAttribute opt-in */
    int max_shared_per_sm;
    int reserved_shared_per_block;        /* used by the driver itself */
    int regs_per_block;
    int regs_per_sm;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int l2_bytes;
    int clock_khz;                        /* 0 when the driver does not report it */
    int mem_clock_khz;
    int mem_bus_width_bits;
    size_t total_mem_bytes;
    int driver_version;                   /* e.g. 13000 for CUDA 13.0 */
} NrCudaDeviceInfo;

typedef struct NrCuda NrCuda;

/* Load the driver, initialise it and bind a device and context (cfg may be
 * NULL for the defaults).  On success returns NR_CUDA_OK with *out set; on
 * failure *out is NULL and err (if errsize > 0) holds the reason, e.g.
 *     no NVIDIA driver found (libcuda.so.1 could not be loaded: <dlerror>) */
NrCudaStatus nr_cuda_open(const NrCudaConfig *cfg, NrCuda **out, char *err, size_t errsize);
/* Release the context (primary mode).  Modules, memory, streams and events
 * should be released first.  Safe after a fault; cu may be NULL. */
void nr_cuda_close(NrCuda *cu);

/* The message of the last failing call on cu ("" if none). */
const char *nr_cuda_error(const NrCuda *cu);
/* The CUresult of the last failing driver call (NR_CU_SUCCESS if none). */
NrCuResult nr_cuda_last_result(const NrCuda *cu);
/* Record the last error as a diagnostic at loc. */
void nr_cuda_report(const NrCuda *cu, NrDiags *d, NrLoc loc);

const NrCudaDeviceInfo *nr_cuda_device_info(const NrCuda *cu);
NrCuContext nr_cuda_context(const NrCuda *cu);
/* The resolved entry points, for callers that need a driver call this
 * module does not wrap. */
const NrCuDriver *nr_cuda_driver(const NrCuda *cu);
/* Make cu's context current on the calling thread until the matching pop
 * (for code that calls the driver or the CUDA runtime itself). */
NrCudaStatus nr_cuda_push_context(NrCuda *cu);
NrCudaStatus nr_cuda_pop_context(NrCuda *cu);

/* ---- modules and functions ---- */

typedef struct NrCudaJitOptions {
    int opt_level;      /* ptxas optimization level 0..4; -1: the driver's default (4) */
    int max_registers;  /* registers per thread cap; 0: none */
    int verbose;        /* ptxas resource usage into the info log */
    int line_info;      /* keep line information (for profilers) */
} NrCudaJitOptions;

void nr_cuda_jit_options_default(NrCudaJitOptions *o);

typedef struct NrCudaModule NrCudaModule;

/* Compile PTX text (len bytes, need not be NUL-terminated) for the context's
 * device with the driver's linker, keep the cubin and load it.  opts may be
 * NULL.  Fails with NR_CUDA_ERR_JIT and the JIT error log. */
NrCudaStatus nr_cuda_module_load_ptx(NrCuda *cu, const char *ptx, size_t len, const NrCudaJitOptions *opts,
                                     NrCudaModule **out);
/* Load a cubin produced earlier (e.g. from the disk cache); the bytes are copied. */
NrCudaStatus nr_cuda_module_load_cubin(NrCuda *cu, const void *cubin, size_t size, NrCudaModule **out);
/* Unload and free m (NULL is ignored).  Functions obtained from m die with it. */
void nr_cuda_module_unload(NrCuda *cu, NrCudaModule *m);

/* The module's cubin (valid until unload), for the disk cache. */
const void *nr_cuda_module_cubin(const NrCudaModule *m, size_t *size);
/* The JIT info log of a PTX load (resource usage when verbose), or "". */
const char *nr_cuda_module_log(const NrCudaModule *m);

/* Function metadata, as the driver reports it after compilation. */
typedef struct NrCudaFuncInfo {
    int num_regs;                   /* registers per thread */
    int local_bytes;                /* local memory per thread (spills, local arrays) */
    int static_shared_bytes;
    int const_bytes;
    int max_threads_per_block;      /* given its register use */
    int ptx_version;                /* e.g. 80 for PTX ISA 8.0 */
    int binary_version;             /* e.g. 90 for sm_90 */
    int max_dynamic_shared_bytes;   /* current limit (raised by opt-in) */
} NrCudaFuncInfo;

typedef struct NrCudaFunction NrCudaFunction;

/* Find kernel `name` in m; the result is owned by m. */
NrCudaStatus nr_cuda_get_function(NrCuda *cu, NrCudaModule *m, const char *name, NrCudaFunction **out);
const NrCudaFuncInfo *nr_cuda_function_info(const NrCudaFunction *f);
const char *nr_cuda_function_name(const NrCudaFunction *f);
NrCuFunction nr_cuda_function_handle(const NrCudaFunction *f);
/* Allow launches of f with up to `bytes` of dynamic shared memory, opting in
 * above the default 48 KB; fails clearly when static + dynamic shared memory
 * exceeds the device's opt-in maximum. */
NrCudaStatus nr_cuda_function_set_dynamic_shared(NrCuda *cu, NrCudaFunction *f, size_t bytes);

/* ---- launches ---- */

typedef struct NrCudaLaunchConfig {
    unsigned grid[3];      /* a zero dimension launches nothing */
    unsigned block[3];
    unsigned shared_bytes; /* dynamic shared memory; opted in automatically */
    NrCuStream stream;     /* NULL: the default stream */
    int sync;              /* wait for the kernel and report its faults */
} NrCudaLaunchConfig;

/* Launch f with kernel parameters params (one pointer to each argument's
 * value, in order, as cuLaunchKernel takes them).  Launch configurations the
 * device or kernel cannot run are rejected with NR_CUDA_ERR_INVALID before the
 * driver is called. */
NrCudaStatus nr_cuda_launch(NrCuda *cu, NrCudaFunction *f, const NrCudaLaunchConfig *lc, void **params);
/* Wait for all work in the context; reports asynchronous faults. */
NrCudaStatus nr_cuda_synchronize(NrCuda *cu);

/* ---- memory, streams, events ---- */

/* bytes == 0 gives *ptr == 0 and succeeds; freeing 0 does nothing. */
NrCudaStatus nr_cuda_alloc(NrCuda *cu, size_t bytes, NrCuDevPtr *ptr);
NrCudaStatus nr_cuda_free(NrCuda *cu, NrCuDevPtr ptr);
NrCudaStatus nr_cuda_memcpy_htod(NrCuda *cu, NrCuDevPtr dst, const void *src, size_t bytes);
NrCudaStatus nr_cuda_memcpy_dtoh(NrCuda *cu, void *dst, NrCuDevPtr src, size_t bytes);
NrCudaStatus nr_cuda_memset8(NrCuda *cu, NrCuDevPtr dst, uint8_t value, size_t count);
/* Fill count 32-bit words (dst 4-byte aligned), e.g. with a NaN pattern. */
NrCudaStatus nr_cuda_memset32(NrCuda *cu, NrCuDevPtr dst, uint32_t value, size_t count);

NrCudaStatus nr_cuda_stream_create(NrCuda *cu, int non_blocking, NrCuStream *out);
NrCudaStatus nr_cuda_stream_destroy(NrCuda *cu, NrCuStream s);
NrCudaStatus nr_cuda_stream_synchronize(NrCuda *cu, NrCuStream s);

NrCudaStatus nr_cuda_event_create(NrCuda *cu, NrCuEvent *out);
NrCudaStatus nr_cuda_event_destroy(NrCuda *cu, NrCuEvent e);
NrCudaStatus nr_cuda_event_record(NrCuda *cu, NrCuEvent e, NrCuStream s);
/* Milliseconds between two recorded events; waits for `end`. */
NrCudaStatus nr_cuda_event_elapsed(NrCuda *cu, NrCuEvent start, NrCuEvent end, float *ms);

/* ---- tensor maps (TMA, sm_90+) ---- */

/* CUtensorMap: 128 opaque bytes, 64-byte aligned, that cp.async.bulk.tensor
 * reads (a kernel's `.param .align 64 .b8 [128]` __grid_constant__
 * parameter, or global memory). */
typedef struct NrCuTensorMap {
    _Alignas(64) uint64_t opaque[16];
} NrCuTensorMap;

/* CUtensorMapDataType, CUtensorMapInterleave, CUtensorMapSwizzle,
 * CUtensorMapL2promotion, CUtensorMapFloatOOBfill (cuda.h's values). */
enum {
    NR_CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    NR_CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    NR_CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
    NR_CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    NR_CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
    NR_CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    NR_CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
    NR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    NR_CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    NR_CU_TENSOR_MAP_SWIZZLE_NONE = 0,
    NR_CU_TENSOR_MAP_SWIZZLE_32B = 1,
    NR_CU_TENSOR_MAP_SWIZZLE_64B = 2,
    NR_CU_TENSOR_MAP_SWIZZLE_128B = 3,
    NR_CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
    NR_CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    NR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
    NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
    NR_CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1,
};

/* The arguments of cuTensorMapEncodeTiled for a tiled tensor map of `rank`
 * (1..5) dimensions, fastest first as the driver takes them: dims[i]
 * elements along dimension i, strides[i] the byte stride of dimension i + 1
 * (rank - 1 of them), box[i] the elements one copy moves along dimension i,
 * elem_strides[i] the step between them (1: every element); elements of
 * driver type `dtype` at device address `base`.  The enums are cuda.h's. */
typedef struct NrTensorMapArgs {
    int dtype;                 /* CUtensorMapDataType (0..9: the types of fixed size Nereid uses) */
    unsigned rank;
    uint64_t base;             /* globalAddress */
    uint64_t dims[5];          /* globalDim */
    uint64_t strides[4];       /* globalStrides, bytes */
    unsigned box[5];           /* boxDim */
    unsigned elem_strides[5];  /* elementStrides */
    int interleave;            /* CUtensorMapInterleave: NONE */
    int swizzle;               /* CUtensorMapSwizzle: NONE, 32B, 64B or 128B */
    int l2_promotion;          /* CUtensorMapL2promotion */
    int oob_fill;              /* CUtensorMapFloatOOBfill: zeros, or NaN (float types only) */
} NrTensorMapArgs;

/* Bytes per element of a CUtensorMapDataType 0..9; 0 for any other value. */
int nr_tensor_map_elem_bytes(int dtype);
/* Checks the driver's documented limits (base 16-byte aligned and not null,
 * strides multiples of 16 below 2^40, dims from 1 to 2^32, box entries
 * 1..256, element strides 1..8, no interleave, the box's first dimension a
 * multiple of 16 bytes and no wider than the swizzle, NaN fill of float
 * types only); false with the reason in why[0..n). */
bool nr_tensor_map_check(const NrTensorMapArgs *t, char *why, size_t n);

/* cuTensorMapEncodeTiled's signature. */
typedef NrCuResult (*NrCuTensorMapEncodeTiled)(NrCuTensorMap *map, int dtype, unsigned rank, void *base,
                                               const uint64_t *dims, const uint64_t *strides, const unsigned *box,
                                               const unsigned *elem_strides, int interleave, int swizzle,
                                               int l2_promotion, int oob_fill);
/* The driver's cuTensorMapEncodeTiled, resolved when cu was opened; NULL
 * when the driver lacks it (before CUDA 12). */
NrCuTensorMapEncodeTiled nr_cuda_tensor_map_encoder(const NrCuda *cu);
/* Calls encode with t's arguments (no checks; out is 64-byte aligned by its
 * type).  For callers that hold the entry point, not the handle. */
NrCuResult nr_tensor_map_encode_with(NrCuTensorMapEncodeTiled encode, const NrTensorMapArgs *t, NrCuTensorMap *out);
/* Checks t (nr_tensor_map_check: NR_CUDA_ERR_INVALID) and encodes it with
 * the handle's context current; a driver without cuTensorMapEncodeTiled
 * gives NR_CUDA_NO_DRIVER. */
NrCudaStatus nr_cuda_tensor_map_tiled(NrCuda *cu, const NrTensorMapArgs *t, NrCuTensorMap *out);

/* The driver's name of a CUresult ("CUDA_ERROR_INVALID_PTX"), or
 * "CUDA_ERROR_<n>" when the driver does not know it. */
const char *nr_cuda_result_name(const NrCuda *cu, NrCuResult r, char *buf, size_t size);

#endif
