/* ptx_wgmma.c - warp_group_dot on Hopper's warpgroup tensor cores
 * (wgmma.mma_async, sm_90a).
 *
 *   r = warp_group_dot a, b, acc      (result: mma version 3, instr [16, n, k])
 *     wgmma.fence.sync.aligned
 *     per k step, per 64 x n tile of each warpgroup:
 *       wgmma.mma_async.sync.aligned.m64nNkK.D.A.B {d...}, descA | {a...}, descB, p, ...
 *     wgmma.commit_group.sync.aligned; wgmma.wait_group.sync.aligned 0
 *
 * B always, and A when it is a buffer, are read from shared memory through
 * 64-bit matrix descriptors (ptx.h: NrWgmmaDesc); A may instead sit in
 * registers in the dot_op layout of the accumulator's (mma.sync's A
 * fragment, per warp 16 rows of the warpgroup's 64).  The accumulator is
 * updated in place: its registers are the instruction's D operand.
 *
 * The plan (nr_wgmma_plan) says which register feeds which D and A slot of
 * which instruction and where each descriptor starts.  It is built from
 * the linear layouts and the buffers' address maps, and checked against
 * them completely: every D and A slot of every lane of every warp, and
 * every element every descriptor reaches (canonical layout, then the
 * swizzle of the address).  A layout or buffer wgmma cannot read makes
 * the plan fail with a reason instead of emitting wrong code;
 * tests/c/test_wgmma.c runs the plans on its own model of the hardware.
 *
 * The dot is synchronous unless it is marked is_async: it waits for its own
 * group, so its buffers may be reused as soon as it ends (gpu-barriers
 * orders them like local_load's).  An async dot (gpu-pipeline's, in a loop
 * that carries its accumulator) leaves its group in flight: the
 * warp_group_dot_wait that follows (wgmma.wait_group N) makes it ready, and
 * its accumulator, updated in place, is never copied meanwhile.
 * f32 operands in buffers are first rounded to tf32 there (round_tf32), as
 * the interpreter rounds them.
 * Buffers written by ordinary stores or cp.async are made visible to the
 * async proxy that wgmma reads through by fence.proxy.async after the
 * writes (ptx_smem.c), before the barrier that gpu-barriers placed. */
#include "ptx.h"

#include <stdio.h>
#include <string.h>

/* --- the PTX ISA's wgmma fragments ------------------------------------------------------------------------ */
/* D of wgmma.m64nN: slot i of lane (g = lane / 4, t = lane % 4) of warp w
 * (0..3) of the warpgroup. */
static void frag_d(int i, int lane, int w, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    *row = 16 * w + g + 8 * (i >> 1 & 1);
    *col = 8 * (i >> 2) + 2 * t + (i & 1);
}

/* A in registers: each warp holds 16 rows of the 64 as mma.sync's A
 * fragment for k_width kw (m16n8k16 for 16-bit, k8 for tf32, k32 for
 * 8-bit types). */
static void frag_a(int kw, int i, int lane, int w, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    if (kw == 2) *row = g + 8 * (i >> 1 & 1), *col = 2 * t + (i & 1) + 8 * (i >> 2);
    else if (kw == 1) *row = g + 8 * (i & 1), *col = t + 4 * (i >> 1);
    else *row = g + 8 * (i >> 2 & 1), *col = 4 * t + (i & 3) + 16 * (i >> 3);
    *row += 16 * w;
}

static int a_slots(int kw) { return kw == 2 ? 8 : kw == 1 ? 4 : 16; }

/* --- descriptors -------------------------------------------------------------------------------------------- */
static uint64_t swizzle_mode(int s) { return s == 128 ? 1 : s == 64 ? 2 : s == 32 ? 3 : 0; }

uint64_t nr_wgmma_desc_bits(const NrWgmmaDesc *d, uint32_t start) {
    uint64_t x = (uint64_t)((start & 0x3FFFFu) >> 4);
    x |= (uint64_t)((d->lbo >> 4) & 0x3FFF) << 16;
    x |= (uint64_t)((d->sbo >> 4) & 0x3FFF) << 32;
    x |= swizzle_mode(d->swizzle) << 62;
    return x;
}

int64_t nr_wgmma_canonical(const NrWgmmaDesc *d, int r, int k) {
    int64_t s = d->swizzle, es = d->es;
    if (!d->trans) return (r / 8) * d->sbo + (r % 8) * s + k * es;
    return (r * es / s) * d->lbo + (k / 8) * d->sbo + (k % 8) * s + (r * es) % s;
}

uint32_t nr_wgmma_swizzle(int swizzle, uint32_t addr) {
    uint32_t mask = (uint32_t)swizzle / 16 - 1;
    return addr ^ ((addr >> 7) & mask) << 4;
}

/* --- flats ------------------------------------------------------------------------------------------------- */
/* Row-major flat of (x, y) in a 2-D shape of powers of two. */
static uint32_t flat2(const int32_t *shape, int x, int y) {
    return (uint32_t)x * (uint32_t)shape[1] | (uint32_t)y;
}

static void coords2(const NrPtxLay *L, uint32_t f, int *x, int *y) {
    *x = (int)(f >> L->off[0] & (uint32_t)(L->shape[0] - 1));
    *y = (int)(f >> L->off[1] & (uint32_t)(L->shape[1] - 1));
}

static uint32_t xor_of(const uint32_t *b, int n, uint32_t bits) {
    uint32_t f = 0;
    for (int i = 0; i < n; i++)
        if (bits >> i & 1) f ^= b[i];
    return f;
}

