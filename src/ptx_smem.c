/* ptx_smem.c - shared-memory buffers in PTX: the address maps of shared
 * layouts, vectorized st.shared / ld.shared of distributed layouts, the
 * buffer ops (local_alloc, local_store, memdesc_index) and async copies
 * (cp.async with zero fill, commit and wait groups).
 *
 * A buffer value (!smem) is one .b32 register: the shared address of its
 * first element.  Shared layouts with power-of-two parameters are linear
 * over F2 (their address map XORs bit fields of the coordinates), and so
 * are distributed layouts; the element offset of register r of thread
 * (lane, warp) is therefore T(lane, warp) ^ C(r): T computed once per
 * kernel in the prologue, C a constant.  The bits of C outside every T
 * become the instruction's immediate offset (XOR of disjoint bits is a
 * sum); the rest cost one xor per distinct value.
 *
 * Vectors: a run of consecutive registers whose elements are consecutive
 * in the buffer (and aligned) moves in one instruction of up to 16 bytes;
 * narrow elements travel packed in 32-bit words.  On sm_90, 16-bit values
 * held as tensor-core fragments are stored by stmatrix (ptx_mma.c).
 *
 * async_copy moves 4, 8 or 16 bytes per cp.async (.cg for 16, bypassing
 * L1) when the pointer's axis info proves that many bytes contiguous and
 * aligned, the mask constant over them and the buffer contiguous; a
 * masked-off copy passes src-size 0, which fills the destination with
 * zeros without reading the source.  Anything narrower, or a non-zero
 * `other`, is copied synchronously (ld.global, st.shared): async_copy
 * only promises the data by the matching async_wait, and the barriers
 * gpu-barriers placed around the buffer order the plain stores as well.
 *
 * In a function with a warp_group_dot (wgmma reads through the async
 * proxy), buffer stores and cp.async waits are followed by
 * fence.proxy.async.  mbarriers and TMA copies (sm_90): thread 0
 * initializes them; one elected lane of warp 0 arrives and issues the
 * cp.async.bulk.tensor boxes; every reader waits on the mbarrier's phase
 * (see nr_tma_plan). */
#include "ptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int ilog2i(int64_t x) {
    int k = 0;
    while (((int64_t)1 << k) < x) k++;
    return k;
}

struct NrPtxMma *nr_ptx_mma_state(NrPtx *p) {
    if (!p->mma) {
        p->mma = nr_alloc(p->a, sizeof *p->mma);
        p->mma->words = nr_alloc(p->a, sizeof(NrPv *) * (size_t)(p->f ? p->f->nvals + 1 : 1));
        p->mma->nwords = nr_alloc(p->a, sizeof(int32_t) * (size_t)(p->f ? p->f->nvals + 1 : 1));
        p->mma->pending = nr_alloc(p->a, sizeof(struct NrPtxLdsmLoad *) * (size_t)(p->f ? p->f->nvals + 1 : 1));
        p->mma->async_proxy = -1;
    }
    return p->mma;
}

/* Whether the function has a warp_group_dot, whose wgmma reads buffers
 * through the async proxy. */
static void find_wgmma(NrFunc *f, NrOpId op, void *ctx) {
    if (f->ops[op].opc == NR_OP_WARP_GROUP_DOT) *(bool *)ctx = true;
}

bool nr_ptx_async_proxy(NrPtx *p) {
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (s->async_proxy < 0) {
        bool any = false;
        nr_walk(p->f, find_wgmma, &any);
        s->async_proxy = any;
    }
    return s->async_proxy > 0;
}

/* After generic-proxy writes to buffers (st.shared, completed cp.async):
 * they become visible to the async proxy (wgmma) once a barrier follows. */
static void fence_async(NrPtx *p) {
    if (nr_ptx_async_proxy(p)) nr_ptx_emit(p, "fence.proxy.async.shared::cta;");
}

/* Buffers of nvmma layouts start on their swizzle pattern (8 x swizzle
 * bytes): the dynamic shared memory must be aligned to it. */
static void need_align(NrPtx *p, const NrModule *m, int32_t layout) {
    const NrLayout *l = layout > 0 && layout < m->nlayouts ? &m->layouts[layout] : NULL;
    if (l && l->kind == NR_LK_SHARED && l->nvmma && 8 * l->swizzle_bytes > p->smem_align)
        p->smem_align = 8 * l->swizzle_bytes;
}

/* --- address maps ---------------------------------------------------------------------------------------- */
/* Coordinates of flat x over shape (the last dimension fastest). */
static void flat_coords(int rank, const int32_t *shape, uint64_t x, int32_t *c) {
    for (int d = rank - 1; d >= 0; d--) {
        int w = ilog2i(shape[d]);
        c[d] = (int32_t)(x & (((uint64_t)1 << w) - 1));
        x >>= w;
    }
}

static uint32_t map_apply(const NrSmemMap *S, uint64_t x) {
    uint32_t y = 0;
    for (int i = 0; i < S->bits; i++)
        if (x >> i & 1) y ^= S->img[i];
    return y;
}

static bool map_build(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int es, NrSmemMap *out) {
    memset(out, 0, sizeof *out);
    int bits = 0;
    for (int d = 0; d < rank; d++) {
        if (!nr_is_pow2(shape[d])) return false;
        bits += ilog2i(shape[d]);
    }
    if (bits > 30 || es < 1 || es > 16) return false;
    uint64_t numel = (uint64_t)1 << bits;
    out->bits = bits;
    out->es = es;
    out->bytes = (int64_t)numel * es;
    int32_t c[NR_MAX_RANK + 1];
    for (int b = 0; b < bits; b++) {
        flat_coords(rank, shape, (uint64_t)1 << b, c);
        int64_t o = nr_shared_offset(m, layout, rank, shape, es, c);
        if (o < 0 || (uint64_t)o >= numel) return false;
        out->img[b] = (uint32_t)o;
    }
    /* Linear: every index with two bits set (where a padded or otherwise
     * non-linear layout shows first), then every element of small buffers and
     * an odd-strided sample of 256 elements of larger ones, land where the
     * images say. */
    for (int b0 = 0; b0 < bits; b0++)
        for (int b1 = b0 + 1; b1 < bits; b1++) {
            uint64_t x = (uint64_t)1 << b0 | (uint64_t)1 << b1;
            flat_coords(rank, shape, x, c);
            if ((uint64_t)nr_shared_offset(m, layout, rank, shape, es, c) != map_apply(out, x)) return false;
        }
    uint64_t step = numel <= 256 ? 1 : (numel / 256) | 1;
    for (uint64_t x = 0; x < numel; x += step) {
        flat_coords(rank, shape, x, c);
        if ((uint64_t)nr_shared_offset(m, layout, rank, shape, es, c) != map_apply(out, x)) return false;
    }
    return true;
}

