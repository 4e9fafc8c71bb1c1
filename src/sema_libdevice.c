/* sema_libdevice.c - libdevice.NAME(...): the functions of Triton's
 * triton.language.extra[.cuda].libdevice, reached through any import of that
 * module (`from triton.language.extra import libdevice`, `tl.extra.libdevice`,
 * `tl.extra.cuda.libdevice`, ...).
 *
 * Float functions become one `math {fn = NAME}` op (or the IR op that
 * already means the same: fma, add, div_rn, ...) on fp32 or fp64 operands;
 * integer ones one `imath` op.  Conversions with a rounding mode are casts,
 * with the directed roundings (rz, rd, ru) built from the round-to-nearest
 * cast and an exact comparison that moves the result by one ulp where it
 * went the wrong way.  Bit reinterpretations are bitcasts.
 *
 * Operands follow Triton's extern_elementwise: numbers become tensors of
 * their default dtype (int32, float32) and everything broadcasts.  Where
 * Triton accepts one exact combination of dtypes Nereid also converts float
 * operands to the wider of float32 and float64. */
#include "sema_impl.h"

#include <math.h>
#include <string.h>

#define BN(c) nr_sm_builtin_name(s, (c)->bi)

/* --- operands ----------------------------------------------------------------------------------------- */
static NrDtype dt_of(Sema *s, NrValId x) { return (NrDtype)nr_sm_type(s, x)->dtype; }
static bool is_ptr(Sema *s, NrValId x) { return nr_sm_type(s, x)->ptr > 0; }

static const char *tname(Sema *s, NrValId x) {
    const NrType *t = nr_sm_type(s, x);
    return nr_dt_name(s->a, (NrDtype)t->dtype, t->ptr);
}

/* The call's positional arguments (libdevice functions take exactly n). */
static const Val *args_n(Sema *s, const SmCall *c, int n) {
    Val a = c->arg[0];
    if (a.tup.n != n) nr_sm_fail(s, c->loc, "%s takes %d argument%s, got %d", BN(c), n, n == 1 ? "" : "s", a.tup.n);
    return a.tup.v;
}

/* Broadcast x[0..n) to one shape. */
static void broadcast_all(Sema *s, NrLoc loc, int n, NrValId *x) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 1; i < n; i++) nr_sm_broadcast_pair(s, loc, &x[0], &x[i]);
}

/* Float operands: tensors of float32 or float64 (float32 only if f32),
 * converted to the wider of them and broadcast. */
static NrDtype float_args(Sema *s, const SmCall *c, int n, bool f32, NrValId *x) {
    const Val *a = args_n(s, c, n);
    NrDtype dt = NR_DT_F32;
    for (int i = 0; i < n; i++) {
        x[i] = nr_sm_to_ir(s, c->argloc[0], a[i], nr_sprintf(s->a, "argument %d of %s", i, BN(c)));
        NrDtype d = dt_of(s, x[i]);
        bool ok = !is_ptr(s, x[i]) && (d == NR_DT_F32 || (d == NR_DT_F64 && !f32));
        if (!ok && (is_ptr(s, x[i]) || nr_dt_is_int(d)))
            nr_sm_fail(s, c->argloc[0], "%s does not accept %s; cast to a float type first", BN(c), tname(s, x[i]));
        if (!ok)
            nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes %s (cast with .to(tl.float32))", BN(c),
                       tname(s, x[i]), f32 ? "float32" : "float32 or float64");
        if (d == NR_DT_F64) dt = NR_DT_F64;
    }
    for (int i = 0; i < n; i++) x[i] = nr_sm_cast(s, c->loc, x[i], dt, 0, NULL);
    broadcast_all(s, c->loc, n, x);
    return dt;
}

/* Integer operands of one of the dtypes in `ok` (a bit set over NrDtype),
 * promoted together as Triton's arithmetic does, and broadcast. */
static NrDtype int_args(Sema *s, const SmCall *c, int n, unsigned ok, const char *what, NrValId *x) {
    const Val *a = args_n(s, c, n);
    for (int i = 0; i < n; i++) {
        x[i] = nr_sm_to_ir(s, c->argloc[0], a[i], nr_sprintf(s->a, "argument %d of %s", i, BN(c)));
        NrDtype d = dt_of(s, x[i]);
        if (is_ptr(s, x[i]) || !(ok >> d & 1))
            nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes %s", BN(c), tname(s, x[i]), what);
    }
    for (int i = 1; i < n; i++) nr_sm_binary_prep_tensors(s, c->loc, BN(c), v_ir(x[0]), v_ir(x[i]), &x[0], &x[i]);
    NrDtype dt = dt_of(s, x[0]);
    for (int i = 0; i < n; i++) x[i] = nr_sm_cast(s, c->loc, x[i], dt, 0, NULL);
    broadcast_all(s, c->loc, n, x);
    return dt;
}

