/* sema.h - kernel signatures, constexpr values, and lowering from the AST to
 * the block IR (sema*.c).
 *
 * Lowering specializes one kernel of a parsed module on a signature:
 * pointer element types, scalar dtypes, divisibility and equal-to-1 facts,
 * and constexpr values.  Constexpr expressions are evaluated as the tree is
 * walked (only the taken branch of a constexpr `if` is built; static_range
 * is unrolled).  Calls to other @jit functions become NR_OP_CALL to
 * specialized helper functions in the same module; the inline pass folds
 * them in. */
#ifndef NR_SEMA_H
#define NR_SEMA_H

#include "ast.h"
#include "ir.h"

/* A compile-time value. */
typedef enum NrCKind {
    NR_CV_NONE,   /* Python None */
    NR_CV_INT,    /* i: value; is_unsigned when given as a u64 beyond INT64_MAX */
    NR_CV_FLOAT,
    NR_CV_BOOL,
    NR_CV_STR,
    NR_CV_DTYPE,  /* dt (and ptr depth for pointer dtypes) */
} NrCKind;

typedef struct NrCVal {
    NrCKind kind;
    bool is_unsigned;
    int ptr;             /* NR_CV_DTYPE: pointer depth */
    union {
        int64_t i;
        double f;
        bool b;
        NrDtype dt;
        struct { const char *s; size_t len; } str;
    };
} NrCVal;

/* One parameter of a signature. */
typedef enum NrSigKind {
    NR_SIG_PTR,        /* runtime pointer: dtype is the pointee, ptr the depth (>= 1) */
    NR_SIG_SCALAR,     /* runtime scalar of dtype */
    NR_SIG_CONSTEXPR,  /* compile-time value cval */
    NR_SIG_TUPLE,      /* a tuple of entries elems[0..nelems): "(*fp32, i32, 64)" */
    NR_SIG_DESC,       /* a host tensor descriptor "tensordesc<fp16[64, 64]>": dtype, rank, block; its
                        * runtime arguments are the base pointer, rank int32 sizes and rank int64 strides */
} NrSigKind;

typedef struct NrSigArg {
    NrSigKind kind;
    NrDtype dtype;
    int ptr;
    int divisibility;  /* 16 when given as ":16", else 1 */
    bool equal_to_1;   /* integer given as ":1" */
    NrCVal cval;
    struct NrSigArg *elems;  /* NR_SIG_TUPLE */
    int nelems;
    int rank;                /* NR_SIG_DESC: block[0..rank) */
    int64_t block[NR_MAX_RANK];
    bool nan_pad;            /* NR_SIG_DESC written "tensordesc<fp32[64], nan>": out-of-bounds reads give NaN */
} NrSigArg;

typedef struct NrSignature {
    NrSigArg *args;
    int nargs;
} NrSignature;

/* Parse Triton's AOT signature form, e.g. "*fp32:16, *fp32:16, i32, 1024" or
 * '*fp16, i32, 64, "leaky"'.  Constexpr entries are literals: ints, floats,
 * True/False, None, quoted strings and dtypes (tl.float16 or fp16-style names
 * prefixed with "tl.").  A tuple argument is its entries in parentheses; a
 * host tensor descriptor is "tensordesc<DTYPE[BLOCK, ...]>".  The runtime
 * arguments of tuples and descriptors are their leaves, named NAME.0,
 * NAME.1.0, ... and NAME.base, NAME.shape.i, NAME.strides.i. */
bool nr_signature_parse(NrArena *a, const char *text, NrSignature *out, NrDiags *d);
/* Render a signature back to text (for cache keys and messages). */
char *nr_signature_str(NrArena *a, const NrSignature *sig);

/* Lower kernel `name` of `ast` into a new kernel function of `m` specialized on
 * `sig` (one entry per parameter of the kernel, constexpr ones included).
 * Helper functions it calls are added to `m` as non-kernel functions.
 * Returns NULL with diagnostics on a user error. */
NrFunc *nr_lower_kernel(NrModule *m, const NrAstModule *ast, const char *name, const NrSignature *sig,
                        NrDiags *d);

#endif
