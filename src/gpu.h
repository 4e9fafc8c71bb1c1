/* gpu.h - the GPU level of the IR: layouts, linear layouts, axis info, the
 * GPU pass pipeline and the PTX emitter's entry point.
 *
 * The GPU IR is the block IR with a layout on every block type
 * (NrType.layout, an id into NrModule.layouts) plus the GPU ops of ops.def
 * (convert_layout, shared-memory ops, async copies).  A layout says which
 * thread of the program (CTA) holds which elements of a block:
 *
 *   blocked   size_per_thread x threads_per_warp x warps_per_cta tiles, fastest
 *             dimension first in `order`; the tile repeats over larger
 *             shapes and is broadcast (replicated) over smaller ones
 *   slice     the parent layout with dimension `dim` removed: the result of
 *             reducing along `dim`, and the operand of expand_dims(dim)
 *   mma       tensor-core accumulator: version 2 = mma.sync (m16n8), version 3
 *             = wgmma (m64nNk*); warps_per_cta tiles of the instruction shape
 *   dot_op    operand op_idx (0 = A, 1 = B) of a dot whose result has the mma
 *             layout `parent`; k_width consecutive k-elements per register group
 *   shared    a shared-memory layout: `order` of dimensions in memory,
 *             XOR swizzle of `vec`-element groups with `per_phase` rows per
 *             phase and `max_phase` phases (no swizzle: max_phase = 1);
 *             nvmma = the 32/64/128-byte swizzles that TMA and wgmma read
 *
 * Every distributed layout (all but shared) over a given power-of-two shape
 * is also a linear layout: each bit of the register index, the lane id and
 * the warp id maps to a coordinate vector, and the coordinates of element
 * (reg, lane, warp) are the XOR of the vectors of its set bits.  Code
 * generation works on linear layouts only, so every named layout needs only
 * its conversion to linear form. */
#ifndef NR_GPU_H
#define NR_GPU_H

#include "ir.h"

typedef enum NrLayoutKind {
    NR_LK_NONE = 0,
    NR_LK_BLOCKED,
    NR_LK_SLICE,
    NR_LK_MMA,
    NR_LK_DOT_OP,
    NR_LK_SHARED,
} NrLayoutKind;

typedef struct NrLayout {
    uint8_t kind;         /* NrLayoutKind */
    uint8_t rank;         /* rank of the blocks it applies to */
    /* blocked */
    int32_t size_per_thread[NR_MAX_RANK];
    int32_t threads_per_warp[NR_MAX_RANK];
    int32_t warps_per_cta[NR_MAX_RANK];   /* also mma */
    int32_t order[NR_MAX_RANK];           /* fastest-varying dimension first; also shared */
    /* slice */
    int32_t dim;
    int32_t parent;       /* layout id: slice's parent, dot_op's mma */
    /* mma */
    int32_t version;      /* 2: mma.sync, 3: wgmma */
    int32_t instr[3];     /* instruction shape m, n, k */
    /* dot_op */
    int32_t op_idx;
    int32_t k_width;
    /* shared */
    int32_t vec, per_phase, max_phase;
    bool nvmma;           /* Hopper's swizzled layouts (swizzle_bytes = vec * elem size * max_phase) */
    int32_t swizzle_bytes;/* nvmma: 0 (none), 32, 64 or 128 */
} NrLayout;

/* Intern a layout in m's table; ids start at 1. */
int32_t nr_layout_intern(NrModule *m, const NrLayout *l);
static inline const NrLayout *nr_layout(const NrModule *m, int32_t id) { return &m->layouts[id]; }
/* `blocked<spt = [1, 4], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>`, ... (layout table lines). */
void nr_layout_print(const NrModule *m, int32_t id, FILE *out);
/* A block type with layout `layout` (same shape and element as t). */
NrTypeId nr_type_with_layout(NrModule *m, NrTypeId t, int32_t layout);

/* The default blocked layout Nereid gives a block of `shape` before
 * coalescing: one element per thread, lanes then warps along the fastest
 * dimension first (as Triton's default encoding). */
int32_t nr_layout_default_blocked(NrModule *m, int rank, const int32_t *shape, int num_warps);
int32_t nr_layout_slice(NrModule *m, int32_t parent, int dim);

/* Constructors: intern the layout with the given fields (gpu_layout.c). */
int32_t nr_layout_blocked(NrModule *m, int rank, const int32_t *spt, const int32_t *tpw, const int32_t *wpc,
                          const int32_t *order);