#define BIT(d) (1u << (d))
static const unsigned I32S = BIT(NR_DT_I32) | BIT(NR_DT_U32);
static const unsigned INTS = BIT(NR_DT_I32) | BIT(NR_DT_U32) | BIT(NR_DT_I64) | BIT(NR_DT_U64);

/* The one operand of dtype `want` (numbers take their default dtype). */
static NrValId exact_arg(Sema *s, const SmCall *c, NrDtype want) {
    const Val *a = args_n(s, c, 1);
    NrValId x = nr_sm_to_ir(s, c->argloc[0], a[0], nr_sprintf(s->a, "the argument of %s", BN(c)));
    if (is_ptr(s, x) || dt_of(s, x) != want)
        nr_sm_fail(s, c->argloc[0], "%s takes %s, got %s", BN(c), nr_dt_name(s->a, want, 0), tname(s, x));
    return x;
}

/* --- IR helpers ---------------------------------------------------------------------------------------- */
static NrTypeId like(Sema *s, NrValId x, NrDtype dt) {
    return nr_type_with_elem(s->m, nr_sm_tid(s, x), nr_type_scalar(s->m, dt));
}

static NrValId konst(Sema *s, NrLoc l, NrValId shape, NrDtype dt, NrCVal v) {
    return nr_sm_const(s, l, like(s, shape, dt), &v);
}
static NrValId kint(Sema *s, NrLoc l, NrValId shape, NrDtype dt, int64_t v) {
    return konst(s, l, shape, dt, nr_cv_int(v));
}
static NrValId kflt(Sema *s, NrLoc l, NrValId shape, NrDtype dt, double v) {
    return konst(s, l, shape, dt, nr_cv_float(v));
}

static NrValId op1(Sema *s, NrLoc l, NrOpcode opc, NrValId a) { return nr_sm_emit(s, l, opc, nr_sm_tid(s, a), 1, &a); }
static NrValId op2(Sema *s, NrLoc l, NrOpcode opc, NrValId a, NrValId b) {
    return nr_sm_emit(s, l, opc, nr_sm_tid(s, a), 2, (NrValId[]){a, b});
}

static NrValId cmp(Sema *s, NrLoc l, const char *pred, NrValId a, NrValId b) {
    NrTypeId bt = like(s, a, NR_DT_I1);
    NrOpId op = nr_sm_emit_op(s, l, NR_OP_CMP, 2, (NrValId[]){a, b}, 1, &bt, 0);
    nr_op_set_str(s->fn->f, op, NR_A_PRED, pred);
    return nr_op_result(s->fn->f, op, 0);
}

static NrValId sel(Sema *s, NrLoc l, NrValId c, NrValId a, NrValId b) {
    return nr_sm_emit(s, l, NR_OP_SELECT, nr_sm_tid(s, a), 3, (NrValId[]){c, a, b});
}

static NrValId fnop(Sema *s, NrLoc l, NrOpcode opc, const char *fn, int n, const NrValId *x) {
    NrOpId op = nr_sm_emit_op(s, l, opc, n, x, 1, (NrTypeId[]){nr_sm_tid(s, x[0])}, 0);
    nr_op_set_str(s->fn->f, op, NR_A_FN, fn);
    return nr_op_result(s->fn->f, op, 0);
}

/* --- float functions ----------------------------------------------------------------------------------------- */
enum { F32ONLY = 0x100 };

/* The IR op that means the same as libdevice function fn, if any. */
static NrOpcode same_op(const char *fn) {
    static const struct {
        const char *fn;
        NrOpcode opc;
    } t[] = {{"fma", NR_OP_FMA},         {"fma_rn", NR_OP_FMA}, {"add_rn", NR_OP_ADD},     {"sub_rn", NR_OP_SUB},
             {"mul_rn", NR_OP_MUL},      {"div_rn", NR_OP_DIV_RN}, {"sqrt_rn", NR_OP_SQRT_RN}, {"floor", NR_OP_FLOOR},
             {"ceil", NR_OP_CEIL},       {"fabs", NR_OP_ABS},   {"abs", NR_OP_ABS}};
    for (size_t i = 0; i < NR_COUNTOF(t); i++)
        if (strcmp(t[i].fn, fn) == 0) return t[i].opc;
    return NR_OP_INVALID;
}

