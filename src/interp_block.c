/* interp_block.c - the interpreter's whole-block ops: broadcast, expand_dims,
 * reshape, trans, reduce, argreduce and dot.
 *
 * Reductions view the operand as [outer, len, inner] around the reduced axis.
 * Float sums combine in a fixed tree: at each step element j is combined with
 * element j + h, h = ceil(len/2), until one remains (for len 8: 0+4, 1+5,
 * 2+6, 3+7, then 0+2, 1+3, then 0+1).  f32 and f64 sums round every step to
 * their type; fp16/bf16/fp8 sums run in f32 and round once at the end.
 *
 * dot: r[m][n] = acc[m][n] + s, with s = sum over k of a[m][k]*b[k][n]
 * accumulated in f32 from 0 in increasing k, each product and each partial
 * sum rounded to f32; f32 operands are first rounded to tf32 when
 * input_precision is "tf32" or absent (every other precision keeps them);
 * fp16/bf16/fp8 operands convert exactly.  The final acc + s rounds once to r's dtype.  int8 x int8 sums in
 * i32 (wrapping), f64 operands in f64. */
#include "interp_impl.h"

#include <inttypes.h>
#include <math.h>

/* --- shape ops ---------------------------------------------------------------------------------- */
static void row_major_strides(const NrType *t, int64_t *s) {
    int64_t acc = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        s[k] = acc;
        acc *= t->shape[k];
    }
}

