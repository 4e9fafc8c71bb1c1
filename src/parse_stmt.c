/* parse_stmt.c - statements and blocks of a kernel.
 *
 * Kernels accept expression statements, (augmented, annotated, multiple,
 * unpacking) assignments, if/elif/else, for, while, return, pass and
 * assert.  Every other Python statement is rejected at its first token
 * with a message naming it.  A statement's location is its first token. */
#include "parse.h"
#include "util.h"

#include <string.h>

static NrStmt *new_stmt(NrParser *p, NrStmtKind k, NrLoc loc) {
    NrStmt *s = nr_alloc(p->a, sizeof *s);
    s->kind = k;
    s->loc = loc;
    return s;
}

/* NrStmtList keeps no capacity: its array has 8 slots, doubled whenever n
 * reaches a power of two from 8 on, so the capacity follows from n. */
static void push_stmt(NrParser *p, NrStmtList *l, NrStmt *s) {
    int n = l->n;
    if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
        int cap = n == 0 ? 8 : 2 * n;
        NrStmt **v = nr_alloc(p->a, sizeof *v * (size_t)cap);
        if (n) memcpy(v, l->v, sizeof *v * (size_t)n);
        l->v = v;
    }
    l->v[l->n++] = s;
}

/* Statements rejected at their first token. */
static const struct {
    NrTokKind k;
    const char *msg;
} rejected[] = {
    {NR_T_KW_BREAK, "'break' is not supported in kernels"},
    {NR_T_KW_CONTINUE, "'continue' is not supported in kernels"},
    {NR_T_KW_TRY, "'try' is not supported in kernels"},
    {NR_T_KW_EXCEPT, "'except' is not supported in kernels"},
    {NR_T_KW_FINALLY, "'finally' is not supported in kernels"},
    {NR_T_KW_WITH, "'with' is not supported in kernels"},
    {NR_T_KW_DEF, "nested 'def' is not supported in kernels; define a separate @jit function"},
    {NR_T_AT, "decorators and nested functions are not supported in kernels"},
    {NR_T_KW_CLASS, "'class' is not supported in kernels"},
    {NR_T_KW_GLOBAL, "'global' is not supported in kernels"},
    {NR_T_KW_NONLOCAL, "'nonlocal' is not supported in kernels"},
    {NR_T_KW_DEL, "'del' is not supported in kernels"},
    {NR_T_KW_RAISE, "'raise' is not supported in kernels"},
    {NR_T_KW_IMPORT, "'import' is not supported in kernels"},
    {NR_T_KW_FROM, "'from ... import' is not supported in kernels"},
    {NR_T_KW_YIELD, "'yield' is not supported in kernels"},
    {NR_T_KW_AWAIT, "'await' is not supported in kernels"},
    {NR_T_KW_ASYNC, "'async' is not supported in kernels"},
    {NR_T_KW_ELSE, "'else' without a matching 'if'"},
    {NR_T_KW_ELIF, "'elif' without a matching 'if'"},
    {NR_T_INDENT, "unexpected indent"},
};

/* The token for messages: "'x'", "'42'", "end of line". */
static const char *tok_text(NrParser *p, const NrToken *t) {
    if (t->kind == NR_T_NAME || t->kind == NR_T_INT || t->kind == NR_T_FLOAT || t->kind == NR_T_IMAG) {
        if (t->len > 24) return nr_sprintf(p->a, "'%.20s...'", t->text);
        return nr_sprintf(p->a, "'%.*s'", (int)t->len, t->text);
    }
    if (t->kind == NR_T_STRING) return "string literal";
    if (t->kind == NR_T_INDENT) return "indent";
    if (t->kind == NR_T_DEDENT) return "dedent";
    return nr_tok_describe(t->kind);
}

/* Is the soft keyword `match` at the current token the start of a match
 * statement?  Decided by a quiet trial parse: match subject ':'. */
