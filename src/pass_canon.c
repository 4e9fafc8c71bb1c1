/* pass_canon.c - constant folding and canonicalization, to a fixed point.
 *
 * Folding computes exactly what the interpreter computes (ops.def meanings,
 * docs/ir.md cast rules): integers wrap at their width and extend by their
 * signedness; division by zero gives -1 and MIN/-1 gives MIN; shift amounts
 * are read as unsigned; f32, f16, bf16 and fp8 arithmetic runs in f32 and
 * rounds each result to the dtype through fp.h; f64 runs in double.  A
 * constant operand is a `const` (of block type: a splat constant) or a
 * `splat` of a scalar `const`; the result replaces the op in place by a
 * `const` of its type.  A float result that a `const` cannot reproduce bit
 * for bit (a NaN other than the canonical one) is left unfolded.
 *
 * Simplifications apply only where they preserve every value exactly,
 * floats included: x+(-0.0) is x but x+0.0 is not (x = -0.0); x*1.0 is x;
 * x*0 is 0 only for integers.  NaN inputs may come out as another NaN.
 *
 * Ops are visited in program order (an op before its regions), so a
 * replacement recorded in the value map reaches every later use in the same
 * sweep; sweeps repeat until one changes nothing.  Ops with effects (READ or
 * WRITE) are never folded; `if` with a constant condition is replaced by its
 * taken region, `for` that runs zero times by its initial values; hints stay. */
#include "fp.h"
#include "passes_impl.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* Sweeps are a guard: every rule shrinks or settles the IR, so a handful suffice. */
#define MAX_SWEEPS 64

typedef struct Canon {
    NrModule *m;
    NrFunc *f;
    NrValMap repl;
    bool changed;
} Canon;

/* --- constant elements --------------------------------------------------------------------------- */
/* One element of a constant: ints as their value sign- or zero-extended to 64
 * bits by the dtype, floats as the dtype's own bits. */
typedef struct Elem {
    NrDtype dt;
    uint64_t bits;
} Elem;

static uint64_t width_mask(int bits) { return bits >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1; }

/* v truncated to dt's width and extended by its signedness. */
static uint64_t int_norm(NrDtype dt, uint64_t v) {
    int bits = nr_dt_bits(dt);
    if (bits >= 64) return v;
    v &= width_mask(bits);
    if (nr_dt_is_signed(dt) && ((v >> (bits - 1)) & 1)) v |= ~width_mask(bits);
    return v;
}

/* An integer stored into dt: truncation, except i1, which is v != 0. */
static uint64_t int_store(NrDtype dt, uint64_t v) { return dt == NR_DT_I1 ? v != 0 : int_norm(dt, v); }

static NrFpFormat fp_format(NrDtype dt) {
    switch (dt) {
    case NR_DT_F8E4NV: return NR_FPF_F8E4NV;
    case NR_DT_F8E5: return NR_FPF_F8E5;
    case NR_DT_F16: return NR_FPF_F16;
    case NR_DT_BF16: return NR_FPF_BF16;
    default: return NR_FPF_F32;
    }
}

static float f32_from_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static double f64_from_bits(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}

static uint64_t f64_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

/* A float element other than f64, decoded to f32 (exactly). */
static float dec_f32(NrDtype dt, uint64_t bits) {
    switch (dt) {
    case NR_DT_F16: return nr_f16_to_f32((uint16_t)bits);
    case NR_DT_BF16: return nr_bf16_to_f32((uint16_t)bits);
    case NR_DT_F8E4NV: return nr_f8e4nv_to_f32((uint8_t)bits);
    case NR_DT_F8E5: return nr_f8e5_to_f32((uint8_t)bits);
    default: return f32_from_bits((uint32_t)bits);
    }
}

/* An f32 result rounded to dt (other than f64), as the interpreter stores it. */
static uint64_t enc_f32(NrDtype dt, float x) {
    switch (dt) {
    case NR_DT_F16: return nr_f32_to_f16(x);
    case NR_DT_BF16: return nr_f32_to_bf16(x);
    case NR_DT_F8E4NV: return nr_f32_to_f8e4nv(x);
    case NR_DT_F8E5: return nr_f32_to_f8e5(x);
    default: return f32_bits(x);
    }
}

/* Any float element as a double (exactly). */
static double dec_f64(NrDtype dt, uint64_t bits) {
    return dt == NR_DT_F64 ? f64_from_bits(bits) : (double)dec_f32(dt, bits);
}

/* A double rounded once to float dtype dt (rtz: toward zero). */
static uint64_t round_f64(NrDtype dt, double x, bool rtz) {
    if (dt == NR_DT_F64) return f64_bits(x);
    return nr_fp_round(x, fp_format(dt), rtz);
}

