/* pass_unroll.c - unroll short for loops of constant bounds (pass unroll).
 *
 * A `for` whose lb, ub and step are integer constants (step > 0) becomes
 * copies of its body, one per iteration, in order, before where it was:
 * the copy of iteration t reads iv as the constant lb + t * step and the
 * carried values as the previous copy's yielded values (the first copy:
 * the loop's initial values), and the loop's results become the last
 * copy's.  A loop that runs no iteration is replaced by its initial values.
 *
 * Only short loops are unrolled: at most MAX_TRIPS iterations, and at most
 * MAX_OPS ops in all the copies (nested regions counted).  A loop that
 * holds a dot stays a loop, for gpu-pipeline's rings of stages, as does one
 * with a tl.range option (num_stages, warp_specialize, flatten,
 * disallow_acc_multi_buffer) or loop_unroll_factor=1.
 *
 * The copies' loads are independent of each other (a split-K reduction's
 * partial sums, a short loop over heads): unrolled, they are all in flight
 * at once where the loop would have waited for each iteration's. */
#include "passes_impl.h"
#include "util.h"

enum {
    MAX_TRIPS = 16,
    MAX_OPS = 512,
};

/* The integer constant v, if it is one. */
static bool int_const(NrFunc *f, NrValId v, int64_t *out) {
    NrOpId d = nr_val_def(f, v);
    if (!d || f->ops[d].opc != NR_OP_CONST || nr_type_is_block(f->mod, f->vals[v].type)) return false;
    const NrAttr *a = nr_op_attr(f, d, NR_A_VALUE);
    if (!a || a->kind != NR_AK_INT || !nr_dt_is_int(nr_type_dtype(f->mod, f->vals[v].type))) return false;
    *out = a->v.i;
    return true;
}

/* Ops in block b and its nested regions; -1 once one is a dot. */
static int64_t body_ops(NrFunc *f, NrBlockId b, int depth) {
    if (depth >= NR_PASS_MAX_DEPTH) return -1;
    int64_t n = 0;
    NR_FOR_OPS(f, b, o) {
        if (f->ops[o].opc == NR_OP_DOT) return -1;
        n++;
        for (int r = 0; r < f->ops[o].nregions; r++) {
            int64_t k = body_ops(f, f->ops[o].regions[r], depth + 1);
            if (k < 0) return -1;
            n += k;
        }
    }
    return n;
}

/* Iterations of loop op when they are known and few enough, else -1. */
static int64_t trips(NrFunc *f, NrOpId op) {
    static const NrAttrName hints[] = {NR_A_NUM_STAGES, NR_A_WARP_SPECIALIZE, NR_A_FLATTEN,
                                       NR_A_DISALLOW_ACC_MULTI_BUFFER};
    for (size_t i = 0; i < NR_COUNTOF(hints); i++)
        if (nr_op_has(f, op, hints[i])) return -1;
    if (nr_op_int(f, op, NR_A_UNROLL, 0) == 1) return -1;
    int64_t lb, ub, step;
    const NrOp *o = &f->ops[op];
    if (!int_const(f, o->opnds[0], &lb) || !int_const(f, o->opnds[1], &ub) || !int_const(f, o->opnds[2], &step))
        return -1;
    if (step <= 0 || step > INT32_MAX) return -1;
    if (lb >= ub) return 0;
    uint64_t span = (uint64_t)ub - (uint64_t)lb; /* ub - lb without signed overflow */
    if (span > (uint64_t)MAX_TRIPS * (uint64_t)step) return -1;
    return (int64_t)((span + (uint64_t)step - 1) / (uint64_t)step);
}

static void unroll(NrFunc *f, NrOpId op, int64_t n, NrArena *scratch) {
    NrOp *o = &f->ops[op];
    int nc = o->nopnds - 3;
    NrBlockId body = o->regions[0];
    NrValId iv = f->blocks[body].args[0];
    int64_t lb = 0, step = 1;
    int_const(f, o->opnds[0], &lb);
    int_const(f, o->opnds[2], &step);
    int32_t nmap = f->nvals;
    NrValId *map = nr_alloc(scratch, sizeof(NrValId) * (size_t)(nmap > 0 ? nmap : 1));
    NrValId *cur = nr_alloc(scratch, sizeof(NrValId) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) cur[i] = f->ops[op].opnds[3 + i];
    NrOpId term = f->blocks[body].last;
    NrBuilder b = nr_builder_before(f, op);
    b.loc = f->ops[op].loc;
    for (int64_t t = 0; t < n; t++) {
        map[iv] = nr_build_const_int(&b, f->vals[iv].type, lb + t * step);
        for (int i = 0; i < nc; i++) map[f->blocks[body].args[1 + i]] = cur[i];
        NR_FOR_OPS(f, body, x)
            if (x != term) nr_op_clone(f, x, map, nmap, NR_NONE, op);
        for (int i = 0; i < nc; i++) {
            NrValId y = f->ops[term].opnds[i];
            cur[i] = y > 0 && y < nmap && map[y] ? map[y] : y;
        }
    }
    for (int i = 0; i < nc; i++) nr_replace_all_uses(f, f->ops[op].results[i], cur[i]);
    nr_op_erase(f, op);
}

static void unroll_block(NrFunc *f, NrBlockId b, int depth, NrArena *scratch) {
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        /* inner loops first: an unrolled inner loop counts its copies */
        for (int r = 0; r < f->ops[o].nregions; r++) unroll_block(f, f->ops[o].regions[r], depth + 1, scratch);
        if (f->ops[o].opc == NR_OP_FOR) {
            NrBlockId body = f->ops[o].regions[0];
            NrOpId term = f->blocks[body].last;
            int64_t n = trips(f, o), size = body_ops(f, body, depth + 1);
            if (n >= 0 && size >= 0 && n * size <= MAX_OPS && term && f->ops[term].opc == NR_OP_YIELD &&
                f->ops[term].nopnds == f->ops[o].nopnds - 3)
                unroll(f, o, n, scratch);
        }
        o = next;
    }
}

bool nr_pass_unroll(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrArena scratch;
        nr_arena_init(&scratch);
        unroll_block(m->funcs[i], m->funcs[i]->body, 0, &scratch);
        nr_arena_free(&scratch);
    }
    return true;
}
