/* gpu_axis.c - axis analysis: per value and dimension, how long the runs of
 * contiguous integers (contiguity) and of equal values (constancy) are, and
 * the largest power of two dividing the first element of each run
 * (divisibility).  The rules are Triton's AxisInfo rules:
 *
 *   const, splat      constancy = the whole dimension; divisibility of the value
 *   arange            contiguity = its length; divisibility of `start`
 *   add, sub, addptr  contiguity from a contiguous side plus a constant side;
 *                     divisibility = gcd (addptr: offsets scaled to bytes)
 *   mul               divisibility multiplies (a contiguous side counts as 1)
 *   div, rem, shifts  by constants: divisibility divides or multiplies, runs
 *                     split along the divisor's multiples
 *   cmp               constant in runs where a contiguous side cannot cross
 *                     the other, constant side (lt / ge, gt / le)
 *   broadcast, expand_dims, trans, convert_layout, casts between ints: moved along
 *   params            `divisibility = N`; equal_to_1 is the constant 1
 *   hint              multiple_of, max_contiguous, max_constancy set the facts
 *   for, while, if    carried values meet (gcd) their initial and yielded
 *                     facts, iterated to a fixed point; the induction variable
 *                     is divisible by gcd(lb, step)
 * Pointer divisibility is kept in bytes; the public NrAxisInfo gives it in
 * elements and, for the most contiguous dimension, in bytes. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

enum {
    MAX_ITER = 64,    /* fixed-point rounds for one loop before giving up */
    MAX_DEPTH = 1000, /* region nesting followed */
};
#define MAX_DIV ((int64_t)1 << 30)

typedef struct AI {
    int32_t contig[NR_MAX_RANK];
    int64_t div[NR_MAX_RANK]; /* bytes for pointers */
    int32_t cons[NR_MAX_RANK];
    bool has_const;
    int64_t cval;
} AI;

typedef struct Axis {
    NrFunc *f;
    NrModule *m;
    AI *ai;
    NrArena *a;     /* the analysis' own memory, released when it is done */
} Axis;

static int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a ? a : 1;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The largest power of two dividing v (0: every power, capped). */
static int64_t pow2_div(int64_t v) {
    if (v == 0) return MAX_DIV;
    uint64_t u = (uint64_t)v;
    u &= ~u + 1;
    return u > (uint64_t)MAX_DIV ? MAX_DIV : (int64_t)u;
}

static int64_t mul_div(int64_t a, int64_t b) {
    if (a >= MAX_DIV || b >= MAX_DIV) return MAX_DIV;
    int64_t p = a * b;
    return p > MAX_DIV ? MAX_DIV : p;
}

/* --- value shapes -------------------------------------------------------------------------------- */
static const NrType *vty(const Axis *x, NrValId v) { return &x->m->types[x->f->vals[v].type]; }
/* Scalars are treated as one-element blocks of rank 1. */
static int vrank(const Axis *x, NrValId v) { return vty(x, v)->rank ? vty(x, v)->rank : 1; }
static int32_t vdim(const Axis *x, NrValId v, int d) { return vty(x, v)->rank ? vty(x, v)->shape[d] : 1; }
static bool vptr(const Axis *x, NrValId v) { return vty(x, v)->ptr > 0; }

/* Bytes of what a pointer type points to. */
static int pointee_bytes(const NrType *t) { return t->ptr > 1 ? 8 : nr_dtype_info[t->dtype].bytes; }

static AI pessimistic(void) {
    AI a;
    memset(&a, 0, sizeof a);
    for (int d = 0; d < NR_MAX_RANK; d++) a.contig[d] = 1, a.div[d] = 1, a.cons[d] = 1;
    return a;
}

/* A constant of value c over the shape of v. */
static AI constant(const Axis *x, NrValId v, int64_t c) {
    AI a = pessimistic();
    for (int d = 0; d < vrank(x, v); d++) {
        a.div[d] = pow2_div(c);
        a.cons[d] = vdim(x, v, d);
    }
    a.has_const = true;
    a.cval = c;
    return a;
}

