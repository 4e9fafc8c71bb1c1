/* sema_expr.c - expressions: IR building helpers, Triton's typing rules
 * (to_tensor, computation_type, integer promotion, casts), numpy-style
 * broadcasting, the operators, and the lowering of expression nodes.
 *
 * Operators follow Triton's semantic.py: a Python number meeting a tensor
 * takes the tensor's dtype unless it is of a higher kind (bool < int <
 * float); `/` on integers divides in fp32; `//` and `%` on integers truncate
 * like C; fp16 and bf16 divide in fp32; comparisons first turn Python
 * numbers into tensors.  Compile-time operands fold with Python semantics. */
#include "sema_impl.h"

#include <math.h>
#include <string.h>

/* --- building ------------------------------------------------------------------------------------- */
NrOpId nr_sm_emit_op(Sema *s, NrLoc loc, NrOpcode opc, int n, const NrValId *opnds, int nres, const NrTypeId *rts,
                     int nregions) {
    if (!s->fn)
        nr_sm_fail(s, loc, "%s must be a compile-time constant (it would need a runtime operation here)",
                   s->const_what ? s->const_what : "this value");
    s->fn->b.loc = loc;
    return nr_build(&s->fn->b, opc, n, opnds, nres, rts, nregions);
}

NrValId nr_sm_emit(Sema *s, NrLoc loc, NrOpcode opc, NrTypeId rt, int n, const NrValId *opnds) {
    NrOpId op = nr_sm_emit_op(s, loc, opc, n, opnds, 1, &rt, 0);
    return nr_op_result(s->fn->f, op, 0);
}

NrTypeId nr_sm_tid(Sema *s, NrValId v) { return nr_val_type(s->fn->f, v); }
const NrType *nr_sm_type(Sema *s, NrValId v) { return nr_type(s->m, nr_sm_tid(s, v)); }
char *nr_sm_type_str(Sema *s, NrTypeId t) { return nr_type_str(s->m, t); }

char *nr_sm_shape_str(Sema *s, const NrType *t) {
    char *b = nr_strdup(s->a, "[");
    for (int i = 0; i < t->rank; i++) b = nr_sprintf(s->a, "%s%s%d", b, i ? ", " : "", t->shape[i]);
    return nr_sprintf(s->a, "%s]", b);
}

static char *shape64_str(Sema *s, int rank, const int64_t *shape) {
    char *b = nr_strdup(s->a, "[");
    for (int i = 0; i < rank; i++) b = nr_sprintf(s->a, "%s%s%lld", b, i ? ", " : "", (long long)shape[i]);
    return nr_sprintf(s->a, "%s]", b);
}

static NrDtype dt_of(Sema *s, NrValId v) { return (NrDtype)nr_sm_type(s, v)->dtype; }
static bool is_ptr(Sema *s, NrValId v) { return nr_sm_type(s, v)->ptr > 0; }
static int rank_of(Sema *s, NrValId v) { return nr_sm_type(s, v)->rank; }

/* Element type name for messages: int32, float16, pointer<float32>. */
static const char *elem_name(Sema *s, NrValId v) {
    const NrType *t = nr_sm_type(s, v);
    return nr_dt_name(s->a, (NrDtype)t->dtype, t->ptr);
}

NrTypeId nr_sm_block_type(Sema *s, NrLoc loc, NrTypeId elem, int rank, const int64_t *shape, const char *what) {
    if (rank > NR_MAX_RANK)
        nr_sm_fail(s, loc, "%s: blocks have at most %d dimensions, got shape %s", what, NR_MAX_RANK,
                   shape64_str(s, rank, shape));
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (!nr_is_pow2(shape[i]))
            nr_sm_fail(s, loc, "%s: block dimensions must be powers of 2, got shape %s", what,
                       shape64_str(s, rank, shape));
        numel *= shape[i];
        if (numel > SM_MAX_BLOCK_NUMEL)
            nr_sm_fail(s, loc, "%s: a block has at most %d elements, got shape %s", what, SM_MAX_BLOCK_NUMEL,
                       shape64_str(s, rank, shape));
    }
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) sh[i] = (int32_t)shape[i];
    return nr_type_block(s->m, elem, rank, sh);
}

/* The same shape as t with element dtype dt (ptr levels). */
static NrTypeId with_elem(Sema *s, NrTypeId t, NrDtype dt, int ptr) {
    NrTypeId e = ptr ? nr_type_ptr(s->m, dt, ptr) : nr_type_scalar(s->m, dt);
    return nr_type_with_elem(s->m, t, e);
}

/* --- constants ------------------------------------------------------------------------------------ */
static bool int_fits(NrDtype dt, const NrCVal *c) {
    __int128 v = c->kind == NR_CV_BOOL ? c->b : c->is_unsigned ? (__int128)(uint64_t)c->i : (__int128)c->i;
    int bits = nr_dt_bits(dt);
    if (dt == NR_DT_I1) return v == 0 || v == 1;
    __int128 lo = nr_dt_is_signed(dt) ? -((__int128)1 << (bits - 1)) : 0;
    __int128 hi = nr_dt_is_signed(dt) ? ((__int128)1 << (bits - 1)) - 1 : ((__int128)1 << bits) - 1;
    return v >= lo && v <= hi;
}

/* x rounded to the nearest fp32 (overflow to infinity). */
static double round_f32(double x) {
    if (isnan(x) || isinf(x)) return x;
    if (fabs(x) >= 0x1.ffffffp127) return x < 0 ? -INFINITY : INFINITY;
    return (double)(float)x;
}

NrValId nr_sm_const(Sema *s, NrLoc loc, NrTypeId t, const NrCVal *c) {
    NrDtype dt = nr_type_dtype(s->m, t);
    if (!nr_cv_is_num(c)) nr_sm_fail(s, loc, "cannot make a constant of type %s from %s", nr_dt_name(s->a, dt, 0),
                                     nr_cv_str_of(s->a, c));
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_CONST, 0, NULL, 1, &t, 0);
    if (nr_dt_is_float(dt)) {
        double v = nr_cv_as_double(c);
        /* Triton makes narrow float constants from an fp32 value */
        if (dt != NR_DT_F64 && c->kind == NR_CV_FLOAT && nr_cv_default_dtype(c) == NR_DT_F32) v = round_f32(v);
        nr_op_set_float(s->fn->f, op, NR_A_VALUE, v);
    } else {
        if (c->kind == NR_CV_FLOAT)
            nr_sm_fail(s, loc, "cannot make a constant of type %s from the float %s", nr_dt_name(s->a, dt, 0),
                       nr_cv_str_of(s->a, c));
        if (!int_fits(dt, c))
            nr_sm_fail(s, loc, "the value %s does not fit in %s", nr_cv_str_of(s->a, c), nr_dt_name(s->a, dt, 0));
        nr_op_set_int(s->fn->f, op, NR_A_VALUE, c->kind == NR_CV_BOOL ? c->b : c->i);
    }
    return nr_op_result(s->fn->f, op, 0);
}

