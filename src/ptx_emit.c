/* ptx_emit.c - the PTX emitter's core: GPU IR (block IR with a layout on
 * every block type) to PTX text for sm_80 and sm_90.
 *
 *   nr_emit_ptx
 *     check the target -> plan shared memory (ops' smem_offset attributes,
 *     or a scratch area of our own) -> load parameters -> emit the body
 *     block by block (the dispatch table below, one emitter per op) ->
 *     assemble: header, globals, entry with bulk register declarations,
 *     prologue (computed values that must dominate everything: thread
 *     index, per-layout thread offsets, owner predicates), body
 *
 * A kernel is `.visible .entry name(.param ...)` with `.reqntid` =
 * 32 * num_warps; dynamic shared memory is one `.extern .shared` buffer
 * whose size the caller passes at launch (NrPtxInfo.shared_bytes).
 *
 * Control flow is structured: `for`, `if` and `while` become labels and
 * branches on uniform scalar conditions (bra.uni); loop-carried values live
 * in registers assigned at the back edge (a parallel copy).  Layouts are
 * used in their flat form (ptx.h): every element's row-major index is a
 * compile-time register part XOR a per-layout thread part. */
#include "fp.h"
#include "ptx.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* --- output -------------------------------------------------------------------------------------- */
enum { CHUNK_BYTES = 64 * 1024 };

