/* ir.c - construction and mutation of the block IR; see ir.h.
 * Printing, parsing and verification live in ir_print.c, ir_parse.c and
 * ir_verify.c. */
#include "ir.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* --- tables generated from the .def files ------------------------------------------------------ */
#define B NR_DTC_BOOL
#define S NR_DTC_SINT
#define U NR_DTC_UINT
#define F NR_DTC_FLOAT
const NrDtypeInfo nr_dtype_info[NR_DT_COUNT] = {
    [NR_DT_INVALID] = {"invalid", "invalid", "invalid", 0, 0, NR_DTC_SINT},
#define DT(ID, ir, tri, sig, bits, cls) [NR_DT_##ID] = {ir, tri, sig, bits, (bits) < 8 ? 1 : (bits) / 8, cls},
#include "dtypes.def"
#undef DT
};
#undef B
#undef S
#undef U
#undef F

const char *const nr_attr_names[NR_A_COUNT] = {
    [NR_A_INVALID] = "invalid",
#define ATTR(ID, name) [NR_A_##ID] = name,
#include "attrs.def"
#undef ATTR
};

#define PURE NR_OPF_PURE
#define COMM NR_OPF_COMM
#define TERM NR_OPF_TERM
#define ELEM NR_OPF_ELEM
#define READ NR_OPF_READ
#define WRITE NR_OPF_WRITE
#define VAR NR_VAR
#define SAME NR_VC_SAME
#define CMP NR_VC_CMP
#define CUSTOM NR_VC_CUSTOM
#define ANY NR_DC_ANY
#define NUM NR_DC_NUM
#define INT NR_DC_INT
#define FLT NR_DC_FLT
const NrOpInfo nr_op_info[NR_OP_COUNT] = {
    [NR_OP_INVALID] = {"invalid", 0, 0, 0, 0, NR_VC_CUSTOM, NR_DC_ANY, "not an op"},
#define OP(ID, name, no, nr, ng, fl, vc, dc, meaning) [NR_OP_##ID] = {name, no, nr, ng, (fl), vc, dc, meaning},
#include "ops.def"
#undef OP
};
#undef PURE
#undef COMM
#undef TERM
#undef ELEM
#undef READ
#undef WRITE
#undef VAR
#undef SAME
#undef CMP
#undef CUSTOM
#undef ANY
#undef NUM
#undef INT
#undef FLT

static bool name_eq(const char *a, const char *s, size_t n) { return strlen(a) == n && memcmp(a, s, n) == 0; }

NrDtype nr_dtype_from_ir(const char *s, size_t n) {
    for (int d = 1; d < NR_DT_COUNT; d++)
        if (name_eq(nr_dtype_info[d].ir, s, n)) return (NrDtype)d;
    return NR_DT_INVALID;
}

NrDtype nr_dtype_from_triton(const char *s, size_t n) {
    for (int d = 1; d < NR_DT_COUNT; d++)
        if (name_eq(nr_dtype_info[d].triton, s, n)) return (NrDtype)d;
    return NR_DT_INVALID;
}

NrDtype nr_dtype_from_sig(const char *s, size_t n) {
    for (int d = 1; d < NR_DT_COUNT; d++)
        if (name_eq(nr_dtype_info[d].sig, s, n)) return (NrDtype)d;
    return NR_DT_INVALID;
}

NrAttrName nr_attr_from_name(const char *s, size_t n) {
    for (int a = 1; a < NR_A_COUNT; a++)
        if (name_eq(nr_attr_names[a], s, n)) return (NrAttrName)a;
    return NR_A_INVALID;
}

NrOpcode nr_opcode_from_name(const char *s, size_t n) {
    for (int o = 1; o < NR_OP_COUNT; o++)
        if (name_eq(nr_op_info[o].name, s, n)) return (NrOpcode)o;
    return NR_OP_INVALID;
}

/* --- module ------------------------------------------------------------------------------------ */
NrModule *nr_module_new(NrArena *arena) {
    bool own = arena == NULL;
    if (own) {
        NrArena tmp;
        nr_arena_init(&tmp);
        arena = nr_alloc(&tmp, sizeof *arena);
        *arena = tmp;
        /* The arena struct lives inside its own first chunk; freeing copies it out first. */
    }
    NrModule *m = nr_alloc(arena, sizeof *m);
    m->arena = arena;
    m->owns_arena = own;
    nr_sources_init(&m->sources, arena);
    NR_PUSH(arena, m->types, m->ntypes, m->captypes); /* id 0 = none */
    return m;
}

