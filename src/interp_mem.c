/* interp_mem.c - the interpreter's memory ops (load, store, atomics) with
 * their access checks, and device_print / device_assert.
 *
 * Every active lane (mask true, or no mask) is checked before memory is
 * touched: its address must fall inside one argument buffer, the whole
 * element must lie inside that buffer, and the address must be a multiple of
 * the element size.  Masked-off lanes are never read or written, whatever
 * their address.  A store or atomic checks every lane before writing any,
 * so a faulting op changes nothing.  Lanes of one op act in lane order
 * (row-major): when two lanes store to one address, the later lane wins. */
#include "interp_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

/* --- address checks ----------------------------------------------------------------------------- */
/* What an op does to memory, for messages. */
static const char *op_verb(const NrOp *op) {
    switch (op->opc) {
    case NR_OP_LOAD: return "reads";
    case NR_OP_STORE: return "writes";
    default: return "accesses";
    }
}

/* Slow path: explains why lane `lane` of op (block type t) cannot access
 * `size` bytes at `addr`, and fails. */
static NrIStatus access_fail(NrInterp *in, const NrOp *op, const NrType *t, int64_t lane, uint64_t addr, int size) {
    const char *what = nr_op_info[op->opc].name, *verb = op_verb(op);
    const char *where = nr_iwhere(in, t, lane);
    /* The nearest buffer: the one whose region holds addr, or the next one
     * up when addr lies less than 1 MiB below its base (a buffer's base
     * keeps the host address's low bits, so a small negative offset may
     * fall into the region below). */
    const NrIBuf *b = NULL;
    int64_t off = 0;
    for (uint64_t r = addr >> NR_INTERP_SHIFT; r <= (addr >> NR_INTERP_SHIFT) + 1; r++) {
        if (r == 0 || r - 1 >= (uint64_t)in->nbufs || !in->bufs[r - 1].is_buf) continue;
        int64_t o = (int64_t)(addr - in->bufs[r - 1].vbase);
        if (o < -(INT64_C(1) << 20)) continue;
        if (!b || llabs(o) < llabs(off)) {
            b = &in->bufs[r - 1];
            off = o;
        }
    }
    if (b) {
        if (off >= 0 && (uint64_t)off < b->bytes && b->bytes - (uint64_t)off >= (uint64_t)size)
            return nr_ifail(in, op,
                            "misaligned %s: %s %s a %d-byte element at byte %" PRId64
                            " of argument '%s', which is not a multiple of %d",
                            what, where, verb, size, off, b->name, size);
        return nr_ifail(in, op,
                        "out-of-bounds %s: %s %s bytes %" PRId64 "..%" PRId64 " of argument '%s' (%" PRIu64 " bytes)",
                        what, where, verb, off, off + size - 1, b->name, b->bytes);
    }
    return nr_ifail(
        in, op, "out-of-bounds %s: %s %s %d bytes at address 0x%" PRIx64 ", which is not inside any argument buffer",
        what, where, verb, size, addr);
}

/* Host address of a valid access, or NULL. */
static inline unsigned char *host_addr(const NrInterp *in, uint64_t addr, int size) {
    uint64_t idx = (addr >> NR_INTERP_SHIFT) - 1;
    if (idx >= (uint64_t)in->nbufs) return NULL;
    const NrIBuf *b = &in->bufs[idx];
    uint64_t off = addr - b->vbase;
    if (!b->is_buf || off >= b->bytes || b->bytes - off < (uint64_t)size || (addr & (uint64_t)(size - 1))) return NULL;
    return b->host + off;
}

/* Checks every active lane of the pointer block p; mask may be NULL. */
static NrIStatus check_lanes(NrInterp *in, const NrOp *op, const NrIVal *p, const NrIVal *mask, int size) {
    const uint64_t *a = p->p;
    const uint8_t *m = mask ? mask->p : NULL;
    for (int64_t i = 0; i < p->n; i++) {
        if (m && !m[i]) continue;
        if (!host_addr(in, a[i], size)) return access_fail(in, op, p->t, i, a[i], size);
    }
    return NR_IST_OK;
}

/* The mask operand must be i1 of the pointer block's shape (a scalar mask
 * applies to every lane: it is expanded into scratch). */
static NrIStatus get_mask(NrInterp *in, const NrOp *op, NrIVal *mv, int64_t n, NrIVal *tmp, NrIVal **out) {
    *out = NULL;
    if (!mv) return NR_IST_OK;
    if (mv->kind != NR_DT_I1 || (mv->n != n && mv->n != 1))
        return nr_ifail(in, op, "malformed '%s': the mask is not i1 of the pointer's shape", nr_op_info[op->opc].name);
    if (mv->n == n) {
        *out = mv;
        return NR_IST_OK;
    }
    *tmp = *mv;
    tmp->p = in->scratch[NR_ISCRATCH - 1];
    tmp->n = n;
    memset(tmp->p, *(const uint8_t *)mv->p, (size_t)n);
    *out = tmp;
    return NR_IST_OK;
}

