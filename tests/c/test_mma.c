/* test_mma.c - tensor cores in the PTX emitter.
 *
 *   warp model  the emitter's plans - ldmatrix (nr_ldsm_plan), stmatrix
 *               (nr_stsm_plan), ld.shared / st.shared runs
 *               (nr_smem_access), conversion scratch
 *               (nr_ptx_conv_scratch_map) and mma.sync (nr_mma_plan) - run
 *               on a CPU model of every lane of every warp: shared memory is
 *               filled through nr_shared_offset (the layout contract), and
 *               ldmatrix and mma.sync behave as the PTX ISA defines them,
 *               with the fragment tables written out here independently of
 *               the emitter.  Loaded registers must hold what the linear
 *               layouts say, and the accumulators the reference matmul
 *               exactly (small integer inputs make every order of summation
 *               exact), for every operand dtype and accumulator, tf32,
 *               tf32x3, fp8 on sm_80 (as f16 products), both storage orders
 *               of A and B, swizzled and plain buffers, batches, 1 to 8 warps
 *               and many repetitions.  ldmatrix of the staging buffers must
 *               be free of bank conflicts.  The sm_90 epilogue: 16-bit
 *               accumulators (mma versions 2 and 3) stored by stmatrix (the
 *               ISA's table written out too) into the conversion scratch,
 *               every byte once and without bank conflicts, and reloaded in
 *               row- and column-major blocked layouts.
 *   words       packing and unpacking 8- and 16-bit elements in 32-bit words
 *               (evaluation mode)
 *   kernels     matmuls from source through the whole pipeline for sm_80 and
 *               sm_90, assembled with ptxas when /usr/local/cuda/bin/ptxas
 *               exists: every dtype, accumulator and precision, 1 and 3
 *               stages, 4 and 8 warps, both storage orders; the text shows
 *               mma.sync of the right types, ldmatrix, cp.async with zero
 *               fill, v2 stores from the accumulator layout, and stmatrix
 *               for 16-bit results on sm_90 only.
 *
 * Random inputs are seeded from the clock (NR_TEST_SEED=n repeats a run).
 * NR_TEST_KEEP=dir keeps every emitted PTX file there. */
#include "fp.h"
#include "gpu_impl.h"
#include "nereid.h"
#include "ptx.h"

