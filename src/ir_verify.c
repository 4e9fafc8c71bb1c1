/* ir_verify.c - checks every invariant of the block IR.
 *
 * One diagnostic per violation, at the offending op's location, naming the op
 * and the rule: "add: operand 1 has type tensor<64xf32>, expected
 * tensor<64xi32>".  The checks, in the order they run on an op:
 *   structure   ids in range, results and region blocks owned by the op,
 *               op-table arity (unless VAR), `_` only in optional slots
 *               (load's mask and other, store's mask, atomic_rmw's mask)
 *   visibility  each operand defined earlier in the op's block or in an
 *               enclosing block (block arguments included)
 *   types       block dimensions are powers of two, at most 2^20 elements
 *   class rule  SAME / CMP with the op-table dtype class, or the op's own
 *               CUSTOM rule below
 *   regions     each region ends with exactly one terminator, of the kind
 *               its op requires (for/if bodies and while's region 1: yield;
 *               while's region 0: condition; a function body: return)
 * A structurally broken op (bad ids, wrong arity) gets no type rules, so a
 * malformed module yields diagnostics, never a crash.
 *
 * The verifier does not change the module: its scratch memory (and the text
 * of its messages, before nr_error copies them) comes from a private arena. */
#include "gpu.h"
#include "ir.h"
#include "util.h"

#include <stdarg.h>
#include <string.h>

enum {
    MAX_BLOCK_ELEMS = 1 << 20,  /* Triton's limit on the elements of a block */
    MAX_DEPTH = 1000,           /* region nesting the verifier walks */
};

typedef struct V {
    NrModule *m;
    NrFunc *f;
    NrDiags *d;
    bool ok;
    uint8_t *vis;        /* per value of f: currently visible */
    NrArena *scratch;    /* freed when the function is done */
    bool gpu;            /* f is GPU IR: every block type carries a layout (gpu.h) */
} V;

/* --- diagnostics ------------------------------------------------------------------------------- */
static const char *op_name(const NrOp *op) { return op->opc < NR_OP_COUNT ? nr_op_info[op->opc].name : "invalid"; }

static void verror(V *v, NrLoc loc, const char *prefix, const char *fmt, va_list ap) {
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    v->ok = false;
    nr_error(v->d, loc, "%s%s", prefix, buf);
}

static void op_error(V *v, NrOpId op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void op_error(V *v, NrOpId op, const char *fmt, ...) {
    const NrOp *o = &v->f->ops[op];
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: ", op_name(o));
    va_list ap;
    va_start(ap, fmt);
    verror(v, o->loc, prefix, fmt, ap);
    va_end(ap);
}

static void func_error(V *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void func_error(V *v, const char *fmt, ...) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "function @%.100s: ", v->f->name ? v->f->name : "");
    va_list ap;
    va_start(ap, fmt);
    verror(v, v->f->loc, prefix, fmt, ap);
    va_end(ap);
}

/* --- types ------------------------------------------------------------------------------------- */
static bool valid_type(const V *v, NrTypeId t) { return t > 0 && t < v->m->ntypes; }
static const NrType *ty(const V *v, NrTypeId t) { return &v->m->types[t]; }

/* A type as the IR text writes it (as nr_type_print), for messages; t need
 * not be interned. */
static const char *tstr_of(V *v, const NrType *t) {
    char elem[96], dims[128];
    size_t n = 0;
    elem[0] = dims[0] = 0;
    for (int i = 0; i < t->ptr && n < 40; i++) n += (size_t)snprintf(elem + n, sizeof elem - n, "ptr<");
    n += (size_t)snprintf(elem + n, sizeof elem - n, "%s", t->dtype < NR_DT_COUNT ? nr_dtype_info[t->dtype].ir : "?");
    for (int i = 0; i < t->ptr && n < sizeof elem - 1; i++) elem[n++] = '>', elem[n] = 0;
    if (t->rank == 0 && t->kind != NR_TK_MEMDESC) return nr_strdup(v->scratch, elem);
    n = 0;
    for (int i = 0; i < t->rank && i < NR_MAX_RANK; i++)
        n += (size_t)snprintf(dims + n, sizeof dims - n, "%dx", t->shape[i]);
    if (t->kind == NR_TK_MEMDESC) return nr_sprintf(v->scratch, "!smem<%s%s, #L%d>", dims, elem, t->layout);
    if (t->layout) return nr_sprintf(v->scratch, "tensor<%s%s, #L%d>", dims, elem, t->layout);
    return nr_sprintf(v->scratch, "tensor<%s%s>", dims, elem);
}

static const char *tstr(V *v, NrTypeId t) {
    return valid_type(v, t) ? tstr_of(v, ty(v, t)) : nr_sprintf(v->scratch, "<invalid type %d>", t);
}

static bool same_shape(const NrType *a, const NrType *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static bool same_elem(const NrType *a, const NrType *b) { return a->dtype == b->dtype && a->ptr == b->ptr; }

static bool type_eq(const NrType *a, const NrType *b) {
    return a->kind == b->kind && same_elem(a, b) && same_shape(a, b) && a->layout == b->layout;
}

/* shape (and layout) of s with the element dt / ptr depth */
static NrType shaped(const NrType *s, NrDtype dt, int ptr) {
    NrType t;
    memset(&t, 0, sizeof t);
    t.dtype = (uint8_t)dt;
    t.ptr = (uint8_t)ptr;
    t.rank = s->rank;
    t.layout = s->layout;
    for (int i = 0; i < s->rank; i++) t.shape[i] = s->shape[i];
    return t;
}

static NrType scalar_of(NrDtype dt) {
    NrType t;
    memset(&t, 0, sizeof t);
    t.dtype = (uint8_t)dt;
    return t;
}

static bool is_dt(const NrType *t, NrDtype dt) { return !t->ptr && t->dtype == dt; }
static bool is_int_elem(const NrType *t) { return !t->ptr && nr_dt_is_int((NrDtype)t->dtype); }
static bool is_float_elem(const NrType *t) { return !t->ptr && nr_dt_is_float((NrDtype)t->dtype); }
static bool is_i1_scalar(const NrType *t) { return is_dt(t, NR_DT_I1) && t->rank == 0; }

/* "64x32" (dims only; t is a block) */
static const char *dims_str(V *v, const NrType *t) {
    char buf[128];
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < t->rank && i < NR_MAX_RANK; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d", i ? "x" : "", t->shape[i]);
    return nr_strdup(v->scratch, buf);
}

/* got must equal want; reports "<what> has type X, expected Y". */
static bool expect_type(V *v, NrOpId op, const char *what, NrTypeId got, const NrType *want) {
    if (type_eq(ty(v, got), want)) return true;
    op_error(v, op, "%s has type %s, expected %s", what, tstr(v, got), tstr_of(v, want));
    return false;
}

static bool expect_same(V *v, NrOpId op, const char *what, NrTypeId got, NrTypeId want) {
    return expect_type(v, op, what, got, ty(v, want));
}

/* The layout of a type: none on scalars and outside GPU IR; in GPU IR a
 * distributed layout of the block's rank on every block, a shared layout on
 * every !smem buffer (whose rank may have one leading buffer dimension more).
 * false with the reason in buf. */
static bool check_type_layout(V *v, const NrType *T, char *buf, size_t n) {
    const NrModule *m = v->m;
    bool valid_id = T->layout > 0 && T->layout < m->nlayouts;
    if (T->kind == NR_TK_MEMDESC) {
        if (!valid_id || m->layouts[T->layout].kind != NR_LK_SHARED) {
            snprintf(buf, n, "whose layout is not a shared layout");
            return false;
        }
        int lr = m->layouts[T->layout].rank;
        if (T->rank != lr && T->rank != lr + 1) {
            snprintf(buf, n, "whose rank is neither its layout's (%d) nor one more", lr);
            return false;
        }
        if (T->ptr) {
            snprintf(buf, n, "a shared-memory buffer of pointers");
            return false;
        }
        return true;
    }
    if (T->layout == 0) {
        if (!v->gpu || T->rank == 0) return true;
        snprintf(buf, n, "without a layout (in GPU IR every block has one)");
        return false;
    }
    if (T->rank == 0) {
        snprintf(buf, n, "a scalar with a layout");
        return false;
    }
    if (!valid_id || !nr_layout_is_distributed(m, T->layout) || m->layouts[T->layout].rank != T->rank) {
        snprintf(buf, n, "whose layout is not a distributed layout of rank %d", T->rank);
        return false;
    }
    return true;
}

/* A type is well-formed and within the block limits: dims powers of two and
 * at most MAX_BLOCK_ELEMS elements.  `what` names it for the message. */
static bool check_type(V *v, NrOpId op, const char *what, NrTypeId t) {
    char buf[200];
    if (!valid_type(v, t)) {
        snprintf(buf, sizeof buf, "%s has an invalid type id %d", what, t);
    } else {
        const NrType *T = ty(v, t);
        buf[0] = 0;
        if ((T->kind != NR_TK_VALUE && T->kind != NR_TK_MEMDESC) || T->dtype == NR_DT_INVALID ||
            T->dtype >= NR_DT_COUNT || T->rank > NR_MAX_RANK) {
            snprintf(buf, sizeof buf, "%s has a malformed type", what);
        } else if (!check_type_layout(v, T, buf, sizeof buf)) {
            const char *why = nr_strdup(v->scratch, buf);
            snprintf(buf, sizeof buf, "%s has type %s, %s", what, tstr(v, t), why);
        } else {
            int64_t n = 1;
            /* the buffer count of a multi-buffered allocation is any positive number */
            bool buffers = T->kind == NR_TK_MEMDESC && T->rank == v->m->layouts[T->layout].rank + 1;
            for (int i = 0; i < T->rank && !buf[0]; i++) {
                if (!nr_is_pow2(T->shape[i]) && !(buffers && i == 0 && T->shape[0] > 0)) {
                    snprintf(buf, sizeof buf, "%s has type %s, whose dimension %d is not a power of two", what,
                             tstr(v, t), T->shape[i]);
                } else {
                    n *= T->shape[i];
                    if (n > MAX_BLOCK_ELEMS)
                        snprintf(buf, sizeof buf, "%s has type %s, which has more than %d elements", what,
                                 tstr(v, t), MAX_BLOCK_ELEMS);
                }
            }
        }
    }
    if (!buf[0]) return true;
    if (op) op_error(v, op, "%s", buf);
    else func_error(v, "%s", buf);
    return false;
}

/* --- attributes -------------------------------------------------------------------------------- */
static const char *kind_name(NrAttrKind k) {
    switch (k) {
    case NR_AK_INT: return "an integer";
    case NR_AK_FLOAT: return "a float";
    case NR_AK_BOOL: return "a boolean";
    case NR_AK_STR: return "a string";
    case NR_AK_INTS: return "an integer list";
    }
    return "?";
}

/* The attribute if present with the right kind; diagnoses a wrong kind, and
 * a missing one if required. */
static const NrAttr *get_attr(V *v, NrOpId op, NrAttrName a, NrAttrKind kind, bool required) {
    const NrAttr *at = nr_op_attr(v->f, op, a);
    if (!at) {
        if (required) op_error(v, op, "missing attribute '%s'", nr_attr_names[a]);
        return NULL;
    }
    if (at->kind != kind) {
        op_error(v, op, "attribute '%s' must be %s", nr_attr_names[a], kind_name(kind));
        return NULL;
    }
    return at;
}

/* A string attribute whose value is one of `allowed` (NULL-terminated). */
static const char *get_choice(V *v, NrOpId op, NrAttrName a, const char *const *allowed, bool required) {
    const NrAttr *at = get_attr(v, op, a, NR_AK_STR, required);
    if (!at) return NULL;
    char list[256];
    size_t n = 0;
    list[0] = 0;
    for (int i = 0; allowed[i]; i++) {
        if (strcmp(at->v.s, allowed[i]) == 0) return at->v.s;
        n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s\"%s\"", i ? ", " : "", allowed[i]);
        if (n >= sizeof list) n = sizeof list - 1;
    }
    op_error(v, op, "attribute '%s' is \"%.60s\", expected one of %s", nr_attr_names[a], at->v.s, list);
    return NULL;
}

