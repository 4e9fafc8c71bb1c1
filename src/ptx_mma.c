/* ptx_mma.c - tensor cores on sm_80 and later: dot on mma.sync, dot
 * operands loaded from shared memory by ldmatrix, and conversions into and
 * out of the tensor-core layouts through swizzled shared memory.
 *
 *   dot (result: mma version 2, operands: its dot_op layouts)
 *     mma.sync.aligned.m16n8k16 .f16/.bf16 operands, .f32 or .f16 (f16
 *       operands) accumulators
 *     m16n8k8 .tf32: f32 operands rounded by cvt.rna.tf32.f32; tf32x3
 *       splits each operand into a tf32 head and tail and sums three
 *       products (head*tail, tail*head, head*head)
 *     m16n8k32 .s8 (.u8) into .s32, and .e4m3/.e5m2 on sm_89+ (PTX 8.4;
 *       f16 accumulators PTX 8.7).  Below sm_89 fp8 operands in k_width 4
 *       layouts run as two m16n8k16 f16 products per k32 step: each lane
 *       converts its own bytes, and the same renumbering of k in both
 *       operands (in each 16-wide half, lane t's k = 4t + j becomes f16
 *       position 2t + j for j < 2, 2t + 6 + j for j >= 2) leaves the sum
 *       over k unchanged.
 *   local_load into a dot_op layout: ldmatrix (.trans when the buffer's
 *     rows run along the operand's non-k dimension, 16-bit types only),
 *     else ld.shared (ptx_smem.c).
 *   convert_layout into a dot_op layout, or out of an mma layout, through
 *     shared memory: a swizzled scratch buffer (16-byte vectors along the
 *     fastest dimension that suits both sides), vectorized st.shared (on
 *     sm_90, stmatrix for 16-bit tensor-core fragments), then ldmatrix or
 *     vectorized ld.shared.  Other conversions are ptx_reduce.c's.
 *
 * The plans (nr_mma_plan, nr_ldsm_plan, nr_stsm_plan) say which register
 * feeds which fragment slot of which instruction and which lane supplies
 * which row address.  They are built from the linear layouts and checked
 * against the PTX ISA's fragment tables below; tests/c/test_mma.c executes
 * them on a model of a warp.  The emitter only prints them. */
#include "ptx.h"

#include <stdio.h>
#include <string.h>

static int lg(int64_t x) {
    int k = 0;
    while (((int64_t)1 << k) < x) k++;
    return k;
}

/* --- the PTX ISA's fragment tables ------------------------------------------------------------------------ */
/* Coordinates (row, column) of fragment slot i in lane (g = lane / 4,
 * t = lane % 4): operand A (M x K), operand B (K x N), accumulator (M x N). */
static void frag_a(NrMmaShape s, int i, int lane, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    switch (s) {
    case NR_MMA_K16: *row = g + 8 * (i >> 1 & 1), *col = 2 * t + (i & 1) + 8 * (i >> 2); return;
    case NR_MMA_K8: *row = g + 8 * (i & 1), *col = t + 4 * (i >> 1); return;
    case NR_MMA_K32: *row = g + 8 * (i >> 2 & 1), *col = 4 * t + (i & 3) + 16 * (i >> 3); return;
    }
}

static void frag_b(NrMmaShape s, int i, int lane, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    switch (s) {
    case NR_MMA_K16: *row = 2 * t + (i & 1) + 8 * (i >> 1), *col = g; return;
    case NR_MMA_K8: *row = t + 4 * i, *col = g; return;
    case NR_MMA_K32: *row = 4 * t + (i & 3) + 16 * (i >> 2), *col = g; return;
    }
}

static void frag_c(int i, int lane, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    *row = g + 8 * (i >> 1), *col = 2 * t + (i & 1);
}

static void frag(int which, NrMmaShape s, int i, int lane, int *row, int *col) {
    if (which == 0) frag_a(s, i, lane, row, col);
    else if (which == 1) frag_b(s, i, lane, row, col);
    else frag_c(i, lane, row, col);
}

static const int slots_a[] = {8, 4, 16}, slots_b[] = {4, 2, 8}, inst_k[] = {16, 8, 32};

/* --- flats ------------------------------------------------------------------------------------------------- */
static bool lflat(const NrPtxLay *L, const int32_t *c, uint32_t *out) {
    uint32_t f = 0;
    for (int d = 0; d < L->rank; d++) {
        if (c[d] < 0 || c[d] >= L->shape[d]) return false;
        f |= (uint32_t)c[d] << L->off[d];
    }
    *out = f;
    return true;
}

static int32_t lcoord(const NrPtxLay *L, uint32_t flat, int d) {
    return (int32_t)(flat >> L->off[d] & (uint32_t)(L->shape[d] - 1));
}

static uint32_t lane_flat(const NrPtxLay *L, int lane) {
    uint32_t f = 0;
    for (int i = 0; i < L->nlane; i++)
        if (lane >> i & 1) f ^= L->laneb[i];
    return f;
}

/* Register index holding a flat, from the register bases (F2 elimination). */
typedef struct Solver {
    uint32_t piv[32];
    uint32_t lab[32];
} Solver;

static void solver_init(Solver *s, const NrPtxLay *L) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < L->nreg; i++) {
        uint32_t v = L->regb[i], l = 1u << i;
        while (v) { /* set bits from the top: piv[b] leads with bit b */
            int b = 31 - __builtin_clz(v);
            if (!s->piv[b]) {
                s->piv[b] = v;
                s->lab[b] = l;
                break;
            }
            v ^= s->piv[b];
            l ^= s->lab[b];
        }
    }
}

static int solve(const Solver *s, uint32_t x) {
    uint32_t l = 0;
    while (x) {
        int b = 31 - __builtin_clz(x);
        if (!s->piv[b]) return -1;
        x ^= s->piv[b];
        l ^= s->lab[b];
    }
    return (int)l;
}

/* --- the mma plan ----------------------------------------------------------------------------------------- */
static bool why_fail(char *why, size_t n, const char *msg) {
    if (n) snprintf(why, n, "%s", msg);
    return false;
}

