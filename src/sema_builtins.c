/* sema_builtins.c - the kernel library: tl.*, tl.math.*, libdevice.*,
 * triton.*, the Python builtins kernels may call, tensor methods and
 * attributes, and dtype methods and attributes.
 *
 * Each entry of the table names a function, where it can be reached (its
 * module, or as a method), its parameters written as in Python (names,
 * defaults, *varargs) and its handler.  Calls bind their arguments to the
 * parameters first (nr_sm_bind_args), so every handler sees one Val per
 * parameter.  Names, parameters and keywords are Triton's.
 *
 * Most functions are one op.  The ones Triton writes in Python on top of
 * others are built here from ops the same way: random numbers (Philox from
 * umulhi/xor/mul/add), join/split/sort (selects and xor reductions over
 * the element bits, so data moves exactly), flip (a gather at the mirrored
 * index), scans and reductions with a combine function (trees of pairwise
 * combines).  gather and histogram are ops of their own. */
#include "sema_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- parameter specs and binding ------------------------------------------------------------------ */
typedef struct Param {
    const char *name;
    const char *dflt;   /* literal text, NULL if required */
    size_t dlen;
    bool varargs;
} Param;

/* Split "a, b=None, *args, c='x'" into params; returns the count. */
static int parse_params(Sema *s, const char *spec, Param **out) {
    Param *p = NULL;
    int n = 0, cap = 0;
    const char *q = spec;
    while (*q) {
        while (*q == ' ' || *q == ',') q++;
        if (!*q) break;
        const char *start = q;
        char quote = 0;
        int paren = 0;
        for (; *q; q++) {
            if (quote) {
                if (*q == quote) quote = 0;
            } else if (*q == '\'' || *q == '"') {
                quote = *q;
            } else if (*q == '(') {
                paren++;
            } else if (*q == ')') {
                paren--;
            } else if (*q == ',' && paren == 0) {
                break;
            }
        }
        const char *end = q;
        while (end > start && end[-1] == ' ') end--;
        Param *x = NR_PUSH(s->a, p, n, cap);
        x->varargs = *start == '*';
        if (x->varargs) start++;
        const char *eq = memchr(start, '=', (size_t)(end - start));
        x->name = nr_strndup(s->a, start, (size_t)((eq ? eq : end) - start));
        x->dflt = eq ? eq + 1 : NULL;
        x->dlen = eq ? (size_t)(end - eq - 1) : 0;
    }
    *out = p;
    return n;
}

static Val default_value(Sema *s, NrLoc loc, const Param *p) {
    if (p->dlen == 2 && memcmp(p->dflt, "()", 2) == 0) return nr_sm_tuple(s, 0);
    NrCVal c;
    const char *err;
    size_t pos;
    if (!nr_cv_parse_literal(s->a, p->dflt, p->dlen, &c, &err, &pos))
        NR_ICE("bad default '%.*s' in a builtin spec: %s", (int)p->dlen, p->dflt, err);
    (void)loc;
    return v_const(c);
}

void nr_sm_bind_args(Sema *s, NrLoc loc, const Builtin *bi, const Val *self, int nargs, const Val *args,
                     const NrLoc *arglocs, int nkw, const char *const *kwnames, const Val *kwargs, const NrLoc *kwlocs,
                     SmCall *out) {
    Param *ps;
    int np = parse_params(s, bi->params, &ps);
    const char *bn = nr_sm_builtin_name(s, bi);
    memset(out, 0, sizeof *out);
    out->bi = bi;
    out->loc = loc;
    out->n = np;
    out->arg = nr_alloc(s->a, sizeof(Val) * (size_t)(np + 1));
    out->argloc = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(np + 1));
    out->given = nr_alloc(s->a, sizeof(bool) * (size_t)(np + 1));
    int pi = 0;
    if (self) {
        NR_ASSERT(np > 0);
        out->arg[0] = *self;
        out->argloc[0] = loc;
        out->given[0] = true;
        pi = 1;
    }
    int var = -1;
    for (int i = 0; i < np; i++)
        if (ps[i].varargs) var = i;
    int npos = var >= 0 ? var : np; /* parameters that positional arguments fill */
    int ai = 0;
    for (; ai < nargs && pi < npos; ai++, pi++) {
        out->arg[pi] = args[ai];
        out->argloc[pi] = arglocs ? arglocs[ai] : loc;
        out->given[pi] = true;
    }
    if (var >= 0) {
        int extra = nargs - ai;
        Val t = nr_sm_tuple(s, extra > 0 ? extra : 0);
        for (int k = 0; k < extra; k++) t.tup.v[k] = args[ai + k];
        out->arg[var] = t;
        out->argloc[var] = extra > 0 && arglocs ? arglocs[ai] : loc;
        out->given[var] = extra > 0;
        ai = nargs;
    }
    if (ai < nargs) {
        int maxpos = npos - (self ? 1 : 0);
        nr_sm_fail(s, arglocs ? arglocs[ai] : loc, "%s takes %d argument%s but %d were given", bn, maxpos,
                   maxpos == 1 ? "" : "s", nargs);
    }
    for (int k = 0; k < nkw; k++) {
        int i = 0;
        while (i < np && (ps[i].varargs || strcmp(ps[i].name, kwnames[k]) != 0)) i++;
        if (i == np || (self && i == 0))
            nr_sm_fail(s, kwlocs ? kwlocs[k] : loc, "%s got an unexpected keyword argument '%s'", bn, kwnames[k]);
        if (out->given[i]) nr_sm_fail(s, kwlocs ? kwlocs[k] : loc, "%s got multiple values for argument '%s'", bn,
                                      kwnames[k]);
        out->arg[i] = kwargs[k];
        out->argloc[i] = kwlocs ? kwlocs[k] : loc;
        out->given[i] = true;
    }
    for (int i = 0; i < np; i++) {
        if (out->given[i] || ps[i].varargs) continue;
        if (!ps[i].dflt) nr_sm_fail(s, loc, "%s is missing the argument '%s'", bn, ps[i].name);
        out->arg[i] = default_value(s, loc, &ps[i]);
        out->argloc[i] = loc;
    }
}

/* --- argument helpers ----------------------------------------------------------------------------- */
#define BN(c) nr_sm_builtin_name(s, (c)->bi)

static Param param_of(Sema *s, const SmCall *c, int i) {
    Param *ps;
    int np = parse_params(s, c->bi->params, &ps);
    NR_ASSERT(i < np);
    return ps[i];
}

static const char *pname(Sema *s, const SmCall *c, int i) { return param_of(s, c, i).name; }

static bool is_none(const SmCall *c, int i) { return c->arg[i].k == V_CONST && c->arg[i].c.kind == NR_CV_NONE; }

static NrValId arg_ir(Sema *s, const SmCall *c, int i) {
    return nr_sm_to_ir(s, c->argloc[i], c->arg[i], nr_sprintf(s->a, "'%s' of %s", pname(s, c, i), BN(c)));
}

/* An IR argument that must be a tensor (not a compile-time number). */
static NrValId arg_tensor(Sema *s, const SmCall *c, int i) {
    if (c->arg[i].k != V_IR)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a tensor, got %s", pname(s, c, i), BN(c),
                   nr_sm_val_kind(s, c->arg[i]));
    return c->arg[i].ir;
}

static int64_t arg_int(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_CONST || (v.c.kind != NR_CV_INT && v.c.kind != NR_CV_BOOL))
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a constexpr int, got %s%s", pname(s, c, i), BN(c),
                   nr_sm_val_kind(s, v), nr_sm_const_hint(s, v));
    if (v.c.kind == NR_CV_BOOL) return v.c.b;
    if (v.c.is_unsigned) nr_sm_fail(s, c->argloc[i], "'%s' of %s is too large", pname(s, c, i), BN(c));
    return v.c.i;
}

static bool arg_bool(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_CONST)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a compile-time constant, got %s", pname(s, c, i), BN(c),
                   nr_sm_val_kind(s, v));
    return nr_cv_truthy(&v.c);
}

/* A string argument; None gives "". */
static const char *arg_str(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k == V_CONST && v.c.kind == NR_CV_NONE) return "";
    if (v.k != V_CONST || v.c.kind != NR_CV_STR)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a string, got %s", pname(s, c, i), BN(c), nr_sm_val_kind(s, v));
    if (memchr(v.c.str.s, 0, v.c.str.len))
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must not contain NUL characters", pname(s, c, i), BN(c));
    return v.c.str.s;
}

static NrCVal arg_dtype(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_CONST || v.c.kind != NR_CV_DTYPE)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a dtype such as tl.float32, got %s", pname(s, c, i), BN(c),
                   nr_sm_val_kind(s, v));
    return v.c;
}

/* A shape: an int or a tuple of ints, all compile-time. */
static int shape_of_val(Sema *s, NrLoc loc, Val v, const char *what, int64_t *shape) {
    if (v.k == V_CONST && (v.c.kind == NR_CV_INT || v.c.kind == NR_CV_BOOL)) {
        shape[0] = v.c.kind == NR_CV_BOOL ? v.c.b : v.c.i;
        if (v.c.is_unsigned) shape[0] = INT64_MAX;
        return 1;
    }
    if (v.k != V_TUPLE)
        nr_sm_fail(s, loc, "%s must be a constexpr int or a tuple of constexpr ints (block shapes are fixed at compile "
                           "time), got %s%s",
                   what, nr_sm_val_kind(s, v), nr_sm_const_hint(s, v));
    if (v.tup.n > NR_MAX_RANK)
        nr_sm_fail(s, loc, "%s has %d dimensions; blocks have at most %d", what, v.tup.n, NR_MAX_RANK);
    for (int i = 0; i < v.tup.n; i++) {
        Val e = v.tup.v[i];
        if (e.k != V_CONST || (e.c.kind != NR_CV_INT && e.c.kind != NR_CV_BOOL))
            nr_sm_fail(s, loc, "%s must be made of constexpr ints (block shapes are fixed at compile time), but "
                               "dimension %d is %s%s",
                       what, i, nr_sm_val_kind(s, e), nr_sm_const_hint(s, e));
        shape[i] = e.c.kind == NR_CV_BOOL ? e.c.b : e.c.is_unsigned ? INT64_MAX : e.c.i;
    }
    return v.tup.n;
}

/* Varargs shape: f(x, 32, 32) or f(x, (32, 32)). */
static int varargs_shape(Sema *s, const SmCall *c, int i, int64_t *shape, const char *what) {
    Val v = c->arg[i];
    if (v.tup.n == 1 && v.tup.v[0].k == V_TUPLE) v = v.tup.v[0];
    return shape_of_val(s, c->argloc[i], v, what, shape);
}

static NrTypeId elem_of(Sema *s, NrValId x) { return nr_type_elem(s->m, nr_sm_tid(s, x)); }

static NrTypeId shaped_like(Sema *s, NrValId like, NrDtype dt, int ptr) {
    NrTypeId e = ptr ? nr_type_ptr(s->m, dt, ptr) : nr_type_scalar(s->m, dt);
    return nr_type_with_elem(s->m, nr_sm_tid(s, like), e);
}

static const char *ename(Sema *s, NrValId x) {
    const NrType *t = nr_sm_type(s, x);
    return nr_dt_name(s->a, (NrDtype)t->dtype, t->ptr);
}

static NrDtype dtype_of(Sema *s, NrValId x) { return (NrDtype)nr_sm_type(s, x)->dtype; }
static bool ptr_of(Sema *s, NrValId x) { return nr_sm_type(s, x)->ptr > 0; }
static int rank_of(Sema *s, NrValId x) { return nr_sm_type(s, x)->rank; }

static Val none_val(void) { return nr_sm_none(); }

static Val make_tuple2(Sema *s, Val a, Val b) {
    Val t = nr_sm_tuple(s, 2);
    t.tup.v[0] = a;
    t.tup.v[1] = b;
    return t;
}

static NrValId emit_attr_int(Sema *s, NrLoc loc, NrOpcode opc, NrTypeId rt, int n, const NrValId *ops, NrAttrName a,
                             int64_t v) {
    NrOpId op = nr_sm_emit_op(s, loc, opc, n, ops, 1, &rt, 0);
    nr_op_set_int(s->fn->f, op, a, v);
    return nr_op_result(s->fn->f, op, 0);
}

/* --- programming model ---------------------------------------------------------------------------- */
static Val h_program_id(Sema *s, const SmCall *c) {
    int64_t axis = arg_int(s, c, 0);
    if (axis < 0 || axis > 2) nr_sm_fail(s, c->argloc[0], "%s axis must be 0, 1, or 2, got %lld", BN(c), (long long)axis);
    return v_ir(emit_attr_int(s, c->loc, (NrOpcode)c->bi->arg, nr_type_scalar(s->m, NR_DT_I32), 0, NULL, NR_A_AXIS,
                              axis));
}

/* --- creation ------------------------------------------------------------------------------------- */
static Val h_arange(Sema *s, const SmCall *c) {
    for (int i = 0; i < 2; i++)
        if (c->arg[i].k != V_CONST)
            nr_sm_fail(s, c->argloc[i], "the arguments of tl.arange must be constexprs, but '%s' is %s%s",
                       pname(s, c, i), nr_sm_val_kind(s, c->arg[i]), nr_sm_const_hint(s, c->arg[i]));
    int64_t start = arg_int(s, c, 0), end = arg_int(s, c, 1);
    if (start < INT32_MIN || start > INT32_MAX || end < INT32_MIN || end > INT32_MAX)
        nr_sm_fail(s, c->loc, "tl.arange's arguments must fit in int32, got %lld and %lld", (long long)start,
                   (long long)end);
    if (end <= start)
        nr_sm_fail(s, c->loc, "tl.arange's end must be greater than its start, got %lld and %lld", (long long)start,
                   (long long)end);
    int64_t n = end - start;
    if (!nr_is_pow2(n)) nr_sm_fail(s, c->loc, "arange's range must be a power of 2, got %lld", (long long)n);
    if (n > SM_MAX_BLOCK_NUMEL)
        nr_sm_fail(s, c->loc, "arange's range must be at most %d, got %lld", SM_MAX_BLOCK_NUMEL, (long long)n);
    NrTypeId t = nr_sm_block_type(s, c->loc, nr_type_scalar(s->m, NR_DT_I32), 1, &n, "tl.arange");
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_ARANGE, 0, NULL, 1, &t, 0);
    nr_op_set_int(s->fn->f, op, NR_A_START, start);
    nr_op_set_int(s->fn->f, op, NR_A_END, end);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

static Val full_value(Sema *s, const SmCall *c, int shape_arg, Val value, NrLoc vloc, NrCVal dt) {
    int64_t shape[NR_MAX_RANK];
    int rank = shape_of_val(s, c->argloc[shape_arg], c->arg[shape_arg], nr_sprintf(s->a, "the shape of %s", BN(c)), shape);
    if (dt.ptr) nr_sm_fail(s, c->loc, "%s cannot make a block of pointers", BN(c));
    NrTypeId st = nr_type_scalar(s->m, dt.dt);
    NrTypeId t = rank ? nr_sm_block_type(s, c->argloc[shape_arg], st, rank, shape, BN(c)) : st;
    if (value.k == V_CONST) return v_ir(nr_sm_const(s, vloc, t, &value.c));
    if (value.k != V_IR) nr_sm_fail(s, vloc, "the value of %s must be a number or a scalar tensor, got %s", BN(c),
                                    nr_sm_val_kind(s, value));
    NrValId x = value.ir;
    if (rank_of(s, x) > 0) {
        if (nr_type_numel(s->m, nr_sm_tid(s, x)) != 1)
            nr_sm_fail(s, vloc, "the value of %s must be a scalar, got %s", BN(c), nr_sm_val_kind(s, value));
        x = nr_sm_reshape(s, vloc, x, 0, NULL, false);
    }
    x = nr_sm_cast(s, vloc, x, dt.dt, 0, NULL);
    if (!rank) return v_ir(x);
    return v_ir(nr_sm_splat(s, c->loc, x, rank, nr_type(s->m, t)->shape));
}

static Val h_full(Sema *s, const SmCall *c) { return full_value(s, c, 0, c->arg[1], c->argloc[1], arg_dtype(s, c, 2)); }

static Val h_zeros(Sema *s, const SmCall *c) {
    return full_value(s, c, 0, v_const(nr_cv_int(0)), c->loc, arg_dtype(s, c, 1));
}

static Val h_zeros_like(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    const NrType *t = nr_sm_type(s, x);
    if (t->ptr) nr_sm_fail(s, c->loc, "tl.zeros_like cannot make a block of pointers");
    NrCVal z = nr_cv_int(0);
    return v_ir(nr_sm_const(s, c->loc, nr_sm_tid(s, x), &z));
}

static Val h_cdiv(Sema *s, const SmCall *c) {
    Val one = v_const(nr_cv_int(1));
    Val d1 = nr_sm_binop(s, c->loc, NR_BIN_SUB, c->arg[1], one);
    Val num = nr_sm_binop(s, c->loc, NR_BIN_ADD, c->arg[0], d1);
    return nr_sm_binop(s, c->loc, NR_BIN_FLOORDIV, num, c->arg[1]);
}

static Val h_next_pow2(Sema *s, const SmCall *c) {
    int64_t n = arg_int(s, c, 0);
    uint64_t v = (uint64_t)n - 1;
    for (int sh = 1; sh < 64; sh <<= 1) v |= v >> sh;
    v += 1;
    if (n > ((int64_t)1 << 62)) nr_sm_fail(s, c->loc, "triton.next_power_of_2(%lld) is out of range", (long long)n);
    return v_const(nr_cv_int((int64_t)v));
}

/* --- memory --------------------------------------------------------------------------------------- */
static NrValId arg_pointer(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_IR || !ptr_of(s, v.ir))
        nr_sm_fail(s, c->argloc[i], "%s expects a pointer or a block of pointers, got %s", BN(c), nr_sm_val_kind(s, v));
    return v.ir;
}

static bool boundary_given(const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k == V_TUPLE) return v.tup.n > 0;
    if (v.k == V_CONST) return nr_cv_truthy(&v.c);
    return true;
}

static void check_choice(Sema *s, const SmCall *c, int i, const char *got, const char *const *allowed,
                         const char *allowed_text) {
    for (int k = 0; allowed[k]; k++)
        if (strcmp(got, allowed[k]) == 0) return;
    nr_sm_fail(s, c->argloc[i], "%s: %s must be %s, got '%s'", BN(c), pname(s, c, i), allowed_text, got);
}

static NrValId mask_arg(Sema *s, const SmCall *c, int i) {
    NrValId m = arg_ir(s, c, i);
    if (ptr_of(s, m) || dtype_of(s, m) != NR_DT_I1)
        nr_sm_fail(s, c->argloc[i], "the mask of %s must be boolean (int1), got %s", BN(c), nr_sm_val_kind(s, v_ir(m)));
    return m;
}

/* A value converted to the element type of pointer p, shaped like p
 * (compile-time numbers are made in that type directly). */
/* A number converted to dtype dt as Triton's to_tensor followed by a cast
 * would: ints wrap, floats truncate toward zero (saturating; NaN gives 0). */