static Val h_math(Sema *s, const SmCall *c) {
    int n = c->bi->arg & 0xff;
    NrValId x[4];
    float_args(s, c, n, (c->bi->arg & F32ONLY) != 0, x);
    NrOpcode opc = same_op(c->bi->str);
    if (opc != NR_OP_INVALID) return v_ir(nr_sm_emit(s, c->loc, opc, nr_sm_tid(s, x[0]), n, x));
    return v_ir(fnop(s, c->loc, NR_OP_MATH, c->bi->str, n, x));
}

/* abs of ints and floats. */
static Val h_abs(Sema *s, const SmCall *c) {
    const Val *a = args_n(s, c, 1);
    NrValId x = nr_sm_to_ir(s, c->argloc[0], a[0], "the argument of libdevice.abs");
    NrDtype d = dt_of(s, x);
    if (is_ptr(s, x) || !(d == NR_DT_I32 || d == NR_DT_I64 || d == NR_DT_F32 || d == NR_DT_F64))
        nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes int32, int64, float32 or float64", BN(c),
                   tname(s, x));
    return v_ir(op1(s, c->loc, NR_OP_ABS, x));
}

/* pow(x, y): y a float, or an integer (libdevice's powi: the exponent as a float of x's dtype, exact up to 2^24). */
static Val h_pow(Sema *s, const SmCall *c) {
    const Val *a = args_n(s, c, 2);
    NrValId x = nr_sm_to_ir(s, c->argloc[0], a[0], "argument 0 of libdevice.pow");
    if (a[1].k == V_CONST && (a[1].c.kind == NR_CV_INT || a[1].c.kind == NR_CV_BOOL) && !is_ptr(s, x) &&
        (dt_of(s, x) == NR_DT_F32 || dt_of(s, x) == NR_DT_F64)) { /* a constant exponent: a float of x's type */
        NrCVal e = nr_cv_float(a[1].c.kind == NR_CV_BOOL ? a[1].c.b : a[1].c.is_unsigned ? (double)(uint64_t)a[1].c.i
                                                                                         : (double)a[1].c.i);
        NrValId y = nr_sm_const(s, c->loc, nr_sm_tid(s, x), &e);
        return v_ir(fnop(s, c->loc, NR_OP_MATH, "pow", 2, (NrValId[]){x, y}));
    }
    NrValId y = nr_sm_to_ir(s, c->argloc[0], a[1], "argument 1 of libdevice.pow");
    if (!is_ptr(s, y) && nr_dt_is_int(dt_of(s, y)) && !is_ptr(s, x) && nr_dt_is_float(dt_of(s, x))) {
        NrDtype d = dt_of(s, x);
        if (d != NR_DT_F32 && d != NR_DT_F64)
            nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes float32 or float64", BN(c), tname(s, x));
        y = nr_sm_cast(s, c->loc, y, d, 0, NULL);
        nr_sm_broadcast_pair(s, c->loc, &x, &y);
        return v_ir(fnop(s, c->loc, NR_OP_MATH, "pow", 2, (NrValId[]){x, y}));
    }
    NrValId v[2];
    float_args(s, c, 2, false, v);
    return v_ir(fnop(s, c->loc, NR_OP_MATH, "pow", 2, v));
}

/* ldexp / scalbn (x, n): n an int32, clamped (beyond +-3000 nothing changes)
 * and passed as a float of x's dtype. */