/* Keeps the facts within the shape: runs no longer than the dimension. */
static void clamp(const Axis *x, NrValId v, AI *a) {
    for (int d = 0; d < vrank(x, v); d++) {
        int32_t n = vdim(x, v, d);
        if (a->contig[d] < 1 || a->contig[d] > n) a->contig[d] = a->contig[d] < 1 ? 1 : n;
        if (a->cons[d] < 1 || a->cons[d] > n) a->cons[d] = a->cons[d] < 1 ? 1 : n;
        if (a->div[d] < 1) a->div[d] = 1;
        if (a->div[d] > MAX_DIV) a->div[d] = MAX_DIV;
        if (!nr_is_pow2(a->div[d])) a->div[d] = pow2_div(a->div[d]);
    }
}

static void set(Axis *x, NrValId v, AI a) {
    if (!v) return;
    clamp(x, v, &a);
    if (a.has_const) {
        for (int d = 0; d < vrank(x, v); d++) {
            a.cons[d] = vdim(x, v, d);
            a.contig[d] = 1;
        }
    }
    x->ai[v] = a;
}

static bool is_contig_dim(const Axis *x, NrValId v, const AI *a, int d) { return a->contig[d] == vdim(x, v, d); }
static bool is_const_dim(const Axis *x, NrValId v, const AI *a, int d) { return a->cons[d] == vdim(x, v, d); }

/* The meet of two facts about one value: what holds for both. */
static AI meet(const AI *a, const AI *b) {
    AI r = pessimistic();
    for (int d = 0; d < NR_MAX_RANK; d++) {
        r.contig[d] = (int32_t)gcd64(a->contig[d], b->contig[d]);
        r.div[d] = gcd64(a->div[d], b->div[d]);
        r.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
    }
    r.has_const = a->has_const && b->has_const && a->cval == b->cval;
    r.cval = a->cval;
    return r;
}

static bool ai_eq(const AI *a, const AI *b) {
    for (int d = 0; d < NR_MAX_RANK; d++)
        if (a->contig[d] != b->contig[d] || a->div[d] != b->div[d] || a->cons[d] != b->cons[d]) return false;
    return a->has_const == b->has_const && (!a->has_const || a->cval == b->cval);
}

/* Divisibility of every element, not just each run's first. */
static int64_t elem_div(const AI *a, int d) { return a->contig[d] > 1 ? 1 : a->div[d]; }

/* --- ops ------------------------------------------------------------------------------------------ */
static const AI *in(const Axis *x, const NrOp *o, int i) { return &x->ai[o->opnds[i]]; }

static AI add_sub(Axis *x, const NrOp *o, bool sub, int64_t scale) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        if (sub) out.contig[d] = (int32_t)gcd64(a->contig[d], b->cons[d]);
        else
            out.contig[d] = (int32_t)max64(gcd64(a->cons[d], b->contig[d]), gcd64(a->contig[d], b->cons[d]));
        /* A result run may start inside an operand's run, c elements past its
         * start: there the operand is divisible by gcd(div, c) only. */
        int64_t c = out.contig[d];
        int64_t da = c >= a->contig[d] ? a->div[d] : gcd64(a->div[d], c);
        int64_t db = c >= b->contig[d] ? b->div[d] : gcd64(b->div[d], c);
        out.div[d] = gcd64(da, mul_div(db, scale));
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
    }
    if (a->has_const && b->has_const) {
        out.has_const = true;
        out.cval = sub ? a->cval - b->cval : a->cval + b->cval * scale;
        for (int d = 0; d < vrank(x, r); d++) out.div[d] = pow2_div(out.cval);
    }
    return out;
}

static AI mul(Axis *x, const NrOp *o) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    bool a1 = a->has_const && a->cval == 1, b1 = b->has_const && b->cval == 1;
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        out.contig[d] = (int32_t)max64(b1 ? a->contig[d] : 1, a1 ? b->contig[d] : 1);
        int64_t da = a->contig[d] > 1 && !b1 ? 1 : a->div[d];
        int64_t db = b->contig[d] > 1 && !a1 ? 1 : b->div[d];
        out.div[d] = mul_div(da, db);
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
    }
    if ((a->has_const && b->has_const) || (a->has_const && a->cval == 0) || (b->has_const && b->cval == 0)) {
        out.has_const = true;
        out.cval = a->has_const && b->has_const ? a->cval * b->cval : 0;
    }
    return out;
}