/* --- load and store ------------------------------------------------------------------------------ */
/* Host address of lanes [i, j), whose addresses are consecutive elements,
 * or NULL if any of them is bad: the ends decide for the whole run. */
static inline const unsigned char *run_host(const NrInterp *in, const uint64_t *a, int64_t i, int64_t j, int size) {
    const unsigned char *h0 = host_addr(in, a[i], size);
    if (!h0 || j - i == 1) return h0;
    const unsigned char *h1 = host_addr(in, a[j - 1], size);
    if (!h1 || (uintptr_t)h1 - (uintptr_t)h0 != (uintptr_t)(j - 1 - i) * (uintptr_t)size) return NULL;
    return h0;
}

/* Active lanes are read in runs of consecutive addresses, one copy per run;
 * a bad run is rescanned lane by lane to report its first bad lane. */
#define LOADLOOP(T)                                                                                                    \
    do {                                                                                                               \
        T *d = r->p;                                                                                                   \
        const T *o = other ? other->p : NULL;                                                                          \
        int64_t ostep = other && other->n != 1 ? 1 : 0;                                                                \
        for (int64_t i = 0; i < n;) {                                                                                  \
            if (m && !m[i]) {                                                                                          \
                d[i] = o ? o[i * ostep] : 0;                                                                           \
                i++;                                                                                                   \
                continue;                                                                                              \
            }                                                                                                          \
            int64_t j = i + 1;                                                                                         \
            while (j < n && (!m || m[j]) && a[j] - a[j - 1] == sizeof(T)) j++;                                         \
            const unsigned char *h = run_host(in, a, i, j, (int)sizeof(T));                                            \
            if (h) {                                                                                                   \
                memcpy(&d[i], h, (size_t)(j - i) * sizeof(T));                                                         \
            } else {                                                                                                   \
                for (int64_t q = i; q < j; q++) {                                                                      \
                    const unsigned char *hq = host_addr(in, a[q], (int)sizeof(T));                                     \
                    if (!hq) return access_fail(in, op, p->t, q, a[q], (int)sizeof(T));                                \
                    memcpy(&d[q], hq, sizeof(T));                                                                      \
                }                                                                                                      \
            }                                                                                                          \
            i = j;                                                                                                     \
        }                                                                                                              \
    } while (0)

/* r = mask ? *p : other (0 when other is absent). */
NrIStatus nr_iexec_LOAD(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *p = nr_iopnd(fr, op, 0), *r = nr_ires(fr, op, 0), *other = nr_iopt(fr, op, 2), *mask, tmp;
    int64_t n = r->n;
    if (p->kind != NR_IK_PTR || p->n != n || (other && ((other->n != n && other->n != 1) || other->esize != r->esize)))
        return nr_ifail(in, op, "malformed 'load': operand shapes differ");
    if (get_mask(in, op, nr_iopt(fr, op, 1), n, &tmp, &mask) != NR_IST_OK) return NR_IST_FAIL;
    const uint64_t *a = p->p;
    const uint8_t *m = mask ? mask->p : NULL;
    switch (r->esize) {
    case 1: LOADLOOP(uint8_t); break;
    case 2: LOADLOOP(uint16_t); break;
    case 4: LOADLOOP(uint32_t); break;
    default: LOADLOOP(uint64_t); break;
    }
    if (r->kind == NR_DT_I1) { /* memory holds a byte per bool; any non-zero byte is true */
        uint8_t *d = r->p;
        for (int64_t i = 0; i < n; i++) d[i] = d[i] != 0;
    }
    return NR_IST_OK;
}

#define STORELOOP(T)                                                                                                   \
    do {                                                                                                               \
        const T *s = v->p;                                                                                             \
        for (int64_t i = 0; i < n; i++)                                                                                \
            if (!m || m[i]) memcpy(host_addr(in, a[i], sizeof(T)), &s[vn == 1 ? 0 : i], sizeof(T));                    \
    } while (0)

/* if mask: *p = v. */
NrIStatus nr_iexec_STORE(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *p = nr_iopnd(fr, op, 0), *v = nr_iopnd(fr, op, 1), *mask, tmp;
    int64_t n = p->n, vn = v->n;
    if (p->kind != NR_IK_PTR || (vn != n && vn != 1))
        return nr_ifail(in, op, "malformed 'store': operand shapes differ");
    if (get_mask(in, op, nr_iopt(fr, op, 2), n, &tmp, &mask) != NR_IST_OK) return NR_IST_FAIL;
    if (check_lanes(in, op, p, mask, v->esize) != NR_IST_OK) return NR_IST_FAIL;
    const uint64_t *a = p->p;
    const uint8_t *m = mask ? mask->p : NULL;
    switch (v->esize) {
    case 1: STORELOOP(uint8_t); break;
    case 2: STORELOOP(uint16_t); break;
    case 4: STORELOOP(uint32_t); break;
    default: STORELOOP(uint64_t); break;
    }
    return NR_IST_OK;
}