/* An integer rounded to 53 bits by round-to-odd: the lost bits are folded
 * into the last kept bit, so that rounding the double again to any format
 * narrower than 53 bits rounds the integer itself correctly. */
static double int_to_f64_odd(int64_t v, bool uns) {
    bool neg = !uns && v < 0;
    uint64_t mag = neg ? 0 - (uint64_t)v : (uint64_t)v;
    int top = 63 - __builtin_clzll(mag | 1);
    if (top > 52) {
        int drop = top - 52;
        uint64_t lost = mag & width_mask(drop);
        mag &= ~width_mask(drop);
        if (lost) mag |= UINT64_C(1) << drop;
    }
    double d = (double)mag;
    return neg ? -d : d;
}

/* An integer (signed, or unsigned when uns) converted to float dtype dt. */
static uint64_t int_to_float(NrDtype dt, int64_t v, bool uns) {
    switch (dt) {
    case NR_DT_F64: return f64_bits(uns ? (double)(uint64_t)v : (double)v);
    case NR_DT_F32: return f32_bits(uns ? (float)(uint64_t)v : (float)v);
    default: return nr_fp_round(int_to_f64_odd(v, uns), fp_format(dt), false);
    }
}

/* A double converted to integer dtype dt: toward zero, saturating, NaN -> 0;
 * to i1 it is d != 0 (true for NaN). */
static uint64_t float_to_int(NrDtype dt, double d) {
    if (dt == NR_DT_I1) return d != 0;
    if (d != d) return 0;
    int bits = nr_dt_bits(dt);
    if (nr_dt_is_signed(dt)) {
        double lim = ldexp(1.0, bits - 1);
        if (d <= -lim) return int_norm(dt, UINT64_C(1) << (bits - 1));
        if (d >= lim) return width_mask(bits - 1);
        return (uint64_t)(int64_t)d;
    }
    if (d <= 0) return 0;
    if (d >= ldexp(1.0, bits)) return width_mask(bits);
    return (uint64_t)d;
}

/* The element a `const` with attribute a materializes in dtype dt. */
static bool attr_elem(const NrAttr *a, NrDtype dt, Elem *e) {
    e->dt = dt;
    if (a->kind == NR_AK_FLOAT) {
        double v = a->v.f;
        if (nr_dt_is_float(dt)) {
            e->bits = round_f64(dt, v, false);
        } else {
            int64_t iv = v != v ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
            e->bits = int_store(dt, (uint64_t)iv);
        }
        return true;
    }
    if (a->kind != NR_AK_INT && a->kind != NR_AK_BOOL) return false;
    e->bits = nr_dt_is_float(dt) ? int_to_float(dt, a->v.i, false) : int_store(dt, (uint64_t)a->v.i);
    return true;
}

/* The constant element of value v: a non-pointer `const`, or a `splat` of one. */
static bool const_of(Canon *c, NrValId v, Elem *e) {
    NrFunc *f = c->f;
    NrOpId d = nr_val_def(f, v);
    if (d && f->ops[d].opc == NR_OP_SPLAT) d = nr_val_def(f, f->ops[d].opnds[0]);
    if (!d || f->ops[d].opc != NR_OP_CONST) return false;
    NrDtype dt = nr_type_dtype(c->m, f->vals[f->ops[d].results[0]].type);
    const NrAttr *a = nr_op_attr(f, d, NR_A_VALUE);
    return dt != NR_DT_INVALID && a && attr_elem(a, dt, e);
}

static bool is_int_const(const Elem *e, int64_t k) { return nr_dt_is_int(e->dt) && e->bits == int_norm(e->dt, (uint64_t)k); }
static bool is_all_ones(const Elem *e) { return nr_dt_is_int(e->dt) && (e->bits & width_mask(nr_dt_bits(e->dt))) == width_mask(nr_dt_bits(e->dt)); }
static bool is_float_zero(const Elem *e, bool neg) {
    if (!nr_dt_is_float(e->dt)) return false;
    double d = dec_f64(e->dt, e->bits);
    return d == 0 && (signbit(d) != 0) == neg;
}
static bool is_one(const Elem *e) {
    return nr_dt_is_float(e->dt) ? dec_f64(e->dt, e->bits) == 1.0 : is_int_const(e, 1);
}
static bool is_zero(const Elem *e) { return is_int_const(e, 0); }

/* --- evaluation ------------------------------------------------------------------------------------ */
static uint64_t sdiv(int64_t x, int64_t y) {
    if (y == 0) return ~UINT64_C(0);
    if (y == -1) return 0 - (uint64_t)x;
    return (uint64_t)(x / y);
}
static uint64_t srem(int64_t x, int64_t y) {
    if (y == 0) return (uint64_t)x;
    if (y == -1) return 0;
    return (uint64_t)(x % y);
}

