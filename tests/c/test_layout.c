/* test_layout.c - GPU layouts: Triton's default blocked layout on known
 * shapes; every blocked, slice, mma and dot_op linear layout over many
 * shapes and warp counts covers its block exactly (surjective, in range,
 * no element twice in one thread where the layout does not replicate);
 * mma fragments match the PTX ISA's fragment tables; the shared-memory
 * address maps are bijections with the expected swizzles. */
#include "gpu.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static long checks;

#define CHECK(c, ...)                                                   \
    do {                                                                \
        checks++;                                                       \
        if (!(c)) {                                                     \
            if (++failures < 50) {                                      \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);             \
                printf(__VA_ARGS__);                                    \
                putchar('\n');                                          \
            }                                                           \
        }                                                               \
    } while (0)

static const char *layout_str(NrModule *m, int32_t id) {
    static char buf[512];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    nr_layout_print(m, id, f);
    fclose(f);
    return buf;
}

static const char *shape_str(int rank, const int32_t *shape) {
    static char buf[128];
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < rank; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%d", i ? "x" : "", shape[i]);
    return buf;
}

static int64_t linear_index(int rank, const int32_t *shape, const int32_t *c) {
    int64_t k = 0;
    for (int i = 0; i < rank; i++) k = k * shape[i] + c[i];
    return k;
}

/* Every element of the block is held by some (reg, lane, warp), every
 * coordinate is in range, and (if distinct_regs) no thread holds an element
 * twice.  Returns the number of (reg, lane, warp) triples per element when
 * uniform, else -1. */
static int check_cover(NrModule *m, int32_t id, int rank, const int32_t *shape, int nw, bool distinct_regs) {
    NrLinear ll;
    bool ok = nr_layout_linear(m, id, rank, shape, nw, &ll);
    CHECK(ok, "%s over %s with %d warps has no linear form", layout_str(m, id), shape_str(rank, shape), nw);
    if (!ok) return -1;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= shape[i];
    int32_t *hits = calloc((size_t)numel, sizeof *hits);
    int32_t *mine = calloc((size_t)numel, sizeof *mine); /* per element: last thread + 1 that held it */
    int regs = nr_linear_regs(&ll);
    bool in_range = true, distinct = true;
    /* coordinates of each register in thread 0; a thread XORs its own offset */
    int32_t *regc = malloc(sizeof(int32_t) * NR_MAX_RANK * (size_t)regs);
    for (uint32_t r = 0; r < (uint32_t)regs; r++) nr_linear_coords(&ll, r, 0, 0, regc + NR_MAX_RANK * r);
    for (uint32_t w = 0; w < (uint32_t)nw; w++) {
        for (uint32_t l = 0; l < 32; l++) {
            int32_t tid = (int32_t)(w * 32 + l) + 1;
            int32_t base[NR_MAX_RANK];
            nr_linear_coords(&ll, 0, l, w, base);
            for (uint32_t r = 0; r < (uint32_t)regs; r++) {
                int32_t c[NR_MAX_RANK];
                for (int i = 0; i < rank; i++) c[i] = base[i] ^ regc[NR_MAX_RANK * r + i];
                for (int i = 0; i < rank; i++)
                    if (c[i] < 0 || c[i] >= shape[i]) in_range = false;
                if (!in_range) break;
                int64_t k = linear_index(rank, shape, c);
                hits[k]++;
                if (mine[k] == tid) distinct = false;
                mine[k] = tid;
            }
        }
    }
    CHECK(in_range, "%s over %s: coordinates out of range", layout_str(m, id), shape_str(rank, shape));
    int per = in_range ? hits[0] : -1;
    bool all = in_range;
    for (int64_t k = 0; all && k < numel; k++) {
        if (hits[k] == 0) all = false;
        if (hits[k] != per) per = -1;
    }
    CHECK(all, "%s over %s with %d warps: not every element is held", layout_str(m, id), shape_str(rank, shape), nw);
    if (distinct_regs)
        CHECK(distinct, "%s over %s with %d warps: a thread holds an element twice", layout_str(m, id),
              shape_str(rank, shape), nw);
    free(hits);
    free(mine);
    free(regc);
    return all ? per : -1;
}