static uint32_t thread_flat(const NrPtxLay *L, int lane, int warp) {
    return xor_of(L->laneb, L->nlane, (uint32_t)lane) ^ xor_of(L->warpb, L->nwarp, (uint32_t)warp);
}

static uint32_t map_of(const NrSmemMap *S, uint32_t x) { return xor_of(S->img, S->bits, x); }

/* The register bases of a layout in echelon form (by leading bit), each
 * labelled with the register bits that make it: solves flat -> register. */
typedef struct RegSolver {
    uint32_t piv[32], lab[32];
} RegSolver;

static void reg_solver(const NrPtxLay *L, RegSolver *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < L->nreg; i++) {
        uint32_t v = L->regb[i], l = 1u << i;
        while (v) {
            int b = 31 - __builtin_clz(v);
            if (!s->piv[b]) {
                s->piv[b] = v, s->lab[b] = l;
                break;
            }
            v ^= s->piv[b], l ^= s->lab[b];
        }
    }
}

/* The register holding flat f in the thread whose part is tp; -1 if none. */
static int reg_of(const RegSolver *s, uint32_t f, uint32_t tp) {
    uint32_t x = f ^ tp, l = 0;
    while (x) {
        int b = 31 - __builtin_clz(x);
        if (!s->piv[b]) return -1;
        x ^= s->piv[b], l ^= s->lab[b];
    }
    return (int)l;
}

static bool why_fail(char *why, size_t n, const char *msg) {
    if (n) snprintf(why, n, "%s", msg);
    return false;
}

/* --- the plan ---------------------------------------------------------------------------------------------- */
/* The descriptor of buffer operand `which` (0: A [M, K], 1: B [K, N]);
 * false if wgmma cannot read its layout. */
static bool buffer_desc(const NrWgmmaBuf *B, int which, NrWgmmaDesc *d) {
    memset(d, 0, sizeof *d);
    const NrLayout *l = B->layout;
    if (!l || l->kind != NR_LK_SHARED || !l->nvmma || l->rank != 2) return false;
    int s = l->swizzle_bytes, fast = l->order[0];
    if (s != 32 && s != 64 && s != 128) return false;
    int kdim = which == 0 ? 1 : 0;
    d->trans = fast != kdim;
    if (d->trans && B->es != 2) return false; /* only 16-bit types transpose */
    if ((int64_t)B->shape[fast] * B->es < s) return false;
    d->swizzle = s;
    d->es = B->es;
    d->sbo = 8 * (int64_t)s;
    d->lbo = d->trans ? (int64_t)B->shape[1 - fast] * s : 16;
    return d->lbo < (int64_t)1 << 18 && d->sbo < (int64_t)1 << 18;
}

/* The image in B's map of element (r, k): r along M (A) or N (B). */
static uint32_t elem_img(const NrWgmmaBuf *B, int which, int r, int k) {
    return map_of(&B->map, which == 0 ? flat2(B->shape, r, 0) : flat2(B->shape, 0, r)) ^
           map_of(&B->map, which == 0 ? flat2(B->shape, 0, k) : flat2(B->shape, k, 0));
}

/* desc_reaches when both sides are affine over the bits of (r, k): the canonical offsets
 * of single bits of r and k are distinct powers of two (every term of the canonical
 * layout is a bit field times a power of two, so then the offset of (r, k) is the OR of
 * those of its bits), and start shares no bit with them (start + offset = start ^
 * offset).  The swizzle and the map are linear, so (0, 0) and each single bit decide.
 * -1 when the conditions do not hold. */
static int desc_reaches_linear(const NrWgmmaDesc *d, const NrWgmmaBuf *B, int which, uint32_t start, int r0,
                               int k0, int rows, int kin) {
    if (rows & (rows - 1) || kin & (kin - 1) || r0 % rows || k0 % kin) return -1;
    int64_t used = 0;
    for (int r = 1; r < rows; r <<= 1) {
        int64_t c = nr_wgmma_canonical(d, r, 0);
        if (c <= 0 || c & (c - 1) || c & used || c >= (int64_t)1 << 31) return -1;
        used |= c;
    }
    for (int k = 1; k < kin; k <<= 1) {
        int64_t c = nr_wgmma_canonical(d, 0, k);
        if (c <= 0 || c & (c - 1) || c & used || c >= (int64_t)1 << 31) return -1;
        used |= c;
    }
    if (nr_wgmma_canonical(d, 0, 0) != 0 || (start & (uint32_t)used)) return -1;
    uint32_t es = (uint32_t)d->es, f0 = nr_wgmma_swizzle(d->swizzle, start), g0 = es * elem_img(B, which, r0, k0);
    if (f0 != g0) return 0;
    for (int r = 1; r < rows; r <<= 1) {
        uint32_t f = nr_wgmma_swizzle(d->swizzle, start ^ (uint32_t)nr_wgmma_canonical(d, r, 0));
        if ((f ^ f0) != ((es * elem_img(B, which, r0 + r, k0)) ^ g0)) return 0;
    }
    for (int k = 1; k < kin; k <<= 1) {
        uint32_t f = nr_wgmma_swizzle(d->swizzle, start ^ (uint32_t)nr_wgmma_canonical(d, 0, k));
        if ((f ^ f0) != ((es * elem_img(B, which, r0, k0 + k)) ^ g0)) return 0;
    }
    return 1;
}

