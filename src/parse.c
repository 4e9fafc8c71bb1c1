/* parse.c - the module level of the parser, and the AST dump.
 *
 * A Python file is mostly host code.  The top level is walked item by item,
 * where an item starts at the first token of a logical line at indentation
 * level 0; anything not understood is skipped to the next such token, so
 * host code (classes, other functions, `if __name__ == "__main__":` blocks,
 * anything in brackets) never produces an error.  These items become AST:
 *
 *   @...jit[(...)] def ...      a kernel (or helper): parsed in full; the
 *                               first syntax error stops it and is reported
 *   import / from ... import    recorded in imports
 *   NAME [: ann] = value        a candidate constexpr global when the value
 *                               parses as a kernel expression (tried quietly),
 *                               else a host name
 *   def / class                 host names
 *
 * Other decorators are skipped by token, never parsed.  When a name is bound
 * several times the last binding wins, except that a kernel's name always
 * refers to the kernel. */
#include "parse.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- token access ---------------------------------------------------------------------------- */

void nr_p_error(NrParser *p, NrLoc loc, const char *fmt, ...) {
    if (p->err) return;
    p->err = true;
    if (p->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = nr_alloc(p->a, (size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
    va_end(ap);
    nr_error(p->d, loc, "%s", msg);
}

const NrToken *nr_p_peek(NrParser *p) {
    if (p->err) return &p->eof;
    const NrToken *t = &p->toks[p->pos];
    if (t->kind == NR_T_ERROR) {
        nr_p_error(p, t->loc, "%s", t->v.msg);
        return &p->eof;
    }
    return t;
}

NrTokKind nr_p_kind_at(const NrParser *p, int k) {
    if (p->err) return NR_T_EOF;
    int i = p->pos + k;
    return p->toks[i < p->ntoks ? i : p->ntoks - 1].kind;
}

const NrToken *nr_p_next(NrParser *p) {
    const NrToken *t = nr_p_peek(p);
    if (!p->err && p->pos < p->ntoks - 1) p->pos++;
    return t;
}

bool nr_p_accept(NrParser *p, NrTokKind k) {
    if (nr_p_kind(p) != k) return false;
    nr_p_next(p);
    return true;
}

void nr_p_error_here(NrParser *p, const char *fmt, ...) {
    const NrToken *t = nr_p_peek(p);  /* reports an error token instead */
    if (p->err) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    nr_p_error(p, t->loc, "%s", buf);
}

const NrToken *nr_p_expect(NrParser *p, NrTokKind k, const char *context) {
    if (nr_p_kind(p) == k) return nr_p_next(p);
    nr_p_error_here(p, "expected %s%s%s", nr_tok_describe(k), context ? " " : "", context ? context : "");
    return NULL;
}

void nr_p_unclosed(NrParser *p, const NrToken *open, const char *what) {
    nr_p_peek(p);
    if (p->err) return;
    if (open->flags & NR_TF_UNCLOSED) nr_p_error(p, open->loc, "'%.1s' was never closed", open->text);
    else nr_p_error_here(p, "expected %s", what);
}

bool nr_p_enter(NrParser *p) {
    if (++p->depth > NR_PARSE_MAX_DEPTH) {
        p->depth--;
        nr_p_error(p, nr_p_peek(p)->loc, "expression nested too deeply");
        return false;
    }
    return true;
}

void nr_p_leave(NrParser *p) { p->depth--; }

typedef struct NameAt {
    const char *name;
    int index;
} NameAt;

static int cmp_name_at(const void *x, const void *y) {
    const NameAt *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

int nr_p_first_duplicate(NrArena *a, const char *const *names, int n) {
    if (n < 2) return -1;
    NameAt *v = nr_alloc(a, sizeof *v * (size_t)n);
    for (int i = 0; i < n; i++) v[i] = (NameAt){names[i], i};
    qsort(v, (size_t)n, sizeof *v, cmp_name_at);
    int first = -1;
    for (int i = 1; i < n; i++)
        if (strcmp(v[i].name, v[i - 1].name) == 0 && (first < 0 || v[i].index < first)) first = v[i].index;
    return first;
}

/* --- module state ---------------------------------------------------------------------------- */

enum { B_FUNC, B_GLOBAL, B_IMPORT, B_HOST };

typedef struct Binding {
    const char *name;
    int table, index, order;
} Binding;

typedef struct Top {
    NrParser p;
    NrAstModule *m;
    Binding *b;
    int nb, capb;
    bool failed;          /* some kernel had an error */
} Top;

static void bind(Top *t, const char *name, int table, int index) {
    Binding *b = NR_PUSH(t->p.a, t->b, t->nb, t->capb);
    b->name = name;
    b->table = table;
    b->index = index;
    b->order = t->nb - 1;
}

static void add_host(Top *t, const NrToken *name, const char *what) {
    NrHostName *h = NR_PUSH(t->p.a, t->m->hosts, t->m->nhosts, t->m->caphosts);
    h->name = name->v.str.s;
    h->loc = name->loc;
    h->what = what;
    bind(t, h->name, B_HOST, t->m->nhosts - 1);
}

static const NrToken *raw(const Top *t, int i) {
    const NrParser *p = &t->p;
    return &p->toks[i < p->ntoks ? i : p->ntoks - 1];
}

/* Start an item at token i: a clean parser state. */
static void reset(Top *t, int i, bool quiet) {
    t->p.pos = i < t->p.ntoks ? i : t->p.ntoks - 1;
    t->p.err = false;
    t->p.quiet = quiet;
    t->p.depth = 0;
    t->p.sdepth = 0;
}

static bool item_start(const NrToken *tok) { return (tok->flags & NR_TF_BOL) && tok->depth == 0; }

/* --- imports --------------------------------------------------------------------------------- */

typedef struct ImportVec {
    NrImport *v;
    int n, cap;
} ImportVec;

/* dotted_name: NAME ('.' NAME)*   -> prefix + "a.b.c"; *first gets the first NAME */
static const char *dotted_name(NrParser *p, const char *prefix, const NrToken **first) {
    const NrToken *t = nr_p_expect(p, NR_T_NAME, "in the import");
    if (!t) return NULL;
    *first = t;
    int start = p->pos - 1;
    size_t len = strlen(prefix) + t->v.str.n;
    while (nr_p_kind(p) == NR_T_DOT && nr_p_kind_at(p, 1) == NR_T_NAME) {
        nr_p_next(p);
        len += 1 + nr_p_next(p)->v.str.n;
    }
    char *s = nr_alloc(p->a, len + 1), *o = s;
    o += sprintf(o, "%s", prefix);
    for (int i = start; i < p->pos; i++) {
        const NrToken *k = &p->toks[i];
        if (k->kind == NR_T_DOT) *o++ = '.';
        else memcpy(o, k->v.str.s, k->v.str.n), o += k->v.str.n;
    }
    *o = 0;
    return s;
}

static void add_import(NrParser *p, ImportVec *v, const char *module, const char *name, const char *alias, NrLoc loc) {
    NrImport *im = NR_PUSH(p->a, v->v, v->n, v->cap);
    im->module = module;
    im->name = name;
    im->alias = alias;
    im->loc = loc;
}

/* import_name: 'import' dotted_name ['as' NAME] (',' dotted_name ['as' NAME])* */
static bool import_name(NrParser *p, ImportVec *v) {
    nr_p_next(p);
    do {
        const NrToken *first;
        const char *mod = dotted_name(p, "", &first);
        if (!mod) return false;
        const char *alias = first->v.str.s;
        if (nr_p_accept(p, NR_T_KW_AS)) {
            const NrToken *a = nr_p_expect(p, NR_T_NAME, "after 'as'");
            if (!a) return false;
            alias = a->v.str.s;
        }
        add_import(p, v, mod, NULL, alias, first->loc);
    } while (nr_p_accept(p, NR_T_COMMA));
    return true;
}

/* import_from: 'from' ('.' | '...')* [dotted_name] 'import' ('*' | '(' names [','] ')' | names)
 * names: NAME ['as' NAME] (',' NAME ['as' NAME])* */
static bool import_from(NrParser *p, ImportVec *v) {
    nr_p_next(p);
    size_t ndots = 0;
    for (;;) {
        if (nr_p_accept(p, NR_T_DOT)) ndots += 1;
        else if (nr_p_accept(p, NR_T_ELLIPSIS)) ndots += 3;
        else break;
    }
    char *dots = nr_alloc(p->a, ndots + 1);
    memset(dots, '.', ndots);
    const char *mod = dots;
    const NrToken *first;
    if (nr_p_kind(p) == NR_T_NAME || !*dots) mod = dotted_name(p, dots, &first);
    if (!mod || !nr_p_expect(p, NR_T_KW_IMPORT, "after the module name")) return false;
    NrLoc star = nr_p_peek(p)->loc;
    if (nr_p_accept(p, NR_T_STAR)) {
        add_import(p, v, mod, "*", "*", star);
        return true;
    }
    bool paren = nr_p_accept(p, NR_T_LPAR);
    do {
        if (paren && nr_p_kind(p) == NR_T_RPAR) break;
        const NrToken *n = nr_p_expect(p, NR_T_NAME, "in the import");
        if (!n) return false;
        const char *alias = n->v.str.s;
        if (nr_p_accept(p, NR_T_KW_AS)) {
            const NrToken *a = nr_p_expect(p, NR_T_NAME, "after 'as'");
            if (!a) return false;
            alias = a->v.str.s;
        }
        add_import(p, v, mod, n->v.str.s, alias, n->loc);
    } while (nr_p_accept(p, NR_T_COMMA));
    return !paren || nr_p_expect(p, NR_T_RPAR, "after the imported names");
}

/* import_stmt (';' import_stmt)* NEWLINE - parsed quietly; recorded only if it parses. */
static void import_item(Top *t) {
    NrParser *p = &t->p;
    ImportVec v = {0};
    bool ok;
    do {
        ok = nr_p_kind(p) == NR_T_KW_IMPORT ? import_name(p, &v) : import_from(p, &v);
    } while (ok && nr_p_accept(p, NR_T_SEMI) && (nr_p_kind(p) == NR_T_KW_IMPORT || nr_p_kind(p) == NR_T_KW_FROM));
    NrTokKind k = nr_p_kind(p);
    if (!ok || (k != NR_T_NEWLINE && k != NR_T_SEMI)) return;
    for (int i = 0; i < v.n; i++) {
        *NR_PUSH(p->a, t->m->imports, t->m->nimports, t->m->capimports) = v.v[i];
        if (strcmp(v.v[i].alias, "*") != 0) bind(t, v.v[i].alias, B_IMPORT, t->m->nimports - 1);
    }
}

/* --- globals --------------------------------------------------------------------------------- */

/* Host names bound by a top-level statement that is not a constexpr global:
 * NAME (',' NAME)* [','] '=' ... (repeated), or NAME augassign ... */
static void host_assignment(Top *t, int i) {
    for (;;) {
        int j = i;
        while (raw(t, j)->kind == NR_T_NAME && raw(t, j + 1)->kind == NR_T_COMMA) j += 2;
        if (raw(t, j)->kind != NR_T_NAME) return;
        NrTokKind k = raw(t, j + 1)->kind;
        if (k == NR_T_ASSIGN || (j == i && k >= NR_T_PLUSEQ && k <= NR_T_ATEQ) || (j == i && k == NR_T_COLON)) {
            for (int n = i; n <= j; n += 2) add_host(t, raw(t, n), "variable");
            if (k != NR_T_ASSIGN) return;
            i = j + 2;
        } else {
            return;
        }
    }
}

/* global: NAME '=' testlist NEWLINE | NAME ':' test ['=' testlist] NEWLINE
 * The value is parsed quietly as a kernel expression. */
static void global_item(Top *t, int i) {
    NrParser *p = &t->p;
    const NrToken *name = raw(t, i);
    NrTokKind k = raw(t, i + 1)->kind;
    if (k != NR_T_ASSIGN && k != NR_T_COLON) {
        host_assignment(t, i);
        return;
    }
    reset(t, i + 2, true);
    NrExpr *ann = NULL, *value = NULL;
    bool ok = true;
    if (k == NR_T_COLON) {
        ok = (ann = nr_p_test(p)) != NULL;
        if (ok && nr_p_accept(p, NR_T_ASSIGN)) ok = (value = nr_p_testlist(p)) != NULL;
    } else {
        ok = (value = nr_p_testlist(p)) != NULL;
    }
    k = nr_p_kind(p);
    if (!ok || (k != NR_T_NEWLINE && k != NR_T_SEMI)) {
        host_assignment(t, i);
        return;
    }
    if (!value) return;  /* a bare annotation binds nothing */
    NrGlobal *g = NR_PUSH(p->a, t->m->globals, t->m->nglobals, t->m->capglobals);
    g->name = name->v.str.s;
    g->annotation = ann;
    g->value = value;
    g->loc = name->loc;
    bind(t, g->name, B_GLOBAL, t->m->nglobals - 1);
}

/* --- kernels --------------------------------------------------------------------------------- */

/* The jit decorator's arguments. */
typedef struct JitArgs {
    bool noinline;
    NrExpr *do_not_specialize;  /* a list or tuple, or NULL */
} JitArgs;

/* Is the decorator in tokens [i, end) a dotted name ending in `jit`, alone or called? */
static bool is_jit_decorator(const Top *t, int i, int end) {
    const char *last = NULL;
    while (i < end && raw(t, i)->kind == NR_T_NAME) {
        last = raw(t, i)->v.str.s;
        i++;
        if (i < end && raw(t, i)->kind == NR_T_DOT) i++;
        else break;
    }
    return last && strcmp(last, "jit") == 0 && (i == end || raw(t, i)->kind == NR_T_LPAR);
}

/* Read jit(noinline=..., do_not_specialize=[...]) quietly; other arguments,
 * and anything that does not parse, are ignored. */
static JitArgs jit_args(Top *t, int i) {
    JitArgs j = {0};
    reset(t, i, true);
    NrExpr *e = nr_p_test(&t->p);
    if (!e || e->kind != NR_E_CALL) return j;
    for (int k = 0; k < e->call.nkw; k++) {
        const NrKwarg *kw = &e->call.kw[k];
        if (strcmp(kw->name, "noinline") == 0 && kw->value->kind == NR_E_BOOL) j.noinline = kw->value->lit.b;
        if (strcmp(kw->name, "do_not_specialize") == 0 &&
            (kw->value->kind == NR_E_LIST || kw->value->kind == NR_E_TUPLE))
            j.do_not_specialize = kw->value;
    }
    return j;
}

/* Resolve do_not_specialize entries (parameter names or indices) to names. */
static void resolve_do_not_specialize(NrParser *p, NrFuncDecl *f, const NrExpr *list) {
    f->do_not_specialize = nr_alloc(p->a, sizeof(char *) * (size_t)(list->seq.n + 1));
    NameAt *params = nr_alloc(p->a, sizeof *params * (size_t)(f->nparams + 1));
    for (int k = 0; k < f->nparams; k++) params[k] = (NameAt){f->params[k].name, k};
    qsort(params, (size_t)f->nparams, sizeof *params, cmp_name_at);
    for (int i = 0; i < list->seq.n; i++) {
        const NrExpr *e = list->seq.v[i];
        const char *name = NULL;
        if (e->kind == NR_E_STR) {
            NameAt key = {e->str.s, -1};
            const NameAt *hit = NULL;
            if (strlen(e->str.s) == e->str.len) {
                /* the lowest index with this name sorts first after key */
                int lo = 0, hi = f->nparams;
                while (lo < hi) {
                    int mid = lo + (hi - lo) / 2;
                    if (cmp_name_at(&params[mid], &key) < 0) lo = mid + 1;
                    else hi = mid;
                }
                if (lo < f->nparams && strcmp(params[lo].name, e->str.s) == 0) hit = &params[lo];
            }
            if (!hit) {
                nr_p_error(p, e->loc, "do_not_specialize names '%s', which is not a parameter of '%s'", e->str.s,
                           f->name);
                return;
            }
            name = hit->name;
        } else if (e->kind == NR_E_INT) {
            if (e->lit.u >= (uint64_t)f->nparams) {
                nr_p_error(p, e->loc, "do_not_specialize index %llu is out of range: '%s' has %d parameters",
                           (unsigned long long)e->lit.u, f->name, f->nparams);
                return;
            }
            name = f->params[e->lit.u].name;
        } else {
            continue;
        }
        f->do_not_specialize[f->ndo_not_specialize++] = name;
    }
}

/* param: NAME [':' test] ['=' test]     (*args, **kwargs, '*' and '/' are rejected) */
static bool param(NrParser *p, NrParamDecl **v, int *n, int *cap, bool *seen_default) {
    const NrToken *t = nr_p_peek(p);
    if (t->kind == NR_T_STAR || t->kind == NR_T_DSTAR) {
        const NrToken *nm = &p->toks[p->pos + 1 < p->ntoks ? p->pos + 1 : p->pos];
        if (nm->kind == NR_T_NAME)
            nr_p_error(p, t->loc, "variadic parameter '%s%s' is not supported in kernels",
                       t->kind == NR_T_STAR ? "*" : "**", nm->v.str.s);
        else if (t->kind == NR_T_STAR)
            nr_p_error(p, t->loc, "keyword-only parameters ('*') are not supported in kernels");
        else
            nr_p_error_here(p, "expected a parameter name after '**'");
        return false;
    }
    if (t->kind == NR_T_SLASH) {
        nr_p_error(p, t->loc, "positional-only parameters ('/') are not supported in kernels");
        return false;
    }
    if (t->kind != NR_T_NAME) {
        nr_p_error_here(p, "expected a parameter name");
        return false;
    }
    nr_p_next(p);
    NrParamDecl *pd = NR_PUSH(p->a, *v, *n, *cap);
    pd->name = t->v.str.s;
    pd->loc = t->loc;
    if (nr_p_accept(p, NR_T_COLON) && !(pd->annotation = nr_p_test(p))) return false;
    if (nr_p_accept(p, NR_T_ASSIGN)) {
        if (!(pd->dflt = nr_p_test(p))) return false;
        *seen_default = true;
    } else if (*seen_default) {
        nr_p_error(p, t->loc, "parameter without a default follows parameter with a default");
        return false;
    }
    return true;
}

/* funcdef: 'def' NAME '(' [param (',' param)* [',']] ')' ['->' test] ':' suite */
static NrFuncDecl *funcdef(NrParser *p) {
    NrFuncDecl *f = nr_alloc(p->a, sizeof *f);
    nr_p_next(p);
    const NrToken *name = nr_p_expect(p, NR_T_NAME, "after 'def'");
    if (!name) return NULL;
    f->name = name->v.str.s;
    f->loc = name->loc;
    const NrToken *open = nr_p_expect(p, NR_T_LPAR, "after the function name");
    if (!open) return NULL;
    int cap = 0;
    bool seen_default = false;
    while (nr_p_kind(p) != NR_T_RPAR) {
        if (!param(p, &f->params, &f->nparams, &cap, &seen_default)) return NULL;
        if (!nr_p_accept(p, NR_T_COMMA)) break;
    }
    if (!nr_p_accept(p, NR_T_RPAR)) {
        nr_p_unclosed(p, open, "',' or ')' after a parameter");
        return NULL;
    }
    const char **names = nr_alloc(p->a, sizeof(char *) * (size_t)(f->nparams + 1));
    for (int i = 0; i < f->nparams; i++) names[i] = f->params[i].name;
    int dup = nr_p_first_duplicate(p->a, names, f->nparams);
    if (dup >= 0) {
        nr_p_error(p, f->params[dup].loc, "duplicate parameter '%s'", names[dup]);
        return NULL;
    }
    if (nr_p_accept(p, NR_T_ARROW) && !nr_p_test(p)) return NULL;
    if (!nr_p_accept(p, NR_T_COLON)) {
        nr_p_error_here(p, "expected ':' after the function signature");
        return NULL;
    }
    if (!nr_p_suite(p, &f->body)) return NULL;
    return f;
}

/* A kernel: the jit decorator's arguments start at token jit_at, `def` at def_at. */
static void kernel(Top *t, int jit_at, int def_at) {
    NrParser *p = &t->p;
    JitArgs j = jit_args(t, jit_at);
    reset(t, def_at, false);
    if (raw(t, def_at)->kind == NR_T_KW_ASYNC) {
        nr_p_error(p, raw(t, def_at)->loc, "'async def' is not supported for kernels");
        t->failed = true;
        return;
    }
    NrFuncDecl *f = funcdef(p);
    if (f) {
        f->noinline = j.noinline;
        if (j.do_not_specialize) resolve_do_not_specialize(p, f, j.do_not_specialize);
    }
    /* An indented line right after a one-line kernel (host code after it is not read). */
    if (f && !p->err && p->toks[p->pos].kind == NR_T_INDENT) nr_p_error(p, p->toks[p->pos].loc, "unexpected indent");
    if (!f || p->err) {
        t->failed = true;
        return;
    }
    *NR_PUSH(p->a, t->m->funcs, t->m->nfuncs, t->m->capfuncs) = f;
    bind(t, f->name, B_FUNC, t->m->nfuncs - 1);
}

/* A `def` or `class` of host code at token i: record its name. */
static void host_def(Top *t, int i) {
    if (raw(t, i)->kind == NR_T_KW_ASYNC) {
        if (raw(t, i + 1)->kind != NR_T_KW_DEF) return;  /* async for / with: no name */
        i++;
    }
    const NrToken *name = raw(t, i + 1);
    if (name->kind == NR_T_NAME) add_host(t, name, raw(t, i)->kind == NR_T_KW_CLASS ? "class" : "function");
}

/* decorated: ('@' tokens NEWLINE)+ (funcdef | 'async' funcdef | classdef) */
static void decorated(Top *t, int i) {
    int jit_at = -1;
    while (raw(t, i)->kind == NR_T_AT) {
        int end = i + 1;
        while (end < t->p.ntoks - 1 && raw(t, end)->kind != NR_T_NEWLINE) end++;
        if (is_jit_decorator(t, i + 1, end)) jit_at = i + 1;
        i = end + 1;
        if (!item_start(raw(t, i))) {
            t->p.pos = i;
            return;
        }
    }
    NrTokKind k = raw(t, i)->kind;
    bool is_def = k == NR_T_KW_DEF || (k == NR_T_KW_ASYNC && raw(t, i + 1)->kind == NR_T_KW_DEF);
    if (is_def && jit_at >= 0) {
        kernel(t, jit_at, i);
        return;
    }
    if (is_def || k == NR_T_KW_CLASS) host_def(t, i);
    t->p.pos = i;  /* go on after the decorators, each read once */
}

/* --- the module ------------------------------------------------------------------------------ */

static void item(Top *t, int i) {
    switch (raw(t, i)->kind) {
    case NR_T_AT: decorated(t, i); break;
    case NR_T_KW_DEF: case NR_T_KW_CLASS: case NR_T_KW_ASYNC: host_def(t, i); break;
    case NR_T_KW_IMPORT: case NR_T_KW_FROM: reset(t, i, true); import_item(t); break;
    case NR_T_NAME: global_item(t, i); break;
    default: break;
    }
}

static int cmp_binding(const void *x, const void *y) {
    const Binding *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Keep one binding per name: the last kernel of that name if there is one,
 * else the last binding.  Tables keep their order. */
static void dedup(Top *t) {
    NrAstModule *m = t->m;
    if (t->nb < 2) return;
    qsort(t->b, (size_t)t->nb, sizeof *t->b, cmp_binding);
    int ntab[4] = {m->nfuncs, m->nglobals, m->nimports, m->nhosts};
    bool *dead[4];
    for (int k = 0; k < 4; k++) dead[k] = nr_alloc(t->p.a, (size_t)ntab[k] + 1);
    for (int g = 0; g < t->nb;) {
        int e = g;
        while (e < t->nb && strcmp(t->b[e].name, t->b[g].name) == 0) e++;
        int keep = e - 1;
        for (int k = g; k < e; k++)
            if (t->b[k].table == B_FUNC) keep = k;
        for (int k = g; k < e; k++)
            if (k != keep) dead[t->b[k].table][t->b[k].index] = true;
        g = e;
    }
#define COMPACT(arr, n, tab) \
    do { \
        int w = 0; \
        for (int r = 0; r < (n); r++) \
            if (!dead[tab][r]) (arr)[w++] = (arr)[r]; \
        (n) = w; \
    } while (0)
    COMPACT(m->funcs, m->nfuncs, B_FUNC);
    COMPACT(m->globals, m->nglobals, B_GLOBAL);
    COMPACT(m->imports, m->nimports, B_IMPORT);
    COMPACT(m->hosts, m->nhosts, B_HOST);
#undef COMPACT
}

NrAstModule *nr_parse_module(NrArena *a, NrSources *src, uint32_t file, NrDiags *d) {
    NrArena scratch;  /* the token array, dropped once the module is parsed */
    nr_arena_init(&scratch);
    NrTokens toks = nr_lex(a, &scratch, src, file);
    Top t = {0};
    t.p.a = a;
    t.p.d = d;
    t.p.file = file;
    t.p.toks = toks.v;
    t.p.ntoks = toks.n;
    t.p.eof = toks.v[toks.n - 1];
    t.m = nr_alloc(a, sizeof *t.m);
    t.m->file = file;
    int i = 0;
    while (i < t.p.ntoks - 1) {
        if (!item_start(raw(&t, i))) {
            i++;
            continue;
        }
        reset(&t, i, true);
        item(&t, i);
        /* Go on at the next item, at or after where this one's parse stopped. */
        int next = t.p.pos > i ? t.p.pos : i + 1;
        while (next < t.p.ntoks - 1 && !item_start(raw(&t, next))) next++;
        i = next;
    }
    dedup(&t);
    nr_arena_free(&scratch);
    return t.failed ? NULL : t.m;
}

NrFuncDecl *nr_ast_find_func(const NrAstModule *m, const char *name) {
    if (!m || !name) return NULL;
    for (int i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0) return m->funcs[i];
    return NULL;
}

/* --- the dump -------------------------------------------------------------------------------- */

typedef struct Buf {
    NrArena *a;
    char *s;
    size_t n, cap;
} Buf;

static void put(Buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        b->s = nr_arena_grow(b->a, b->s, b->cap, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void puts_(Buf *b, const char *s) { put(b, s, strlen(s)); }

static void indent(Buf *b, int level) {
    put(b, "\n", 1);
    for (int i = 0; i < level; i++) put(b, "  ", 2);
}

/* Floats as Python's repr() writes them: the shortest digits that read back
 * exactly, in positional notation for exponents from -4 to 15. */
static void put_float(Buf *b, double f) {
    char tmp[64];
    if (isnan(f)) {
        puts_(b, "nan");
        return;
    }
    if (isinf(f)) {
        puts_(b, f > 0 ? "inf" : "-inf");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    int exp = atoi(strchr(tmp, 'e') + 1);
    if (exp >= -4 && exp < 16) {
        int decimals = prec - 1 - exp;
        snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, f);
        puts_(b, tmp);
        if (!strchr(tmp, '.')) puts_(b, ".0");
    } else {
        puts_(b, tmp);
    }
}

static void put_str(Buf *b, const char *s, size_t n) {
    put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char tmp[8];
        if (c == '"' || c == '\\') {
            tmp[0] = '\\';
            tmp[1] = (char)c;
            put(b, tmp, 2);
        } else if (c == '\n') {
            puts_(b, "\\n");
        } else if (c == '\t') {
            puts_(b, "\\t");
        } else if (c < 0x20 || c >= 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02x", c);
            puts_(b, tmp);
        } else {
            put(b, (const char *)&c, 1);
        }
    }
    put(b, "\"", 1);
}

static const char *const bin_names[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
static const char *const un_names[] = {"neg", "pos", "~", "not"};
static const char *const cmp_names[] = {"<", "<=", ">", ">=", "==", "!=", "is", "is-not", "in", "not-in"};

static const char *op_name(const char *const *names, size_t n, int op) {
    return op >= 0 && (size_t)op < n ? names[op] : "?";
}

static void dump_expr(Buf *b, const NrExpr *e);

static void dump_list(Buf *b, NrExpr *const *v, int n) {
    for (int i = 0; i < n; i++) {
        put(b, " ", 1);
        dump_expr(b, v[i]);
    }
}

static void dump_opt(Buf *b, const NrExpr *e) {
    put(b, " ", 1);
    if (e) dump_expr(b, e);
    else put(b, "_", 1);
}

static void dump_expr(Buf *b, const NrExpr *e) {
    char tmp[32];
    if (!e) {
        puts_(b, "<null>");
        return;
    }
    switch (e->kind) {
    case NR_E_NAME: puts_(b, e->name.id); break;
    case NR_E_INT:
        snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)e->lit.u);
        puts_(b, tmp);
        break;
    case NR_E_FLOAT: put_float(b, e->lit.f); break;
    case NR_E_BOOL: puts_(b, e->lit.b ? "True" : "False"); break;
    case NR_E_NONE: puts_(b, "None"); break;
    case NR_E_STR: put_str(b, e->str.s, e->str.len); break;
    case NR_E_ELLIPSIS: puts_(b, "..."); break;
    case NR_E_ATTR:
        puts_(b, "(. ");
        dump_expr(b, e->attr.value);
        put(b, " ", 1);
        puts_(b, e->attr.name);
        put(b, ")", 1);
        break;
    case NR_E_SUBSCRIPT:
        puts_(b, "([] ");
        dump_expr(b, e->sub.value);
        dump_list(b, e->sub.idx, e->sub.nidx);
        put(b, ")", 1);
        break;
    case NR_E_CALL:
        puts_(b, "(call ");
        dump_expr(b, e->call.func);
        dump_list(b, e->call.args, e->call.nargs);
        for (int i = 0; i < e->call.nkw; i++) {
            puts_(b, " (kw ");
            puts_(b, e->call.kw[i].name);
            put(b, " ", 1);
            dump_expr(b, e->call.kw[i].value);
            put(b, ")", 1);
        }
        put(b, ")", 1);
        break;
    case NR_E_BINOP:
    case NR_E_BOOLOP:
    case NR_E_COMPARE:
        put(b, "(", 1);
        if (e->kind == NR_E_BINOP) puts_(b, op_name(bin_names, NR_COUNTOF(bin_names), e->bin.op));
        else if (e->kind == NR_E_COMPARE) puts_(b, op_name(cmp_names, NR_COUNTOF(cmp_names), e->bin.op));
        else puts_(b, e->bin.op == NR_BOOL_AND ? "and" : "or");
        put(b, " ", 1);
        dump_expr(b, e->bin.l);
        put(b, " ", 1);
        dump_expr(b, e->bin.r);
        put(b, ")", 1);
        break;
    case NR_E_UNARY:
        put(b, "(", 1);
        puts_(b, op_name(un_names, NR_COUNTOF(un_names), e->un.op));
        put(b, " ", 1);
        dump_expr(b, e->un.x);
        put(b, ")", 1);
        break;
    case NR_E_IFEXP:
        puts_(b, "(ifexp ");
        dump_expr(b, e->ifexp.cond);
        put(b, " ", 1);
        dump_expr(b, e->ifexp.then);
        put(b, " ", 1);
        dump_expr(b, e->ifexp.els);
        put(b, ")", 1);
        break;
    case NR_E_TUPLE:
    case NR_E_LIST:
        puts_(b, e->kind == NR_E_TUPLE ? "(tuple" : "(list");
        dump_list(b, e->seq.v, e->seq.n);
        put(b, ")", 1);
        break;
    case NR_E_SLICE:
        puts_(b, "(slice");
        dump_opt(b, e->slice.lo);
        dump_opt(b, e->slice.hi);
        dump_opt(b, e->slice.step);
        put(b, ")", 1);
        break;
    }
}

static void dump_stmts(Buf *b, const NrStmtList *l, int level);

static void dump_stmt(Buf *b, const NrStmt *s, int level) {
    switch (s->kind) {
    case NR_S_EXPR:
        puts_(b, "(expr ");
        dump_expr(b, s->expr);
        break;
    case NR_S_ASSIGN:
        puts_(b, "(=");
        dump_list(b, s->assign.targets, s->assign.ntargets);
        put(b, " ", 1);
        dump_expr(b, s->assign.value);
        break;
    case NR_S_AUGASSIGN:
        put(b, "(", 1);
        puts_(b, op_name(bin_names, NR_COUNTOF(bin_names), s->aug.op));
        puts_(b, "= ");
        dump_expr(b, s->aug.target);
        put(b, " ", 1);
        dump_expr(b, s->aug.value);
        break;
    case NR_S_ANNASSIGN:
        puts_(b, "(ann ");
        dump_expr(b, s->ann.target);
        put(b, " ", 1);
        dump_expr(b, s->ann.annotation);
        if (s->ann.value) {
            put(b, " ", 1);
            dump_expr(b, s->ann.value);
        }
        break;
    case NR_S_IF:
        puts_(b, "(if ");
        dump_expr(b, s->if_.cond);
        dump_stmts(b, &s->if_.body, level + 1);
        if (s->if_.orelse.n) {
            indent(b, level + 1);
            puts_(b, "(else");
            dump_stmts(b, &s->if_.orelse, level + 2);
            put(b, ")", 1);
        }
        break;
    case NR_S_FOR:
        puts_(b, "(for ");
        dump_expr(b, s->for_.target);
        put(b, " ", 1);
        dump_expr(b, s->for_.iter);
        dump_stmts(b, &s->for_.body, level + 1);
        break;
    case NR_S_WHILE:
        puts_(b, "(while ");
        dump_expr(b, s->while_.cond);
        dump_stmts(b, &s->while_.body, level + 1);
        break;
    case NR_S_RETURN:
        puts_(b, "(return");
        if (s->ret.value) {
            put(b, " ", 1);
            dump_expr(b, s->ret.value);
        }
        break;
    case NR_S_PASS: puts_(b, "(pass"); break;
    case NR_S_ASSERT:
        puts_(b, "(assert ");
        dump_expr(b, s->assert_.cond);
        if (s->assert_.msg) {
            put(b, " ", 1);
            dump_expr(b, s->assert_.msg);
        }
        break;
    }
    put(b, ")", 1);
}

static void dump_stmts(Buf *b, const NrStmtList *l, int level) {
    for (int i = 0; i < l->n; i++) {
        indent(b, level);
        dump_stmt(b, l->v[i], level);
    }
}

static void dump_func(Buf *b, const NrFuncDecl *f) {
    puts_(b, "(def ");
    puts_(b, f->name);
    puts_(b, " (");
    for (int i = 0; i < f->nparams; i++) {
        const NrParamDecl *pd = &f->params[i];
        if (i) put(b, " ", 1);
        if (!pd->annotation && !pd->dflt) {
            puts_(b, pd->name);
            continue;
        }
        put(b, "(", 1);
        puts_(b, pd->name);
        if (pd->annotation) {
            puts_(b, " : ");
            dump_expr(b, pd->annotation);
        }
        if (pd->dflt) {
            puts_(b, " = ");
            dump_expr(b, pd->dflt);
        }
        put(b, ")", 1);
    }
    put(b, ")", 1);
    if (f->noinline) puts_(b, " noinline");
    if (f->ndo_not_specialize) {
        puts_(b, " (do_not_specialize");
        for (int i = 0; i < f->ndo_not_specialize; i++) {
            put(b, " ", 1);
            puts_(b, f->do_not_specialize[i]);
        }
        put(b, ")", 1);
    }
    dump_stmts(b, &f->body, 1);
    puts_(b, ")\n");
}

char *nr_ast_dump(NrArena *a, const NrAstModule *m) {
    Buf b = {a, NULL, 0, 0};
    put(&b, "", 0);
    if (!m) return b.s;
    for (int i = 0; i < m->nimports; i++) {
        const NrImport *im = &m->imports[i];
        puts_(&b, "(import ");
        puts_(&b, im->module);
        put(&b, " ", 1);
        puts_(&b, im->name ? im->name : "_");
        put(&b, " ", 1);
        puts_(&b, im->alias);
        puts_(&b, ")\n");
    }
    for (int i = 0; i < m->nglobals; i++) {
        const NrGlobal *g = &m->globals[i];
        puts_(&b, "(global ");
        puts_(&b, g->name);
        if (g->annotation) {
            puts_(&b, " : ");
            dump_expr(&b, g->annotation);
        }
        put(&b, " ", 1);
        dump_expr(&b, g->value);
        puts_(&b, ")\n");
    }
    for (int i = 0; i < m->nhosts; i++) {
        puts_(&b, "(host ");
        puts_(&b, m->hosts[i].name);
        put(&b, " ", 1);
        puts_(&b, m->hosts[i].what);
        puts_(&b, ")\n");
    }
    for (int i = 0; i < m->nfuncs; i++) dump_func(&b, m->funcs[i]);
    return b.s;
}
