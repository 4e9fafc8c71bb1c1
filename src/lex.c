/* lex.c - the tokenizer for Python 3.12 source text; see lex.h.
 *
 * One pass over the bytes of the file.  At the start of each logical line
 * (outside brackets) the indentation is measured - a tab advances to the
 * next multiple of 8, a form feed resets it - and compared with a stack of
 * open levels to emit INDENT or DEDENT tokens; blank and comment-only lines
 * produce nothing.  Inside brackets newlines are ignored (implicit line
 * joining); a backslash before a newline joins lines explicitly.
 *
 * Every read is bounds-checked against the text's length (the text may hold
 * NUL bytes), every loop consumes at least one byte per iteration, and
 * nothing recurses, so no input can make the lexer crash or hang.  Problems
 * become NR_T_ERROR tokens; nothing here records a diagnostic. */
#include "lex.h"
#include "util.h"

#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Level {
    int col;     /* indentation with tabs to multiples of 8 */
    int alt;     /* indentation with tabs as one column, to detect inconsistent mixing */
} Level;

typedef struct Bracket {
    char c;
    NrLoc loc;
    int tok;     /* index of its token */
} Bracket;

typedef struct Lexer {
    NrArena *a;             /* strings and messages */
    NrArena *ta;            /* the token array */
    uint32_t file;
    const char *p, *end;
    uint32_t line;
    const char *linestart;
    NrTokens toks;
    Level *lv;              /* open indentation levels; lv[0] is column 0 */
    int nlv, caplv;
    Bracket *br;            /* open brackets */
    int nbr, capbr;
    bool line_has_tok;      /* the current logical line has produced a token */
    bool bol;               /* the next real token starts a logical line */
    NrLoc last_end;         /* end of the last real token */
} Lexer;

static const char *const tok_spelling[NR_T_COUNT] = {
#define X(id, s) s,
    NR_TOKEN_LIST(X)
#undef X
};

const char *nr_tok_spelling(NrTokKind k) { return (unsigned)k < NR_T_COUNT ? tok_spelling[k] : "?"; }

const char *nr_tok_describe(NrTokKind k) {
    static const char *const quoted[NR_T_COUNT] = {
#define X(id, s) "'" s "'",
        NR_TOKEN_LIST(X)
#undef X
    };
    if ((unsigned)k >= NR_T_COUNT) return "?";
    return k < NR_T_KW_FALSE ? tok_spelling[k] : quoted[k];
}

/* --- characters ------------------------------------------------------------------------------ */

/* Byte k ahead of the cursor, or -1 past the end. */
static int ch(const Lexer *L, size_t k) {
    return (size_t)(L->end - L->p) > k ? (unsigned char)L->p[k] : -1;
}

static bool is_name_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool is_name_char(int c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

/* Tables built once per process (pthread_once): which bytes continue a
 * name, and per first byte the keywords that start with it (lex.h lists
 * them in byte order: one run each). */
static struct {
    bool name_char[256];
    int16_t kw_lo[256], kw_n[256]; /* first keyword with that first byte, and how many */
} lex_tables;
static pthread_once_t lex_tables_once = PTHREAD_ONCE_INIT;

static void lex_tables_build(void) {
    for (int c = 0; c < 256; c++) lex_tables.name_char[c] = is_name_char(c);
    for (int k = NR_T_KW_YIELD; k >= NR_T_KW_FALSE; k--) {
        unsigned char c = (unsigned char)tok_spelling[k][0];
        lex_tables.kw_lo[c] = (int16_t)k;
        lex_tables.kw_n[c]++;
    }
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }

static int digit_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
}

/* Length of the line break at the cursor: 2 for "\r\n", 1 for "\n" or "\r", else 0. */
static int newline_len(const Lexer *L) {
    int c = ch(L, 0);
    if (c == '\n') return 1;
    if (c == '\r') return ch(L, 1) == '\n' ? 2 : 1;
    return 0;
}

/* Requires a line break at the cursor. */
static void consume_newline(Lexer *L) {
    L->p += newline_len(L);
    L->line++;
    L->linestart = L->p;
}

static NrLoc loc_here(const Lexer *L) {
    NrLoc l = {L->file, L->line, (uint32_t)(L->p - L->linestart) + 1};
    return l;
}

