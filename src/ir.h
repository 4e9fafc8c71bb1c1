/* ir.h - Nereid's block IR: typed SSA over scalars, pointers and N-d blocks,
 * with structured control flow.
 *
 *   NrModule   one compilation: arena, sources, interned types, functions
 *   NrFunc     ops, values and blocks of one function, in per-function arrays
 *   NrOp       an instance of an op-table row (ops.def): operands, results,
 *              attributes, regions, source location
 *   NrBlock    a region's single block: block arguments and a list of ops
 *   NrValue    a result of an op or an argument of a block
 *
 * Ids are indices into the per-function (or per-module, for types) arrays.
 * Id 0 is reserved everywhere and means "none": NR_NONE.  Every allocation
 * comes from the module's arena; nr_module_free() releases the lot.
 *
 * Types are interned: two NrTypeIds are equal iff the types are equal.
 * A type is an element (a dtype, or a pointer to one) with a shape; rank 0
 * is a scalar.  GPU passes add a layout to block types (layout id; 0 while
 * the IR is target-independent). */
#ifndef NR_IR_H
#define NR_IR_H

#include "arena.h"
#include "diag.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define NR_NONE 0
#define NR_MAX_RANK 8

/* --- dtypes ---------------------------------------------------------------------------------- */
typedef enum NrDtype {
    NR_DT_INVALID = 0,
#define DT(ID, ir, tri, sig, bits, cls) NR_DT_##ID,
#include "dtypes.def"
#undef DT
    NR_DT_COUNT
} NrDtype;

typedef enum { NR_DTC_BOOL, NR_DTC_SINT, NR_DTC_UINT, NR_DTC_FLOAT } NrDtypeClass;

typedef struct NrDtypeInfo {
    const char *ir, *triton, *sig;
    int bits;
    int bytes;        /* storage size in bytes (i1: 1) */
    NrDtypeClass cls;
} NrDtypeInfo;

extern const NrDtypeInfo nr_dtype_info[NR_DT_COUNT];

static inline bool nr_dt_is_float(NrDtype d) { return nr_dtype_info[d].cls == NR_DTC_FLOAT; }
static inline bool nr_dt_is_int(NrDtype d) { return d != NR_DT_INVALID && nr_dtype_info[d].cls != NR_DTC_FLOAT; }
static inline bool nr_dt_is_signed(NrDtype d) { return nr_dtype_info[d].cls == NR_DTC_SINT; }
static inline bool nr_dt_is_unsigned(NrDtype d) { return nr_dtype_info[d].cls == NR_DTC_UINT; }
static inline bool nr_dt_is_fp8(NrDtype d) { return d == NR_DT_F8E4NV || d == NR_DT_F8E5; }
static inline int nr_dt_bits(NrDtype d) { return nr_dtype_info[d].bits; }
/* Lookups by name; NR_DT_INVALID if unknown. */
NrDtype nr_dtype_from_ir(const char *s, size_t n);
NrDtype nr_dtype_from_triton(const char *s, size_t n);
NrDtype nr_dtype_from_sig(const char *s, size_t n);

/* --- types ----------------------------------------------------------------------------------- */
typedef int32_t NrTypeId;

typedef enum {
    NR_TK_VALUE = 0,
    NR_TK_MEMDESC,     /* GPU IR: a shared-memory buffer, `!smem<[B x] shape x elem, #Ln>` (gpu.h) */
} NrTypeKind;  /* more kinds (tensor descriptors) come later */

typedef struct NrType {
    uint8_t kind;      /* NrTypeKind */
    uint8_t dtype;     /* NrDtype of the element, or of the pointee for pointers */
    uint8_t ptr;       /* pointer depth: 0 a value, 1 a pointer to dtype, 2 a pointer to that, ... */
    uint8_t rank;      /* 0 = scalar */
    int32_t shape[NR_MAX_RANK];
    int32_t layout;    /* 0 = none; GPU layout id */
} NrType;