/* Integer binary (and unary, with y = x) op on dtype dt. */
static bool int_eval(NrOpcode opc, NrDtype dt, uint64_t x, uint64_t y, uint64_t *r) {
    int bits = nr_dt_bits(dt);
    bool sgn = nr_dt_is_signed(dt);
    uint64_t m = width_mask(bits), ux = x & m, uy = y & m;
    int64_t sx = (int64_t)x, sy = (int64_t)y; /* sign-extended when sgn */
    uint64_t v;
    switch (opc) {
    case NR_OP_ADD: v = x + y; break;
    case NR_OP_SUB: v = x - y; break;
    case NR_OP_MUL: v = x * y; break;
    case NR_OP_DIV: v = sgn ? sdiv(sx, sy) : uy ? ux / uy : ~UINT64_C(0); break;
    case NR_OP_REM: v = sgn ? srem(sx, sy) : uy ? ux % uy : ux; break;
    case NR_OP_AND: v = x & y; break;
    case NR_OP_OR: v = x | y; break;
    case NR_OP_XOR: v = x ^ y; break;
    case NR_OP_SHL: v = uy >= (uint64_t)bits ? 0 : x << uy; break;
    case NR_OP_SHR:
        if (sgn) v = uy >= (uint64_t)bits ? (sx < 0 ? ~UINT64_C(0) : 0) : (uint64_t)(sx >> uy);
        else v = uy >= (uint64_t)bits ? 0 : ux >> uy;
        break;
    case NR_OP_MAX: v = sgn ? (sx > sy ? x : y) : (ux > uy ? ux : uy); break;
    case NR_OP_MIN: v = sgn ? (sx < sy ? x : y) : (ux < uy ? ux : uy); break;
    case NR_OP_UMULHI:
        v = bits == 64 ? (uint64_t)(((unsigned __int128)ux * uy) >> 64) : (ux * uy) >> bits;
        break;
    case NR_OP_NEG: v = 0 - x; break;
    case NR_OP_ABS: v = sgn && sx < 0 ? 0 - x : x; break;
    default: return false;
    }
    *r = int_norm(dt, v);
    return true;
}

/* max/min with nan="none" return the non-NaN operand; nan="all" propagate
 * NaN; of two zeros max picks +0 and min -0. */
#define MAXNUM(x, y) ((x) != (x) ? (y) : (y) != (y) ? (x) : (x) > (y) ? (x) : (y) > (x) ? (y) : signbit(x) ? (y) : (x))
#define MINNUM(x, y) ((x) != (x) ? (y) : (y) != (y) ? (x) : (x) < (y) ? (x) : (y) < (x) ? (y) : signbit(x) ? (x) : (y))
#define MAXALL(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : MAXNUM(x, y))
#define MINALL(x, y) ((x) != (x) ? (x) : (y) != (y) ? (y) : MINNUM(x, y))

static bool f32_binary(NrOpcode opc, bool nanall, float x, float y, float *r) {
    switch (opc) {
    case NR_OP_ADD: *r = x + y; return true;
    case NR_OP_SUB: *r = x - y; return true;
    case NR_OP_MUL: *r = x * y; return true;
    case NR_OP_DIV:
    case NR_OP_DIV_RN: *r = x / y; return true;
    case NR_OP_REM: *r = fmodf(x, y); return true;
    case NR_OP_MAX: *r = nanall ? MAXALL(x, y) : MAXNUM(x, y); return true;
    case NR_OP_MIN: *r = nanall ? MINALL(x, y) : MINNUM(x, y); return true;
    default: return false;
    }
}

static bool f64_binary(NrOpcode opc, bool nanall, double x, double y, double *r) {
    switch (opc) {
    case NR_OP_ADD: *r = x + y; return true;
    case NR_OP_SUB: *r = x - y; return true;
    case NR_OP_MUL: *r = x * y; return true;
    case NR_OP_DIV:
    case NR_OP_DIV_RN: *r = x / y; return true;
    case NR_OP_REM: *r = fmod(x, y); return true;
    case NR_OP_MAX: *r = nanall ? MAXALL(x, y) : MAXNUM(x, y); return true;
    case NR_OP_MIN: *r = nanall ? MINALL(x, y) : MINNUM(x, y); return true;
    default: return false;
    }
}

