/* sema_impl.h - internals of semantic analysis and lowering, shared by
 * sema.c (contexts, names, statements, control flow, calls of @jit
 * functions), sema_expr.c (expressions, typing, promotion, broadcasting),
 * sema_cval.c (compile-time values and their arithmetic), sema_sig.c
 * (signatures) and sema_builtins.c (the tl.* library).
 *
 * While a kernel is lowered every Python value is a Val: an IR value (a
 * scalar or a block), a compile-time constant (NrCVal), a tuple of Vals, or a
 * reference to something callable or addressable (a module such as `tl`, a
 * @jit function, a builtin, a block type).
 *
 * The first user error ends the lowering: nr_sm_fail() records the
 * diagnostic and longjmps back to nr_lower_kernel().  Everything lowering
 * allocates lives in the module's arena, so nothing needs unwinding. */
#ifndef NR_SEMA_IMPL_H
#define NR_SEMA_IMPL_H

#include "sema.h"
#include "util.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

/* Limits on what a kernel may make the compiler do. */
enum {
    SM_MAX_DEPTH = 200,        /* nesting of expressions and statements */
    SM_MAX_CALL_DEPTH = 64,    /* nested calls of @jit functions */
    SM_MAX_UNROLL = 4096,      /* iterations of one tl.static_range loop */
    SM_MAX_WORK = 2000000,     /* AST nodes lowered in one compilation (unrolling, specialization) */
    SM_MAX_BLOCK_NUMEL = 1 << 20,
    SM_MAX_TUPLE = 4096,       /* elements of a tuple */
    SM_MAX_STR = 1 << 16,      /* bytes of a compile-time string */
};

/* Modules a kernel can name. */
typedef enum SmModule {
    SM_MOD_NONE = 0,
    SM_MOD_TRITON,      /* triton, nereid */
    SM_MOD_TL,          /* triton.language */
    SM_MOD_MATH,        /* triton.language.math */
    SM_MOD_EXTRA,       /* triton.language.extra */
    SM_MOD_EXTRA_CUDA,  /* triton.language.extra.cuda */
    SM_MOD_LIBDEVICE,   /* triton.language.extra[.cuda].libdevice */
    SM_MOD_PNAN,        /* tl.PropagateNan */
    SM_MOD_HOST,        /* a module the kernel language does not know (numpy, torch, ...) */
} SmModule;

typedef enum VKind {
    V_CONST,    /* c: a compile-time value */
    V_IR,       /* ir: an IR value */
    V_TUPLE,    /* tup: a tuple or list */
    V_MODULE,   /* mod */
    V_JITFN,    /* fn: a @jit function of the module */
    V_BUILTIN,  /* bi: a library function, bound to self for methods */
    V_TYPE,     /* type: the type of a block (x.type) */
    V_SLICE,    /* `:` */
} VKind;

typedef struct Builtin Builtin;
typedef struct Val Val;

/* What a tensor descriptor fixes at compile time.  A descriptor is a tuple
 * (so it passes through calls, ifs and loops as one) of its base pointer,
 * its rank sizes (int32) and its rank strides (int64), tagged with this. */
typedef struct SmDesc {
    NrDtype dt;                   /* element dtype */
    int rank;
    int64_t block[NR_MAX_RANK];   /* the block a load or store moves */
    bool nan_pad;                 /* out-of-bounds reads give NaN (else 0) */
    bool host;                    /* a kernel argument: the GPU may load its blocks by TMA */
} SmDesc;

struct Val {
    VKind k;
    union {
        NrCVal c;
        NrValId ir;
        struct { Val *v; int n; const SmDesc *desc; } tup;  /* desc: a tensor descriptor, else NULL */
        SmModule mod;
        const NrFuncDecl *fn;
        struct { const Builtin *bi; const Val *self; } bi;
        NrTypeId type;
    };
};

/* A variable of the function being lowered. */
typedef struct Var {
    const char *name;
    Val v;
    NrLoc loc;       /* where it was last assigned */
} Var;

typedef struct Scope {
    Var *v;
    int n, cap;
} Scope;

/* The function being lowered. */
typedef struct SmFn {
    NrFunc *f;
    const NrFuncDecl *decl;
    NrBuilder b;
    Scope sc;
    int loops;        /* enclosing for/while loops */
    Val ret;          /* value of the return that ended the current statement sequence */
    bool is_kernel;
} SmFn;

