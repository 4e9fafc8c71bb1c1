/* aot_expr.c - the integer expressions of `nereid aot`: grids (`cdiv(n, 1024)`)
 * and config conditions (`n_cols <= 1024`).  See aot.h for the grammar.
 *
 * Expressions are parsed and type-checked (integer or boolean) here, then
 * written out as C99 for the generated launcher, where they are evaluated on
 * int64_t with checked helpers: an overflow or a division by zero clears the
 * evaluation's `ok` flag instead of invoking undefined behavior. */
#include "aot.h"

#include "util.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { MAX_DEPTH = 100 };

typedef struct Parser {
    NrArena *a;
    NrDiags *d;
    uint32_t file;
    const char *text;
    size_t pos, end;
    int depth;
    bool failed;
} Parser;

static NrLoc loc_at(const Parser *p, size_t pos) {
    /* The source line is the whole text; columns count from its start. */
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos; i++) {
        if (p->text[i] == '\n') line++, col = 1;
        else col++;
    }
    return (NrLoc){p->file, (uint32_t)line, (uint32_t)col};
}

static void *fail_at(Parser *p, size_t pos, const char *msg) {
    if (!p->failed) nr_error(p->d, loc_at(p, pos), "%s", msg);
    p->failed = true;
    return NULL;
}

static void skip_space(Parser *p) {
    while (p->pos < p->end && isspace((unsigned char)p->text[p->pos])) p->pos++;
}

/* Whether the next token is `s` (an operator, or a keyword not followed by
 * an identifier character); consumes it if so. */
static bool accept(Parser *p, const char *s) {
    skip_space(p);
    size_t n = strlen(s);
    if (p->pos + n > p->end || memcmp(p->text + p->pos, s, n) != 0) return false;
    if (isalpha((unsigned char)s[0])) {
        char next = p->pos + n < p->end ? p->text[p->pos + n] : 0;
        if (isalnum((unsigned char)next) || next == '_') return false;
    }
    /* '<' must not take the first half of '<=', '/' of '//', and so on. */
    if (n == 1 && p->pos + 1 < p->end) {
        char next = p->text[p->pos + 1];
        if ((s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '!') && next == '=') return false;
        if (s[0] == '/' && next == '/') return false;
        if ((s[0] == '&' || s[0] == '|') && next == s[0]) return false;
    }
    p->pos += n;
    return true;
}

static NrAotExpr *node(Parser *p, NrAotExprKind k, size_t pos) {
    NrAotExpr *e = nr_alloc(p->a, sizeof *e);
    e->kind = k;
    e->loc = loc_at(p, pos);
    return e;
}

static NrAotExpr *binary(Parser *p, const char *op, NrAotExpr *l, NrAotExpr *r, size_t pos) {
    NrAotExpr *e = node(p, NR_AE_BINARY, pos);
    e->op = op;
    e->args = nr_alloc(p->a, 2 * sizeof *e->args);
    e->args[0] = l;
    e->args[1] = r;
    e->nargs = 2;
    return e;
}

static bool want_int(Parser *p, const NrAotExpr *e, const char *what) {
    if (!e->is_bool) return true;
    if (!p->failed) nr_error(p->d, e->loc, "%s must be an integer, not a condition", what);
    p->failed = true;
    return false;
}

static bool want_bool(Parser *p, const NrAotExpr *e, const char *what) {
    if (e->is_bool) return true;
    if (!p->failed) nr_error(p->d, e->loc, "%s must be a condition (a comparison), not an integer", what);
    p->failed = true;
    return false;
}

static NrAotExpr *parse_cond(Parser *p);

static const char *const FUNCS[] = {"cdiv", "min", "max", "next_power_of_2"};
static const char *const FUNC_PREFIXES[] = {"", "triton.", "tl.", "nereid.", "triton.language.", "nereid.language."};

/* The canonical name of a function called as `name`, or NULL. */
static const char *func_name(const char *name) {
    for (size_t i = 0; i < NR_COUNTOF(FUNC_PREFIXES); i++) {
        size_t n = strlen(FUNC_PREFIXES[i]);
        if (strncmp(name, FUNC_PREFIXES[i], n) != 0) continue;
        for (size_t f = 0; f < NR_COUNTOF(FUNCS); f++)
            if (strcmp(name + n, FUNCS[f]) == 0) return FUNCS[f];
    }
    return NULL;
}

