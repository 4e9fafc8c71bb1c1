/* test_wgmma.c - warp_group_dot on wgmma (sm_90a).
 *
 *   model       the emitter's plans (nr_wgmma_plan) run on a CPU model of
 *               every warpgroup: shared memory is filled through
 *               nr_shared_offset (the layout contract); the descriptors are
 *               built as the emitted code builds them (start address from
 *               the buffer's base, the warpgroup's part and the
 *               instruction's offset, nr_wgmma_desc_bits) and decoded here
 *               bit by bit as the PTX ISA's "Matrix Descriptor Format"
 *               defines them; each element's address follows the ISA's
 *               canonical layouts (8-row x swizzle-byte atoms, K-major or
 *               MN-major) and the swizzle of the address; the D and A
 *               register fragments are the ISA's tables, written out here.
 *               Accumulators must match the reference matmul exactly (small
 *               integer inputs) for every operand type and accumulator, A
 *               from a buffer (K- or M-major) or from registers, B K- or
 *               N-major, 32-, 64- and 128-byte swizzles, buffers at several
 *               bases, 4 to 16 warps in every arrangement, and shapes from
 *               one instruction to many tiles and k steps.
 *   descriptors the encoding of every field, and plans that must fail
 *               (unswizzled or misdirected buffers, transposed 8-bit
 *               operands, layouts without whole warpgroups).
 *   TMA         every element of every box of a tma_load lands where the
 *               buffer's nvmma layout puts it (the box rows written in
 *               order, 16-byte chunks swizzled by address), for every
 *               swizzle, element size and order; a kernel with mbarriers and
 *               TMA copies feeding a warp_group_dot through ptxas.
 *   kernels     matmuls from source through the whole pipeline for sm_90a,
 *               assembled with ptxas -arch=sm_90a when it exists: every
 *               dtype, accumulator, storage order, stage count and warp
 *               count; the text shows wgmma of the right shape and types,
 *               the transpose flags, fence/commit/wait, fence.proxy.async
 *               after the copies, and mma.sync where wgmma does not apply
 *               (sm_90 without 'a', tf32x3, 8-bit B stored by rows).
 *
 * Random inputs are seeded from the clock (NR_TEST_SEED=n repeats a run).
 * NR_TEST_KEEP=dir keeps every emitted PTX file there. */
