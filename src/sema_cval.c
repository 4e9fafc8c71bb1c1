/* sema_cval.c - compile-time values (NrCVal): construction, literals as
 * written in signatures and parameter defaults, Python's str(), and
 * constant folding with Python semantics.
 *
 * Python ints are arbitrary precision; Nereid's compile-time ints cover
 * [-2^63, 2^64) (the range of int64 and uint64).  Arithmetic is done in
 * 128 bits and a result outside that range is a compile error. */
#include "sema_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

NrCVal nr_cv_none(void) {
    NrCVal c;
    memset(&c, 0, sizeof c);
    c.kind = NR_CV_NONE;
    return c;
}

NrCVal nr_cv_int(int64_t i) {
    NrCVal c = nr_cv_none();
    c.kind = NR_CV_INT;
    c.i = i;
    return c;
}

NrCVal nr_cv_uint(uint64_t u) {
    NrCVal c = nr_cv_int((int64_t)u);
    c.is_unsigned = u > (uint64_t)INT64_MAX;
    return c;
}

NrCVal nr_cv_float(double f) {
    NrCVal c = nr_cv_none();
    c.kind = NR_CV_FLOAT;
    c.f = f;
    return c;
}

NrCVal nr_cv_bool(bool b) {
    NrCVal c = nr_cv_none();
    c.kind = NR_CV_BOOL;
    c.b = b;
    return c;
}

NrCVal nr_cv_str(NrArena *a, const char *s, size_t n) {
    NrCVal c = nr_cv_none();
    c.kind = NR_CV_STR;
    c.str.s = nr_strndup(a, s, n);
    c.str.len = n;
    return c;
}

NrCVal nr_cv_dtype(NrDtype dt, int ptr) {
    NrCVal c = nr_cv_none();
    c.kind = NR_CV_DTYPE;
    c.dt = dt;
    c.ptr = ptr;
    return c;
}

bool nr_cv_is_num(const NrCVal *c) {
    return c->kind == NR_CV_INT || c->kind == NR_CV_FLOAT || c->kind == NR_CV_BOOL;
}

static bool is_intlike(const NrCVal *c) { return c->kind == NR_CV_INT || c->kind == NR_CV_BOOL; }

static __int128 as_i128(const NrCVal *c) {
    if (c->kind == NR_CV_BOOL) return c->b;
    return c->is_unsigned ? (__int128)(uint64_t)c->i : (__int128)c->i;
}

double nr_cv_as_double(const NrCVal *c) {
    if (c->kind == NR_CV_FLOAT) return c->f;
    return (double)as_i128(c);
}

bool nr_cv_truthy(const NrCVal *c) {
    switch (c->kind) {
    case NR_CV_NONE: return false;
    case NR_CV_INT: return c->i != 0;
    case NR_CV_FLOAT: return c->f != 0.0;
    case NR_CV_BOOL: return c->b;
    case NR_CV_STR: return c->str.len != 0;
    case NR_CV_DTYPE: return true;
    }
    return false;
}

bool nr_cv_eq(const NrCVal *a, const NrCVal *b) {
    if (nr_cv_is_num(a) && nr_cv_is_num(b)) {
        if (is_intlike(a) && is_intlike(b)) return as_i128(a) == as_i128(b);
        return nr_cv_as_double(a) == nr_cv_as_double(b);
    }
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case NR_CV_NONE: return true;
    case NR_CV_STR: return a->str.len == b->str.len && memcmp(a->str.s, b->str.s, a->str.len) == 0;
    case NR_CV_DTYPE: return a->dt == b->dt && a->ptr == b->ptr;
    default: return false;
    }
}

NrDtype nr_cv_default_dtype(const NrCVal *c) {
    switch (c->kind) {
    case NR_CV_BOOL: return NR_DT_I1;
    case NR_CV_INT: {
        __int128 v = as_i128(c);
        if (v >= -((__int128)1 << 31) && v < ((__int128)1 << 31)) return NR_DT_I32;
        if (v >= 0 && v < ((__int128)1 << 32)) return NR_DT_U32;
        if (!c->is_unsigned) return NR_DT_I64;
        return NR_DT_U64;
    }
    case NR_CV_FLOAT: {
        double x = fabs(c->f);
        /* fp32 holds the value's magnitude without flushing or overflowing */
        if (isinf(x) || x == 0.0 || isnan(x) || (x >= 0x1p-126 && x <= 0x1.fffffep127)) return NR_DT_F32;
        return NR_DT_F64;
    }
    default: return NR_DT_INVALID;
    }
}