/* desc_reaches, element by element. */
static bool desc_reaches_all(const NrWgmmaDesc *d, const NrWgmmaBuf *B, int which, uint32_t start, int r0, int k0,
                             int rows, int kin) {
    /* The map is linear over the flat's bits and the flat's row and column bits are
     * disjoint: each element's image is its row's xor its column's. */
    uint32_t kimg[256];
    if (kin > 256) return false;
    for (int k = 0; k < kin; k++)
        kimg[k] = map_of(&B->map, which == 0 ? flat2(B->shape, 0, k0 + k) : flat2(B->shape, k0 + k, 0));
    for (int r = 0; r < rows; r++) {
        uint32_t rimg = map_of(&B->map, which == 0 ? flat2(B->shape, r0 + r, 0) : flat2(B->shape, 0, r0 + r));
        for (int k = 0; k < kin; k++) {
            uint32_t addr = nr_wgmma_swizzle(d->swizzle, start + (uint32_t)nr_wgmma_canonical(d, r, k));
            if (addr != (uint32_t)d->es * (rimg ^ kimg[k])) return false;
        }
    }
    return true;
}

/* Every element of the tile the descriptor of instruction tile origin
 * `origin` (an element offset in B's map) reaches is the one of (r0 + r,
 * k0 + k) - rows r along M (A) or N (B), rows x kin of them. */
static bool desc_reaches(const NrWgmmaDesc *d, const NrWgmmaBuf *B, int which, uint32_t origin, int r0, int k0,
                         int rows, int kin) {
    uint32_t start = (uint32_t)d->es * origin;
    int lin = desc_reaches_linear(d, B, which, start, r0, k0, rows, kin);
    if (lin >= 0) return lin == 1;
    return desc_reaches_all(d, B, which, start, r0, k0, rows, kin);
}

/* Warp images of a buffer operand: warp bits 0 and 1 stay in the
 * warpgroup (0); the others shift its tile by the accumulator's M (A) or
 * N (B) offset of that bit. */
static void desc_warps(const NrPtxLay *C, const NrWgmmaBuf *B, int which, NrWgmmaDesc *d) {
    d->nwarp = C->nwarp;
    for (int j = 0; j < C->nwarp; j++) {
        int m, nn;
        coords2(C, C->warpb[j], &m, &nn);
        d->warp[j] = j < 2 ? 0 : map_of(&B->map, which == 0 ? flat2(B->shape, m, 0) : flat2(B->shape, 0, nn));
    }
}