static bool is_match_stmt(NrParser *p) {
    const NrToken *t = nr_p_peek(p);
    if (t->kind != NR_T_NAME || strcmp(t->v.str.s, "match") != 0) return false;
    NrTokKind k = nr_p_kind_at(p, 1);
    if (k == NR_T_ASSIGN || k == NR_T_DOT || k == NR_T_NEWLINE || k == NR_T_COLON || k == NR_T_COMMA ||
        k == NR_T_SEMI)
        return false;
    int pos = p->pos, depth = p->depth;
    bool quiet = p->quiet;
    p->quiet = true;
    nr_p_next(p);
    bool yes = nr_p_testlist(p) && nr_p_kind(p) == NR_T_COLON;
    p->pos = pos;
    p->depth = depth;
    p->quiet = quiet;
    p->err = false;
    return yes;
}

static int aug_op(NrTokKind k) {
    switch (k) {
    case NR_T_PLUSEQ: return NR_BIN_ADD;
    case NR_T_MINUSEQ: return NR_BIN_SUB;
    case NR_T_STAREQ: return NR_BIN_MUL;
    case NR_T_SLASHEQ: return NR_BIN_DIV;
    case NR_T_DSLASHEQ: return NR_BIN_FLOORDIV;
    case NR_T_PERCENTEQ: return NR_BIN_MOD;
    case NR_T_DSTAREQ: return NR_BIN_POW;
    case NR_T_LSHIFTEQ: return NR_BIN_LSHIFT;
    case NR_T_RSHIFTEQ: return NR_BIN_RSHIFT;
    case NR_T_AMPEQ: return NR_BIN_BITAND;
    case NR_T_VBAREQ: return NR_BIN_BITOR;
    case NR_T_CIRCEQ: return NR_BIN_BITXOR;
    case NR_T_ATEQ: return NR_BIN_MATMUL;
    default: return -1;
    }
}

/* expr_stmt: testlist ('=' testlist)* ['=' testlist]
 *          | target augassign testlist
 *          | target ':' test ['=' testlist]
 *          | testlist */
static NrStmt *expr_stmt(NrParser *p, NrLoc loc) {
    NrExpr *first = nr_p_testlist(p);
    if (!first) return NULL;
    NrTokKind k = nr_p_kind(p);
    int op = aug_op(k);
    if (k == NR_T_ASSIGN) {
        NrStmt *s = new_stmt(p, NR_S_ASSIGN, loc);
        NrExpr **targets = NULL, *value = first;
        int n = 0, cap = 0;
        while (nr_p_accept(p, NR_T_ASSIGN)) {
            if (!nr_p_check_target(p, value, false)) return NULL;
            *NR_PUSH(p->a, targets, n, cap) = value;
            if (!(value = nr_p_testlist(p))) return NULL;
        }
        s->assign.targets = targets;
        s->assign.ntargets = n;
        s->assign.value = value;
        return s;
    }
    if (op >= 0) {
        if (!nr_p_check_target(p, first, true)) return NULL;
        nr_p_next(p);
        NrStmt *s = new_stmt(p, NR_S_AUGASSIGN, loc);
        s->aug.target = first;
        s->aug.op = op;
        return (s->aug.value = nr_p_testlist(p)) ? s : NULL;
    }
    if (k == NR_T_COLON) {
        if (first->kind == NR_E_TUPLE || first->kind == NR_E_LIST) {
            nr_p_error(p, first->loc, "only single target (not %s) can be annotated",
                       first->kind == NR_E_TUPLE ? "tuple" : "list");
            return NULL;
        }
        if (!nr_p_check_target(p, first, false)) return NULL;
        nr_p_next(p);
        NrStmt *s = new_stmt(p, NR_S_ANNASSIGN, loc);
        s->ann.target = first;
        if (!(s->ann.annotation = nr_p_test(p))) return NULL;
        if (nr_p_accept(p, NR_T_ASSIGN) && !(s->ann.value = nr_p_testlist(p))) return NULL;
        return s;
    }
    NrStmt *s = new_stmt(p, NR_S_EXPR, loc);
    s->expr = first;
    return s;
}