#include "fp.h"
#include "gpu_impl.h"
#include "nereid.h"
#include "ptx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- checking ---------------------------------------------------------------------------------------- */
static int failures, checks;
static uint64_t seed;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            if (failures++ == 0) printf("seed %llu\n", (unsigned long long)seed);                                      \
            if (failures <= 60) {                                                                                      \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *dn(NrDtype dt) { return nr_dtype_info[dt].ir; }

/* --- element values ---------------------------------------------------------------------------------- */
static double val_of(NrDtype dt, uint32_t bits) {
    float f;
    switch (dt) {
    case NR_DT_F16: return nr_f16_to_f32((uint16_t)bits);
    case NR_DT_BF16: return nr_bf16_to_f32((uint16_t)bits);
    case NR_DT_F8E4NV: return nr_f8e4nv_to_f32((uint8_t)bits);
    case NR_DT_F8E5: return nr_f8e5_to_f32((uint8_t)bits);
    case NR_DT_F32:
        bits &= ~0x1FFFu; /* tf32: the hardware reads 10 mantissa bits */
        memcpy(&f, &bits, 4);
        return f;
    case NR_DT_I8: return (int8_t)bits;
    case NR_DT_I32: return (int32_t)bits;
    default: return 0;
    }
}

static uint32_t bits_of(NrDtype dt, double x) {
    float f = (float)x;
    uint32_t u;
    switch (dt) {
    case NR_DT_F16: return nr_fp_round(x, NR_FPF_F16, false);
    case NR_DT_BF16: return nr_fp_round(x, NR_FPF_BF16, false);
    case NR_DT_F8E4NV: return nr_fp_round(x, NR_FPF_F8E4NV, false);
    case NR_DT_F8E5: return nr_fp_round(x, NR_FPF_F8E5, false);
    case NR_DT_F32: memcpy(&u, &f, 4); return u;
    case NR_DT_I8: return (uint32_t)(int8_t)(int)x & 0xff;
    case NR_DT_I32: return (uint32_t)(int32_t)(int64_t)x;
    default: return 0;
    }
}

/* Small integers: exact in every dtype and every order of summation;
 * full-range bytes for i8. */
static uint32_t rand_elem(NrDtype dt) {
    if (dt == NR_DT_I8) return (uint32_t)(rnd() & 0xff);
    return bits_of(dt, (double)((int)(rnd() % 7) - 3));
}

/* --- the PTX ISA, written out ---------------------------------------------------------------------------- */
/* Matrix descriptor (wgmma): start address bits 13-0, leading dimension
 * byte offset 29-16, stride dimension byte offset 45-32 (each >> 4), base
 * offset 51-49, swizzle mode 63-62 (1: 128 bytes, 2: 64, 3: 32). */
typedef struct Desc {
    uint32_t start, lbo, sbo;
    int swizzle, base_offset;
    bool ok;
} Desc;

static Desc decode(uint64_t x) {
    Desc d;
    d.start = (uint32_t)(x & 0x3FFF) << 4;
    d.lbo = (uint32_t)(x >> 16 & 0x3FFF) << 4;
    d.sbo = (uint32_t)(x >> 32 & 0x3FFF) << 4;
    d.base_offset = (int)(x >> 49 & 7);
    static const int modes[4] = {0, 128, 64, 32};
    d.swizzle = modes[x >> 62];
    uint64_t reserved = 0x3ull << 14 | 0x3ull << 30 | 0x7ull << 46 | 0x3FFull << 52;
    d.ok = !(x & reserved);
    return d;
}

/* Address of one element as wgmma reads it.  The matrix is made of swizzle
 * atoms: K-major, 8 rows (along M or N) of `swizzle` bytes along K, rows
 * `swizzle` bytes apart, atoms SBO apart along M/N; MN-major (transposed),
 * 8 rows along K of `swizzle` bytes along M/N, atoms SBO apart along K and
 * LBO apart along M/N.  Then the swizzle: within each `swizzle`-byte row
 * the 16-byte chunk index is XORed with the row's index among the 8 rows
 * of its 128-byte-period pattern (address bits 7.. of the same width). */
static uint32_t isa_addr(const Desc *d, bool trans, int es, int mn, int k) {
    uint32_t s = (uint32_t)d->swizzle, a;
    if (!trans) {
        a = d->start + (uint32_t)(mn / 8) * d->sbo + (uint32_t)(mn % 8) * s + (uint32_t)(k * es);
    } else {
        uint32_t byte = (uint32_t)(mn * es);
        a = d->start + (uint32_t)(k / 8) * d->sbo + (uint32_t)(k % 8) * s + byte / s * d->lbo + byte % s;
    }
    uint32_t chunks = s / 16, row = (a >> 7) % chunks, chunk = (a >> 4) % chunks;
    return a - chunk * 16 + (chunk ^ row) * 16;
}

/* D of wgmma.m64nN: slot i of lane l in warp w (0..3) of the warpgroup:
 * rows 16w + l/4 (+8 for slots 2, 3 of each 4), column pairs by l%4 and
 * one group of 8 columns per 4 slots. */
static void isa_d(int i, int lane, int w, int *row, int *col) {
    int gid = lane >> 2, tig = lane % 4;
    *row = 16 * w + (i % 4 < 2 ? gid : gid + 8);
    *col = (i / 4) * 8 + tig * 2 + (i & 1);
}

/* A from registers: per warp 16 rows, as mma.m16n8k16 (16-bit), k8 (tf32)
 * and k32 (8-bit) hold A. */
static void isa_a(int kbits, int i, int lane, int w, int *row, int *col) {
    int gid = lane >> 2, tig = lane % 4;
    if (kbits == 16) {
        *row = (i < 2 || (i >= 4 && i < 6)) ? gid : gid + 8;
        *col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else if (kbits == 8) {
        *row = (i == 0 || i == 2) ? gid : gid + 8;
        *col = (i < 2) ? tig : tig + 4;
    } else {
        *row = (i < 4 || (i >= 8 && i < 12)) ? gid : gid + 8;
        *col = tig * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    }
    *row += 16 * w;
}

/* --- layouts ------------------------------------------------------------------------------------------- */
typedef struct Lay {
    NrPtxLay P;
    NrLinear ll;
} Lay;

static bool lay_make(NrModule *m, NrArena *a, int32_t id, NrDtype dt, const int32_t *shape, int nw, Lay *L) {
    NrTypeId t = nr_type_with_layout(m, nr_type_block(m, nr_type_scalar(m, dt), 2, shape), id);
    bool ok = nr_ptx_lay_build(m, id, nr_type(m, t), nw, a, &L->P) && nr_layout_linear(m, id, 2, shape, nw, &L->ll);
    CHECK(ok, "layout #%d over %dx%d", id, shape[0], shape[1]);
    return ok;
}

static uint32_t xor_bits(const uint32_t *img, int n, uint32_t x) {
    uint32_t y = 0;
    for (int i = 0; i < n; i++)
        if (x >> i & 1) y ^= img[i];
    return y;
}

/* --- one dot on the model ------------------------------------------------------------------------------- */
typedef struct Cfg {
    NrDtype adt, bdt, cdt;
    int M, N, K;
    int wm, wn;
    int n_instr;
    int a_src;          /* 0: buffer K-major, 1: buffer M-major, 2: registers */
    int b_fast;         /* B's contiguous dimension: 0 K (K-major), 1 N */
    int swz_a, swz_b;   /* swizzle bytes */
    uint32_t base_a, base_b;
} Cfg;

/* Starts a descriptor the way the emitted code does: the address register
 * holds base + es * (warpgroup part ^ the offset's bits inside it), the
 * instruction adds the other bits (a sum: they are outside every warp
 * image) >> 4 to the 64-bit descriptor. */
static uint64_t emitted_desc(const NrWgmmaDesc *d, uint32_t base, uint32_t off, uint32_t warp) {
    uint32_t tmask = 0;
    for (int j = 0; j < d->nwarp; j++) tmask |= d->warp[j];
    uint32_t t = xor_bits(d->warp, d->nwarp, warp);
    uint32_t reg = base + (uint32_t)d->es * (t ^ (off & tmask));
    uint32_t imm = (uint32_t)d->es * (off & ~tmask);
    uint64_t x = nr_wgmma_desc_bits(d, reg);
    CHECK((x & 0x3FFF) + (imm >> 4) < 0x4000 && imm % 16 == 0, "descriptor offset carries out of the address field");
    return x + (imm >> 4);
}

static void run_dot(const Cfg *c) {
    char what[200];
    snprintf(what, sizeof what, "%sx%s->%s %dx%dx%d w%dx%d n%d A%d Bfast%d swz %d/%d base %u/%u", dn(c->adt),
             dn(c->bdt), dn(c->cdt), c->M, c->N, c->K, c->wm, c->wn, c->n_instr, c->a_src, c->b_fast, c->swz_a, c->swz_b,
             c->base_a, c->base_b);
    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    int nw = c->wm * c->wn;
    m->num_warps = nw;
    int esa = nr_dtype_info[c->adt].bytes, esb = nr_dtype_info[c->bdt].bytes;
    int kw = esa >= 4 ? 1 : 4 / esa, kin = 8 * kw;
    int32_t instr[3] = {16, c->n_instr, kin}, wpc[2] = {c->wm, c->wn};
    int32_t cl = nr_layout_mma(m, 3, 2, wpc, instr);
    int32_t sa[2] = {c->M, c->K}, sb[2] = {c->K, c->N}, sc[2] = {c->M, c->N};
    Lay C, A;
    if (!lay_make(m, &a, cl, c->cdt, sc, nw, &C)) goto out;
    int32_t al = 0;
    if (c->a_src == 2) {
        al = nr_layout_dot_op(m, cl, 0, kw);
        if (!lay_make(m, &a, al, c->adt, sa, nw, &A)) goto out;
    }
    /* buffers */
    int32_t ord_a[2] = {c->a_src == 1 ? 0 : 1, c->a_src == 1 ? 1 : 0}, ord_b[2] = {c->b_fast, 1 - c->b_fast};
    int32_t lb = nr_layout_nvmma(m, 2, c->swz_b, ord_b), la = c->a_src < 2 ? nr_layout_nvmma(m, 2, c->swz_a, ord_a) : 0;
    NrWgmmaBuf Ab, Bb;
    memset(&Ab, 0, sizeof Ab);
    memset(&Bb, 0, sizeof Bb);
    Bb.layout = &m->layouts[lb], Bb.shape[0] = c->K, Bb.shape[1] = c->N, Bb.es = esb;
    CHECK(nr_smem_map(m, lb, 2, sb, esb, &Bb.map), "%s: B map", what);
    if (la) {
        Ab.layout = &m->layouts[la], Ab.shape[0] = c->M, Ab.shape[1] = c->K, Ab.es = esa;
        CHECK(nr_smem_map(m, la, 2, sa, esa, &Ab.map), "%s: A map", what);
    }
    NrWgmmaPlan pl;
    char why[160] = "";
    bool planned = nr_wgmma_plan(&m->layouts[cl], &C.P, la ? NULL : &A.P, kw, la ? &Ab : NULL, &Bb, &a, &pl, why,
                                 sizeof why);
    CHECK(planned, "%s: no plan: %s", what, why);
    if (!planned) goto out;
    CHECK(pl.B.trans == (c->b_fast == 1) && (!la || pl.A.trans == (c->a_src == 1)), "%s: transpose flags", what);
    CHECK(pl.n == c->n_instr && pl.k == kin && pl.nd == c->n_instr / 2, "%s: instruction shape", what);
    CHECK(pl.ninstr == (c->M / (16 * c->wm)) * (c->N / (c->n_instr * c->wn)) * (c->K / kin),
          "%s: %d instructions per warpgroup", what, pl.ninstr);
    /* shared memory: both buffers, filled through the layout contract */
    uint32_t bytes_b = (uint32_t)(c->K * c->N * esb), bytes_a = la ? (uint32_t)(c->M * c->K * esa) : 0;
    uint32_t size = c->base_b + bytes_b > c->base_a + bytes_a ? c->base_b + bytes_b : c->base_a + bytes_a;
    uint8_t *mem = calloc(size, 1);
    uint32_t *xa = malloc(sizeof(uint32_t) * (size_t)(c->M * c->K)), *xb = malloc(sizeof(uint32_t) * (size_t)(c->K * c->N));
    double *xc = malloc(sizeof(double) * (size_t)(c->M * c->N));
    for (int i = 0; i < c->M * c->K; i++) xa[i] = rand_elem(c->adt);
    for (int i = 0; i < c->K * c->N; i++) xb[i] = rand_elem(c->bdt);
    for (int i = 0; i < c->M * c->N; i++) xc[i] = (double)((int)(rnd() % 9) - 4);
    for (int k = 0; k < c->K; k++)
        for (int n = 0; n < c->N; n++) {
            int32_t co[2] = {k, n};
            memcpy(mem + c->base_b + nr_shared_offset(m, lb, 2, sb, esb, co) * esb, &xb[k * c->N + n], (size_t)esb);
        }
    if (la)
        for (int i = 0; i < c->M; i++)
            for (int k = 0; k < c->K; k++) {
                int32_t co[2] = {i, k};
                memcpy(mem + c->base_a + nr_shared_offset(m, la, 2, sa, esa, co) * esa, &xa[i * c->K + k], (size_t)esa);
            }
    /* registers: the accumulator (and A) per the linear layouts */
    int R = 1 << C.P.nreg, RA = la ? 0 : 1 << A.P.nreg;
    double *acc = malloc(sizeof(double) * (size_t)nw * 32 * (size_t)R);
    uint32_t *areg = malloc(sizeof(uint32_t) * (size_t)nw * 32 * (size_t)(RA ? RA : 1));
    for (int w = 0; w < nw; w++)
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < R; r++) {
                int32_t co[2];
                nr_linear_coords(&C.ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, co);
                acc[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)r] = xc[co[0] * c->N + co[1]];
            }
            for (int r = 0; r < RA; r++) {
                int32_t co[2];
                nr_linear_coords(&A.ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, co);
                areg[((size_t)w * 32 + (size_t)lane) * (size_t)RA + (size_t)r] = xa[co[0] * c->K + co[1]];
            }
        }
    /* every warpgroup runs every instruction */
    int bad_desc = 0;
    double *D = malloc(sizeof(double) * 64 * (size_t)c->n_instr);
    double *Am = malloc(sizeof(double) * 64 * (size_t)kin), *Bm = malloc(sizeof(double) * (size_t)kin * (size_t)c->n_instr);
    int *cover = malloc(sizeof(int) * 64 * (size_t)(c->n_instr > kin ? c->n_instr : kin));
    for (int g = 0; g < nw / 4; g++)
        for (int i = 0; i < pl.ninstr; i++) {
            const NrWgmmaInstr *in = &pl.ins[i];
            Desc db = decode(emitted_desc(&pl.B, c->base_b, in->boff, (uint32_t)(4 * g)));
            if (!db.ok || db.base_offset || db.swizzle != c->swz_b) bad_desc++;
            for (int k = 0; k < kin; k++)
                for (int n = 0; n < c->n_instr; n++) {
                    uint32_t ad = isa_addr(&db, pl.B.trans, esb, n, k), x = 0;
                    if (ad < c->base_b || ad + (uint32_t)esb > c->base_b + bytes_b) {
                        bad_desc++;
                        continue;
                    }
                    memcpy(&x, mem + ad, (size_t)esb);
                    Bm[k * c->n_instr + n] = val_of(c->bdt, x);
                }
            if (la) {
                Desc da = decode(emitted_desc(&pl.A, c->base_a, in->aoff, (uint32_t)(4 * g)));
                if (!da.ok || da.base_offset || da.swizzle != c->swz_a) bad_desc++;
                for (int r = 0; r < 64; r++)
                    for (int k = 0; k < kin; k++) {
                        uint32_t ad = isa_addr(&da, pl.A.trans, esa, r, k), x = 0;
                        if (ad < c->base_a || ad + (uint32_t)esa > c->base_a + bytes_a) {
                            bad_desc++;
                            continue;
                        }
                        memcpy(&x, mem + ad, (size_t)esa);
                        Am[r * kin + k] = val_of(c->adt, x);
                    }
            } else {
                memset(cover, 0, sizeof(int) * 64 * (size_t)kin);
                for (int w = 0; w < 4; w++)
                    for (int lane = 0; lane < 32; lane++)
                        for (int s = 0; s < pl.na; s++) {
                            int row, col;
                            isa_a(kin, s, lane, w, &row, &col);
                            uint32_t x = areg[((size_t)(4 * g + w) * 32 + (size_t)lane) * (size_t)RA + (size_t)in->a[s]];
                            Am[row * kin + col] = val_of(c->adt, x);
                            cover[row * kin + col]++;
                        }
                bool once = true;
                for (int q = 0; q < 64 * kin; q++) once = once && cover[q] == 1;
                CHECK(once, "%s: A fragments do not cover the 64 x k tile once", what);
            }
            memset(cover, 0, sizeof(int) * 64 * (size_t)c->n_instr);
            for (int w = 0; w < 4; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int s = 0; s < pl.nd; s++) {
                        int row, col;
                        isa_d(s, lane, w, &row, &col);
                        D[row * c->n_instr + col] = acc[((size_t)(4 * g + w) * 32 + (size_t)lane) * (size_t)R + (size_t)in->d[s]];
                        cover[row * c->n_instr + col]++;
                    }
            bool once = true;
            for (int q = 0; q < 64 * c->n_instr; q++) once = once && cover[q] == 1;
            CHECK(once, "%s: D fragments do not cover the 64 x n tile once", what);
            for (int r = 0; r < 64; r++)
                for (int n = 0; n < c->n_instr; n++) {
                    double s = D[r * c->n_instr + n];
                    for (int k = 0; k < kin; k++) s += Am[r * kin + k] * Bm[k * c->n_instr + n];
                    if (c->cdt == NR_DT_F16) s = nr_f16_to_f32((uint16_t)nr_fp_round(s, NR_FPF_F16, false));
                    D[r * c->n_instr + n] = s;
                }
            for (int w = 0; w < 4; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int s = 0; s < pl.nd; s++) {
                        int row, col;
                        isa_d(s, lane, w, &row, &col);
                        acc[((size_t)(4 * g + w) * 32 + (size_t)lane) * (size_t)R + (size_t)in->d[s]] = D[row * c->n_instr + col];
                    }
        }
    CHECK(bad_desc == 0, "%s: %d descriptor faults (reserved bits, base offset, swizzle, or outside the buffer)", what,
          bad_desc);
    int bad = 0;
    for (int w = 0; w < nw; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int r = 0; r < R; r++) {
                int32_t co[2];
                nr_linear_coords(&C.ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, co);
                double ref = xc[co[0] * c->N + co[1]];
                for (int k = 0; k < c->K; k++)
                    ref += val_of(c->adt, xa[co[0] * c->K + k]) * val_of(c->bdt, xb[k * c->N + co[1]]);
                double got = acc[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)r];
                if (got != ref && bad++ < 3)
                    CHECK(0, "%s: warp %d lane %d d%d (%d, %d) = %.9g, expected %.9g", what, w, lane, r, co[0], co[1], got,
                          ref);
            }
    CHECK(bad == 0, "%s: %d accumulators wrong", what, bad);
    free(mem), free(xa), free(xb), free(xc), free(acc), free(areg), free(D), free(Am), free(Bm), free(cover);
