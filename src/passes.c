/* passes.c - the registry of block-level passes, the block pipeline, and the
 * helpers the passes share (passes_impl.h).
 *
 *   inline -> canonicalize -> cse -> licm -> canonicalize -> dce
 *
 * inline removes every call to a helper, so the passes after it see one
 * function; canonicalize folds what inlining exposed (constant arguments,
 * constant conditions); cse merges what is left; licm moves invariant work
 * out of loops, which may expose more folding to the second canonicalize;
 * dce removes everything that became unused.  docs/design.md ("Passes")
 * describes each pass. */
#include "gpu.h"
#include "passes_impl.h"
#include "util.h"

#include <string.h>

/* --- registry ---------------------------------------------------------------------------------- */
static const NrPassInfo pass_table[] = {
    {"inline", nr_pass_inline, "replace calls by the callee's body; drop helpers no longer called"},
    {"canonicalize", nr_pass_canonicalize, "fold constants and simplify algebra to a fixed point"},
    {"unroll", nr_pass_unroll, "unroll for loops of at most 16 constant iterations (no dot, no tl.range option)"},
    {"cse", nr_pass_cse, "merge identical pure ops (a value is visible in nested regions)"},
    {"licm", nr_pass_licm, "hoist loop-invariant pure ops out of for/while bodies"},
    {"dce", nr_pass_dce, "delete unused pure ops and loads, dead region results and empty control flow"},
    /* GPU passes (gpu.h, docs/gpu.md) */
    {"gpu-convert", nr_gpu_convert, "block IR to GPU IR: default layouts, slices for reductions, mma for dots"},
    {"gpu-coalesce", nr_gpu_coalesce, "give each load, store and atomic the layout that vectorizes it"},
    {"gpu-remove-converts", nr_gpu_remove_converts, "one layout per chain of ops; rematerialize cheap ops"},
    {"gpu-pipeline", nr_gpu_pipeline_loops, "cp.async multi-buffering of loads feeding dots (loops with num_stages)"},
    {"gpu-hoist-loads", nr_gpu_hoist_loads, "issue global loads before the reductions and conversions that precede them"},
    {"gpu-tma-loads", nr_gpu_tma_loads, "sm_90a: a host tensor descriptor's block loaded once and staged for wgmma, by TMA"},
    {"gpu-tma-stores", nr_gpu_tma_stores, "sm_90a: host tensor descriptors' block stores by TMA, through shared memory"},
    {"gpu-smem", nr_gpu_alloc_smem, "shared-memory offsets with liveness-based reuse; the kernel's total"},
    {"gpu-barriers", nr_gpu_barriers, "barriers between shared-memory writes and later reads or reuse"},
};

const NrPassInfo *nr_pass_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < NR_COUNTOF(pass_table); i++)
        if (strcmp(pass_table[i].name, name) == 0) return &pass_table[i];
    return NULL;
}

const NrPassInfo *nr_pass_list(int *count) {
    if (count) *count = (int)NR_COUNTOF(pass_table);
    return pass_table;
}

/* --- pipeline ---------------------------------------------------------------------------------- */
typedef struct Pipeline {
    NrModule *m;
    const NrPipelineOptions *opt;
    NrDiags *d;
    bool done;   /* stopped after stop_after, or a pass failed */
    bool ok;
} Pipeline;

/* Verify after pass `name`; a broken module is a bug in the pass. */
static void verify_after(Pipeline *p, const char *name) {
    NrArena a;
    nr_arena_init(&a);
    NrDiags vd;
    nr_diags_init(&vd, &a, &p->m->sources);
    if (!nr_module_verify(p->m, &vd)) {
        const char *text = nr_diags_render(&a, &vd);
        NR_ICE("the IR is invalid after pass '%s':\n%s", name, text);
    }
    nr_arena_free(&a);
}

static void run(Pipeline *p, const char *name, NrPassFn fn) {
    if (p->done) return;
    if (!fn(p->m, p->d)) {
        p->ok = false;
        p->done = true;
        return;
    }
    if (p->opt && p->opt->verify_each) verify_after(p, name);
    if (p->opt && p->opt->dump) {
        fprintf(p->opt->dump, "// after %s\n", name);
        nr_module_print(p->m, NULL, p->opt->dump);
    }
    if (p->opt && p->opt->stop_after && strcmp(p->opt->stop_after, name) == 0) p->done = true;
}

