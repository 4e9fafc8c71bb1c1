/* pass_dce.c - dead-code elimination by marking what is live.
 *
 * Roots are the ops whose effects must stay: WRITE ops (stores, atomics,
 * print, assert, barrier, assume), calls, returns and volatile loads.  A live
 * op makes its operands live, and the structured op around it live; a live
 * value makes its definition live:
 *   - a result of a plain op (pure ops, loads): the op;
 *   - result i of `if`: operand i of both yields;
 *   - carried value i of `for` (its result or its region argument 1+i): its
 *     initial value and operand i of the yield; the induction variable: the
 *     loop's bounds;
 *   - `while` carried value k (region 0 argument k): its initial value and
 *     operand k of region 1's yield; result j (or region 1 argument j):
 *     operand 1+j of the condition;
 *   - a structured op that is live keeps its condition or bounds live.
 * Everything else goes: pure ops and non-volatile loads nobody needs,
 * results and carried values of if/for/while that no live op reads (with
 * their yield and condition operands), and if/for/while ops with nothing
 * live inside or after.  Marking instead of counting uses also removes
 * values that only feed themselves around a loop (an accumulator whose
 * result is never read). */
#include "passes_impl.h"
#include "util.h"

typedef struct Dce {
    NrFunc *f;
    uint8_t *live;      /* per value */
    uint8_t *kept;      /* per op */
    NrValId *work;      /* values marked live, not yet propagated */
    int nwork;
} Dce;

static void mark(Dce *d, NrValId v) {
    if (v <= 0 || d->live[v]) return;
    d->live[v] = 1;
    d->work[d->nwork++] = v;
}

static NrOpId term(Dce *d, NrOpId op, int r) { return nr_block_terminator(d->f, d->f->ops[op].regions[r]); }

/* Operand i of the terminator of region r of op (if it has one). */
static void mark_term_operand(Dce *d, NrOpId op, int r, int i) {
    NrOpId t = term(d, op, r);
    if (t && i < d->f->ops[t].nopnds) mark(d, d->f->ops[t].opnds[i]);
}

/* Keep op and every op around it; mark what a kept op needs itself. */
static void keep(Dce *d, NrOpId op) {
    NrFunc *f = d->f;
    while (op && !d->kept[op]) {
        d->kept[op] = 1;
        const NrOp *o = &f->ops[op];
        switch ((NrOpcode)o->opc) {
        case NR_OP_IF: mark(d, o->opnds[0]); break;
        case NR_OP_FOR:
            for (int i = 0; i < 3 && i < o->nopnds; i++) mark(d, o->opnds[i]);
            break;
        case NR_OP_WHILE: mark_term_operand(d, op, 0, 0); break;
        case NR_OP_YIELD:
        case NR_OP_CONDITION: break; /* their operands are live slot by slot */
        default:
            for (int i = 0; i < o->nopnds; i++) mark(d, o->opnds[i]);
            break;
        }
        op = f->blocks[o->block].parent;
    }
}

/* Carried value i of `for` op is live. */
static void for_slot(Dce *d, NrOpId op, int i) {
    mark(d, d->f->ops[op].opnds[3 + i]);
    mark_term_operand(d, op, 0, i);
    keep(d, op);
}

static void propagate(Dce *d, NrValId v) {
    NrFunc *f = d->f;
    const NrValue *val = &f->vals[v];
    if (val->def) {
        NrOpId op = val->def;
        switch ((NrOpcode)f->ops[op].opc) {
        case NR_OP_IF:
            mark_term_operand(d, op, 0, val->index);
            mark_term_operand(d, op, 1, val->index);
            keep(d, op);
            return;
        case NR_OP_FOR: for_slot(d, op, val->index); return;
        case NR_OP_WHILE:
            mark_term_operand(d, op, 0, 1 + val->index);
            keep(d, op);
            return;
        default: keep(d, op); return;
        }
    }
    NrOpId op = val->block ? f->blocks[val->block].parent : NR_NONE;
    if (!op) return; /* a function argument */
    int r = f->ops[op].regions[0] == val->block ? 0 : 1;
    switch ((NrOpcode)f->ops[op].opc) {
    case NR_OP_FOR:
        if (val->index == 0) keep(d, op);
        else for_slot(d, op, val->index - 1);
        return;
    case NR_OP_WHILE:
        if (r == 0) {
            mark(d, f->ops[op].opnds[val->index]);
            mark_term_operand(d, op, 1, val->index);
        } else {
            mark_term_operand(d, op, 0, 1 + val->index);
        }
        keep(d, op);
        return;
    default: keep(d, op); return;
    }
}