/* Address maps by (layout, shape, element size): building one checks a few
 * hundred elements against nr_shared_offset, and the same buffers are
 * mapped by many ops and passes. */
struct NrSmemMapEntry {
    NrLayout l;
    int rank, es;
    int32_t shape[NR_MAX_RANK + 1];
    bool ok;
    NrSmemMap map;
};

/* The map of shared layout l (rank l->rank or one more) over shape, through
 * m's cache (m NULL: no cache). */
static bool map_of_layout(NrModule *m, const NrLayout *l, int rank, const int32_t *shape, int es, NrSmemMap *out) {
    struct NrGpuCache *c = m ? nr_gpu_cache(m) : NULL;
    for (int i = 0; c && i < c->nmaps; i++) {
        struct NrSmemMapEntry *e = &c->maps[i];
        if (e->rank != rank || e->es != es || memcmp(e->shape, shape, sizeof(int32_t) * (size_t)rank) != 0 ||
            memcmp(&e->l, l, sizeof *l) != 0)
            continue;
        *out = e->map;
        return e->ok;
    }
    /* nr_shared_offset reads only the layout table: a module of one layout */
    NrLayout ls[2];
    memset(ls, 0, sizeof ls);
    ls[1] = *l;
    NrModule tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.layouts = ls;
    tmp.nlayouts = 2;
    bool ok = map_build(&tmp, 1, rank, shape, es, out);
    if (c) {
        struct NrSmemMapEntry *e = NR_PUSH(m->arena, c->maps, c->nmaps, c->capmaps);
        e->l = *l;
        e->rank = rank;
        e->es = es;
        memcpy(e->shape, shape, sizeof(int32_t) * (size_t)rank);
        e->ok = ok;
        e->map = *out;
    }
    return ok;
}

bool nr_smem_map(NrModule *m, int32_t layout, int rank, const int32_t *shape, int es, NrSmemMap *out) {
    memset(out, 0, sizeof *out);
    if (layout <= 0 || layout >= m->nlayouts || m->layouts[layout].kind != NR_LK_SHARED) return false;
    const NrLayout *l = &m->layouts[layout];
    if (rank != l->rank && rank != l->rank + 1) return false;
    if (rank > NR_MAX_RANK + 1) return false;
    for (int d = 0; d < rank; d++)
        if (!nr_is_pow2(shape[d])) return false;
    if (l->nvmma && l->swizzle_bytes && l->swizzle_bytes % es) return false;
    return map_of_layout(m, l, rank, shape, es, out);
}

bool nr_smem_map_swizzled(NrModule *m, int rank, const int32_t *shape, int es, int vec, int per_phase, int max_phase,
                          const int32_t *order, NrSmemMap *out) {
    memset(out, 0, sizeof *out);
    if (rank < 1 || rank > NR_MAX_RANK) return false;
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_SHARED;
    l.rank = (uint8_t)rank;
    l.vec = vec;
    l.per_phase = per_phase;
    l.max_phase = max_phase;
    for (int i = 0; i < rank; i++) l.order[i] = order[i];
    return map_of_layout(m, &l, rank, shape, es, out);
}

/* --- distributed layouts in a buffer ------------------------------------------------------------------------- */
void nr_smem_access(const NrPtxLay *L, const NrSmemMap *S, int max_bytes, NrArena *a, NrSmemAccess *out) {
    memset(out, 0, sizeof *out);
    out->nlane = L->nlane;
    out->nwarp = L->nwarp;
    for (int i = 0; i < L->nlane; i++) out->tmask |= out->lane[i] = map_apply(S, L->laneb[i]);
    for (int i = 0; i < L->nwarp; i++) out->tmask |= out->warp[i] = map_apply(S, L->warpb[i]);
    int R = 1 << L->nreg;
    out->reg = nr_alloc(a, sizeof(uint32_t) * (size_t)R);
    for (int r = 0; r < R; r++) out->reg[r] = map_apply(S, L->regflat[r]);
    int k = 0;
    while (k < L->nreg && ((int64_t)2 << k) * S->es <= max_bytes && map_apply(S, L->regb[k]) == 1u << k) k++;
    /* Every other basis keeps runs of 2^k aligned. */
    for (; k > 0; k--) {
        uint32_t low = (1u << k) - 1, any = out->tmask;
        for (int j = k; j < L->nreg; j++) any |= map_apply(S, L->regb[j]);
        if (!(any & low)) break;
    }
    out->vec = 1 << k;
}

/* T: the thread part of shared offsets, XOR of images over the set lane
 * and warp bits, computed once per kernel in the prologue. */
static NrPv thread_off(NrPtx *p, const uint32_t *lane, int nlane, const uint32_t *warp, int nwarp) {
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    uint32_t key[2 * NR_LL_MAX_BITS];
    int n = 0;
    for (int i = 0; i < nlane; i++) key[n++] = lane[i];
    for (int i = nlane; i < NR_LL_MAX_BITS; i++) key[n++] = 0;
    for (int i = 0; i < nwarp; i++) key[n++] = warp[i];
    for (int i = nwarp; i < NR_LL_MAX_BITS; i++) key[n++] = 0;
    for (int i = 0; i < s->ntoffs; i++)
        if (memcmp(s->toffs[i].img, key, sizeof key) == 0) return (NrPv){NR_PK_I32, s->toffs[i].reg, 0};
    NrPtxBuf *saved = p->out;
    p->out = &p->pro;
    NrPv acc = nr_pv_i32(0);
    const NrPv src[2] = {{NR_PK_I32, p->lane, 0}, {NR_PK_I32, p->warp, 0}};
    for (int w = 0; w < 2; w++) {
        const uint32_t *img = w ? warp : lane;
        for (int i = 0; i < (w ? nwarp : nlane); i++) {
            if (!img[i]) continue;
            NrPv bit = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, src[w], nr_pv_i32(i)),
                                 nr_pv_i32(1));
            acc = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, acc, nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, bit, nr_pv_i32(img[i])));
        }
    }
    NrPv t = nr_ptx_inreg(p, acc);
    p->out = saved;
    struct NrPtxThreadOff *e = NR_PUSH(p->a, s->toffs, s->ntoffs, s->captoffs);
    memcpy(e->img, key, sizeof key);
    e->reg = t.r;
    return t;
}

