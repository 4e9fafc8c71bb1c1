/* interp_impl.h - internals of the reference interpreter, shared by
 * interp.c (launch, frames, control flow), interp_elem.c (elementwise ops
 * and casts), interp_mem.c (memory, atomics, print, assert) and
 * interp_block.c (shape ops, reductions, dot).
 *
 * Execution is block-at-a-time: every SSA value owns one contiguous array of
 * its elements (numel of its type; 1 for scalars), allocated once per launch
 * and reused by every program.  Storage by element type:
 *   i1             uint8_t 0 or 1
 *   i8..i64, u8..  the C integer type of that width and signedness
 *   f8e4nv, f8e5   uint8_t bits         f16, bf16   uint16_t bits
 *   f32            float                f64         double
 *   pointers       uint64_t virtual addresses (interp.h)
 * Each op executes through a table generated from ops.def, so every op has an
 * entry point nr_iexec_<ID>; it returns an NrIStatus. */
#ifndef NR_INTERP_IMPL_H
#define NR_INTERP_IMPL_H

#include "fp.h"
#include "interp.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* Storage kind of a value: its NrDtype, or NR_IK_PTR for pointers. */
enum { NR_IK_PTR = NR_DT_COUNT };

typedef enum NrIStatus {
    NR_IST_OK = 0,
    NR_IST_FAIL, /* a diagnostic was recorded: stop the launch */
    NR_IST_TERM, /* a yield/condition ended the block */
    NR_IST_RET,  /* a return ended the function */
} NrIStatus;

typedef struct NrIVal {
    void *p;       /* numel elements */
    int64_t n;     /* numel (1 for scalars) */
    uint8_t kind;  /* NrDtype or NR_IK_PTR */
    uint8_t esize; /* bytes per element */
    const NrType *t;
} NrIVal;

typedef struct NrIFrame {
    NrFunc *f;
    NrIVal *v;               /* indexed by value id */
    void *storage;           /* one allocation for every value */
    struct NrIFrame *caller; /* while active: the calling frame (NULL for the kernel) */
    const NrOp *call;        /* while active: the call op receiving the results */
    int depth;               /* call depth this frame serves */
    struct NrIFrame *next;   /* list of every frame of the launch */
} NrIFrame;

typedef struct NrIBuf {
    bool is_buf;
    uint64_t vbase; /* virtual address of byte 0 */
    unsigned char *host;
    uint64_t bytes;
    const char *name; /* argument name for messages */
} NrIBuf;

enum { NR_ISCRATCH = 4 };

typedef struct NrInterp {
    NrModule *m;
    NrDiags *d;
    FILE *out;
    NrIBuf *bufs;
    int nbufs;
    uint32_t grid[3], pid[3];
    uint64_t steps, max_steps;
    /* Scratch arrays for conversions, reductions and dot; each holds at
     * least 8 bytes per element of the largest value of the module. */
    void *scratch[NR_ISCRATCH];
    size_t scratch_bytes;
    void *swap; /* staging for loop-carried values that permute */
    size_t swap_bytes;
    NrIFrame *frames;
    int call_depth;
} NrInterp;

typedef NrIStatus (*NrIExecFn)(NrInterp *in, NrIFrame *fr, const NrOp *op);

/* One entry point per op of ops.def. */
#define OP(ID, ...) NrIStatus nr_iexec_##ID(NrInterp *in, NrIFrame *fr, const NrOp *op);
#include "ops.def"
#undef OP