out:
    nr_arena_free(&a);
}

static int swz_for(int bytes) { return bytes >= 128 ? 128 : bytes >= 64 ? 64 : 32; }

static void test_model(void) {
    static const struct {
        NrDtype a, b, c;
    } kinds[] = {
        {NR_DT_F16, NR_DT_F16, NR_DT_F32},       {NR_DT_F16, NR_DT_F16, NR_DT_F16},
        {NR_DT_BF16, NR_DT_BF16, NR_DT_F32},     {NR_DT_F32, NR_DT_F32, NR_DT_F32},
        {NR_DT_F8E4NV, NR_DT_F8E4NV, NR_DT_F32}, {NR_DT_F8E5, NR_DT_F8E4NV, NR_DT_F16},
        {NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F32},   {NR_DT_I8, NR_DT_I8, NR_DT_I32},
    };
    static const int shapes[][3] = {
        /* M, N, K (in units of the instruction's k for K) */
        {64, 8, 1}, {64, 16, 2}, {64, 32, 4}, {64, 64, 2}, {128, 64, 4}, {128, 128, 2}, {64, 256, 1},
        {128, 256, 4}, {256, 128, 2}, {256, 64, 8},
    };
    static const int warps[][2] = {{4, 1}, {8, 1}, {4, 2}, {16, 1}, {8, 2}, {4, 4}};
    int runs = 0;
    for (size_t ki = 0; ki < NR_COUNTOF(kinds); ki++)
        for (size_t si = 0; si < NR_COUNTOF(shapes); si++)
            for (size_t wi = 0; wi < NR_COUNTOF(warps); wi++)
                for (int a_src = 0; a_src < 3; a_src++)
                    for (int b_fast = 0; b_fast < 2; b_fast++) {
                        Cfg c;
                        memset(&c, 0, sizeof c);
                        c.adt = kinds[ki].a, c.bdt = kinds[ki].b, c.cdt = kinds[ki].c;
                        int es = nr_dtype_info[c.adt].bytes, kin = es >= 4 ? 8 : 32 / es;
                        c.M = shapes[si][0], c.N = shapes[si][1], c.K = shapes[si][2] * kin;
                        c.wm = warps[wi][0], c.wn = warps[wi][1];
                        if (c.M % (16 * c.wm) || c.N % (8 * c.wn)) continue;
                        int nmax = c.adt == NR_DT_I8 ? 128 : 256;
                        c.n_instr = c.N / c.wn < nmax ? c.N / c.wn : nmax;
                        c.a_src = a_src, c.b_fast = b_fast;
                        if (es != 2 && (a_src == 1 || b_fast == 1)) continue; /* no transposed 8/32-bit wgmma */
                        int a_inner = (a_src == 1 ? c.M : c.K) * es, b_inner = (b_fast ? c.N : c.K) * es;
                        if (b_inner < 32 || (a_src < 2 && a_inner < 32)) continue;
                        /* fewer combinations for the big shapes */
                        if (c.M * c.N * c.K > 128 * 128 * 64 && (wi > 2 || a_src == 1)) continue;
                        c.swz_a = swz_for(a_inner), c.swz_b = swz_for(b_inner);
                        /* narrower swizzles than the row allows, now and then */
                        if (rnd() % 4 == 0 && c.swz_b > 32) c.swz_b /= 2;
                        if (rnd() % 4 == 0 && c.swz_a > 32) c.swz_a /= 2;
                        uint32_t bytes_a = (uint32_t)(c.M * c.K * es);
                        c.base_a = 1024 * (uint32_t)(rnd() % 4);
                        c.base_b = (c.base_a + bytes_a + 1023) / 1024 * 1024 + 1024 * (uint32_t)(rnd() % 3);
                        run_dot(&c);
                        runs++;
                    }
    printf("test_wgmma: %d dots on the warpgroup model\n", runs);
}