void nr_smem_addr_init(NrPtx *p, NrSmemAddr *g, NrPv base, const uint32_t *lane, int nlane, const uint32_t *warp,
                       int nwarp, int es) {
    memset(g, 0, sizeof *g);
    g->base = base;
    g->es = es;
    for (int i = 0; i < nlane; i++) g->tmask |= lane[i];
    for (int i = 0; i < nwarp; i++) g->tmask |= warp[i];
    g->t = g->tmask ? thread_off(p, lane, nlane, warp, nwarp) : nr_pv_i32(0);
}

NrPv nr_smem_addr(NrPtx *p, NrSmemAddr *g, uint32_t c, int64_t *imm) {
    uint32_t key = c & g->tmask;
    *imm = (int64_t)(c & ~g->tmask) * g->es;
    for (int i = 0; i < g->n; i++)
        if (g->keys[i] == key) return g->regs[i];
    NrPv x = key ? nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, g->t, nr_pv_i32(key)) : g->t;
    NrPv off = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, x, nr_pv_i32(ilog2i(g->es)));
    NrPv a = nr_ptx_inreg(p, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, g->base, off));
    if (g->n < (int)NR_COUNTOF(g->keys)) {
        g->keys[g->n] = key;
        g->regs[g->n++] = a;
    }
    return a;
}

/* --- words ------------------------------------------------------------------------------------------------- */
static uint32_t prmt_host(uint32_t a, uint32_t b, uint32_t sel) {
    uint64_t x = (uint64_t)b << 32 | a;
    uint32_t d = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t s = sel >> (4 * i) & 0xf;
        uint32_t byte = (uint32_t)(x >> (8 * (s & 7))) & 0xff;
        if (s & 8) byte = byte & 0x80 ? 0xff : 0;
        d |= byte << (8 * i);
    }
    return d;
}

/* prmt.b32: bytes of {b, a} chosen by sel. */
static NrPv prmt(NrPtx *p, NrPv a, NrPv b, uint32_t sel) {
    if (a.r == 0 && b.r == 0) return nr_pv_i32(prmt_host((uint32_t)a.c, (uint32_t)b.c, sel));
    a = nr_ptx_inreg(p, nr_pb_bits(p, NR_PK_I32, a));
    b = nr_ptx_inreg(p, nr_pb_bits(p, NR_PK_I32, b));
    NrPv d = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "prmt.b32 %s, %s, %s, 0x%04X;", nr_ptx_reg(p, d.r), nr_ptx_reg(p, a.r), nr_ptx_reg(p, b.r), sel);
    return d;
}

/* bfe: bits [pos, pos + len) of w, sign- or zero-extended. */
static NrPv bfe(NrPtx *p, NrPv w, int pos, int len, bool sgn) {
    if (w.r == 0) {
        uint32_t x = (uint32_t)(w.c >> pos) & ((1u << len) - 1);
        if (sgn && (x >> (len - 1) & 1)) x |= ~((1u << len) - 1);
        return nr_pv_i32(x);
    }
    NrPv d = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "bfe.%s32 %s, %s, %d, %d;", sgn ? "s" : "u", nr_ptx_reg(p, d.r), nr_ptx_reg(p, w.r), pos, len);
    return d;
}

NrPv nr_ptx_pack_word(NrPtx *p, NrDtype dt, const NrPv *e) {
    int es = nr_ptx_smem_es(dt);
    NR_ASSERT(dt != NR_DT_I1 && es <= 4);
    if (es == 4) return nr_pb_bits(p, NR_PK_I32, e[0]);
    if (es == 2) {
        if (e[0].k == NR_PK_H) return nr_pb_pack(p, e[0], e[1]);
        return prmt(p, e[0], e[1], 0x5410);
    }
    NrPv x[4];
    for (int j = 0; j < 4; j++)
        x[j] = e[j].k == NR_PK_H ? nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U16, e[j]) : e[j];
    return prmt(p, prmt(p, x[0], x[1], 0x0040), prmt(p, x[2], x[3], 0x0040), 0x5410);
}

void nr_ptx_unpack_word(NrPtx *p, NrDtype dt, NrPv w, NrPv *e) {
    int es = nr_ptx_smem_es(dt);
    NR_ASSERT(dt != NR_DT_I1 && es <= 4);
    NrPk k = nr_ptx_kind(dt);
    if (es == 4) {
        e[0] = nr_pb_bits(p, k, w);
        return;
    }
    bool sgn = nr_dt_is_signed(dt);
    for (int j = 0; j < 4 / es; j++) {
        if (k == NR_PK_H && es == 2) {
            if (j == 0) nr_pb_unpack(p, nr_pb_bits(p, NR_PK_I32, w), &e[0], &e[1]);
            continue;
        }
        NrPv x = bfe(p, w, 8 * es * j, 8 * es, sgn && k != NR_PK_H);
        e[j] = k == NR_PK_H ? nr_pb_cvt(p, NR_PR_NONE, NR_PT_U16H, NR_PT_U32, x) : x;
    }
}

/* --- moving runs of registers ------------------------------------------------------------------------------ */
static const char *regs_of(NrPtx *p, const NrPv *v, int n) { return nr_ptx_reg_list(p, v, n, false); }

static const char *vec_sfx(int n) {
    static const char *const s[] = {"", "", ".v2", "", ".v4"};
    return n >= 0 && n <= 4 ? s[n] : "";
}

/* The address register plus imm (ld/st.shared of one element take no immediate). */
static NrPv plus(NrPtx *p, NrPv a, int64_t imm) {
    return imm ? nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, a, nr_pv_i32(imm)) : a;
}

/* Stores v elements (v * es >= 4, or v == 1) at addr + imm under pred. */
static void st_run(NrPtx *p, NrDtype dt, NrPv addr, int64_t imm, const NrPv *e, int v, NrPv pred) {
    int es = nr_ptx_smem_es(dt);
    if (pred.r == 0 && !pred.c) return;
    if (v == 1 && (es < 4 || dt == NR_DT_I1)) {
        nr_ptx_st_shared(p, dt, plus(p, addr, imm), e[0], pred);
        return;
    }
    NrPv w[4];
    int nw, bits = es == 8 ? 64 : 32;
    if (es >= 4) {
        nw = v;
        for (int i = 0; i < v; i++) w[i] = nr_ptx_inreg(p, e[i]);
    } else {
        int epw = 4 / es;
        nw = v / epw;
        for (int i = 0; i < nw; i++) w[i] = nr_ptx_inreg(p, nr_ptx_pack_word(p, dt, e + i * epw));
    }
    char g[32] = "";
    if (pred.r) snprintf(g, sizeof g, "@%s ", nr_ptx_reg(p, pred.r));
    nr_ptx_emit(p, "%sst.shared%s.b%d %s, %s;", g, vec_sfx(nw), bits, nr_ptx_addr(p, addr, imm), regs_of(p, w, nw));
}

