/* gpu_layout.c - GPU layouts: the module's layout table, constructors, the
 * default blocked layout, checks, the text form of one layout, linear forms
 * of distributed layouts and the shared-memory address map (gpu.h).
 *
 * A linear layout is built by pushing one basis vector at a time for a
 * hardware bit (register, lane or warp) along one block dimension.  A basis
 * that reaches past the block's extent along its dimension becomes the zero
 * vector: those bits replicate elements (broadcast).  When a layout's tile is
 * smaller than the block, extra register bits repeat it, fastest dimension
 * first.  docs/gpu.md draws each layout. */
#include "gpu_impl.h"
#include "util.h"

#include <string.h>

enum { HW_REG, HW_LANE, HW_WARP };

static int ilog2(int64_t x) {
    int n = 0;
    while (x > 1) {
        x >>= 1;
        n++;
    }
    return n;
}

static int64_t product(int n, const int32_t *v) {
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= v[i];
    return p;
}

static bool is_perm(int n, const int32_t *order) {
    bool seen[NR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (order[i] < 0 || order[i] >= n || seen[order[i]]) return false;
        seen[order[i]] = true;
    }
    return true;
}

/* --- the table --------------------------------------------------------------------------------- */
/* Only the fields of l's kind survive, so that equal layouts compare equal
 * byte for byte. */
static NrLayout normalized(const NrLayout *l) {
    NrLayout n;
    memset(&n, 0, sizeof n);
    n.kind = l->kind;
    n.rank = l->rank;
    int r = l->rank <= NR_MAX_RANK ? l->rank : NR_MAX_RANK;
    switch ((NrLayoutKind)l->kind) {
    case NR_LK_BLOCKED:
        for (int i = 0; i < r; i++) {
            n.size_per_thread[i] = l->size_per_thread[i];
            n.threads_per_warp[i] = l->threads_per_warp[i];
            n.warps_per_cta[i] = l->warps_per_cta[i];
            n.order[i] = l->order[i];
        }
        break;
    case NR_LK_SLICE:
        n.dim = l->dim;
        n.parent = l->parent;
        break;
    case NR_LK_MMA:
        n.version = l->version;
        for (int i = 0; i < r; i++) n.warps_per_cta[i] = l->warps_per_cta[i];
        for (int i = 0; i < 3; i++) n.instr[i] = l->instr[i];
        break;
    case NR_LK_DOT_OP:
        n.parent = l->parent;
        n.op_idx = l->op_idx;
        n.k_width = l->k_width;
        break;
    case NR_LK_SHARED:
        for (int i = 0; i < r; i++) n.order[i] = l->order[i];
        n.nvmma = l->nvmma;
        if (l->nvmma) {
            n.swizzle_bytes = l->swizzle_bytes;
        } else {
            n.vec = l->vec;
            n.per_phase = l->per_phase;
            n.max_phase = l->max_phase;
        }
        break;
    case NR_LK_NONE: break;
    }
    return n;
}

int32_t nr_layout_intern(NrModule *m, const NrLayout *l) {
    NrLayout n = normalized(l);
    if (m->nlayouts == 0) NR_PUSH(m->arena, m->layouts, m->nlayouts, m->caplayouts); /* id 0 = none */
    for (int32_t i = 1; i < m->nlayouts; i++) {
        const NrLayout *x = &m->layouts[i];
        /* (a few fields first: most layouts differ there, and memcmp is a call) */
        if (x->kind != n.kind || x->rank != n.rank || x->size_per_thread[0] != n.size_per_thread[0] ||
            x->parent != n.parent || x->warps_per_cta[0] != n.warps_per_cta[0])
            continue;
        if (memcmp(x, &n, sizeof n) == 0) return i;
    }
    *NR_PUSH(m->arena, m->layouts, m->nlayouts, m->caplayouts) = n;
    return m->nlayouts - 1;
}

NrTypeId nr_type_with_layout(NrModule *m, NrTypeId t, int32_t layout) {
    NrType r = m->types[t];
    r.layout = layout;
    return nr_type_intern(m, &r);
}

/* --- constructors ------------------------------------------------------------------------------ */
int32_t nr_layout_blocked(NrModule *m, int rank, const int32_t *spt, const int32_t *tpw, const int32_t *wpc,
                          const int32_t *order) {
    NR_ASSERT(rank >= 1 && rank <= NR_MAX_RANK);
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_BLOCKED;
    l.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        l.size_per_thread[i] = spt[i];
        l.threads_per_warp[i] = tpw[i];
        l.warps_per_cta[i] = wpc[i];
        l.order[i] = order[i];
    }
    return nr_layout_intern(m, &l);
}