static void skip_to_eol(Lexer *L) {
    while (L->p < L->end && *L->p != '\n' && *L->p != '\r') L->p++;
}

/* --- token emission -------------------------------------------------------------------------- */

static NrToken *push_tok(Lexer *L, NrTokKind kind, NrLoc loc, const char *start) {
    NrToken *t = NR_PUSH(L->ta, L->toks.v, L->toks.n, L->toks.cap);
    memset(t, 0, sizeof *t); /* (the array starts uncleared) */
    t->kind = (uint8_t)kind;
    t->loc = loc;
    t->depth = L->nlv - 1;
    t->text = start;
    t->len = (size_t)(L->p - start);
    return t;
}

/* A token from the text: start..cursor. */
static NrToken *real_tok(Lexer *L, NrTokKind kind, NrLoc loc, const char *start) {
    NrToken *t = push_tok(L, kind, loc, start);
    if (L->bol) t->flags |= NR_TF_BOL;
    L->bol = false;
    L->line_has_tok = true;
    L->last_end = loc_here(L);
    return t;
}

static void error_tok(Lexer *L, NrLoc loc, const char *start, const char *msg) {
    NrToken *t = real_tok(L, NR_T_ERROR, loc, start);
    t->v.msg = msg;
}

/* INDENT, DEDENT, NEWLINE, EOF and indentation errors: no text, not a line start. */
static NrToken *struct_tok(Lexer *L, NrTokKind kind, NrLoc loc) {
    NrToken *t = push_tok(L, kind, loc, L->p);
    t->len = 0;
    return t;
}

/* --- indentation ----------------------------------------------------------------------------- */

enum { IND_LINE, IND_BLANK, IND_END };
enum { MAX_COL = 1 << 28 };

static void push_level(Lexer *L, int col, int alt) {
    Level *lv = NR_PUSH(L->a, L->lv, L->nlv, L->caplv);
    lv->col = col;
    lv->alt = alt;
}

/* At the start of a physical line outside brackets: measure the indentation.
 * A blank or comment-only line is consumed whole (IND_BLANK); otherwise the
 * INDENT/DEDENT tokens of the new logical line are emitted (IND_LINE). */
static int lex_indentation(Lexer *L) {
    int col = 0, alt = 0;
    for (int c; (c = ch(L, 0)) == ' ' || c == '\t' || c == '\f'; L->p++) {
        if (c == ' ') col++, alt++;
        else if (c == '\t') col = (col / 8 + 1) * 8, alt++;
        else col = alt = 0;
        if (col > MAX_COL) col = MAX_COL;
        if (alt > MAX_COL) alt = MAX_COL;
    }
    if (ch(L, 0) == '#') skip_to_eol(L);
    if (L->p >= L->end) return IND_END;
    if (newline_len(L)) {
        consume_newline(L);
        return IND_BLANK;
    }
    NrLoc here = loc_here(L);
    const char *tab_msg = "inconsistent use of tabs and spaces in indentation";
    Level top = L->lv[L->nlv - 1];
    if (col == top.col) {
        if (alt != top.alt) struct_tok(L, NR_T_ERROR, here)->v.msg = tab_msg;
    } else if (col > top.col) {
        if (alt <= top.alt) struct_tok(L, NR_T_ERROR, here)->v.msg = tab_msg;
        push_level(L, col, alt);
        struct_tok(L, NR_T_INDENT, here);
    } else {
        int k = L->nlv - 1;
        while (k > 0 && L->lv[k].col > col) k--;
        bool mismatch = L->lv[k].col != col;
        /* The error goes before the DEDENTs, so that the block being closed meets it. */
        if (mismatch) struct_tok(L, NR_T_ERROR, here)->v.msg = "unindent does not match any outer indentation level";
        else if (alt != L->lv[k].alt) struct_tok(L, NR_T_ERROR, here)->v.msg = tab_msg;
        while (L->nlv - 1 > k) {
            L->nlv--;
            struct_tok(L, NR_T_DEDENT, here);
        }
        if (mismatch) {
            push_level(L, col, alt);
            struct_tok(L, NR_T_INDENT, here);
        }
    }
    return IND_LINE;
}

/* --- names and keywords ---------------------------------------------------------------------- */

/* Keywords are 2 to 8 bytes long: those with s's first byte (lex_tables),
 * compared inline (every name of a module is looked up). */