static NrCVal convert_number(const NrCVal *c, NrDtype dt) {
    NrDtype from = nr_cv_default_dtype(c);
    if (nr_dt_is_float(dt) || c->kind == NR_CV_BOOL) return *c;
    if (dt == NR_DT_I1) return nr_cv_bool(nr_cv_truthy(c));
    int bits = nr_dt_bits(dt);
    bool sgn = nr_dt_is_signed(dt);
    if (c->kind == NR_CV_FLOAT) {
        double x = c->f;
        if (from == NR_DT_F32) x = (double)(float)x;
        if (isnan(x)) return nr_cv_int(0);
        x = trunc(x);
        double lo = sgn ? -ldexp(1.0, bits - 1) : 0.0, hi = sgn ? ldexp(1.0, bits - 1) - 1 : ldexp(1.0, bits) - 1;
        if (x < lo) x = lo;
        if (x > hi) x = hi;
        return x >= 0x1p63 ? nr_cv_uint((uint64_t)x) : nr_cv_int((int64_t)x);
    }
    uint64_t u = (uint64_t)c->i;
    if (bits < 64) u &= (UINT64_C(1) << bits) - 1;
    if (sgn && bits < 64 && (u >> (bits - 1)) & 1) return nr_cv_int((int64_t)(u | ~((UINT64_C(1) << bits) - 1)));
    return sgn ? nr_cv_int((int64_t)u) : nr_cv_uint(u);
}

static NrValId value_for(Sema *s, NrLoc loc, Val v, NrValId p, NrDtype dt, int ptr, const char *what) {
    if (v.k == V_CONST && nr_cv_is_num(&v.c) && !ptr) {
        NrCVal cv = convert_number(&v.c, dt);
        return nr_sm_const(s, loc, shaped_like(s, p, dt, 0), &cv);
    }
    NrValId x = nr_sm_to_ir(s, loc, v, what);
    return nr_sm_cast(s, loc, x, dt, ptr, NULL);
}

static Val h_load(Sema *s, const SmCall *c) {
    NrValId p = arg_pointer(s, c, 0);
    if (boundary_given(c, 3) || strlen(arg_str(s, c, 4)) > 0)
        nr_sm_fail(s, c->loc, "block pointers are not supported yet (boundary_check and padding_option apply to them)");
    const char *cache = arg_str(s, c, 5), *evict = arg_str(s, c, 6);
    static const char *const caches[] = {"", ".ca", ".cg", ".cv", NULL};
    static const char *const evicts[] = {"", "evict_first", "evict_last", "evict_normal", NULL};
    check_choice(s, c, 5, cache, caches, "'', '.ca', '.cg' or '.cv'");
    check_choice(s, c, 6, evict, evicts, "'', 'evict_first', 'evict_last' or 'evict_normal'");
    bool vol = arg_bool(s, c, 7);
    bool has_mask = !is_none(c, 1), has_other = !is_none(c, 2);
    if (!has_mask && has_other) nr_sm_fail(s, c->argloc[2], "tl.load: 'other' cannot be given without 'mask'");
    NrValId m = has_mask ? mask_arg(s, c, 1) : NR_NONE;
    bool scalar = rank_of(s, p) == 0;
    if (scalar && m && rank_of(s, m) > 0)
        nr_sm_fail(s, c->argloc[1], "tl.load: the mask must be a scalar when the pointer is a scalar");
    if (scalar && has_other && c->arg[2].k == V_IR && rank_of(s, c->arg[2].ir) > 0)
        nr_sm_fail(s, c->argloc[2], "tl.load: 'other' must be a scalar when the pointer is a scalar");
    if (m) nr_sm_broadcast_pair(s, c->loc, &p, &m);
    NrValId o = NR_NONE;
    const NrType *pt = nr_sm_type(s, p);
    NrDtype edt = (NrDtype)pt->dtype;
    int eptr = pt->ptr - 1;
    bool is_bool = eptr == 0 && edt == NR_DT_I1;
    if (has_other) {
        if (c->arg[2].k == V_IR) {
            o = c->arg[2].ir;
            nr_sm_broadcast_pair(s, c->loc, &p, &o);
            if (m && nr_sm_tid(s, m) != shaped_like(s, p, NR_DT_I1, 0))
                m = nr_sm_broadcast_to(s, c->loc, m, rank_of(s, p), nr_sm_type(s, p)->shape, false);
            o = nr_sm_cast(s, c->argloc[2], o, is_bool ? NR_DT_I8 : edt, eptr, NULL);
        } else {
            o = value_for(s, c->argloc[2], c->arg[2], p, is_bool ? NR_DT_I8 : edt, eptr, "'other' of tl.load");
        }
    }
    if (is_bool) {
        p = nr_sm_bitcast(s, c->loc, p, NR_DT_I8, 1);
        edt = NR_DT_I8;
    }
    NrTypeId rt = shaped_like(s, p, edt, eptr);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_LOAD, 3, (NrValId[]){p, m, o}, 1, &rt, 0);
    NrFunc *f = s->fn->f;
    if (*cache) nr_op_set_str(f, op, NR_A_CACHE, cache);
    if (*evict) nr_op_set_str(f, op, NR_A_EVICT, evict);
    if (vol) nr_op_set_bool(f, op, NR_A_VOLATILE, true);
    NrValId r = nr_op_result(f, op, 0);
    if (is_bool) r = nr_sm_cast(s, c->loc, r, NR_DT_I1, 0, NULL);
    return v_ir(r);
}

static Val h_store(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, "tl.store");
    NrValId p = arg_pointer(s, c, 0);
    if (boundary_given(c, 3)) nr_sm_fail(s, c->loc, "block pointers are not supported yet (boundary_check applies to them)");
    const char *cache = arg_str(s, c, 4), *evict = arg_str(s, c, 5);
    static const char *const caches[] = {"", ".wb", ".cg", ".cs", ".wt", NULL};
    static const char *const evicts[] = {"", "evict_first", "evict_last", "evict_normal", NULL};
    check_choice(s, c, 4, cache, caches, "'', '.wb', '.cg', '.cs' or '.wt'");
    check_choice(s, c, 5, evict, evicts, "'', 'evict_first', 'evict_last' or 'evict_normal'");
    Val vv = c->arg[1];
    NrValId m = is_none(c, 2) ? NR_NONE : mask_arg(s, c, 2);
    const NrType *pt0 = nr_sm_type(s, p);
    NrTypeId ptype = nr_sm_tid(s, p);
    bool scalar = pt0->rank == 0;
    if (vv.k != V_IR && !(vv.k == V_CONST && nr_cv_is_num(&vv.c)))
        nr_sm_fail(s, c->argloc[1], "the value of tl.store must be a tensor or a number, got %s", nr_sm_val_kind(s, vv));
    if (scalar && vv.k == V_IR && rank_of(s, vv.ir) > 0)
        nr_sm_fail(s, c->argloc[1], "tl.store: the value must be a scalar when the pointer is a scalar, got %s",
                   nr_sm_val_kind(s, vv));
    if (scalar && m && rank_of(s, m) > 0)
        nr_sm_fail(s, c->argloc[2], "tl.store: the mask must be a scalar when the pointer is a scalar");
    NrDtype edt = (NrDtype)pt0->dtype;
    int eptr = pt0->ptr - 1;
    bool is_bool = eptr == 0 && edt == NR_DT_I1;
    NrValId v;
    if (vv.k == V_IR) {
        v = vv.ir;
        nr_sm_broadcast_pair(s, c->loc, &p, &v);
        if (m) {
            nr_sm_broadcast_pair(s, c->loc, &p, &m);
            v = nr_sm_broadcast_to(s, c->loc, v, rank_of(s, p), nr_sm_type(s, p)->shape, false);
        }
    } else {
        if (m) nr_sm_broadcast_pair(s, c->loc, &p, &m);
        v = NR_NONE;
    }
    if (nr_sm_tid(s, p) != ptype)
        nr_sm_fail(s, c->loc, "tl.store: the value or mask has shape %s, which does not fit the pointer's shape %s",
                   nr_sm_shape_str(s, nr_sm_type(s, p)), nr_sm_shape_str(s, nr_type(s->m, ptype)));
    if (is_bool) edt = NR_DT_I8;
    if (v) v = nr_sm_cast(s, c->argloc[1], v, edt, eptr, NULL);
    else v = value_for(s, c->argloc[1], vv, p, edt, eptr, "the value of tl.store");
    if (is_bool) p = nr_sm_bitcast(s, c->loc, p, NR_DT_I8, 1);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_STORE, 3, (NrValId[]){p, v, m}, 0, NULL, 0);
    if (*cache) nr_op_set_str(s->fn->f, op, NR_A_CACHE, cache);
    if (*evict) nr_op_set_str(s->fn->f, op, NR_A_EVICT, evict);
    return none_val();
}

/* --- atomics -------------------------------------------------------------------------------------- */
static const char *const atomic_kinds[] = {"add", "max", "min", "and", "or", "xor", "xchg"};

static void atomic_sem_scope(Sema *s, const SmCall *c, int isem, int iscope, NrOpId op) {
    const char *sem = arg_str(s, c, isem), *scope = arg_str(s, c, iscope);
    static const char *const sems[] = {"relaxed", "acquire", "release", "acq_rel", NULL};
    static const char *const scopes[] = {"gpu", "cta", "sys", NULL};
    if (!*sem) sem = "acq_rel";
    if (!*scope) scope = "gpu";
    check_choice(s, c, isem, sem, sems, "'relaxed', 'acquire', 'release' or 'acq_rel'");
    check_choice(s, c, iscope, scope, scopes, "'gpu', 'cta' or 'sys'");
    nr_op_set_str(s->fn->f, op, NR_A_SEM, sem);
    nr_op_set_str(s->fn->f, op, NR_A_SCOPE, scope);
}

/* The value (or compare) operand of an atomic, as the pointee type shaped like p. */
static NrValId atomic_operand(Sema *s, const SmCall *c, int i, NrValId p, NrDtype edt) {
    NrValId v = value_for(s, c->argloc[i], c->arg[i], p, edt, 0, nr_sprintf(s->a, "'%s' of %s", pname(s, c, i), BN(c)));
    if (rank_of(s, p) == 0 && rank_of(s, v) > 0)
        nr_sm_fail(s, c->argloc[i], "%s: '%s' must be a scalar when the pointer is a scalar", BN(c), pname(s, c, i));
    return nr_sm_broadcast_to(s, c->argloc[i], v, rank_of(s, p), nr_sm_type(s, p)->shape, true);
}

static Val h_atomic(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, BN(c));
    const char *kind = atomic_kinds[c->bi->arg];
    NrValId p = arg_pointer(s, c, 0);
    const NrType *pt = nr_sm_type(s, p);
    if (pt->ptr > 1) nr_sm_fail(s, c->loc, "%s operates on integers and floats, not on pointers", BN(c));
    NrDtype edt = (NrDtype)pt->dtype;
    const char *en = nr_dt_name(s->a, edt, 0);
    bool add = c->bi->arg == 0;
    if ((edt == NR_DT_F16 || edt == NR_DT_BF16) && !add) nr_sm_fail(s, c->loc, "%s does not support %s", BN(c), en);
    if (edt == NR_DT_I16 || edt == NR_DT_U16 || nr_dt_bits(edt) < 16)
        nr_sm_fail(s, c->loc, "%s does not support %s", BN(c), en);
    if (nr_dt_is_float(edt) && (c->bi->arg == 1 || c->bi->arg == 2) && edt != NR_DT_F32 && edt != NR_DT_F64)
        nr_sm_fail(s, c->loc, "%s does not support %s", BN(c), en);
    if (nr_dt_is_float(edt) && c->bi->arg >= 3 && c->bi->arg <= 5)
        nr_sm_fail(s, c->loc, "%s takes integers, got %s", BN(c), en);
    NrValId v = atomic_operand(s, c, 1, p, edt);
    NrValId m = NR_NONE;
    if (!is_none(c, 2)) {
        m = mask_arg(s, c, 2);
        if (rank_of(s, p) == 0 && rank_of(s, m) > 0)
            nr_sm_fail(s, c->argloc[2], "%s: the mask must be a scalar when the pointer is a scalar", BN(c));
        m = nr_sm_broadcast_to(s, c->argloc[2], m, rank_of(s, p), nr_sm_type(s, p)->shape, true);
    }
    NrTypeId rt = shaped_like(s, p, edt, 0);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_ATOMIC_RMW, 3, (NrValId[]){p, v, m}, 1, &rt, 0);
    nr_op_set_str(s->fn->f, op, NR_A_KIND, kind);
    atomic_sem_scope(s, c, 3, 4, op);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

static Val h_atomic_cas(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, BN(c));
    NrValId p = arg_pointer(s, c, 0);
    const NrType *pt = nr_sm_type(s, p);
    if (pt->ptr > 1) nr_sm_fail(s, c->loc, "%s operates on integers and floats, not on pointers", BN(c));
    NrDtype edt = (NrDtype)pt->dtype;
    int bits = nr_dt_bits(edt);
    if (bits != 16 && bits != 32 && bits != 64)
        nr_sm_fail(s, c->loc, "tl.atomic_cas only supports elements of 16, 32 or 64 bits, got %s",
                   nr_dt_name(s->a, edt, 0));
    NrValId cmp = atomic_operand(s, c, 1, p, edt);
    NrValId v = atomic_operand(s, c, 2, p, edt);
    NrTypeId rt = shaped_like(s, p, edt, 0);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_ATOMIC_CAS, 3, (NrValId[]){p, cmp, v}, 1, &rt, 0);
    atomic_sem_scope(s, c, 3, 4, op);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

/* --- selection and elementwise math --------------------------------------------------------------- */
static void broadcast3(Sema *s, NrLoc loc, NrValId *a, NrValId *b, NrValId *x) {
    nr_sm_broadcast_pair(s, loc, a, b);
    nr_sm_broadcast_pair(s, loc, a, x);
    nr_sm_broadcast_pair(s, loc, b, x);
    nr_sm_broadcast_pair(s, loc, a, b);
}

static Val h_where(Sema *s, const SmCall *c) {
    NrValId cond = arg_ir(s, c, 0);
    if (ptr_of(s, cond) || dtype_of(s, cond) != NR_DT_I1) cond = nr_sm_cast(s, c->argloc[0], cond, NR_DT_I1, 0, NULL);
    NrValId x, y;
    nr_sm_binary_prep(s, c->loc, "tl.where", c->arg[1], c->arg[2], true, true, true, false, &x, &y);
    broadcast3(s, c->loc, &cond, &x, &y);
    return v_ir(nr_sm_emit(s, c->loc, NR_OP_SELECT, nr_sm_tid(s, x), 3, (NrValId[]){cond, x, y}));
}

static NrValId bf16_to_f32(Sema *s, NrLoc loc, NrValId x) {
    if (!ptr_of(s, x) && dtype_of(s, x) == NR_DT_BF16) return nr_sm_cast(s, loc, x, NR_DT_F32, 0, NULL);
    return x;
}

/* propagate_nan: tl.PropagateNan.ALL (0xffff) or NONE (0); booleans too. */
static bool arg_nan_all(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_CONST || !(v.c.kind == NR_CV_INT || v.c.kind == NR_CV_BOOL || v.c.kind == NR_CV_NONE))
        nr_sm_fail(s, c->argloc[i], "propagate_nan of %s must be tl.PropagateNan.ALL or tl.PropagateNan.NONE", BN(c));
    return nr_cv_truthy(&v.c);
}

/* A tensor operand of a function that first applies to_tensor (and turns bf16 into fp32). */
static Val tensor_operand(Sema *s, NrLoc loc, Val v, const char *name) {
    if (v.k == V_IR) return v_ir(bf16_to_f32(s, loc, v.ir));
    if (v.k == V_CONST && nr_cv_is_num(&v.c)) return v;
    return v_ir(nr_sm_to_ir(s, loc, v, name));
}