/* --- attributes ------------------------------------------------------------------------------ */
typedef enum NrAttrName {
    NR_A_INVALID = 0,
#define ATTR(ID, name) NR_A_##ID,
#include "attrs.def"
#undef ATTR
    NR_A_COUNT
} NrAttrName;

extern const char *const nr_attr_names[NR_A_COUNT];
NrAttrName nr_attr_from_name(const char *s, size_t n);

typedef enum { NR_AK_INT, NR_AK_FLOAT, NR_AK_BOOL, NR_AK_STR, NR_AK_INTS } NrAttrKind;

typedef struct NrAttr {
    uint16_t name;   /* NrAttrName */
    uint8_t kind;    /* NrAttrKind */
    int32_t n;       /* NR_AK_INTS: element count */
    union {
        int64_t i;   /* INT, BOOL (0/1) */
        double f;
        const char *s;
        const int64_t *ints;
    } v;
} NrAttr;

/* --- ops ------------------------------------------------------------------------------------- */
typedef enum NrOpcode {
    NR_OP_INVALID = 0,
#define OP(ID, name, no, nr, ng, fl, vc, dc, meaning) NR_OP_##ID,
#include "ops.def"
#undef OP
    NR_OP_COUNT
} NrOpcode;

enum {
    NR_OPF_PURE = 1 << 0,
    NR_OPF_COMM = 1 << 1,
    NR_OPF_TERM = 1 << 2,
    NR_OPF_ELEM = 1 << 3,
    NR_OPF_READ = 1 << 4,
    NR_OPF_WRITE = 1 << 5,
};
typedef enum { NR_VC_SAME, NR_VC_CMP, NR_VC_CUSTOM } NrVerifyClass;
typedef enum { NR_DC_ANY, NR_DC_NUM, NR_DC_INT, NR_DC_FLT } NrDtypeAllowed;
#define NR_VAR (-1)

typedef struct NrOpInfo {
    const char *name;
    int nopnd, nres, nreg;    /* NR_VAR for variadic */
    unsigned flags;
    NrVerifyClass vclass;
    NrDtypeAllowed dclass;
    const char *meaning;
} NrOpInfo;

extern const NrOpInfo nr_op_info[NR_OP_COUNT];
NrOpcode nr_opcode_from_name(const char *s, size_t n);

typedef int32_t NrValId;
typedef int32_t NrOpId;
typedef int32_t NrBlockId;

typedef struct NrOp {
    uint16_t opc;       /* NrOpcode */
    uint8_t dead;       /* unlinked; the slot is kept so ids stay stable */
    uint8_t nregions;
    int32_t nopnds, nresults, nattrs;
    NrValId *opnds;     /* NR_NONE marks an absent optional operand */
    NrValId *results;
    NrBlockId *regions;
    NrAttr *attrs;
    NrLoc loc;
    NrBlockId block;    /* parent block */
    NrOpId prev, next;  /* siblings in the parent block */
} NrOp;

typedef struct NrValue {
    NrTypeId type;
    NrOpId def;         /* defining op, or NR_NONE for a block argument */
    NrBlockId block;    /* for block arguments: the block */
    int32_t index;      /* result index or argument index */
    const char *name;   /* optional name hint (kernel parameter names), may be NULL */
} NrValue;

typedef struct NrBlock {
    NrOpId first, last;
    NrValId *args;
    int32_t nargs, capargs;
    NrOpId parent;      /* op whose region this is; NR_NONE for a function body */
} NrBlock;

/* Per-parameter facts of a specialized kernel signature. */
typedef struct NrParam {
    const char *name;
    int32_t divisibility;   /* 16 if the value (or address) is divisible by 16, else 1 */
    bool equal_to_1;        /* specialized to the constant 1 */
    bool is_constexpr;      /* constexpr params are not function arguments */
    int32_t index;          /* position among all the declared parameters, constexpr ones included */
    int32_t tensordesc;     /* > 0: the base of a host tensor descriptor of this rank, whose sizes (i32)
                             * and strides (i64) are the next 2 * rank arguments */
} NrParam;