/* call := NAME '(' cond (',' cond)* ')'   (after the NAME) */
static NrAotExpr *parse_call(Parser *p, const char *name, size_t pos) {
    const char *fn = func_name(name);
    if (!fn)
        return fail_at(p, pos, nr_sprintf(p->a, "unknown function '%s' (cdiv, min, max and next_power_of_2 are known)",
                                          name));
    NrAotExpr *e = node(p, NR_AE_CALL, pos);
    e->name = fn;
    int cap = 0;
    if (!accept(p, ")")) {
        do {
            NrAotExpr *arg = parse_cond(p);
            if (!arg || !want_int(p, arg, "a function argument")) return NULL;
            *NR_PUSH(p->a, e->args, e->nargs, cap) = arg;
        } while (accept(p, ","));
        skip_space(p);
        if (!accept(p, ")")) return fail_at(p, p->pos, "expected ',' or ')' in the argument list");
    }
    int want = strcmp(fn, "cdiv") == 0 ? 2 : strcmp(fn, "next_power_of_2") == 0 ? 1 : -1;
    if (want > 0 && e->nargs != want)
        return fail_at(p, pos, nr_sprintf(p->a, "%s takes %d argument%s, got %d", fn, want, want == 1 ? "" : "s",
                                          e->nargs));
    if (want < 0 && e->nargs < 2) return fail_at(p, pos, nr_sprintf(p->a, "%s takes at least 2 arguments", fn));
    return e;
}