/* dst (row-major over dshape) = src[sum idx[k] * sstride[k]], element size es. */
static void strided_copy(void *dst, const void *src, int rank, const int32_t *dshape, const int64_t *sstride, int es) {
    if (rank == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    for (int k = 0; k < rank; k++)
        if (dshape[k] <= 0) return;
    int64_t idx[NR_MAX_RANK] = {0};
    int64_t len = dshape[rank - 1], st = sstride[rank - 1];
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (;;) {
        int64_t base = 0;
        for (int k = 0; k < rank - 1; k++) base += idx[k] * sstride[k];
        switch (es) {
#define ROW(T)                                                                                                         \
    {                                                                                                                  \
        const T *sp = (const T *)s + base;                                                                             \
        T *dp = (T *)d;                                                                                                \
        for (int64_t i = 0; i < len; i++) dp[i] = sp[i * st];                                                          \
        break;                                                                                                         \
    }
        case 1: ROW(uint8_t)
        case 2: ROW(uint16_t)
        case 4: ROW(uint32_t)
        default: ROW(uint64_t)
#undef ROW
        }
        d += len * es;
        int k = rank - 2;
        while (k >= 0 && ++idx[k] == dshape[k]) idx[k--] = 0;
        if (k < 0) return;
    }
}

NrIStatus nr_iexec_BROADCAST(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    const NrType *at = a->t, *rt = r->t;
    if (a->esize != r->esize) return nr_ifail(in, op, "malformed 'broadcast'");
    if (a->n == 1) { /* a scalar or an all-ones shape: a splat */
        strided_copy(r->p, a->p, rt->rank, rt->shape, (int64_t[NR_MAX_RANK]){0}, r->esize);
        return NR_IST_OK;
    }
    if (at->rank != rt->rank) return nr_ifail(in, op, "malformed 'broadcast': ranks differ");
    int64_t s[NR_MAX_RANK];
    row_major_strides(at, s);
    for (int k = 0; k < rt->rank; k++) {
        if (at->shape[k] == rt->shape[k]) continue;
        if (at->shape[k] != 1)
            return nr_ifail(in, op, "malformed 'broadcast': axis %d of size %d cannot stretch to %d", k, at->shape[k],
                            rt->shape[k]);
        s[k] = 0;
    }
    strided_copy(r->p, a->p, rt->rank, rt->shape, s, r->esize);
    return NR_IST_OK;
}

/* Same elements in the same row-major order. */
static NrIStatus copy_same(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    if (a->n != r->n || a->esize != r->esize)
        return nr_ifail(in, op, "malformed '%s': element counts differ", nr_op_info[op->opc].name);
    memcpy(r->p, a->p, (size_t)r->n * r->esize);
    return NR_IST_OK;
}

NrIStatus nr_iexec_EXPAND_DIMS(NrInterp *in, NrIFrame *fr, const NrOp *op) { return copy_same(in, fr, op); }
NrIStatus nr_iexec_RESHAPE(NrInterp *in, NrIFrame *fr, const NrOp *op) { return copy_same(in, fr, op); }

/* r's axis i is a's axis order[i] (default: reversed axes). */
NrIStatus nr_iexec_TRANS(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    const NrType *at = a->t, *rt = r->t;
    int rank = at->rank;
    if (rt->rank != rank || a->esize != r->esize) return nr_ifail(in, op, "malformed 'trans'");
    int64_t order[NR_MAX_RANK];
    const NrAttr *oa = nr_iattr(op, NR_A_ORDER);
    if (oa && oa->kind == NR_AK_INTS && oa->n == rank) {
        for (int k = 0; k < rank; k++) order[k] = oa->v.ints[k];
    } else {
        for (int k = 0; k < rank; k++) order[k] = rank - 1 - k;
    }
    bool seen[NR_MAX_RANK] = {false};
    for (int k = 0; k < rank; k++) {
        if (order[k] < 0 || order[k] >= rank || seen[order[k]] || rt->shape[k] != at->shape[order[k]])
            return nr_ifail(in, op, "malformed 'trans': order is not a permutation matching the shapes");
        seen[order[k]] = true;
    }
    int64_t as[NR_MAX_RANK], s[NR_MAX_RANK];
    row_major_strides(at, as);
    for (int k = 0; k < rank; k++) s[k] = as[order[k]];
    strided_copy(r->p, a->p, rank, rt->shape, s, r->esize);
    return NR_IST_OK;
}

/* --- reductions --------------------------------------------------------------------------------- */
typedef struct Split {
    int64_t outer, len, inner;
} Split;

static bool split_axis(const NrType *t, int64_t axis, Split *s) {
    if (axis < 0) axis += t->rank;
    if (axis < 0 || axis >= t->rank) return false;
    s->outer = s->inner = 1;
    for (int k = 0; k < axis; k++) s->outer *= t->shape[k];
    for (int k = (int)axis + 1; k < t->rank; k++) s->inner *= t->shape[k];
    s->len = t->shape[axis];
    return true;
}

typedef enum { RK_ADD, RK_MAX, RK_MIN, RK_XOR, RK_AND, RK_OR } RedKind;

/* In-place tree reduction of w viewed as [outer][len][inner]; the result
 * for (o, i) ends in w[o][0][i].  COMB(x, y) combines two elements. */
#define TREE(T, COMB)                                                                                                  \
    do {                                                                                                               \
        for (int64_t len = s.len; len > 1;) {                                                                          \
            int64_t h = (len + 1) / 2;                                                                                 \
            for (int64_t o = 0; o < s.outer; o++) {                                                                    \
                T *base = w + o * s.len * s.inner;                                                                     \
                for (int64_t j = 0; j < len - h; j++) {                                                                \
                    T *x = base + j * s.inner;                                                                         \
                    const T *y = base + (j + h) * s.inner;                                                             \
                    for (int64_t i = 0; i < s.inner; i++) x[i] = COMB(x[i], y[i]);                                     \
                }                                                                                                      \
            }                                                                                                          \
            len = h;                                                                                                   \
        }                                                                                                              \
    } while (0)

#define C_ADD(x, y) ((x) + (y))
#define C_MAX(x, y) ((x) > (y) ? (x) : (y))
#define C_MIN(x, y) ((x) < (y) ? (x) : (y))
#define C_UMAX(x, y) ((uint64_t)(x) > (uint64_t)(y) ? (x) : (y))
#define C_UMIN(x, y) ((uint64_t)(x) < (uint64_t)(y) ? (x) : (y))
#define C_WADD(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define C_XOR(x, y) ((x) ^ (y))
#define C_AND(x, y) ((x) & (y))
#define C_OR(x, y) ((x) | (y))

#define FLOAT_TREE(T)                                                                                                  \
    do {                                                                                                               \
        switch (rk) {                                                                                                  \
        case RK_ADD: TREE(T, C_ADD); break;                                                                            \
        case RK_MAX:                                                                                                   \
            if (nanall)                                                                                                \
                TREE(T, NR_FMAXALL);                                                                                   \
            else                                                                                                       \
                TREE(T, NR_FMAXNUM);                                                                                   \
            break;                                                                                                     \
        case RK_MIN:                                                                                                   \
            if (nanall)                                                                                                \
                TREE(T, NR_FMINALL);                                                                                   \
            else                                                                                                       \
                TREE(T, NR_FMINNUM);                                                                                   \
            break;                                                                                                     \
        default: NR_UNREACHABLE();                                                                                     \
        }                                                                                                              \
    } while (0)

NrIStatus nr_iexec_REDUCE(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0);
    Split s;
    if (!split_axis(a->t, nr_iattr_int(op, NR_A_AXIS, 0), &s) || r->n != s.outer * s.inner || r->kind != a->kind)
        return nr_ifail(in, op, "malformed 'reduce': bad axis or result shape");
    static const char *const names[] = {"add", "max", "min", "xor", "and", "or"};
    const char *ks = nr_iattr_str(op, NR_A_KIND, "");
    int rk = 0;
    while (rk < 6 && strcmp(names[rk], ks) != 0) rk++;
    if (rk == 6) return nr_ifail(in, op, "unknown reduce kind '%s'", ks);
    int k = a->kind;
    int64_t n = a->n, m = r->n;
    if (s.len == 0) return nr_ifail(in, op, "malformed 'reduce': empty axis");
    if (nr_ik_float(k)) {
        if (rk >= RK_XOR) return nr_ifail(in, op, "reduce '%s' is not defined on %s", ks, nr_dtype_info[k].ir);
        bool nanall = strcmp(nr_iattr_str(op, NR_A_NAN, "none"), "all") == 0;
        if (k == NR_DT_F64) {
            double *w = in->scratch[0];
            memcpy(w, a->p, (size_t)n * 8);
            FLOAT_TREE(double);
            double *d = r->p;
            for (int64_t o = 0; o < s.outer; o++)
                for (int64_t i = 0; i < s.inner; i++) d[o * s.inner + i] = w[o * s.len * s.inner + i];
        } else {
            float *w = in->scratch[0], *d = in->scratch[1];
            nr_idecode_f32(k, a->p, w, n);
            FLOAT_TREE(float);
            for (int64_t o = 0; o < s.outer; o++)
                for (int64_t i = 0; i < s.inner; i++) d[o * s.inner + i] = w[o * s.len * s.inner + i];
            nr_iencode_f32(k, d, r->p, m);
        }
        return NR_IST_OK;
    }
    if (!nr_ik_int(k)) return nr_ifail(in, op, "reduce is not defined on pointers");
    /* Integers: extended to int64 (sign or zero per type), combined, truncated. */
    int64_t *w = in->scratch[0];
    for (int64_t i = 0; i < n; i++) w[i] = nr_iget_i64(k, a->p, i);
    bool uns = nr_ik_unsigned(k);
    switch (rk) {
    case RK_ADD: TREE(int64_t, C_WADD); break;
    case RK_MAX:
        if (uns)
            TREE(int64_t, C_UMAX);
        else
            TREE(int64_t, C_MAX);
        break;
    case RK_MIN:
        if (uns)
            TREE(int64_t, C_UMIN);
        else
            TREE(int64_t, C_MIN);
        break;
    case RK_XOR: TREE(int64_t, C_XOR); break;
    case RK_AND: TREE(int64_t, C_AND); break;
    default: TREE(int64_t, C_OR); break;
    }
    for (int64_t o = 0; o < s.outer; o++)
        for (int64_t i = 0; i < s.inner; i++) {
            int64_t v = w[o * s.len * s.inner + i];
            if (k == NR_DT_I1) v &= 1; /* i1 sums wrap modulo 2 */
            nr_iput_i64(k, r->p, o * s.inner + i, v);
        }
    return NR_IST_OK;
}