/* --- default blocked ----------------------------------------------------------------------------- */
static void expect_default(int rank, const int32_t *shape, int nw, const char *want) {
    NrModule *m = nr_module_new(NULL);
    int32_t id = nr_layout_default_blocked(m, rank, shape, nw);
    CHECK(strcmp(layout_str(m, id), want) == 0, "default blocked for %s, %d warps: got %s, expected %s",
          shape_str(rank, shape), nw, layout_str(m, id), want);
    nr_module_free(m);
}

static void test_default_blocked(void) {
    expect_default(1, (int32_t[]){1024}, 4, "blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>");
    expect_default(1, (int32_t[]){16}, 4, "blocked<spt = [1], tpw = [32], wpc = [4], order = [0]>");
    expect_default(2, (int32_t[]){64, 64}, 4, "blocked<spt = [1, 1], tpw = [1, 32], wpc = [2, 2], order = [1, 0]>");
    expect_default(2, (int32_t[]){16, 8}, 4, "blocked<spt = [1, 1], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>");
    expect_default(2, (int32_t[]){128, 32}, 4, "blocked<spt = [1, 1], tpw = [1, 32], wpc = [4, 1], order = [1, 0]>");
    expect_default(2, (int32_t[]){32, 1}, 8, "blocked<spt = [1, 1], tpw = [32, 1], wpc = [8, 1], order = [1, 0]>");
    expect_default(2, (int32_t[]){1, 256}, 8, "blocked<spt = [1, 1], tpw = [1, 32], wpc = [1, 8], order = [1, 0]>");
    expect_default(3, (int32_t[]){2, 4, 4}, 2,
                   "blocked<spt = [1, 1, 1], tpw = [2, 4, 4], wpc = [2, 1, 1], order = [2, 1, 0]>");
    expect_default(3, (int32_t[]){8, 2, 64}, 16,
                   "blocked<spt = [1, 1, 1], tpw = [1, 1, 32], wpc = [4, 2, 2], order = [2, 1, 0]>");
    /* Every default over many shapes covers the block with each element once per replica. */
    NrModule *m = nr_module_new(NULL);
    for (int nw = 1; nw <= 16; nw *= 2) {
        for (int a = 0; a <= 9; a++) {
            for (int b = 0; b <= 9; b++) {
                int32_t shape[2] = {1 << a, 1 << b};
                int32_t id = nr_layout_default_blocked(m, 2, shape, nw);
                check_cover(m, id, 2, shape, nw, true);
                const NrLayout *l = nr_layout(m, id);
                int64_t threads = 32 * (int64_t)nw;
                /* No thread is idle when the block has enough elements. */
                if ((int64_t)shape[0] * shape[1] >= threads) {
                    int per = check_cover(m, id, 2, shape, nw, true);
                    CHECK(per == 1, "default over %s with %d warps replicates (%d)", shape_str(2, shape), nw, per);
                }
                CHECK(l->threads_per_warp[0] * l->threads_per_warp[1] == 32, "tpw product");
            }
        }
        for (int a = 0; a <= 12; a++) {
            int32_t shape[1] = {1 << a};
            check_cover(m, nr_layout_default_blocked(m, 1, shape, nw), 1, shape, nw, true);
        }
    }
    nr_module_free(m);
}

/* --- blocked and slice ---------------------------------------------------------------------------- */
/* Blocked layouts of every factorization of 32 lanes and nw warps over two
 * dimensions, with several sizes per thread, over many shapes; and their
 * slices along each dimension. */