/* The lanes of layout L hold fragment `which` of shape s: lane l's slot i
 * sits at lane 0's plus the lane part of l (dimensions d0, d1). */
static bool lanes_match(const NrPtxLay *L, int which, NrMmaShape s, int d0, int d1) {
    int n = which == 0 ? slots_a[s] : which == 1 ? slots_b[s] : 4;
    if (L->nlane != 5) return false;
    for (int i = 0; i < n; i++) {
        int r0, c0;
        frag(which, s, i, 0, &r0, &c0);
        int32_t c[NR_MAX_RANK] = {0};
        c[d0] = r0, c[d1] = c0;
        uint32_t f0, f;
        if (!lflat(L, c, &f0)) return false;
        for (int lane = 1; lane < 32; lane++) {
            int r, cc;
            frag(which, s, i, lane, &r, &cc);
            c[d0] = r, c[d1] = cc;
            if (!lflat(L, c, &f) || (f ^ f0) != lane_flat(L, lane)) return false;
        }
    }
    return true;
}

/* Registers of slots [0, n) of `which` in the tile at (batch b, o0, o1). */
static bool tile_slots(const NrPtxLay *L, const Solver *sv, int which, NrMmaShape s, int n, int b, int o0, int o1,
                       int32_t *out) {
    int r = L->rank;
    for (int i = 0; i < n; i++) {
        int x, y;
        frag(which, s, i, 0, &x, &y);
        int32_t c[NR_MAX_RANK] = {0};
        if (r == 3) c[0] = b;
        c[r - 2] = o0 + x, c[r - 1] = o1 + y;
        uint32_t f;
        if (!lflat(L, c, &f) || (out[i] = solve(sv, f)) < 0) return false;
    }
    return true;
}

bool nr_mma_plan(const NrPtxLay *A, const NrPtxLay *B, const NrPtxLay *C, int kw, NrMmaMode mode, NrArena *a,
                 NrMmaPlan *out, char *why, size_t n) {
    memset(out, 0, sizeof *out);
    int rank = C->rank, md = rank - 2, nd = rank - 1;
    if ((rank != 2 && rank != 3) || A->rank != rank || B->rank != rank) return why_fail(why, n, "dots have rank 2 or 3");
    NrMmaShape vs = kw == 2 ? NR_MMA_K16 : kw == 1 ? NR_MMA_K8 : kw == 4 ? NR_MMA_K32 : (NrMmaShape)-1;
    if ((int)vs < 0) return why_fail(why, n, "k_width must be 1, 2 or 4");
    int M = C->shape[md], N = C->shape[nd], K = A->shape[rank - 1];
    if (A->shape[md] != M || B->shape[nd] != N || B->shape[rank - 2] != K || (rank == 3 && (A->shape[0] != C->shape[0] || B->shape[0] != C->shape[0])))
        return why_fail(why, n, "operand shapes do not match the result");
    if (M % 16 || N % 8 || K % inst_k[vs]) return why_fail(why, n, "M, N, K are not multiples of the instruction's shape");
    if (!lanes_match(A, 0, vs, md, nd) || !lanes_match(B, 1, vs, md, nd) || !lanes_match(C, 2, vs, md, nd))
        return why_fail(why, n, "the layouts' lanes do not hold the PTX ISA's fragments");
    if (A->nwarp != C->nwarp || B->nwarp != C->nwarp) return why_fail(why, n, "operand and result warps differ");
    for (int j = 0; j < C->nwarp; j++) {
        uint32_t w = C->warpb[j], wa = A->warpb[j], wb = B->warpb[j];
        bool ok = lcoord(A, wa, md) == lcoord(C, w, md) && lcoord(A, wa, nd) == 0 &&
                  lcoord(B, wb, nd) == lcoord(C, w, nd) && lcoord(B, wb, md) == 0;
        if (rank == 3) ok = ok && lcoord(A, wa, 0) == lcoord(C, w, 0) && lcoord(B, wb, 0) == lcoord(C, w, 0);
        if (!ok) return why_fail(why, n, "operand warps do not follow the result's");
    }
    for (int r = 0; r < 1 << C->nreg; r++)
        if (C->dup[r]) return why_fail(why, n, "the accumulator layout repeats registers");
    Solver sa, sb, sc;
    solver_init(&sa, A);
    solver_init(&sb, B);
    solver_init(&sc, C);
    int ntiles = 0;
    for (int r = 0; r < 1 << C->nreg; r++)
        if (lcoord(C, C->regflat[r], md) % 16 == 0 && lcoord(C, C->regflat[r], nd) % 8 == 0) ntiles++;
    NrMmaShape ps = mode == NR_MMA_F8_AS_F16 ? NR_MMA_K16 : vs;
    int per = mode == NR_MMA_TF32X3 ? 3 : mode == NR_MMA_F8_AS_F16 ? 2 : 1;
    if (mode == NR_MMA_F8_AS_F16 && vs != NR_MMA_K32) return why_fail(why, n, "fp8 as f16 needs k_width 4");
    if (mode == NR_MMA_TF32X3 && vs != NR_MMA_K8) return why_fail(why, n, "tf32x3 needs k_width 1");
    int nk = K / inst_k[vs];
    out->shape = ps;
    out->na = slots_a[ps];
    out->nb = slots_b[ps];
    out->ninstr = nk * ntiles * per;
    out->ins = nr_alloc(a, sizeof(NrMmaInstr) * (size_t)(out->ninstr ? out->ninstr : 1));
    int k = 0;
    for (int kk = 0; kk < nk; kk++) {
        int k0 = kk * inst_k[vs];
        for (int r = 0; r < 1 << C->nreg; r++) {
            uint32_t f = C->regflat[r];
            int m0 = lcoord(C, f, md), n0 = lcoord(C, f, nd), b = rank == 3 ? lcoord(C, f, 0) : 0;
            if (m0 % 16 || n0 % 8) continue;
            int32_t as[16], bs[8], cs[4];
            if (!tile_slots(A, &sa, 0, vs, slots_a[vs], b, m0, k0, as) ||
                !tile_slots(B, &sb, 1, vs, slots_b[vs], b, k0, n0, bs) || !tile_slots(C, &sc, 2, vs, 4, b, m0, n0, cs))
                return why_fail(why, n, "an operand element of an instruction is in no register");
            for (int h = 0; h < per; h++) {
                NrMmaInstr *in = &out->ins[k++];
                memset(in, 0, sizeof *in);
                memcpy(in->c, cs, sizeof cs);
                in->first = kk == 0 && h == 0;
                if (mode == NR_MMA_F8_AS_F16) {
                    /* f16 slot pairs (k 2t+e, 2t+8+e) take the fp8 bytes (k 4t+e, 4t+2+e) of half h */
                    static const int amap[8] = {0, 1, 4, 5, 2, 3, 6, 7};
                    for (int i = 0; i < 8; i++) in->a[i] = as[8 * h + amap[i]];
                    for (int i = 0; i < 4; i++) in->b[i] = bs[4 * h + i];
                } else {
                    memcpy(in->a, as, sizeof(int32_t) * (size_t)slots_a[vs]);
                    memcpy(in->b, bs, sizeof(int32_t) * (size_t)slots_b[vs]);
                    if (mode == NR_MMA_TF32X3) {
                        static const uint8_t ap[3] = {1, 2, 1}, bp[3] = {2, 1, 1};
                        in->apart = ap[h];
                        in->bpart = bp[h];
                    }
                }
            }
        }
    }
    return true;
}