/* --- atomics -------------------------------------------------------------------------------------- */
typedef enum { RMW_ADD, RMW_MAX, RMW_MIN, RMW_AND, RMW_OR, RMW_XOR, RMW_XCHG } RmwKind;

/* One atomic step: *out = kind(*old, *v), all elements of `kind`. */
static void rmw_step(int kind, RmwKind k, const void *old, const void *v, void *out, int es) {
    if (k == RMW_XCHG || k == RMW_AND || k == RMW_OR || k == RMW_XOR) {
        const unsigned char *x = old, *y = v;
        unsigned char *z = out;
        for (int b = 0; b < es; b++)
            z[b] = k == RMW_XCHG ? y[b] : k == RMW_AND ? x[b] & y[b] : k == RMW_OR ? x[b] | y[b] : x[b] ^ y[b];
        return;
    }
    if (nr_ik_float(kind)) {
        double x = nr_iget_f64(kind, old, 0), y = nr_iget_f64(kind, v, 0), z;
        /* Each step rounds to the dtype; a sum of two values is exact enough
         * in double for that to be a correct single rounding. */
        if (k == RMW_ADD)
            z = x + y;
        else if (k == RMW_MAX)
            z = NR_FMAXNUM(x, y);
        else
            z = NR_FMINNUM(x, y);
        nr_iput_f64(kind, out, 0, z);
        return;
    }
    int64_t x = nr_iget_i64(kind, old, 0), y = nr_iget_i64(kind, v, 0), z;
    bool uns = nr_ik_unsigned(kind);
    if (k == RMW_ADD)
        z = (int64_t)((uint64_t)x + (uint64_t)y);
    else if (k == RMW_MAX)
        z = uns ? ((uint64_t)x > (uint64_t)y ? x : y) : (x > y ? x : y);
    else
        z = uns ? ((uint64_t)x < (uint64_t)y ? x : y) : (x < y ? x : y);
    nr_iput_i64(kind, out, 0, z);
}