static void test_blocked_and_slices(void) {
    NrModule *m = nr_module_new(NULL);
    for (int nw = 1; nw <= 16; nw *= 2) {
        for (int t0 = 1; t0 <= 32; t0 *= 2) {
            for (int w0 = 1; w0 <= nw; w0 *= 2) {
                for (int s0 = 1; s0 <= 4; s0 *= 2) {
                    for (int s1 = 1; s1 <= 8; s1 *= 4) {
                        for (int ord = 0; ord < 2; ord++) {
                            int32_t spt[2] = {s0, s1}, tpw[2] = {t0, 32 / t0}, wpc[2] = {w0, nw / w0};
                            int32_t order[2] = {ord ? 0 : 1, ord ? 1 : 0};
                            int32_t id = nr_layout_blocked(m, 2, spt, tpw, wpc, order);
                            int32_t sl0 = nr_layout_slice(m, id, 0), sl1 = nr_layout_slice(m, id, 1);
                            for (int a = 0; a <= 8; a += 2) {
                                for (int b = 0; b <= 8; b += 3) {
                                    int32_t shape[2] = {1 << a, 1 << b};
                                    bool fits = spt[0] <= shape[0] && spt[1] <= shape[1];
                                    check_cover(m, id, 2, shape, nw, fits);
                                    check_cover(m, sl0, 1, &shape[1], nw, true);
                                    check_cover(m, sl1, 1, &shape[0], nw, true);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    /* A rank-3 layout and slices of slices. */
    int32_t spt[3] = {1, 2, 4}, tpw[3] = {2, 4, 4}, wpc[3] = {2, 2, 1}, order[3] = {2, 0, 1};
    int32_t b3 = nr_layout_blocked(m, 3, spt, tpw, wpc, order);
    for (int a = 0; a <= 5; a++) {
        int32_t shape[3] = {1 << a, 8, 1 << (5 - a)};
        check_cover(m, b3, 3, shape, 4, false);
        for (int d = 0; d < 3; d++) {
            int32_t s = nr_layout_slice(m, b3, d);
            int32_t sshape[2];
            for (int i = 0, j = 0; i < 3; i++)
                if (i != d) sshape[j++] = shape[i];
            check_cover(m, s, 2, sshape, 4, true);
            for (int e = 0; e < 2; e++) check_cover(m, nr_layout_slice(m, s, e), 1, &sshape[1 - e], 4, true);
        }
    }
    /* The tile in registers: spt = [1, 4] keeps 4 consecutive columns in consecutive registers. */
    int32_t id = nr_layout_blocked(m, 2, (int32_t[]){1, 4}, (int32_t[]){8, 4}, (int32_t[]){4, 1}, (int32_t[]){1, 0});
    NrLinear ll;
    nr_layout_linear(m, id, 2, (int32_t[]){64, 64}, 4, &ll);
    CHECK(ll.nreg == 5, "blocked [64, 64] spt [1, 4]: %d register bits", ll.nreg);
    int32_t c[2];
    nr_linear_coords(&ll, 3, 0, 0, c);
    CHECK(c[0] == 0 && c[1] == 3, "register 3 of lane 0: (%d, %d)", c[0], c[1]);
    nr_linear_coords(&ll, 4, 0, 0, c);
    CHECK(c[0] == 0 && c[1] == 16, "register 4 repeats along columns first: (%d, %d)", c[0], c[1]);
    nr_linear_coords(&ll, 16, 0, 0, c);
    CHECK(c[0] == 32 && c[1] == 0, "register 16 repeats along rows: (%d, %d)", c[0], c[1]);
    nr_linear_coords(&ll, 0, 5, 3, c);
    CHECK(c[0] == 3 * 8 + 1 && c[1] == 4, "lane 5 of warp 3: (%d, %d)", c[0], c[1]);
    /* A block smaller than the tile: replication, bases zero. */
    nr_layout_linear(m, id, 2, (int32_t[]){4, 8}, 4, &ll);
    CHECK(ll.nreg == 2 && ll.lane[4][0] == 0 && ll.lane[4][1] == 0 && ll.warp[0][0] == 0,
          "bases past the block are zero");
    nr_module_free(m);
}

/* --- mma ------------------------------------------------------------------------------------------- */
static int32_t mma2(NrModule *m, int wm, int wn, int k) {
    return nr_layout_mma(m, 2, 2, (int32_t[]){wm, wn}, (int32_t[]){16, 8, k});
}

/* Accumulator c_r of lane `lane` in the m16n8 tile: the PTX ISA table. */
static void acc_coord(int lane, int r, int *row, int *col) {
    int g = lane >> 2, t = lane & 3;
    *row = g + (r >= 2 ? 8 : 0);
    *col = 2 * t + (r & 1);
}

static void test_mma_fragments(void) {
    NrModule *m = nr_module_new(NULL);
    NrLinear ll;
    int32_t c[2];
    /* One warp, one 16x8 tile: c0..c3 per the ISA. */
    int32_t acc = mma2(m, 1, 1, 16);
    CHECK(nr_layout_linear(m, acc, 2, (int32_t[]){16, 8}, 1, &ll), "mma 16x8");
    for (int lane = 0; lane < 32; lane++) {
        for (int r = 0; r < 4; r++) {
            int row, col;
            acc_coord(lane, r, &row, &col);
            nr_linear_coords(&ll, (uint32_t)r, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "c%d of lane %d: (%d, %d), expected (%d, %d)", r, lane, c[0], c[1],
                  row, col);
        }
    }
    /* f16 operands of m16n8k16 (k_width 2). */
    int32_t a16 = nr_layout_dot_op(m, acc, 0, 2), b16 = nr_layout_dot_op(m, acc, 1, 2);
    CHECK(nr_layout_linear(m, a16, 2, (int32_t[]){16, 16}, 1, &ll), "A 16x16");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 8; i++) {
            int row = g + (i == 2 || i == 3 || i == 6 || i == 7 ? 8 : 0);
            int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "f16 a%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0], c[1],
                  row, col);
        }
    }
    CHECK(nr_layout_linear(m, b16, 2, (int32_t[]){16, 8}, 1, &ll), "B 16x8");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 4; i++) {
            int row = 2 * t + (i & 1) + (i >= 2 ? 8 : 0), col = g;
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "f16 b%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0], c[1],
                  row, col);
        }
    }
    /* 8-bit operands of m16n8k32 (k_width 4). */
    int32_t acc32 = mma2(m, 1, 1, 32);
    int32_t a8 = nr_layout_dot_op(m, acc32, 0, 4), b8 = nr_layout_dot_op(m, acc32, 1, 4);
    CHECK(nr_layout_linear(m, a8, 2, (int32_t[]){16, 32}, 1, &ll), "A 16x32");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 16; i++) {
            int row = g + ((i >= 4 && i < 8) || i >= 12 ? 8 : 0);
            int col = 4 * t + (i & 3) + (i >= 8 ? 16 : 0);
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "s8 a%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0], c[1],
                  row, col);
        }
    }
    CHECK(nr_layout_linear(m, b8, 2, (int32_t[]){32, 8}, 1, &ll), "B 32x8");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 8; i++) {
            int row = 4 * t + (i & 3) + (i >= 4 ? 16 : 0), col = g;
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "s8 b%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0], c[1],
                  row, col);
        }
    }
    /* tf32 operands of m16n8k8 (k_width 1). */
    int32_t acc8 = mma2(m, 1, 1, 8);
    int32_t at = nr_layout_dot_op(m, acc8, 0, 1), bt = nr_layout_dot_op(m, acc8, 1, 1);
    CHECK(nr_layout_linear(m, at, 2, (int32_t[]){16, 8}, 1, &ll), "A 16x8 tf32");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 4; i++) {
            int row = g + (i & 1 ? 8 : 0), col = t + (i >= 2 ? 4 : 0);
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "tf32 a%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0],
                  c[1], row, col);
        }
    }
    CHECK(nr_layout_linear(m, bt, 2, (int32_t[]){8, 8}, 1, &ll), "B 8x8 tf32");
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 2; i++) {
            int row = t + (i ? 4 : 0), col = g;
            nr_linear_coords(&ll, (uint32_t)i, (uint32_t)lane, 0, c);
            CHECK(c[0] == row && c[1] == col, "tf32 b%d of lane %d: (%d, %d), expected (%d, %d)", i, lane, c[0],
                  c[1], row, col);
        }
    }
    /* Warps tile wpc = [2, 2] over N first; repetitions N first, then M. */
    int32_t acc22 = mma2(m, 2, 2, 16);
    CHECK(nr_layout_linear(m, acc22, 2, (int32_t[]){64, 32}, 4, &ll), "mma 64x32 with 2x2 warps");
    for (int w = 0; w < 4; w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < 16; r++) {
                int row, col;
                acc_coord(lane, r & 3, &row, &col);
                int rep_n = (r >> 2) & 1, rep_m = r >> 3;
                row += 16 * (w >> 1) + 32 * rep_m;
                col += 8 * (w & 1) + 16 * rep_n;
                nr_linear_coords(&ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, c);
                CHECK(c[0] == row && c[1] == col, "warp %d lane %d reg %d: (%d, %d), expected (%d, %d)", w, lane, r,
                      c[0], c[1], row, col);
            }
        }
    }
    /* wgmma m64n32k16 accumulator over one warpgroup. */
    int32_t v3 = nr_layout_mma(m, 3, 2, (int32_t[]){4, 1}, (int32_t[]){16, 32, 16});
    CHECK(nr_layout_linear(m, v3, 2, (int32_t[]){64, 32}, 4, &ll), "wgmma 64x32");
    for (int w = 0; w < 4; w++) {
        for (int lane = 0; lane < 32; lane++) {
            for (int r = 0; r < 16; r++) {
                int g = lane >> 2, t = lane & 3;
                int row = 16 * w + g + 8 * ((r >> 1) & 1), col = 8 * (r >> 2) + 2 * t + (r & 1);
                nr_linear_coords(&ll, (uint32_t)r, (uint32_t)lane, (uint32_t)w, c);
                CHECK(c[0] == row && c[1] == col, "wgmma warp %d lane %d d%d: (%d, %d), expected (%d, %d)", w, lane,
                      r, c[0], c[1], row, col);
            }
        }
    }
    nr_module_free(m);
}