/* r[o][i][n] = a[o][idx[o][i][n]][n] with a viewed as [outer][len][inner]
 * around the axis and r, idx as [outer][ilen][inner]; an index outside
 * [0, len) gives 0 (all element bits clear). */
NrIStatus nr_iexec_GATHER(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *x = nr_iopnd(fr, op, 1), *r = nr_ires(fr, op, 0);
    int64_t axis = nr_iattr_int(op, NR_A_AXIS, 0);
    Split s, si;
    if (!split_axis(a->t, axis, &s) || !split_axis(x->t, axis, &si) || s.outer != si.outer || s.inner != si.inner ||
        r->n != x->n || r->esize != a->esize || !nr_ik_int(x->kind))
        return nr_ifail(in, op, "malformed 'gather': bad axis or shapes");
    size_t es = a->esize;
    unsigned char *rp = r->p;
    const unsigned char *ap = a->p;
    for (int64_t o = 0; o < si.outer; o++)
        for (int64_t i = 0; i < si.len; i++)
            for (int64_t k = 0; k < si.inner; k++) {
                int64_t at = (o * si.len + i) * si.inner + k;
                int64_t j = nr_iget_i64(x->kind, x->p, at);
                if (j < 0 || j >= s.len) memset(rp + at * es, 0, es);
                else memcpy(rp + at * es, ap + ((o * s.len + j) * s.inner + k) * es, es);
            }
    return NR_IST_OK;
}