/* --- the ldmatrix plan ------------------------------------------------------------------------------------------ */
static uint32_t img_of(const NrSmemMap *S, uint32_t x) {
    uint32_t y = 0;
    for (int i = 0; i < S->bits; i++)
        if (x >> i & 1) y ^= S->img[i];
    return y;
}

bool nr_ldsm_plan(const NrPtxLay *D, const NrSmemMap *S, NrArena *a, NrLdsmPlan *out) {
    memset(out, 0, sizeof *out);
    int es = S->es;
    if ((es != 1 && es != 2 && es != 4) || D->bits != S->bits || D->nlane != 5) return false;
    int epw = 4 / es, nb = lg(epw);
    if (D->nreg < nb) return false;
    uint32_t li[5], ri[NR_LL_MAX_BITS];
    for (int i = 0; i < 5; i++) li[i] = img_of(S, D->laneb[i]);
    for (int i = 0; i < D->nreg; i++) ri[i] = img_of(S, D->regb[i]);
    /* Rows of 16 bytes: the bits that select a row keep it aligned. */
    uint32_t row = (uint32_t)(16 / es) - 1;
    bool aligned = true;
    for (int i = 0; i < D->nwarp; i++) aligned = aligned && !(img_of(S, D->warpb[i]) & row);
    for (int i = nb; i < D->nreg; i++) aligned = aligned && !(ri[i] & row);
    bool plain = aligned, trans = aligned && es == 2;
    /* Plain: a word's elements, then lanes t0, t1, run along one 16-byte row. */
    for (int i = 0; i < nb; i++) plain = plain && ri[i] == 1u << i;
    plain = plain && li[0] == (uint32_t)epw && li[1] == 2u * (uint32_t)epw;
    for (int i = 2; i < 5; i++) plain = plain && !(li[i] & row);
    /* Transposed: lanes g0..g2 run along the row; the word's two elements
     * and lanes t0, t1 pick rows. */
    trans = trans && !(ri[0] & row) && !(li[0] & row) && !(li[1] & row) && li[2] == 1 && li[3] == 2 && li[4] == 4;
    if (!plain && !trans) return false;
    out->trans = !plain;
    out->es = es;
    out->epw = epw;
    out->nwarp = D->nwarp;
    for (int i = 0; i < D->nwarp; i++) out->warp[i] = img_of(S, D->warpb[i]);
    int nwords = 1 << (D->nreg - nb);
    int nmat = nwords >= 4 ? 4 : nwords;
    /* Supplying lane L: bits 0-2 the row, bits 3-4 the matrix. */
    if (plain) out->lane[0] = li[2], out->lane[1] = li[3], out->lane[2] = li[4];
    else out->lane[0] = ri[0], out->lane[1] = li[0], out->lane[2] = li[1];
    out->lane[3] = nmat >= 2 ? ri[nb] : 0;
    out->lane[4] = nmat >= 4 ? ri[nb + 1] : 0;
    out->ninstr = nwords / nmat;
    out->ins = nr_alloc(a, sizeof(NrLdsmInstr) * (size_t)out->ninstr);
    for (int h = 0; h < out->ninstr; h++) {
        NrLdsmInstr *in = &out->ins[h];
        in->nmat = nmat;
        in->off = img_of(S, D->regflat[h * nmat * epw]);
        for (int j = 0; j < 4; j++) in->word[j] = j < nmat ? h * nmat + j : -1;
    }
    return true;
}

/* --- the stmatrix plan ----------------------------------------------------------------------------------------- */
/* stmatrix (sm_90) writes what ldmatrix reads: the same fragments, the same
 * row addresses from the same lanes, so the ldmatrix plan of the stored
 * layout is the stmatrix plan.  It must cover every element exactly once
 * (no replicas, no duplicate registers: stmatrix cannot be predicated per
 * lane), and each matrix's eight rows must fall on eight different 16-byte
 * bank groups: the row addresses of a matrix are one offset XOR the images
 * of the supplying lane's bits 0..2, so bits 4..6 of those three images (in
 * bytes) must be independent. */