const char *nr_dt_name(NrArena *a, NrDtype dt, int ptr) {
    const char *s = nr_dtype_info[dt].triton;
    for (int i = 0; i < ptr; i++) s = nr_sprintf(a, "pointer<%s>", s);
    return s;
}

/* --- Python's repr of a float --------------------------------------------------------------------- */
/* The shortest decimal that reads back to x, laid out as Python does:
 * positional for exponents in [-4, 16), else scientific (1e+16, 1e-05). */
static void format_pyfloat(double x, char *out, size_t cap) {
    if (isnan(x)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(out, cap, x < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    if (prec > 17) prec = 17;
    snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
    /* buf: [-]d[.ddd]e[+-]XX */
    char digits[32];
    int nd = 0;
    const char *p = buf;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (isdigit((unsigned char)*p) && nd < 31) digits[nd++] = *p;
    digits[nd] = 0;
    int exp10 = *p == 'e' ? atoi(p + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = 0;
    size_t o = 0;
#define PUT(ch) (o + 1 < cap ? (void)(out[o++] = (ch)) : (void)0)
    if (neg) PUT('-');
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            PUT('0');
            PUT('.');
            for (int i = 0; i < -exp10 - 1; i++) PUT('0');
            for (int i = 0; i < nd; i++) PUT(digits[i]);
        } else {
            for (int i = 0; i <= exp10; i++) PUT(i < nd ? digits[i] : '0');
            PUT('.');
            if (nd > exp10 + 1)
                for (int i = exp10 + 1; i < nd; i++) PUT(digits[i]);
            else
                PUT('0');
        }
        out[o] = 0;
    } else {
        PUT(digits[0]);
        if (nd > 1) {
            PUT('.');
            for (int i = 1; i < nd; i++) PUT(digits[i]);
        }
        out[o] = 0;
        snprintf(out + o, cap - o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
#undef PUT
}

char *nr_cv_str_of(NrArena *a, const NrCVal *c) {
    char buf[64];
    switch (c->kind) {
    case NR_CV_NONE: return nr_strdup(a, "None");
    case NR_CV_BOOL: return nr_strdup(a, c->b ? "True" : "False");
    case NR_CV_INT:
        if (c->is_unsigned) return nr_sprintf(a, "%llu", (unsigned long long)(uint64_t)c->i);
        return nr_sprintf(a, "%lld", (long long)c->i);
    case NR_CV_FLOAT: format_pyfloat(c->f, buf, sizeof buf); return nr_strdup(a, buf);
    case NR_CV_STR: return nr_strndup(a, c->str.s, c->str.len);
    case NR_CV_DTYPE: { /* Triton's str(dtype): int32, uint8, fp32, bf16 */
        const char *s = nr_dt_is_float(c->dt) ? nr_dtype_info[c->dt].sig : nr_dtype_info[c->dt].triton;
        for (int i = 0; i < c->ptr; i++) s = nr_sprintf(a, "pointer<%s>", s);
        return (char *)s;
    }
    }
    return nr_strdup(a, "?");
}

/* --- literals ------------------------------------------------------------------------------------- */
static bool lit_err(const char **err, size_t *errpos, const char *msg, size_t pos) {
    *err = msg;
    *errpos = pos;
    return false;
}

static bool word_eq(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* A dtype named tl.X, triton.language.X or nereid.language.X where X is a
 * Triton name (float16) or a signature name (fp16). */
static bool parse_dtype_literal(const char *s, size_t n, NrCVal *out) {
    static const char *const prefixes[] = {"tl.", "triton.language.", "nereid.language."};
    for (size_t i = 0; i < NR_COUNTOF(prefixes); i++) {
        size_t pl = strlen(prefixes[i]);
        if (n > pl && memcmp(s, prefixes[i], pl) == 0) {
            NrDtype dt = nr_dtype_from_triton(s + pl, n - pl);
            if (!dt) dt = nr_dtype_from_sig(s + pl, n - pl);
            if (!dt) return false;
            *out = nr_cv_dtype(dt, 0);
            return true;
        }
    }
    return false;
}

static bool parse_string_literal(NrArena *a, const char *s, size_t n, NrCVal *out, const char **err,
                                 size_t *errpos) {
    char q = s[0];
    if (n < 2 || s[n - 1] != q) return lit_err(err, errpos, "unterminated string", 0);
    char *buf = nr_alloc(a, n);
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char ch = s[i];
        if (ch == q) return lit_err(err, errpos, "unexpected quote inside a string", i);
        if (ch == '\\') {
            if (i + 2 >= n) return lit_err(err, errpos, "unterminated escape in a string", i);
            char e = s[++i];
            switch (e) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '0': ch = '\0'; break;
            case '\\': case '\'': case '"': ch = e; break;
            default: return lit_err(err, errpos, "unknown escape in a string", i - 1);
            }
        }
        buf[o++] = ch;
    }
    *out = nr_cv_str(a, buf, o);
    return true;
}

/* An integer in base 10, 16 (0x), 8 (0o) or 2 (0b), with optional `_`
 * between digits, after an optional sign. */
static bool parse_int_literal(const char *s, size_t n, NrCVal *out, const char **err, size_t *errpos) {
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    int base = 10;
    if (i + 1 < n && s[i] == '0' && strchr("xXoObB", s[i + 1])) {
        char b = (char)tolower((unsigned char)s[i + 1]);
        base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
        i += 2;
    }
    size_t start = i;
    unsigned __int128 v = 0;
    bool any = false;
    for (; i < n; i++) {
        char ch = s[i];
        if (ch == '_' && any && i + 1 < n && s[i + 1] != '_') continue;
        int d = isdigit((unsigned char)ch) ? ch - '0'
                : isalpha((unsigned char)ch) ? tolower((unsigned char)ch) - 'a' + 10
                                             : 99;
        if (d >= base) return lit_err(err, errpos, "invalid digit in an integer", i);
        v = v * (unsigned)base + (unsigned)d;
        if (v > ((unsigned __int128)1 << 64)) return lit_err(err, errpos, "integer out of range", start);
        any = true;
    }
    if (!any) return lit_err(err, errpos, "expected digits", start);
    if (base == 10 && n - start > 1 && s[start] == '0') {
        for (size_t k = start; k < n; k++)
            if (s[k] != '0' && s[k] != '_') return lit_err(err, errpos, "leading zeros in a decimal integer", start);
    }
    if (neg) {
        if (v > ((unsigned __int128)1 << 63)) return lit_err(err, errpos, "integer out of range (below -2**63)", 0);
        *out = nr_cv_int((int64_t)(-(__int128)v));
    } else {
        if (v > UINT64_MAX) return lit_err(err, errpos, "integer out of range (above 2**64 - 1)", 0);
        *out = nr_cv_uint((uint64_t)v);
    }
    return true;
}

static bool parse_float_literal(const char *s, size_t n, NrCVal *out, const char **err, size_t *errpos) {
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    const char *r = s + i;
    size_t rn = n - i;
    if (word_eq(r, rn, "inf") || word_eq(r, rn, "infinity")) {
        *out = nr_cv_float(neg ? -INFINITY : INFINITY);
        return true;
    }
    if (word_eq(r, rn, "nan")) {
        *out = nr_cv_float(NAN);
        return true;
    }
    char buf[128];
    size_t o = 0;
    for (size_t k = 0; k < rn; k++) {
        char ch = r[k];
        if (ch == '_') continue;
        if (!(isdigit((unsigned char)ch) || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-'))
            return lit_err(err, errpos, "invalid character in a number", i + k);
        if (o + 1 >= sizeof buf) return lit_err(err, errpos, "number too long", 0);
        buf[o++] = ch;
    }
    buf[o] = 0;
    if (o == 0 || !(isdigit((unsigned char)buf[0]) || buf[0] == '.'))
        return lit_err(err, errpos, "expected a number", i);
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end) return lit_err(err, errpos, "malformed number", i);
    *out = nr_cv_float(neg ? -v : v);
    return true;
}

bool nr_cv_parse_literal(NrArena *a, const char *s, size_t n, NrCVal *out, const char **err, size_t *errpos) {
    *err = NULL;
    *errpos = 0;
    if (n == 0) return lit_err(err, errpos, "empty value", 0);
    if (word_eq(s, n, "None")) {
        *out = nr_cv_none();
        return true;
    }
    if (word_eq(s, n, "True") || word_eq(s, n, "False")) {
        *out = nr_cv_bool(s[0] == 'T');
        return true;
    }
    if (s[0] == '"' || s[0] == '\'') return parse_string_literal(a, s, n, out, err, errpos);
    if (isalpha((unsigned char)s[0]) && !word_eq(s, n, "inf") && !word_eq(s, n, "nan") &&
        !word_eq(s, n, "infinity")) {
        if (parse_dtype_literal(s, n, out)) return true;
        return lit_err(err, errpos, "unknown name", 0);
    }
    bool is_float = false;
    bool hex = n > 2 && (memchr(s, 'x', n) || memchr(s, 'X', n));
    for (size_t i = 0; i < n && !hex; i++)
        if (s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == 'i' || s[i] == 'n') is_float = true;
    if (is_float) return parse_float_literal(s, n, out, err, errpos);
    return parse_int_literal(s, n, out, err, errpos);
}

/* --- folding -------------------------------------------------------------------------------------- */
static const char *cv_type_name(const NrCVal *c) {
    switch (c->kind) {
    case NR_CV_NONE: return "NoneType";
    case NR_CV_INT: return "int";
    case NR_CV_FLOAT: return "float";
    case NR_CV_BOOL: return "bool";
    case NR_CV_STR: return "str";
    case NR_CV_DTYPE: return "dtype";
    }
    return "?";
}

static const char *binop_sym(int op) {
    static const char *const s[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
    return op >= 0 && op < (int)NR_COUNTOF(s) ? s[op] : "?";
}

_Noreturn static void overflow(Sema *s, NrLoc loc);

static NrCVal from_i128(Sema *s, NrLoc loc, __int128 v) {
    if (v >= INT64_MIN && v <= INT64_MAX) return nr_cv_int((int64_t)v);
    if (v > INT64_MAX && v <= (__int128)UINT64_MAX) return nr_cv_uint((uint64_t)v);
    overflow(s, loc);
}

static __int128 floordiv_i128(__int128 a, __int128 b) {
    __int128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Python's float divmod. */
static void py_fdivmod(double vx, double wx, double *fdiv, double *fmod_out) {
    double mod = fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, wx);
    }
    double floordiv;
    if (div != 0.0) {
        floordiv = floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = copysign(0.0, vx / wx);
    }
    *fdiv = floordiv;
    *fmod_out = mod;
}

_Noreturn static void overflow(Sema *s, NrLoc loc) {
    nr_sm_fail(s, loc, "integer overflow in compile-time arithmetic (constexpr ints are limited to [-2**63, 2**64))");
}

static NrCVal int_pow(Sema *s, NrLoc loc, __int128 base, __int128 e) {
    if (e == 0) return nr_cv_int(1);
    if (base == 0 || base == 1) return nr_cv_int((int64_t)base);
    if (base == -1) return nr_cv_int((e & 1) ? -1 : 1);
    if (e >= 128) overflow(s, loc);
    const __int128 lim = (__int128)1 << 64;
    __int128 r = 1;
    for (int i = 0; i < (int)e; i++) {
        r *= base;
        if (r >= lim || r < -lim) overflow(s, loc);
    }
    return from_i128(s, loc, r);
}

static NrCVal fold_int(Sema *s, NrLoc loc, int op, const NrCVal *ca, const NrCVal *cb) {
    __int128 a = as_i128(ca), b = as_i128(cb), r;
    bool both_bool = ca->kind == NR_CV_BOOL && cb->kind == NR_CV_BOOL;
    switch ((NrBinOp)op) {
    case NR_BIN_ADD: r = a + b; break;
    case NR_BIN_SUB: r = a - b; break;
    case NR_BIN_MUL:
        if (__builtin_mul_overflow(a, b, &r)) overflow(s, loc);
        break;
    case NR_BIN_DIV:
        if (b == 0) nr_sm_fail(s, loc, "division by zero in a compile-time expression");
        return nr_cv_float((double)a / (double)b);
    case NR_BIN_FLOORDIV:
        if (b == 0) nr_sm_fail(s, loc, "integer division by zero in a compile-time expression");
        r = floordiv_i128(a, b);
        break;
    case NR_BIN_MOD:
        if (b == 0) nr_sm_fail(s, loc, "integer modulo by zero in a compile-time expression");
        r = a - floordiv_i128(a, b) * b;
        break;
    case NR_BIN_POW:
        if (b < 0) {
            if (a == 0) nr_sm_fail(s, loc, "0 cannot be raised to a negative power");
            return nr_cv_float(pow((double)a, (double)b));
        }
        return int_pow(s, loc, a, b);
    case NR_BIN_LSHIFT:
        if (b < 0) nr_sm_fail(s, loc, "negative shift count in a compile-time expression");
        if (a == 0) return nr_cv_int(0);
        if (b >= 64) overflow(s, loc);
        r = a * ((__int128)1 << b);
        break;
    case NR_BIN_RSHIFT:
        if (b < 0) nr_sm_fail(s, loc, "negative shift count in a compile-time expression");
        r = b >= 100 ? (a < 0 ? -1 : 0) : a >> b;
        break;
    case NR_BIN_BITAND: r = a & b; if (both_bool) return nr_cv_bool(r != 0); break;
    case NR_BIN_BITOR: r = a | b; if (both_bool) return nr_cv_bool(r != 0); break;
    case NR_BIN_BITXOR: r = a ^ b; if (both_bool) return nr_cv_bool(r != 0); break;
    default: nr_sm_fail(s, loc, "unsupported operand types for %s: '%s' and '%s'", binop_sym(op), cv_type_name(ca),
                        cv_type_name(cb));
    }
    return from_i128(s, loc, r);
}

static NrCVal fold_float(Sema *s, NrLoc loc, int op, const NrCVal *ca, const NrCVal *cb) {
    double a = nr_cv_as_double(ca), b = nr_cv_as_double(cb), q, m;
    switch ((NrBinOp)op) {
    case NR_BIN_ADD: return nr_cv_float(a + b);
    case NR_BIN_SUB: return nr_cv_float(a - b);
    case NR_BIN_MUL: return nr_cv_float(a * b);
    case NR_BIN_DIV:
        if (b == 0.0) nr_sm_fail(s, loc, "float division by zero in a compile-time expression");
        return nr_cv_float(a / b);
    case NR_BIN_FLOORDIV:
    case NR_BIN_MOD:
        if (b == 0.0) nr_sm_fail(s, loc, "float %s by zero in a compile-time expression",
                                 op == NR_BIN_MOD ? "modulo" : "floor division");
        py_fdivmod(a, b, &q, &m);
        return nr_cv_float(op == NR_BIN_MOD ? m : q);
    case NR_BIN_POW:
        if (a == 0.0 && b < 0) nr_sm_fail(s, loc, "0.0 cannot be raised to a negative power");
        if (a < 0 && b != floor(b)) nr_sm_fail(s, loc, "a negative number raised to a fractional power is complex");
        return nr_cv_float(pow(a, b));
    default:
        nr_sm_fail(s, loc, "unsupported operand types for %s: '%s' and '%s'", binop_sym(op), cv_type_name(ca),
                   cv_type_name(cb));
    }
}

NrCVal nr_cv_binop(Sema *s, NrLoc loc, int op, const NrCVal *a, const NrCVal *b) {
    if (nr_cv_is_num(a) && nr_cv_is_num(b)) {
        if (is_intlike(a) && is_intlike(b)) return fold_int(s, loc, op, a, b);
        return fold_float(s, loc, op, a, b);
    }
    if (a->kind == NR_CV_STR && b->kind == NR_CV_STR && op == NR_BIN_ADD) {
        if (a->str.len + b->str.len > SM_MAX_STR) nr_sm_fail(s, loc, "string too long (more than %d bytes)", SM_MAX_STR);
        char *buf = nr_alloc(s->a, a->str.len + b->str.len + 1);
        memcpy(buf, a->str.s, a->str.len);
        memcpy(buf + a->str.len, b->str.s, b->str.len);
        return nr_cv_str(s->a, buf, a->str.len + b->str.len);
    }
    if (op == NR_BIN_MUL && ((a->kind == NR_CV_STR && is_intlike(b)) || (b->kind == NR_CV_STR && is_intlike(a)))) {
        const NrCVal *str = a->kind == NR_CV_STR ? a : b;
        __int128 k = as_i128(a->kind == NR_CV_STR ? b : a);
        if (k < 0) k = 0;
        if (k * (__int128)str->str.len > SM_MAX_STR) nr_sm_fail(s, loc, "string too long (more than %d bytes)", SM_MAX_STR);
        size_t len = (size_t)k * str->str.len;
        char *buf = nr_alloc(s->a, len + 1);
        for (size_t i = 0; i < (size_t)k; i++) memcpy(buf + i * str->str.len, str->str.s, str->str.len);
        return nr_cv_str(s->a, buf, len);
    }
    nr_sm_fail(s, loc, "unsupported operand types for %s: '%s' and '%s'", binop_sym(op), cv_type_name(a),
               cv_type_name(b));
}

NrCVal nr_cv_unop(Sema *s, NrLoc loc, int op, const NrCVal *a) {
    switch ((NrUnOp)op) {
    case NR_UN_NOT: return nr_cv_bool(!nr_cv_truthy(a));
    case NR_UN_POS:
        if (a->kind == NR_CV_BOOL) return nr_cv_int(a->b);
        if (nr_cv_is_num(a)) return *a;
        break;
    case NR_UN_NEG:
        if (a->kind == NR_CV_FLOAT) return nr_cv_float(-a->f);
        if (is_intlike(a)) return from_i128(s, loc, -as_i128(a));
        break;
    case NR_UN_INVERT:
        if (is_intlike(a)) return from_i128(s, loc, -as_i128(a) - 1);
        break;
    }
    static const char *const sym[] = {"-", "+", "~", "not"};
    nr_sm_fail(s, loc, "bad operand type for unary %s: '%s'", sym[op & 3], cv_type_name(a));
}

NrCVal nr_cv_compare(Sema *s, NrLoc loc, int cmp, const NrCVal *a, const NrCVal *b) {
    if (cmp == NR_CMP_EQ) return nr_cv_bool(nr_cv_eq(a, b));
    if (cmp == NR_CMP_NE) return nr_cv_bool(!nr_cv_eq(a, b));
    int c;
    if (nr_cv_is_num(a) && nr_cv_is_num(b)) {
        if (is_intlike(a) && is_intlike(b)) {
            __int128 x = as_i128(a), y = as_i128(b);
            c = x < y ? -1 : x > y;
        } else {
            double x = nr_cv_as_double(a), y = nr_cv_as_double(b);
            if (isnan(x) || isnan(y)) return nr_cv_bool(false);
            c = x < y ? -1 : x > y;
        }
    } else if (a->kind == NR_CV_STR && b->kind == NR_CV_STR) {
        size_t n = a->str.len < b->str.len ? a->str.len : b->str.len;
        c = memcmp(a->str.s, b->str.s, n);
        if (c == 0) c = a->str.len < b->str.len ? -1 : a->str.len > b->str.len;
    } else {
        static const char *const sym[] = {"<", "<=", ">", ">="};
        nr_sm_fail(s, loc, "'%s' is not supported between '%s' and '%s'", sym[cmp & 3], cv_type_name(a),
                   cv_type_name(b));
    }
    switch ((NrCmpOp)cmp) {
    case NR_CMP_LT: return nr_cv_bool(c < 0);
    case NR_CMP_LE: return nr_cv_bool(c <= 0);
    case NR_CMP_GT: return nr_cv_bool(c > 0);
    case NR_CMP_GE: return nr_cv_bool(c >= 0);
    default: NR_UNREACHABLE();
    }
}