int32_t nr_layout_mma(NrModule *m, int version, int rank, const int32_t *wpc, const int32_t instr[3]) {
    NR_ASSERT(rank >= 2 && rank <= 3);
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_MMA;
    l.rank = (uint8_t)rank;
    l.version = version;
    for (int i = 0; i < rank; i++) l.warps_per_cta[i] = wpc[i];
    for (int i = 0; i < 3; i++) l.instr[i] = instr[i];
    return nr_layout_intern(m, &l);
}

int32_t nr_layout_dot_op(NrModule *m, int32_t parent, int op_idx, int k_width) {
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_DOT_OP;
    l.rank = m->layouts[parent].rank;
    l.parent = parent;
    l.op_idx = op_idx;
    l.k_width = k_width;
    return nr_layout_intern(m, &l);
}

int32_t nr_layout_shared(NrModule *m, int rank, int vec, int per_phase, int max_phase, const int32_t *order) {
    NR_ASSERT(rank >= 1 && rank <= NR_MAX_RANK);
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_SHARED;
    l.rank = (uint8_t)rank;
    l.vec = vec;
    l.per_phase = per_phase;
    l.max_phase = max_phase;
    for (int i = 0; i < rank; i++) l.order[i] = order[i];
    return nr_layout_intern(m, &l);
}

int32_t nr_layout_nvmma(NrModule *m, int rank, int swizzle_bytes, const int32_t *order) {
    NR_ASSERT(rank >= 1 && rank <= NR_MAX_RANK);
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_SHARED;
    l.rank = (uint8_t)rank;
    l.nvmma = true;
    l.swizzle_bytes = swizzle_bytes;
    for (int i = 0; i < rank; i++) l.order[i] = order[i];
    return nr_layout_intern(m, &l);
}

int32_t nr_gpu_blocked_for(NrModule *m, int rank, const int32_t *shape, const int32_t *spt, const int32_t *order,
                           int num_warps) {
    NR_ASSERT(rank >= 1 && rank <= NR_MAX_RANK && nr_is_pow2(num_warps));
    int32_t tpw[NR_MAX_RANK], wpc[NR_MAX_RANK];
    int64_t lanes = 32, warps = num_warps, threads = 32 * (int64_t)num_warps;
    int64_t used_lanes = 1, used_warps = 1;
    for (int k = 0; k < rank - 1; k++) {
        int d = order[k];
        int64_t room = shape[d] / spt[d];
        int64_t want = threads < room ? threads : room;
        if (want < 1) want = 1;
        tpw[d] = (int32_t)(want < lanes ? want : lanes);
        int64_t w = want / tpw[d];
        if (w < 1) w = 1;
        wpc[d] = (int32_t)(w < warps ? w : warps);
        warps /= wpc[d];
        lanes /= tpw[d];
        threads /= want;
        used_lanes *= tpw[d];
        used_warps *= wpc[d];
    }
    int slow = order[rank - 1];
    tpw[slow] = (int32_t)(32 / used_lanes);
    wpc[slow] = (int32_t)(num_warps / used_warps);
    return nr_layout_blocked(m, rank, spt, tpw, wpc, order);
}

/* Triton's default: one element per thread, the last dimension fastest. */
int32_t nr_layout_default_blocked(NrModule *m, int rank, const int32_t *shape, int num_warps) {
    NR_ASSERT(rank >= 1 && rank <= NR_MAX_RANK);
    int32_t spt[NR_MAX_RANK], order[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        spt[i] = 1;
        order[i] = rank - 1 - i;
    }
    return nr_gpu_blocked_for(m, rank, shape, spt, order, num_warps);
}

