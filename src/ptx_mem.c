/* ptx_mem.c - global memory (load, store, atomics) and the debugging ops
 * (print through vprintf, assert through __assertfail).
 *
 * Loads and stores use vector instructions (up to 16 bytes) where a
 * thread's consecutive registers hold consecutive addresses: the layout's
 * first register bases step by one element along a dimension, the pointer's
 * axis info gives at least that contiguity and enough alignment
 * (divisibility_bytes), and the mask is constant over the group.  Nothing
 * is vectorized without axis info.  A masked load moves `other` (or 0)
 * into its destinations first and then loads under the predicate.
 *
 * Replicated elements (layout bases that only repeat elements) are stored
 * and updated once, by their owner; a scalar store or atomic is done by
 * thread 0 (the old value of a scalar atomic reaches every thread through
 * shared memory).  Scalar loads are done by every thread.
 *
 * Atomics map to atom.{sem}.{scope}.global (sem: relaxed, acquire,
 * release or acq_rel, default acq_rel; scope: cta, gpu or sys, default gpu;
 * every combination has its own form) where PTX has the operation; the rest are compare-and-swap
 * loops with the interpreter's rules: 8- and 16-bit integer arithmetic,
 * float max/min (the non-NaN operand), bf16 add before sm_90, exchange of
 * 16-bit values and everything on fp8.  8-bit and/or/xor use the word
 * instruction with the other bytes neutral. */
#include "ptx.h"

#include <stdio.h>
#include <string.h>

static NrDtype vdt(NrPtx *p, NrValId v) {
    const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
    return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
}

static int es_of(NrDtype dt) { return dt == NR_DT_I1 ? 1 : nr_dtype_info[dt].bytes; }

/* --- vector width ---------------------------------------------------------------------------------------- */
/* The number of consecutive registers (1, 2, 4, ...) accessed by one
 * instruction for pointer value ptr of layout lay. */
static int vector_width(NrPtx *p, NrValId ptr, NrValId mask, int lay, int es) {
    if (!p->ax || lay < 0) return 1;
    const NrPtxLay *L = &p->lays[lay];
    const NrAxisInfo *pa = &p->ax[ptr], *ma = mask ? &p->ax[mask] : NULL;
    int best = 1;
    for (int d = 0; d < L->rank; d++) {
        int k = 0;
        while (k < L->nreg && L->regb[k] == 1u << (L->off[d] + k)) k++;
        int64_t v = (int64_t)1 << k;
        if (pa->contiguity[d] < v) v = pa->contiguity[d];
        if (ma && ma->constancy[d] < v) v = ma->constancy[d];
        while (v > 1 && (v * es > 16 || v * es > pa->divisibility_bytes)) v >>= 1;
        if (v < 1 || !nr_is_pow2(v)) v = 1;
        if (v > best && d == L->rank - 1) best = (int)v; /* registers step along the fastest dimension */
        else if (v > best) best = (int)v;
    }
    return best;
}

/* --- cache operators ------------------------------------------------------------------------------------ */
/* " .cg" / ".L1::evict_first" / "" for a load or store.  PTX does not
 * combine cache operators with eviction priorities: the operator wins. */
static const char *cache_suffix(NrPtx *p, NrOpId op, bool load) {
    const char *c = nr_op_str(p->f, op, NR_A_CACHE, "");
    const char *e = nr_op_str(p->f, op, NR_A_EVICT, "");
    static const char *const lc[] = {".ca", ".cg", ".cs", ".lu", ".cv"}, *const sc[] = {".wb", ".cg", ".cs", ".wt"};
    const char *const *ok = load ? lc : sc;
    int n = load ? 5 : 4;
    for (int i = 0; i < n; i++)
        if (strcmp(c, ok[i]) == 0) return ok[i];
    if (strcmp(e, "evict_first") == 0) return ".L1::evict_first";
    if (strcmp(e, "evict_last") == 0) return ".L1::evict_last";
    if (strcmp(e, "evict_normal") == 0) return ".L1::evict_normal";
    return "";
}

/* --- loads --------------------------------------------------------------------------------------------- */
/* Memory type of an element for ld (ints sign- or zero-extend into .b32). */
static const char *ld_type(NrDtype dt) {
    switch (dt) {
    case NR_DT_I1:
    case NR_DT_U8:
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: return ".u8";
    case NR_DT_I8: return ".s8";
    case NR_DT_I16: return ".s16";
    case NR_DT_U16: return ".u16";
    case NR_DT_F16:
    case NR_DT_BF16: return ".b16";
    case NR_DT_I64:
    case NR_DT_U64:
    case NR_DT_F64: return ".b64";
    default: return ".b32";
    }
}

static const char *st_type(NrDtype dt) {
    switch (es_of(dt)) {
    case 1: return ".b8";
    case 2: return ".b16";
    case 8: return ".b64";
    default: return ".b32";
    }
}

static char *regs_list(NrPtx *p, const NrPv *v, int n) { return nr_ptx_reg_list(p, v, n, false); }

static const char *pred_prefix(NrPtx *p, NrPv pred) {
    if (pred.r == 0) return "";
    const char *r = nr_ptx_reg(p, pred.r);
    char *s = nr_alloc(p->a, strlen(r) + 3);
    s[0] = '@';
    strcpy(s + 1, r);
    strcat(s, " ");
    return s;
}