#include <math.h>
#include <stdarg.h>
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
static uint32_t f2u(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float u2f(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static double val_of(NrDtype dt, uint32_t bits) {
    switch (dt) {
    case NR_DT_F16: return nr_f16_to_f32((uint16_t)bits);
    case NR_DT_BF16: return nr_bf16_to_f32((uint16_t)bits);
    case NR_DT_F8E4NV: return nr_f8e4nv_to_f32((uint8_t)bits);
    case NR_DT_F8E5: return nr_f8e5_to_f32((uint8_t)bits);
    case NR_DT_F32: return u2f(bits);
    case NR_DT_I8: return (int8_t)bits;
    case NR_DT_U8: return (uint8_t)bits;
    case NR_DT_I32: return (int32_t)bits;
    default: return 0;
    }
}

static uint32_t bits_of(NrDtype dt, double x) {
    switch (dt) {
    case NR_DT_F16: return nr_fp_round(x, NR_FPF_F16, false);
    case NR_DT_BF16: return nr_fp_round(x, NR_FPF_BF16, false);
    case NR_DT_F8E4NV: return nr_fp_round(x, NR_FPF_F8E4NV, false);
    case NR_DT_F8E5: return nr_fp_round(x, NR_FPF_F8E5, false);
    case NR_DT_F32: return f2u((float)x);
    case NR_DT_I8: return (uint32_t)(int8_t)(int)x & 0xff;
    case NR_DT_U8: return (uint32_t)(uint8_t)(int)x;
    case NR_DT_I32: return (uint32_t)(int32_t)(int64_t)x;
    default: return 0;
    }
}

/* A random element: small integers (exact in every dtype and every order
 * of summation), full-range bytes for int8, or any f32 (tf32x3). */
static uint32_t rand_elem(NrDtype dt, bool wide) {
    if (dt == NR_DT_I8 || dt == NR_DT_U8) return (uint32_t)(rnd() & 0xff);
    if (wide) return f2u((float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0));
    return bits_of(dt, (double)((int)(rnd() % 7) - 3));
}

static float tf32(float x) { return nr_f32_round_tf32(x); }

/* --- the PTX ISA, written out ---------------------------------------------------------------------------- */
/* Fragment tables of mma.m16n8k16 (16-bit), m16n8k8 (.tf32) and m16n8k32
 * (8-bit): row and column of a_i, b_i, c_i in lane (groupID, threadID_in_group). */
static void isa_a(NrMmaShape s, int i, int lane, int *row, int *col) {
    int gid = lane >> 2, tig = lane % 4;
    if (s == NR_MMA_K16) {
        *row = (i < 2 || (i >= 4 && i < 6)) ? gid : gid + 8;
        *col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else if (s == NR_MMA_K8) {
        *row = (i == 0 || i == 2) ? gid : gid + 8;
        *col = (i < 2) ? tig : tig + 4;
    } else {
        *row = (i < 4 || (i >= 8 && i < 12)) ? gid : gid + 8;
        *col = tig * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    }
}

static void isa_b(NrMmaShape s, int i, int lane, int *row, int *col) {
    int gid = lane >> 2, tig = lane % 4;
    *col = gid;
    if (s == NR_MMA_K16) *row = tig * 2 + (i & 1) + (i >= 2 ? 8 : 0);
    else if (s == NR_MMA_K8) *row = i == 0 ? tig : tig + 4;
    else *row = tig * 4 + (i & 3) + (i >= 4 ? 16 : 0);
}

static void isa_c(int i, int lane, int *row, int *col) {
    int gid = lane >> 2, tig = lane % 4;
    *row = i < 2 ? gid : gid + 8;
    *col = tig * 2 + (i & 1);
}

/* ldmatrix .m8n8 .b16: lanes 8j..8j+7 give the row addresses of matrix j;
 * without .trans lane l receives row l/4, 32-bit column l%4 of each matrix;
 * with .trans the two 16-bit halves come from rows 2(l%4) and 2(l%4)+1 at
 * 16-bit column l/4.  Returns the bank conflicts (extra wavefronts). */
static int isa_ldmatrix(const uint8_t *mem, int64_t size, const int64_t *addr, int nmat, bool trans, uint32_t out[32][4],
                        bool *bad) {
    int conflicts = 0;
    for (int j = 0; j < nmat; j++) {
        int used[8] = {0};
        int64_t seen[8];
        int nseen = 0;
        for (int i = 0; i < 8; i++) {
            int64_t a = addr[8 * j + i];
            if (a < 0 || a % 16 || a + 16 > size) {
                *bad = true;
                return 0;
            }
            bool dup = false;
            for (int q = 0; q < nseen; q++) dup = dup || seen[q] == a;
            if (dup) continue;
            seen[nseen++] = a;
            if (used[(a / 16) % 8]++) conflicts++;
        }
        for (int l = 0; l < 32; l++) {
            uint32_t w = 0;
            if (!trans) {
                memcpy(&w, mem + addr[8 * j + l / 4] + 4 * (l % 4), 4);
            } else {
                for (int e = 0; e < 2; e++) {
                    uint16_t h;
                    memcpy(&h, mem + addr[8 * j + 2 * (l % 4) + e] + 2 * (l / 4), 2);
                    w |= (uint32_t)h << (16 * e);
                }
            }
            out[l][j] = w;
        }
    }
    return conflicts;
}

/* stmatrix .m8n8 .b16 (sm_90), the mirror of ldmatrix: lanes 8j..8j+7 give
 * the row addresses of matrix j; without .trans lane l's register j holds
 * row l/4, 32-bit column l%4; with .trans its two 16-bit halves go to rows
 * 2(l%4) and 2(l%4)+1 at 16-bit column l/4.  Counts each byte written in
 * `hits`; returns the bank conflicts (extra wavefronts). */
static int isa_stmatrix(uint8_t *mem, uint8_t *hits, int64_t size, const int64_t *addr, int nmat, bool trans,
                        const uint32_t in[32][4], bool *bad) {
    int conflicts = 0;
    for (int j = 0; j < nmat; j++) {
        int used[8] = {0};
        for (int i = 0; i < 8; i++) {
            int64_t a = addr[8 * j + i];
            if (a < 0 || a % 16 || a + 16 > size) {
                *bad = true;
                return 0;
            }
            if (used[(a / 16) % 8]++) conflicts++;
        }
        for (int l = 0; l < 32; l++)
            for (int e = 0; e < 2; e++) {
                uint16_t h = (uint16_t)(in[l][j] >> (16 * e));
                int64_t a = trans ? addr[8 * j + 2 * (l % 4) + e] + 2 * (l / 4) : addr[8 * j + l / 4] + 4 * (l % 4) + 2 * e;
                memcpy(mem + a, &h, 2);
                hits[a]++;
                hits[a + 1]++;
            }
    }
    return conflicts;
}

/* --- layouts ------------------------------------------------------------------------------------------- */
typedef struct Lay {
    int32_t id;
    NrPtxLay P;      /* the emitter's flat form */
    NrLinear ll;     /* the layout contract */
} Lay;

static bool lay_make(NrModule *m, NrArena *a, int32_t id, NrDtype dt, int rank, const int32_t *shape, int nw, Lay *L) {
    L->id = id;
    NrTypeId t = nr_type_with_layout(m, nr_type_block(m, nr_type_scalar(m, dt), rank, shape), id);
    bool ok = nr_ptx_lay_build(m, id, nr_type(m, t), nw, a, &L->P) && nr_layout_linear(m, id, rank, shape, nw, &L->ll);
    CHECK(ok, "layout #%d over %dx%d", id, shape[0], shape[1]);
    return ok;
}

/* Row-major index of coordinates. */
static int64_t rm(int rank, const int32_t *shape, const int32_t *c) {
    int64_t x = 0;
    for (int d = 0; d < rank; d++) x = x * shape[d] + c[d];
    return x;
}

/* A shared layout with 16-byte vectors along dimension `fast` (swizzled
 * over 128-byte rows as the pipeline stages tiles), plain, or nvmma. */
static int32_t smem_layout(NrModule *m, int rank, const int32_t *shape, int fast, int es, int kind) {
    int32_t order[NR_MAX_RANK];
    order[0] = fast;
    for (int d = rank - 1, k = 1; d >= 0; d--)
        if (d != fast) order[k++] = d;
    int64_t cols = shape[fast], vec = 16 / es > cols ? cols : 16 / es;
    if (kind == 0) return nr_layout_shared(m, rank, (int)vec, 1, 1, order);
    if (kind == 2) return nr_layout_nvmma(m, rank, cols * es >= 128 ? 128 : cols * es >= 64 ? 64 : 32, order);
    int64_t per_phase = 128 / (cols * es) < 1 ? 1 : 128 / (cols * es);
    int64_t max_phase = 8 / per_phase > cols / vec ? cols / vec : 8 / per_phase;
    if (max_phase < 1) max_phase = 1;
    return nr_layout_shared(m, rank, (int)vec, (int)per_phase, (int)max_phase, order);
}

/* --- the warp model: loads ---------------------------------------------------------------------------- */
typedef struct Regs {
    int nw, R;
    uint32_t *v; /* [warp][lane][reg] */
} Regs;

static uint32_t *reg_at(Regs *g, int w, int lane, int r) { return &g->v[((size_t)w * 32 + (size_t)lane) * (size_t)g->R + (size_t)r]; }

static void regs_init(Regs *g, int nw, int R) {
    g->nw = nw;
    g->R = R;
    g->v = calloc((size_t)nw * 32 * (size_t)R, sizeof(uint32_t));
}

static uint32_t xor_bits(const uint32_t *img, int n, uint32_t x) {
    uint32_t y = 0;
    for (int i = 0; i < n; i++)
        if (x >> i & 1) y ^= img[i];
    return y;
}

/* Fills mem (a buffer of shared layout sl) with matrix x: every element at
 * nr_shared_offset of its coordinates. */
static void fill_smem(NrModule *m, int32_t sl, int rank, const int32_t *shape, int es, const uint32_t *x, uint8_t *mem) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++) {
        int32_t c[NR_MAX_RANK];
        int64_t t = i;
        for (int d = rank - 1; d >= 0; d--) c[d] = (int32_t)(t % shape[d]), t /= shape[d];
        int64_t o = nr_shared_offset(m, sl, rank, shape, es, c);
        memcpy(mem + o * es, &x[i], (size_t)es);
    }
}

typedef struct LoadStats {
    bool ldsm, trans;
    int conflicts, instrs;
} LoadStats;

/* Runs the emitter's load of layout L from buffer S on every lane, into g.
 * ldmatrix when the emitter plans it, else its ld.shared runs. */
static void model_load(NrArena *a, const Lay *L, const NrSmemMap *S, const uint8_t *mem, bool want_ldsm, Regs *g,
                       LoadStats *st) {
    const NrPtxLay *P = &L->P;
    int es = S->es, R = 1 << P->nreg, nw = 1 << P->nwarp;
    regs_init(g, nw, R);
    memset(st, 0, sizeof *st);
    NrLdsmPlan pl;
    if (want_ldsm && nr_ldsm_plan(P, S, a, &pl)) {
        st->ldsm = true;
        st->trans = pl.trans;
        CHECK(pl.epw * pl.es == 4 && pl.ninstr * pl.ins[0].nmat * pl.epw == R, "ldmatrix plan covers the registers");
        for (int w = 0; w < nw; w++)
            for (int h = 0; h < pl.ninstr; h++) {
                const NrLdsmInstr *in = &pl.ins[h];
                int64_t addr[32];
                for (int lane = 0; lane < 32; lane++)
                    addr[lane] = (int64_t)es * (xor_bits(pl.lane, 5, (uint32_t)lane) ^
                                                xor_bits(pl.warp, pl.nwarp, (uint32_t)w) ^ in->off);
                uint32_t out[32][4];
                bool bad = false;
                st->conflicts += isa_ldmatrix(mem, S->bytes, addr, in->nmat, pl.trans, out, &bad);
                st->instrs++;
                CHECK(!bad, "ldmatrix row address misaligned or outside the buffer");
                if (bad) return;
                for (int lane = 0; lane < 32; lane++)
                    for (int j = 0; j < in->nmat; j++)
                        for (int e = 0; e < pl.epw; e++)
                            *reg_at(g, w, lane, in->word[j] * pl.epw + e) =
                                es == 4 ? out[lane][j] : out[lane][j] >> (8 * es * e) & ((1u << (8 * es)) - 1);
            }
        return;
    }
    NrSmemAccess acc;
    nr_smem_access(P, S, 16, a, &acc);
    for (int w = 0; w < nw; w++)
        for (int lane = 0; lane < 32; lane++) {
            uint32_t t = xor_bits(acc.lane, acc.nlane, (uint32_t)lane) ^ xor_bits(acc.warp, acc.nwarp, (uint32_t)w);
            for (int r = 0; r < R; r++) {
                int64_t o = (int64_t)(t ^ acc.reg[r]);
                /* runs of vec registers are consecutive elements */
                CHECK((t ^ acc.reg[r - r % acc.vec]) + (uint32_t)(r % acc.vec) == (uint32_t)o, "vector run");
                CHECK(o >= 0 && (o + 1) * es <= S->bytes, "ld.shared outside the buffer");
                uint32_t v = 0;
                memcpy(&v, mem + o * es, (size_t)es);
                *reg_at(g, w, lane, r) = v;
            }
        }
}

/* Every register of g holds the element of x (row-major over shape) the
 * layout contract puts there. */
static void check_regs(const Lay *L, Regs *g, const uint32_t *x, const char *what) {
    int bad = 0;
    for (int w = 0; w < g->nw; w++)
        for (int lane = 0; lane < 32; lane++)
            for (int r = 0; r < g->R; r++) {
                int32_t c[NR_MAX_RANK];
                nr_linear_coords(&L->ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, c);
                uint32_t want = x[rm(L->ll.rank, L->ll.shape, c)];
                if (*reg_at(g, w, lane, r) != want && bad++ < 3)
                    CHECK(0, "%s: warp %d lane %d reg %d holds 0x%x, expected 0x%x", what, w, lane, r,
                          *reg_at(g, w, lane, r), want);
            }
    CHECK(bad == 0, "%s: %d registers wrong", what, bad);
}

/* Stores layout L's registers (holding x per the contract) into S by the
 * emitter's st.shared runs: owners only, every element written once. */
static void model_store(NrArena *a, const Lay *L, const NrSmemMap *S, const uint32_t *x, uint8_t *mem) {
    const NrPtxLay *P = &L->P;
    int es = S->es, R = 1 << P->nreg, nw = 1 << P->nwarp;
    int64_t n = S->bytes / es;
    uint8_t *written = calloc((size_t)n, 1);
    NrSmemAccess acc;
    nr_smem_access(P, S, 16, a, &acc);
    for (int w = 0; w < nw; w++)
        for (int lane = 0; lane < 32; lane++) {
            if ((lane & (int)P->rep_lane) || (w & (int)P->rep_warp)) continue; /* not an owner */
            uint32_t t = xor_bits(acc.lane, acc.nlane, (uint32_t)lane) ^ xor_bits(acc.warp, acc.nwarp, (uint32_t)w);
            for (int r = 0; r < R; r++) {
                if (P->dup[r]) continue;
                int64_t o = (int64_t)(t ^ acc.reg[r]);
                CHECK(o >= 0 && o < n, "st.shared outside the buffer");
                if (o < 0 || o >= n) continue;
                int32_t c[NR_MAX_RANK];
                nr_linear_coords(&L->ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, c);
                memcpy(mem + o * es, &x[rm(L->ll.rank, L->ll.shape, c)], (size_t)es);
                CHECK(!written[o], "element %lld stored twice", (long long)o);
                written[o] = 1;
            }
        }
    for (int64_t i = 0; i < n; i++) CHECK(written[i], "element %lld never stored", (long long)i);
    free(written);
}

/* Stores layout L's registers (holding x per the contract) into S by the
 * emitter's stmatrix plan on every lane of every warp; false if there is
 * no plan.  Every element must be written exactly once. */
static bool model_store_stsm(NrArena *a, const Lay *L, const NrSmemMap *S, const uint32_t *x, uint8_t *mem,
                             LoadStats *st) {
    const NrPtxLay *P = &L->P;
    int es = S->es, R = 1 << P->nreg, nw = 1 << P->nwarp;
    memset(st, 0, sizeof *st);
    NrLdsmPlan pl;
    if (!nr_stsm_plan(P, S, a, &pl)) return false;
    st->ldsm = true;
    st->trans = pl.trans;
    CHECK(es == 2 && pl.epw == 2 && pl.ninstr * pl.ins[0].nmat * pl.epw == R, "stmatrix plan covers the registers");
    uint8_t *hits = calloc((size_t)S->bytes, 1);
    for (int w = 0; w < nw; w++)
        for (int h = 0; h < pl.ninstr; h++) {
            const NrLdsmInstr *in = &pl.ins[h];
            int64_t addr[32];
            uint32_t words[32][4];
            for (int lane = 0; lane < 32; lane++) {
                addr[lane] = (int64_t)es * (xor_bits(pl.lane, 5, (uint32_t)lane) ^
                                            xor_bits(pl.warp, pl.nwarp, (uint32_t)w) ^ in->off);
                for (int j = 0; j < in->nmat; j++) {
                    uint32_t v = 0;
                    for (int e = 0; e < 2; e++) {
                        int32_t c[NR_MAX_RANK];
                        nr_linear_coords(&L->ll, (uint32_t)(in->word[j] * 2 + e), (uint32_t)lane, (uint32_t)w, c);
                        v |= (x[rm(L->ll.rank, L->ll.shape, c)] & 0xffff) << (16 * e);
                    }
                    words[lane][j] = v;
                }
            }
            bool bad = false;
            st->conflicts += isa_stmatrix(mem, hits, S->bytes, addr, in->nmat, pl.trans, words, &bad);
            st->instrs++;
            CHECK(!bad, "stmatrix row address misaligned or outside the buffer");
            if (bad) {
                free(hits);
                return true;
            }
        }
    int64_t wrong = 0;
    for (int64_t i = 0; i < S->bytes; i++) wrong += hits[i] != 1;
    CHECK(wrong == 0, "stmatrix: %lld bytes not written exactly once", (long long)wrong);
    free(hits);
    return true;
}

/* --- the warp model: mma -------------------------------------------------------------------------------- */
typedef struct DotCfg {
    NrDtype adt, bdt, cdt;
    int kw;
    NrMmaMode mode;
    int batch, M, N, K;
    int nw, wm, wn;
    int a_fast, b_fast;     /* dimension of A (B) contiguous in shared memory: 0 rows, 1 columns */
    int smem_kind;          /* 0 plain, 1 swizzled staging, 2 nvmma */
    bool via_regs;          /* operands from a blocked layout through convert_layout's scratch */
} DotCfg;

/* Operand value of slot register r as the instruction sees it. */
static double operand_val(const DotCfg *c, NrDtype dt, uint32_t bits, int part) {
    double x = val_of(dt, bits);
    if (dt != NR_DT_F32) return x;
    float f = (float)x, head = tf32(f);
    if (c->mode == NR_MMA_NATIVE || part == 1) return head;
    return tf32(f - head);
}

static double round_acc(NrDtype dt, double x) {
    if (dt == NR_DT_F32) return (float)x;
    if (dt == NR_DT_F16) return nr_f16_to_f32((uint16_t)nr_fp_round(x, NR_FPF_F16, false));
    return (double)(int32_t)(uint32_t)(int64_t)x;
}

/* Executes the plan on every warp: registers of A, B and the accumulator
 * in, the result's registers out (as doubles). */
static void model_mma(const DotCfg *c, const NrMmaPlan *pl, Regs *ga, Regs *gb, const double *acc, double *out, int R,
                      int nw) {
    memcpy(out, acc, sizeof(double) * (size_t)nw * 32 * (size_t)R);
    int kin = pl->shape == NR_MMA_K16 ? 16 : pl->shape == NR_MMA_K8 ? 8 : 32;
    for (int w = 0; w < nw; w++)
        for (int i = 0; i < pl->ninstr; i++) {
            const NrMmaInstr *in = &pl->ins[i];
            double A[16][32], B[32][8], C[16][8];
            int na[16][32] = {{0}}, nb[32][8] = {{0}}, nc[16][8] = {{0}};
            for (int lane = 0; lane < 32; lane++) {
                int row, col;
                for (int s = 0; s < pl->na; s++) {
                    isa_a(pl->shape, s, lane, &row, &col);
                    A[row][col] = operand_val(c, c->adt, *reg_at(ga, w, lane, in->a[s]), in->apart);
                    na[row][col]++;
                }
                for (int s = 0; s < pl->nb; s++) {
                    isa_b(pl->shape, s, lane, &row, &col);
                    B[row][col] = operand_val(c, c->bdt, *reg_at(gb, w, lane, in->b[s]), in->bpart);
                    nb[row][col]++;
                }
                for (int s = 0; s < 4; s++) {
                    isa_c(s, lane, &row, &col);
                    C[row][col] = out[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)in->c[s]];
                    nc[row][col]++;
                }
            }
            bool cover = true;
            for (int r = 0; r < 16; r++)
                for (int k = 0; k < kin; k++) cover = cover && na[r][k] == 1;
            for (int k = 0; k < kin; k++)
                for (int n = 0; n < 8; n++) cover = cover && nb[k][n] == 1;
            for (int r = 0; r < 16; r++)
                for (int n = 0; n < 8; n++) cover = cover && nc[r][n] == 1;
            CHECK(cover, "an instruction's fragments do not cover its tiles once");
            for (int lane = 0; lane < 32; lane++)
                for (int s = 0; s < 4; s++) {
                    int row, col;
                    isa_c(s, lane, &row, &col);
                    double d = C[row][col];
                    for (int k = 0; k < kin; k++) d += A[row][k] * B[k][col];
                    out[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)in->c[s]] = round_acc(c->cdt, d);
                }
        }
}