/* Room for n more bytes and the NUL. */
static void buf_reserve(NrArena *a, NrPtxBuf *b, size_t n) {
    if (b->n + n + 2 <= b->cap) return;
    if (b->chunked && b->s) { /* the full chunk goes to the list; a new one starts */
        NrPtxChunk *c = nr_alloc(a, sizeof *c);
        c->s = b->s;
        c->n = b->n;
        if (b->last) b->last->next = c;
        else b->first = c;
        b->last = c;
        b->before += b->n;
        size_t cap = b->cap < CHUNK_BYTES ? 2 * b->cap : CHUNK_BYTES; /* chunks double up to CHUNK_BYTES */
        if (cap < n + 2) cap = n + 2;
        b->s = nr_alloc_uninit(a, cap);
        b->s[0] = 0;
        b->n = 0;
        b->cap = cap;
        return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (b->n + n + 2 > cap) cap *= 2;
    b->s = b->s ? nr_arena_grow(a, b->s, b->cap, cap) : nr_alloc_uninit(a, cap);
    if (!b->n) b->s[0] = 0;
    b->cap = cap;
}

static void buf_put(NrArena *a, NrPtxBuf *b, const char *s, size_t n) {
    buf_reserve(a, b, n);
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

void nr_ptx_buf_put(NrPtx *p, NrPtxBuf *b, const char *s, size_t n) { buf_put(p->a, b, s, n); }

static size_t buf_len(const NrPtxBuf *b) { return b->before + b->n; }

/* Appends the whole text of src to dst. */
static void buf_append(NrArena *a, NrPtxBuf *dst, const NrPtxBuf *src) {
    buf_reserve(a, dst, buf_len(src));
    for (const NrPtxChunk *c = src->first; c; c = c->next) buf_put(a, dst, c->s, c->n);
    if (src->n) buf_put(a, dst, src->s, src->n);
}

/* Appends the digits of v in base 10 or 16 (upper case), zero-padded to width. */
static size_t put_uint(char *o, size_t cap, size_t n, unsigned long long v, int base, int width) {
    char d[24];
    int k = 0;
    do {
        d[k++] = "0123456789ABCDEF"[v % (unsigned)base];
        v /= (unsigned)base;
    } while (v);
    for (; width > k && n < cap; width--) o[n++] = '0';
    while (k && n < cap) o[n++] = d[--k];
    return n;
}

/* The emitter's formats (%s %c %d %u %X %lld %llu %%, a zero-padded width on
 * %X) without the C library's machinery, into o[0..cap); -1 for anything
 * else, -2 for a line longer than cap - 1. */
static int format_fast(char *o, size_t cap, const char *fmt, va_list ap) {
    size_t n = 0;
    for (const char *f = fmt; *f; f++) {
        if (n + 1 >= cap) return -2;
        if (*f != '%') {
            o[n++] = *f;
            continue;
        }
        f++;
        int width = 0, ll = 0;
        if (*f == '0')
            for (f++; *f >= '0' && *f <= '9'; f++) width = width * 10 + (*f - '0');
        if (*f == 'l' && f[1] == 'l') ll = 1, f += 2;
        switch (*f) {
        case '%': o[n++] = '%'; break;
        case 'c': o[n++] = (char)va_arg(ap, int); break;
        case 's': {
            const char *str = va_arg(ap, const char *);
            size_t k = strlen(str);
            if (n + k + 1 >= cap) return -2;
            memcpy(o + n, str, k);
            n += k;
            break;
        }
        case 'd': {
            long long v = ll ? va_arg(ap, long long) : va_arg(ap, int);
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            if (v < 0) o[n++] = '-';
            n = put_uint(o, cap, n, u, 10, width);
            break;
        }
        case 'u': n = put_uint(o, cap, n, ll ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 10, width); break;
        case 'X': n = put_uint(o, cap, n, ll ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned), 16, width); break;
        default: return -1;
        }
    }
    if (n >= cap) return -2;
    o[n] = 0;
    return (int)n;
}

/* Formats into the buffer in place: one pass for the common short line,
 * the C library for anything else. */
static void buf_vadd(NrArena *a, NrPtxBuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    int n = -2;
    for (size_t room = 510; n == -2 && room <= 8 * CHUNK_BYTES; room *= 8) { /* long lines: more room */
        buf_reserve(a, b, room);
        va_copy(ap2, ap);
        n = format_fast(b->s + b->n, b->cap - b->n, fmt, ap2);
        va_end(ap2);
    }
    if (n >= 0) {
        b->n += (size_t)n;
        return;
    }
    char tmp[512];
    va_copy(ap2, ap);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof tmp) {
        buf_put(a, b, tmp, (size_t)n);
        return;
    }
    buf_reserve(a, b, (size_t)n);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

static void buf_add(NrArena *a, NrPtxBuf *b, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void buf_add(NrArena *a, NrPtxBuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(a, b, fmt, ap);
    va_end(ap);
}

void nr_ptx_emit(NrPtx *p, const char *fmt, ...) {
    if (p->eval) NR_ICE("instruction emitted in evaluation mode");
    NrPtxBuf *b = p->out;
    buf_reserve(p->a, b, 2);
    if (fmt[0] != '$') {
        b->s[b->n++] = ' ';
        b->s[b->n++] = ' ';
    }
    size_t at = b->before + b->n; /* where the instruction starts, counting flushed chunks */
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(p->a, b, fmt, ap);
    va_end(ap);
    if (!p->smem_touched && b != &p->pro) {
        /* (a chunk that filled up moved out: the instruction is all in the new one) */
        const char *line = b->s + (at >= b->before ? at - b->before : 0);
        p->smem_touched = strstr(line, ".shared") || strstr(line, "wgmma") || strstr(line, "call");
    }
    buf_put(p->a, b, "\n", 1);
}

void nr_ptx_error(NrPtx *p, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    NrLoc loc = p->op ? p->f->ops[p->op].loc : p->f->loc;
    nr_error(p->d, loc, "%s", msg);
    p->failed = true;
}

/* --- registers --------------------------------------------------------------------------------------- */
static int kind_class(NrPk k) {
    switch (k) {
    case NR_PK_P: return NR_RC_P;
    case NR_PK_H: return NR_RC_H;
    case NR_PK_I64:
    case NR_PK_F64: return NR_RC_D;
    default: return NR_RC_R;
    }
}

int32_t nr_ptx_newreg(NrPtx *p, NrPk k) {
    NR_ASSERT(!p->eval);
    int c = kind_class(k);
    return (int32_t)(c << 24 | ++p->nregs[c]);
}

static const char *const class_prefix[] = {"", "%p", "%rs", "%r", "%rd"};
static const char *const class_type[] = {"", ".pred", ".b16", ".b32", ".b64"};

static char *next_name(NrPtx *p) {
    char *s = p->names[p->name_next];
    if (++p->name_next == (int)NR_COUNTOF(p->names)) p->name_next = 0;
    return s;
}

const char *nr_ptx_reg(NrPtx *p, int32_t r) {
    NR_ASSERT(r > 0 && (r >> 24) >= NR_RC_P && (r >> 24) <= NR_RC_D); /* not an immediate, not an unread element */
    /* "%r123": the class's prefix, then the number, formatted once per
     * register (the emitter's hottest path; names are stable strings) */
    int c = r >> 24;
    uint32_t v = (uint32_t)(r & 0xffffff); /* at most 8 digits */
    if ((int32_t)v >= p->nregnames[c]) {
        int32_t n = p->nregnames[c] ? p->nregnames[c] : 256;
        while (n <= (int32_t)v) n *= 2;
        p->regnames[c] = nr_arena_grow(p->a, p->regnames[c], sizeof p->regnames[c][0] * (size_t)p->nregnames[c],
                                       sizeof p->regnames[c][0] * (size_t)n);
        p->nregnames[c] = n;
    }
    char *s = p->regnames[c][v];
    if (s[0]) return s;
    char *o = s;
    *o++ = '%';
    switch (c) {
    case NR_RC_P: *o++ = 'p'; break;
    case NR_RC_H: *o++ = 'r', *o++ = 's'; break;
    case NR_RC_R: *o++ = 'r'; break;
    default: *o++ = 'r', *o++ = 'd'; break;
    }
    int nd = v >= 10000000 ? 8 : v >= 1000000 ? 7 : v >= 100000 ? 6 : v >= 10000 ? 5 : v >= 1000 ? 4 : v >= 100 ? 3 : v >= 10 ? 2 : 1;
    o[nd] = 0;
    for (int i = nd - 1; i >= 0; i--) {
        o[i] = (char)('0' + v % 10);
        v /= 10;
    }
    return s;
}

char *nr_ptx_put_udec(char *o, uint64_t v) {
    char d[24];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k) *o++ = d[--k];
    *o = 0;
    return o;
}

char *nr_ptx_put_dec(char *o, int64_t v) {
    if (v < 0) *o++ = '-';
    return nr_ptx_put_udec(o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

char *nr_ptx_put_hex(char *o, uint64_t v, int digits) {
    for (int i = digits - 1; i >= 0; i--) *o++ = "0123456789ABCDEF"[v >> (4 * i) & 15];
    *o = 0;
    return o;
}

char *nr_ptx_reg_list(NrPtx *p, const NrPv *v, int n, bool always_braces) {
    char *s = nr_alloc(p->a, (size_t)n * 13 + 4), *o = s; /* "%rd12345678, " */
    bool braces = always_braces || n > 1;
    if (braces) *o++ = '{';
    for (int i = 0; i < n; i++) {
        if (i) *o++ = ',', *o++ = ' ';
        for (const char *r = nr_ptx_reg(p, v[i].r); *r; r++) *o++ = *r;
    }
    if (braces) *o++ = '}';
    *o = 0;
    return s;
}

const char *nr_ptx_opnd(NrPtx *p, NrPv v) {
    if (v.r) return nr_ptx_reg(p, v.r);
    char *s = next_name(p);
    switch (v.k) {
    case NR_PK_F32: s[0] = '0', s[1] = 'f', nr_ptx_put_hex(s + 2, (uint32_t)v.c, 8); break;
    case NR_PK_F64: s[0] = '0', s[1] = 'd', nr_ptx_put_hex(s + 2, v.c, 16); break;
    case NR_PK_I64: nr_ptx_put_dec(s, (int64_t)v.c); break;
    default: nr_ptx_put_dec(s, (int32_t)(uint32_t)v.c); break;
    }
    return s;
}

NrPv nr_ptx_inreg(NrPtx *p, NrPv v) {
    if (v.r || p->eval) return v;
    NrPv d = {v.k, nr_ptx_newreg(p, (NrPk)v.k), 0};
    if (v.k == NR_PK_P) {
        nr_ptx_emit(p, "setp.%s.u32 %s, 0, 0;", v.c & 1 ? "eq" : "ne", nr_ptx_reg(p, d.r));
    } else if (v.k == NR_PK_H) {
        nr_ptx_emit(p, "mov.b16 %s, 0x%04X;", nr_ptx_reg(p, d.r), (unsigned)(v.c & 0xffff));
    } else {
        int w = v.k == NR_PK_I64 || v.k == NR_PK_F64 ? 64 : 32;
        nr_ptx_emit(p, "mov.b%d %s, %s;", w, nr_ptx_reg(p, d.r), nr_ptx_opnd(p, v));
    }
    return d;
}

int nr_ptx_label(NrPtx *p) { return ++p->nlabels; }

const char *nr_ptx_addr(NrPtx *p, NrPv base, int64_t off) {
    char *s = next_name(p), *o = s;
    const char *b = base.r ? nr_ptx_reg(p, base.r) : nr_ptx_opnd(p, base);
    char num[24];
    size_t bl = strlen(b), nl = off ? (size_t)(nr_ptx_put_dec(num, off) - num) : 0;
    if (bl + nl + 4 > sizeof p->names[0]) { /* (only absurd immediates: cut as snprintf cuts) */
        if (off) snprintf(s, sizeof p->names[0], "[%s+%lld]", b, (long long)off);
        else snprintf(s, sizeof p->names[0], "[%s]", b);
        return s;
    }
    *o++ = '[';
    memcpy(o, b, bl), o += bl;
    if (off) {
        *o++ = '+';
        memcpy(o, num, nl), o += nl;
    }
    *o++ = ']';
    *o = 0;
    return s;
}

/* --- kinds and values ------------------------------------------------------------------------------------- */
NrPk nr_ptx_kind(NrDtype dt) {
    switch (dt) {
    case NR_DT_I1: return NR_PK_P;
    case NR_DT_I64:
    case NR_DT_U64: return NR_PK_I64;
    case NR_DT_F64: return NR_PK_F64;
    case NR_DT_F32: return NR_PK_F32;
    case NR_DT_F16:
    case NR_DT_BF16:
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: return NR_PK_H;
    default: return NR_PK_I32;
    }
}

NrPk nr_ptx_type_kind(const NrModule *m, NrTypeId t) {
    const NrType *ty = nr_type(m, t);
    return ty->ptr ? NR_PK_I64 : nr_ptx_kind((NrDtype)ty->dtype);
}

NrPtxVal *nr_ptx_val(NrPtx *p, NrValId v) {
    NrPtxVal *x = &p->vals[v];
    if (!x->e) {
        /* Only reachable after an earlier error: give the value zeros. */
        NR_ASSERT(p->failed);
        nr_ptx_def(p, v);
        for (int i = 0; i < x->n; i++) x->e[i] = nr_pv_imm(nr_ptx_type_kind(p->m, nr_val_type(p->f, v)), 0);
    }
    return x;
}

/* Number of elements per thread of type t (lay: layout index or -1). */
static int val_count(NrPtx *p, int lay) { return lay >= 0 ? 1 << p->lays[lay].nreg : 1; }

NrPtxVal *nr_ptx_def(NrPtx *p, NrValId v) {
    NrPtxVal *x = &p->vals[v];
    NrTypeId t = nr_val_type(p->f, v);
    int lay = nr_ptx_lay(p, t);
    if (lay == -2) lay = -1, x->n = 1;
    x->lay = lay;
    x->n = val_count(p, lay);
    x->e = nr_alloc(p->a, sizeof(NrPv) * (size_t)x->n);
    NrPk k = nr_ptx_type_kind(p->m, t);
    for (int i = 0; i < x->n; i++) {
        x->e[i].k = (uint8_t)k;
        x->e[i].r = p->eval ? 0 : nr_ptx_newreg(p, k);
        x->e[i].c = 0;
    }
    return x;
}

void nr_ptx_set(NrPtx *p, NrValId v, NrPv *e, int n) {
    NrPtxVal *x = &p->vals[v];
    NrTypeId t = nr_val_type(p->f, v);
    int lay = nr_ptx_lay(p, t);
    x->lay = lay < 0 ? -1 : lay;
    x->n = n;
    x->e = e;
    NR_ASSERT(n == val_count(p, x->lay) || p->failed);
}

/* --- layouts --------------------------------------------------------------------------------------------- */
static int ilog2(int64_t x) {
    int k = 0;
    while (((int64_t)1 << k) < x) k++;
    return k;
}

/* Flat of a coordinate vector; false if it lies outside the shape. */
static bool flat_of(const NrPtxLay *L, const int32_t *c, uint32_t *out) {
    uint32_t f = 0;
    for (int d = 0; d < L->rank; d++) {
        if (c[d] < 0 || c[d] >= L->shape[d]) return false;
        f |= (uint32_t)c[d] << L->off[d];
    }
    *out = f;
    return true;
}

/* Inserts v into an F2 basis kept by leading bit; false if v depends on it. */
static bool basis_insert(uint32_t *piv, uint32_t v) {
    while (v) { /* set bits from the top: piv[b] leads with bit b */
        int b = 31 - __builtin_clz(v);
        if (!piv[b]) {
            piv[b] = v;
            return true;
        }
        v ^= piv[b];
    }
    return false;
}

bool nr_ptx_lay_build(NrModule *m, int32_t layout, const NrType *t, int num_warps, NrArena *a, NrPtxLay *L) {
    memset(L, 0, sizeof *L);
    NrLinear ll;
    if (t->rank <= 0 || !nr_layout_linear(m, layout, t->rank, t->shape, num_warps, &ll)) return false;
    if (ll.nlane != 5 || (1 << ll.nwarp) != num_warps || ll.nreg > NR_LL_MAX_BITS || ll.nreg < 0) return false;
    L->layout = layout;
    L->rank = t->rank;
    int bits = 0;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (!nr_is_pow2(t->shape[d])) return false;
        L->shape[d] = t->shape[d];
        L->off[d] = bits;
        bits += ilog2(t->shape[d]);
    }
    if (bits > 30) return false;
    L->bits = bits;
    L->nreg = ll.nreg;
    L->nlane = ll.nlane;
    L->nwarp = ll.nwarp;
    for (int i = 0; i < ll.nreg; i++)
        if (!flat_of(L, ll.reg[i], &L->regb[i])) return false;
    for (int i = 0; i < ll.nlane; i++)
        if (!flat_of(L, ll.lane[i], &L->laneb[i])) return false;
    for (int i = 0; i < ll.nwarp; i++)
        if (!flat_of(L, ll.warp[i], &L->warpb[i])) return false;
    return nr_ptx_lay_finish(L, a);
}

bool nr_ptx_lay_finish(NrPtxLay *L, NrArena *a) {
    if (L->nreg > NR_LL_MAX_BITS) return false;
    int R = 1 << L->nreg;
    L->regflat = nr_alloc(a, sizeof(uint32_t) * (size_t)R);
    L->dup = nr_alloc(a, (size_t)R);
    for (int r = 1; r < R; r++) {
        int b = __builtin_ctz((unsigned)r);
        L->regflat[r] = L->regflat[r & (r - 1)] ^ L->regb[b];
    }
    /* Bases that depend on earlier ones (registers first, then lanes, then
     * warps) only replicate elements: the holder with those bits clear owns. */
    uint32_t piv[32] = {0}, dupreg = 0;
    L->rep_lane = L->rep_warp = 0;
    for (int i = 0; i < L->nreg; i++)
        if (!basis_insert(piv, L->regb[i])) dupreg |= 1u << i;
    for (int i = 0; i < L->nlane; i++)
        if (!basis_insert(piv, L->laneb[i])) L->rep_lane |= 1u << i;
    for (int i = 0; i < L->nwarp; i++)
        if (!basis_insert(piv, L->warpb[i])) L->rep_warp |= 1u << i;
    for (int r = 0; r < R; r++) L->dup[r] = (r & dupreg) != 0;
    return true;
}

/* The module's layouts in flat form, per type id (nr_ptx_lay_of_type). */
struct NrPtxLayEntry {
    int num_warps;
    int32_t layout;    /* the type's layout id it was built for */
    bool ok;
    NrPtxLay L;
};

struct NrGpuCache *nr_gpu_cache(NrModule *m) {
    if (!m->gpu_cache) m->gpu_cache = nr_alloc(m->arena, sizeof *m->gpu_cache);
    return m->gpu_cache;
}

bool nr_ptx_lay_of_type(NrModule *m, NrTypeId t, int num_warps, NrPtxLay *out) {
    const NrType *ty = nr_type(m, t);
    if (ty->kind != NR_TK_VALUE || ty->rank <= 0 || ty->layout <= 0) return false;
    struct NrGpuCache *c = nr_gpu_cache(m);
    if (t >= c->nlays) {
        int n = c->nlays ? c->nlays : 64;
        while (n <= t) n *= 2;
        c->lays = nr_arena_grow(m->arena, c->lays, sizeof(struct NrPtxLayEntry *) * (size_t)c->nlays,
                                sizeof(struct NrPtxLayEntry *) * (size_t)n);
        c->nlays = n;
    }
    struct NrPtxLayEntry *e = c->lays[t];
    if (e && e->num_warps != num_warps) /* another warp count than the cached one: built for the caller alone */
        return nr_ptx_lay_build(m, ty->layout, ty, num_warps, m->arena, out);
    /* Compacting the layout table renumbers a type's layout (same layout,
     * new id): an entry of the old id is built again. */
    if (e && e->layout != ty->layout) e = NULL;
    if (!e) {
        e = nr_alloc(m->arena, sizeof *e);
        e->num_warps = num_warps;
        e->layout = ty->layout;
        e->ok = nr_ptx_lay_build(m, ty->layout, ty, num_warps, m->arena, &e->L);
        c->lays[t] = e;
    }
    if (!e->ok) return false;
    *out = e->L;
    return true;
}

static bool same_shape(const NrPtxLay *L, const NrType *t) {
    if (L->rank != t->rank) return false;
    for (int d = 0; d < t->rank; d++)
        if (L->shape[d] != t->shape[d]) return false;
    return true;
}

int nr_ptx_lay(NrPtx *p, NrTypeId t) {
    const NrType *ty = nr_type(p->m, t);
    if (ty->rank == 0) return -1;
    for (int i = 0; i < p->nlays; i++)
        if (p->lays[i].layout == ty->layout && same_shape(&p->lays[i], ty)) return i;
    NrPtxLay L;
    if (!ty->layout) {
        nr_ptx_error(p, "block of type %s has no layout; run the GPU pipeline before emitting PTX",
                     nr_type_str(p->m, t));
        return -2;
    }
    if (!nr_ptx_lay_of_type(p->m, t, p->num_warps, &L)) {
        nr_ptx_error(p, "layout #L%d cannot distribute a block of type %s over %d warps", ty->layout,
                     nr_type_str(p->m, t), p->num_warps);
        return -2;
    }
    *NR_PUSH(p->a, p->lays, p->nlays, p->caplays) = L;
    return p->nlays - 1;
}

/* Emission into the prologue: values that every later use can see. */
static NrPtxBuf *to_prologue(NrPtx *p) {
    NrPtxBuf *saved = p->out;
    p->out = &p->pro;
    return saved;
}

/* XOR over the set bits i of `x` (a .b32 register) of basis[i].  A run of
 * bits i..j-1 whose images are consecutive single bits (basis[k] =
 * basis[i] << (k - i): blocked layouts, where the thread's flat index is
 * its id shifted) is one mask and one shift, not a shift, mask and
 * multiply per bit. */
static NrPv xor_bits(NrPtx *p, NrPv x, const uint32_t *basis, int n) {
    NrPv acc = nr_pv_i32(0);
    for (int i = 0; i < n;) {
        if (!basis[i]) {
            i++;
            continue;
        }
        if (!nr_is_pow2(basis[i])) {
            NrPv bit = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, x, nr_pv_i32(i)),
                                 nr_pv_i32(1));
            NrPv t = nr_pb_bin(p, NR_PO_MUL, NR_PT_U32, bit, nr_pv_i32((int32_t)basis[i]));
            acc = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, acc, t);
            i++;
            continue;
        }
        int j = i + 1;
        while (j < n && basis[j - 1] < UINT32_C(0x80000000) && basis[j] == basis[j - 1] << 1) j++;
        uint32_t mask = (j - i >= 32 ? UINT32_MAX : (UINT32_C(1) << (j - i)) - 1) << i;
        NrPv t = nr_pb_bin(p, NR_PO_AND, NR_PT_B32, x, nr_pv_i32((int32_t)mask));
        int sh = nr_log2_floor(basis[i]) - i;
        if (sh > 0) t = nr_pb_bin(p, NR_PO_SHL, NR_PT_B32, t, nr_pv_i32(sh));
        if (sh < 0) t = nr_pb_bin(p, NR_PO_SHR, NR_PT_U32, t, nr_pv_i32(-sh));
        acc = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, acc, t);
        i = j;
    }
    return acc;
}