/* r[b] = the number of elements of a equal to b where the mask holds. */
NrIStatus nr_iexec_HISTOGRAM(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *mk = nr_iopt(fr, op, 1), *r = nr_ires(fr, op, 0);
    if (!nr_ik_int(a->kind) || r->kind != NR_DT_I32 || (mk && (mk->n != a->n || mk->kind != NR_DT_I1)))
        return nr_ifail(in, op, "malformed 'histogram'");
    int32_t *bins = r->p;
    const uint8_t *m = mk ? mk->p : NULL;
    memset(bins, 0, sizeof(int32_t) * (size_t)r->n);
    for (int64_t i = 0; i < a->n; i++) {
        if (m && !m[i]) continue;
        int64_t v = nr_iget_i64(a->kind, a->p, i);
        if (v >= 0 && v < r->n) bins[v]++;
    }
    return NR_IST_OK;
}

/* The max (or min) along the axis and the smallest index holding it.  NaN
 * follows the `nan` attribute as reduce does, so that argreduce's value is
 * reduce's value: "none" (the default) skips NaNs (an all-NaN axis gives
 * index 0), "all" makes the first NaN win. */
NrIStatus nr_iexec_ARGREDUCE(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    if (op->nresults != 2) return nr_ifail(in, op, "malformed 'argreduce'");
    NrIVal *a = nr_iopnd(fr, op, 0), *rv = nr_ires(fr, op, 0), *ri = nr_ires(fr, op, 1);
    Split s;
    if (!split_axis(a->t, nr_iattr_int(op, NR_A_AXIS, 0), &s) || rv->n != s.outer * s.inner || ri->n != rv->n ||
        rv->esize != a->esize || !nr_ik_int(ri->kind) || s.len == 0)
        return nr_ifail(in, op, "malformed 'argreduce': bad axis or result shape");
    const char *ks = nr_iattr_str(op, NR_A_KIND, "max");
    bool is_max = strcmp(ks, "max") == 0;
    if (!is_max && strcmp(ks, "min") != 0) return nr_ifail(in, op, "argreduce kind must be max or min, got '%s'", ks);
    int k = a->kind;
    bool flt = nr_ik_float(k), uns = !flt && nr_ik_unsigned(k);
    bool nanall = strcmp(nr_iattr_str(op, NR_A_NAN, "none"), "all") == 0;
    int es = a->esize;
    for (int64_t o = 0; o < s.outer; o++)
        for (int64_t i = 0; i < s.inner; i++) {
            int64_t e0 = o * s.len * s.inner + i, best = 0;
            if (flt) {
                double bv = nr_iget_f64(k, a->p, e0);
                for (int64_t j = 1; j < s.len && !(nanall && bv != bv); j++) {
                    double x = nr_iget_f64(k, a->p, e0 + j * s.inner);
                    bool better = x != x ? nanall : bv != bv || (is_max ? x > bv : x < bv);
                    if (better) {
                        bv = x;
                        best = j;
                    }
                }
            } else {
                int64_t bv = nr_iget_i64(k, a->p, e0);
                for (int64_t j = 1; j < s.len; j++) {
                    int64_t x = nr_iget_i64(k, a->p, e0 + j * s.inner);
                    bool better = uns ? (is_max ? (uint64_t)x > (uint64_t)bv : (uint64_t)x < (uint64_t)bv)
                                      : (is_max ? x > bv : x < bv);
                    if (better) {
                        bv = x;
                        best = j;
                    }
                }
            }
            int64_t out = o * s.inner + i;
            memcpy((unsigned char *)rv->p + out * es, (const unsigned char *)a->p + (e0 + best * s.inner) * es,
                   (size_t)es);
            nr_iput_i64(ri->kind, ri->p, out, best);
        }
    return NR_IST_OK;
}