typedef struct NrFunc {
    struct NrModule *mod;
    const char *name;
    bool is_kernel;         /* the entry point; others are helpers awaiting inlining */
    bool noinline;
    NrLoc loc;
    NrBlockId body;         /* entry block; its args are the function's arguments */
    NrParam *params;        /* one per body argument */
    NrTypeId *rtypes;       /* result types */
    int32_t nrtypes;
    int64_t smem_bytes;     /* GPU IR: shared memory the kernel uses, set by gpu_smem.c (`smem = N`) */
    NrOp *ops;       int32_t nops, capops;      /* [0] unused */
    NrValue *vals;   int32_t nvals, capvals;    /* [0] unused */
    NrBlock *blocks; int32_t nblocks, capblocks;/* [0] unused */
} NrFunc;

typedef struct NrModule {
    NrArena *arena;         /* owned unless borrowed (see nr_module_new) */
    bool owns_arena;
    NrSources sources;
    NrType *types; int32_t ntypes, captypes;  /* [0] unused */
    NrFunc **funcs; int32_t nfuncs, capfuncs;
    /* GPU level (gpu.h): the layout table ([0] unused) and the target. */
    struct NrLayout *layouts; int32_t nlayouts, caplayouts;
    int32_t num_warps;      /* 0 while the module is target-independent */
    int32_t sm;             /* target compute capability x10 (80, 90); 0 = none */
    bool sm_a;              /* sm_90a: the architecture-specific features (wgmma, setmaxnreg) may be used */
    bool no_tma;            /* gpu-pipeline keeps host tensor descriptors' loads on cp.async (no TMA) */
    /* Facts derived from the (append-only) type and layout tables, kept by
     * the PTX emitter for reuse across passes (ptx_emit.c); NULL until used. */
    struct NrGpuCache *gpu_cache;
    /* Hash index of the type table for nr_type_intern (ir.c); NULL until
     * used.  Code that rewrites types in place resets it to NULL. */
    struct NrTypeIndex *type_index;
} NrModule;

/* --- module and functions -------------------------------------------------------------------- */
/* A module with its own arena (arena == NULL) or on a caller's arena. */
NrModule *nr_module_new(NrArena *arena);
void nr_module_free(NrModule *m);
NrFunc *nr_func_new(NrModule *m, const char *name, int nargs, const NrTypeId *argtypes, int nres,
                    const NrTypeId *rtypes);
NrFunc *nr_module_find_func(NrModule *m, const char *name);
/* Remove function f from the module's list (its memory stays in the arena). */
void nr_module_remove_func(NrModule *m, NrFunc *f);

/* --- types ----------------------------------------------------------------------------------- */
NrTypeId nr_type_intern(NrModule *m, const NrType *t);
NrTypeId nr_type_scalar(NrModule *m, NrDtype dt);
NrTypeId nr_type_ptr(NrModule *m, NrDtype pointee, int depth);
/* Block of elem's element (elem is a scalar or pointer type); rank 0 gives elem. */
NrTypeId nr_type_block(NrModule *m, NrTypeId elem, int rank, const int32_t *shape);
static inline const NrType *nr_type(const NrModule *m, NrTypeId t) { return &m->types[t]; }
NrTypeId nr_type_elem(NrModule *m, NrTypeId t);              /* the scalar/pointer element type */
NrTypeId nr_type_with_elem(NrModule *m, NrTypeId t, NrTypeId elem); /* same shape, new element */
NrTypeId nr_type_with_dtype(NrModule *m, NrTypeId t, NrDtype dt);   /* same shape, value of dt */
int64_t nr_type_numel(const NrModule *m, NrTypeId t);
static inline bool nr_type_is_ptr(const NrModule *m, NrTypeId t) { return m->types[t].ptr > 0; }
static inline bool nr_type_is_block(const NrModule *m, NrTypeId t) { return m->types[t].rank > 0; }
/* dtype of a non-pointer type's element; NR_DT_INVALID for pointers */
static inline NrDtype nr_type_dtype(const NrModule *m, NrTypeId t) {
    return m->types[t].ptr ? NR_DT_INVALID : (NrDtype)m->types[t].dtype;
}
/* Print a type as in the IR text: i32, ptr<f16>, tensor<64x64xf32>, tensor<128xptr<f32>>. */
void nr_type_print(const NrModule *m, NrTypeId t, FILE *out);
char *nr_type_str(const NrModule *m, NrTypeId t);  /* arena string */
/* Element size in bytes (pointers: 8). */
int nr_type_elem_bytes(const NrModule *m, NrTypeId t);

