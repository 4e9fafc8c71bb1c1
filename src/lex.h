/* lex.h - the tokenizer for Python 3.12 source text (lex.c).
 *
 * nr_lex() turns a whole file into an array of tokens, producing NEWLINE,
 * INDENT and DEDENT the way Python's tokenizer does.  It never fails: a file
 * is mostly host Python that Nereid does not compile, so anything malformed
 * (an invalid character, an unterminated string, an unmatched bracket, a bad
 * dedent) becomes an NR_T_ERROR token carrying its message.  The parser
 * reports such a token only when it meets it inside kernel code.
 *
 * Locations: line is 1-based; col is the 1-based byte column (a tab counts
 * as one column).  "\r\n" and a lone "\r" end lines like "\n". */
#ifndef NR_LEX_H
#define NR_LEX_H

#include "arena.h"
#include "diag.h"

#include <stdbool.h>
#include <stdint.h>

/* X(ID, spelling used in messages).  Keywords lie between KW_FALSE and
 * KW_YIELD, in byte order of their spellings (the keyword lookup relies on it). */
#define NR_TOKEN_LIST(X) \
    X(EOF, "end of file") X(NEWLINE, "end of line") X(INDENT, "an indent") X(DEDENT, "a dedent") \
    X(ERROR, "an invalid token") \
    X(NAME, "a name") X(INT, "an integer literal") X(FLOAT, "a float literal") \
    X(IMAG, "an imaginary literal") X(STRING, "a string literal") \
    X(KW_FALSE, "False") X(KW_NONE, "None") X(KW_TRUE, "True") X(KW_AND, "and") X(KW_AS, "as") \
    X(KW_ASSERT, "assert") X(KW_ASYNC, "async") X(KW_AWAIT, "await") X(KW_BREAK, "break") \
    X(KW_CLASS, "class") X(KW_CONTINUE, "continue") X(KW_DEF, "def") X(KW_DEL, "del") \
    X(KW_ELIF, "elif") X(KW_ELSE, "else") X(KW_EXCEPT, "except") X(KW_FINALLY, "finally") \
    X(KW_FOR, "for") X(KW_FROM, "from") X(KW_GLOBAL, "global") X(KW_IF, "if") \
    X(KW_IMPORT, "import") X(KW_IN, "in") X(KW_IS, "is") X(KW_LAMBDA, "lambda") \
    X(KW_NONLOCAL, "nonlocal") X(KW_NOT, "not") X(KW_OR, "or") X(KW_PASS, "pass") \
    X(KW_RAISE, "raise") X(KW_RETURN, "return") X(KW_TRY, "try") X(KW_WHILE, "while") \
    X(KW_WITH, "with") X(KW_YIELD, "yield") \
    X(LPAR, "(") X(RPAR, ")") X(LSQB, "[") X(RSQB, "]") X(LBRACE, "{") X(RBRACE, "}") \
    X(COLON, ":") X(COMMA, ",") X(SEMI, ";") X(DOT, ".") X(ELLIPSIS, "...") X(ARROW, "->") \
    X(WALRUS, ":=") X(AT, "@") X(ASSIGN, "=") \
    X(PLUS, "+") X(MINUS, "-") X(STAR, "*") X(SLASH, "/") X(DSLASH, "//") X(PERCENT, "%") \
    X(DSTAR, "**") X(LSHIFT, "<<") X(RSHIFT, ">>") X(AMP, "&") X(VBAR, "|") X(CIRC, "^") \
    X(TILDE, "~") \
    X(LT, "<") X(GT, ">") X(LE, "<=") X(GE, ">=") X(EQ, "==") X(NE, "!=") \
    X(PLUSEQ, "+=") X(MINUSEQ, "-=") X(STAREQ, "*=") X(SLASHEQ, "/=") X(DSLASHEQ, "//=") \
    X(PERCENTEQ, "%=") X(DSTAREQ, "**=") X(LSHIFTEQ, "<<=") X(RSHIFTEQ, ">>=") X(AMPEQ, "&=") \
    X(VBAREQ, "|=") X(CIRCEQ, "^=") X(ATEQ, "@=")

typedef enum NrTokKind {
#define X(id, s) NR_T_##id,
    NR_TOKEN_LIST(X)
#undef X
    NR_T_COUNT
} NrTokKind;

/* Token flags. */
enum {
    NR_TF_BOL = 1,        /* first token of a logical line (after its INDENT/DEDENTs) */
    NR_TF_OVERFLOW = 2,   /* NR_T_INT: the value does not fit in 64 bits */
    NR_TF_BYTES = 4,      /* NR_T_STRING: a bytes literal (b'...') */
    NR_TF_FSTRING = 8,    /* NR_T_STRING: an f-string, kept undecoded */
    NR_TF_RAW = 16,       /* NR_T_STRING: a raw string (r'...') */
    NR_TF_UNCLOSED = 32,  /* an opening bracket that is never closed */
};

typedef struct NrToken {
    uint8_t kind;         /* NrTokKind */
    uint8_t flags;        /* NR_TF_* */
    int32_t depth;        /* indentation level of the token's logical line (0 = module level) */
    NrLoc loc;            /* of the first byte */
    const char *text;     /* the token's bytes in the source (not NUL-terminated) */
    size_t len;
    union {
        uint64_t u;                              /* NR_T_INT, unless NR_TF_OVERFLOW */
        double f;                                /* NR_T_FLOAT, NR_T_IMAG (the imaginary part) */
        struct { const char *s; size_t n; } str; /* NR_T_NAME: the name; NR_T_STRING: the contents
                                                    with escapes decoded (f-strings: as written);
                                                    NUL-terminated, may hold NULs */
        const char *msg;                         /* NR_T_ERROR: the diagnostic to give */
    } v;
} NrToken;

typedef struct NrTokens {
    NrToken *v;
    int n, cap;           /* v[n - 1] is NR_T_EOF */
} NrTokens;

/* Tokenize source `file` of `s`.  Never fails.  Names, string contents and
 * messages are allocated from `a`; the token array from `tok_arena`, which
 * may be `a` or a scratch arena released once parsing is done. */
NrTokens nr_lex(NrArena *a, NrArena *tok_arena, const NrSources *s, uint32_t file);
/* How a token kind is named in messages: "'('", "'if'", "end of line", "a name". */
const char *nr_tok_describe(NrTokKind k);
/* The spelling of an operator or keyword ("(", "if"); a description for other kinds. */
const char *nr_tok_spelling(NrTokKind k);

#endif