NrValId nr_sm_to_ir(Sema *s, NrLoc loc, Val v, const char *what) {
    if (v.k == V_IR) return v.ir;
    if (v.k == V_CONST && nr_cv_is_num(&v.c))
        return nr_sm_const(s, loc, nr_type_scalar(s->m, nr_cv_default_dtype(&v.c)), &v.c);
    nr_sm_fail(s, loc, "%s must be a tensor or a number, got %s", what, nr_sm_val_kind(s, v));
}

/* --- shapes --------------------------------------------------------------------------------------- */
NrValId nr_sm_splat(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape) {
    if (rank == 0) return x;
    NrTypeId t = nr_type_block(s->m, nr_sm_tid(s, x), rank, shape);
    /* a constant is made in its final shape directly */
    NrFunc *f = s->fn->f;
    NrOpId def = f->vals[x].def;
    if (def && f->ops[def].opc == NR_OP_CONST) {
        NrOpId op = nr_sm_emit_op(s, loc, NR_OP_CONST, 0, NULL, 1, &t, 0);
        nr_op_copy_attrs(f, op, f, def);
        return nr_op_result(f, op, 0);
    }
    return nr_sm_emit(s, loc, NR_OP_SPLAT, t, 1, &x);
}

NrValId nr_sm_expand_dims(Sema *s, NrLoc loc, NrValId x, int axis) {
    const NrType *t = nr_sm_type(s, x);
    if (t->rank >= NR_MAX_RANK) nr_sm_fail(s, loc, "blocks have at most %d dimensions", NR_MAX_RANK);
    int32_t sh[NR_MAX_RANK];
    int r = t->rank;
    for (int i = 0, j = 0; i <= r; i++) sh[i] = i == axis ? 1 : t->shape[j++];
    if (r == 0) return nr_sm_splat(s, loc, x, 1, sh);
    NrTypeId rt = nr_type_block(s->m, nr_type_elem(s->m, nr_sm_tid(s, x)), r + 1, sh);
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_EXPAND_DIMS, 1, &x, 1, &rt, 0);
    nr_op_set_int(s->fn->f, op, NR_A_AXIS, axis);
    return nr_op_result(s->fn->f, op, 0);
}

NrValId nr_sm_reshape(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape, bool can_reorder) {
    const NrType *t = nr_sm_type(s, x);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    int64_t have = nr_type_numel(s->m, nr_sm_tid(s, x));
    if (n != have)
        nr_sm_fail(s, loc, "reshape cannot change the number of elements: %s (%lld) to %s (%lld)",
                   nr_sm_shape_str(s, t), (long long)have,
                   nr_sm_shape_str(s, nr_type(s->m, nr_type_block(s->m, nr_type_elem(s->m, nr_sm_tid(s, x)), rank,
                                                                   shape))),
                   (long long)n);
    if (t->rank == 0) return nr_sm_splat(s, loc, x, rank, shape);
    NrTypeId rt = nr_type_block(s->m, nr_type_elem(s->m, nr_sm_tid(s, x)), rank, shape);
    if (rt == nr_sm_tid(s, x)) return x;
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_RESHAPE, 1, &x, 1, &rt, 0);
    if (can_reorder) nr_op_set_bool(s->fn->f, op, NR_A_CAN_REORDER, true);
    return nr_op_result(s->fn->f, op, 0);
}

NrValId nr_sm_broadcast_to(Sema *s, NrLoc loc, NrValId x, int rank, const int32_t *shape, bool same_rank) {
    const NrType *t = nr_sm_type(s, x);
    if (t->rank == 0) return nr_sm_splat(s, loc, x, rank, shape);
    NrType want = *t;
    want.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) want.shape[i] = shape[i];
    if (t->rank != rank && (same_rank || t->rank > rank))
        nr_sm_fail(s, loc, "cannot broadcast shape %s to %s: the ranks differ", nr_sm_shape_str(s, t),
                   nr_sm_shape_str(s, &want));
    while (rank_of(s, x) < rank) x = nr_sm_expand_dims(s, loc, x, 0);
    t = nr_sm_type(s, x);
    bool same = true;
    for (int i = 0; i < rank; i++) {
        if (t->shape[i] != shape[i] && t->shape[i] != 1)
            nr_sm_fail(s, loc, "cannot broadcast shape %s to %s", nr_sm_shape_str(s, t), nr_sm_shape_str(s, &want));
        same = same && t->shape[i] == shape[i];
    }
    if (same) return x;
    NrTypeId rt = nr_type_block(s->m, nr_type_elem(s->m, nr_sm_tid(s, x)), rank, shape);
    return nr_sm_emit(s, loc, NR_OP_BROADCAST, rt, 1, &x);
}

void nr_sm_broadcast_pair(Sema *s, NrLoc loc, NrValId *a, NrValId *b) {
    const NrType *ta = nr_sm_type(s, *a), *tb = nr_sm_type(s, *b);
    if (ta->rank == 0 && tb->rank == 0) return;
    if (ta->rank == 0) {
        *a = nr_sm_splat(s, loc, *a, tb->rank, tb->shape);
        return;
    }
    if (tb->rank == 0) {
        *b = nr_sm_splat(s, loc, *b, ta->rank, ta->shape);
        return;
    }
    int rank = ta->rank > tb->rank ? ta->rank : tb->rank;
    int32_t sh[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - ta->rank), ib = i - (rank - tb->rank);
        int32_t da = ia >= 0 ? ta->shape[ia] : 1, db = ib >= 0 ? tb->shape[ib] : 1;
        if (da != db && da != 1 && db != 1)
            nr_sm_fail(s, loc, "cannot broadcast shapes %s and %s", nr_sm_shape_str(s, ta), nr_sm_shape_str(s, tb));
        sh[i] = da == 1 ? db : da;
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= sh[i];
    if (numel > SM_MAX_BLOCK_NUMEL)
        nr_sm_fail(s, loc, "broadcasting shapes %s and %s gives %lld elements; a block has at most %d",
                   nr_sm_shape_str(s, ta), nr_sm_shape_str(s, tb), (long long)numel, SM_MAX_BLOCK_NUMEL);
    *a = nr_sm_broadcast_to(s, loc, *a, rank, sh, false);
    *b = nr_sm_broadcast_to(s, loc, *b, rank, sh, false);
}

