/* ptx.h - internals shared by the PTX emitter's files.
 *
 *   ptx_emit.c    context, output buffers, registers, layouts (flat bases,
 *                 thread offsets, owners), the kernel skeleton, control flow,
 *                 creation and shape ops, the op dispatch table
 *   ptx_scalar.c  the scalar instruction layer: one function per PTX
 *                 instruction family that either emits the instruction or,
 *                 in evaluation mode, computes it on the host
 *   ptx_elem.c    elementwise ops and casts, per element, on the scalar layer
 *   ptx_mem.c     loads, stores, atomics, print and assert
 *   ptx_reduce.c  layout conversions (registers, shuffles, shared memory),
 *                 reductions, argreduce and the FMA dot
 *   ptx_gather.c  gather and histogram through shared memory
 *   ptx_math.c    Nereid's math library (exp, log, sin, erf, tanh, pow, ...)
 *                 on the scalar layer
 *   ptx_smem.c    shared-memory buffers (address maps of shared layouts,
 *                 vectorized st/ld.shared), async copies (cp.async)
 *   ptx_mma.c     tensor cores: mma.sync dots, ldmatrix operand loads,
 *                 conversions into and out of their layouts
 *   ptx_wgmma.c   warpgroup tensor cores (sm_90a): warp_group_dot on
 *                 wgmma.mma_async with matrix descriptors
 *
 * Values.  A block value with a distributed layout lives in R = 2^nreg
 * elements per thread; a scalar is one element, the same in every thread.
 * Each element is an NrPv: a virtual register of its kind's class, or an
 * immediate.  Every scalar computation goes through ptx_scalar.c, so the
 * same code that writes PTX can run on the CPU (evaluation mode, `eval`):
 * tests check the instruction sequences of integer division, casts, fp8
 * conversion and the math library against the interpreter and libm.
 *
 * Registers are declared in bulk per class (.pred %p, .b16 %rs, .b32 %r,
 * .b64 %rd) and allocated by ptxas.  Bit-size registers serve every type of
 * their width (add.f32 on a .b32 register), so a bitcast is free.
 *   i1                      .pred
 *   i8 i16 i32 u8 u16 u32   .b32, kept sign- or zero-extended to 32 bits
 *   f32                     .b32
 *   i64 u64 pointers f64    .b64
 *   f16 bf16                .b16
 *   f8e4nv f8e5             .b16, the byte in the low 8 bits (high bits 0) */
#ifndef NR_PTX_H
#define NR_PTX_H

#include "gpu.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

/* --- scalar values --------------------------------------------------------------------------------- */
typedef enum NrPk { NR_PK_P, NR_PK_I32, NR_PK_I64, NR_PK_H, NR_PK_F32, NR_PK_F64, NR_PK_COUNT } NrPk;

/* A register (r > 0) or an immediate (r == 0) whose bits are c (F32: the
 * float's bits, F64: the double's, H: 16 bits, preds 0/1). */
typedef struct NrPv {
    uint8_t k; /* NrPk */
    int32_t r;
    uint64_t c;
} NrPv;

/* PTX types of instructions. */
typedef enum NrPt {
    NR_PT_PRED,
    NR_PT_B16, NR_PT_B32, NR_PT_B64,
    NR_PT_S8, NR_PT_S16, NR_PT_S32, NR_PT_S64,
    NR_PT_U8, NR_PT_U16, NR_PT_U32, NR_PT_U64,
    NR_PT_F16, NR_PT_BF16, NR_PT_F32, NR_PT_F64,
    NR_PT_F16X2, NR_PT_BF16X2,
    NR_PT_U16H,        /* .u16 in a .b16 register (cvt between .b32 and .b16 registers) */
    NR_PT_COUNT
} NrPt;

/* Scalar instructions of one or two operands (the type selects the suffix). */
typedef enum NrPo {
    NR_PO_ADD, NR_PO_SUB, NR_PO_MUL,   /* ints: wrap (mul.lo); floats: .rn */
    NR_PO_MULHI,                       /* mul.hi */
    NR_PO_DIV, NR_PO_REM,              /* ints (undefined for /0: callers guard); floats: div.rn */
    NR_PO_DIV_FULL,                    /* div.full.f32 (approximate) */
    NR_PO_AND, NR_PO_OR, NR_PO_XOR,
    NR_PO_SHL, NR_PO_SHR,              /* amount (a .u32) clamped to the width */
    NR_PO_MIN, NR_PO_MAX,              /* floats: the non-NaN operand */
    NR_PO_MIN_NAN, NR_PO_MAX_NAN,      /* floats: NaN if either is */
    NR_PO_COPYSIGN,                    /* copysign: |b| with a's sign (PTX operand order) */
    /* unary */
    NR_PO_NEG, NR_PO_ABS, NR_PO_NOT,
    NR_PO_SQRT,                        /* sqrt.rn */
    NR_PO_SQRT_APPROX, NR_PO_RSQRT_APPROX, NR_PO_RCP,   /* rcp.rn */
    NR_PO_EX2_APPROX, NR_PO_LG2_APPROX,                 /* f32: .approx (subnormals kept) */
    NR_PO_EX2_APPROX_FTZ,                               /* f32: ex2.approx.ftz (subnormals flushed) */
    NR_PO_RINT, NR_PO_TRUNC, NR_PO_FLOOR, NR_PO_CEIL,   /* cvt.rni/rzi/rmi/rpi to the same float type */
    NR_PO_CLZ, NR_PO_POPC,             /* result .u32 */
    NR_PO_BREV,                        /* brev.b32 / .b64: bit reversal */
    NR_PO_TF32,                        /* cvt.rna.tf32.f32: 10 mantissa bits, ties away */
    NR_PO_COUNT
} NrPo;