bool nr_wgmma_plan(const NrLayout *cl, const NrPtxLay *C, const NrPtxLay *Ar, int kw, const NrWgmmaBuf *Ab,
                   const NrWgmmaBuf *Bb, NrArena *a, NrWgmmaPlan *out, char *why, size_t n) {
    memset(out, 0, sizeof *out);
    if (!cl || cl->kind != NR_LK_MMA || cl->version != 3 || C->rank != 2)
        return why_fail(why, n, "the accumulator has no 2-D mma version 3 layout");
    if ((Ar == NULL) == (Ab == NULL) || !Bb) return why_fail(why, n, "A must be in registers or a buffer, B a buffer");
    int ni = cl->instr[1], kin = cl->instr[2];
    if (kw != 1 && kw != 2 && kw != 4) return why_fail(why, n, "k_width must be 1, 2 or 4");
    if (kin != 8 * kw) return why_fail(why, n, "the instruction's k does not match the operands' k_width");
    int M = C->shape[0], N = C->shape[1], K = Bb->shape[0];
    const int32_t *as = Ar ? Ar->shape : Ab->shape;
    if (as[0] != M || as[1] != K || Bb->shape[1] != N) return why_fail(why, n, "operand shapes do not match the result");
    if (M % 64 || N % ni || K % kin || ni < 8 || ni > 256 || ni % 8)
        return why_fail(why, n, "M, N, K are not multiples of the instruction's 64 x n x k");
    if (C->nlane != 5 || C->nwarp < 2) return why_fail(why, n, "wgmma needs whole warpgroups (4 warps)");
    int R = 1 << C->nreg, nwarps = 1 << C->nwarp, nd = ni / 2;
    for (int r = 0; r < R; r++)
        if (C->dup[r]) return why_fail(why, n, "the accumulator layout repeats registers");
    if (!buffer_desc(Bb, 1, &out->B) || (Ab && !buffer_desc(Ab, 0, &out->A)))
        return why_fail(why, n, "a buffer is not an nvmma layout wgmma reads (32-, 64- or 128-byte swizzle, "
                                "transposed only for 16-bit types)");
    desc_warps(C, Bb, 1, &out->B);
    if (Ab) desc_warps(C, Ab, 0, &out->A);
    out->n = ni, out->k = kin, out->nd = nd, out->a_regs = Ar != NULL, out->na = a_slots(kw);
    /* Tiles: the registers of thread 0 at a 64 x n origin. */
    int ntiles = 0;
    int32_t *origin = nr_alloc(a, sizeof(int32_t) * (size_t)R);
    for (int r = 0; r < R; r++) {
        int m0, n0;
        coords2(C, C->regflat[r], &m0, &n0);
        if (m0 % 64 == 0 && n0 % ni == 0) origin[ntiles++] = r;
    }
    if (ntiles * nd != R) return why_fail(why, n, "the accumulator's registers do not form whole 64 x n tiles");
    RegSolver cs, asol;
    reg_solver(C, &cs);
    if (Ar) reg_solver(Ar, &asol);
    int32_t **dregs = nr_alloc(a, sizeof(int32_t *) * (size_t)ntiles);
    uint8_t *used = nr_alloc(a, (size_t)R);
    for (int t = 0; t < ntiles; t++) {
        int m0, n0;
        coords2(C, C->regflat[origin[t]], &m0, &n0);
        dregs[t] = nr_alloc(a, sizeof(int32_t) * (size_t)nd);
        for (int i = 0; i < nd; i++) {
            int row, col;
            frag_d(i, 0, 0, &row, &col);
            int r = reg_of(&cs, flat2(C->shape, m0 + row, n0 + col), 0);
            if (r < 0 || used[r]++) return why_fail(why, n, "the accumulator layout does not hold wgmma's D fragments");
            dregs[t][i] = r;
        }
        /* every lane of every warp holds its D slots in these registers */
        for (int w = 0; w < nwarps; w++) {
            int wm, wn;
            coords2(C, C->regflat[origin[t]] ^ xor_of(C->warpb, C->nwarp, (uint32_t)(w & ~3)), &wm, &wn);
            if (wm % 64 || wn % ni) return why_fail(why, n, "a warpgroup's tile is not aligned to the instruction");
            for (int lane = 0; lane < 32; lane++) {
                uint32_t tp = thread_flat(C, lane, w);
                for (int i = 0; i < nd; i++) {
                    int row, col;
                    frag_d(i, lane, w & 3, &row, &col);
                    if ((C->regflat[dregs[t][i]] ^ tp) != flat2(C->shape, wm + row, wn + col))
                        return why_fail(why, n, "the accumulator layout does not hold wgmma's D fragments");
                }
            }
        }
    }
    int nk = K / kin;
    out->ninstr = nk * ntiles;
    out->ins = nr_alloc(a, sizeof(NrWgmmaInstr) * (size_t)(out->ninstr ? out->ninstr : 1));
    int k = 0;
    for (int kk = 0; kk < nk; kk++)
        for (int t = 0; t < ntiles; t++) {
            NrWgmmaInstr *in = &out->ins[k++];
            int m0, n0, k0 = kk * kin;
            coords2(C, C->regflat[origin[t]], &m0, &n0);
            in->d = dregs[t];
            in->first = kk == 0;
            in->boff = map_of(&Bb->map, flat2(Bb->shape, k0, n0));
            if (Ab) in->aoff = map_of(&Ab->map, flat2(Ab->shape, m0, k0));
            for (int w = 0; w < nwarps; w += 4) {
                int wm, wn;
                coords2(C, C->regflat[origin[t]] ^ xor_of(C->warpb, C->nwarp, (uint32_t)w), &wm, &wn);
                uint32_t wbits = (uint32_t)w;
                if (!desc_reaches(&out->B, Bb, 1, in->boff ^ xor_of(out->B.warp, out->B.nwarp, wbits), wn, k0, ni, kin))
                    return why_fail(why, n, "B's descriptor does not reach the elements of its tile");
                if (Ab && !desc_reaches(&out->A, Ab, 0, in->aoff ^ xor_of(out->A.warp, out->A.nwarp, wbits), wm, k0, 64,
                                        kin))
                    return why_fail(why, n, "A's descriptor does not reach the elements of its tile");
            }
            if (!Ar) continue;
            if (Ar->nlane != 5 || Ar->nwarp != C->nwarp) return why_fail(why, n, "A's layout does not match the result's");
            for (int i = 0; i < out->na; i++) {
                int row, col;
                frag_a(kw, i, 0, 0, &row, &col);
                int r = reg_of(&asol, flat2(Ar->shape, m0 + row, k0 + col), 0);
                if (r < 0) return why_fail(why, n, "an A element of an instruction is in no register");
                in->a[i] = r;
            }
            for (int w = 0; w < nwarps; w++) {
                int wm, wn;
                coords2(C, C->regflat[origin[t]] ^ xor_of(C->warpb, C->nwarp, (uint32_t)(w & ~3)), &wm, &wn);
                for (int lane = 0; lane < 32; lane++) {
                    uint32_t tp = thread_flat(Ar, lane, w);
                    for (int i = 0; i < out->na; i++) {
                        int row, col;
                        frag_a(kw, i, lane, w & 3, &row, &col);
                        if ((Ar->regflat[in->a[i]] ^ tp) != flat2(Ar->shape, wm + row, k0 + col))
                            return why_fail(why, n, "A's layout does not hold wgmma's A fragments");
                    }
                }
            }
        }
    return true;
}

/* --- emission ---------------------------------------------------------------------------------------------- */
static NrDtype type_dt(const NrType *t) { return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype; }