/* Byte j (or 16-bit half) of word w as an element of dtype dt. */
static NrPv extract(NrPtx *p, NrDtype dt, NrPv w, int j, int es) {
    NrPv x = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, w, nr_pv_i32(8 * es * j));
    if (nr_ptx_kind(dt) == NR_PK_H || dt == NR_DT_I1) {
        x = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x, nr_pv_i32(es == 1 ? 0xff : 0xffff));
        if (dt == NR_DT_I1) return nr_pb_setp(p, NR_PC_NE, NR_PT_B32, x, nr_pv_i32(0));
        return nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, x);
    }
    NrPt t = nr_dt_is_signed(dt) ? (es == 1 ? NR_PT_S8 : NR_PT_S16) : (es == 1 ? NR_PT_U8 : NR_PT_U16);
    return nr_pb_cvt(p, NR_PR_NONE, nr_dt_is_signed(dt) ? NR_PT_S32 : NR_PT_U32, t, x);
}

/* The bits of element v (dtype dt, es bytes) as a zero-extended .b32. */
static NrPv elem_bits32(NrPtx *p, NrDtype dt, NrPv v, int es) {
    if (dt == NR_DT_I1) return nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
    if (v.k == NR_PK_H) return nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, v);
    return nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bits(p, NR_PK_I32, v), nr_pv_i32(es == 1 ? 0xff : 0xffff));
}

/* Elements e[0..n) of es < 4 bytes packed into n*es/4 words. */
static void pack_words(NrPtx *p, NrDtype dt, const NrPv *e, int n, int es, NrPv *w) {
    int per = 4 / es;
    for (int i = 0; i < n / per; i++) {
        if (es == 2 && e[2 * i].k == NR_PK_H && e[2 * i + 1].k == NR_PK_H) {
            /* mov.b32 {lo, hi}: ptxas sees through it to a pair's one register (cvt.rn.f16x2.f32) */
            w[i] = nr_ptx_pack_word(p, dt, e + 2 * i);
            continue;
        }
        NrPv acc = nr_pv_i32(0);
        for (int j = 0; j < per; j++) {
            NrPv b = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, elem_bits32(p, dt, e[i * per + j], es), nr_pv_i32(8 * es * j));
            acc = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, acc, b);
        }
        w[i] = acc;
    }
}