static NrValId minmax(Sema *s, NrLoc loc, bool is_max, Val a, Val b, bool nan_all, const char *name) {
    NrValId x, y;
    Val ta = tensor_operand(s, loc, a, name);
    Val tb = tensor_operand(s, loc, b, name);
    nr_sm_binary_prep_tensors(s, loc, name, ta, tb, &x, &y);
    NrOpId op = nr_sm_emit_op(s, loc, is_max ? NR_OP_MAX : NR_OP_MIN, 2, (NrValId[]){x, y}, 1,
                              (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    if (nr_dt_is_float(dtype_of(s, x))) nr_op_set_str(s->fn->f, op, NR_A_NAN, nan_all ? "all" : "none");
    return nr_op_result(s->fn->f, op, 0);
}

static Val h_minmax(Sema *s, const SmCall *c) {
    return v_ir(minmax(s, c->loc, c->bi->arg, c->arg[0], c->arg[1], arg_nan_all(s, c, 2), BN(c)));
}

static Val h_clamp(Sema *s, const SmCall *c) {
    const char *bn = BN(c);
    Val xv = tensor_operand(s, c->loc, c->arg[0], bn);
    Val lov = tensor_operand(s, c->loc, c->arg[1], bn);
    Val hiv = tensor_operand(s, c->loc, c->arg[2], bn);
    bool all = arg_nan_all(s, c, 3);
    NrValId x, lo, hi;
    if (lov.k == V_CONST && hiv.k == V_CONST) { /* both become tensors of the same kind: skip their own promotion */
        nr_sm_binary_prep_tensors(s, c->loc, bn, xv, lov, &x, &lo);
        nr_sm_binary_prep_tensors(s, c->loc, bn, v_ir(x), hiv, &x, &hi);
    } else {
        nr_sm_binary_prep_tensors(s, c->loc, bn, lov, hiv, &lo, &hi);
        nr_sm_binary_prep_tensors(s, c->loc, bn, xv, v_ir(lo), &x, &lo);
        nr_sm_binary_prep_tensors(s, c->loc, bn, v_ir(x), v_ir(hi), &x, &hi);
    }
    if (!nr_dt_is_float(dtype_of(s, x)))
        nr_sm_fail(s, c->loc, "tl.clamp takes floats, got %s (use tl.minimum and tl.maximum for integers)", ename(s, x));
    NrDtype dt = dtype_of(s, x);
    lo = nr_sm_cast(s, c->loc, lo, dt, 0, NULL);
    broadcast3(s, c->loc, &x, &lo, &hi);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_MAX, 2, (NrValId[]){x, lo}, 1, (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    nr_op_set_str(s->fn->f, op, NR_A_NAN, all ? "all" : "none");
    NrValId t = nr_op_result(s->fn->f, op, 0);
    op = nr_sm_emit_op(s, c->loc, NR_OP_MIN, 2, (NrValId[]){t, hi}, 1, (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    nr_op_set_str(s->fn->f, op, NR_A_NAN, all ? "all" : "none");
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

/* Math functions take fp32 and fp64 (sqrt_rn and div_rn: fp32), as in Triton. */
static void check_float_dtype(Sema *s, NrLoc loc, const char *fn, NrValId x, bool f32_only) {
    NrDtype dt = dtype_of(s, x);
    if (!ptr_of(s, x) && (dt == NR_DT_F32 || (dt == NR_DT_F64 && !f32_only))) return;
    if (ptr_of(s, x) || nr_dt_is_int(dt))
        nr_sm_fail(s, loc, "%s does not accept %s; cast to a float type first", fn, ename(s, x));
    nr_sm_fail(s, loc, "%s does not accept %s; it takes %s (cast with .to(tl.float32))", fn, ename(s, x),
               f32_only ? "float32" : "float32 or float64");
}

static Val h_math1(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    check_float_dtype(s, c->argloc[0], BN(c), x, c->bi->arg == NR_OP_SQRT_RN);
    return v_ir(nr_sm_emit(s, c->loc, (NrOpcode)c->bi->arg, nr_sm_tid(s, x), 1, &x));
}

static Val h_abs(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    if (ptr_of(s, x)) nr_sm_fail(s, c->argloc[0], "tl.abs does not accept %s", ename(s, x));
    NrDtype dt = dtype_of(s, x);
    if (!nr_dt_is_float(dt) && !nr_dt_is_signed(dt)) return v_ir(x);
    return v_ir(nr_sm_emit(s, c->loc, NR_OP_ABS, nr_sm_tid(s, x), 1, &x));
}

static Val h_fdiv(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0), y = arg_ir(s, c, 1);
    bool ieee = arg_bool(s, c, 2);
    if (ptr_of(s, x) || ptr_of(s, y) || !nr_dt_is_float(dtype_of(s, x)) || !nr_dt_is_float(dtype_of(s, y)))
        nr_sm_fail(s, c->loc, "both operands of tl.fdiv must be floats, got %s and %s", ename(s, x), ename(s, y));
    if (dtype_of(s, x) != dtype_of(s, y))
        nr_sm_fail(s, c->loc, "the operands of tl.fdiv must have one dtype, got %s and %s", ename(s, x), ename(s, y));
    nr_sm_broadcast_pair(s, c->loc, &x, &y);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_DIV, 2, (NrValId[]){x, y}, 1, (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    if (ieee) nr_op_set_bool(s->fn->f, op, NR_A_IEEE, true);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

static Val h_div_rn(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0), y = arg_ir(s, c, 1);
    check_float_dtype(s, c->argloc[0], BN(c), x, true);
    check_float_dtype(s, c->argloc[1], BN(c), y, true);
    nr_sm_binary_prep(s, c->loc, BN(c), v_ir(x), v_ir(y), false, false, true, false, &x, &y);
    return v_ir(nr_sm_emit(s, c->loc, NR_OP_DIV_RN, nr_sm_tid(s, x), 2, (NrValId[]){x, y}));
}

static Val h_fma(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0), y = arg_ir(s, c, 1), z = arg_ir(s, c, 2);
    const char *bn = BN(c);
    nr_sm_binary_prep(s, c->loc, bn, v_ir(x), v_ir(y), false, false, true, false, &x, &y);
    nr_sm_binary_prep(s, c->loc, bn, v_ir(z), v_ir(x), false, false, true, false, &z, &x);
    nr_sm_binary_prep(s, c->loc, bn, v_ir(z), v_ir(y), false, false, true, false, &z, &y);
    NrDtype dt = dtype_of(s, z);
    if (!nr_dt_is_float(dt)) nr_sm_fail(s, c->loc, "%s takes floats, got %s", bn, ename(s, z));
    x = nr_sm_cast(s, c->loc, x, dt, 0, NULL);
    y = nr_sm_cast(s, c->loc, y, dt, 0, NULL);
    broadcast3(s, c->loc, &x, &y, &z);
    return v_ir(nr_sm_emit(s, c->loc, NR_OP_FMA, nr_sm_tid(s, z), 3, (NrValId[]){x, y, z}));
}

static Val h_umulhi(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0), y = arg_ir(s, c, 1);
    for (int i = 0; i < 2; i++) {
        NrValId v = i ? y : x;
        NrDtype dt = dtype_of(s, v);
        if (c->arg[i].k == V_IR && (ptr_of(s, v) || !(dt == NR_DT_I32 || dt == NR_DT_I64 || dt == NR_DT_U32 ||
                                                      dt == NR_DT_U64)))
            nr_sm_fail(s, c->argloc[i], "tl.umulhi does not accept %s; it takes int32, int64, uint32 or uint64",
                       ename(s, v));
    }
    nr_sm_binary_prep(s, c->loc, "tl.umulhi", v_ir(x), v_ir(y), false, false, true, false, &x, &y);
    return v_ir(nr_sm_emit(s, c->loc, NR_OP_UMULHI, nr_sm_tid(s, x), 2, (NrValId[]){x, y}));
}

static Val h_sigmoid(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    check_float_dtype(s, c->argloc[0], "tl.sigmoid", x, false);
    Val neg = nr_sm_unop(s, c->loc, NR_UN_NEG, v_ir(x));
    NrValId e = nr_sm_emit(s, c->loc, NR_OP_EXP, nr_sm_tid(s, neg.ir), 1, &neg.ir);
    Val one = v_const(nr_cv_int(1));
    Val d = nr_sm_binop(s, c->loc, NR_BIN_ADD, one, v_ir(e));
    return nr_sm_binop(s, c->loc, NR_BIN_DIV, one, d);
}

static Val h_binop(Sema *s, const SmCall *c) { return nr_sm_binop(s, c->loc, c->bi->arg, c->arg[0], c->arg[1]); }

static Val h_swizzle2d(Sema *s, const SmCall *c) {
    NrLoc l = c->loc;
    Val i = c->arg[0], j = c->arg[1], size_i = c->arg[2], size_j = c->arg[3], size_g = c->arg[4];
    Val ij = nr_sm_binop(s, l, NR_BIN_ADD, nr_sm_binop(s, l, NR_BIN_MUL, i, size_j), j);
    Val size_gj = nr_sm_binop(s, l, NR_BIN_MUL, size_g, size_j);
    Val group_id = nr_sm_binop(s, l, NR_BIN_FLOORDIV, ij, size_gj);
    Val off_i = nr_sm_binop(s, l, NR_BIN_MUL, group_id, size_g);
    Val rem = nr_sm_binop(s, l, NR_BIN_SUB, size_i, off_i);
    size_g = v_ir(minmax(s, l, false, rem, size_g, false, "tl.minimum"));
    ij = nr_sm_binop(s, l, NR_BIN_MOD, ij, size_gj);
    Val new_i = nr_sm_binop(s, l, NR_BIN_ADD, off_i, nr_sm_binop(s, l, NR_BIN_MOD, ij, size_g));
    Val new_j = nr_sm_binop(s, l, NR_BIN_FLOORDIV, ij, size_g);
    return make_tuple2(s, new_i, new_j);
}

/* --- random numbers: Triton's Philox generator, built from the same operations --------------------- */
static Val bin(Sema *s, NrLoc l, int op, Val a, Val b) { return nr_sm_binop(s, l, op, a, b); }
static Val cint(int64_t i) { return v_const(nr_cv_int(i)); }
static Val cuint(uint64_t u) { return v_const(nr_cv_uint(u)); }

static Val umulhi(Sema *s, NrLoc l, Val a, Val b) {
    NrValId x, y;
    nr_sm_binary_prep_tensors(s, l, "tl.umulhi", a, b, &x, &y);
    return v_ir(nr_sm_emit(s, l, NR_OP_UMULHI, nr_sm_tid(s, x), 2, (NrValId[]){x, y}));
}

static Val to_dtype(Sema *s, NrLoc l, Val v, NrDtype dt, bool bitcast) {
    NrValId x = nr_sm_to_ir(s, l, v, "a random-number argument");
    return v_ir(bitcast ? nr_sm_bitcast(s, l, x, dt, 0) : nr_sm_cast(s, l, x, dt, 0, NULL));
}

/* n_rounds rounds of Philox on counters c[4] and keys k[2] (all uint32 or all uint64). */
static Val philox_rounds(Sema *s, NrLoc l, Val *c, Val *k, int64_t n_rounds) {
    if (n_rounds < 0 || n_rounds > 64) nr_sm_fail(s, l, "n_rounds of the Philox generator must be in [0, 64]");
    NrDtype dt = (NrDtype)nr_sm_type(s, nr_sm_to_ir(s, l, c[0], "a Philox counter"))->dtype;
    if (dt != NR_DT_U32 && dt != NR_DT_U64) nr_sm_fail(s, l, "tl.philox_impl takes uint32 or uint64 counters");
    bool w = dt == NR_DT_U64;
    Val key_a = cuint(w ? 0x9E3779B97F4A7C15ull : 0x9E3779B9u), key_b = cuint(w ? 0xBB67AE8584CAA73Bull : 0xBB67AE85u);
    Val rnd_a = cuint(w ? 0xD2E7470EE14C6C93ull : 0xD2511F53u), rnd_b = cuint(w ? 0xCA5A826395121157ull : 0xCD9E8D57u);
    for (int64_t r = 0; r < n_rounds; r++) {
        Val c0 = c[0], c2 = c[2];
        c[0] = bin(s, l, NR_BIN_BITXOR, bin(s, l, NR_BIN_BITXOR, umulhi(s, l, rnd_b, c2), c[1]), k[0]);
        c[2] = bin(s, l, NR_BIN_BITXOR, bin(s, l, NR_BIN_BITXOR, umulhi(s, l, rnd_a, c0), c[3]), k[1]);
        c[1] = bin(s, l, NR_BIN_MUL, rnd_b, c2);
        c[3] = bin(s, l, NR_BIN_MUL, rnd_a, c0);
        k[0] = bin(s, l, NR_BIN_ADD, k[0], key_a);
        k[1] = bin(s, l, NR_BIN_ADD, k[1], key_b);
    }
    Val t = nr_sm_tuple(s, 4);
    for (int i = 0; i < 4; i++) t.tup.v[i] = c[i];
    return t;
}

static Val h_philox_impl(Sema *s, const SmCall *c) {
    Val cs[4] = {c->arg[0], c->arg[1], c->arg[2], c->arg[3]}, ks[2] = {c->arg[4], c->arg[5]};
    return philox_rounds(s, c->loc, cs, ks, arg_int(s, c, 6));
}

/* philox(seed, c0, c1, c2, c3, n_rounds): the counters as unsigned ints of their width, keyed by the seed */
static Val philox(Sema *s, NrLoc l, Val seed, Val *cs, int64_t n_rounds) {
    NrValId sd = nr_sm_to_ir(s, l, seed, "the seed");
    if (nr_sm_type(s, sd)->ptr || !nr_dt_is_int((NrDtype)nr_sm_type(s, sd)->dtype))
        nr_sm_fail(s, l, "the seed of a random-number function must be an integer, got %s", nr_sm_val_kind(s, v_ir(sd)));
    Val sv = to_dtype(s, l, v_ir(sd), NR_DT_U64, false);
    NrValId c0 = nr_sm_to_ir(s, l, cs[0], "a Philox counter");
    int bits = nr_dt_bits((NrDtype)nr_sm_type(s, c0)->dtype);
    Val k[2];
    NrDtype it;
    if (bits == 32) {
        it = NR_DT_U32;
        k[1] = to_dtype(s, l, bin(s, l, NR_BIN_BITAND, bin(s, l, NR_BIN_RSHIFT, sv, cint(32)), cint(0xffffffff)), it, false);
        k[0] = to_dtype(s, l, bin(s, l, NR_BIN_BITAND, sv, cint(0xffffffff)), it, false);
    } else if (bits == 64) {
        it = NR_DT_U64;
        NrCVal z = nr_cv_int(0);
        int32_t one = 1;
        k[1] = v_ir(nr_sm_const(s, l, nr_type_block(s->m, nr_type_scalar(s->m, it), 1, &one), &z));
        k[0] = sv;
    } else {
        nr_sm_fail(s, l, "the Philox counters must be 32 or 64 bits wide, got %d", bits);
    }
    Val c[4];
    for (int i = 0; i < 4; i++) c[i] = to_dtype(s, l, cs[i], it, true);
    return philox_rounds(s, l, c, k, n_rounds);
}

static Val h_philox(Sema *s, const SmCall *c) {
    Val cs[4] = {c->arg[1], c->arg[2], c->arg[3], c->arg[4]};
    return philox(s, c->loc, c->arg[0], cs, arg_int(s, c, 5));
}

static Val randint4x(Sema *s, NrLoc l, Val seed, Val offset, int64_t n_rounds) {
    NrValId off = nr_sm_to_ir(s, l, offset, "the offset");
    Val lo = to_dtype(s, l, v_ir(off), NR_DT_U32, false);
    Val zero = bin(s, l, NR_BIN_MUL, lo, cint(0));
    Val hi = zero;
    if (nr_dt_bits((NrDtype)nr_sm_type(s, off)->dtype) > 32)
        hi = to_dtype(s, l, bin(s, l, NR_BIN_RSHIFT, v_ir(off), cint(32)), NR_DT_U32, false);
    Val cs[4] = {lo, hi, zero, zero};
    return philox(s, l, seed, cs, n_rounds);
}

static Val uniform(Sema *s, NrLoc l, Val x) {
    NrValId v = nr_sm_to_ir(s, l, x, "a random integer");
    NrDtype dt = (NrDtype)nr_sm_type(s, v)->dtype;
    Val scale;
    if (dt == NR_DT_U32 || dt == NR_DT_I32) {
        x = to_dtype(s, l, x, NR_DT_I32, true);
        scale = v_const(nr_cv_float(4.6566127342e-10));
    } else if (dt == NR_DT_U64 || dt == NR_DT_I64) {
        x = to_dtype(s, l, x, NR_DT_I64, true);
        scale = v_const(nr_cv_float(1.0842020432385337e-19));
    } else {
        nr_sm_fail(s, l, "tl.uint_to_uniform_float takes 32- or 64-bit integers, got %s", nr_sm_val_kind(s, x));
    }
    scale = v_ir(nr_sm_to_ir(s, l, scale, "scale")); /* an assigned number, as in Triton's source */
    Val neg = nr_sm_compare(s, l, NR_CMP_LT, x, cint(0));
    Val flipped = bin(s, l, NR_BIN_SUB, nr_sm_unop(s, l, NR_UN_NEG, x), cint(1));
    NrValId a, b;
    nr_sm_binary_prep(s, l, "tl.where", flipped, x, true, true, true, false, &a, &b);
    NrValId cnd = neg.ir;
    broadcast3(s, l, &cnd, &a, &b);
    Val sel = v_ir(nr_sm_emit(s, l, NR_OP_SELECT, nr_sm_tid(s, a), 3, (NrValId[]){cnd, a, b}));
    return bin(s, l, NR_BIN_MUL, sel, scale);
}

static Val normal_pair(Sema *s, NrLoc l, Val u1, Val u2) {
    u1 = v_ir(minmax(s, l, true, v_const(nr_cv_float(1.0e-7)), u1, false, "tl.maximum"));
    Val th = bin(s, l, NR_BIN_MUL, v_const(nr_cv_float(6.283185307179586)), u2);
    NrValId lg = nr_sm_emit(s, l, NR_OP_LOG, nr_sm_tid(s, u1.ir), 1, &u1.ir);
    Val t = bin(s, l, NR_BIN_MUL, v_const(nr_cv_float(-2.0)), v_ir(lg));
    Val r = v_ir(nr_sm_emit(s, l, NR_OP_SQRT, nr_sm_tid(s, t.ir), 1, &t.ir));
    Val cs = v_ir(nr_sm_emit(s, l, NR_OP_COS, nr_sm_tid(s, th.ir), 1, &th.ir));
    Val sn = v_ir(nr_sm_emit(s, l, NR_OP_SIN, nr_sm_tid(s, th.ir), 1, &th.ir));
    return make_tuple2(s, bin(s, l, NR_BIN_MUL, r, cs), bin(s, l, NR_BIN_MUL, r, sn));
}

/* arg: 0 randint, 1 randint4x, 2 rand, 3 rand4x, 4 randn, 5 randn4x */
static Val h_random(Sema *s, const SmCall *c) {
    NrLoc l = c->loc;
    Val q = randint4x(s, l, c->arg[0], c->arg[1], arg_int(s, c, 2));
    switch (c->bi->arg) {
    case 0: return q.tup.v[0];
    case 1: return q;
    case 2: return uniform(s, l, q.tup.v[0]);
    case 3:
        for (int i = 0; i < 4; i++) q.tup.v[i] = uniform(s, l, q.tup.v[i]);
        return q;
    case 4: return normal_pair(s, l, uniform(s, l, q.tup.v[0]), uniform(s, l, q.tup.v[1])).tup.v[0];
    default: {
        Val u[4];
        for (int i = 0; i < 4; i++) u[i] = uniform(s, l, q.tup.v[i]);
        Val n1 = normal_pair(s, l, u[0], u[1]), n2 = normal_pair(s, l, u[2], u[3]);
        Val r = nr_sm_tuple(s, 4);
        r.tup.v[0] = n1.tup.v[0], r.tup.v[1] = n1.tup.v[1], r.tup.v[2] = n2.tup.v[0], r.tup.v[3] = n2.tup.v[1];
        return r;
    }
    }
}

static Val h_uniform(Sema *s, const SmCall *c) { return uniform(s, c->loc, c->arg[0]); }
static Val h_normal_pair(Sema *s, const SmCall *c) { return normal_pair(s, c->loc, c->arg[0], c->arg[1]); }

/* --- reductions ----------------------------------------------------------------------------------- */
static int wrap_axis(Sema *s, NrLoc loc, int64_t axis, int rank) {
    if (axis < -rank || axis >= rank)
        nr_sm_fail(s, loc, "invalid axis %lld for a block of rank %d (expected %d <= axis < %d)", (long long)axis, rank,
                   -rank, rank);
    return (int)(axis < 0 ? axis + rank : axis);
}

/* Reduce x along axis (NULL: all axes) with `kind`; argreduce gives (value, index). */
static Val reduce(Sema *s, const SmCall *c, NrValId x, int axis_arg, bool keep_dims, const char *kind, bool arg,
                  bool nan_all) {
    NrLoc loc = c->loc;
    bool all = is_none(c, axis_arg);
    int rank = rank_of(s, x);
    if (ptr_of(s, x)) nr_sm_fail(s, loc, "%s cannot reduce pointers", BN(c));
    if (all && arg) nr_sm_fail(s, loc, "%s needs an axis when it returns indices", BN(c));
    int ax = 0;
    if (rank == 0) {
        if (!all) wrap_axis(s, c->argloc[axis_arg], arg_int(s, c, axis_arg), 0);
        if (arg) nr_sm_fail(s, loc, "%s needs a block, got a scalar", BN(c));
        return v_ir(x);
    }
    if (all) {
        int32_t n = (int32_t)nr_type_numel(s->m, nr_sm_tid(s, x));
        if (rank > 1) x = nr_sm_reshape(s, loc, x, 1, &n, true);
    } else {
        ax = wrap_axis(s, c->argloc[axis_arg], arg_int(s, c, axis_arg), rank);
    }
    const NrType *t = nr_sm_type(s, x);
    int32_t sh[NR_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != ax) sh[r++] = t->shape[i];
    NrTypeId vt = nr_type_block(s->m, elem_of(s, x), r, sh);
    NrFunc *f = s->fn->f;
    Val out;
    if (arg) {
        NrTypeId it = nr_type_block(s->m, nr_type_scalar(s->m, NR_DT_I32), r, sh);
        NrOpId op = nr_sm_emit_op(s, loc, NR_OP_ARGREDUCE, 1, &x, 2, (NrTypeId[]){vt, it}, 0);
        nr_op_set_str(f, op, NR_A_KIND, kind);
        nr_op_set_int(f, op, NR_A_AXIS, ax);
        out = make_tuple2(s, v_ir(nr_op_result(f, op, 0)), v_ir(nr_op_result(f, op, 1)));
    } else {
        NrOpId op = nr_sm_emit_op(s, loc, NR_OP_REDUCE, 1, &x, 1, &vt, 0);
        nr_op_set_str(f, op, NR_A_KIND, kind);
        nr_op_set_int(f, op, NR_A_AXIS, ax);
        if (nan_all) nr_op_set_str(f, op, NR_A_NAN, "all");
        out = v_ir(nr_op_result(f, op, 0));
    }
    if (keep_dims) {
        for (int k = 0; k < (out.k == V_TUPLE ? 2 : 1); k++) {
            Val *v = out.k == V_TUPLE ? &out.tup.v[k] : &out;
            if (all)
                for (int i = 0; i < rank; i++) v->ir = nr_sm_expand_dims(s, loc, v->ir, 0);
            else
                v->ir = nr_sm_expand_dims(s, loc, v->ir, ax);
        }
    }
    return out;
}

static NrValId reduce_input(Sema *s, const SmCall *c) {
    Val v = c->arg[0];
    if (v.k != V_IR) nr_sm_fail(s, c->argloc[0], "%s takes a tensor, got %s", BN(c), nr_sm_val_kind(s, v));
    return v.ir;
}

static Val h_sum(Sema *s, const SmCall *c) {
    NrValId x = reduce_input(s, c);
    if (ptr_of(s, x)) nr_sm_fail(s, c->loc, "%s cannot reduce pointers", BN(c));
    if (!is_none(c, 3)) {
        NrCVal dt = arg_dtype(s, c, 3);
        x = nr_sm_cast(s, c->argloc[3], x, dt.dt, dt.ptr, NULL);
    } else {
        NrDtype dt = dtype_of(s, x);
        if (nr_dt_is_int(dt) && nr_dt_bits(dt) < 32)
            x = nr_sm_cast(s, c->loc, x, nr_dt_is_signed(dt) ? NR_DT_I32 : NR_DT_U32, 0, NULL);
    }
    return reduce(s, c, x, 1, arg_bool(s, c, 2), "add", false, false);
}

/* tl.max / tl.min (arg: 1 for max) */
static Val h_maxmin_reduce(Sema *s, const SmCall *c) {
    NrValId x = bf16_to_f32(s, c->loc, reduce_input(s, c));
    const char *kind = c->bi->arg ? "max" : "min";
    bool ret_idx = arg_bool(s, c, 2);
    if (!ret_idx && !ptr_of(s, x)) {
        NrDtype dt = dtype_of(s, x);
        if (nr_dt_bits(dt) < 32) x = nr_sm_cast(s, c->loc, x, nr_dt_is_float(dt) ? NR_DT_F32 : NR_DT_I32, 0, NULL);
    }
    return reduce(s, c, x, 1, arg_bool(s, c, 4), kind, ret_idx, false);
}

static Val h_argmaxmin(Sema *s, const SmCall *c) {
    NrValId x = bf16_to_f32(s, c->loc, reduce_input(s, c));
    Val r = reduce(s, c, x, 1, arg_bool(s, c, 3), c->bi->arg ? "max" : "min", true, false);
    return r.tup.v[1];
}

static Val h_int_reduce(Sema *s, const SmCall *c) {
    NrValId x = reduce_input(s, c);
    if (ptr_of(s, x) || !nr_dt_is_int(dtype_of(s, x)))
        nr_sm_fail(s, c->loc, "%s takes integers, got %s", BN(c), ename(s, x));
    return reduce(s, c, x, 1, arg_bool(s, c, 2), c->bi->str, false, false);
}

/* The reduce kind a combine function computes, found by lowering it on two
 * scalars of dtype dt: it must be one add/max/min/and/or/xor of its two
 * arguments.  NULL if it is something else. */
static const char *combine_kind(Sema *s, NrLoc loc, const NrFuncDecl *fn, NrTypeId st, bool *nan_all) {
    NrTypeId ts[2] = {st, st};
    NrFunc *tmp = nr_func_new(s->m, "$combine", 2, ts, 0, NULL);
    SmFn tf;
    memset(&tf, 0, sizeof tf);
    tf.f = tmp;
    tf.b = nr_builder_at_end(tmp, tmp->body);
    SmFn *saved = s->fn;
    int nspecs = s->nspecs;
    s->fn = &tf;
    Val args[2] = {v_ir(f_arg(tmp, 0)), v_ir(f_arg(tmp, 1))};
    Val r = nr_sm_call_jit(s, loc, fn, 2, args, NULL, 0, NULL, NULL);
    s->fn = saved;
    nr_module_remove_func(s->m, tmp);
    NrOpId call = tmp->blocks[tmp->body].first;
    if (r.k != V_IR || !call || tmp->ops[call].opc != NR_OP_CALL) return NULL;
    NrFunc *g = nr_module_find_func(s->m, nr_op_str(tmp, call, NR_A_CALLEE, ""));
    if (!g) return NULL;
    /* the probe's own specialization is not part of the kernel */
    if (s->nspecs > nspecs && s->specs[s->nspecs - 1].f == g) {
        s->nspecs--;
        nr_module_remove_func(s->m, g);
    }
    NrOpId op = g->blocks[g->body].first;
    if (!op || !g->ops[op].next || g->ops[g->ops[op].next].opc != NR_OP_RETURN) return NULL;
    const NrOp *o = &g->ops[op];
    NrOpId ret = o->next;
    if (o->nopnds != 2 || o->nresults != 1 || g->ops[ret].nopnds != 1 || g->ops[ret].opnds[0] != o->results[0])
        return NULL;
    NrValId a0 = f_arg(g, 0), a1 = f_arg(g, 1);
    if (!((o->opnds[0] == a0 && o->opnds[1] == a1) || (o->opnds[0] == a1 && o->opnds[1] == a0))) return NULL;
    *nan_all = o->opc == NR_OP_MAX || o->opc == NR_OP_MIN ? strcmp(nr_op_str(g, op, NR_A_NAN, "none"), "all") == 0
                                                          : false;
    switch ((NrOpcode)o->opc) {
    case NR_OP_ADD: return "add";
    case NR_OP_MAX: return "max";
    case NR_OP_MIN: return "min";
    case NR_OP_AND: return "and";
    case NR_OP_OR: return "or";
    case NR_OP_XOR: return "xor";
    default: return NULL;
    }
}

static Val h_softmax(Sema *s, const SmCall *c) {
    NrValId x = reduce_input(s, c);
    Val dim = is_none(c, 1) ? v_const(nr_cv_int(0)) : c->arg[1];
    Val keep = c->arg[2];
    /* z = x - max(x, dim, keep_dims); num = exp(z); den = sum(num, dim, keep_dims) */
    const Builtin *bmax = nr_sm_find_builtin("max", SM_IN_TL), *bsum = nr_sm_find_builtin("sum", SM_IN_TL);
    Val margs[2] = {v_ir(x), dim};
    Val mx = nr_sm_call_builtin(s, c->loc, bmax, NULL, 2, margs, NULL, 1, (const char *[]){"keep_dims"}, &keep, NULL);
    Val z = nr_sm_binop(s, c->loc, NR_BIN_SUB, v_ir(x), mx);
    check_float_dtype(s, c->loc, "tl.softmax", z.ir, false);
    NrValId num = nr_sm_emit(s, c->loc, NR_OP_EXP, nr_sm_tid(s, z.ir), 1, &z.ir);
    Val sargs[2] = {v_ir(num), dim};
    Val den = nr_sm_call_builtin(s, c->loc, bsum, NULL, 2, sargs, NULL, 1, (const char *[]){"keep_dims"}, &keep, NULL);
    NrValId a = num, b = den.ir;
    nr_sm_broadcast_pair(s, c->loc, &a, &b);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_DIV, 2, (NrValId[]){a, b}, 1, (NrTypeId[]){nr_sm_tid(s, a)}, 0);
    if (arg_bool(s, c, 3)) nr_op_set_bool(s->fn->f, op, NR_A_IEEE, true);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

/* --- dot ------------------------------------------------------------------------------------------ */
static bool dot_dtype_ok(NrDtype d) {
    return d == NR_DT_I8 || d == NR_DT_F16 || d == NR_DT_BF16 || d == NR_DT_F32 || nr_dt_is_fp8(d);
}

static Val h_dot(Sema *s, const SmCall *c) {
    NrValId a = arg_tensor(s, c, 0), b = arg_tensor(s, c, 1);
    bool has_prec = !is_none(c, 3), has_tf32 = !is_none(c, 4);
    if (has_prec && has_tf32)
        nr_sm_fail(s, c->loc, "tl.dot: only one of input_precision and allow_tf32 can be specified");
    const char *prec = has_prec ? arg_str(s, c, 3) : (has_tf32 && !arg_bool(s, c, 4)) ? "ieee" : "tf32";
    static const char *const precs[] = {"tf32", "tf32x3", "ieee", NULL};
    check_choice(s, c, 3, prec, precs, "'tf32', 'tf32x3' or 'ieee'");
    NrCVal odt = arg_dtype(s, c, 6);
    const NrType *ta = nr_sm_type(s, a), *tb = nr_sm_type(s, b);
    if (ta->ptr || tb->ptr) nr_sm_fail(s, c->loc, "tl.dot takes blocks of numbers, not pointers");
    NrDtype da = (NrDtype)ta->dtype, db = (NrDtype)tb->dtype;
    if (!(nr_dt_is_fp8(da) && nr_dt_is_fp8(db))) {
        if (!dot_dtype_ok(da) || !dot_dtype_ok(db) || da != db)
            nr_sm_fail(s, c->loc, "tl.dot does not support operands of %s and %s (it takes two blocks of float16, "
                                  "bfloat16, float32 or int8, or of fp8 types)",
                       ename(s, a), ename(s, b));
    }
    int rank = ta->rank;
    if (rank < 2 || tb->rank != rank)
        nr_sm_fail(s, c->loc, "the operands of tl.dot must have equal ranks >= 2, got %s and %s",
                   nr_sm_shape_str(s, ta), nr_sm_shape_str(s, tb));
    for (int i = 0; i < rank - 2; i++)
        if (ta->shape[i] != tb->shape[i])
            nr_sm_fail(s, c->loc, "the operands of tl.dot must have equal batch shapes, got %s and %s",
                       nr_sm_shape_str(s, ta), nr_sm_shape_str(s, tb));
    int32_t M = ta->shape[rank - 2], K = ta->shape[rank - 1], K2 = tb->shape[rank - 2], N = tb->shape[rank - 1];
    if (K != K2)
        nr_sm_fail(s, c->loc, "tl.dot: the inner dimensions do not match: %s @ %s", nr_sm_shape_str(s, ta),
                   nr_sm_shape_str(s, tb));
    if (M < 16 || N < 16 || K < 16)
        nr_sm_fail(s, c->loc, "tl.dot needs M, N and K of at least 16, got M = %d, N = %d, K = %d", M, N, K);
    NrDtype rdt;
    if (da == NR_DT_I8) rdt = NR_DT_I32;
    else if (odt.ptr || odt.dt == NR_DT_BF16)
        nr_sm_fail(s, c->argloc[6], "tl.dot: out_dtype=bfloat16 is not supported; use float32 and cast the result");
    else if (da == NR_DT_F32 || da == NR_DT_BF16) rdt = NR_DT_F32;
    else {
        if (odt.dt != NR_DT_F16 && odt.dt != NR_DT_F32)
            nr_sm_fail(s, c->argloc[6], "tl.dot: out_dtype must be float32 or float16, got %s",
                       nr_dt_name(s->a, odt.dt, 0));
        rdt = odt.dt;
    }
    int32_t cs[NR_MAX_RANK];
    int64_t numel = N;
    for (int i = 0; i < rank - 1; i++) cs[i] = ta->shape[i], numel *= cs[i];
    cs[rank - 1] = N;
    if (numel > SM_MAX_BLOCK_NUMEL)
        nr_sm_fail(s, c->loc, "the result of tl.dot would have %lld elements; a block has at most %d", (long long)numel,
                   SM_MAX_BLOCK_NUMEL);
    NrTypeId ct = nr_type_block(s->m, nr_type_scalar(s->m, rdt), rank, cs);
    NrValId acc;
    if (is_none(c, 2)) {
        NrCVal z = nr_cv_int(0);
        acc = nr_sm_const(s, c->loc, ct, &z);
    } else {
        acc = arg_tensor(s, c, 2);
        if (nr_sm_tid(s, acc) != ct)
            nr_sm_fail(s, c->argloc[2], "tl.dot: the accumulator has type %s, expected %s", nr_sm_type_str(s, nr_sm_tid(s, acc)),
                       nr_sm_type_str(s, ct));
    }
    int64_t imprecise = 0;
    if (!is_none(c, 5)) {
        imprecise = arg_int(s, c, 5);
        if (nr_dt_is_fp8(da) && imprecise > K)
            nr_sm_fail(s, c->argloc[5], "tl.dot: max_num_imprecise_acc (%lld) must be <= K (%d)", (long long)imprecise, K);
    }
    /* more than one batch axis: fold the batch axes into one */
    if (rank > 3) {
        int32_t bsz = 1;
        for (int i = 0; i < rank - 2; i++) bsz *= ta->shape[i];
        a = nr_sm_reshape(s, c->loc, a, 3, (int32_t[]){bsz, M, K}, false);
        b = nr_sm_reshape(s, c->loc, b, 3, (int32_t[]){bsz, K, N}, false);
        acc = nr_sm_reshape(s, c->loc, acc, 3, (int32_t[]){bsz, M, N}, false);
    }
    NrTypeId rt = nr_sm_tid(s, acc);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_DOT, 3, (NrValId[]){a, b, acc}, 1, &rt, 0);
    if (da == NR_DT_F32) nr_op_set_str(s->fn->f, op, NR_A_PRECISION, prec);
    if (imprecise) nr_op_set_int(s->fn->f, op, NR_A_MAX_IMPRECISE, imprecise);
    NrValId r = nr_op_result(s->fn->f, op, 0);
    if (rank > 3) r = nr_sm_reshape(s, c->loc, r, rank, cs, false);
    return v_ir(r);
}

/* --- shapes --------------------------------------------------------------------------------------- */
static Val h_reshape(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    int64_t shape[NR_MAX_RANK];
    int rank = varargs_shape(s, c, 1, shape, nr_sprintf(s->a, "the shape of %s", BN(c)));
    bool reorder = c->bi->arg || arg_bool(s, c, 2);
    if (rank == 0) {
        if (nr_type_numel(s->m, nr_sm_tid(s, x)) != 1)
            nr_sm_fail(s, c->loc, "%s to a scalar needs a block of one element, got %s", BN(c),
                       nr_sm_val_kind(s, v_ir(x)));
        return v_ir(nr_sm_reshape(s, c->loc, x, 0, NULL, false));
    }
    NrTypeId t = nr_sm_block_type(s, c->argloc[1], elem_of(s, x), rank, shape, BN(c));
    return v_ir(nr_sm_reshape(s, c->loc, x, rank, nr_type(s->m, t)->shape, reorder));
}

/* x.item(): a one-element block as a scalar */
static Val h_item(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    if (nr_type_numel(s->m, nr_sm_tid(s, x)) != 1)
        nr_sm_fail(s, c->loc, "item() needs a block of one element, got %s", nr_sm_val_kind(s, v_ir(x)));
    return v_ir(nr_sm_reshape(s, c->loc, x, 0, NULL, false));
}

static Val h_ravel(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int32_t n = (int32_t)nr_type_numel(s->m, nr_sm_tid(s, x));
    return v_ir(nr_sm_reshape(s, c->loc, x, 1, &n, arg_bool(s, c, 1)));
}

static NrValId permute(Sema *s, NrLoc loc, NrValId x, int n, const int64_t *dims) {
    const NrType *t = nr_sm_type(s, x);
    if (n != t->rank)
        nr_sm_fail(s, loc, "permute dims must have the same length as the shape, got %d for a block of rank %d", n, t->rank);
    bool seen[NR_MAX_RANK] = {false}, ident = true;
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || dims[i] >= n || seen[dims[i]])
            nr_sm_fail(s, loc, "permute dims must be a permutation of 0, 1, ..., %d", n - 1);
        seen[dims[i]] = true;
        ident = ident && dims[i] == i;
        sh[i] = t->shape[dims[i]];
    }
    if (ident) return x;
    NrTypeId rt = nr_type_block(s->m, elem_of(s, x), n, sh);
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_TRANS, 1, &x, 1, &rt, 0);
    nr_op_set_ints(s->fn->f, op, NR_A_ORDER, n, dims);
    return nr_op_result(s->fn->f, op, 0);
}

