/* nereid.h - the public C API of Nereid, a block-level GPU kernel compiler.
 *
 * Kernels are written in the Triton dialect of Python and compiled from
 * source text.  Typical use:
 *
 *     NrContext *ctx = nr_context_create();
 *     NrKernel *k;
 *     if (nr_compile(ctx, src, len, "add.py", "add_kernel",
 *                    "*fp32:16, *fp32:16, *fp32:16, i32, 1024", NULL, &k) != NR_OK)
 *         fputs(nr_error_text(ctx), stderr);
 *     NrArg args[4] = {NR_BUFFER(x, n * 4), NR_BUFFER(y, n * 4), NR_BUFFER(out, n * 4), NR_INT(n)};
 *     unsigned grid[3] = {(n + 1023) / 1024, 1, 1};
 *     nr_launch_interp(ctx, k, grid, args, 4);
 *     nr_kernel_destroy(k);
 *     nr_context_destroy(ctx);
 *
 * Errors are returned, never printed: a failing call returns a non-zero
 * NrStatus and leaves its diagnostics in the context (nr_error_text,
 * nr_error_get).  The library has no global mutable state: separate contexts
 * may be used on separate threads; one context is used by one thread at a
 * time.  A kernel is immutable once compiled and may be launched from any
 * thread with any context. */
#ifndef NEREID_H
#define NEREID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NEREID_VERSION "0.1.0"

typedef struct NrContext NrContext;
typedef struct NrKernel NrKernel;

typedef enum NrStatus {
    NR_OK = 0,
    NR_ERR_COMPILE = 1,   /* the kernel source or signature has errors (see diagnostics) */
    NR_ERR_INVALID = 2,   /* bad arguments to the API call itself */
    NR_ERR_LAUNCH = 3,    /* the launch faulted: bad memory access, failed assert, ... */
    NR_ERR_INTERNAL = 4,
    NR_ERR_UNAVAILABLE = 5, /* a program the call needs (ptxas) is not installed */
} NrStatus;

/* One diagnostic.  Strings stay valid until the next call on the context. */
typedef struct NrDiagnostic {
    const char *severity;     /* "error", "warning", "note" */
    const char *file;
    int line, col;            /* 1-based; 0 when unknown */
    const char *message;
    const char *source_line;  /* the line of source the location points into, or "" */
    const char *rendered;     /* "file:line:col: error: message\n    source\n    ^\n" */
} NrDiagnostic;

typedef struct NrOptions {
    int num_warps;            /* default 4 */
    int num_stages;           /* default 3 */
    const char *stop_after;   /* stop the pass pipeline after this pass (NULL: run all) */
    int verify_each;          /* verify the IR after every pass */
    int debug;                /* keep device_assert checks (default 1 on the interpreter) */
    const char *arch;         /* NULL or "": block IR for the interpreter; "sm_80", "sm_90", "sm_90a":
                                 GPU IR and PTX for that target */
    int maxnreg;              /* GPU kernels: registers per thread at most, the PTX's .maxnreg
                                 (0: no limit; at most 255) */
    int fp_fusion;            /* GPU kernels: 1 (default), a float multiply and the add or subtract
                                 that uses it may become one fma, as with Triton's enable_fp_fusion;
                                 0: each rounds on its own, as on the interpreter */
    int no_tma;               /* sm_90a: 1 loads host tensor descriptors through pointers (cp.async)
                                 instead of TMA; 0 (default): TMA where a pipelined loop feeds them
                                 to wgmma */
} NrOptions;

void nr_options_default(NrOptions *o);

NrContext *nr_context_create(void);
void nr_context_destroy(NrContext *ctx);

/* Diagnostics of the last failing call on ctx. */
int nr_error_count(const NrContext *ctx);
int nr_error_get(const NrContext *ctx, int i, NrDiagnostic *out);  /* 0 on success */
const char *nr_error_text(const NrContext *ctx);                   /* all, rendered; "" if none */