/* Loads n elements at addr under pred into out (pre-set to other). */
static void load_group(NrPtx *p, NrOpId op, NrDtype dt, NrPv addr, NrPv pred, const NrPv *other, int n, NrPv *out) {
    int es = es_of(dt);
    const char *cs = nr_op_int(p->f, op, NR_A_VOLATILE, 0) ? "" : cache_suffix(p, op, true);
    const char *ld = nr_op_int(p->f, op, NR_A_VOLATILE, 0) ? "ld.volatile.global" : "ld.global";
    bool masked = pred.r != 0;
    if (pred.r == 0 && !pred.c) { /* never loads */
        for (int i = 0; i < n; i++) out[i] = other[i];
        return;
    }
    NrPk k = dt == NR_DT_I1 ? NR_PK_I32 : nr_ptx_kind(dt);
    if ((n * es <= 8 && n <= 4) || es >= 4) {
        /* One element per register: ld.v{n} of the element type (PTX vectors
         * have at most 4 elements: 8 bytes are 2 words below). */
        NrPv *d = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
        for (int i = 0; i < n; i++) {
            d[i] = (NrPv){(uint8_t)k, nr_ptx_newreg(p, k), 0};
            if (masked) {
                NrPv o = dt == NR_DT_I1 ? nr_pb_selp(p, other[i], nr_pv_i32(1), nr_pv_i32(0)) : other[i];
                nr_pb_mov_to(p, d[i], o);
            }
        }
        char vec[16] = "";
        if (n > 1) snprintf(vec, sizeof vec, ".v%d", n);
        nr_ptx_emit(p, "%s%s%s%s%s %s, %s;", pred_prefix(p, pred), ld, cs, vec, ld_type(dt), regs_list(p, d, n),
                    nr_ptx_addr(p, addr, 0));
        for (int i = 0; i < n; i++)
            out[i] = dt == NR_DT_I1 ? nr_pb_setp(p, NR_PC_NE, NR_PT_B32, d[i], nr_pv_i32(0)) : d[i];
        return;
    }
    /* Narrow elements, more than 8 bytes: .b32 words, then the elements. */
    int nw = n * es / 4;
    NrPv *w = nr_alloc(p->a, sizeof(NrPv) * (size_t)nw), *init = nr_alloc(p->a, sizeof(NrPv) * (size_t)nw);
    if (masked) pack_words(p, dt, other, n, es, init);
    for (int i = 0; i < nw; i++) {
        w[i] = (NrPv){NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
        if (masked) nr_pb_mov_to(p, w[i], init[i]);
    }
    nr_ptx_emit(p, "%s%s%s.v%d.b32 %s, %s;", pred_prefix(p, pred), ld, cs, nw, regs_list(p, w, nw),
                nr_ptx_addr(p, addr, 0));
    int per = 4 / es;
    for (int i = 0; i < n; i++) {
        if (es == 2 && nr_ptx_kind(dt) == NR_PK_H && w[i / per].r) { /* mov.b32 {lo, hi}, w */
            if (i % 2 == 0) nr_ptx_unpack_word(p, dt, w[i / per], &out[i]);
            continue;
        }
        out[i] = extract(p, dt, w[i / per], i % per, es);
    }
}

bool nr_ptx_op_load(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId ptr = o->opnds[0], mask = o->nopnds > 1 ? o->opnds[1] : 0, oth = o->nopnds > 2 ? o->opnds[2] : 0;
    NrValId r = o->results[0];
    NrDtype dt = vdt(p, r);
    NrPtxVal *pv = nr_ptx_val(p, ptr);
    int n = pv->n, lay = pv->lay;
    NrPv *pe = pv->e, *me = mask ? nr_ptx_val(p, mask)->e : NULL, *oe = oth ? nr_ptx_val(p, oth)->e : NULL;
    if ((mask && nr_ptx_val(p, mask)->n != n) || (oth && nr_ptx_val(p, oth)->n != n)) {
        nr_ptx_error(p, "load operands in different layouts");
        return false;
    }
    NrPv zero = dt == NR_DT_I1 ? nr_pv_pred(false) : nr_pv_imm(nr_ptx_kind(dt), 0);
    NrPv *other = nr_alloc(p->a, sizeof(NrPv) * (size_t)n), *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    for (int i = 0; i < n; i++) other[i] = oe ? oe[i] : zero;
    int es = es_of(dt);
    int v = vector_width(p, ptr, mask, lay, es);
    for (int g = 0; g < n; g += v) {
        NrPv pred = me ? nr_ptx_inreg(p, me[g]) : nr_pv_pred(true);
        if (me && me[g].r == 0) pred = me[g];
        load_group(p, op, dt, pe[g], pred, other + g, v, out + g);
    }
    nr_ptx_set(p, r, out, n);
    return true;
}

/* Loads and stores read the pointer and the mask of each vector's first
 * element only (the rest of the vector follows from it), and every
 * element of the stored value and of `other`. */
void nr_ptx_mem_demand(NrPtx *p, NrOpId op, uint32_t *skip) {
    const NrOp *o = &p->f->ops[op];
    bool load = o->opc == NR_OP_LOAD;
    NrValId ptr = o->opnds[0];
    NrValId mask = load ? (o->nopnds > 1 ? o->opnds[1] : 0) : (o->nopnds > 2 ? o->opnds[2] : 0);
    NrValId data = load ? (o->nopnds > 2 ? o->opnds[2] : 0) : (o->nopnds > 1 ? o->opnds[1] : 0);
    uint32_t k = 0; /* what is read of ptr and mask */
    int lay = nr_ptx_lay(p, nr_val_type(p->f, ptr));
    bool same = lay >= 0 && (!mask || nr_ptx_lay(p, nr_val_type(p->f, mask)) == lay) &&
                (!data || nr_ptx_lay(p, nr_val_type(p->f, data)) == lay);
    if (same && (load ? o->nresults == 1 : data != 0))
        k = (uint32_t)vector_width(p, ptr, mask, lay, es_of(vdt(p, load ? o->results[0] : data))) - 1;
    int mask_at = load ? 1 : 2;
    for (int i = 0; i < o->nopnds; i++) skip[o->opnds[i]] &= i == 0 || i == mask_at ? k : 0;
}

/* --- stores -------------------------------------------------------------------------------------------- */
static void store_group(NrPtx *p, NrOpId op, NrDtype dt, NrPv addr, NrPv pred, const NrPv *val, int n) {
    int es = es_of(dt);
    if (pred.r == 0 && !pred.c) return;
    const char *cs = cache_suffix(p, op, false);
    NrPv *v = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 4 ? n : 4));
    int nv = n;
    const char *ty = st_type(dt);
    if ((n * es > 8 || n > 4) && es < 4) { /* (vectors of at most 4 elements) */
        nv = n * es / 4;
        pack_words(p, dt, val, n, es, v);
        ty = ".b32";
    } else {
        for (int i = 0; i < n; i++) v[i] = dt == NR_DT_I1 ? nr_pb_selp(p, val[i], nr_pv_i32(1), nr_pv_i32(0)) : val[i];
    }
    for (int i = 0; i < nv; i++) v[i] = nr_ptx_inreg(p, v[i]);
    char vec[16] = "";
    if (nv > 1) snprintf(vec, sizeof vec, ".v%d", nv);
    nr_ptx_emit(p, "%sst.global%s%s%s %s, %s;", pred_prefix(p, pred), cs, vec, ty, nr_ptx_addr(p, addr, 0),
                regs_list(p, v, nv));
}

bool nr_ptx_op_store(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId ptr = o->opnds[0], val = o->opnds[1], mask = o->nopnds > 2 ? o->opnds[2] : 0;
    NrDtype dt = vdt(p, val);
    NrPtxVal *pv = nr_ptx_val(p, ptr), *vv = nr_ptx_val(p, val);
    int n = pv->n, lay = pv->lay;
    NrPv *me = mask ? nr_ptx_val(p, mask)->e : NULL;
    if (vv->n != n || (mask && nr_ptx_val(p, mask)->n != n)) {
        nr_ptx_error(p, "store operands in different layouts");
        return false;
    }
    /* Only owners write: thread 0 for a scalar, else the holder with its
     * replicating lane and warp bits clear. */
    NrPv own = nr_pv_pred(true);
    if (lay < 0) own = (NrPv){NR_PK_P, nr_ptx_thread0(p), 0};
    else if (p->lays[lay].rep_lane || p->lays[lay].rep_warp) own = (NrPv){NR_PK_P, nr_ptx_owner(p, lay), 0};
    int es = es_of(dt);
    int v = vector_width(p, ptr, mask, lay, es);
    for (int g = 0; g < n; g += v) {
        if (lay >= 0 && p->lays[lay].dup[g]) continue;
        NrPv pred = me ? nr_pb_pand(p, me[g], own) : own;
        store_group(p, op, dt, pv->e[g], pred, vv->e + g, v);
    }
    return true;
}

