/* parse_expr.c - expressions of the kernel language, by recursive descent
 * with Python's precedence (lowest first):
 *
 *   conditional  a if c else b          (right-associative)
 *   or, and, not
 *   comparison   < <= > >= == != is [not] [not] in   (one operator; chains rejected)
 *   |  ^  &  << >>  + -  * / // % @     (left-associative)
 *   unary        + - ~
 *   power        **                     (right-associative; binds tighter than a
 *                                        unary operator on its left: -x**2 = -(x**2))
 *   primary      call, attribute, subscript
 *
 * Node locations: operators (binary, unary, comparison, and/or, the `if` of
 * a conditional) are located at the operator token; names and literals at
 * their token; calls, attributes and subscripts at the start of the whole
 * primary; tuples at their first token; lists at '['.
 *
 * Besides the nesting limit on recursion, every node records its height in
 * a hidden box, so that a long flat chain (a + a + ... + a) that would make
 * the tree too deep for the recursive passes after the parser is rejected
 * here as well. */
#include "parse.h"
#include "util.h"

#include <stddef.h>
#include <string.h>

enum { MAX_HEIGHT = 1000 };

typedef struct ExprBox {
    int height;
    NrExpr e;
} ExprBox;

static int height(const NrExpr *e) {
    return e ? ((const ExprBox *)((const char *)e - offsetof(ExprBox, e)))->height : 0;
}

NrExpr *nr_p_new_expr(NrParser *p, NrExprKind k, NrLoc loc) {
    ExprBox *b = nr_alloc(p->a, sizeof *b);
    b->height = 1;
    b->e.kind = k;
    b->e.loc = loc;
    return &b->e;
}

/* Set e's height from its children; false (with an error) if too tall. */
static bool grow(NrParser *p, NrExpr *e, const NrExpr *a, const NrExpr *b, const NrExpr *c) {
    int h = height(a);
    if (height(b) > h) h = height(b);
    if (height(c) > h) h = height(c);
    ExprBox *box = (ExprBox *)((char *)e - offsetof(ExprBox, e));
    box->height = h + 1 > box->height ? h + 1 : box->height;
    if (box->height > MAX_HEIGHT) {
        nr_p_error(p, e->loc, "expression nested too deeply");
        return false;
    }
    return true;
}

static NrExpr *binop(NrParser *p, NrExprKind k, int op, NrExpr *l, NrExpr *r, NrLoc loc) {
    NrExpr *e = nr_p_new_expr(p, k, loc);
    e->bin.op = op;
    e->bin.l = l;
    e->bin.r = r;
    return grow(p, e, l, r, NULL) ? e : NULL;
}

/* Can token kind k begin an expression? (Decides whether a trailing comma ends a list.) */
static bool starts_expr(NrTokKind k) {
    switch (k) {
    case NR_T_NAME: case NR_T_INT: case NR_T_FLOAT: case NR_T_IMAG: case NR_T_STRING:
    case NR_T_KW_TRUE: case NR_T_KW_FALSE: case NR_T_KW_NONE: case NR_T_ELLIPSIS:
    case NR_T_LPAR: case NR_T_LSQB: case NR_T_LBRACE: case NR_T_PLUS: case NR_T_MINUS: case NR_T_TILDE:
    case NR_T_STAR: case NR_T_DSTAR: case NR_T_KW_NOT: case NR_T_KW_LAMBDA: case NR_T_KW_AWAIT: case NR_T_KW_YIELD:
        return true;
    default:
        return false;
    }
}

/* Growable array of expressions. */
typedef struct ExprVec {
    NrExpr **v;
    int n, cap;
} ExprVec;

static void push_expr(NrParser *p, ExprVec *v, NrExpr *e) { *NR_PUSH(p->a, v->v, v->n, v->cap) = e; }

static NrExpr *seq(NrParser *p, NrExprKind k, NrLoc loc, ExprVec *v) {
    NrExpr *e = nr_p_new_expr(p, k, loc);
    e->seq.v = v->v;
    e->seq.n = v->n;
    for (int i = 0; i < v->n; i++)
        if (!grow(p, e, v->v[i], NULL, NULL)) return NULL;
    return e;
}