/* --- dot ------------------------------------------------------------------------------------------ */
enum { DOT_CHUNK = 16 };

/* r_i[n] += a_i * b[n] for four rows i: the dot's inner kernel.  The
 * fixed-size inner loop vectorizes; each product and each sum is its own
 * statement, so no compiler contracts them into a fused multiply-add. */
static void axpy4(float *restrict r0, float *restrict r1, float *restrict r2, float *restrict r3,
                  const float *restrict b, float a0, float a1, float a2, float a3, int64_t N) {
    int64_t nv = N - N % DOT_CHUNK;
    for (int64_t n0 = 0; n0 < nv; n0 += DOT_CHUNK)
        for (int j = 0; j < DOT_CHUNK; j++) {
            float bv = b[n0 + j];
            float p0 = a0 * bv, p1 = a1 * bv, p2 = a2 * bv, p3 = a3 * bv;
            r0[n0 + j] += p0;
            r1[n0 + j] += p1;
            r2[n0 + j] += p2;
            r3[n0 + j] += p3;
        }
    for (int64_t n = nv; n < N; n++) {
        float bv = b[n];
        float p0 = a0 * bv, p1 = a1 * bv, p2 = a2 * bv, p3 = a3 * bv;
        r0[n] += p0;
        r1[n] += p1;
        r2[n] += p2;
        r3[n] += p3;
    }
}

static void axpy1(float *restrict r, const float *restrict b, float a, int64_t N) {
    int64_t nv = N - N % DOT_CHUNK;
    for (int64_t n0 = 0; n0 < nv; n0 += DOT_CHUNK)
        for (int j = 0; j < DOT_CHUNK; j++) {
            float p = a * b[n0 + j];
            r[n0 + j] += p;
        }
    for (int64_t n = nv; n < N; n++) {
        float p = a * b[n];
        r[n] += p;
    }
}

/* R[m][n] = acc[m][n] + sum_k A[m][k] * B[k][n] (acc may be NULL), the sum
 * accumulated in R from 0 in increasing k, four rows at a time. */