void nr_module_free(NrModule *m) {
    if (!m || !m->owns_arena) return;
    NrArena a = *m->arena;
    nr_arena_free(&a);
}

NrFunc *nr_func_new(NrModule *m, const char *name, int nargs, const NrTypeId *argtypes, int nres,
                    const NrTypeId *rtypes) {
    NrFunc *f = nr_alloc(m->arena, sizeof *f);
    f->mod = m;
    f->name = nr_strdup(m->arena, name);
    NR_PUSH(m->arena, f->ops, f->nops, f->capops);
    NR_PUSH(m->arena, f->vals, f->nvals, f->capvals);
    NR_PUSH(m->arena, f->blocks, f->nblocks, f->capblocks);
    f->body = nr_block_new(f, NR_NONE);
    f->params = nr_alloc(m->arena, sizeof(NrParam) * (size_t)(nargs > 0 ? nargs : 1));
    for (int i = 0; i < nargs; i++) {
        nr_block_add_arg(f, f->body, argtypes[i]);
        f->params[i].divisibility = 1;
        f->params[i].index = i;
    }
    f->nrtypes = nres;
    f->rtypes = nr_alloc(m->arena, sizeof(NrTypeId) * (size_t)(nres > 0 ? nres : 1));
    for (int i = 0; i < nres; i++) f->rtypes[i] = rtypes[i];
    *NR_PUSH(m->arena, m->funcs, m->nfuncs, m->capfuncs) = f;
    return f;
}

NrFunc *nr_module_find_func(NrModule *m, const char *name) {
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
    return NULL;
}

void nr_module_remove_func(NrModule *m, NrFunc *f) {
    for (int i = 0; i < m->nfuncs; i++) {
        if (m->funcs[i] == f) {
            memmove(&m->funcs[i], &m->funcs[i + 1], sizeof(NrFunc *) * (size_t)(m->nfuncs - i - 1));
            m->nfuncs--;
            return;
        }
    }
}