int32_t nr_ptx_tflat(NrPtx *p, int lay) {
    NrPtxLay *L = &p->lays[lay];
    if (L->tflat) return L->tflat;
    NrPtxBuf *saved = to_prologue(p);
    NrPv lane = {NR_PK_I32, p->lane, 0}, warp = {NR_PK_I32, p->warp, 0};
    NrPv t = nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, xor_bits(p, lane, L->laneb, L->nlane),
                       xor_bits(p, warp, L->warpb, L->nwarp));
    L->tflat = nr_ptx_inreg(p, t).r;
    p->out = saved;
    return L->tflat;
}

int32_t nr_ptx_owner(NrPtx *p, int lay) {
    NrPtxLay *L = &p->lays[lay];
    if (L->owner) return L->owner;
    NrPtxBuf *saved = to_prologue(p);
    NrPv lane = {NR_PK_I32, p->lane, 0}, warp = {NR_PK_I32, p->warp, 0};
    NrPv a = nr_pb_setp(p, NR_PC_EQ, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, lane, nr_pv_i32(L->rep_lane)),
                        nr_pv_i32(0));
    NrPv b = nr_pb_setp(p, NR_PC_EQ, NR_PT_B32, nr_pb_bin(p, NR_PO_AND, NR_PT_B32, warp, nr_pv_i32(L->rep_warp)),
                        nr_pv_i32(0));
    L->owner = nr_ptx_inreg(p, nr_pb_pand(p, a, b)).r;
    p->out = saved;
    return L->owner;
}

int32_t nr_ptx_thread0(NrPtx *p) {
    if (p->thread0) return p->thread0;
    NrPtxBuf *saved = to_prologue(p);
    NrPv tid = {NR_PK_I32, p->tid_raw, 0}; /* (not a producer warp's alias of thread 0) */
    p->thread0 = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_EQ, NR_PT_U32, tid, nr_pv_i32(0))).r;
    p->out = saved;
    return p->thread0;
}

/* One thread that issues an asynchronous copy for the whole program: an
 * elect.sync lane of warp 0.  Every thread of the program must execute the
 * call (elect.sync takes the full warp).  warp 0 is tested on a value
 * shfl.sync broadcasts from lane 0, which ptxas knows to be the same across
 * the warp, and the elected lane is known to be alone: the copy's operands
 * move to uniform registers directly, where a tid == 0 predicate makes
 * ptxas wrap each TMA instruction in a loop over the active lanes' values. */
NrPv nr_ptx_elect_one(NrPtx *p) {
    if (!p->warp0) {
        NrPtxBuf *saved = to_prologue(p);
        int32_t w = nr_ptx_newreg(p, NR_PK_I32);
        nr_ptx_emit(p, "shfl.sync.idx.b32 %s, %s, 0, 31, -1;", nr_ptx_reg(p, w), nr_ptx_reg(p, p->warp));
        NrPv wv = {NR_PK_I32, w, 0};
        p->warp0 = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_EQ, NR_PT_U32, wv, nr_pv_i32(0))).r;
        p->out = saved;
    }
    int32_t lane = nr_ptx_newreg(p, NR_PK_I32), e = nr_ptx_newreg(p, NR_PK_P);
    nr_ptx_emit(p, "elect.sync %s|%s, -1;", nr_ptx_reg(p, lane), nr_ptx_reg(p, e));
    return nr_ptx_inreg(p, nr_pb_pand(p, (NrPv){NR_PK_P, e, 0}, (NrPv){NR_PK_P, p->warp0, 0}));
}

NrPv nr_ptx_flat(NrPtx *p, int lay, int r) {
    NrPv t = {NR_PK_I32, nr_ptx_tflat(p, lay), 0};
    return nr_pb_bin(p, NR_PO_XOR, NR_PT_B32, t, nr_pv_i32(p->lays[lay].regflat[r]));
}

/* --- shared memory ------------------------------------------------------------------------------------- */
NrPv nr_ptx_smem_addr(NrPtx *p, int64_t off) {
    if (!p->smem) {
        NrPtxBuf *saved = to_prologue(p);
        p->smem = nr_ptx_newreg(p, NR_PK_I32);
        if (p->smem_base) nr_ptx_emit(p, "mov.u32 %s, nr_smem+%lld;", nr_ptx_reg(p, p->smem), (long long)p->smem_base);
        else nr_ptx_emit(p, "mov.u32 %s, nr_smem;", nr_ptx_reg(p, p->smem));
        p->out = saved;
    }
    NrPv base = {NR_PK_I32, p->smem, 0};
    return off ? nr_pb_bin(p, NR_PO_ADD, NR_PT_U32, base, nr_pv_i32(off)) : base;
}

int64_t nr_ptx_scratch_off(NrPtx *p, NrOpId op) {
    const NrAttr *a = nr_op_attr(p->f, op, NR_A_SMEM_OFFSET);
    if (a && a->kind == NR_AK_INT) return a->v.i;
    return p->scratch_base;
}

/* A TMA store leaves its bulk group reading the buffer; the buffer may be
 * written again only after a barrier, so every thread waits for its own
 * groups (none but the one that issued the copies has any) in front of the
 * next barrier, not right after the copies: the epilogue's store overlaps
 * what comes before that barrier, in a persistent kernel the next tile's
 * main loop.  A kernel's end and a call wait as well. */
void nr_ptx_bulk_wait(NrPtx *p) {
    if (!p->bulk_reads) return;
    nr_ptx_emit(p, "cp.async.bulk.wait_group.read 0;");
    p->bulk_reads = false;
}

/* Whether block b (or a region nested in it) stores by TMA. */
static bool stores_by_tma(const NrFunc *f, NrBlockId b, int depth) {
    if (depth > 200) return true;
    NR_FOR_OPS(f, b, o) {
        const NrOp *op = &f->ops[o];
        if (op->opc == NR_OP_TMA_STORE) return true;
        for (int r = 0; r < op->nregions; r++)
            if (stores_by_tma(f, op->regions[r], depth + 1)) return true;
    }
    return false;
}

/* After a warp_specialize split the producer warps have left: a barrier
 * of the others is named barrier 1 with their count. */
void nr_ptx_bar(NrPtx *p) {
    nr_ptx_bulk_wait(p);
    if (p->bar_threads) nr_ptx_emit(p, "bar.sync 1, %d;", p->bar_threads);
    else nr_ptx_emit(p, "bar.sync 0;");
}

void nr_ptx_bar_scratch(NrPtx *p) {
    if (p->smem_touched || p->loops > 0 || p->is_func) nr_ptx_bar(p);
}

/* Walks every op of block b (and nested regions) for the shared-memory plan. */
static void plan_block(NrPtx *p, NrBlockId b, int64_t *explicit_end, int64_t *fallback, int depth) {
    if (depth > 1000) return;
    NR_FOR_OPS(p->f, b, o) {
        const NrOp *op = &p->f->ops[o];
        if (nr_ptx_alloc_end(p->f, o) > *explicit_end) *explicit_end = nr_ptx_alloc_end(p->f, o);
        int64_t bytes = nr_ptx_op_scratch(p->m, p->f, o, p->num_warps, p->a);
        if (bytes > 0) {
            const NrAttr *a = nr_op_attr(p->f, o, NR_A_SMEM_OFFSET);
            if (a && a->kind == NR_AK_INT && a->v.i >= 0) {
                if (a->v.i + bytes > *explicit_end) *explicit_end = a->v.i + bytes;
            } else if (bytes > *fallback) {
                *fallback = bytes;
            }
        }
        for (int r = 0; r < op->nregions; r++) plan_block(p, op->regions[r], explicit_end, fallback, depth + 1);
    }
}

static void plan_smem(NrPtx *p) {
    int64_t end = 0, fallback = 0;
    plan_block(p, p->f->body, &end, &fallback, 0);
    p->scratch_base = (end + 15) & ~(int64_t)15;
    p->smem_bytes = fallback ? p->scratch_base + fallback : end;
}

/* --- creation ops ------------------------------------------------------------------------------------- */
typedef bool (*OpFn)(NrPtx *p, NrOpId op);

static NrOp *O(NrPtx *p, NrOpId op) { return &p->f->ops[op]; }
static NrValId res(NrPtx *p, NrOpId op, int i) { return p->f->ops[op].results[i]; }
static NrValId opd(NrPtx *p, NrOpId op, int i) { return p->f->ops[op].opnds[i]; }
static NrDtype res_dt(NrPtx *p, NrOpId op) {
    const NrType *t = nr_type(p->m, nr_val_type(p->f, res(p, op, 0)));
    return t->ptr ? NR_DT_U64 : (NrDtype)t->dtype;
}

/* Every element of v is x. */
static void def_splat(NrPtx *p, NrValId v, NrPv x) {
    int lay = nr_ptx_lay(p, nr_val_type(p->f, v));
    int n = lay >= 0 ? 1 << p->lays[lay].nreg : 1;
    NrPv *e = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    for (int i = 0; i < n; i++) e[i] = x;
    nr_ptx_set(p, v, e, n);
}

bool nr_ptx_op_const(NrPtx *p, NrOpId op) {
    const NrAttr *a = nr_op_attr(p->f, op, NR_A_VALUE);
    NrDtype dt = res_dt(p, op);
    NrPv x;
    if (!a) {
        nr_ptx_error(p, "const without a value");
        x = nr_pv_imm(nr_ptx_kind(dt), 0);
    } else if (a->kind == NR_AK_FLOAT && nr_dt_is_float(dt)) {
        x = nr_pe_cast(p, NR_DT_F64, dt, false, nr_pv_f64(a->v.f));
    } else if (a->kind == NR_AK_FLOAT) {
        /* As the interpreter: saturate to int64, then truncate to the type. */
        NrPv i = nr_pe_cast(p, NR_DT_F64, NR_DT_I64, false, nr_pv_f64(a->v.f));
        x = nr_pe_cast(p, NR_DT_I64, dt, false, i);
    } else {
        x = nr_pe_cast(p, NR_DT_I64, dt, false, nr_pv_i64(a->v.i));
    }
    def_splat(p, res(p, op, 0), x);
    return true;
}