/* --- atomics ------------------------------------------------------------------------------------------ */
typedef enum { K_ADD, K_MAX, K_MIN, K_AND, K_OR, K_XOR, K_XCHG, K_CAS } AKind;

typedef struct Atom {
    AKind kind;
    NrDtype dt;
    const char *sem, *scope; /* ".acq_rel", ".gpu" */
} Atom;

static const char *sem_of(NrPtx *p, NrOpId op) {
    const char *s = nr_op_str(p->f, op, NR_A_SEM, "acq_rel");
    if (strcmp(s, "relaxed") == 0) return ".relaxed";
    if (strcmp(s, "acquire") == 0) return ".acquire";
    if (strcmp(s, "release") == 0) return ".release";
    return ".acq_rel";
}

static const char *scope_of(NrPtx *p, NrOpId op) {
    const char *s = nr_op_str(p->f, op, NR_A_SCOPE, "gpu");
    if (strcmp(s, "cta") == 0) return ".cta";
    if (strcmp(s, "sys") == 0) return ".sys";
    return ".gpu";
}

/* One atom instruction: d = op(*a, b) with type suffix ty. */
static NrPv atom_insn(NrPtx *p, const Atom *A, const char *opname, const char *ty, NrPk k, NrPv addr, NrPv b, NrPv c) {
    NrPv d = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
    b = nr_ptx_inreg(p, b);
    if (c.k != NR_PK_P || c.r) {
        c = nr_ptx_inreg(p, c);
        nr_ptx_emit(p, "atom%s%s.global.%s%s %s, %s, %s, %s;", A->sem, A->scope, opname, ty, nr_ptx_reg(p, d.r),
                    nr_ptx_addr(p, addr, 0), nr_ptx_reg(p, b.r), nr_ptx_reg(p, c.r));
    } else {
        nr_ptx_emit(p, "atom%s%s.global.%s%s %s, %s, %s;", A->sem, A->scope, opname, ty, nr_ptx_reg(p, d.r),
                    nr_ptx_addr(p, addr, 0), nr_ptx_reg(p, b.r));
    }
    return d;
}

static const NrPv NOPND = {NR_PK_P, 0, 0};

/* An atomic read of w bits (relaxed, the op's scope). */
static NrPv atomic_read(NrPtx *p, const Atom *A, NrPv addr, int w, NrPk k) {
    NrPv d = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
    nr_ptx_emit(p, "ld.relaxed%s.global.b%d %s, %s;", A->scope, w, nr_ptx_reg(p, d.r), nr_ptx_addr(p, addr, 0));
    return d;
}

/* The new value of an element under kind, interpreter rules. */
static NrPv rmw_value(NrPtx *p, const Atom *A, NrPv old, NrPv v) {
    NrDtype dt = A->dt;
    if (dt == NR_DT_I1) { /* any non-zero byte is true; the result is stored as 0/1 */
        switch (A->kind) {
        case K_ADD:
        case K_MAX:
        case K_OR: return nr_pb_por(p, old, v);
        case K_MIN:
        case K_AND: return nr_pb_pand(p, old, v);
        case K_XOR: return nr_pb_pxor(p, old, v);
        default: return v;
        }
    }
    switch (A->kind) {
    case K_ADD: return nr_pe_binary(p, NR_OP_ADD, dt, false, old, v);
    case K_MAX: return nr_pe_binary(p, NR_OP_MAX, dt, false, old, v);
    case K_MIN: return nr_pe_binary(p, NR_OP_MIN, dt, false, old, v);
    case K_AND: return nr_pe_binary(p, NR_OP_AND, dt, false, old, v);
    case K_OR: return nr_pe_binary(p, NR_OP_OR, dt, false, old, v);
    case K_XOR: return nr_pe_binary(p, NR_OP_XOR, dt, false, old, v);
    default: return v;
    }
}

/* Compare-and-swap loop on the element's own width (16, 32, 64 bits). */
typedef struct CasCtx {
    const Atom *A;
    NrPv addr, v, cmp;
    int w;
    NrPv result;
} CasCtx;

static NrPk bits_kind(int w) { return w == 16 ? NR_PK_H : w == 64 ? NR_PK_I64 : NR_PK_I32; }

static NrPv cas_body(NrPtx *p, NrPv *st, void *vctx) {
    CasCtx *c = vctx;
    NrPk ek = nr_ptx_kind(c->A->dt);
    NrPv old = nr_pb_bits(p, ek, st[0]);
    NrPv nv = nr_pb_bits(p, bits_kind(c->w), rmw_value(p, c->A, old, c->v));
    char ty[8];
    snprintf(ty, sizeof ty, ".b%d", c->w);
    NrPv got = atom_insn(p, c->A, "cas", ty, bits_kind(c->w), c->addr, st[0], nv);
    NrPv again = nr_pb_setp(p, NR_PC_NE, c->w == 64 ? NR_PT_B64 : c->w == 16 ? NR_PT_B16 : NR_PT_B32, got, st[0]);
    c->result = st[0];
    st[0] = got;
    return again;
}

static NrPv cas_loop(NrPtx *p, const Atom *A, NrPv addr, NrPv v, int w) {
    CasCtx c = {A, addr, v, NOPND, w, NOPND};
    NrPv st[1] = {atomic_read(p, A, addr, w, bits_kind(w))};
    nr_pb_loop(p, st, 1, cas_body, &c);
    /* On exit the state holds the value the last CAS found, which equals
     * the expected one: the old value. */
    return nr_pb_bits(p, nr_ptx_kind(A->dt), st[0]);
}