static AI divide(Axis *x, const NrOp *o) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    bool b1 = b->has_const && b->cval == 1;
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        out.contig[d] = b1 ? a->contig[d] : 1;
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
        if (is_contig_dim(x, r, a, d) && is_const_dim(x, r, b, d))
            out.cons[d] = (int32_t)max64(out.cons[d], gcd64(gcd64(a->contig[d], a->div[d]), b->div[d]));
        if ((a->has_const && a->cval == 0) || b1) out.div[d] = a->div[d];
        else if (b->has_const && b->cval != 0 && nr_is_pow2(b->cval < 0 ? -b->cval : b->cval) && a->contig[d] == 1)
            out.div[d] = max64(1, a->div[d] / (b->cval < 0 ? -b->cval : b->cval));
    }
    if (a->has_const && b->has_const && b->cval != 0 && !(a->cval == INT64_MIN && b->cval == -1)) {
        out.has_const = true;
        out.cval = a->cval / b->cval;
    }
    return out;
}

static AI rem(Axis *x, const NrOp *o) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        if (is_contig_dim(x, r, a, d) && is_const_dim(x, r, b, d))
            out.contig[d] = (int32_t)gcd64(gcd64(a->contig[d], a->div[d]), b->div[d]);
        out.div[d] = b->cons[d] > 1 ? gcd64(a->div[d], b->div[d]) : 1;
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
        if (b->has_const && b->cval == 1) out.cons[d] = vdim(x, r, d);
    }
    if (a->has_const && b->has_const && b->cval != 0 && !(a->cval == INT64_MIN && b->cval == -1)) {
        out.has_const = true;
        out.cval = a->cval % b->cval;
    } else if (b->has_const && b->cval == 1) {
        out.has_const = true;
        out.cval = 0;
    }
    return out;
}

static AI shift(Axis *x, const NrOp *o, bool left) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    bool known = b->has_const && b->cval >= 0 && b->cval < 62;
    int64_t s = known ? b->cval : 0;
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        out.contig[d] = known && s == 0 ? a->contig[d] : 1;
        int64_t da = a->contig[d] > 1 && s ? 1 : a->div[d];
        if (left) out.div[d] = known ? mul_div(da, (int64_t)1 << (s > 30 ? 30 : s)) : 1;
        else out.div[d] = known ? max64(1, da >> s) : 1;
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
    }
    if (a->has_const && known) {
        out.has_const = true;
        out.cval = left ? (int64_t)((uint64_t)a->cval << s) : a->cval >> s;
    }
    return out;
}

/* Elementwise ops that keep no arithmetic structure: runs of equal values
 * survive where every operand is constant. */
static AI elementwise_generic(Axis *x, const NrOp *o) {
    NrValId r = o->results[0];
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        int64_t c = vdim(x, r, d);
        for (int i = 0; i < o->nopnds; i++)
            if (o->opnds[i]) c = gcd64(c, in(x, o, i)->cons[d]);
        out.cons[d] = (int32_t)c;
    }
    return out;
}

static const char *pred_of(Axis *x, NrOpId op) { return nr_op_str(x->f, op, NR_A_PRED, ""); }

static AI compare(Axis *x, NrOpId op) {
    const NrOp *o = &x->f->ops[op];
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    const char *p = pred_of(x, op);
    bool lt = !strcmp(p, "lt"), ge = !strcmp(p, "ge"), gt = !strcmp(p, "gt"), le = !strcmp(p, "le");
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        int64_t c = gcd64(a->cons[d], b->cons[d]);
        NrValId av = o->opnds[0], bv = o->opnds[1];
        if ((gt || le) && is_const_dim(x, av, a, d))
            c = max64(c, gcd64(gcd64(b->contig[d], a->div[d]), b->div[d]));
        else if ((lt || ge) && is_const_dim(x, bv, b, d))
            c = max64(c, gcd64(gcd64(a->contig[d], a->div[d]), b->div[d]));
        out.cons[d] = (int32_t)c;
    }
    if (a->has_const && b->has_const) {
        int64_t u = a->cval, v = b->cval;
        bool res = !strcmp(p, "eq")   ? u == v
                   : !strcmp(p, "ne") ? u != v
                   : lt               ? u < v
                   : le               ? u <= v
                   : gt               ? u > v
                                      : u >= v;
        out.has_const = true;
        out.cval = res;
    }
    return out;
}