/* An integer attribute in [lo, hi]; false if absent (and required), of the
 * wrong kind or out of range. */
static bool get_int_in(V *v, NrOpId op, NrAttrName a, int64_t lo, int64_t hi, int64_t *out) {
    const NrAttr *at = get_attr(v, op, a, NR_AK_INT, true);
    if (!at) return false;
    if (at->v.i < lo || at->v.i > hi) {
        op_error(v, op, "attribute '%s' is %lld, expected a value in [%lld, %lld]", nr_attr_names[a],
                 (long long)at->v.i, (long long)lo, (long long)hi);
        return false;
    }
    *out = at->v.i;
    return true;
}

static const char *const k_cache[] = {"", ".ca", ".cg", ".cs", ".cv", ".wb", ".wt", NULL};
static const char *const k_evict[] = {"", "evict_first", "evict_last", "evict_normal", NULL};
static const char *const k_sem[] = {"relaxed", "acquire", "release", "acq_rel", NULL};
static const char *const k_scope[] = {"gpu", "cta", "sys", NULL};
static const char *const k_pred[] = {"eq", "ne", "lt", "le", "gt", "ge", NULL};
static const char *const k_nan[] = {"none", "all", NULL};
static const char *const k_rounding[] = {"rtne", "rtz", NULL};
static const char *const k_rmw[] = {"add", "max", "min", "and", "or", "xor", "xchg", NULL};
static const char *const k_reduce[] = {"add", "max", "min", "xor", "and", "or", NULL};
static const char *const k_argreduce[] = {"max", "min", NULL};
static const char *const k_hint[] = {"multiple_of", "max_contiguous", "max_constancy", NULL};
static const char *const k_precision[] = {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6", NULL};

static bool is_bitwise_kind(const char *k) { return !strcmp(k, "and") || !strcmp(k, "or") || !strcmp(k, "xor"); }

/* --- operand and result access (valid after the structural checks) ----------------------------- */
static NrTypeId otype(const V *v, NrOpId op, int i) {
    NrValId x = v->f->ops[op].opnds[i];
    return x ? v->f->vals[x].type : NR_NONE;
}
static NrTypeId rtype(const V *v, NrOpId op, int i) { return v->f->vals[v->f->ops[op].results[i]].type; }
static const NrType *oty(const V *v, NrOpId op, int i) { return ty(v, otype(v, op, i)); }
static const NrType *rty(const V *v, NrOpId op, int i) { return ty(v, rtype(v, op, i)); }

/* Type of value x if x is a valid value of a valid type, else NR_NONE (for
 * reading ops in regions, which are checked structurally later). */
static NrTypeId safe_vtype(const V *v, NrValId x) {
    if (x <= 0 || x >= v->f->nvals) return NR_NONE;
    return valid_type(v, v->f->vals[x].type) ? v->f->vals[x].type : NR_NONE;
}

static const char *nth(V *v, const char *what, int i) { return nr_sprintf(v->scratch, "%s %d", what, i); }

/* --- SAME and CMP ------------------------------------------------------------------------------ */
static bool dclass_ok(const NrType *t, NrDtypeAllowed dc) {
    switch (dc) {
    case NR_DC_ANY: return true;
    case NR_DC_NUM: return !t->ptr;
    case NR_DC_INT: return is_int_elem(t);
    case NR_DC_FLT: return is_float_elem(t);
    }
    return false;
}

static const char *dclass_name(NrDtypeAllowed dc) {
    switch (dc) {
    case NR_DC_NUM: return "an integer or floating-point type";
    case NR_DC_INT: return "an integer type";
    case NR_DC_FLT: return "a floating-point type";
    case NR_DC_ANY: break;
    }
    return "any type";
}

static void rule_same(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    const NrOpInfo *info = &nr_op_info[o->opc];
    NrTypeId r = rtype(v, op, 0);
    if (!dclass_ok(ty(v, r), info->dclass))
        op_error(v, op, "expected %s, got %s", dclass_name(info->dclass), tstr(v, r));
    for (int i = 0; i < o->nopnds; i++) expect_same(v, op, nth(v, "operand", i), otype(v, op, i), r);
    switch ((NrOpcode)o->opc) {
    case NR_OP_MAX:
    case NR_OP_MIN: get_choice(v, op, NR_A_NAN, k_nan, false); break;
    case NR_OP_DIV: get_attr(v, op, NR_A_IEEE, NR_AK_BOOL, false); break;
    case NR_OP_MATH:
        if (o->nopnds < 1) op_error(v, op, "expected at least 1 operand");
        get_attr(v, op, NR_A_FN, NR_AK_STR, true);
        break;
    default: break;
    }
}

static void rule_cmp(V *v, NrOpId op) {
    const NrOpInfo *info = &nr_op_info[v->f->ops[op].opc];
    NrTypeId a = otype(v, op, 0);
    if (!dclass_ok(ty(v, a), info->dclass))
        op_error(v, op, "expected %s, got %s", dclass_name(info->dclass), tstr(v, a));
    expect_same(v, op, "operand 1", otype(v, op, 1), a);
    NrType want = shaped(ty(v, a), NR_DT_I1, 0);
    expect_type(v, op, "result", rtype(v, op, 0), &want);
    get_choice(v, op, NR_A_PRED, k_pred, true);
}

/* --- creation ---------------------------------------------------------------------------------- */
static void rule_const(V *v, NrOpId op) {
    const NrType *r = rty(v, op, 0);
    const NrAttr *at = nr_op_attr(v->f, op, NR_A_VALUE);
    if (!at) {
        op_error(v, op, "missing attribute 'value'");
        return;
    }
    if (r->ptr) {
        op_error(v, op, "result cannot be a pointer, got %s", tstr(v, rtype(v, op, 0)));
    } else if (nr_dt_is_int((NrDtype)r->dtype)) {
        if (at->kind != NR_AK_INT) {
            op_error(v, op, "attribute 'value' must be an integer for %s", nr_dtype_info[r->dtype].ir);
            return;
        }
        int bits = nr_dt_bits((NrDtype)r->dtype);
        /* the value must fit the width, read as signed or as unsigned */
        if (bits < 64 && (at->v.i < -((int64_t)1 << (bits - 1)) || at->v.i > ((int64_t)1 << bits) - 1))
            op_error(v, op, "value %lld does not fit in %s", (long long)at->v.i, nr_dtype_info[r->dtype].ir);
    } else if (at->kind != NR_AK_INT && at->kind != NR_AK_FLOAT) {
        op_error(v, op, "attribute 'value' must be a float or an integer for %s", nr_dtype_info[r->dtype].ir);
    }
}

static void rule_arange(V *v, NrOpId op) {
    int64_t start, end;
    bool ok = get_int_in(v, op, NR_A_START, INT32_MIN, INT32_MAX, &start);
    ok = get_int_in(v, op, NR_A_END, INT32_MIN, INT32_MAX, &end) && ok;
    if (!ok) return;
    if (start >= end) {
        op_error(v, op, "start (%lld) must be less than end (%lld)", (long long)start, (long long)end);
        return;
    }
    if (!nr_is_pow2(end - start)) {
        op_error(v, op, "the range end - start = %lld must be a power of two", (long long)(end - start));
        return;
    }
    if (end - start > MAX_BLOCK_ELEMS) {
        op_error(v, op, "the range end - start = %lld exceeds the limit of %d elements", (long long)(end - start),
                 MAX_BLOCK_ELEMS);
        return;
    }
    NrType want = scalar_of(NR_DT_I32);
    want.rank = 1;
    want.shape[0] = (int32_t)(end - start);
    want.layout = rty(v, op, 0)->layout;
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

static void rule_splat(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (a->rank != 0) op_error(v, op, "operand 0 must be a scalar, got %s", tstr(v, otype(v, op, 0)));
    else if (r->rank == 0) op_error(v, op, "result must be a block, got %s", tstr(v, rtype(v, op, 0)));
    else if (!same_elem(a, r))
        op_error(v, op, "result %s has another element type than operand 0 (%s)", tstr(v, rtype(v, op, 0)),
                 tstr(v, otype(v, op, 0)));
}

static void rule_program_id(V *v, NrOpId op) {
    int64_t axis;
    get_int_in(v, op, NR_A_AXIS, 0, 2, &axis);
    NrType want = scalar_of(NR_DT_I32);
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

/* --- selection and conversions ----------------------------------------------------------------- */
static void rule_select(V *v, NrOpId op) {
    NrTypeId r = rtype(v, op, 0);
    NrType c = shaped(ty(v, r), NR_DT_I1, 0);
    expect_type(v, op, "operand 0 (condition)", otype(v, op, 0), &c);
    expect_same(v, op, "operand 1", otype(v, op, 1), r);
    expect_same(v, op, "operand 2", otype(v, op, 2), r);
}

/* Same shape for unary conversions; reports "cannot <op> X to Y: ..." */
static bool conv_shape(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (same_shape(a, r)) return true;
    op_error(v, op, "cannot convert %s to %s: the shapes differ", tstr(v, otype(v, op, 0)), tstr(v, rtype(v, op, 0)));
    return false;
}

static void rule_cast(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!conv_shape(v, op)) return;
    if (a->ptr || r->ptr)
        op_error(v, op, "cannot cast %s to %s: pointers convert with bitcast, ptrtoint or inttoptr",
                 tstr(v, otype(v, op, 0)), tstr(v, rtype(v, op, 0)));
    get_choice(v, op, NR_A_ROUNDING, k_rounding, false);
}

static int elem_bits(const NrType *t) { return t->ptr ? 64 : nr_dt_bits((NrDtype)t->dtype); }

static void rule_bitcast(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!conv_shape(v, op)) return;
    bool ok;
    if (a->ptr && r->ptr) ok = true;
    else if (a->ptr || r->ptr) ok = is_dt(a->ptr ? r : a, NR_DT_I64) || is_dt(a->ptr ? r : a, NR_DT_U64);
    else ok = elem_bits(a) == elem_bits(r);
    if (ok) return;
    if (a->ptr || r->ptr)
        op_error(v, op, "cannot bitcast %s to %s: pointers bitcast only to pointers, i64 or u64",
                 tstr(v, otype(v, op, 0)), tstr(v, rtype(v, op, 0)));
    else
        op_error(v, op, "cannot bitcast %s to %s: element widths differ (%d and %d bits)", tstr(v, otype(v, op, 0)),
                 tstr(v, rtype(v, op, 0)), elem_bits(a), elem_bits(r));
}

static void rule_ptrtoint(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0);
    if (!a->ptr) {
        op_error(v, op, "operand 0 must be a pointer, got %s", tstr(v, otype(v, op, 0)));
        return;
    }
    NrType want = shaped(a, NR_DT_I64, 0);
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

static void rule_inttoptr(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!is_dt(a, NR_DT_I64)) op_error(v, op, "operand 0 must be i64, got %s", tstr(v, otype(v, op, 0)));
    else if (!r->ptr) op_error(v, op, "result must be a pointer, got %s", tstr(v, rtype(v, op, 0)));
    else if (!same_shape(a, r))
        op_error(v, op, "result %s has another shape than operand 0 (%s)", tstr(v, rtype(v, op, 0)),
                 tstr(v, otype(v, op, 0)));
}