/* Byte or halfword in a 32-bit word: CAS on the aligned word. */
typedef struct WordCtx {
    const Atom *A;
    NrPv waddr, sh, v, cmp;
    int es;
} WordCtx;

static NrPv word_field(NrPtx *p, const WordCtx *c, NrPv word) {
    NrPv x = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, word, c->sh);
    x = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x, nr_pv_i32(c->es == 1 ? 0xff : 0xffff));
    NrDtype dt = c->A->dt;
    if (dt == NR_DT_I1) return nr_pb_setp(p, NR_PC_NE, NR_PT_B32, x, nr_pv_i32(0));
    if (nr_ptx_kind(dt) == NR_PK_H) return nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, x);
    if (nr_dt_is_signed(dt)) return nr_pb_cvt(p, NR_PR_NONE, NR_PT_S32, c->es == 1 ? NR_PT_S8 : NR_PT_S16, x);
    return x;
}

static NrPv word_put(NrPtx *p, const WordCtx *c, NrPv word, NrPv val) {
    NrPv mask = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pv_i32(c->es == 1 ? 0xff : 0xffff), c->sh);
    NrPv bits = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, elem_bits32(p, c->A->dt, val, c->es), c->sh);
    NrPv kept = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, word, nr_pb_un(p, NR_PO_NOT, NR_PT_B32, mask));
    return nr_pb_bin(p, NR_PO_OR, NR_PT_B32, kept, bits);
}

static NrPv word_body(NrPtx *p, NrPv *st, void *vctx) {
    WordCtx *c = vctx;
    NrPv old = word_field(p, c, st[0]);
    NrPv nw;
    if (c->A->kind == K_CAS) { /* write only if the field matches (bitwise) */
        NrPv ob = elem_bits32(p, c->A->dt, old, c->es), cb = elem_bits32(p, c->A->dt, c->cmp, c->es);
        NrPv eq = nr_pb_setp(p, NR_PC_EQ, NR_PT_B32, ob, cb);
        nw = nr_pb_selp(p, eq, word_put(p, c, st[0], c->v), st[0]);
    } else {
        nw = word_put(p, c, st[0], rmw_value(p, c->A, old, c->v));
    }
    NrPv got = atom_insn(p, c->A, "cas", ".b32", NR_PK_I32, c->waddr, st[0], nw);
    NrPv again = nr_pb_setp(p, NR_PC_NE, NR_PT_B32, got, st[0]);
    st[0] = got;
    return again;
}

static NrPv word_atomic(NrPtx *p, const Atom *A, NrPv addr, NrPv v, NrPv cmp) {
    WordCtx c;
    c.A = A;
    c.es = es_of(A->dt);
    c.waddr = nr_pb_bin(p, NR_PO_AND, NR_PT_B64, addr, nr_pv_i64(-4));
    NrPv lo = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, addr);
    c.sh = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, lo, nr_pv_i32(3)), nr_pv_i32(3));
    c.v = v;
    c.cmp = cmp;
    bool bitwise = A->kind == K_AND || A->kind == K_OR || A->kind == K_XOR;
    if (bitwise && c.es == 1 && A->dt != NR_DT_I1) {
        /* The word instruction with the other bytes left alone. */
        NrPv b = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, elem_bits32(p, A->dt, v, 1), c.sh);
        if (A->kind == K_AND)
            b = nr_pb_bin(p, NR_PO_OR, NR_PT_B32, b,
                          nr_pb_un(p, NR_PO_NOT, NR_PT_B32, nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, nr_pv_i32(0xff), c.sh)));
        NrPv got = atom_insn(p, A, A->kind == K_AND ? "and" : A->kind == K_OR ? "or" : "xor", ".b32", NR_PK_I32,
                             c.waddr, b, NOPND);
        return word_field(p, &c, got);
    }
    NrPv st[1] = {atomic_read(p, A, c.waddr, 32, NR_PK_I32)};
    nr_pb_loop(p, st, 1, word_body, &c);
    return word_field(p, &c, st[0]);
}

/* One element's atomic; returns the old value. */
static NrPv atom_elem(NrPtx *p, const Atom *A, NrPv addr, NrPv v, NrPv cmp) {
    NrDtype dt = A->dt;
    int es = es_of(dt), w = 8 * es;
    NrPk k = nr_ptx_kind(dt);
    bool flt = nr_dt_is_float(dt);
    /* bytes, and 16-bit integers (held in .b32 registers): through the containing word */
    if (es == 1 || (es == 2 && !flt)) return word_atomic(p, A, addr, v, cmp);
    if (A->kind == K_CAS) {
        char ty[8];
        snprintf(ty, sizeof ty, ".b%d", w);
        return nr_pb_bits(p, k, atom_insn(p, A, "cas", ty, bits_kind(w), addr, nr_pb_bits(p, bits_kind(w), cmp),
                                          nr_pb_bits(p, bits_kind(w), v)));
    }
    if (es == 2) {
        if (A->kind == K_ADD && dt == NR_DT_F16) return atom_insn(p, A, "add.noftz", ".f16", k, addr, v, NOPND);
        if (A->kind == K_ADD && dt == NR_DT_BF16 && p->sm >= 90)
            return atom_insn(p, A, "add.noftz", ".bf16", k, addr, v, NOPND);
        return cas_loop(p, A, addr, v, 16);
    }
    bool s = nr_dt_is_signed(dt);
    const char *it = w == 64 ? (s ? ".s64" : ".u64") : (s ? ".s32" : ".u32"), *bt = w == 64 ? ".b64" : ".b32";
    switch (A->kind) {
    case K_ADD:
        if (flt) return atom_insn(p, A, "add", w == 64 ? ".f64" : ".f32", k, addr, v, NOPND);
        return atom_insn(p, A, "add", w == 64 ? ".u64" : ".u32", k, addr, v, NOPND);
    case K_MAX:
    case K_MIN:
        if (flt) return cas_loop(p, A, addr, v, w);
        return atom_insn(p, A, A->kind == K_MAX ? "max" : "min", it, k, addr, v, NOPND);
    case K_AND: return atom_insn(p, A, "and", bt, k, addr, v, NOPND);
    case K_OR: return atom_insn(p, A, "or", bt, k, addr, v, NOPND);
    case K_XOR: return atom_insn(p, A, "xor", bt, k, addr, v, NOPND);
    default:
        return nr_pb_bits(p, k, atom_insn(p, A, "exch", bt, bits_kind(w), addr, nr_pb_bits(p, bits_kind(w), v), NOPND));
    }
}