static Val h_ldexp(Sema *s, const SmCall *c) {
    const Val *a = args_n(s, c, 2);
    NrValId x = nr_sm_to_ir(s, c->argloc[0], a[0], "argument 0 of libdevice.ldexp");
    NrValId k = nr_sm_to_ir(s, c->argloc[0], a[1], "argument 1 of libdevice.ldexp");
    NrDtype d = dt_of(s, x);
    if (is_ptr(s, x) || (d != NR_DT_F32 && d != NR_DT_F64))
        nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes float32 or float64", BN(c), tname(s, x));
    if (is_ptr(s, k) || !nr_dt_is_int(dt_of(s, k)))
        nr_sm_fail(s, c->argloc[0], "the exponent of %s must be an integer, got %s", BN(c), tname(s, k));
    k = nr_sm_cast(s, c->loc, k, NR_DT_I64, 0, NULL);
    NrOpId mx = nr_sm_emit_op(s, c->loc, NR_OP_MAX, 2, (NrValId[]){k, kint(s, c->loc, k, NR_DT_I64, -3000)}, 1,
                              (NrTypeId[]){nr_sm_tid(s, k)}, 0);
    k = nr_op_result(s->fn->f, mx, 0);
    NrOpId mn = nr_sm_emit_op(s, c->loc, NR_OP_MIN, 2, (NrValId[]){k, kint(s, c->loc, k, NR_DT_I64, 3000)}, 1,
                              (NrTypeId[]){nr_sm_tid(s, k)}, 0);
    k = nr_sm_cast(s, c->loc, nr_op_result(s->fn->f, mn, 0), d, 0, NULL);
    nr_sm_broadcast_pair(s, c->loc, &x, &k);
    return v_ir(fnop(s, c->loc, NR_OP_MATH, "ldexp", 2, (NrValId[]){x, k}));
}

/* saturatef: min(max(x, 0), 1), NaN giving 0 (the max ignores NaN). */
static Val h_saturate(Sema *s, const SmCall *c) {
    NrValId x;
    float_args(s, c, 1, true, &x);
    NrValId r = op2(s, c->loc, NR_OP_MAX, x, kflt(s, c->loc, x, NR_DT_F32, 0.0));
    return v_ir(op2(s, c->loc, NR_OP_MIN, r, kflt(s, c->loc, x, NR_DT_F32, 1.0)));
}

/* fast_dividef: the f32 division the GPU may approximate. */
static Val h_fast_div(Sema *s, const SmCall *c) {
    NrValId x[2];
    float_args(s, c, 2, true, x);
    return v_ir(op2(s, c->loc, NR_OP_DIV, x[0], x[1]));
}

/* rcp64h: 1/x with the low 32 bits of the result cleared (the precision of
 * the hardware's approximation). */
static Val h_rcp64h(Sema *s, const SmCall *c) {
    NrValId x = exact_arg(s, c, NR_DT_F64);
    NrValId r = fnop(s, c->loc, NR_OP_MATH, "rcp", 1, &x);
    NrValId b = nr_sm_bitcast(s, c->loc, r, NR_DT_I64, 0);
    b = op2(s, c->loc, NR_OP_AND, b, kint(s, c->loc, b, NR_DT_I64, (int64_t)0xffffffff00000000ull));
    return v_ir(nr_sm_bitcast(s, c->loc, b, NR_DT_F64, 0));
}

/* isnan, isinf, isfinited, finitef (int1, as Triton's .to(int1)) and signbit (int32). */
static Val h_class(Sema *s, const SmCall *c) {
    NrValId x;
    NrDtype d = float_args(s, c, 1, c->bi->arg == 3, &x);
    if (c->bi->arg == 4) { /* signbit: the sign bit as 0 or 1 */
        NrDtype bt = d == NR_DT_F64 ? NR_DT_I64 : NR_DT_I32;
        NrValId b = nr_sm_bitcast(s, c->loc, x, bt, 0);
        NrValId neg = cmp(s, c->loc, "lt", b, kint(s, c->loc, b, bt, 0));
        return v_ir(nr_sm_cast(s, c->loc, neg, NR_DT_I32, 0, NULL));
    }
    if (c->bi->arg == 0) return v_ir(cmp(s, c->loc, "ne", x, x));
    NrValId ax = op1(s, c->loc, NR_OP_ABS, x), inf = kflt(s, c->loc, x, d, INFINITY);
    return v_ir(cmp(s, c->loc, c->bi->arg == 1 ? "eq" : "lt", ax, inf));
}

/* ilogb: the exponent as int32 (0 and NaN give INT_MIN, infinities INT_MAX). */
static Val h_ilogb(Sema *s, const SmCall *c) {
    NrValId x;
    float_args(s, c, 1, false, &x);
    NrValId e = nr_sm_cast(s, c->loc, fnop(s, c->loc, NR_OP_MATH, "logb", 1, &x), NR_DT_I32, 0, NULL);
    return v_ir(sel(s, c->loc, cmp(s, c->loc, "ne", x, x), kint(s, c->loc, e, NR_DT_I32, INT32_MIN), e));
}