static NrExpr *unsupported(NrParser *p, NrLoc loc, const char *what) {
    nr_p_error(p, loc, "%s", what);
    return NULL;
}

/* An element of a tuple, list or subscript: `*x` would be a starred
 * expression there, which kernels do not support. */
static NrExpr *element(NrParser *p, NrExpr *(*item)(NrParser *)) {
    const NrToken *t = nr_p_peek(p);
    if (t->kind == NR_T_STAR) return unsupported(p, t->loc, "starred expressions are not supported in kernels");
    return item(p);
}

/* --- atoms ----------------------------------------------------------------------------------- */

/* strings: STRING+   (adjacent literals are concatenated) */
static NrExpr *strings(NrParser *p) {
    NrLoc loc = nr_p_peek(p)->loc;
    const NrToken **parts = NULL;
    int n = 0, cap = 0;
    size_t total = 0;
    while (nr_p_kind(p) == NR_T_STRING) {
        const NrToken *t = nr_p_next(p);
        if (t->flags & NR_TF_FSTRING) return unsupported(p, t->loc, "f-strings are not supported in kernels");
        if (t->flags & NR_TF_BYTES) return unsupported(p, t->loc, "bytes literals are not supported in kernels");
        *NR_PUSH(p->a, parts, n, cap) = t;
        total += t->v.str.n;
    }
    if (p->err) return NULL;
    char *s = nr_alloc(p->a, total + 1), *o = s;
    for (int i = 0; i < n; i++) {
        memcpy(o, parts[i]->v.str.s, parts[i]->v.str.n);
        o += parts[i]->v.str.n;
    }
    NrExpr *e = nr_p_new_expr(p, NR_E_STR, loc);
    e->str.s = s;
    e->str.len = total;
    return e;
}

/* paren: '(' [test (',' test)* [',']] ')' */
static NrExpr *paren(NrParser *p) {
    const NrToken *open = nr_p_next(p);
    ExprVec v = {0};
    if (nr_p_accept(p, NR_T_RPAR)) return seq(p, NR_E_TUPLE, open->loc, &v);
    NrExpr *first = element(p, nr_p_test);
    if (!first) return NULL;
    NrTokKind k = nr_p_kind(p);
    if (k == NR_T_KW_FOR || k == NR_T_KW_ASYNC)
        return unsupported(p, first->loc, "generator expressions are not supported in kernels");
    if (nr_p_accept(p, NR_T_RPAR)) return first;
    push_expr(p, &v, first);
    while (nr_p_accept(p, NR_T_COMMA) && nr_p_kind(p) != NR_T_RPAR) {
        NrExpr *e = element(p, nr_p_test);
        if (!e) return NULL;
        push_expr(p, &v, e);
    }
    if (!nr_p_accept(p, NR_T_RPAR)) {
        nr_p_unclosed(p, open, "',' or ')'");
        return NULL;
    }
    return seq(p, NR_E_TUPLE, open->loc, &v);
}

/* list: '[' [test (',' test)* [',']] ']' */
static NrExpr *list(NrParser *p) {
    const NrToken *open = nr_p_next(p);
    ExprVec v = {0};
    while (nr_p_kind(p) != NR_T_RSQB) {
        NrExpr *e = element(p, nr_p_test);
        if (!e) return NULL;
        NrTokKind k = nr_p_kind(p);
        if (k == NR_T_KW_FOR || k == NR_T_KW_ASYNC)
            return unsupported(p, open->loc, "list comprehensions are not supported in kernels");
        push_expr(p, &v, e);
        if (!nr_p_accept(p, NR_T_COMMA)) break;
    }
    if (!nr_p_accept(p, NR_T_RSQB)) {
        nr_p_unclosed(p, open, "',' or ']'");
        return NULL;
    }
    return seq(p, NR_E_LIST, open->loc, &v);
}