int32_t nr_gpu_permute_blocked(NrModule *m, int32_t id, const int64_t *order, bool inverse) {
    const NrLayout *l = &m->layouts[id];
    NR_ASSERT(l->kind == NR_LK_BLOCKED);
    int r = l->rank;
    int32_t spt[NR_MAX_RANK], tpw[NR_MAX_RANK], wpc[NR_MAX_RANK], ord[NR_MAX_RANK], inv[NR_MAX_RANK];
    for (int i = 0; i < r; i++) inv[order[i]] = i;
    for (int i = 0; i < r; i++) {
        /* forward: result dim i is operand dim order[i] */
        int src = inverse ? inv[i] : (int)order[i];
        spt[i] = l->size_per_thread[src];
        tpw[i] = l->threads_per_warp[src];
        wpc[i] = l->warps_per_cta[src];
        ord[i] = inverse ? (int32_t)order[l->order[i]] : inv[l->order[i]];
    }
    return nr_layout_blocked(m, r, spt, tpw, wpc, ord);
}

int32_t nr_layout_slice(NrModule *m, int32_t parent, int dim) {
    NrLayout l;
    memset(&l, 0, sizeof l);
    l.kind = NR_LK_SLICE;
    l.rank = (uint8_t)(m->layouts[parent].rank - 1);
    l.dim = dim;
    l.parent = parent;
    return nr_layout_intern(m, &l);
}

bool nr_layout_is_distributed(const NrModule *m, int32_t id) {
    return id > 0 && id < m->nlayouts && m->layouts[id].kind != NR_LK_SHARED && m->layouts[id].kind != NR_LK_NONE;
}

/* --- checks ------------------------------------------------------------------------------------ */
static bool pow2_list(int n, const int32_t *v) {
    for (int i = 0; i < n; i++)
        if (!nr_is_pow2(v[i]) || v[i] > (1 << 20)) return false;
    return true;
}

static bool fail(char *why, size_t n, const char *msg) {
    if (n) snprintf(why, n, "%s", msg);
    return false;
}

static bool check_warps(int rank, const int32_t *wpc, int num_warps, char *why, size_t n) {
    if (!pow2_list(rank, wpc)) return fail(why, n, "wpc entries must be powers of two");
    if (num_warps > 0 && product(rank, wpc) != num_warps) {
        snprintf(why, n, "wpc multiplies to %lld warps, but the module has num_warps = %d",
                 (long long)product(rank, wpc), num_warps);
        return false;
    }
    return true;
}

static bool check_mma(const NrLayout *l, int num_warps, char *why, size_t n) {
    if (l->version != 2 && l->version != 3) return fail(why, n, "mma version must be 2 or 3");
    if (l->rank != 2 && l->rank != 3) return fail(why, n, "mma layouts have rank 2 or 3");
    if (!check_warps(l->rank, l->warps_per_cta, num_warps, why, n)) return false;
    int k = l->instr[2];
    if (k != 8 && k != 16 && k != 32) return fail(why, n, "mma instr k must be 8, 16 or 32");
    if (l->version == 2 && (l->instr[0] != 16 || l->instr[1] != 8))
        return fail(why, n, "mma version 2 has instr = [16, 8, k]");
    if (l->version == 3) {
        if (l->instr[0] != 16 || !nr_is_pow2(l->instr[1]) || l->instr[1] < 8 || l->instr[1] > 256)
            return fail(why, n, "mma version 3 has instr = [16, n, k] with n a power of two in [8, 256]");
        if (l->warps_per_cta[l->rank - 2] % 4 != 0)
            return fail(why, n, "mma version 3 needs a multiple of 4 warps along M (warpgroups)");
    }
    return true;
}