/* llrint, llround: to int64 after rint / round (saturating, NaN -> 0, as cvt does). */
static Val h_llround(Sema *s, const SmCall *c) {
    NrValId x;
    float_args(s, c, 1, false, &x);
    return v_ir(nr_sm_cast(s, c->loc, fnop(s, c->loc, NR_OP_MATH, c->bi->str, 1, &x), NR_DT_I64, 0, NULL));
}

static Val h_unsupported(Sema *s, const SmCall *c) {
    nr_sm_fail(s, c->loc, "%s (Bessel functions) is not supported by Nereid", BN(c));
}

/* --- integer functions -------------------------------------------------------------------------------------- */
/* arg: operands; the str names the imath function.  clz, popc and ffs count
 * in the operand's type and give int32. */
static Val h_imath(Sema *s, const SmCall *c) {
    int n = c->bi->arg & 0xff;
    bool narrow = (c->bi->arg & 0x100) != 0;
    NrValId x[3];
    int_args(s, c, n, narrow ? I32S : INTS, narrow ? "int32 or uint32" : "int32, int64, uint32 or uint64", x);
    const char *fn = c->bi->str;
    NrValId r = fnop(s, c->loc, NR_OP_IMATH, fn, n, x);
    if (!strcmp(fn, "clz") || !strcmp(fn, "popc") || !strcmp(fn, "ffs")) r = nr_sm_cast(s, c->loc, r, NR_DT_I32, 0, NULL);
    return v_ir(r);
}

/* sad(x, y, z): |x - y| + z with z taken in x's type. */
static Val h_sad(Sema *s, const SmCall *c) {
    const Val *a = args_n(s, c, 3);
    NrValId x[3];
    for (int i = 0; i < 3; i++) {
        x[i] = nr_sm_to_ir(s, c->argloc[0], a[i], nr_sprintf(s->a, "argument %d of %s", i, BN(c)));
        if (is_ptr(s, x[i]) || !(I32S >> dt_of(s, x[i]) & 1))
            nr_sm_fail(s, c->argloc[0], "%s does not accept %s; it takes int32 or uint32", BN(c), tname(s, x[i]));
    }
    nr_sm_binary_prep_tensors(s, c->loc, BN(c), v_ir(x[0]), v_ir(x[1]), &x[0], &x[1]);
    x[2] = nr_sm_bitcast(s, c->loc, x[2], dt_of(s, x[0]), 0);
    broadcast_all(s, c->loc, 3, x);
    return v_ir(fnop(s, c->loc, NR_OP_IMATH, "sad", 3, x));
}

/* --- conversions -------------------------------------------------------------------------------------------- */
enum { RN, RZ, RD, RU };
#define CONV(src, dst, mode) ((src) | (dst) << 8 | (mode) << 16)

/* One ulp down / up from float r (from either zero: the smallest subnormal). */
static NrValId ulp_step(Sema *s, NrLoc l, NrValId r, bool up) {
    NrDtype fd = dt_of(s, r), bd = fd == NR_DT_F64 ? NR_DT_I64 : NR_DT_I32;
    NrValId b = nr_sm_bitcast(s, l, r, bd, 0), one = kint(s, l, b, bd, 1);
    NrValId zero = kflt(s, l, r, fd, 0.0);
    NrValId pos = cmp(s, l, "gt", r, zero), neg = cmp(s, l, "lt", r, zero);
    NrValId away = op2(s, l, NR_OP_ADD, b, one), toward = op2(s, l, NR_OP_SUB, b, one);
    int64_t tiny = up ? 1 : (bd == NR_DT_I64 ? INT64_MIN + 1 : (int64_t)INT32_MIN + 1);
    NrValId v = sel(s, l, pos, up ? away : toward, sel(s, l, neg, up ? toward : away, kint(s, l, b, bd, tiny)));
    return nr_sm_bitcast(s, l, v, fd, 0);
}

/* r, the round-to-nearest conversion of x, moved to the directed rounding
 * `mode` given the exact comparisons gt (r > x) and lt (r < x) and whether
 * x is negative. */
static NrValId directed(Sema *s, NrLoc l, NrValId r, NrValId gt, NrValId lt, NrValId xneg, int mode) {
    if (mode == RD) return sel(s, l, gt, ulp_step(s, l, r, false), r);
    if (mode == RU) return sel(s, l, lt, ulp_step(s, l, r, true), r);
    NrValId away = sel(s, l, xneg, lt, gt); /* |r| > |x| */
    NrValId toward = sel(s, l, xneg, ulp_step(s, l, r, true), ulp_step(s, l, r, false));
    return sel(s, l, away, toward, r);
}