/* brace: '{' ... '}' - dicts, sets and their comprehensions, all rejected;
 * the first element is parsed to tell them apart. */
static NrExpr *brace(NrParser *p) {
    const NrToken *open = nr_p_next(p);
    NrTokKind k = nr_p_kind(p);
    if (k == NR_T_RBRACE || k == NR_T_DSTAR) return unsupported(p, open->loc, "dict literals are not supported in kernels");
    if (!nr_p_test(p)) return NULL;
    k = nr_p_kind(p);
    if (k == NR_T_KW_FOR || k == NR_T_KW_ASYNC)
        return unsupported(p, open->loc, "set comprehensions are not supported in kernels");
    if (k != NR_T_COLON) return unsupported(p, open->loc, "set literals are not supported in kernels");
    nr_p_next(p);
    if (!nr_p_test(p)) return NULL;
    k = nr_p_kind(p);
    if (k == NR_T_KW_FOR || k == NR_T_KW_ASYNC)
        return unsupported(p, open->loc, "dict comprehensions are not supported in kernels");
    return unsupported(p, open->loc, "dict literals are not supported in kernels");
}

/* atom: NAME | INT | FLOAT | strings | True | False | None | '...' | paren | list | brace */
static NrExpr *atom(NrParser *p) {
    const NrToken *t = nr_p_peek(p);
    NrExpr *e;
    switch (t->kind) {
    case NR_T_NAME:
        e = nr_p_new_expr(p, NR_E_NAME, t->loc);
        e->name.id = t->v.str.s;
        break;
    case NR_T_INT:
        if (t->flags & NR_TF_OVERFLOW) return unsupported(p, t->loc, "integer literal is too large (the limit is 2**64-1)");
        e = nr_p_new_expr(p, NR_E_INT, t->loc);
        e->lit.u = t->v.u;
        break;
    case NR_T_FLOAT:
        e = nr_p_new_expr(p, NR_E_FLOAT, t->loc);
        e->lit.f = t->v.f;
        break;
    case NR_T_KW_TRUE:
    case NR_T_KW_FALSE:
        e = nr_p_new_expr(p, NR_E_BOOL, t->loc);
        e->lit.b = t->kind == NR_T_KW_TRUE;
        break;
    case NR_T_KW_NONE: e = nr_p_new_expr(p, NR_E_NONE, t->loc); break;
    case NR_T_ELLIPSIS: e = nr_p_new_expr(p, NR_E_ELLIPSIS, t->loc); break;
    case NR_T_STRING: return strings(p);
    case NR_T_LPAR: return paren(p);
    case NR_T_LSQB: return list(p);
    case NR_T_LBRACE: return brace(p);
    case NR_T_IMAG: return unsupported(p, t->loc, "imaginary literals are not supported in kernels");
    case NR_T_KW_LAMBDA: return unsupported(p, t->loc, "'lambda' is not supported in kernels");
    case NR_T_KW_YIELD: return unsupported(p, t->loc, "'yield' is not supported in kernels");
    case NR_T_KW_AWAIT: return unsupported(p, t->loc, "'await' is not supported in kernels");
    default:
        nr_p_error_here(p, "expected an expression");
        return NULL;
    }
    nr_p_next(p);
    return e;
}

/* --- primaries ------------------------------------------------------------------------------- */