/* One specialization of a @jit helper: its key, function and return template. */
typedef struct SmSpec {
    const char *key;
    NrFunc *f;
    Val ret;          /* IR leaves hold the result index in `ir` */
} SmSpec;

/* The state of a module-level constexpr global. */
typedef struct SmGlobal {
    int state;        /* 0 not evaluated, 1 being evaluated, 2 done */
    Val v;
} SmGlobal;

typedef struct Sema {
    NrModule *m;
    NrArena *a;
    const NrAstModule *ast;
    NrDiags *d;
    jmp_buf *fail;
    SmFn *fn;                   /* NULL while evaluating globals and defaults */
    const char *const_what;     /* what is being evaluated when fn is NULL, for messages */
    int depth;
    long work;
    const NrFuncDecl *calls[SM_MAX_CALL_DEPTH];
    int ncalls;
    SmSpec *specs; int nspecs, capspecs;
    SmGlobal *globals;          /* one per ast->globals entry */
    int elementwise;            /* > 0 while lowering a function applied by tl.map_elementwise: ifs on block
                                 * conditions select element by element, and nothing may have effects */
} Sema;

/* --- errors (sema.c) ---------------------------------------------------------------------------- */
_Noreturn void nr_sm_fail(Sema *s, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void nr_sm_enter(Sema *s, NrLoc loc);   /* count one level of nesting and one unit of work */
void nr_sm_leave(Sema *s);
/* Fails when called inside a function applied by tl.map_elementwise (whose branches all run). */
void nr_sm_no_effects(Sema *s, NrLoc loc, const char *what);

/* --- values ------------------------------------------------------------------------------------- */
static inline Val v_const(NrCVal c) { Val v; v.k = V_CONST; v.c = c; return v; }
static inline Val v_ir(NrValId x) { Val v; v.k = V_IR; v.ir = x; return v; }
Val nr_sm_tuple(Sema *s, int n);          /* a tuple of n (unset) elements */
Val nr_sm_none(void);
const char *nr_sm_val_kind(Sema *s, Val v);   /* "int32 scalar", "tensor<64xf32>", "constexpr 3", "module tl" ... */
bool nr_sm_val_same(Val a, Val b);        /* the same value (IR id, equal constants, same tuple elements) */
/* For errors about a runtime value where a constexpr is needed: a hint when
 * the value is a number assigned without `: tl.constexpr`, else "". */
const char *nr_sm_const_hint(Sema *s, Val v);

/* --- compile-time values (sema_cval.c) ---------------------------------------------------------- */
NrCVal nr_cv_none(void);
NrCVal nr_cv_int(int64_t i);
NrCVal nr_cv_uint(uint64_t u);           /* is_unsigned when above INT64_MAX */
NrCVal nr_cv_float(double f);
NrCVal nr_cv_bool(bool b);
NrCVal nr_cv_str(NrArena *a, const char *s, size_t n);
NrCVal nr_cv_dtype(NrDtype dt, int ptr);
bool nr_cv_is_num(const NrCVal *c);       /* int, float or bool */
bool nr_cv_truthy(const NrCVal *c);
bool nr_cv_eq(const NrCVal *a, const NrCVal *b);
double nr_cv_as_double(const NrCVal *c);
/* Python's str() of the value (for static_print and messages); dtypes as tl.float32. */
char *nr_cv_str_of(NrArena *a, const NrCVal *c);
/* The dtype a constant becomes as an IR value (Triton's to_tensor). */
NrDtype nr_cv_default_dtype(const NrCVal *c);
/* Parse a literal as written in signatures and parameter defaults: ints (also
 * negative, hex, octal, binary), floats, inf/nan, True/False, None, quoted
 * strings and dtypes (tl.float16, tl.fp16, triton.language.float16).
 * Returns false with *err set to a message and *errpos to the offending offset. */
bool nr_cv_parse_literal(NrArena *a, const char *s, size_t n, NrCVal *out, const char **err, size_t *errpos);
/* Triton name of a dtype for messages: "int32", "float16", "pointer<float32>". */
const char *nr_dt_name(NrArena *a, NrDtype dt, int ptr);

/* Constant folding with Python semantics (op: an NrBinOp; cmp: an NrCmpOp). */
NrCVal nr_cv_binop(Sema *s, NrLoc loc, int op, const NrCVal *a, const NrCVal *b);
NrCVal nr_cv_unop(Sema *s, NrLoc loc, int op, const NrCVal *a);
NrCVal nr_cv_compare(Sema *s, NrLoc loc, int cmp, const NrCVal *a, const NrCVal *b);

/* --- IR building and typing (sema_expr.c) -------------------------------------------------------- */
NrValId nr_sm_emit(Sema *s, NrLoc loc, NrOpcode opc, NrTypeId rt, int n, const NrValId *opnds);
NrOpId nr_sm_emit_op(Sema *s, NrLoc loc, NrOpcode opc, int n, const NrValId *opnds, int nres, const NrTypeId *rts,
                     int nregions);
const NrType *nr_sm_type(Sema *s, NrValId v);
NrTypeId nr_sm_tid(Sema *s, NrValId v);
char *nr_sm_type_str(Sema *s, NrTypeId t);          /* IR form: tensor<64x32xf32>, i32, ptr<f16> */
char *nr_sm_shape_str(Sema *s, const NrType *t);    /* [64, 32] */
NrTypeId nr_sm_block_type(Sema *s, NrLoc loc, NrTypeId elem, int rank, const int64_t *shape, const char *what);
NrValId nr_sm_const(Sema *s, NrLoc loc, NrTypeId t, const NrCVal *c);   /* t scalar or block */
NrValId nr_sm_to_ir(Sema *s, NrLoc loc, Val v, const char *what);       /* Triton's to_tensor */
NrValId nr_sm_cast(Sema *s, NrLoc loc, NrValId x, NrDtype dt, int ptr, const char *rounding);
NrValId nr_sm_bitcast(Sema *s, NrLoc loc, NrValId x, NrDtype dt, int ptr);
NrValId nr_sm_splat(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape);
NrValId nr_sm_broadcast_to(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape, bool same_rank);
void nr_sm_broadcast_pair(Sema *s, NrLoc loc, NrValId *a, NrValId *b);
NrValId nr_sm_reshape(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape, bool can_reorder);
NrValId nr_sm_expand_dims(Sema *s, NrLoc loc, NrValId x, int axis);
NrValId nr_sm_to_i1(Sema *s, NrLoc loc, NrValId x, const char *what);  /* scalar condition: != 0, unsplat */
/* Binary operator on two values (folds constants, concatenates tuples). */
Val nr_sm_binop(Sema *s, NrLoc loc, int op, Val a, Val b);
Val nr_sm_compare(Sema *s, NrLoc loc, int cmp, Val a, Val b);
Val nr_sm_unop(Sema *s, NrLoc loc, int op, Val a);
Val nr_sm_logical(Sema *s, NrLoc loc, bool is_and, Val a, Val b);  /* IR operands: logical_and/or */
/* Triton's binary_op_type_checking_impl: converts and casts a, b to their
 * common type (unless !arith) and broadcasts them. */
void nr_sm_binary_prep(Sema *s, NrLoc loc, const char *opname, Val a, Val b, bool allow_ptr_a, bool allow_ptr_b,
                       bool arith, bool div_or_mod, NrValId *ra, NrValId *rb);
/* The same, with Python numbers first turned into tensors of their default
 * dtype (as tl.maximum, tl.where's callers and comparisons do). */
void nr_sm_binary_prep_tensors(Sema *s, NrLoc loc, const char *opname, Val a, Val b, NrValId *ra, NrValId *rb);
NrDtype nr_sm_integer_promote(NrDtype a, NrDtype b);
Val nr_sm_lower_expr(Sema *s, const NrExpr *e);
Val nr_sm_call(Sema *s, NrLoc loc, Val fn, int nargs, const Val *args, const NrLoc *arglocs, int nkw,
               const char *const *kwnames, const Val *kwargs, const NrLoc *kwlocs);
Val nr_sm_getattr(Sema *s, NrLoc loc, Val v, const char *name);
/* Evaluate e to a compile-time value; `what` names it in the error otherwise. */
NrCVal nr_sm_const_expr(Sema *s, const NrExpr *e, const char *what);

/* --- names and calls (sema.c) -------------------------------------------------------------------- */
static inline NrValId f_arg(const NrFunc *f, int i) { return f->blocks[f->body].args[i]; }
Val nr_sm_lower_ifexp(Sema *s, const NrExpr *e);
Val nr_sm_lookup(Sema *s, NrLoc loc, const char *name);
Val nr_sm_call_jit(Sema *s, NrLoc loc, const NrFuncDecl *fn, int nargs, const Val *args, const NrLoc *arglocs,
                   int nkw, const char *const *kwnames, const Val *kwargs);
bool nr_sm_is_constexpr_annotation(Sema *s, const NrExpr *ann);

/* --- tensor descriptors (sema_desc.c) ------------------------------------------------------------- */
/* A descriptor value from its parts (base: a pointer scalar; shape, strides:
 * rank values each, IR scalars or constexpr ints). */
Val nr_sm_desc_new(Sema *s, NrLoc loc, const SmDesc *d, Val base, const Val *shape, const Val *strides);
/* desc.NAME: load, store, atomic_* (bound methods), block_shape, dtype, shape, strides. */
Val nr_sm_desc_attr(Sema *s, NrLoc loc, Val desc, const char *name);

/* --- elementwise escapes (sema_escape.c) ---------------------------------------------------------- */
/* tl.inline_asm_elementwise and tl.map_elementwise. */
const Builtin *nr_sm_find_escape_builtin(const char *name);

/* --- the library (sema_builtins.c) --------------------------------------------------------------- */
/* A call of a builtin with its arguments bound to the parameters of its spec. */
typedef struct SmCall {
    const Builtin *bi;
    NrLoc loc;
    int n;           /* parameters */
    Val *arg;        /* one per parameter; varargs as a tuple */
    NrLoc *argloc;   /* where each came from (the call for defaults) */
    bool *given;     /* whether the caller gave it */
} SmCall;

typedef Val (*SmBuiltinFn)(Sema *s, const SmCall *c);

struct Builtin {
    const char *name;     /* as written after its module: "load" */
    unsigned where;       /* SM_IN_* bits */
    const char *params;   /* Python-style parameter list: "pointer, mask=None, *args, hex=False" */
    SmBuiltinFn fn;
    int arg;              /* data for shared handlers: an opcode, a reduce kind, ... */
    const char *str;      /* data for shared handlers: a function name */
};

enum {
    SM_IN_TL = 1 << 0,        /* tl.<name> */
    SM_IN_MATH = 1 << 1,      /* tl.math.<name> */
    SM_IN_LIBDEVICE = 1 << 2, /* libdevice.<name> */
    SM_IN_TRITON = 1 << 3,    /* triton.<name> */
    SM_IN_PY = 1 << 4,        /* Python builtin: min, max, int, ... */
    SM_IN_TENSOR = 1 << 5,    /* tensor method x.<name>(...) */
    SM_IN_DTYPE = 1 << 6,     /* dtype method dt.<name>() */
};

const Builtin *nr_sm_find_builtin(const char *name, unsigned where);
/* libdevice.<name> (sema_libdevice.c); NULL if there is none. */
const Builtin *nr_sm_find_libdevice(const char *name);
/* tl.make_tensor_descriptor and the descriptor functions (sema_desc.c). */
const Builtin *nr_sm_find_desc_builtin(const char *name);
/* Bind arguments to the parameters of bi's spec (self first for methods). */
void nr_sm_bind_args(Sema *s, NrLoc loc, const Builtin *bi, const Val *self, int nargs, const Val *args,
                     const NrLoc *arglocs, int nkw, const char *const *kwnames, const Val *kwargs, const NrLoc *kwlocs,
                     SmCall *out);
Val nr_sm_module_attr(Sema *s, NrLoc loc, SmModule mod, const char *name);
const char *nr_sm_module_name(SmModule mod);      /* "tl", "tl.math", "libdevice", "triton" */
const char *nr_sm_builtin_name(Sema *s, const Builtin *bi);   /* "tl.load", "min", "x.to" */
Val nr_sm_call_builtin(Sema *s, NrLoc loc, const Builtin *bi, const Val *self, int nargs, const Val *args,
                       const NrLoc *arglocs, int nkw, const char *const *kwnames, const Val *kwargs,
                       const NrLoc *kwlocs);
Val nr_sm_tensor_attr(Sema *s, NrLoc loc, Val x, const char *name);
Val nr_sm_dtype_attr(Sema *s, NrLoc loc, Val x, const char *name);
bool nr_sm_is_range_builtin(const Val *v, int *kind);   /* range / tl.range / tl.static_range */
enum { SM_RANGE_PY = 1, SM_RANGE_TL, SM_RANGE_STATIC };

#endif