/* --- types ------------------------------------------------------------------------------------- */
static bool type_eq(const NrType *a, const NrType *b) {
    if (a->kind != b->kind || a->dtype != b->dtype || a->ptr != b->ptr || a->rank != b->rank ||
        a->layout != b->layout)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* Open addressing over type ids (0 = empty slot), at most half full. */
struct NrTypeIndex {
    NrTypeId *slot;
    uint32_t cap;      /* a power of two */
    int32_t n;         /* types 1 .. n-1 are in the index */
};

static uint32_t type_hash(const NrType *t) {
    uint32_t h = 2166136261u;
    uint32_t w[4] = {(uint32_t)t->kind | (uint32_t)t->dtype << 8 | (uint32_t)t->ptr << 16 | (uint32_t)t->rank << 24,
                     (uint32_t)t->layout, 0, 0};
    for (int i = 0; i < t->rank; i++) w[2 + (i & 1)] = w[2 + (i & 1)] * 31u + (uint32_t)t->shape[i];
    for (int i = 0; i < 4; i++) h = (h ^ w[i]) * 16777619u;
    return h ^ h >> 15;
}

static void index_put(struct NrTypeIndex *x, const NrModule *m, NrTypeId id) {
    uint32_t i = type_hash(&m->types[id]) & (x->cap - 1);
    while (x->slot[i]) i = (i + 1) & (x->cap - 1);
    x->slot[i] = id;
}

/* The index, brought up to date with the type table (rebuilt at twice the
 * size when it would be more than half full). */
static struct NrTypeIndex *type_index(NrModule *m) {
    struct NrTypeIndex *x = m->type_index;
    if (!x || (uint32_t)m->ntypes * 2 > x->cap) {
        uint32_t cap = 256;
        while ((uint32_t)m->ntypes * 4 > cap) cap *= 2;
        x = nr_alloc(m->arena, sizeof *x);
        x->slot = nr_alloc(m->arena, sizeof(NrTypeId) * cap);
        x->cap = cap;
        x->n = 1;
        m->type_index = x;
    }
    for (; x->n < m->ntypes; x->n++) index_put(x, m, x->n);
    return x;
}

NrTypeId nr_type_intern(NrModule *m, const NrType *t) {
    NrType norm;
    memset(&norm, 0, sizeof norm);
    norm.kind = t->kind;
    norm.dtype = t->dtype;
    norm.ptr = t->ptr;
    norm.rank = t->rank;
    norm.layout = t->layout;
    NR_ASSERT(t->rank <= NR_MAX_RANK);
    for (int i = 0; i < t->rank; i++) norm.shape[i] = t->shape[i];
    struct NrTypeIndex *x = type_index(m);
    uint32_t i = type_hash(&norm) & (x->cap - 1);
    for (; x->slot[i]; i = (i + 1) & (x->cap - 1))
        if (type_eq(&m->types[x->slot[i]], &norm)) return x->slot[i];
    *NR_PUSH(m->arena, m->types, m->ntypes, m->captypes) = norm;
    return m->ntypes - 1;
}

NrTypeId nr_type_scalar(NrModule *m, NrDtype dt) {
    NrType t = {0};
    t.dtype = (uint8_t)dt;
    return nr_type_intern(m, &t);
}

NrTypeId nr_type_ptr(NrModule *m, NrDtype pointee, int depth) {
    NrType t = {0};
    t.dtype = (uint8_t)pointee;
    t.ptr = (uint8_t)depth;
    return nr_type_intern(m, &t);
}

NrTypeId nr_type_block(NrModule *m, NrTypeId elem, int rank, const int32_t *shape) {
    NrType t = m->types[elem];
    t.rank = (uint8_t)rank;
    t.layout = 0;
    for (int i = 0; i < rank; i++) t.shape[i] = shape[i];
    return nr_type_intern(m, &t);
}

NrTypeId nr_type_elem(NrModule *m, NrTypeId t) {
    NrType e = m->types[t];
    e.rank = 0;
    e.layout = 0;
    return nr_type_intern(m, &e);
}

NrTypeId nr_type_with_elem(NrModule *m, NrTypeId t, NrTypeId elem) {
    NrType r = m->types[t];
    const NrType *e = &m->types[elem];
    r.kind = e->kind;
    r.dtype = e->dtype;
    r.ptr = e->ptr;
    return nr_type_intern(m, &r);
}

NrTypeId nr_type_with_dtype(NrModule *m, NrTypeId t, NrDtype dt) {
    NrType r = m->types[t];
    r.dtype = (uint8_t)dt;
    r.ptr = 0;
    return nr_type_intern(m, &r);
}

int64_t nr_type_numel(const NrModule *m, NrTypeId t) {
    int64_t n = 1;
    for (int i = 0; i < m->types[t].rank; i++) n *= m->types[t].shape[i];
    return n;
}

int nr_type_elem_bytes(const NrModule *m, NrTypeId t) {
    const NrType *ty = &m->types[t];
    return ty->ptr ? 8 : nr_dtype_info[ty->dtype].bytes;
}

static void print_elem(const NrType *t, FILE *out) {
    for (int i = 0; i < t->ptr; i++) fputs("ptr<", out);
    fputs(nr_dtype_info[t->dtype].ir, out);
    for (int i = 0; i < t->ptr; i++) fputc('>', out);
}

/* A decimal integer, without fprintf (types are printed with every value). */
static void put_decimal(FILE *out, int32_t v) {
    char d[16];
    int k = (int)sizeof d;
    d[--k] = 0;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do {
        d[--k] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) d[--k] = '-';
    fputs(d + k, out);
}

void nr_type_print(const NrModule *m, NrTypeId id, FILE *out) {
    const NrType *t = &m->types[id];
    if (t->rank == 0 && t->kind != NR_TK_MEMDESC) {
        print_elem(t, out);
        return;
    }
    fputs(t->kind == NR_TK_MEMDESC ? "!smem<" : "tensor<", out);
    for (int i = 0; i < t->rank; i++) {
        put_decimal(out, t->shape[i]);
        fputc('x', out);
    }
    print_elem(t, out);
    if (t->layout) {
        fputs(", #L", out);
        put_decimal(out, t->layout);
    }
    fputc('>', out);
}

char *nr_type_str(const NrModule *m, NrTypeId t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) nr_fatal_oom();
    nr_type_print(m, t, f);
    fclose(f);
    char *s = nr_strndup(m->arena, buf, len);
    free(buf);
    return s;
}