/* --- ops, values, blocks ----------------------------------------------------------------------- */
static inline NrOp *nr_op(NrFunc *f, NrOpId op) { return &f->ops[op]; }
static inline NrValue *nr_val(NrFunc *f, NrValId v) { return &f->vals[v]; }
static inline NrBlock *nr_block(NrFunc *f, NrBlockId b) { return &f->blocks[b]; }
static inline NrTypeId nr_val_type(const NrFunc *f, NrValId v) { return f->vals[v].type; }
static inline NrValId nr_op_result(const NrFunc *f, NrOpId op, int i) { return f->ops[op].results[i]; }

/* Create an op, not yet inserted anywhere.  Results get fresh values of the
 * given types; regions get fresh empty blocks (add their arguments with
 * nr_block_add_arg). */
NrOpId nr_op_new(NrFunc *f, NrOpcode opc, int nopnds, const NrValId *opnds, int nres, const NrTypeId *rtypes,
                 int nregions, NrLoc loc);
NrBlockId nr_block_new(NrFunc *f, NrOpId parent);
NrValId nr_block_add_arg(NrFunc *f, NrBlockId b, NrTypeId t);

void nr_op_append(NrFunc *f, NrBlockId b, NrOpId op);          /* at the end of b */
void nr_op_insert_before(NrFunc *f, NrOpId before, NrOpId op);
void nr_op_insert_after(NrFunc *f, NrOpId after, NrOpId op);
void nr_op_unlink(NrFunc *f, NrOpId op);                       /* detach, keep alive */
void nr_op_erase(NrFunc *f, NrOpId op);                        /* detach and mark dead (with its regions) */
void nr_op_set_operands(NrFunc *f, NrOpId op, int n, const NrValId *opnds);
NrOpId nr_block_terminator(NrFunc *f, NrBlockId b);            /* last op if it is a TERM, else NR_NONE */

/* Attributes: set replaces an existing attribute of the same name. */
void nr_op_set_int(NrFunc *f, NrOpId op, NrAttrName a, int64_t v);
void nr_op_set_float(NrFunc *f, NrOpId op, NrAttrName a, double v);
void nr_op_set_bool(NrFunc *f, NrOpId op, NrAttrName a, bool v);
void nr_op_set_str(NrFunc *f, NrOpId op, NrAttrName a, const char *s);
void nr_op_set_ints(NrFunc *f, NrOpId op, NrAttrName a, int n, const int64_t *v);
const NrAttr *nr_op_attr(const NrFunc *f, NrOpId op, NrAttrName a);   /* NULL if absent */
int64_t nr_op_int(const NrFunc *f, NrOpId op, NrAttrName a, int64_t dflt);
double nr_op_float(const NrFunc *f, NrOpId op, NrAttrName a, double dflt);
const char *nr_op_str(const NrFunc *f, NrOpId op, NrAttrName a, const char *dflt);
bool nr_op_has(const NrFunc *f, NrOpId op, NrAttrName a);
void nr_op_copy_attrs(NrFunc *dst, NrOpId d, const NrFunc *src, NrOpId s);