/* --- descriptors and plans that must fail --------------------------------------------------------------- */
static void test_descriptors(void) {
    NrWgmmaDesc d;
    memset(&d, 0, sizeof d);
    d.swizzle = 128, d.lbo = 16, d.sbo = 1024, d.es = 2;
    uint64_t x = nr_wgmma_desc_bits(&d, 0x12340);
    CHECK((x & 0x3FFF) == 0x1234 && (x >> 16 & 0x3FFF) == 1 && (x >> 32 & 0x3FFF) == 64 && x >> 62 == 1 &&
              (x >> 46 & 0xFFFF) == 0,
          "128-byte descriptor: 0x%016llx", (unsigned long long)x);
    d.swizzle = 64, d.lbo = 8192, d.sbo = 512;
    x = nr_wgmma_desc_bits(&d, 0x3FFF0 + 0x40000); /* bits above 17 are not encoded */
    CHECK((x & 0x3FFF) == 0x3FFF && (x >> 16 & 0x3FFF) == 512 && (x >> 32 & 0x3FFF) == 32 && x >> 62 == 2,
          "64-byte descriptor: 0x%016llx", (unsigned long long)x);
    d.swizzle = 32;
    CHECK(nr_wgmma_desc_bits(&d, 0) >> 62 == 3, "32-byte swizzle mode 3");
    /* the swizzle of an address */
    CHECK(nr_wgmma_swizzle(128, 0x380) == 0x3F0 && nr_wgmma_swizzle(128, 0x410) == 0x410 &&
              nr_wgmma_swizzle(64, 0x180) == 0x1B0 && nr_wgmma_swizzle(32, 0x80) == 0x90 && nr_wgmma_swizzle(32, 0x100) == 0x100,
          "swizzles of addresses");

    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    m->num_warps = 4;
    int32_t cl = nr_layout_mma(m, 3, 2, (int32_t[]){4, 1}, (int32_t[]){16, 64, 16});
    int32_t shape_c[2] = {64, 64}, shape_b[2] = {32, 64};
    Lay C;
    if (lay_make(m, &a, cl, NR_DT_F32, shape_c, 4, &C)) {
        NrWgmmaPlan pl;
        char why[160];
        NrWgmmaBuf B;
        memset(&B, 0, sizeof B);
        B.shape[0] = 32, B.shape[1] = 64, B.es = 2;
        int32_t plain = nr_layout_shared(m, 2, 8, 1, 8, (int32_t[]){1, 0});
        int32_t sw = nr_layout_nvmma(m, 2, 128, (int32_t[]){1, 0}), none = nr_layout_nvmma(m, 2, 0, (int32_t[]){1, 0});
        NrWgmmaBuf A = B;
        A.shape[0] = 64, A.shape[1] = 32;
        int32_t ka = nr_layout_nvmma(m, 2, 64, (int32_t[]){1, 0});
        A.layout = &m->layouts[ka];
        CHECK(nr_smem_map(m, ka, 2, A.shape, 2, &A.map), "A map");
        B.layout = &m->layouts[sw];
        CHECK(nr_smem_map(m, sw, 2, shape_b, 2, &B.map), "B map");
        CHECK(nr_wgmma_plan(&m->layouts[cl], &C.P, NULL, 2, &A, &B, &a, &pl, why, sizeof why), "plan: %s", why);
        CHECK(pl.ninstr == 2 && pl.B.trans && !pl.A.trans && pl.B.lbo == 32 * 128 && pl.B.sbo == 1024 &&
                  pl.A.sbo == 512 && pl.A.swizzle == 64,
              "64x64x32 f16: 2 instructions, B N-major (LBO %lld, SBO %lld), A K-major 64-byte",
              (long long)pl.B.lbo, (long long)pl.B.sbo);
        B.layout = &m->layouts[plain];
        CHECK(nr_smem_map(m, plain, 2, shape_b, 2, &B.map), "plain map");
        CHECK(!nr_wgmma_plan(&m->layouts[cl], &C.P, NULL, 2, &A, &B, &a, &pl, why, sizeof why) && strstr(why, "nvmma"),
              "a `shared` swizzle is no wgmma layout: %s", why);
        B.layout = &m->layouts[none];
        CHECK(nr_smem_map(m, none, 2, shape_b, 2, &B.map), "unswizzled map");
        CHECK(!nr_wgmma_plan(&m->layouts[cl], &C.P, NULL, 2, &A, &B, &a, &pl, why, sizeof why),
              "an unswizzled buffer has no plan");
        /* 8-bit B stored N-major: wgmma cannot transpose it */
        B.layout = &m->layouts[sw];
        B.es = 1;
        int32_t cl8 = nr_layout_mma(m, 3, 2, (int32_t[]){4, 1}, (int32_t[]){16, 64, 32});
        Lay C8;
        int32_t b8[2] = {32, 64};
        if (lay_make(m, &a, cl8, NR_DT_F32, shape_c, 4, &C8)) {
            CHECK(nr_smem_map(m, sw, 2, b8, 1, &B.map), "8-bit map");
            A.es = 1;
            CHECK(nr_smem_map(m, ka, 2, A.shape, 1, &A.map), "8-bit A map");
            A.layout = &m->layouts[nr_layout_nvmma(m, 2, 32, (int32_t[]){1, 0})];
            CHECK(nr_smem_map(m, nr_layout_nvmma(m, 2, 32, (int32_t[]){1, 0}), 2, A.shape, 1, &A.map), "A 32");
            CHECK(!nr_wgmma_plan(&m->layouts[cl8], &C8.P, NULL, 4, &A, &B, &a, &pl, why, sizeof why) &&
                      strstr(why, "transposed"),
                  "8-bit N-major B: %s", why);
        }
        /* an accumulator that is not a version 3 layout */
        int32_t v2 = nr_layout_mma(m, 2, 2, (int32_t[]){2, 2}, (int32_t[]){16, 8, 16});
        Lay C2;
        if (lay_make(m, &a, v2, NR_DT_F32, shape_c, 4, &C2))
            CHECK(!nr_wgmma_plan(&m->layouts[v2], &C2.P, NULL, 2, &A, &B, &a, &pl, why, sizeof why),
                  "mma version 2 has no wgmma plan");
    }
    nr_arena_free(&a);
}