typedef enum NrPc {
    NR_PC_EQ, NR_PC_NE, NR_PC_LT, NR_PC_LE, NR_PC_GT, NR_PC_GE,     /* ordered (floats) / by type (ints) */
    NR_PC_EQU, NR_PC_NEU, NR_PC_LTU, NR_PC_LEU, NR_PC_GTU, NR_PC_GEU, /* unordered: true on NaN */
    NR_PC_NUM, NR_PC_NAN,
    NR_PC_COUNT
} NrPc;

/* Rounding of cvt: none (exact or int-to-int), to nearest even, toward zero,
 * and the float-to-integral-value forms. */
typedef enum NrPr { NR_PR_NONE, NR_PR_RN, NR_PR_RZ, NR_PR_RNI, NR_PR_RZI, NR_PR_RMI, NR_PR_RPI } NrPr;

/* --- layouts ------------------------------------------------------------------------------------------ */
/* A distributed layout over one shape, in the flat form the emitter uses:
 * every basis vector of the linear layout as the row-major index of its
 * coordinates ("flat").  Coordinates XOR dimension by dimension, and the
 * dimensions are powers of two, so flats XOR as the coordinates do: the
 * element held by (register r, lane, warp) has flat
 *     regflat[r] ^ (XOR of lane bases of set lane bits) ^ (... warp bits),
 * the thread part of which is computed once per layout (tflat). */
typedef struct NrPtxLay {
    int32_t layout;                 /* layout id */
    int rank;
    int32_t shape[NR_MAX_RANK];
    int off[NR_MAX_RANK];           /* bit offset of each dimension in a flat */
    int bits;                       /* log2(numel) */
    int nreg, nlane, nwarp;         /* basis counts (registers = 1 << nreg) */
    uint32_t regb[NR_LL_MAX_BITS], laneb[NR_LL_MAX_BITS], warpb[NR_LL_MAX_BITS];
    uint32_t *regflat;              /* per register */
    uint8_t *dup;                   /* per register: an earlier register holds the same element */
    uint32_t rep_lane, rep_warp;    /* lane / warp bits that only replicate elements */
    int32_t tflat;                  /* register (0 until first needed) */
    int32_t owner;                  /* .pred: this thread holds no replica (0 until needed) */
} NrPtxLay;

/* A value's elements: n of them (1 for scalars); lay is an index into the
 * context's layouts, or -1 for a scalar. */
typedef struct NrPtxVal {
    NrPv *e;
    int n;
    int lay;
} NrPtxVal;

/* Text being written: s[0..n), NUL-terminated, in cap bytes.  A chunked
 * buffer (a function's body and prologue, the bulk of the text) does not
 * move what it holds to grow: full chunks go to a list and s is the newest
 * one; the others are contiguous and grow by doubling. */
typedef struct NrPtxChunk {
    struct NrPtxChunk *next;
    const char *s;
    size_t n;
} NrPtxChunk;

typedef struct NrPtxBuf {
    char *s;
    size_t n, cap;
    bool chunked;
    NrPtxChunk *first, *last;  /* chunked: the full chunks, in order */
    size_t before;             /* chunked: their bytes */
} NrPtxBuf;

/* --- the context ------------------------------------------------------------------------------------------ */
typedef struct NrPtx {
    NrArena *a;
    bool eval;                 /* scalar instructions compute on the host; nothing is written */
    NrFunc *f;
    NrModule *m;
    NrDiags *d;
    int sm;                    /* 80, 86, 89, 90 */
    bool sm_a;
    int num_warps;
    NrPtxBuf *out;             /* where nr_ptx_emit writes: body or pro */
    NrPtxBuf body, pro, glob;
    int32_t nregs[5];          /* per class: registers used */
    NrPtxVal *vals;            /* per value id */
    NrPtxLay *lays;
    int nlays, caplays;
    NrAxisInfo *ax;            /* axis info per value, or NULL */
    int nlabels, nstrings;
    int32_t tid, lane, warp;   /* .b32 registers (prologue); with a producer warpgroup (ws), tid counts
                                * modulo the num_warps warps, so that its warps alias warps 0-3 */
    int32_t tid_raw;           /* %tid.x itself (prologue) */
    int ws_warps;              /* warps of the producer warpgroup a warp_specialize adds (0: none) */
    int bar_threads;           /* threads a barrier counts after the producer split (0: all) */
    bool bulk_reads;           /* a TMA store's bulk group may still be reading its buffer: the next
                                * barrier (or the end, or a call) waits for it first */
    int32_t thread0;           /* .pred tid == 0 (prologue), 0 until needed */
    int32_t warp0;             /* .pred warp 0, warp-uniform (prologue), 0 until needed */
    int maxnreg;                /* .maxnreg of the entry (NrGpuOptions.maxnreg), 0: none */
    int32_t smem;              /* .b32 shared address of the dynamic shared buffer, 0 until needed */
    int64_t smem_bytes;        /* the kernel's dynamic shared memory */
    int64_t scratch_base;      /* where ops without an smem_offset put their scratch */
    bool planned;              /* smem_bytes and scratch_base are set (plan_smem ran) */
    int64_t local_bytes;       /* .local buffer for vprintf arguments */
    bool uses_vprintf, uses_assert, failed;
    /* tensor maps (tensormap ops): kernel parameter <name>_tmap_<j> of the
     * descriptor whose base is argument tmaps[j].arg; box and swizzle come
     * from the tma_loads that read it */
    int ntmaps;
    NrTmapUse tmaps[NR_MAX_TMAPS];
    bool tmap_seen[NR_MAX_TMAPS];
    const char **tables;       /* names of the .const tables emitted */
    int ntables, captables;
    NrOpId op;                 /* the op being emitted, for diagnostics */
    char names[48][32];        /* ring of formatted operand names */
    int name_next;
    char (*regnames[5])[12];   /* per register class: each register's name, formatted once ("" until then) */
    int32_t nregnames[5];
    int ptx_version;           /* PTX ISA version x10 the kernel needs (0: the default, 8.0) */
    bool is_func;              /* emitting a noinline function (.func) rather than the kernel */
    int64_t smem_base;         /* where this function's shared memory starts in the kernel's buffer */
    int64_t *smem_bases;       /* per module function index: its shared memory's start (calls need it) */
    int smem_align;            /* alignment of the dynamic shared memory (0: 16 bytes) */
    struct NrPtxMma *mma;      /* ptx_mma.c's state (packed operand words), NULL until needed */
    /* Demanded elements, per value id: element j of the value is read by
     * some op iff (j & skip[v]) == 0 (register index bits that no reader
     * looks at; 0: every element).  Elementwise ops compute only those (a
     * 16-byte load reads one address per vector); NULL: all are computed. */
    uint32_t *skip;
    /* Shared memory barriers: loops being emitted (an op in a loop body
     * follows its own previous iteration), and whether any instruction so
     * far touched shared memory (or called a function, which may).  Before neither, a scratch has no earlier
     * reader to wait for (nr_ptx_bar_scratch). */
    int loops;
    bool smem_touched;
    /* Float add, sub and mul of the kernel's own arithmetic are written
     * without a rounding modifier while `contract` is set, so that ptxas
     * may fuse a multiply into the add that uses it (fp_fusion: the
     * kernel's option); library code always rounds each step (.rn). */
    bool fp_fusion, contract;
} NrPtx;