bool nr_layout_check(const NrModule *m, int32_t id, int num_warps, char *why, size_t n) {
    if (id <= 0 || id >= m->nlayouts) return fail(why, n, "undefined layout");
    const NrLayout *l = &m->layouts[id];
    int r = l->rank;
    switch ((NrLayoutKind)l->kind) {
    case NR_LK_BLOCKED:
        if (r < 1 || r > NR_MAX_RANK) return fail(why, n, "blocked layouts have rank 1 to 8");
        if (!pow2_list(r, l->size_per_thread)) return fail(why, n, "spt entries must be powers of two up to 2^20");
        if (!pow2_list(r, l->threads_per_warp) || product(r, l->threads_per_warp) != 32)
            return fail(why, n, "tpw entries must be powers of two that multiply to 32");
        if (!check_warps(r, l->warps_per_cta, num_warps, why, n)) return false;
        if (!is_perm(r, l->order)) return fail(why, n, "order must be a permutation of the dimensions");
        return true;
    case NR_LK_SLICE: {
        if (l->parent <= 0 || l->parent >= id || !nr_layout_is_distributed(m, l->parent))
            return fail(why, n, "a slice's parent must be a distributed layout defined before it");
        const NrLayout *p = &m->layouts[l->parent];
        if (p->rank < 2) return fail(why, n, "a slice's parent must have rank 2 or more");
        if (l->dim < 0 || l->dim >= p->rank) return fail(why, n, "slice dim is out of the parent's range");
        if (r != p->rank - 1) return fail(why, n, "a slice has one dimension fewer than its parent");
        return true;
    }
    case NR_LK_MMA: return check_mma(l, num_warps, why, n);
    case NR_LK_DOT_OP: {
        if (l->parent <= 0 || l->parent >= id)
            return fail(why, n, "a dot_op's parent must be a layout defined before it");
        const NrLayout *p = &m->layouts[l->parent];
        if (l->op_idx != 0 && l->op_idx != 1) return fail(why, n, "dot_op op_idx must be 0 or 1");
        if (r != p->rank) return fail(why, n, "a dot_op has its parent's rank");
        if (p->kind == NR_LK_MMA) {
            if (l->k_width != 1 && l->k_width != 2 && l->k_width != 4)
                return fail(why, n, "dot_op of an mma layout has k_width 1, 2 or 4");
            if (p->version == 3 && l->op_idx != 0)
                return fail(why, n, "operand B of an mma version 3 dot comes from shared memory");
            return true;
        }
        if (p->kind == NR_LK_BLOCKED) {
            if (p->rank != 2 && p->rank != 3) return fail(why, n, "dot_op parents have rank 2 or 3");
            if (l->k_width != 0) return fail(why, n, "dot_op of a blocked layout has k_width 0");
            return true;
        }
        return fail(why, n, "a dot_op's parent must be an mma or blocked layout");
    }
    case NR_LK_SHARED:
        if (r < 1 || r > NR_MAX_RANK) return fail(why, n, "shared layouts have rank 1 to 8");
        if (!is_perm(r, l->order)) return fail(why, n, "order must be a permutation of the dimensions");
        if (l->nvmma) {
            int s = l->swizzle_bytes;
            if (s != 0 && s != 32 && s != 64 && s != 128) return fail(why, n, "swizzle must be 0, 32, 64 or 128");
            return true;
        }
        if (!nr_is_pow2(l->vec) || !nr_is_pow2(l->per_phase) || !nr_is_pow2(l->max_phase) || l->vec > 1024 ||
            l->per_phase > 1024 || l->max_phase > 1024)
            return fail(why, n, "vec, per_phase and max_phase must be powers of two up to 1024");
        return true;
    case NR_LK_NONE: break;
    }
    return fail(why, n, "unknown layout kind");
}

/* --- text -------------------------------------------------------------------------------------- */
static void print_list(FILE *out, int n, const int32_t *v) {
    fputc('[', out);
    for (int i = 0; i < n; i++) fprintf(out, "%s%d", i ? ", " : "", v[i]);
    fputc(']', out);
}

void nr_layout_print(const NrModule *m, int32_t id, FILE *out) {
    if (id <= 0 || id >= m->nlayouts) {
        fprintf(out, "<invalid layout %d>", id);
        return;
    }
    const NrLayout *l = &m->layouts[id];
    int r = l->rank <= NR_MAX_RANK ? l->rank : NR_MAX_RANK;
    switch ((NrLayoutKind)l->kind) {
    case NR_LK_BLOCKED:
        fputs("blocked<spt = ", out);
        print_list(out, r, l->size_per_thread);
        fputs(", tpw = ", out);
        print_list(out, r, l->threads_per_warp);
        fputs(", wpc = ", out);
        print_list(out, r, l->warps_per_cta);
        fputs(", order = ", out);
        print_list(out, r, l->order);
        fputc('>', out);
        return;
    case NR_LK_SLICE: fprintf(out, "slice<dim = %d, parent = #L%d>", l->dim, l->parent); return;
    case NR_LK_MMA:
        fprintf(out, "mma<version = %d, wpc = ", l->version);
        print_list(out, r, l->warps_per_cta);
        fputs(", instr = ", out);
        print_list(out, 3, l->instr);
        fputc('>', out);
        return;
    case NR_LK_DOT_OP:
        fprintf(out, "dot_op<op_idx = %d, parent = #L%d, k_width = %d>", l->op_idx, l->parent, l->k_width);
        return;
    case NR_LK_SHARED:
        if (l->nvmma) fprintf(out, "nvmma_shared<swizzle = %d, order = ", l->swizzle_bytes);
        else
            fprintf(out, "shared<vec = %d, per_phase = %d, max_phase = %d, order = ", l->vec, l->per_phase,
                    l->max_phase);
        print_list(out, r, l->order);
        fputc('>', out);
        return;
    case NR_LK_NONE: break;
    }
    fprintf(out, "<invalid layout %d>", id);
}