/* --- TMA boxes ---------------------------------------------------------------------------------------------- */
/* A tiled TMA copy writes its box with the first tensor-map dimension
 * fastest, box rows one after another, and swizzles the 16-byte chunks of
 * each row by the shared address as wgmma reads them (the CUtensorMap's
 * swizzle mode).  Every element of every box nr_tma_plan asks for must land
 * where the buffer's layout puts it, and every element exactly once. */
static void test_tma_boxes(void) {
    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    int runs = 0;
    for (int es = 1; es <= 4; es *= 2)
        for (int swz = 0; swz <= 128; swz = swz ? swz * 2 : 32)
            for (int fast = 0; fast < 2; fast++)
                for (int r0 = 8; r0 <= 128; r0 *= 4)
                    for (int c0 = 16; c0 <= 256; c0 *= 2) {
                        int32_t shape[2], order[2] = {fast, 1 - fast};
                        shape[fast] = c0 / es * 4 > 256 ? 256 : c0 / es * 4, shape[1 - fast] = r0;
                        if (shape[fast] * es < (swz ? swz : 16)) continue;
                        int32_t l = nr_layout_nvmma(m, 2, swz, order);
                        NrTmaPlan pl;
                        bool ok = nr_tma_plan(&m->layouts[l], 2, shape, es, &pl);
                        bool want = swz ? true : shape[fast] <= 256;
                        CHECK(ok == want, "tma plan %dx%d es %d swizzle %d order [%d, %d]", shape[0], shape[1], es, swz,
                              order[0], order[1]);
                        if (!ok) continue;
                        int64_t n = (int64_t)shape[0] * shape[1];
                        uint8_t *seen = calloc((size_t)n, 1);
                        int bad = 0;
                        for (int64_t j = 0; j < pl.nbox; j++)
                            for (int64_t e1 = 0; e1 < pl.box[1]; e1++)
                                for (int64_t e0 = 0; e0 < pl.box[0]; e0++) {
                                    uint32_t lin = (uint32_t)(j * pl.stride + (e1 * pl.box[0] + e0) * es), addr = lin;
                                    if (swz) {
                                        uint32_t chunks = (uint32_t)swz / 16, row = (lin >> 7) % chunks;
                                        uint32_t chunk = (lin >> 4) % chunks;
                                        addr = lin - chunk * 16 + (chunk ^ row) * 16;
                                    }
                                    int32_t co[2];
                                    co[pl.dim[0]] = (int32_t)(j * pl.box[0] + e0);
                                    co[pl.dim[1]] = (int32_t)e1;
                                    int64_t off = nr_shared_offset(m, l, 2, shape, es, co);
                                    if ((int64_t)addr != off * es) bad++;
                                    else if (off >= 0 && off < n) seen[off]++;
                                }
                        for (int64_t i = 0; i < n; i++) bad += seen[i] != 1;
                        CHECK(bad == 0, "tma boxes of %dx%d es %d swizzle %d order [%d, %d]: %d elements misplaced", shape[0],
                              shape[1], es, swz, order[0], order[1], bad);
                        free(seen);
                        runs++;
                    }
    printf("test_wgmma: %d TMA tilings\n", runs);
    nr_arena_free(&a);
}