/* atom := INT | NAME | NAME '(' ... ')' | '(' cond ')' */
static NrAotExpr *parse_atom(Parser *p) {
    skip_space(p);
    size_t start = p->pos;
    if (p->pos >= p->end) return fail_at(p, p->pos, "expected an expression");
    char c = p->text[p->pos];
    if (isdigit((unsigned char)c)) {
        uint64_t v = 0;
        while (p->pos < p->end && isdigit((unsigned char)p->text[p->pos])) {
            unsigned dgt = (unsigned)(p->text[p->pos] - '0');
            if (v > (UINT64_C(9223372036854775807) - dgt) / 10)
                return fail_at(p, start, "integer literal does not fit in 64 bits");
            v = v * 10 + dgt;
            p->pos++;
        }
        if (p->pos < p->end && (isalpha((unsigned char)p->text[p->pos]) || p->text[p->pos] == '.' ||
                                p->text[p->pos] == '_'))
            return fail_at(p, p->pos, "expected an integer (grid and condition expressions compute on integers)");
        NrAotExpr *e = node(p, NR_AE_INT, start);
        e->value = (int64_t)v;
        return e;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        while (p->pos < p->end && (isalnum((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_' ||
                                   (p->text[p->pos] == '.' && p->pos + 1 < p->end &&
                                    (isalpha((unsigned char)p->text[p->pos + 1]) || p->text[p->pos + 1] == '_'))))
            p->pos++;
        const char *name = nr_strndup(p->a, p->text + start, p->pos - start);
        if (strcmp(name, "and") == 0 || strcmp(name, "or") == 0 || strcmp(name, "not") == 0 ||
            strcmp(name, "if") == 0)
            return fail_at(p, start, nr_sprintf(p->a, "expected an expression before '%s'", name));
        if (strcmp(name, "True") == 0 || strcmp(name, "False") == 0) {
            NrAotExpr *e = node(p, NR_AE_INT, start);
            e->value = name[0] == 'T';
            e->is_bool = true;
            return e;
        }
        if (accept(p, "(")) return parse_call(p, name, start);
        if (strchr(name, '.')) return fail_at(p, start, nr_sprintf(p->a, "unknown name '%s'", name));
        NrAotExpr *e = node(p, NR_AE_NAME, start);
        e->name = name;
        return e;
    }
    if (accept(p, "(")) {
        NrAotExpr *e = parse_cond(p);
        if (!e) return NULL;
        if (!accept(p, ")")) return fail_at(p, p->pos, "expected ')'");
        return e;
    }
    if (c == ')' || c == ',') return fail_at(p, start, "expected an expression");
    return fail_at(p, start, nr_sprintf(p->a, "unexpected '%c' in the expression", c));
}

/* unary := '-' unary | atom */
static NrAotExpr *parse_unary(Parser *p) {
    skip_space(p);
    size_t pos = p->pos;
    if (accept(p, "-")) {
        if (++p->depth > MAX_DEPTH) return fail_at(p, pos, "expression nested too deeply");
        NrAotExpr *x = parse_unary(p);
        p->depth--;
        if (!x || !want_int(p, x, "the operand of '-'")) return NULL;
        NrAotExpr *e = node(p, NR_AE_NEG, pos);
        e->args = nr_alloc(p->a, sizeof *e->args);
        e->args[0] = x;
        e->nargs = 1;
        return e;
    }
    if (accept(p, "+")) return fail_at(p, pos, "unary '+' is not supported");
    return parse_atom(p);
}

/* Binary levels: ops (NULL-terminated), the next level, and whether the
 * operands are conditions (and/or) or integers. */
typedef NrAotExpr *(*Level)(Parser *);

static NrAotExpr *parse_level(Parser *p, const char *const *ops, const char *const *canon, Level next, bool logical) {
    NrAotExpr *l = next(p);
    while (l) {
        skip_space(p);
        size_t pos = p->pos;
        int k = -1;
        for (int i = 0; ops[i]; i++)
            if (accept(p, ops[i])) {
                k = i;
                break;
            }
        if (k < 0) return l;
        NrAotExpr *r = next(p);
        if (!r) return NULL;
        const char *what = nr_sprintf(p->a, "the operand of '%s'", ops[k]);
        if (logical ? !(want_bool(p, l, what) && want_bool(p, r, what))
                    : !(want_int(p, l, what) && want_int(p, r, what)))
            return NULL;
        l = binary(p, canon[k], l, r, pos);
        l->is_bool = logical;
    }
    return NULL;
}

static NrAotExpr *parse_term(Parser *p) {
    static const char *const ops[] = {"*", "//", "/", "%", NULL};
    static const char *const canon[] = {"*", "//", "//", "%"};
    return parse_level(p, ops, canon, parse_unary, false);
}

static NrAotExpr *parse_sum(Parser *p) {
    static const char *const ops[] = {"+", "-", NULL};
    return parse_level(p, ops, ops, parse_term, false);
}

/* cmp := sum [op sum]   (comparisons do not chain) */
static NrAotExpr *parse_cmp(Parser *p) {
    static const char *const ops[] = {"<=", ">=", "==", "!=", "<", ">"};
    NrAotExpr *l = parse_sum(p);
    if (!l) return NULL;
    skip_space(p);
    size_t pos = p->pos;
    for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
        if (!accept(p, ops[i])) continue;
        NrAotExpr *r = parse_sum(p);
        const char *what = nr_sprintf(p->a, "the operand of '%s'", ops[i]);
        if (!r || !want_int(p, l, what) || !want_int(p, r, what)) return NULL;
        NrAotExpr *e = binary(p, ops[i], l, r, pos);
        e->is_bool = true;
        skip_space(p);
        for (size_t j = 0; j < NR_COUNTOF(ops); j++)
            if (p->pos + strlen(ops[j]) <= p->end && strncmp(p->text + p->pos, ops[j], strlen(ops[j])) == 0)
                return fail_at(p, p->pos, "comparisons do not chain; join them with 'and'");
        return e;
    }
    return l;
}

/* not_ := ('not' | '!') not_ | cmp */
static NrAotExpr *parse_not(Parser *p) {
    skip_space(p);
    size_t pos = p->pos;
    if (accept(p, "not") || accept(p, "!")) {
        if (++p->depth > MAX_DEPTH) return fail_at(p, pos, "expression nested too deeply");
        NrAotExpr *x = parse_not(p);
        p->depth--;
        if (!x || !want_bool(p, x, "the operand of 'not'")) return NULL;
        NrAotExpr *e = node(p, NR_AE_NOT, pos);
        e->args = nr_alloc(p->a, sizeof *e->args);
        e->args[0] = x;
        e->nargs = 1;
        e->is_bool = true;
        return e;
    }
    return parse_cmp(p);
}

static NrAotExpr *parse_and(Parser *p) {
    static const char *const ops[] = {"and", "&&", NULL};
    static const char *const canon[] = {"and", "and"};
    return parse_level(p, ops, canon, parse_not, true);
}

static NrAotExpr *parse_cond(Parser *p) {
    static const char *const ops[] = {"or", "||", NULL};
    static const char *const canon[] = {"or", "or"};
    if (++p->depth > MAX_DEPTH) return fail_at(p, p->pos, "expression nested too deeply");
    NrAotExpr *e = parse_level(p, ops, canon, parse_and, true);
    p->depth--;
    return e;
}

NrAotExpr *nr_aot_parse_expr(NrArena *a, NrDiags *d, uint32_t file, const char *text, size_t start, size_t end) {
    Parser p = {a, d, file, text, start, end, 0, false};
    NrAotExpr *e = parse_cond(&p);
    if (!e) return NULL;
    skip_space(&p);
    if (p.pos < p.end)
        return fail_at(&p, p.pos, nr_sprintf(a, "unexpected '%c' after the expression", p.text[p.pos]));
    return e;
}

/* ---- C text ---- */

static char *lit(NrArena *a, int64_t v) {
    if (v >= -2147483647 && v <= 2147483647) return nr_sprintf(a, "(int64_t)%" PRId64, v);
    return nr_sprintf(a, "(int64_t)%" PRId64 "LL", v);
}

char *nr_aot_expr_to_c(NrArena *a, const NrAotExpr *e, const char *prefix, NrAotResolver resolve, void *user,
                       NrDiags *d) {
    const char *P = prefix;
    char *x[2] = {NULL, NULL};
    switch (e->kind) {
    case NR_AE_INT: return e->is_bool ? nr_sprintf(a, "%d", (int)e->value) : lit(a, e->value);
    case NR_AE_NAME: {
        NrAotBinding b = {NULL, 0};
        if (!resolve(user, e, &b, d)) return NULL;
        return b.c_name ? nr_sprintf(a, "(int64_t)%s", b.c_name) : lit(a, b.value);
    }
    case NR_AE_NEG:
        if (!(x[0] = nr_aot_expr_to_c(a, e->args[0], P, resolve, user, d))) return NULL;
        return nr_sprintf(a, "%ssub(ok, 0, %s)", P, x[0]);
    case NR_AE_NOT:
        if (!(x[0] = nr_aot_expr_to_c(a, e->args[0], P, resolve, user, d))) return NULL;
        return nr_sprintf(a, "!%s", x[0]);
    case NR_AE_BINARY: {
        for (int i = 0; i < 2; i++)
            if (!(x[i] = nr_aot_expr_to_c(a, e->args[i], P, resolve, user, d))) return NULL;
        static const struct {
            const char *op, *fmt;
        } ops[] = {
            {"+", "%sadd(ok, %s, %s)"}, {"-", "%ssub(ok, %s, %s)"}, {"*", "%smul(ok, %s, %s)"},
            {"//", "%sdiv(ok, %s, %s)"}, {"%", "%smod(ok, %s, %s)"}, {"<", "(%s < %s)"},
            {"<=", "(%s <= %s)"},          {">", "(%s > %s)"},          {">=", "(%s >= %s)"},
            {"==", "(%s == %s)"},          {"!=", "(%s != %s)"},        {"and", "(%s && %s)"},
            {"or", "(%s || %s)"},
        };
        for (size_t i = 0; i < NR_COUNTOF(ops); i++) {
            if (strcmp(e->op, ops[i].op) != 0) continue;
            /* The helper calls take the prefix first; comparisons do not. */
            if (ops[i].fmt[0] == '%') return nr_sprintf(a, ops[i].fmt, P, x[0], x[1]);
            return nr_sprintf(a, ops[i].fmt, x[0], x[1]);
        }
        NR_UNREACHABLE();
    }
    case NR_AE_CALL: {
        char **args = nr_alloc(a, sizeof(char *) * (size_t)e->nargs);
        for (int i = 0; i < e->nargs; i++)
            if (!(args[i] = nr_aot_expr_to_c(a, e->args[i], P, resolve, user, d))) return NULL;
        if (strcmp(e->name, "cdiv") == 0) return nr_sprintf(a, "%scdiv(ok, %s, %s)", P, args[0], args[1]);
        if (strcmp(e->name, "next_power_of_2") == 0) return nr_sprintf(a, "%snpow2(ok, %s)", P, args[0]);
        /* min/max of several: nested pairs. */
        const char *fn = nr_sprintf(a, "%s%s", P, e->name);
        char *acc = args[0];
        for (int i = 1; i < e->nargs; i++) acc = nr_sprintf(a, "%s(%s, %s)", fn, acc, args[i]);
        return acc;
    }
    }
    NR_UNREACHABLE();
}