/* --- ops, values, blocks ----------------------------------------------------------------------- */
static NrValId new_value(NrFunc *f, NrTypeId t, NrOpId def, NrBlockId block, int index) {
    NrValue *v = NR_PUSH(f->mod->arena, f->vals, f->nvals, f->capvals);
    v->type = t;
    v->def = def;
    v->block = block;
    v->index = index;
    return f->nvals - 1;
}

NrBlockId nr_block_new(NrFunc *f, NrOpId parent) {
    NrBlock *b = NR_PUSH(f->mod->arena, f->blocks, f->nblocks, f->capblocks);
    b->parent = parent;
    return f->nblocks - 1;
}

NrValId nr_block_add_arg(NrFunc *f, NrBlockId bid, NrTypeId t) {
    NrBlock *b = &f->blocks[bid];
    int idx = b->nargs;
    NrValId v = new_value(f, t, NR_NONE, bid, idx);
    b = &f->blocks[bid];
    *NR_PUSH(f->mod->arena, b->args, b->nargs, b->capargs) = v;
    return v;
}

NrOpId nr_op_new(NrFunc *f, NrOpcode opc, int nopnds, const NrValId *opnds, int nres, const NrTypeId *rtypes,
                 int nregions, NrLoc loc) {
    NrArena *a = f->mod->arena;
    NR_PUSH(a, f->ops, f->nops, f->capops);
    NrOpId id = f->nops - 1;
    NrOp *op = &f->ops[id];
    op->opc = (uint16_t)opc;
    op->loc = loc;
    op->nopnds = nopnds;
    op->opnds = nr_alloc(a, sizeof(NrValId) * (size_t)(nopnds > 0 ? nopnds : 1));
    if (nopnds && opnds) memcpy(op->opnds, opnds, sizeof(NrValId) * (size_t)nopnds);
    NrValId *results = nr_alloc(a, sizeof(NrValId) * (size_t)(nres > 0 ? nres : 1));
    NrBlockId *regions = nr_alloc(a, sizeof(NrBlockId) * (size_t)(nregions > 0 ? nregions : 1));
    for (int i = 0; i < nres; i++) results[i] = new_value(f, rtypes[i], id, NR_NONE, i);
    for (int i = 0; i < nregions; i++) regions[i] = nr_block_new(f, id);
    op = &f->ops[id]; /* arrays may have moved */
    op->nresults = nres;
    op->results = results;
    op->nregions = (uint8_t)nregions;
    op->regions = regions;
    return id;
}

void nr_op_append(NrFunc *f, NrBlockId bid, NrOpId id) {
    NrBlock *b = &f->blocks[bid];
    NrOp *op = &f->ops[id];
    op->block = bid;
    op->prev = b->last;
    op->next = NR_NONE;
    if (b->last) f->ops[b->last].next = id;
    else b->first = id;
    b->last = id;
}

void nr_op_insert_before(NrFunc *f, NrOpId before, NrOpId id) {
    NrOp *bo = &f->ops[before];
    NrOp *op = &f->ops[id];
    NrBlock *b = &f->blocks[bo->block];
    op->block = bo->block;
    op->next = before;
    op->prev = bo->prev;
    if (bo->prev) f->ops[bo->prev].next = id;
    else b->first = id;
    bo->prev = id;
}

void nr_op_insert_after(NrFunc *f, NrOpId after, NrOpId id) {
    NrOp *ao = &f->ops[after];
    if (!ao->next) {
        nr_op_append(f, ao->block, id);
        return;
    }
    nr_op_insert_before(f, ao->next, id);
}

void nr_op_unlink(NrFunc *f, NrOpId id) {
    NrOp *op = &f->ops[id];
    if (!op->block) return;
    NrBlock *b = &f->blocks[op->block];
    if (op->prev) f->ops[op->prev].next = op->next;
    else b->first = op->next;
    if (op->next) f->ops[op->next].prev = op->prev;
    else b->last = op->prev;
    op->prev = op->next = NR_NONE;
    op->block = NR_NONE;
}