/* --- linear layouts ---------------------------------------------------------------------------- */
typedef struct Build {
    NrLinear *ll;
    bool ok;
} Build;

static void start(Build *b, NrLinear *ll, int rank, const int32_t *shape) {
    memset(ll, 0, sizeof *ll);
    ll->rank = rank;
    for (int i = 0; i < rank; i++) ll->shape[i] = shape[i];
    b->ll = ll;
    b->ok = true;
}

static int32_t *slot(Build *b, int hw) {
    NrLinear *ll = b->ll;
    int *n = hw == HW_REG ? &ll->nreg : hw == HW_LANE ? &ll->nlane : &ll->nwarp;
    if (*n >= NR_LL_MAX_BITS) {
        b->ok = false;
        return NULL;
    }
    int32_t(*tab)[NR_MAX_RANK] = hw == HW_REG ? ll->reg : hw == HW_LANE ? ll->lane : ll->warp;
    int32_t *v = tab[(*n)++];
    memset(v, 0, sizeof(int32_t) * NR_MAX_RANK);
    return v;
}

/* Basis `value` along `dim` for the next bit of hw; zero (replication) when
 * it is past the block's extent. */
static void push(Build *b, int hw, int dim, int64_t value) {
    int32_t *v = slot(b, hw);
    if (v && value < b->ll->shape[dim]) v[dim] = (int32_t)value;
}

static void push_zero(Build *b, int hw) { slot(b, hw); }

/* Register bits repeating a tile of extent `tile` along dim up to the shape. */
static void repeat(Build *b, int dim, int64_t tile) {
    for (int64_t t = tile; t < b->ll->shape[dim]; t *= 2) push(b, HW_REG, dim, t);
}

static bool linear_blocked(const NrLayout *l, Build *b) {
    int r = l->rank;
    int64_t cover[NR_MAX_RANK];
    for (int i = 0; i < r; i++) cover[i] = 1;
    const int32_t *per[3] = {l->size_per_thread, l->threads_per_warp, l->warps_per_cta};
    for (int hw = HW_REG; hw <= HW_WARP; hw++) {
        for (int k = 0; k < r; k++) {
            int d = l->order[k];
            for (int i = 0; i < ilog2(per[hw][d]); i++) {
                push(b, hw, d, cover[d]);
                cover[d] *= 2;
            }
        }
    }
    for (int k = 0; k < r; k++) repeat(b, l->order[k], cover[l->order[k]]);
    return b->ok;
}

/* The lanes of an m16n8 fragment: lane = 4 * group + thread-in-group, group
 * along `gdim` (steps 1, 2, 4), thread-in-group along `tdim` (steps t0, 2*t0). */
static void lanes_m16n8(Build *b, int tdim, int64_t t0, int gdim) {
    push(b, HW_LANE, tdim, t0);
    push(b, HW_LANE, tdim, 2 * t0);
    for (int i = 0; i < 3; i++) push(b, HW_LANE, gdim, 1 << i);
}

/* Warp bits of mma layout p, as seen by a block whose M and N dimensions are
 * mdim and ndim (-1: that dimension is not in the block, its bits
 * replicate).  Version 2 numbers warps N first, version 3 M first (the four
 * warps of a warpgroup share N); the batch dimension comes last. */
static void mma_warps(Build *b, const NrLayout *p, int mdim, int ndim) {
    int r = p->rank;
    int32_t wm = p->warps_per_cta[r - 2], wn = p->warps_per_cta[r - 1];
    int64_t tile_n = p->version == 2 ? 8 : p->instr[1];
    for (int pass = 0; pass < 2; pass++) {
        bool n_now = (p->version == 2) == (pass == 0);
        int dim = n_now ? ndim : mdim;
        int bits = ilog2(n_now ? wn : wm);
        int64_t step = n_now ? tile_n : 16;
        for (int i = 0; i < bits; i++) {
            if (dim < 0) push_zero(b, HW_WARP);
            else push(b, HW_WARP, dim, step << i);
        }
    }
    if (r == 3)
        for (int i = 0; i < ilog2(p->warps_per_cta[0]); i++) push(b, HW_WARP, 0, (int64_t)1 << i);
}