static bool f32_unary(NrOpcode opc, float x, float *r) {
    switch (opc) {
    case NR_OP_NEG: *r = -x; return true;
    case NR_OP_ABS: *r = fabsf(x); return true;
    case NR_OP_EXP: *r = expf(x); return true;
    case NR_OP_EXP2: *r = exp2f(x); return true;
    case NR_OP_LOG: *r = logf(x); return true;
    case NR_OP_LOG2: *r = log2f(x); return true;
    case NR_OP_SQRT:
    case NR_OP_SQRT_RN: *r = sqrtf(x); return true;
    case NR_OP_RSQRT: *r = 1.0f / sqrtf(x); return true;
    case NR_OP_SIN: *r = sinf(x); return true;
    case NR_OP_COS: *r = cosf(x); return true;
    case NR_OP_FLOOR: *r = floorf(x); return true;
    case NR_OP_CEIL: *r = ceilf(x); return true;
    case NR_OP_ERF: *r = erff(x); return true;
    default: return false;
    }
}

static bool f64_unary(NrOpcode opc, double x, double *r) {
    switch (opc) {
    case NR_OP_NEG: *r = -x; return true;
    case NR_OP_ABS: *r = fabs(x); return true;
    case NR_OP_EXP: *r = exp(x); return true;
    case NR_OP_EXP2: *r = exp2(x); return true;
    case NR_OP_LOG: *r = log(x); return true;
    case NR_OP_LOG2: *r = log2(x); return true;
    case NR_OP_SQRT:
    case NR_OP_SQRT_RN: *r = sqrt(x); return true;
    case NR_OP_RSQRT: *r = 1.0 / sqrt(x); return true;
    case NR_OP_SIN: *r = sin(x); return true;
    case NR_OP_COS: *r = cos(x); return true;
    case NR_OP_FLOOR: *r = floor(x); return true;
    case NR_OP_CEIL: *r = ceil(x); return true;
    case NR_OP_ERF: *r = erf(x); return true;
    default: return false;
    }
}

/* Float arithmetic on dtype dt: n operands (1 unary, 2 binary, 3 fma). */
static bool float_eval(NrOpcode opc, NrDtype dt, bool nanall, const Elem *x, int n, uint64_t *r) {
    if (dt == NR_DT_F64) {
        double a = dec_f64(dt, x[0].bits), b = n > 1 ? dec_f64(dt, x[1].bits) : a, v = 0;
        if (n == 3) {
            if (opc != NR_OP_FMA) return false;
            v = fma(a, b, dec_f64(dt, x[2].bits));
        } else if (!(n == 1 ? f64_unary(opc, a, &v) : f64_binary(opc, nanall, a, b, &v))) {
            return false;
        }
        *r = f64_bits(v);
        return true;
    }
    float a = dec_f32(dt, x[0].bits), b = n > 1 ? dec_f32(dt, x[1].bits) : a, v = 0;
    if (n == 3) {
        if (opc != NR_OP_FMA) return false;
        float cc = dec_f32(dt, x[2].bits);
        if (dt == NR_DT_F32) *r = f32_bits(fmaf(a, b, cc));
        else *r = round_f64(dt, fma((double)a, (double)b, (double)cc), false); /* one rounding */
        return true;
    }
    if (!(n == 1 ? f32_unary(opc, a, &v) : f32_binary(opc, nanall, a, b, &v))) return false;
    *r = enc_f32(dt, v);
    return true;
}

static bool cmp_eval(const char *pred, const Elem *x, const Elem *y, uint64_t *r) {
    NrDtype dt = x->dt;
    int lt, eq, unord = 0;
    if (nr_dt_is_float(dt)) {
        double a = dec_f64(dt, x->bits), b = dec_f64(dt, y->bits);
        unord = a != a || b != b;
        lt = a < b;
        eq = a == b;
    } else if (nr_dt_is_signed(dt)) {
        lt = (int64_t)x->bits < (int64_t)y->bits;
        eq = x->bits == y->bits;
    } else {
        lt = x->bits < y->bits;
        eq = x->bits == y->bits;
    }
    /* Ordered predicates are false on NaN; ne is true. */
    if (strcmp(pred, "eq") == 0) *r = !unord && eq;
    else if (strcmp(pred, "ne") == 0) *r = unord || !eq;
    else if (strcmp(pred, "lt") == 0) *r = !unord && lt;
    else if (strcmp(pred, "le") == 0) *r = !unord && (lt || eq);
    else if (strcmp(pred, "gt") == 0) *r = !unord && !lt && !eq;
    else if (strcmp(pred, "ge") == 0) *r = !unord && !lt;
    else return false;
    return true;
}