static AI select_op(Axis *x, const NrOp *o) {
    NrValId r = o->results[0];
    const AI *c = in(x, o, 0), *a = in(x, o, 1), *b = in(x, o, 2);
    if (c->has_const) return c->cval ? *a : *b;
    bool scalar_cond = vty(x, o->opnds[0])->rank == 0;
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        int64_t cc = scalar_cond ? vdim(x, r, d) : c->cons[d];
        out.cons[d] = (int32_t)gcd64(gcd64(a->cons[d], b->cons[d]), cc);
        out.contig[d] = (int32_t)gcd64(gcd64(a->contig[d], b->contig[d]), cc);
        out.div[d] = gcd64(elem_div(a, d), elem_div(b, d));
    }
    if (a->has_const && b->has_const && a->cval == b->cval) {
        out.has_const = true;
        out.cval = a->cval;
    }
    return out;
}

static AI max_min(Axis *x, const NrOp *o, bool is_max) {
    NrValId r = o->results[0];
    const AI *a = in(x, o, 0), *b = in(x, o, 1);
    if (a->has_const && b->has_const) return constant(x, r, is_max ? max64(a->cval, b->cval) : min64(a->cval, b->cval));
    AI out = pessimistic();
    for (int d = 0; d < vrank(x, r); d++) {
        out.cons[d] = (int32_t)gcd64(a->cons[d], b->cons[d]);
        out.contig[d] = (int32_t)gcd64(a->contig[d], b->contig[d]);
        out.div[d] = gcd64(elem_div(a, d), elem_div(b, d));
    }
    return out;
}

static AI broadcast(Axis *x, const NrOp *o) {
    NrValId r = o->results[0], a = o->opnds[0];
    const AI *ia = in(x, o, 0);
    AI out = *ia;
    for (int d = 0; d < vrank(x, r); d++) {
        bool stretched = vdim(x, a, d) == 1;
        out.contig[d] = stretched ? 1 : ia->contig[d];
        out.cons[d] = stretched ? vdim(x, r, d) : ia->cons[d];
    }
    return out;
}

static AI expand_dims(Axis *x, NrOpId op) {
    const NrOp *o = &x->f->ops[op];
    NrValId a = o->opnds[0];
    const AI *ia = in(x, o, 0);
    int axis = (int)nr_op_int(x->f, op, NR_A_AXIS, 0);
    int ra = vty(x, a)->rank;
    int64_t nd;
    if (ia->has_const) {
        nd = pow2_div(ia->cval);
    } else {
        nd = ra ? elem_div(ia, 0) : ia->div[0];
        for (int d = 1; d < ra; d++) nd = gcd64(nd, elem_div(ia, d));
    }
    AI out = pessimistic();
    for (int d = 0, j = 0; d <= ra && d < NR_MAX_RANK; d++) {
        if (d == axis) {
            out.contig[d] = 1;
            out.div[d] = nd;
            out.cons[d] = 1;
        } else {
            out.contig[d] = ia->contig[j];
            out.div[d] = ia->div[j];
            out.cons[d] = ia->cons[j];
            j++;
        }
    }
    out.has_const = ia->has_const;
    out.cval = ia->cval;
    return out;
}

static AI trans(Axis *x, NrOpId op) {
    const NrOp *o = &x->f->ops[op];
    const AI *ia = in(x, o, 0);
    const NrAttr *order = nr_op_attr(x->f, op, NR_A_ORDER);
    AI out = *ia;
    if (!order || order->kind != NR_AK_INTS) return pessimistic();
    for (int d = 0; d < order->n && d < NR_MAX_RANK; d++) {
        int s = (int)order->v.ints[d];
        out.contig[d] = ia->contig[s];
        out.div[d] = ia->div[s];
        out.cons[d] = ia->cons[s];
    }
    return out;
}