/* --- kernels through ptxas ---------------------------------------------------------------------------------- */
static const char *const PTXAS = "/usr/local/cuda/bin/ptxas";
static bool have_ptxas;
static int assembled;
static const char *keep_dir;

static bool ptxas_ok(const char *ptx, const char *arch, const char *what) {
    static int serial;
    char path[512];
    if (keep_dir) snprintf(path, sizeof path, "%s/%03d_%s_%s.ptx", keep_dir, serial++, what, arch);
    else snprintf(path, sizeof path, "/tmp/nr_test_wgmma_%d.ptx", (int)getpid());
    FILE *fp = fopen(path, "w");
    if (!fp) return false;
    fputs(ptx, fp);
    fclose(fp);
    if (!have_ptxas) return true;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o /dev/null 2>&1", PTXAS, arch, path);
    FILE *pp = popen(cmd, "r");
    if (!pp) return false;
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, pp);
    out[n] = 0;
    int rc = pclose(pp);
    assembled++;
    if (!keep_dir) remove(path);
    if (rc != 0) printf("ptxas -arch=%s rejected %s:\n%s\n", arch, what, out);
    return rc == 0;
}

static int count_of(const char *s, const char *pat) {
    int n = 0;
    for (const char *q = s ? strstr(s, pat) : NULL; q; q = strstr(q + 1, pat)) n++;
    return n;
}

static const char KERNELS[] =
    "import triton\n"
    "import triton.language as tl\n"
    "\n"
    "@triton.jit\n"
    "def mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, BM: tl.constexpr, BN: tl.constexpr,\n"
    "       BK: tl.constexpr, PREC: tl.constexpr, STAGES: tl.constexpr):\n"
    "    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)\n"
    "    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)\n"
    "    offs_k = tl.arange(0, BK)\n"
    "    a_ptrs = a_ptr + offs_m[:, None] * sam + offs_k[None, :] * sak\n"
    "    b_ptrs = b_ptr + offs_k[:, None] * sbk + offs_n[None, :] * sbn\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):\n"
    "        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BK), other=0.0)\n"
    "        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BK) & (offs_n[None, :] < N), other=0.0)\n"
    "        acc = tl.dot(a, b, acc, input_precision=PREC)\n"
    "        a_ptrs += BK * sak\n"
    "        b_ptrs += BK * sbk\n"
    "    c = acc.to(c_ptr.dtype.element_ty)\n"
    "    tl.store(c_ptr + offs_m[:, None] * scm + offs_n[None, :], c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))\n"
    "\n"
    "@triton.jit\n"
    "def mm16(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):\n"
    "    offs_m = tl.arange(0, BM)\n"
    "    offs_n = tl.arange(0, BN)\n"
    "    offs_k = tl.arange(0, BK)\n"
    "    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]\n"
    "    b_ptrs = b_ptr + offs_k[:, None] * BN + offs_n[None, :]\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float16)\n"
    "    for k in tl.range(0, K // BK, num_stages=STAGES):\n"
    "        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, out_dtype=tl.float16)\n"
    "        a_ptrs += BK\n"
    "        b_ptrs += BK * BN\n"
    "    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)\n"
    "\n"
    "@triton.jit\n"
    "def mmi(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):\n"
    "    offs_m = tl.arange(0, BM)\n"
    "    offs_n = tl.arange(0, BN)\n"
    "    offs_k = tl.arange(0, BK)\n"
    "    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]\n"
    "    b_ptrs = b_ptr + offs_n[None, :] * K + offs_k[:, None]\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.int32)\n"
    "    for k in tl.range(0, K // BK, num_stages=STAGES):\n"
    "        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)\n"
    "        a_ptrs += BK\n"
    "        b_ptrs += BK\n"
    "    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)\n"
    "\n"
    "@triton.jit\n"
    "def areg(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    offs_m = tl.arange(0, BM)\n"
    "    offs_n = tl.arange(0, BN)\n"
    "    offs_k = tl.arange(0, BK)\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
    "    for k in range(0, K, BK):\n"
    "        a = tl.load(a_ptr + offs_m[:, None] * K + k + offs_k[None, :]).to(tl.float32)\n"
    "        p = tl.exp(a - 1.0).to(tl.float16)\n"
    "        b = tl.load(b_ptr + (k + offs_k[:, None]) * BN + offs_n[None, :])\n"
    "        acc = tl.dot(p, b, acc)\n"
    "    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)\n";

/* Compiles kernel `name` with signature sig and checks the PTX with ptxas. */
static char *compile(NrContext *ctx, const char *name, const char *sig, const char *arch, int nw, int stages,
                     const char *what) {
    NrOptions o;
    nr_options_default(&o);
    o.arch = arch;
    o.num_warps = nw;
    o.num_stages = stages;
    o.verify_each = 1;
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, KERNELS, sizeof KERNELS - 1, "kernels.py", name, sig, &o, &k);
    CHECK(st == NR_OK, "%s (%s): %s", what, arch, nr_error_text(ctx));
    if (st != NR_OK) return NULL;
    const char *ptx = nr_kernel_ptx(k);
    char *copy = strdup(ptx ? ptx : "");
    nr_kernel_destroy(k);
    CHECK(ptxas_ok(copy, arch, what), "%s: ptxas %s", what, arch);
    return copy;
}

/* The wgmma lines of ptx all end with `tail` (the transpose flags). */
static bool all_end_with(const char *ptx, const char *tail) {
    size_t nt = strlen(tail);
    for (const char *q = strstr(ptx, "wgmma.mma_async"); q; q = strstr(q + 1, "wgmma.mma_async")) {
        const char *e = strchr(q, '\n');
        if (!e || (size_t)(e - q) < nt || strncmp(e - nt, tail, nt) != 0) return false;
    }
    return true;
}

/* TMA into swizzled buffers (A K-major, 128-byte; B K-major, 64-byte)
 * completing on an mbarrier, then a
 * wgmma dot: the mbarrier is initialized by one thread (and fenced), a
 * barrier at each iteration's start orders the previous dot's reads before
 * the next copies; one thread arrives expecting the tiles' bytes and issues
 * one copy per 64-column box; everyone waits on the phase's parity. */
