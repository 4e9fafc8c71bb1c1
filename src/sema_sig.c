/* sema_sig.c - kernel signatures in Triton's AOT form.
 *
 *   signature := [entry (',' entry)*]
 *   entry     := '*'+ ['k'] DTYPE [':16']        a pointer (depth = number of '*')
 *              | DTYPE [':16' | ':1']            a runtime scalar
 *              | '(' [entry (',' entry)* [',']] ')'   a tuple
 *              | 'tensordesc<' DTYPE '[' INT (',' INT)* ']' [', nan'] '>'   a host tensor descriptor
 *              | literal                         a constexpr value
 *   DTYPE     := a signature name of dtypes.def (i32, fp16, bf16, fp8e4nv, ...), or u1 / B for i1
 *   literal   := int | float | True | False | None | 'str' | "str" | tl.float16 | tl.fp16
 *
 * The text is registered as a source named "<signature>" so that errors show
 * it with a caret under the offending entry. */
#include "sema_impl.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct SigParser {
    NrArena *a;
    NrDiags *d;
    const char *text;
    uint32_t file;
} SigParser;

static bool sig_error(SigParser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool sig_error(SigParser *p, size_t pos, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    NrLoc loc = {p->file, 1, (uint32_t)pos + 1};
    nr_error(p->d, loc, "%s", msg);
    return false;
}

static NrDtype sig_dtype(const char *s, size_t n) {
    NrDtype dt = nr_dtype_from_sig(s, n);
    if (dt) return dt;
    if ((n == 2 && memcmp(s, "u1", 2) == 0) || (n == 1 && s[0] == 'B')) return NR_DT_I1;
    return NR_DT_INVALID;
}

static bool looks_like_type_name(const char *s, size_t n) {
    if (n == 0 || !isalpha((unsigned char)s[0])) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
    return true;
}

/* ':16' or ':1' after a type at s[pos..pos+n). */
static bool parse_fact(SigParser *p, const char *s, size_t n, size_t pos, NrSigArg *arg, bool is_ptr) {
    const char *tyname = nr_strndup(p->a, s, (size_t)(strchr(s, ':') - s));
    const char *f = strchr(s, ':') + 1;
    size_t fn = n - (size_t)(f - s);
    size_t fpos = pos + (size_t)(f - s);
    if (fn == 2 && memcmp(f, "16", 2) == 0) {
        if (!is_ptr && !nr_dt_is_int(arg->dtype))
            return sig_error(p, fpos - 1, "':16' (divisible by 16) applies to pointers and integers, not %s", tyname);
        arg->divisibility = 16;
        return true;
    }
    if (fn == 1 && f[0] == '1') {
        if (is_ptr || !nr_dt_is_int(arg->dtype) || arg->dtype == NR_DT_I1)
            return sig_error(p, fpos - 1, "':1' (equal to 1) applies to integers, not %s", tyname);
        arg->equal_to_1 = true;
        return true;
    }
    return sig_error(p, fpos, "expected '16' (divisible by 16) or '1' (equal to 1) after '%s:'", tyname);
}

static bool parse_list(SigParser *p, const char *text, size_t start, size_t end, NrSigArg **out, int *nout,
                       bool allow_trailing, int depth);

/* tensordesc<DTYPE[d0, d1, ...]> or tensordesc<DTYPE[...], nan> */
static bool parse_desc(SigParser *p, const char *s, size_t n, size_t pos, NrSigArg *arg) {
    size_t i = 11; /* after "tensordesc<" */
    if (n < 13 || s[n - 1] != '>') return sig_error(p, pos + n - 1, "expected '>' at the end of the tensor descriptor");
    size_t lb = i;
    while (lb < n && s[lb] != '[') lb++;
    if (lb == n) return sig_error(p, pos + i, "expected the block shape in brackets: tensordesc<fp16[64, 64]>");
    size_t a = i, b = lb;
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    NrDtype dt = sig_dtype(s + a, b - a);
    if (!dt) return sig_error(p, pos + a, "unknown element type '%s' in the tensor descriptor", nr_strndup(p->a, s + a, b - a));
    size_t rb = lb;
    while (rb < n && s[rb] != ']') rb++;
    if (rb == n) return sig_error(p, pos + lb, "unterminated block shape '['");
    arg->kind = NR_SIG_DESC;
    arg->dtype = dt;
    size_t k = lb + 1;
    while (k < rb) {
        while (k < rb && isspace((unsigned char)s[k])) k++;
        char *endp;
        long long v = strtoll(s + k, &endp, 10);
        size_t e = (size_t)(endp - s);
        if (e == k || e > rb) return sig_error(p, pos + k, "expected a block dimension (a positive integer)");
        if (v < 1 || v > (1 << 20) || (v & (v - 1)))
            return sig_error(p, pos + k, "block dimension %lld of the tensor descriptor is not a power of two", v);
        if (arg->rank >= 5) return sig_error(p, pos + k, "tensor descriptors have 1 to 5 dimensions");
        arg->block[arg->rank++] = v;
        k = e;
        while (k < rb && isspace((unsigned char)s[k])) k++;
        if (k < rb && s[k] != ',') return sig_error(p, pos + k, "expected ',' or ']' in the block shape");
        if (k < rb) k++;
    }
    if (arg->rank == 0) return sig_error(p, pos + lb, "the tensor descriptor has no block dimensions");
    size_t t = rb + 1;
    while (t < n - 1 && isspace((unsigned char)s[t])) t++;
    if (t < n - 1) {
        if (s[t] != ',') return sig_error(p, pos + t, "expected '>' or ', nan' after the block shape");
        t++;
        while (t < n - 1 && isspace((unsigned char)s[t])) t++;
        size_t u = n - 1;
        while (u > t && isspace((unsigned char)s[u - 1])) u--;
        if (!(u - t == 3 && memcmp(s + t, "nan", 3) == 0) && !(u - t == 4 && memcmp(s + t, "zero", 4) == 0))
            return sig_error(p, pos + t, "expected the padding 'nan' or 'zero'");
        arg->nan_pad = s[t] == 'n';
        if (arg->nan_pad && !nr_dt_is_float(dt))
            return sig_error(p, pos + t, "padding 'nan' needs a floating-point tensor descriptor");
    }
    return true;
}

static bool parse_entry_at(SigParser *p, const char *s, size_t n, size_t pos, NrSigArg *arg, int depth) {
    memset(arg, 0, sizeof *arg);
    arg->divisibility = 1;
    if (n == 0) return sig_error(p, pos, "empty entry in the signature");
    if (s[0] == '(') {
        if (depth > 32) return sig_error(p, pos, "tuples nest too deeply in the signature");
        if (s[n - 1] != ')') return sig_error(p, pos + n - 1, "expected ')' at the end of the tuple");
        arg->kind = NR_SIG_TUPLE;
        return parse_list(p, p->text, pos + 1, pos + n - 1, &arg->elems, &arg->nelems, true, depth + 1);
    }
    if (n > 11 && memcmp(s, "tensordesc<", 11) == 0) return parse_desc(p, s, n, pos, arg);
    const char *colon = memchr(s, ':', n);
    bool quoted = s[0] == '"' || s[0] == '\'';
    if (s[0] == '*') {
        size_t i = 0;
        while (i < n && s[i] == '*') i++;
        if (i < n && s[i] == 'k') i++; /* const pointer: same as a pointer here */
        size_t end = colon ? (size_t)(colon - s) : n;
        if (i >= end) return sig_error(p, pos + i, "expected the pointee type after '*'");
        NrDtype dt = sig_dtype(s + i, end - i);
        if (!dt) {
            const char *name = nr_strndup(p->a, s + i, end - i);
            return sig_error(p, pos + i, "unknown pointee type '%s' (expected i1, i8..i64, u8..u64, fp8e4nv, fp8e5, "
                                         "fp16, bf16, fp32 or fp64)",
                             name);
        }
        if (i > 255) return sig_error(p, pos, "pointer nesting too deep");
        arg->kind = NR_SIG_PTR;
        arg->dtype = dt;
        arg->ptr = (int)(i - (s[i - 1] == 'k' ? 1 : 0));
        if (colon) return parse_fact(p, s, n, pos, arg, true);
        return true;
    }
    if (!quoted && looks_like_type_name(s, colon ? (size_t)(colon - s) : n) &&
        !(n >= 4 && (memcmp(s, "True", 4) == 0 || memcmp(s, "None", 4) == 0)) &&
        !(n >= 5 && memcmp(s, "False", 5) == 0) && !(n == 3 && (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0))) {
        size_t end = colon ? (size_t)(colon - s) : n;
        NrDtype dt = sig_dtype(s, end);
        if (!dt) {
            const char *name = nr_strndup(p->a, s, end);
            if (nr_dtype_from_triton(s, end))
                return sig_error(p, pos, "unknown type '%s' (a runtime scalar is written i32, fp16, ...; a dtype "
                                         "constexpr is written tl.float16)",
                                 name);
            return sig_error(p, pos, "unknown type '%s' (expected a pointer such as *fp32, a scalar such as i32, or a "
                                     "constexpr value)",
                             name);
        }
        arg->kind = NR_SIG_SCALAR;
        arg->dtype = dt;
        if (colon) return parse_fact(p, s, n, pos, arg, false);
        return true;
    }
    const char *err;
    size_t errpos;
    if (!nr_cv_parse_literal(p->a, s, n, &arg->cval, &err, &errpos)) {
        const char *text = nr_strndup(p->a, s, n);
        return sig_error(p, pos + errpos, "%s in signature entry '%s'", err, text);
    }
    arg->kind = NR_SIG_CONSTEXPR;
    return true;
}

/* Entries of text[start..end) separated by top-level commas (quotes and
 * brackets nest); a trailing comma is allowed in tuples. */
static bool parse_list(SigParser *p, const char *text, size_t start, size_t end, NrSigArg **out, int *nout,
                       bool allow_trailing, int depth) {
    *out = NULL;
    *nout = 0;
    int cap = 0;
    size_t k = start;
    while (k < end && isspace((unsigned char)text[k])) k++;
    if (k == end) return true;
    size_t i = start;
    for (;;) {
        while (i < end && isspace((unsigned char)text[i])) i++;
        size_t b = i;
        char quote = 0;
        int nest = 0;
        for (; i < end; i++) {
            char ch = text[i];
            if (quote) {
                if (ch == '\\' && i + 1 < end) i++;
                else if (ch == quote) quote = 0;
            } else if (ch == '"' || ch == '\'') {
                quote = ch;
            } else if (ch == '(' || ch == '[' || ch == '<') {
                nest++;
            } else if (ch == ')' || ch == ']' || ch == '>') {
                if (--nest < 0) return sig_error(p, i, "unbalanced '%c' in the signature", ch);
            } else if (ch == ',' && nest == 0) {
                break;
            }
        }
        if (quote) return sig_error(p, b, "unterminated string in the signature");
        if (nest) return sig_error(p, b, "unbalanced brackets in the signature");
        size_t e = i;
        while (e > b && isspace((unsigned char)text[e - 1])) e--;
        if (e == b && i >= end && allow_trailing && *nout > 0) break; /* "(a, b,)" */
        NrSigArg *arg = NR_PUSH(p->a, *out, *nout, cap);
        if (!parse_entry_at(p, text + b, e - b, b, arg, depth)) return false;
        if (i >= end) break;
        i++; /* the comma */
    }
    return true;
}

bool nr_signature_parse(NrArena *a, const char *text, NrSignature *out, NrDiags *d) {
    memset(out, 0, sizeof *out);
    if (!text) text = "";
    size_t len = strlen(text);
    SigParser p = {a, d, text, 0};
    if (d->sources) p.file = nr_sources_add(d->sources, a, "<signature>", text, len);
    return parse_list(&p, text, 0, len, &out->args, &out->nargs, false, 0);
}

static void put_cval(NrArena *a, char **buf, const NrCVal *c) {
    switch (c->kind) {
    case NR_CV_STR: {
        char *q = nr_alloc(a, c->str.len * 2 + 3);
        size_t o = 0;
        q[o++] = '"';
        for (size_t i = 0; i < c->str.len; i++) {
            char ch = c->str.s[i];
            if (ch == '"' || ch == '\\') q[o++] = '\\', q[o++] = ch;
            else if (ch == '\n') q[o++] = '\\', q[o++] = 'n';
            else if (ch == '\t') q[o++] = '\\', q[o++] = 't';
            else if (ch == '\r') q[o++] = '\\', q[o++] = 'r';
            else if (ch == '\0') q[o++] = '\\', q[o++] = '0';
            else q[o++] = ch;
        }
        q[o++] = '"';
        q[o] = 0;
        *buf = nr_sprintf(a, "%s%s", *buf, q);
        return;
    }
    case NR_CV_DTYPE: *buf = nr_sprintf(a, "%stl.%s", *buf, nr_dtype_info[c->dt].triton); return;
    default: *buf = nr_sprintf(a, "%s%s", *buf, nr_cv_str_of(a, c)); return;
    }
}

static char *entry_str(NrArena *a, char *buf, const NrSigArg *g) {
    switch (g->kind) {
    case NR_SIG_PTR:
        for (int k = 0; k < g->ptr; k++) buf = nr_sprintf(a, "%s*", buf);
        return nr_sprintf(a, "%s%s%s", buf, nr_dtype_info[g->dtype].sig, g->divisibility == 16 ? ":16" : "");
    case NR_SIG_SCALAR:
        return nr_sprintf(a, "%s%s%s", buf, nr_dtype_info[g->dtype].sig,
                          g->equal_to_1 ? ":1" : g->divisibility == 16 ? ":16" : "");
    case NR_SIG_CONSTEXPR: put_cval(a, &buf, &g->cval); return buf;
    case NR_SIG_TUPLE:
        buf = nr_sprintf(a, "%s(", buf);
        for (int i = 0; i < g->nelems; i++) {
            if (i) buf = nr_sprintf(a, "%s, ", buf);
            buf = entry_str(a, buf, &g->elems[i]);
        }
        return nr_sprintf(a, "%s%s)", buf, g->nelems == 1 ? "," : "");
    case NR_SIG_DESC:
        buf = nr_sprintf(a, "%stensordesc<%s[", buf, nr_dtype_info[g->dtype].sig);
        for (int i = 0; i < g->rank; i++) buf = nr_sprintf(a, "%s%s%lld", buf, i ? ", " : "", (long long)g->block[i]);
        return nr_sprintf(a, "%s]%s>", buf, g->nan_pad ? ", nan" : "");
    }
    return buf;
}

char *nr_signature_str(NrArena *a, const NrSignature *sig) {
    char *buf = nr_strdup(a, "");
    for (int i = 0; i < sig->nargs; i++) {
        if (i) buf = nr_sprintf(a, "%s, ", buf);
        buf = entry_str(a, buf, &sig->args[i]);
    }
    return buf;
}