static Val h_permute(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int64_t dims[NR_MAX_RANK];
    Val v = c->arg[1];
    int n;
    if (v.tup.n == 0 && c->bi->arg) { /* trans() swaps the last two axes */
        int r = rank_of(s, x);
        if (r < 2) nr_sm_fail(s, c->loc, "tl.trans needs a block of rank 2 or more, got %s", nr_sm_val_kind(s, v_ir(x)));
        for (int i = 0; i < r; i++) dims[i] = i;
        dims[r - 2] = r - 1;
        dims[r - 1] = r - 2;
        n = r;
    } else {
        n = varargs_shape(s, c, 1, dims, nr_sprintf(s->a, "the dims of %s", BN(c)));
    }
    return v_ir(permute(s, c->loc, x, n, dims));
}

static Val h_expand_dims(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    int64_t axes[NR_MAX_RANK];
    int n = shape_of_val(s, c->argloc[1], c->arg[1], "the axis of tl.expand_dims", axes);
    int nd = rank_of(s, x) + n;
    for (int i = 0; i < n; i++) axes[i] = wrap_axis(s, c->argloc[1], axes[i], nd);
    for (int i = 0; i < n; i++)
        for (int k = i + 1; k < n; k++)
            if (axes[i] == axes[k]) nr_sm_fail(s, c->argloc[1], "tl.expand_dims received duplicate axes");
    for (int i = 0; i < n; i++) /* insertion sort */
        for (int k = i; k > 0 && axes[k - 1] > axes[k]; k--) {
            int64_t t = axes[k];
            axes[k] = axes[k - 1];
            axes[k - 1] = t;
        }
    for (int i = 0; i < n; i++) x = nr_sm_expand_dims(s, c->loc, x, (int)axes[i]);
    return v_ir(x);
}

static Val h_broadcast_to(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    int64_t shape[NR_MAX_RANK];
    int rank = varargs_shape(s, c, 1, shape, "the shape of tl.broadcast_to");
    if (rank == 0) return v_ir(x);
    NrTypeId t = nr_sm_block_type(s, c->argloc[1], elem_of(s, x), rank, shape, "tl.broadcast_to");
    return v_ir(nr_sm_broadcast_to(s, c->loc, x, rank, nr_type(s->m, t)->shape, true));
}

static Val h_broadcast(Sema *s, const SmCall *c) {
    NrValId a = arg_ir(s, c, 0), b = arg_ir(s, c, 1);
    nr_sm_broadcast_pair(s, c->loc, &a, &b);
    return make_tuple2(s, v_ir(a), v_ir(b));
}

/* The integer dtype of the same width (for exact bit movement by xor-reductions). */
static NrDtype int_of_width(Sema *s, NrLoc loc, NrValId x, const char *fn) {
    const NrType *t = nr_sm_type(s, x);
    if (t->ptr) nr_sm_fail(s, loc, "%s does not take pointers", fn);
    switch (nr_dt_bits((NrDtype)t->dtype)) {
    case 1: return NR_DT_I1;
    case 8: return NR_DT_I8;
    case 16: return NR_DT_I16;
    case 32: return NR_DT_I32;
    default: return NR_DT_I64;
    }
}