static void rule_addptr(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *b = oty(v, op, 1);
    if (!a->ptr) {
        op_error(v, op, "operand 0 must be a pointer, got %s", tstr(v, otype(v, op, 0)));
        return;
    }
    if (!is_int_elem(b) || !same_shape(a, b))
        op_error(v, op, "operand 1 (offset) has type %s, expected integers of the shape of operand 0 (%s)",
                 tstr(v, otype(v, op, 1)), tstr(v, otype(v, op, 0)));
    expect_same(v, op, "result", rtype(v, op, 0), otype(v, op, 0));
}

/* --- memory ------------------------------------------------------------------------------------ */
/* Operand 0 must be a pointer (or block of pointers); *pointee gets the type
 * its elements point to, with its shape. */
static bool pointer_operand(V *v, NrOpId op, NrType *pointee) {
    const NrType *p = oty(v, op, 0);
    if (!p->ptr) {
        op_error(v, op, "operand 0 (pointer) must be a pointer, got %s", tstr(v, otype(v, op, 0)));
        return false;
    }
    *pointee = shaped(p, (NrDtype)p->dtype, p->ptr - 1);
    return true;
}

static void check_mask(V *v, NrOpId op, int i) {
    if (!v->f->ops[op].opnds[i]) return;
    NrType want = shaped(oty(v, op, 0), NR_DT_I1, 0);
    expect_type(v, op, nr_sprintf(v->scratch, "operand %d (mask)", i), otype(v, op, i), &want);
}

/* i32 scalar coordinates: operands from..end. */
static void coordinates(V *v, NrOpId op, int from) {
    NrType i32 = scalar_of(NR_DT_I32);
    for (int i = from; i < v->f->ops[op].nopnds; i++) expect_type(v, op, "coordinate", otype(v, op, i), &i32);
}

/* A host tensor descriptor's block (load and store operands 3...): its base
 * and one coordinate per dimension.  Inside a helper awaiting inlining the
 * base is the helper's argument; gpu-pipeline uses TMA only where it is the
 * kernel's, marked tensordesc. */
static bool desc_block_operands(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    int rank = oty(v, op, 0)->rank;
    if (!o->opnds[3] || o->nopnds != 4 + rank) {
        op_error(v, op, "a tensor descriptor's block takes its base and %d coordinates, got %d operands", rank,
                 o->nopnds - 3);
        return false;
    }
    const NrType *d = oty(v, op, 3);
    if (d->rank != 0 || !d->ptr) op_error(v, op, "operand 3 (the tensor descriptor's base) must be a scalar pointer");
    coordinates(v, op, 4);
    return true;
}

static void rule_load(V *v, NrOpId op) {
    NrType pt;
    const NrOp *o = &v->f->ops[op];
    if (o->nopnds < 3) {
        op_error(v, op, "expected the pointers, a mask and an other value");
        return;
    }
    if (pointer_operand(v, op, &pt)) {
        check_mask(v, op, 1);
        if (v->f->ops[op].opnds[2]) expect_type(v, op, "operand 2 (other)", otype(v, op, 2), &pt);
        expect_type(v, op, "result", rtype(v, op, 0), &pt);
    }
    if (o->nopnds > 3 && !desc_block_operands(v, op)) return;
    get_choice(v, op, NR_A_CACHE, k_cache, false);
    get_choice(v, op, NR_A_EVICT, k_evict, false);
    get_attr(v, op, NR_A_VOLATILE, NR_AK_BOOL, false);
}

static void rule_store(V *v, NrOpId op) {
    NrType pt;
    const NrOp *o = &v->f->ops[op];
    if (o->nopnds < 3) {
        op_error(v, op, "expected the pointers, the value and a mask");
        return;
    }
    if (pointer_operand(v, op, &pt)) {
        expect_type(v, op, "operand 1 (value)", otype(v, op, 1), &pt);
        check_mask(v, op, 2);
    }
    if (o->nopnds > 3 && !desc_block_operands(v, op)) return;
    get_choice(v, op, NR_A_CACHE, k_cache, false);
    get_choice(v, op, NR_A_EVICT, k_evict, false);
}

static void atomic_attrs(V *v, NrOpId op) {
    get_choice(v, op, NR_A_SEM, k_sem, false);
    get_choice(v, op, NR_A_SCOPE, k_scope, false);
}

static void rule_atomic_rmw(V *v, NrOpId op) {
    NrType pt;
    const char *kind = get_choice(v, op, NR_A_KIND, k_rmw, true);
    atomic_attrs(v, op);
    if (!pointer_operand(v, op, &pt)) return;
    if (pt.ptr) {
        op_error(v, op, "atomics operate on integers and floats, not on %s", tstr_of(v, &pt));
        return;
    }
    if (kind && is_bitwise_kind(kind) && !is_int_elem(&pt))
        op_error(v, op, "kind '%s' requires an integer type, got %s", kind, tstr_of(v, &pt));
    expect_type(v, op, "operand 1 (value)", otype(v, op, 1), &pt);
    check_mask(v, op, 2);
    expect_type(v, op, "result", rtype(v, op, 0), &pt);
}

static void rule_atomic_cas(V *v, NrOpId op) {
    NrType pt;
    atomic_attrs(v, op);
    if (!pointer_operand(v, op, &pt)) return;
    if (pt.ptr) {
        op_error(v, op, "atomics operate on integers and floats, not on %s", tstr_of(v, &pt));
        return;
    }
    expect_type(v, op, "operand 1 (compare)", otype(v, op, 1), &pt);
    expect_type(v, op, "operand 2 (value)", otype(v, op, 2), &pt);
    expect_type(v, op, "result", rtype(v, op, 0), &pt);
}

/* --- shape ------------------------------------------------------------------------------------- */
static bool same_elem_or_error(V *v, NrOpId op) {
    if (same_elem(oty(v, op, 0), rty(v, op, 0))) return true;
    op_error(v, op, "result %s has another element type than operand 0 (%s)", tstr(v, rtype(v, op, 0)),
             tstr(v, otype(v, op, 0)));
    return false;
}

static void rule_broadcast(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!same_elem_or_error(v, op)) return;
    bool ok = a->rank == r->rank;
    for (int i = 0; ok && i < a->rank; i++) ok = a->shape[i] == r->shape[i] || a->shape[i] == 1;
    if (!ok)
        op_error(v, op, "cannot broadcast %s to %s: ranks must match and each dimension must be equal or 1",
                 tstr(v, otype(v, op, 0)), tstr(v, rtype(v, op, 0)));
}

static void rule_expand_dims(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0);
    int64_t axis;
    if (a->rank >= NR_MAX_RANK) {
        op_error(v, op, "operand 0 already has the largest rank, %d", NR_MAX_RANK);
        return;
    }
    if (!get_int_in(v, op, NR_A_AXIS, 0, a->rank, &axis)) return;
    NrType want = shaped(a, (NrDtype)a->dtype, a->ptr);
    want.rank = (uint8_t)(a->rank + 1);
    want.layout = rty(v, op, 0)->layout;
    for (int i = 0, j = 0; i < want.rank; i++) want.shape[i] = i == axis ? 1 : a->shape[j++];
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

/* Element count, saturated (the operand's own dims may be out of limits:
 * that is diagnosed at its definition). */
static int64_t numel(const NrType *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] <= 0) return 0;
        n = n > INT64_MAX / t->shape[i] ? INT64_MAX : n * t->shape[i];
    }
    return n;
}

static void rule_reshape(V *v, NrOpId op) {
    if (!same_elem_or_error(v, op)) return;
    if (numel(oty(v, op, 0)) != numel(rty(v, op, 0)))
        op_error(v, op, "cannot reshape %s to %s: the element counts differ", tstr(v, otype(v, op, 0)),
                 tstr(v, rtype(v, op, 0)));
    get_attr(v, op, NR_A_CAN_REORDER, NR_AK_BOOL, false);
}

static void rule_trans(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0);
    const NrAttr *order = get_attr(v, op, NR_A_ORDER, NR_AK_INTS, true);
    if (!order) return;
    bool seen[NR_MAX_RANK] = {false};
    bool ok = order->n == a->rank;
    for (int i = 0; ok && i < order->n; i++) {
        int64_t k = order->v.ints[i];
        ok = k >= 0 && k < a->rank && !seen[k];
        if (ok) seen[k] = true;
    }
    if (!ok) {
        op_error(v, op, "attribute 'order' must be a permutation of the %d axes of operand 0", a->rank);
        return;
    }
    NrType want = shaped(a, (NrDtype)a->dtype, a->ptr);
    want.layout = rty(v, op, 0)->layout;
    for (int i = 0; i < a->rank; i++) want.shape[i] = a->shape[order->v.ints[i]];
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

/* --- reductions and dot ------------------------------------------------------------------------ */
/* Operand 0 reduced along `axis`: *want gets the value result's type. */
static bool reduced_type(V *v, NrOpId op, NrType *want) {
    const NrType *a = oty(v, op, 0);
    int64_t axis;
    if (a->rank == 0 || a->ptr) {
        op_error(v, op, "operand 0 must be a block of integers or floats, got %s", tstr(v, otype(v, op, 0)));
        return false;
    }
    if (!get_int_in(v, op, NR_A_AXIS, 0, a->rank - 1, &axis)) return false;
    *want = shaped(a, (NrDtype)a->dtype, 0);
    want->rank = (uint8_t)(a->rank - 1);
    for (int i = (int)axis; i < want->rank; i++) want->shape[i] = a->shape[i + 1];
    want->shape[want->rank] = 0;
    want->layout = want->rank ? rty(v, op, 0)->layout : 0;
    return true;
}

