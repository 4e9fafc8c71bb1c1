/* gpu_impl.h - helpers shared by the GPU passes (gpu_*.c); gpu.h is the
 * contract with the rest of Nereid.
 *
 * The passes run in the order of nr_run_gpu_pipeline (gpu_pipeline.c); each
 * one states what it requires of the IR it is given.  Layout ids are
 * interned (gpu_layout.c), so two values share a layout iff their type's
 * layout ids are equal. */
#ifndef NR_GPU_IMPL_H
#define NR_GPU_IMPL_H

#include "gpu.h"

/* Target of a GPU module: its attributes, or 4 warps and sm 80. */
int nr_gpu_num_warps(const NrModule *m);
int nr_gpu_sm(const NrModule *m);

/* Layout of value v's type (0 for scalars and values without one). */
int32_t nr_gpu_layout_of(const NrFunc *f, NrValId v);
/* Gives v the layout `layout` (a value's type changes in place). */
void nr_gpu_set_layout(NrFunc *f, NrValId v, int32_t layout);

/* Scratch bytes op needs (nr_ptx_scratch_bytes, gpu.h); the emitter must be
 * linked in. */
int64_t nr_gpu_scratch_bytes(NrFunc *f, NrOpId op);

/* Drops the layouts no live value uses from the table, renumbering the rest
 * (types of dead values are left with a layout id of -1). */
void nr_gpu_compact_layouts(NrModule *m);

/* Triton's blocked layout for a block of `shape` with spt elements per
 * thread, fastest dimension order[0]: each dimension in order takes the
 * threads it has room for, lanes first, then warps; the slowest takes what
 * is left. */
int32_t nr_gpu_blocked_for(NrModule *m, int rank, const int32_t *shape, const int32_t *spt, const int32_t *order,
                           int num_warps);
/* Blocked layout l with its dimensions permuted as trans {order} permutes a
 * block's axes (result axis i is operand axis order[i]); inverse undoes it. */
int32_t nr_gpu_permute_blocked(NrModule *m, int32_t l, const int64_t *order, bool inverse);

/* The layout op requires of its block operand i, given the layouts of its
 * results (and, for stores, of its pointer operand); 0 when any will do. */
int32_t nr_gpu_required(NrFunc *f, NrOpId op, int i);
/* k_width of the dot operands of a dot whose result has layout `acc` and
 * whose operands have element dt (mma: 32 bits per register; FMA: 0). */
int nr_gpu_k_width(const NrModule *m, int32_t acc, NrDtype dt);

/* A convert_layout of v to `layout` placed before op `before`. */
NrValId nr_gpu_convert_before(NrFunc *f, NrOpId before, NrValId v, int32_t layout);
/* Inserts a conversion before every op whose operand's layout differs from
 * what the op requires (nr_gpu_required). */
void nr_gpu_fix_operands(NrFunc *f);

/* The only user of value v, or NR_NONE; the number of operands that read v;
 * whether op a comes before op b of the same block. */
NrOpId nr_gpu_sole_user(const NrFunc *f, NrValId v);
int nr_gpu_uses_of(const NrFunc *f, NrValId v);
bool nr_gpu_comes_before(const NrFunc *f, NrOpId a, NrOpId b);
/* The op of block b that is op u or holds it in its regions (NR_NONE if u
 * is not inside b). */
NrOpId nr_gpu_ancestor_in(const NrFunc *f, NrOpId u, NrBlockId b);
/* n mbarriers (!smem<n x 1 x i64>) of `count` arrivals each, allocated and
 * initialized at b; *view is the type of one (memdesc_index of the result). */
NrValId nr_gpu_alloc_mbarriers(NrModule *m, NrFunc *f, NrBuilder *b, int n, int64_t count, NrTypeId *view);

/* Whether TMA can copy what `load` loads into a buffer of `layout`: a
 * block of a host tensor descriptor of its rank (operand 3 the kernel
 * argument that is the descriptor's base, the block's coordinates after
 * it), whose out-of-bounds elements read as TMA fills them (`other` 0, or
 * NaN with padding "nan", *nan, for 16- and 32-bit types), into an nvmma
 * buffer TMA boxes can fill, the descriptor's last dimension fastest
 * (gpu_tma.c; gpu-pipeline's TMA copies and gpu-tma-loads). */
bool nr_gpu_tma_fills(const NrModule *m, const NrFunc *f, const NrOp *load, int32_t layout, bool *nan);

/* Whether v is a constant 0 (integer, or float +0.0) / a float NaN constant:
 * the `other` of a load that TMA's fill gives (gpu-pipeline, gpu-tma-loads). */
bool nr_gpu_is_zero_const(const NrFunc *f, NrValId v);
bool nr_gpu_is_nan_const(const NrFunc *f, NrValId v);

#endif