static bool op_arange(NrPtx *p, NrOpId op) {
    NrValId r = res(p, op, 0);
    int lay = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (lay < 0) return false;
    int64_t start = nr_op_int(p->f, op, NR_A_START, 0);
    int n = 1 << p->lays[lay].nreg;
    NrPv *e = nr_alloc(p->a, sizeof(NrPv) * (size_t)n);
    for (int i = 0; i < n; i++)
        e[i] = nr_pb_bin(p, NR_PO_ADD, NR_PT_S32, nr_ptx_flat(p, lay, i), nr_pv_i32(start));
    nr_ptx_set(p, r, e, n);
    return true;
}

static bool op_splat(NrPtx *p, NrOpId op) {
    def_splat(p, res(p, op, 0), nr_ptx_val(p, opd(p, op, 0))->e[0]);
    return true;
}

static bool grid_query(NrPtx *p, NrOpId op, const char *sreg) {
    int64_t axis = nr_op_int(p->f, op, NR_A_AXIS, 0);
    if (axis < 0 || axis > 2) {
        nr_ptx_error(p, "'%s' axis must be 0, 1 or 2", nr_op_info[O(p, op)->opc].name);
        return false;
    }
    NrPv r = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "mov.u32 %s, %s.%c;", nr_ptx_reg(p, r.r), sreg, "xyz"[axis]);
    def_splat(p, res(p, op, 0), r);
    return true;
}

static bool op_program_id(NrPtx *p, NrOpId op) { return grid_query(p, op, "%ctaid"); }
static bool op_num_programs(NrPtx *p, NrOpId op) { return grid_query(p, op, "%nctaid"); }

/* warp / 4: the warps of the program after a warp_specialize are 0 .. num_warps - 1 */
static bool op_warpgroup_id(NrPtx *p, NrOpId op) {
    NrPv r = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
    nr_ptx_emit(p, "shr.u32 %s, %s, 2;", nr_ptx_reg(p, r.r), nr_ptx_reg(p, p->warp));
    def_splat(p, res(p, op, 0), r);
    return true;
}

static bool op_hint(NrPtx *p, NrOpId op) {
    NrPtxVal *a = nr_ptx_val(p, opd(p, op, 0));
    nr_ptx_set(p, res(p, op, 0), a->e, a->n);
    return true;
}

static bool op_nothing(NrPtx *p, NrOpId op) {
    (void)p, (void)op;
    return true;
}

static bool op_barrier(NrPtx *p, NrOpId op) {
    (void)op;
    nr_ptx_bar(p);
    return true;
}

/* --- noinline functions: the PTX calling convention ------------------------------------------------------ */
/* Element registers pass in .param variables, one per register (a
 * predicate as a .b32 of 0 or 1), and come back in one .param byte array,
 * each at its natural alignment: the ABI every PTX compiler uses, so ptxas
 * saves and restores around calls as it should. */
static int abi_bytes(int cls) { return cls == NR_RC_D ? 8 : cls == NR_RC_H ? 2 : 4; }
static const char *const abi_type[] = {"", ".b32", ".b16", ".b32", ".b64"};

/* Offset of the next value of class cls in a return array filled to *off. */
static int abi_place(int *off, int cls) {
    int n = abi_bytes(cls);
    *off = (*off + n - 1) / n * n;
    int at = *off;
    *off += n;
    return at;
}

/* st.param of element v at [name+off] (a predicate as 0 or 1). */
static void abi_store(NrPtx *p, const char *name, int off, NrPv v) {
    int cls = kind_class((NrPk)v.k);
    if (cls == NR_RC_P) v = nr_pb_selp(p, v, nr_pv_i32(1), nr_pv_i32(0));
    v = nr_ptx_inreg(p, v);
    nr_ptx_emit(p, "st.param%s [%s+%d], %s;", abi_type[cls], name, off, nr_ptx_reg(p, v.r));
}

/* ld.param of [name+off] into register d (a predicate from its 0 or 1). */
static void abi_load(NrPtx *p, const char *name, int off, NrPv d) {
    int cls = kind_class((NrPk)d.k);
    if (cls != NR_RC_P) {
        nr_ptx_emit(p, "ld.param%s %s, [%s+%d];", abi_type[cls], nr_ptx_reg(p, d.r), name, off);
        return;
    }
    int32_t t = nr_ptx_newreg(p, NR_PK_I32);
    nr_ptx_emit(p, "ld.param.b32 %s, [%s+%d];", nr_ptx_reg(p, t), name, off);
    nr_ptx_emit(p, "setp.ne.b32 %s, %s, 0;", nr_ptx_reg(p, d.r), nr_ptx_reg(p, t));
}

/* A noinline function: its elements (block values: each thread's registers
 * in the default layout of their shape) pass in and out through .param
 * variables declared in a scope around the call. */
static bool op_call(NrPtx *p, NrOpId op) {
    const char *name = nr_op_str(p->f, op, NR_A_CALLEE, "");
    NrFunc *g = nr_module_find_func(p->m, name);
    if (!g || g->is_kernel) {
        nr_ptx_error(p, "call of '%s', which is not a function of the module", name);
        return false;
    }
    const NrOp *o = O(p, op);
    NrPtxBuf args = {0};
    nr_ptx_bulk_wait(p);
    nr_ptx_emit(p, "{");
    int k = 0;
    for (int i = 0; i < o->nopnds; i++) {
        NrPtxVal *x = nr_ptx_val(p, opd(p, op, i));
        for (int j = 0; j < x->n; j++, k++) {
            char pn[32];
            snprintf(pn, sizeof pn, "nr_p%d", k);
            nr_ptx_emit(p, ".param %s %s;", abi_type[kind_class((NrPk)x->e[j].k)], pn);
            abi_store(p, pn, 0, x->e[j]);
            buf_add(p->a, &args, "%s%s", args.n ? ", " : "", pn);
        }
    }
    int size = 0;
    for (int i = 0; i < o->nresults; i++) {
        NrPtxVal *x = nr_ptx_def(p, res(p, op, i));
        for (int j = 0; j < x->n; j++) abi_place(&size, kind_class((NrPk)x->e[j].k));
    }
    if (size) nr_ptx_emit(p, ".param .align 8 .b8 nr_rets[%d];", size);
    if (size && args.n) nr_ptx_emit(p, "call.uni (nr_rets), %s, (%s);", name, args.s);
    else if (size) nr_ptx_emit(p, "call.uni (nr_rets), %s;", name);
    else if (args.n) nr_ptx_emit(p, "call.uni %s, (%s);", name, args.s);
    else nr_ptx_emit(p, "call.uni %s;", name);
    int off = 0;
    for (int i = 0; i < o->nresults; i++) {
        NrPtxVal *x = nr_ptx_def(p, res(p, op, i));
        for (int j = 0; j < x->n; j++) abi_load(p, "nr_rets", abi_place(&off, kind_class((NrPk)x->e[j].k)), x->e[j]);
    }
    nr_ptx_emit(p, "}");
    return true;
}

/* --- shape ops ---------------------------------------------------------------------------------------- */
/* Result shape ops (broadcast, expand_dims, reshape, trans) move no data
 * when the layouts agree: the result's elements alias the operand's. */
static bool op_shape(NrPtx *p, NrOpId op) {
    NrValId a = opd(p, op, 0), r = res(p, op, 0);
    const NrType *at = nr_type(p->m, nr_val_type(p->f, a)), *rt = nr_type(p->m, nr_val_type(p->f, r));
    NrPtxVal *av = nr_ptx_val(p, a);
    int rl = nr_ptx_lay(p, nr_val_type(p->f, r));
    if (rl < 0) return false;
    if (at->rank == 0 || av->lay < 0) { /* a scalar (or a single element everywhere) */
        def_splat(p, r, av->e[0]);
        return true;
    }
    int n = 1 << p->lays[rl].nreg;
    if (O(p, op)->opc == NR_OP_RESHAPE && nr_op_int(p->f, op, NR_A_CAN_REORDER, 0) && av->n == n &&
        p->lays[av->lay].nlane == p->lays[rl].nlane) {
        /* Any element order will do: keep every element where it is. */
        nr_ptx_set(p, r, av->e, n);
        return true;
    }
    NrFlatMap f;
    if (!nr_ptx_shape_map(p->m, O(p, op), rt, at, &f)) {
        nr_ptx_error(p, "malformed '%s'", nr_op_info[O(p, op)->opc].name);
        return false;
    }
    NrDtype dt = at->ptr ? NR_DT_U64 : (NrDtype)at->dtype;
    NrPv *e = nr_ptx_convert(p, av->e, av->lay, rl, &f, dt, nr_ptx_scratch_off(p, op));
    nr_ptx_set(p, r, e, n);
    return true;
}

/* Bit j of dimension d of a flat (with offsets off). */
static uint32_t dim_bit(const int *off, int d, int j) { return 1u << (off[d] + j); }

static void offsets(const NrType *t, int *off, int *bits) {
    int b = 0;
    for (int d = t->rank - 1; d >= 0; d--) {
        off[d] = b;
        b += ilog2(t->shape[d]);
    }
    *bits = b;
}

bool nr_ptx_shape_map(const NrModule *m, const NrOp *op, const NrType *rt, const NrType *at, NrFlatMap *f) {
    (void)m;
    int roff[NR_MAX_RANK], aoff[NR_MAX_RANK], rbits, abits;
    offsets(rt, roff, &rbits);
    offsets(at, aoff, &abits);
    memset(f, 0, sizeof *f);
    f->bits = rbits;
    switch (op->opc) {
    case NR_OP_BROADCAST:
        if (at->rank != rt->rank) return false;
        for (int d = 0; d < rt->rank; d++)
            for (int j = 0; (1 << j) < rt->shape[d]; j++)
                f->img[roff[d] + j] = at->shape[d] == 1 ? 0 : dim_bit(aoff, d, j);
        return true;
    case NR_OP_TRANS: {
        int64_t order[NR_MAX_RANK];
        const NrAttr *oa = NULL;
        for (int i = 0; i < op->nattrs; i++)
            if (op->attrs[i].name == NR_A_ORDER) oa = &op->attrs[i];
        for (int k = 0; k < rt->rank; k++)
            order[k] = oa && oa->kind == NR_AK_INTS && oa->n == rt->rank ? oa->v.ints[k] : rt->rank - 1 - k;
        for (int k = 0; k < rt->rank; k++) {
            if (order[k] < 0 || order[k] >= at->rank) return false;
            for (int j = 0; (1 << j) < rt->shape[k]; j++) f->img[roff[k] + j] = dim_bit(aoff, (int)order[k], j);
        }
        return true;
    }
    default: /* expand_dims, reshape, convert: the row-major index is kept */
        if (abits != rbits) return false;
        for (int i = 0; i < rbits; i++) f->img[i] = 1u << i;
        return true;
    }
}

/* --- control flow ------------------------------------------------------------------------------------- */
static NrOpId emit_block(NrPtx *p, NrBlockId b, int depth);
static bool op_warp_specialize(NrPtx *p, NrOpId op, int depth);

/* dst[i] = src[i] for all i at once (dst are registers). */
static void parallel_copy(NrPtx *p, NrPv *dst, NrPv *src, int n) {
    NrPv *s = nr_alloc(p->a, sizeof(NrPv) * (size_t)(n > 0 ? n : 1));
    memcpy(s, src, sizeof(NrPv) * (size_t)n);
    for (int i = 0; i < n; i++) {
        if (!s[i].r || s[i].r == dst[i].r) continue;
        for (int j = 0; j < n; j++)
            if (j != i && dst[j].r == s[i].r) {
                s[i] = nr_pb_mov(p, s[i]);
                break;
            }
    }
    for (int i = 0; i < n; i++) {
        s[i].k = dst[i].k;
        nr_pb_mov_to(p, dst[i], s[i]);
    }
}