/* Every mma and dot_op layout over many shapes and warp arrangements covers
 * its block, each element once per replica (registers distinct). */
static void test_mma_cover(void) {
    NrModule *m = nr_module_new(NULL);
    static const int kw_of_k[] = {8, 1, 16, 2, 32, 4};
    for (int nw = 1; nw <= 16; nw *= 2) {
        for (int wm = 1; wm <= nw; wm *= 2) {
            int wn = nw / wm;
            for (int ki = 0; ki < 3; ki++) {
                int k = kw_of_k[2 * ki], kw = kw_of_k[2 * ki + 1];
                int32_t acc = mma2(m, wm, wn, k);
                int32_t a = nr_layout_dot_op(m, acc, 0, kw), b = nr_layout_dot_op(m, acc, 1, kw);
                for (int M = 16; M <= 256; M *= 2) {
                    for (int N = 8; N <= 256; N *= 4) {
                        int32_t s[2] = {M, N};
                        int per = check_cover(m, acc, 2, s, nw, true);
                        if (M >= 16 * wm && N >= 8 * wn)
                            CHECK(per == 1, "mma %dx%d warps over %s replicates", wm, wn, shape_str(2, s));
                        for (int K = k; K <= 128; K *= 4) {
                            int32_t sa[2] = {M, K}, sb[2] = {K, N};
                            check_cover(m, a, 2, sa, nw, true);
                            check_cover(m, b, 2, sb, nw, true);
                        }
                    }
                }
                /* slices of the accumulator (reductions of dot results) */
                int32_t s0 = nr_layout_slice(m, acc, 0), s1 = nr_layout_slice(m, acc, 1);
                check_cover(m, s0, 1, (int32_t[]){64}, nw, true);
                check_cover(m, s1, 1, (int32_t[]){128}, nw, true);
            }
            /* batched (rank 3) */
            int32_t acc3 = nr_layout_mma(m, 2, 3, (int32_t[]){1, wm, wn}, (int32_t[]){16, 8, 16});
            int32_t a3 = nr_layout_dot_op(m, acc3, 0, 2), b3 = nr_layout_dot_op(m, acc3, 1, 2);
            check_cover(m, acc3, 3, (int32_t[]){4, 64, 64}, nw, true);
            check_cover(m, a3, 3, (int32_t[]){4, 64, 32}, nw, true);
            check_cover(m, b3, 3, (int32_t[]){4, 32, 64}, nw, true);
        }
        /* wgmma: warpgroups along M */
        if (nw >= 4) {
            for (int wm = 4; wm <= nw; wm *= 2) {
                for (int n = 16; n <= 256; n *= 4) {
                    int32_t v3 = nr_layout_mma(m, 3, 2, (int32_t[]){wm, nw / wm}, (int32_t[]){16, n, 16});
                    int32_t a = nr_layout_dot_op(m, v3, 0, 2);
                    int32_t s[2] = {64 * (wm / 4) * 2, n * (nw / wm)};
                    int per = check_cover(m, v3, 2, s, nw, true);
                    CHECK(per == 1, "wgmma over %s replicates", shape_str(2, s));
                    check_cover(m, a, 2, (int32_t[]){s[0], 64}, nw, true);
                }
            }
        }
    }
    /* FMA operands of a blocked accumulator. */
    for (int nw = 1; nw <= 8; nw *= 2) {
        int32_t shape[2] = {64, 32};
        int32_t acc = nr_layout_default_blocked(m, 2, shape, nw);
        int32_t a = nr_layout_dot_op(m, acc, 0, 0), b = nr_layout_dot_op(m, acc, 1, 0);
        check_cover(m, a, 2, (int32_t[]){64, 16}, nw, true);
        check_cover(m, b, 2, (int32_t[]){16, 32}, nw, true);
        /* the thread holding acc[i][j] holds all of row i of A and column j of B */
        NrLinear la, lb, lc;
        nr_layout_linear(m, acc, 2, shape, nw, &lc);
        nr_layout_linear(m, a, 2, (int32_t[]){64, 16}, nw, &la);
        nr_layout_linear(m, b, 2, (int32_t[]){16, 32}, nw, &lb);
        for (uint32_t w = 0; w < (uint32_t)nw; w++) {
            for (uint32_t lane = 0; lane < 32; lane++) {
                int32_t ca[2], cb[2], cc[2];
                nr_linear_coords(&lc, 0, lane, w, cc);
                bool row_ok = false, col_ok = false;
                for (uint32_t r = 0; r < (uint32_t)nr_linear_regs(&la); r++) {
                    nr_linear_coords(&la, r, lane, w, ca);
                    if (ca[0] == cc[0] && ca[1] == 5) row_ok = true;
                }
                for (uint32_t r = 0; r < (uint32_t)nr_linear_regs(&lb); r++) {
                    nr_linear_coords(&lb, r, lane, w, cb);
                    if (cb[1] == cc[1] && cb[0] == 7) col_ok = true;
                }
                CHECK(row_ok && col_ok, "FMA operands of warp %u lane %u miss their row or column", w, lane);
            }
        }
    }
    nr_module_free(m);
}

