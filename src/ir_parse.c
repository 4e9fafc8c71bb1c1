/* ir_parse.c - reads the IR's text form (docs/ir.md) into a module.
 *
 * A hand-written recursive-descent parser over a small on-demand lexer.  It
 * resolves value names as it goes (a name must be defined before its use, in
 * the same block or an enclosing one), builds the IR through ir.h's builder
 * API, interns types, and records each op's location: its `loc(L:C)` when
 * written, else the line and column of its name in the IR text.  The first
 * syntax error stops the parse with a diagnostic at its line and column;
 * a module that parses is then verified (ir_verify.c).
 *
 * Nothing in the input may crash the parser: region nesting, pointer nesting,
 * list lengths, ranks and dimensions are all bounded, and every lookahead
 * stays inside the text.  Newlines are white space except in one place: an
 * op's operand list starts on the line of its name, so that `yield` or
 * `barrier` followed by an op on the next line is not misread. */
#include "gpu.h"
#include "ir.h"
#include "util.h"

#include <locale.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_NEST = 200,          /* regions inside regions */
    MAX_PTR_DEPTH = 8,       /* ptr<ptr<...>> */
    MAX_LIST = 1 << 16,      /* operands, results, types, params, attribute list elements */
    MAX_REGIONS = 16,        /* regions of one op */
    MAX_NUMBER_CHARS = 400,  /* a numeric literal */
    NAME_BUCKETS = 4096,
};

typedef enum {
    T_EOF, T_ERR, T_IDENT, T_VALUE, T_FUNC, T_INT, T_FLOAT, T_STRING,
    T_LBRACE, T_RBRACE, T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK,
    T_COMMA, T_COLON, T_EQ, T_CARET, T_MINUS, T_ARROW,
    T_HASH, T_LT, T_GT, T_BANG,     /* GPU IR: layout table and !smem types */
} TokKind;

typedef struct Tok {
    TokKind kind;
    size_t start, end;   /* byte offsets into the text */
    uint32_t line, col;
} Tok;

/* A lexer position: everything needed to resume lexing at `pos`. */
typedef struct LexPos {
    size_t pos, line_start;
    uint32_t line;
} LexPos;

/* A visible value name.  Names of one function live on a stack; entering a
 * region records the stack height and leaving it pops back, so a name is
 * visible exactly in its own block and the blocks nested in it. */
typedef struct Name {
    const char *s;
    size_t n;
    NrValId v;
    int next;            /* next entry in the same hash bucket, or -1 */
    NrLoc loc;           /* where it was defined */
} Name;

typedef struct Parser {
    NrModule *m;
    NrDiags *d;
    const char *src;     /* NUL-terminated copy registered in the module's sources */
    size_t len;
    uint32_t file;
    Tok tok;             /* current token */
    LexPos lp;           /* lexer position after tok */
    bool failed;
    NrArena scratch;     /* parse-time tables, freed at the end */
    NrFunc *f;           /* function being parsed */
    Name *names; int nnames, capnames;
    Name *retired; int nretired, capretired;  /* names whose region has closed (for messages) */
    int *buckets;
} Parser;

/* --- errors ------------------------------------------------------------------------------------ */
static NrLoc tok_loc(const Parser *p, const Tok *t) { return (NrLoc){p->file, t->line, t->col}; }

