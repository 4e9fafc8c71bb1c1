/* pass_inline.c - inline every call to a helper function.
 *
 * Functions are inlined bottom-up: the call graph (edges to callees not
 * marked noinline) is walked depth first and each function is processed
 * after its callees, so a body is copied only once it has no inlinable
 * calls left.  A cycle in that graph is recursion, which cannot be inlined:
 * it is reported at the call that closes the cycle.
 *
 * A call is replaced by a copy of the callee's body (regions copied
 * recursively, locations kept from the callee), its arguments by the call's
 * operands and its results by the operands of the callee's final `return`.
 * Requires verified IR: a function body ends in its only `return`.
 * Afterwards helpers that are no longer called are removed from the module,
 * except functions marked noinline, which keep their calls too. */
#include "passes_impl.h"
#include "util.h"

#include <string.h>

/* A function may not grow beyond this many ops by inlining. */
#define MAX_INLINED_OPS (1 << 22)

typedef struct Inliner {
    NrModule *m;
    NrDiags *d;
    NrArena *scratch;
    NrOpId **calls;     /* calls[i]: the call ops of function i */
    int *ncalls;
    int *capcalls;
    int *state;         /* DFS: 0 unvisited, 1 on the stack, 2 done */
    int *order;         /* functions in post-order */
    int *depth;         /* depth[i]: deepest nesting in function i, once known (else -1) */
    int norder;
    bool ok;
} Inliner;

static int func_index(NrModule *m, NrFunc *f) {
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i] == f) return i;
    return -1;
}

static NrFunc *callee_of(NrModule *m, NrFunc *f, NrOpId call) {
    const char *name = nr_op_str(f, call, NR_A_CALLEE, NULL);
    return name ? nr_module_find_func(m, name) : NULL;
}

/* Collect the calls of every function; false after diagnosing a call to an
 * unknown function. */
static bool collect_calls(Inliner *in) {
    NrModule *m = in->m;
    bool ok = true;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        for (NrOpId o = 1; o < f->nops; o++) {
            if (f->ops[o].dead || !f->ops[o].block || f->ops[o].opc != NR_OP_CALL) continue;
            if (!callee_of(m, f, o)) {
                nr_error(in->d, f->ops[o].loc, "call to unknown function '%s'", nr_op_str(f, o, NR_A_CALLEE, ""));
                ok = false;
                continue;
            }
            *NR_PUSH(in->scratch, in->calls[i], in->ncalls[i], in->capcalls[i]) = o;
        }
    }
    return ok;
}

/* Post-order of the functions along inlinable call edges, iteratively (the
 * call graph may be deep).  Reports each call that closes a cycle. */
static void order_functions(Inliner *in) {
    NrModule *m = in->m;
    int *stack = nr_alloc(in->scratch, sizeof(int) * (size_t)(m->nfuncs + 1));
    int *next = nr_alloc(in->scratch, sizeof(int) * (size_t)(m->nfuncs + 1));
    for (int root = 0; root < m->nfuncs; root++) {
        if (in->state[root]) continue;
        int sp = 0;
        stack[sp++] = root;
        in->state[root] = 1;
        next[root] = 0;
        while (sp) {
            int i = stack[sp - 1];
            NrFunc *f = m->funcs[i];
            if (next[i] == in->ncalls[i]) {
                in->state[i] = 2;
                in->order[in->norder++] = i;
                sp--;
                continue;
            }
            NrOpId call = in->calls[i][next[i]++];
            NrFunc *g = callee_of(m, f, call);
            if (g->noinline) continue;
            int j = func_index(m, g);
            if (in->state[j] == 1) {
                nr_error(in->d, f->ops[call].loc, "recursive call to '%s' cannot be inlined", g->name);
                in->ok = false;
            } else if (in->state[j] == 0) {
                in->state[j] = 1;
                next[j] = 0;
                stack[sp++] = j;
            }
        }
    }
}