/* cast of element x to dtype dt (docs/ir.md#cast). */
static bool cast_eval(const Elem *x, NrDtype dt, bool rtz, uint64_t *r) {
    NrDtype sd = x->dt;
    if (sd == dt) {
        *r = x->bits;
        return true;
    }
    if (nr_dt_is_float(sd)) {
        if (sd != NR_DT_F64 && dt == NR_DT_F32) *r = f32_bits(dec_f32(sd, x->bits));
        else if (sd == NR_DT_F32 && nr_dt_is_float(dt) && dt != NR_DT_F64 && !rtz) *r = enc_f32(dt, dec_f32(sd, x->bits));
        else if (nr_dt_is_float(dt)) *r = round_f64(dt, dec_f64(sd, x->bits), rtz);
        else *r = int_store(dt, float_to_int(dt, dec_f64(sd, x->bits)));
        return true;
    }
    if (!nr_dt_is_float(dt)) {
        *r = int_store(dt, x->bits);
        return true;
    }
    if (rtz) return false; /* integer sources ignore rounding; leave such casts alone */
    *r = int_to_float(dt, (int64_t)x->bits, !nr_dt_is_signed(sd));
    return true;
}

/* bitcast: the storage bytes of x read as dt (i1 keeps its low bit). */
static bool bitcast_eval(const Elem *x, NrDtype dt, uint64_t *r) {
    int bytes = nr_dtype_info[dt].bytes;
    if (bytes != nr_dtype_info[x->dt].bytes) return false;
    uint64_t raw = x->bits & width_mask(bytes * 8);
    *r = dt == NR_DT_I1 ? raw & 1 : nr_dt_is_int(dt) ? int_norm(dt, raw) : raw;
    return true;
}

/* The constant result of op if every operand is constant. */
static bool eval_op(Canon *c, NrOpId op, Elem *out) {
    NrFunc *f = c->f;
    const NrOp *o = &f->ops[op];
    if (o->nresults != 1 || o->nopnds < 1 || o->nopnds > 3) return false;
    NrDtype rd = nr_type_dtype(c->m, f->vals[o->results[0]].type);
    if (rd == NR_DT_INVALID) return false;
    Elem x[3];
    for (int i = 0; i < o->nopnds; i++)
        if (!o->opnds[i] || !const_of(c, o->opnds[i], &x[i])) return false;
    NrOpcode opc = (NrOpcode)o->opc;
    out->dt = rd;
    switch (opc) {
    case NR_OP_CMP: return o->nopnds == 2 && cmp_eval(nr_op_str(f, op, NR_A_PRED, ""), &x[0], &x[1], &out->bits);
    case NR_OP_SELECT:
        if (o->nopnds != 3) return false;
        out->bits = x[0].bits ? x[1].bits : x[2].bits;
        return true;
    case NR_OP_CAST:
        return cast_eval(&x[0], rd, strcmp(nr_op_str(f, op, NR_A_ROUNDING, "rtne"), "rtz") == 0, &out->bits);
    case NR_OP_BITCAST: return bitcast_eval(&x[0], rd, &out->bits);
    default: break;
    }
    if (!(nr_op_info[opc].flags & NR_OPF_ELEM) || opc == NR_OP_MATH) return false;
    for (int i = 0; i < o->nopnds; i++)
        if (x[i].dt != rd) return false;
    if (nr_dt_is_int(rd)) return o->nopnds <= 2 && int_eval(opc, rd, x[0].bits, x[o->nopnds - 1].bits, &out->bits);
    bool nanall = strcmp(nr_op_str(f, op, NR_A_NAN, "none"), "all") == 0;
    return float_eval(opc, rd, nanall, x, o->nopnds, &out->bits);
}

/* --- rewriting ------------------------------------------------------------------------------------- */
/* Turn op into `const` {value} of its own result type (ids stay, so its
 * uses need no rewriting).  False if a const cannot hold e exactly. */
static bool make_const(Canon *c, NrOpId op, const Elem *e) {
    NrFunc *f = c->f;
    NrAttr a;
    memset(&a, 0, sizeof a);
    if (nr_dt_is_float(e->dt)) {
        double d = dec_f64(e->dt, e->bits);
        a.kind = NR_AK_FLOAT;
        a.v.f = d != d ? NAN : d; /* the text form keeps no NaN sign or payload */
        Elem back;
        if (!attr_elem(&a, e->dt, &back) || back.bits != e->bits) return false;
    } else {
        a.kind = NR_AK_INT;
        a.v.i = (int64_t)e->bits;
    }
    NrOp *o = &f->ops[op];
    o->opc = NR_OP_CONST;
    o->nopnds = 0;
    o->nattrs = 0;
    o->attrs = NULL;
    if (a.kind == NR_AK_FLOAT) nr_op_set_float(f, op, NR_A_VALUE, a.v.f);
    else nr_op_set_int(f, op, NR_A_VALUE, a.v.i);
    c->changed = true;
    return true;
}

