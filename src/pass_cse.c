/* pass_cse.c - common-subexpression elimination of PURE ops, scoped by region.
 *
 * Two ops are the same expression when they have the same opcode, operands
 * (operands 0 and 1 of a COMM op in either order), attributes (in any order,
 * floats by their bits) and result types.  The later one is replaced by the
 * earlier one if the earlier one is visible from it: defined before it in
 * the same block or in an enclosing block.  Ops are visited in program order
 * with one hash table whose entries are pushed on a stack; leaving a block
 * pops the entries it added, so values of a region never leak to its
 * siblings or to the enclosing block.  Loads and other ops with effects are
 * never merged. */
#include "passes_impl.h"
#include "util.h"

#include <string.h>

typedef struct Entry {
    NrOpId op;
    uint64_t hash;
    int32_t next;   /* next entry of the same bucket, -1 at the end */
} Entry;

typedef struct Cse {
    NrModule *m;
    NrFunc *f;
    NrArena *scratch;
    NrValMap repl;
    int32_t *buckets;   /* head entry per bucket, -1 when empty */
    uint32_t mask;
    Entry *entries;     /* a stack: the table's contents, oldest first */
    int nentries, capentries;
} Cse;

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 29);
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t hash_attr(const NrAttr *a) {
    uint64_t h = mix(a->name, a->kind);
    switch ((NrAttrKind)a->kind) {
    case NR_AK_INT:
    case NR_AK_BOOL: return mix(h, (uint64_t)a->v.i);
    case NR_AK_FLOAT: {
        uint64_t u;
        memcpy(&u, &a->v.f, 8);
        return mix(h, u);
    }
    case NR_AK_STR: return mix(h, hash_str(a->v.s));
    case NR_AK_INTS:
        for (int i = 0; i < a->n; i++) h = mix(h, (uint64_t)a->v.ints[i]);
        return mix(h, (uint64_t)a->n);
    }
    return h;
}

static bool attr_eq(const NrAttr *a, const NrAttr *b) {
    if (a->name != b->name || a->kind != b->kind) return false;
    switch ((NrAttrKind)a->kind) {
    case NR_AK_INT:
    case NR_AK_BOOL: return a->v.i == b->v.i;
    case NR_AK_FLOAT: return memcmp(&a->v.f, &b->v.f, sizeof(double)) == 0;
    case NR_AK_STR: return strcmp(a->v.s, b->v.s) == 0;
    case NR_AK_INTS:
        return a->n == b->n && (a->n == 0 || memcmp(a->v.ints, b->v.ints, sizeof(int64_t) * (size_t)a->n) == 0);
    }
    return false;
}

/* Operand i in canonical order: a COMM op lists its first two sorted. */
static NrValId operand(const NrOp *o, int i) {
    if (i < 2 && o->nopnds >= 2 && (nr_op_info[o->opc].flags & NR_OPF_COMM)) {
        NrValId a = o->opnds[0], b = o->opnds[1];
        return (i == 0) == (a < b) ? a : b;
    }
    return o->opnds[i];
}

static uint64_t hash_op(const NrFunc *f, const NrOp *o) {
    uint64_t h = mix(o->opc, ((uint64_t)o->nopnds << 32) | (uint32_t)o->nresults);
    for (int i = 0; i < o->nopnds; i++) h = mix(h, (uint64_t)operand(o, i));
    for (int i = 0; i < o->nresults; i++) h = mix(h, (uint64_t)f->vals[o->results[i]].type);
    uint64_t attrs = 0; /* order-independent */
    for (int i = 0; i < o->nattrs; i++) attrs += hash_attr(&o->attrs[i]);
    return mix(h, attrs);
}

static bool same_op(const NrFunc *f, const NrOp *a, const NrOp *b) {
    if (a->opc != b->opc || a->nopnds != b->nopnds || a->nresults != b->nresults || a->nattrs != b->nattrs)
        return false;
    for (int i = 0; i < a->nopnds; i++)
        if (operand(a, i) != operand(b, i)) return false;
    for (int i = 0; i < a->nresults; i++)
        if (f->vals[a->results[i]].type != f->vals[b->results[i]].type) return false;
    for (int i = 0; i < a->nattrs; i++) {
        const NrAttr *x = &a->attrs[i];
        int j = 0;
        while (j < b->nattrs && b->attrs[j].name != x->name) j++;
        if (j == b->nattrs || !attr_eq(x, &b->attrs[j])) return false;
    }
    return true;
}

/* Ops CSE may merge: pure, without regions, with results. */
static bool candidate(const NrOp *o) {
    return (nr_op_info[o->opc].flags & NR_OPF_PURE) && o->nregions == 0 && o->nresults > 0;
}

/* The visible op equal to op, or NR_NONE after adding op to the table. */
static NrOpId find_or_add(Cse *c, NrOpId op) {
    const NrOp *o = &c->f->ops[op];
    uint64_t h = hash_op(c->f, o);
    uint32_t b = (uint32_t)h & c->mask;
    for (int32_t e = c->buckets[b]; e >= 0; e = c->entries[e].next)
        if (c->entries[e].hash == h && same_op(c->f, &c->f->ops[c->entries[e].op], o)) return c->entries[e].op;
    Entry *e = NR_PUSH(c->scratch, c->entries, c->nentries, c->capentries);
    e->op = op;
    e->hash = h;
    e->next = c->buckets[b];
    c->buckets[b] = c->nentries - 1;
    return NR_NONE;
}

/* Leave a scope: drop the entries added since `mark` (each is its bucket's head). */
static void pop_to(Cse *c, int mark) {
    while (c->nentries > mark) {
        Entry *e = &c->entries[--c->nentries];
        c->buckets[(uint32_t)e->hash & c->mask] = e->next;
    }
}

static void cse_block(Cse *c, NrBlockId b, int depth) {
    NR_ASSERT(depth < NR_PASS_MAX_DEPTH);
    NrFunc *f = c->f;
    int mark = c->nentries;
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        nr_vmap_apply_op(f, &c->repl, o);
        if (candidate(&f->ops[o])) {
            NrOpId same = find_or_add(c, o);
            if (same) {
                for (int i = 0; i < f->ops[o].nresults; i++)
                    nr_vmap_set(&c->repl, f->ops[o].results[i], f->ops[same].results[i]);
                nr_op_erase(f, o);
                o = next;
                continue;
            }
        }
        for (int r = 0; r < f->ops[o].nregions; r++) cse_block(c, f->ops[o].regions[r], depth + 1);
        o = next;
    }
    pop_to(c, mark);
}

bool nr_pass_cse(NrModule *m, NrDiags *d) {
    (void)d;
    for (int i = 0; i < m->nfuncs; i++) {
        NrArena scratch;
        nr_arena_init(&scratch);
        Cse c;
        memset(&c, 0, sizeof c);
        c.m = m;
        c.f = m->funcs[i];
        c.scratch = &scratch;
        nr_vmap_init(&c.repl, &scratch, c.f->nvals);
        uint32_t nb = 16;
        while (nb < (uint32_t)c.f->nops * 2 && nb < (1u << 30)) nb *= 2;
        c.mask = nb - 1;
        c.buckets = nr_alloc(&scratch, sizeof(int32_t) * nb);
        memset(c.buckets, 0xff, sizeof(int32_t) * nb);
        cse_block(&c, c.f->body, 0);
        nr_vmap_apply_all(c.f, &c.repl);
        nr_arena_free(&scratch);
    }
    return true;
}