static int32_t mma_layout(NrModule *m, const DotCfg *c) {
    int rank = c->batch ? 3 : 2;
    int32_t wpc[3] = {1, 1, 1};
    wpc[rank - 2] = c->wm;
    wpc[rank - 1] = c->wn;
    int32_t instr[3] = {16, 8, 8 * c->kw};
    return nr_layout_mma(m, 2, rank, wpc, instr);
}

/* One whole dot on the model; returns false if something was not planned. */
static void run_dot(const DotCfg *c) {
    char what[200];
    snprintf(what, sizeof what, "%sx%s->%s kw%d mode%d b%d %dx%dx%d w%d(%dx%d) fast %d/%d smem%d%s", dn(c->adt),
             dn(c->bdt), dn(c->cdt), c->kw, (int)c->mode, c->batch, c->M, c->N, c->K, c->nw, c->wm, c->wn,
             c->a_fast, c->b_fast, c->smem_kind, c->via_regs ? " regs" : "");
    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    m->num_warps = c->nw;
    int rank = c->batch ? 3 : 2, Bt = c->batch ? c->batch : 1;
    int32_t cl = mma_layout(m, c);
    int32_t al = nr_layout_dot_op(m, cl, 0, c->kw), bl = nr_layout_dot_op(m, cl, 1, c->kw);
    int32_t sa[3], sb[3], sc[3];
    int off = rank - 2;
    sa[0] = sb[0] = sc[0] = Bt;
    sa[off] = c->M, sa[off + 1] = c->K;
    sb[off] = c->K, sb[off + 1] = c->N;
    sc[off] = c->M, sc[off + 1] = c->N;
    Lay A, B, C;
    if (!lay_make(m, &a, al, c->adt, rank, sa, c->nw, &A) || !lay_make(m, &a, bl, c->bdt, rank, sb, c->nw, &B) ||
        !lay_make(m, &a, cl, c->cdt, rank, sc, c->nw, &C)) {
        nr_arena_free(&a);
        return;
    }
    int esa = nr_dtype_info[c->adt].bytes, esb = nr_dtype_info[c->bdt].bytes;
    int64_t na = (int64_t)Bt * c->M * c->K, nb = (int64_t)Bt * c->K * c->N, nc = (int64_t)Bt * c->M * c->N;
    uint32_t *xa = malloc(sizeof(uint32_t) * (size_t)na), *xb = malloc(sizeof(uint32_t) * (size_t)nb);
    double *xc = malloc(sizeof(double) * (size_t)nc);
    bool wide = c->mode == NR_MMA_TF32X3;
    for (int64_t i = 0; i < na; i++) xa[i] = rand_elem(c->adt, wide);
    for (int64_t i = 0; i < nb; i++) xb[i] = rand_elem(c->bdt, wide);
    for (int64_t i = 0; i < nc; i++) xc[i] = (double)((int)(rnd() % 9) - 4);
    /* Operands into registers: from a staged buffer, or from a blocked
     * layout through the conversion's scratch. */
    Regs ga = {0}, gb = {0};
    LoadStats la, lb;
    uint8_t *ma = calloc((size_t)na, (size_t)esa), *mb = calloc((size_t)nb, (size_t)esb);
    NrSmemMap SA, SB;
    if (!c->via_regs) {
        int32_t la_id = smem_layout(m, rank, sa, off + c->a_fast, esa, c->smem_kind);
        int32_t lb_id = smem_layout(m, rank, sb, off + c->b_fast, esb, c->smem_kind);
        CHECK(nr_smem_map(m, la_id, rank, sa, esa, &SA) && nr_smem_map(m, lb_id, rank, sb, esb, &SB),
              "%s: shared maps", what);
        fill_smem(m, la_id, rank, sa, esa, xa, ma);
        fill_smem(m, lb_id, rank, sb, esb, xb, mb);
    } else {
        /* sources: 16-byte vectors along the fast dimension, as coalesced loads give */
        Lay srca, srcb;
        int32_t spt[3] = {1, 1, 1}, ord[3] = {0, 0, 0};
        spt[off + c->a_fast] = 16 / esa;
        ord[0] = off + c->a_fast, ord[1] = off + 1 - c->a_fast, ord[2] = 0;
        int32_t bla = nr_gpu_blocked_for(m, rank, sa, spt, ord, c->nw);
        spt[off + c->a_fast] = 1;
        spt[off + c->b_fast] = 16 / esb;
        ord[0] = off + c->b_fast, ord[1] = off + 1 - c->b_fast;
        int32_t blb = nr_gpu_blocked_for(m, rank, sb, spt, ord, c->nw);
        if (!lay_make(m, &a, bla, c->adt, rank, sa, c->nw, &srca) || !lay_make(m, &a, blb, c->bdt, rank, sb, c->nw, &srcb))
            goto done;
        CHECK(nr_ptx_conv_scratch_map(m, &srca.P, &A.P, esa, &SA) && nr_ptx_conv_scratch_map(m, &srcb.P, &B.P, esb, &SB),
              "%s: conversion scratch", what);
        model_store(&a, &srca, &SA, xa, ma);
        model_store(&a, &srcb, &SB, xb, mb);
    }
    model_load(&a, &A, &SA, ma, true, &ga, &la);
    model_load(&a, &B, &SB, mb, true, &gb, &lb);
    char wa[240], wb[240];
    snprintf(wa, sizeof wa, "%s: A", what);
    snprintf(wb, sizeof wb, "%s: B", what);
    check_regs(&A, &ga, xa, wa);
    check_regs(&B, &gb, xb, wb);
    /* ldmatrix where it fits: 16-bit operands always, 8- and 32-bit ones
     * with k contiguous; swizzled staging without bank conflicts. */
    bool fits_a = esa == 2 || c->a_fast == 1 || c->via_regs, fits_b = esb == 2 || c->b_fast == 0 || c->via_regs;
    if (c->smem_kind != 0 || c->via_regs) {
        CHECK(la.ldsm == fits_a && lb.ldsm == fits_b, "%s: ldmatrix for A %d (want %d), B %d (want %d)", what, la.ldsm,
              fits_a, lb.ldsm, fits_b);
    }
    if (c->smem_kind == 1 || c->via_regs)
        CHECK(la.conflicts == 0 && lb.conflicts == 0, "%s: ldmatrix bank conflicts A %d, B %d", what, la.conflicts,
              lb.conflicts);
    /* The mma plan on the registers. */
    NrMmaPlan pl;
    char why[160] = "";
    bool planned = nr_mma_plan(&A.P, &B.P, &C.P, c->kw, c->mode, &a, &pl, why, sizeof why);
    CHECK(planned, "%s: no mma plan: %s", what, why);
    if (planned) {
        int R = 1 << C.P.nreg, nw = 1 << C.P.nwarp;
        double *acc = malloc(sizeof(double) * (size_t)nw * 32 * (size_t)R), *out = malloc(sizeof(double) * (size_t)nw * 32 * (size_t)R);
        for (int w = 0; w < nw; w++)
            for (int lane = 0; lane < 32; lane++)
                for (int r = 0; r < R; r++) {
                    int32_t cc[NR_MAX_RANK];
                    nr_linear_coords(&C.ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, cc);
                    acc[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)r] = xc[rm(rank, sc, cc)];
                }
        model_mma(c, &pl, &ga, &gb, acc, out, R, nw);
        int bad = 0;
        double worst = 0;
        for (int w = 0; w < nw; w++)
            for (int lane = 0; lane < 32; lane++)
                for (int r = 0; r < R; r++) {
                    int32_t cc[NR_MAX_RANK];
                    nr_linear_coords(&C.ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, cc);
                    int b = rank == 3 ? cc[0] : 0, mm = cc[off], nn = cc[off + 1];
                    double ref = xc[rm(rank, sc, cc)], mag = fabs(ref);
                    for (int k = 0; k < c->K; k++) {
                        double x = val_of(c->adt, xa[((int64_t)b * c->M + mm) * c->K + k]);
                        double y = val_of(c->bdt, xb[((int64_t)b * c->K + k) * c->N + nn]);
                        if (c->adt == NR_DT_F32 && c->mode == NR_MMA_NATIVE) x = tf32((float)x), y = tf32((float)y);
                        ref += x * y;
                        mag += fabs(x * y);
                    }
                    if (c->cdt == NR_DT_I32) ref = (double)(int32_t)(uint32_t)(int64_t)ref;
                    double got = out[((size_t)w * 32 + (size_t)lane) * (size_t)R + (size_t)r];
                    double err = fabs(got - ref) / (mag > 0 ? mag : 1);
                    if (err > worst) worst = err;
                    /* tf32x3: the dropped tail*tail and tf32 rounding of the tails, well below tf32's 2^-11 */
                    bool ok = wide ? err <= 3e-6 : got == ref;
                    if (!ok && bad++ < 3)
                        CHECK(0, "%s: warp %d lane %d c%d (%d, %d, %d) = %.9g, expected %.9g", what, w, lane, r, b, mm,
                              nn, got, ref);
                }
        CHECK(bad == 0, "%s: %d accumulators wrong (worst relative error %.3g)", what, bad, worst);
        free(acc);
        free(out);
    }