static bool linear_mma(const NrLayout *p, Build *b) {
    int r = p->rank, m = r - 2, n = r - 1;
    int32_t wm = p->warps_per_cta[m], wn = p->warps_per_cta[n];
    int64_t tile_n = p->version == 2 ? 8 : p->instr[1];
    /* c0, c1: row group, columns 2*tig + {0, 1}; c2, c3: row group + 8 */
    push(b, HW_REG, n, 1);
    push(b, HW_REG, m, 8);
    for (int64_t c = 8; c < tile_n; c *= 2) push(b, HW_REG, n, c); /* wgmma: the n/8 column groups */
    lanes_m16n8(b, n, 2, m);
    mma_warps(b, p, m, n);
    repeat(b, n, tile_n * wn);
    repeat(b, m, 16 * (int64_t)wm);
    if (r == 3) repeat(b, 0, p->warps_per_cta[0]);
    return b->ok;
}

/* Operand A (op_idx 0, [.., M, K]) or B (op_idx 1, [.., K, N]) fragments of
 * mma.sync m16n8k(8*kw) (and of wgmma's register A): kw consecutive k per
 * 32-bit register, the second row half (A) in the next register, then the
 * second k half. */
static bool linear_dot_mma(const NrLayout *l, const NrLayout *p, Build *b) {
    int r = p->rank, kw = l->k_width;
    int kdim = l->op_idx == 0 ? r - 1 : r - 2, odim = l->op_idx == 0 ? r - 2 : r - 1;
    for (int i = 0; i < ilog2(kw); i++) push(b, HW_REG, kdim, (int64_t)1 << i);
    if (l->op_idx == 0) push(b, HW_REG, odim, 8);
    push(b, HW_REG, kdim, 4 * (int64_t)kw);
    lanes_m16n8(b, kdim, kw, odim);
    if (l->op_idx == 0) mma_warps(b, p, odim, -1);
    else mma_warps(b, p, -1, odim);
    repeat(b, kdim, 8 * (int64_t)kw);
    int64_t tile = l->op_idx == 0 ? 16 * (int64_t)p->warps_per_cta[r - 2] : 8 * (int64_t)p->warps_per_cta[r - 1];
    repeat(b, odim, tile);
    if (r == 3) repeat(b, 0, p->warps_per_cta[0]);
    return b->ok;
}

static bool is_zero(const int32_t *v, int rank) {
    for (int i = 0; i < rank; i++)
        if (v[i]) return false;
    return true;
}

/* Drops the zero register bases (duplicate registers). */
static void drop_zero_regs(NrLinear *ll) {
    int k = 0;
    for (int i = 0; i < ll->nreg; i++)
        if (!is_zero(ll->reg[i], ll->rank)) memmove(ll->reg[k++], ll->reg[i], sizeof ll->reg[i]);
    ll->nreg = k;
}

static bool linear_of(const NrModule *m, int32_t id, int rank, const int32_t *shape, int num_warps, NrLinear *out,
                      int depth);

/* FMA operand of a blocked accumulator: the rows (A) or columns (B) the
 * accumulator's thread holds, with every k in registers (k first). */
static bool linear_dot_blocked(const NrModule *m, const NrLayout *l, int rank, const int32_t *shape, int num_warps,
                               NrLinear *out, int depth) {
    int kdim = l->op_idx == 0 ? rank - 1 : rank - 2;
    int32_t pshape[NR_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) pshape[i] = i == kdim ? 1 : shape[i];
    NrLinear par;
    if (!linear_of(m, l->parent, rank, pshape, num_warps, &par, depth + 1)) return false;
    drop_zero_regs(&par);
    Build b;
    start(&b, out, rank, shape);
    for (int64_t k = 1; k < shape[kdim]; k *= 2) push(&b, HW_REG, kdim, k);
    for (int i = 0; i < par.nreg; i++) {
        int32_t *v = slot(&b, HW_REG);
        if (v) memcpy(v, par.reg[i], sizeof par.reg[i]);
    }
    if (!b.ok) return false;
    out->nlane = par.nlane;
    out->nwarp = par.nwarp;
    memcpy(out->lane, par.lane, sizeof par.lane);
    memcpy(out->warp, par.warp, sizeof par.warp);
    return true;
}