bool nr_run_block_pipeline(NrModule *m, const NrPipelineOptions *opt, NrDiags *d) {
    Pipeline p = {m, opt, d, false, true};
    run(&p, "inline", nr_pass_inline);
    run(&p, "canonicalize", nr_pass_canonicalize);
    run(&p, "unroll", nr_pass_unroll);
    run(&p, "cse", nr_pass_cse);
    run(&p, "licm", nr_pass_licm);
    run(&p, "cse", nr_pass_cse); /* merges what licm hoisted with the same work after the loop */
    run(&p, "canonicalize", nr_pass_canonicalize);
    run(&p, "dce", nr_pass_dce);
    return p.ok;
}

/* --- value maps -------------------------------------------------------------------------------- */
void nr_vmap_init(NrValMap *m, NrArena *scratch, int32_t nvals) {
    m->a = scratch;
    m->cap = nvals > 0 ? nvals : 1;
    m->to = nr_alloc(scratch, sizeof(NrValId) * (size_t)m->cap);
}

void nr_vmap_set(NrValMap *m, NrValId from, NrValId to) {
    NR_ASSERT(from > 0);
    if (from >= m->cap) {
        int32_t cap = m->cap;
        while (cap <= from) cap *= 2;
        m->to = nr_arena_grow(m->a, m->to, sizeof(NrValId) * (size_t)m->cap, sizeof(NrValId) * (size_t)cap);
        m->cap = cap;
    }
    if (from != to) m->to[from] = to;
}

NrValId nr_vmap_find(NrValMap *m, NrValId v) {
    NrValId r = v;
    while (r > 0 && r < m->cap && m->to[r]) r = m->to[r];
    /* Shorten the chain for the next look-up. */
    while (v > 0 && v < m->cap && m->to[v] && m->to[v] != r) {
        NrValId next = m->to[v];
        m->to[v] = r;
        v = next;
    }
    return r;
}

bool nr_vmap_apply_op(NrFunc *f, NrValMap *m, NrOpId op) {
    NrOp *o = &f->ops[op];
    bool changed = false;
    for (int i = 0; i < o->nopnds; i++) {
        NrValId v = o->opnds[i];
        if (v <= 0 || v >= m->cap || !m->to[v]) continue;
        o->opnds[i] = nr_vmap_find(m, v);
        changed = true;
    }
    return changed;
}

void nr_vmap_apply_all(NrFunc *f, NrValMap *m) {
    for (NrOpId o = 1; o < f->nops; o++)
        if (!f->ops[o].dead && f->ops[o].block) nr_vmap_apply_op(f, m, o);
}

/* --- removing operands, results and block arguments -------------------------------------------- */
void nr_op_remove_operand(NrFunc *f, NrOpId op, int i) {
    NrOp *o = &f->ops[op];
    NR_ASSERT(i >= 0 && i < o->nopnds);
    memmove(&o->opnds[i], &o->opnds[i + 1], sizeof(NrValId) * (size_t)(o->nopnds - i - 1));
    o->nopnds--;
}

void nr_op_remove_result(NrFunc *f, NrOpId op, int i) {
    NrOp *o = &f->ops[op];
    NR_ASSERT(i >= 0 && i < o->nresults);
    f->vals[o->results[i]].def = NR_NONE; /* orphaned */
    memmove(&o->results[i], &o->results[i + 1], sizeof(NrValId) * (size_t)(o->nresults - i - 1));
    o->nresults--;
    for (int k = i; k < o->nresults; k++) f->vals[o->results[k]].index = k;
}

void nr_block_remove_arg(NrFunc *f, NrBlockId b, int i) {
    NrBlock *blk = &f->blocks[b];
    NR_ASSERT(i >= 0 && i < blk->nargs);
    f->vals[blk->args[i]].block = NR_NONE; /* orphaned */
    memmove(&blk->args[i], &blk->args[i + 1], sizeof(NrValId) * (size_t)(blk->nargs - i - 1));
    blk->nargs--;
    for (int k = i; k < blk->nargs; k++) f->vals[blk->args[k]].index = k;
}