done:
    free(ga.v);
    free(gb.v);
    free(ma);
    free(mb);
    free(xa);
    free(xb);
    free(xc);
    nr_arena_free(&a);
}

/* Triton's warp arrangement (as gpu-convert). */
static void warps_for(int M, int N, int nw, int *wm, int *wn) {
    *wm = *wn = 1;
    while (*wm * *wn < nw) {
        if (M / 16 / *wm >= N / (8 * *wn)) {
            if (*wm < M / 16) *wm *= 2;
            else *wn *= 2;
        } else {
            *wn *= 2;
        }
    }
}

static void test_warp_model(void) {
    static const struct {
        NrDtype a, b, c;
        int kw;
        NrMmaMode mode;
    } kinds[] = {
        {NR_DT_F16, NR_DT_F16, NR_DT_F32, 2, NR_MMA_NATIVE},
        {NR_DT_F16, NR_DT_F16, NR_DT_F16, 2, NR_MMA_NATIVE},
        {NR_DT_BF16, NR_DT_BF16, NR_DT_F32, 2, NR_MMA_NATIVE},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, 1, NR_MMA_NATIVE},
        {NR_DT_F32, NR_DT_F32, NR_DT_F32, 1, NR_MMA_TF32X3},
        {NR_DT_I8, NR_DT_I8, NR_DT_I32, 4, NR_MMA_NATIVE},
        {NR_DT_F8E4NV, NR_DT_F8E4NV, NR_DT_F32, 4, NR_MMA_NATIVE},
        {NR_DT_F8E5, NR_DT_F8E4NV, NR_DT_F16, 4, NR_MMA_NATIVE},
        {NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F32, 4, NR_MMA_F8_AS_F16},
        {NR_DT_F8E5, NR_DT_F8E5, NR_DT_F16, 4, NR_MMA_F8_AS_F16},
    };
    static const int shapes[][4] = {
        /* batch, M, N, K */
        {0, 16, 8, 32},  {0, 16, 16, 32}, {0, 32, 32, 32},  {0, 64, 64, 32},  {0, 128, 128, 32},
        {0, 64, 128, 64}, {0, 128, 64, 128}, {0, 16, 256, 32}, {0, 256, 16, 64}, {2, 32, 32, 32},
    };
    int runs = 0;
    for (size_t ki = 0; ki < NR_COUNTOF(kinds); ki++)
        for (size_t si = 0; si < NR_COUNTOF(shapes); si++)
            for (int nw = 1; nw <= 8; nw *= 2)
                for (int fast = 0; fast < 4; fast++)
                    for (int smem = 0; smem < 4; smem++) {
                        DotCfg c;
                        memset(&c, 0, sizeof c);
                        c.adt = kinds[ki].a, c.bdt = kinds[ki].b, c.cdt = kinds[ki].c;
                        c.kw = kinds[ki].kw, c.mode = kinds[ki].mode;
                        c.batch = shapes[si][0], c.M = shapes[si][1], c.N = shapes[si][2], c.K = shapes[si][3];
                        if (c.batch && nw > 2) continue;
                        /* A row-major / column-major, B likewise */
                        c.a_fast = fast & 1 ? 0 : 1, c.b_fast = fast & 2 ? 0 : 1;
                        c.smem_kind = smem == 3 ? 1 : smem;
                        c.via_regs = smem == 3;
                        c.nw = nw;
                        if (c.batch) {
                            c.wm = c.wn = 1;
                            c.nw = 1;
                        } else {
                            warps_for(c.M, c.N, nw, &c.wm, &c.wn);
                        }
                        /* fewer combinations for the big shapes */
                        if (c.M * c.N * c.K > 64 * 64 * 64 && (fast != 0 || nw != 4) && !(smem == 1 && fast == 3))
                            continue;
                        run_dot(&c);
                        runs++;
                    }
    /* Warp arrangements other than Triton's: all warps along one side. */
    for (int nw = 2; nw <= 8; nw *= 2)
        for (int side = 0; side < 2; side++) {
            DotCfg c;
            memset(&c, 0, sizeof c);
            c.adt = c.bdt = NR_DT_F16, c.cdt = NR_DT_F32, c.kw = 2, c.mode = NR_MMA_NATIVE;
            c.M = 128, c.N = 64, c.K = 32, c.nw = nw;
            c.wm = side ? nw : 1, c.wn = side ? 1 : nw;
            c.a_fast = 1, c.b_fast = 1, c.smem_kind = 1;
            run_dot(&c);
            runs++;
        }
    printf("test_mma: %d dots on the warp model\n", runs);
}