static void dot_f32(const float *A, const float *B, const float *acc, float *R, int64_t M, int64_t N, int64_t K) {
    for (int64_t i = 0; i < M * N; i++) R[i] = 0.0f;
    int64_t m = 0;
    for (; m + 4 <= M; m += 4) {
        float *r = R + m * N;
        for (int64_t k = 0; k < K; k++)
            axpy4(r, r + N, r + 2 * N, r + 3 * N, B + k * N, A[m * K + k], A[(m + 1) * K + k], A[(m + 2) * K + k],
                  A[(m + 3) * K + k], N);
    }
    for (; m < M; m++)
        for (int64_t k = 0; k < K; k++) axpy1(R + m * N, B + k * N, A[m * K + k], N);
    if (acc)
        for (int64_t i = 0; i < M * N; i++) R[i] = acc[i] + R[i];
}

static void dot_f64(const double *A, const double *B, double *R, double *s, int64_t M, int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) s[n] = 0.0;
        for (int64_t k = 0; k < K; k++) {
            double a = A[m * K + k];
            for (int64_t n = 0; n < N; n++) {
                double p = a * B[k * N + n];
                s[n] += p;
            }
        }
        for (int64_t n = 0; n < N; n++) R[m * N + n] = s[n];
    }
}

/* Integer dot: sums wrap in 32 bits (int8 operands) or 64 bits (others). */
static void dot_int(int ka, const void *a, int kb, const void *b, int64_t *R, int64_t M, int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            uint64_t sum = 0;
            for (int64_t k = 0; k < K; k++)
                sum += (uint64_t)nr_iget_i64(ka, a, m * K + k) * (uint64_t)nr_iget_i64(kb, b, k * N + n);
            R[m * N + n] = (int64_t)sum;
        }
}

static void dot_i8(const int8_t *A, const int8_t *B, uint32_t *R, uint32_t *s, int64_t M, int64_t N, int64_t K) {
    for (int64_t m = 0; m < M; m++) {
        for (int64_t n = 0; n < N; n++) s[n] = 0;
        for (int64_t k = 0; k < K; k++) {
            uint32_t a = (uint32_t)(int32_t)A[m * K + k];
            for (int64_t n = 0; n < N; n++) s[n] += a * (uint32_t)(int32_t)B[k * N + n];
        }
        for (int64_t n = 0; n < N; n++) R[m * N + n] = s[n];
    }
}

/* Operand x (a block of one batch) as f32, rounded to tf32 when asked. */
static const float *dot_operand_f32(int kind, const void *x, int64_t count, bool tf32, float *tmp) {
    if (kind == NR_DT_F32 && !tf32) return x;
    nr_idecode_f32(kind, x, tmp, count);
    if (kind == NR_DT_F32) {
        /* nr_f32_round_tf32, inlined: ties away from zero on the 13 dropped
         * bits; inf and NaN (exponent all ones) are left alone. */
        uint32_t *u = (uint32_t *)tmp;
        for (int64_t i = 0; i < count; i++)
            if ((u[i] & 0x7f800000) != 0x7f800000)
                u[i] = (u[i] + 0x1000) & ~0x1fffu;
            else if (u[i] & 0x7fffff)
                u[i] = (u[i] | 0x400000) & ~0x1fffu;
    }
    return tmp;
}