/* Parse a module and check that every @jit function is well formed. */
NrStatus nr_check_source(NrContext *ctx, const char *src, size_t len, const char *filename);

/* Compile kernel `kernel` of the module `src` for `signature` (Triton's AOT
 * form, one entry per parameter, constexpr values in place). opts may be NULL. */
NrStatus nr_compile(NrContext *ctx, const char *src, size_t len, const char *filename, const char *kernel,
                    const char *signature, const NrOptions *opts, NrKernel **out);
void nr_kernel_destroy(NrKernel *k);

const char *nr_kernel_name(const NrKernel *k);
/* The kernel's block IR after the pipeline, as text (owned by the kernel). */
const char *nr_kernel_ir(const NrKernel *k);

/* GPU kernels (compiled with an arch): the PTX text ("" otherwise), the
 * threads per program and the dynamic shared memory a launch needs. */
const char *nr_kernel_ptx(const NrKernel *k);
int nr_kernel_is_gpu(const NrKernel *k);
int nr_kernel_num_warps(const NrKernel *k);
int nr_kernel_shared_bytes(const NrKernel *k);

/* Runtime arguments of a compiled kernel: the non-constexpr parameters. */
typedef enum NrArgKind { NR_ARG_BUFFER = 0, NR_ARG_INT = 1, NR_ARG_FLOAT = 2 } NrArgKind;

typedef struct NrArgInfo {
    NrArgKind kind;
    const char *name;     /* parameter name */
    const char *dtype;    /* "fp32", "i32", ... (pointee dtype for buffers) */
    int param_index;      /* position among all the kernel's parameters */
} NrArgInfo;

int nr_kernel_num_args(const NrKernel *k);
int nr_kernel_arg_info(const NrKernel *k, int i, NrArgInfo *out);  /* 0 on success */

/* TMA tensor maps (sm_90a).  A host tensor descriptor argument, passed as
 * its runtime arguments base, sizes[rank] (i32) and strides[rank] (i64, in
 * elements), whose loads the kernel makes with TMA also reaches the kernel
 * as a CUtensorMap: a 128-byte parameter after the runtime arguments, which
 * nr_launch_gpu and nr_gpu_entry_launch encode from those arguments
 * (cuTensorMapEncodeTiled) at each launch.  Callers pass the runtime
 * arguments alone; these calls describe the maps for other launchers. */
typedef struct NrTensorMapInfo {
    int base_arg;         /* runtime-argument index of the descriptor's base; sizes are the next
                             `rank` runtime arguments, strides the `rank` after them */
    int rank;             /* 1..5 */
    const char *dtype;    /* element dtype: "fp16", "bf16", "fp32", "fp8e4nv", ... */
    int elem_bytes;
    int box[5];           /* box size per dimension, in the descriptor's order (outermost first) */
    int swizzle;          /* bytes: 0 (none), 32, 64 or 128 */
    int nan_fill;         /* out-of-bounds elements read as NaN, else zero */
} NrTensorMapInfo;

int nr_kernel_num_tensor_maps(const NrKernel *k);
int nr_kernel_tensor_map_info(const NrKernel *k, int i, NrTensorMapInfo *out);  /* 0 on success */

typedef struct NrArg {
    NrArgKind kind;
    void *data;           /* NR_ARG_BUFFER: host memory */
    size_t bytes;         /* NR_ARG_BUFFER: its size; every access is checked against it */
    int64_t i;            /* NR_ARG_INT */
    double f;             /* NR_ARG_FLOAT */
} NrArg;

#define NR_BUFFER(ptr, nbytes) ((NrArg){NR_ARG_BUFFER, (void *)(ptr), (size_t)(nbytes), 0, 0.0})
#define NR_INT(v) ((NrArg){NR_ARG_INT, NULL, 0, (int64_t)(v), 0.0})
#define NR_FLOAT(v) ((NrArg){NR_ARG_FLOAT, NULL, 0, 0, (double)(v)})