int32_t nr_layout_mma(NrModule *m, int version, int rank, const int32_t *wpc, const int32_t instr[3]);
int32_t nr_layout_dot_op(NrModule *m, int32_t parent, int op_idx, int k_width);
int32_t nr_layout_shared(NrModule *m, int rank, int vec, int per_phase, int max_phase, const int32_t *order);
int32_t nr_layout_nvmma(NrModule *m, int rank, int swizzle_bytes, const int32_t *order);
/* Every layout but shared says which thread holds which element. */
bool nr_layout_is_distributed(const NrModule *m, int32_t id);
/* Checks that layout `id` is well formed (its parent defined before it,
 * field values in range; warps multiply to num_warps when num_warps > 0);
 * false with a message in why[0..n). */
bool nr_layout_check(const NrModule *m, int32_t id, int num_warps, char *why, size_t n);

/* Element offset of `coords` in a shared-memory buffer of `shape` laid out by
 * shared layout `layout`.  rank is the layout's rank, or one more: then the
 * leading dimension indexes the buffers of a multi-buffered allocation.
 *   shared: rows along order[1], columns along order[0] (outer dimensions
 *     follow in order); the column's vec-element group is XORed with the
 *     phase (row / per_phase) % max_phase, limited to the groups of a row.
 *   nvmma: columns are split into blocks of swizzle_bytes (one block after
 *     another in memory, each holding every row); within a block the 16-byte
 *     chunk index (byte address bits 4..6) is XORed with address bits 7..9,
 *     as TMA and wgmma read them (no swizzle: swizzle_bytes = 0). */
int64_t nr_shared_offset(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int elem_bytes,
                         const int32_t *coords);

/* --- linear layouts ------------------------------------------------------------------------------ */
#define NR_LL_MAX_BITS 20

typedef struct NrLinear {
    int rank;
    int32_t shape[NR_MAX_RANK];
    int nreg, nlane, nwarp;                    /* bit counts: registers = 1 << nreg, ... */
    int32_t reg[NR_LL_MAX_BITS][NR_MAX_RANK];
    int32_t lane[NR_LL_MAX_BITS][NR_MAX_RANK];
    int32_t warp[NR_LL_MAX_BITS][NR_MAX_RANK];
} NrLinear;

/* The linear form of distributed layout `layout` over a block of `shape`,
 * for a program of num_warps warps of 32 lanes.  Returns false (with no
 * diagnostic) if the layout cannot describe that shape. */
bool nr_layout_linear(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int num_warps,
                      NrLinear *out);
/* Coordinates of element (reg, lane, warp). */
void nr_linear_coords(const NrLinear *ll, uint32_t reg, uint32_t lane, uint32_t warp, int32_t *coords);
/* Elements held per thread (1 << nreg). */
static inline int nr_linear_regs(const NrLinear *ll) { return 1 << ll->nreg; }

/* --- axis info ------------------------------------------------------------------------------------ */
/* Per value and dimension: the largest power of two c such that runs of c
 * consecutive elements along the dimension are contiguous integers (or
 * addresses, in elements); divisibility: the largest power of two dividing
 * the first element of each run (in elements for pointers, then scaled to
 * bytes by the consumers); constancy: runs of equal values. */
typedef struct NrAxisInfo {
    int32_t contiguity[NR_MAX_RANK];
    int64_t divisibility[NR_MAX_RANK];
    int32_t constancy[NR_MAX_RANK];
    int64_t divisibility_bytes;   /* pointers: of the address of each run's first element */
} NrAxisInfo;

/* Analyse every value of f; returns an arena array indexed by NrValId. */
NrAxisInfo *nr_axis_analysis(NrFunc *f);
/* The same, in arena a (a pass's own scratch arena, so that the facts do not
 * stay in the module's arena once the pass is done with them). */
NrAxisInfo *nr_axis_analysis_in(NrFunc *f, NrArena *a);

/* --- the GPU pipeline and the PTX emitter --------------------------------------------------------- */
typedef struct NrGpuOptions {
    int num_warps;       /* 1..16 */
    int num_stages;      /* software pipelining depth */
    int sm;              /* 80, 86, 89, 90 */
    bool sm_a;           /* 90a features (wgmma, setmaxnreg) allowed */
    const char *stop_after;
    bool verify_each;
    FILE *dump;
    bool no_fp_fusion;   /* float a*b + c stays a rounded multiply and add (no fma) */
    bool no_tma;         /* host tensor descriptors load through pointers, not TMA */
    int maxnreg;         /* the kernel's .maxnreg: registers per thread at most (0: no limit) */
} NrGpuOptions;