/* Copies the elements of values src[0..n) into the registers of values dst. */
static void copy_vals(NrPtx *p, const NrValId *dst, const NrValId *src, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) total += nr_ptx_val(p, dst[i])->n;
    NrPv *d = nr_alloc(p->a, sizeof(NrPv) * (size_t)(total ? total : 1));
    NrPv *s = nr_alloc(p->a, sizeof(NrPv) * (size_t)(total ? total : 1));
    int k = 0;
    for (int i = 0; i < n; i++) {
        NrPtxVal *dv = nr_ptx_val(p, dst[i]), *sv = nr_ptx_val(p, src[i]);
        for (int j = 0; j < dv->n; j++, k++) {
            d[k] = dv->e[j];
            s[k] = j < sv->n ? sv->e[j] : sv->e[0];
        }
    }
    parallel_copy(p, d, s, total);
}

static void def_regs(NrPtx *p, const NrValId *v, int n) {
    for (int i = 0; i < n; i++) nr_ptx_def(p, v[i]);
}

static bool check_term(NrPtx *p, NrOpId term, NrOpcode want, int nopnds) {
    if (term && O(p, term)->opc == want && O(p, term)->nopnds == nopnds) return true;
    if (!term && nopnds == 0) return true;
    nr_ptx_error(p, "malformed region: expected '%s' with %d operands", nr_op_info[want].name, nopnds);
    return false;
}

static NrDtype scalar_dt(NrPtx *p, NrValId v) { return (NrDtype)nr_type(p->m, nr_val_type(p->f, v))->dtype; }

/* for iv = lb; iv < ub; iv += step.  The loop ends when iv + step leaves
 * the range of iv's type (as the interpreter does) instead of wrapping. */
static bool op_for(NrPtx *p, NrOpId op, int depth) {
    NrOp *o = O(p, op);
    int nc = o->nopnds - 3;
    NrBlock *body = nr_block(p->f, o->regions[0]);
    if (nc < 0 || body->nargs != nc + 1 || o->nresults != nc) {
        nr_ptx_error(p, "malformed 'for'");
        return false;
    }
    NrDtype dt = scalar_dt(p, opd(p, op, 0));
    int bits = nr_dt_bits(dt);
    bool uns = !nr_dt_is_signed(dt);
    NrPt t = bits == 64 ? (uns ? NR_PT_U64 : NR_PT_S64) : (uns ? NR_PT_U32 : NR_PT_S32);
    NrPv lb = nr_ptx_val(p, opd(p, op, 0))->e[0], ub = nr_ptx_val(p, opd(p, op, 1))->e[0];
    NrPv step = nr_ptx_val(p, opd(p, op, 2))->e[0];
    def_regs(p, body->args, body->nargs);
    NrPv iv = nr_ptx_val(p, body->args[0])->e[0];
    nr_pb_mov_to(p, iv, lb);
    copy_vals(p, body->args + 1, o->opnds + 3, nc);
    int top = nr_ptx_label(p), end = nr_ptx_label(p);
    nr_ptx_emit(p, "$L%d:", top);
    NrPv stop = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_GE, t, iv, ub));
    nr_ptx_emit(p, "@%s bra.uni $L%d;", nr_ptx_reg(p, stop.r), end);
    /* A store of the body may be reading in the next iteration, and after the loop. */
    bool stores = stores_by_tma(p->f, o->regions[0], 0), reads = p->bulk_reads;
    p->bulk_reads |= stores;
    NrOpId term = emit_block(p, o->regions[0], depth + 1);
    p->bulk_reads |= stores || reads;
    if (!check_term(p, term, NR_OP_YIELD, nc)) return false;
    if (term) copy_vals(p, body->args + 1, O(p, term)->opnds, nc);
    /* iv + step, checked for leaving the type's range: with a constant
     * positive step, iv + step wraps exactly when it comes out below iv;
     * otherwise the sum is computed wide enough to see it. */
    NrPv next, ovf;
    int64_t sc = !nr_pv_is_imm(step) ? 0 : bits == 64 ? (int64_t)step.c : (int64_t)(int32_t)(uint32_t)step.c;
    if (sc > 0) {
        next = nr_pb_bin(p, NR_PO_ADD, bits == 64 ? NR_PT_S64 : NR_PT_S32, iv, step);
        ovf = nr_pb_setp(p, NR_PC_LT, t, next, iv);
    } else if (bits < 64) {
        NrPt wt = uns ? NR_PT_U64 : NR_PT_S64, nt = uns ? NR_PT_U32 : NR_PT_S32;
        NrPv s = nr_pb_bin(p, NR_PO_ADD, NR_PT_S64, nr_pb_cvt(p, NR_PR_NONE, wt, nt, nr_ptx_inreg(p, iv)),
                           nr_pb_cvt(p, NR_PR_NONE, wt, nt, nr_ptx_inreg(p, step)));
        if (uns) {
            ovf = nr_pb_setp(p, NR_PC_GE, NR_PT_U64, s, nr_pv_i64((int64_t)1 << bits));
        } else {
            NrPv lo = nr_pb_setp(p, NR_PC_LT, NR_PT_S64, s, nr_pv_i64(-((int64_t)1 << (bits - 1))));
            NrPv hi = nr_pb_setp(p, NR_PC_GE, NR_PT_S64, s, nr_pv_i64((int64_t)1 << (bits - 1)));
            ovf = nr_pb_por(p, lo, hi);
        }
        next = nr_pb_cvt(p, NR_PR_NONE, NR_PT_U32, NR_PT_U64, s);
    } else {
        next = nr_pb_bin(p, NR_PO_ADD, NR_PT_S64, iv, step);
        if (uns) { /* step read as signed counts down; either way, stop on wrap */
            NrPv neg = nr_pb_setp(p, NR_PC_LT, NR_PT_S64, step, nr_pv_i64(0));
            NrPv up = nr_pb_pand(p, nr_pb_pnot(p, neg), nr_pb_setp(p, NR_PC_LT, NR_PT_U64, next, iv));
            NrPv down = nr_pb_pand(p, neg, nr_pb_setp(p, NR_PC_GT, NR_PT_U64, next, iv));
            ovf = nr_pb_por(p, up, down);
        } else { /* signed overflow: the sum's sign differs from both operands' */
            NrPv x = nr_pb_bin(p, NR_PO_AND, NR_PT_B64, nr_pb_bin(p, NR_PO_XOR, NR_PT_B64, iv, next),
                               nr_pb_bin(p, NR_PO_XOR, NR_PT_B64, step, next));
            ovf = nr_pb_setp(p, NR_PC_LT, NR_PT_S64, x, nr_pv_i64(0));
        }
    }
    ovf = nr_ptx_inreg(p, ovf);
    if (ovf.r) nr_ptx_emit(p, "@%s bra.uni $L%d;", nr_ptx_reg(p, ovf.r), end);
    else if (ovf.c) nr_ptx_emit(p, "bra.uni $L%d;", end);
    nr_pb_mov_to(p, iv, next);
    nr_ptx_emit(p, "bra.uni $L%d;", top);
    nr_ptx_emit(p, "$L%d:", end);
    /* The results are the carried registers themselves. */
    for (int i = 0; i < nc; i++) {
        NrPtxVal *c = nr_ptx_val(p, body->args[i + 1]);
        nr_ptx_set(p, o->results[i], c->e, c->n);
    }
    return true;
}

static bool op_if(NrPtx *p, NrOpId op, int depth) {
    NrOp *o = O(p, op);
    if (o->nregions != 2) {
        nr_ptx_error(p, "malformed 'if'");
        return false;
    }
    def_regs(p, o->results, o->nresults);
    NrPv c = nr_ptx_val(p, opd(p, op, 0))->e[0];
    int els = nr_ptx_label(p), end = nr_ptx_label(p);
    bool entry = p->bulk_reads, after = false;
    for (int r = 0; r < 2; r++) {
        p->bulk_reads = entry; /* each branch starts from what came before */
        if (r == 0) {
            if (c.r) nr_ptx_emit(p, "@!%s bra.uni $L%d;", nr_ptx_reg(p, c.r), els);
            else if (!c.c) nr_ptx_emit(p, "bra.uni $L%d;", els);
        } else {
            nr_ptx_emit(p, "bra.uni $L%d;", end);
            nr_ptx_emit(p, "$L%d:", els);
        }
        NrOpId term = emit_block(p, o->regions[r], depth + 1);
        if (!check_term(p, term, NR_OP_YIELD, o->nresults)) return false;
        if (term) copy_vals(p, o->results, O(p, term)->opnds, o->nresults);
        after |= p->bulk_reads;
    }
    nr_ptx_emit(p, "$L%d:", end);
    p->bulk_reads = after;
    return true;
}

/* Region 0 computes the condition; the results and region 1's arguments
 * share registers, set before the exit test. */
static bool op_while(NrPtx *p, NrOpId op, int depth) {
    NrOp *o = O(p, op);
    if (o->nregions != 2) {
        nr_ptx_error(p, "malformed 'while'");
        return false;
    }
    NrBlock *before = nr_block(p->f, o->regions[0]), *after = nr_block(p->f, o->regions[1]);
    if (before->nargs != o->nopnds || after->nargs != o->nresults) {
        nr_ptx_error(p, "malformed 'while'");
        return false;
    }
    def_regs(p, before->args, before->nargs);
    def_regs(p, o->results, o->nresults);
    for (int i = 0; i < o->nresults; i++) {
        NrPtxVal *r = nr_ptx_val(p, o->results[i]);
        nr_ptx_set(p, after->args[i], r->e, r->n);
    }
    copy_vals(p, before->args, o->opnds, o->nopnds);
    int top = nr_ptx_label(p), end = nr_ptx_label(p);
    bool stores = stores_by_tma(p->f, o->regions[0], 0) || stores_by_tma(p->f, o->regions[1], 0);
    p->bulk_reads |= stores;
    nr_ptx_emit(p, "$L%d:", top);
    NrOpId cond = emit_block(p, o->regions[0], depth + 1);
    bool reads = p->bulk_reads; /* what the exit leaves */
    if (!check_term(p, cond, NR_OP_CONDITION, o->nresults + 1)) return false;
    NrPv c = nr_ptx_val(p, O(p, cond)->opnds[0])->e[0];
    if (c.r) c = nr_pb_mov(p, c); /* the copy below may not clobber it */
    copy_vals(p, o->results, O(p, cond)->opnds + 1, o->nresults);
    if (c.r) nr_ptx_emit(p, "@!%s bra.uni $L%d;", nr_ptx_reg(p, c.r), end);
    else if (!c.c) nr_ptx_emit(p, "bra.uni $L%d;", end);
    NrOpId y = emit_block(p, o->regions[1], depth + 1);
    if (!check_term(p, y, NR_OP_YIELD, o->nopnds)) return false;
    if (y) copy_vals(p, before->args, O(p, y)->opnds, o->nopnds);
    nr_ptx_emit(p, "bra.uni $L%d;", top);
    nr_ptx_emit(p, "$L%d:", end);
    p->bulk_reads = reads || stores;
    return true;
}