static const char *wg_type(NrDtype dt) {
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

/* The buffer operand v as the plan takes it; false with an error. */
static bool buffer_of(NrPtx *p, NrValId v, NrWgmmaBuf *B) {
    memset(B, 0, sizeof *B);
    const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
    if (t->kind != NR_TK_MEMDESC || t->rank != 2 || t->layout <= 0 || t->layout >= p->m->nlayouts) return false;
    B->layout = &p->m->layouts[t->layout];
    B->shape[0] = t->shape[0], B->shape[1] = t->shape[1];
    B->es = nr_ptx_smem_es(type_dt(t));
    return nr_smem_map(p->m, t->layout, 2, t->shape, B->es, &B->map);
}

/* Descriptors of one operand: a base descriptor per distinct address
 * register, plus the instruction's immediate offset. */
typedef struct DescGen {
    const NrWgmmaDesc *d;
    NrSmemAddr g;
    int n;
    int32_t addr[32], desc[32];
} DescGen;

static void descgen_init(NrPtx *p, DescGen *dg, const NrWgmmaDesc *d, NrPv base) {
    memset(dg, 0, sizeof *dg);
    dg->d = d;
    uint32_t lanes[5] = {0};
    nr_smem_addr_init(p, &dg->g, base, lanes, 5, d->warp, d->nwarp, d->es);
}

static int32_t desc_of(NrPtx *p, DescGen *dg, uint32_t off) {
    int64_t imm;
    NrPv a = nr_ptx_inreg(p, nr_smem_addr(p, &dg->g, off, &imm));
    int32_t base = 0;
    for (int i = 0; i < dg->n && !base; i++)
        if (dg->addr[i] == a.r) base = dg->desc[i];
    if (!base) {
        /* lo: (address & 0x3FFFF) >> 4 | LBO field; hi: SBO field | swizzle mode */
        uint64_t k = nr_wgmma_desc_bits(dg->d, 0);
        NrPv x = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0}, lo = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
        nr_ptx_emit(p, "bfe.u32 %s, %s, 4, 14;", nr_ptx_reg(p, x.r), nr_ptx_reg(p, a.r));
        nr_ptx_emit(p, "or.b32 %s, %s, %u;", nr_ptx_reg(p, lo.r), nr_ptx_reg(p, x.r), (uint32_t)k);
        base = nr_ptx_newreg(p, NR_PK_I64);
        nr_ptx_emit(p, "mov.b64 %s, {%s, %u};", nr_ptx_reg(p, base), nr_ptx_reg(p, lo.r), (uint32_t)(k >> 32));
        if (dg->n < (int)NR_COUNTOF(dg->addr)) {
            dg->addr[dg->n] = a.r;
            dg->desc[dg->n++] = base;
        }
    }
    if (!imm) return base;
    int32_t d = nr_ptx_newreg(p, NR_PK_I64);
    nr_ptx_emit(p, "add.s64 %s, %s, %lld;", nr_ptx_reg(p, d), nr_ptx_reg(p, base), (long long)(imm >> 4));
    return d;
}

static char *reg_list(NrPtx *p, const NrPv *v, int n) { return nr_ptx_reg_list(p, v, n, true); }

/* tf32 operands in a buffer are rounded there, in place, before wgmma
 * reads them (it would drop their low mantissa bits; the interpreter
 * rounds to nearest, ties away, as cvt.rna.tf32.f32): every thread rounds
 * 16-byte chunks of the buffer's bytes, then fence.proxy.async and a
 * barrier hand them to wgmma.  The buffer is complete and visible here:
 * gpu-barriers put a barrier between its writers and this dot. */
static void round_tf32(NrPtx *p, NrPv base, int64_t bytes) {
    int threads = 32 * p->num_warps;
    NrPv tid = {NR_PK_I32, p->tid, 0};
    NrPv at = nr_ptx_inreg(p, nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base,
                                        nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, tid, nr_pv_i32(4))));
    int64_t chunks = bytes / 16;
    for (int64_t c = 0; c < chunks; c += threads) {
        NrPv w[4];
        for (int j = 0; j < 4; j++) w[j] = (NrPv){NR_PK_F32, nr_ptx_newreg(p, NR_PK_F32), 0};
        int64_t off = c * 16;
        NrPv pred = nr_pv_pred(true);
        if (c + threads > chunks) /* a last partial round */
            pred = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_LT, NR_PT_U32, tid, nr_pv_i32(chunks - c)));
        char g[24] = "";
        if (pred.r) snprintf(g, sizeof g, "@%s ", nr_ptx_reg(p, pred.r));
        nr_ptx_emit(p, "%sld.shared.v4.b32 {%s, %s, %s, %s}, [%s+%lld];", g, nr_ptx_reg(p, w[0].r), nr_ptx_reg(p, w[1].r),
                    nr_ptx_reg(p, w[2].r), nr_ptx_reg(p, w[3].r), nr_ptx_reg(p, at.r), (long long)off);
        NrPv r[4];
        for (int j = 0; j < 4; j++) r[j] = nr_ptx_inreg(p, nr_pb_un(p, NR_PO_TF32, NR_PT_F32, w[j]));
        nr_ptx_emit(p, "%sst.shared.v4.b32 [%s+%lld], {%s, %s, %s, %s};", g, nr_ptx_reg(p, at.r), (long long)off,
                    nr_ptx_reg(p, r[0].r), nr_ptx_reg(p, r[1].r), nr_ptx_reg(p, r[2].r), nr_ptx_reg(p, r[3].r));
    }
}

/* Every element of v sits in a register of its own. */
static bool own_registers(const NrPtxVal *v) {
    for (int i = 0; i < v->n; i++) {
        if (!v->e[i].r) return false;
        for (int j = 0; j < i; j++)
            if (v->e[j].r == v->e[i].r) return false;
    }
    return true;
}

/* The accumulator may be updated in place: a loop-carried value (a for
 * body's argument) whose only use is this dot, every element its own
 * register. */
static bool in_place(NrPtx *p, NrValId c, const NrPtxVal *cv) {
    NrFunc *f = p->f;
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (!s->uses) s->uses = nr_count_uses(f);
    if (f->vals[c].def || s->uses[c] != 1) return false;
    NrOpId parent = f->blocks[f->vals[c].block].parent;
    return parent && f->ops[parent].opc == NR_OP_FOR && own_registers(cv);
}

/* For an async dot whose accumulator c is computed in the loop body
 * (attention's acc * alpha, gpu-pipeline's chain_async_dot): the loop
 * argument its result r is yielded into, when c and r have no other use,
 * the argument's elements have registers of their own and nothing after
 * the dot reads the argument.  The dot then accumulates in that
 * argument's registers (c is copied there first), so that no copy at the
 * loop's back edge reads registers the dot still writes. */