static void rule_reduce(V *v, NrOpId op) {
    NrType want;
    const char *kind = get_choice(v, op, NR_A_KIND, k_reduce, true);
    get_choice(v, op, NR_A_NAN, k_nan, false);
    if (!reduced_type(v, op, &want)) return;
    if (kind && is_bitwise_kind(kind) && !is_int_elem(&want))
        op_error(v, op, "kind '%s' requires an integer type, got %s", kind, tstr(v, otype(v, op, 0)));
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

static void rule_argreduce(V *v, NrOpId op) {
    NrType want;
    get_choice(v, op, NR_A_KIND, k_argreduce, true);
    get_choice(v, op, NR_A_NAN, k_nan, false);
    if (!reduced_type(v, op, &want)) return;
    expect_type(v, op, "result 0 (value)", rtype(v, op, 0), &want);
    NrType idx = shaped(&want, NR_DT_I32, 0);
    idx.layout = rty(v, op, 1)->layout;
    expect_type(v, op, "result 1 (index)", rtype(v, op, 1), &idx);
}

/* The accumulator dtypes a dot of a x b may use, as a bit set; 0 if the
 * operand dtypes do not combine. */
static unsigned dot_acc_dtypes(NrDtype a, NrDtype b) {
    unsigned f16 = 1u << NR_DT_F16, f32 = 1u << NR_DT_F32;
    if (nr_dt_is_fp8(a) && nr_dt_is_fp8(b)) return f16 | f32;
    if (a != b) return 0;
    switch (a) {
    case NR_DT_F16: return f16 | f32;
    case NR_DT_BF16:
    case NR_DT_F32: return f32;
    case NR_DT_I8: return 1u << NR_DT_I32;
    default: return 0;
    }
}

static void rule_dot(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *b = oty(v, op, 1), *c = oty(v, op, 2);
    get_choice(v, op, NR_A_PRECISION, k_precision, false);
    get_attr(v, op, NR_A_MAX_IMPRECISE, NR_AK_INT, false);
    expect_same(v, op, "result", rtype(v, op, 0), otype(v, op, 2));
    if (a->ptr || b->ptr || c->ptr) {
        op_error(v, op, "operands must be blocks of numbers, not pointers");
        return;
    }
    int rk = a->rank;
    if ((rk != 2 && rk != 3) || b->rank != rk || c->rank != rk) {
        op_error(v, op, "operands must all be 2-D or all 3-D, got %s, %s and %s", tstr(v, otype(v, op, 0)),
                 tstr(v, otype(v, op, 1)), tstr(v, otype(v, op, 2)));
        return;
    }
    int o = rk - 2;
    int32_t M = a->shape[o], K = a->shape[o + 1], N = b->shape[o + 1];
    bool ok = b->shape[o] == K && c->shape[o] == M && c->shape[o + 1] == N;
    if (rk == 3) ok = ok && b->shape[0] == a->shape[0] && c->shape[0] == a->shape[0];
    if (!ok) {
        op_error(v, op, "shapes %s, %s and %s do not form %sMxK @ %sKxN + %sMxN", dims_str(v, a), dims_str(v, b),
                 dims_str(v, c), rk == 3 ? "Bx" : "", rk == 3 ? "Bx" : "", rk == 3 ? "Bx" : "");
        return;
    }
    if (M < 16 || N < 16 || K < 16)
        op_error(v, op, "M, N and K must be at least 16, got M = %d, N = %d, K = %d", M, N, K);
    unsigned accs = dot_acc_dtypes((NrDtype)a->dtype, (NrDtype)b->dtype);
    if (!accs)
        op_error(v, op, "unsupported operand dtypes %s and %s (f16, bf16, f32, f8e4nv, f8e5 or i8, both the same "
                        "except that the two fp8 kinds mix)",
                 nr_dtype_info[a->dtype].ir, nr_dtype_info[b->dtype].ir);
    else if (!(accs & (1u << c->dtype)))
        op_error(v, op, "%s operands cannot accumulate into %s", nr_dtype_info[a->dtype].ir,
                 nr_dtype_info[c->dtype].ir);
}

/* --- control flow ------------------------------------------------------------------------------ */
/* The terminator of block b if it is an `opc`, else NR_NONE (a missing or
 * wrong terminator is diagnosed when the block is checked). */
static NrOpId term_of(const V *v, NrBlockId b, NrOpcode opc) {
    NrOpId last = v->f->blocks[b].last;
    if (last > 0 && last < v->f->nops && v->f->ops[last].opc == opc) return last;
    return NR_NONE;
}

/* Block b's arguments have the types want[0..n); `what` names them. */
static void check_block_args(V *v, NrOpId op, int region, NrBlockId b, const NrTypeId *want, int n,
                             const char *why) {
    const NrBlock *blk = &v->f->blocks[b];
    if (blk->nargs != n) {
        op_error(v, op, "region %d takes %d argument%s, expected %d (%s)", region, blk->nargs,
                 blk->nargs == 1 ? "" : "s", n, why);
        return;
    }
    for (int i = 0; i < n; i++) {
        NrTypeId t = safe_vtype(v, blk->args[i]);
        if (t && want[i] && t != want[i])
            op_error(v, op, "region %d argument %d has type %s, expected %s (%s)", region, i, tstr(v, t),
                     tstr(v, want[i]), why);
    }
}

/* Terminator t's operands from index `from` have the types want[0..n). */
static void check_term_operands(V *v, NrOpId t, int from, const NrTypeId *want, int n, const char *why) {
    const NrOp *o = &v->f->ops[t];
    if (o->nopnds - from != n) {
        op_error(v, t, "passes %d value%s, expected %d (%s)", o->nopnds - from, o->nopnds - from == 1 ? "" : "s", n,
                 why);
        return;
    }
    for (int i = 0; i < n; i++) {
        NrTypeId got = safe_vtype(v, o->opnds[from + i]);
        if (got && want[i] && got != want[i])
            op_error(v, t, "operand %d has type %s, expected %s (%s)", from + i, tstr(v, got), tstr(v, want[i]), why);
    }
}

static NrTypeId *opnd_types(V *v, NrOpId op, int from) {
    const NrOp *o = &v->f->ops[op];
    int n = o->nopnds - from;
    NrTypeId *t = nr_alloc(v->scratch, sizeof(NrTypeId) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) t[i] = otype(v, op, from + i);
    return t;
}

static NrTypeId *res_types(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    NrTypeId *t = nr_alloc(v->scratch, sizeof(NrTypeId) * (size_t)(o->nresults > 0 ? o->nresults : 1));
    for (int i = 0; i < o->nresults; i++) t[i] = rtype(v, op, i);
    return t;
}

static void rule_for(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    if (o->nopnds < 3) {
        op_error(v, op, "expected at least 3 operands (lower bound, upper bound, step), got %d", o->nopnds);
        return;
    }
    NrTypeId iv = otype(v, op, 0);
    const NrType *ivt = ty(v, iv);
    if (!is_int_elem(ivt) || ivt->rank != 0 || ivt->dtype == NR_DT_I1)
        op_error(v, op, "operand 0 (lower bound) must be an integer scalar, got %s", tstr(v, iv));
    expect_same(v, op, "operand 1 (upper bound)", otype(v, op, 1), iv);
    expect_same(v, op, "operand 2 (step)", otype(v, op, 2), iv);
    int n = o->nopnds - 3;
    NrTypeId *inits = opnd_types(v, op, 3);
    if (o->nresults != n) {
        op_error(v, op, "has %d result%s but %d carried value%s", o->nresults, o->nresults == 1 ? "" : "s", n,
                 n == 1 ? "" : "s");
    } else {
        for (int i = 0; i < n; i++)
            if (rtype(v, op, i) != inits[i])
                op_error(v, op, "result %d has type %s, expected %s (the type of its initial value)", i,
                         tstr(v, rtype(v, op, i)), tstr(v, inits[i]));
    }
    NrTypeId *args = nr_alloc(v->scratch, sizeof(NrTypeId) * (size_t)(n + 1));
    args[0] = iv;
    memcpy(args + 1, inits, sizeof(NrTypeId) * (size_t)n);
    NrBlockId body = o->regions[0];
    check_block_args(v, op, 0, body, args, n + 1, "the induction variable, then the carried values");
    NrOpId y = term_of(v, body, NR_OP_YIELD);
    if (y) check_term_operands(v, y, 0, inits, n, "the carried values of for");
}

static void rule_if(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    if (!is_i1_scalar(oty(v, op, 0)))
        op_error(v, op, "operand 0 (condition) must be an i1 scalar, got %s", tstr(v, otype(v, op, 0)));
    NrTypeId *res = res_types(v, op);
    for (int r = 0; r < 2; r++) {
        check_block_args(v, op, r, o->regions[r], NULL, 0, "if regions take no arguments");
        NrOpId y = term_of(v, o->regions[r], NR_OP_YIELD);
        if (y) check_term_operands(v, y, 0, res, o->nresults, "the results of if");
    }
}

static void rule_while(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    NrTypeId *inits = opnd_types(v, op, 0);
    NrTypeId *res = res_types(v, op);
    check_block_args(v, op, 0, o->regions[0], inits, o->nopnds, "the types of the initial values");
    NrOpId c = term_of(v, o->regions[0], NR_OP_CONDITION);
    if (c) {
        const NrOp *co = &v->f->ops[c];
        NrTypeId flag = co->nopnds > 0 ? safe_vtype(v, co->opnds[0]) : NR_NONE;
        if (co->nopnds == 0) op_error(v, c, "expected a continue flag (i1 scalar) as operand 0");
        else if (flag && !is_i1_scalar(ty(v, flag)))
            op_error(v, c, "operand 0 (continue flag) must be an i1 scalar, got %s", tstr(v, flag));
        if (co->nopnds > 0) check_term_operands(v, c, 1, res, o->nresults, "the results of while");
    }
    check_block_args(v, op, 1, o->regions[1], res, o->nresults, "the results of while");
    NrOpId y = term_of(v, o->regions[1], NR_OP_YIELD);
    if (y) check_term_operands(v, y, 0, inits, o->nopnds, "the carried values of while");
}

/* inline_asm: at least one result; operands and results of one shape; the asm, constraints and pack. */
static void rule_inline_asm(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    if (o->nresults < 1) op_error(v, op, "expected at least 1 result");
    get_attr(v, op, NR_A_ASM, NR_AK_STR, true);
    get_attr(v, op, NR_A_CONSTRAINTS, NR_AK_STR, true);
    get_attr(v, op, NR_A_PURE, NR_AK_BOOL, false);
    const NrAttr *pk = get_attr(v, op, NR_A_PACK, NR_AK_INT, false);
    if (pk && (pk->v.i < 1 || pk->v.i > 64)) op_error(v, op, "pack must be 1 to 64, got %lld", (long long)pk->v.i);
    for (int i = 0; i < o->nresults; i++)
        if (!same_shape(rty(v, op, i), rty(v, op, 0))) op_error(v, op, "results have different shapes");
    for (int i = 0; i < o->nopnds; i++)
        if (!same_shape(oty(v, op, i), rty(v, op, 0))) op_error(v, op, "operand %d has another shape than the results", i);
}

static void rule_call(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    const NrAttr *at = get_attr(v, op, NR_A_CALLEE, NR_AK_STR, true);
    if (!at) return;
    NrFunc *g = nr_module_find_func(v->m, at->v.s);
    if (!g) {
        op_error(v, op, "callee @%.100s is not defined in the module", at->v.s);
        return;
    }
    if (g->body <= 0 || g->body >= g->nblocks) return; /* diagnosed with g */
    const NrBlock *gb = &g->blocks[g->body];
    if (o->nopnds != gb->nargs) {
        op_error(v, op, "@%.100s takes %d argument%s, got %d", g->name, gb->nargs, gb->nargs == 1 ? "" : "s",
                 o->nopnds);
    } else {
        for (int i = 0; i < gb->nargs; i++) {
            NrValId a = gb->args[i];
            NrTypeId want = a > 0 && a < g->nvals ? g->vals[a].type : NR_NONE;
            if (valid_type(v, want) && otype(v, op, i) != want)
                op_error(v, op, "operand %d has type %s, expected %s (parameter %d of @%.100s)", i,
                         tstr(v, otype(v, op, i)), tstr(v, want), i, g->name);
        }
    }
    if (o->nresults != g->nrtypes) {
        op_error(v, op, "has %d result%s, but @%.100s returns %d", o->nresults, o->nresults == 1 ? "" : "s", g->name,
                 g->nrtypes);
    } else {
        for (int i = 0; i < g->nrtypes; i++)
            if (valid_type(v, g->rtypes[i]) && rtype(v, op, i) != g->rtypes[i])
                op_error(v, op, "result %d has type %s, expected %s (result %d of @%.100s)", i,
                         tstr(v, rtype(v, op, i)), tstr(v, g->rtypes[i]), i, g->name);
    }
}

/* --- debugging and hints ----------------------------------------------------------------------- */
static void rule_assert(V *v, NrOpId op) {
    if (!is_dt(oty(v, op, 0), NR_DT_I1))
        op_error(v, op, "operand 0 (condition) must be i1, got %s", tstr(v, otype(v, op, 0)));
    get_attr(v, op, NR_A_MSG, NR_AK_STR, false);
}

static void rule_hint(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0);
    get_choice(v, op, NR_A_KIND, k_hint, true);
    const NrAttr *vals = get_attr(v, op, NR_A_VALUES, NR_AK_INTS, true);
    int want = a->rank ? a->rank : 1;
    if (vals && vals->n != want && vals->n != 1)
        op_error(v, op, "attribute 'values' has %d element%s, expected 1 or %d (the rank)", vals->n,
                 vals->n == 1 ? "" : "s", want);
    expect_same(v, op, "result", rtype(v, op, 0), otype(v, op, 0));
}