/* --- dispatch ------------------------------------------------------------------------------------------ */
static const OpFn op_table[NR_OP_COUNT] = {
    [NR_OP_CONST] = nr_ptx_op_const,
    [NR_OP_ARANGE] = op_arange,
    [NR_OP_SPLAT] = op_splat,
    [NR_OP_PROGRAM_ID] = op_program_id,
    [NR_OP_NUM_PROGRAMS] = op_num_programs,
    [NR_OP_ADD] = nr_ptx_op_elem,
    [NR_OP_SUB] = nr_ptx_op_elem,
    [NR_OP_MUL] = nr_ptx_op_elem,
    [NR_OP_DIV] = nr_ptx_op_elem,
    [NR_OP_DIV_RN] = nr_ptx_op_elem,
    [NR_OP_REM] = nr_ptx_op_elem,
    [NR_OP_NEG] = nr_ptx_op_elem,
    [NR_OP_ABS] = nr_ptx_op_elem,
    [NR_OP_AND] = nr_ptx_op_elem,
    [NR_OP_OR] = nr_ptx_op_elem,
    [NR_OP_XOR] = nr_ptx_op_elem,
    [NR_OP_SHL] = nr_ptx_op_elem,
    [NR_OP_SHR] = nr_ptx_op_elem,
    [NR_OP_MAX] = nr_ptx_op_elem,
    [NR_OP_MIN] = nr_ptx_op_elem,
    [NR_OP_UMULHI] = nr_ptx_op_elem,
    [NR_OP_FMA] = nr_ptx_op_elem,
    [NR_OP_EXP] = nr_ptx_op_elem,
    [NR_OP_EXP2] = nr_ptx_op_elem,
    [NR_OP_LOG] = nr_ptx_op_elem,
    [NR_OP_LOG2] = nr_ptx_op_elem,
    [NR_OP_SQRT] = nr_ptx_op_elem,
    [NR_OP_SQRT_RN] = nr_ptx_op_elem,
    [NR_OP_RSQRT] = nr_ptx_op_elem,
    [NR_OP_SIN] = nr_ptx_op_elem,
    [NR_OP_COS] = nr_ptx_op_elem,
    [NR_OP_FLOOR] = nr_ptx_op_elem,
    [NR_OP_CEIL] = nr_ptx_op_elem,
    [NR_OP_ERF] = nr_ptx_op_elem,
    [NR_OP_MATH] = nr_ptx_op_elem,
    [NR_OP_IMATH] = nr_ptx_op_elem,
    [NR_OP_INLINE_ASM] = nr_ptx_op_inline_asm,
    [NR_OP_CMP] = nr_ptx_op_elem,
    [NR_OP_SELECT] = nr_ptx_op_elem,
    [NR_OP_CAST] = nr_ptx_op_elem,
    [NR_OP_BITCAST] = nr_ptx_op_elem,
    [NR_OP_PTRTOINT] = nr_ptx_op_elem,
    [NR_OP_INTTOPTR] = nr_ptx_op_elem,
    [NR_OP_ADDPTR] = nr_ptx_op_elem,
    [NR_OP_LOAD] = nr_ptx_op_load,
    [NR_OP_STORE] = nr_ptx_op_store,
    [NR_OP_ATOMIC_RMW] = nr_ptx_op_atomic_rmw,
    [NR_OP_ATOMIC_CAS] = nr_ptx_op_atomic_cas,
    [NR_OP_BROADCAST] = op_shape,
    [NR_OP_EXPAND_DIMS] = op_shape,
    [NR_OP_RESHAPE] = op_shape,
    [NR_OP_TRANS] = op_shape,
    [NR_OP_REDUCE] = nr_ptx_op_reduce,
    [NR_OP_ARGREDUCE] = nr_ptx_op_argreduce,
    [NR_OP_GATHER] = nr_ptx_op_gather,
    [NR_OP_HISTOGRAM] = nr_ptx_op_histogram,
    [NR_OP_DOT] = nr_ptx_op_dot_any,
    [NR_OP_CALL] = op_call,
    [NR_OP_PRINT] = nr_ptx_op_print,
    [NR_OP_ASSERT] = nr_ptx_op_assert,
    [NR_OP_BARRIER] = op_barrier,
    [NR_OP_HINT] = op_hint,
    [NR_OP_ASSUME] = op_nothing,
    [NR_OP_CONVERT_LAYOUT] = nr_ptx_op_convert_layout,
    [NR_OP_LOCAL_ALLOC] = nr_ptx_op_local_alloc,
    [NR_OP_LOCAL_LOAD] = nr_ptx_op_local_load,
    [NR_OP_LOCAL_STORE] = nr_ptx_op_local_store,
    [NR_OP_MEMDESC_INDEX] = nr_ptx_op_memdesc_index,
    [NR_OP_MEMDESC_TRANS] = nr_ptx_op_memdesc_trans,
    [NR_OP_ASYNC_COPY] = nr_ptx_op_async_copy,
    [NR_OP_ASYNC_COMMIT_GROUP] = nr_ptx_op_async_commit,
    [NR_OP_ASYNC_WAIT] = nr_ptx_op_async_wait,
    [NR_OP_WARP_GROUP_DOT] = nr_ptx_op_warp_group_dot,
    [NR_OP_WARP_GROUP_DOT_WAIT] = nr_ptx_op_warp_group_dot_wait,
    [NR_OP_MBARRIER_INIT] = nr_ptx_op_mbarrier_init,
    [NR_OP_MBARRIER_EXPECT] = nr_ptx_op_mbarrier_expect,
    [NR_OP_MBARRIER_WAIT] = nr_ptx_op_mbarrier_wait,
    [NR_OP_MBARRIER_ARRIVE] = nr_ptx_op_mbarrier_arrive,
    [NR_OP_TMA_LOAD] = nr_ptx_op_tma_load,
    [NR_OP_TENSORMAP] = nr_ptx_op_tensormap,
    [NR_OP_WARPGROUP_ID] = op_warpgroup_id,
    [NR_OP_TMA_STORE] = nr_ptx_op_tma_store,
    [NR_OP_MBARRIER_INVAL] = nr_ptx_op_mbarrier_inval,
};

/* --- demanded elements ------------------------------------------------------------------------------ */
/* What op reads of its operands, given what is read of its results.  Ops
 * that are not modelled read every element. */
static void demand_op(NrPtx *p, NrOpId op) {
    const NrOp *o = O(p, op);
    NrOpcode opc = (NrOpcode)o->opc;
    if (opc > NR_OP_INVALID && opc < NR_OP_COUNT && op_table[opc] == nr_ptx_op_elem && o->nresults == 1) {
        nr_ptx_elem_demand(p, op, p->skip);
    } else if ((opc == NR_OP_LOAD || opc == NR_OP_STORE) && o->nopnds >= 1) {
        nr_ptx_mem_demand(p, op, p->skip);
    } else if (opc == NR_OP_ASYNC_COPY && o->nopnds == 4) {
        nr_ptx_async_copy_demand(p, op, p->skip);
    } else {
        for (int i = 0; i < o->nopnds; i++) p->skip[o->opnds[i]] = 0;
    }
}

/* Every use of a value comes after its definition, in its block or in the
 * regions of later ops: a walk from the end, regions first, sees all the
 * readers of a value before its definition. */
static void demand_block(NrPtx *p, NrBlockId b, int depth) {
    if (depth > 200) return; /* emit_block reports it */
    for (NrOpId o = nr_block(p->f, b)->last; o; o = O(p, o)->prev) {
        for (int r = O(p, o)->nregions - 1; r >= 0; r--) demand_block(p, O(p, o)->regions[r], depth + 1);
        demand_op(p, o);
    }
}

static void demand_analysis(NrPtx *p) {
    p->skip = nr_alloc(p->a, sizeof(uint32_t) * (size_t)(p->f->nvals + 1));
    for (int v = 0; v <= p->f->nvals; v++) p->skip[v] = ~0u; /* unread: element 0 only */
    demand_block(p, p->f->body, 0);
}

/* Emits the ops of block b; returns its yield/condition (not emitted), or
 * NR_NONE. */
static NrOpId emit_block(NrPtx *p, NrBlockId b, int depth) {
    if (depth > 200) {
        nr_ptx_error(p, "regions nest deeper than 200");
        return NR_NONE;
    }
    NR_FOR_OPS(p->f, b, o) {
        NrOpcode opc = (NrOpcode)O(p, o)->opc;
        p->op = o;
        switch (opc) {
        case NR_OP_YIELD:
        case NR_OP_CONDITION: return o;
        case NR_OP_RETURN:
            if (O(p, o)->nopnds && !p->is_func) nr_ptx_error(p, "a kernel returns no values");
            if (p->is_func) { /* into the return array nr_ret */
                int off = 0;
                for (int i = 0; i < O(p, o)->nopnds; i++) {
                    NrPtxVal *x = nr_ptx_val(p, opd(p, o, i));
                    for (int j = 0; j < x->n; j++)
                        abi_store(p, "nr_ret", abi_place(&off, kind_class((NrPk)x->e[j].k)), x->e[j]);
                }
            }
            nr_ptx_bulk_wait(p); /* the buffer lives until the program ends */
            /* The body's last return is the function's end. */
            if (b != p->f->body || O(p, o)->next) nr_ptx_emit(p, "ret;");
            return o;
        case NR_OP_FOR:
            p->loops++;
            op_for(p, o, depth);
            p->loops--;
            break;
        case NR_OP_IF: op_if(p, o, depth); break;
        case NR_OP_WARP_SPECIALIZE: op_warp_specialize(p, o, depth); break;
        case NR_OP_WHILE:
            p->loops++;
            op_while(p, o, depth);
            p->loops--;
            break;
        default:
            if (opc <= NR_OP_INVALID || opc >= NR_OP_COUNT || !op_table[opc]) {
                nr_ptx_error(p, "'%s' cannot be emitted as PTX",
                             opc > NR_OP_INVALID && opc < NR_OP_COUNT ? nr_op_info[opc].name : "invalid op");
                break;
            }
            if (op_table[opc] == nr_ptx_op_elem) {
                NrOpId last = nr_ptx_elem_run(p, o);
                if (last) {
                    o = last;
                    break;
                }
            }
            op_table[opc](p, o);
            break;
        }
        /* Any result an emitter left undefined (after an error) reads as zero. */
        for (int i = 0; i < O(p, o)->nresults; i++)
            if (!p->vals[O(p, o)->results[i]].e) {
                if (!p->failed) nr_ptx_error(p, "'%s' left a result undefined", nr_op_info[opc].name);
                nr_ptx_val(p, O(p, o)->results[i]);
            }
    }
    return NR_NONE;
}

/* --- the kernel ------------------------------------------------------------------------------------------ */
/* .param type and ld.param type of a kernel parameter. */
static const char *param_type(const NrType *t) {
    if (t->ptr) return ".u64";
    switch ((NrDtype)t->dtype) {
    case NR_DT_I1:
    case NR_DT_U8:
    case NR_DT_F8E4NV:
    case NR_DT_F8E5: return ".u8";
    case NR_DT_I8: return ".s8";
    case NR_DT_I16: return ".s16";
    case NR_DT_U16: return ".u16";
    case NR_DT_F16:
    case NR_DT_BF16: return ".b16";
    case NR_DT_I32: return ".s32";
    case NR_DT_U32: return ".u32";
    case NR_DT_F32: return ".f32";
    case NR_DT_I64: return ".s64";
    case NR_DT_U64: return ".u64";
    case NR_DT_F64: return ".f64";
    default: return ".b32";
    }
}

static bool ptx_ident(const char *s) {
    if (!s || !*s) return false;
    bool lead = (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z');
    if (!lead && !((s[0] == '_' || s[0] == '$') && s[1])) return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '$'))
            return false;
    return true;
}

/* A function's parameters, .param nr_aK, one per element register (a
 * block: each thread's registers of its layout), loaded at its start; and
 * its return array nr_ret (see op_call). */