static AI hint(Axis *x, NrOpId op) {
    const NrOp *o = &x->f->ops[op];
    AI out = *in(x, o, 0);
    const char *kind = nr_op_str(x->f, op, NR_A_KIND, "");
    const NrAttr *vals = nr_op_attr(x->f, op, NR_A_VALUES);
    if (!vals || vals->kind != NR_AK_INTS || vals->n < 1) return out;
    for (int d = 0; d < vrank(x, o->results[0]); d++) {
        int64_t v = vals->v.ints[vals->n == 1 ? 0 : d < vals->n ? d : vals->n - 1];
        if (v < 1) continue;
        if (!strcmp(kind, "multiple_of")) out.div[d] = pow2_div(v);
        else if (!strcmp(kind, "max_contiguous")) out.contig[d] = (int32_t)min64(v, INT32_MAX);
        else if (!strcmp(kind, "max_constancy")) out.cons[d] = (int32_t)min64(v, INT32_MAX);
    }
    return out;
}

static AI cast(Axis *x, const NrOp *o) {
    const NrType *a = vty(x, o->opnds[0]), *r = vty(x, o->results[0]);
    bool ints = !a->ptr && !r->ptr && nr_dt_is_int((NrDtype)a->dtype) && nr_dt_is_int((NrDtype)r->dtype) &&
                a->dtype != NR_DT_I1 && r->dtype != NR_DT_I1;
    if (ints) return *in(x, o, 0);
    return elementwise_generic(x, o);
}

static void visit_block(Axis *x, NrBlockId b, int depth);

/* Runs `region` with its argument facts args[] until the facts of the
 * yielded values (from operand `from` of its terminator) meet the inits
 * without change; returns the final argument facts in args. */
static void fixed_point(Axis *x, NrBlockId region, int first_arg, const AI *inits, AI *args, int n, int from,
                        int depth) {
    NrBlock *blk = &x->f->blocks[region];
    for (int i = 0; i < n; i++) args[i] = inits[i];
    for (int iter = 0;; iter++) {
        for (int i = 0; i < n && first_arg + i < blk->nargs; i++) set(x, blk->args[first_arg + i], args[i]);
        visit_block(x, region, depth + 1);
        NrOpId t = nr_block_terminator(x->f, region);
        bool changed = false;
        for (int i = 0; i < n; i++) {
            AI next = args[i];
            if (t && from + i < x->f->ops[t].nopnds) next = meet(&inits[i], &x->ai[x->f->ops[t].opnds[from + i]]);
            if (first_arg + i < blk->nargs) clamp(x, blk->args[first_arg + i], &next);
            if (!ai_eq(&next, &args[i])) changed = true;
            args[i] = iter >= MAX_ITER ? pessimistic() : next;
        }
        if (!changed) break;
        if (iter > MAX_ITER) break;
    }
}

static void visit_for(Axis *x, NrOpId op, int depth) {
    const NrOp *o = &x->f->ops[op];
    NrBlockId body = o->regions[0];
    NrBlock *blk = &x->f->blocks[body];
    if (blk->nargs < 1) return;
    AI iv = pessimistic();
    iv.div[0] = gcd64(x->ai[o->opnds[0]].div[0], x->ai[o->opnds[2]].div[0]);
    set(x, blk->args[0], iv);
    int n = o->nopnds - 3;
    NrArena *a = x->a;
    AI *inits = nr_alloc(a, sizeof(AI) * (size_t)(n > 0 ? n : 1));
    AI *args = nr_alloc(a, sizeof(AI) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) inits[i] = x->ai[o->opnds[3 + i]];
    fixed_point(x, body, 1, inits, args, n, 0, depth);
    for (int i = 0; i < n && i < o->nresults; i++) set(x, o->results[i], args[i]);
}