bool nr_stsm_plan(const NrPtxLay *L, const NrSmemMap *S, NrArena *a, NrLdsmPlan *out) {
    memset(out, 0, sizeof *out);
    if (S->es != 2 || L->rep_lane || L->rep_warp) return false;
    for (int r = 0; r < 1 << L->nreg; r++)
        if (L->dup[r]) return false;
    NrLdsmPlan pl;
    if (!nr_ldsm_plan(L, S, a, &pl)) return false;
    uint32_t span = 0; /* bank groups reached by the row-selecting lane bits */
    for (uint32_t l = 0; l < 8; l++) {
        uint32_t x = 0;
        for (int i = 0; i < 3; i++)
            if (l >> i & 1) x ^= pl.lane[i];
        span |= 1u << ((x * (uint32_t)S->es / 16) & 7);
    }
    if (span != 0xff) return false;
    *out = pl;
    return true;
}

/* Elements e of layout lay stored into buffer S at base by stmatrix (sm_90,
 * 16-bit elements); false, emitting nothing, if they do not fit it. */
bool nr_stsm_store(NrPtx *p, int lay, const NrSmemMap *S, NrPv base, NrDtype dt, const NrPv *e) {
    NrLdsmPlan pl;
    if (p->sm < 90 || dt == NR_DT_I1 || nr_ptx_smem_es(dt) != 2 || !nr_stsm_plan(&p->lays[lay], S, p->a, &pl))
        return false;
    NrSmemAddr g;
    nr_smem_addr_init(p, &g, base, pl.lane, 5, pl.warp, pl.nwarp, pl.es);
    for (int h = 0; h < pl.ninstr; h++) {
        const NrLdsmInstr *in = &pl.ins[h];
        NrPv w[4];
        for (int j = 0; j < in->nmat; j++) w[j] = nr_ptx_inreg(p, nr_ptx_pack_word(p, dt, e + in->word[j] * pl.epw));
        int64_t imm;
        NrPv ad = nr_smem_addr(p, &g, in->off, &imm);
        nr_ptx_emit(p, "stmatrix.sync.aligned.m8n8.x%d%s.shared.b16 %s, %s;", in->nmat, pl.trans ? ".trans" : "",
                    nr_ptx_addr(p, ad, imm), nr_ptx_reg_list(p, w, in->nmat, true));
    }
    return true;
}

/* --- loads into dot operand layouts ------------------------------------------------------------------------ */
static NrDtype type_dt(const NrType *t) { return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype; }

static const NrLayout *layout_of(const NrModule *m, const NrType *t) {
    return t->layout > 0 && t->layout < m->nlayouts ? &m->layouts[t->layout] : NULL;
}

/* A dot_op layout whose parent is an mma layout. */
static bool is_mma_operand(const NrModule *m, int32_t id) {
    if (id <= 0 || id >= m->nlayouts || m->layouts[id].kind != NR_LK_DOT_OP) return false;
    int32_t par = m->layouts[id].parent;
    return par > 0 && par < m->nlayouts && m->layouts[par].kind == NR_LK_MMA;
}

/* An ldmatrix load of a dot operand.  Its word and element registers are
 * allocated up front; the instructions are issued at once, or - when the
 * only reader is a dot (nr_ptx_op_local_load) - by the dot, each just
 * before the first mma.sync that needs it, so that a tile's fragments live
 * from their k-step on instead of all at once. */
struct NrPtxLdsmLoad {
    NrLdsmPlan plan;
    NrPv base;
    NrDtype dt;
    NrPv *words, *elems;
    uint8_t *issued;
    NrSmemAddr g;
    bool ginit;
};

/* Issues instruction h: the ldmatrix, then its words unpacked into the
 * element registers (dead code for a dot that reads the words). */
static void ldsm_issue(NrPtx *p, struct NrPtxLdsmLoad *L, int h) {
    if (L->issued[h]) return;
    L->issued[h] = 1;
    const NrLdsmPlan *pl = &L->plan;
    const NrLdsmInstr *in = &pl->ins[h];
    if (!L->ginit) {
        nr_smem_addr_init(p, &L->g, L->base, pl->lane, 5, pl->warp, pl->nwarp, pl->es);
        L->ginit = true;
    }
    int64_t imm;
    NrPv ad = nr_smem_addr(p, &L->g, in->off, &imm);
    char list[96];
    size_t len = 0;
    for (int j = 0; j < in->nmat; j++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", j ? ", " : "",
                                nr_ptx_reg(p, L->words[in->word[j]].r));
    nr_ptx_emit(p, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 {%s}, %s;", in->nmat, pl->trans ? ".trans" : "", list,
                nr_ptx_addr(p, ad, imm));
    if (pl->epw == 1) return; /* the elements are the words */
    for (int j = 0; j < in->nmat; j++) {
        NrPv e[4];
        nr_ptx_unpack_word(p, L->dt, L->words[in->word[j]], e);
        for (int i = 0; i < pl->epw; i++) nr_pb_mov_to(p, L->elems[in->word[j] * pl->epw + i], e[i]);
    }
}

/* Registers r of a pending load are loaded from here on. */
static void ldsm_need(NrPtx *p, struct NrPtxLdsmLoad *L, int r) {
    if (L) ldsm_issue(p, L, r / L->plan.epw / L->plan.ins[0].nmat);
}

/* ldmatrix per plan into the elements of value v (layout lay, dtype dt);
 * the words stay recorded for the dot; `defer` leaves the issue to it. */