/* The epilogue: an mma accumulator through the conversion scratch into
 * the blocked layout of a coalesced store, and the plans' mismatches. */
static void test_epilogue_and_errors(void) {
    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    m->num_warps = 4;
    int32_t shape[2] = {128, 128};
    int32_t cl = nr_layout_mma(m, 2, 2, (int32_t[]){2, 2}, (int32_t[]){16, 8, 16});
    int32_t spt[2] = {1, 8}, ord[2] = {1, 0};
    int32_t bl = nr_gpu_blocked_for(m, 2, shape, spt, ord, 4);
    static const NrDtype dts[] = {NR_DT_F16, NR_DT_F32, NR_DT_I8, NR_DT_BF16};
    for (size_t d = 0; d < NR_COUNTOF(dts); d++) {
        int es = nr_dtype_info[dts[d]].bytes;
        Lay C, D;
        if (!lay_make(m, &a, cl, dts[d], 2, shape, 4, &C) || !lay_make(m, &a, bl, dts[d], 2, shape, 4, &D)) continue;
        NrSmemMap S;
        CHECK(nr_ptx_conv_scratch_map(m, &C.P, &D.P, es, &S), "epilogue scratch");
        uint32_t *x = malloc(sizeof(uint32_t) * 128 * 128);
        for (int i = 0; i < 128 * 128; i++) x[i] = rand_elem(dts[d], false);
        uint8_t *mem = calloc(128 * 128, (size_t)es);
        model_store(&a, &C, &S, x, mem);
        Regs g;
        LoadStats st;
        model_load(&a, &D, &S, mem, false, &g, &st);
        check_regs(&D, &g, x, "epilogue");
        NrSmemAccess acc;
        nr_smem_access(&C.P, &S, 16, &a, &acc);
        CHECK(acc.vec == 2, "the accumulator stores pairs (vec %d)", acc.vec);
        nr_smem_access(&D.P, &S, 16, &a, &acc);
        CHECK(acc.vec * es == (es == 4 ? 16 : 8 * es), "the blocked side loads %d bytes", acc.vec * es);
        free(g.v);
        free(mem);
        free(x);
    }
    /* A layout that does not hold the ISA's fragments has no plan. */
    Lay A, B, C, Bw;
    int32_t al = nr_layout_dot_op(m, cl, 0, 2), bw = nr_layout_dot_op(m, cl, 1, 2);
    if (lay_make(m, &a, al, NR_DT_F16, 2, (int32_t[]){128, 32}, 4, &A) &&
        lay_make(m, &a, bw, NR_DT_F16, 2, (int32_t[]){32, 128}, 4, &B) &&
        lay_make(m, &a, cl, NR_DT_F32, 2, shape, 4, &C) && lay_make(m, &a, bl, NR_DT_F16, 2, (int32_t[]){32, 128}, 4, &Bw)) {
        NrMmaPlan pl;
        char why[160];
        CHECK(nr_mma_plan(&A.P, &B.P, &C.P, 2, NR_MMA_NATIVE, &a, &pl, why, sizeof why), "plan: %s", why);
        CHECK(pl.ninstr == 2 * 4 * 8, "128x128x32 on 2x2 warps: 64 instructions per warp, got %d", pl.ninstr);
        CHECK(!nr_mma_plan(&A.P, &Bw.P, &C.P, 2, NR_MMA_NATIVE, &a, &pl, why, sizeof why) && strstr(why, "fragments"),
              "a blocked B has no plan (%s)", why);
        CHECK(!nr_mma_plan(&A.P, &B.P, &C.P, 4, NR_MMA_NATIVE, &a, &pl, why, sizeof why), "k_width 4 on 16-bit layouts");
        /* ldmatrix from a plain row-major buffer, and none from a buffer
         * whose rows are not 16 bytes. */
        NrSmemMap S;
        int32_t plain = nr_layout_shared(m, 2, 8, 1, 1, (int32_t[]){1, 0});
        CHECK(nr_smem_map(m, plain, 2, (int32_t[]){128, 32}, 2, &S), "plain map");
        NrLdsmPlan lp;
        CHECK(nr_ldsm_plan(&A.P, &S, &a, &lp) && !lp.trans && lp.ninstr == 8, "A from a plain buffer: 8 x4 loads");
        int32_t narrow = nr_layout_shared(m, 2, 1, 1, 4, (int32_t[]){1, 0});
        CHECK(nr_smem_map(m, narrow, 2, (int32_t[]){128, 32}, 2, &S), "narrow map");
        CHECK(!nr_ldsm_plan(&A.P, &S, &a, &lp), "element-wise swizzle breaks 16-byte rows: no ldmatrix");
    }
    nr_arena_free(&a);
}

/* The epilogue on sm_90: the accumulator (mma version 2 and 3, 16-bit
 * elements) stored by stmatrix into the conversion scratch and reloaded in
 * the blocked layout of a coalesced store (row-major: plain stmatrix;
 * column-major: .trans), without bank conflicts; and the layouts and
 * buffers that keep st.shared. */