static void visit_while(Axis *x, NrOpId op, int depth) {
    const NrOp *o = &x->f->ops[op];
    int n = o->nopnds, nr = o->nresults;
    NrArena *a = x->a;
    AI *inits = nr_alloc(a, sizeof(AI) * (size_t)(n > 0 ? n : 1));
    AI *args = nr_alloc(a, sizeof(AI) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) inits[i] = x->ai[o->opnds[i]];
    /* region 0's arguments meet the inits and region 1's yields; region 1
     * starts from the values the condition passes on */
    NrBlockId r0 = o->regions[0], r1 = o->regions[1];
    for (int i = 0; i < n; i++) args[i] = inits[i];
    for (int iter = 0; iter <= MAX_ITER; iter++) {
        NrBlock *b0 = &x->f->blocks[r0], *b1 = &x->f->blocks[r1];
        for (int i = 0; i < n && i < b0->nargs; i++) set(x, b0->args[i], args[i]);
        visit_block(x, r0, depth + 1);
        NrOpId c = nr_block_terminator(x->f, r0);
        for (int i = 0; i < b1->nargs; i++)
            set(x, b1->args[i], c && i + 1 < x->f->ops[c].nopnds ? x->ai[x->f->ops[c].opnds[i + 1]] : pessimistic());
        visit_block(x, r1, depth + 1);
        NrOpId y = nr_block_terminator(x->f, r1);
        bool changed = false;
        for (int i = 0; i < n; i++) {
            AI next = y && i < x->f->ops[y].nopnds ? meet(&inits[i], &x->ai[x->f->ops[y].opnds[i]]) : pessimistic();
            if (i < b0->nargs) clamp(x, b0->args[i], &next);
            if (!ai_eq(&next, &args[i])) changed = true;
            args[i] = iter == MAX_ITER ? pessimistic() : next;
        }
        if (!changed) {
            for (int i = 0; i < nr; i++) {
                bool passed = c && i + 1 < x->f->ops[c].nopnds;
                set(x, o->results[i], passed ? x->ai[x->f->ops[c].opnds[i + 1]] : pessimistic());
            }
            return;
        }
    }
    for (int i = 0; i < nr; i++) set(x, o->results[i], pessimistic());
}

static void visit_if(Axis *x, NrOpId op, int depth) {
    const NrOp *o = &x->f->ops[op];
    visit_block(x, o->regions[0], depth + 1);
    visit_block(x, o->regions[1], depth + 1);
    NrOpId t0 = nr_block_terminator(x->f, o->regions[0]), t1 = nr_block_terminator(x->f, o->regions[1]);
    for (int i = 0; i < o->nresults; i++) {
        if (t0 && t1 && i < x->f->ops[t0].nopnds && i < x->f->ops[t1].nopnds)
            set(x, o->results[i], meet(&x->ai[x->f->ops[t0].opnds[i]], &x->ai[x->f->ops[t1].opnds[i]]));
        else set(x, o->results[i], pessimistic());
    }
}

static bool int_result(const Axis *x, NrValId r) { return nr_dt_is_int(nr_type_dtype(x->m, x->f->vals[r].type)); }

static void visit_op(Axis *x, NrOpId op, int depth) {
    const NrOp *o = &x->f->ops[op];
    NrValId r = o->nresults ? o->results[0] : NR_NONE;
    switch ((NrOpcode)o->opc) {
    case NR_OP_CONST: {
        const NrAttr *v = nr_op_attr(x->f, op, NR_A_VALUE);
        if (v && v->kind == NR_AK_INT && !vptr(x, r) && nr_dt_is_int(nr_type_dtype(x->m, x->f->vals[r].type)))
            set(x, r, constant(x, r, v->v.i));
        else set(x, r, elementwise_generic(x, o));
        return;
    }
    case NR_OP_ARANGE: {
        int64_t start = nr_op_int(x->f, op, NR_A_START, 0);
        AI a = pessimistic();
        a.contig[0] = vdim(x, r, 0);
        a.div[0] = pow2_div(start);
        set(x, r, a);
        return;
    }
    case NR_OP_SPLAT: {
        const AI *s = in(x, o, 0);
        AI a = pessimistic();
        for (int d = 0; d < vrank(x, r); d++) {
            a.div[d] = s->div[0];
            a.cons[d] = vdim(x, r, d);
        }
        a.has_const = s->has_const;
        a.cval = s->cval;
        set(x, r, a);
        return;
    }
    case NR_OP_ADD: set(x, r, add_sub(x, o, false, 1)); return;
    case NR_OP_SUB: set(x, r, add_sub(x, o, true, 1)); return;
    case NR_OP_ADDPTR: set(x, r, add_sub(x, o, false, pointee_bytes(vty(x, r)))); return;
    case NR_OP_MUL: set(x, r, mul(x, o)); return;
    case NR_OP_DIV: set(x, r, int_result(x, r) ? divide(x, o) : elementwise_generic(x, o)); return;
    case NR_OP_REM: set(x, r, int_result(x, r) ? rem(x, o) : elementwise_generic(x, o)); return;
    case NR_OP_SHL: set(x, r, shift(x, o, true)); return;
    case NR_OP_SHR: set(x, r, shift(x, o, false)); return;
    case NR_OP_MAX: case NR_OP_MIN:
        set(x, r, int_result(x, r) ? max_min(x, o, o->opc == NR_OP_MAX) : elementwise_generic(x, o));
        return;
    case NR_OP_CMP: set(x, r, compare(x, op)); return;
    case NR_OP_SELECT: set(x, r, select_op(x, o)); return;
    case NR_OP_CAST: set(x, r, cast(x, o)); return;
    case NR_OP_BITCAST: case NR_OP_PTRTOINT: case NR_OP_INTTOPTR: case NR_OP_CONVERT_LAYOUT:
        set(x, r, *in(x, o, 0));
        return;
    case NR_OP_BROADCAST: set(x, r, broadcast(x, o)); return;
    case NR_OP_EXPAND_DIMS: set(x, r, expand_dims(x, op)); return;
    case NR_OP_TRANS: set(x, r, trans(x, op)); return;
    case NR_OP_HINT: set(x, r, hint(x, op)); return;
    case NR_OP_LOAD: {
        AI a = pessimistic();
        for (int d = 0; d < vrank(x, r); d++)
            a.cons[d] = (int32_t)gcd64(in(x, o, 0)->cons[d], o->opnds[1] ? in(x, o, 1)->cons[d] : 0);
        set(x, r, a);
        return;
    }
    case NR_OP_FOR: visit_for(x, op, depth); return;
    case NR_OP_WHILE: visit_while(x, op, depth); return;
    case NR_OP_IF: visit_if(x, op, depth); return;
    default:
        if (nr_op_info[o->opc].flags & NR_OPF_ELEM) {
            set(x, r, elementwise_generic(x, o));
            return;
        }
        for (int i = 0; i < o->nresults; i++) set(x, o->results[i], pessimistic());
        return;
    }
}