static NrPv *ldsm_load(NrPtx *p, const NrLdsmPlan *pl, int lay, NrPv base, NrDtype dt, NrValId v, bool defer) {
    int R = 1 << p->lays[lay].nreg, nw = R / pl->epw;
    struct NrPtxLdsmLoad *L = nr_alloc(p->a, sizeof *L);
    L->plan = *pl;
    L->base = base;
    L->dt = dt;
    L->words = nr_alloc(p->a, sizeof(NrPv) * (size_t)nw);
    L->elems = nr_alloc(p->a, sizeof(NrPv) * (size_t)R);
    L->issued = nr_alloc(p->a, (size_t)pl->ninstr);
    NrPk k = nr_ptx_kind(dt);
    for (int w = 0; w < nw; w++) L->words[w] = (NrPv){NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    for (int r = 0; r < R; r++)
        L->elems[r] = pl->epw == 1 ? nr_pb_bits(p, k, L->words[r]) : (NrPv){(uint8_t)k, nr_ptx_newreg(p, k), 0};
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (v > 0 && v <= p->f->nvals) {
        s->words[v] = L->words;
        s->nwords[v] = nw;
        if (defer) s->pending[v] = L;
    }
    if (!defer || v <= 0 || v > p->f->nvals)
        for (int h = 0; h < pl->ninstr; h++) ldsm_issue(p, L, h);
    return L->elems;
}

/* A dot that reads ldmatrix words (not fp8 converted to f16 below sm_89). */
static bool dot_reads_words(NrPtx *p, NrOpId dot) {
    const NrOp *o = &p->f->ops[dot];
    const NrType *rt = nr_type(p->m, nr_val_type(p->f, o->results[0]));
    const NrLayout *l = layout_of(p->m, rt);
    NrDtype a = type_dt(nr_type(p->m, nr_val_type(p->f, o->opnds[0])));
    return l && l->kind == NR_LK_MMA && l->version == 2 && !(nr_dt_is_fp8(a) && p->sm < 89);
}

/* The load `op` of value v may be issued by its reader: v's only use is a
 * dot later in the same block, and nothing between them can write shared
 * memory or branch. */
static bool deferrable(NrPtx *p, NrOpId op, NrValId v) {
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (!s->uses) s->uses = nr_count_uses(p->f);
    if (v <= 0 || v >= p->f->nvals || s->uses[v] != 1) return false;
    for (NrOpId o = p->f->ops[op].next; o; o = p->f->ops[o].next) {
        const NrOp *x = &p->f->ops[o];
        for (int i = 0; i < x->nopnds; i++)
            if (x->opnds[i] == v) return x->opc == NR_OP_DOT && i < 2 && dot_reads_words(p, o);
        bool quiet = x->opc == NR_OP_LOCAL_LOAD || x->opc == NR_OP_MEMDESC_INDEX || (nr_op_info[x->opc].flags & NR_OPF_PURE);
        if (x->nregions || !quiet) return false;
    }
    return false;
}

/* Elements of layout lay (value v, loaded by op, 0 for a conversion) from
 * buffer S at base: ldmatrix where it fits a tensor-core operand, else
 * ld.shared. */
static NrPv *load_operand(NrPtx *p, NrOpId op, int lay, const NrSmemMap *S, NrPv base, NrDtype dt, NrValId v) {
    NrLdsmPlan pl;
    if (dt != NR_DT_I1 && is_mma_operand(p->m, p->lays[lay].layout) && nr_ldsm_plan(&p->lays[lay], S, p->a, &pl))
        return ldsm_load(p, &pl, lay, base, dt, v, op && deferrable(p, op, v));
    return nr_smem_load(p, lay, S, base, dt);
}

bool nr_ptx_op_local_load(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId b = o->opnds[0], r = o->results[0];
    const NrType *bt = nr_type(p->m, nr_val_type(p->f, b));
    NrSmemMap S;
    if (bt->kind != NR_TK_MEMDESC || !nr_smem_map(p->m, bt->layout, bt->rank, bt->shape, nr_ptx_smem_es(type_dt(bt)), &S)) {
        nr_ptx_error(p, "local_load: buffer of type %s has no linear shared-memory layout",
                     nr_type_str(p->m, nr_val_type(p->f, b)));
        return false;
    }
    int lay = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (lay < 0) return false;
    if (p->lays[lay].bits != S.bits) {
        nr_ptx_error(p, "local_load: the result's shape is not the buffer's");
        return false;
    }
    NrPtxVal *bv = nr_ptx_val(p, b);
    NrPv *e = load_operand(p, op, lay, &S, bv->e[0], type_dt(bt), r);
    nr_ptx_set(p, r, e, 1 << p->lays[lay].nreg);
    return true;
}

/* --- conversions through swizzled shared memory ----------------------------------------------------------- */
/* The dimension along which a layout's first register steps by one, or -1. */
static int fastest(const NrPtxLay *L) {
    for (int d = 0; L->nreg > 0 && d < L->rank; d++)
        if (L->regb[0] == 1u << L->off[d]) return d;
    return -1;
}

/* Conversions of tensor-core layouts that this file handles: into an
 * mma operand, or out of an mma accumulator. */
static bool tc_conversion(const NrModule *m, int32_t src, int32_t dst) {
    return is_mma_operand(m, dst) ||
           (src > 0 && src < m->nlayouts && m->layouts[src].kind == NR_LK_MMA && m->layouts[dst].kind != NR_LK_MMA);
}

/* The scratch layout of a conversion from S to D: 16-byte
 * vectors along one dimension, swizzled over 128-byte rows.  For an mma
 * operand that dimension is k (so that ldmatrix fits), or for 16-bit types
 * the source's fastest dimension if it is the operand's other one
 * (ldmatrix .trans). */
bool nr_ptx_conv_scratch_map(NrModule *m, const NrPtxLay *S, const NrPtxLay *D, int es, NrSmemMap *out) {
    int rank = D->rank, c = fastest(D);
    if (is_mma_operand(m, D->layout)) {
        const NrLayout *dl = &m->layouts[D->layout];
        int kd = dl->op_idx == 0 ? rank - 1 : rank - 2, od = dl->op_idx == 0 ? rank - 2 : rank - 1;
        int sf = fastest(S);
        c = es == 2 && sf == od ? od : kd;
    }
    if (c < 0) c = rank - 1;
    int32_t order[NR_MAX_RANK];
    order[0] = c;
    for (int d = rank - 1, k = 1; d >= 0; d--)
        if (d != c) order[k++] = d;
    int64_t cols = D->shape[c];
    int64_t vec = 16 / es < 1 ? 1 : 16 / es;
    if (vec > cols) vec = cols;
    int64_t per_phase = 128 / (cols * es);
    if (per_phase < 1) per_phase = 1;
    int64_t max_phase = 8 / per_phase;
    if (max_phase > cols / vec) max_phase = cols / vec;
    if (max_phase < 1) max_phase = 1;
    return nr_smem_map_swizzled(m, rank, D->shape, es, (int)vec, (int)per_phase, (int)max_phase, order, out);
}

static int64_t conv_bytes(const NrPtxLay *D, int es) { return (((int64_t)es << D->bits) + 15) & ~(int64_t)15; }

static NrFlatMap identity_map(void) {
    NrFlatMap id;
    memset(&id, 0, sizeof id);
    id.bits = 32;
    for (int i = 0; i < 32; i++) id.img[i] = 1u << i;
    return id;
}

bool nr_ptx_op_convert_layout(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0], r = o->results[0];
    NrPtxVal *av = nr_ptx_val(p, a);
    int dl = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (dl < 0 || av->lay < 0) {
        if (dl == -1 && av->lay < 0) { /* scalars */
            nr_ptx_set(p, r, av->e, 1);
            return true;
        }
        nr_ptx_error(p, "malformed 'convert_layout'");
        return false;
    }
    const NrType *t = nr_type(p->m, nr_val_type(p->f, r));
    NrDtype dt = type_dt(t);
    int es = nr_ptx_smem_es(dt), n = 1 << p->lays[dl].nreg;
    NrFlatMap id = identity_map();
    int64_t bytes;
    NrConvKind kind = nr_ptx_conv_plan(&p->lays[av->lay], &p->lays[dl], &id, es, &bytes);
    int64_t off = nr_ptx_scratch_off(p, op);
    NrSmemMap S;
    if (kind != NR_CONV_SMEM || !tc_conversion(p->m, p->lays[av->lay].layout, p->lays[dl].layout) ||
        !nr_ptx_conv_scratch_map(p->m, &p->lays[av->lay], &p->lays[dl], es, &S)) {
        nr_ptx_set(p, r, nr_ptx_convert(p, av->e, av->lay, dl, &id, dt, off), n);
        return true;
    }
    NrPv base = nr_ptx_inreg(p, nr_ptx_smem_addr(p, off));
    nr_ptx_bar(p); /* earlier readers of the scratch are done */
    nr_smem_store(p, av->lay, &S, base, dt, av->e);
    nr_ptx_bar(p);
    nr_ptx_set(p, r, load_operand(p, 0, dl, &S, base, dt, r), n);
    return true;
}