/* Register classes (index into nregs). */
enum { NR_RC_P = 1, NR_RC_H, NR_RC_R, NR_RC_D };

/* --- ptx_emit.c: output, registers, values, layouts ----------------------------------------------------------- */
/* The one emit function: a line into the current buffer (indented unless it
 * is a label "$...:"). */
void nr_ptx_emit(NrPtx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* bar.sync before a scratch is written: its earlier readers are done.  Left
 * out in straight-line kernel code before any shared memory access. */
void nr_ptx_bar_scratch(NrPtx *p);
/* Appends n bytes of text to b as they are (module-level lines: globals). */
void nr_ptx_buf_put(NrPtx *p, NrPtxBuf *b, const char *s, size_t n);
/* Record an error at the current op; emission continues so that every
 * problem is reported, but nr_emit_ptx returns NULL. */
void nr_ptx_error(NrPtx *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int32_t nr_ptx_newreg(NrPtx *p, NrPk k);
const char *nr_ptx_reg(NrPtx *p, int32_t r);     /* "%r12" */
/* "%r1, %r2" of registers v[0..n), in braces when n > 1 or always (an arena string). */
char *nr_ptx_reg_list(NrPtx *p, const NrPv *v, int n, bool always_braces);
/* Numbers as the emitter writes them, into o (NUL-terminated); the end:
 * decimal, and upper-case hexadecimal of exactly `digits` digits. */
char *nr_ptx_put_dec(char *o, int64_t v);
char *nr_ptx_put_udec(char *o, uint64_t v);
char *nr_ptx_put_hex(char *o, uint64_t v, int digits);
const char *nr_ptx_opnd(NrPtx *p, NrPv v);       /* register name or immediate */
int nr_ptx_label(NrPtx *p);
/* Kind of the elements of dtype dt (pointers: pass NR_DT_U64). */
NrPk nr_ptx_kind(NrDtype dt);
NrPk nr_ptx_type_kind(const NrModule *m, NrTypeId t);
/* The element values of value v (emitted earlier). */
NrPtxVal *nr_ptx_val(NrPtx *p, NrValId v);
/* Give value v fresh registers (or the given elements). */
NrPtxVal *nr_ptx_def(NrPtx *p, NrValId v);
void nr_ptx_set(NrPtx *p, NrValId v, NrPv *e, int n);
/* The layout of a block type (index into p->lays), or -1 for scalars; -2
 * (with an error) if the type has no usable layout. */
int nr_ptx_lay(NrPtx *p, NrTypeId t);
/* Build a layout's flat form without a context (also for nr_ptx_scratch_bytes). */
bool nr_ptx_lay_build(NrModule *m, int32_t layout, const NrType *t, int num_warps, NrArena *a, NrPtxLay *out);
/* What the emitter derives from a module's type and layout tables, kept for
 * the module's life (NrModule.gpu_cache): flat layouts per type id, and
 * shared-memory address maps per (shared layout, shape, element size). */
struct NrPtxLayEntry;
struct NrSmemMapEntry;
struct NrGpuCache {
    struct NrPtxLayEntry **lays;   /* per type id, NULL until asked for */
    int nlays;
    struct NrSmemMapEntry *maps;
    int nmaps, capmaps;
};
struct NrGpuCache *nr_gpu_cache(NrModule *m);   /* created on first use */
/* The flat form of block type t's layout over num_warps warps, built once
 * per module (type ids name a shape and a layout, and neither table changes
 * what it holds): a copy whose regflat and dup arrays are the module's,
 * shared and read-only, with no registers (tflat, owner) yet.  False for
 * scalars, types without a layout and layouts that cannot hold the shape. */
bool nr_ptx_lay_of_type(NrModule *m, NrTypeId t, int num_warps, NrPtxLay *out);
/* Fill regflat, dup and the replication masks from the bases. */
bool nr_ptx_lay_finish(NrPtxLay *L, NrArena *a);
/* Registers computed once per kernel (in the prologue, so they dominate
 * every use): the thread part of a layout's flats, and the owner predicate. */
int32_t nr_ptx_tflat(NrPtx *p, int lay);
int32_t nr_ptx_owner(NrPtx *p, int lay);
/* tid == 0, as a predicate (prologue). */
int32_t nr_ptx_thread0(NrPtx *p);
NrPv nr_ptx_elect_one(NrPtx *p);
/* Flat (row-major index) of register r of layout lay in this thread (.b32). */
NrPv nr_ptx_flat(NrPtx *p, int lay, int r);
/* The .b32 shared address of byte `off` of the kernel's shared buffer. */
NrPv nr_ptx_smem_addr(NrPtx *p, int64_t off);
/* Byte offset of the scratch buffer of the current op. */
int64_t nr_ptx_scratch_off(NrPtx *p, NrOpId op);
/* A register holding v (immediates are moved into one). */
NrPv nr_ptx_inreg(NrPtx *p, NrPv v);
/* A .b64 generic-to-global pointer string: "[%rd3]" or "[%rd3+8]". */
const char *nr_ptx_addr(NrPtx *p, NrPv base, int64_t off);

/* --- ptx_scalar.c: the scalar instruction layer --------------------------------------------------------------- */
NrPv nr_pv_imm(NrPk k, uint64_t bits);
NrPv nr_pv_f32(float x);
NrPv nr_pv_f64(double x);
NrPv nr_pv_i32(int64_t x);
NrPv nr_pv_i64(int64_t x);
NrPv nr_pv_pred(bool b);
static inline bool nr_pv_is_imm(NrPv v) { return v.r == 0; }
/* An element no op reads (see NrPtx.skip): naming it is an internal error. */
#define NR_PV_UNUSED_REG (-1)
static inline NrPv nr_pv_unused(NrPk k) { return (NrPv){(uint8_t)k, NR_PV_UNUSED_REG, 0}; }
NrPk nr_pt_kind(NrPt t);
const char *nr_pt_name(NrPt t);  /* ".s32" */
int nr_pt_bits(NrPt t);

NrPv nr_pb_bin(NrPtx *p, NrPo o, NrPt t, NrPv a, NrPv b);
NrPv nr_pb_un(NrPtx *p, NrPo o, NrPt t, NrPv a);
NrPv nr_pb_fma(NrPtx *p, NrPt t, NrPv a, NrPv b, NrPv c);
NrPv nr_pb_setp(NrPtx *p, NrPc c, NrPt t, NrPv a, NrPv b);
NrPv nr_pb_selp(NrPtx *p, NrPv c, NrPv a, NrPv b);     /* c ? a : b, any kind */
NrPv nr_pb_cvt(NrPtx *p, NrPr r, NrPt dt, NrPt st, NrPv a);
NrPv nr_pb_pand(NrPtx *p, NrPv a, NrPv b);
NrPv nr_pb_por(NrPtx *p, NrPv a, NrPv b);
NrPv nr_pb_pxor(NrPtx *p, NrPv a, NrPv b);
NrPv nr_pb_pnot(NrPtx *p, NrPv a);
/* Float arithmetic in a directed rounding mode: op is "add" "sub" "mul"
 * "div" (2 operands), "fma" (3), "sqrt" "rcp" (1); mode 0..3 = rn rz rm rp. */
NrPv nr_pb_rounded(NrPtx *p, const char *op, int mode, NrPt t, const NrPv *x);
/* Three-operand integer instructions: "sad" (|a - b| + c, by t's
 * signedness) and "prmt" (.b32 byte permute, default mode). */
NrPv nr_pb_op3(NrPtx *p, const char *op, NrPt t, NrPv a, NrPv b, NrPv c);
/* Reinterpret the bits as kind k (same width): mov.bNN. */
NrPv nr_pb_bits(NrPtx *p, NrPk k, NrPv a);
/* {lo, hi} halves: two .b16 into a .b32, two .b32 into a .b64, and back. */
NrPv nr_pb_pack(NrPtx *p, NrPv lo, NrPv hi);
void nr_pb_unpack(NrPtx *p, NrPv v, NrPv *lo, NrPv *hi);
/* A copy in a fresh register (for loop-carried state). */
NrPv nr_pb_mov(NrPtx *p, NrPv a);
void nr_pb_mov_to(NrPtx *p, NrPv dst, NrPv a);  /* dst is a register */
/* A loop: state[0..n) are carried; body(p, state, ctx) updates them and
 * returns the continue predicate.  The body runs at least once. */
typedef NrPv (*NrPbBody)(NrPtx *p, NrPv *state, void *ctx);
void nr_pb_loop(NrPtx *p, NrPv *state, int n, NrPbBody body, void *ctx);
/* if (c) body(p, state, ctx): state[0..n) are updated only when c holds
 * (the body's return value is ignored). */
void nr_pb_cond(NrPtx *p, NrPv c, NrPv *state, int n, NrPbBody body, void *ctx);
/* table[index] from a constant table (.const array `name`, emitted once). */
NrPv nr_pb_table(NrPtx *p, const char *name, const uint32_t *table, int n, NrPv index);

/* --- ptx_elem.c: per-element semantics of the IR's elementwise ops ------------------------------------------- */
/* Binary op opc (add ... umulhi, div_rn) on dtype dt; nanall for max/min. */
NrPv nr_pe_binary(NrPtx *p, NrOpcode opc, NrDtype dt, bool nanall, NrPv a, NrPv b);
NrPv nr_pe_unary(NrPtx *p, NrOpcode opc, NrDtype dt, NrPv a);
NrPv nr_pe_fma(NrPtx *p, NrDtype dt, NrPv a, NrPv b, NrPv c);
/* cmp predicate 0..5 = eq ne lt le gt ge; pointers pass NR_DT_U64. */
NrPv nr_pe_cmp(NrPtx *p, int pred, NrDtype dt, NrPv a, NrPv b);
NrPv nr_pe_cast(NrPtx *p, NrDtype from, NrDtype to, bool rtz, NrPv a);
/* Float values of narrow types to f32 and back (exact / RNE). */
NrPv nr_pe_to_f32(NrPtx *p, NrDtype dt, NrPv a);
NrPv nr_pe_from_f32(NrPtx *p, NrDtype dt, NrPv a);
/* The `math` family by name; NULL fn name or unknown: error. */
NrPv nr_pe_math(NrPtx *p, const char *fn, NrDtype dt, int n, const NrPv *x);
/* The `imath` family (clz popc brev ffs mulhi mul24 hadd rhadd sad byte_perm) on dtype dt. */
NrPv nr_pe_imath(NrPtx *p, const char *fn, NrDtype dt, const NrPv *x);

/* --- ptx_math.c: the math library (f32 and f64) ------------------------------------------------------------- */
/* Function `name` (libdevice name without __nv_) of n operands in kind k
 * (F32 or F64); false if the library has no such function. */
bool nr_pm_call(NrPtx *p, const char *name, NrPk k, int n, const NrPv *x, NrPv *out);
/* Names the library implements, for tests: NULL-terminated. */
extern const char *const nr_pm_names[];

/* The elementwise op driver (every ELEM op, addptr, casts, select). */
bool nr_ptx_op_elem(NrPtx *p, NrOpId op);
/* Emits the run of elementwise ops starting at `first` element-major
 * (ptx_elem.c) and returns its last op, or NR_NONE (nothing emitted) when
 * there is no run of two or more. */
NrOpId nr_ptx_elem_run(NrPtx *p, NrOpId first);
bool nr_ptx_op_const(NrPtx *p, NrOpId op);
/* Demanded elements (NrPtx.skip): given the result's skip mask, narrow the
 * masks of the operands to what op reads of them.  Elementwise ops
 * (ptx_elem.c), load and store (ptx_mem.c), async_copy (ptx_smem.c). */
void nr_ptx_elem_demand(NrPtx *p, NrOpId op, uint32_t *skip);
void nr_ptx_mem_demand(NrPtx *p, NrOpId op, uint32_t *skip);
void nr_ptx_async_copy_demand(NrPtx *p, NrOpId op, uint32_t *skip);
/* inline_asm: the assembly pasted per `pack` elements, $N naming registers. */
bool nr_ptx_op_inline_asm(NrPtx *p, NrOpId op);
/* A context that evaluates scalar instructions on the host (tests). */
NrPtx *nr_ptx_eval_new(NrArena *a, int sm);

/* --- ptx_mem.c / ptx_reduce.c: op emitters ------------------------------------------------------------------ */
bool nr_ptx_op_load(NrPtx *p, NrOpId op);
bool nr_ptx_op_store(NrPtx *p, NrOpId op);
bool nr_ptx_op_atomic_rmw(NrPtx *p, NrOpId op);
bool nr_ptx_op_atomic_cas(NrPtx *p, NrOpId op);
bool nr_ptx_op_print(NrPtx *p, NrOpId op);
bool nr_ptx_op_assert(NrPtx *p, NrOpId op);
bool nr_ptx_op_reduce(NrPtx *p, NrOpId op);
bool nr_ptx_op_argreduce(NrPtx *p, NrOpId op);
bool nr_ptx_op_dot(NrPtx *p, NrOpId op);
/* ptx_gather.c: gather and histogram through shared memory, and their
 * scratch bytes (0 for other ops). */
bool nr_ptx_op_gather(NrPtx *p, NrOpId op);
bool nr_ptx_op_histogram(NrPtx *p, NrOpId op);
int64_t nr_ptx_gather_scratch(NrModule *m, NrFunc *f, NrOpId op);

/* A linear map from the flats of one shape to the flats of another: the
 * image of each flat bit. */
typedef struct NrFlatMap {
    int bits;
    uint32_t img[32];
} NrFlatMap;
static inline uint32_t nr_flatmap_apply(const NrFlatMap *f, uint32_t x) {
    uint32_t y = 0;
    for (int i = 0; i < f->bits; i++)
        if (x >> i & 1) y ^= f->img[i];
    return y;
}

/* How a value reaches another layout: elements already in place (alias),
 * warp shuffles, or a round trip through shared memory. */
typedef enum { NR_CONV_ALIAS, NR_CONV_SHUFFLE, NR_CONV_SMEM } NrConvKind;
/* Plan to produce layout dst from src, where dst's element with flat x is
 * src's element with flat f(x).  Scratch bytes are set for NR_CONV_SMEM
 * (elements of es bytes). */
NrConvKind nr_ptx_conv_plan(const NrPtxLay *src, const NrPtxLay *dst, const NrFlatMap *f, int es, int64_t *scratch);
/* Elements of value `src` (layout sl) rearranged into layout dl, elements of
 * dtype dt (pointers: NR_DT_U64); scratch at byte offset off if needed.
 * Returns an array of dl's register count. */
NrPv *nr_ptx_convert(NrPtx *p, const NrPv *src, int sl, int dl, const NrFlatMap *f, NrDtype dt, int64_t off);
/* Scratch bytes of a shape op, a reduction or a conversion (0 if none). */
int64_t nr_ptx_op_scratch(NrModule *m, NrFunc *f, NrOpId op, int num_warps, NrArena *a);
/* The flat map of a shape op (result flat -> operand flat). */
bool nr_ptx_shape_map(const NrModule *m, const NrOp *op, const NrType *rt, const NrType *at, NrFlatMap *f);
/* A barrier over the whole program. */
void nr_ptx_bar(NrPtx *p);
void nr_ptx_bulk_wait(NrPtx *p);
/* Elements of a dtype in shared memory: bytes (i1: 1). */
int nr_ptx_smem_es(NrDtype dt);
/* st.shared / ld.shared of one element of dtype dt at a .b32 address. */
void nr_ptx_st_shared(NrPtx *p, NrDtype dt, NrPv addr, NrPv v, NrPv pred);
NrPv nr_ptx_ld_shared(NrPtx *p, NrDtype dt, NrPv addr);
/* Padded shared-memory element index (avoids bank conflicts of strided access). */
NrPv nr_ptx_smem_index_addr(NrPtx *p, int64_t base, NrPv flat, int es);
int64_t nr_ptx_smem_padded_bytes(int64_t numel, int es);

/* --- ptx_smem.c: shared-memory buffers, async copies ---------------------------------------------------- */
/* State of ptx_smem.c and ptx_mma.c during one emission. */
struct NrPtxThreadOff {
    uint32_t img[2 * NR_LL_MAX_BITS];  /* lane images, then warp images */
    int32_t reg;
};
struct NrPtxLdsmLoad;          /* ptx_mma.c: an ldmatrix load issued at its dot */
struct NrPtxMma {
    NrPv **words;              /* per value id: the 32-bit words ldmatrix loaded it from, or NULL */
    int32_t *nwords;
    struct NrPtxLdsmLoad **pending; /* per value id: its ldmatrix instructions, issued by the dot */
    int32_t *uses;             /* uses per value id (computed when first needed) */
    struct NrPtxThreadOff *toffs; /* thread parts of shared addresses (prologue registers) */
    int ntoffs, captoffs;
    int8_t async_proxy;        /* the function reads buffers through the async proxy (wgmma): -1 not known yet */
    struct NrPtxWgPlan *plans; /* ptx_wgmma.c: the plans made, by operand and result types */
    int nplans, capplans;
};
/* Whether writes to buffers must be followed by fence.proxy.async (the
 * function has a warp_group_dot). */
bool nr_ptx_async_proxy(NrPtx *p);
struct NrPtxMma *nr_ptx_mma_state(NrPtx *p);  /* p->mma, created on first use */
/* A buffer's address map: the element with flat x (its row-major index in
 * the buffer) lies at element offset XOR over x's set bits i of img[i].
 * Shared layouts with power-of-two parameters are linear over F2; the
 * builders check every element against nr_shared_offset. */
typedef struct NrSmemMap {
    int bits;                  /* log2 of the buffer's elements */
    uint32_t img[32];
    int es;                    /* bytes per element */
    int64_t bytes;             /* bytes of the buffer */
} NrSmemMap;
/* The map of shared layout `layout` over a buffer of `shape` (rank: the
 * layout's, or one more for a multi-buffered allocation with a power-of-two
 * count); false if the layout is not linear there. */
bool nr_smem_map(NrModule *m, int32_t layout, int rank, const int32_t *shape, int es, NrSmemMap *out);
/* The same for a `shared<vec, per_phase, max_phase, order>` layout that is
 * in no module (conversion scratch). */
bool nr_smem_map_swizzled(NrModule *m, int rank, const int32_t *shape, int es, int vec, int per_phase, int max_phase,
                          const int32_t *order, NrSmemMap *out);
/* Registers of distributed layout L in buffer S: register r of (lane, warp)
 * lies at element offset T ^ reg[r], T the XOR of lane[i] over the set lane
 * bits and warp[i] over the set warp bits.  Runs of vec consecutive
 * registers (vec * es <= max_bytes) are contiguous and vec-aligned. */
typedef struct NrSmemAccess {
    int vec;
    int nlane, nwarp;
    uint32_t lane[NR_LL_MAX_BITS], warp[NR_LL_MAX_BITS];
    uint32_t tmask;            /* OR of the lane and warp images */
    uint32_t *reg;             /* per register */
} NrSmemAccess;
void nr_smem_access(const NrPtxLay *L, const NrSmemMap *S, int max_bytes, NrArena *a, NrSmemAccess *out);
/* Addresses base + es * (T ^ c): T from the lane and warp images (a
 * register of the prologue), c a constant.  nr_smem_addr returns a
 * register and an immediate byte offset: the bits of c outside every image
 * add, the others cost one xor per distinct value (kept for reuse). */
typedef struct NrSmemAddr {
    NrPv base, t;
    uint32_t tmask;
    int es;
    int n;
    uint32_t keys[32];
    NrPv regs[32];
} NrSmemAddr;
void nr_smem_addr_init(NrPtx *p, NrSmemAddr *g, NrPv base, const uint32_t *lane, int nlane, const uint32_t *warp,
                       int nwarp, int es);
NrPv nr_smem_addr(NrPtx *p, NrSmemAddr *g, uint32_t c, int64_t *imm);
/* Elements of layout lay (dtype dt) stored to / loaded from buffer S at
 * `base`; stores skip duplicate registers and replicas (owners store), and
 * on sm_90 go by stmatrix where nr_stsm_plan allows. */
void nr_smem_store(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt, const NrPv *elems);
NrPv *nr_smem_load(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt);
/* 32-bit words of 32 / bits(dt) elements, low element first, and back. */
NrPv nr_ptx_pack_word(NrPtx *p, NrDtype dt, const NrPv *elems);
void nr_ptx_unpack_word(NrPtx *p, NrDtype dt, NrPv word, NrPv *elems);
/* End (bytes) of local_alloc op's buffer in shared memory, 0 if op is no
 * placed local_alloc. */
int64_t nr_ptx_alloc_end(NrFunc *f, NrOpId op);
bool nr_ptx_op_local_alloc(NrPtx *p, NrOpId op);
bool nr_ptx_op_local_store(NrPtx *p, NrOpId op);
bool nr_ptx_op_memdesc_index(NrPtx *p, NrOpId op);
bool nr_ptx_op_memdesc_trans(NrPtx *p, NrOpId op);
bool nr_ptx_op_async_copy(NrPtx *p, NrOpId op);
bool nr_ptx_op_async_commit(NrPtx *p, NrOpId op);
bool nr_ptx_op_async_wait(NrPtx *p, NrOpId op);
/* mbarriers and TMA copies (sm_90): thread 0 initializes, arrives and
 * issues; cp.async.bulk.tensor copies a tile from the tensor map at a
 * 64-bit generic address into an nvmma buffer, completing on an mbarrier
 * (mbarrier.try_wait.parity). */
bool nr_ptx_op_mbarrier_init(NrPtx *p, NrOpId op);
bool nr_ptx_op_mbarrier_expect(NrPtx *p, NrOpId op);
bool nr_ptx_op_mbarrier_wait(NrPtx *p, NrOpId op);
bool nr_ptx_op_mbarrier_arrive(NrPtx *p, NrOpId op);
bool nr_ptx_op_tma_load(NrPtx *p, NrOpId op);
bool nr_ptx_op_tensormap(NrPtx *p, NrOpId op);
bool nr_ptx_op_tma_store(NrPtx *p, NrOpId op);
bool nr_ptx_op_mbarrier_inval(NrPtx *p, NrOpId op);
/* How tma_load fills a buffer of `shape` with shared layout l (nvmma):
 * the tensor map's dimension k (fastest first) is the buffer's dim[k]; a
 * box holds box[k] elements along it; `nbox` copies, copy j at byte
 * `j * stride` of the buffer and at coordinate + j * box[0] along the
 * fastest dimension.  The host's tensor map must have these box sizes and
 * the layout's swizzle.  false if TMA cannot fill the buffer. */
typedef struct NrTmaPlan {
    int rank;
    int dim[5];
    int64_t box[5];
    int64_t nbox, stride;
    int swizzle;
} NrTmaPlan;
bool nr_tma_plan(const NrLayout *l, int rank, const int32_t *shape, int es, NrTmaPlan *out);

/* --- ptx_mma.c: tensor cores (mma.sync), ldmatrix, conversions to and from their layouts ------------------ */
/* ldmatrix for a dot operand: each instruction loads nmat 8x8 matrices of
 * 16-bit units (.x1 .x2 .x4), matrix j into the destination's 32-bit word
 * word[j] (registers word * epw .. + epw - 1, low element first).  Lane L
 * supplies the address of row L % 8 of matrix L / 8: element offset
 * (XOR of lane[i] over L's set bits) ^ (XOR of warp[i] over the warp's set
 * bits) ^ off. */
typedef struct NrLdsmInstr {
    int nmat;
    uint32_t off;
    int32_t word[4];
} NrLdsmInstr;
typedef struct NrLdsmPlan {
    bool trans;                /* .trans: rows of the buffer are the operand's non-k dimension */
    int es, epw;               /* element bytes; elements per 32-bit word */
    int nwarp;
    uint32_t lane[5], warp[NR_LL_MAX_BITS];
    int ninstr;
    NrLdsmInstr *ins;
} NrLdsmPlan;
/* false if ldmatrix cannot load layout D from buffer S (then ld.shared). */
bool nr_ldsm_plan(const NrPtxLay *D, const NrSmemMap *S, NrArena *a, NrLdsmPlan *out);

/* stmatrix (sm_90) of layout L into buffer S: the mirror of ldmatrix, so
 * the same plan (words, lanes, offsets), found only for 16-bit elements
 * held once each (no replicas or duplicate registers) whose matrices' rows
 * are free of bank conflicts; false otherwise (then st.shared). */
bool nr_stsm_plan(const NrPtxLay *L, const NrSmemMap *S, NrArena *a, NrLdsmPlan *out);
/* Elements of layout lay (dtype dt) stored into buffer S at base by
 * stmatrix; false, with nothing emitted, where the target (below sm_90),
 * the dtype or the plan does not allow it. */
bool nr_stsm_store(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt, const NrPv *elems);

/* mma.sync instructions of a dot: shape m16n8k16 (16-bit operands),
 * m16n8k8 (tf32) or m16n8k32 (8-bit); per instruction the operand register
 * of each fragment slot a_i, b_i, c_i of the PTX ISA's tables. */
typedef enum NrMmaShape { NR_MMA_K16, NR_MMA_K8, NR_MMA_K32 } NrMmaShape;
typedef enum NrMmaMode {
    NR_MMA_NATIVE,             /* the operands' own instruction */
    NR_MMA_TF32X3,             /* f32 as three tf32 products (head*tail, tail*head, head*head) */
    NR_MMA_F8_AS_F16,          /* fp8 operands in k_width 4 layouts, converted to f16 for m16n8k16 */
} NrMmaMode;
typedef struct NrMmaInstr {
    int32_t a[16], b[8], c[4];
    uint8_t apart, bpart;      /* tf32x3: 0 the value, 1 its tf32 head, 2 the tf32 tail */
    bool first;                /* starts its tile's chain: C is the dot's accumulator */
} NrMmaInstr;
typedef struct NrMmaPlan {
    NrMmaShape shape;
    int na, nb;                /* fragment slots of A and B */
    int ninstr;
    NrMmaInstr *ins;
} NrMmaPlan;
/* The plan for result layout C with operand layouts A and B (k_width kw);
 * false with a reason if the layouts do not match the fragment tables. */
bool nr_mma_plan(const NrPtxLay *A, const NrPtxLay *B, const NrPtxLay *C, int kw, NrMmaMode mode, NrArena *a,
                 NrMmaPlan *out, char *why, size_t n);
/* The swizzled scratch buffer through which convert_layout takes layout S
 * to D when D is an mma operand or S an mma accumulator (and shared memory
 * is needed): 16-byte vectors along one dimension, 128-byte rows. */
bool nr_ptx_conv_scratch_map(NrModule *m, const NrPtxLay *S, const NrPtxLay *D, int es, NrSmemMap *out);
/* dot on tensor cores when the result has an mma layout, else the FMA path. */
bool nr_ptx_op_dot_any(NrPtx *p, NrOpId op);
bool nr_ptx_op_local_load(NrPtx *p, NrOpId op);
bool nr_ptx_op_convert_layout(NrPtx *p, NrOpId op);
/* Scratch bytes of the ops above (convert_layout, mma dots, buffer ops);
 * false if op is none of them. */
bool nr_ptx_mma_scratch(NrModule *m, NrFunc *f, NrOpId op, int num_warps, NrArena *a, int64_t *bytes);

/* --- ptx_wgmma.c: warp_group_dot on wgmma.mma_async (sm_90a) ------------------------------------------- */
/* An operand in shared memory as wgmma reads it through a matrix
 * descriptor (PTX ISA, "Matrix Descriptor Format"): 64 bits of
 *   13-0   (start address & 0x3FFFF) >> 4
 *   29-16  leading dimension byte offset >> 4
 *   45-32  stride dimension byte offset >> 4
 *   51-49  base offset (0: buffers start on their swizzle pattern)
 *   63-62  swizzle: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
 * Our nvmma buffers are canonical layouts of 8-row x swizzle-byte atoms.
 * K-major (trans 0): rows of the atom run along M (A) or N (B), k along
 * the swizzled row; SBO = 8 x swizzle (one atom), LBO unused (1).
 * MN-major (trans 1, 16-bit types only): rows run along k, the swizzled
 * row along M or N; SBO = 8 x swizzle, LBO = the distance of the next
 * swizzle-wide block of M or N (rows x swizzle bytes). */
typedef struct NrWgmmaDesc {
    bool trans;
    int swizzle;               /* 32, 64 or 128 bytes */
    int64_t lbo, sbo;          /* bytes */
    int es;                    /* element bytes */
    int nwarp;
    uint32_t warp[NR_LL_MAX_BITS]; /* per warp bit: element offset (XOR) of the warpgroup's tile shift */
} NrWgmmaDesc;
/* The 64-bit descriptor of an operand whose first element is at shared
 * address `start`. */
uint64_t nr_wgmma_desc_bits(const NrWgmmaDesc *d, uint32_t start);
typedef struct NrWgmmaInstr {
    uint32_t aoff, boff;       /* element offsets in the buffers (XOR of map images) of the tile's A and B origins,
                                  for warpgroup 0 */
    int32_t a[16];             /* A in registers: the register of each fragment slot */
    int32_t *d;                /* the accumulator register of each D fragment slot (n / 2 of them) */
    bool first;                /* the tile's first k step */
} NrWgmmaInstr;
typedef struct NrWgmmaPlan {
    int n, k;                  /* wgmma.m64nNkK */
    bool a_regs;               /* A from registers (its dot_op layout) */
    NrWgmmaDesc A, B;          /* A unused when a_regs */
    int na;                    /* A fragment slots (registers of A elements) */
    int nd;                    /* D fragment slots: n / 2 */
    int ninstr;
    NrWgmmaInstr *ins;
} NrWgmmaPlan;
/* A buffer operand: its nvmma layout, shape (one buffer), element bytes and
 * address map. */
typedef struct NrWgmmaBuf {
    const NrLayout *layout;
    int32_t shape[2];
    int es;
    NrSmemMap map;
} NrWgmmaBuf;
/* The plan of warp_group_dot with accumulator layout C (mma version 3), A
 * from registers (layout Ar, k_width kw) or buffer Ab, B from buffer Bb.
 * Every D and A slot of every lane and warp, and every element of every
 * descriptor's tile, is checked against the layouts; false with a reason. */
bool nr_wgmma_plan(const NrLayout *cl, const NrPtxLay *C, const NrPtxLay *Ar, int kw, const NrWgmmaBuf *Ab,
                   const NrWgmmaBuf *Bb, NrArena *a, NrWgmmaPlan *out, char *why, size_t n);
/* Byte offset from a descriptor's start address of element (r, k) of its
 * tile - r along M (A) or N (B), k along K - before the swizzle; and the
 * swizzle of a shared address (address bits 4.. XOR bits 7..). */
int64_t nr_wgmma_canonical(const NrWgmmaDesc *d, int r, int k);
uint32_t nr_wgmma_swizzle(int swizzle, uint32_t addr);
bool nr_ptx_op_warp_group_dot(NrPtx *p, NrOpId op);
bool nr_ptx_op_warp_group_dot_wait(NrPtx *p, NrOpId op);

#endif