/* The parent over the shape with `dim` re-inserted at extent 1, without
 * that dimension and without the registers that became duplicates. */
static bool linear_slice(const NrModule *m, const NrLayout *l, int rank, const int32_t *shape, int num_warps,
                         NrLinear *out, int depth) {
    int32_t pshape[NR_MAX_RANK + 1] = {0};
    if (rank + 1 > NR_MAX_RANK) return false;
    for (int i = 0, j = 0; i <= rank; i++) pshape[i] = i == l->dim ? 1 : shape[j++];
    NrLinear par;
    if (!linear_of(m, l->parent, rank + 1, pshape, num_warps, &par, depth + 1)) return false;
    memset(out, 0, sizeof *out);
    out->rank = rank;
    for (int i = 0; i < rank; i++) out->shape[i] = shape[i];
    out->nreg = par.nreg;
    out->nlane = par.nlane;
    out->nwarp = par.nwarp;
    int32_t(*src[3])[NR_MAX_RANK] = {par.reg, par.lane, par.warp};
    int32_t(*dst[3])[NR_MAX_RANK] = {out->reg, out->lane, out->warp};
    for (int hw = 0; hw < 3; hw++)
        for (int i = 0; i < NR_LL_MAX_BITS; i++)
            for (int k = 0, j = 0; k <= rank; k++)
                if (k != l->dim) dst[hw][i][j++] = src[hw][i][k];
    drop_zero_regs(out);
    return true;
}