/* --- dot on tensor cores ---------------------------------------------------------------------------------- */
/* One operand of a dot: its elements, the words ldmatrix loaded them from
 * (if any) and caches of what the instructions derive from them. */
typedef struct Opnd {
    const NrPv *e;
    NrDtype dt;
    int R;
    NrPv *words;      /* ldmatrix words, word w = registers w * wepw .. */
    int nwords, wepw;
    NrPv *packed;     /* packed words by first register */
    NrPv *head, *tail, *half; /* tf32 head and tail, f16 conversion, by register */
    struct NrPtxLdsmLoad *pending; /* ldmatrix not issued yet */
} Opnd;

static void opnd_init(NrPtx *p, Opnd *o, NrValId v, NrDtype dt) {
    memset(o, 0, sizeof *o);
    NrPtxVal *x = nr_ptx_val(p, v);
    o->e = x->e;
    o->R = x->n;
    o->dt = dt;
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (v > 0 && v <= p->f->nvals && s->words[v] && s->nwords[v] > 0 && x->n % s->nwords[v] == 0) {
        o->words = s->words[v];
        o->nwords = s->nwords[v];
        o->wepw = x->n / s->nwords[v];
        o->pending = s->pending[v];
    }
    o->packed = nr_alloc(p->a, sizeof(NrPv) * (size_t)o->R);
    o->head = nr_alloc(p->a, sizeof(NrPv) * (size_t)o->R);
    o->tail = nr_alloc(p->a, sizeof(NrPv) * (size_t)o->R);
    o->half = nr_alloc(p->a, sizeof(NrPv) * (size_t)o->R);
}

/* A cache slot is filled: cached values are never predicates (kind 0). */
static bool have(NrPv v) { return v.k != 0 || v.r != 0 || v.c != 0; }

/* The tf32 head (part 1) or tail (part 2) of f32 register r. */
static NrPv tf32_part(NrPtx *p, Opnd *o, int r, int part) {
    if (!have(o->head[r])) o->head[r] = nr_pb_un(p, NR_PO_TF32, NR_PT_F32, o->e[r]);
    if (part == 1) return o->head[r];
    if (!have(o->tail[r]))
        o->tail[r] = nr_pb_un(p, NR_PO_TF32, NR_PT_F32, nr_pb_bin(p, NR_PO_SUB, NR_PT_F32, o->e[r], o->head[r]));
    return o->tail[r];
}

/* The 32-bit instruction word of slots s[0..epw) (registers of o):
 * ldmatrix's word when the slots are one, else packed once. */
static NrPv opnd_word(NrPtx *p, Opnd *o, const int32_t *s, int epw, int part, bool f8_as_f16) {
    for (int j = 0; j < epw; j++) ldsm_need(p, o->pending, s[j]);
    if (epw == 1) { /* tf32 */
        NrPv x = part ? tf32_part(p, o, s[0], part) : tf32_part(p, o, s[0], 1);
        return nr_ptx_inreg(p, nr_pb_bits(p, NR_PK_I32, x));
    }
    bool run = s[0] % epw == 0;
    for (int j = 1; j < epw; j++) run = run && s[j] == s[0] + j;
    if (run && !f8_as_f16 && o->words && o->wepw == epw) return o->words[s[0] / epw];
    if (run && have(o->packed[s[0]])) return o->packed[s[0]];
    NrPv w;
    if (f8_as_f16) {
        for (int j = 0; j < 2; j++)
            if (!have(o->half[s[j]])) o->half[s[j]] = nr_pe_cast(p, o->dt, NR_DT_F16, false, o->e[s[j]]);
        w = nr_pb_pack(p, o->half[s[0]], o->half[s[1]]);
    } else {
        NrPv e[4];
        for (int j = 0; j < epw; j++) e[j] = o->e[s[j]];
        w = nr_ptx_pack_word(p, o->dt, e);
    }
    w = nr_ptx_inreg(p, w);
    if (run) o->packed[s[0]] = w;
    return w;
}