/* call: primary '(' [arg (',' arg)* [',']] ')'    arg: test | NAME '=' test */
static NrExpr *call(NrParser *p, NrExpr *func) {
    const NrToken *open = nr_p_next(p);
    NrExpr *e = nr_p_new_expr(p, NR_E_CALL, func->loc);
    ExprVec args = {0};
    NrKwarg *kw = NULL;
    int nkw = 0, capkw = 0;
    e->call.func = func;
    if (!grow(p, e, func, NULL, NULL)) return NULL;
    while (nr_p_kind(p) != NR_T_RPAR) {
        const NrToken *t = nr_p_peek(p);
        if (t->kind == NR_T_STAR) return unsupported(p, t->loc, "'*' argument unpacking is not supported in kernels");
        if (t->kind == NR_T_DSTAR) return unsupported(p, t->loc, "'**' argument unpacking is not supported in kernels");
        if (t->kind == NR_T_NAME && nr_p_kind_at(p, 1) == NR_T_ASSIGN) {
            nr_p_next(p);
            nr_p_next(p);
            NrExpr *v = nr_p_test(p);
            if (!v || !grow(p, e, v, NULL, NULL)) return NULL;
            NrKwarg *k = NR_PUSH(p->a, kw, nkw, capkw);
            k->name = t->v.str.s;
            k->value = v;
            k->loc = t->loc;
        } else {
            NrExpr *v = nr_p_test(p);
            if (!v || !grow(p, e, v, NULL, NULL)) return NULL;
            NrTokKind k = nr_p_kind(p);
            if (k == NR_T_KW_FOR || k == NR_T_KW_ASYNC)
                return unsupported(p, t->loc, "generator expressions are not supported in kernels");
            if (k == NR_T_ASSIGN)
                return unsupported(p, t->loc, "a keyword argument must be a plain name before '=' (did you mean '=='?)");
            if (nkw > 0) return unsupported(p, t->loc, "positional argument follows keyword argument");
            push_expr(p, &args, v);
        }
        if (!nr_p_accept(p, NR_T_COMMA)) break;
    }
    if (!nr_p_accept(p, NR_T_RPAR)) {
        nr_p_unclosed(p, open, "',' or ')' after a call argument");
        return NULL;
    }
    const char **names = nr_alloc(p->a, sizeof(char *) * (size_t)(nkw + 1));
    for (int i = 0; i < nkw; i++) names[i] = kw[i].name;
    int dup = nr_p_first_duplicate(p->a, names, nkw);
    if (dup >= 0) return unsupported(p, kw[dup].loc, nr_sprintf(p->a, "repeated keyword argument '%s'", names[dup]));
    e->call.args = args.v;
    e->call.nargs = args.n;
    e->call.kw = kw;
    e->call.nkw = nkw;
    return e;
}

/* subscript_item: test | [test] ':' [test] [':' [test]] */
static NrExpr *subscript_item(NrParser *p) {
    NrLoc loc = nr_p_peek(p)->loc;
    NrExpr *lo = NULL;
    if (nr_p_kind(p) != NR_T_COLON) {
        lo = element(p, nr_p_test);
        if (!lo || nr_p_kind(p) != NR_T_COLON) return lo;
    }
    nr_p_next(p);
    NrExpr *s = nr_p_new_expr(p, NR_E_SLICE, loc);
    s->slice.lo = lo;
    NrTokKind k = nr_p_kind(p);
    if (k != NR_T_COLON && k != NR_T_COMMA && k != NR_T_RSQB && !(s->slice.hi = nr_p_test(p))) return NULL;
    if (nr_p_accept(p, NR_T_COLON)) {
        k = nr_p_kind(p);
        if (k != NR_T_COMMA && k != NR_T_RSQB && !(s->slice.step = nr_p_test(p))) return NULL;
    }
    return grow(p, s, s->slice.lo, s->slice.hi, s->slice.step) ? s : NULL;
}

/* subscript: primary '[' subscript_item (',' subscript_item)* [','] ']'
 * A tuple of indices is flattened into sub.idx. */
static NrExpr *subscript(NrParser *p, NrExpr *value) {
    const NrToken *open = nr_p_next(p);
    NrExpr *e = nr_p_new_expr(p, NR_E_SUBSCRIPT, value->loc);
    ExprVec idx = {0};
    e->sub.value = value;
    if (!grow(p, e, value, NULL, NULL)) return NULL;
    if (nr_p_kind(p) == NR_T_RSQB) {
        nr_p_error_here(p, "expected an index");
        return NULL;
    }
    do {
        NrExpr *i = subscript_item(p);
        if (!i || !grow(p, e, i, NULL, NULL)) return NULL;
        push_expr(p, &idx, i);
    } while (nr_p_accept(p, NR_T_COMMA) && nr_p_kind(p) != NR_T_RSQB);
    if (!nr_p_accept(p, NR_T_RSQB)) {
        nr_p_unclosed(p, open, "',' or ']' after an index");
        return NULL;
    }
    e->sub.idx = idx.v;
    e->sub.nidx = idx.n;
    return e;
}