/* Integer x to float dt with rounding mode. */
static NrValId int_to_float(Sema *s, NrLoc l, NrValId x, NrDtype dt, int mode) {
    NrValId r = nr_sm_cast(s, l, x, dt, 0, NULL);
    NrDtype sd = dt_of(s, x);
    if (mode == RN || (nr_dt_bits(sd) == 32 && dt == NR_DT_F64)) return r; /* exact */
    NrValId gt, lt;
    if (nr_dt_bits(sd) == 32) { /* both exact in f64 */
        NrValId xf = nr_sm_cast(s, l, x, NR_DT_F64, 0, NULL), rf = nr_sm_cast(s, l, r, NR_DT_F64, 0, NULL);
        gt = cmp(s, l, "gt", rf, xf);
        lt = cmp(s, l, "lt", rf, xf);
    } else { /* in the integers; r may be 2^63 (2^64), one past the range */
        NrValId big = cmp(s, l, "ge", r, kflt(s, l, r, dt, sd == NR_DT_U64 ? 0x1p64 : 0x1p63));
        NrValId ri = nr_sm_cast(s, l, r, sd, 0, NULL);
        gt = op2(s, l, NR_OP_OR, big, cmp(s, l, "gt", ri, x));
        NrValId notbig = cmp(s, l, "eq", big, konst(s, l, big, NR_DT_I1, nr_cv_bool(false)));
        lt = op2(s, l, NR_OP_AND, notbig, cmp(s, l, "lt", ri, x));
    }
    NrValId xneg = nr_dt_is_signed(sd) ? cmp(s, l, "lt", x, kint(s, l, x, sd, 0))
                                       : konst(s, l, x, NR_DT_I1, nr_cv_bool(false));
    return directed(s, l, r, gt, lt, xneg, mode);
}

static Val h_conv(Sema *s, const SmCall *c) {
    NrDtype src = (NrDtype)(c->bi->arg & 0xff), dst = (NrDtype)(c->bi->arg >> 8 & 0xff);
    int mode = c->bi->arg >> 16 & 3;
    NrValId x = exact_arg(s, c, src);
    NrLoc l = c->loc;
    if (nr_dt_is_float(src) && nr_dt_is_float(dst)) { /* double2float */
        if (mode == RN || mode == RZ) return v_ir(nr_sm_cast(s, l, x, dst, 0, mode == RZ ? "rtz" : NULL));
        NrValId r = nr_sm_cast(s, l, x, dst, 0, NULL), rf = nr_sm_cast(s, l, r, src, 0, NULL);
        NrValId xneg = cmp(s, l, "lt", x, kflt(s, l, x, src, 0.0));
        return v_ir(directed(s, l, r, cmp(s, l, "gt", rf, x), cmp(s, l, "lt", rf, x), xneg, mode));
    }
    if (nr_dt_is_float(src)) { /* float to integer: round to an integral value, then the (saturating) cast */
        NrValId t = x;
        if (mode == RN) t = fnop(s, l, NR_OP_MATH, "rint", 1, &x);
        else if (mode == RD) t = op1(s, l, NR_OP_FLOOR, x);
        else if (mode == RU) t = op1(s, l, NR_OP_CEIL, x);
        NrValId r = nr_sm_cast(s, l, t, dst, 0, NULL);
        /* libdevice declares the unsigned results int32 / int64: the same bits */
        if (nr_dt_is_unsigned(dst)) r = nr_sm_bitcast(s, l, r, dst == NR_DT_U32 ? NR_DT_I32 : NR_DT_I64, 0);
        return v_ir(r);
    }
    return v_ir(int_to_float(s, l, x, dst, mode));
}

/* int_as_float and friends: the same bits. */
static Val h_bits(Sema *s, const SmCall *c) {
    NrDtype src = (NrDtype)(c->bi->arg & 0xff), dst = (NrDtype)(c->bi->arg >> 8 & 0xff);
    NrValId x = exact_arg(s, c, src);
    return v_ir(nr_sm_bitcast(s, c->loc, x, dst, 0));
}