static inline NrIVal *nr_iopnd(NrIFrame *fr, const NrOp *op, int i) { return &fr->v[op->opnds[i]]; }
static inline NrIVal *nr_ires(NrIFrame *fr, const NrOp *op, int i) { return &fr->v[op->results[i]]; }
/* Optional operand i, or NULL when absent (or beyond the operand list). */
static inline NrIVal *nr_iopt(NrIFrame *fr, const NrOp *op, int i) {
    return i < op->nopnds && op->opnds[i] ? &fr->v[op->opnds[i]] : NULL;
}
static inline bool nr_ik_float(int k) { return k < NR_DT_COUNT && nr_dt_is_float((NrDtype)k); }
static inline bool nr_ik_int(int k) { return k < NR_DT_COUNT && nr_dt_is_int((NrDtype)k); }
/* Compares and extends as unsigned: unsigned ints, i1 and pointers. */
static inline bool nr_ik_unsigned(int k) {
    return k == NR_IK_PTR || (k < NR_DT_COUNT && nr_dtype_info[k].cls != NR_DTC_SINT);
}

/* Float max/min: NAN "none" returns the non-NaN operand (NaN only if both
 * are), NAN "all" returns NaN if either is; max(-0, +0) = +0, min = -0. */
#define NR_FMAXNUM(x, y)                                                                                               \
    ((x) != (x) ? (y) : (y) != (y) ? (x) : (x) > (y) ? (x) : (y) > (x) ? (y) : signbit(x) ? (y) : (x))
#define NR_FMINNUM(x, y)                                                                                               \
    ((x) != (x) ? (y) : (y) != (y) ? (x) : (x) < (y) ? (x) : (y) < (x) ? (y) : signbit(x) ? (x) : (y))
#define NR_FMAXALL(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : NR_FMAXNUM(x, y))
#define NR_FMINALL(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : NR_FMINNUM(x, y))

/* Records an error at op's location and returns NR_IST_FAIL. */
NrIStatus nr_ifail(NrInterp *in, const NrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "program (x, y, z)" plus, for a block of type t, ", element i of the block
 * (index [a, b])"; arena string. */
const char *nr_iwhere(NrInterp *in, const NrType *t, int64_t lane);
/* Attributes of op, with defaults when absent or of another kind. */
static inline const NrAttr *nr_iattr(const NrOp *op, NrAttrName a) {
    for (int i = 0; i < op->nattrs; i++)
        if (op->attrs[i].name == a) return &op->attrs[i];
    return NULL;
}
static inline int64_t nr_iattr_int(const NrOp *op, NrAttrName a, int64_t dflt) {
    const NrAttr *at = nr_iattr(op, a);
    return at && (at->kind == NR_AK_INT || at->kind == NR_AK_BOOL) ? at->v.i : dflt;
}
static inline const char *nr_iattr_str(const NrOp *op, NrAttrName a, const char *dflt) {
    const NrAttr *at = nr_iattr(op, a);
    return at && at->kind == NR_AK_STR ? at->v.s : dflt;
}

/* Scalar access to element i of any value (slow paths: atomics, print,
 * argreduce).  get_f64 decodes floats exactly; get_i64 sign- or zero-extends
 * ints (pointers as unsigned); put_f64 rounds once to the element type. */
double nr_iget_f64(int kind, const void *p, int64_t i);
int64_t nr_iget_i64(int kind, const void *p, int64_t i);
void nr_iput_f64(int kind, void *p, int64_t i, double v);
void nr_iput_i64(int kind, void *p, int64_t i, int64_t v);

/* Bulk float conversions between a value's storage and f32 arrays; kind is
 * a float dtype other than f64. */
void nr_idecode_f32(int kind, const void *src, float *dst, int64_t n);
void nr_iencode_f32(int kind, const float *src, void *dst, int64_t n);

/* Copies n value slots src[i] -> dst[i] as a parallel assignment. */
void nr_icopy_vals(NrInterp *in, NrIFrame *fr, const NrValId *dst, NrIFrame *sfr, const NrValId *src, int n);
/* Runs the ops of block b: NR_IST_OK when it ends (*term = its yield or
 * condition, or NULL), NR_IST_RET after a return, NR_IST_FAIL on error. */
NrIStatus nr_irun_block(NrInterp *in, NrIFrame *fr, NrBlockId b, const NrOp **term);

#endif