static void test_stmatrix_epilogue(void) {
    static const int shapes[][2] = {{16, 8}, {16, 64}, {64, 64}, {64, 32}, {128, 128}, {128, 256}, {256, 128}, {64, 256}};
    static const NrDtype dts[] = {NR_DT_F16, NR_DT_BF16};
    int runs = 0;
    for (int ver = 2; ver <= 3; ver++)
        for (size_t si = 0; si < NR_COUNTOF(shapes); si++)
            for (int nw = ver == 3 ? 4 : 1; nw <= 8; nw *= 2)
                for (int col = 0; col < 2; col++) {
                    int M = shapes[si][0], N = shapes[si][1];
                    if (ver == 3 && M < 16 * nw) continue;
                    NrDtype dt = dts[(si + (size_t)col) % 2];
                    NrArena a;
                    nr_arena_init(&a);
                    NrModule *m = nr_module_new(&a);
                    m->num_warps = nw;
                    int32_t shape[2] = {M, N}, wpc[2], instr[3];
                    if (ver == 3) {
                        wpc[0] = nw, wpc[1] = 1;
                        instr[0] = 16, instr[1] = N > 256 ? 256 : N, instr[2] = 16;
                    } else {
                        warps_for(M, N, nw, &wpc[0], &wpc[1]);
                        instr[0] = 16, instr[1] = 8, instr[2] = 16;
                    }
                    int32_t cl = nr_layout_mma(m, ver, 2, wpc, instr);
                    int32_t spt[2] = {col ? 8 : 1, col ? 1 : 8}, ord[2] = {col ? 0 : 1, col ? 1 : 0};
                    if (spt[col ? 0 : 1] > shape[col ? 0 : 1]) spt[col ? 0 : 1] = shape[col ? 0 : 1];
                    int32_t bl = nr_gpu_blocked_for(m, 2, shape, spt, ord, nw);
                    char what[120];
                    snprintf(what, sizeof what, "stmatrix v%d %s %dx%d w%d %s", ver, dn(dt), M, N, nw,
                             col ? "column-major" : "row-major");
                    Lay C, D;
                    if (!lay_make(m, &a, cl, dt, 2, shape, nw, &C) || !lay_make(m, &a, bl, dt, 2, shape, nw, &D)) {
                        nr_arena_free(&a);
                        continue;
                    }
                    NrSmemMap S;
                    CHECK(nr_ptx_conv_scratch_map(m, &C.P, &D.P, 2, &S), "%s: scratch", what);
                    uint32_t *x = malloc(sizeof(uint32_t) * (size_t)(M * N));
                    for (int i = 0; i < M * N; i++) x[i] = rand_elem(dt, false) ^ (uint32_t)(rnd() & 0x3ff);
                    uint8_t *mem = calloc((size_t)(M * N), 2);
                    LoadStats st;
                    bool planned = model_store_stsm(&a, &C, &S, x, mem, &st);
                    /* replicas (more warps than the tile has rows of 16 and columns of 8) keep st.shared */
                    bool fits = !C.P.rep_warp && !C.P.rep_lane;
                    CHECK(planned == fits, "%s: stmatrix planned %d, expected %d", what, planned, fits);
                    if (planned) {
                        CHECK(st.trans == (col == 1), "%s: .trans %d", what, st.trans);
                        CHECK(st.conflicts == 0, "%s: %d bank conflicts", what, st.conflicts);
                        int R = 1 << C.P.nreg;
                        CHECK(st.instrs == (R / 2 >= 4 ? R / 8 : 1) << C.P.nwarp, "%s: %d instructions for %d registers",
                              what, st.instrs, R);
                        Regs g;
                        LoadStats ls;
                        model_load(&a, &D, &S, mem, false, &g, &ls);
                        check_regs(&D, &g, x, what);
                        free(g.v);
                    }
                    free(x);
                    free(mem);
                    nr_arena_free(&a);
                    runs++;
                }
    /* Operands of 16-bit dots hold the same fragments: A (k contiguous) and
     * B (n contiguous: .trans) stored into staging buffers and read back by
     * ldmatrix. */
    for (int op = 0; op < 2; op++) {
        NrArena a;
        nr_arena_init(&a);
        NrModule *m = nr_module_new(&a);
        m->num_warps = 4;
        /* warps along the operand's own side: no replicas */
        int32_t wpc[2] = {op ? 1 : 4, op ? 4 : 1};
        int32_t cl = nr_layout_mma(m, 2, 2, wpc, (int32_t[]){16, 8, 16});
        int32_t ol = nr_layout_dot_op(m, cl, op, 2);
        int32_t shape[2] = {op ? 32 : 64, op ? 64 : 32};
        Lay O;
        if (lay_make(m, &a, ol, NR_DT_F16, 2, shape, 4, &O)) {
            NrSmemMap S;
            CHECK(nr_smem_map(m, smem_layout(m, 2, shape, 1, 2, 1), 2, shape, 2, &S), "operand buffer");
            uint32_t *x = malloc(sizeof(uint32_t) * 64 * 32);
            for (int i = 0; i < 64 * 32; i++) x[i] = (uint32_t)(rnd() & 0xffff);
            uint8_t *mem = calloc(64 * 32, 2);
            LoadStats st;
            bool planned = model_store_stsm(&a, &O, &S, x, mem, &st);
            CHECK(planned && st.trans == (op == 1) && st.conflicts == 0,
                  "operand %d: stmatrix planned %d, .trans %d, %d conflicts", op, planned, st.trans, st.conflicts);
            Regs g;
            LoadStats ls;
            model_load(&a, &O, &S, mem, true, &g, &ls);
            check_regs(&O, &g, x, op ? "operand B by stmatrix" : "operand A by stmatrix");
            free(g.v);
            free(mem);
            free(x);
        }
        nr_arena_free(&a);
    }
    /* Not for stmatrix: 32- and 8-bit elements, a blocked source, and a
     * buffer whose rows of a matrix share a bank group (unswizzled 256-byte
     * rows); an nvmma buffer is fine. */
    NrArena a;
    nr_arena_init(&a);
    NrModule *m = nr_module_new(&a);
    m->num_warps = 4;
    int32_t shape[2] = {64, 128};
    int32_t cl = nr_layout_mma(m, 2, 2, (int32_t[]){2, 2}, (int32_t[]){16, 8, 16});
    int32_t bl = nr_gpu_blocked_for(m, 2, shape, (int32_t[]){1, 8}, (int32_t[]){1, 0}, 4);
    Lay C, C32, C8, B;
    if (lay_make(m, &a, cl, NR_DT_F16, 2, shape, 4, &C) && lay_make(m, &a, cl, NR_DT_F32, 2, shape, 4, &C32) &&
        lay_make(m, &a, cl, NR_DT_I8, 2, shape, 4, &C8) && lay_make(m, &a, bl, NR_DT_F16, 2, shape, 4, &B)) {
        NrSmemMap S, S4, S1;
        NrLdsmPlan pl;
        CHECK(nr_ptx_conv_scratch_map(m, &C.P, &B.P, 2, &S) && nr_ptx_conv_scratch_map(m, &C32.P, &B.P, 4, &S4) &&
                  nr_ptx_conv_scratch_map(m, &C8.P, &B.P, 1, &S1), "scratch maps");
        CHECK(nr_stsm_plan(&C.P, &S, &a, &pl) && pl.ninstr == 64 * 128 / 4 / 32 / 8, "f16: %d x4 stmatrix", pl.ninstr);
        CHECK(!nr_stsm_plan(&C32.P, &S4, &a, &pl), "f32 keeps st.shared");
        CHECK(!nr_stsm_plan(&C8.P, &S1, &a, &pl), "8-bit elements keep st.shared");
        CHECK(!nr_stsm_plan(&B.P, &S, &a, &pl), "a blocked source keeps st.shared");
        int32_t plain = nr_layout_shared(m, 2, 8, 1, 1, (int32_t[]){1, 0});
        CHECK(nr_smem_map(m, plain, 2, shape, 2, &S), "plain map");
        CHECK(nr_ldsm_plan(&C.P, &S, &a, &pl) && !nr_stsm_plan(&C.P, &S, &a, &pl),
              "rows 256 bytes apart fit the fragments but share a bank group: st.shared");
        int32_t nv = nr_layout_nvmma(m, 2, 128, (int32_t[]){1, 0});
        CHECK(nr_smem_map(m, nv, 2, shape, 2, &S), "nvmma map");
        CHECK(nr_stsm_plan(&C.P, &S, &a, &pl) && !pl.trans, "the accumulator into a 128-byte swizzled buffer");
    }
    nr_arena_free(&a);
    printf("test_mma: %d epilogues by stmatrix on the warp model\n", runs);
}