static void rule_assume(V *v, NrOpId op) {
    if (!is_i1_scalar(oty(v, op, 0)))
        op_error(v, op, "operand 0 must be an i1 scalar, got %s", tstr(v, otype(v, op, 0)));
}

/* --- GPU level (gpu.h) ------------------------------------------------------------------------- */
static const NrLayout *layout_of(const V *v, const NrType *t) {
    return t->layout > 0 && t->layout < v->m->nlayouts ? &v->m->layouts[t->layout] : NULL;
}

static bool is_block_value(const NrType *t) { return t->kind == NR_TK_VALUE && t->rank > 0; }

/* A single buffer (no leading buffer dimension). */
static bool single_buffer(V *v, NrOpId op, const char *what, const NrType *t, NrTypeId id) {
    if (t->kind != NR_TK_MEMDESC) {
        op_error(v, op, "%s must be a shared-memory buffer (!smem), got %s", what, tstr(v, id));
        return false;
    }
    if (t->rank != v->m->layouts[t->layout].rank) {
        op_error(v, op, "%s is a multi-buffered allocation %s; take one buffer with memdesc_index", what, tstr(v, id));
        return false;
    }
    return true;
}

/* Block a (a distributed block) and buffer b hold the same shape and element. */
static void same_contents(V *v, NrOpId op, NrTypeId a, NrTypeId b) {
    const NrType *A = ty(v, a), *B = ty(v, b);
    if (!is_block_value(A)) op_error(v, op, "expected a block, got %s", tstr(v, a));
    else if (!same_shape(A, B) || !same_elem(A, B))
        op_error(v, op, "%s and %s differ in shape or element", tstr(v, a), tstr(v, b));
}

static void rule_convert_layout(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!is_block_value(a) || !is_block_value(r) || !same_shape(a, r) || !same_elem(a, r))
        op_error(v, op, "cannot convert %s to %s: expected blocks of one shape and element", tstr(v, otype(v, op, 0)),
                 tstr(v, rtype(v, op, 0)));
}

static void rule_local_alloc(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    const NrType *r = rty(v, op, 0);
    if (r->kind != NR_TK_MEMDESC) {
        op_error(v, op, "result must be a shared-memory buffer (!smem), got %s", tstr(v, rtype(v, op, 0)));
        return;
    }
    if (o->nopnds > 1) op_error(v, op, "expected at most 1 operand (the initial value), got %d", o->nopnds);
    else if (o->nopnds == 1 && single_buffer(v, op, "result", r, rtype(v, op, 0)))
        same_contents(v, op, otype(v, op, 0), rtype(v, op, 0));
}

static void rule_local_load(V *v, NrOpId op) {
    if (single_buffer(v, op, "operand 0", oty(v, op, 0), otype(v, op, 0)))
        same_contents(v, op, rtype(v, op, 0), otype(v, op, 0));
}

static void rule_local_store(V *v, NrOpId op) {
    if (single_buffer(v, op, "operand 1", oty(v, op, 1), otype(v, op, 1)))
        same_contents(v, op, otype(v, op, 0), otype(v, op, 1));
}

static void rule_memdesc_index(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0);
    if (a->kind != NR_TK_MEMDESC || a->rank != v->m->layouts[a->layout].rank + 1) {
        op_error(v, op, "operand 0 must be a multi-buffered allocation, got %s", tstr(v, otype(v, op, 0)));
        return;
    }
    NrType i32 = scalar_of(NR_DT_I32);
    expect_type(v, op, "operand 1 (index)", otype(v, op, 1), &i32);
    NrType want = *a;
    want.rank = (uint8_t)(a->rank - 1);
    for (int i = 0; i < want.rank; i++) want.shape[i] = a->shape[i + 1];
    want.shape[want.rank] = 0;
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

/* memdesc_trans a: a single 2-D buffer; r its transpose, the same element
 * type in a shared layout of the same kind and swizzle with the order
 * reversed (the same bytes: element (j, i) of r is (i, j) of a). */
static void rule_memdesc_trans(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (!single_buffer(v, op, "operand 0", a, otype(v, op, 0))) return;
    if (r->kind != NR_TK_MEMDESC || a->rank != 2 || r->rank != 2 || !same_elem(a, r) || r->shape[0] != a->shape[1] ||
        r->shape[1] != a->shape[0]) {
        op_error(v, op, "result %s is not the transpose of %s", tstr(v, rtype(v, op, 0)), tstr(v, otype(v, op, 0)));
        return;
    }
    const NrLayout *la = &v->m->layouts[a->layout], *lr = &v->m->layouts[r->layout];
    if (la->kind != lr->kind || la->nvmma != lr->nvmma || la->swizzle_bytes != lr->swizzle_bytes || la->vec != lr->vec ||
        la->per_phase != lr->per_phase || la->max_phase != lr->max_phase || lr->order[0] != la->order[1] ||
        lr->order[1] != la->order[0])
        op_error(v, op, "the layout of result %s is not operand 0's with its order reversed", tstr(v, rtype(v, op, 0)));
}

static void rule_async_copy(V *v, NrOpId op) {
    NrType pt;
    if (!pointer_operand(v, op, &pt)) return;
    if (!single_buffer(v, op, "operand 1", oty(v, op, 1), otype(v, op, 1))) return;
    const NrType *b = oty(v, op, 1);
    if (pt.rank == 0 || !same_shape(&pt, b) || !same_elem(&pt, b))
        op_error(v, op, "pointers %s do not address the elements of %s", tstr(v, otype(v, op, 0)),
                 tstr(v, otype(v, op, 1)));
    check_mask(v, op, 2);
    if (v->f->ops[op].opnds[3]) expect_type(v, op, "operand 3 (other)", otype(v, op, 3), &pt);
    get_choice(v, op, NR_A_CACHE, k_cache, false);
}

/* warp_group_dot a, b, acc: a dot on wgmma.  A is a buffer or a block in
 * the dot_op layout (op_idx 0) of the result's mma version 3 layout; B a
 * buffer; acc the result's type. */
static void rule_warp_group_dot(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *b = oty(v, op, 1), *c = oty(v, op, 2), *r = rty(v, op, 0);
    get_choice(v, op, NR_A_PRECISION, k_precision, false);
    get_attr(v, op, NR_A_MAX_IMPRECISE, NR_AK_INT, false);
    get_attr(v, op, NR_A_IS_ASYNC, NR_AK_BOOL, false);
    expect_same(v, op, "result", rtype(v, op, 0), otype(v, op, 2));
    const NrLayout *rl = layout_of(v, r);
    if (!is_block_value(r) || r->rank != 2 || !rl || rl->kind != NR_LK_MMA || rl->version != 3) {
        op_error(v, op, "result has type %s, expected a 2-D block with an mma version 3 layout", tstr(v, rtype(v, op, 0)));
        return;
    }
    if (a->kind == NR_TK_MEMDESC) {
        if (!single_buffer(v, op, "operand 0", a, otype(v, op, 0))) return;
    } else {
        const NrLayout *al = layout_of(v, a);
        if (!is_block_value(a) || !al || al->kind != NR_LK_DOT_OP || al->op_idx != 0 || al->parent != r->layout) {
            op_error(v, op, "operand 0 has type %s, expected a buffer or the dot_op layout (op_idx = 0, parent = #L%d) "
                            "of the result", tstr(v, otype(v, op, 0)), r->layout);
            return;
        }
    }
    if (!single_buffer(v, op, "operand 1", b, otype(v, op, 1))) return;
    if (a->rank != 2 || b->rank != 2 || a->ptr || b->ptr || a->shape[0] != r->shape[0] || b->shape[1] != r->shape[1] ||
        a->shape[1] != b->shape[0]) {
        op_error(v, op, "shapes %s, %s and %s do not form MxK @ KxN + MxN", dims_str(v, a), dims_str(v, b),
                 dims_str(v, c));
        return;
    }
    unsigned accs = dot_acc_dtypes((NrDtype)a->dtype, (NrDtype)b->dtype);
    if (!accs || !(accs & (1u << c->dtype)))
        op_error(v, op, "%s and %s operands cannot accumulate into %s", nr_dtype_info[a->dtype].ir,
                 nr_dtype_info[b->dtype].ir, nr_dtype_info[c->dtype].ir);
}

/* warp_group_dot_wait a... : the results are the operands' types. */
static void rule_warp_group_dot_wait(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    int64_t num;
    get_int_in(v, op, NR_A_NUM, 0, 1 << 16, &num);
    if (o->nresults != o->nopnds) {
        op_error(v, op, "expected as many results as operands, got %d and %d", o->nresults, o->nopnds);
        return;
    }
    for (int i = 0; i < o->nopnds; i++) expect_same(v, op, "result", rtype(v, op, i), otype(v, op, i));
}