static const char IR_TMA[] =
    "module attributes {num_warps = 4, sm = 90a} {\n"
    "  #L1 = mma<version = 3, wpc = [4, 1], instr = [16, 128, 16]>\n"
    "  #L2 = nvmma_shared<swizzle = 128, order = [1, 0]>\n"
    "  #L3 = shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>\n"
    "  #L4 = nvmma_shared<swizzle = 64, order = [0, 1]>\n"
    "\n"
    "  func @k(%ta: ptr<i8> {divisibility = 16}, %tb: ptr<i8> {divisibility = 16}, %K: i32) kernel {\n"
    "    %bar = local_alloc : !smem<1xi64, #L3>\n"
    "    mbarrier_init %bar {count = 1}\n"
    "    %a = local_alloc : !smem<128x128xf16, #L2>\n"
    "    %b = local_alloc : !smem<128x128xf16, #L4>\n"
    "    %z = const {value = 0.0} : tensor<128x128xf32, #L1>\n"
    "    %c0 = const {value = 0} : i32\n"
    "    %c1 = const {value = 1} : i32\n"
    "    %c128 = const {value = 128} : i32\n"
    "    %t = const {value = 1} : i1\n"
    "    %r, %ph = for %c0, %K, %c128, %z, %c0 : tensor<128x128xf32, #L1>, i32 {\n"
    "    ^(%k: i32, %acc: tensor<128x128xf32, #L1>, %phase: i32):\n"
    "      mbarrier_expect %bar, %t {bytes = 65536}\n"
    "      tma_load %ta, %a, %bar, _, %c0, %k\n"
    "      tma_load %tb, %b, %bar, %t, %k, %c0\n"
    "      mbarrier_wait %bar, %phase\n"
    "      %d = warp_group_dot %a, %b, %acc : tensor<128x128xf32, #L1>\n"
    "      %p2 = xor %phase, %c1 : i32\n"
    "      yield %d, %p2\n"
    "    }\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_tma_kernel(void) {
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrModule *m = nr_module_parse(&a, IR_TMA, strlen(IR_TMA), "tma.ir", &d);
    CHECK(m != NULL, "tma kernel: does not parse:\n%s", nr_diags_render(&a, &d));
    if (m) {
        d.sources = &m->sources;
        bool ok = nr_gpu_alloc_smem(m, &d) && nr_gpu_barriers(m, &d);
        NrGpuOptions o;
        memset(&o, 0, sizeof o);
        o.sm = 90, o.sm_a = true;
        char *ptx = ok ? nr_emit_ptx(m->funcs[0], &o, &d) : NULL;
        CHECK(ptx != NULL, "tma kernel: %s", nr_diags_render(&a, &d));
        if (ptx) {
            CHECK(ptxas_ok(ptx, "sm_90a", "tma"), "tma kernel: ptxas");
            CHECK(count_of(ptx, "mbarrier.init.shared::cta.b64") == 1 && count_of(ptx, "fence.mbarrier_init.release.cluster;") == 1,
                  "tma: one mbarrier init, fenced");
            CHECK(count_of(ptx, "mbarrier.arrive.expect_tx.shared::cta.b64") == 1 &&
                      strstr(ptx, "], 65536;") != NULL, "tma: arrive expecting 65536 bytes");
            CHECK(count_of(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == 2 + 4,
                  "tma: two 64-column boxes of A, four 32-row (K-major, 64-byte) boxes of B");
            CHECK(strstr(ptx, "+16384], [%rd") != NULL && strstr(ptx, "+24576], [%rd") != NULL,
                  "tma: A's second box 128 rows x 128 bytes further, B's fourth 3 x 128 x 64 bytes");
            CHECK(count_of(ptx, "mbarrier.try_wait.parity.shared::cta.b64") == 1 && count_of(ptx, "bar.sync 0;") == 2,
                  "tma: one wait loop; one barrier in front of the loop (the init), one per iteration");
        }
    }
    nr_arena_free(&a);
}