/* A copy of op `so` of f (with its regions) at the end of block `to`, or
 * before op `before` when set.  Operands are renamed through map (values
 * below nmap that map to a value; the others stay as they are), and the
 * copy's results and region arguments are recorded there. */
NrOpId nr_op_clone(NrFunc *f, NrOpId so, NrValId *map, int32_t nmap, NrBlockId to, NrOpId before);
/* Replace every use of `from` by `to` in the whole function. */
void nr_replace_all_uses(NrFunc *f, NrValId from, NrValId to);
/* The same for n pairs at once (one walk of the ops; from[] distinct, and no to[j] among them). */
void nr_replace_all_uses_n(NrFunc *f, const NrValId *from, const NrValId *to, int n);
/* Count the uses of every value: counts[v] for v in [0, nvals). Arena array. */
int32_t *nr_count_uses(NrFunc *f);
/* Whether op, or an op nested in its regions, has v as an operand. */
bool nr_op_reads(const NrFunc *f, NrOpId op, NrValId v);

/* Walk every live op, preorder (an op before the ops of its regions).
 * The callback may erase the op it is given, but nothing else. */
typedef void (*NrOpVisitor)(NrFunc *f, NrOpId op, void *ctx);
void nr_walk(NrFunc *f, NrOpVisitor fn, void *ctx);
/* Iterate the ops of one block: for (NrOpId o = b->first; o; o = f->ops[o].next) */
#define NR_FOR_OPS(f, b, o) for (NrOpId o = (f)->blocks[(b)].first; o; o = (f)->ops[o].next)

/* --- building ---------------------------------------------------------------------------------- */
/* An insertion point: new ops go at the end of `block`, or before `before` if set. */
typedef struct NrBuilder {
    NrFunc *f;
    NrBlockId block;
    NrOpId before;
    NrLoc loc;
} NrBuilder;

NrBuilder nr_builder_at_end(NrFunc *f, NrBlockId b);
NrBuilder nr_builder_before(NrFunc *f, NrOpId op);
/* Right after op (before its next op, or at the end of its block), at op's location. */
NrBuilder nr_builder_after(NrFunc *f, NrOpId op);
/* Create op at the builder's point and return it. */
NrOpId nr_build(NrBuilder *b, NrOpcode opc, int nopnds, const NrValId *opnds, int nres, const NrTypeId *rtypes,
                int nregions);
/* Shorthands returning the single result. */
NrValId nr_build_const_int(NrBuilder *b, NrTypeId t, int64_t v);
NrValId nr_build_const_float(NrBuilder *b, NrTypeId t, double v);
NrValId nr_build1(NrBuilder *b, NrOpcode opc, NrTypeId rtype, int nopnds, const NrValId *opnds);
NrValId nr_build_unary(NrBuilder *b, NrOpcode opc, NrValId a);              /* result type = type(a) */
NrValId nr_build_binary(NrBuilder *b, NrOpcode opc, NrValId a, NrValId x);  /* result type = type(a) */

/* --- text form and verification (ir_print.c, ir_parse.c, ir_verify.c) --------------------------- */
typedef struct NrPrintOptions {
    bool locs;          /* print loc(...) on every op */
} NrPrintOptions;

void nr_module_print(const NrModule *m, const NrPrintOptions *opt, FILE *out);
void nr_func_print(const NrFunc *f, const NrPrintOptions *opt, FILE *out);
char *nr_module_to_string(const NrModule *m, const NrPrintOptions *opt);  /* arena string */
/* Parse IR text into a new module on arena a (text registered as source `file`).
 * Returns NULL with diagnostics on error. The result is verified. */
NrModule *nr_module_parse(NrArena *a, const char *text, size_t len, const char *filename, NrDiags *d);
/* Check every invariant of the IR; one diagnostic per violation at the op's loc. */
bool nr_module_verify(NrModule *m, NrDiags *d);
bool nr_func_verify(NrFunc *f, NrDiags *d);

#endif