/* A boolean block true where index `axis` of a block of type t is 0. */
static NrValId first_half_mask(Sema *s, NrLoc loc, NrTypeId t, int axis) {
    int64_t two = 2;
    NrTypeId at = nr_sm_block_type(s, loc, nr_type_scalar(s->m, NR_DT_I32), 1, &two, "a mask");
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_ARANGE, 0, NULL, 1, &at, 0);
    nr_op_set_int(s->fn->f, op, NR_A_START, 0);
    nr_op_set_int(s->fn->f, op, NR_A_END, 2);
    NrValId ar = nr_op_result(s->fn->f, op, 0);
    NrCVal z = nr_cv_int(0);
    NrValId zero = nr_sm_const(s, loc, at, &z);
    NrOpId cmp = nr_sm_emit_op(s, loc, NR_OP_CMP, 2, (NrValId[]){ar, zero}, 1,
                               (NrTypeId[]){nr_type_with_dtype(s->m, at, NR_DT_I1)}, 0);
    nr_op_set_str(s->fn->f, cmp, NR_A_PRED, "eq");
    NrValId m = nr_op_result(s->fn->f, cmp, 0);
    const NrType *ty = nr_type(s->m, t);
    for (int i = 0; i < ty->rank; i++)
        if (i != axis) m = nr_sm_expand_dims(s, loc, m, i);
    return nr_sm_broadcast_to(s, loc, m, ty->rank, nr_type(s->m, t)->shape, true);
}

/* join(a, b): a new minor axis of size 2 holding a then b. */
static NrValId join(Sema *s, NrLoc loc, NrValId a, NrValId b) {
    nr_sm_broadcast_pair(s, loc, &a, &b);
    if (nr_sm_tid(s, a) != nr_sm_tid(s, b))
        nr_sm_fail(s, loc, "tl.join needs operands of one dtype, got %s and %s", nr_sm_val_kind(s, v_ir(a)),
                   nr_sm_val_kind(s, v_ir(b)));
    int r = rank_of(s, a);
    if (r >= NR_MAX_RANK) nr_sm_fail(s, loc, "tl.join: blocks have at most %d dimensions", NR_MAX_RANK);
    NrValId ea = nr_sm_expand_dims(s, loc, a, r), eb = nr_sm_expand_dims(s, loc, b, r);
    int32_t sh[NR_MAX_RANK];
    const NrType *t = nr_sm_type(s, ea);
    int64_t numel = 2;
    for (int i = 0; i < r; i++) sh[i] = t->shape[i], numel *= sh[i];
    sh[r] = 2;
    if (numel > SM_MAX_BLOCK_NUMEL) nr_sm_fail(s, loc, "tl.join: a block has at most %d elements", SM_MAX_BLOCK_NUMEL);
    ea = nr_sm_broadcast_to(s, loc, ea, r + 1, sh, true);
    eb = nr_sm_broadcast_to(s, loc, eb, r + 1, sh, true);
    NrValId m = first_half_mask(s, loc, nr_sm_tid(s, ea), r);
    return nr_sm_emit(s, loc, NR_OP_SELECT, nr_sm_tid(s, ea), 3, (NrValId[]){m, ea, eb});
}

static Val h_join(Sema *s, const SmCall *c) { return v_ir(join(s, c->loc, arg_ir(s, c, 0), arg_ir(s, c, 1))); }

/* x with its last axis (of size 2) split: element `half` of each pair, exactly
 * (the other half is zeroed and the pair xor-reduced in an integer type). */
static NrValId take_half(Sema *s, NrLoc loc, NrValId x, int half, const char *fn) {
    NrDtype it = int_of_width(s, loc, x, fn);
    NrDtype dt = dtype_of(s, x);
    NrValId xi = nr_sm_bitcast(s, loc, x, it, 0);
    int r = rank_of(s, xi);
    NrValId m = first_half_mask(s, loc, nr_sm_tid(s, xi), r - 1);
    NrCVal z = nr_cv_int(0);
    NrValId zero = nr_sm_const(s, loc, nr_sm_tid(s, xi), &z);
    NrValId sel = nr_sm_emit(s, loc, NR_OP_SELECT, nr_sm_tid(s, xi), 3, half ? (NrValId[]){m, zero, xi} : (NrValId[]){m, xi, zero});
    const NrType *t = nr_sm_type(s, sel);
    NrTypeId rt = nr_type_block(s->m, nr_type_scalar(s->m, it), r - 1, t->shape);
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_REDUCE, 1, &sel, 1, &rt, 0);
    nr_op_set_str(s->fn->f, op, NR_A_KIND, "xor");
    nr_op_set_int(s->fn->f, op, NR_A_AXIS, r - 1);
    return nr_sm_bitcast(s, loc, nr_op_result(s->fn->f, op, 0), dt, 0);
}

static Val h_split(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    const NrType *t = nr_sm_type(s, x);
    if (t->rank == 0 || t->shape[t->rank - 1] != 2)
        nr_sm_fail(s, c->loc, "tl.split needs a block whose last dimension is 2, got %s", nr_sm_val_kind(s, v_ir(x)));
    return make_tuple2(s, v_ir(take_half(s, c->loc, x, 0, BN(c))), v_ir(take_half(s, c->loc, x, 1, BN(c))));
}

static Val h_interleave(Sema *s, const SmCall *c) {
    NrValId j = join(s, c->loc, arg_ir(s, c, 0), arg_ir(s, c, 1));
    const NrType *t = nr_sm_type(s, j);
    if (t->rank == 1) return v_ir(j);
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < t->rank - 2; i++) sh[i] = t->shape[i];
    sh[t->rank - 2] = 2 * t->shape[t->rank - 2];
    return v_ir(nr_sm_reshape(s, c->loc, j, t->rank - 1, sh, false));
}

/* cat(input, other, can_reorder): Triton requires can_reorder=True, so any order is right. */
static Val h_cat(Sema *s, const SmCall *c) {
    if (!arg_bool(s, c, 2)) nr_sm_fail(s, c->loc, "tl.cat requires can_reorder=True (as in Triton)");
    NrValId a = arg_tensor(s, c, 0), b = arg_tensor(s, c, 1);
    if (rank_of(s, a) != 1 || nr_sm_tid(s, a) != nr_sm_tid(s, b))
        nr_sm_fail(s, c->loc, "tl.cat takes two 1-d blocks of one type, got %s and %s", nr_sm_val_kind(s, v_ir(a)),
                   nr_sm_val_kind(s, v_ir(b)));
    NrValId j = join(s, c->loc, a, b);
    int32_t n = 2 * nr_sm_type(s, a)->shape[0];
    return v_ir(nr_sm_reshape(s, c->loc, j, 1, &n, true));
}

/* --- gather, flip and histogram ------------------------------------------------------------------ */
/* arange(0, n) shaped [1]*(rank - 1) + [n] */
static NrValId iota_last(Sema *s, NrLoc l, int32_t n, int rank) {
    int64_t n64 = n;
    NrTypeId at = nr_sm_block_type(s, l, nr_type_scalar(s->m, NR_DT_I32), 1, &n64, "an index");
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_ARANGE, 0, NULL, 1, &at, 0);
    nr_op_set_int(s->fn->f, op, NR_A_START, 0);
    nr_op_set_int(s->fn->f, op, NR_A_END, n);
    NrValId x = nr_op_result(s->fn->f, op, 0);
    while (rank_of(s, x) < rank) x = nr_sm_expand_dims(s, l, x, 0);
    return x;
}

/* The gather op: src's elements at idx along axis (idx: integers of src's
 * rank, src's sizes elsewhere, checked by the caller). */
static NrValId gather_op(Sema *s, NrLoc l, NrValId src, NrValId idx, int axis) {
    NrType rt = *nr_sm_type(s, idx);
    const NrType *ts = nr_sm_type(s, src);
    rt.dtype = ts->dtype;
    rt.ptr = ts->ptr;
    NrTypeId rid = nr_type_intern(s->m, &rt);
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_GATHER, 2, (NrValId[]){src, idx}, 1, &rid, 0);
    nr_op_set_int(s->fn->f, op, NR_A_AXIS, axis);
    return nr_op_result(s->fn->f, op, 0);
}

/* x with axis dim reversed: a gather at index (n-1) - i, which for a
 * power-of-two n is i ^ (n-1). */
static NrValId flip_axis(Sema *s, NrLoc l, NrValId x, int dim) {
    const NrType *t = nr_sm_type(s, x);
    int r = t->rank;
    int32_t n = t->shape[dim], shape[NR_MAX_RANK];
    memcpy(shape, t->shape, sizeof shape);
    if (n == 1) return x;
    NrValId k = iota_last(s, l, n, 1);
    NrCVal top = nr_cv_int(n - 1);
    NrValId c = nr_sm_const(s, l, nr_sm_tid(s, k), &top);
    NrValId idx = nr_sm_emit(s, l, NR_OP_XOR, nr_sm_tid(s, k), 2, (NrValId[]){k, c});
    for (int i = 0; i < dim; i++) idx = nr_sm_expand_dims(s, l, idx, 0);
    while (rank_of(s, idx) < r) idx = nr_sm_expand_dims(s, l, idx, rank_of(s, idx));
    idx = nr_sm_broadcast_to(s, l, idx, r, shape, true);
    return gather_op(s, l, x, idx, dim);
}

static Val h_flip(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int r = rank_of(s, x);
    if (r == 0) nr_sm_fail(s, c->loc, "tl.flip needs a block, got %s", nr_sm_val_kind(s, v_ir(x)));
    int dim = is_none(c, 1) ? r - 1 : wrap_axis(s, c->argloc[1], arg_int(s, c, 1), r);
    return v_ir(flip_axis(s, c->loc, x, dim));
}

/* --- combine functions, tree reductions and scans ------------------------------------------------- */
/* Reductions and scans with a combine function that is not one of the
 * reduce op's kinds are built from the function itself applied to whole
 * blocks: a tree of pairwise combines over a [.., n/2, 2] view of the minor
 * axis (split and join are exact), log2(n) levels deep.  Values are tensors
 * or tuples of tensors (several inputs). */
typedef struct Combine {
    const char *kind;         /* a reduce kind, or NULL to call fn */
    NrOpcode op;              /* the elementwise op of kind (NR_OP_INVALID for fn) */
    bool nan_all;
    const NrFuncDecl *fn;
} Combine;

static int val_count(Val v) { return v.k == V_TUPLE ? v.tup.n : 1; }
static NrValId val_at(Val v, int i) { return v.k == V_TUPLE ? v.tup.v[i].ir : v.ir; }
static Val val_like(Sema *s, Val shape, const NrValId *x) {
    if (shape.k != V_TUPLE) return v_ir(x[0]);
    Val t = nr_sm_tuple(s, shape.tup.n);
    for (int i = 0; i < shape.tup.n; i++) t.tup.v[i] = v_ir(x[i]);
    return t;
}

static Val combine_apply(Sema *s, NrLoc l, const Combine *cb, Val a, Val b) {
    if (cb->fn) {
        int n = val_count(a);
        Val *args = nr_alloc(s->a, sizeof(Val) * (size_t)(2 * n));
        for (int i = 0; i < n; i++) {
            args[i] = v_ir(val_at(a, i));
            args[n + i] = v_ir(val_at(b, i));
        }
        Val r = nr_sm_call_jit(s, l, cb->fn, 2 * n, args, NULL, 0, NULL, NULL);
        bool ok = val_count(r) == n && (r.k == V_IR) == (a.k == V_IR);
        for (int i = 0; ok && i < n; i++) {
            Val e = r.k == V_TUPLE ? r.tup.v[i] : r;
            ok = e.k == V_IR && nr_sm_tid(s, e.ir) == nr_sm_tid(s, val_at(a, i));
        }
        if (!ok)
            nr_sm_fail(s, l, "the combine function '%s' must return %d value%s of the input types", cb->fn->name, n,
                       n == 1 ? "" : "s");
        return r;
    }
    NrValId x = a.ir, y = b.ir;
    NrOpId op = nr_sm_emit_op(s, l, cb->op, 2, (NrValId[]){x, y}, 1, (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    if ((cb->op == NR_OP_MAX || cb->op == NR_OP_MIN) && nr_dt_is_float(dtype_of(s, x)))
        nr_op_set_str(s->fn->f, op, NR_A_NAN, cb->nan_all ? "all" : "none");
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

/* Every tensor of v reshaped so that its minor axis of n becomes [n/2, 2]. */
static Val pairs_view(Sema *s, NrLoc l, Val v) {
    int n = val_count(v);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        NrValId e = val_at(v, i);
        const NrType *t = nr_sm_type(s, e);
        if (t->rank >= NR_MAX_RANK) nr_sm_fail(s, l, "blocks have at most %d dimensions", NR_MAX_RANK);
        int32_t sh[NR_MAX_RANK];
        for (int k = 0; k < t->rank - 1; k++) sh[k] = t->shape[k];
        sh[t->rank - 1] = t->shape[t->rank - 1] / 2;
        sh[t->rank] = 2;
        x[i] = nr_sm_reshape(s, l, e, t->rank + 1, sh, false);
    }
    return val_like(s, v, x);
}

static Val half_of(Sema *s, NrLoc l, Val v, int half) {
    int n = val_count(v);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) x[i] = take_half(s, l, val_at(v, i), half, "a combine");
    return val_like(s, v, x);
}

/* join(a, b) then merge the pair axis into the minor axis: [.., m] x 2 -> [.., 2m] */
static Val interleave_vals(Sema *s, NrLoc l, Val a, Val b) {
    int n = val_count(a);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        NrValId j = join(s, l, val_at(a, i), val_at(b, i));
        const NrType *t = nr_sm_type(s, j);
        int32_t sh[NR_MAX_RANK];
        for (int k = 0; k < t->rank - 2; k++) sh[k] = t->shape[k];
        sh[t->rank - 2] = 2 * t->shape[t->rank - 2];
        x[i] = nr_sm_reshape(s, l, j, t->rank - 1, sh, false);
    }
    return val_like(s, a, x);
}

static Val select_vals(Sema *s, NrLoc l, NrValId mask, Val a, Val b) {
    int n = val_count(a);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        NrValId m = mask, p = val_at(a, i), q = val_at(b, i);
        broadcast3(s, l, &m, &p, &q);
        x[i] = nr_sm_emit(s, l, NR_OP_SELECT, nr_sm_tid(s, p), 3, (NrValId[]){m, p, q});
    }
    return val_like(s, a, x);
}

/* Permute axis `axis` of every tensor of v to the end (or back, with inverse). */
static Val move_axis_last(Sema *s, NrLoc l, Val v, int axis, bool inverse) {
    int n = val_count(v);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        NrValId e = val_at(v, i);
        int r = rank_of(s, e);
        int64_t order[NR_MAX_RANK];
        int k = 0;
        if (!inverse) {
            for (int q = 0; q < r; q++)
                if (q != axis) order[k++] = q;
            order[k] = axis;
        } else {
            for (int q = 0; q < r; q++) order[q] = q < axis ? q : q == axis ? r - 1 : q - 1;
        }
        x[i] = permute(s, l, e, r, order);
    }
    return val_like(s, v, x);
}

/* Reduce the minor axis of every tensor of v with cb. */
static Val tree_reduce(Sema *s, NrLoc l, Val v, const Combine *cb) {
    while (nr_sm_type(s, val_at(v, 0))->shape[rank_of(s, val_at(v, 0)) - 1] > 1) {
        Val p = pairs_view(s, l, v);
        v = combine_apply(s, l, cb, half_of(s, l, p, 0), half_of(s, l, p, 1));
    }
    /* drop the minor axis of 1 */
    int n = val_count(v);
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
    for (int i = 0; i < n; i++) {
        const NrType *t = nr_sm_type(s, val_at(v, i));
        x[i] = nr_sm_reshape(s, l, val_at(v, i), t->rank - 1, t->shape, false);
    }
    return val_like(s, v, x);
}

/* Inclusive scan of the minor axis: *inc gets the scan, *prev the scan shifted
 * by one (its first element is meaningless). */
static void tree_scan(Sema *s, NrLoc l, Val v, const Combine *cb, Val *inc, Val *prev) {
    const NrType *t = nr_sm_type(s, val_at(v, 0));
    if (t->shape[t->rank - 1] == 1) {
        *inc = *prev = v;
        return;
    }
    Val p = pairs_view(s, l, v);
    Val even = half_of(s, l, p, 0), odd = half_of(s, l, p, 1);
    Val ti, tp;
    tree_scan(s, l, combine_apply(s, l, cb, even, odd), cb, &ti, &tp);
    /* even slot i: combine(scan of the pairs before i, even[i]); slot 0 is even[0] itself */
    const NrType *pt = nr_sm_type(s, val_at(even, 0));
    int r = pt->rank;
    /* index 0 of the pairs axis: a [1, .., m] mask true at position 0 */
    NrValId at0;
    {
        int64_t m = pt->shape[r - 1];
        NrTypeId at = nr_sm_block_type(s, l, nr_type_scalar(s->m, NR_DT_I32), 1, &m, "a scan");
        NrOpId op = nr_sm_emit_op(s, l, NR_OP_ARANGE, 0, NULL, 1, &at, 0);
        nr_op_set_int(s->fn->f, op, NR_A_START, 0);
        nr_op_set_int(s->fn->f, op, NR_A_END, m);
        NrCVal z = nr_cv_int(0);
        NrValId zero = nr_sm_const(s, l, at, &z);
        NrOpId cmp = nr_sm_emit_op(s, l, NR_OP_CMP, 2, (NrValId[]){nr_op_result(s->fn->f, op, 0), zero}, 1,
                                   (NrTypeId[]){nr_type_with_dtype(s->m, at, NR_DT_I1)}, 0);
        nr_op_set_str(s->fn->f, cmp, NR_A_PRED, "eq");
        at0 = nr_op_result(s->fn->f, cmp, 0);
    }
    Val ev = select_vals(s, l, at0, even, combine_apply(s, l, cb, tp, even));
    *inc = interleave_vals(s, l, ev, ti);
    *prev = interleave_vals(s, l, tp, ev);
}

static void check_scan_input(Sema *s, NrLoc l, Val v, const char *fn) {
    int n = val_count(v);
    if (v.k == V_TUPLE && n == 0) nr_sm_fail(s, l, "%s needs at least one tensor", fn);
    for (int i = 0; i < n; i++) {
        Val e = v.k == V_TUPLE ? v.tup.v[i] : v;
        if (e.k != V_IR || rank_of(s, e.ir) == 0)
            nr_sm_fail(s, l, "%s takes blocks, got %s", fn, nr_sm_val_kind(s, e));
        if (nr_sm_type(s, e.ir)->rank != nr_sm_type(s, val_at(v, 0))->rank ||
            memcmp(nr_sm_type(s, e.ir)->shape, nr_sm_type(s, val_at(v, 0))->shape, sizeof(int32_t) * NR_MAX_RANK) != 0)
            nr_sm_fail(s, l, "%s: all inputs must have the same shape", fn);
    }
}

/* Scan v along axis with cb (reverse: from the end). */
static Val scan(Sema *s, NrLoc l, Val v, int axis, const Combine *cb, bool reverse) {
    int r = rank_of(s, val_at(v, 0));
    bool moved = axis != r - 1;
    if (moved) v = move_axis_last(s, l, v, axis, false);
    if (reverse) {
        int n = val_count(v);
        NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
        for (int i = 0; i < n; i++) x[i] = flip_axis(s, l, val_at(v, i), r - 1);
        v = val_like(s, v, x);
    }
    Val inc, prev;
    tree_scan(s, l, v, cb, &inc, &prev);
    if (reverse) {
        int n = val_count(inc);
        NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
        for (int i = 0; i < n; i++) x[i] = flip_axis(s, l, val_at(inc, i), r - 1);
        inc = val_like(s, inc, x);
    }
    if (moved) inc = move_axis_last(s, l, inc, axis, true);
    return inc;
}