/* Run every program of grid[0] x grid[1] x grid[2] on the reference
 * interpreter.  args: one per runtime argument (nr_kernel_num_args). */
NrStatus nr_launch_interp(NrContext *ctx, const NrKernel *k, const unsigned grid[3], const NrArg *args,
                          int nargs);

/* --- GPU launches (kernels compiled with an arch) ---------------------------------------------------
 * The NVIDIA driver is loaded at the first GPU call (dlopen of libcuda.so.1);
 * without a driver or a device the call fails with a message that says so.
 * Kernels are loaded into the primary context of `device`, through the disk
 * cache of cubins (NEREID_CACHE_DIR, default ~/.cache/nereid). */
typedef struct NrLaunchConfig {
    unsigned grid[3];
    void *stream;         /* a CUstream of that device's primary context; NULL: the default stream */
    int device;           /* CUDA device ordinal */
    int sync;             /* wait for the kernel and report faults at this call */
} NrLaunchConfig;

/* args: one per runtime argument; NR_ARG_BUFFER's data is a device address
 * (bytes may be 0 when unknown). */
NrStatus nr_launch_gpu(NrContext *ctx, const NrKernel *k, const NrLaunchConfig *cfg, const NrArg *args,
                       int nargs);

typedef struct NrGpuKernelInfo {
    int num_regs;             /* registers per thread */
    int spill_bytes;          /* local memory per thread (spills) */
    int static_shared_bytes;
    int dynamic_shared_bytes; /* what each launch requests */
    int max_threads_per_block;
    int threads;              /* threads per program */
    char device_name[256];
    int sm;                   /* the device's compute capability x10 */
    int sm_count;
    int max_shared_optin;     /* per block, with opt-in */
} NrGpuKernelInfo;

/* Load k on `device` (if not yet) and report what the driver says of it. */
NrStatus nr_kernel_gpu_info(NrContext *ctx, const NrKernel *k, int device, NrGpuKernelInfo *out);

/* --- repeated launches (the Python extension's fast path) ---------------------------------------
 * The kernel loaded on `device` (as nr_launch_gpu loads it) and what a launch
 * needs, owned by the kernel and valid until nr_kernel_destroy.  Fails like
 * nr_launch_gpu when the kernel cannot be loaded, and when its threads need
 * more registers than the device has per block. */
typedef struct NrGpuEntry NrGpuEntry;
NrStatus nr_kernel_gpu_entry(NrContext *ctx, const NrKernel *k, int device, const NrGpuEntry **out);
/* Launch on `stream` with the parameters packed by the caller (one pointer
 * per runtime argument to its value at the kernel's parameter size, as
 * cuLaunchKernel takes them), making the kernel's context current for the
 * call when another one is.  No checks: grid dimensions must be within the
 * device's limits (max_grid).  Returns 0, or the driver's CUresult.  The
 * kernel's tensor maps (nr_kernel_num_tensor_maps) are appended by the
 * call; descriptor arguments TMA cannot take give CUDA_ERROR_INVALID_VALUE
 * without a launch (nr_launch_gpu says why). */
int nr_gpu_entry_launch(const NrGpuEntry *e, const unsigned grid[3], void *stream, void **params);
void nr_gpu_entry_max_grid(const NrGpuEntry *e, unsigned out[3]);

/* A device address as a launch argument (a CUdeviceptr). */
#define NR_DEVPTR(dptr) ((NrArg){NR_ARG_BUFFER, (void *)(uintptr_t)(dptr), 0, 0, 0.0})

/* The target to compile for to run on `device` ("sm_80", "sm_86", "sm_89" or
 * "sm_90"; other devices of compute capability 8.x get "sm_80", newer ones
 * "sm_90", whose PTX the driver compiles for them), as the Python package
 * chooses it; NEREID_ARCH overrides it.  Fails like a launch without a driver
 * or device. */