static bool atomic_common(NrPtx *p, NrOpId op, bool cas) {
    const NrOp *o = &p->f->ops[op];
    NrValId ptr = o->opnds[0], r = o->results[0];
    NrValId vop = cas ? o->opnds[2] : o->opnds[1], cop = cas ? o->opnds[1] : 0;
    NrValId mask = !cas && o->nopnds > 2 ? o->opnds[2] : 0;
    Atom A;
    A.dt = vdt(p, r);
    A.sem = sem_of(p, op);
    A.scope = scope_of(p, op);
    if (cas) {
        A.kind = K_CAS;
    } else {
        static const char *const names[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
        const char *ks = nr_op_str(p->f, op, NR_A_KIND, "");
        int k = 0;
        while (k < 7 && strcmp(names[k], ks) != 0) k++;
        if (k == 7) {
            nr_ptx_error(p, "unknown atomic_rmw kind '%s'", ks);
            return false;
        }
        A.kind = (AKind)k;
        if (nr_dt_is_float(A.dt) && k >= K_AND && k <= K_XOR) {
            nr_ptx_error(p, "atomic_rmw '%s' is not defined on %s", ks, nr_dtype_info[A.dt].ir);
            return false;
        }
    }
    NrPtxVal *pv = nr_ptx_val(p, ptr), *vv = nr_ptx_val(p, vop);
    NrPv *me = mask ? nr_ptx_val(p, mask)->e : NULL, *ce = cop ? nr_ptx_val(p, cop)->e : NULL;
    int n = pv->n, lay = pv->lay;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    bool replicated = lay < 0 || p->lays[lay].rep_lane || p->lays[lay].rep_warp;
    NrPv own = nr_pv_pred(true);
    if (lay < 0) own = (NrPv){NR_PK_P, nr_ptx_thread0(p), 0};
    else if (replicated) own = (NrPv){NR_PK_P, nr_ptx_owner(p, lay), 0};
    NrPk k = nr_ptx_kind(A.dt);
    for (int i = 0; i < n; i++) {
        if (lay >= 0 && p->lays[lay].dup[i]) continue;
        NrPv pred = me ? nr_pb_pand(p, me[i], own) : own;
        NrPv res = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
        nr_pb_mov_to(p, res, nr_pv_imm(k, 0)); /* masked-off lanes return 0 */
        if (pred.r == 0 && !pred.c) {
            out[i] = res;
            continue;
        }
        int skip = nr_ptx_label(p);
        if (pred.r) nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, pred.r), skip);
        NrPv old = atom_elem(p, &A, pv->e[i], vv->e[i], ce ? ce[i] : NOPND);
        nr_pb_mov_to(p, res, old);
        nr_ptx_emit(p, "$L%d:", skip);
        out[i] = res;
    }
    if (lay >= 0)
        for (int i = 0; i < n; i++)
            if (p->lays[lay].dup[i]) { /* the register of the same element */
                int j = 0;
                while (p->lays[lay].dup[j] || p->lays[lay].regflat[j] != p->lays[lay].regflat[i]) j++;
                out[i] = out[j];
            }
    if (replicated) { /* the owners' old values reach every holder */
        int64_t off = nr_ptx_scratch_off(p, op);
        nr_ptx_bar(p);
        for (int i = 0; i < n; i++) {
            if (lay >= 0 && p->lays[lay].dup[i]) continue;
            NrPv addr = lay >= 0 ? nr_ptx_smem_index_addr(p, off, nr_ptx_flat(p, lay, i), es_of(A.dt))
                                 : nr_ptx_smem_addr(p, off);
            nr_ptx_st_shared(p, A.dt, addr, out[i], own);
        }
        nr_ptx_bar(p);
        for (int i = 0; i < n; i++) {
            NrPv addr = lay >= 0 ? nr_ptx_smem_index_addr(p, off, nr_ptx_flat(p, lay, i), es_of(A.dt))
                                 : nr_ptx_smem_addr(p, off);
            out[i] = nr_ptx_ld_shared(p, A.dt, addr);
        }
    }
    nr_ptx_set(p, r, out, n);
    return true;
}

bool nr_ptx_op_atomic_rmw(NrPtx *p, NrOpId op) { return atomic_common(p, op, false); }
bool nr_ptx_op_atomic_cas(NrPtx *p, NrOpId op) { return atomic_common(p, op, true); }