static Combine combine_of_fn(Sema *s, const SmCall *c, int i, Val input) {
    Combine cb = {NULL, NR_OP_INVALID, false, NULL};
    if (c->arg[i].k != V_JITFN)
        nr_sm_fail(s, c->argloc[i], "the combine_fn of %s must be a @jit function, got %s", BN(c),
                   nr_sm_val_kind(s, c->arg[i]));
    cb.fn = c->arg[i].fn;
    if (input.k == V_IR) {
        cb.kind = combine_kind(s, c->argloc[i], cb.fn, elem_of(s, input.ir), &cb.nan_all);
        static const struct { const char *k; NrOpcode op; } ops[] = {
            {"add", NR_OP_ADD}, {"max", NR_OP_MAX}, {"min", NR_OP_MIN}, {"and", NR_OP_AND}, {"or", NR_OP_OR}, {"xor", NR_OP_XOR}};
        for (size_t k = 0; cb.kind && k < NR_COUNTOF(ops); k++)
            if (strcmp(ops[k].k, cb.kind) == 0) cb.op = ops[k].op;
        if (cb.kind) cb.fn = NULL;
    }
    return cb;
}

/* tl.reduce(input, axis, combine_fn, keep_dims=False) */
static Val h_reduce(Sema *s, const SmCall *c) {
    Val in = c->arg[0];
    check_scan_input(s, c->argloc[0], in, BN(c));
    Combine cb = combine_of_fn(s, c, 2, in);
    bool keep = arg_bool(s, c, 3);
    if (cb.kind) return reduce(s, c, in.ir, 1, keep, cb.kind, false, cb.nan_all);
    int r = rank_of(s, val_at(in, 0));
    int axis;
    if (is_none(c, 1)) {
        int n = val_count(in);
        NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
        int32_t numel = (int32_t)nr_type_numel(s->m, nr_sm_tid(s, val_at(in, 0)));
        for (int i = 0; i < n; i++) x[i] = nr_sm_reshape(s, c->loc, val_at(in, i), 1, &numel, true);
        in = val_like(s, in, x);
        axis = 0;
    } else {
        axis = wrap_axis(s, c->argloc[1], arg_int(s, c, 1), r);
        if (axis != r - 1) in = move_axis_last(s, c->loc, in, axis, false);
    }
    Val out = tree_reduce(s, c->loc, in, &cb);
    if (keep) {
        int n = val_count(out);
        NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)n);
        for (int i = 0; i < n; i++) {
            x[i] = val_at(out, i);
            if (is_none(c, 1))
                for (int k = 0; k < r; k++) x[i] = nr_sm_expand_dims(s, c->loc, x[i], 0);
            else
                x[i] = nr_sm_expand_dims(s, c->loc, x[i], axis);
        }
        out = val_like(s, out, x);
    }
    return out;
}

/* tl.associative_scan(input, axis, combine_fn, reverse=False) */
static Val h_associative_scan(Sema *s, const SmCall *c) {
    Val in = c->arg[0];
    check_scan_input(s, c->argloc[0], in, BN(c));
    Combine cb = combine_of_fn(s, c, 2, in);
    int axis = wrap_axis(s, c->argloc[1], arg_int(s, c, 1), rank_of(s, val_at(in, 0)));
    return scan(s, c->loc, in, axis, &cb, arg_bool(s, c, 3));
}

/* tl.cumsum(input, axis=0, reverse=False, dtype=None) and tl.cumprod(input, axis=0, reverse=False) */
static Val h_cumulative(Sema *s, const SmCall *c) {
    NrValId x = bf16_to_f32(s, c->loc, reduce_input(s, c));
    if (ptr_of(s, x) || rank_of(s, x) == 0) nr_sm_fail(s, c->loc, "%s takes a block of numbers", BN(c));
    bool is_sum = c->bi->arg == 0;
    if (is_sum) {
        if (!is_none(c, 3)) {
            NrCVal dt = arg_dtype(s, c, 3);
            x = nr_sm_cast(s, c->argloc[3], x, dt.dt, dt.ptr, NULL);
        } else {
            NrDtype dt = dtype_of(s, x);
            if (nr_dt_is_int(dt) && nr_dt_bits(dt) < 32)
                x = nr_sm_cast(s, c->loc, x, nr_dt_is_signed(dt) ? NR_DT_I32 : NR_DT_U32, 0, NULL);
        }
    }
    Combine cb = {is_sum ? "add" : "mul", is_sum ? NR_OP_ADD : NR_OP_MUL, false, NULL};
    int axis = wrap_axis(s, c->argloc[1], arg_int(s, c, 1), rank_of(s, x));
    return scan(s, c->loc, v_ir(x), axis, &cb, arg_bool(s, c, 2));
}

/* tl.gather(src, index, axis): out[.., i, ..] = src[.., index[.., i, ..], ..] (out-of-range indices give 0) */
static Val h_gather(Sema *s, const SmCall *c) {
    NrLoc l = c->loc;
    NrValId src = arg_tensor(s, c, 0), idx = arg_tensor(s, c, 1);
    const NrType *ts = nr_sm_type(s, src), *ti = nr_sm_type(s, idx);
    int r = ts->rank;
    if (ti->ptr || !nr_dt_is_int((NrDtype)ti->dtype)) nr_sm_fail(s, c->argloc[1], "the index of tl.gather must be integers");
    if (r == 0 || ti->rank != r) nr_sm_fail(s, l, "tl.gather: the source and the index must have the same rank");
    int axis = wrap_axis(s, c->argloc[2], arg_int(s, c, 2), r);
    for (int d = 0; d < r; d++)
        if (d != axis && ts->shape[d] != ti->shape[d])
            nr_sm_fail(s, l, "tl.gather: the index must match the source outside axis %d, got %s and %s", axis,
                       nr_sm_shape_str(s, ts), nr_sm_shape_str(s, ti));
    if (ti->dtype == NR_DT_I1) idx = nr_sm_cast(s, l, idx, NR_DT_I32, 0, NULL);
    return v_ir(gather_op(s, l, src, idx, axis));
}

/* tl.histogram(input, num_bins, mask=None): counts of the values 0 .. num_bins-1 in a 1-d block (int32) */
static Val h_histogram(Sema *s, const SmCall *c) {
    NrLoc l = c->loc;
    NrValId x = arg_tensor(s, c, 0);
    const NrType *t = nr_sm_type(s, x);
    if (t->rank != 1 || t->ptr || !nr_dt_is_int((NrDtype)t->dtype))
        nr_sm_fail(s, c->argloc[0], "tl.histogram takes a 1-d block of integers, got %s", nr_sm_val_kind(s, v_ir(x)));
    int64_t bins = arg_int(s, c, 1);
    NrTypeId rt = nr_sm_block_type(s, c->argloc[1], nr_type_scalar(s->m, NR_DT_I32), 1, &bins, "tl.histogram");
    if (t->dtype == NR_DT_I1) x = nr_sm_cast(s, l, x, NR_DT_I32, 0, NULL);
    NrValId mk = NR_NONE;
    if (!is_none(c, 2)) mk = nr_sm_broadcast_to(s, c->argloc[2], mask_arg(s, c, 2), 1, nr_sm_type(s, x)->shape, true);
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_HISTOGRAM, 2, (NrValId[]){x, mk}, 1, &rt, 0);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

/* --- sorting: Triton's bitonic network over a [2, 2, ...] view of the block --------------------------- */
static int floor_log2(int64_t n) {
    int k = 0;
    while (n > 1) n >>= 1, k++;
    return k;
}

/* arange(0, 2) shaped [1]*(n_dims - j - 1) + [2] + [1]*j */
static NrValId indicator(Sema *s, NrLoc l, int n_dims, int j) {
    int64_t two = 2;
    NrTypeId at = nr_sm_block_type(s, l, nr_type_scalar(s->m, NR_DT_I32), 1, &two, "tl.sort");
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_ARANGE, 0, NULL, 1, &at, 0);
    nr_op_set_int(s->fn->f, op, NR_A_START, 0);
    nr_op_set_int(s->fn->f, op, NR_A_END, 2);
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < n_dims; i++) sh[i] = i == n_dims - 1 - j ? 2 : 1;
    return nr_sm_reshape(s, l, nr_op_result(s->fn->f, op, 0), n_dims, sh, false);
}

/* One compare-and-swap layer along the i-th innermost axis of hypercube x. */
static NrValId compare_and_swap(Sema *s, NrLoc l, NrValId x, Val flip, int i) {
    int n_dims = rank_of(s, x);
    NrDtype dt = dtype_of(s, x);
    NrDtype it = int_of_width(s, l, x, "tl.sort");
    NrValId ix = nr_sm_bitcast(s, l, x, it, 0);
    int ax = n_dims - 1 - i;
    const NrType *t = nr_sm_type(s, ix);
    int32_t rs[NR_MAX_RANK];
    int rr = 0;
    for (int q = 0; q < t->rank; q++)
        if (q != ax) rs[rr++] = t->shape[q];
    NrTypeId rt = nr_type_block(s->m, nr_type_scalar(s->m, it), rr, rs);
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_REDUCE, 1, &ix, 1, &rt, 0);
    nr_op_set_str(s->fn->f, op, NR_A_KIND, "xor");
    nr_op_set_int(s->fn->f, op, NR_A_AXIS, ax);
    NrValId xs = nr_sm_expand_dims(s, l, nr_op_result(s->fn->f, op, 0), ax);
    xs = nr_sm_broadcast_to(s, l, xs, n_dims, nr_sm_type(s, ix)->shape, true);
    NrValId iy = nr_sm_emit(s, l, NR_OP_XOR, nr_sm_tid(s, ix), 2, (NrValId[]){ix, xs});
    NrValId y = nr_sm_bitcast(s, l, iy, dt, 0);
    Val gt = nr_sm_compare(s, l, NR_CMP_GT, v_ir(x), v_ir(y));
    Val want = nr_sm_binop(s, l, NR_BIN_BITXOR, flip, v_ir(indicator(s, l, n_dims, i)));
    Val cond = nr_sm_compare(s, l, NR_CMP_NE, gt, want);
    NrValId cnd = cond.ir, a = y, b = x;
    broadcast3(s, l, &cnd, &a, &b);
    return nr_sm_emit(s, l, NR_OP_SELECT, nr_sm_tid(s, a), 3, (NrValId[]){cnd, a, b});
}

/* order: 0 ascending, 1 descending, 2 alternating with the stage's indicator */
static NrValId bitonic_merge_hypercube(Sema *s, NrLoc l, NrValId x, int stage, int order) {
    Val flip = order == 2 ? v_ir(indicator(s, l, floor_log2(nr_type_numel(s->m, nr_sm_tid(s, x))), stage))
                          : v_const(nr_cv_int(order));
    for (int i = 0; i < stage; i++) x = compare_and_swap(s, l, x, flip, stage - 1 - i);
    return x;
}

/* Reshape x to the [2]*n hypercube of its elements ([1] for one element). */
static NrValId hypercube(Sema *s, NrLoc l, NrValId x) {
    int n = floor_log2(nr_type_numel(s->m, nr_sm_tid(s, x)));
    if (n > NR_MAX_RANK)
        nr_sm_fail(s, l, "sorting a block of %lld elements needs %d dimensions; blocks have at most %d",
                   (long long)nr_type_numel(s->m, nr_sm_tid(s, x)), n, NR_MAX_RANK);
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < n; i++) sh[i] = 2;
    if (n == 0) sh[0] = 1;
    return nr_sm_reshape(s, l, x, n ? n : 1, sh, false);
}

static int sort_dim(Sema *s, const SmCall *c, int i, NrValId x) {
    int r = rank_of(s, x);
    if (r == 0) nr_sm_fail(s, c->loc, "%s needs a block, got %s", BN(c), nr_sm_val_kind(s, v_ir(x)));
    int dim = is_none(c, i) ? r - 1 : wrap_axis(s, c->argloc[i], arg_int(s, c, i), r);
    if (dim != r - 1) nr_sm_fail(s, c->argloc[i], "%s: only the minor dimension is currently supported", BN(c));
    return dim;
}

/* Triton's sort_impl: sort (k = 0) or the k largest (descending) / smallest of the minor axis. */
static NrValId sort_impl(Sema *s, const SmCall *c, NrValId x, int64_t k, int dim, int descending) {
    NrLoc l = c->loc;
    const NrType *t = nr_sm_type(s, x);
    int32_t shape[NR_MAX_RANK];
    int r = t->rank;
    for (int i = 0; i < r; i++) shape[i] = t->shape[i];
    int log_n = floor_log2(shape[dim]);
    int log_k = k ? floor_log2(k) : log_n;
    if (log_k > log_n) nr_sm_fail(s, l, "%s: k (%lld) is larger than the axis (%d)", BN(c), (long long)k, shape[dim]);
    NrValId h = hypercube(s, l, x);
    for (int i = 1; i <= log_k; i++) h = bitonic_merge_hypercube(s, l, h, i, i < log_n ? 2 : descending);
    for (int i = log_k + 1; i <= log_n; i++) {
        const Builtin *red = nr_sm_find_builtin(descending ? "max" : "min", SM_IN_TL);
        int ax = floor_log2(nr_type_numel(s->m, nr_sm_tid(s, h))) - 1 - log_k;
        Val args[2] = {v_ir(h), v_const(nr_cv_int(ax))};
        h = nr_sm_call_builtin(s, l, red, NULL, 2, args, NULL, 0, NULL, NULL, NULL).ir;
        h = bitonic_merge_hypercube(s, l, h, log_k, i < log_n ? 2 : descending);
    }
    shape[r - 1] = 1 << log_k;
    return nr_sm_reshape(s, l, h, r, shape, false);
}

static Val h_sort(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    return v_ir(sort_impl(s, c, x, 0, sort_dim(s, c, 1, x), arg_bool(s, c, 2)));
}

static Val h_topk(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int64_t k = arg_int(s, c, 1);
    if (k < 1) nr_sm_fail(s, c->argloc[1], "tl.topk: k must be at least 1, got %lld", (long long)k);
    return v_ir(sort_impl(s, c, x, k, sort_dim(s, c, 2, x), 1));
}

static Val h_bitonic_merge(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int dim = sort_dim(s, c, 1, x);
    const NrType *t = nr_sm_type(s, x);
    int32_t shape[NR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) shape[i] = t->shape[i];
    int n_dims = floor_log2(shape[dim]);
    NrValId h = bitonic_merge_hypercube(s, c->loc, hypercube(s, c->loc, x), n_dims, arg_bool(s, c, 2));
    return v_ir(nr_sm_reshape(s, c->loc, h, t->rank, shape, false));
}

static Val h_cast(Sema *s, const SmCall *c) {
    NrValId x = arg_ir(s, c, 0);
    NrCVal dt = arg_dtype(s, c, 1);
    const char *rounding = is_none(c, 2) ? NULL : arg_str(s, c, 2);
    if (arg_bool(s, c, 3)) return v_ir(nr_sm_bitcast(s, c->loc, x, dt.dt, dt.ptr));
    return v_ir(nr_sm_cast(s, c->loc, x, dt.dt, dt.ptr, rounding));
}

/* --- hints and debugging -------------------------------------------------------------------------- */
static const char *const hint_kinds[] = {"multiple_of", "max_contiguous", "max_constancy"};

static Val h_hint(Sema *s, const SmCall *c) {
    NrValId x = arg_tensor(s, c, 0);
    int64_t vals[NR_MAX_RANK];
    Val v = c->arg[1];
    if (v.k == V_TUPLE && v.tup.n > NR_MAX_RANK)
        nr_sm_fail(s, c->argloc[1], "%s: too many values (%d) for a block of rank %d", BN(c), v.tup.n, rank_of(s, x));
    int n = shape_of_val(s, c->argloc[1], v, nr_sprintf(s->a, "the values of %s", BN(c)), vals);
    int r = rank_of(s, x);
    int want = c->bi->arg == 0 ? (r > 1 ? r : 1) : r;
    if (n != want)
        nr_sm_fail(s, c->argloc[1], "%s: %d value%s given for a block of rank %d (expected %d)", BN(c), n,
                   n == 1 ? "" : "s", r, want);
    if (n == 0) return v_ir(x);
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_HINT, 1, &x, 1, (NrTypeId[]){nr_sm_tid(s, x)}, 0);
    nr_op_set_str(s->fn->f, op, NR_A_KIND, hint_kinds[c->bi->arg]);
    nr_op_set_ints(s->fn->f, op, NR_A_VALUES, n, vals);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

static Val h_assume(Sema *s, const SmCall *c) {
    if (c->arg[0].k == V_CONST && nr_cv_truthy(&c->arg[0].c)) return none_val();
    NrValId x = arg_ir(s, c, 0);
    if (rank_of(s, x) > 0) nr_sm_fail(s, c->argloc[0], "tl.assume takes a scalar condition, got %s", nr_sm_val_kind(s, v_ir(x)));
    x = nr_sm_to_i1(s, c->argloc[0], x, "the condition of tl.assume");
    nr_sm_emit_op(s, c->loc, NR_OP_ASSUME, 1, &x, 0, NULL, 0);
    return none_val();
}

static Val h_barrier(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, "tl.debug_barrier");
    nr_sm_emit_op(s, c->loc, NR_OP_BARRIER, 0, NULL, 0, NULL, 0);
    return none_val();
}

static Val h_device_print(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, "tl.device_print");
    Val pv = c->arg[0];
    if (pv.k != V_CONST || pv.c.kind != NR_CV_STR)
        nr_sm_fail(s, c->argloc[0], "the prefix of %s must be a string, got %s", BN(c), nr_sm_val_kind(s, pv));
    for (size_t i = 0; i < pv.c.str.len; i++) {
        unsigned char ch = (unsigned char)pv.c.str.s[i];
        if (!(isprint(ch) || isspace(ch)) || ch >= 0x7f)
            nr_sm_fail(s, c->argloc[0], "the prefix of %s must be printable ASCII", BN(c));
    }
    Val args = c->arg[1];
    int n = args.tup.n;
    const char *prefix = nr_strndup(s->a, pv.c.str.s, pv.c.str.len);
    size_t len = strlen(prefix);
    if (n > 0 && (len == 0 || prefix[len - 1] != ' ')) prefix = nr_sprintf(s->a, "%s ", prefix), len++;
    if (n > 0 && !(len >= 2 && prefix[len - 2] == ':' && prefix[len - 1] == ' '))
        prefix = nr_sprintf(s->a, "%.*s: ", (int)(len - 1), prefix), len++;
    if (len > 2 && prefix[0] != ' ') prefix = nr_sprintf(s->a, " %s", prefix);
    NrValId *vals = nr_alloc(s->a, sizeof(NrValId) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        vals[i] = nr_sm_to_ir(s, c->argloc[1], args.tup.v[i], nr_sprintf(s->a, "argument %d of %s", i + 1, BN(c)));
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_PRINT, n, vals, 0, NULL, 0);
    nr_op_set_str(s->fn->f, op, NR_A_PREFIX, prefix);
    if (arg_bool(s, c, 2)) nr_op_set_bool(s->fn->f, op, NR_A_HEX, true);
    return none_val();
}