/* --- copying a body ---------------------------------------------------------------------------- */
typedef struct Copy {
    NrFunc *dst, *src;
    NrValId *map;       /* src value -> dst value */
} Copy;

static NrValId map_val(Copy *c, NrValId v) {
    if (v == NR_NONE) return NR_NONE;
    NR_ASSERT(v > 0 && v < c->src->nvals && c->map[v]);
    return c->map[v];
}

static void copy_block(Copy *c, NrBlockId from, NrBlockId to, NrOpId before, NrOpId skip, int depth);

/* Copy op `so` of the source function into block `to` (before `before`, or
 * at its end). */
static void copy_op(Copy *c, NrOpId so, NrBlockId to, NrOpId before, int depth) {
    NrFunc *src = c->src, *dst = c->dst;
    const NrOp *s = &src->ops[so];
    NrArena *a = dst->mod->arena;
    NrValId *opnds = nr_alloc(a, sizeof(NrValId) * (size_t)(s->nopnds + 1));
    NrTypeId *rtypes = nr_alloc(a, sizeof(NrTypeId) * (size_t)(s->nresults + 1));
    for (int i = 0; i < s->nopnds; i++) opnds[i] = map_val(c, s->opnds[i]);
    for (int i = 0; i < s->nresults; i++) rtypes[i] = src->vals[s->results[i]].type;
    NrOpId d = nr_op_new(dst, (NrOpcode)s->opc, s->nopnds, opnds, s->nresults, rtypes, s->nregions, s->loc);
    nr_op_copy_attrs(dst, d, src, so);
    if (before) nr_op_insert_before(dst, before, d);
    else nr_op_append(dst, to, d);
    for (int i = 0; i < s->nresults; i++) c->map[s->results[i]] = dst->ops[d].results[i];
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    for (int r = 0; r < s->nregions; r++) {
        NrBlockId sb = src->ops[so].regions[r], db = dst->ops[d].regions[r];
        for (int k = 0; k < src->blocks[sb].nargs; k++) {
            NrValId sa = src->blocks[sb].args[k];
            c->map[sa] = nr_block_add_arg(dst, db, src->vals[sa].type);
        }
        copy_block(c, sb, db, NR_NONE, NR_NONE, depth + 1);
    }
}

static void copy_block(Copy *c, NrBlockId from, NrBlockId to, NrOpId before, NrOpId skip, int depth) {
    NR_FOR_OPS(c->src, from, o)
        if (o != skip) copy_op(c, o, to, before, depth);
}

/* How many regions enclose block b (0 for a function body). */
static int block_depth(NrFunc *f, NrBlockId b) {
    int d = 0;
    while (f->blocks[b].parent && d <= NR_PASS_MAX_DEPTH) {
        b = f->ops[f->blocks[b].parent].block;
        d++;
    }
    return d;
}

/* The deepest region nesting inside f's body. */
static int max_depth(NrFunc *f) {
    int m = 0;
    for (NrBlockId b = 1; b < f->nblocks; b++) {
        NrOpId p = f->blocks[b].parent;
        if (p && !f->ops[p].dead && f->ops[p].block) {
            int d = block_depth(f, b);
            if (d > m) m = d;
        }
    }
    return m;
}

