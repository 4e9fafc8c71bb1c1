/* gpu_pipeline.c - the GPU pass pipeline and the software pipelining hook.
 * The passes are registered with the block passes (passes.c).
 *
 *   block IR (after the block pipeline)
 *     -> gpu-convert          layouts on every block; mma layouts for dots
 *     -> gpu-coalesce         memory ops take the layouts that vectorize them
 *     -> gpu-remove-converts  one layout per chain; rematerialize cheap ops
 *     -> gpu-pipeline         multi-buffered cp.async loops (hook, see below)
 *     -> gpu-remove-converts  again, for what pipelining changed
 *     -> gpu-smem             shared-memory offsets, liveness-based reuse
 *     -> gpu-barriers         bar.sync where shared memory is reused or read
 *   GPU IR, ready for the PTX emitter (nr_emit_ptx)
 *
 * The target (num_warps, sm) is the module's; nr_run_gpu_pipeline writes the
 * options into it first, so every pass also runs alone on IR text. */
#include "gpu_impl.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* Software pipelining of loops whose loads feed dots (num_stages > 1):
 * loads become cp.async copies into a multi-buffered local_alloc, issued
 * num_stages - 1 iterations ahead, with async_commit_group / async_wait
 * and local_load in the body.  Not done yet: the hook leaves loops as they
 * are, so kernels run unpipelined. */
bool nr_gpu_pipeline_loops(NrModule *m, NrDiags *d) {
    (void)m, (void)d;
    return true;
}

typedef struct Run {
    NrModule *m;
    const NrGpuOptions *opt;
    NrDiags *d;
    bool done, ok;
} Run;

static void verify_after(Run *r, const char *name) {
    NrArena a;
    nr_arena_init(&a);
    NrDiags vd;
    nr_diags_init(&vd, &a, &r->m->sources);
    if (!nr_module_verify(r->m, &vd)) NR_ICE("the IR is invalid after pass '%s':\n%s", name, nr_diags_render(&a, &vd));
    nr_arena_free(&a);
}

static void run(Run *r, const char *name, NrPassFn fn) {
    if (r->done) return;
    if (!fn(r->m, r->d)) {
        r->ok = false;
        r->done = true;
        return;
    }
    if (r->opt->verify_each) verify_after(r, name);
    if (r->opt->dump) {
        fprintf(r->opt->dump, "// after %s\n", name);
        nr_module_print(r->m, NULL, r->opt->dump);
    }
    if (r->opt->stop_after && strcmp(r->opt->stop_after, name) == 0) r->done = true;
}

bool nr_run_gpu_pipeline(NrModule *m, const NrGpuOptions *opt, NrDiags *d) {
    NrGpuOptions dflt = {4, 1, 80, false, NULL, false, NULL};
    if (!opt) opt = &dflt;
    NrLoc none = {0, 0, 0};
    if (opt->num_warps < 1 || opt->num_warps > 16 || !nr_is_pow2(opt->num_warps)) {
        nr_error(d, none, "num_warps must be 1, 2, 4, 8 or 16, got %d", opt->num_warps);
        return false;
    }
    if (opt->sm < 80) {
        nr_error(d, none, "the GPU target must be sm_80 or newer, got sm_%d", opt->sm);
        return false;
    }
    m->num_warps = opt->num_warps;
    m->sm = opt->sm;
    Run r = {m, opt, d, false, true};
    run(&r, "gpu-convert", nr_gpu_convert);
    run(&r, "gpu-coalesce", nr_gpu_coalesce);
    run(&r, "gpu-remove-converts", nr_gpu_remove_converts);
    if (opt->num_stages > 1) {
        run(&r, "gpu-pipeline", nr_gpu_pipeline_loops);
        run(&r, "gpu-remove-converts", nr_gpu_remove_converts);
    }
    run(&r, "gpu-smem", nr_gpu_alloc_smem);
    run(&r, "gpu-barriers", nr_gpu_barriers);
    return r.ok;
}