/* --- conversions ---------------------------------------------------------------------------------- */
NrValId nr_sm_cast(Sema *s, NrLoc loc, NrValId x, NrDtype dt, int ptr, const char *rounding) {
    const NrType *t = nr_sm_type(s, x);
    NrDtype sdt = (NrDtype)t->dtype;
    int sptr = t->ptr;
    if (sdt == dt && sptr == ptr) return x;
    const char *sn = nr_dt_name(s->a, sdt, sptr), *dn = nr_dt_name(s->a, dt, ptr);
    bool rtz = false;
    if (rounding) {
        bool narrowing = !sptr && !ptr && nr_dt_is_float(sdt) && nr_dt_is_float(dt) && nr_dt_bits(dt) < nr_dt_bits(sdt);
        if (!narrowing)
            nr_sm_fail(s, loc, "fp_downcast_rounding applies only to narrowing float conversions, not %s to %s", sn, dn);
        if (strcmp(rounding, "rtz") == 0) rtz = true;
        else if (strcmp(rounding, "rtne") != 0)
            nr_sm_fail(s, loc, "unknown rounding mode '%s' (expected 'rtne' or 'rtz')", rounding);
    }
    NrTypeId rt = with_elem(s, nr_sm_tid(s, x), dt, ptr);
    if (sptr && ptr) return nr_sm_emit(s, loc, NR_OP_BITCAST, rt, 1, &x);
    if (sptr) {
        if (dt == NR_DT_I64 || dt == NR_DT_U64 || dt == NR_DT_I1) {
            NrValId i = nr_sm_emit(s, loc, NR_OP_PTRTOINT, with_elem(s, nr_sm_tid(s, x), NR_DT_I64, 0), 1, &x);
            if (dt == NR_DT_I64) return i;
            return nr_sm_emit(s, loc, dt == NR_DT_U64 ? NR_OP_BITCAST : NR_OP_CAST, rt, 1, &i);
        }
        nr_sm_fail(s, loc, "cannot cast %s to %s (pointers convert to int64, uint64 or int1)", sn, dn);
    }
    if (ptr) {
        if (!nr_dt_is_int(sdt)) nr_sm_fail(s, loc, "cannot cast %s to %s", sn, dn);
        NrValId i = nr_sm_cast(s, loc, x, NR_DT_I64, 0, NULL);
        return nr_sm_emit(s, loc, NR_OP_INTTOPTR, rt, 1, &i);
    }
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_CAST, 1, &x, 1, &rt, 0);
    if (rtz) nr_op_set_str(s->fn->f, op, NR_A_ROUNDING, "rtz");
    return nr_op_result(s->fn->f, op, 0);
}

NrValId nr_sm_bitcast(Sema *s, NrLoc loc, NrValId x, NrDtype dt, int ptr) {
    const NrType *t = nr_sm_type(s, x);
    if (t->dtype == dt && t->ptr == ptr) return x;
    if (t->ptr || ptr) return nr_sm_cast(s, loc, x, dt, ptr, NULL);
    int sb = nr_dt_bits((NrDtype)t->dtype), db = nr_dt_bits(dt);
    if (sb != db)
        nr_sm_fail(s, loc, "cannot bitcast %s (%d bits) to %s (%d bits)", elem_name(s, x), sb, nr_dt_name(s->a, dt, 0),
                   db);
    return nr_sm_emit(s, loc, NR_OP_BITCAST, with_elem(s, nr_sm_tid(s, x), dt, 0), 1, &x);
}

NrValId nr_sm_to_i1(Sema *s, NrLoc loc, NrValId x, const char *what) {
    const NrType *t = nr_sm_type(s, x);
    if (t->rank > 0) {
        if (nr_type_numel(s->m, nr_sm_tid(s, x)) != 1)
            nr_sm_fail(s, loc, "%s must be a scalar, got %s (the truth value of a block is ambiguous)", what,
                       nr_sm_type_str(s, nr_sm_tid(s, x)));
        x = nr_sm_reshape(s, loc, x, 0, NULL, false);
        t = nr_sm_type(s, x);
    }
    if (t->ptr || t->dtype != NR_DT_I1) x = nr_sm_cast(s, loc, x, NR_DT_I1, 0, NULL);
    return x;
}

/* --- typing --------------------------------------------------------------------------------------- */
/* Triton's kinds: bool < integer < floating. */
static int dt_kind(NrDtype d) { return d == NR_DT_I1 ? 0 : nr_dt_is_float(d) ? 2 : 1; }
/* Triton counts int1 as unsigned. */
static bool dt_unsigned(NrDtype d) { return d == NR_DT_I1 || nr_dt_is_unsigned(d); }

NrDtype nr_sm_integer_promote(NrDtype a, NrDtype b) {
    int ra = nr_dt_bits(a), rb = nr_dt_bits(b);
    bool ua = dt_unsigned(a), ub = dt_unsigned(b);
    if (ua == ub) return ra > rb ? a : b;
    if (ua) return ra >= rb ? a : b;
    return rb >= ra ? b : a;
}

static NrDtype computation_type(Sema *s, NrLoc loc, const char *opname, NrDtype a, bool a_scalar, NrDtype b,
                                bool b_scalar, bool div_or_mod) {
    if (a_scalar != b_scalar) {
        NrDtype sc = a_scalar ? a : b, tt = a_scalar ? b : a;
        if (dt_kind(sc) <= dt_kind(tt)) {
            if (div_or_mod && (tt == NR_DT_F16 || tt == NR_DT_BF16)) return NR_DT_F32;
            return tt;
        }
    }
    if (a == NR_DT_F64 || b == NR_DT_F64) return NR_DT_F64;
    if (a == NR_DT_F32 || b == NR_DT_F32) return NR_DT_F32;
    if (a == NR_DT_F16 || b == NR_DT_F16) return div_or_mod ? NR_DT_F32 : NR_DT_F16;
    if (a == NR_DT_BF16 && b == NR_DT_BF16) return div_or_mod ? NR_DT_F32 : NR_DT_BF16;
    if (a == NR_DT_BF16 || b == NR_DT_BF16) return NR_DT_F32;
    if (nr_dt_is_fp8(a) && nr_dt_is_fp8(b)) return a == b ? a : NR_DT_F16;
    if (!nr_dt_is_int(a) || !nr_dt_is_int(b))
        nr_sm_fail(s, loc, "unsupported operand types for %s: %s and %s (cast the fp8 operand first)", opname,
                   nr_dt_name(s->a, a, 0), nr_dt_name(s->a, b, 0));
    if (div_or_mod && dt_unsigned(a) != dt_unsigned(b))
        nr_sm_fail(s, loc, "cannot use %s with %s and %s because they have different signedness; cast them to the same "
                           "signedness",
                   opname, nr_dt_name(s->a, a, 0), nr_dt_name(s->a, b, 0));
    return nr_sm_integer_promote(a, b);
}