/* --- strings and calls ------------------------------------------------------------------------------------- */
/* A NUL-terminated .global byte string; returns a .b64 generic address. */
static NrPv global_string(NrPtx *p, const char *s) {
    int id = p->nstrings++;
    size_t n = strlen(s) + 1;
    NrPtxBuf *saved = p->out;
    char *line = nr_alloc(p->a, n * 5 + 64);
    size_t len = (size_t)snprintf(line, 64, ".global .align 1 .b8 nr_str%d[%zu] = {", id, n);
    for (size_t i = 0; i < n; i++) len += (size_t)sprintf(line + len, "%s%u", i ? ", " : "", (unsigned char)s[i]);
    sprintf(line + len, "};\n");
    /* Globals go before the entry. */
    nr_ptx_buf_put(p, &p->glob, line, strlen(line));
    p->out = saved;
    NrPv r = {NR_PK_I64, nr_ptx_newreg(p, NR_PK_I64), 0};
    nr_ptx_emit(p, "mov.u64 %s, nr_str%d;", nr_ptx_reg(p, r.r), id);
    nr_ptx_emit(p, "cvta.global.u64 %s, %s;", nr_ptx_reg(p, r.r), nr_ptx_reg(p, r.r));
    return r;
}

/* --- print ------------------------------------------------------------------------------------------------ */
typedef struct PArg {
    int size;      /* 4 or 8 */
    NrPv v;        /* .b32 or .b64 */
} PArg;

/* printf conversion and argument of one element of dtype dt (hex: bits). */
static const char *value_arg(NrPtx *p, NrDtype dt, bool ptr, bool hex, NrPv v, PArg *a) {
    int es = ptr ? 8 : es_of(dt);
    if (ptr) {
        a->size = 8;
        a->v = v;
        return "0x%llx";
    }
    if (hex) {
        if (es == 8) {
            a->size = 8;
            a->v = nr_pb_bits(p, NR_PK_I64, v);
            return "0x%016llx";
        }
        a->size = 4;
        a->v = dt == NR_DT_I1 || es < 4 ? elem_bits32(p, dt, v, es) : nr_pb_bits(p, NR_PK_I32, v);
        return es == 1 ? "0x%02x" : es == 2 ? "0x%04x" : "0x%08x";
    }
    if (nr_dt_is_float(dt)) {
        a->size = 8;
        a->v = nr_pe_cast(p, dt, NR_DT_F64, false, v);
        switch (dt) {
        case NR_DT_F64: return "%.17g";
        case NR_DT_F32: return "%.9g";
        case NR_DT_F16: return "%.5g";
        case NR_DT_BF16: return "%.4g";
        default: return "%.3g";
        }
    }
    if (dt == NR_DT_I1) {
        a->size = 4;
        a->v = nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
        return "%d";
    }
    if (es == 8) {
        a->size = 8;
        a->v = v;
        return nr_dt_is_signed(dt) ? "%lld" : "%llu";
    }
    a->size = 4;
    a->v = v;
    return nr_dt_is_signed(dt) ? "%d" : "%u";
}

/* printf-safe copy of s ('%' doubled). */
static char *escape_pct(NrArena *a, const char *s) {
    size_t n = 0;
    for (const char *c = s; *c; c++) n += *c == '%' ? 2 : 1;
    char *r = nr_alloc(a, n + 1), *d = r;
    for (const char *c = s; *c; c++) {
        *d++ = *c;
        if (*c == '%') *d++ = '%';
    }
    *d = 0;
    return r;
}

/* vprintf(fmt, args) with args stored in the .local buffer. */
static void call_vprintf(NrPtx *p, NrPv fmt, const PArg *args, int n) {
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        off = (off + args[i].size - 1) & ~(int64_t)(args[i].size - 1);
        NrPv v = nr_ptx_inreg(p, args[i].v);
        nr_ptx_emit(p, "st.local.b%d [nr_local+%lld], %s;", 8 * args[i].size, (long long)off, nr_ptx_reg(p, v.r));
        off += args[i].size;
    }
    if (off > p->local_bytes) p->local_bytes = off;
    if (!p->local_bytes) p->local_bytes = 8;
    NrPv buf = {NR_PK_I64, nr_ptx_newreg(p, NR_PK_I64), 0};
    nr_ptx_emit(p, "mov.u64 %s, nr_local;", nr_ptx_reg(p, buf.r));
    nr_ptx_emit(p, "cvta.local.u64 %s, %s;", nr_ptx_reg(p, buf.r), nr_ptx_reg(p, buf.r));
    nr_ptx_emit(p, "{");
    nr_ptx_emit(p, ".param .b64 nr_a0;");
    nr_ptx_emit(p, ".param .b64 nr_a1;");
    nr_ptx_emit(p, ".param .b32 nr_rv;");
    nr_ptx_emit(p, "st.param.b64 [nr_a0], %s;", nr_ptx_reg(p, fmt.r));
    nr_ptx_emit(p, "st.param.b64 [nr_a1], %s;", nr_ptx_reg(p, buf.r));
    nr_ptx_emit(p, "call (nr_rv), vprintf, (nr_a0, nr_a1);");
    nr_ptx_emit(p, "}");
    p->uses_vprintf = true;
}

static NrPv ctaid(NrPtx *p, int axis) {
    NrPv r = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "mov.u32 %s, %%ctaid.%c;", nr_ptx_reg(p, r.r), "xyz"[axis]);
    return r;
}