/* Replace call op `call` of f by g's body; its results are recorded in repl. */
static bool inline_call(Inliner *in, NrFunc *f, NrOpId call, NrFunc *g, NrValMap *repl) {
    if ((int64_t)f->nops + g->nops > MAX_INLINED_OPS) {
        nr_error(in->d, f->ops[call].loc, "inlining '%s' makes '%s' larger than %d ops", g->name, f->name,
                 MAX_INLINED_OPS);
        return false;
    }
    int j = func_index(in->m, g);
    if (in->depth[j] < 0) in->depth[j] = max_depth(g); /* g is final: its callees are inlined */
    if (block_depth(f, f->ops[call].block) + in->depth[j] > NR_PASS_MAX_NESTING) {
        nr_error(in->d, f->ops[call].loc, "inlining '%s' here nests control flow more than %d deep", g->name,
                 NR_PASS_MAX_NESTING);
        return false;
    }
    NrOpId ret = nr_block_terminator(g, g->body);
    NR_ASSERT(ret && g->ops[ret].opc == NR_OP_RETURN);
    NR_ASSERT(g->ops[ret].nopnds == f->ops[call].nresults);
    NR_ASSERT(g->blocks[g->body].nargs == f->ops[call].nopnds);
    Copy c = {f, g, nr_alloc(in->scratch, sizeof(NrValId) * (size_t)g->nvals)};
    for (int k = 0; k < g->blocks[g->body].nargs; k++) c.map[g->blocks[g->body].args[k]] = f->ops[call].opnds[k];
    copy_block(&c, g->body, f->ops[call].block, call, ret, 0);
    for (int i = 0; i < f->ops[call].nresults; i++)
        nr_vmap_set(repl, f->ops[call].results[i], map_val(&c, g->ops[ret].opnds[i]));
    nr_op_erase(f, call);
    return true;
}

static bool inline_calls_of(Inliner *in, int i) {
    NrFunc *f = in->m->funcs[i];
    NrValMap repl;
    nr_vmap_init(&repl, in->scratch, f->nvals);
    bool ok = true;
    for (int k = 0; ok && k < in->ncalls[i]; k++) {
        NrOpId call = in->calls[i][k];
        NrFunc *g = callee_of(in->m, f, call);
        if (!g->noinline) ok = inline_call(in, f, call, g, &repl);
    }
    nr_vmap_apply_all(f, &repl);
    return ok;
}

/* Remove helpers that no call refers to any more (noinline ones stay). */
static void remove_unused_helpers(NrModule *m, NrArena *scratch) {
    char *called = nr_alloc(scratch, (size_t)m->nfuncs + 1);
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        for (NrOpId o = 1; o < f->nops; o++) {
            if (f->ops[o].dead || !f->ops[o].block || f->ops[o].opc != NR_OP_CALL) continue;
            int j = func_index(m, callee_of(m, f, o));
            if (j >= 0) called[j] = 1;
        }
    }
    NrFunc **drop = nr_alloc(scratch, sizeof(NrFunc *) * (size_t)(m->nfuncs + 1));
    int ndrop = 0;
    for (int i = 0; i < m->nfuncs; i++)
        if (!called[i] && !m->funcs[i]->is_kernel && !m->funcs[i]->noinline) drop[ndrop++] = m->funcs[i];
    for (int i = 0; i < ndrop; i++) nr_module_remove_func(m, drop[i]);
}

bool nr_pass_inline(NrModule *m, NrDiags *d) {
    NrArena scratch;
    nr_arena_init(&scratch);
    size_t n = (size_t)m->nfuncs + 1;
    Inliner in = {m, d, &scratch, NULL, NULL, NULL, NULL, NULL, NULL, 0, true};
    in.calls = nr_alloc(&scratch, sizeof(NrOpId *) * n);
    in.ncalls = nr_alloc(&scratch, sizeof(int) * n);
    in.capcalls = nr_alloc(&scratch, sizeof(int) * n);
    in.state = nr_alloc(&scratch, sizeof(int) * n);
    in.order = nr_alloc(&scratch, sizeof(int) * n);
    in.depth = nr_alloc(&scratch, sizeof(int) * n);
    for (size_t i = 0; i < n; i++) in.depth[i] = -1;
    in.ok = collect_calls(&in);
    if (in.ok) order_functions(&in);
    for (int k = 0; in.ok && k < in.norder; k++) in.ok = inline_calls_of(&in, in.order[k]);
    if (in.ok) remove_unused_helpers(m, &scratch);
    nr_arena_free(&scratch);
    return in.ok;
}