NrIStatus nr_iexec_DOT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *a = nr_iopnd(fr, op, 0), *b = nr_iopnd(fr, op, 1), *c = nr_iopt(fr, op, 2), *r = nr_ires(fr, op, 0);
    const NrType *at = a->t, *bt = b->t, *rt = r->t;
    int rank = rt->rank;
    bool ok = (rank == 2 || rank == 3) && at->rank == rank && bt->rank == rank;
    int64_t B = 1, M = 0, N = 0, K = 0;
    if (ok) {
        B = rank == 3 ? rt->shape[0] : 1;
        M = rt->shape[rank - 2];
        N = rt->shape[rank - 1];
        K = at->shape[rank - 1];
        ok = at->shape[rank - 2] == M && bt->shape[rank - 2] == K && bt->shape[rank - 1] == N &&
             (rank == 2 || (at->shape[0] == B && bt->shape[0] == B)) && (!c || (c->n == r->n && c->kind == r->kind));
    }
    if (!ok) return nr_ifail(in, op, "malformed 'dot': operand shapes do not match [B]xMxK @ [B]xKxN -> [B]xMxN");
    int ka = a->kind, kb = b->kind, kr = r->kind;
    if (nr_ik_int(ka) != nr_ik_int(kb) || nr_ik_int(ka) != nr_ik_int(kr) || ka == NR_IK_PTR || kb == NR_IK_PTR)
        return nr_ifail(in, op, "'dot' operands and result must all be integers or all floats");
    const char *prec = nr_iattr_str(op, NR_A_PRECISION, "tf32");
    bool tf32 = strcmp(prec, "tf32") == 0;
    int64_t sa = M * K, sb = K * N, sr = M * N;
    for (int64_t bi = 0; bi < B; bi++) {
        const unsigned char *pa = (const unsigned char *)a->p + bi * sa * a->esize;
        const unsigned char *pb = (const unsigned char *)b->p + bi * sb * b->esize;
        const unsigned char *pc = c ? (const unsigned char *)c->p + bi * sr * c->esize : NULL;
        unsigned char *pr = (unsigned char *)r->p + bi * sr * r->esize;
        if (nr_ik_int(ka)) {
            int64_t *acc64 = in->scratch[1];
            if (ka == NR_DT_I8 && kb == NR_DT_I8) {
                uint32_t *t = in->scratch[0];
                dot_i8((const int8_t *)pa, (const int8_t *)pb, t, in->scratch[2], M, N, K);
                for (int64_t i = 0; i < sr; i++) acc64[i] = (int64_t)(int32_t)t[i];
            } else {
                dot_int(ka, pa, kb, pb, acc64, M, N, K);
            }
            for (int64_t i = 0; i < sr; i++) {
                uint64_t v = (uint64_t)acc64[i] + (pc ? (uint64_t)nr_iget_i64(kr, pc, i) : 0);
                nr_iput_i64(kr, pr, i, (int64_t)v);
            }
        } else if (ka == NR_DT_F64 || kb == NR_DT_F64) {
            double *A = in->scratch[0], *Bm = in->scratch[1], *S = in->scratch[2], *Rm = in->scratch[3];
            for (int64_t i = 0; i < sa; i++) A[i] = nr_iget_f64(ka, pa, i);
            for (int64_t i = 0; i < sb; i++) Bm[i] = nr_iget_f64(kb, pb, i);
            dot_f64(A, Bm, Rm, S, M, N, K);
            for (int64_t i = 0; i < sr; i++) nr_iput_f64(kr, pr, i, Rm[i] + (pc ? nr_iget_f64(kr, pc, i) : 0.0));
        } else {
            const float *A = dot_operand_f32(ka, pa, sa, tf32, in->scratch[0]);
            const float *Bm = dot_operand_f32(kb, pb, sb, tf32, in->scratch[1]);
            if (kr == NR_DT_F32) {
                dot_f32(A, Bm, (const float *)pc, (float *)pr, M, N, K);
            } else {
                /* Narrow (or f64) result: acc + s is computed in double and
                 * rounded once to r's dtype. */
                float *Rm = in->scratch[3];
                dot_f32(A, Bm, NULL, Rm, M, N, K);
                for (int64_t i = 0; i < sr; i++)
                    nr_iput_f64(kr, pr, i, (double)Rm[i] + (pc ? nr_iget_f64(kr, pc, i) : 0.0));
            }
        }
    }
    return NR_IST_OK;
}