static bool linear_of(const NrModule *m, int32_t id, int rank, const int32_t *shape, int num_warps, NrLinear *out,
                      int depth) {
    if (depth > 8 || !nr_layout_is_distributed(m, id) || rank < 1 || rank > NR_MAX_RANK) return false;
    char why[8];
    if (!nr_layout_check(m, id, num_warps, why, sizeof why)) return false;
    const NrLayout *l = &m->layouts[id];
    if (l->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (!nr_is_pow2(shape[i])) return false;
    Build b;
    switch ((NrLayoutKind)l->kind) {
    case NR_LK_BLOCKED: start(&b, out, rank, shape); return linear_blocked(l, &b);
    case NR_LK_MMA: start(&b, out, rank, shape); return linear_mma(l, &b);
    case NR_LK_SLICE: return linear_slice(m, l, rank, shape, num_warps, out, depth);
    case NR_LK_DOT_OP: {
        const NrLayout *p = &m->layouts[l->parent];
        if (p->kind == NR_LK_BLOCKED) return linear_dot_blocked(m, l, rank, shape, num_warps, out, depth);
        if (!nr_layout_check(m, l->parent, num_warps, why, sizeof why)) return false;
        start(&b, out, rank, shape);
        return linear_dot_mma(l, p, &b);
    }
    case NR_LK_SHARED:
    case NR_LK_NONE: break;
    }
    return false;
}

bool nr_layout_linear(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int num_warps,
                      NrLinear *out) {
    if (num_warps < 1 || num_warps > 64 || !nr_is_pow2(num_warps)) return false;
    if (!linear_of(m, layout, rank, shape, num_warps, out, 0)) return false;
    return out->nlane == 5 && out->nwarp == ilog2(num_warps);
}

void nr_linear_coords(const NrLinear *ll, uint32_t reg, uint32_t lane, uint32_t warp, int32_t *coords) {
    for (int d = 0; d < ll->rank; d++) coords[d] = 0;
    for (int i = 0; i < ll->nreg; i++)
        if (reg >> i & 1)
            for (int d = 0; d < ll->rank; d++) coords[d] ^= ll->reg[i][d];
    for (int i = 0; i < ll->nlane; i++)
        if (lane >> i & 1)
            for (int d = 0; d < ll->rank; d++) coords[d] ^= ll->lane[i][d];
    for (int i = 0; i < ll->nwarp; i++)
        if (warp >> i & 1)
            for (int d = 0; d < ll->rank; d++) coords[d] ^= ll->warp[i][d];
}

/* --- shared memory ----------------------------------------------------------------------------- */
int64_t nr_shared_offset(const NrModule *m, int32_t layout, int rank, const int32_t *shape, int elem_bytes,
                         const int32_t *coords) {
    NR_ASSERT(layout > 0 && layout < m->nlayouts && m->layouts[layout].kind == NR_LK_SHARED);
    const NrLayout *l = &m->layouts[layout];
    int lr = l->rank;
    NR_ASSERT(rank == lr || rank == lr + 1);
    int64_t buffer = 0, per_buffer = 1;
    if (rank == lr + 1) {
        buffer = coords[0];
        shape++;
        coords++;
    }
    for (int i = 0; i < lr; i++) per_buffer *= shape[i];
    int cdim = l->order[0];
    int64_t cols = shape[cdim], col = coords[cdim];
    /* rows: every other dimension, order[1] fastest */
    int64_t row = 0, rows = 1;
    for (int k = lr - 1; k >= 1; k--) {
        row = row * shape[l->order[k]] + coords[l->order[k]];
        rows *= shape[l->order[k]];
    }
    int64_t off;
    if (l->nvmma) {
        int64_t width = l->swizzle_bytes ? l->swizzle_bytes / elem_bytes : cols;
        if (width > cols || width < 1) width = cols;
        off = ((col / width) * rows + row) * width + col % width;
        if (l->swizzle_bytes) {
            int64_t addr = off * elem_bytes;
            int64_t mask = l->swizzle_bytes / 16 - 1;
            addr ^= ((addr >> 7) & mask) << 4;
            off = addr / elem_bytes;
        }
    } else {
        int64_t vec = l->vec, groups = cols / vec;
        int64_t phase = lr >= 2 ? (row / l->per_phase) % l->max_phase : 0;
        if (groups >= 1) phase &= groups - 1;
        else phase = 0;
        int64_t c = vec <= cols ? ((col / vec) ^ phase) * vec + col % vec : col;
        off = row * cols + c;
    }
    return buffer * per_buffer + off;
}

/* --- compaction ---------------------------------------------------------------------------------- */
static void mark_layout(const NrModule *m, int32_t id, uint8_t *used) {
    for (int depth = 0; id > 0 && id < m->nlayouts && !used[id] && depth < 64; depth++) {
        used[id] = 1;
        const NrLayout *l = &m->layouts[id];
        id = l->kind == NR_LK_SLICE || l->kind == NR_LK_DOT_OP ? l->parent : 0;
    }
}

static void mark_type(const NrModule *m, NrTypeId t, uint8_t *used) {
    if (t > 0 && t < m->ntypes) mark_layout(m, m->types[t].layout, used);
}

static void mark_block(const NrFunc *f, NrBlockId b, uint8_t *used, int depth) {
    if (depth > 1000) return;
    const NrModule *m = f->mod;
    for (int i = 0; i < f->blocks[b].nargs; i++) mark_type(m, f->vals[f->blocks[b].args[i]].type, used);
    NR_FOR_OPS(f, b, o) {
        const NrOp *op = &f->ops[o];
        for (int i = 0; i < op->nresults; i++) mark_type(m, f->vals[op->results[i]].type, used);
        for (int r = 0; r < op->nregions; r++) mark_block(f, op->regions[r], used, depth + 1);
    }
}

void nr_gpu_compact_layouts(NrModule *m) {
    int32_t old = m->nlayouts;
    if (old <= 1) return;
    NrArena a;
    nr_arena_init(&a);
    uint8_t *used = nr_alloc(&a, (size_t)m->nlayouts);
    int32_t *to = nr_alloc(&a, sizeof(int32_t) * (size_t)m->nlayouts);
    for (int i = 0; i < m->nfuncs; i++) {
        const NrFunc *f = m->funcs[i];
        mark_block(f, f->body, used, 0);
        for (int r = 0; r < f->nrtypes; r++) mark_type(m, f->rtypes[r], used);
    }
    int32_t n = 1;
    for (int32_t id = 1; id < m->nlayouts; id++) {
        if (!used[id]) continue;
        to[id] = n;
        NrLayout l = m->layouts[id];
        if (l.kind == NR_LK_SLICE || l.kind == NR_LK_DOT_OP) l.parent = to[l.parent];
        m->layouts[n++] = l; /* parents come first, so they have moved already */
    }
    m->nlayouts = n;
    /* Types of layouts no value has any more keep an id that names no
     * layout (-1): unreachable, they never compare equal to a new type. */
    for (NrTypeId t = 1; t < m->ntypes; t++) {
        int32_t l = m->types[t].layout;
        if (l > 0) m->types[t].layout = l < old && used[l] ? to[l] : -1;
    }
    m->type_index = NULL; /* the types changed in place: rebuilt when next used */
    nr_arena_free(&a);
}
