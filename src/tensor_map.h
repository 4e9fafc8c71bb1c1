/* tensor_map.h - the TMA tensor maps of a launch, from its arguments.
 *
 * A kernel that loads a host tensor descriptor with TMA takes, after its
 * runtime arguments, one CUtensorMap per such descriptor (NrTensorMapInfo,
 * nereid.h).  The descriptor itself arrives as runtime arguments: its base
 * (u64), sizes[rank] (i32) and strides[rank] (i64, in elements), outermost
 * dimension first.  This module turns those values and the compiled box and
 * swizzle into cuTensorMapEncodeTiled's arguments (fastest dimension first,
 * strides in bytes), checking what the driver would refuse and saying so in
 * the descriptor's own terms.  Pure: no driver, no allocation. */
#ifndef NR_TENSOR_MAP_H
#define NR_TENSOR_MAP_H

#include "cuda_rt.h"
#include "nereid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CUtensorMapDataType of elements of dtype `name` (a signature name:
 * "fp16", "i32", ...; fp8 and 8-bit integers are UINT8, 16-bit integers
 * UINT16), or -1 when TMA has no type of that size. */
int nr_tensor_map_dtype(const char *name);

/* The values a tensor map key compares (base, sizes, strides) of descriptor
 * `info` in a launch's packed parameters; see nr_tensor_map_key. */
enum { NR_TENSOR_MAP_KEY_WORDS = 1 + 2 * 5 };

/* Reads the descriptor's runtime arguments from params: base, then the
 * sizes, then the strides, as 64-bit words (unused words zero); false if
 * one of them has no value (a NULL pointer).  Precondition: info->rank in
 * 1..5 and its arguments within params (as nr_tensor_map_from_params
 * checks). */
bool nr_tensor_map_key(const NrTensorMapInfo *info, void *const *params, uint64_t key[NR_TENSOR_MAP_KEY_WORDS]);

/* cuTensorMapEncodeTiled's arguments for tensor map `info` of a launch
 * whose runtime arguments are params[0..nparams) (one pointer per argument
 * to its value at its kernel parameter size, as cuLaunchKernel takes them).
 * `name` is the descriptor parameter's name for messages ("a_desc").  On a
 * value TMA cannot take, returns false with why[0..n) saying which, e.g.
 *     tensor descriptor 'a_desc': stride 0 (100 elements of 2 bytes) is not a multiple of 16 bytes */
bool nr_tensor_map_from_params(const NrTensorMapInfo *info, const char *name, void *const *params, int nparams,
                               NrTensorMapArgs *out, char *why, size_t n);

/* The descriptor's name from the name of its base argument ("a_desc.base"
 * -> "a_desc"), into buf[0..size). */
const char *nr_tensor_map_desc_name(const char *base_arg_name, char *buf, size_t size);

#endif
