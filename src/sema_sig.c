/* sema_sig.c - kernel signatures in Triton's AOT form.
 *
 *   signature := [entry (',' entry)*]
 *   entry     := '*'+ ['k'] DTYPE [':16']        a pointer (depth = number of '*')
 *              | DTYPE [':16' | ':1']            a runtime scalar
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

static bool parse_entry(SigParser *p, const char *s, size_t n, size_t pos, NrSigArg *arg) {
    memset(arg, 0, sizeof *arg);
    arg->divisibility = 1;
    if (n == 0) return sig_error(p, pos, "empty entry in the signature");
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

bool nr_signature_parse(NrArena *a, const char *text, NrSignature *out, NrDiags *d) {
    memset(out, 0, sizeof *out);
    if (!text) text = "";
    size_t len = strlen(text);
    SigParser p = {a, d, text, 0};
    if (d->sources) p.file = nr_sources_add(d->sources, a, "<signature>", text, len);
    int cap = 0;
    size_t i = 0;
    /* an empty (or blank) signature has no entries */
    size_t k = 0;
    while (k < len && isspace((unsigned char)text[k])) k++;
    if (k == len) return true;
    for (;;) {
        while (i < len && isspace((unsigned char)text[i])) i++;
        size_t start = i;
        char quote = 0;
        for (; i < len; i++) {
            char ch = text[i];
            if (quote) {
                if (ch == '\\' && i + 1 < len) i++;
                else if (ch == quote) quote = 0;
            } else if (ch == '"' || ch == '\'') {
                quote = ch;
            } else if (ch == ',') {
                break;
            }
        }
        if (quote) return sig_error(&p, start, "unterminated string in the signature");
        size_t end = i;
        while (end > start && isspace((unsigned char)text[end - 1])) end--;
        NrSigArg *arg = NR_PUSH(a, out->args, out->nargs, cap);
        if (!parse_entry(&p, text + start, end - start, start, arg)) return false;
        if (i >= len) break;
        i++; /* the comma */
    }
    return true;
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

char *nr_signature_str(NrArena *a, const NrSignature *sig) {
    char *buf = nr_strdup(a, "");
    for (int i = 0; i < sig->nargs; i++) {
        const NrSigArg *g = &sig->args[i];
        if (i) buf = nr_sprintf(a, "%s, ", buf);
        switch (g->kind) {
        case NR_SIG_PTR:
            for (int k = 0; k < g->ptr; k++) buf = nr_sprintf(a, "%s*", buf);
            buf = nr_sprintf(a, "%s%s%s", buf, nr_dtype_info[g->dtype].sig, g->divisibility == 16 ? ":16" : "");
            break;
        case NR_SIG_SCALAR:
            buf = nr_sprintf(a, "%s%s%s", buf, nr_dtype_info[g->dtype].sig,
                             g->equal_to_1 ? ":1" : g->divisibility == 16 ? ":16" : "");
            break;
        case NR_SIG_CONSTEXPR: put_cval(a, &buf, &g->cval); break;
        }
    }
    return buf;
}