/* primary: atom ('.' NAME | call | subscript)* */
static NrExpr *primary(NrParser *p) {
    NrExpr *e = atom(p);
    while (e) {
        NrTokKind k = nr_p_kind(p);
        if (k == NR_T_DOT) {
            nr_p_next(p);
            const NrToken *name = nr_p_expect(p, NR_T_NAME, "after '.'");
            if (!name) return NULL;
            NrExpr *a = nr_p_new_expr(p, NR_E_ATTR, e->loc);
            a->attr.value = e;
            a->attr.name = name->v.str.s;
            a->attr.name_loc = name->loc;
            e = grow(p, a, e, NULL, NULL) ? a : NULL;
        } else if (k == NR_T_LPAR) {
            e = call(p, e);
        } else if (k == NR_T_LSQB) {
            e = subscript(p, e);
        } else {
            break;
        }
    }
    return e;
}

/* --- operators ------------------------------------------------------------------------------- */

static NrExpr *factor(NrParser *p);

/* power: primary ['**' factor] */
static NrExpr *power(NrParser *p) {
    NrExpr *base = primary(p);
    if (!base || nr_p_kind(p) != NR_T_DSTAR) return base;
    NrLoc loc = nr_p_next(p)->loc;
    if (!nr_p_enter(p)) return NULL;
    NrExpr *exp = factor(p);
    nr_p_leave(p);
    return exp ? binop(p, NR_E_BINOP, NR_BIN_POW, base, exp, loc) : NULL;
}

/* factor: ('+' | '-' | '~') factor | power */
static NrExpr *factor(NrParser *p) {
    const NrToken *t = nr_p_peek(p);
    int op;
    switch (t->kind) {
    case NR_T_PLUS: op = NR_UN_POS; break;
    case NR_T_MINUS: op = NR_UN_NEG; break;
    case NR_T_TILDE: op = NR_UN_INVERT; break;
    default: return power(p);
    }
    nr_p_next(p);
    if (!nr_p_enter(p)) return NULL;
    NrExpr *x = factor(p);
    nr_p_leave(p);
    if (!x) return NULL;
    NrExpr *e = nr_p_new_expr(p, NR_E_UNARY, t->loc);
    e->un.op = op;
    e->un.x = x;
    return grow(p, e, x, NULL, NULL) ? e : NULL;
}

/* The binary operators from '|' (level 0) to '*' (level 5). */
static const struct {
    NrTokKind tok;
    int op, level;
} binops[] = {
    {NR_T_VBAR, NR_BIN_BITOR, 0},  {NR_T_CIRC, NR_BIN_BITXOR, 1},   {NR_T_AMP, NR_BIN_BITAND, 2},
    {NR_T_LSHIFT, NR_BIN_LSHIFT, 3}, {NR_T_RSHIFT, NR_BIN_RSHIFT, 3}, {NR_T_PLUS, NR_BIN_ADD, 4},
    {NR_T_MINUS, NR_BIN_SUB, 4},   {NR_T_STAR, NR_BIN_MUL, 5},      {NR_T_SLASH, NR_BIN_DIV, 5},
    {NR_T_DSLASH, NR_BIN_FLOORDIV, 5}, {NR_T_PERCENT, NR_BIN_MOD, 5}, {NR_T_AT, NR_BIN_MATMUL, 5},
};
enum { BIN_LEVELS = 6 };

/* The binary operator of token kind k and its level; -1 if k is none. */
static int binop_of(NrTokKind k, int *level) {
    for (size_t i = 0; i < NR_COUNTOF(binops); i++)
        if (binops[i].tok == k) {
            *level = binops[i].level;
            return binops[i].op;
        }
    return -1;
}