/* Turn op into a copy of `const` op `k` (same value) of op's own type. */
static void copy_const(Canon *c, NrOpId op, NrOpId k) {
    NrFunc *f = c->f;
    NrOp *o = &f->ops[op];
    o->opc = NR_OP_CONST;
    o->nopnds = 0;
    o->nattrs = 0;
    o->attrs = NULL;
    nr_op_copy_attrs(f, op, f, k);
    c->changed = true;
}

/* Turn op into `splat` of scalar s (op's result is a block of s's type). */
static void make_splat(Canon *c, NrOpId op, NrValId s) {
    NrFunc *f = c->f;
    NrOp *o = &f->ops[op];
    o->opc = NR_OP_SPLAT;
    o->nopnds = 1;
    o->opnds[0] = s;
    o->nattrs = 0;
    o->attrs = NULL;
    c->changed = true;
}

/* Every use of op's only result becomes a use of v; op goes. */
static void replace_by(Canon *c, NrOpId op, NrValId v) {
    nr_vmap_set(&c->repl, c->f->ops[op].results[0], v);
    nr_op_erase(c->f, op);
    c->changed = true;
}

static bool make_zero(Canon *c, NrOpId op) {
    Elem z = {nr_type_dtype(c->m, c->f->vals[c->f->ops[op].results[0]].type), 0};
    return z.dt != NR_DT_INVALID && nr_dt_is_int(z.dt) && make_const(c, op, &z);
}

/* --- algebraic rules -------------------------------------------------------------------------------- */
/* Binary arithmetic with one constant or two equal operands. */
static bool simplify_binary(Canon *c, NrOpId op) {
    NrFunc *f = c->f;
    NrOp *o = &f->ops[op];
    NrOpcode opc = (NrOpcode)o->opc;
    Elem ea, eb;
    bool ca = const_of(c, o->opnds[0], &ea), cb = const_of(c, o->opnds[1], &eb);
    if ((nr_op_info[opc].flags & NR_OPF_COMM) && ca && !cb) {
        /* constants go to the right */
        NrValId t = o->opnds[0];
        o->opnds[0] = o->opnds[1];
        o->opnds[1] = t;
        eb = ea;
        cb = true;
        c->changed = true;
    }
    NrValId a = o->opnds[0], b = o->opnds[1];
    NrDtype dt = nr_type_dtype(c->m, f->vals[o->results[0]].type);
    if (dt == NR_DT_INVALID) return false;
    bool isf = nr_dt_is_float(dt);
    switch (opc) {
    case NR_OP_ADD:
        if (cb && (isf ? is_float_zero(&eb, true) : is_zero(&eb))) return replace_by(c, op, a), true;
        return false;
    case NR_OP_SUB:
        if (cb && (isf ? is_float_zero(&eb, false) : is_zero(&eb))) return replace_by(c, op, a), true;
        if (!isf && a == b) return make_zero(c, op);
        return false;
    case NR_OP_MUL:
        if (cb && is_one(&eb)) return replace_by(c, op, a), true;
        if (cb && !isf && is_zero(&eb)) return replace_by(c, op, b), true;
        return false;
    case NR_OP_DIV:
    case NR_OP_DIV_RN:
        if (cb && is_one(&eb)) return replace_by(c, op, a), true;
        return false;
    case NR_OP_REM:
        if (cb && !isf && is_one(&eb)) return make_zero(c, op);
        return false;
    case NR_OP_AND:
        if (cb && is_zero(&eb)) return replace_by(c, op, b), true;
        if ((cb && is_all_ones(&eb)) || a == b) return replace_by(c, op, a), true;
        return false;
    case NR_OP_OR:
        if (cb && is_all_ones(&eb)) return replace_by(c, op, b), true;
        if ((cb && is_zero(&eb)) || a == b) return replace_by(c, op, a), true;
        return false;
    case NR_OP_XOR:
        if (cb && is_zero(&eb)) return replace_by(c, op, a), true;
        if (a == b) return make_zero(c, op);
        return false;
    case NR_OP_SHL:
    case NR_OP_SHR:
        if (cb && is_zero(&eb)) return replace_by(c, op, a), true;
        return false;
    case NR_OP_MAX:
    case NR_OP_MIN:
        if (a == b) return replace_by(c, op, a), true;
        return false;
    default: return false;
    }
}

static bool simplify_select(Canon *c, NrOpId op) {
    const NrOp *o = &c->f->ops[op];
    Elem ec;
    if (o->opnds[1] == o->opnds[2]) return replace_by(c, op, o->opnds[1]), true;
    if (const_of(c, o->opnds[0], &ec)) return replace_by(c, op, o->opnds[ec.bits ? 1 : 2]), true;
    return false;
}