static const NrPtxVal *carried_target(NrPtx *p, NrOpId op, NrValId c, NrValId r) {
    NrFunc *f = p->f;
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    if (!s->uses) s->uses = nr_count_uses(f);
    if (s->uses[c] != 1 || s->uses[r] != 1) return NULL;
    NrBlockId body = f->ops[op].block;
    NrOpId parent = f->blocks[body].parent, y = nr_block_terminator(f, body);
    if (!parent || f->ops[parent].opc != NR_OP_FOR || !y || f->ops[y].opc != NR_OP_YIELD) return NULL;
    int slot = -1;
    for (int i = 0; i < f->ops[y].nopnds; i++)
        if (f->ops[y].opnds[i] == r) slot = i;
    if (slot < 0 || slot + 1 >= f->blocks[body].nargs) return NULL;
    NrValId acc = f->blocks[body].args[slot + 1];
    if (nr_val_type(f, acc) != nr_val_type(f, r)) return NULL;
    /* (nor the warp_group_dot_wait of it before the dot, which shares its registers) */
    NrValId waited = NR_NONE;
    for (NrOpId w = f->blocks[body].first; w != op; w = f->ops[w].next)
        if (f->ops[w].opc == NR_OP_WARP_GROUP_DOT_WAIT && f->ops[w].nopnds == 1 && f->ops[w].opnds[0] == acc)
            waited = f->ops[w].results[0];
    for (NrOpId o = f->ops[op].next; o && o != y; o = f->ops[o].next)
        if (nr_op_reads(f, o, acc) || (waited && nr_op_reads(f, o, waited))) return NULL;
    const NrPtxVal *av = nr_ptx_val(p, acc);
    return own_registers(av) ? av : NULL;
}

/* Instruction suffix and the operands after the descriptors, by types. */
static bool wg_types(NrPtx *p, NrOpId op, NrDtype adt, NrDtype bdt, NrDtype rdt, char *ins, size_t n, int ni, int kin,
                     bool *ints, bool *trans_ok) {
    const char *at = wg_type(adt), *bt = wg_type(bdt);
    bool fp8 = nr_dt_is_fp8(adt) && nr_dt_is_fp8(bdt);
    *ints = (adt == NR_DT_I8 || adt == NR_DT_U8) && (bdt == NR_DT_I8 || bdt == NR_DT_U8);
    *trans_ok = adt == NR_DT_F16 || adt == NR_DT_BF16;
    if (!at || !bt || (!fp8 && !*ints && adt != bdt)) {
        nr_ptx_error(p, "warp_group_dot: %s x %s operands have no wgmma form", nr_dtype_info[adt].ir,
                     nr_dtype_info[bdt].ir);
        return false;
    }
    if (adt == NR_DT_F32 && strcmp(nr_op_str(p->f, op, NR_A_PRECISION, "tf32"), "tf32") != 0) {
        nr_ptx_error(p, "warp_group_dot: input_precision \"%s\" has no wgmma form",
                     nr_op_str(p->f, op, NR_A_PRECISION, "tf32"));
        return false;
    }
    bool ok = rdt == NR_DT_F32 ? !*ints : rdt == NR_DT_F16 ? (adt == NR_DT_F16 || fp8) : rdt == NR_DT_I32 && *ints;
    if (!ok) {
        nr_ptx_error(p, "warp_group_dot: %s operands cannot accumulate into %s", nr_dtype_info[adt].ir,
                     nr_dtype_info[rdt].ir);
        return false;
    }
    const char *ct = rdt == NR_DT_F32 ? ".f32" : rdt == NR_DT_F16 ? ".f16" : ".s32";
    snprintf(ins, n, "wgmma.mma_async.sync.aligned.m64n%dk%d%s%s%s", ni, kin, ct, at, bt);
    return true;
}

/* One warp_group_dot being emitted. */
typedef struct Wg {
    NrWgmmaPlan pl;
    NrDtype adt;
    int R;                     /* accumulator registers */
    bool a_buf, h16, ints, trans_ok;
    NrPtxVal *av, *cv;
    char ins[128];             /* wgmma.mma_async...m64nNkK.D.A.B */
} Wg;

/* D registers, by accumulator register: its own (in place), fresh copies,
 * or for f16 accumulators f16x2 words keyed by the first of each pair. */
static NrPv *acc_regs(NrPtx *p, Wg *w, NrValId c) {
    NrPv *d = nr_alloc(p->a, sizeof(NrPv) * (size_t)w->R);
    const NrPv *e = w->cv->e;
    if (!w->h16 && in_place(p, c, w->cv)) {
        memcpy(d, e, sizeof(NrPv) * (size_t)w->R);
    } else if (!w->h16) {
        for (int i = 0; i < w->R; i++) {
            d[i] = (NrPv){e[i].k, nr_ptx_newreg(p, (NrPk)e[i].k), 0};
            nr_pb_mov_to(p, d[i], e[i]);
        }
    } else {
        for (int i = 0; i < w->pl.ninstr; i++) {
            if (!w->pl.ins[i].first) continue;
            for (int j = 0; j < w->pl.nd; j += 2) {
                int r0 = w->pl.ins[i].d[j], r1 = w->pl.ins[i].d[j + 1];
                d[r0] = nr_pb_mov(p, nr_ptx_inreg(p, nr_pb_pack(p, e[r0], e[r1])));
            }
        }
    }
    return d;
}

/* A in registers: the four 32-bit words of each instruction's slots (tf32
 * rounded as the interpreter rounds). */