/* hiloint2double(hi, lo): the double whose bits are hi:lo. */
static Val h_hilo(Sema *s, const SmCall *c) {
    NrValId x[2];
    int_args(s, c, 2, BIT(NR_DT_I32), "int32", x);
    NrLoc l = c->loc;
    NrValId hi = nr_sm_cast(s, l, x[0], NR_DT_I64, 0, NULL);
    NrValId lo = nr_sm_cast(s, l, nr_sm_bitcast(s, l, x[1], NR_DT_U32, 0), NR_DT_I64, 0, NULL);
    hi = op2(s, l, NR_OP_SHL, hi, kint(s, l, hi, NR_DT_I64, 32));
    return v_ir(nr_sm_bitcast(s, l, op2(s, l, NR_OP_OR, hi, lo), NR_DT_F64, 0));
}

/* double2loint, double2hiint: a half of the bits, as int32. */
static Val h_half(Sema *s, const SmCall *c) {
    NrValId x = exact_arg(s, c, NR_DT_F64);
    NrValId b = nr_sm_bitcast(s, c->loc, x, NR_DT_I64, 0);
    if (c->bi->arg) b = op2(s, c->loc, NR_OP_SHR, b, kint(s, c->loc, b, NR_DT_I64, 32));
    return v_ir(nr_sm_cast(s, c->loc, b, NR_DT_I32, 0, NULL));
}

/* --- the table -------------------------------------------------------------------------------------------- */
#define L SM_IN_LIBDEVICE
#define M1(n) {n, L, "*args", h_math, 1, n}
#define M2(n) {n, L, "*args", h_math, 2, n}
#define M3(n) {n, L, "*args", h_math, 3, n}
#define F1(n, fn) {n, L, "*args", h_math, 1 | F32ONLY, fn}
#define RND(op, n) M##n(op "_rn"), M##n(op "_rz"), M##n(op "_rd"), M##n(op "_ru")
#define CV(n, src, dst, mode) {n, L, "*args", h_conv, CONV(src, dst, mode), NULL}
#define CV4(n, src, dst) CV(n "_rn", src, dst, RN), CV(n "_rz", src, dst, RZ), CV(n "_rd", src, dst, RD), CV(n "_ru", src, dst, RU)

