/* gpu_impl.h - helpers shared by the GPU passes (gpu_*.c); gpu.h is the
 * contract with the rest of Nereid.
 *
 * The passes run in the order of nr_run_gpu_pipeline (gpu_pipeline.c); each
 * one states what it requires of the IR it is given. */
#ifndef NR_GPU_IMPL_H
#define NR_GPU_IMPL_H

#include "gpu.h"

#endif