static bool cv_negative(const NrCVal *c) {
    return (c->kind == NR_CV_INT && !c->is_unsigned && c->i < 0) || (c->kind == NR_CV_FLOAT && c->f < 0);
}

/* A compile-time number as an IR value of dtype dt shaped like `like` (or scalar). */
static NrValId const_as(Sema *s, NrLoc loc, const NrCVal *c, NrDtype dt, NrValId like) {
    NrTypeId t = nr_type_scalar(s->m, dt);
    if (like && rank_of(s, like) > 0) t = nr_type_with_elem(s->m, nr_sm_tid(s, like), t);
    return nr_sm_const(s, loc, t, c);
}

/* Triton's binary_op_type_checking_impl.  scalars: whether Python numbers
 * keep their "scalar" status in the promotion (false when the operator first
 * turns them into tensors, as comparisons do). */
static void binary_prep(Sema *s, NrLoc loc, const char *opname, Val a, Val b, bool allow_ptr_a, bool allow_ptr_b,
                        bool arith, bool div_or_mod, bool scalars, NrValId *ra, NrValId *rb) {
    bool ac = a.k == V_CONST && nr_cv_is_num(&a.c), bc = b.k == V_CONST && nr_cv_is_num(&b.c);
    bool as = ac, bs = bc;
    if ((!as && a.k != V_IR) || (!bs && b.k != V_IR))
        nr_sm_fail(s, loc, "unsupported operand types for %s: %s and %s", opname, nr_sm_val_kind(s, a),
                   nr_sm_val_kind(s, b));
    NrDtype adt = as ? nr_cv_default_dtype(&a.c) : dt_of(s, a.ir);
    NrDtype bdt = bs ? nr_cv_default_dtype(&b.c) : dt_of(s, b.ir);
    bool ap = !as && is_ptr(s, a.ir), bp = !bs && is_ptr(s, b.ir);
    const char *an = as ? nr_dt_name(s->a, adt, 0) : elem_name(s, a.ir);
    const char *bn = bs ? nr_dt_name(s->a, bdt, 0) : elem_name(s, b.ir);
    if ((ap && !allow_ptr_a) || (bp && !allow_ptr_b) || (ap && bp && nr_sm_tid(s, a.ir) != nr_sm_tid(s, b.ir) &&
                                                            nr_type_elem(s->m, nr_sm_tid(s, a.ir)) !=
                                                                nr_type_elem(s->m, nr_sm_tid(s, b.ir))) ||
        (ap && !bp && nr_dt_is_float(bdt)) || (bp && !ap && nr_dt_is_float(adt)))
        nr_sm_fail(s, loc, "unsupported operand types for %s: %s and %s", opname, an, bn);
    NrValId x, y;
    if (arith && !ap && !bp) {
        NrDtype rt = computation_type(s, loc, opname, adt, scalars && ac, bdt, scalars && bc, div_or_mod);
        if ((as && cv_negative(&a.c) && dt_unsigned(rt) && nr_dt_is_int(rt)) ||
            (bs && cv_negative(&b.c) && dt_unsigned(rt) && nr_dt_is_int(rt)))
            nr_sm_fail(s, loc, "cannot %s an unsigned tensor (%s) and a negative number; cast one of them explicitly",
                       strcmp(opname, "+") == 0 ? "add" : nr_sprintf(s->a, "apply %s to", opname),
                       nr_dt_name(s->a, rt, 0));
        if (nr_dt_is_int(rt)) {
            if (as && !int_fits(rt, &a.c))
                nr_sm_fail(s, loc, "the number %s is out of range for %s", nr_cv_str_of(s->a, &a.c),
                           nr_dt_name(s->a, rt, 0));
            if (bs && !int_fits(rt, &b.c))
                nr_sm_fail(s, loc, "the number %s is out of range for %s", nr_cv_str_of(s->a, &b.c),
                           nr_dt_name(s->a, rt, 0));
        }
        x = as ? const_as(s, loc, &a.c, rt, bs ? 0 : b.ir) : nr_sm_cast(s, loc, a.ir, rt, 0, NULL);
        y = bs ? const_as(s, loc, &b.c, rt, x) : nr_sm_cast(s, loc, b.ir, rt, 0, NULL);
    } else {
        x = as ? const_as(s, loc, &a.c, adt, bs ? 0 : b.ir) : a.ir;
        y = bs ? const_as(s, loc, &b.c, bdt, x) : b.ir;
    }
    nr_sm_broadcast_pair(s, loc, &x, &y);
    *ra = x;
    *rb = y;
}

void nr_sm_binary_prep(Sema *s, NrLoc loc, const char *opname, Val a, Val b, bool allow_ptr_a, bool allow_ptr_b,
                       bool arith, bool div_or_mod, NrValId *ra, NrValId *rb) {
    binary_prep(s, loc, opname, a, b, allow_ptr_a, allow_ptr_b, arith, div_or_mod, true, ra, rb);
}

void nr_sm_binary_prep_tensors(Sema *s, NrLoc loc, const char *opname, Val a, Val b, NrValId *ra, NrValId *rb) {
    binary_prep(s, loc, opname, a, b, false, false, true, false, false, ra, rb);
}