static char *val_str(Sema *s, Val v, bool repr) {
    switch (v.k) {
    case V_CONST:
        if (repr && v.c.kind == NR_CV_STR) return nr_sprintf(s->a, "'%s'", nr_cv_str_of(s->a, &v.c));
        return nr_cv_str_of(s->a, &v.c);
    case V_IR: {
        const NrType *t = nr_sm_type(s, v.ir);
        NrCVal d = nr_cv_dtype((NrDtype)t->dtype, t->ptr);
        char *b = nr_sprintf(s->a, "%s[", nr_cv_str_of(s->a, &d));
        for (int i = 0; i < t->rank; i++) b = nr_sprintf(s->a, "%s%s%d", b, i ? ", " : "", t->shape[i]);
        return nr_sprintf(s->a, "%s]", b);
    }
    case V_TUPLE: {
        char *b = nr_strdup(s->a, "(");
        for (int i = 0; i < v.tup.n; i++) b = nr_sprintf(s->a, "%s%s%s", b, i ? ", " : "", val_str(s, v.tup.v[i], true));
        return nr_sprintf(s->a, "%s%s)", b, v.tup.n == 1 ? "," : "");
    }
    default: return (char *)nr_sm_val_kind(s, v);
    }
}

static Val h_static_print(Sema *s, const SmCall *c) {
    const char *sep = arg_str(s, c, 1);
    Val vals = c->arg[0];
    char *text = nr_strdup(s->a, "");
    for (int i = 0; i < vals.tup.n; i++) text = nr_sprintf(s->a, "%s%s%s", text, i ? sep : "", val_str(s, vals.tup.v[i], false));
    nr_note(s->d, c->loc, "%s", text);
    return none_val();
}

static Val h_static_assert(Sema *s, const SmCall *c) {
    Val v = c->arg[0];
    if (v.k == V_IR)
        nr_sm_fail(s, c->argloc[0], "the condition of tl.static_assert must be a compile-time constant, got %s",
                   nr_sm_val_kind(s, v));
    bool ok = v.k == V_CONST ? nr_cv_truthy(&v.c) : v.k == V_TUPLE ? v.tup.n > 0 : true;
    if (!ok) {
        Val m = c->arg[1];
        const char *msg = m.k == V_CONST ? nr_cv_str_of(s->a, &m.c) : val_str(s, m, false);
        if (*msg) nr_sm_fail(s, c->loc, "static_assert failed: %s", msg);
        nr_sm_fail(s, c->loc, "static_assert failed");
    }
    return none_val();
}

static Val h_device_assert(Sema *s, const SmCall *c) {
    nr_sm_no_effects(s, c->loc, "tl.device_assert");
    const char *msg = c->arg[1].k == V_CONST ? nr_cv_str_of(s->a, &c->arg[1].c) : "";
    if (c->arg[0].k == V_CONST && nr_cv_truthy(&c->arg[0].c)) return none_val();
    NrValId cond = arg_ir(s, c, 0);
    if (ptr_of(s, cond) || dtype_of(s, cond) != NR_DT_I1) cond = nr_sm_cast(s, c->argloc[0], cond, NR_DT_I1, 0, NULL);
    if (!is_none(c, 2)) {
        NrValId m = mask_arg(s, c, 2);
        Val nm = nr_sm_unop(s, c->loc, NR_UN_INVERT, v_ir(m));
        cond = nr_sm_binop(s, c->loc, NR_BIN_BITOR, v_ir(cond), nm).ir;
    }
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_ASSERT, 1, &cond, 0, NULL, 0);
    nr_op_set_str(s->fn->f, op, NR_A_MSG, msg);
    return none_val();
}

static bool all_const(Val v) {
    if (v.k == V_IR) return false;
    if (v.k == V_TUPLE)
        for (int i = 0; i < v.tup.n; i++)
            if (!all_const(v.tup.v[i])) return false;
    return true;
}

static Val h_constexpr(Sema *s, const SmCall *c) {
    if (!all_const(c->arg[0]))
        nr_sm_fail(s, c->argloc[0], "tl.constexpr() takes a compile-time value, got %s", nr_sm_val_kind(s, c->arg[0]));
    return c->arg[0];
}

/* tl.tuple(values): the tuple of the values of a list or tuple. */
static Val h_tuple(Sema *s, const SmCall *c) {
    Val v = c->arg[0];
    if (v.k != V_TUPLE || v.tup.desc)
        nr_sm_fail(s, c->argloc[0], "tl.tuple takes a list or tuple of values, got %s", nr_sm_val_kind(s, v));
    Val t = nr_sm_tuple(s, v.tup.n);
    for (int i = 0; i < v.tup.n; i++) t.tup.v[i] = v.tup.v[i];
    return t;
}

static Val h_pointer_type(Sema *s, const SmCall *c) {
    NrCVal dt = arg_dtype(s, c, 0);
    return v_const(nr_cv_dtype(dt.dt, dt.ptr + 1));
}

static Val h_range_outside(Sema *s, const SmCall *c) {
    nr_sm_fail(s, c->loc, "%s can only be used as the iterable of a for loop", BN(c));
}

/* --- Python builtins ------------------------------------------------------------------------------ */
static Val h_py_minmax(Sema *s, const SmCall *c) {
    bool is_max = c->bi->arg;
    Val args = c->arg[0];
    if (args.tup.n == 1 && args.tup.v[0].k == V_TUPLE) args = args.tup.v[0];
    if (args.tup.n == 0) nr_sm_fail(s, c->loc, "%s expected at least 1 argument", BN(c));
    if (all_const(args)) {
        if (c->given[1]) nr_sm_fail(s, c->loc, "propagate_nan is not supported by %s on constexprs", BN(c));
        Val best = args.tup.v[0];
        for (int i = 1; i < args.tup.n; i++) {
            Val v = args.tup.v[i];
            if (v.k != V_CONST || best.k != V_CONST) nr_sm_fail(s, c->loc, "%s takes numbers", BN(c));
            NrCVal r = nr_cv_compare(s, c->loc, is_max ? NR_CMP_GT : NR_CMP_LT, &v.c, &best.c);
            if (r.b) best = v;
        }
        return best;
    }
    if (args.tup.n < 2) nr_sm_fail(s, c->loc, "%s requires at least 2 values", BN(c));
    bool all = c->given[1] && arg_nan_all(s, c, 1);
    Val r = args.tup.v[0];
    for (int i = 1; i < args.tup.n; i++)
        r = v_ir(minmax(s, c->loc, is_max, r, args.tup.v[i], all, is_max ? "max" : "min"));
    return r;
}

static NrCVal arg_const(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k == V_IR)
        nr_sm_fail(s, c->argloc[i], "%s() of a tensor is not supported (use x.to(...) to convert tensors)", BN(c));
    if (v.k != V_CONST) nr_sm_fail(s, c->argloc[i], "%s() does not take %s", BN(c), nr_sm_val_kind(s, v));
    return v.c;
}

static Val h_py_int(Sema *s, const SmCall *c) {
    NrCVal v = arg_const(s, c, 0);
    switch (v.kind) {
    case NR_CV_INT: return v_const(v);
    case NR_CV_BOOL: return v_const(nr_cv_int(v.b));
    case NR_CV_FLOAT:
        if (isnan(v.f) || isinf(v.f)) nr_sm_fail(s, c->loc, "cannot convert float %s to an integer", nr_cv_str_of(s->a, &v));
        if (v.f >= 0x1p64 || v.f < -0x1p63) nr_sm_fail(s, c->loc, "int(%s) is out of range", nr_cv_str_of(s->a, &v));
        return v_const(v.f >= 0x1p63 ? nr_cv_uint((uint64_t)v.f) : nr_cv_int((int64_t)v.f));
    case NR_CV_STR: {
        const char *p = v.str.s, *e = v.str.s + v.str.len;
        while (p < e && isspace((unsigned char)*p)) p++;
        while (e > p && isspace((unsigned char)e[-1])) e--;
        NrCVal r;
        const char *err;
        size_t pos;
        bool dec = e > p;
        for (const char *q = p; q < e; q++)
            if (!(isdigit((unsigned char)*q) || *q == '_' || ((*q == '-' || *q == '+') && q == p))) dec = false;
        if (!dec || !nr_cv_parse_literal(s->a, p, (size_t)(e - p), &r, &err, &pos) || r.kind != NR_CV_INT)
            nr_sm_fail(s, c->loc, "invalid literal for int(): '%s'", nr_cv_str_of(s->a, &v));
        return v_const(r);
    }
    default: nr_sm_fail(s, c->loc, "int() does not take %s", nr_sm_val_kind(s, c->arg[0]));
    }
}

static Val h_py_float(Sema *s, const SmCall *c) {
    NrCVal v = arg_const(s, c, 0);
    if (v.kind == NR_CV_INT || v.kind == NR_CV_BOOL || v.kind == NR_CV_FLOAT) return v_const(nr_cv_float(nr_cv_as_double(&v)));
    if (v.kind != NR_CV_STR) nr_sm_fail(s, c->loc, "float() does not take %s", nr_sm_val_kind(s, c->arg[0]));
    char buf[128];
    const char *p = v.str.s, *e = v.str.s + v.str.len;
    while (p < e && isspace((unsigned char)*p)) p++;
    while (e > p && isspace((unsigned char)e[-1])) e--;
    size_t n = (size_t)(e - p);
    bool ok = n > 0 && n < sizeof buf;
    for (size_t i = 0; ok && i < n; i++) {
        char ch = (char)tolower((unsigned char)p[i]);
        ok = isdigit((unsigned char)ch) || strchr(".e+-_infaty", ch) != NULL;
        buf[i] = ch;
    }
    if (ok) {
        buf[n] = 0;
        char *q = buf, *end;
        bool neg = false;
        if (*q == '+' || *q == '-') neg = *q++ == '-';
        double d;
        if (strcmp(q, "inf") == 0 || strcmp(q, "infinity") == 0) d = INFINITY;
        else if (strcmp(q, "nan") == 0) d = NAN;
        else {
            errno = 0;
            d = isdigit((unsigned char)*q) || *q == '.' ? strtod(q, &end) : 0;
            ok = (isdigit((unsigned char)*q) || *q == '.') && *end == 0;
        }
        if (ok) return v_const(nr_cv_float(neg ? -d : d));
    }
    nr_sm_fail(s, c->loc, "could not convert string to float: '%s'", nr_cv_str_of(s->a, &v));
}

static Val h_py_bool(Sema *s, const SmCall *c) {
    Val v = c->arg[0];
    if (v.k == V_IR) nr_sm_fail(s, c->argloc[0], "bool() of a tensor is not supported; compare it instead (x != 0)");
    if (v.k == V_TUPLE) return v_const(nr_cv_bool(v.tup.n > 0));
    if (v.k == V_CONST) return v_const(nr_cv_bool(nr_cv_truthy(&v.c)));
    return v_const(nr_cv_bool(true));
}

static Val h_py_len(Sema *s, const SmCall *c) {
    Val v = c->arg[0];
    if (v.k == V_TUPLE) return v_const(nr_cv_int(v.tup.n));
    if (v.k == V_CONST && v.c.kind == NR_CV_STR) return v_const(nr_cv_int((int64_t)v.c.str.len));
    nr_sm_fail(s, c->argloc[0], "len() of %s is not supported (use x.shape[0] for blocks)", nr_sm_val_kind(s, v));
}

static Val h_py_print(Sema *s, const SmCall *c) {
    Val args = c->arg[0];
    if (args.tup.n == 0 || args.tup.v[0].k != V_CONST || args.tup.v[0].c.kind != NR_CV_STR)
        nr_sm_fail(s, c->loc, "print in a kernel is tl.device_print: its first argument must be a string prefix");
    const Builtin *dp = nr_sm_find_builtin("device_print", SM_IN_TL);
    Val hex = c->arg[1];
    return nr_sm_call_builtin(s, c->loc, dp, NULL, args.tup.n, args.tup.v, NULL, 1, (const char *[]){"hex"}, &hex, NULL);
}

/* --- dtype methods -------------------------------------------------------------------------------- */
static Val h_dtype_method(Sema *s, const SmCall *c) {
    Val self = c->arg[0];
    const char *m = c->bi->name;
    bool is_type = self.k == V_TYPE;
    NrDtype dt = NR_DT_INVALID;
    int ptr = 0;
    if (is_type) {
        const NrType *t = nr_type(s->m, self.type);
        dt = (NrDtype)t->dtype;
        ptr = t->ptr;
        if (strcmp(m, "is_block") == 0) return v_const(nr_cv_bool(t->rank > 0));
        if (t->rank > 0 && strcmp(m, "is_ptr") == 0) return v_const(nr_cv_bool(false));
    } else {
        dt = self.c.dt;
        ptr = self.c.ptr;
    }
    if (strcmp(m, "is_ptr") == 0) return v_const(nr_cv_bool(ptr > 0));
    if (strcmp(m, "is_block") == 0 || strcmp(m, "is_const") == 0 || strcmp(m, "is_void") == 0 || ptr > 0)
        return v_const(nr_cv_bool(false));
    bool r;
    if (strcmp(m, "is_floating") == 0) r = nr_dt_is_float(dt);
    else if (strcmp(m, "is_standard_floating") == 0) r = dt == NR_DT_F16 || dt == NR_DT_BF16 || dt == NR_DT_F32 || dt == NR_DT_F64;
    else if (strcmp(m, "is_int") == 0) r = nr_dt_is_int(dt);
    else if (strcmp(m, "is_int_signed") == 0) r = nr_dt_is_signed(dt);
    else if (strcmp(m, "is_int_unsigned") == 0) r = dt == NR_DT_I1 || nr_dt_is_unsigned(dt);
    else if (strcmp(m, "is_bool") == 0 || strcmp(m, "is_int1") == 0) r = dt == NR_DT_I1;
    else if (strcmp(m, "is_fp8") == 0) r = nr_dt_is_fp8(dt);
    else if (strcmp(m, "is_fp8e4nv") == 0) r = dt == NR_DT_F8E4NV;
    else if (strcmp(m, "is_fp8e5") == 0) r = dt == NR_DT_F8E5;
    else if (strcmp(m, "is_fp16") == 0) r = dt == NR_DT_F16;
    else if (strcmp(m, "is_bf16") == 0) r = dt == NR_DT_BF16;
    else if (strcmp(m, "is_fp32") == 0) r = dt == NR_DT_F32;
    else if (strcmp(m, "is_fp64") == 0) r = dt == NR_DT_F64;
    else if (strncmp(m, "is_int", 6) == 0 || strncmp(m, "is_uint", 7) == 0)
        r = strcmp(m + 3, nr_dtype_info[dt].triton) == 0;
    else r = false; /* fp8e4b15 and the other formats Nereid does not have */
    return v_const(nr_cv_bool(r));
}

/* --- the table ------------------------------------------------------------------------------------ */
#define TL SM_IN_TL
#define MATH SM_IN_MATH
#define TRI SM_IN_TRITON
#define PY SM_IN_PY
#define TEN SM_IN_TENSOR
#define DT SM_IN_DTYPE