static NrPv *a_words(NrPtx *p, const Wg *w) {
    int epw = 4 / nr_ptx_smem_es(w->adt);
    NrPv *aw = nr_alloc(p->a, sizeof(NrPv) * (size_t)w->pl.ninstr * 4);
    for (int i = 0; i < w->pl.ninstr; i++)
        for (int k = 0; k < 4; k++) {
            NrPv e[4];
            for (int j = 0; j < epw; j++) {
                e[j] = w->av->e[w->pl.ins[i].a[k * epw + j]];
                if (w->adt == NR_DT_F32) e[j] = nr_pb_un(p, NR_PO_TF32, NR_PT_F32, e[j]);
            }
            aw[i * 4 + k] = nr_ptx_inreg(p, nr_ptx_pack_word(p, w->adt, e));
        }
    return aw;
}

/* wgmma.fence, then every instruction of the plan. */
static void issue(NrPtx *p, const Wg *w, NrPv *d, const NrPv *aw, NrPv abase, NrPv bbase) {
    const NrWgmmaPlan *pl = &w->pl;
    NrPv scale_d = nr_ptx_inreg(p, nr_pv_pred(true));
    DescGen ga, gb;
    memset(&ga, 0, sizeof ga);
    descgen_init(p, &gb, &pl->B, bbase);
    if (w->a_buf) descgen_init(p, &ga, &pl->A, abase);
    nr_ptx_emit(p, "wgmma.fence.sync.aligned;");
    int nwords = w->h16 ? pl->nd / 2 : pl->nd;
    NrPv *dl = nr_alloc(p->a, sizeof(NrPv) * (size_t)nwords);
    char tail[48];
    if (w->ints) snprintf(tail, sizeof tail, "%s", "");
    else if (!w->trans_ok) snprintf(tail, sizeof tail, ", 1, 1");
    else if (w->a_buf) snprintf(tail, sizeof tail, ", 1, 1, %d, %d", pl->A.trans, pl->B.trans);
    else snprintf(tail, sizeof tail, ", 1, 1, %d", pl->B.trans);
    for (int i = 0; i < pl->ninstr; i++) {
        const NrWgmmaInstr *in = &pl->ins[i];
        for (int j = 0; j < nwords; j++) dl[j] = d[in->d[w->h16 ? 2 * j : j]];
        /* (register names live in a short ring: format them last) */
        int32_t dra = w->a_buf ? desc_of(p, &ga, in->aoff) : 0, drb = desc_of(p, &gb, in->boff);
        const char *dlist = reg_list(p, dl, nwords);
        const char *da = w->a_buf ? nr_strdup(p->a, nr_ptx_reg(p, dra)) : reg_list(p, aw + i * 4, 4);
        const char *db = nr_strdup(p->a, nr_ptx_reg(p, drb));
        nr_ptx_emit(p, "%s %s, %s, %s, %s%s;", w->ins, dlist, da, db, nr_ptx_reg(p, scale_d.r), tail);
    }
}

/* The result's elements: D itself, or the f16 words unpacked. */
static NrPv *result_of(NrPtx *p, const Wg *w, const NrPv *d) {
    NrPv *res = nr_alloc(p->a, sizeof(NrPv) * (size_t)w->R);
    if (!w->h16) {
        memcpy(res, d, sizeof(NrPv) * (size_t)w->R);
        return res;
    }
    for (int i = 0; i < w->pl.ninstr; i++) {
        if (!w->pl.ins[i].first) continue;
        for (int j = 0; j < w->pl.nd; j += 2)
            nr_pb_unpack(p, d[w->pl.ins[i].d[j]], &res[w->pl.ins[i].d[j]], &res[w->pl.ins[i].d[j + 1]]);
    }
    return res;
}

/* Plans by the types of the dot's operands and result (which fix every
 * input of nr_wgmma_plan): a kernel repeats its dots (a loop in parts,
 * inlined calls), and checking a plan visits every lane of every warp. */
struct NrPtxWgPlan {
    NrTypeId a, b, r;
    int kw;
    NrWgmmaPlan pl;
};

static bool find_plan(NrPtx *p, NrOpId op, int kw, NrWgmmaPlan *out) {
    const NrOp *o = &p->f->ops[op];
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    NrTypeId a = nr_val_type(p->f, o->opnds[0]), b = nr_val_type(p->f, o->opnds[1]);
    NrTypeId r = nr_val_type(p->f, o->results[0]);
    for (int i = 0; i < s->nplans; i++)
        if (s->plans[i].a == a && s->plans[i].b == b && s->plans[i].r == r && s->plans[i].kw == kw) {
            *out = s->plans[i].pl; /* (its arrays are read-only: shared) */
            return true;
        }
    return false;
}

static void keep_plan(NrPtx *p, NrOpId op, int kw, const NrWgmmaPlan *pl) {
    const NrOp *o = &p->f->ops[op];
    struct NrPtxMma *s = nr_ptx_mma_state(p);
    struct NrPtxWgPlan *e = NR_PUSH(p->a, s->plans, s->nplans, s->capplans);
    e->a = nr_val_type(p->f, o->opnds[0]);
    e->b = nr_val_type(p->f, o->opnds[1]);
    e->r = nr_val_type(p->f, o->results[0]);
    e->kw = kw;
    e->pl = *pl;
}