static void ld_run(NrPtx *p, NrDtype dt, NrPv addr, int64_t imm, NrPv *out, int v) {
    int es = nr_ptx_smem_es(dt);
    if (v == 1 && (es < 4 || dt == NR_DT_I1)) {
        out[0] = nr_ptx_ld_shared(p, dt, plus(p, addr, imm));
        return;
    }
    NrPk k = es >= 4 ? nr_ptx_kind(dt) : NR_PK_I32;
    int nw = es >= 4 ? v : v * es / 4, bits = es == 8 ? 64 : 32;
    NrPv w[4];
    for (int i = 0; i < nw; i++) w[i] = (NrPv){(uint8_t)k, nr_ptx_newreg(p, k), 0};
    nr_ptx_emit(p, "ld.shared%s.b%d %s, %s;", vec_sfx(nw), bits, regs_of(p, w, nw), nr_ptx_addr(p, addr, imm));
    if (es >= 4) {
        for (int i = 0; i < v; i++) out[i] = w[i];
        return;
    }
    for (int i = 0; i < nw; i++) nr_ptx_unpack_word(p, dt, w[i], out + i * (4 / es));
}

/* Elements per instruction for layout L in S: the access's run, no more
 * than 16 bytes, and either whole 32-bit words or single elements. */
static int run_of(const NrSmemAccess *acc, NrDtype dt) {
    int es = nr_ptx_smem_es(dt), v = acc->vec;
    if (dt == NR_DT_I1 || v * es < 4) return 1;
    if (es == 8 && v > 2) v = 2;
    if (es == 4 && v > 4) v = 4;
    return v;
}

void nr_smem_store(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt, const NrPv *e) {
    const NrPtxLay *L = &p->lays[lay];
    NR_ASSERT(L->bits == S->bits);
    if (nr_stsm_store(p, lay, S, base, dt, e)) return; /* tensor-core fragments on sm_90 */
    NrSmemAccess acc;
    nr_smem_access(L, S, 16, p->a, &acc);
    int v = run_of(&acc, dt);
    NrPv own = nr_pv_pred(true);
    if (L->rep_lane || L->rep_warp) own = (NrPv){NR_PK_P, nr_ptx_owner(p, lay), 0};
    NrSmemAddr g;
    nr_smem_addr_init(p, &g, base, acc.lane, acc.nlane, acc.warp, acc.nwarp, S->es);
    for (int r = 0; r < 1 << L->nreg; r += v) {
        if (L->dup[r]) continue;
        int64_t imm;
        NrPv a = nr_smem_addr(p, &g, acc.reg[r], &imm);
        st_run(p, dt, a, imm, e + r, v, own);
    }
}

NrPv *nr_smem_load(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt) {
    const NrPtxLay *L = &p->lays[lay];
    NR_ASSERT(L->bits == S->bits);
    NrSmemAccess acc;
    nr_smem_access(L, S, 16, p->a, &acc);
    int v = run_of(&acc, dt), R = 1 << L->nreg;
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)R);
    NrSmemAddr g;
    nr_smem_addr_init(p, &g, base, acc.lane, acc.nlane, acc.warp, acc.nwarp, S->es);
    for (int r = 0; r < R; r += v) {
        int64_t imm;
        NrPv a = nr_smem_addr(p, &g, acc.reg[r], &imm);
        ld_run(p, dt, a, imm, out + r, v);
    }
    return out;
}

/* --- buffer ops ------------------------------------------------------------------------------------------ */
static NrDtype dt_of(const NrType *t) { return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype; }

/* The map of buffer value v (its !smem type). */
static bool buffer_map(NrPtx *p, NrValId v, NrSmemMap *S) {
    const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
    if (t->kind != NR_TK_MEMDESC || !nr_smem_map(p->m, t->layout, t->rank, t->shape, nr_ptx_smem_es(dt_of(t)), S)) {
        nr_ptx_error(p, "'%s': buffer of type %s has no linear shared-memory layout",
                     nr_op_info[p->f->ops[p->op].opc].name, nr_type_str(p->m, nr_val_type(p->f, v)));
        return false;
    }
    return true;
}

/* A buffer value is its shared address. */
static void def_buffer(NrPtx *p, NrValId v, NrPv addr) {
    NrPtxVal *x = &p->vals[v];
    x->e = nr_alloc(p->a, sizeof(NrPv));
    x->e[0] = addr;
    x->n = 1;
    x->lay = -1;
}

static NrPv buffer_addr(NrPtx *p, NrValId v) {
    NrPtxVal *x = &p->vals[v];
    if (!x->e) {
        NR_ASSERT(p->failed);
        return nr_pv_i32(0);
    }
    return x->e[0];
}

int64_t nr_ptx_alloc_end(NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    const NrAttr *a = nr_op_attr(f, op, NR_A_SMEM_OFFSET);
    if (o->opc != NR_OP_LOCAL_ALLOC || o->nresults != 1 || !a || a->kind != NR_AK_INT || a->v.i < 0) return 0;
    const NrType *t = nr_type(f->mod, nr_val_type(f, o->results[0]));
    return a->v.i + nr_type_numel(f->mod, nr_val_type(f, o->results[0])) * nr_ptx_smem_es(dt_of(t));
}

bool nr_ptx_op_local_alloc(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId r = o->results[0];
    const NrAttr *off = nr_op_attr(p->f, op, NR_A_SMEM_OFFSET);
    if (!off || off->kind != NR_AK_INT || off->v.i < 0 || off->v.i % 16) {
        nr_ptx_error(p, "local_alloc has no 16-byte aligned smem_offset; run gpu-smem before emitting PTX");
        def_buffer(p, r, nr_pv_i32(0));
        return false;
    }
    NrPv base = nr_ptx_inreg(p, nr_ptx_smem_addr(p, off->v.i));
    def_buffer(p, r, base);
    need_align(p, p->m, nr_type(p->m, nr_val_type(p->f, r))->layout);
    if (o->nopnds == 0 || !o->opnds[0]) return true;
    NrSmemMap S;
    if (!buffer_map(p, r, &S)) return false;
    NrPtxVal *v = nr_ptx_val(p, o->opnds[0]);
    if (v->lay < 0 || p->lays[v->lay].bits != S.bits) {
        nr_ptx_error(p, "local_alloc: the initial value does not fill the buffer");
        return false;
    }
    nr_smem_store(p, v->lay, &S, base, dt_of(nr_type(p->m, nr_val_type(p->f, o->opnds[0]))), v->e);
    fence_async(p);
    return true;
}