/* An mbarrier: a single i64 buffer of one element. */
static bool mbarrier_operand(V *v, NrOpId op, int i) {
    const NrType *t = oty(v, op, i);
    char what[32];
    snprintf(what, sizeof what, "operand %d (mbarrier)", i);
    if (!single_buffer(v, op, what, t, otype(v, op, i))) return false;
    if (t->ptr || t->dtype != NR_DT_I64 || t->rank != 1 || t->shape[0] != 1) {
        op_error(v, op, "operand %d (mbarrier) must be a buffer of one i64, got %s", i, tstr(v, otype(v, op, i)));
        return false;
    }
    return true;
}

static void optional_pred(V *v, NrOpId op, int i) {
    if (v->f->ops[op].opnds[i] && !is_i1_scalar(oty(v, op, i)))
        op_error(v, op, "operand %d (predicate) must be an i1 scalar, got %s", i, tstr(v, otype(v, op, i)));
}

static void rule_mbarrier(V *v, NrOpId op) {
    int64_t n;
    mbarrier_operand(v, op, 0);
    switch ((NrOpcode)v->f->ops[op].opc) {
    case NR_OP_MBARRIER_INIT: get_int_in(v, op, NR_A_ARRIVALS, 1, 1 << 20, &n); break;
    case NR_OP_MBARRIER_EXPECT:
        get_int_in(v, op, NR_A_BYTES, 0, (1 << 20) - 1, &n);
        optional_pred(v, op, 1);
        break;
    case NR_OP_MBARRIER_INVAL: break;
    case NR_OP_MBARRIER_ARRIVE: optional_pred(v, op, 1); break;
    default: {
        NrType i32 = scalar_of(NR_DT_I32);
        expect_type(v, op, "operand 1 (phase parity)", otype(v, op, 1), &i32);
        break;
    }
    }
}

/* warp_specialize: a region of no arguments ending in an empty yield, in
 * the kernel's own body (not nested, not in a called function: the split
 * of the program's warps happens once), at most one per kernel; register
 * counts 0 (unchanged) or multiples of 8 from 24 to 256 (setmaxnreg's). */
static void rule_warp_specialize(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    check_block_args(v, op, 0, o->regions[0], NULL, 0, "warp_specialize's region takes no arguments");
    NrOpId y = term_of(v, o->regions[0], NR_OP_YIELD);
    if (y && v->f->ops[y].nopnds) op_error(v, y, "warp_specialize's region yields no values");
    if (!v->f->is_kernel || o->block != v->f->body) op_error(v, op, "must be in a kernel's own body");
    int64_t r, c;
    if (get_int_in(v, op, NR_A_REGS, 0, 256, &r) && (r % 8 || (r && r < 24)))
        op_error(v, op, "regs must be 0 or a multiple of 8 from 24, got %lld", (long long)r);
    if (get_int_in(v, op, NR_A_CONSUMER_REGS, 0, 256, &c) && (c % 8 || (c && c < 24)))
        op_error(v, op, "consumer_regs must be 0 or a multiple of 8 from 24, got %lld", (long long)c);
    for (NrOpId x = o->block == v->f->body ? o->prev : NR_NONE; x; x = v->f->ops[x].prev)
        if (v->f->ops[x].opc == NR_OP_WARP_SPECIALIZE) {
            op_error(v, op, "a kernel has at most one warp_specialize");
            break;
        }
}

/* tma_load d, b, m, pred, c...: d a 64-bit address, b a single buffer, m
 * an mbarrier, one i32 coordinate per dimension of b. */
/* tma_load and tma_store: operand 0 a 64-bit tensor map address, operand 1
 * a single buffer (returned; NULL after an error). */
static const NrType *tma_map_and_buffer(V *v, NrOpId op) {
    const NrType *d = oty(v, op, 0), *b = oty(v, op, 1);
    if (d->rank != 0 || (!d->ptr && d->dtype != NR_DT_I64 && d->dtype != NR_DT_U64))
        op_error(v, op, "operand 0 (tensor map) must be a pointer or a 64-bit integer scalar, got %s",
                 tstr(v, otype(v, op, 0)));
    return single_buffer(v, op, "operand 1", b, otype(v, op, 1)) ? b : NULL;
}

/* One i32 coordinate per dimension of buffer b, from operand `from` on. */
static void tma_coordinates(V *v, NrOpId op, int from, const NrType *b) {
    int n = v->f->ops[op].nopnds - from;
    if (n != b->rank) {
        op_error(v, op, "expected %d coordinates (one per dimension of the buffer), got %d", b->rank, n);
        return;
    }
    coordinates(v, op, from);
}

static void rule_tma_load(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    if (o->nopnds < 5) {
        op_error(v, op, "expected the tensor map, the buffer, the mbarrier, a predicate and coordinates");
        return;
    }
    const NrType *b = tma_map_and_buffer(v, op);
    if (!b) return;
    mbarrier_operand(v, op, 2);
    optional_pred(v, op, 3);
    tma_coordinates(v, op, 4, b);
}

/* d: a kernel argument that is the base of a host tensor descriptor of
 * rank r (its tensordesc fact); the `r` coordinates follow it. */
static bool tensordesc_base(V *v, NrOpId op, int i, int rank) {
    NrValId d = v->f->ops[op].opnds[i];
    const NrValue *dv = &v->f->vals[d];
    if (dv->def || dv->block != v->f->body || !v->f->is_kernel || dv->index >= v->f->blocks[v->f->body].nargs ||
        v->f->params[dv->index].tensordesc == 0) {
        op_error(v, op, "operand %d must be a kernel argument marked tensordesc (a host tensor descriptor's base)", i);
        return false;
    }
    if (rank >= 0 && v->f->params[dv->index].tensordesc != rank) {
        op_error(v, op, "the tensor descriptor has %d dimensions, the block %d", v->f->params[dv->index].tensordesc,
                 rank);
        return false;
    }
    return true;
}

static void rule_tma_store(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    if (o->nopnds < 3) {
        op_error(v, op, "expected the tensor map, the buffer and coordinates");
        return;
    }
    const NrType *b = tma_map_and_buffer(v, op);
    if (b) tma_coordinates(v, op, 2, b);
}

static void rule_tensormap(V *v, NrOpId op) {
    if (!tensordesc_base(v, op, 0, -1)) return;
    NrType i64 = scalar_of(NR_DT_I64);
    expect_type(v, op, "result", rtype(v, op, 0), &i64);
}

static void rule_async_wait(V *v, NrOpId op) {
    int64_t num;
    get_int_in(v, op, NR_A_NUM, 0, 1 << 16, &num);
}

/* gather: operand 0 a block; operand 1 integers (not i1) of its rank and of
 * its sizes outside `axis`; the result has operand 1's shape and layout and
 * operand 0's element. */
static void rule_gather(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *x = oty(v, op, 1);
    int64_t axis;
    if (a->rank == 0) {
        op_error(v, op, "operand 0 must be a block, got %s", tstr(v, otype(v, op, 0)));
        return;
    }
    if (x->rank != a->rank || !is_int_elem(x) || x->dtype == NR_DT_I1) {
        op_error(v, op, "operand 1 (index) must be a block of integers of operand 0's rank, got %s",
                 tstr(v, otype(v, op, 1)));
        return;
    }
    if (!get_int_in(v, op, NR_A_AXIS, 0, a->rank - 1, &axis)) return;
    for (int d = 0; d < a->rank; d++)
        if (d != axis && x->shape[d] != a->shape[d]) {
            op_error(v, op, "operand 1 (index) has type %s, expected operand 0's size %d along axis %d",
                     tstr(v, otype(v, op, 1)), a->shape[d], d);
            return;
        }
    NrType want = shaped(x, (NrDtype)a->dtype, a->ptr);
    want.layout = rty(v, op, 0)->layout;
    expect_type(v, op, "result", rtype(v, op, 0), &want);
}

/* histogram: a 1-d block of integers (not i1), an optional i1 mask of its
 * type's shape, a 1-d i32 result (the bins). */
static void rule_histogram(V *v, NrOpId op) {
    const NrType *a = oty(v, op, 0), *r = rty(v, op, 0);
    if (a->rank != 1 || !is_int_elem(a) || a->dtype == NR_DT_I1) {
        op_error(v, op, "operand 0 must be a 1-d block of integers, got %s", tstr(v, otype(v, op, 0)));
        return;
    }
    check_mask(v, op, 1);
    if (r->rank != 1 || !is_dt(r, NR_DT_I32))
        op_error(v, op, "result must be a 1-d block of i32 (the bins), got %s", tstr(v, rtype(v, op, 0)));
}

/* Operand i of a dot with result layout R: the dot_op layout of R for
 * operand i, with the k_width the operand's element width needs on mma. */
static void check_dot_operand(V *v, NrOpId op, int i, int32_t R) {
    const NrType *t = oty(v, op, i);
    const NrLayout *l = layout_of(v, t);
    if (!l || l->kind != NR_LK_DOT_OP || l->op_idx != i || l->parent != R) {
        op_error(v, op, "operand %d has type %s, expected the dot_op layout (op_idx = %d, parent = #L%d) of the result",
                 i, tstr(v, otype(v, op, i)), i, R);
        return;
    }
    const NrLayout *p = &v->m->layouts[R];
    int bytes = nr_dtype_info[t->dtype].bytes;
    if (p->kind == NR_LK_MMA && (bytes > 4 || l->k_width != 4 / bytes || p->instr[2] != 8 * l->k_width))
        op_error(v, op, "operand %d (%s) needs k_width %d and an instruction k of %d", i, nr_dtype_info[t->dtype].ir,
                 bytes <= 4 ? 4 / bytes : 0, bytes <= 4 ? 32 / bytes : 0);
}

static bool permuted_blocked(const NrLayout *a, const NrLayout *r, const NrAttr *order) {
    if (a->kind != NR_LK_BLOCKED || r->kind != NR_LK_BLOCKED || a->rank != r->rank || order->n != a->rank) return false;
    int inv[NR_MAX_RANK];
    for (int i = 0; i < a->rank; i++) inv[order->v.ints[i]] = i;
    for (int i = 0; i < a->rank; i++) {
        int j = (int)order->v.ints[i];
        if (r->size_per_thread[i] != a->size_per_thread[j] || r->threads_per_warp[i] != a->threads_per_warp[j] ||
            r->warps_per_cta[i] != a->warps_per_cta[j] || r->order[i] != inv[a->order[i]])
            return false;
    }
    return true;
}