static void mark_dead(NrFunc *f, NrOpId id) {
    NrOp *op = &f->ops[id];
    op->dead = 1;
    for (int r = 0; r < op->nregions; r++) {
        NrBlock *b = &f->blocks[op->regions[r]];
        for (NrOpId o = b->first; o; o = f->ops[o].next) mark_dead(f, o);
    }
}

void nr_op_erase(NrFunc *f, NrOpId id) {
    nr_op_unlink(f, id);
    mark_dead(f, id);
}

void nr_op_set_operands(NrFunc *f, NrOpId id, int n, const NrValId *opnds) {
    NrOp *op = &f->ops[id];
    if (n > op->nopnds) op->opnds = nr_alloc(f->mod->arena, sizeof(NrValId) * (size_t)n);
    if (n) memmove(op->opnds, opnds, sizeof(NrValId) * (size_t)n);
    op->nopnds = n;
}

NrOpId nr_block_terminator(NrFunc *f, NrBlockId b) {
    NrOpId last = f->blocks[b].last;
    if (last && (nr_op_info[f->ops[last].opc].flags & NR_OPF_TERM)) return last;
    return NR_NONE;
}

/* --- attributes -------------------------------------------------------------------------------- */
static NrAttr *attr_slot(NrFunc *f, NrOpId id, NrAttrName name) {
    NrOp *op = &f->ops[id];
    for (int i = 0; i < op->nattrs; i++)
        if (op->attrs[i].name == name) return &op->attrs[i];
    op->attrs = nr_arena_grow(f->mod->arena, op->attrs, sizeof(NrAttr) * (size_t)op->nattrs,
                              sizeof(NrAttr) * (size_t)(op->nattrs + 1));
    NrAttr *at = &op->attrs[op->nattrs++];
    memset(at, 0, sizeof *at);
    at->name = (uint16_t)name;
    return at;
}

void nr_op_set_int(NrFunc *f, NrOpId op, NrAttrName a, int64_t v) {
    NrAttr *at = attr_slot(f, op, a);
    at->kind = NR_AK_INT;
    at->v.i = v;
}

void nr_op_set_float(NrFunc *f, NrOpId op, NrAttrName a, double v) {
    NrAttr *at = attr_slot(f, op, a);
    at->kind = NR_AK_FLOAT;
    at->v.f = v;
}

void nr_op_set_bool(NrFunc *f, NrOpId op, NrAttrName a, bool v) {
    NrAttr *at = attr_slot(f, op, a);
    at->kind = NR_AK_BOOL;
    at->v.i = v;
}

void nr_op_set_str(NrFunc *f, NrOpId op, NrAttrName a, const char *s) {
    const char *copy = nr_strdup(f->mod->arena, s);
    NrAttr *at = attr_slot(f, op, a);
    at->kind = NR_AK_STR;
    at->v.s = copy;
}