static void func_params(NrPtx *p, NrPtxBuf *decl, NrPtxBuf *rets) {
    NrBlock *body = nr_block(p->f, p->f->body);
    int k = 0;
    for (int i = 0; i < body->nargs; i++) {
        NrPtxVal *x = nr_ptx_def(p, body->args[i]);
        for (int j = 0; j < x->n; j++, k++) {
            char pn[32];
            snprintf(pn, sizeof pn, "nr_a%d", k);
            buf_add(p->a, decl, "%s.param %s %s", k ? ", " : "", abi_type[kind_class((NrPk)x->e[j].k)], pn);
            abi_load(p, pn, 0, x->e[j]);
        }
    }
    int size = 0;
    for (int i = 0; i < p->f->nrtypes; i++) {
        int lay = nr_ptx_lay(p, p->f->rtypes[i]);
        int n = lay >= 0 ? 1 << p->lays[lay].nreg : 1;
        NrPk kind = nr_ptx_type_kind(p->m, p->f->rtypes[i]);
        for (int j = 0; j < n; j++) abi_place(&size, kind_class(kind));
    }
    if (size) buf_add(p->a, rets, ".param .align 8 .b8 nr_ret[%d]", size);
}

/* The tensor maps the kernel's tensormap ops name, one parameter each after
 * the arguments (NrPtxInfo.tmaps), in the order of their arguments. */
static void collect_tmaps(NrFunc *f, NrOpId op, void *ctx) {
    NrPtx *p = ctx;
    if (f->ops[op].opc != NR_OP_TENSORMAP) return;
    NrValId d = f->ops[op].opnds[0];
    int arg = f->vals[d].index;
    for (int j = 0; j < p->ntmaps; j++)
        if (p->tmaps[j].arg == arg) return;
    if (p->ntmaps == NR_MAX_TMAPS) {
        nr_ptx_error(p, "a kernel takes at most %d tensor maps", NR_MAX_TMAPS);
        return;
    }
    int j = p->ntmaps++;
    while (j > 0 && p->tmaps[j - 1].arg > arg) {
        p->tmaps[j] = p->tmaps[j - 1];
        j--;
    }
    memset(&p->tmaps[j], 0, sizeof p->tmaps[j]);
    p->tmaps[j].arg = arg;
    p->tmaps[j].rank = f->params[arg].tensordesc;
    p->tmaps[j].dtype = nr_type(p->m, f->vals[d].type)->dtype;
    p->tmaps[j].nan_fill = strcmp(nr_op_str(f, op, NR_A_NAN, ""), "fill") == 0;
}

static void load_params(NrPtx *p, NrPtxBuf *decl) {
    NrBlock *body = nr_block(p->f, p->f->body);
    nr_walk(p->f, collect_tmaps, p);
    for (int i = 0; i < body->nargs; i++) {
        NrValId v = body->args[i];
        const NrType *t = nr_type(p->m, nr_val_type(p->f, v));
        const char *pt = param_type(t);
        buf_add(p->a, decl, "%s  .param %s %s_param_%d", i ? ",\n" : "", pt, p->f->name, i);
        if (t->rank != 0) {
            nr_ptx_error(p, "kernel parameter %d is a block; parameters must be scalars or pointers", i);
            continue;
        }
        NrPtxVal *x = nr_ptx_def(p, v);
        NrPv r = x->e[0];
        if (r.k == NR_PK_P) {
            NrPv b = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
            nr_ptx_emit(p, "ld.param.u8 %s, [%s_param_%d];", nr_ptx_reg(p, b.r), p->f->name, i);
            x->e[0] = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_NE, NR_PT_B32, b, nr_pv_i32(0)));
        } else if (!t->ptr && nr_dt_is_fp8((NrDtype)t->dtype)) {
            NrPv b = {NR_PK_I32, nr_ptx_newreg(p, NR_PK_I32), 0};
            nr_ptx_emit(p, "ld.param.u8 %s, [%s_param_%d];", nr_ptx_reg(p, b.r), p->f->name, i);
            nr_ptx_emit(p, "cvt.u16.u32 %s, %s;", nr_ptx_reg(p, r.r), nr_ptx_reg(p, b.r));
        } else {
            nr_ptx_emit(p, "ld.param%s %s, [%s_param_%d];", pt, nr_ptx_reg(p, r.r), p->f->name, i);
        }
    }
    for (int j = 0; j < p->ntmaps; j++)
        buf_add(p->a, decl, "%s  .param .align 64 .b8 %s_tmap_%d[128]", body->nargs || j ? ",\n" : "", p->f->name, j);
}

static const char *target_name(int sm, bool sm_a) {
    switch (sm) {
    case 80: return "sm_80";
    case 86: return "sm_86";
    case 89: return "sm_89";
    case 90: return sm_a ? "sm_90a" : "sm_90";
    default: return NULL;
    }
}

/* The register declarations and body of a finished function, appended to
 * out (which grows in arena a). */
static void function_body(NrPtx *p, NrArena *a, NrPtxBuf *out) {
    for (int c = NR_RC_P; c <= NR_RC_D; c++)
        if (p->nregs[c]) buf_add(a, out, "  .reg %s %s<%d>;\n", class_type[c], class_prefix[c], p->nregs[c] + 1);
    if (p->local_bytes) buf_add(a, out, "  .local .align 8 .b8 nr_local[%lld];\n", (long long)p->local_bytes);
    buf_put(a, out, "\n", 1);
    buf_append(a, out, &p->pro);
    buf_append(a, out, &p->body);
    buf_put(a, out, "  ret;\n}\n", 9);
}

/* The text of a finished emission, in the module's arena (everything else
 * the emission made is in p->a, its own): the kernel p, after the noinline
 * functions (funcs: their .func texts, callees first). */
static char *assemble(NrPtx *p, NrPtxBuf *params, const NrPtxBuf *funcs) {
    NrArena *a = p->m->arena;
    NrPtxBuf out = {0};
    /* the whole text at once: the header, declarations and names are short */
    buf_reserve(a, &out, 4096 + 2 * strlen(p->f->name) + p->glob.n + funcs->n + params->n + buf_len(&p->pro) +
                                buf_len(&p->body));
    buf_add(a, &out,
            "//\n// Generated by Nereid for %s: kernel %s, %d warps, %lld bytes of dynamic shared memory\n//\n\n",
            target_name(p->sm, p->sm_a), p->f->name, p->num_warps + p->ws_warps, (long long)p->smem_bytes);
    int ver = p->ptx_version > 80 ? p->ptx_version : 80;
    buf_add(a, &out, ".version %d.%d\n.target %s\n.address_size 64\n\n", ver / 10, ver % 10,
            target_name(p->sm, p->sm_a));
    if (p->uses_vprintf)
        buf_add(a, &out, ".extern .func (.param .b32 nr_rv) vprintf(.param .b64 nr_fmt, .param .b64 nr_args);\n");
    if (p->uses_assert)
        buf_add(a, &out,
                ".extern .func __assertfail(.param .b64 nr_msg, .param .b64 nr_file, .param .b32 nr_line, "
                ".param .b64 nr_func, .param .b64 nr_csize);\n");
    if (p->glob.n) buf_put(a, &out, p->glob.s, p->glob.n);
    if (p->smem_bytes > 0)
        buf_add(a, &out, ".extern .shared .align %d .b8 nr_smem[];\n", p->smem_align > 16 ? p->smem_align : 16);
    if (funcs->n) buf_put(a, &out, funcs->s, funcs->n);
    buf_add(a, &out, "\n.visible .entry %s(\n%.*s\n)\n", p->f->name, (int)params->n, params->s ? params->s : "");
    /* .maxnreg, not the JIT's register limit: ptxas ignores -maxrregcount for a kernel with .reqntid */
    if (p->maxnreg) buf_add(a, &out, ".maxnreg %d\n", p->maxnreg);
    buf_add(a, &out, ".reqntid %d, 1, 1\n{\n", 32 * (p->num_warps + p->ws_warps));
    function_body(p, a, &out);
    return out.s;
}

static void init_ctx(NrPtx *p, NrFunc *f, const NrGpuOptions *opt, NrDiags *d, NrArena *a) {
    memset(p, 0, sizeof *p);
    p->a = a;
    p->f = f;
    p->m = f->mod;
    p->d = d;
    p->sm = opt && opt->sm ? opt->sm : (f->mod->sm ? f->mod->sm : 80);
    p->sm_a = opt ? opt->sm_a : f->mod->sm_a;
    p->num_warps = f->mod->num_warps ? f->mod->num_warps : (opt && opt->num_warps ? opt->num_warps : 4);
    p->maxnreg = opt && opt->maxnreg > 0 ? opt->maxnreg : 0;
    p->fp_fusion = !(opt && opt->no_fp_fusion);
    p->vals = nr_alloc(p->a, sizeof(NrPtxVal) * (size_t)(f->nvals + 1));
    p->body.chunked = p->pro.chunked = true;
    p->out = &p->body;
}

/* A kernel with a warp_specialize runs one more warpgroup, the producer:
 * every warp runs the ops before it (the producer's warps as aliases of
 * warps 0-3: tid modulo 32 * num_warps), then the producer runs its
 * region and exits.  A register cap at entry lets setmaxnreg move
 * registers from the producer to the others: the most the block may have
 * per thread, unless the options set a lower one. */
static void ws_setup(NrPtx *p) {
    NrOpId ws = NR_NONE;
    NR_FOR_OPS(p->f, p->f->body, o) {
        if (O(p, o)->opc == NR_OP_WARP_SPECIALIZE) ws = o;
    }
    if (!ws) return;
    p->ws_warps = 4;
    p->tid = nr_ptx_newreg(p, NR_PK_I32);
    nr_ptx_emit(p, "and.b32 %s, %s, %d;", nr_ptx_reg(p, p->tid), nr_ptx_reg(p, p->tid_raw), 32 * p->num_warps - 1);
    if (nr_op_int(p->f, ws, NR_A_CONSUMER_REGS, 0) > 0) {
        int cap = 65536 / (32 * (p->num_warps + p->ws_warps)) / 8 * 8;
        if (cap > 255) cap = 255;
        if (!p->maxnreg || p->maxnreg > cap) p->maxnreg = cap;
    }
}

/* The split: the producer warpgroup (threads from 32 * num_warps on)
 * lowers its registers and leaves but for its first warp, which runs the
 * region and exits; the others raise theirs and go on, their barriers
 * counting them alone.  Each side is one branch, as setmaxnreg needs. */
static bool op_warp_specialize(NrPtx *p, NrOpId op, int depth) {
    const NrOp *o = O(p, op);
    if (!p->ws_warps || p->is_func || o->nregions != 1) {
        nr_ptx_error(p, "warp_specialize: only in a kernel's own body");
        return false;
    }
    if (!p->sm_a) {
        nr_ptx_error(p, "warp_specialize needs sm_90a (setmaxnreg), not sm_%d", p->sm);
        return false;
    }
    int nc = 32 * p->num_warps, cons = nr_ptx_label(p);
    int64_t regs = nr_op_int(p->f, op, NR_A_REGS, 0), cregs = nr_op_int(p->f, op, NR_A_CONSUMER_REGS, 0);
    NrPv raw = {NR_PK_I32, p->tid_raw, 0};
    NrPv is_cons = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_LT, NR_PT_U32, raw, nr_pv_i32(nc)));
    nr_ptx_emit(p, "@%s bra $L%d;", nr_ptx_reg(p, is_cons.r), cons);
    if (regs) nr_ptx_emit(p, "setmaxnreg.dec.sync.aligned.u32 %lld;", (long long)regs);
    NrPv rest = nr_ptx_inreg(p, nr_pb_setp(p, NR_PC_GE, NR_PT_U32, raw, nr_pv_i32(nc + 32)));
    nr_ptx_emit(p, "@%s ret;", nr_ptx_reg(p, rest.r));
    bool reads = p->bulk_reads; /* the consumers' own, kept across the producer's branch */
    NrOpId term = emit_block(p, o->regions[0], depth + 1);
    if (!check_term(p, term, NR_OP_YIELD, 0)) return false;
    nr_ptx_bulk_wait(p);
    p->bulk_reads = reads;
    nr_ptx_emit(p, "ret;");
    nr_ptx_emit(p, "$L%d:", cons);
    if (cregs) nr_ptx_emit(p, "setmaxnreg.inc.sync.aligned.u32 %lld;", (long long)cregs);
    p->bar_threads = nc;
    return true;
}

