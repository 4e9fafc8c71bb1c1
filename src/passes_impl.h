/* passes_impl.h - helpers shared by the block-level passes (passes.c).
 *
 * Passes keep their temporary arrays in a scratch arena of their own, freed
 * when the pass ends, so that a module's arena only grows by the IR itself.
 *
 * NrValMap replaces values lazily: a pass records "from is now to" and
 * rewrites operands as it visits ops, instead of rescanning the function for
 * every replacement.  Because every use of a value comes after its
 * definition in a walk that visits an op before the ops of its regions, one
 * walk in program order applies every replacement recorded before the
 * definitions it meets. */
#ifndef NR_PASSES_IMPL_H
#define NR_PASSES_IMPL_H

#include "passes.h"

/* Region nesting the passes follow; deeper IR is refused by the verifier. */
#define NR_PASS_MAX_DEPTH 4096
/* The deepest region nesting the verifier and the interpreter accept;
 * inlining must not build deeper IR. */
#define NR_PASS_MAX_NESTING 1000

typedef struct NrValMap {
    NrArena *a;
    NrValId *to;   /* to[v]: replacement of v, or NR_NONE */
    int32_t cap;
} NrValMap;

void nr_vmap_init(NrValMap *m, NrArena *scratch, int32_t nvals);
/* Record that every use of `from` becomes a use of `to`. */
void nr_vmap_set(NrValMap *m, NrValId from, NrValId to);
/* The final replacement of v (v itself if none), following chains. */
NrValId nr_vmap_find(NrValMap *m, NrValId v);
/* Rewrite the operands of one op; true if any changed. */
bool nr_vmap_apply_op(NrFunc *f, NrValMap *m, NrOpId op);
/* Rewrite the operands of every live op of f. */
void nr_vmap_apply_all(NrFunc *f, NrValMap *m);

/* The op defining v, or NR_NONE for a block argument. */
static inline NrOpId nr_val_def(const NrFunc *f, NrValId v) { return v ? f->vals[v].def : NR_NONE; }

/* Remove operand i / result i / argument i of block b, shifting the rest
 * down and renumbering the values' indices. */
void nr_op_remove_operand(NrFunc *f, NrOpId op, int i);
void nr_op_remove_result(NrFunc *f, NrOpId op, int i);
void nr_block_remove_arg(NrFunc *f, NrBlockId b, int i);

#endif