void nr_op_set_ints(NrFunc *f, NrOpId op, NrAttrName a, int n, const int64_t *v) {
    int64_t *copy = nr_alloc(f->mod->arena, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (n) memcpy(copy, v, sizeof(int64_t) * (size_t)n);
    NrAttr *at = attr_slot(f, op, a);
    at->kind = NR_AK_INTS;
    at->n = n;
    at->v.ints = copy;
}

const NrAttr *nr_op_attr(const NrFunc *f, NrOpId id, NrAttrName a) {
    const NrOp *op = &f->ops[id];
    for (int i = 0; i < op->nattrs; i++)
        if (op->attrs[i].name == a) return &op->attrs[i];
    return NULL;
}

int64_t nr_op_int(const NrFunc *f, NrOpId op, NrAttrName a, int64_t dflt) {
    const NrAttr *at = nr_op_attr(f, op, a);
    if (!at) return dflt;
    if (at->kind == NR_AK_INT || at->kind == NR_AK_BOOL) return at->v.i;
    if (at->kind == NR_AK_FLOAT) return (int64_t)at->v.f;
    return dflt;
}

double nr_op_float(const NrFunc *f, NrOpId op, NrAttrName a, double dflt) {
    const NrAttr *at = nr_op_attr(f, op, a);
    if (!at) return dflt;
    if (at->kind == NR_AK_FLOAT) return at->v.f;
    if (at->kind == NR_AK_INT || at->kind == NR_AK_BOOL) return (double)at->v.i;
    return dflt;
}

const char *nr_op_str(const NrFunc *f, NrOpId op, NrAttrName a, const char *dflt) {
    const NrAttr *at = nr_op_attr(f, op, a);
    return at && at->kind == NR_AK_STR ? at->v.s : dflt;
}

bool nr_op_has(const NrFunc *f, NrOpId op, NrAttrName a) { return nr_op_attr(f, op, a) != NULL; }

void nr_op_copy_attrs(NrFunc *dst, NrOpId d, const NrFunc *src, NrOpId s) {
    const NrOp *so = &src->ops[s];
    for (int i = 0; i < so->nattrs; i++) {
        const NrAttr *at = &so->attrs[i];
        switch ((NrAttrKind)at->kind) {
        case NR_AK_INT: nr_op_set_int(dst, d, (NrAttrName)at->name, at->v.i); break;
        case NR_AK_BOOL: nr_op_set_bool(dst, d, (NrAttrName)at->name, at->v.i != 0); break;
        case NR_AK_FLOAT: nr_op_set_float(dst, d, (NrAttrName)at->name, at->v.f); break;
        case NR_AK_STR: nr_op_set_str(dst, d, (NrAttrName)at->name, at->v.s); break;
        case NR_AK_INTS: nr_op_set_ints(dst, d, (NrAttrName)at->name, at->n, at->v.ints); break;
        }
    }
}

/* --- uses and walking -------------------------------------------------------------------------- */
void nr_replace_all_uses(NrFunc *f, NrValId from, NrValId to) {
    for (NrOpId o = 1; o < f->nops; o++) {
        NrOp *op = &f->ops[o];
        if (op->dead) continue;
        for (int i = 0; i < op->nopnds; i++)
            if (op->opnds[i] == from) op->opnds[i] = to;
    }
}

void nr_replace_all_uses_n(NrFunc *f, const NrValId *from, const NrValId *to, int n) {
    if (n == 1) {
        nr_replace_all_uses(f, from[0], to[0]);
        return;
    }
    if (n <= 0) return;
    for (NrOpId o = 1; o < f->nops; o++) {
        NrOp *op = &f->ops[o];
        if (op->dead) continue;
        for (int i = 0; i < op->nopnds; i++)
            for (int j = 0; j < n; j++)
                if (op->opnds[i] == from[j]) {
                    op->opnds[i] = to[j];
                    break;
                }
    }
}

int32_t *nr_count_uses(NrFunc *f) {
    int32_t *c = nr_alloc(f->mod->arena, sizeof(int32_t) * (size_t)f->nvals);
    for (NrOpId o = 1; o < f->nops; o++) {
        NrOp *op = &f->ops[o];
        if (op->dead || !op->block) continue;
        for (int i = 0; i < op->nopnds; i++)
            if (op->opnds[i]) c[op->opnds[i]]++;
    }
    return c;
}

static NrValId clone_mapped(const NrValId *map, int32_t n, NrValId v) {
    return v > 0 && v < n && map[v] ? map[v] : v;
}

NrOpId nr_op_clone(NrFunc *f, NrOpId so, NrValId *map, int32_t nmap, NrBlockId to, NrOpId before) {
    int no = f->ops[so].nopnds, nres = f->ops[so].nresults, ng = f->ops[so].nregions;
    NrValId *ops = nr_alloc(f->mod->arena, sizeof(NrValId) * (size_t)(no + 1));
    NrTypeId *ts = nr_alloc(f->mod->arena, sizeof(NrTypeId) * (size_t)(nres + 1));
    for (int i = 0; i < no; i++) ops[i] = clone_mapped(map, nmap, f->ops[so].opnds[i]);
    for (int i = 0; i < nres; i++) ts[i] = f->vals[f->ops[so].results[i]].type;
    NrOpId d = nr_op_new(f, (NrOpcode)f->ops[so].opc, no, ops, nres, ts, ng, f->ops[so].loc);
    nr_op_copy_attrs(f, d, f, so);
    if (before) nr_op_insert_before(f, before, d);
    else nr_op_append(f, to, d);
    for (int i = 0; i < nres; i++)
        if (f->ops[so].results[i] < nmap) map[f->ops[so].results[i]] = f->ops[d].results[i];
    for (int k = 0; k < ng; k++) {
        NrBlockId sb = f->ops[so].regions[k], db = f->ops[d].regions[k];
        for (int i = 0; i < f->blocks[sb].nargs; i++) {
            NrValId sa = f->blocks[sb].args[i];
            NrValId da = nr_block_add_arg(f, db, f->vals[sa].type);
            if (sa < nmap) map[sa] = da;
        }
        NR_FOR_OPS(f, sb, o) nr_op_clone(f, o, map, nmap, db, NR_NONE);
    }
    return d;
}

bool nr_op_reads(const NrFunc *f, NrOpId op, NrValId v) {
    const NrOp *o = &f->ops[op];
    for (int i = 0; i < o->nopnds; i++)
        if (o->opnds[i] == v) return true;
    for (int r = 0; r < o->nregions; r++)
        for (NrOpId x = f->blocks[o->regions[r]].first; x; x = f->ops[x].next)
            if (nr_op_reads(f, x, v)) return true;
    return false;
}

static void walk_block(NrFunc *f, NrBlockId b, NrOpVisitor fn, void *ctx) {
    NrOpId o = f->blocks[b].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        fn(f, o, ctx);
        if (!f->ops[o].dead) {
            for (int r = 0; r < f->ops[o].nregions; r++) walk_block(f, f->ops[o].regions[r], fn, ctx);
            next = f->ops[o].next;
        }
        o = next;
    }
}