/* --- checks and text ---------------------------------------------------------------------------- */
static void test_checks(void) {
    NrModule *m = nr_module_new(NULL);
    char why[200];
    int32_t ok = nr_layout_blocked(m, 2, (int32_t[]){1, 4}, (int32_t[]){8, 4}, (int32_t[]){4, 1}, (int32_t[]){1, 0});
    CHECK(nr_layout_check(m, ok, 4, why, sizeof why), "valid blocked: %s", why);
    CHECK(!nr_layout_check(m, ok, 8, why, sizeof why) && strstr(why, "num_warps = 8"), "warps: %s", why);
    int32_t bad = nr_layout_blocked(m, 2, (int32_t[]){1, 4}, (int32_t[]){8, 8}, (int32_t[]){4, 1}, (int32_t[]){1, 0});
    CHECK(!nr_layout_check(m, bad, 4, why, sizeof why) && strstr(why, "tpw"), "tpw: %s", why);
    int32_t perm = nr_layout_blocked(m, 2, (int32_t[]){1, 4}, (int32_t[]){8, 4}, (int32_t[]){4, 1}, (int32_t[]){1, 1});
    CHECK(!nr_layout_check(m, perm, 4, why, sizeof why) && strstr(why, "permutation"), "order: %s", why);
    int32_t v3 = nr_layout_mma(m, 3, 2, (int32_t[]){2, 2}, (int32_t[]){16, 64, 16});
    CHECK(!nr_layout_check(m, v3, 4, why, sizeof why) && strstr(why, "warpgroups"), "v3 warps: %s", why);
    int32_t v3b = nr_layout_mma(m, 3, 2, (int32_t[]){4, 1}, (int32_t[]){16, 64, 16});
    int32_t dob = nr_layout_dot_op(m, v3b, 1, 2);
    CHECK(!nr_layout_check(m, dob, 4, why, sizeof why) && strstr(why, "shared memory"), "v3 B: %s", why);
    NrLinear ll;
    CHECK(!nr_layout_linear(m, ok, 2, (int32_t[]){64, 64}, 8, &ll), "linear form with the wrong warp count");
    CHECK(!nr_layout_linear(m, ok, 1, (int32_t[]){64}, 4, &ll), "linear form of the wrong rank");
    CHECK(!nr_layout_linear(m, ok, 2, (int32_t[]){64, 48}, 4, &ll), "linear form of a non-power-of-two shape");
    int32_t sh = nr_layout_shared(m, 2, 8, 1, 8, (int32_t[]){1, 0});
    CHECK(!nr_layout_linear(m, sh, 2, (int32_t[]){64, 64}, 4, &ll), "shared layouts have no linear form");
    /* interning */
    CHECK(nr_layout_blocked(m, 2, (int32_t[]){1, 4}, (int32_t[]){8, 4}, (int32_t[]){4, 1}, (int32_t[]){1, 0}) == ok,
          "equal layouts intern to one id");
    CHECK(strcmp(layout_str(m, nr_layout_slice(m, ok, 1)), "slice<dim = 1, parent = #L1>") == 0, "slice text: %s",
          layout_str(m, nr_layout_slice(m, ok, 1)));
    nr_module_free(m);
}