/* expr: xor_expr ('|' xor_expr)*      xor_expr: and_expr ('^' and_expr)*
 * and_expr: shift ('&' shift)*         shift: arith (('<<'|'>>') arith)*
 * arith: term (('+'|'-') term)*        term: factor (('*'|'/'|'//'|'%'|'@') factor)* */
static NrExpr *binary(NrParser *p, int level) {
    /* By precedence: an operator of level L takes as its right operand
     * everything of the levels above L, and operators of one level group
     * to the left (as the grammar's levels, one token lookup per operator). */
    NrExpr *l = factor(p);
    int op, lv;
    while (l && (op = binop_of(nr_p_kind(p), &lv)) >= 0 && lv >= level) {
        NrLoc loc = nr_p_next(p)->loc;
        NrExpr *r = binary(p, lv + 1);
        l = r ? binop(p, NR_E_BINOP, op, l, r, loc) : NULL;
    }
    return l;
}

/* comp_op: '<' | '>' | '==' | '>=' | '<=' | '!=' | 'in' | 'not' 'in' | 'is' | 'is' 'not'
 * Returns the NrCmpOp at the current token (and its length in tokens), or -1. */
static int comp_op(NrParser *p, int *ntok) {
    *ntok = 1;
    switch (nr_p_kind(p)) {
    case NR_T_LT: return NR_CMP_LT;
    case NR_T_LE: return NR_CMP_LE;
    case NR_T_GT: return NR_CMP_GT;
    case NR_T_GE: return NR_CMP_GE;
    case NR_T_EQ: return NR_CMP_EQ;
    case NR_T_NE: return NR_CMP_NE;
    case NR_T_KW_IN: return NR_CMP_IN;
    case NR_T_KW_NOT:
        if (nr_p_kind_at(p, 1) != NR_T_KW_IN) return -1;
        *ntok = 2;
        return NR_CMP_NOTIN;
    case NR_T_KW_IS:
        if (nr_p_kind_at(p, 1) != NR_T_KW_NOT) return NR_CMP_IS;
        *ntok = 2;
        return NR_CMP_ISNOT;
    default: return -1;
    }
}

/* comparison: expr [comp_op expr] */
static NrExpr *comparison(NrParser *p) {
    NrExpr *l = binary(p, 0);
    int n, op;
    if (!l || (op = comp_op(p, &n)) < 0) return l;
    NrLoc loc = nr_p_peek(p)->loc;
    while (n-- > 0) nr_p_next(p);
    NrExpr *r = binary(p, 0);
    if (!r) return NULL;
    if (comp_op(p, &n) >= 0)
        return unsupported(p, nr_p_peek(p)->loc,
                           "chained comparisons such as 'a < b < c' are rejected by Triton; use '(a < b) & (b < c)'");
    return binop(p, NR_E_COMPARE, op, l, r, loc);
}

/* not_test: 'not' not_test | comparison */
static NrExpr *not_test(NrParser *p) {
    if (nr_p_kind(p) != NR_T_KW_NOT) return comparison(p);
    NrLoc loc = nr_p_next(p)->loc;
    if (!nr_p_enter(p)) return NULL;
    NrExpr *x = not_test(p);
    nr_p_leave(p);
    if (!x) return NULL;
    NrExpr *e = nr_p_new_expr(p, NR_E_UNARY, loc);
    e->un.op = NR_UN_NOT;
    e->un.x = x;
    return grow(p, e, x, NULL, NULL) ? e : NULL;
}

/* and_test: not_test ('and' not_test)* */
static NrExpr *and_test(NrParser *p) {
    NrExpr *l = not_test(p);
    while (l && nr_p_kind(p) == NR_T_KW_AND) {
        NrLoc loc = nr_p_next(p)->loc;
        NrExpr *r = not_test(p);
        l = r ? binop(p, NR_E_BOOLOP, NR_BOOL_AND, l, r, loc) : NULL;
    }
    return l;
}