/* --- operators ------------------------------------------------------------------------------------ */
static const char *binop_name(int op) {
    static const char *const n[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
    return op >= 0 && op < (int)NR_COUNTOF(n) ? n[op] : "?";
}

static NrValId emit_bin(Sema *s, NrLoc loc, NrOpcode opc, NrValId a, NrValId b) {
    return nr_sm_emit(s, loc, opc, nr_sm_tid(s, a), 2, (NrValId[]){a, b});
}

static Val tuple_binop(Sema *s, NrLoc loc, int op, Val a, Val b) {
    if (op == NR_BIN_ADD && a.k == V_TUPLE && b.k == V_TUPLE) {
        if (a.tup.n + b.tup.n > SM_MAX_TUPLE) nr_sm_fail(s, loc, "tuple too long (more than %d elements)", SM_MAX_TUPLE);
        Val r = nr_sm_tuple(s, a.tup.n + b.tup.n);
        for (int i = 0; i < a.tup.n; i++) r.tup.v[i] = a.tup.v[i];
        for (int i = 0; i < b.tup.n; i++) r.tup.v[a.tup.n + i] = b.tup.v[i];
        return r;
    }
    if (op == NR_BIN_MUL && (a.k == V_TUPLE || b.k == V_TUPLE)) {
        Val t = a.k == V_TUPLE ? a : b, k = a.k == V_TUPLE ? b : a;
        if (k.k == V_CONST && (k.c.kind == NR_CV_INT || k.c.kind == NR_CV_BOOL)) {
            int64_t n = k.c.kind == NR_CV_BOOL ? k.c.b : k.c.is_unsigned ? INT64_MAX : k.c.i;
            if (n < 0) n = 0;
            if (n * (int64_t)t.tup.n > SM_MAX_TUPLE)
                nr_sm_fail(s, loc, "tuple too long (more than %d elements)", SM_MAX_TUPLE);
            Val r = nr_sm_tuple(s, (int)(n * t.tup.n));
            for (int64_t i = 0; i < n; i++)
                for (int j = 0; j < t.tup.n; j++) r.tup.v[i * t.tup.n + j] = t.tup.v[j];
            return r;
        }
    }
    nr_sm_fail(s, loc, "unsupported operand types for %s: %s and %s", binop_name(op), nr_sm_val_kind(s, a),
               nr_sm_val_kind(s, b));
}

static Val add_ptr(Sema *s, NrLoc loc, NrValId p, NrValId off) {
    NrDtype odt = dt_of(s, off);
    if (dt_unsigned(odt) && nr_dt_bits(odt) < 64) off = nr_sm_cast(s, loc, off, NR_DT_I64, 0, NULL);
    return v_ir(nr_sm_emit(s, loc, NR_OP_ADDPTR, nr_sm_tid(s, p), 2, (NrValId[]){p, off}));
}

/* The shift right of Triton: arithmetic if the tensor operand is signed. */
static Val shift_right(Sema *s, NrLoc loc, Val a, Val b, NrValId x, NrValId y) {
    NrValId t = a.k == V_IR ? a.ir : b.ir;
    bool want_signed = !dt_unsigned(dt_of(s, t));
    NrDtype rt = dt_of(s, x);
    if (want_signed == !dt_unsigned(rt) || rt == NR_DT_I1) return v_ir(emit_bin(s, loc, NR_OP_SHR, x, y));
    /* reinterpret as the other signedness for the shift, then back */
    static const NrDtype sgn[] = {[NR_DT_I8] = NR_DT_U8, [NR_DT_I16] = NR_DT_U16, [NR_DT_I32] = NR_DT_U32,
                                  [NR_DT_I64] = NR_DT_U64, [NR_DT_U8] = NR_DT_I8, [NR_DT_U16] = NR_DT_I16,
                                  [NR_DT_U32] = NR_DT_I32, [NR_DT_U64] = NR_DT_I64};
    NrDtype other = sgn[rt];
    NrValId xs = nr_sm_bitcast(s, loc, x, other, 0), ys = nr_sm_bitcast(s, loc, y, other, 0);
    return v_ir(nr_sm_bitcast(s, loc, emit_bin(s, loc, NR_OP_SHR, xs, ys), rt, 0));
}

Val nr_sm_binop(Sema *s, NrLoc loc, int op, Val a, Val b) {
    if (a.k == V_CONST && b.k == V_CONST) return v_const(nr_cv_binop(s, loc, op, &a.c, &b.c));
    if (a.k == V_TUPLE || b.k == V_TUPLE) return tuple_binop(s, loc, op, a, b);
    const char *name = binop_name(op);
    NrValId x, y;
    switch ((NrBinOp)op) {
    case NR_BIN_ADD: {
        nr_sm_binary_prep(s, loc, name, a, b, true, true, true, false, &x, &y);
        bool xp = is_ptr(s, x), yp = is_ptr(s, y);
        if (xp && yp) nr_sm_fail(s, loc, "cannot add pointers together");
        if (yp) return add_ptr(s, loc, y, x);
        if (xp) return add_ptr(s, loc, x, y);
        return v_ir(emit_bin(s, loc, NR_OP_ADD, x, y));
    }
    case NR_BIN_SUB:
        nr_sm_binary_prep(s, loc, name, a, b, true, false, true, false, &x, &y);
        if (is_ptr(s, x)) return add_ptr(s, loc, x, nr_sm_emit(s, loc, NR_OP_NEG, nr_sm_tid(s, y), 1, &y));
        return v_ir(emit_bin(s, loc, NR_OP_SUB, x, y));
    case NR_BIN_MUL:
        nr_sm_binary_prep(s, loc, name, a, b, false, false, true, false, &x, &y);
        return v_ir(emit_bin(s, loc, NR_OP_MUL, x, y));
    case NR_BIN_DIV:
        nr_sm_binary_prep(s, loc, name, a, b, false, false, true, true, &x, &y);
        if (nr_dt_is_int(dt_of(s, x))) {
            x = nr_sm_cast(s, loc, x, NR_DT_F32, 0, NULL);
            y = nr_sm_cast(s, loc, y, NR_DT_F32, 0, NULL);
        }
        return v_ir(emit_bin(s, loc, NR_OP_DIV, x, y));
    case NR_BIN_FLOORDIV:
        nr_sm_binary_prep(s, loc, name, a, b, false, false, true, true, &x, &y);
        if (!nr_dt_is_int(dt_of(s, x)))
            nr_sm_fail(s, loc, "'//' takes integers, got %s (Triton has no floor division of floats; use tl.floor(a / b))",
                       elem_name(s, x));
        return v_ir(emit_bin(s, loc, NR_OP_DIV, x, y));
    case NR_BIN_MOD:
        nr_sm_binary_prep(s, loc, name, a, b, false, false, true, true, &x, &y);
        return v_ir(emit_bin(s, loc, NR_OP_REM, x, y));
    case NR_BIN_POW:
        nr_sm_fail(s, loc, "'**' is not supported on tensors; use libdevice.pow (or multiply)");
    case NR_BIN_MATMUL: nr_sm_fail(s, loc, "'@' is not supported; use tl.dot");
    case NR_BIN_LSHIFT:
    case NR_BIN_RSHIFT:
    case NR_BIN_BITAND:
    case NR_BIN_BITOR:
    case NR_BIN_BITXOR: {
        nr_sm_binary_prep(s, loc, name, a, b, false, false, true, false, &x, &y);
        if (!nr_dt_is_int(dt_of(s, x))) {
            const char *an = a.k == V_IR ? elem_name(s, a.ir) : nr_dt_name(s->a, nr_cv_default_dtype(&a.c), 0);
            const char *bn = b.k == V_IR ? elem_name(s, b.ir) : nr_dt_name(s->a, nr_cv_default_dtype(&b.c), 0);
            nr_sm_fail(s, loc, "unsupported operand types for %s: %s and %s (bitwise operators take integers)", name, an,
                       bn);
        }
        if (op == NR_BIN_RSHIFT) return shift_right(s, loc, a, b, x, y);
        NrOpcode opc = op == NR_BIN_LSHIFT ? NR_OP_SHL : op == NR_BIN_BITAND ? NR_OP_AND : op == NR_BIN_BITOR ? NR_OP_OR
                                                                                                             : NR_OP_XOR;
        return v_ir(emit_bin(s, loc, opc, x, y));
    }
    }
    NR_UNREACHABLE();
}

static const char *const cmp_preds[] = {"lt", "le", "gt", "ge", "eq", "ne"};
static const char *const cmp_syms[] = {"<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in"};

static bool val_is(Val a, Val b) {
    if (a.k == V_CONST && b.k == V_CONST) return a.c.kind == b.c.kind && nr_cv_eq(&a.c, &b.c);
    return nr_sm_val_same(a, b);
}

static bool contains(Sema *s, NrLoc loc, Val hay, Val x) {
    if (hay.k == V_TUPLE) {
        for (int i = 0; i < hay.tup.n; i++) {
            Val e = hay.tup.v[i];
            if (e.k == V_CONST && x.k == V_CONST ? nr_cv_eq(&e.c, &x.c) : nr_sm_val_same(e, x)) return true;
        }
        return false;
    }
    if (hay.k == V_CONST && hay.c.kind == NR_CV_STR && x.k == V_CONST && x.c.kind == NR_CV_STR) {
        if (x.c.str.len == 0) return true;
        return x.c.str.len <= hay.c.str.len && memmem(hay.c.str.s, hay.c.str.len, x.c.str.s, x.c.str.len) != NULL;
    }
    nr_sm_fail(s, loc, "'in' needs a tuple or a string on its right, got %s", nr_sm_val_kind(s, hay));
}

Val nr_sm_compare(Sema *s, NrLoc loc, int cmp, Val a, Val b) {
    switch ((NrCmpOp)cmp) {
    case NR_CMP_IS: return v_const(nr_cv_bool(val_is(a, b)));
    case NR_CMP_ISNOT: return v_const(nr_cv_bool(!val_is(a, b)));
    case NR_CMP_IN: return v_const(nr_cv_bool(contains(s, loc, b, a)));
    case NR_CMP_NOTIN: return v_const(nr_cv_bool(!contains(s, loc, b, a)));
    default: break;
    }
    if (a.k == V_CONST && b.k == V_CONST) return v_const(nr_cv_compare(s, loc, cmp, &a.c, &b.c));
    if (a.k != V_IR && b.k != V_IR) {
        if (cmp == NR_CMP_EQ || cmp == NR_CMP_NE) {
            bool eq;
            if (a.k == V_TUPLE && b.k == V_TUPLE) {
                eq = a.tup.n == b.tup.n;
                for (int i = 0; eq && i < a.tup.n; i++) {
                    Val r = nr_sm_compare(s, loc, NR_CMP_EQ, a.tup.v[i], b.tup.v[i]);
                    if (r.k != V_CONST) nr_sm_fail(s, loc, "tuples holding tensors cannot be compared");
                    eq = nr_cv_truthy(&r.c);
                }
            } else {
                eq = nr_sm_val_same(a, b);
            }
            return v_const(nr_cv_bool(cmp == NR_CMP_EQ ? eq : !eq));
        }
        nr_sm_fail(s, loc, "'%s' is not supported between %s and %s", cmp_syms[cmp], nr_sm_val_kind(s, a),
                   nr_sm_val_kind(s, b));
    }
    /* Triton turns Python numbers into tensors before comparing: they take
     * part in the promotion like tensors of their default dtype */
    NrValId x, y;
    bool ptrs = a.k == V_IR && b.k == V_IR && is_ptr(s, a.ir) && is_ptr(s, b.ir);
    binary_prep(s, loc, cmp_syms[cmp], a, b, ptrs, ptrs, true, false, false, &x, &y);
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_CMP, 2, (NrValId[]){x, y}, 1,
                              (NrTypeId[]){with_elem(s, nr_sm_tid(s, x), NR_DT_I1, 0)}, 0);
    nr_op_set_str(s->fn->f, op, NR_A_PRED, cmp_preds[cmp]);
    return v_ir(nr_op_result(s->fn->f, op, 0));
}