/* The GPU passes, each runnable alone (`nereid opt --pass NAME`); the target
 * comes from the module's attributes (num_warps, sm; gpu-convert sets them:
 * 4 warps and sm 80 unless the module names others).  docs/gpu.md.
 *   gpu-convert          block IR -> GPU IR: default layouts, slices for
 *                        reductions, mma/dot_op layouts for dots
 *   gpu-coalesce         per load/store/atomic: the blocked layout giving each
 *                        thread the widest aligned vector
 *   gpu-remove-converts  re-solves every layout from the memory ops and dots,
 *                        keeping only the conversions that must stay
 *   gpu-pipeline         software pipelining: loads feeding dots become cp.async
 *                        copies (TMA copies for host tensor descriptors on
 *                        sm_90a) into num_stages-buffered shared memory
 *   gpu-tma-loads        sm_90a: a host tensor descriptor's block loaded once
 *                        (not in a pipelined loop) and staged for wgmma is
 *                        copied by TMA into its buffer
 *   gpu-tma-stores       sm_90a: host tensor descriptors' block stores go
 *                        through shared memory and a TMA store
 *   gpu-smem             shared-memory offsets (smem_offset) and the total
 *   gpu-barriers         barriers between shared-memory writes and later accesses
 * They are registered with the block passes (passes.h's nr_pass_find). */
bool nr_gpu_convert(NrModule *m, NrDiags *d);
bool nr_gpu_coalesce(NrModule *m, NrDiags *d);
bool nr_gpu_remove_converts(NrModule *m, NrDiags *d);
bool nr_gpu_pipeline_loops(NrModule *m, NrDiags *d);
bool nr_gpu_hoist_loads(NrModule *m, NrDiags *d);
bool nr_gpu_tma_loads(NrModule *m, NrDiags *d);
bool nr_gpu_tma_stores(NrModule *m, NrDiags *d);
bool nr_gpu_alloc_smem(NrModule *m, NrDiags *d);
bool nr_gpu_barriers(NrModule *m, NrDiags *d);

/* Bytes of shared memory op needs for its own scratch (reductions across
 * warps, layout conversions, ...), 0 if none: the PTX emitter's answer. */
int64_t nr_ptx_scratch_bytes(NrFunc *f, NrOpId op);

/* Convert a block-IR module (after the block pipeline) to GPU IR and run the
 * GPU passes: layouts + coalescing, dots on tensor cores, pipelining, fewer
 * layout conversions, shared-memory allocation, barriers. */
bool nr_run_gpu_pipeline(NrModule *m, const NrGpuOptions *opt, NrDiags *d);

/* Write the PTX of kernel f (GPU IR) into the arena; NULL with a diagnostic
 * if an op cannot be emitted for the target. */
char *nr_emit_ptx(NrFunc *f, const NrGpuOptions *opt, NrDiags *d);

/* A tensor map the launch encodes (see NrTensorMapInfo in nereid.h): the
 * host tensor descriptor whose base is runtime argument `arg`, loaded by
 * TMA boxes of box[] elements (descriptor order, outermost first) with a
 * `swizzle`-byte swizzle.  The kernel takes it as parameter
 * `.param .align 64 .b8 <kernel>_tmap_<j>[128]`, j its position in the
 * list, after the runtime arguments. */
enum { NR_MAX_TMAPS = 16 };
typedef struct NrTmapUse {
    int arg;
    int rank;
    int dtype;             /* NrDtype of the elements */
    int box[5];
    int swizzle;           /* 0, 32, 64 or 128 */
    bool nan_fill;         /* out-of-bounds elements read as NaN (padding "nan") */
} NrTmapUse;

/* What a launch of the emitted kernel needs. */
typedef struct NrPtxInfo {
    int64_t shared_bytes;  /* dynamic shared memory (the .extern .shared buffer) */
    int num_warps;
    int threads;           /* the block size: 32 * num_warps (.reqntid) */
    int ntmaps;            /* tensor-map parameters, in parameter order */
    NrTmapUse tmaps[NR_MAX_TMAPS];
} NrPtxInfo;
/* nr_emit_ptx, also filling *info (if not NULL). */
char *nr_emit_ptx_info(NrFunc *f, const NrGpuOptions *opt, NrDiags *d, NrPtxInfo *info);

#endif