/* --- shared memory ------------------------------------------------------------------------------- */
static void check_bijection(NrModule *m, int32_t id, int rank, const int32_t *shape, int eb) {
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= shape[i];
    uint8_t *seen = calloc((size_t)numel, 1);
    bool ok = true;
    for (int64_t k = 0; k < numel; k++) {
        int32_t c[NR_MAX_RANK];
        int64_t r = k;
        for (int i = rank - 1; i >= 0; i--) {
            c[i] = (int32_t)(r % shape[i]);
            r /= shape[i];
        }
        int64_t off = nr_shared_offset(m, id, rank, shape, eb, c);
        if (off < 0 || off >= numel || seen[off]) {
            ok = false;
            break;
        }
        seen[off] = 1;
    }
    CHECK(ok, "%s over %s (%d-byte elements) is not a bijection", layout_str(m, id), shape_str(rank, shape), eb);
    free(seen);
}

static void test_shared(void) {
    NrModule *m = nr_module_new(NULL);
    int32_t sw = nr_layout_shared(m, 2, 8, 1, 8, (int32_t[]){1, 0});
    int32_t shape[2] = {64, 64};
    /* row 3: phase 3, column 17 is group 2 -> group 1 */
    CHECK(nr_shared_offset(m, sw, 2, shape, 2, (int32_t[]){3, 17}) == 3 * 64 + 8 + 1, "swizzle of (3, 17)");
    CHECK(nr_shared_offset(m, sw, 2, shape, 2, (int32_t[]){0, 17}) == 17, "row 0 is not swizzled");
    /* per_phase 2: rows 2 and 3 share phase 1 */
    int32_t sw2 = nr_layout_shared(m, 2, 4, 2, 4, (int32_t[]){1, 0});
    CHECK(nr_shared_offset(m, sw2, 2, (int32_t[]){8, 32}, 4, (int32_t[]){3, 5}) == 3 * 32 + 1, "per_phase 2");
    /* column-major order: rows along dimension 1 */
    int32_t cm = nr_layout_shared(m, 2, 1, 1, 1, (int32_t[]){0, 1});
    CHECK(nr_shared_offset(m, cm, 2, (int32_t[]){16, 8}, 4, (int32_t[]){5, 3}) == 3 * 16 + 5, "column-major");
    /* multi-buffered: buffer 2 starts after two buffers */
    CHECK(nr_shared_offset(m, sw, 3, (int32_t[]){3, 64, 64}, 2, (int32_t[]){2, 0, 1}) == 2 * 4096 + 1, "buffer 2");
    /* nvmma 128-byte swizzle on f16 rows of 64: 16-byte chunk ^= row % 8 */
    int32_t n128 = nr_layout_nvmma(m, 2, 128, (int32_t[]){1, 0});
    CHECK(nr_shared_offset(m, n128, 2, shape, 2, (int32_t[]){5, 9}) == 5 * 64 + ((1 ^ 5) * 8) + 1, "nvmma 128");
    /* 64-byte swizzle on f16: blocks of 32 columns; chunk ^= (row / 2) % 4 */
    int32_t n64 = nr_layout_nvmma(m, 2, 64, (int32_t[]){1, 0});
    CHECK(nr_shared_offset(m, n64, 2, shape, 2, (int32_t[]){5, 9}) == 5 * 32 + ((1 ^ 2) * 8) + 1, "nvmma 64");
    CHECK(nr_shared_offset(m, n64, 2, shape, 2, (int32_t[]){0, 40}) == 64 * 32 + 8, "nvmma 64, second column block");
    /* 32-byte swizzle on f32: blocks of 8 columns; chunk ^= (row / 4) % 2 */
    int32_t n32 = nr_layout_nvmma(m, 2, 32, (int32_t[]){1, 0});
    CHECK(nr_shared_offset(m, n32, 2, (int32_t[]){16, 16}, 4, (int32_t[]){4, 1}) == 4 * 8 + 4 + 1, "nvmma 32");
    for (int eb = 1; eb <= 4; eb *= 2) {
        for (int a = 0; a <= 7; a++) {
            for (int b = 0; b <= 7; b++) {
                int32_t s[2] = {1 << a, 1 << b};
                check_bijection(m, sw, 2, s, eb);
                check_bijection(m, sw2, 2, s, eb);
                check_bijection(m, cm, 2, s, eb);
                if ((int64_t)s[0] * s[1] * eb % 128 == 0 || a == 0) {
                    check_bijection(m, n128, 2, s, eb);
                    check_bijection(m, n64, 2, s, eb);
                    check_bijection(m, n32, 2, s, eb);
                }
            }
        }
    }
    int32_t s3 = nr_layout_shared(m, 3, 4, 2, 4, (int32_t[]){2, 1, 0});
    check_bijection(m, s3, 3, (int32_t[]){4, 16, 32}, 2);
    nr_module_free(m);
}