/* --- words ----------------------------------------------------------------------------------------------- */
static void test_words(void) {
    NrArena a;
    nr_arena_init(&a);
    NrPtx *p = nr_ptx_eval_new(&a, 80);
    static const NrDtype dts[] = {NR_DT_I8, NR_DT_U8, NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F16, NR_DT_BF16, NR_DT_I16,
                                  NR_DT_U16, NR_DT_F32, NR_DT_I32};
    for (size_t d = 0; d < NR_COUNTOF(dts); d++) {
        NrDtype dt = dts[d];
        int es = nr_dtype_info[dt].bytes, epw = 4 / es;
        for (int trial = 0; trial < 200; trial++) {
            uint32_t raw = (uint32_t)rnd();
            NrPv e[4], back[4];
            for (int j = 0; j < epw; j++) {
                uint32_t b = es == 4 ? raw : raw >> (8 * es * j) & ((1u << (8 * es)) - 1);
                NrPk k = nr_ptx_kind(dt);
                uint64_t c = b;
                if (k == NR_PK_I32 && nr_dt_is_signed(dt) && es < 4) c = (uint32_t)((int32_t)(b << (32 - 8 * es)) >> (32 - 8 * es));
                e[j] = nr_pv_imm(k, c);
            }
            NrPv w = nr_ptx_pack_word(p, dt, e);
            CHECK(w.r == 0 && (uint32_t)w.c == raw, "pack %s: 0x%08x, expected 0x%08x", dn(dt), (uint32_t)w.c, raw);
            nr_ptx_unpack_word(p, dt, w, back);
            for (int j = 0; j < epw; j++)
                CHECK(back[j].r == 0 && back[j].k == e[j].k && (uint32_t)back[j].c == (uint32_t)e[j].c,
                      "unpack %s element %d: 0x%llx, expected 0x%llx", dn(dt), j, (unsigned long long)back[j].c,
                      (unsigned long long)e[j].c);
        }
    }
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
    else snprintf(path, sizeof path, "/tmp/nr_test_mma_%d.ptx", (int)getpid());
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

/* --- GPU IR kernels (layouts written out) ------------------------------------------------------------------ */
/* Conversions into operand layouts and out of the accumulator's, buffers
 * (local_alloc with and without a value, memdesc_index, local_store,
 * local_load into operand and blocked layouts), async copies of 16 bytes
 * with zero fill, of 4 bytes, of 2 bytes (synchronous) and with a non-zero
 * `other` (synchronous). */
static const char IR_BUFFERS[] =
    "module attributes {num_warps = 4, sm = 80} {\n"
    "  #L1 = blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>\n"
    "  #L2 = slice<dim = 1, parent = #L1>\n"
    "  #L3 = slice<dim = 0, parent = #L1>\n"
    "  #L4 = mma<version = 2, wpc = [2, 2], instr = [16, 8, 16]>\n"
    "  #L5 = dot_op<op_idx = 0, parent = #L4, k_width = 2>\n"
    "  #L6 = dot_op<op_idx = 1, parent = #L4, k_width = 2>\n"
    "  #L7 = shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>\n"
    "  #L8 = blocked<spt = [1, 1], tpw = [1, 32], wpc = [4, 1], order = [1, 0]>\n"
    "\n"
    "  func @k(%a: ptr<f16> {divisibility = 16}, %b: ptr<f16> {divisibility = 16}, %c: ptr<f32> {divisibility = 16}, %h: ptr<f16> {divisibility = 16}, %f: ptr<f32> {divisibility = 16}) kernel smem = 49152 {\n"
    "    %r = arange {end = 64, start = 0} : tensor<64xi32, #L2>\n"
    "    %q = arange {end = 64, start = 0} : tensor<64xi32, #L3>\n"
    "    %r2 = expand_dims %r {axis = 1} : tensor<64x1xi32, #L1>\n"
    "    %q2 = expand_dims %q {axis = 0} : tensor<1x64xi32, #L1>\n"
    "    %s = const {value = 64} : tensor<64x1xi32, #L1>\n"
    "    %rs = mul %r2, %s : tensor<64x1xi32, #L1>\n"
    "    %rb = broadcast %rs : tensor<64x64xi32, #L1>\n"
    "    %qb = broadcast %q2 : tensor<64x64xi32, #L1>\n"
    "    %off = add %rb, %qb : tensor<64x64xi32, #L1>\n"
    "    %pa = splat %a : tensor<64x64xptr<f16>, #L1>\n"
    "    %pa2 = addptr %pa, %off : tensor<64x64xptr<f16>, #L1>\n"
    "    %x = load %pa2, _, _ : tensor<64x64xf16, #L1>\n"
    "    %pb = splat %b : tensor<64x64xptr<f16>, #L1>\n"
    "    %pb2 = addptr %pb, %off : tensor<64x64xptr<f16>, #L1>\n"
    "    %y = load %pb2, _, _ : tensor<64x64xf16, #L1>\n"
    "    %xa = convert_layout %x : tensor<64x64xf16, #L5>\n"
    "    %yb = convert_layout %y : tensor<64x64xf16, #L6>\n"
    "    %z = const {value = 0.0} : tensor<64x64xf32, #L4>\n"
    "    %d = dot %xa, %yb, %z : tensor<64x64xf32, #L4>\n"
    "    %offc = convert_layout %off : tensor<64x64xi32, #L4>\n"
    "    %pc = splat %c : tensor<64x64xptr<f32>, #L4>\n"
    "    %pc2 = addptr %pc, %offc : tensor<64x64xptr<f32>, #L4>\n"
    "    store %pc2, %d, _\n"
    "    %dh = cast %d : tensor<64x64xf16, #L4>\n"
    "    %dhb = convert_layout %dh : tensor<64x64xf16, #L1>\n"
    "    %ph = splat %h : tensor<64x64xptr<f16>, #L1>\n"
    "    %ph2 = addptr %ph, %off : tensor<64x64xptr<f16>, #L1>\n"
    "    store %ph2, %dhb, _\n"
    "    %buf = local_alloc %x {smem_offset = 0} : !smem<64x64xf16, #L7>\n"
    "    %all = local_alloc {smem_offset = 8192} : !smem<2x64x64xf16, #L7>\n"
    "    %one = const {value = 1} : i32\n"
    "    %v = memdesc_index %all, %one : !smem<64x64xf16, #L7>\n"
    "    %lim = const {value = 2000} : tensor<64x64xi32, #L1>\n"
    "    %m = cmp %off, %lim {pred = \"lt\"} : tensor<64x64xi1, #L1>\n"
    "    async_copy %pa2, %v, %m, _\n"
    "    %o = const {value = 1.0} : tensor<64x64xf16, #L1>\n"
    "    async_copy %pb2, %v, %m, %o\n"
    "    async_commit_group\n"
    "    async_wait {num = 0}\n"
    "    barrier\n"
    "    %xa2 = local_load %buf : tensor<64x64xf16, #L5>\n"
    "    %yb2 = local_load %v : tensor<64x64xf16, #L6>\n"
    "    %d2 = dot %xa2, %yb2, %d : tensor<64x64xf32, #L4>\n"
    "    store %pc2, %d2, _\n"
    "    %xb2 = local_load %v : tensor<64x64xf16, #L1>\n"
    "    barrier\n"
    "    local_store %xb2, %buf\n"
    "    %poff = convert_layout %off : tensor<64x64xi32, #L8>\n"
    "    %pf = splat %f : tensor<64x64xptr<f32>, #L8>\n"
    "    %pf2 = addptr %pf, %poff : tensor<64x64xptr<f32>, #L8>\n"
    "    %fbuf = local_alloc {smem_offset = 24576} : !smem<64x64xf32, #L7>\n"
    "    async_copy %pf2, %fbuf, _, _\n"
    "    %ph3 = splat %h : tensor<64x64xptr<f16>, #L8>\n"
    "    %ph4 = addptr %ph3, %poff : tensor<64x64xptr<f16>, #L8>\n"
    "    async_copy %ph4, %buf, _, _\n"
    "    async_commit_group\n"
    "    async_wait {num = 0}\n"
    "    barrier\n"
    "    %fl = local_load %fbuf : tensor<64x64xf32, #L8>\n"
    "    store %pf2, %fl, _\n"
    "    return\n"
    "  }\n"
    "}\n"
;

static const char IR_IEEE[] =
    "module attributes {num_warps = 4, sm = 80} {\n"
    "  #L1 = mma<version = 2, wpc = [2, 2], instr = [16, 8, 8]>\n"
    "  #L2 = dot_op<op_idx = 0, parent = #L1, k_width = 1>\n"
    "  #L3 = dot_op<op_idx = 1, parent = #L1, k_width = 1>\n"
    "  func @k() kernel {\n"
    "    %a = const {value = 1.0} : tensor<64x16xf32, #L2>\n"
    "    %b = const {value = 1.0} : tensor<16x64xf32, #L3>\n"
    "    %c = const {value = 0.0} : tensor<64x64xf32, #L1>\n"
    "    %d = dot %a, %b, %c {input_precision = \"ieee\"} : tensor<64x64xf32, #L1>\n"
    "    return\n"
    "  }\n"
    "}\n";

static const char IR_NO_OFFSET[] =
    "module attributes {num_warps = 4, sm = 80} {\n"
    "  #L1 = shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>\n"
    "  func @k() kernel {\n"
    "    %a = local_alloc : !smem<64x64xf16, #L1>\n"
    "    return\n"
    "  }\n"
    "}\n";

/* Emits IR text for sm_80 and sm_90; the sm_80 text, or NULL (with the
 * first diagnostic in err) when emission fails. */
static char *emit_ir(const char *text, const char *what, char *err, size_t errn) {
    char *first = NULL;
    for (int i = 0; i < 2; i++) {
        NrArena a;
        nr_arena_init(&a);
        NrSources src;
        nr_sources_init(&src, &a);
        NrDiags d;
        nr_diags_init(&d, &a, &src);
        NrModule *m = nr_module_parse(&a, text, strlen(text), "k.ir", &d);
        CHECK(m != NULL, "%s: does not parse:\n%s", what, nr_diags_render(&a, &d));
        if (!m) {
            nr_arena_free(&a);
            return first;
        }
        d.sources = &m->sources;
        NrGpuOptions o;
        memset(&o, 0, sizeof o);
        o.sm = i ? 90 : 80;
        char *ptx = nr_emit_ptx(m->funcs[0], &o, &d);
        if (!ptx) {
            if (err) snprintf(err, errn, "%s", d.n ? d.v[0].msg : "");
            nr_arena_free(&a);
            return NULL;
        }
        CHECK(ptxas_ok(ptx, i ? "sm_90" : "sm_80", what), "%s: ptxas sm_%d", what, i ? 90 : 80);
        if (!first) first = strdup(ptx);
        nr_arena_free(&a);
    }
    return first;
}

static void test_ir_kernels(void) {
    char err[512] = "";
    char *ptx = emit_ir(IR_BUFFERS, "buffers", err, sizeof err);
    CHECK(ptx != NULL, "buffers: %s", err);
    if (ptx) {
        CHECK(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 16 &&
                  count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 16,
              "buffers: 16 plain (A) and 16 transposed (B) ldmatrix, got %d and %d",
              count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
              count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
        CHECK(count_of(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 2 * 32,
              "buffers: two dots of 32 mma.sync per warp");
        CHECK(count_of(ptx, "cp.async.cg.shared.global") == 4 && count_of(ptx, ", 16, %r") == 4,
              "buffers: four 16-byte copies with zero fill");
        CHECK(count_of(ptx, "cp.async.ca.shared.global") == 32 && count_of(ptx, "], 4;") == 32,
              "buffers: 32 unmasked 4-byte copies");
        CHECK(count_of(ptx, "ld.global.b16") == 32 + 32, "buffers: 2-byte and `other` copies are synchronous");
        CHECK(count_of(ptx, "st.global.v2.b32") == 2 * 16, "buffers: f32 accumulators stored as pairs");
        CHECK(count_of(ptx, "st.shared.v4.b32") >= 8, "buffers: 16-byte st.shared");
        CHECK(count_of(ptx, "cp.async.commit_group") == 2 && count_of(ptx, "cp.async.wait_group 0") == 2,
              "buffers: commit and wait");
        CHECK(strstr(ptx, ".version 8.0") != NULL, "buffers: PTX 8.0");
    }
    free(ptx);
    CHECK(emit_ir(IR_IEEE, "ieee", err, sizeof err) == NULL && strstr(err, "internal inconsistency"),
          "an mma dot with ieee precision is reported: %s", err);
    CHECK(emit_ir(IR_NO_OFFSET, "no offset", err, sizeof err) == NULL && strstr(err, "smem_offset"),
          "local_alloc without smem_offset is reported: %s", err);
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
    "    b_ptrs = b_ptr + offs_k[:, None] * BN + offs_n[None, :]\n"
    "    acc = tl.zeros((BM, BN), dtype=tl.int32)\n"
    "    for k in tl.range(0, K // BK, num_stages=STAGES):\n"
    "        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)\n"
    "        a_ptrs += BK\n"
    "        b_ptrs += BK * BN\n"
    "    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)\n"
    "\n"
    "@triton.jit\n"
    "def bmm(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
    "    i = tl.arange(0, 2)[:, None, None]\n"
    "    m = tl.arange(0, BM)[None, :, None]\n"
    "    n = tl.arange(0, BN)[None, None, :]\n"
    "    k = tl.arange(0, BK)\n"
    "    a = tl.load(a_ptr + i * BM * BK + m * BK + k[None, None, :])\n"
    "    b = tl.load(b_ptr + i * BK * BN + k[None, :, None] * BN + n)\n"
    "    tl.store(c_ptr + i * BM * BN + m * BN + n, tl.dot(a, b))\n";

/* Compiles kernel `name` with signature sig for arch and checks the PTX. */
static char *compile(NrContext *ctx, const char *name, const char *sig, const char *arch, int nw, int stages,
                     const char *what) {
    NrOptions o;
    nr_options_default(&o);
    o.arch = arch;
    o.num_warps = nw;
    o.num_stages = stages;
    NrKernel *k = NULL;
    NrStatus st = nr_compile(ctx, KERNELS, sizeof KERNELS - 1, "kernels.py", name, sig, &o, &k);
    CHECK(st == NR_OK, "%s (%s): %s", what, arch, nr_error_text(ctx));
    if (st != NR_OK) return NULL;
    const char *ptx = nr_kernel_ptx(k);
    char *copy = strdup(ptx ? ptx : "");
    nr_kernel_destroy(k);
    CHECK(ptxas_ok(copy, strcmp(arch, "sm_90") == 0 ? "sm_90" : "sm_80", what), "%s: ptxas %s", what, arch);
    return copy;
}

static void test_kernels(void) {
    NrContext *ctx = nr_context_create();
    static const struct {
        const char *a, *c, *prec, *mma;
    } mms[] = {
        {"fp16", "fp16", "tf32", "m16n8k16.row.col.f32.f16.f16.f32"},
        {"bf16", "bf16", "tf32", "m16n8k16.row.col.f32.bf16.bf16.f32"},
        {"fp32", "fp32", "tf32", "m16n8k8.row.col.f32.tf32.tf32.f32"},
        {"fp32", "fp32", "tf32x3", "m16n8k8.row.col.f32.tf32.tf32.f32"},
        {"fp8e4nv", "fp16", "tf32", "m16n8k32.row.col.f32.e4m3.e4m3.f32"},
        {"fp8e5", "fp32", "tf32", "m16n8k32.row.col.f32.e5m2.e5m2.f32"},
    };
    const char *archs[2] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < NR_COUNTOF(mms); i++)
        for (int ai = 0; ai < 2; ai++)
            for (int stages = 1; stages <= 3; stages += 2)
                for (int order = 0; order < 2; order++) {
                    int nw = stages == 3 && order == 0 ? 8 : 4;
                    char sig[400], what[160];
                    /* order 0: A row-major, B row-major; 1: A column-major, B column-major */
                    snprintf(sig, sizeof sig,
                             "*%s:16, *%s:16, *%s:16, i32:16, i32:16, i32:16, %s, %s, %s, %s, i32:16, 128, 128, 32, "
                             "\"%s\", %d",
                             mms[i].a, mms[i].a, mms[i].c, order ? "1" : "i32:16", order ? "i32:16" : "1",
                             order ? "1" : "i32:16", order ? "i32:16" : "1", mms[i].prec, stages);
                    snprintf(what, sizeof what, "mm_%s_%s_%s_s%d_o%d_w%d", mms[i].a, mms[i].c, mms[i].prec, stages, order,
                             nw);
                    char *ptx = compile(ctx, "mm", sig, archs[ai], nw, stages, what);
                    if (!ptx) continue;
                    bool fp8_80 = strncmp(mms[i].a, "fp8", 3) == 0 && ai == 0;
                    const char *want = fp8_80 ? "m16n8k16.row.col.f32.f16.f16.f32" : mms[i].mma;
                    CHECK(count_of(ptx, want) > 0, "%s %s: expected mma.sync.aligned.%s", what, archs[ai], want);
                    int per = strcmp(mms[i].prec, "tf32x3") == 0 ? 3 : 1;
                    int k = strcmp(mms[i].a, "fp32") == 0 ? 8 : strncmp(mms[i].a, "fp8", 3) == 0 && !fp8_80 ? 32 : 16;
                    CHECK(count_of(ptx, "mma.sync") == 128 * 128 * 32 / (16 * 8 * k) / nw * per,
                          "%s %s: %d mma.sync, expected %d", what, archs[ai], count_of(ptx, "mma.sync"),
                          128 * 128 * 32 / (16 * 8 * k) / nw * per);
                    /* (on sm_80 fp8 tiles are cast to f16 before the dot, which keeps their loads out of the
                     * pipeline) */
                    if (stages > 1 && !fp8_80) {
                        CHECK(count_of(ptx, "cp.async.cg.shared.global") > 0 && count_of(ptx, "cp.async.commit_group") &&
                                  count_of(ptx, "cp.async.wait_group"),
                              "%s: cp.async 16-byte copies, commit and wait", what);
                        CHECK(strstr(ptx, ", 16, %r") != NULL, "%s: masked copies zero-fill through src-size", what);
                    }
                    bool ldsm = strcmp(mms[i].a, "fp16") == 0 || strcmp(mms[i].a, "bf16") == 0 ||
                                (order == 1 && strncmp(mms[i].a, "fp8", 3) != 0) || (order == 0 && !fp8_80);
                    if (ldsm) CHECK(count_of(ptx, "ldmatrix.sync.aligned.m8n8") > 0, "%s %s: ldmatrix", what, archs[ai]);
                    if (strcmp(mms[i].a, "fp16") == 0 && order == 0)
                        CHECK(count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans") > 0 &&
                                  count_of(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared") > 0,
                              "%s: A plain, B transposed", what);
                    if (strcmp(mms[i].c, "fp32") == 0)
                        CHECK(count_of(ptx, "st.global.v2.b32") > 0, "%s: f32 results stored as pairs", what);
                    /* 16-bit results leave the accumulator by stmatrix on sm_90, by st.shared on sm_80 */
                    bool b16 = strcmp(mms[i].c, "fp16") == 0 || strcmp(mms[i].c, "bf16") == 0;
                    CHECK(count_of(ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16") == (b16 && ai == 1 ? 128 * 128 / 256 / nw : 0),
                          "%s %s: %d stmatrix.x4 in the epilogue", what, archs[ai],
                          count_of(ptx, "stmatrix.sync.aligned.m8n8.x4.shared.b16"));
                    if (!fp8_80 && strncmp(mms[i].a, "fp8", 3) == 0)
                        CHECK(strstr(ptx, ".version 8.4") != NULL, "%s: fp8 mma needs PTX 8.4", what);
                    free(ptx);
                }
    for (int ai = 0; ai < 2; ai++)
        for (int stages = 1; stages <= 3; stages += 2) {
            char what[64];
            snprintf(what, sizeof what, "mm16_s%d", stages);
            char *ptx = compile(ctx, "mm16", "*fp16:16, *fp16:16, *fp16:16, i32:16, 64, 64, 32, 1", archs[ai], 4,
                                stages, what);
            if (ptx) CHECK(count_of(ptx, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") == 16, "%s: f16 accumulators", what);
            free(ptx);
            snprintf(what, sizeof what, "mmi_s%d", stages);
            ptx = compile(ctx, "mmi", "*i8:16, *i8:16, *i32:16, i32:16, 64, 64, 64, 1", archs[ai], 4, stages, what);
            if (ptx) CHECK(count_of(ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") == 16, "%s: int8", what);
            free(ptx);
            snprintf(what, sizeof what, "mm16_fp8_s%d", stages);
            ptx = compile(ctx, "mm16", "*fp8e4nv:16, *fp8e4nv:16, *fp16:16, i32:16, 64, 64, 32, 1", archs[ai], 4,
                          stages, what);
            if (ptx && ai == 1)
                CHECK(strstr(ptx, "m16n8k32.row.col.f16.e4m3.e4m3.f16") && strstr(ptx, ".version 8.7"),
                      "%s: fp8 with f16 accumulators (PTX 8.7)", what);
            free(ptx);
        }
    char *ptx = compile(ctx, "bmm", "*fp16:16, *fp16:16, *fp32:16, 32, 32, 16", "sm_80", 4, 1, "bmm");
    if (ptx) CHECK(count_of(ptx, "mma.sync") > 0, "bmm: batched dot on tensor cores");
    free(ptx);
    nr_context_destroy(ctx);
}

int main(void) {
    const char *s = getenv("NR_TEST_SEED");
    seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed;
    keep_dir = getenv("NR_TEST_KEEP");
    have_ptxas = access(PTXAS, X_OK) == 0;
    if (!have_ptxas) printf("test_mma: %s not found; PTX is emitted but not assembled\n", PTXAS);
    test_words();
    test_warp_model();
    test_epilogue_and_errors();
    test_stmatrix_epilogue();
    test_ir_kernels();
    test_kernels();
    printf("test_mma: %d checks, %d failures, %d ptxas runs\n", checks, failures, assembled);
    return failures ? 1 : 0;
}
