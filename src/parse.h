/* parse.h - internal interface between the parts of the parser:
 *   parse.c       the module level: kernels, decorators, imports, globals,
 *                 skipping host code, and the AST dump
 *   parse_stmt.c  statements and blocks of a kernel
 *   parse_expr.c  expressions
 *
 * Error discipline: the first syntax error in a kernel sets `err`; from then
 * on every token read returns the EOF token, so all loops end and every
 * parse function unwinds at once (returning NULL) without further messages.
 * In `quiet` mode (speculative parses of host code) errors are not recorded.
 * An NR_T_ERROR token from the lexer is reported when it is read. */
#ifndef NR_PARSE_H
#define NR_PARSE_H

#include "ast.h"
#include "lex.h"

enum { NR_PARSE_MAX_DEPTH = 200 };

typedef struct NrParser {
    NrArena *a;
    NrDiags *d;
    uint32_t file;
    NrToken *toks;
    int ntoks;
    int pos;             /* current token; toks[ntoks - 1] is EOF */
    bool err;            /* a syntax error stopped the current item */
    bool quiet;          /* speculative parse: record no diagnostics */
    int depth;           /* expression nesting */
    int sdepth;          /* block nesting */
    NrToken eof;         /* what every read returns after an error */
} NrParser;

/* Token access (parse.c). */
const NrToken *nr_p_peek(NrParser *p);
/* The current token's kind (nr_p_peek's, inline for the common case). */
static inline NrTokKind nr_p_kind(NrParser *p) {
    if (!p->err && p->toks[p->pos].kind != NR_T_ERROR) return (NrTokKind)p->toks[p->pos].kind;
    return (NrTokKind)nr_p_peek(p)->kind;
}
/* The kind of the token k places ahead, without reporting error tokens. */
NrTokKind nr_p_kind_at(const NrParser *p, int k);
const NrToken *nr_p_next(NrParser *p);          /* returns the token consumed */
bool nr_p_accept(NrParser *p, NrTokKind k);
/* Consume a token of kind k, or report "expected 'k' <context>" at the current token. */
const NrToken *nr_p_expect(NrParser *p, NrTokKind k, const char *context);
void nr_p_error(NrParser *p, NrLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "expected ..." at the current token; an error token's own message wins. */
void nr_p_error_here(NrParser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error for a closing bracket that is missing at the current token:
 * "'(' was never closed" at `open` when the current token is on a later line,
 * else "expected <what>". */
void nr_p_unclosed(NrParser *p, const NrToken *open, const char *what);
bool nr_p_enter(NrParser *p);                   /* false (with an error) when nested too deeply */
/* The index of the first of names[0..n) that repeats an earlier one, or -1
 * (O(n log n), so that huge inputs stay fast). */
int nr_p_first_duplicate(NrArena *a, const char *const *names, int n);
void nr_p_leave(NrParser *p);

/* Expressions (parse_expr.c). */
NrExpr *nr_p_new_expr(NrParser *p, NrExprKind k, NrLoc loc);
/* test: or_test ['if' or_test 'else' test] */
NrExpr *nr_p_test(NrParser *p);
/* testlist: test (',' test)* [','] - a tuple when there is a comma */
NrExpr *nr_p_testlist(NrParser *p);
/* exprlist: expr (',' expr)* [','] - for targets: stops before 'in' */
NrExpr *nr_p_exprlist(NrParser *p);
/* Check that e can be assigned to; `aug` for augmented assignment. */
bool nr_p_check_target(NrParser *p, const NrExpr *e, bool aug);

/* Statements (parse_stmt.c). */
/* suite: simple_stmt | NEWLINE INDENT stmt+ DEDENT */
bool nr_p_suite(NrParser *p, NrStmtList *out);

#endif