bool nr_ptx_op_local_store(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrSmemMap S;
    if (o->nopnds != 2 || !buffer_map(p, o->opnds[1], &S)) return false;
    NrPtxVal *v = nr_ptx_val(p, o->opnds[0]);
    if (v->lay < 0 || p->lays[v->lay].bits != S.bits) {
        nr_ptx_error(p, "local_store: the value does not fill the buffer");
        return false;
    }
    nr_smem_store(p, v->lay, &S, buffer_addr(p, o->opnds[1]), dt_of(nr_type(p->m, nr_val_type(p->f, o->opnds[0]))),
                  v->e);
    fence_async(p);
    return true;
}

bool nr_ptx_op_memdesc_index(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId r = o->results[0];
    if (o->nopnds != 2) {
        nr_ptx_error(p, "malformed 'memdesc_index'");
        def_buffer(p, r, nr_pv_i32(0));
        return false;
    }
    const NrType *rt = nr_type(p->m, nr_val_type(p->f, r));
    int64_t bytes = nr_type_numel(p->m, nr_val_type(p->f, r)) * nr_ptx_smem_es(dt_of(rt));
    NrPv base = buffer_addr(p, o->opnds[0]), idx = nr_ptx_val(p, o->opnds[1])->e[0];
    NrPv off = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, idx, nr_pv_i32(bytes));
    def_buffer(p, r, nr_ptx_inreg(p, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base, off)));
    return true;
}

bool nr_ptx_op_memdesc_trans(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    if (o->nopnds != 1) {
        nr_ptx_error(p, "malformed 'memdesc_trans'");
        def_buffer(p, o->results[0], nr_pv_i32(0));
        return false;
    }
    def_buffer(p, o->results[0], buffer_addr(p, o->opnds[0])); /* the same bytes */
    return true;
}

/* --- async copies ------------------------------------------------------------------------------------------- */
static const char *ld_global_type(NrDtype dt) {
    switch (nr_ptx_smem_es(dt)) {
    case 1: return dt == NR_DT_I8 ? ".s8" : ".u8";
    case 2: return dt == NR_DT_I16 ? ".s16" : dt == NR_DT_U16 ? ".u16" : ".b16";
    case 8: return ".b64";
    default: return ".b32";
    }
}

/* Elements per cp.async of pointer value ptr (layout L) into S: the run
 * that the layout, the buffer, the pointer's contiguity and alignment and
 * the mask's constancy all allow. */
static int copy_run(NrPtx *p, const NrPtxLay *L, const NrSmemAccess *acc, NrValId ptr, NrValId mask, int es) {
    if (!p->ax || L->nreg == 0) return 1;
    int d = -1;
    for (int i = 0; i < L->rank && d < 0; i++)
        if (L->regb[0] == 1u << L->off[i]) d = i;
    if (d < 0) return 1;
    int k = 0;
    while (k < L->nreg && L->regb[k] == 1u << (L->off[d] + k)) k++;
    int64_t v = (int64_t)1 << k;
    const NrAxisInfo *pa = &p->ax[ptr];
    if (v > acc->vec) v = acc->vec;
    if (v > pa->contiguity[d]) v = pa->contiguity[d];
    if (mask && v > p->ax[mask].constancy[d]) v = p->ax[mask].constancy[d];
    while (v > 1 && (v * es > 16 || v * es > pa->divisibility_bytes)) v >>= 1;
    return v >= 1 && nr_is_pow2(v) ? (int)v : 1;
}

static bool is_zero(const NrPv *e, int n) {
    for (int i = 0; i < n; i++)
        if (e[i].r || e[i].c) return false;
    return true;
}

/* The synchronous copy of one element: pred ? *ptr : other into the buffer. */
static void copy_elem(NrPtx *p, NrDtype dt, NrPv ptr, NrPv pred, NrPv other, NrPv saddr, int64_t imm, NrPv own) {
    NrPk k = dt == NR_DT_I1 ? NR_PK_I32 : nr_ptx_kind(dt);
    NrPv d = {(uint8_t)k, nr_ptx_newreg(p, k), 0};
    NrPv o = dt == NR_DT_I1 ? nr_pb_selp(p, other, nr_pv_i32(1), nr_pv_i32(0)) : other;
    nr_pb_mov_to(p, d, o);
    NrPv g = nr_pb_pand(p, pred, own);
    if (g.r) nr_ptx_emit(p, "@%s ld.global%s %s, %s;", nr_ptx_reg(p, g.r), ld_global_type(dt), nr_ptx_reg(p, d.r),
                         nr_ptx_addr(p, ptr, 0));
    else if (g.c) nr_ptx_emit(p, "ld.global%s %s, %s;", ld_global_type(dt), nr_ptx_reg(p, d.r), nr_ptx_addr(p, ptr, 0));
    NrPv v = dt == NR_DT_I1 ? nr_pb_setp(p, NR_PC_NE, NR_PT_B32, d, nr_pv_i32(0)) : d;
    nr_ptx_st_shared(p, dt, plus(p, saddr, imm), v, own);
}