/* r = *p; *p = kind(*p, v) for each active lane in order; inactive lanes of r are 0. */
NrIStatus nr_iexec_ATOMIC_RMW(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *p = nr_iopnd(fr, op, 0), *v = nr_iopnd(fr, op, 1), *r = nr_ires(fr, op, 0), *mask, tmp;
    int64_t n = p->n;
    if (p->kind != NR_IK_PTR || (v->n != n && v->n != 1) || r->n != n || r->esize != v->esize)
        return nr_ifail(in, op, "malformed 'atomic_rmw': operand shapes differ");
    static const char *const names[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
    const char *ks = nr_iattr_str(op, NR_A_KIND, "");
    int k = 0;
    while (k < 7 && strcmp(names[k], ks) != 0) k++;
    if (k == 7) return nr_ifail(in, op, "unknown atomic_rmw kind '%s'", ks);
    if (nr_ik_float(v->kind) && k >= RMW_AND && k <= RMW_XOR)
        return nr_ifail(in, op, "atomic_rmw '%s' is not defined on %s", ks, nr_dtype_info[v->kind].ir);
    if (get_mask(in, op, nr_iopt(fr, op, 2), n, &tmp, &mask) != NR_IST_OK) return NR_IST_FAIL;
    int es = v->esize;
    if (check_lanes(in, op, p, mask, es) != NR_IST_OK) return NR_IST_FAIL;
    const uint64_t *a = p->p;
    const uint8_t *m = mask ? mask->p : NULL;
    memset(r->p, 0, (size_t)n * es);
    for (int64_t i = 0; i < n; i++) {
        if (m && !m[i]) continue;
        unsigned char *h = host_addr(in, a[i], es), *old = (unsigned char *)r->p + i * es;
        memcpy(old, h, (size_t)es);
        if (v->kind == NR_DT_I1) old[0] = old[0] != 0;
        rmw_step(v->kind, (RmwKind)k, old, (unsigned char *)v->p + (v->n == 1 ? 0 : i) * es, h, es);
    }
    return NR_IST_OK;
}

/* r = *p; if r == cmp (bitwise): *p = v; lane by lane. */
NrIStatus nr_iexec_ATOMIC_CAS(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    NrIVal *p = nr_iopnd(fr, op, 0), *c = nr_iopnd(fr, op, 1), *v = nr_iopnd(fr, op, 2), *r = nr_ires(fr, op, 0);
    int64_t n = p->n;
    int es = r->esize;
    if (p->kind != NR_IK_PTR || c->n != n || v->n != n || r->n != n || c->esize != es || v->esize != es)
        return nr_ifail(in, op, "malformed 'atomic_cas': operand shapes differ");
    if (check_lanes(in, op, p, NULL, es) != NR_IST_OK) return NR_IST_FAIL;
    const uint64_t *a = p->p;
    for (int64_t i = 0; i < n; i++) {
        unsigned char *h = host_addr(in, a[i], es);
        memcpy((unsigned char *)r->p + i * es, h, (size_t)es);
        if (memcmp(h, (unsigned char *)c->p + i * es, (size_t)es) == 0)
            memcpy(h, (unsigned char *)v->p + i * es, (size_t)es);
    }
    return NR_IST_OK;
}

/* --- print ----------------------------------------------------------------------------------------- */
/* The shortest decimal that reads back to the same value of its dtype. */
static void format_float(char *buf, size_t sz, int kind, double x) {
    if (x != x) {
        snprintf(buf, sz, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(buf, sz, x < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sz, "%.*g", prec, x);
        double back = strtod(buf, NULL);
        uint64_t want = 0, got = 0;
        nr_iput_f64(kind, &want, 0, x);
        nr_iput_f64(kind, &got, 0, back);
        if (want == got) return;
    }
}

static void format_value(char *buf, size_t sz, const NrIVal *v, int64_t i, bool hex) {
    int k = v->kind;
    if (hex) {
        uint64_t bits = 0;
        memcpy(&bits, (const unsigned char *)v->p + i * v->esize, v->esize);
        snprintf(buf, sz, "0x%0*" PRIx64, 2 * v->esize, bits);
    } else if (k == NR_IK_PTR) {
        snprintf(buf, sz, "0x%" PRIx64, ((const uint64_t *)v->p)[i]);
    } else if (nr_ik_float(k)) {
        format_float(buf, sz, k, nr_iget_f64(k, v->p, i));
    } else if (nr_dtype_info[k].cls == NR_DTC_SINT) {
        snprintf(buf, sz, "%" PRId64, nr_iget_i64(k, v->p, i));
    } else {
        snprintf(buf, sz, "%" PRIu64, (uint64_t)nr_iget_i64(k, v->p, i));
    }
}

/* One line per element of each operand:
 *     pid (x, y, z) idx (i, j) <prefix><value>
 * with "(operand k) " after the prefix when there are several operands. */
NrIStatus nr_iexec_PRINT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    const char *prefix = nr_iattr_str(op, NR_A_PREFIX, "");
    bool hex = nr_iattr_int(op, NR_A_HEX, 0) != 0;
    FILE *out = in->out;
    if (op->nopnds == 0) {
        fprintf(out, "pid (%u, %u, %u) idx () %s\n", in->pid[0], in->pid[1], in->pid[2], prefix);
        return NR_IST_OK;
    }
    for (int j = 0; j < op->nopnds; j++) {
        const NrIVal *v = nr_iopnd(fr, op, j);
        const NrType *t = v->t;
        for (int64_t i = 0; i < v->n; i++) {
            char idx[NR_MAX_RANK * 24 + 4], val[64];
            size_t len = 0;
            int64_t rest = i, ix[NR_MAX_RANK];
            for (int k = t->rank - 1; k >= 0; k--) {
                ix[k] = rest % t->shape[k];
                rest /= t->shape[k];
            }
            idx[0] = 0;
            for (int k = 0; k < t->rank; k++)
                len += (size_t)snprintf(idx + len, sizeof idx - len, "%s%" PRId64, k ? ", " : "", ix[k]);
            format_value(val, sizeof val, v, i, hex);
            if (op->nopnds > 1)
                fprintf(out, "pid (%u, %u, %u) idx (%s) %s(operand %d) %s\n", in->pid[0], in->pid[1], in->pid[2], idx,
                        prefix, j, val);
            else
                fprintf(out, "pid (%u, %u, %u) idx (%s) %s%s\n", in->pid[0], in->pid[1], in->pid[2], idx, prefix, val);
        }
    }
    return NR_IST_OK;
}

/* --- assert ---------------------------------------------------------------------------------------- */
NrIStatus nr_iexec_ASSERT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    const NrIVal *c = nr_iopnd(fr, op, 0);
    for (int64_t i = 0; i < c->n; i++) {
        bool ok = nr_ik_float(c->kind) ? nr_iget_f64(c->kind, c->p, i) != 0 : nr_iget_i64(c->kind, c->p, i) != 0;
        if (!ok)
            return nr_ifail(in, op, "device assertion failed: %s, in %s", nr_iattr_str(op, NR_A_MSG, ""),
                            nr_iwhere(in, c->t, i));
    }
    return NR_IST_OK;
}