/* or_test: and_test ('or' and_test)* */
static NrExpr *or_test(NrParser *p) {
    NrExpr *l = and_test(p);
    while (l && nr_p_kind(p) == NR_T_KW_OR) {
        NrLoc loc = nr_p_next(p)->loc;
        NrExpr *r = and_test(p);
        l = r ? binop(p, NR_E_BOOLOP, NR_BOOL_OR, l, r, loc) : NULL;
    }
    return l;
}

/* test: or_test ['if' or_test 'else' test] */
static NrExpr *conditional(NrParser *p) {
    NrExpr *then = or_test(p);
    if (!then || nr_p_kind(p) != NR_T_KW_IF) return then;
    NrLoc loc = nr_p_next(p)->loc;
    NrExpr *cond = or_test(p);
    if (!cond || !nr_p_expect(p, NR_T_KW_ELSE, "in the conditional expression")) return NULL;
    NrExpr *els = nr_p_test(p);
    if (!els) return NULL;
    NrExpr *e = nr_p_new_expr(p, NR_E_IFEXP, loc);
    e->ifexp.cond = cond;
    e->ifexp.then = then;
    e->ifexp.els = els;
    return grow(p, e, cond, then, els) ? e : NULL;
}

NrExpr *nr_p_test(NrParser *p) {
    if (!nr_p_enter(p)) return NULL;
    NrExpr *e = conditional(p);
    nr_p_leave(p);
    if (e && nr_p_kind(p) == NR_T_WALRUS)
        return unsupported(p, nr_p_peek(p)->loc, "assignment expressions (':=') are not supported in kernels");
    return e;
}

/* A comma-separated list of `item`s, a tuple if there is a comma. */
static NrExpr *item_list(NrParser *p, NrExpr *(*item)(NrParser *)) {
    NrLoc loc = nr_p_peek(p)->loc;
    NrExpr *first = element(p, item);
    if (!first || nr_p_kind(p) != NR_T_COMMA) return first;
    ExprVec v = {0};
    push_expr(p, &v, first);
    while (nr_p_accept(p, NR_T_COMMA) && starts_expr(nr_p_kind(p))) {
        NrExpr *e = element(p, item);
        if (!e) return NULL;
        push_expr(p, &v, e);
    }
    return p->err ? NULL : seq(p, NR_E_TUPLE, loc, &v);
}

NrExpr *nr_p_testlist(NrParser *p) { return item_list(p, nr_p_test); }

static NrExpr *bitor_expr(NrParser *p) {
    if (!nr_p_enter(p)) return NULL;
    NrExpr *e = binary(p, 0);
    nr_p_leave(p);
    return e;
}

NrExpr *nr_p_exprlist(NrParser *p) { return item_list(p, bitor_expr); }

/* --- assignment targets ---------------------------------------------------------------------- */

bool nr_p_check_target(NrParser *p, const NrExpr *e, bool aug) {
    const char *what = "expression";
    switch (e->kind) {
    case NR_E_NAME: case NR_E_ATTR: case NR_E_SUBSCRIPT:
        return true;
    case NR_E_TUPLE:
    case NR_E_LIST:
        if (aug) {
            nr_p_error(p, e->loc, "'%s' is an illegal expression for augmented assignment",
                       e->kind == NR_E_TUPLE ? "tuple" : "list");
            return false;
        }
        for (int i = 0; i < e->seq.n; i++)
            if (!nr_p_check_target(p, e->seq.v[i], false)) return false;
        return true;
    case NR_E_CALL: what = "function call"; break;
    case NR_E_INT: case NR_E_FLOAT: case NR_E_STR: case NR_E_ELLIPSIS: what = "literal"; break;
    case NR_E_BOOL: what = e->lit.b ? "True" : "False"; break;
    case NR_E_NONE: what = "None"; break;
    case NR_E_COMPARE: what = "comparison"; break;
    case NR_E_IFEXP: what = "conditional expression"; break;
    default: break;
    }
    nr_p_error(p, e->loc, "cannot assign to %s", what);
    return false;
}