/* How layouts of a GPU function's ops relate (after the op's own rule). */
static void gpu_layout_rules(V *v, NrOpId op) {
    const NrOp *o = &v->f->ops[op];
    NrOpcode opc = (NrOpcode)o->opc;
    /* SAME and CMP ops compare whole types, layouts included */
    if ((nr_op_info[opc].flags & NR_OPF_ELEM) && nr_op_info[opc].vclass == NR_VC_CUSTOM) {
        int32_t want = o->nresults ? rty(v, op, 0)->layout : 0;
        for (int i = 0; i < o->nopnds; i++) {
            if (!o->opnds[i] || !is_block_value(oty(v, op, i)) || oty(v, op, i)->layout == want) continue;
            op_error(v, op, "operand %d has type %s, but an elementwise op keeps one layout (the result's #L%d)", i,
                     tstr(v, otype(v, op, i)), want);
            return;
        }
    }
    switch (opc) {
    case NR_OP_BROADCAST:
        if (oty(v, op, 0)->layout != rty(v, op, 0)->layout)
            op_error(v, op, "operand 0 has type %s, but broadcast keeps the layout of its result %s",
                     tstr(v, otype(v, op, 0)), tstr(v, rtype(v, op, 0)));
        break;
    case NR_OP_EXPAND_DIMS: {
        const NrLayout *a = layout_of(v, oty(v, op, 0));
        int64_t axis = nr_op_int(v->f, op, NR_A_AXIS, -1);
        if (a && (a->kind != NR_LK_SLICE || a->dim != axis || a->parent != rty(v, op, 0)->layout))
            op_error(v, op, "operand 0 has type %s, expected the slice (dim = %lld) of the result's layout #L%d",
                     tstr(v, otype(v, op, 0)), (long long)axis, rty(v, op, 0)->layout);
        break;
    }
    case NR_OP_REDUCE:
    case NR_OP_ARGREDUCE: {
        int64_t axis = nr_op_int(v->f, op, NR_A_AXIS, -1);
        for (int i = 0; i < o->nresults; i++) {
            const NrLayout *r = layout_of(v, rty(v, op, i));
            if (r && (r->kind != NR_LK_SLICE || r->dim != axis || r->parent != oty(v, op, 0)->layout))
                op_error(v, op, "result %d has type %s, expected the slice (dim = %lld) of the operand's layout #L%d",
                         i, tstr(v, rtype(v, op, i)), (long long)axis, oty(v, op, 0)->layout);
        }
        break;
    }
    case NR_OP_GATHER:
        if (oty(v, op, 1)->layout != rty(v, op, 0)->layout)
            op_error(v, op, "operand 1 (index) has type %s, but gather gives its result the index's layout, got %s",
                     tstr(v, otype(v, op, 1)), tstr(v, rtype(v, op, 0)));
        break;
    case NR_OP_TRANS: {
        const NrAttr *order = nr_op_attr(v->f, op, NR_A_ORDER);
        const NrLayout *a = layout_of(v, oty(v, op, 0)), *r = layout_of(v, rty(v, op, 0));
        if (order && order->kind == NR_AK_INTS && a && r && !permuted_blocked(a, r, order))
            op_error(v, op, "expected blocked layouts, the result's the operand's with its dimensions permuted");
        break;
    }
    case NR_OP_DOT: {
        int32_t R = rty(v, op, 0)->layout;
        const NrLayout *r = layout_of(v, rty(v, op, 0));
        if (!r) break;
        if (r->kind != NR_LK_MMA && r->kind != NR_LK_BLOCKED) {
            op_error(v, op, "result has type %s, expected an mma or blocked layout", tstr(v, rtype(v, op, 0)));
            break;
        }
        check_dot_operand(v, op, 0, R);
        check_dot_operand(v, op, 1, R);
        break;
    }
    default: break;
    }
}

static void rule_gpu_op(V *v, NrOpId op) {
    if (!v->gpu) {
        op_error(v, op, "is a GPU op; it appears only in GPU IR (a module with num_warps whose blocks have layouts)");
        return;
    }
    switch ((NrOpcode)v->f->ops[op].opc) {
    case NR_OP_CONVERT_LAYOUT: rule_convert_layout(v, op); break;
    case NR_OP_LOCAL_ALLOC: rule_local_alloc(v, op); break;
    case NR_OP_LOCAL_LOAD: rule_local_load(v, op); break;
    case NR_OP_LOCAL_STORE: rule_local_store(v, op); break;
    case NR_OP_MEMDESC_INDEX: rule_memdesc_index(v, op); break;
    case NR_OP_MEMDESC_TRANS: rule_memdesc_trans(v, op); break;
    case NR_OP_ASYNC_COPY: rule_async_copy(v, op); break;
    case NR_OP_ASYNC_WAIT: rule_async_wait(v, op); break;
    case NR_OP_WARP_GROUP_DOT: rule_warp_group_dot(v, op); break;
    case NR_OP_WARP_GROUP_DOT_WAIT: rule_warp_group_dot_wait(v, op); break;
    case NR_OP_MBARRIER_INIT:
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_WAIT:
    case NR_OP_MBARRIER_INVAL:
    case NR_OP_MBARRIER_ARRIVE: rule_mbarrier(v, op); break;
    case NR_OP_WARP_SPECIALIZE: rule_warp_specialize(v, op); break;
    case NR_OP_TMA_LOAD: rule_tma_load(v, op); break;
    case NR_OP_WARPGROUP_ID: {
        NrType want = scalar_of(NR_DT_I32);
        expect_type(v, op, "result", rtype(v, op, 0), &want);
        break;
    }
    case NR_OP_TENSORMAP: rule_tensormap(v, op); break;
    case NR_OP_TMA_STORE: rule_tma_store(v, op); break;
    default: break;
    }
}

static void rule_custom(V *v, NrOpId op) {
    switch ((NrOpcode)v->f->ops[op].opc) {
    case NR_OP_CONST: rule_const(v, op); break;
    case NR_OP_ARANGE: rule_arange(v, op); break;
    case NR_OP_SPLAT: rule_splat(v, op); break;
    case NR_OP_PROGRAM_ID:
    case NR_OP_NUM_PROGRAMS: rule_program_id(v, op); break;
    case NR_OP_SELECT: rule_select(v, op); break;
    case NR_OP_CAST: rule_cast(v, op); break;
    case NR_OP_BITCAST: rule_bitcast(v, op); break;
    case NR_OP_PTRTOINT: rule_ptrtoint(v, op); break;
    case NR_OP_INTTOPTR: rule_inttoptr(v, op); break;
    case NR_OP_ADDPTR: rule_addptr(v, op); break;
    case NR_OP_LOAD: rule_load(v, op); break;
    case NR_OP_STORE: rule_store(v, op); break;
    case NR_OP_ATOMIC_RMW: rule_atomic_rmw(v, op); break;
    case NR_OP_ATOMIC_CAS: rule_atomic_cas(v, op); break;
    case NR_OP_BROADCAST: rule_broadcast(v, op); break;
    case NR_OP_EXPAND_DIMS: rule_expand_dims(v, op); break;
    case NR_OP_RESHAPE: rule_reshape(v, op); break;
    case NR_OP_TRANS: rule_trans(v, op); break;
    case NR_OP_REDUCE: rule_reduce(v, op); break;
    case NR_OP_ARGREDUCE: rule_argreduce(v, op); break;
    case NR_OP_GATHER: rule_gather(v, op); break;
    case NR_OP_HISTOGRAM: rule_histogram(v, op); break;
    case NR_OP_DOT: rule_dot(v, op); break;
    case NR_OP_FOR: rule_for(v, op); break;
    case NR_OP_IF: rule_if(v, op); break;
    case NR_OP_WHILE: rule_while(v, op); break;
    case NR_OP_CALL: rule_call(v, op); break;
    case NR_OP_INLINE_ASM: rule_inline_asm(v, op); break;
    case NR_OP_PRINT:
        get_attr(v, op, NR_A_PREFIX, NR_AK_STR, false);
        get_attr(v, op, NR_A_HEX, NR_AK_BOOL, false);
        break;
    case NR_OP_ASSERT: rule_assert(v, op); break;
    case NR_OP_HINT: rule_hint(v, op); break;
    case NR_OP_ASSUME: rule_assume(v, op); break;
    /* Terminators are checked with the region or function they end. */
    case NR_OP_YIELD:
    case NR_OP_CONDITION:
    case NR_OP_RETURN:
    case NR_OP_BARRIER: break;
    case NR_OP_CONVERT_LAYOUT:
    case NR_OP_LOCAL_ALLOC:
    case NR_OP_LOCAL_LOAD:
    case NR_OP_LOCAL_STORE:
    case NR_OP_MEMDESC_INDEX:
    case NR_OP_MEMDESC_TRANS:
    case NR_OP_ASYNC_COPY:
    case NR_OP_ASYNC_COMMIT_GROUP:
    case NR_OP_ASYNC_WAIT:
    case NR_OP_WARP_GROUP_DOT:
    case NR_OP_WARP_GROUP_DOT_WAIT:
    case NR_OP_MBARRIER_INIT:
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_WAIT:
    case NR_OP_MBARRIER_INVAL:
    case NR_OP_MBARRIER_ARRIVE:
    case NR_OP_WARP_SPECIALIZE:
    case NR_OP_TMA_LOAD:
    case NR_OP_TMA_STORE:
    case NR_OP_WARPGROUP_ID:
    case NR_OP_TENSORMAP: rule_gpu_op(v, op); break;
    default: NR_ICE("op %s has no verifier rule", nr_op_info[v->f->ops[op].opc].name);
    }
}

/* --- structure --------------------------------------------------------------------------------- */
static bool optional_slot(NrOpcode opc, int i) {
    switch (opc) {
    case NR_OP_LOAD: return i == 1 || i == 2;
    case NR_OP_ASYNC_COPY: return i == 2 || i == 3;
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_ARRIVE: return i == 1;
    case NR_OP_TMA_LOAD: return i == 3;
    case NR_OP_STORE:
    case NR_OP_ATOMIC_RMW: return i == 2;
    case NR_OP_HISTOGRAM: return i == 1;
    default: return false;
    }
}

/* The terminator region r of op `opc` must end with (NR_OP_INVALID: any). */
static NrOpcode region_terminator(NrOpcode opc, int r) {
    switch (opc) {
    case NR_OP_FOR:
    case NR_OP_IF:
    case NR_OP_WARP_SPECIALIZE: return NR_OP_YIELD;
    case NR_OP_WHILE: return r == 0 ? NR_OP_CONDITION : NR_OP_YIELD;
    default: return NR_OP_INVALID;
    }
}

static void check_block(V *v, NrBlockId b, NrOpId parent, int region, int depth);

static void check_arity(V *v, NrOpId op, const char *what, int want, int got, bool *ok) {
    if (want == NR_VAR || want == got) return;
    op_error(v, op, "expected %d %s%s, got %d", want, what, want == 1 ? "" : "s", got);
    *ok = false;
}

/* Ids, ownership, arity, `_` slots and visibility; false if the op is too
 * broken for its type rules. */