/* Emits p->f: its prologue (thread coordinates, parameters) and body. */
static void emit_function(NrPtx *p, NrPtxBuf *params, NrPtxBuf *rets) {
    p->ax = nr_axis_analysis_in(p->f, p->a);
    if (!p->planned) plan_smem(p);
    demand_analysis(p);
    p->out = &p->pro;
    p->tid = p->tid_raw = nr_ptx_newreg(p, NR_PK_I32);
    p->lane = nr_ptx_newreg(p, NR_PK_I32);
    p->warp = nr_ptx_newreg(p, NR_PK_I32);
    nr_ptx_emit(p, "mov.u32 %s, %%tid.x;", nr_ptx_reg(p, p->tid));
    if (!p->is_func) ws_setup(p);
    nr_ptx_emit(p, "and.b32 %s, %s, 31;", nr_ptx_reg(p, p->lane), nr_ptx_reg(p, p->tid));
    nr_ptx_emit(p, "shr.u32 %s, %s, 5;", nr_ptx_reg(p, p->warp), nr_ptx_reg(p, p->tid));
    if (p->is_func) func_params(p, params, rets);
    else load_params(p, params);
    p->out = &p->body;
    /* A function's shared memory is its own, but the previous call of it
     * may still be reading what this call is about to write. */
    if (p->is_func && p->smem_bytes > 0) nr_ptx_bar(p);
    NrOpId term = emit_block(p, p->f->body, 0);
    if (!term || O(p, term)->opc != NR_OP_RETURN) nr_ptx_error(p, "the body of @%s does not end in 'return'", p->f->name);
}

/* The noinline functions f calls, transitively, callees before callers. */
typedef struct Callees {
    NrModule *m;
    NrFunc **order;
    int n, cap;
    uint8_t *state;  /* per module function: 0 new, 1 on the path, 2 done */
    int depth;
    bool cycle;
} Callees;

static void visit_func(Callees *c, NrFunc *f);

static void visit_call(NrFunc *f, NrOpId op, void *ctx) {
    Callees *c = ctx;
    if (f->ops[op].opc != NR_OP_CALL) return;
    NrFunc *g = nr_module_find_func(c->m, nr_op_str(f, op, NR_A_CALLEE, ""));
    if (g && !g->is_kernel) visit_func(c, g);
}

static int func_index(const NrModule *m, const NrFunc *f) {
    for (int i = 0; i < m->nfuncs; i++)
        if (m->funcs[i] == f) return i;
    return -1;
}

static void visit_func(Callees *c, NrFunc *f) {
    int i = func_index(c->m, f);
    if (i < 0 || c->state[i] == 2) return;
    if (c->state[i] == 1 || c->depth > 64) {
        c->cycle = true;
        return;
    }
    c->state[i] = 1;
    c->depth++;
    nr_walk(f, visit_call, c);
    c->depth--;
    c->state[i] = 2;
    *NR_PUSH(c->m->arena, c->order, c->n, c->cap) = f;
}

/* Shared memory of the kernel and its functions: each function's region
 * starts after the largest end of its callers' regions, so that a call
 * never overwrites what a caller still holds. */
static int64_t plan_call_smem(NrPtx *k, Callees *c, const int64_t *own) {
    NrModule *m = k->m;
    int nf = m->nfuncs;
    int64_t *base = nr_alloc(k->a, sizeof(int64_t) * (size_t)(nf + 1));
    for (int i = 0; i < nf; i++) base[i] = 0;
    int64_t total = own[func_index(m, k->f)];
    /* callers before callees: the kernel, then the post order reversed (every
     * function a function calls comes earlier in the post order) */
    for (int j = c->n; j >= 0; j--) {
        NrFunc *g = j == c->n ? k->f : c->order[j];
        int gi = func_index(m, g);
        int64_t end = (base[gi] + own[gi] + 15) & ~(int64_t)15;
        for (NrOpId op = 1; op < g->nops; op++) {
            if (g->ops[op].dead || g->ops[op].opc != NR_OP_CALL) continue;
            NrFunc *h = nr_module_find_func(m, nr_op_str(g, op, NR_A_CALLEE, ""));
            int hi = h ? func_index(m, h) : -1;
            if (hi >= 0 && base[hi] < end) base[hi] = end;
        }
    }
    for (int j = 0; j < c->n; j++) {
        int gi = func_index(m, c->order[j]);
        if (base[gi] + own[gi] > total) total = base[gi] + own[gi];
    }
    k->smem_bases = base;
    return total;
}

/* nr_emit_ptx_info, with everything but the text in arena a. */
static char *emit_ptx(NrFunc *f, const NrGpuOptions *opt, NrDiags *d, NrPtxInfo *info, NrArena *a) {
    NrPtx ctx, *p = &ctx;
    init_ctx(p, f, opt, d, a);
    if (!target_name(p->sm, p->sm_a) || (p->sm_a && p->sm != 90)) {
        nr_error(d, f->loc, "unsupported target sm_%d%s (sm_80, sm_86, sm_89, sm_90 and sm_90a are)", p->sm,
                 p->sm_a ? "a" : "");
        return NULL;
    }
    if (p->num_warps < 1 || p->num_warps > 32 || !nr_is_pow2(p->num_warps)) {
        nr_error(d, f->loc, "num_warps must be a power of two from 1 to 32, got %d", p->num_warps);
        return NULL;
    }
    if (opt && opt->num_warps && f->mod->num_warps && opt->num_warps != f->mod->num_warps) {
        nr_error(d, f->loc, "the module was laid out for %d warps, not %d", f->mod->num_warps, opt->num_warps);
        return NULL;
    }
    if (!ptx_ident(f->name)) {
        nr_error(d, f->loc, "kernel name '%s' is not a valid PTX identifier", f->name ? f->name : "");
        return NULL;
    }
    /* the noinline functions, callees first */
    NrModule *m = f->mod;
    Callees calls = {m, NULL, 0, 0, nr_alloc(p->a, (size_t)m->nfuncs + 1), 0, false};
    memset(calls.state, 0, (size_t)m->nfuncs + 1);
    nr_walk(f, visit_call, &calls);
    if (calls.cycle) {
        nr_error(d, f->loc, "the functions @%s calls call each other recursively", f->name);
        return NULL;
    }
    /* every function's shared-memory plan, made once (emit_function reuses it) */
    int64_t *own = nr_alloc(p->a, sizeof(int64_t) * (size_t)(m->nfuncs + 1));
    int64_t *scratch = nr_alloc(p->a, sizeof(int64_t) * (size_t)(m->nfuncs + 1));
    for (int i = 0; i < m->nfuncs; i++) {
        NrPtx tmp;
        init_ctx(&tmp, m->funcs[i], opt, d, a);
        plan_smem(&tmp);
        own[i] = tmp.smem_bytes;
        scratch[i] = tmp.scratch_base;
    }
    int64_t total = plan_call_smem(p, &calls, own);
    NrPtxBuf funcs = {0};
    for (int j = 0; j < calls.n; j++) {
        NrFunc *g = calls.order[j];
        if (!ptx_ident(g->name)) {
            nr_error(d, g->loc, "function name '%s' is not a valid PTX identifier", g->name ? g->name : "");
            return NULL;
        }
        NrPtx fc, *q = &fc;
        init_ctx(q, g, opt, d, a);
        q->is_func = true;
        q->planned = true;
        q->smem_bytes = own[func_index(m, g)];
        q->scratch_base = scratch[func_index(m, g)];
        q->smem_base = p->smem_bases[func_index(m, g)];
        q->smem_bases = p->smem_bases;
        /* state the whole module shares: global strings, constant tables */
        q->glob = p->glob;
        q->tables = p->tables, q->ntables = p->ntables, q->captables = p->captables;
        q->nstrings = p->nstrings;
        NrPtxBuf params = {0}, rets = {0};
        emit_function(q, &params, &rets);
        p->glob = q->glob;
        p->tables = q->tables, p->ntables = q->ntables, p->captables = q->captables;
        p->nstrings = q->nstrings;
        p->uses_vprintf |= q->uses_vprintf;
        p->uses_assert |= q->uses_assert;
        if (q->ptx_version > p->ptx_version) p->ptx_version = q->ptx_version;
        if (q->smem_align > p->smem_align) p->smem_align = q->smem_align;
        if (q->failed) p->failed = true;
        if (rets.n) buf_add(p->a, &funcs, "\n.func (%.*s) %s(%.*s)\n{\n", (int)rets.n, rets.s, g->name,
                            (int)params.n, params.s ? params.s : "");
        else buf_add(p->a, &funcs, "\n.func %s(%.*s)\n{\n", g->name, (int)params.n, params.s ? params.s : "");
        function_body(q, p->a, &funcs);
    }
    NrPtxBuf params = {0};
    int ki = func_index(m, f);
    if (ki >= 0) {
        p->planned = true;
        p->smem_bytes = own[ki];
        p->scratch_base = scratch[ki];
    }
    emit_function(p, &params, NULL);
    if (p->failed || nr_has_errors(d)) return NULL;
    p->smem_bytes = total;
    for (int j = 0; j < p->ntmaps; j++)
        if (!p->tmap_seen[j]) {
            nr_ptx_error(p, "the tensor map of argument %d is read by no tma_load", p->tmaps[j].arg);
            return NULL;
        }
    if (info) {
        memset(info, 0, sizeof *info);
        info->shared_bytes = p->smem_bytes;
        info->num_warps = p->num_warps + p->ws_warps;
        info->threads = 32 * info->num_warps;
        info->ntmaps = p->ntmaps;
        memcpy(info->tmaps, p->tmaps, sizeof p->tmaps);
    }
    return assemble(p, &params, &funcs);
}

char *nr_emit_ptx_info(NrFunc *f, const NrGpuOptions *opt, NrDiags *d, NrPtxInfo *info) {
    /* The registers, values, layouts and text pieces of an emission are dead
     * once the text is assembled: they live in an arena of their own. */
    NrArena scratch;
    nr_arena_init(&scratch);
    char *ptx = emit_ptx(f, opt, d, info, &scratch);
    nr_arena_free(&scratch);
    return ptx;
}

char *nr_emit_ptx(NrFunc *f, const NrGpuOptions *opt, NrDiags *d) { return nr_emit_ptx_info(f, opt, d, NULL); }

int64_t nr_ptx_scratch_bytes(NrFunc *f, NrOpId op) {
    NrArena a;
    nr_arena_init(&a);
    int nw = f->mod->num_warps ? f->mod->num_warps : 4;
    int64_t n = nr_ptx_op_scratch(f->mod, f, op, nw, &a);
    nr_arena_free(&a);
    return n;
}

/* --- evaluation mode ------------------------------------------------------------------------------------ */
NrPtx *nr_ptx_eval_new(NrArena *a, int sm) {
    NrPtx *p = nr_alloc(a, sizeof *p);
    p->a = a;
    p->eval = true;
    p->sm = sm;
    p->num_warps = 4;
    return p;
}