static NrTokKind keyword(const char *s, size_t n) {
    if (n < 2 || n > 8) return NR_T_NAME;
    unsigned char c0 = (unsigned char)s[0];
    for (int k = lex_tables.kw_lo[c0], e = k + lex_tables.kw_n[c0]; k < e; k++) {
        const char *kw = tok_spelling[k];
        size_t i = 1;
        while (i < n && kw[i] == s[i]) i++; /* (stops at kw's end: names hold no NUL) */
        if (i == n && kw[n] == '\0') return (NrTokKind)k;
    }
    return NR_T_NAME;
}

/* String prefix flags for a name directly followed by a quote; -1 if not a prefix. */
static int string_prefix(const char *s, size_t n) {
    if (n == 0 || n > 2) return -1;
    int flags = 0;
    bool seen_u = false;
    for (size_t i = 0; i < n; i++) {
        int f;
        switch (s[i]) {
        case 'r': case 'R': f = NR_TF_RAW; break;
        case 'b': case 'B': f = NR_TF_BYTES; break;
        case 'f': case 'F': f = NR_TF_FSTRING; break;
        case 'u': case 'U': f = 0; seen_u = true; break;
        default: return -1;
        }
        if (flags & f) return -1;
        flags |= f;
    }
    if (seen_u && n > 1) return -1;
    if ((flags & NR_TF_BYTES) && (flags & NR_TF_FSTRING)) return -1;
    return flags;
}

/* --- strings --------------------------------------------------------------------------------- */

/* Scan a string body with the cursor just past the opening quote(s) `q`.
 * On success returns true with the cursor past the closing quote(s) and
 * *content_end at the closing quote.  An unterminated single-quoted string
 * stops before the line break; a triple-quoted one at the end of the text.
 * A backslash always protects the next character (raw strings too). */
static bool scan_string_body(Lexer *L, int q, bool triple, const char **content_end) {
    for (;;) {
        int c = ch(L, 0);
        if (c < 0) return false;
        if (c == '\\') {
            L->p++;
            if (newline_len(L)) consume_newline(L);
            else if (L->p < L->end) L->p++;
            continue;
        }
        if (newline_len(L)) {
            if (!triple) return false;
            consume_newline(L);
            continue;
        }
        if (c == q && (!triple || (ch(L, 1) == q && ch(L, 2) == q))) {
            *content_end = L->p;
            L->p += triple ? 3 : 1;
            return true;
        }
        L->p++;
    }
}