/* --- text ---------------------------------------------------------------------------------------- */
/* A GPU module built through the API prints, parses back and prints the same. */
static void test_text_roundtrip(void) {
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrModule *m = nr_module_new(&a);
    m->num_warps = 8;
    m->sm = 80;
    int32_t shape[2] = {128, 64};
    int32_t bl = nr_layout_default_blocked(m, 2, shape, 8);
    int32_t sl = nr_layout_slice(m, bl, 1);
    int32_t mma = nr_layout_mma(m, 2, 2, (int32_t[]){4, 2}, (int32_t[]){16, 8, 16});
    nr_layout_dot_op(m, mma, 0, 2);
    int32_t sh = nr_layout_shared(m, 2, 8, 2, 4, (int32_t[]){1, 0});
    NrTypeId f32 = nr_type_scalar(m, NR_DT_F32);
    NrTypeId blk = nr_type_with_layout(m, nr_type_block(m, f32, 2, shape), bl);
    NrTypeId row = nr_type_with_layout(m, nr_type_block(m, f32, 1, shape), sl);
    NrType md = *nr_type(m, nr_type_block(m, f32, 2, shape));
    md.kind = NR_TK_MEMDESC;
    md.layout = sh;
    NrTypeId buf = nr_type_intern(m, &md);
    NrFunc *f = nr_func_new(m, "k", 1, &blk, 0, NULL);
    f->is_kernel = true;
    f->smem_bytes = 32768;
    NrBuilder b = nr_builder_at_end(f, f->body);
    NrValId x = f->blocks[f->body].args[0];
    NrOpId alloc = nr_build(&b, NR_OP_LOCAL_ALLOC, 1, &x, 1, &buf, 0);
    nr_op_set_int(f, alloc, NR_A_SMEM_OFFSET, 0);
    NrValId y = nr_build1(&b, NR_OP_LOCAL_LOAD, blk, 1, &f->ops[alloc].results[0]);
    NrOpId red = nr_build(&b, NR_OP_REDUCE, 1, &y, 1, &row, 0);
    nr_op_set_int(f, red, NR_A_AXIS, 1);
    nr_op_set_str(f, red, NR_A_KIND, "max");
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    CHECK(nr_module_verify(m, &d), "built GPU module verifies: %s", nr_diags_render(&a, &d));
    char *t1 = nr_module_to_string(m, NULL);
    NrModule *m2 = nr_module_parse(&a, t1, strlen(t1), "t.ir", &d);
    CHECK(m2 != NULL, "GPU module text parses back:\n%s\n%s", t1, nr_diags_render(&a, &d));
    if (m2) {
        char *t2 = nr_module_to_string(m2, NULL);
        CHECK(strcmp(t1, t2) == 0, "round trip differs:\n%s---\n%s", t1, t2);
        CHECK(m2->num_warps == 8 && m2->sm == 80 && m2->funcs[0]->smem_bytes == 32768, "header and smem read back");
    }
    CHECK(strstr(t1, "module attributes {num_warps = 8, sm = 80} {\n  #L1 = blocked<") != NULL, "header: %s", t1);
    nr_arena_free(&a);
}

int main(void) {
    test_text_roundtrip();
    test_default_blocked();
    test_blocked_and_slices();
    test_mma_fragments();
    test_mma_cover();
    test_checks();
    test_shared();
    if (failures) {
        printf("test_layout: %d of %ld checks failed\n", failures, checks);
        return 1;
    }
    printf("test_layout: %ld checks passed\n", checks);
    return 0;
}
