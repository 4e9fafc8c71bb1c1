/* sema_escape.c - the elementwise escapes: tl.inline_asm_elementwise and
 * tl.map_elementwise.
 *
 * inline_asm_elementwise becomes one `inline_asm` op over the broadcast
 * operands, with one result per requested dtype; the PTX emitter pastes the
 * assembly once per `pack` elements of each thread, with $0.. naming the
 * results' registers and then the operands'.  The interpreter cannot run
 * PTX and reports the op.
 *
 * map_elementwise(fn, *args, pack=1) calls the @jit function fn on the
 * broadcast blocks themselves: the function is written for one element, and
 * elementwise code means the same on blocks.  While it is lowered, an `if`
 * (or a conditional expression) whose condition differs between elements
 * lowers both branches and selects each changed variable (and an early
 * return's value) element by element; nothing with an effect (stores,
 * atomics, prints, barriers) may appear, since every branch runs.  With
 * pack > 1 each of fn's pack slots of an argument receives the same block
 * and the results of slot 0 are kept: which elements share an instance is
 * unspecified in Triton, and a function whose slots are independent gives
 * the same values under any grouping. */
#include "sema_impl.h"

#include <string.h>

#define BN(c) nr_sm_builtin_name(s, (c)->bi)

static const char *str_arg(Sema *s, const SmCall *c, int i, const char *what) {
    Val v = c->arg[i];
    if (v.k != V_CONST || v.c.kind != NR_CV_STR)
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must be a constexpr string, got %s", what, BN(c), nr_sm_val_kind(s, v));
    if (memchr(v.c.str.s, 0, v.c.str.len))
        nr_sm_fail(s, c->argloc[i], "'%s' of %s must not contain NUL characters", what, BN(c));
    return v.c.str.s;
}

static int64_t pack_arg(Sema *s, const SmCall *c, int i) {
    Val v = c->arg[i];
    if (v.k != V_CONST || (v.c.kind != NR_CV_INT && v.c.kind != NR_CV_BOOL))
        nr_sm_fail(s, c->argloc[i], "'pack' of %s must be a constexpr int, got %s", BN(c), nr_sm_val_kind(s, v));
    int64_t p = v.c.kind == NR_CV_BOOL ? v.c.b : v.c.i;
    if (p < 1 || p > 64 || v.c.is_unsigned)
        nr_sm_fail(s, c->argloc[i], "'pack' of %s must be 1 to 64, got %s", BN(c), nr_cv_str_of(s->a, &v.c));
    return p;
}

/* The arguments as tensors (numbers take their default dtype), broadcast to one shape. */
static int tensor_args(Sema *s, const SmCall *c, int i, NrValId **out) {
    Val a = c->arg[i];
    if (a.k != V_TUPLE || a.tup.desc)
        nr_sm_fail(s, c->argloc[i], "'args' of %s must be a list or tuple of tensors, got %s", BN(c),
                   nr_sm_val_kind(s, a));
    int n = a.tup.n;
    NrValId *x = nr_alloc(s->a, sizeof(NrValId) * (size_t)(n + 1));
    for (int k = 0; k < n; k++)
        x[k] = nr_sm_to_ir(s, c->argloc[i], a.tup.v[k], nr_sprintf(s->a, "argument %d of %s", k, BN(c)));
    for (int pass = 0; pass < 2; pass++)
        for (int k = 1; k < n; k++) nr_sm_broadcast_pair(s, c->loc, &x[0], &x[k]);
    *out = x;
    return n;
}

/* inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack) */
static Val h_inline_asm(Sema *s, const SmCall *c) {
    const char *asm_text = str_arg(s, c, 0, "asm"), *cons = str_arg(s, c, 1, "constraints");
    NrValId *x;
    int n = tensor_args(s, c, 2, &x);
    Val dts = c->arg[3];
    bool many = dts.k == V_TUPLE;
    int nres = many ? dts.tup.n : 1;
    if (nres < 1) nr_sm_fail(s, c->argloc[3], "%s must return at least one tensor (dtype is empty)", BN(c));
    if (nres > 64) nr_sm_fail(s, c->argloc[3], "%s: too many results (%d)", BN(c), nres);
    Val pure = c->arg[4];
    if (pure.k != V_CONST || (pure.c.kind != NR_CV_BOOL && pure.c.kind != NR_CV_INT))
        nr_sm_fail(s, c->argloc[4], "'is_pure' of %s must be a constexpr bool, got %s", BN(c), nr_sm_val_kind(s, pure));
    int64_t pack = pack_arg(s, c, 5);
    if (!pure.c.b) nr_sm_no_effects(s, c->loc, "inline assembly that is not pure");
    /* the shape: the operands', or a scalar without operands */
    int rank = n ? nr_sm_type(s, x[0])->rank : 0;
    int32_t shape[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) shape[i] = nr_sm_type(s, x[0])->shape[i];
    NrTypeId *rts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)nres);
    for (int i = 0; i < nres; i++) {
        Val d = many ? dts.tup.v[i] : dts;
        if (d.k != V_CONST || d.c.kind != NR_CV_DTYPE || d.c.ptr)
            nr_sm_fail(s, c->argloc[3], "'dtype' of %s must be a dtype or a tuple of dtypes, got %s", BN(c),
                       nr_sm_val_kind(s, d));
        if (d.c.dt == NR_DT_I1) nr_sm_fail(s, c->argloc[3], "%s cannot return int1 tensors", BN(c));
        NrTypeId et = nr_type_scalar(s->m, d.c.dt);
        rts[i] = rank ? nr_type_block(s->m, et, rank, shape) : et;
    }
    for (int k = 0; k < n; k++)
        if (!nr_sm_type(s, x[k])->ptr && nr_sm_type(s, x[k])->dtype == NR_DT_I1)
            nr_sm_fail(s, c->argloc[2], "%s cannot take int1 tensors; convert them to int8 or int32", BN(c));
    NrOpId op = nr_sm_emit_op(s, c->loc, NR_OP_INLINE_ASM, n, x, nres, rts, 0);
    NrFunc *f = s->fn->f;
    nr_op_set_str(f, op, NR_A_ASM, asm_text);
    nr_op_set_str(f, op, NR_A_CONSTRAINTS, cons);
    nr_op_set_int(f, op, NR_A_PACK, pack);
    nr_op_set_bool(f, op, NR_A_PURE, nr_cv_truthy(&pure.c));
    if (!many) return v_ir(nr_op_result(f, op, 0));
    Val t = nr_sm_tuple(s, nres);
    for (int i = 0; i < nres; i++) t.tup.v[i] = v_ir(nr_op_result(f, op, i));
    return t;
}

/* A result of the mapped function as a tensor of the map's shape. */
static Val as_result(Sema *s, NrLoc loc, Val v, int rank, const int32_t *shape) {
    NrValId x = nr_sm_to_ir(s, loc, v, "a result of the function given to tl.map_elementwise");
    return v_ir(nr_sm_broadcast_to(s, loc, x, rank, shape, false));
}

/* map_elementwise(scalar_fn, *args, pack=1) */
static Val h_map(Sema *s, const SmCall *c) {
    Val fn = c->arg[0];
    if (fn.k != V_JITFN)
        nr_sm_fail(s, c->argloc[0], "the function given to %s must be a @jit function, got %s", BN(c),
                   nr_sm_val_kind(s, fn));
    NrValId *x;
    int n = tensor_args(s, c, 1, &x);
    int64_t pack = pack_arg(s, c, 2);
    int rank = n ? nr_sm_type(s, x[0])->rank : 0;
    int32_t shape[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) shape[i] = nr_sm_type(s, x[0])->shape[i];
    int na = (int)(n * pack);
    Val *args = nr_alloc(s->a, sizeof(Val) * (size_t)(na + 1));
    NrLoc *locs = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(na + 1));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < pack; j++) {
            args[i * pack + j] = v_ir(x[i]);
            locs[i * pack + j] = c->argloc[1];
        }
    s->elementwise++;
    Val r = nr_sm_call_jit(s, c->loc, fn.fn, na, args, locs, 0, NULL, NULL);
    s->elementwise--;
    int nr = r.k == V_TUPLE ? r.tup.n : 1;
    if (r.k == V_CONST && r.c.kind == NR_CV_NONE)
        nr_sm_fail(s, c->loc, "the function given to %s returns nothing; it must return a value per element", BN(c));
    if (nr % pack)
        nr_sm_fail(s, c->loc, "the function given to %s returns %d values, not a multiple of pack = %lld", BN(c), nr,
                   (long long)pack);
    int nout = (int)(nr / pack);
    if (r.k != V_TUPLE) return as_result(s, c->loc, r, rank, shape);
    if (nout == 1) return as_result(s, c->loc, r.tup.v[0], rank, shape);
    Val t = nr_sm_tuple(s, nout);
    for (int i = 0; i < nout; i++) t.tup.v[i] = as_result(s, c->loc, r.tup.v[i * pack], rank, shape);
    return t;
}

static const Builtin escapes[] = {
    {"inline_asm_elementwise", SM_IN_TL, "asm, constraints, args, dtype, is_pure, pack", h_inline_asm, 0, NULL},
    {"map_elementwise", SM_IN_TL, "scalar_fn, *args, pack=1", h_map, 0, NULL},
};

const Builtin *nr_sm_find_escape_builtin(const char *name) {
    for (size_t i = 0; i < NR_COUNTOF(escapes); i++)
        if (strcmp(escapes[i].name, name) == 0) return &escapes[i];
    return NULL;
}