/* One line per element: "pid (x, y, z) idx (i, j) <prefix>[(operand k) ]<value>",
 * printed by each element's owner (thread 0 for scalars and for no operands). */
bool nr_ptx_op_print(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    const char *prefix = escape_pct(p->a, nr_op_str(p->f, op, NR_A_PREFIX, ""));
    bool hex = nr_op_int(p->f, op, NR_A_HEX, 0) != 0;
    NrPv pid[3];
    for (int i = 0; i < 3; i++) pid[i] = ctaid(p, i);
    if (o->nopnds == 0) {
        NrPv fmt = global_string(p, nr_sprintf(p->a, "pid (%%d, %%d, %%d) idx () %s\n", prefix));
        PArg a[3];
        for (int i = 0; i < 3; i++) a[i] = (PArg){4, pid[i]};
        int skip = nr_ptx_label(p);
        nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, nr_ptx_thread0(p)), skip);
        call_vprintf(p, fmt, a, 3);
        nr_ptx_emit(p, "$L%d:", skip);
        return true;
    }
    for (int j = 0; j < o->nopnds; j++) {
        NrValId v = o->opnds[j];
        const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
        NrPtxVal *x = nr_ptx_val(p, v);
        NrDtype dt = vdt(p, v);
        for (int r = 0; r < x->n; r++) {
            if (x->lay >= 0 && p->lays[x->lay].dup[r]) continue;
            PArg a[3 + NR_MAX_RANK + 1];
            for (int i = 0; i < 3; i++) a[i] = (PArg){4, pid[i]};
            const char *vf = value_arg(p, dt, t->ptr > 0, hex, x->e[r], &a[3 + t->rank]);
            char idx[NR_MAX_RANK * 4 + 1] = "";
            for (int d = 0; d < t->rank; d++) {
                const NrPtxLay *L = &p->lays[x->lay];
                NrPv flat = nr_ptx_flat(p, x->lay, r);
                NrPv c = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, flat, nr_pv_i32(L->off[d])),
                                   nr_pv_i32(L->shape[d] - 1));
                a[3 + d] = (PArg){4, c};
                strcat(idx, d ? ", %d" : "%d");
            }
            const char *opn = o->nopnds > 1 ? nr_sprintf(p->a, "(operand %d) ", j) : "";
            NrPv fmt = global_string(p, nr_sprintf(p->a, "pid (%%d, %%d, %%d) idx (%s) %s%s%s\n", idx, prefix, opn, vf));
            NrPv own = x->lay >= 0 ? (NrPv){NR_PK_P, nr_ptx_owner(p, x->lay), 0} : (NrPv){NR_PK_P, nr_ptx_thread0(p), 0};
            int skip = nr_ptx_label(p);
            nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, own.r), skip);
            call_vprintf(p, fmt, a, 3 + t->rank + 1);
            nr_ptx_emit(p, "$L%d:", skip);
        }
    }
    return true;
}

/* --- assert ------------------------------------------------------------------------------------------------ */
/* Any false element stops the kernel through __assertfail (message, file,
 * line, kernel name); the driver reports the failure of the launch. */
bool nr_ptx_op_assert(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrPtxVal *c = nr_ptx_val(p, o->opnds[0]);
    NrDtype dt = vdt(p, o->opnds[0]);
    NrPv bad = nr_pv_pred(false);
    for (int i = 0; i < c->n; i++) {
        NrPv ok = dt == NR_DT_I1 ? c->e[i] : nr_pe_cast(p, dt, NR_DT_I1, false, c->e[i]);
        bad = nr_pb_por(p, bad, nr_pb_pnot(p, ok));
    }
    if (bad.r == 0 && !bad.c) return true;
    const char *file = "";
    NrLoc loc = o->loc;
    if (loc.file > 0 && (int)loc.file < p->m->sources.n && p->m->sources.v[loc.file].name)
        file = p->m->sources.v[loc.file].name;
    NrPv msg = global_string(p, nr_op_str(p->f, op, NR_A_MSG, ""));
    NrPv fil = global_string(p, file);
    NrPv fun = global_string(p, p->f->name);
    int skip = nr_ptx_label(p);
    bad = nr_ptx_inreg(p, bad);
    nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, bad.r), skip);
    nr_ptx_emit(p, "{");
    nr_ptx_emit(p, ".param .b64 nr_a0;");
    nr_ptx_emit(p, ".param .b64 nr_a1;");
    nr_ptx_emit(p, ".param .b32 nr_a2;");
    nr_ptx_emit(p, ".param .b64 nr_a3;");
    nr_ptx_emit(p, ".param .b64 nr_a4;");
    nr_ptx_emit(p, "st.param.b64 [nr_a0], %s;", nr_ptx_reg(p, msg.r));
    nr_ptx_emit(p, "st.param.b64 [nr_a1], %s;", nr_ptx_reg(p, fil.r));
    nr_ptx_emit(p, "st.param.b32 [nr_a2], %u;", loc.line);
    nr_ptx_emit(p, "st.param.b64 [nr_a3], %s;", nr_ptx_reg(p, fun.r));
    nr_ptx_emit(p, "st.param.b64 [nr_a4], 1;");
    nr_ptx_emit(p, "call __assertfail, (nr_a0, nr_a1, nr_a2, nr_a3, nr_a4);");
    nr_ptx_emit(p, "}");
    nr_ptx_emit(p, "trap;");
    nr_ptx_emit(p, "$L%d:", skip);
    p->uses_assert = true;
    return true;
}