static NrValId all_ones(Sema *s, NrLoc loc, NrValId like) {
    NrCVal c = nr_cv_int(dt_of(s, like) == NR_DT_I1 ? 1 : -1);
    return nr_sm_const(s, loc, nr_sm_tid(s, like), &c);
}

Val nr_sm_unop(Sema *s, NrLoc loc, int op, Val a) {
    if (a.k == V_CONST) return v_const(nr_cv_unop(s, loc, op, &a.c));
    if (op == NR_UN_NOT && a.k != V_IR) {
        bool t = a.k == V_TUPLE ? a.tup.n > 0 : true;
        return v_const(nr_cv_bool(!t));
    }
    static const char *const names[] = {"unary -", "unary +", "~", "not"};
    if (a.k != V_IR) nr_sm_fail(s, loc, "bad operand type for %s: %s", names[op & 3], nr_sm_val_kind(s, a));
    NrValId x = a.ir;
    NrDtype dt = dt_of(s, x);
    switch ((NrUnOp)op) {
    case NR_UN_POS:
        if (is_ptr(s, x)) break;
        return a;
    case NR_UN_NEG:
        if (is_ptr(s, x)) break;
        if (nr_dt_is_float(dt)) { /* Triton computes 0 - x */
            NrCVal z = nr_cv_float(0.0);
            return v_ir(emit_bin(s, loc, NR_OP_SUB, nr_sm_const(s, loc, nr_sm_tid(s, x), &z), x));
        }
        return v_ir(nr_sm_emit(s, loc, NR_OP_NEG, nr_sm_tid(s, x), 1, &x));
    case NR_UN_INVERT:
        if (is_ptr(s, x) || nr_dt_is_float(dt)) break;
        return v_ir(emit_bin(s, loc, NR_OP_XOR, x, all_ones(s, loc, x)));
    case NR_UN_NOT:
        if (is_ptr(s, x) || dt != NR_DT_I1)
            nr_sm_fail(s, loc, "'not' takes a boolean (int1) value, got %s; compare it first (x == 0) or use '~'",
                       elem_name(s, x));
        return v_ir(emit_bin(s, loc, NR_OP_XOR, x, all_ones(s, loc, x)));
    }
    nr_sm_fail(s, loc, "bad operand type for %s: %s", names[op & 3], elem_name(s, x));
}