bool nr_ptx_op_async_copy(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    if (o->nopnds != 4) {
        nr_ptx_error(p, "malformed 'async_copy'");
        return false;
    }
    NrValId ptr = o->opnds[0], buf = o->opnds[1], mask = o->opnds[2], oth = o->opnds[3];
    NrSmemMap S;
    if (!buffer_map(p, buf, &S)) return false;
    NrPtxVal *pv = nr_ptx_val(p, ptr);
    if (pv->lay < 0 || p->lays[pv->lay].bits != S.bits) {
        nr_ptx_error(p, "async_copy: the pointers do not cover the buffer");
        return false;
    }
    const NrPtxLay *L = &p->lays[pv->lay];
    NrDtype dt = (NrDtype)nr_type(p->m, nr_val_type(p->f, ptr))->dtype;
    if (nr_type(p->m, nr_val_type(p->f, ptr))->ptr > 1) dt = NR_DT_U64;
    int es = nr_ptx_smem_es(dt), n = pv->n;
    if ((mask && nr_ptx_val(p, mask)->n != n) || (oth && nr_ptx_val(p, oth)->n != n)) {
        nr_ptx_error(p, "async_copy operands in different layouts");
        return false;
    }
    NrPv *me = mask ? nr_ptx_val(p, mask)->e : NULL, *oe = oth ? nr_ptx_val(p, oth)->e : NULL;
    /* 16-byte copies bypass L1 (.cg) unless the op asks for .ca */
    bool ca16 = strcmp(nr_op_str(p->f, op, NR_A_CACHE, ""), ".ca") == 0;
    NrSmemAccess acc;
    nr_smem_access(L, &S, 16, p->a, &acc);
    int v = copy_run(p, L, &acc, ptr, mask, es);
    bool async = v * es >= 4 && dt != NR_DT_I1 && (!oe || is_zero(oe, n));
    if (!async) v = 1;
    NrPv own = nr_pv_pred(true);
    if (L->rep_lane || L->rep_warp) own = (NrPv){NR_PK_P, nr_ptx_owner(p, pv->lay), 0};
    NrSmemAddr g;
    nr_smem_addr_init(p, &g, buffer_addr(p, buf), acc.lane, acc.nlane, acc.warp, acc.nwarp, es);
    NrPv zero = dt == NR_DT_I1 ? nr_pv_pred(false) : nr_pv_imm(nr_ptx_kind(dt), 0);
    for (int r = 0; r < n; r += v) {
        if (L->dup[r]) continue;
        int64_t imm;
        NrPv sa = nr_smem_addr(p, &g, acc.reg[r], &imm);
        NrPv pred = me ? me[r] : nr_pv_pred(true);
        if (!async) {
            copy_elem(p, dt, pv->e[r], pred, oe ? oe[r] : zero, sa, imm, own);
            continue;
        }
        int bytes = v * es;
        char gd[32] = "";
        NrPv pg = own;
        if (pg.r) snprintf(gd, sizeof gd, "@%s ", nr_ptx_reg(p, pg.r));
        else if (!pg.c) continue;
        const char *lvl = bytes == 16 && !ca16 ? "cg" : "ca";
        NrPv src = nr_ptx_inreg(p, pv->e[r]);
        if (pred.r == 0 && pred.c) {
            nr_ptx_emit(p, "%scp.async.%s.shared.global %s, %s, %d;", gd, lvl, nr_ptx_addr(p, sa, imm),
                        nr_ptx_addr(p, src, 0), bytes);
        } else {
            /* src-size 0 reads nothing and fills the bytes with zeros */
            NrPv size = nr_ptx_inreg(p, nr_pb_selp(p, pred, nr_pv_i32(bytes), nr_pv_i32(0)));
            nr_ptx_emit(p, "%scp.async.%s.shared.global %s, %s, %d, %s;", gd, lvl, nr_ptx_addr(p, sa, imm),
                        nr_ptx_addr(p, src, 0), bytes, nr_ptx_reg(p, size.r));
        }
    }
    return true;
}

/* Whether v is a constant whose every element is the immediate 0 (as
 * op_const makes it): +0.0 or the integer 0. */
static bool zero_const(NrPtx *p, NrValId v) {
    NrOpId d = p->f->vals[v].def;
    if (!d || p->f->ops[d].opc != NR_OP_CONST) return false;
    const NrAttr *a = nr_op_attr(p->f, d, NR_A_VALUE);
    if (!a) return false;
    if (a->kind == NR_AK_INT) return a->v.i == 0;
    return a->kind == NR_AK_FLOAT && a->v.f == 0.0 && !signbit(a->v.f);
}

/* An asynchronous copy reads the pointer and the mask of each copy's first
 * element (as nr_ptx_op_async_copy groups them); element by element copies
 * (`other` not known to be zero), every element. */
void nr_ptx_async_copy_demand(NrPtx *p, NrOpId op, uint32_t *skip) {
    const NrOp *o = &p->f->ops[op];
    NrValId ptr = o->opnds[0], buf = o->opnds[1], mask = o->opnds[2], oth = o->opnds[3];
    uint32_t k = 0;
    const NrType *bt = nr_type(p->m, nr_val_type(p->f, buf));
    const NrType *pt = nr_type(p->m, nr_val_type(p->f, ptr));
    NrDtype dt = pt->ptr > 1 ? NR_DT_U64 : (NrDtype)pt->dtype;
    int es = nr_ptx_smem_es(dt);
    int lay = nr_ptx_lay(p, nr_val_type(p->f, ptr));
    NrSmemMap S;
    if (lay >= 0 && (!mask || nr_ptx_lay(p, nr_val_type(p->f, mask)) == lay) && dt != NR_DT_I1 &&
        (!oth || zero_const(p, oth)) && bt->kind == NR_TK_MEMDESC &&
        nr_smem_map(p->m, bt->layout, bt->rank, bt->shape, es, &S) && p->lays[lay].bits == S.bits) {
        NrSmemAccess acc;
        nr_smem_access(&p->lays[lay], &S, 16, p->a, &acc);
        int v = copy_run(p, &p->lays[lay], &acc, ptr, mask, es);
        if (v * es >= 4) k = (uint32_t)v - 1;
    }
    for (int i = 0; i < o->nopnds; i++) skip[o->opnds[i]] &= i == 0 || i == 2 ? k : 0;
}

bool nr_ptx_op_async_commit(NrPtx *p, NrOpId op) {
    (void)op;
    nr_ptx_emit(p, "cp.async.commit_group;");
    return true;
}

bool nr_ptx_op_async_wait(NrPtx *p, NrOpId op) {
    int64_t n = nr_op_int(p->f, op, NR_A_NUM, 0);
    if (n < 0 || n > 1000000) {
        nr_ptx_error(p, "async_wait: num must be from 0 to 1000000, got %lld", (long long)n);
        return false;
    }
    nr_ptx_emit(p, "cp.async.wait_group %lld;", (long long)n);
    fence_async(p);
    return true;
}

/* --- mbarriers and TMA (sm_90) -------------------------------------------------------------------------------- */
/* One thread (thread 0) initializes, arrives and issues TMA copies; every
 * thread that needs the data waits on the mbarrier's phase.  An mbarrier
 * is an 8-byte buffer; mbarrier_init is followed by fence.mbarrier_init
 * (and gpu-barriers places a barrier before its first use). */
static bool need_sm90(NrPtx *p, const char *what) {
    if (p->sm >= 90) return true;
    nr_ptx_error(p, "%s needs sm_90 or newer, not sm_%d", what, p->sm);
    return false;
}

/* one elected thread (nr_ptx_elect_one), and the op's optional predicate
 * operand i */
static NrPv issuer(NrPtx *p, NrOpId op, int i) {
    NrPv t0 = nr_ptx_elect_one(p);
    NrValId pv = i < p->f->ops[op].nopnds ? p->f->ops[op].opnds[i] : NR_NONE;
    return pv ? nr_ptx_inreg(p, nr_pb_pand(p, t0, nr_ptx_val(p, pv)->e[0])) : t0;
}