/* True if every value of float dtype `narrow` is exact in `wide`, so that
 * a cast there and back is the identity (not fp8: it saturates inf). */
static bool float_widens(NrDtype narrow, NrDtype wide) {
    if (narrow != NR_DT_F16 && narrow != NR_DT_BF16 && narrow != NR_DT_F32) return false;
    if (wide == NR_DT_F64) return true;
    return wide == NR_DT_F32 && narrow != NR_DT_F32;
}

static bool simplify_cast(Canon *c, NrOpId op) {
    NrFunc *f = c->f;
    const NrOp *o = &f->ops[op];
    NrValId x = o->opnds[0];
    NrTypeId rt = f->vals[o->results[0]].type;
    if (f->vals[x].type == rt) return replace_by(c, op, x), true;
    /* cast(cast(y : A) : B) : A is y when B holds every value of A */
    NrOpId inner = nr_val_def(f, x);
    if (!inner || f->ops[inner].opc != NR_OP_CAST) return false;
    NrValId y = f->ops[inner].opnds[0];
    if (f->vals[y].type != rt) return false;
    NrDtype a = nr_type_dtype(c->m, rt), b = nr_type_dtype(c->m, f->vals[x].type);
    if (a == NR_DT_INVALID || b == NR_DT_INVALID) return false;
    bool exact = (nr_dt_is_int(a) && nr_dt_is_int(b) && nr_dt_bits(b) >= nr_dt_bits(a)) || float_widens(a, b);
    if (exact) replace_by(c, op, y);
    return exact;
}

static bool is_identity_order(const NrAttr *a) {
    if (!a || a->kind != NR_AK_INTS) return false;
    for (int i = 0; i < a->n; i++)
        if (a->v.ints[i] != i) return false;
    return true;
}

/* Shape ops: of a constant or splat, to the same type, and chains. */
static bool simplify_shape(Canon *c, NrOpId op) {
    NrFunc *f = c->f;
    NrOp *o = &f->ops[op];
    NrOpcode opc = (NrOpcode)o->opc;
    NrValId x = o->opnds[0];
    NrTypeId rt = f->vals[o->results[0]].type;
    NrOpId d = nr_val_def(f, x);
    if (d && f->ops[d].opc == NR_OP_CONST) return copy_const(c, op, d), true;
    if (opc != NR_OP_SPLAT && d && f->ops[d].opc == NR_OP_SPLAT) return make_splat(c, op, f->ops[d].opnds[0]), true;
    if (opc == NR_OP_SPLAT) return false;
    if (f->vals[x].type == rt && opc != NR_OP_TRANS) return replace_by(c, op, x), true;
    if (opc == NR_OP_RESHAPE && d && f->ops[d].opc == NR_OP_RESHAPE) {
        bool reorder = nr_op_int(f, op, NR_A_CAN_REORDER, 0) || nr_op_int(f, d, NR_A_CAN_REORDER, 0);
        NrValId y = f->ops[d].opnds[0];
        if (f->vals[y].type == rt) return replace_by(c, op, y), true;
        f->ops[op].opnds[0] = y;
        if (reorder) nr_op_set_bool(f, op, NR_A_CAN_REORDER, true);
        c->changed = true;
        return true;
    }
    if (opc == NR_OP_TRANS) {
        const NrAttr *ord = nr_op_attr(f, op, NR_A_ORDER);
        if (is_identity_order(ord) && f->vals[x].type == rt) return replace_by(c, op, x), true;
        const NrAttr *inner = d && f->ops[d].opc == NR_OP_TRANS ? nr_op_attr(f, d, NR_A_ORDER) : NULL;
        if (!ord || !inner || ord->kind != NR_AK_INTS || inner->kind != NR_AK_INTS || ord->n != inner->n ||
            ord->n > NR_MAX_RANK)
            return false;
        /* r's axis i is x's axis ord[i], which is y's axis inner[ord[i]] */
        int64_t comp[NR_MAX_RANK];
        for (int i = 0; i < ord->n; i++) {
            if (ord->v.ints[i] < 0 || ord->v.ints[i] >= inner->n) return false;
            comp[i] = inner->v.ints[ord->v.ints[i]];
        }
        NrValId y = f->ops[d].opnds[0];
        f->ops[op].opnds[0] = y;
        nr_op_set_ints(f, op, NR_A_ORDER, ord->n, comp);
        c->changed = true;
        return true;
    }
    return false;
}

/* addptr p, 0 is p. */
static bool simplify_addptr(Canon *c, NrOpId op) {
    const NrOp *o = &c->f->ops[op];
    Elem e;
    if (c->f->vals[o->opnds[0]].type == c->f->vals[o->results[0]].type && const_of(c, o->opnds[1], &e) &&
        is_zero(&e))
        return replace_by(c, op, o->opnds[0]), true;
    return false;
}

