/* pass_licm.c - hoist loop-invariant pure ops out of for/while loops.
 *
 * An op at the top level of a loop's region is invariant when it is PURE,
 * has no regions, and none of its operands is defined inside the loop: not
 * an argument of the region and not the result of an op of the region that
 * stays.  Invariant ops move, in order, to just before the loop; one scan
 * per region catches chains, since an op whose operands were all hoisted
 * is itself invariant.  Loops are processed innermost first, so an op can
 * leave several loops.  Pure ops never trap (integer division by zero is
 * defined), so hoisting out of a loop that may not run is safe.  Loads and
 * ops with effects stay where they are. */
#include "passes_impl.h"
#include "util.h"

typedef struct Licm {
    NrFunc *f;
    NrOpId *inside;   /* inside[v] = the loop whose region defines v, while scanning it */
} Licm;

static bool invariant(Licm *l, NrOpId op, NrOpId loop) {
    const NrOp *o = &l->f->ops[op];
    if (!(nr_op_info[o->opc].flags & NR_OPF_PURE) || o->nregions) return false;
    for (int i = 0; i < o->nopnds; i++)
        if (o->opnds[i] && l->inside[o->opnds[i]] == loop) return false;
    return true;
}

static void hoist_region(Licm *l, NrOpId loop, NrBlockId b) {
    NrFunc *f = l->f;
    for (int i = 0; i < f->blocks[b].nargs; i++) l->inside[f->blocks[b].args[i]] = loop;
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        if (invariant(l, o, loop)) {
            nr_op_unlink(f, o);
            nr_op_insert_before(f, loop, o);
        } else {
            for (int i = 0; i < f->ops[o].nresults; i++) l->inside[f->ops[o].results[i]] = loop;
        }
        o = next;
    }
}

static void licm_block(Licm *l, NrBlockId b, int depth) {
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    NrFunc *f = l->f;
    NrOpId o = f->blocks[b].first;
    while (o) {
        /* ops hoisted out of o land before it, so `next` is unaffected */
        NrOpId next = f->ops[o].next;
        for (int r = 0; r < f->ops[o].nregions; r++) licm_block(l, f->ops[o].regions[r], depth + 1);
        if (f->ops[o].opc == NR_OP_FOR || f->ops[o].opc == NR_OP_WHILE)
            for (int r = 0; r < f->ops[o].nregions; r++) hoist_region(l, o, f->ops[o].regions[r]);
        o = next;
    }
}

bool nr_pass_licm(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrArena scratch;
        nr_arena_init(&scratch);
        Licm l = {m->funcs[i], NULL};
        l.inside = nr_alloc(&scratch, sizeof(NrOpId) * (size_t)(l.f->nvals > 0 ? l.f->nvals : 1));
        licm_block(&l, l.f->body, 0);
        nr_arena_free(&scratch);
    }
    return true;
}