static const Builtin builtins[] = {
    /* programming model */
    {"program_id", TL, "axis", h_program_id, NR_OP_PROGRAM_ID, NULL},
    {"num_programs", TL, "axis", h_program_id, NR_OP_NUM_PROGRAMS, NULL},
    /* creation */
    {"arange", TL, "start, end", h_arange, 0, NULL},
    {"full", TL, "shape, value, dtype", h_full, 0, NULL},
    {"zeros", TL, "shape, dtype", h_zeros, 0, NULL},
    {"zeros_like", TL, "input", h_zeros_like, 0, NULL},
    {"cdiv", TL | TRI | TEN, "x, div", h_cdiv, 0, NULL},
    {"next_power_of_2", TRI, "n", h_next_pow2, 0, NULL},
    /* memory */
    {"load", TL, "pointer, mask=None, other=None, boundary_check=(), padding_option='', cache_modifier='', "
                 "eviction_policy='', volatile=False",
     h_load, 0, NULL},
    {"store", TL | TEN, "pointer, value, mask=None, boundary_check=(), cache_modifier='', eviction_policy=''", h_store,
     0, NULL},
    {"atomic_add", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 0, NULL},
    {"atomic_max", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 1, NULL},
    {"atomic_min", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 2, NULL},
    {"atomic_and", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 3, NULL},
    {"atomic_or", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 4, NULL},
    {"atomic_xor", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 5, NULL},
    {"atomic_xchg", TL | TEN, "pointer, val, mask=None, sem=None, scope=None", h_atomic, 6, NULL},
    {"atomic_cas", TL | TEN, "pointer, cmp, val, sem=None, scope=None", h_atomic_cas, 0, NULL},
    /* arithmetic */
    {"where", TL, "condition, x, y", h_where, 0, NULL},
    {"maximum", TL, "x, y, propagate_nan=0", h_minmax, 1, NULL},
    {"minimum", TL, "x, y, propagate_nan=0", h_minmax, 0, NULL},
    {"clamp", TL, "x, min, max, propagate_nan=0", h_clamp, 0, NULL},
    {"add", TL, "x, y, sanitize_overflow=True", h_binop, NR_BIN_ADD, NULL},
    {"sub", TL, "x, y, sanitize_overflow=True", h_binop, NR_BIN_SUB, NULL},
    {"mul", TL, "x, y, sanitize_overflow=True", h_binop, NR_BIN_MUL, NULL},
    {"exp", TL | MATH | TEN, "x", h_math1, NR_OP_EXP, NULL},
    {"exp2", TL | MATH | TEN, "x", h_math1, NR_OP_EXP2, NULL},
    {"log", TL | MATH | TEN, "x", h_math1, NR_OP_LOG, NULL},
    {"log2", TL | MATH | TEN, "x", h_math1, NR_OP_LOG2, NULL},
    {"cos", TL | MATH | TEN, "x", h_math1, NR_OP_COS, NULL},
    {"sin", TL | MATH | TEN, "x", h_math1, NR_OP_SIN, NULL},
    {"sqrt", TL | MATH | TEN, "x", h_math1, NR_OP_SQRT, NULL},
    {"sqrt_rn", TL | MATH | TEN, "x", h_math1, NR_OP_SQRT_RN, NULL},
    {"rsqrt", TL | MATH | TEN, "x", h_math1, NR_OP_RSQRT, NULL},
    {"erf", TL | MATH | TEN, "x", h_math1, NR_OP_ERF, NULL},
    {"floor", TL | MATH | TEN, "x", h_math1, NR_OP_FLOOR, NULL},
    {"ceil", TL | MATH | TEN, "x", h_math1, NR_OP_CEIL, NULL},
    {"abs", TL | MATH | TEN, "x", h_abs, 0, NULL},
    {"fdiv", TL | MATH, "x, y, ieee_rounding=False", h_fdiv, 0, NULL},
    {"div_rn", TL | MATH, "x, y", h_div_rn, 0, NULL},
    {"fma", TL | MATH, "x, y, z", h_fma, 0, NULL},
    {"umulhi", TL | MATH, "x, y", h_umulhi, 0, NULL},
    {"sigmoid", TL | TEN, "x", h_sigmoid, 0, NULL},
    {"softmax", TL | TEN, "x, dim=None, keep_dims=False, ieee_rounding=False", h_softmax, 0, NULL},
    {"swizzle2d", TL, "i, j, size_i, size_j, size_g", h_swizzle2d, 0, NULL},
    /* random numbers */
    {"randint", TL, "seed, offset, n_rounds=10", h_random, 0, NULL},
    {"randint4x", TL, "seed, offset, n_rounds=10", h_random, 1, NULL},
    {"rand", TL, "seed, offset, n_rounds=10", h_random, 2, NULL},
    {"rand4x", TL, "seed, offsets, n_rounds=10", h_random, 3, NULL},
    {"randn", TL, "seed, offset, n_rounds=10", h_random, 4, NULL},
    {"randn4x", TL, "seed, offset, n_rounds=10", h_random, 5, NULL},
    {"philox", TL, "seed, c0, c1, c2, c3, n_rounds=10", h_philox, 0, NULL},
    {"philox_impl", TL, "c0, c1, c2, c3, k0, k1, n_rounds=10", h_philox_impl, 0, NULL},
    {"uint_to_uniform_float", TL, "x", h_uniform, 0, NULL},
    {"pair_uniform_to_normal", TL, "u1, u2", h_normal_pair, 0, NULL},
    /* reductions */
    {"sum", TL | TEN, "input, axis=None, keep_dims=False, dtype=None", h_sum, 0, NULL},
    {"max", TL | TEN, "input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False",
     h_maxmin_reduce, 1, NULL},
    {"min", TL | TEN, "input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False",
     h_maxmin_reduce, 0, NULL},
    {"argmax", TL | TEN, "input, axis, tie_break_left=True, keep_dims=False", h_argmaxmin, 1, NULL},
    {"argmin", TL | TEN, "input, axis, tie_break_left=True, keep_dims=False", h_argmaxmin, 0, NULL},
    {"xor_sum", TL | TEN, "input, axis=None, keep_dims=False", h_int_reduce, 0, "xor"},
    {"reduce_or", TL | TEN, "input, axis, keep_dims=False", h_int_reduce, 0, "or"},
    {"reduce", TL | TEN, "input, axis, combine_fn, keep_dims=False", h_reduce, 0, NULL},
    {"associative_scan", TL | TEN, "input, axis, combine_fn, reverse=False", h_associative_scan, 0, NULL},
    {"cumsum", TL | TEN, "input, axis=0, reverse=False, dtype=None", h_cumulative, 0, NULL},
    {"cumprod", TL | TEN, "input, axis=0, reverse=False", h_cumulative, 1, NULL},
    /* linear algebra */
    {"dot", TL, "input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, "
                "out_dtype=tl.float32",
     h_dot, 0, NULL},
    /* shapes */
    {"reshape", TL | TEN, "input, *shape, can_reorder=False", h_reshape, 0, NULL},
    {"view", TL | TEN, "input, *shape", h_reshape, 1, NULL},
    {"ravel", TL | TEN, "x, can_reorder=False", h_ravel, 0, NULL},
    {"trans", TL | TEN, "input, *dims", h_permute, 1, NULL},
    {"permute", TL | TEN, "input, *dims", h_permute, 0, NULL},
    {"expand_dims", TL | TEN, "input, axis", h_expand_dims, 0, NULL},
    {"broadcast_to", TL | TEN, "input, *shape", h_broadcast_to, 0, NULL},
    {"broadcast", TL, "input, other", h_broadcast, 0, NULL},
    {"join", TL, "a, b", h_join, 0, NULL},
    {"split", TL | TEN, "a", h_split, 0, NULL},
    {"interleave", TL, "a, b", h_interleave, 0, NULL},
    {"cat", TL, "input, other, can_reorder=False", h_cat, 0, NULL},
    {"flip", TL | TEN, "x, dim=None", h_flip, 0, NULL},
    {"sort", TL | TEN, "x, dim=None, descending=0", h_sort, 0, NULL},
    {"gather", TL | TEN, "src, index, axis", h_gather, 0, NULL},
    {"histogram", TL | TEN, "input, num_bins, mask=None", h_histogram, 0, NULL},
    {"topk", TL, "x, k, dim=None", h_topk, 0, NULL},
    {"bitonic_merge", TL, "x, dim=None, descending=0", h_bitonic_merge, 0, NULL},
    {"cast", TL | TEN, "input, dtype, fp_downcast_rounding=None, bitcast=False", h_cast, 0, NULL},
    {"item", TEN, "input", h_item, 0, NULL},
    {"to", TEN, "input, dtype, fp_downcast_rounding=None, bitcast=False", h_cast, 0, NULL},
    /* hints and debugging */
    {"multiple_of", TL, "input, values", h_hint, 0, NULL},
    {"max_contiguous", TL, "input, values", h_hint, 1, NULL},
    {"max_constancy", TL, "input, values", h_hint, 2, NULL},
    {"assume", TL, "cond", h_assume, 0, NULL},
    {"debug_barrier", TL, "", h_barrier, 0, NULL},
    {"device_print", TL, "prefix, *args, hex=False", h_device_print, 0, NULL},
    {"static_print", TL, "*values, sep=' ', end='\\n', file=None, flush=False", h_static_print, 0, NULL},
    {"static_assert", TL, "cond, msg=''", h_static_assert, 0, NULL},
    {"device_assert", TL, "cond, msg='', mask=None", h_device_assert, 0, NULL},
    {"constexpr", TL, "value", h_constexpr, 0, NULL},
    {"tuple", TL, "args, type=None", h_tuple, 0, NULL},
    {"pointer_type", TL, "element_ty, address_space=1, const=False", h_pointer_type, 0, NULL},
    {"range", TL, "arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None, "
                  "disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False",
     h_range_outside, 0, NULL},
    {"static_range", TL, "arg1, arg2=None, step=None", h_range_outside, 0, NULL},
    /* Python builtins */
    {"range", PY, "start, stop=None, step=None", h_range_outside, 0, NULL},
    {"min", PY, "*args, propagate_nan=0", h_py_minmax, 0, NULL},
    {"max", PY, "*args, propagate_nan=0", h_py_minmax, 1, NULL},
    {"int", PY, "x", h_py_int, 0, NULL},
    {"float", PY, "x", h_py_float, 0, NULL},
    {"bool", PY, "x", h_py_bool, 0, NULL},
    {"len", PY, "obj", h_py_len, 0, NULL},
    {"print", PY, "*args, hex=False", h_py_print, 0, NULL},
    /* dtype methods */
#define DTM(n) {n, DT, "self", h_dtype_method, 0, NULL}
    DTM("is_ptr"), DTM("is_block"), DTM("is_const"), DTM("is_void"), DTM("is_floating"), DTM("is_standard_floating"),
    DTM("is_int"), DTM("is_int_signed"), DTM("is_int_unsigned"), DTM("is_bool"), DTM("is_int1"), DTM("is_int8"),
    DTM("is_int16"), DTM("is_int32"), DTM("is_int64"), DTM("is_uint8"), DTM("is_uint16"), DTM("is_uint32"),
    DTM("is_uint64"), DTM("is_fp8"), DTM("is_fp8e4nv"), DTM("is_fp8e5"), DTM("is_fp8e4b15"), DTM("is_fp8e4b8"),
    DTM("is_fp8e5b16"), DTM("is_fp16"), DTM("is_bf16"), DTM("is_fp32"), DTM("is_fp64"),
#undef DTM
};

#undef TL
#undef MATH
#undef TRI
#undef PY
#undef TEN
#undef DT

/* Triton functions Nereid does not implement (a precise error instead of "not a function"). */
static const char *const unsupported_tl[] = {
    "make_block_ptr", "advance",
    "dot_scaled", "extern_elementwise", "condition", "tensor_descriptor",
    "float8e4b15", "float8e4b8", "float8e5b16", "tensor", "dtype", "block_type", "tuple_type", "slice",
    "void", "const", "constexpr_type", "pi32_t", "target_info",
};

const Builtin *nr_sm_find_builtin(const char *name, unsigned where) {
    if (where & SM_IN_LIBDEVICE) {
        const Builtin *bi = nr_sm_find_libdevice(name);
        if (bi) return bi;
    }
    if (where & SM_IN_TL) {
        const Builtin *bi = nr_sm_find_desc_builtin(name);
        if (!bi) bi = nr_sm_find_escape_builtin(name);
        if (bi) return bi;
    }
    for (size_t i = 0; i < NR_COUNTOF(builtins); i++)
        if ((builtins[i].where & where) && strcmp(builtins[i].name, name) == 0) return &builtins[i];
    return NULL;
}

const char *nr_sm_module_name(SmModule mod) {
    switch (mod) {
    case SM_MOD_TRITON: return "triton";
    case SM_MOD_TL: return "tl";
    case SM_MOD_MATH: return "tl.math";
    case SM_MOD_EXTRA: return "tl.extra";
    case SM_MOD_EXTRA_CUDA: return "tl.extra.cuda";
    case SM_MOD_LIBDEVICE: return "libdevice";
    case SM_MOD_PNAN: return "tl.PropagateNan";
    case SM_MOD_HOST: return "(host)";
    case SM_MOD_NONE: break;
    }
    return "?";
}

const char *nr_sm_builtin_name(Sema *s, const Builtin *bi) {
    if (bi->where & SM_IN_TL) return nr_sprintf(s->a, "tl.%s", bi->name);
    if (bi->where & SM_IN_MATH) return nr_sprintf(s->a, "tl.math.%s", bi->name);
    if (bi->where & SM_IN_LIBDEVICE) return nr_sprintf(s->a, "libdevice.%s", bi->name);
    if (bi->where & SM_IN_TRITON) return nr_sprintf(s->a, "triton.%s", bi->name);
    if (bi->where & SM_IN_PY) return bi->name;
    if (bi->where & SM_IN_TENSOR) return nr_sprintf(s->a, "tensor.%s", bi->name);
    return nr_sprintf(s->a, "dtype.%s", bi->name);
}

bool nr_sm_is_range_builtin(const Val *v, int *kind) {
    if (v->k != V_BUILTIN || v->bi.self) return false;
    const Builtin *bi = v->bi.bi;
    if (bi->fn != h_range_outside) return false;
    *kind = strcmp(bi->name, "static_range") == 0 ? SM_RANGE_STATIC : (bi->where & SM_IN_PY) ? SM_RANGE_PY : SM_RANGE_TL;
    return true;
}

Val nr_sm_call_builtin(Sema *s, NrLoc loc, const Builtin *bi, const Val *self, int nargs, const Val *args,
                       const NrLoc *arglocs, int nkw, const char *const *kwnames, const Val *kwargs,
                       const NrLoc *kwlocs) {
    SmCall c;
    nr_sm_bind_args(s, loc, bi, self, nargs, args, arglocs, nkw, kwnames, kwargs, kwlocs, &c);
    if (!s->fn && bi->fn != h_constexpr && bi->fn != h_pointer_type && bi->fn != h_py_minmax && bi->fn != h_py_int &&
        bi->fn != h_py_float && bi->fn != h_py_bool && bi->fn != h_py_len && bi->fn != h_cdiv &&
        bi->fn != h_next_pow2 && bi->fn != h_dtype_method && bi->fn != h_binop)
        nr_sm_fail(s, loc, "%s must be a compile-time constant; it cannot call %s", s->const_what,
                   nr_sm_builtin_name(s, bi));
    return bi->fn(s, &c);
}

static Val builtin_val(const Builtin *bi, const Val *self) {
    Val v;
    v.k = V_BUILTIN;
    v.bi.bi = bi;
    v.bi.self = self;
    return v;
}

static Val module_val(SmModule m) {
    Val v;
    v.k = V_MODULE;
    v.mod = m;
    return v;
}

static bool name_in(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0) return true;
    return false;
}

Val nr_sm_module_attr(Sema *s, NrLoc loc, SmModule mod, const char *name) {
    unsigned where = 0;
    switch (mod) {
    case SM_MOD_TL:
        if (strcmp(name, "math") == 0) return module_val(SM_MOD_MATH);
        if (strcmp(name, "extra") == 0) return module_val(SM_MOD_EXTRA);
        if (strcmp(name, "PropagateNan") == 0) return module_val(SM_MOD_PNAN);
        if (strcmp(name, "TRITON_MAX_TENSOR_NUMEL") == 0) return v_const(nr_cv_int(SM_MAX_BLOCK_NUMEL));
        if (strcmp(name, "float8e4nv") == 0 || strcmp(name, "float8e5") == 0 || nr_dtype_from_triton(name, strlen(name)))
            return v_const(nr_cv_dtype(nr_dtype_from_triton(name, strlen(name)), 0));
        where = SM_IN_TL;
        break;
    case SM_MOD_MATH: where = SM_IN_MATH; break;
    case SM_MOD_LIBDEVICE: where = SM_IN_LIBDEVICE; break;
    case SM_MOD_TRITON:
        if (strcmp(name, "language") == 0) return module_val(SM_MOD_TL);
        if (strcmp(name, "jit") == 0) nr_sm_fail(s, loc, "triton.jit cannot be used inside a kernel");
        where = SM_IN_TRITON;
        break;
    case SM_MOD_EXTRA:
        if (strcmp(name, "cuda") == 0) return module_val(SM_MOD_EXTRA_CUDA);
        if (strcmp(name, "libdevice") == 0) return module_val(SM_MOD_LIBDEVICE);
        break;
    case SM_MOD_EXTRA_CUDA:
        if (strcmp(name, "libdevice") == 0) return module_val(SM_MOD_LIBDEVICE);
        break;
    case SM_MOD_PNAN:
        if (strcmp(name, "ALL") == 0) return v_const(nr_cv_int(0xffff));
        if (strcmp(name, "NONE") == 0) return v_const(nr_cv_int(0));
        break;
    default: break;
    }
    const Builtin *bi = where ? nr_sm_find_builtin(name, where) : NULL;
    if (bi) return builtin_val(bi, NULL);
    const char *mn = nr_sm_module_name(mod);
    static const char *const block_ptr_fns[] = {"make_block_ptr", "advance"};
    if (mod == SM_MOD_TL && name_in(name, block_ptr_fns, NR_COUNTOF(block_ptr_fns)))
        nr_sm_fail(s, loc, "block pointers are not supported yet (tl.%s); tensor descriptors "
                           "(tl.make_tensor_descriptor) are",
                   name);
    if (mod == SM_MOD_TL && name_in(name, unsupported_tl, NR_COUNTOF(unsupported_tl)))
        nr_sm_fail(s, loc, "tl.%s is not supported by Nereid yet", name);
    static const char *const full[] = {[SM_MOD_TRITON] = "triton", [SM_MOD_TL] = "triton.language",
                                       [SM_MOD_MATH] = "triton.language.math", [SM_MOD_EXTRA] = "triton.language.extra",
                                       [SM_MOD_EXTRA_CUDA] = "triton.language.extra.cuda",
                                       [SM_MOD_LIBDEVICE] = "libdevice", [SM_MOD_PNAN] = "tl.PropagateNan"};
    const char *fm = mod < (int)NR_COUNTOF(full) && full[mod] ? full[mod] : mn;
    if (mod == SM_MOD_LIBDEVICE)
        nr_sm_fail(s, loc, "'libdevice.%s' is not a libdevice function Nereid supports", name);
    nr_sm_fail(s, loc, "'%s.%s' is not a function of %s", mn, name, fm);
}

Val nr_sm_tensor_attr(Sema *s, NrLoc loc, Val x, const char *name) {
    const NrType *t = nr_sm_type(s, x.ir);
    if (strcmp(name, "dtype") == 0) return v_const(nr_cv_dtype((NrDtype)t->dtype, t->ptr));
    if (strcmp(name, "shape") == 0) {
        Val r = nr_sm_tuple(s, t->rank);
        for (int i = 0; i < t->rank; i++) r.tup.v[i] = v_const(nr_cv_int(t->shape[i]));
        return r;
    }
    if (strcmp(name, "numel") == 0) return v_const(nr_cv_int(nr_type_numel(s->m, nr_sm_tid(s, x.ir))));
    if (strcmp(name, "type") == 0) {
        if (t->rank == 0) return v_const(nr_cv_dtype((NrDtype)t->dtype, t->ptr));
        Val v;
        v.k = V_TYPE;
        v.type = nr_sm_tid(s, x.ir);
        return v;
    }
    if (strcmp(name, "T") == 0) {
        if (t->rank != 2) nr_sm_fail(s, loc, ".T needs a 2-D block, got %s", nr_sm_val_kind(s, x));
        return v_ir(permute(s, loc, x.ir, 2, (int64_t[]){1, 0}));
    }
    const Builtin *bi = nr_sm_find_builtin(name, SM_IN_TENSOR);
    if (bi) {
        Val *self = nr_alloc(s->a, sizeof(Val));
        *self = x;
        return builtin_val(bi, self);
    }
    nr_sm_fail(s, loc, "a tensor has no attribute '%s'", name);
}

Val nr_sm_dtype_attr(Sema *s, NrLoc loc, Val x, const char *name) {
    NrDtype dt;
    int ptr;
    if (x.k == V_TYPE) {
        const NrType *t = nr_type(s->m, x.type);
        if (strcmp(name, "shape") == 0) {
            Val r = nr_sm_tuple(s, t->rank);
            for (int i = 0; i < t->rank; i++) r.tup.v[i] = v_const(nr_cv_int(t->shape[i]));
            return r;
        }
        if (strcmp(name, "numel") == 0) return v_const(nr_cv_int(nr_type_numel(s->m, x.type)));
        if (strcmp(name, "scalar") == 0 || strcmp(name, "element_ty") == 0)
            return v_const(nr_cv_dtype((NrDtype)t->dtype, t->ptr));
        dt = (NrDtype)t->dtype;
        ptr = t->ptr;
    } else {
        dt = x.c.dt;
        ptr = x.c.ptr;
        if (strcmp(name, "scalar") == 0) return x;
        if (strcmp(name, "element_ty") == 0) {
            if (!ptr) nr_sm_fail(s, loc, "%s has no attribute 'element_ty' (only pointer dtypes have one)",
                                 nr_dt_name(s->a, dt, 0));
            return v_const(nr_cv_dtype(dt, ptr - 1));
        }
    }
    const Builtin *bi = nr_sm_find_builtin(name, SM_IN_DTYPE);
    if (bi) {
        Val *self = nr_alloc(s->a, sizeof(Val));
        *self = x;
        return builtin_val(bi, self);
    }
    if (x.k == V_CONST && ptr == 0) {
        int bits = nr_dt_bits(dt);
        if (strcmp(name, "primitive_bitwidth") == 0) return v_const(nr_cv_int(bits));
        if (strcmp(name, "itemsize") == 0) return v_const(nr_cv_int(bits / 8));
        if (strcmp(name, "int_bitwidth") == 0 && nr_dt_is_int(dt)) return v_const(nr_cv_int(bits));
        if (strcmp(name, "name") == 0) {
            NrCVal d = nr_cv_dtype(dt, 0);
            const char *n = nr_cv_str_of(s->a, &d);
            return v_const(nr_cv_str(s->a, n, strlen(n)));
        }
        if (nr_dt_is_float(dt) && (strcmp(name, "fp_mantissa_width") == 0 || strcmp(name, "exponent_bias") == 0)) {
            static const int mant[NR_DT_COUNT] = {[NR_DT_F8E4NV] = 3, [NR_DT_F8E5] = 2, [NR_DT_F16] = 10,
                                                  [NR_DT_BF16] = 7, [NR_DT_F32] = 23, [NR_DT_F64] = 52};
            static const int bias[NR_DT_COUNT] = {[NR_DT_F8E4NV] = 7, [NR_DT_F8E5] = 15, [NR_DT_F16] = 15,
                                                  [NR_DT_BF16] = 127, [NR_DT_F32] = 127, [NR_DT_F64] = 1023};
            return v_const(nr_cv_int(name[0] == 'f' ? mant[dt] : bias[dt]));
        }
    }
    if (x.k == V_CONST && ptr > 0 && strcmp(name, "primitive_bitwidth") == 0) return v_const(nr_cv_int(64));
    nr_sm_fail(s, loc, "%s has no attribute '%s'", nr_sm_val_kind(s, x), name);
}
