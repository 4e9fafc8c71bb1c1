/* gpu_hoist.c - global loads issued before the barriers that precede them
 * (pass gpu-hoist-loads).
 *
 * ptxas schedules loads early within straight-line code, but never across
 * a bar.sync.  A kernel such as layer norm reduces its row (two block
 * reductions, each through shared memory with barriers) and only then
 * loads its weights, so every program waits for two memory latencies in a
 * row.  This pass moves such a load, with the pure ops that compute its
 * operands, to just before the first op since the last memory effect
 * that may synchronize the program (reduce, argreduce, gather, histogram,
 * convert_layout and dots).  The load then overlaps the reductions.
 *
 * Only the function body is scanned (loops and branches are left to the
 * pipeliner and to ptxas).  A load does not move across a store, atomic,
 * barrier, print or any op with regions; volatile loads do not move.  A
 * load that holds more than MAX_BYTES per thread stays, and the loads
 * moved over one barrier hold MAX_TOTAL bytes per thread at most, so the
 * registers they keep live longer stay few. */
#include "gpu_impl.h"
#include "util.h"

enum { MAX_BYTES = 16, MAX_TOTAL = 32 };

typedef struct Hoist {
    NrFunc *f;
    int nw;
    int32_t *pos;      /* per op: its index in the body (0: not in the body) */
    uint8_t *mark;     /* per op: in the set being moved */
    NrOpId *set;       /* the marked ops */
    int nset;
} Hoist;

static bool synchronizes(uint16_t opc) {
    switch (opc) {
    case NR_OP_REDUCE: case NR_OP_ARGREDUCE: case NR_OP_GATHER: case NR_OP_HISTOGRAM:
    case NR_OP_CONVERT_LAYOUT: case NR_OP_DOT: case NR_OP_WARP_GROUP_DOT:
        return true;
    default:
        return false;
    }
}

static bool movable_load(const NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    return o->opc == NR_OP_LOAD && !o->nregions && !nr_op_has(f, op, NR_A_VOLATILE);
}

/* Ops that may be reordered with a load: pure ones and other loads. */
static bool fence(const NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    if (o->nregions) return true;
    if (movable_load(f, op)) return false;
    return !(nr_op_info[o->opc].flags & NR_OPF_PURE);
}

/* Bytes per thread of the block v in its layout (-1: unknown). */
static int thread_bytes(Hoist *h, NrValId v) {
    const NrType *t = &h->f->mod->types[h->f->vals[v].type];
    if (t->rank == 0) return t->ptr || nr_dt_bits(t->dtype) > 32 ? 8 : 4;
    if (!t->layout) return -1;
    NrLinear ll;
    if (!nr_layout_linear(h->f->mod, t->layout, t->rank, t->shape, h->nw, &ll)) return -1;
    int bits = t->ptr ? 64 : nr_dt_bits(t->dtype);
    return nr_linear_regs(&ll) * (bits < 8 ? 1 : bits / 8);
}

/* Marks op and the ops after position `after` that it depends on; false if
 * one of them may not move or synchronizes. */
static bool collect(Hoist *h, NrOpId op, int32_t after, int depth) {
    NrFunc *f = h->f;
    if (h->mark[op]) return true;
    if (depth > 64 || fence(f, op) || synchronizes(f->ops[op].opc)) return false;
    h->mark[op] = 1;
    h->set[h->nset++] = op;
    const NrOp *o = &f->ops[op];
    for (int i = 0; i < o->nopnds; i++) {
        NrValId v = o->opnds[i];
        if (v <= 0) continue;
        NrOpId d = f->vals[v].def;
        if (d && h->pos[d] > after && !collect(h, d, after, depth + 1)) return false;
    }
    return true;
}

static void clear_marks(Hoist *h) {
    for (int i = 0; i < h->nset; i++) h->mark[h->set[i]] = 0;
    h->nset = 0;
}

static void hoist_body(Hoist *h) {
    NrFunc *f = h->f;
    NrBlockId b = f->body;
    int32_t n = 0;
    for (NrOpId o = f->blocks[b].first; o; o = f->ops[o].next) h->pos[o] = ++n;
    int32_t last_fence = 0;     /* position of the last fence seen */
    NrOpId first_sync = 0;      /* the first synchronizing op after it */
    int total = 0;              /* bytes per thread moved before first_sync */
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        if (fence(f, o)) {
            last_fence = h->pos[o];
            first_sync = 0;
            total = 0;
        } else if (synchronizes(f->ops[o].opc)) {
            if (!first_sync) first_sync = o;
        } else if (first_sync && movable_load(f, o)) {
            int bytes = thread_bytes(h, f->ops[o].results[0]);
            if (bytes > 0 && bytes <= MAX_BYTES && total + bytes <= MAX_TOTAL && collect(h, o, last_fence, 0)) {
                /* Move the marked ops after first_sync, in order, before it.
                 * Positions stay as they were: a moved op keeps a position
                 * after last_fence, so a later load that needs it marks it
                 * again, and it is then already in place. */
                for (NrOpId m = first_sync; m;) {
                    NrOpId mnext = f->ops[m].next;
                    if (h->mark[m]) {
                        nr_op_unlink(f, m);
                        nr_op_insert_before(f, first_sync, m);
                    }
                    if (m == o) break;
                    m = mnext;
                }
                total += bytes;
            }
            clear_marks(h);
        }
        o = next;
    }
}

bool nr_gpu_hoist_loads(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrFunc *f = m->funcs[i];
        NrArena scratch;
        nr_arena_init(&scratch);
        size_t nops = (size_t)(f->nops > 0 ? f->nops : 1);
        Hoist h = {f, nr_gpu_num_warps(m), nr_alloc(&scratch, sizeof(int32_t) * nops), nr_alloc(&scratch, nops),
                   nr_alloc(&scratch, sizeof(NrOpId) * nops), 0};
        hoist_body(&h);
        nr_arena_free(&scratch);
    }
    return true;
}
