/* fake_cuda.h - control of the fake CUDA driver (fake_cuda.c) from tests. */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <cuda.h>

enum { FAKE_MAX_PARAMS = 64 };

/* One recorded cuLaunchKernel. */
typedef struct FakeLaunch {
    CUfunction function;
    unsigned grid[3], block[3], shared;
    CUstream stream;
    int nparams;                      /* known for Nereid's PTX kernels only */
    unsigned char params[FAKE_MAX_PARAMS][8];
    int param_size[FAKE_MAX_PARAMS];
    int ran;                          /* run on the interpreter */
    int ntmaps;                       /* tensor maps after the arguments, each checked against them */
} FakeLaunch;

/* Forget everything: memory, modules, launches, failures; compute capability 10.0. */
void fake_cuda_reset(void);
/* The device's compute capability, major * 10 + minor. */
void fake_cuda_set_cc(int cc);
/* The nth call of driver function fn (1: the next) returns r. */
void fake_cuda_fail(const char *fn, int nth, CUresult r);
/* Launches so far. */
int fake_cuda_launch_count(void);
const FakeLaunch *fake_cuda_launch(int i);
int fake_cuda_live_modules(void);
int fake_cuda_live_allocations(void);
int fake_cuda_set_attribute_calls(void);
/* Tensor maps encoded (cuTensorMapEncodeTiled) since the last reset. */
int fake_cuda_encode_count(void);
/* PTX compilations through the linker (cuLinkComplete). */
int fake_cuda_link_count(void);
/* A launch's cost in milliseconds on its stream's clock (default: 1 us per program). */
void fake_cuda_set_cost(double (*cost)(const FakeLaunch *l, void *user), void *user);
/* What a function's module was loaded from ("sm_90 cubin", "sm_90 PTX"), and the signature of its kernel
 * (PTX only). */
const char *fake_cuda_function_binary(CUfunction f);
const char *fake_cuda_function_signature(CUfunction f);
/* Make PTX that Nereid emits for this kernel known to the fake (for the C API's JIT). */
int fake_cuda_register(const char *file, const char *kernel, const char *sig, const char *arch, int num_warps,
                       int num_stages);

#endif