bool nr_ptx_op_mbarrier_init(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "mbarrier_init")) return false;
    int64_t count = nr_op_int(p->f, op, NR_A_ARRIVALS, 1);
    NrPv t0 = {NR_PK_P, nr_ptx_thread0(p), 0};
    NrPv a = nr_ptx_inreg(p, buffer_addr(p, p->f->ops[op].opnds[0]));
    nr_ptx_emit(p, "@%s mbarrier.init.shared::cta.b64 [%s], %lld;", nr_ptx_reg(p, t0.r), nr_ptx_reg(p, a.r), (long long)count);
    nr_ptx_emit(p, "fence.mbarrier_init.release.cluster;");
    return true;
}

bool nr_ptx_op_mbarrier_inval(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "mbarrier_inval")) return false;
    NrPv t0 = {NR_PK_P, nr_ptx_thread0(p), 0};
    NrPv a = nr_ptx_inreg(p, buffer_addr(p, p->f->ops[op].opnds[0]));
    nr_ptx_emit(p, "@%s mbarrier.inval.shared::cta.b64 [%s];", nr_ptx_reg(p, t0.r), nr_ptx_reg(p, a.r));
    return true;
}

bool nr_ptx_op_mbarrier_expect(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "mbarrier_expect")) return false;
    int64_t bytes = nr_op_int(p->f, op, NR_A_BYTES, 0);
    NrPv g = issuer(p, op, 1);
    NrPv a = nr_ptx_inreg(p, buffer_addr(p, p->f->ops[op].opnds[0]));
    int32_t state = nr_ptx_newreg(p, NR_PK_I64);
    nr_ptx_emit(p, "@%s mbarrier.arrive.expect_tx.shared::cta.b64 %s, [%s], %lld;", nr_ptx_reg(p, g.r),
                nr_ptx_reg(p, state), nr_ptx_reg(p, a.r), (long long)bytes);
    return true;
}

/* Lane 0 of each warp arrives, for the warp: the op follows a converged
 * point of it (a wgmma wait, or the loop's own synchronous code). */
bool nr_ptx_op_mbarrier_arrive(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "mbarrier_arrive")) return false;
    NrPv lane = {NR_PK_I32, p->lane, 0};
    NrPv g = nr_pb_setp(p, NR_PC_EQ, NR_PT_U32, lane, nr_pv_i32(0));
    NrValId pv = p->f->ops[op].nopnds > 1 ? p->f->ops[op].opnds[1] : NR_NONE;
    if (pv) g = nr_pb_pand(p, g, nr_ptx_val(p, pv)->e[0]);
    g = nr_ptx_inreg(p, g);
    NrPv a = nr_ptx_inreg(p, buffer_addr(p, p->f->ops[op].opnds[0]));
    nr_ptx_emit(p, "@%s mbarrier.arrive.shared::cta.b64 _, [%s];", nr_ptx_reg(p, g.r), nr_ptx_reg(p, a.r));
    return true;
}

bool nr_ptx_op_mbarrier_wait(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "mbarrier_wait")) return false;
    NrPv a = nr_ptx_inreg(p, buffer_addr(p, p->f->ops[op].opnds[0]));
    NrPv parity = nr_ptx_inreg(p, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_ptx_val(p, p->f->ops[op].opnds[1])->e[0],
                                             nr_pv_i32(1)));
    NrPv done = {NR_PK_P, nr_ptx_newreg(p, NR_PK_P), 0};
    int again = nr_ptx_label(p);
    nr_ptx_emit(p, "$L%d:", again);
    nr_ptx_emit(p, "mbarrier.try_wait.parity.shared::cta.b64 %s, [%s], %s;", nr_ptx_reg(p, done.r), nr_ptx_reg(p, a.r),
                nr_ptx_reg(p, parity.r));
    nr_ptx_emit(p, "@!%s bra $L%d;", nr_ptx_reg(p, done.r), again);
    return true;
}

/* The tensor map's dimensions are the buffer's, fastest first (its
 * layout's order); a box is at most one swizzle wide, so a tile wider
 * than its swizzle takes one copy per swizzle-wide block of columns, each
 * into its own block of the buffer (nvmma_shared stores them one after
 * another). */
bool nr_tma_plan(const NrLayout *l, int rank, const int32_t *shape, int es, NrTmaPlan *out) {
    memset(out, 0, sizeof *out);
    if (!l || l->kind != NR_LK_SHARED || !l->nvmma || l->rank != rank || rank < 1 || rank > 5) return false;
    int64_t inner = shape[l->order[0]], box0 = l->swizzle_bytes ? l->swizzle_bytes / es : inner, numel = 1;
    if (box0 > inner) box0 = inner;
    if (box0 < 1 || box0 > 256 || inner % box0 || box0 * es % 16) return false;
    out->rank = rank;
    out->swizzle = l->swizzle_bytes;
    for (int k = 0; k < rank; k++) {
        out->dim[k] = l->order[k];
        out->box[k] = k ? shape[l->order[k]] : box0;
        numel *= shape[k];
        if (out->box[k] > 256) return false;
    }
    out->nbox = inner / box0;
    out->stride = numel / inner * box0 * es;
    return true;
}

/* The generic address of the kernel's tensor-map parameter (a
 * __grid_constant__ CUtensorMap, which TMA reads in place). */
bool nr_ptx_op_tensormap(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "tensormap")) return false;
    const NrOp *o = &p->f->ops[op];
    int arg = p->f->vals[o->opnds[0]].index, j = 0;
    while (j < p->ntmaps && p->tmaps[j].arg != arg) j++;
    if (p->is_func || j == p->ntmaps) {
        nr_ptx_error(p, "tensormap: only a kernel's own arguments have tensor maps");
        return false;
    }
    int32_t pa = nr_ptx_newreg(p, NR_PK_I64);
    NrPtxVal *x = nr_ptx_def(p, o->results[0]);
    nr_ptx_emit(p, "mov.b64 %s, %s_tmap_%d;", nr_ptx_reg(p, pa), p->f->name, j);
    nr_ptx_emit(p, "cvta.param.u64 %s, %s;", nr_ptx_reg(p, x->e[0].r), nr_ptx_reg(p, pa));
    if (p->ptx_version < 83) p->ptx_version = 83;
    return true;
}

/* The boxes tma_load copies from a kernel's tensor map: every copy of one
 * map must agree (one CUtensorMap per descriptor). */