/* Ops that stay whatever their results: everything but pure ops,
 * non-volatile loads, structured control flow and block terminators. */
static bool is_root(NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    unsigned fl = nr_op_info[o->opc].flags;
    if (o->opc == NR_OP_RETURN) return true;
    if ((fl & NR_OPF_TERM) || o->opc == NR_OP_IF || o->opc == NR_OP_FOR || o->opc == NR_OP_WHILE) return false;
    if (o->opc == NR_OP_LOAD) return nr_op_int(f, op, NR_A_VOLATILE, 0) != 0;
    return !(fl & NR_OPF_PURE) || (fl & NR_OPF_WRITE);
}

/* --- sweeping ------------------------------------------------------------------------------------ */
static void prune_if(Dce *d, NrOpId op) {
    NrFunc *f = d->f;
    for (int i = f->ops[op].nresults - 1; i >= 0; i--) {
        if (d->live[f->ops[op].results[i]]) continue;
        for (int r = 0; r < 2; r++) nr_op_remove_operand(f, term(d, op, r), i);
        nr_op_remove_result(f, op, i);
    }
}

static void prune_for(Dce *d, NrOpId op) {
    NrFunc *f = d->f;
    NrBlockId body = f->ops[op].regions[0];
    for (int i = f->ops[op].nresults - 1; i >= 0; i--) {
        if (d->live[f->ops[op].results[i]] || d->live[f->blocks[body].args[1 + i]]) continue;
        nr_op_remove_operand(f, term(d, op, 0), i);
        nr_block_remove_arg(f, body, 1 + i);
        nr_op_remove_operand(f, op, 3 + i);
        nr_op_remove_result(f, op, i);
    }
}

static void prune_while(Dce *d, NrOpId op) {
    NrFunc *f = d->f;
    NrBlockId before = f->ops[op].regions[0], after = f->ops[op].regions[1];
    for (int j = f->ops[op].nresults - 1; j >= 0; j--) {
        if (d->live[f->ops[op].results[j]] || d->live[f->blocks[after].args[j]]) continue;
        nr_op_remove_operand(f, term(d, op, 0), 1 + j);
        nr_block_remove_arg(f, after, j);
        nr_op_remove_result(f, op, j);
    }
    for (int k = f->ops[op].nopnds - 1; k >= 0; k--) {
        if (d->live[f->blocks[before].args[k]]) continue;
        nr_op_remove_operand(f, term(d, op, 1), k);
        nr_block_remove_arg(f, before, k);
        nr_op_remove_operand(f, op, k);
    }
}

static void sweep(Dce *d, NrBlockId b, int depth) {
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    NrFunc *f = d->f;
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        NrOpcode opc = (NrOpcode)f->ops[o].opc;
        if (!d->kept[o] && !(nr_op_info[opc].flags & NR_OPF_TERM)) {
            nr_op_erase(f, o);
        } else {
            if (opc == NR_OP_IF) prune_if(d, o);
            else if (opc == NR_OP_FOR) prune_for(d, o);
            else if (opc == NR_OP_WHILE) prune_while(d, o);
            for (int r = 0; r < f->ops[o].nregions; r++) sweep(d, f->ops[o].regions[r], depth + 1);
        }
        o = next;
    }
}

static void dce_func(NrFunc *f) {
    NrArena scratch;
    nr_arena_init(&scratch);
    size_t nv = (size_t)(f->nvals > 0 ? f->nvals : 1), no = (size_t)(f->nops > 0 ? f->nops : 1);
    Dce d = {f, nr_alloc(&scratch, nv), nr_alloc(&scratch, no), nr_alloc(&scratch, sizeof(NrValId) * nv), 0};
    for (NrOpId o = 1; o < f->nops; o++)
        if (!f->ops[o].dead && f->ops[o].block && is_root(f, o)) keep(&d, o);
    while (d.nwork) propagate(&d, d.work[--d.nwork]);
    sweep(&d, f->body, 0);
    nr_arena_free(&scratch);
}

bool nr_pass_dce(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) dce_func(m->funcs[i]);
    return true;
}