static const char *mma_type(NrDtype dt) {
    switch (dt) {
    case NR_DT_F16: return ".f16";
    case NR_DT_BF16: return ".bf16";
    case NR_DT_F32: return ".tf32";
    case NR_DT_I8: return ".s8";
    case NR_DT_U8: return ".u8";
    case NR_DT_F8E4NV: return ".e4m3";
    case NR_DT_F8E5: return ".e5m2";
    default: return NULL;
    }
}

static char *list_of(NrPtx *p, const NrPv *v, int n) {
    char *s = nr_alloc(p->a, (size_t)n * 12 + 4);
    size_t len = 0;
    s[len++] = '{';
    for (int i = 0; i < n; i++) len += (size_t)sprintf(s + len, "%s%s", i ? ", " : "", nr_ptx_reg(p, v[i].r));
    s[len++] = '}';
    s[len] = 0;
    return s;
}

/* Operand dtypes, precision and target to the instruction's mode and type
 * suffixes; false with an error. */
static bool mma_mode(NrPtx *p, NrOpId op, int kw, NrDtype adt, NrDtype bdt, NrDtype rdt, NrMmaMode *mode,
                     const char **at, const char **bt, const char **ct) {
    *mode = NR_MMA_NATIVE;
    *at = mma_type(adt), *bt = mma_type(bdt);
    bool fp8 = nr_dt_is_fp8(adt) && nr_dt_is_fp8(bdt), ints = (adt == NR_DT_I8 || adt == NR_DT_U8) &&
                                                                (bdt == NR_DT_I8 || bdt == NR_DT_U8);
    int want = adt == NR_DT_F32 ? 1 : nr_dt_bits(adt) == 16 ? 2 : 4;
    if (!*at || !*bt || kw != want || (!fp8 && !ints && adt != bdt)) {
        nr_ptx_error(p, "dot: %s x %s operands with k_width %d have no mma.sync form", nr_dtype_info[adt].ir,
                     nr_dtype_info[bdt].ir, kw);
        return false;
    }
    if (adt == NR_DT_F32) {
        const char *prec = nr_op_str(p->f, op, NR_A_PRECISION, "tf32");
        if (strcmp(prec, "tf32x3") == 0) {
            *mode = NR_MMA_TF32X3;
        } else if (strcmp(prec, "tf32") != 0) {
            nr_ptx_error(p, "dot: input_precision \"%s\" is not a tensor-core precision, yet the result has an mma "
                         "layout (internal inconsistency of the layout passes: it needs the FMA layout)",
                         prec);
            return false;
        }
    }
    if (fp8 && p->sm < 89) {
        *mode = NR_MMA_F8_AS_F16;
        *at = *bt = ".f16";
    } else if (fp8 && p->ptx_version < (rdt == NR_DT_F16 ? 87 : 84)) {
        p->ptx_version = rdt == NR_DT_F16 ? 87 : 84;
    }
    bool ok = rdt == NR_DT_F32 ? !ints : rdt == NR_DT_F16 ? (adt == NR_DT_F16 || fp8) : rdt == NR_DT_I32 && ints;
    if (!ok) {
        nr_ptx_error(p, "dot: %s operands cannot accumulate into %s on tensor cores", nr_dtype_info[adt].ir,
                     nr_dtype_info[rdt].ir);
        return false;
    }
    *ct = rdt == NR_DT_F32 ? ".f32" : rdt == NR_DT_F16 ? ".f16" : ".s32";
    return true;
}