/* Append code point cp as UTF-8 (surrogates are encoded like any other code point). */
static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Value of exactly `n` hex digits at s[0..n) within `avail` bytes, or -1. */
static long hex_run(const char *s, size_t avail, int n) {
    if (avail < (size_t)n) return -1;
    long v = 0;
    for (int i = 0; i < n; i++) {
        int d = digit_value((unsigned char)s[i]);
        if (d > 15) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Decode the contents of a plain (not f-) string.  Line breaks become "\n"
 * as Python reads source files; escapes are decoded unless raw; unknown or
 * malformed escapes are kept as written.  The output is never longer than
 * the input, which sizes the buffer. */
static char *decode_string(NrArena *a, const char *in, size_t n, bool raw, bool bytes, size_t *out_n) {
    char *out = nr_alloc(a, n + 1), *o = out;
    size_t i = 0;
    while (i < n) {
        char c = in[i];
        if (c == '\r') {
            *o++ = '\n';
            i += (i + 1 < n && in[i + 1] == '\n') ? 2 : 1;
            continue;
        }
        if (c != '\\' || raw || i + 1 >= n) {
            *o++ = c;
            i++;
            continue;
        }
        char e = in[i + 1];
        size_t rest = n - (i + 2);
        const char *s = in + i + 2;
        long v;
        switch (e) {
        case '\n': i += 2; continue;
        case '\r': i += (rest > 0 && s[0] == '\n') ? 3 : 2; continue;
        case '\\': case '\'': case '"': *o++ = e; i += 2; continue;
        case 'a': *o++ = '\a'; i += 2; continue;
        case 'b': *o++ = '\b'; i += 2; continue;
        case 'f': *o++ = '\f'; i += 2; continue;
        case 'n': *o++ = '\n'; i += 2; continue;
        case 'r': *o++ = '\r'; i += 2; continue;
        case 't': *o++ = '\t'; i += 2; continue;
        case 'v': *o++ = '\v'; i += 2; continue;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t cp = 0;
            size_t k = 1;
            cp = (uint32_t)(e - '0');
            while (k < 3 && k - 1 < rest && s[k - 1] >= '0' && s[k - 1] <= '7') cp = cp * 8 + (uint32_t)(s[k++ - 1] - '0');
            if (bytes) *o++ = (char)(cp & 0xFF);
            else o += put_utf8(o, cp);
            i += 1 + k;
            continue;
        }
        case 'x':
            if ((v = hex_run(s, rest, 2)) >= 0) {
                if (bytes) *o++ = (char)v;
                else o += put_utf8(o, (uint32_t)v);
                i += 4;
                continue;
            }
            break;
        case 'u':
        case 'U': {
            int nd = e == 'u' ? 4 : 8;
            if (!bytes && (v = hex_run(s, rest, nd)) >= 0 && v <= 0x10FFFF) {
                o += put_utf8(o, (uint32_t)v);
                i += 2 + (size_t)nd;
                continue;
            }
            break;
        }
        default: break;
        }
        /* Not an escape we decode: keep the backslash and go on with the next character. */
        *o++ = c;
        i++;
    }
    *o = 0;
    *out_n = (size_t)(o - out);
    return out;
}

enum { F_LIT, F_EXPR, F_SPEC, F_MAX = 32 };

typedef struct FFrame {
    int q;          /* the quote of a string frame */
    bool triple, raw;
    int mode;       /* F_LIT: a string's literal text; F_EXPR/F_SPEC: a replacement field */
    int br;         /* open brackets inside a replacement field */
} FFrame;

/* The innermost string frame at or below frame k. */
static const FFrame *string_frame(const FFrame *st, int k) {
    while (k > 0 && st[k].mode != F_LIT) k--;
    return &st[k];
}

/* Scan an f-string whose opening quote is at the cursor.  Python 3.12
 * allows any quotes and nested f-strings inside replacement fields, so the
 * fields are followed with an explicit stack of frames (bounded, no
 * recursion).  Returns NULL on success or an error message; either way the
 * cursor has advanced past the opening quote. */
static const char *scan_fstring(Lexer *L, bool raw) {
    FFrame st[F_MAX];
    int n = 0;
    int q = ch(L, 0);
    bool triple = ch(L, 1) == q && ch(L, 2) == q;
    st[n++] = (FFrame){q, triple, raw, F_LIT, 0};
    L->p += triple ? 3 : 1;
    while (n > 0) {
        int c = ch(L, 0);
        FFrame *f = &st[n - 1];
        const FFrame *sf = string_frame(st, n - 1);
        if (c < 0) return sf->triple ? "unterminated triple-quoted f-string literal" : "unterminated f-string literal";
        if (f->mode == F_EXPR) {
            if (newline_len(L)) {
                consume_newline(L);
            } else if (c == '\'' || c == '"' || is_name_start(c)) {
                /* A name, or a nested string with its prefix. */
                const char *s = L->p;
                while (is_name_char(ch(L, 0))) L->p++;
                int pf = string_prefix(s, (size_t)(L->p - s));
                int qc = ch(L, 0);
                if ((qc != '\'' && qc != '"') || (L->p > s && pf < 0)) continue;
                if (pf < 0) pf = 0;
                if (pf & NR_TF_FSTRING) {
                    if (n == F_MAX) return "f-string nested too deeply";
                    bool t3 = ch(L, 1) == qc && ch(L, 2) == qc;
                    st[n++] = (FFrame){qc, t3, (pf & NR_TF_RAW) != 0, F_LIT, 0};
                    L->p += t3 ? 3 : 1;
                } else {
                    bool t3 = ch(L, 1) == qc && ch(L, 2) == qc;
                    const char *ce;
                    L->p += t3 ? 3 : 1;
                    if (!scan_string_body(L, qc, t3, &ce))
                        return t3 ? "unterminated triple-quoted string literal" : "unterminated string literal";
                }
            } else if (c == '(' || c == '[' || c == '{') {
                f->br++;
                L->p++;
            } else if (c == ')' || c == ']' || c == '}') {
                L->p++;
                if (c == '}' && f->br == 0) n--;
                else if (f->br > 0) f->br--;
            } else if (c == ':' && f->br == 0) {
                f->mode = F_SPEC;
                L->p++;
            } else {
                L->p++;
            }
            continue;
        }
        /* Literal text of a string, or a format spec. */
        if (newline_len(L)) {
            if (!sf->triple) return "unterminated f-string literal";
            consume_newline(L);
        } else if (c == '\\') {
            L->p++;
            int d = ch(L, 0);
            if (newline_len(L)) consume_newline(L);
            else if (d >= 0 && d != '{' && d != '}') L->p++;
        } else if (c == sf->q && (!sf->triple || (ch(L, 1) == c && ch(L, 2) == c))) {
            L->p += sf->triple ? 3 : 1;
            if (f->mode == F_SPEC) return "f-string: expecting '}'";
            n--;
        } else if (c == '{') {
            if (f->mode == F_LIT && ch(L, 1) == '{') {
                L->p += 2;
            } else {
                if (n == F_MAX) return "f-string nested too deeply";
                st[n++] = (FFrame){0, false, false, F_EXPR, 0};
                L->p++;
            }
        } else if (c == '}') {
            if (f->mode == F_SPEC) n--;
            else if (ch(L, 1) == '}') L->p++;
            L->p++;
        } else {
            L->p++;
        }
    }
    return NULL;
}

/* A string literal; the cursor is at its opening quote, `start` at its prefix. */
static void lex_string(Lexer *L, const char *start, NrLoc loc, int flags) {
    if (flags & NR_TF_FSTRING) {
        const char *err = scan_fstring(L, flags & NR_TF_RAW);
        if (err) {
            error_tok(L, loc, start, err);
            return;
        }
        NrToken *t = real_tok(L, NR_T_STRING, loc, start);
        t->flags |= (uint8_t)flags;
        t->v.str.s = nr_strndup(L->a, start, t->len);
        t->v.str.n = t->len;
        return;
    }
    int q = ch(L, 0);
    bool triple = ch(L, 1) == q && ch(L, 2) == q;
    L->p += triple ? 3 : 1;
    const char *body = L->p, *body_end;
    if (!scan_string_body(L, q, triple, &body_end)) {
        error_tok(L, loc, start, triple ? "unterminated triple-quoted string literal" : "unterminated string literal");
        return;
    }
    NrToken *t = real_tok(L, NR_T_STRING, loc, start);
    t->flags |= (uint8_t)flags;
    t->v.str.s = decode_string(L->a, body, (size_t)(body_end - body), flags & NR_TF_RAW, flags & NR_TF_BYTES,
                               &t->v.str.n);
}

/* --- numbers --------------------------------------------------------------------------------- */

/* digitpart: digit (['_'] digit)* in `base`, accumulating into *v (setting
 * *ovf past 2**64-1).  `lead_us` allows one '_' before the first digit (0x_1f).
 * Returns false at a misplaced underscore, which is consumed. */
static bool scan_digitpart(Lexer *L, int base, bool lead_us, uint64_t *v, bool *ovf, int *ndig) {
    *ndig = 0;
    for (;;) {
        int c = ch(L, 0);
        if (c == '_') {
            if (*ndig == 0 && !lead_us) return false;
            L->p++;
            if (digit_value(ch(L, 0)) >= base) return false;
            lead_us = false;
            continue;
        }
        int d = digit_value(c);
        if (d >= base) return true;
        if (*v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) *ovf = true;
        *v = *v * (uint64_t)base + (uint64_t)d;
        (*ndig)++;
        L->p++;
    }
}

/* After a number, a name may follow directly only if it is one of the
 * keywords Python accepts there (`1if x else 2`). */
static bool number_end_ok(Lexer *L) {
    if (!is_name_char(ch(L, 0))) return true;
    const char *s = L->p;
    size_t n = 0;
    while (is_name_char(ch(L, n))) n++;
    static const char *const ok[] = {"and", "else", "for", "if", "in", "is", "not", "or"};
    for (size_t i = 0; i < NR_COUNTOF(ok); i++)
        if (strlen(ok[i]) == n && memcmp(ok[i], s, n) == 0) return true;
    L->p += n;
    return false;
}

static void skip_name_chars(Lexer *L) {
    while (is_name_char(ch(L, 0))) L->p++;
}

/* 0x / 0o / 0b literals; the cursor is at the '0'. */
static void lex_prefixed_int(Lexer *L, const char *start, NrLoc loc) {
    int x = ch(L, 1) | 0x20;
    int base = x == 'x' ? 16 : x == 'o' ? 8 : 2;
    const char *what = base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary";
    L->p += 2;
    uint64_t v = 0;
    bool ovf = false;
    int nd;
    bool ok = scan_digitpart(L, base, true, &v, &ovf, &nd);
    int c = ch(L, 0);
    if (ok && base < 16 && is_digit(c)) {
        skip_name_chars(L);
        error_tok(L, loc, start, nr_sprintf(L->a, "invalid digit '%c' in %s literal", c, what));
        return;
    }
    if (!ok || nd == 0 || !number_end_ok(L)) {
        skip_name_chars(L);
        error_tok(L, loc, start, nr_sprintf(L->a, "invalid %s literal", what));
        return;
    }
    NrToken *t = real_tok(L, NR_T_INT, loc, start);
    t->v.u = v;
    if (ovf) t->flags |= NR_TF_OVERFLOW;
}

/* The value of a float literal start..end (underscores dropped).  strtod
 * reads the decimal point of the current locale, so '.' is swapped for it. */
static double float_value(NrArena *a, const char *s, const char *e) {
    const char *point = localeconv()->decimal_point;
    char dp = point && point[0] && !point[1] ? point[0] : '.';
    char *buf = nr_alloc(a, (size_t)(e - s) + 1), *o = buf;
    for (; s < e; s++)
        if (*s != '_' && *s != 'j' && *s != 'J') *o++ = *s == '.' ? dp : *s;
    *o = 0;
    return strtod(buf, NULL);
}

/* Decimal integers, floats and imaginary literals; the cursor is at a digit
 * or at a '.' followed by a digit. */
static void lex_number(Lexer *L) {
    const char *start = L->p;
    NrLoc loc = loc_here(L);
    int x = ch(L, 1) | 0x20;
    if (ch(L, 0) == '0' && (x == 'x' || x == 'o' || x == 'b')) {
        lex_prefixed_int(L, start, loc);
        return;
    }
    uint64_t v = 0, ignored = 0;  /* the value of an integer; float parts are only checked */
    bool ovf = false, ignored_ovf = false, ok = true, is_float = false;
    int nd;
    if (ch(L, 0) != '.') ok = scan_digitpart(L, 10, false, &v, &ovf, &nd);
    if (ok && ch(L, 0) == '.') {
        is_float = true;
        L->p++;
        if (is_digit(ch(L, 0))) ok = scan_digitpart(L, 10, false, &ignored, &ignored_ovf, &nd);
    }
    int e = ch(L, 0);
    if (ok && (e == 'e' || e == 'E')) {
        int s = ch(L, 1);
        size_t skip = (s == '+' || s == '-') ? 2 : 1;
        if (is_digit(ch(L, skip))) {
            L->p += skip;
            ok = scan_digitpart(L, 10, false, &ignored, &ignored_ovf, &nd);
            is_float = true;
        }
    }
    bool imag = false;
    if (ok && (ch(L, 0) == 'j' || ch(L, 0) == 'J')) {
        imag = true;
        L->p++;
    }
    if (!ok || !number_end_ok(L)) {
        skip_name_chars(L);
        error_tok(L, loc, start, "invalid decimal literal");
        return;
    }
    if (!is_float && !imag && start[0] == '0') {
        for (const char *s = start; s < L->p; s++)
            if (*s != '0' && *s != '_') {
                error_tok(L, loc, start,
                          "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
                          "integers");
                return;
            }
    }
    if (imag || is_float) {
        NrToken *t = real_tok(L, imag ? NR_T_IMAG : NR_T_FLOAT, loc, start);
        t->v.f = float_value(L->a, start, L->p);
        return;
    }
    NrToken *t = real_tok(L, NR_T_INT, loc, start);
    t->v.u = v;
    if (ovf) t->flags |= NR_TF_OVERFLOW;
}

/* --- operators and brackets ------------------------------------------------------------------ */

static void open_bracket(Lexer *L, char c, NrLoc loc) {
    Bracket *b = NR_PUSH(L->a, L->br, L->nbr, L->capbr);
    b->c = c;
    b->loc = loc;
    b->tok = L->toks.n;
}

/* A closing bracket: a token if it matches the innermost open one, else an error. */
static void close_bracket(Lexer *L, char c, NrTokKind kind, NrLoc loc, const char *start) {
    char want = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (L->nbr == 0) {
        error_tok(L, loc, start, nr_sprintf(L->a, "unmatched '%c'", c));
        return;
    }
    Bracket *b = &L->br[--L->nbr];
    if (b->c != want) {
        error_tok(L, loc, start,
                  nr_sprintf(L->a, "closing parenthesis '%c' does not match opening parenthesis '%c'", c, b->c));
        return;
    }
    real_tok(L, kind, loc, start);
}

/* The operator at the cursor (longest match), or NR_T_EOF if none; sets *n to its length. */
static NrTokKind match_op(const Lexer *L, int *n) {
    int c = ch(L, 0), c1 = ch(L, 1), c2 = ch(L, 2);
    *n = 1;
#define OP2(second, k2) if (c1 == (second)) { *n = 2; return NR_T_##k2; }
    switch (c) {
    case '(': return NR_T_LPAR;
    case ')': return NR_T_RPAR;
    case '[': return NR_T_LSQB;
    case ']': return NR_T_RSQB;
    case '{': return NR_T_LBRACE;
    case '}': return NR_T_RBRACE;
    case ',': return NR_T_COMMA;
    case ';': return NR_T_SEMI;
    case '~': return NR_T_TILDE;
    case ':': OP2('=', WALRUS) return NR_T_COLON;
    case '.':
        if (c1 == '.' && c2 == '.') { *n = 3; return NR_T_ELLIPSIS; }
        return NR_T_DOT;
    case '+': OP2('=', PLUSEQ) return NR_T_PLUS;
    case '-': OP2('=', MINUSEQ) OP2('>', ARROW) return NR_T_MINUS;
    case '%': OP2('=', PERCENTEQ) return NR_T_PERCENT;
    case '&': OP2('=', AMPEQ) return NR_T_AMP;
    case '|': OP2('=', VBAREQ) return NR_T_VBAR;
    case '^': OP2('=', CIRCEQ) return NR_T_CIRC;
    case '@': OP2('=', ATEQ) return NR_T_AT;
    case '=': OP2('=', EQ) return NR_T_ASSIGN;
    case '!': OP2('=', NE) return NR_T_EOF;
    case '*':
        if (c1 == '*') {
            if (c2 == '=') { *n = 3; return NR_T_DSTAREQ; }
            *n = 2;
            return NR_T_DSTAR;
        }
        OP2('=', STAREQ) return NR_T_STAR;
    case '/':
        if (c1 == '/') {
            if (c2 == '=') { *n = 3; return NR_T_DSLASHEQ; }
            *n = 2;
            return NR_T_DSLASH;
        }
        OP2('=', SLASHEQ) return NR_T_SLASH;
    case '<':
        if (c1 == '<') {
            if (c2 == '=') { *n = 3; return NR_T_LSHIFTEQ; }
            *n = 2;
            return NR_T_LSHIFT;
        }
        OP2('=', LE) return NR_T_LT;
    case '>':
        if (c1 == '>') {
            if (c2 == '=') { *n = 3; return NR_T_RSHIFTEQ; }
            *n = 2;
            return NR_T_RSHIFT;
        }
        OP2('=', GE) return NR_T_GT;
    default: return NR_T_EOF;
    }
#undef OP2
}

static const char *invalid_char_msg(NrArena *a, int c) {
    if (c == 0) return "source code cannot contain null bytes";
    if (c < 0x20 || c == 0x7F) return nr_sprintf(a, "invalid non-printable character U+%04X", (unsigned)c);
    return nr_sprintf(a, "invalid character '%c' (U+%04X)", c, (unsigned)c);
}

/* --- the main loop --------------------------------------------------------------------------- */

/* One token starting at the cursor (not whitespace, a comment or a line break). */
static void lex_token(Lexer *L) {
    const char *start = L->p;
    NrLoc loc = loc_here(L);
    int c = ch(L, 0);
    if (is_name_start(c)) {
        while (L->p < L->end && lex_tables.name_char[(unsigned char)*L->p]) L->p++;
        size_t n = (size_t)(L->p - start);
        int q = ch(L, 0);
        int pf = (q == '\'' || q == '"') ? string_prefix(start, n) : -1;
        if (pf >= 0) {
            lex_string(L, start, loc, pf);
            return;
        }
        NrTokKind k = keyword(start, n);
        NrToken *t = real_tok(L, k, loc, start);
        if (k == NR_T_NAME) {
            t->v.str.s = nr_strndup(L->a, start, n);
            t->v.str.n = n;
        }
        return;
    }
    if (is_digit(c) || (c == '.' && is_digit(ch(L, 1)))) {
        lex_number(L);
        return;
    }
    if (c == '\'' || c == '"') {
        lex_string(L, start, loc, 0);
        return;
    }
    int n;
    NrTokKind k = match_op(L, &n);
    if (k == NR_T_EOF) {
        L->p++;
        error_tok(L, loc, start, invalid_char_msg(L->a, c));
        return;
    }
    L->p += n;
    switch (k) {
    case NR_T_LPAR: case NR_T_LSQB: case NR_T_LBRACE:
        open_bracket(L, (char)c, loc);
        real_tok(L, k, loc, start);
        break;
    case NR_T_RPAR: case NR_T_RSQB: case NR_T_RBRACE:
        close_bracket(L, (char)c, k, loc, start);
        break;
    default:
        real_tok(L, k, loc, start);
        break;
    }
}

/* A backslash at the cursor: joins this line with the next one. */
static void lex_backslash(Lexer *L) {
    const char *start = L->p;
    NrLoc loc = loc_here(L);
    L->p++;
    if (newline_len(L)) {
        consume_newline(L);
        return;
    }
    if (L->p >= L->end) error_tok(L, loc, start, "unexpected end of file after line continuation character");
    else error_tok(L, loc, start, "unexpected character after line continuation character");
}

NrTokens nr_lex(NrArena *a, NrArena *tok_arena, const NrSources *s, uint32_t file) {
    pthread_once(&lex_tables_once, lex_tables_build);
    NR_ASSERT(s && file > 0 && (int)file < s->n);
    Lexer L = {0};
    L.a = a;
    L.ta = tok_arena;
    L.file = file;
    L.p = s->v[file].text;
    L.end = L.p + s->v[file].len;
    L.line = 1;
    L.linestart = L.p;
    L.last_end = (NrLoc){file, 1, 1};
    if (ch(&L, 0) == 0xEF && ch(&L, 1) == 0xBB && ch(&L, 2) == 0xBF) L.p += 3;  /* UTF-8 byte order mark */
    /* Python source averages 3 to 5 bytes a token: room for most files at
     * once, instead of growing (and copying) the array a dozen times. */
    size_t guess = s->v[file].len / 4 + 64;
    if (guess < (size_t)1 << 24) {
        L.toks.cap = (int)guess;
        L.toks.v = nr_alloc_uninit(L.ta, sizeof(NrToken) * guess);
    }
    push_level(&L, 0, 0);
    bool at_line_start = true;
    for (;;) {
        if (at_line_start && L.nbr == 0) {
            int r = lex_indentation(&L);
            if (r == IND_END) break;
            if (r == IND_BLANK) continue;
            L.bol = true;
        }
        at_line_start = false;
        int c;
        while ((c = ch(&L, 0)) == ' ' || c == '\t' || c == '\f') L.p++;
        if (c < 0) break;
        if (c == '#') {
            skip_to_eol(&L);
        } else if (newline_len(&L)) {
            consume_newline(&L);
            at_line_start = true;
            if (L.nbr == 0 && L.line_has_tok) {
                struct_tok(&L, NR_T_NEWLINE, L.last_end);
                L.line_has_tok = false;
            }
        } else if (c == '\\') {
            lex_backslash(&L);
        } else {
            lex_token(&L);
        }
    }
    for (int i = 0; i < L.nbr; i++) L.toks.v[L.br[i].tok].flags |= NR_TF_UNCLOSED;
    if (L.nbr > 0) {
        Bracket *b = &L.br[L.nbr - 1];
        NrToken *t = struct_tok(&L, NR_T_ERROR, b->loc);
        t->v.msg = nr_sprintf(a, "'%c' was never closed", b->c);
    }
    if (L.line_has_tok) struct_tok(&L, NR_T_NEWLINE, L.last_end);
    while (L.nlv > 1) {
        L.nlv--;
        struct_tok(&L, NR_T_DEDENT, L.last_end);
    }
    struct_tok(&L, NR_T_EOF, L.last_end);
    return L.toks;
}