static void simplify_pure(Canon *c, NrOpId op) {
    NrOpcode opc = (NrOpcode)c->f->ops[op].opc;
    if (opc == NR_OP_CONST || opc == NR_OP_HINT) return;
    Elem e;
    if (opc == NR_OP_SELECT && simplify_select(c, op)) return;
    if (opc != NR_OP_SPLAT && eval_op(c, op, &e) && make_const(c, op, &e)) return;
    switch (opc) {
    case NR_OP_CAST: simplify_cast(c, op); return;
    case NR_OP_ADDPTR: simplify_addptr(c, op); return;
    case NR_OP_SPLAT:
    case NR_OP_BROADCAST:
    case NR_OP_EXPAND_DIMS:
    case NR_OP_RESHAPE:
    case NR_OP_TRANS: simplify_shape(c, op); return;
    default: break;
    }
    if (c->f->ops[op].nopnds == 2 && (nr_op_info[opc].flags & NR_OPF_ELEM)) simplify_binary(c, op);
}

/* --- control flow ---------------------------------------------------------------------------------- */
/* `if` with a constant condition: the taken region's ops move before the if,
 * its yield's operands replace the results.  Returns the first moved op. */
static NrOpId inline_if(Canon *c, NrOpId op, bool taken0) {
    NrFunc *f = c->f;
    NrBlockId b = f->ops[op].regions[taken0 ? 0 : 1];
    NrOpId y = nr_block_terminator(f, b);
    NR_ASSERT(y && f->ops[y].opc == NR_OP_YIELD && f->ops[y].nopnds == f->ops[op].nresults);
    NrOpId first = NR_NONE;
    while (f->blocks[b].first != y) {
        NrOpId x = f->blocks[b].first;
        nr_op_unlink(f, x);
        nr_op_insert_before(f, op, x);
        if (!first) first = x;
    }
    for (int i = 0; i < f->ops[op].nresults; i++)
        nr_vmap_set(&c->repl, f->ops[op].results[i], nr_vmap_find(&c->repl, f->ops[y].opnds[i]));
    nr_op_erase(f, op);
    c->changed = true;
    return first;
}

/* for lb, ub with lb >= ub (by the induction variable's signedness) never runs. */
static bool for_never_runs(Canon *c, NrOpId op) {
    const NrOp *o = &c->f->ops[op];
    Elem lb, ub;
    if (!const_of(c, o->opnds[0], &lb) || !const_of(c, o->opnds[1], &ub) || !nr_dt_is_int(lb.dt)) return false;
    return nr_dt_is_signed(lb.dt) ? (int64_t)lb.bits >= (int64_t)ub.bits : lb.bits >= ub.bits;
}

/* Visit one op; returns the op to visit next in its block. */
static NrOpId visit(Canon *c, NrOpId op) {
    NrFunc *f = c->f;
    NrOpId next = f->ops[op].next;
    nr_vmap_apply_op(f, &c->repl, op);
    NrOpcode opc = (NrOpcode)f->ops[op].opc;
    Elem e;
    if (opc == NR_OP_IF && const_of(c, f->ops[op].opnds[0], &e)) {
        NrOpId first = inline_if(c, op, e.bits != 0);
        return first ? first : next;
    }
    if (opc == NR_OP_FOR && for_never_runs(c, op)) {
        for (int i = 0; i < f->ops[op].nresults; i++) nr_vmap_set(&c->repl, f->ops[op].results[i], f->ops[op].opnds[3 + i]);
        nr_op_erase(f, op);
        c->changed = true;
        return next;
    }
    if ((nr_op_info[opc].flags & NR_OPF_PURE) && f->ops[op].nregions == 0) simplify_pure(c, op);
    return next;
}

static void sweep(Canon *c, NrBlockId b, int depth) {
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    NrFunc *f = c->f;
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = visit(c, o);
        if (!f->ops[o].dead)
            for (int r = 0; r < f->ops[o].nregions; r++) sweep(c, f->ops[o].regions[r], depth + 1);
        o = next;
    }
}

bool nr_pass_canonicalize(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrArena scratch;
        nr_arena_init(&scratch);
        Canon c = {m, m->funcs[i], {0}, false};
        nr_vmap_init(&c.repl, &scratch, c.f->nvals);
        for (int s = 0; s < MAX_SWEEPS; s++) {
            c.changed = false;
            sweep(&c, c.f->body, 0);
            if (!c.changed) break;
        }
        nr_vmap_apply_all(c.f, &c.repl);
        nr_arena_free(&scratch);
    }
    return true;
}