Val nr_sm_logical(Sema *s, NrLoc loc, bool is_and, Val a, Val b) {
    const char *name = is_and ? "and" : "or";
    NrValId x = nr_sm_to_ir(s, loc, a, nr_sprintf(s->a, "an operand of '%s'", name));
    NrValId y = nr_sm_to_ir(s, loc, b, nr_sprintf(s->a, "an operand of '%s'", name));
    if (is_ptr(s, x) || dt_of(s, x) != NR_DT_I1 || is_ptr(s, y) || dt_of(s, y) != NR_DT_I1)
        nr_sm_fail(s, loc, "'%s' takes boolean (int1) values, got %s and %s; use '%s' for a bitwise %s", name,
                   elem_name(s, x), elem_name(s, y), is_and ? "&" : "|", name);
    nr_sm_broadcast_pair(s, loc, &x, &y);
    return v_ir(emit_bin(s, loc, is_and ? NR_OP_AND : NR_OP_OR, x, y));
}

/* --- expressions ---------------------------------------------------------------------------------- */
static Val lower_boolop(Sema *s, const NrExpr *e) {
    bool is_and = e->bin.op == NR_BOOL_AND;
    Val l = nr_sm_lower_expr(s, e->bin.l);
    if (l.k != V_IR) {
        bool t = l.k == V_CONST ? nr_cv_truthy(&l.c) : l.k == V_TUPLE ? l.tup.n > 0 : true;
        if (is_and ? !t : t) return l;
        return nr_sm_lower_expr(s, e->bin.r);
    }
    Val r = nr_sm_lower_expr(s, e->bin.r);
    if (r.k != V_IR) {
        bool t = r.k == V_CONST ? nr_cv_truthy(&r.c) : r.k == V_TUPLE ? r.tup.n > 0 : true;
        if (is_and ? !t : t) return r;
        return l;
    }
    return nr_sm_logical(s, e->loc, is_and, l, r);
}

static int64_t index_int(Sema *s, const NrExpr *e, Val v, const char *what) {
    if (v.k != V_CONST || (v.c.kind != NR_CV_INT && v.c.kind != NR_CV_BOOL))
        nr_sm_fail(s, e->loc, "%s must be a constexpr int, got %s%s", what, nr_sm_val_kind(s, v), nr_sm_const_hint(s, v));
    if (v.c.kind == NR_CV_BOOL) return v.c.b;
    if (v.c.is_unsigned) return INT64_MAX;
    return v.c.i;
}

static Val slice_tuple(Sema *s, const NrExpr *sl, Val t) {
    int64_t n = t.tup.n;
    int64_t step = 1;
    if (sl->slice.step) step = index_int(s, sl->slice.step, nr_sm_lower_expr(s, sl->slice.step), "a slice step");
    if (step == 0) nr_sm_fail(s, sl->loc, "slice step cannot be zero");
    int64_t lo = step > 0 ? 0 : n - 1, hi = step > 0 ? n : -1;
    if (sl->slice.lo) {
        lo = index_int(s, sl->slice.lo, nr_sm_lower_expr(s, sl->slice.lo), "a slice bound");
        if (lo < 0) lo += n;
        if (lo < 0) lo = step > 0 ? 0 : -1;
        if (lo > n) lo = step > 0 ? n : n - 1;
        if (step < 0 && lo >= n) lo = n - 1;
    }
    if (sl->slice.hi) {
        hi = index_int(s, sl->slice.hi, nr_sm_lower_expr(s, sl->slice.hi), "a slice bound");
        if (hi < 0) hi += n;
        if (hi < 0) hi = step > 0 ? 0 : -1;
        if (hi > n) hi = n;
    }
    int cnt = 0;
    Val *tmp = nr_alloc(s->a, sizeof(Val) * (size_t)(n + 1));
    for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) tmp[cnt++] = t.tup.v[i];
    Val r = nr_sm_tuple(s, cnt);
    for (int i = 0; i < cnt; i++) r.tup.v[i] = tmp[i];
    return r;
}

static Val lower_subscript(Sema *s, const NrExpr *e) {
    Val v = nr_sm_lower_expr(s, e->sub.value);
    if (v.k == V_TUPLE) {
        if (e->sub.nidx != 1) nr_sm_fail(s, e->loc, "a tuple takes one index");
        const NrExpr *ix = e->sub.idx[0];
        if (ix->kind == NR_E_SLICE) return slice_tuple(s, ix, v);
        int64_t i = index_int(s, ix, nr_sm_lower_expr(s, ix), "a tuple index");
        if (i < 0) i += v.tup.n;
        if (i < 0 || i >= v.tup.n)
            nr_sm_fail(s, ix->loc, "tuple index out of range (the tuple has %d elements)", v.tup.n);
        return v.tup.v[i];
    }
    if (v.k != V_IR) nr_sm_fail(s, e->loc, "%s cannot be indexed", nr_sm_val_kind(s, v));
    NrValId x = v.ir;
    int rank = rank_of(s, x), colons = 0;
    for (int d = 0; d < e->sub.nidx; d++) {
        const NrExpr *ix = e->sub.idx[d];
        bool none = ix->kind == NR_E_NONE;
        if (!none && ix->kind != NR_E_SLICE) {
            Val iv = nr_sm_lower_expr(s, ix);
            none = iv.k == V_CONST && iv.c.kind == NR_CV_NONE;
            if (!none)
                nr_sm_fail(s, ix->loc, "unsupported tensor index: blocks can only be indexed with None (a new axis) "
                                       "and ':' (a whole axis)");
        }
        if (none) {
            x = nr_sm_expand_dims(s, ix->loc, x, d);
        } else {
            if (ix->slice.lo || ix->slice.hi || ix->slice.step)
                nr_sm_fail(s, ix->loc, "unsupported tensor index: only ':' (a whole axis) can be sliced");
            if (++colons > rank)
                nr_sm_fail(s, ix->loc, "too many indices for a block of rank %d", rank);
        }
    }
    return v_ir(x);
}