static void error_at(Parser *p, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void error_at(Parser *p, NrLoc loc, const char *fmt, ...) {
    if (p->failed) return;
    p->failed = true;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    nr_error(p->d, loc, "%s", buf);
}

/* A short, printable description of token t for messages. */
static const char *describe(Parser *p, const Tok *t) {
    if (t->kind == T_EOF) return "end of input";
    size_t n = t->end - t->start;
    const unsigned char *s = (const unsigned char *)p->src + t->start;
    if (t->kind == T_ERR) {
        if (s[0] == '"' || (s[0] == '@' && s[1] == '"')) return "an unterminated string";
        if (s[0] == '%' || s[0] == '@') return nr_sprintf(&p->scratch, "a bare '%c'", s[0]);
        if (s[0] >= 0x20 && s[0] < 0x7f) return nr_sprintf(&p->scratch, "'%c'", s[0]);
        return nr_sprintf(&p->scratch, "character 0x%02x", s[0]);
    }
    if (n > 24) return nr_sprintf(&p->scratch, "'%.*s...'", 20, (const char *)s);
    return nr_sprintf(&p->scratch, "'%.*s'", (int)n, (const char *)s);
}

static void error_tok(Parser *p, const char *what) {
    error_at(p, tok_loc(p, &p->tok), "expected %s, got %s", what, describe(p, &p->tok));
}

/* --- lexer ------------------------------------------------------------------------------------- */
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(int c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '$'; }

static int peekc(const Parser *p, size_t i) { return i < p->len ? (unsigned char)p->src[i] : -1; }

static void skip_space(Parser *p, LexPos *lp) {
    for (;;) {
        int c = peekc(p, lp->pos);
        if (c == '\n') {
            lp->pos++;
            lp->line++;
            lp->line_start = lp->pos;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lp->pos++;
        } else if (c == '/' && peekc(p, lp->pos + 1) == '/') {
            while (lp->pos < p->len && p->src[lp->pos] != '\n') lp->pos++;
        } else {
            return;
        }
    }
}

/* "..." with the escapes \\ \" \n \t \r \xHH; no raw newline.  i is at the
 * opening quote; returns the offset after the closing quote, or 0 if the
 * string does not end on its line. */
static size_t scan_string(const Parser *p, size_t i) {
    i++;
    for (;;) {
        int c = peekc(p, i);
        if (c < 0 || c == '\n') return 0;
        if (c == '"') return i + 1;
        i += (c == '\\' && peekc(p, i + 1) >= 0 && peekc(p, i + 1) != '\n') ? 2 : 1;
    }
}

/* digits ['.' digits] [('e'|'E') ['+'|'-'] digits] */
static size_t scan_number(const Parser *p, size_t i, TokKind *kind) {
    *kind = T_INT;
    while (is_digit(peekc(p, i))) i++;
    if (peekc(p, i) == '.' && is_digit(peekc(p, i + 1))) {
        *kind = T_FLOAT;
        i++;
        while (is_digit(peekc(p, i))) i++;
    }
    int e = peekc(p, i);
    if (e == 'e' || e == 'E') {
        size_t j = i + 1;
        if (peekc(p, j) == '+' || peekc(p, j) == '-') j++;
        if (is_digit(peekc(p, j))) {
            *kind = T_FLOAT;
            i = j;
            while (is_digit(peekc(p, i))) i++;
        }
    }
    return i;
}

static Tok lex(Parser *p, LexPos *lp) {
    skip_space(p, lp);
    Tok t = {T_ERR, lp->pos, lp->pos + 1, lp->line, (uint32_t)(lp->pos - lp->line_start + 1)};
    size_t i = lp->pos;
    int c = peekc(p, i);
    if (c < 0) {
        t.kind = T_EOF;
        t.end = i;
        return t;
    }
    switch (c) {
    case '{': t.kind = T_LBRACE; break;
    case '}': t.kind = T_RBRACE; break;
    case '(': t.kind = T_LPAREN; break;
    case ')': t.kind = T_RPAREN; break;
    case '[': t.kind = T_LBRACK; break;
    case ']': t.kind = T_RBRACK; break;
    case ',': t.kind = T_COMMA; break;
    case ':': t.kind = T_COLON; break;
    case '=': t.kind = T_EQ; break;
    case '^': t.kind = T_CARET; break;
    case '#': t.kind = T_HASH; break;
    case '<': t.kind = T_LT; break;
    case '>': t.kind = T_GT; break;
    case '!': t.kind = T_BANG; break;
    case '-':
        if (peekc(p, i + 1) == '>') {
            t.kind = T_ARROW;
            t.end = i + 2;
        } else {
            t.kind = T_MINUS;
        }
        break;
    case '%':
    case '@': {
        size_t j = i + 1;
        if (c == '@' && peekc(p, j) == '"') {
            j = scan_string(p, j);
            if (!j) break; /* T_ERR: unterminated */
        } else {
            while (is_name_char(peekc(p, j))) j++;
            if (j == i + 1) break; /* T_ERR: a bare sigil */
        }
        t.kind = c == '%' ? T_VALUE : T_FUNC;
        t.end = j;
        break;
    }
    case '"': {
        size_t j = scan_string(p, i);
        if (j) {
            t.kind = T_STRING;
            t.end = j;
        }
        break;
    }
    default:
        if (is_digit(c)) {
            t.end = scan_number(p, i, &t.kind);
        } else if (is_alpha(c)) {
            size_t j = i;
            while (is_alpha(peekc(p, j)) || is_digit(peekc(p, j)) || peekc(p, j) == '.') j++;
            t.kind = T_IDENT;
            t.end = j;
        }
    }
    lp->pos = t.end;
    return t;
}

static void advance(Parser *p) { p->tok = lex(p, &p->lp); }

/* The token after the current one, without consuming anything. */
static Tok peek_tok(Parser *p, int ahead) {
    LexPos lp = p->lp;
    Tok t = p->tok;
    for (int i = 0; i < ahead; i++) t = lex(p, &lp);
    return t;
}

/* Restart lexing at the current token's first character (for the character-
 * level type scanner). */
static LexPos pos_of_tok(const Tok *t) {
    return (LexPos){t->start, t->start - (t->col - 1), t->line};
}

static bool tok_is(const Parser *p, const Tok *t, const char *word) {
    size_t n = strlen(word);
    return t->kind == T_IDENT && t->end - t->start == n && memcmp(p->src + t->start, word, n) == 0;
}

static bool accept(Parser *p, TokKind k) {
    if (p->tok.kind != k) return false;
    advance(p);
    return true;
}

static bool expect(Parser *p, TokKind k, const char *what) {
    if (accept(p, k)) return true;
    error_tok(p, what);
    return false;
}

/* --- literals ---------------------------------------------------------------------------------- */
/* INT token as a magnitude; false (with a diagnostic) if it exceeds limit. */
static bool int_value(Parser *p, const Tok *t, uint64_t limit, uint64_t *out) {
    uint64_t v = 0;
    for (size_t i = t->start; i < t->end; i++) {
        unsigned dg = (unsigned)(p->src[i] - '0');
        if (v > (limit - dg) / 10) {
            error_at(p, tok_loc(p, t), "integer %s is out of range", describe(p, t));
            return false;
        }
        v = v * 10 + dg;
    }
    *out = v;
    return true;
}

/* ['-'] INT, as an int64 */
static bool parse_int64(Parser *p, int64_t *out) {
    bool neg = accept(p, T_MINUS);
    if (p->tok.kind != T_INT) {
        error_tok(p, "an integer");
        return false;
    }
    uint64_t mag;
    if (!int_value(p, &p->tok, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &mag)) return false;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    advance(p);
    return true;
}

/* INT in [lo, INT32_MAX] */
static bool parse_int32(Parser *p, int32_t lo, int32_t *out) {
    Tok t = p->tok;
    int64_t v;
    if (!parse_int64(p, &v)) return false;
    if (v < lo || v > INT32_MAX) {
        error_at(p, tok_loc(p, &t), "integer %lld is out of range [%d, %d]", (long long)v, lo, INT32_MAX);
        return false;
    }
    *out = (int32_t)v;
    return true;
}

static bool float_value(Parser *p, const Tok *t, bool neg, double *out) {
    size_t n = t->end - t->start;
    if (n > MAX_NUMBER_CHARS) {
        error_at(p, tok_loc(p, t), "number is too long");
        return false;
    }
    char buf[MAX_NUMBER_CHARS + 2];
    buf[0] = '-';
    memcpy(buf + 1, p->src + t->start, n);
    buf[n + 1] = 0;
    /* strtod reads the C locale's decimal point; the text always has '.' */
    char point = localeconv()->decimal_point[0];
    for (char *c = buf; *c; c++)
        if (*c == '.') *c = point;
    *out = strtod(neg ? buf : buf + 1, NULL);
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode the string literal at [start, end) (quotes included) into the
 * module's arena. */
static char *decode_string(Parser *p, size_t start, size_t end, NrLoc loc) {
    char *out = nr_alloc(p->m->arena, end - start);
    size_t n = 0;
    for (size_t i = start + 1; i + 1 < end; i++) {
        char c = p->src[i];
        if (c == 0) {
            error_at(p, loc, "strings may not contain NUL characters");
            return NULL;
        }
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        char e = p->src[++i];
        switch (e) {
        case '\\': out[n++] = '\\'; break;
        case '"': out[n++] = '"'; break;
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'x': {
            int hi = i + 1 < end - 1 ? hexval(p->src[i + 1]) : -1;
            int lo = i + 2 < end - 1 ? hexval(p->src[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                error_at(p, loc, "expected two hex digits after \\x in string");
                return NULL;
            }
            if (hi == 0 && lo == 0) {
                error_at(p, loc, "strings may not contain NUL characters");
                return NULL;
            }
            out[n++] = (char)(hi * 16 + lo);
            i += 2;
            break;
        }
        default:
            error_at(p, loc, "unknown escape sequence '\\%c' in string", e >= 0x20 && e < 0x7f ? e : '?');
            return NULL;
        }
    }
    out[n] = 0;
    return out;
}

/* --- types ------------------------------------------------------------------------------------- */
/* Types are scanned character by character from the current token's start,
 * because `64x32xf16` is not made of ordinary tokens.  Only spaces and tabs
 * may appear inside a type. */
typedef struct TypeScan {
    Parser *p;
    LexPos lp;
    uint32_t line, col0;  /* position of the type's first character */
    size_t start;
} TypeScan;

static NrLoc scan_loc(const TypeScan *s) {
    return (NrLoc){s->p->file, s->line, s->col0 + (uint32_t)(s->lp.pos - s->start)};
}

static void scan_blanks(TypeScan *s) {
    while (peekc(s->p, s->lp.pos) == ' ' || peekc(s->p, s->lp.pos) == '\t') s->lp.pos++;
}

static bool scan_char(TypeScan *s, char c, const char *what) {
    scan_blanks(s);
    if (peekc(s->p, s->lp.pos) == c) {
        s->lp.pos++;
        return true;
    }
    error_at(s->p, scan_loc(s), "expected %s in type", what);
    return false;
}

/* A word of [A-Za-z0-9_]: dtype names, `ptr`, `tensor`. */
static size_t scan_word(TypeScan *s) {
    size_t i = s->lp.pos;
    while (is_alpha(peekc(s->p, i)) || is_digit(peekc(s->p, i))) i++;
    return i - s->lp.pos;
}

/* elem := dtype | 'ptr' '<' elem '>'   (pointer nesting is a loop, bounded) */
static bool scan_elem(TypeScan *s, NrType *t) {
    int depth = 0;
    for (;;) {
        scan_blanks(s);
        size_t n = scan_word(s);
        const char *w = s->p->src + s->lp.pos;
        if (n == 3 && memcmp(w, "ptr", 3) == 0 && peekc(s->p, s->lp.pos + 3) == '<') {
            if (++depth > MAX_PTR_DEPTH) {
                error_at(s->p, scan_loc(s), "pointer types nest more than %d deep", MAX_PTR_DEPTH);
                return false;
            }
            s->lp.pos += 4;
            continue;
        }
        NrDtype dt = nr_dtype_from_ir(w, n);
        if (dt == NR_DT_INVALID) {
            if (n) error_at(s->p, scan_loc(s), "unknown element type '%.*s'", (int)(n > 24 ? 24 : n), w);
            else error_at(s->p, scan_loc(s), "expected an element type");
            return false;
        }
        s->lp.pos += n;
        t->dtype = (uint8_t)dt;
        t->ptr = (uint8_t)depth;
        for (int i = 0; i < depth; i++)
            if (!scan_char(s, '>', "'>'")) return false;
        return true;
    }
}

/* A positive decimal that fits int32 (what: "block dimensions", "layout ids"). */
static bool scan_dim(TypeScan *s, const char *what, int32_t *out) {
    TypeScan at = *s; /* diagnostics point at the number's first digit */
    int64_t v = 0;
    while (is_digit(peekc(s->p, s->lp.pos))) {
        v = v * 10 + (peekc(s->p, s->lp.pos) - '0');
        if (v > INT32_MAX) {
            error_at(s->p, scan_loc(&at), "%s must fit in 32 bits", what);
            return false;
        }
        s->lp.pos++;
    }
    if (v <= 0) {
        error_at(s->p, scan_loc(&at), "%s must be positive", what);
        return false;
    }
    *out = (int32_t)v;
    return true;
}

/* The word at the scan position is exactly `w` followed by '<'. */
static bool scan_opens(TypeScan *s, const char *w) {
    size_t n = strlen(w);
    for (size_t i = 0; i < n; i++)
        if (peekc(s->p, s->lp.pos + i) != (unsigned char)w[i]) return false;
    return peekc(s->p, s->lp.pos + n) == '<';
}

/* type := elem | ('tensor' | '!smem') '<' (dim 'x')+ elem [',' '#L' INT] '>'
 * A `!smem` buffer (GPU IR) always names its shared layout. */
static NrTypeId parse_type(Parser *p) {
    if (p->failed) return NR_NONE;
    if (p->tok.kind != T_IDENT && p->tok.kind != T_BANG) {
        error_tok(p, "a type");
        return NR_NONE;
    }
    TypeScan s = {p, pos_of_tok(&p->tok), p->tok.line, p->tok.col, p->tok.start};
    NrType t;
    memset(&t, 0, sizeof t);
    bool smem = scan_opens(&s, "!smem");
    if (p->tok.kind == T_BANG && !smem) {
        error_at(p, scan_loc(&s), "expected a type ('!smem<...>')");
        return NR_NONE;
    }
    if (smem || scan_opens(&s, "tensor")) {
        s.lp.pos += smem ? 6 : 7;
        if (smem) t.kind = NR_TK_MEMDESC;
        for (;;) {
            scan_blanks(&s);
            if (!is_digit(peekc(p, s.lp.pos))) break;
            if (t.rank == NR_MAX_RANK) {
                error_at(p, scan_loc(&s), "block rank exceeds %d", NR_MAX_RANK);
                return NR_NONE;
            }
            if (!scan_dim(&s, "block dimensions", &t.shape[t.rank])) return NR_NONE;
            t.rank++;
            if (peekc(p, s.lp.pos) != 'x') {
                error_at(p, scan_loc(&s), "expected 'x' after a block dimension");
                return NR_NONE;
            }
            s.lp.pos++;
        }
        if (t.rank == 0) {
            error_at(p, scan_loc(&s), "a %s type needs at least one dimension", smem ? "!smem" : "tensor");
            return NR_NONE;
        }
        if (!scan_elem(&s, &t)) return NR_NONE;
        scan_blanks(&s);
        if (peekc(p, s.lp.pos) == ',' || smem) {
            if (!scan_char(&s, ',', "',' and the buffer's shared layout")) return NR_NONE;
            scan_blanks(&s);
            TypeScan at = s;
            if (peekc(p, s.lp.pos) != '#' || peekc(p, s.lp.pos + 1) != 'L' || !is_digit(peekc(p, s.lp.pos + 2))) {
                error_at(p, scan_loc(&s), "expected a layout '#L<n>'");
                return NR_NONE;
            }
            s.lp.pos += 2;
            if (!scan_dim(&s, "layout ids", &t.layout)) return NR_NONE;
            if (t.layout >= p->m->nlayouts) {
                error_at(p, scan_loc(&at), "undefined layout #L%d", t.layout);
                return NR_NONE;
            }
        }
        if (!scan_char(&s, '>', "'>'")) return NR_NONE;
    } else if (!scan_elem(&s, &t)) {
        return NR_NONE;
    }
    if (is_name_char(peekc(p, s.lp.pos))) {
        error_at(p, scan_loc(&s), "unexpected character after type");
        return NR_NONE;
    }
    p->lp = s.lp;
    advance(p);
    return nr_type_intern(p->m, &t);
}

/* type (',' type)*  into an array of the scratch arena */
static bool parse_type_list(Parser *p, NrTypeId **out, int *n) {
    int cap = 0;
    *out = NULL;
    *n = 0;
    do {
        if (*n == MAX_LIST) {
            error_at(p, tok_loc(p, &p->tok), "more than %d types in a list", MAX_LIST);
            return false;
        }
        NrTypeId t = parse_type(p);
        if (!t) return false;
        *NR_PUSH(&p->scratch, *out, *n, cap) = t;
    } while (accept(p, T_COMMA));
    return true;
}

/* --- value names ------------------------------------------------------------------------------- */
static unsigned hash_name(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h % NAME_BUCKETS;
}

static Name *find_name(Parser *p, const char *s, size_t n) {
    for (int i = p->buckets[hash_name(s, n)]; i >= 0; i = p->names[i].next)
        if (p->names[i].n == n && memcmp(p->names[i].s, s, n) == 0) return &p->names[i];
    return NULL;
}

/* Binds value token t (with its '%') to v in the current scope. */
static bool bind(Parser *p, const Tok *t, NrValId v) {
    const char *s = p->src + t->start + 1;
    size_t n = t->end - t->start - 1;
    Name *old = find_name(p, s, n);
    if (old) {
        error_at(p, tok_loc(p, t), "value %%%.*s is already defined at %u:%u", (int)n, s, old->loc.line,
                 old->loc.col);
        return false;
    }
    unsigned h = hash_name(s, n);
    Name *e = NR_PUSH(&p->scratch, p->names, p->nnames, p->capnames);
    *e = (Name){s, n, v, p->buckets[h], tok_loc(p, t)};
    p->buckets[h] = p->nnames - 1;
    return true;
}

/* Pops the names bound since the stack had `mark` entries.  Entries leave in
 * the reverse order they came, so each is at the head of its bucket. */
static void pop_names(Parser *p, int mark) {
    while (p->nnames > mark) {
        Name *e = &p->names[--p->nnames];
        p->buckets[hash_name(e->s, e->n)] = e->next;
        *NR_PUSH(&p->scratch, p->retired, p->nretired, p->capretired) = *e;
    }
}

static void reset_names(Parser *p) {
    p->nnames = 0;
    p->nretired = 0;
    for (int i = 0; i < NAME_BUCKETS; i++) p->buckets[i] = -1;
}

/* operand := value | '_' */
static bool parse_operand(Parser *p, NrValId *out) {
    Tok t = p->tok;
    if (tok_is(p, &t, "_")) {
        advance(p);
        *out = NR_NONE;
        return true;
    }
    if (t.kind != T_VALUE) {
        error_tok(p, "an operand");
        return false;
    }
    const char *s = p->src + t.start + 1;
    size_t n = t.end - t.start - 1;
    Name *e = find_name(p, s, n);
    if (!e) {
        for (int i = p->nretired - 1; i >= 0; i--) {
            if (p->retired[i].n == n && memcmp(p->retired[i].s, s, n) == 0) {
                error_at(p, tok_loc(p, &t),
                         "value %%%.*s is not visible here: it is defined at %u:%u in a region that does not enclose "
                         "this use",
                         (int)n, s, p->retired[i].loc.line, p->retired[i].loc.col);
                return false;
            }
        }
        error_at(p, tok_loc(p, &t), "use of undefined value %%%.*s", (int)n, s);
        return false;
    }
    *out = e->v;
    advance(p);
    return true;
}

/* --- attributes -------------------------------------------------------------------------------- */
typedef struct PAttr {
    NrAttrName name;
    NrAttr a;
} PAttr;

/* attrval := ['-'] (INT | FLOAT | 'inf') | 'nan' | 'true' | 'false' | STRING
 *          | '[' [['-'] INT (',' ['-'] INT)*] ']' */
static bool parse_attr_value(Parser *p, NrAttr *a) {
    Tok t = p->tok;
    if (t.kind == T_STRING) {
        a->kind = NR_AK_STR;
        a->v.s = decode_string(p, t.start, t.end, tok_loc(p, &t));
        advance(p);
        return a->v.s != NULL;
    }
    if (tok_is(p, &t, "true") || tok_is(p, &t, "false")) {
        a->kind = NR_AK_BOOL;
        a->v.i = tok_is(p, &t, "true");
        advance(p);
        return true;
    }
    if (tok_is(p, &t, "nan")) {
        a->kind = NR_AK_FLOAT;
        a->v.f = __builtin_nan("");
        advance(p);
        return true;
    }
    if (accept(p, T_LBRACK)) {
        int64_t *v = NULL;
        int n = 0, cap = 0;
        if (p->tok.kind != T_RBRACK) {
            do {
                if (n == MAX_LIST) {
                    error_at(p, tok_loc(p, &p->tok), "more than %d elements in a list", MAX_LIST);
                    return false;
                }
                if (!parse_int64(p, NR_PUSH(&p->scratch, v, n, cap))) return false;
            } while (accept(p, T_COMMA));
        }
        if (!expect(p, T_RBRACK, "',' or ']'")) return false;
        a->kind = NR_AK_INTS;
        a->n = n;
        int64_t *copy = nr_alloc(p->m->arena, sizeof(int64_t) * (size_t)(n ? n : 1));
        if (n) memcpy(copy, v, sizeof(int64_t) * (size_t)n);
        a->v.ints = copy;
        return true;
    }
    Tok num = peek_tok(p, t.kind == T_MINUS ? 1 : 0);
    bool neg = t.kind == T_MINUS;
    if (num.kind == T_INT) {
        a->kind = NR_AK_INT;
        return parse_int64(p, &a->v.i);
    }
    if (num.kind == T_FLOAT || tok_is(p, &num, "inf")) {
        a->kind = NR_AK_FLOAT;
        if (num.kind == T_FLOAT) {
            if (!float_value(p, &num, neg, &a->v.f)) return false;
        } else {
            a->v.f = neg ? -__builtin_inf() : __builtin_inf();
        }
        if (neg) advance(p);
        advance(p);
        return true;
    }
    if (neg) advance(p);
    error_tok(p, "an attribute value");
    return false;
}

/* attrdict := '{' NAME '=' attrval (',' NAME '=' attrval)* '}' */
static bool parse_attrs(Parser *p, PAttr **out, int *n) {
    int cap = 0;
    if (!expect(p, T_LBRACE, "'{'")) return false;
    do {
        Tok t = p->tok;
        if (t.kind != T_IDENT) {
            error_tok(p, "an attribute name");
            return false;
        }
        NrAttrName an = nr_attr_from_name(p->src + t.start, t.end - t.start);
        if (an == NR_A_INVALID) {
            error_at(p, tok_loc(p, &t), "unknown attribute %s", describe(p, &t));
            return false;
        }
        for (int i = 0; i < *n; i++) {
            if ((*out)[i].name == an) {
                error_at(p, tok_loc(p, &t), "duplicate attribute '%s'", nr_attr_names[an]);
                return false;
            }
        }
        advance(p);
        if (!expect(p, T_EQ, "'='")) return false;
        PAttr *pa = NR_PUSH(&p->scratch, *out, *n, cap);
        pa->name = an;
        if (!parse_attr_value(p, &pa->a)) return false;
    } while (accept(p, T_COMMA));
    return expect(p, T_RBRACE, "',' or '}'");
}

static void set_attr(NrFunc *f, NrOpId op, const PAttr *pa) {
    const NrAttr *a = &pa->a;
    switch ((NrAttrKind)a->kind) {
    case NR_AK_INT: nr_op_set_int(f, op, pa->name, a->v.i); break;
    case NR_AK_BOOL: nr_op_set_bool(f, op, pa->name, a->v.i != 0); break;
    case NR_AK_FLOAT: nr_op_set_float(f, op, pa->name, a->v.f); break;
    case NR_AK_STR: nr_op_set_str(f, op, pa->name, a->v.s); break;
    case NR_AK_INTS: nr_op_set_ints(f, op, pa->name, a->n, a->v.ints); break;
    }
}

/* --- ops and regions --------------------------------------------------------------------------- */
static bool parse_op(Parser *p, NrBlockId b, int depth);

/* region := '{' ['^' '(' [value ':' type (',' value ':' type)*] ')' ':'] op* '}' */
static bool parse_region(Parser *p, NrBlockId b, int depth) {
    if (depth > MAX_NEST) {
        error_at(p, tok_loc(p, &p->tok), "regions nest more than %d deep", MAX_NEST);
        return false;
    }
    if (!expect(p, T_LBRACE, "'{'")) return false;
    int mark = p->nnames;
    if (accept(p, T_CARET)) {
        if (!expect(p, T_LPAREN, "'(' after '^'")) return false;
        if (p->tok.kind != T_RPAREN) {
            do {
                Tok name = p->tok;
                if (p->f->blocks[b].nargs == MAX_LIST) {
                    error_at(p, tok_loc(p, &name), "more than %d block arguments", MAX_LIST);
                    return false;
                }
                if (!expect(p, T_VALUE, "a block argument name") || !expect(p, T_COLON, "':'")) return false;
                NrTypeId t = parse_type(p);
                if (!t || !bind(p, &name, nr_block_add_arg(p->f, b, t))) return false;
            } while (accept(p, T_COMMA));
        }
        if (!expect(p, T_RPAREN, "',' or ')'") || !expect(p, T_COLON, "':' after the block arguments")) return false;
    }
    while (!p->failed && p->tok.kind != T_RBRACE && p->tok.kind != T_EOF) parse_op(p, b, depth);
    if (p->failed) return false;
    pop_names(p, mark);
    return expect(p, T_RBRACE, "'}'");
}

/* results := value (',' value)* '=' */
static bool parse_results(Parser *p, Tok **res, int *nres) {
    int cap = 0;
    do {
        if (*nres == MAX_LIST) {
            error_at(p, tok_loc(p, &p->tok), "more than %d results", MAX_LIST);
            return false;
        }
        if (p->tok.kind != T_VALUE) {
            error_tok(p, "a result name");
            return false;
        }
        *NR_PUSH(&p->scratch, *res, *nres, cap) = p->tok;
        advance(p);
    } while (accept(p, T_COMMA));
    return expect(p, T_EQ, "'=' after the results");
}

/* An attribute dictionary starts `{ NAME =`; a region starts any other way. */
static bool at_attr_dict(Parser *p) {
    if (p->tok.kind != T_LBRACE) return false;
    Tok a = peek_tok(p, 1), b = peek_tok(p, 2);
    return a.kind == T_IDENT && b.kind == T_EQ;
}

/* loc := 'loc' '(' INT ':' INT ')'   (0:0 is an unknown location) */
static bool parse_loc(Parser *p, NrLoc *loc) {
    advance(p);
    int32_t line, col;
    if (!expect(p, T_LPAREN, "'('") || !parse_int32(p, 0, &line) || !expect(p, T_COLON, "':'") ||
        !parse_int32(p, 0, &col) || !expect(p, T_RPAREN, "')'"))
        return false;
    /* The line refers to the IR's original source, which is not at hand. */
    *loc = (NrLoc){0, (uint32_t)line, (uint32_t)col};
    return true;
}

/* op := [results] NAME [operand (',' operand)*] [attrdict] [':' type (',' type)*] region* [loc]
 * The operand list starts on the line of NAME. */
static bool parse_op(Parser *p, NrBlockId b, int depth) {
    Tok *res = NULL;
    int nres = 0;
    if (p->tok.kind == T_VALUE && !parse_results(p, &res, &nres)) return false;
    Tok name = p->tok;
    if (name.kind != T_IDENT) {
        error_tok(p, "an op name");
        return false;
    }
    NrOpcode opc = nr_opcode_from_name(p->src + name.start, name.end - name.start);
    if (opc == NR_OP_INVALID) {
        error_at(p, tok_loc(p, &name), "unknown op %s", describe(p, &name));
        return false;
    }
    advance(p);

    NrValId *opnds = NULL;
    int nopnds = 0, cap = 0;
    if ((p->tok.kind == T_VALUE || tok_is(p, &p->tok, "_")) && p->tok.line == name.line) {
        do {
            if (nopnds == MAX_LIST) {
                error_at(p, tok_loc(p, &p->tok), "more than %d operands", MAX_LIST);
                return false;
            }
            if (!parse_operand(p, NR_PUSH(&p->scratch, opnds, nopnds, cap))) return false;
        } while (accept(p, T_COMMA));
        /* `%a %b` is a missing comma unless %b starts the next op's results */
        Tok after = peek_tok(p, 1);
        if (p->tok.kind == T_VALUE && after.kind != T_EQ && after.kind != T_COMMA) {
            error_tok(p, "',' between operands");
            return false;
        }
    }
    PAttr *attrs = NULL;
    int nattrs = 0;
    if (at_attr_dict(p) && !parse_attrs(p, &attrs, &nattrs)) return false;
    NrTypeId *types = NULL;
    int ntypes = 0;
    Tok colon = p->tok;
    if (accept(p, T_COLON) && !parse_type_list(p, &types, &ntypes)) return false;
    if (ntypes != nres) {
        error_at(p, tok_loc(p, ntypes ? &colon : &name), "%s has %d result%s but %d result type%s",
                 nr_op_info[opc].name, nres, nres == 1 ? "" : "s", ntypes, ntypes == 1 ? "" : "s");
        return false;
    }

    NrFunc *f = p->f;
    NrOpId op = nr_op_new(f, opc, nopnds, opnds, nres, types, 0, tok_loc(p, &name));
    nr_op_append(f, b, op);
    for (int i = 0; i < nattrs; i++) set_attr(f, op, &attrs[i]);

    NrBlockId regions[MAX_REGIONS];
    int nregions = 0;
    while (p->tok.kind == T_LBRACE) {
        if (nregions == MAX_REGIONS) {
            error_at(p, tok_loc(p, &p->tok), "more than %d regions", MAX_REGIONS);
            return false;
        }
        regions[nregions] = nr_block_new(f, op);
        if (!parse_region(p, regions[nregions++], depth + 1)) return false;
    }
    NrBlockId *regs = nr_alloc(p->m->arena, sizeof(NrBlockId) * (size_t)(nregions ? nregions : 1));
    memcpy(regs, regions, sizeof(NrBlockId) * (size_t)nregions);
    f->ops[op].regions = regs;
    f->ops[op].nregions = (uint8_t)nregions;
    if (tok_is(p, &p->tok, "loc") && peek_tok(p, 1).kind == T_LPAREN && !parse_loc(p, &f->ops[op].loc))
        return false;
    /* An op's results are visible after it, not inside its own regions. */
    for (int i = 0; i < nres; i++)
        if (!bind(p, &res[i], f->ops[op].results[i])) return false;
    return true;
}

/* --- functions and modules --------------------------------------------------------------------- */
typedef struct PParam {
    Tok name;
    NrTypeId type;
    NrParam facts;
} PParam;

/* fact := 'divisibility' '=' INT | 'equal_to_1' | 'constexpr' | 'tensordesc' '=' INT */
static bool parse_facts(Parser *p, NrParam *pa) {
    do {
        if (accept(p, T_RBRACE)) return true; /* allows `{}` */
        Tok t = p->tok;
        if (tok_is(p, &t, "divisibility")) {
            advance(p);
            if (!expect(p, T_EQ, "'='") || !parse_int32(p, 1, &pa->divisibility)) return false;
        } else if (tok_is(p, &t, "equal_to_1")) {
            advance(p);
            pa->equal_to_1 = true;
        } else if (tok_is(p, &t, "constexpr")) {
            advance(p);
            pa->is_constexpr = true;
        } else if (tok_is(p, &t, "tensordesc")) {
            advance(p);
            if (!expect(p, T_EQ, "'='") || !parse_int32(p, 1, &pa->tensordesc)) return false;
            if (pa->tensordesc > 5) {
                error_tok(p, "a tensor descriptor rank of 1 to 5");
                return false;
            }
        } else {
            error_tok(p, "'divisibility', 'equal_to_1', 'constexpr' or 'tensordesc'");
            return false;
        }
    } while (accept(p, T_COMMA));
    return expect(p, T_RBRACE, "',' or '}'");
}

/* param := value ':' type ['{' fact (',' fact)* '}'] */
static bool parse_param(Parser *p, PParam *pp) {
    pp->name = p->tok;
    pp->facts.divisibility = 1;
    if (!expect(p, T_VALUE, "a parameter name") || !expect(p, T_COLON, "':'")) return false;
    pp->type = parse_type(p);
    if (!pp->type) return false;
    if (accept(p, T_LBRACE)) return parse_facts(p, &pp->facts);
    return true;
}

static const char *func_name(Parser *p, const Tok *t) {
    if (p->src[t->start + 1] == '"') {
        const char *s = decode_string(p, t->start + 1, t->end, tok_loc(p, t));
        if (s && !*s) error_at(p, tok_loc(p, t), "function names may not be empty");
        return p->failed ? NULL : s;
    }
    return nr_strndup(p->m->arena, p->src + t->start + 1, t->end - t->start - 1);
}

/* func := 'func' FUNCNAME '(' [param (',' param)*] ')' ['->' '(' [type (',' type)*] ')']
 *         ('kernel' | 'noinline')* ['smem' '=' INT] '{' op* '}' */
static bool parse_func(Parser *p) {
    Tok kw = p->tok;
    advance(p);
    Tok nt = p->tok;
    if (!expect(p, T_FUNC, "a function name '@name'")) return false;
    const char *name = func_name(p, &nt);
    if (!name) return false;
    if (nr_module_find_func(p->m, name)) {
        error_at(p, tok_loc(p, &nt), "function @%s is already defined", name);
        return false;
    }
    if (!expect(p, T_LPAREN, "'('")) return false;
    PParam *params = NULL;
    int nparams = 0, cap = 0;
    if (p->tok.kind != T_RPAREN) {
        do {
            if (nparams == MAX_LIST) {
                error_at(p, tok_loc(p, &p->tok), "more than %d parameters", MAX_LIST);
                return false;
            }
            if (!parse_param(p, NR_PUSH(&p->scratch, params, nparams, cap))) return false;
        } while (accept(p, T_COMMA));
    }
    if (!expect(p, T_RPAREN, "',' or ')'")) return false;
    NrTypeId *rtypes = NULL;
    int nrtypes = 0;
    if (accept(p, T_ARROW)) {
        if (!expect(p, T_LPAREN, "'(' after '->'")) return false;
        if (p->tok.kind != T_RPAREN && !parse_type_list(p, &rtypes, &nrtypes)) return false;
        if (!expect(p, T_RPAREN, "',' or ')'")) return false;
    }
    bool kernel = false, noinline = false;
    for (;;) {
        bool *flag = tok_is(p, &p->tok, "kernel") ? &kernel : tok_is(p, &p->tok, "noinline") ? &noinline : NULL;
        if (!flag) break;
        if (*flag) {
            error_at(p, tok_loc(p, &p->tok), "%s is given twice", describe(p, &p->tok));
            return false;
        }
        *flag = true;
        advance(p);
    }
    int64_t smem = 0;
    if (tok_is(p, &p->tok, "smem")) {
        advance(p);
        if (!expect(p, T_EQ, "'=' after 'smem'") || !parse_int64(p, &smem)) return false;
        if (smem < 0) {
            error_at(p, tok_loc(p, &kw), "smem must not be negative");
            return false;
        }
    }

    NrTypeId *argtypes = nr_alloc(&p->scratch, sizeof(NrTypeId) * (size_t)(nparams ? nparams : 1));
    for (int i = 0; i < nparams; i++) argtypes[i] = params[i].type;
    NrFunc *f = nr_func_new(p->m, name, nparams, argtypes, nrtypes, rtypes);
    f->is_kernel = kernel;
    f->noinline = noinline;
    f->smem_bytes = smem;
    f->loc = tok_loc(p, &kw);
    p->f = f;
    reset_names(p);
    for (int i = 0; i < nparams; i++) {
        NrValId v = f->blocks[f->body].args[i];
        const char *pname = nr_strndup(p->m->arena, p->src + params[i].name.start + 1,
                                       params[i].name.end - params[i].name.start - 1);
        f->params[i] = params[i].facts;
        f->params[i].name = pname;
        f->params[i].index = i;
        f->vals[v].name = pname;
        if (!bind(p, &params[i].name, v)) return false;
    }
    if (!expect(p, T_LBRACE, "'{' to open the function body")) return false;
    while (!p->failed && p->tok.kind != T_RBRACE && p->tok.kind != T_EOF) parse_op(p, f->body, 0);
    return !p->failed && expect(p, T_RBRACE, "'}' to close the function body");
}

/* --- the GPU module header and layout table ------------------------------------------------------ */
/* attributes := 'attributes' '{' 'num_warps' '=' INT ',' 'sm' '=' INT ['a'] '}'
 * (`sm = 90a`: the 'a' right after the digits) */
static bool parse_module_attrs(Parser *p) {
    advance(p);
    if (!expect(p, T_LBRACE, "'{' after 'attributes'")) return false;
    Tok t = p->tok;
    if (!tok_is(p, &t, "num_warps")) {
        error_tok(p, "'num_warps'");
        return false;
    }
    advance(p);
    if (!expect(p, T_EQ, "'='") || !parse_int32(p, 1, &p->m->num_warps)) return false;
    if (!nr_is_pow2(p->m->num_warps) || p->m->num_warps > 32) {
        error_at(p, tok_loc(p, &t), "num_warps must be a power of two from 1 to 32, got %d", p->m->num_warps);
        return false;
    }
    if (!expect(p, T_COMMA, "','")) return false;
    if (!tok_is(p, &p->tok, "sm")) {
        error_tok(p, "'sm'");
        return false;
    }
    advance(p);
    if (!expect(p, T_EQ, "'='")) return false;
    Tok num = p->tok;
    if (!parse_int32(p, 0, &p->m->sm)) return false;
    if (p->tok.kind == T_IDENT && p->tok.start == num.end && tok_is(p, &p->tok, "a")) {
        if (p->m->sm != 90) {
            error_at(p, tok_loc(p, &num), "only sm = 90 has an architecture-specific variant ('90a'), got %da",
                     p->m->sm);
            return false;
        }
        p->m->sm_a = true;
        advance(p);
    }
    return expect(p, T_RBRACE, "'}'");
}

/* layoutref := '#' 'L' INT  (an id defined before `limit`) */
static bool parse_layout_ref(Parser *p, int32_t limit, int32_t *id) {
    Tok h = p->tok;
    if (!expect(p, T_HASH, "a layout '#L<n>'")) return false;
    Tok t = p->tok;
    size_t n = t.end - t.start;
    const char *w = p->src + t.start;
    int64_t v = 0;
    bool ok = t.kind == T_IDENT && t.start == h.end && n >= 2 && n <= 10 && w[0] == 'L';
    for (size_t i = 1; ok && i < n; i++) {
        ok = is_digit(w[i]);
        v = v * 10 + (w[i] - '0');
    }
    if (!ok || v < 1) {
        error_at(p, tok_loc(p, &h), "expected a layout '#L<n>'");
        return false;
    }
    if (v >= limit) {
        error_at(p, tok_loc(p, &h), "undefined layout #L%lld", (long long)v);
        return false;
    }
    *id = (int32_t)v;
    advance(p);
    return true;
}

/* '[' INT (',' INT)* ']' with at most NR_MAX_RANK entries */
static bool parse_small_list(Parser *p, int32_t *v, int *n) {
    *n = 0;
    if (!expect(p, T_LBRACK, "'['")) return false;
    do {
        if (*n == NR_MAX_RANK) {
            error_at(p, tok_loc(p, &p->tok), "more than %d entries", NR_MAX_RANK);
            return false;
        }
        if (!parse_int32(p, INT32_MIN, &v[(*n)++])) return false;
    } while (accept(p, T_COMMA));
    return expect(p, T_RBRACK, "',' or ']'");
}

/* One field `key = value` of a layout; kinds: 'i' INT, 'l' list, 'r' layout ref.
 * `first` is false for the fields after a ','. */
static bool parse_field(Parser *p, const char *key, char kind, bool first, int32_t limit, int32_t *v, int *n) {
    if (!first && !expect(p, T_COMMA, "','")) return false;
    if (!tok_is(p, &p->tok, key)) {
        error_tok(p, nr_sprintf(&p->scratch, "'%s'", key));
        return false;
    }
    advance(p);
    if (!expect(p, T_EQ, "'='")) return false;
    if (kind == 'l') return parse_small_list(p, v, n);
    *n = 1;
    if (kind == 'r') return parse_layout_ref(p, limit, v);
    return parse_int32(p, INT32_MIN, v);
}

/* layout := 'blocked' '<' 'spt' '=' list ',' 'tpw' '=' list ',' 'wpc' '=' list ',' 'order' '=' list '>'
 *         | 'slice' '<' 'dim' '=' INT ',' 'parent' '=' layoutref '>'
 *         | 'mma' '<' 'version' '=' INT ',' 'wpc' '=' list ',' 'instr' '=' list '>'
 *         | 'dot_op' '<' 'op_idx' '=' INT ',' 'parent' '=' layoutref ',' 'k_width' '=' INT '>'
 *         | 'shared' '<' 'vec' '=' INT ',' 'per_phase' '=' INT ',' 'max_phase' '=' INT ',' 'order' '=' list '>'
 *         | 'nvmma_shared' '<' 'swizzle' '=' INT ',' 'order' '=' list '>'
 * Fields come in this order; `self` is the id being defined. */
static bool parse_layout(Parser *p, int32_t self, NrLayout *l) {
    static const struct {
        const char *name;
        NrLayoutKind kind;
        const char *keys[4];
        const char *kinds;
    } forms[] = {
        {"blocked", NR_LK_BLOCKED, {"spt", "tpw", "wpc", "order"}, "llll"},
        {"slice", NR_LK_SLICE, {"dim", "parent"}, "ir"},
        {"mma", NR_LK_MMA, {"version", "wpc", "instr"}, "ill"},
        {"dot_op", NR_LK_DOT_OP, {"op_idx", "parent", "k_width"}, "iri"},
        {"shared", NR_LK_SHARED, {"vec", "per_phase", "max_phase", "order"}, "iiil"},
        {"nvmma_shared", NR_LK_SHARED, {"swizzle", "order"}, "il"},
    };
    int f = -1;
    for (int i = 0; i < (int)NR_COUNTOF(forms); i++)
        if (tok_is(p, &p->tok, forms[i].name)) f = i;
    if (f < 0) {
        error_tok(p, "a layout (blocked, slice, mma, dot_op, shared or nvmma_shared)");
        return false;
    }
    Tok kw = p->tok;
    advance(p);
    if (!expect(p, T_LT, "'<'")) return false;
    int32_t v[4][NR_MAX_RANK] = {{0}};
    int n[4] = {0};
    int nf = (int)strlen(forms[f].kinds);
    for (int i = 0; i < nf; i++)
        if (!parse_field(p, forms[f].keys[i], forms[f].kinds[i], i == 0, self, v[i], &n[i])) return false;
    if (!expect(p, T_GT, "'>'")) return false;
    memset(l, 0, sizeof *l);
    l->kind = (uint8_t)forms[f].kind;
    int rank = n[nf - 1]; /* the order list, where there is one */
    if (f == 0 && (n[0] != rank || n[1] != rank || n[2] != rank)) {
        error_at(p, tok_loc(p, &kw), "the lists of a blocked layout must have one entry per dimension");
        return false;
    }
    switch (f) {
    case 0:
        l->rank = (uint8_t)rank;
        memcpy(l->size_per_thread, v[0], sizeof v[0]);
        memcpy(l->threads_per_warp, v[1], sizeof v[1]);
        memcpy(l->warps_per_cta, v[2], sizeof v[2]);
        memcpy(l->order, v[3], sizeof v[3]);
        break;
    case 1:
        l->dim = v[0][0];
        l->parent = v[1][0];
        l->rank = (uint8_t)(p->m->layouts[l->parent].rank - 1);
        break;
    case 2:
        if (n[2] != 3) {
            error_at(p, tok_loc(p, &kw), "mma instr must have 3 entries (m, n, k)");
            return false;
        }
        l->version = v[0][0];
        l->rank = (uint8_t)n[1];
        memcpy(l->warps_per_cta, v[1], sizeof v[1]);
        memcpy(l->instr, v[2], sizeof l->instr);
        break;
    case 3:
        l->op_idx = v[0][0];
        l->parent = v[1][0];
        l->k_width = v[2][0];
        l->rank = p->m->layouts[l->parent].rank;
        break;
    case 4:
        l->rank = (uint8_t)rank;
        l->vec = v[0][0];
        l->per_phase = v[1][0];
        l->max_phase = v[2][0];
        memcpy(l->order, v[3], sizeof v[3]);
        break;
    default:
        l->rank = (uint8_t)rank;
        l->nvmma = true;
        l->swizzle_bytes = v[0][0];
        memcpy(l->order, v[1], sizeof v[1]);
        break;
    }
    return true;
}

/* layoutdef := '#' 'L' INT '=' layout   (ids 1, 2, ... in order) */
static bool parse_layout_def(Parser *p) {
    Tok h = p->tok;
    int32_t self = p->m->nlayouts ? p->m->nlayouts : 1;
    int32_t id = 0;
    if (!parse_layout_ref(p, INT32_MAX, &id)) return false;
    if (id != self) {
        error_at(p, tok_loc(p, &h), "expected layout #L%d here (layouts are numbered from 1 in order), got #L%d", self,
                 id);
        return false;
    }
    NrLayout l;
    if (!expect(p, T_EQ, "'='") || !parse_layout(p, self, &l)) return false;
    int32_t got = nr_layout_intern(p->m, &l);
    if (got != self) {
        error_at(p, tok_loc(p, &h), "layout #L%d repeats #L%d", self, got);
        return false;
    }
    char why[200];
    if (!nr_layout_check(p->m, self, p->m->num_warps, why, sizeof why)) {
        error_at(p, tok_loc(p, &h), "layout #L%d: %s", self, why);
        return false;
    }
    return true;
}

/* module := 'module' [attributes] '{' layoutdef* func* '}' EOF  |  func* EOF */
static bool parse_module(Parser *p) {
    bool wrapped = tok_is(p, &p->tok, "module");
    if (wrapped) {
        advance(p);
        if (tok_is(p, &p->tok, "attributes") && !parse_module_attrs(p)) return false;
        if (!expect(p, T_LBRACE, "'{' after 'module'")) return false;
        while (!p->failed && p->tok.kind == T_HASH) parse_layout_def(p);
    }
    while (!p->failed && tok_is(p, &p->tok, "func")) parse_func(p);
    if (p->failed) return false;
    if (wrapped && !expect(p, T_RBRACE, "'func' or '}'")) return false;
    if (p->tok.kind != T_EOF) {
        error_tok(p, wrapped ? "end of input" : "'module' or 'func'");
        return false;
    }
    return true;
}

/* The text is registered in the module's sources.  Diagnostics are rendered
 * with d->sources; when that is another table, the text is registered there
 * too, at the same index (the module's table is padded to match), so that
 * locations are valid in both. */
static uint32_t register_text(NrModule *m, NrDiags *d, const char *text, size_t len, const char *filename) {
    if (!d->sources || d->sources == &m->sources) return nr_sources_add(&m->sources, m->arena, filename, text, len);
    uint32_t file = nr_sources_add(d->sources, d->arena, filename, text, len);
    while ((uint32_t)m->sources.n < file) {
        NrSource *pad = NR_PUSH(m->arena, m->sources.v, m->sources.n, m->sources.cap);
        pad->name = "<none>";
        pad->text = "";
    }
    uint32_t mine = nr_sources_add(&m->sources, m->arena, filename, text, len);
    NR_ASSERT(mine == file);
    return file;
}

NrModule *nr_module_parse(NrArena *a, const char *text, size_t len, const char *filename, NrDiags *d) {
    NrModule *m = nr_module_new(a);
    Parser p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.d = d;
    p.file = register_text(m, d, text ? text : "", text ? len : 0, filename);
    p.src = m->sources.v[p.file].text;
    p.len = m->sources.v[p.file].len;
    nr_arena_init(&p.scratch);
    p.buckets = nr_alloc(&p.scratch, sizeof(int) * NAME_BUCKETS);
    reset_names(&p);
    p.lp = (LexPos){0, 0, 1};
    advance(&p);
    bool ok = parse_module(&p);
    nr_arena_free(&p.scratch);
    if (!ok) return NULL;
    if (!nr_module_verify(m, d)) return NULL;
    return m;
}