static void visit_block(Axis *x, NrBlockId b, int depth) {
    if (depth > MAX_DEPTH) return;
    NR_FOR_OPS(x->f, b, o) visit_op(x, o, depth);
}

/* --- entry points ---------------------------------------------------------------------------------- */
/* The internal facts of every value: pointer divisibility in bytes. */
static AI *analyse(NrFunc *f, NrArena *scratch) {
    Axis x = {f, f->mod, NULL, scratch};
    x.ai = nr_alloc(scratch, sizeof(AI) * (size_t)f->nvals);
    for (NrValId v = 0; v < f->nvals; v++) x.ai[v] = pessimistic();
    NrBlock *body = &f->blocks[f->body];
    for (int i = 0; i < body->nargs; i++) {
        NrValId v = body->args[i];
        AI a = pessimistic();
        if (f->params && f->params[i].equal_to_1) a = constant(&x, v, 1);
        else if (f->params) a.div[0] = pow2_div(f->params[i].divisibility > 0 ? f->params[i].divisibility : 1);
        set(&x, v, a);
    }
    visit_block(&x, f->body, 0);
    return x.ai;
}

NrAxisInfo *nr_axis_analysis(NrFunc *f) { return nr_axis_analysis_in(f, f->mod->arena); }

NrAxisInfo *nr_axis_analysis_in(NrFunc *f, NrArena *a) {
    NrArena scratch; /* (the module's arena would keep it for the module's life) */
    nr_arena_init(&scratch);
    AI *ai = analyse(f, &scratch);
    NrModule *m = f->mod;
    NrAxisInfo *out = nr_alloc(a, sizeof(NrAxisInfo) * (size_t)f->nvals);
    for (NrValId v = 1; v < f->nvals; v++) {
        const NrType *t = &m->types[f->vals[v].type];
        int eb = t->ptr ? pointee_bytes(t) : 1;
        int rank = t->rank ? t->rank : 1;
        int best = 0;
        for (int d = 0; d < rank; d++) {
            out[v].contiguity[d] = ai[v].contig[d];
            out[v].constancy[d] = ai[v].cons[d];
            out[v].divisibility[d] = t->ptr ? max64(1, ai[v].div[d] / eb) : ai[v].div[d];
            if (ai[v].contig[d] >= ai[v].contig[best]) best = d;
        }
        out[v].divisibility_bytes = t->ptr ? ai[v].div[best] : 0;
    }
    nr_arena_free(&scratch);
    return out;
}