static bool check_structure(V *v, NrOpId op) {
    NrFunc *f = v->f;
    const NrOp *o = &f->ops[op];
    const NrOpInfo *info = &nr_op_info[o->opc];
    bool ok = true;
    check_arity(v, op, "operand", info->nopnd, o->nopnds, &ok);
    check_arity(v, op, "result", info->nres, o->nresults, &ok);
    check_arity(v, op, "region", info->nreg, o->nregions, &ok);
    for (int i = 0; i < o->nopnds; i++) {
        NrValId x = o->opnds[i];
        if (x == NR_NONE) {
            if (!optional_slot((NrOpcode)o->opc, i)) {
                op_error(v, op, "operand %d is absent ('_'); only the mask and other of load and the mask of "
                                "store and atomic_rmw may be",
                         i);
                ok = false;
            }
        } else if (x < 0 || x >= f->nvals) {
            op_error(v, op, "operand %d is an invalid value id %d", i, x);
            ok = false;
        } else if (!v->vis[x]) {
            op_error(v, op, "operand %d is not visible here: it must be defined earlier in this block or in an "
                            "enclosing one",
                     i);
            ok = false;
        } else if (!valid_type(v, f->vals[x].type)) {
            ok = false; /* diagnosed at its definition */
        }
    }
    for (int i = 0; i < o->nresults; i++) {
        NrValId r = o->results[i];
        if (r <= 0 || r >= f->nvals || f->vals[r].def != op || f->vals[r].index != i) {
            op_error(v, op, "result %d is not a value defined by this op", i);
            ok = false;
        } else if (!check_type(v, op, o->nresults == 1 ? "result" : nth(v, "result", i), f->vals[r].type)) {
            ok = false;
        }
    }
    for (int r = 0; r < o->nregions; r++) {
        NrBlockId b = o->regions[r];
        if (b <= 0 || b >= f->nblocks || f->blocks[b].parent != op) {
            op_error(v, op, "region %d is not a block owned by this op", r);
            ok = false;
        }
    }
    return ok;
}

static void check_op(V *v, NrOpId op, int depth) {
    NrFunc *f = v->f;
    const NrOp *o = &f->ops[op];
    bool ok = o->opc != NR_OP_INVALID && o->opc < NR_OP_COUNT;
    if (!ok) op_error(v, op, "invalid opcode %d", o->opc);
    else ok = check_structure(v, op);
    if (ok) {
        /* region arguments are checked before a rule reads their types */
        for (int r = 0; r < o->nregions; r++) {
            const NrBlock *blk = &f->blocks[o->regions[r]];
            for (int i = 0; i < blk->nargs; i++) {
                NrValId x = blk->args[i];
                if (x <= 0 || x >= f->nvals || f->vals[x].def != NR_NONE || f->vals[x].block != o->regions[r] ||
                    f->vals[x].index != i) {
                    op_error(v, op, "region %d argument %d is not a value of that block", r, i);
                    ok = false;
                } else if (!check_type(v, op, nr_sprintf(v->scratch, "region %d argument %d", r, i),
                                       f->vals[x].type)) {
                    ok = false;
                }
            }
        }
    }
    if (ok) {
        const NrOpInfo *info = &nr_op_info[o->opc];
        if (info->vclass == NR_VC_SAME) rule_same(v, op);
        else if (info->vclass == NR_VC_CMP) rule_cmp(v, op);
        else rule_custom(v, op);
        if (v->gpu) gpu_layout_rules(v, op);
        const NrAttr *so = nr_op_attr(f, op, NR_A_SMEM_OFFSET);
        if (so && (so->kind != NR_AK_INT || so->v.i < 0))
            op_error(v, op, "attribute 'smem_offset' must be a non-negative integer");
    }
    for (int r = 0; r < o->nregions; r++) {
        NrBlockId b = o->regions[r];
        if (b > 0 && b < f->nblocks && f->blocks[b].parent == op) check_block(v, b, op, r, depth + 1);
    }
    for (int i = 0; i < o->nresults; i++) {
        NrValId x = o->results[i];
        if (x > 0 && x < f->nvals) v->vis[x] = 1;
    }
}

/* The last op of b must be a terminator of the kind its parent requires
 * (parent NR_NONE: the function body, ended by return). */
static void check_terminator(V *v, NrBlockId b, NrOpId parent, int region) {
    NrFunc *f = v->f;
    NrOpId last = f->blocks[b].last;
    bool has_term = last > 0 && last < f->nops && f->ops[last].opc < NR_OP_COUNT &&
                    (nr_op_info[f->ops[last].opc].flags & NR_OPF_TERM);
    NrOpcode want = parent ? region_terminator((NrOpcode)f->ops[parent].opc, region) : NR_OP_RETURN;
    if (!has_term) {
        const char *tn = want ? nr_op_info[want].name : "a terminator";
        if (parent) op_error(v, parent, "region %d does not end with %s", region, tn);
        else func_error(v, "body does not end with return");
        return;
    }
    if (want && f->ops[last].opc != want) {
        if (parent)
            op_error(v, last, "cannot end region %d of %s, which must end with %s", region,
                     op_name(&f->ops[parent]), nr_op_info[want].name);
        else op_error(v, last, "cannot end a function body, which must end with return");
    }
}

static void check_block(V *v, NrBlockId b, NrOpId parent, int region, int depth) {
    NrFunc *f = v->f;
    if (depth > MAX_DEPTH) {
        op_error(v, parent, "regions nest more than %d deep", MAX_DEPTH);
        return;
    }
    const NrBlock *blk = &f->blocks[b];
    for (int i = 0; i < blk->nargs; i++)
        if (blk->args[i] > 0 && blk->args[i] < f->nvals) v->vis[blk->args[i]] = 1;
    int32_t steps = 0;
    NrOpId prev = NR_NONE;
    bool corrupt = false;
    for (NrOpId o = blk->first; o; o = f->ops[o].next) {
        if (o < 0 || o >= f->nops || ++steps > f->nops || f->ops[o].prev != prev) {
            corrupt = true;
            break;
        }
        prev = o;
        const NrOp *op = &f->ops[o];
        if (op->dead || op->block != b) {
            op_error(v, o, "op is %s but still listed in a block", op->dead ? "erased" : "in another block");
            continue;
        }
        if (op->opc < NR_OP_COUNT && (nr_op_info[op->opc].flags & NR_OPF_TERM) && o != blk->last)
            op_error(v, o, "must be the last op of its block");
        check_op(v, o, depth);
    }
    if (corrupt || prev != blk->last) {
        if (parent) op_error(v, parent, "region %d has a corrupt op list", region);
        else func_error(v, "the body has a corrupt op list");
        return;
    }
    check_terminator(v, b, parent, region);
    /* Values of this block go out of scope. */
    for (int i = 0; i < blk->nargs; i++)
        if (blk->args[i] > 0 && blk->args[i] < f->nvals) v->vis[blk->args[i]] = 0;
    steps = 0;
    for (NrOpId o = blk->first; o > 0 && o < f->nops && ++steps <= f->nops; o = f->ops[o].next)
        for (int i = 0; i < f->ops[o].nresults; i++)
            if (f->ops[o].results[i] > 0 && f->ops[o].results[i] < f->nvals) v->vis[f->ops[o].results[i]] = 0;
}

/* --- functions and modules --------------------------------------------------------------------- */
static void check_return(V *v) {
    NrFunc *f = v->f;
    NrOpId r = term_of(v, f->body, NR_OP_RETURN);
    if (!r) return;
    const NrOp *o = &f->ops[r];
    if (o->nopnds != f->nrtypes) {
        op_error(v, r, "returns %d value%s, but @%.100s returns %d", o->nopnds, o->nopnds == 1 ? "" : "s", f->name,
                 f->nrtypes);
        return;
    }
    for (int i = 0; i < o->nopnds; i++) {
        NrTypeId got = safe_vtype(v, o->opnds[i]);
        if (got && valid_type(v, f->rtypes[i]) && got != f->rtypes[i])
            op_error(v, r, "operand %d has type %s, expected %s (result %d of @%.100s)", i, tstr(v, got),
                     tstr(v, f->rtypes[i]), i, f->name);
    }
}

bool nr_func_verify(NrFunc *f, NrDiags *d) {
    NrArena scratch;
    nr_arena_init(&scratch);
    V v = {f->mod, f, d, true, NULL, &scratch, false};
    /* GPU IR: some value has a layout (or is a shared-memory buffer); then all blocks must. */
    for (NrValId x = 1; x < f->nvals && !v.gpu; x++) {
        NrTypeId t = f->vals[x].type;
        if (t > 0 && t < f->mod->ntypes) v.gpu = f->mod->types[t].layout != 0 || f->mod->types[t].kind == NR_TK_MEMDESC;
    }
    if (v.gpu && f->mod->num_warps <= 0)
        func_error(&v, "has blocks with layouts, but the module has no num_warps (module attributes)");
    v.vis = nr_alloc(&scratch, (size_t)(f->nvals > 0 ? f->nvals : 1));
    if (!f->name || !*f->name) func_error(&v, "function has no name");
    if (f->body <= 0 || f->body >= f->nblocks || f->blocks[f->body].parent != NR_NONE) {
        func_error(&v, "has no valid body block");
        nr_arena_free(&scratch);
        return false;
    }
    const NrBlock *body = &f->blocks[f->body];
    for (int i = 0; i < body->nargs; i++) {
        NrValId x = body->args[i];
        if (x <= 0 || x >= f->nvals || f->vals[x].def != NR_NONE || f->vals[x].block != f->body) {
            func_error(&v, "parameter %d is not an argument of the body", i);
            continue;
        }
        check_type(&v, NR_NONE, nth(&v, "parameter", i), f->vals[x].type);
        if (f->params && f->params[i].divisibility < 1)
            func_error(&v, "parameter %d has divisibility %d, expected a positive value", i, f->params[i].divisibility);
    }
    for (int i = 0; i < f->nrtypes; i++) check_type(&v, NR_NONE, nth(&v, "result", i), f->rtypes[i]);
    check_block(&v, f->body, NR_NONE, 0, 0);
    check_return(&v);
    nr_arena_free(&scratch);
    return v.ok;
}

/* The target attributes and the layout table of a GPU module. */
static bool verify_gpu_module(NrModule *m, NrDiags *d) {
    bool ok = true;
    NrLoc none = {0, 0, 0};
    if (m->num_warps < 0 || m->num_warps > 32 || (m->num_warps && !nr_is_pow2(m->num_warps))) {
        nr_error(d, none, "module: num_warps must be a power of two from 1 to 32, got %d", m->num_warps);
        ok = false;
    }
    if (m->sm < 0) {
        nr_error(d, none, "module: sm must not be negative, got %d", m->sm);
        ok = false;
    }
    for (int32_t l = 1; l < m->nlayouts; l++) {
        char why[200];
        if (!nr_layout_check(m, l, m->num_warps, why, sizeof why)) {
            nr_error(d, none, "module: layout #L%d: %s", l, why);
            ok = false;
        }
    }
    return ok;
}

bool nr_module_verify(NrModule *m, NrDiags *d) {
    bool ok = verify_gpu_module(m, d);
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        for (int j = 0; j < i; j++) {
            if (f->name && m->funcs[j]->name && strcmp(f->name, m->funcs[j]->name) == 0) {
                nr_error(d, f->loc, "function @%.100s is defined twice", f->name);
                ok = false;
                break;
            }
        }
        ok = nr_func_verify(f, d) && ok;
    }
    return ok;
}