NrStatus nr_device_arch(NrContext *ctx, int device, char *buf, size_t size);

/* The disk cache of cubins shared with the Python package: its directory
 * (NEREID_CACHE_DIR, else $XDG_CACHE_HOME/nereid, else ~/.cache/nereid;
 * created if missing) into buf.  Returns 0, or -1 when caching is off
 * (NEREID_NO_CACHE, no usable directory) or buf is too small. */
int nr_cache_directory(char *buf, size_t size);

/* --- Resource use without a GPU: ptxas, and occupancy -------------------------------------------------
 * A GPU kernel's PTX assembled with the CUDA toolkit's ptxas (searched on
 * PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin) tells the
 * registers and spills the kernel needs on its target, without a GPU. */
typedef struct NrAsmInfo {
    char arch[16];            /* the target, e.g. "sm_90a" */
    int num_regs;             /* registers per thread */
    int spill_store_bytes;    /* bytes spilled to local memory per thread */
    int spill_load_bytes;
    int stack_bytes;          /* stack frame per thread */
    int static_shared_bytes;
    int dynamic_shared_bytes; /* what each launch requests */
    int const_bytes;          /* constant bank 0 */
    int barriers;
    int threads;              /* threads per program */
} NrAsmInfo;

/* Assemble k (a GPU kernel) with ptxas (NULL: searched) for its target.
 * *cubin (if cubin is not NULL) is malloc'd: release it with free().  Fails
 * with NR_ERR_UNAVAILABLE when ptxas cannot be found. */
NrStatus nr_kernel_assemble(NrContext *ctx, const NrKernel *k, const char *ptxas, void **cubin, size_t *size,
                            NrAsmInfo *info);

/* Per-SM limits of a GPU architecture, from the CUDA programming guide's
 * table of technical specifications per compute capability (docs/aot.md). */
typedef struct NrSmLimits {
    int sm;                        /* 80, 86, 89, 90 */
    const char *gpus;              /* examples: "A100", "H100, H200", ... */
    int max_threads_per_sm;
    int max_warps_per_sm;
    int max_blocks_per_sm;
    int max_threads_per_block;
    int regs_per_sm;               /* 32-bit registers */
    int regs_per_block;
    int max_regs_per_thread;
    int reg_alloc_unit;            /* registers are given to warps in units of this many */
    int shared_per_sm;             /* bytes, with the largest shared-memory carveout */
    int shared_per_block_optin;    /* bytes a block may use after opting in */
    int shared_reserved_per_block; /* bytes the driver keeps per resident block */
    int shared_alloc_unit;         /* shared memory is given to blocks in units of this many bytes */
} NrSmLimits;

/* The limits of sm (80, 86, 89, 90), or of the GPU named ("A100", "h100",
 * "sm_90a", "RTX 4090", ...); NULL if unknown. */
const NrSmLimits *nr_sm_limits(int sm);
const NrSmLimits *nr_sm_limits_by_name(const char *name);
/* The table, for listings. */
const NrSmLimits *nr_sm_limits_table(int *count);

typedef struct NrOccupancy {
    int blocks_per_sm;        /* programs resident on one SM at a time (0: the launch cannot run) */
    int warps_per_sm;
    double occupancy;         /* warps_per_sm / max_warps_per_sm */
    int limit_warps;          /* blocks per SM each resource allows */
    int limit_blocks;
    int limit_regs;
    int limit_shared;
    const char *limiter;      /* "warps", "blocks", "registers" or "shared memory" */
} NrOccupancy;

/* Occupancy of a kernel of `threads` threads per program using `regs`
 * registers per thread and `shared_bytes` of shared memory (static +
 * dynamic) per program.  Returns 0, or -1 for arguments out of range. */
int nr_occupancy(const NrSmLimits *lim, int threads, int regs, int shared_bytes, NrOccupancy *out);

#ifdef __cplusplus
}
#endif
#endif