static bool record_tmap(NrPtx *p, NrOpId op, const NrTmaPlan *pl, const NrType *bt) {
    NrValId d = p->f->ops[op].opnds[0];
    NrOpId def = p->f->vals[d].def;
    if (!def || p->f->ops[def].opc != NR_OP_TENSORMAP) return true;
    int arg = p->f->vals[p->f->ops[def].opnds[0]].index, j = 0;
    while (j < p->ntmaps && p->tmaps[j].arg != arg) j++;
    if (j == p->ntmaps) return true; /* reported by its tensormap op */
    NrTmapUse u = p->tmaps[j];
    if (u.rank != bt->rank) {
        nr_ptx_error(p, "tma_load: a %d-dimensional buffer from a %d-dimensional tensor descriptor", bt->rank, u.rank);
        return false;
    }
    for (int k = 0; k < pl->rank; k++) u.box[pl->dim[k]] = (int)pl->box[k];
    u.swizzle = pl->swizzle;
    if (p->tmap_seen[j] && memcmp(&u, &p->tmaps[j], sizeof u) != 0) {
        nr_ptx_error(p, "tma_load: the copies of one tensor descriptor fill buffers of different layouts");
        return false;
    }
    p->tmaps[j] = u;
    p->tmap_seen[j] = true;
    return true;
}

/* The coordinates of box j of plan pl, fastest dimension first, from the
 * op's coordinate operands first.. (one per buffer dimension): box j sits
 * j box widths along the fastest dimension. */
static void box_coords(NrPtx *p, NrOpId op, int first, const NrTmaPlan *pl, int64_t j, char *out, size_t size) {
    const NrOp *o = &p->f->ops[op];
    size_t len = 0;
    out[0] = 0;
    for (int k = 0; k < pl->rank && len < size; k++) {
        NrPv c = nr_ptx_val(p, o->opnds[first + pl->dim[k]])->e[0];
        if (k == 0 && j) c = nr_pb_bin(p, NR_PO_ADD, NR_PT_S32, c, nr_pv_i32(j * pl->box[0]));
        c = nr_ptx_inreg(p, c);
        len += (size_t)snprintf(out + len, size - len, "%s%s", k ? ", " : "", nr_ptx_reg(p, c.r));
    }
}

/* Every thread's generic-proxy writes of the buffer are made visible to
 * the async proxy (fence.proxy.async) and the program synchronizes; one
 * elected thread then copies it box by box as one bulk group, which the
 * emitter waits for (until TMA has read the buffer) in front of the next
 * barrier, so that the buffer may be reused after that barrier. */
bool nr_ptx_op_tma_store(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "tma_store")) return false;
    const NrOp *o = &p->f->ops[op];
    const NrType *bt = nr_type(p->m, nr_val_type(p->f, o->opnds[1]));
    const NrLayout *l = bt->layout > 0 && bt->layout < p->m->nlayouts ? &p->m->layouts[bt->layout] : NULL;
    NrTmaPlan pl;
    if (o->nopnds != 2 + bt->rank || !nr_tma_plan(l, bt->rank, bt->shape, nr_ptx_smem_es(dt_of(bt)), &pl)) {
        nr_ptx_error(p, "tma_store: buffer %s cannot be copied by TMA boxes", nr_type_str(p->m, nr_val_type(p->f, o->opnds[1])));
        return false;
    }
    if (!record_tmap(p, op, &pl, bt)) return false;
    NrPv map = nr_ptx_inreg(p, nr_ptx_val(p, o->opnds[0])->e[0]);
    NrPv src = nr_ptx_inreg(p, buffer_addr(p, o->opnds[1]));
    need_align(p, p->m, bt->layout);
    nr_ptx_emit(p, "fence.proxy.async.shared::cta;");
    nr_ptx_bar(p);
    NrPv t0 = nr_ptx_elect_one(p); /* the copies, their commit and their wait: one thread's bulk group */
    for (int64_t j = 0; j < pl.nbox; j++) {
        char coords[160];
        box_coords(p, op, 2, &pl, j, coords, sizeof coords);
        char srcs[48];
        snprintf(srcs, sizeof srcs, "%s", nr_ptx_addr(p, src, j * pl.stride));
        nr_ptx_emit(p, "@%s cp.async.bulk.tensor.%dd.global.shared::cta.tile.bulk_group [%s, {%s}], %s;",
                    nr_ptx_reg(p, t0.r), pl.rank, nr_ptx_reg(p, map.r), coords, srcs);
    }
    nr_ptx_emit(p, "@%s cp.async.bulk.commit_group;", nr_ptx_reg(p, t0.r));
    p->bulk_reads = true; /* waited for in front of the next barrier (nr_ptx_bulk_wait) */
    return true;
}

bool nr_ptx_op_tma_load(NrPtx *p, NrOpId op) {
    if (!need_sm90(p, "tma_load")) return false;
    const NrOp *o = &p->f->ops[op];
    const NrType *bt = nr_type(p->m, nr_val_type(p->f, o->opnds[1]));
    const NrLayout *l = bt->layout > 0 && bt->layout < p->m->nlayouts ? &p->m->layouts[bt->layout] : NULL;
    NrTmaPlan pl;
    if (o->nopnds != 4 + bt->rank || !nr_tma_plan(l, bt->rank, bt->shape, nr_ptx_smem_es(dt_of(bt)), &pl)) {
        nr_ptx_error(p, "tma_load: buffer %s cannot be filled by TMA boxes (an nvmma_shared layout of its rank, at "
                        "most 256 elements per box dimension)", nr_type_str(p->m, nr_val_type(p->f, o->opnds[1])));
        return false;
    }
    if (!record_tmap(p, op, &pl, bt)) return false;
    NrPv g = issuer(p, op, 3);
    NrPv map = nr_ptx_inreg(p, nr_ptx_val(p, o->opnds[0])->e[0]);
    NrPv dst = nr_ptx_inreg(p, buffer_addr(p, o->opnds[1])), mbar = nr_ptx_inreg(p, buffer_addr(p, o->opnds[2]));
    need_align(p, p->m, bt->layout);
    for (int64_t j = 0; j < pl.nbox; j++) {
        char coords[160];
        box_coords(p, op, 4, &pl, j, coords, sizeof coords);
        char dsts[48], maps[48];
        snprintf(dsts, sizeof dsts, "%s", nr_ptx_addr(p, dst, j * pl.stride));
        snprintf(maps, sizeof maps, "%s", nr_ptx_reg(p, map.r));
        nr_ptx_emit(p,
                    "@%s cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes %s, [%s, {%s}], "
                    "[%s];",
                    nr_ptx_reg(p, g.r), pl.rank, dsts, maps, coords, nr_ptx_reg(p, mbar.r));
    }
    return true;
}