static Val lower_call_expr(Sema *s, const NrExpr *e) {
    Val fn = nr_sm_lower_expr(s, e->call.func);
    int na = e->call.nargs, nk = e->call.nkw;
    Val *args = nr_alloc(s->a, sizeof(Val) * (size_t)(na + 1));
    NrLoc *locs = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(na + 1));
    const char **kwn = nr_alloc(s->a, sizeof(char *) * (size_t)(nk + 1));
    Val *kwv = nr_alloc(s->a, sizeof(Val) * (size_t)(nk + 1));
    NrLoc *kwl = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(nk + 1));
    for (int i = 0; i < na; i++) {
        args[i] = nr_sm_lower_expr(s, e->call.args[i]);
        locs[i] = e->call.args[i]->loc;
    }
    for (int i = 0; i < nk; i++) {
        kwn[i] = e->call.kw[i].name;
        kwv[i] = nr_sm_lower_expr(s, e->call.kw[i].value);
        kwl[i] = e->call.kw[i].loc.line ? e->call.kw[i].loc : e->call.kw[i].value->loc;
    }
    return nr_sm_call(s, e->loc, fn, na, args, locs, nk, kwn, kwv, kwl);
}

Val nr_sm_call(Sema *s, NrLoc loc, Val fn, int nargs, const Val *args, const NrLoc *arglocs, int nkw,
               const char *const *kwnames, const Val *kwargs, const NrLoc *kwlocs) {
    switch (fn.k) {
    case V_BUILTIN:
        return nr_sm_call_builtin(s, loc, fn.bi.bi, fn.bi.self, nargs, args, arglocs, nkw, kwnames, kwargs, kwlocs);
    case V_JITFN: return nr_sm_call_jit(s, loc, fn.fn, nargs, args, arglocs, nkw, kwnames, kwargs);
    case V_MODULE:
        if (fn.mod == SM_MOD_HOST) nr_sm_fail(s, loc, "kernels cannot call into host modules");
        nr_sm_fail(s, loc, "module %s is not callable", nr_sm_module_name(fn.mod));
    default: nr_sm_fail(s, loc, "%s is not callable", nr_sm_val_kind(s, fn));
    }
}

Val nr_sm_getattr(Sema *s, NrLoc loc, Val v, const char *name) {
    switch (v.k) {
    case V_MODULE:
        if (v.mod == SM_MOD_HOST)
            nr_sm_fail(s, loc, "'%s' belongs to a host module; kernels can only use triton.language (tl), triton and "
                               "libdevice",
                       name);
        return nr_sm_module_attr(s, loc, v.mod, name);
    case V_IR: return nr_sm_tensor_attr(s, loc, v, name);
    case V_CONST:
        if (strcmp(name, "value") == 0) return v;
        if (v.c.kind == NR_CV_DTYPE) return nr_sm_dtype_attr(s, loc, v, name);
        break;
    case V_TYPE: return nr_sm_dtype_attr(s, loc, v, name);
    case V_TUPLE:
        if (v.tup.desc) return nr_sm_desc_attr(s, loc, v, name);
        break;
    default: break;
    }
    nr_sm_fail(s, loc, "%s has no attribute '%s'", nr_sm_val_kind(s, v), name);
}

static Val lower_literal(Sema *s, const NrExpr *e) {
    switch (e->kind) {
    case NR_E_INT: return v_const(nr_cv_uint(e->lit.u));
    case NR_E_FLOAT: return v_const(nr_cv_float(e->lit.f));
    case NR_E_BOOL: return v_const(nr_cv_bool(e->lit.b));
    case NR_E_NONE: return nr_sm_none();
    case NR_E_STR: return v_const(nr_cv_str(s->a, e->str.s ? e->str.s : "", e->str.s ? e->str.len : 0));
    default: NR_UNREACHABLE();
    }
}

static Val lower_expr_inner(Sema *s, const NrExpr *e) {
    switch (e->kind) {
    case NR_E_NAME: return nr_sm_lookup(s, e->loc, e->name.id);
    case NR_E_INT:
    case NR_E_FLOAT:
    case NR_E_BOOL:
    case NR_E_NONE:
    case NR_E_STR: return lower_literal(s, e);
    case NR_E_ATTR: return nr_sm_getattr(s, e->attr.name_loc.line ? e->attr.name_loc : e->loc,
                                         nr_sm_lower_expr(s, e->attr.value), e->attr.name);
    case NR_E_SUBSCRIPT: return lower_subscript(s, e);
    case NR_E_CALL: return lower_call_expr(s, e);
    case NR_E_BINOP: {
        Val l = nr_sm_lower_expr(s, e->bin.l);
        Val r = nr_sm_lower_expr(s, e->bin.r);
        return nr_sm_binop(s, e->loc, e->bin.op, l, r);
    }
    case NR_E_UNARY: return nr_sm_unop(s, e->loc, e->un.op, nr_sm_lower_expr(s, e->un.x));
    case NR_E_BOOLOP: return lower_boolop(s, e);
    case NR_E_COMPARE: {
        Val l = nr_sm_lower_expr(s, e->bin.l);
        Val r = nr_sm_lower_expr(s, e->bin.r);
        return nr_sm_compare(s, e->loc, e->bin.op, l, r);
    }
    case NR_E_IFEXP:
        if (!s->fn) {
            NrCVal c = nr_sm_const_expr(s, e->ifexp.cond, "the condition");
            return nr_sm_lower_expr(s, nr_cv_truthy(&c) ? e->ifexp.then : e->ifexp.els);
        }
        return nr_sm_lower_ifexp(s, e);
    case NR_E_TUPLE:
    case NR_E_LIST: {
        Val t = nr_sm_tuple(s, e->seq.n);
        for (int i = 0; i < e->seq.n; i++) t.tup.v[i] = nr_sm_lower_expr(s, e->seq.v[i]);
        return t;
    }
    case NR_E_SLICE: nr_sm_fail(s, e->loc, "a slice can only be used as an index");
    case NR_E_ELLIPSIS: nr_sm_fail(s, e->loc, "'...' is not supported in kernels");
    }
    nr_sm_fail(s, e->loc, "unsupported expression");
}

Val nr_sm_lower_expr(Sema *s, const NrExpr *e) {
    nr_sm_enter(s, e->loc);
    Val v = lower_expr_inner(s, e);
    nr_sm_leave(s);
    return v;
}

NrCVal nr_sm_const_expr(Sema *s, const NrExpr *e, const char *what) {
    Val v = nr_sm_lower_expr(s, e);
    if (v.k != V_CONST) nr_sm_fail(s, e->loc, "%s must be a compile-time constant, got %s", what, nr_sm_val_kind(s, v));
    return v.c;
}