void nr_walk(NrFunc *f, NrOpVisitor fn, void *ctx) { walk_block(f, f->body, fn, ctx); }

/* --- building ---------------------------------------------------------------------------------- */
NrBuilder nr_builder_at_end(NrFunc *f, NrBlockId b) {
    NrBuilder bl = {f, b, NR_NONE, {0, 0, 0}};
    return bl;
}

NrBuilder nr_builder_before(NrFunc *f, NrOpId op) {
    NrBuilder bl = {f, f->ops[op].block, op, f->ops[op].loc};
    return bl;
}

NrBuilder nr_builder_after(NrFunc *f, NrOpId op) {
    NrBuilder bl = f->ops[op].next ? nr_builder_before(f, f->ops[op].next) : nr_builder_at_end(f, f->ops[op].block);
    bl.loc = f->ops[op].loc;
    return bl;
}

NrOpId nr_build(NrBuilder *b, NrOpcode opc, int nopnds, const NrValId *opnds, int nres, const NrTypeId *rtypes,
                int nregions) {
    NrOpId op = nr_op_new(b->f, opc, nopnds, opnds, nres, rtypes, nregions, b->loc);
    if (b->before) nr_op_insert_before(b->f, b->before, op);
    else nr_op_append(b->f, b->block, op);
    return op;
}

NrValId nr_build_const_int(NrBuilder *b, NrTypeId t, int64_t v) {
    NrOpId op = nr_build(b, NR_OP_CONST, 0, NULL, 1, &t, 0);
    nr_op_set_int(b->f, op, NR_A_VALUE, v);
    return nr_op_result(b->f, op, 0);
}

NrValId nr_build_const_float(NrBuilder *b, NrTypeId t, double v) {
    NrOpId op = nr_build(b, NR_OP_CONST, 0, NULL, 1, &t, 0);
    nr_op_set_float(b->f, op, NR_A_VALUE, v);
    return nr_op_result(b->f, op, 0);
}

NrValId nr_build1(NrBuilder *b, NrOpcode opc, NrTypeId rtype, int nopnds, const NrValId *opnds) {
    NrOpId op = nr_build(b, opc, nopnds, opnds, 1, &rtype, 0);
    return nr_op_result(b->f, op, 0);
}

NrValId nr_build_unary(NrBuilder *b, NrOpcode opc, NrValId a) {
    return nr_build1(b, opc, nr_val_type(b->f, a), 1, &a);
}

NrValId nr_build_binary(NrBuilder *b, NrOpcode opc, NrValId a, NrValId x) {
    NrValId ops[2] = {a, x};
    return nr_build1(b, opc, nr_val_type(b->f, a), 2, ops);
}