static const Builtin libdevice[] = {
    /* float functions of one, two, three and four operands */
    M1("exp"), M1("exp2"), M1("exp10"), M1("expm1"), M1("log"), M1("log2"), M1("log10"), M1("log1p"), M1("logb"),
    M1("sqrt"), M1("rsqrt"), M1("cbrt"), M1("rcbrt"), M1("sin"), M1("cos"), M1("tan"), M1("sinpi"), M1("cospi"),
    M1("asin"), M1("acos"), M1("atan"), M1("sinh"), M1("cosh"), M1("tanh"), M1("asinh"), M1("acosh"), M1("atanh"),
    M1("erf"), M1("erfc"), M1("erfinv"), M1("erfcinv"), M1("erfcx"), M1("normcdf"), M1("normcdfinv"), M1("lgamma"),
    M1("tgamma"), M1("floor"), M1("ceil"), M1("trunc"), M1("round"), M1("rint"), M1("nearbyint"), M1("fabs"),
    M2("atan2"), M2("hypot"), M2("rhypot"), M2("fmod"), M2("remainder"), M2("copysign"), M2("fdim"), M2("fmax"),
    M2("fmin"), M2("nextafter"), M3("fma"), M3("norm3d"), M3("rnorm3d"), {"norm4d", L, "*args", h_math, 4, "norm4d"},
    {"rnorm4d", L, "*args", h_math, 4, "rnorm4d"},
    /* rounding modes */
    RND("add", 2), RND("sub", 2), RND("mul", 2), RND("div", 2), RND("fma", 3), RND("sqrt", 1), RND("rcp", 1),
    F1("rsqrt_rn", "rsqrt_rn"),
    /* float32 only: the fast forms are the accurate functions here */
    {"saturatef", L, "*args", h_saturate, 0, NULL}, F1("fast_expf", "exp"), F1("fast_exp10f", "exp10"), F1("fast_logf", "log"),
    F1("fast_log2f", "log2"), F1("fast_log10f", "log10"), F1("fast_sinf", "sin"), F1("fast_cosf", "cos"),
    F1("fast_tanf", "tan"), {"fast_powf", L, "*args", h_math, 2 | F32ONLY, "pow"},
    {"fast_dividef", L, "*args", h_fast_div, 0, NULL},
    {"abs", L, "*args", h_abs, 0, NULL},
    {"pow", L, "*args", h_pow, 0, NULL},
    {"ldexp", L, "*args", h_ldexp, 0, NULL},
    {"scalbn", L, "*args", h_ldexp, 0, NULL},
    {"rcp64h", L, "*args", h_rcp64h, 0, NULL},
    {"ilogb", L, "*args", h_ilogb, 0, NULL},
    {"llrint", L, "*args", h_llround, 0, "rint"},
    {"llround", L, "*args", h_llround, 0, "round"},
    /* classification */
    {"isnan", L, "*args", h_class, 0, NULL},
    {"isinf", L, "*args", h_class, 1, NULL},
    {"isfinited", L, "*args", h_class, 2, NULL},
    {"finitef", L, "*args", h_class, 3, NULL},
    {"signbit", L, "*args", h_class, 4, NULL},
    /* integer functions */
    {"clz", L, "*args", h_imath, 1, "clz"},
    {"popc", L, "*args", h_imath, 1, "popc"},
    {"brev", L, "*args", h_imath, 1, "brev"},
    {"ffs", L, "*args", h_imath, 1, "ffs"},
    {"mulhi", L, "*args", h_imath, 2, "mulhi"},
    {"mul24", L, "*args", h_imath, 2 | 0x100, "mul24"},
    {"hadd", L, "*args", h_imath, 2 | 0x100, "hadd"},
    {"rhadd", L, "*args", h_imath, 2 | 0x100, "rhadd"},
    {"byte_perm", L, "*args", h_imath, 3 | 0x100, "byte_perm"},
    {"sad", L, "*args", h_sad, 0, NULL},
    /* conversions */
    CV4("double2float", NR_DT_F64, NR_DT_F32), CV4("double2int", NR_DT_F64, NR_DT_I32),
    CV4("double2uint", NR_DT_F64, NR_DT_U32), CV4("float2int", NR_DT_F32, NR_DT_I32),
    CV4("float2uint", NR_DT_F32, NR_DT_U32), CV4("int2float", NR_DT_I32, NR_DT_F32),
    CV4("uint2float", NR_DT_U32, NR_DT_F32), CV4("float2ll", NR_DT_F32, NR_DT_I64),
    CV4("float2ull", NR_DT_F32, NR_DT_U64), CV4("double2ll", NR_DT_F64, NR_DT_I64),
    CV4("double2ull", NR_DT_F64, NR_DT_U64), CV4("ll2float", NR_DT_I64, NR_DT_F32),
    CV4("ull2float", NR_DT_U64, NR_DT_F32), CV4("ll2double", NR_DT_I64, NR_DT_F64),
    CV4("ull2double", NR_DT_U64, NR_DT_F64), CV("int2double_rn", NR_DT_I32, NR_DT_F64, RN),
    CV("uint2double_rn", NR_DT_U32, NR_DT_F64, RN),
    {"int_as_float", L, "*args", h_bits, NR_DT_I32 | NR_DT_F32 << 8, NULL},
    {"uint_as_float", L, "*args", h_bits, NR_DT_U32 | NR_DT_F32 << 8, NULL},
    {"float_as_int", L, "*args", h_bits, NR_DT_F32 | NR_DT_I32 << 8, NULL},
    {"float_as_uint", L, "*args", h_bits, NR_DT_F32 | NR_DT_I32 << 8, NULL},
    {"longlong_as_double", L, "*args", h_bits, NR_DT_I64 | NR_DT_F64 << 8, NULL},
    {"double_as_longlong", L, "*args", h_bits, NR_DT_F64 | NR_DT_I64 << 8, NULL},
    {"hiloint2double", L, "*args", h_hilo, 0, NULL},
    {"double2loint", L, "*args", h_half, 0, NULL},
    {"double2hiint", L, "*args", h_half, 1, NULL},
    /* not implemented */
    {"j0", L, "*args", h_unsupported, 0, NULL},
    {"j1", L, "*args", h_unsupported, 0, NULL},
    {"y0", L, "*args", h_unsupported, 0, NULL},
    {"y1", L, "*args", h_unsupported, 0, NULL},
    {"jn", L, "*args", h_unsupported, 0, NULL},
    {"yn", L, "*args", h_unsupported, 0, NULL},
    {"cyl_bessel_i0", L, "*args", h_unsupported, 0, NULL},
    {"cyl_bessel_i1", L, "*args", h_unsupported, 0, NULL},
};

const Builtin *nr_sm_find_libdevice(const char *name) {
    for (size_t i = 0; i < NR_COUNTOF(libdevice); i++)
        if (strcmp(libdevice[i].name, name) == 0) return &libdevice[i];
    return NULL;
}