static bool mma_dot(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0], b = o->opnds[1], c = o->opnds[2], r = o->results[0];
    const NrType *rt = nr_type(p->m, nr_val_type(p->f, r));
    const NrType *at = nr_type(p->m, nr_val_type(p->f, a)), *btp = nr_type(p->m, nr_val_type(p->f, b));
    const NrLayout *pl = layout_of(p->m, rt), *al = layout_of(p->m, at), *bl = layout_of(p->m, btp);
    if (pl->version != 2) { /* version 3 dots are warp_group_dot ops (ptx_wgmma.c) */
        nr_ptx_error(p, "dot: an mma version %d result belongs to warp_group_dot, not dot", pl->version);
        return false;
    }
    if (!al || !bl || al->kind != NR_LK_DOT_OP || bl->kind != NR_LK_DOT_OP || al->parent != rt->layout ||
        bl->parent != rt->layout || al->op_idx != 0 || bl->op_idx != 1 || al->k_width != bl->k_width) {
        nr_ptx_error(p, "dot: operands of an mma dot must have its dot_op layouts");
        return false;
    }
    NrDtype adt = type_dt(at), bdt = type_dt(btp), rdt = type_dt(rt);
    NrMmaMode mode;
    const char *as, *bs, *cs;
    if (!mma_mode(p, op, al->k_width, adt, bdt, rdt, &mode, &as, &bs, &cs)) return false;
    int cl = nr_ptx_lay(p, nr_val_type(p->f, r));
    NrPtxVal *av = nr_ptx_val(p, a), *bv = nr_ptx_val(p, b), *cv = nr_ptx_val(p, c);
    if (cl < 0 || av->lay < 0 || bv->lay < 0 || cv->lay != cl) {
        nr_ptx_error(p, "malformed 'dot'");
        return false;
    }
    NrMmaPlan plan;
    char why[160];
    if (!nr_mma_plan(&p->lays[av->lay], &p->lays[bv->lay], &p->lays[cl], al->k_width, mode, p->a, &plan, why,
                     sizeof why)) {
        nr_ptx_error(p, "dot: the layouts do not fit mma.sync: %s", why);
        return false;
    }
    Opnd A, B;
    opnd_init(p, &A, a, adt);
    opnd_init(p, &B, b, bdt);
    int epw = plan.shape == NR_MMA_K16 ? 2 : plan.shape == NR_MMA_K8 ? 1 : 4;
    bool f8h = mode == NR_MMA_F8_AS_F16, h16 = rdt == NR_DT_F16;
    int R = 1 << p->lays[cl].nreg;
    NrPv *cur = nr_alloc(p->a, sizeof(NrPv) * (size_t)R); /* elements, or for f16 words by first register */
    NrPk ck = h16 ? NR_PK_I32 : nr_ptx_kind(rdt);
    char ins[96];
    snprintf(ins, sizeof ins, "mma.sync.aligned.m16n8k%d.row.col%s%s%s%s", inst_k[plan.shape], cs, as, bs, cs);
    for (int i = 0; i < plan.ninstr; i++) {
        const NrMmaInstr *in = &plan.ins[i];
        NrPv aw[4], bw[2], cw[4], dw[4];
        for (int j = 0; j < plan.na / epw; j++) aw[j] = opnd_word(p, &A, in->a + j * epw, epw, in->apart, f8h);
        for (int j = 0; j < plan.nb / epw; j++) bw[j] = opnd_word(p, &B, in->b + j * epw, epw, in->bpart, f8h);
        int nc = h16 ? 2 : 4;
        for (int j = 0; j < nc; j++) {
            int reg = in->c[h16 ? 2 * j : j];
            if (!in->first) cw[j] = cur[reg];
            else if (h16) cw[j] = nr_ptx_inreg(p, nr_pb_pack(p, cv->e[in->c[2 * j]], cv->e[in->c[2 * j + 1]]));
            else cw[j] = nr_ptx_inreg(p, cv->e[reg]);
            dw[j] = (NrPv){(uint8_t)ck, nr_ptx_newreg(p, ck), 0};
        }
        nr_ptx_emit(p, "%s %s, %s, %s, %s;", ins, list_of(p, dw, nc), list_of(p, aw, plan.na / epw),
                    list_of(p, bw, plan.nb / epw), list_of(p, cw, nc));
        for (int j = 0; j < nc; j++) cur[in->c[h16 ? 2 * j : j]] = dw[j];
    }
    NrPv *out = nr_alloc(p->a, sizeof(NrPv) * (size_t)R);
    if (plan.ninstr == 0) {
        for (int i = 0; i < R; i++) out[i] = cv->e[i];
    } else if (h16) { /* c0, c1 (c2, c3) share a word keyed by c0 (c2) */
        for (int i = 0; i < plan.ninstr; i++) {
            const NrMmaInstr *in = &plan.ins[i];
            if (!in->first) continue; /* one per tile */
            for (int j = 0; j < 2; j++) nr_pb_unpack(p, cur[in->c[2 * j]], &out[in->c[2 * j]], &out[in->c[2 * j + 1]]);
        }
    } else {
        memcpy(out, cur, sizeof(NrPv) * (size_t)R);
    }
    nr_ptx_set(p, r, out, R);
    return true;
}

bool nr_ptx_op_dot_any(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    const NrType *rt = nr_type(p->m, nr_val_type(p->f, o->results[0]));
    const NrLayout *l = layout_of(p->m, rt);
    if (l && l->kind == NR_LK_MMA) return mma_dot(p, op);
    return nr_ptx_op_dot(p, op);
}

/* --- scratch ------------------------------------------------------------------------------------------------ */
static bool lay_build(NrModule *m, NrFunc *f, NrValId v, int nw, NrArena *a, NrPtxLay *L) {
    (void)a;
    return nr_ptx_lay_of_type(m, nr_val_type(f, v), nw, L);
}

bool nr_ptx_mma_scratch(NrModule *m, NrFunc *f, NrOpId op, int nw, NrArena *a, int64_t *bytes) {
    const NrOp *o = &f->ops[op];
    *bytes = 0;
    switch ((NrOpcode)o->opc) {
    case NR_OP_LOCAL_ALLOC:
    case NR_OP_LOCAL_LOAD:
    case NR_OP_LOCAL_STORE:
    case NR_OP_MEMDESC_INDEX:
    case NR_OP_MEMDESC_TRANS:
    case NR_OP_ASYNC_COPY:
    case NR_OP_ASYNC_COMMIT_GROUP:
    case NR_OP_ASYNC_WAIT:
    case NR_OP_WARP_GROUP_DOT:
    case NR_OP_WARP_GROUP_DOT_WAIT:
    case NR_OP_MBARRIER_INIT:
    case NR_OP_MBARRIER_EXPECT:
    case NR_OP_MBARRIER_WAIT:
    case NR_OP_MBARRIER_INVAL:
    case NR_OP_MBARRIER_ARRIVE:
    case NR_OP_WARP_SPECIALIZE:
    case NR_OP_TMA_LOAD:
    case NR_OP_TMA_STORE:
    case NR_OP_WARPGROUP_ID:
    case NR_OP_TENSORMAP: return true;
    case NR_OP_DOT: {
        const NrLayout *l = o->nresults == 1 ? layout_of(m, nr_type(m, nr_val_type(f, o->results[0]))) : NULL;
        return l && l->kind == NR_LK_MMA;
    }
    case NR_OP_CONVERT_LAYOUT: {
        NrPtxLay S, D;
        if (o->nopnds != 1 || o->nresults != 1 || !lay_build(m, f, o->opnds[0], nw, a, &S) ||
            !lay_build(m, f, o->results[0], nw, a, &D))
            return true;
        int es = nr_ptx_smem_es(type_dt(nr_type(m, nr_val_type(f, o->results[0]))));
        NrFlatMap id = identity_map();
        NrSmemMap sm;
        if (nr_ptx_conv_plan(&S, &D, &id, es, bytes) == NR_CONV_SMEM && tc_conversion(m, S.layout, D.layout) &&
            nr_ptx_conv_scratch_map(m, &S, &D, es, &sm))
            *bytes = conv_bytes(&D, es);
        return true;
    }
    default: return false;
    }
}