bool nr_ptx_op_warp_group_dot(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    NrValId a = o->opnds[0], b = o->opnds[1], c = o->opnds[2], r = o->results[0];
    if (p->sm != 90 || !p->sm_a) {
        nr_ptx_error(p, "warp_group_dot needs the sm_90a target (wgmma), not sm_%d%s", p->sm, p->sm_a ? "a" : "");
        return false;
    }
    const NrType *rt = nr_type(p->m, nr_val_type(p->f, r)), *at = nr_type(p->m, nr_val_type(p->f, a));
    const NrType *bt = nr_type(p->m, nr_val_type(p->f, b));
    Wg w;
    memset(&w, 0, sizeof w);
    int cl = nr_ptx_lay(p, nr_val_type(p->f, r));
    w.cv = nr_ptx_val(p, c);
    if (cl < 0 || w.cv->lay != cl || rt->layout <= 0) {
        nr_ptx_error(p, "malformed 'warp_group_dot'");
        return false;
    }
    const NrLayout *rl = &p->m->layouts[rt->layout];
    NrWgmmaBuf Ab, Bb;
    const NrPtxLay *Ar = NULL;
    int kw = nr_dtype_info[type_dt(bt)].bytes >= 4 ? 1 : 4 / nr_dtype_info[type_dt(bt)].bytes;
    w.a_buf = at->kind == NR_TK_MEMDESC;
    if (!buffer_of(p, b, &Bb) || (w.a_buf && !buffer_of(p, a, &Ab))) {
        nr_ptx_error(p, "warp_group_dot: an operand buffer has no linear shared-memory layout");
        return false;
    }
    if (!w.a_buf) {
        w.av = nr_ptx_val(p, a);
        if (w.av->lay < 0 || at->layout <= 0) {
            nr_ptx_error(p, "malformed 'warp_group_dot'");
            return false;
        }
        Ar = &p->lays[w.av->lay];
        kw = p->m->layouts[at->layout].k_width;
    }
    w.adt = type_dt(at);
    NrDtype rdt = type_dt(rt);
    if (!wg_types(p, op, w.adt, type_dt(bt), rdt, w.ins, sizeof w.ins, rl->instr[1], rl->instr[2], &w.ints,
                  &w.trans_ok))
        return false;
    if (!find_plan(p, op, kw, &w.pl)) {
        char why[160];
        if (!nr_wgmma_plan(rl, &p->lays[cl], Ar, kw, w.a_buf ? &Ab : NULL, &Bb, p->a, &w.pl, why, sizeof why)) {
            nr_ptx_error(p, "warp_group_dot: the layouts do not fit wgmma: %s", why);
            return false;
        }
        keep_plan(p, op, kw, &w.pl);
    }
    w.R = 1 << p->lays[cl].nreg;
    w.h16 = rdt == NR_DT_F16;
    bool async = nr_op_int(p->f, op, NR_A_IS_ASYNC, 0) != 0;
    const NrPtxVal *carried = NULL;
    bool own = !w.h16 && in_place(p, c, w.cv);
    if (async && !w.h16 && !own) carried = carried_target(p, op, c, r);
    /* (a constant accumulator, Q K^T's zeros, is copied into fresh registers no group writes) */
    NrOpId cdef = p->f->vals[c].def;
    bool fresh = !w.h16 && cdef && p->f->ops[cdef].opc == NR_OP_CONST;
    if (async && !fresh && (w.h16 || (!own && (!carried || carried->n != w.R)))) {
        /* its accumulator may still be written by the previous dot: it cannot be copied */
        nr_ptx_error(p, "warp_group_dot: an async dot needs a 32-bit accumulator that is loop-carried, or "
                        "computed in the loop and yielded back, and that it alone uses (internal inconsistency "
                        "of gpu-pipeline)");
        return false;
    }
    NrPv *d;
    if (carried) { /* accumulate in the carried registers, which the previous group left at its wait */
        d = nr_alloc(p->a, sizeof(NrPv) * (size_t)w.R);
        for (int i = 0; i < w.R; i++) {
            d[i] = carried->e[i];
            nr_pb_mov_to(p, d[i], w.cv->e[i]);
        }
    } else {
        d = acc_regs(p, &w, c);
    }
    NrPv *aw = w.a_buf ? NULL : a_words(p, &w);
    NrPv abase = w.a_buf ? nr_ptx_val(p, a)->e[0] : nr_pv_i32(0), bbase = nr_ptx_val(p, b)->e[0];
    if (w.adt == NR_DT_F32) {
        if (w.a_buf) round_tf32(p, abase, Ab.map.bytes);
        round_tf32(p, bbase, Bb.map.bytes);
        nr_ptx_emit(p, "fence.proxy.async.shared::cta;");
        nr_ptx_bar(p);
    }
    issue(p, &w, d, aw, abase, bbase);
    nr_ptx_emit(p, "wgmma.commit_group.sync.aligned;");
    if (!async) nr_ptx_emit(p, "wgmma.wait_group.sync.aligned 0;");
    nr_ptx_set(p, r, result_of(p, &w, d), w.R);
    return true;
}

bool nr_ptx_op_warp_group_dot_wait(NrPtx *p, NrOpId op) {
    const NrOp *o = &p->f->ops[op];
    int64_t n = nr_op_int(p->f, op, NR_A_NUM, 0);
    if (n < 0 || n > 1000 || o->nresults != o->nopnds) {
        nr_ptx_error(p, "malformed 'warp_group_dot_wait'");
        return false;
    }
    nr_ptx_emit(p, "wgmma.wait_group.sync.aligned %lld;", (long long)n);
    for (int i = 0; i < o->nopnds; i++) {
        NrPtxVal *v = nr_ptx_val(p, o->opnds[i]);
        nr_ptx_set(p, o->results[i], v->e, v->n);
    }
    return true;
}
