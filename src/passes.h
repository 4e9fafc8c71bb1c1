/* passes.h - block-level passes and the pass pipeline.
 *
 *   inline        fold calls to helper functions into their callers; drop
 *                 helpers no longer called
 *   canonicalize  constant folding and algebraic simplification to a fixed point
 *   cse           common-subexpression elimination of PURE ops, scoped by region
 *   licm          hoist loop-invariant PURE ops out of for/while bodies
 *   dce           delete PURE ops with unused results, and dead region results
 *
 * A pass returns false only when it records a user-facing diagnostic. */
#ifndef NR_PASSES_H
#define NR_PASSES_H

#include "ir.h"

typedef bool (*NrPassFn)(NrModule *m, NrDiags *d);

typedef struct NrPassInfo {
    const char *name;
    NrPassFn run;
    const char *summary;
} NrPassInfo;

bool nr_pass_inline(NrModule *m, NrDiags *d);
bool nr_pass_canonicalize(NrModule *m, NrDiags *d);
bool nr_pass_cse(NrModule *m, NrDiags *d);
bool nr_pass_licm(NrModule *m, NrDiags *d);
bool nr_pass_unroll(NrModule *m, NrDiags *d);
bool nr_pass_dce(NrModule *m, NrDiags *d);

/* Registry (passes.c): NULL if no pass has that name. */
const NrPassInfo *nr_pass_find(const char *name);
const NrPassInfo *nr_pass_list(int *count);

typedef struct NrPipelineOptions {
    const char *stop_after;  /* run the pipeline up to and including this pass; NULL = all */
    bool verify_each;        /* verify after every pass (test builds); a failure is an internal error */
    FILE *dump;              /* if set, print the IR after every pass here */
} NrPipelineOptions;

/* The block-level pipeline: inline, canonicalize, cse, licm, cse, canonicalize, dce. */
bool nr_run_block_pipeline(NrModule *m, const NrPipelineOptions *opt, NrDiags *d);

#endif