static void test_kernels(void) {
    NrContext *ctx = nr_context_create();
    static const struct {
        const char *a, *c, *prec, *wg;
        bool trans;   /* 16-bit: wgmma transposes N-major B */
    } mms[] = {
        {"fp16", "fp16", "tf32", ".f32.f16.f16", true},
        {"bf16", "bf16", "tf32", ".f32.bf16.bf16", true},
        {"fp32", "fp32", "tf32", ".f32.tf32.tf32", false},
        {"fp8e4nv", "fp16", "tf32", ".f32.e4m3.e4m3", false},
        {"fp8e5", "fp32", "tf32", ".f32.e5m2.e5m2", false},
    };
    static const int tiles[][4] = {
        /* BM, BN, BK, warps */
        {128, 128, 64, 4}, {128, 256, 64, 8}, {64, 128, 64, 4}, {256, 128, 64, 8}, {64, 64, 32, 4}, {128, 64, 128, 8},
    };
    for (size_t i = 0; i < NR_COUNTOF(mms); i++)
        for (size_t t = 0; t < NR_COUNTOF(tiles); t++)
            for (int order = 0; order < 2; order++)
                for (int stages = 1; stages <= 4; stages += 3) {
                    if (t >= 3 && (stages == 1 || order == 1)) continue;
                    int es = !strcmp(mms[i].a, "fp32") ? 4 : strncmp(mms[i].a, "fp8", 3) == 0 ? 1 : 2;
                    int bm = tiles[t][0], bn = tiles[t][1], bk = tiles[t][2] * 2 / es, nw = tiles[t][3];
                    if (es == 4) bk = tiles[t][2] / 2;
                    if ((int64_t)(bm + bn) * bk * es * (stages > 1 ? stages : 1) > 200 * 1024) continue;
                    char sig[400], what[160];
                    /* order 0: A row-major, B row-major (N-major); 1: A row-major, B column-major (K-major) */
                    snprintf(sig, sizeof sig,
                             "*%s:16, *%s:16, *%s:16, i32:16, i32:16, i32:16, i32:16, 1, %s, %s, i32:16, %d, %d, %d, "
                             "\"%s\", %d",
                             mms[i].a, mms[i].a, mms[i].c, order ? "1" : "i32:16", order ? "i32:16" : "1", bm, bn, bk,
                             mms[i].prec, stages);
                    snprintf(what, sizeof what, "mm_%s_%s_%dx%dx%d_o%d_s%d_w%d", mms[i].a, mms[i].c, bm, bn, bk, order,
                             stages, nw);
                    char *ptx = compile(ctx, "mm", sig, "sm_90a", nw, stages, what);
                    if (!ptx) continue;
                    bool wg = es == 2 || order == 1; /* 8- and 32-bit B must be K-major */
                    CHECK(strstr(ptx, ".target sm_90a") != NULL, "%s: .target sm_90a", what);
                    if (!wg) {
                        CHECK(count_of(ptx, "wgmma") == 0 && count_of(ptx, "mma.sync") > 0,
                              "%s: N-major %s B stays on mma.sync", what, mms[i].a);
                        free(ptx);
                        continue;
                    }
                    int kin = es == 4 ? 8 : 32 / es, wm = 4, wn = 1;
                    while (wm * wn < nw) {
                        if (bm > 16 * wm) wm *= 2;
                        else wn *= 2;
                    }
                    int ni = bn / wn < 256 ? bn / wn : 256;
                    char shape[64];
                    snprintf(shape, sizeof shape, "wgmma.mma_async.sync.aligned.m64n%dk%d%s", ni, kin, mms[i].wg);
                    int want = (bm / (16 * wm)) * (bn / (ni * wn)) * (bk / kin);
                    CHECK(count_of(ptx, shape) == want, "%s: %d x %s, got %d (%d wgmma)", what, want, shape,
                          count_of(ptx, shape), count_of(ptx, "wgmma.mma_async"));
                    /* from 3 stages on, the dot runs asynchronously: one group in flight in the loop,
                     * all waited for after it */
                    CHECK(count_of(ptx, "wgmma.fence.sync.aligned") == 1 &&
                              count_of(ptx, "wgmma.commit_group.sync.aligned") == 1 &&
                              count_of(ptx, "wgmma.wait_group.sync.aligned 0") == 1 &&
                              count_of(ptx, "wgmma.wait_group.sync.aligned 1") == (stages >= 3),
                          "%s: one fence, commit and wait (and a wait for one group in flight)", what);
                    if (stages >= 3) { /* S + 1 buffers where they fit: copies S - 1 ahead, else S - 2 */
                        int64_t stage = (int64_t)(bm + bn) * bk * es;
                        int ahead = (stages + 1) * stage <= 211 * 1024 ? stages - 1 : stages - 2;
                        CHECK(count_of(ptx, "cp.async.commit_group") == ahead + 1,
                              "%s: copies %d stages ahead, got %d prologue commits", what, ahead,
                              count_of(ptx, "cp.async.commit_group") - 1);
                    }
                    CHECK(count_of(ptx, "mma.sync") == 0 && count_of(ptx, "ldmatrix") == 0, "%s: no mma.sync", what);
                    if (mms[i].trans) CHECK(all_end_with(ptx, order ? ", 1, 1, 0, 0;" : ", 1, 1, 0, 1;"),
                                            "%s: transpose flags", what);
                    else CHECK(all_end_with(ptx, ", 1, 1;"), "%s: no transpose operands", what);
                    CHECK(strstr(ptx, ".align 1024 .b8 nr_smem") != NULL, "%s: shared memory on the swizzle period", what);
                    if (stages > 1)
                        CHECK(count_of(ptx, "cp.async.wait_group") >= 2 &&
                                  count_of(ptx, "fence.proxy.async.shared::cta") >= count_of(ptx, "cp.async.wait_group"),
                              "%s: fence.proxy.async after every cp.async wait", what);
                    else
                        CHECK(count_of(ptx, "fence.proxy.async.shared::cta") >= 1, "%s: fence after the stores", what);
                    free(ptx);
                }
    /* f16 and fp8 into f16 accumulators, int8 (B K-major) into i32 */
    static const struct {
        const char *name, *sig, *wg;
    } accs[] = {
        {"mm16", "*fp16:16, *fp16:16, *fp16:16, i32:16, 128, 128, 64, 3", "m64n128k16.f16.f16.f16"},
        {"mm16", "*fp8e4nv:16, *fp8e4nv:16, *fp16:16, i32:16, 128, 128, 64, 3", NULL},
        {"mmi", "*i8:16, *i8:16, *i32:16, i32:16, 128, 128, 128, 3", "m64n128k32.s32.s8.s8"},
    };
    for (size_t i = 0; i < NR_COUNTOF(accs); i++) {
        char what[64];
        snprintf(what, sizeof what, "%s_%zu", accs[i].name, i);
        char *ptx = compile(ctx, accs[i].name, accs[i].sig, "sm_90a", 4, 3, what);
        if (ptx && accs[i].wg)
            CHECK(count_of(ptx, accs[i].wg) == 2 * 4, "%s: %d x %s", what,
                  count_of(ptx, accs[i].wg), accs[i].wg);
        else if (ptx) CHECK(count_of(ptx, "mma.sync") > 0 && !count_of(ptx, "wgmma"), "%s: N-major 8-bit B on mma.sync", what);
        free(ptx);
    }
    /* A computed in registers */
    char *ptx = compile(ctx, "areg", "*fp16:16, *fp16:16, *fp32:16, i32:16, 64, 64, 32", "sm_90a", 4, 1, "areg");
    if (ptx) {
        CHECK(count_of(ptx, "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {") == 2, "areg: 2 wgmma");
        CHECK(strstr(ptx, "}, {%r") != NULL && all_end_with(ptx, ", 1, 1, 1;"), "areg: A from registers, B N-major");
    }
    free(ptx);
    /* where wgmma does not apply */
    ptx = compile(ctx, "mm", "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 128, 128, 64, \"tf32\", 3", "sm_90", 4, 3, "sm_90");
    if (ptx) CHECK(count_of(ptx, "wgmma") == 0 && count_of(ptx, "mma.sync") > 0, "sm_90 (no 'a') keeps mma.sync");
    free(ptx);
    ptx = compile(ctx, "mm", "*fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, i32:16, i32:16, 1, 1, i32:16, i32:16, 128, 128, 32, \"tf32x3\", 3", "sm_90a", 4, 3, "tf32x3");
    if (ptx) CHECK(count_of(ptx, "wgmma") == 0 && count_of(ptx, "mma.sync") > 0, "tf32x3 keeps mma.sync");
    free(ptx);
    ptx = compile(ctx, "mm", "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 128, 128, 64, \"tf32\", 3", "sm_90a", 2, 3, "two_warps");
    if (ptx) CHECK(count_of(ptx, "wgmma") == 0 && count_of(ptx, "mma.sync") > 0, "2 warps keep mma.sync");
    free(ptx);
    nr_context_destroy(ctx);
}

int main(void) {
    const char *s = getenv("NR_TEST_SEED");
    seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed;
    keep_dir = getenv("NR_TEST_KEEP");
    have_ptxas = access(PTXAS, X_OK) == 0;
    if (!have_ptxas) printf("test_wgmma: %s not found; PTX is emitted but not assembled\n", PTXAS);
    test_descriptors();
    test_tma_boxes();
    test_model();
    test_tma_kernel();
    test_kernels();
    printf("test_wgmma: %d checks, %d failures, %d ptxas runs\n", checks, failures, assembled);
    return failures ? 1 : 0;
}