/* small_stmt: 'pass' | 'return' [testlist] | 'assert' test [',' test] | expr_stmt */
static NrStmt *small_stmt(NrParser *p) {
    const NrToken *t = nr_p_peek(p);
    for (size_t i = 0; i < NR_COUNTOF(rejected); i++)
        if (t->kind == rejected[i].k) {
            nr_p_error(p, t->loc, "%s", rejected[i].msg);
            return NULL;
        }
    if (is_match_stmt(p)) {
        nr_p_error(p, t->loc, "'match' statements are not supported in kernels");
        return NULL;
    }
    if (t->kind == NR_T_NAME && strcmp(t->v.str.s, "type") == 0 && nr_p_kind_at(p, 1) == NR_T_NAME) {
        NrTokKind k = nr_p_kind_at(p, 2);
        if (k == NR_T_ASSIGN || k == NR_T_LSQB) {
            nr_p_error(p, t->loc, "'type' alias statements are not supported in kernels");
            return NULL;
        }
    }
    NrStmt *s;
    switch (t->kind) {
    case NR_T_KW_PASS:
        nr_p_next(p);
        return new_stmt(p, NR_S_PASS, t->loc);
    case NR_T_KW_RETURN: {
        nr_p_next(p);
        s = new_stmt(p, NR_S_RETURN, t->loc);
        NrTokKind k = nr_p_kind(p);
        if (k == NR_T_NEWLINE || k == NR_T_SEMI) return s;
        return (s->ret.value = nr_p_testlist(p)) ? s : NULL;
    }
    case NR_T_KW_ASSERT:
        nr_p_next(p);
        s = new_stmt(p, NR_S_ASSERT, t->loc);
        if (!(s->assert_.cond = nr_p_test(p))) return NULL;
        if (nr_p_accept(p, NR_T_COMMA) && !(s->assert_.msg = nr_p_test(p))) return NULL;
        return s;
    default:
        return expr_stmt(p, t->loc);
    }
}

/* simple_stmt: small_stmt (';' small_stmt)* [';'] NEWLINE */
static bool simple_stmt(NrParser *p, NrStmtList *out) {
    do {
        NrStmt *s = small_stmt(p);
        if (!s) return false;
        push_stmt(p, out, s);
    } while (nr_p_accept(p, NR_T_SEMI) && nr_p_kind(p) != NR_T_NEWLINE);
    const NrToken *t = nr_p_peek(p);
    if (t->kind == NR_T_NEWLINE) {
        nr_p_next(p);
        return true;
    }
    if (!p->err) nr_p_error(p, t->loc, "unexpected %s after the statement", tok_text(p, t));
    return false;
}

/* ':' before a block; `what` names the header ("after the if condition"). */
static bool expect_colon(NrParser *p, const char *what) {
    if (nr_p_accept(p, NR_T_COLON)) return true;
    if (nr_p_kind(p) == NR_T_ASSIGN) nr_p_error_here(p, "expected ':' %s ('=' assigns; use '==' to compare)", what);
    else nr_p_error_here(p, "expected ':' %s", what);
    return false;
}

/* if_stmt: 'if' test ':' suite ('elif' test ':' suite)* ['else' ':' suite]
 * An elif becomes an orelse holding one NR_S_IF; each elif counts as one
 * level of nesting, since the tree is that deep. */
static NrStmt *if_stmt(NrParser *p) {
    NrStmt *top = new_stmt(p, NR_S_IF, nr_p_next(p)->loc), *s = top;
    if (!(s->if_.cond = nr_p_test(p)) || !expect_colon(p, "after the if condition") || !nr_p_suite(p, &s->if_.body))
        return NULL;
    int sdepth = p->sdepth;
    bool ok = true;
    while (ok && nr_p_kind(p) == NR_T_KW_ELIF) {
        NrStmt *e = new_stmt(p, NR_S_IF, nr_p_next(p)->loc);
        push_stmt(p, &s->if_.orelse, e);
        s = e;
        if (++p->sdepth > NR_PARSE_MAX_DEPTH) {
            nr_p_error(p, e->loc, "statements nested too deeply");
            ok = false;
        } else {
            ok = (s->if_.cond = nr_p_test(p)) && expect_colon(p, "after the elif condition") &&
                 nr_p_suite(p, &s->if_.body);
        }
    }
    if (ok && nr_p_accept(p, NR_T_KW_ELSE)) ok = expect_colon(p, "after 'else'") && nr_p_suite(p, &s->if_.orelse);
    p->sdepth = sdepth;
    return ok ? top : NULL;
}

/* for_stmt: 'for' exprlist 'in' testlist ':' suite    ('else' is rejected) */
static NrStmt *for_stmt(NrParser *p) {
    NrStmt *s = new_stmt(p, NR_S_FOR, nr_p_next(p)->loc);
    if (!(s->for_.target = nr_p_exprlist(p)) || !nr_p_check_target(p, s->for_.target, false)) return NULL;
    if (!nr_p_expect(p, NR_T_KW_IN, "after the for loop variable")) return NULL;
    if (!(s->for_.iter = nr_p_testlist(p)) || !expect_colon(p, "after the for loop header") ||
        !nr_p_suite(p, &s->for_.body))
        return NULL;
    if (nr_p_kind(p) == NR_T_KW_ELSE) {
        nr_p_error(p, nr_p_peek(p)->loc, "'else' on a 'for' loop is not supported in kernels");
        return NULL;
    }
    return s;
}

/* while_stmt: 'while' test ':' suite    ('else' is rejected) */
static NrStmt *while_stmt(NrParser *p) {
    NrStmt *s = new_stmt(p, NR_S_WHILE, nr_p_next(p)->loc);
    if (!(s->while_.cond = nr_p_test(p)) || !expect_colon(p, "after the while condition") ||
        !nr_p_suite(p, &s->while_.body))
        return NULL;
    if (nr_p_kind(p) == NR_T_KW_ELSE) {
        nr_p_error(p, nr_p_peek(p)->loc, "'else' on a 'while' loop is not supported in kernels");
        return NULL;
    }
    return s;
}

/* stmt: if_stmt | for_stmt | while_stmt | simple_stmt */
static bool stmt(NrParser *p, NrStmtList *out) {
    NrStmt *s;
    switch (nr_p_kind(p)) {
    case NR_T_KW_IF: s = if_stmt(p); break;
    case NR_T_KW_FOR: s = for_stmt(p); break;
    case NR_T_KW_WHILE: s = while_stmt(p); break;
    default: return simple_stmt(p, out);
    }
    if (!s) return false;
    push_stmt(p, out, s);
    return true;
}

/* suite: simple_stmt | NEWLINE INDENT stmt+ DEDENT */
static bool suite(NrParser *p, NrStmtList *out) {
    if (!nr_p_accept(p, NR_T_NEWLINE)) return simple_stmt(p, out);
    if (!nr_p_accept(p, NR_T_INDENT)) {
        nr_p_error_here(p, "expected an indented block");
        return false;
    }
    for (;;) {
        NrTokKind k = nr_p_kind(p);
        if (k == NR_T_DEDENT) {
            nr_p_next(p);
            return true;
        }
        if (k == NR_T_EOF) return false;  /* only after an error: the lexer closes every block */
        if (!stmt(p, out)) return false;
    }
}

bool nr_p_suite(NrParser *p, NrStmtList *out) {
    if (++p->sdepth > NR_PARSE_MAX_DEPTH) {
        nr_p_error(p, nr_p_peek(p)->loc, "statements nested too deeply");
        p->sdepth--;
        return false;
    }
    bool ok = suite(p, out);
    p->sdepth--;
    return ok;
}
