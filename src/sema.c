/* sema.c - lowering of one kernel: contexts, names, statements, structured
 * control flow and calls of @jit functions.  See sema.h for the contract and
 * sema_impl.h for the values lowering works with.
 *
 * Statements are lowered in order into the current block.  Control flow:
 *   if on a constexpr      only the taken branch is lowered
 *   if on an IR value      an `if` op; every variable live before the if that
 *                          either branch changes, and every variable both
 *                          branches define, becomes a result
 *   for / while            a `for` / `while` op; the variables assigned in the
 *                          body that were tensors before the loop and that the
 *                          body changes become carried values
 *   tl.static_range        unrolled
 *   early `return`         the rest of the enclosing statement lists becomes
 *                          the continuation of both branches of the `if`
 *                          holding the return, whose results are the returned
 *                          values; every function ends in one `return` op
 * Region ops are first built with every candidate result and then rebuilt
 * with the ones that turned out to be needed, moving the region's ops. */
#include "sema_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* --- errors and limits ---------------------------------------------------------------------------- */
void nr_sm_fail(Sema *s, NrLoc loc, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    nr_error(s->d, loc, "%s", buf);
    longjmp(*s->fail, 1);
}

void nr_sm_enter(Sema *s, NrLoc loc) {
    if (++s->depth > SM_MAX_DEPTH) nr_sm_fail(s, loc, "the kernel is nested too deeply (more than %d levels)", SM_MAX_DEPTH);
    if (++s->work > SM_MAX_WORK)
        nr_sm_fail(s, loc, "the kernel is too large to compile: unrolling and specialization produced more than %d "
                           "statements and expressions",
                   SM_MAX_WORK);
}

void nr_sm_leave(Sema *s) { s->depth--; }

void nr_sm_no_effects(Sema *s, NrLoc loc, const char *what) {
    if (s->elementwise > 0)
        nr_sm_fail(s, loc, "%s cannot be used in a function applied by tl.map_elementwise (it must be pure)", what);
}

/* --- values --------------------------------------------------------------------------------------- */
Val nr_sm_tuple(Sema *s, int n) {
    Val v;
    v.k = V_TUPLE;
    v.tup.n = n;
    v.tup.v = nr_alloc(s->a, sizeof(Val) * (size_t)(n > 0 ? n : 1));
    v.tup.desc = NULL;
    return v;
}

Val nr_sm_none(void) { return v_const(nr_cv_none()); }

const char *nr_sm_val_kind(Sema *s, Val v) {
    switch (v.k) {
    case V_IR:
        if (nr_sm_type(s, v.ir)->rank == 0) return nr_sprintf(s->a, "scalar %s", nr_sm_type_str(s, nr_sm_tid(s, v.ir)));
        return nr_sm_type_str(s, nr_sm_tid(s, v.ir));
    case V_CONST:
        switch (v.c.kind) {
        case NR_CV_NONE: return "None";
        case NR_CV_INT: return nr_sprintf(s->a, "constexpr int %s", nr_cv_str_of(s->a, &v.c));
        case NR_CV_FLOAT: return nr_sprintf(s->a, "constexpr float %s", nr_cv_str_of(s->a, &v.c));
        case NR_CV_BOOL: return nr_sprintf(s->a, "constexpr %s", v.c.b ? "True" : "False");
        case NR_CV_STR: return nr_sprintf(s->a, "str '%s'", nr_cv_str_of(s->a, &v.c));
        case NR_CV_DTYPE: return nr_sprintf(s->a, "dtype %s", nr_dt_name(s->a, v.c.dt, v.c.ptr));
        }
        break;
    case V_TUPLE:
        if (v.tup.desc) return nr_sprintf(s->a, "tensor descriptor of %s", nr_dt_name(s->a, v.tup.desc->dt, 0));
        return nr_sprintf(s->a, "tuple of %d values", v.tup.n);
    case V_MODULE: return nr_sprintf(s->a, "module %s", nr_sm_module_name(v.mod));
    case V_JITFN: return nr_sprintf(s->a, "@jit function '%s'", v.fn->name);
    case V_BUILTIN: return nr_sprintf(s->a, "function %s", nr_sm_builtin_name(s, v.bi.bi));
    case V_TYPE: return nr_sprintf(s->a, "type %s", nr_sm_type_str(s, v.type));
    case V_SLICE: return "slice";
    }
    return "value";
}

static bool desc_same(const SmDesc *a, const SmDesc *b) {
    if (!a || !b) return a == b;
    if (a->dt != b->dt || a->rank != b->rank || a->nan_pad != b->nan_pad) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->block[i] != b->block[i]) return false;
    return true;
}

bool nr_sm_val_same(Val a, Val b) {
    if (a.k != b.k) return false;
    switch (a.k) {
    case V_IR: return a.ir == b.ir;
    case V_CONST:
        if (a.c.kind == NR_CV_FLOAT && b.c.kind == NR_CV_FLOAT) return memcmp(&a.c.f, &b.c.f, sizeof a.c.f) == 0;
        return a.c.kind == b.c.kind && nr_cv_eq(&a.c, &b.c);
    case V_TUPLE:
        if (a.tup.n != b.tup.n || !desc_same(a.tup.desc, b.tup.desc)) return false;
        for (int i = 0; i < a.tup.n; i++)
            if (!nr_sm_val_same(a.tup.v[i], b.tup.v[i])) return false;
        return true;
    case V_MODULE: return a.mod == b.mod;
    case V_JITFN: return a.fn == b.fn;
    case V_BUILTIN: return a.bi.bi == b.bi.bi && a.bi.self == b.bi.self;
    case V_TYPE: return a.type == b.type;
    case V_SLICE: return true;
    }
    return false;
}

const char *nr_sm_const_hint(Sema *s, Val v) {
    if (v.k == V_TUPLE)
        for (int i = 0; i < v.tup.n; i++)
            if (*nr_sm_const_hint(s, v.tup.v[i])) return nr_sm_const_hint(s, v.tup.v[i]);
    if (v.k != V_IR || !s->fn) return "";
    NrOpId def = s->fn->f->vals[v.ir].def;
    if (!def || s->fn->f->ops[def].opc != NR_OP_CONST) return "";
    return " (a number assigned to a variable becomes a tensor, as in Triton; write `name: tl.constexpr = ...` to keep "
           "it a compile-time value)";
}

/* --- scopes --------------------------------------------------------------------------------------- */
static Var *scope_find(Scope *sc, const char *name) {
    for (int i = sc->n - 1; i >= 0; i--) /* (the first bytes compared inline: most names differ there) */
        if (sc->v[i].name[0] == name[0] && strcmp(sc->v[i].name, name) == 0) return &sc->v[i];
    return NULL;
}

static void scope_set(Sema *s, Scope *sc, const char *name, Val v, NrLoc loc) {
    Var *x = scope_find(sc, name);
    if (!x) {
        x = NR_PUSH(s->a, sc->v, sc->n, sc->cap);
        x->name = name;
    }
    x->v = v;
    x->loc = loc;
}

static Scope scope_copy(Sema *s, const Scope *sc) {
    Scope c = {NULL, sc->n, sc->n};
    c.v = nr_alloc(s->a, sizeof(Var) * (size_t)(sc->n > 0 ? sc->n : 1));
    if (sc->n) memcpy(c.v, sc->v, sizeof(Var) * (size_t)sc->n);
    return c;
}

/* --- module-level names --------------------------------------------------------------------------- */
typedef struct ModPath {
    const char *path;
    SmModule mod;
} ModPath;

static const ModPath mod_paths[] = {
    {"triton", SM_MOD_TRITON},
    {"nereid", SM_MOD_TRITON},
    {"triton.language", SM_MOD_TL},
    {"nereid.language", SM_MOD_TL},
    {"triton.language.core", SM_MOD_TL},
    {"triton.language.standard", SM_MOD_TL},
    {"triton.language.math", SM_MOD_MATH},
    {"nereid.language.math", SM_MOD_MATH},
    {"triton.language.extra", SM_MOD_EXTRA},
    {"nereid.language.extra", SM_MOD_EXTRA},
    {"triton.language.extra.cuda", SM_MOD_EXTRA_CUDA},
    {"nereid.language.extra.cuda", SM_MOD_EXTRA_CUDA},
    {"triton.language.extra.libdevice", SM_MOD_LIBDEVICE},
    {"triton.language.extra.cuda.libdevice", SM_MOD_LIBDEVICE},
    {"nereid.language.extra.libdevice", SM_MOD_LIBDEVICE},
    {"nereid.language.extra.cuda.libdevice", SM_MOD_LIBDEVICE},
    {"triton.language.libdevice", SM_MOD_LIBDEVICE},
};

static SmModule module_of_path(const char *path) {
    for (size_t i = 0; i < NR_COUNTOF(mod_paths); i++)
        if (strcmp(mod_paths[i].path, path) == 0) return mod_paths[i].mod;
    return SM_MOD_NONE;
}

/* The value an import binds. */
static Val import_value(Sema *s, const NrImport *im) {
    Val v;
    v.k = V_MODULE;
    v.mod = SM_MOD_HOST;
    if (!im->module) return v;
    if (im->name) {
        char *full = nr_sprintf(s->a, "%s.%s", im->module, im->name);
        SmModule m = module_of_path(full);
        if (m) {
            v.mod = m;
            return v;
        }
        SmModule base = module_of_path(im->module);
        if (base) return nr_sm_module_attr(s, im->loc, base, im->name);
        return v;
    }
    /* `import a.b` binds `a`; `import a.b as x` binds a.b */
    const char *dot = strchr(im->module, '.');
    if (dot && im->alias && strlen(im->alias) == (size_t)(dot - im->module) &&
        strncmp(im->alias, im->module, (size_t)(dot - im->module)) == 0) {
        v.mod = module_of_path(nr_strndup(s->a, im->module, (size_t)(dot - im->module)));
    } else {
        v.mod = module_of_path(im->module);
    }
    if (!v.mod) v.mod = SM_MOD_HOST;
    return v;
}

static bool is_const_val(Val v) {
    switch (v.k) {
    case V_IR: return false;
    case V_TUPLE:
        for (int i = 0; i < v.tup.n; i++)
            if (!is_const_val(v.tup.v[i])) return false;
        return true;
    default: return true;
    }
}

/* Evaluate an expression with no function to emit into: globals and defaults. */
static Val eval_const(Sema *s, const NrExpr *e, const char *what) {
    SmFn *saved = s->fn;
    const char *saved_what = s->const_what;
    s->fn = NULL;
    s->const_what = what;
    Val v = nr_sm_lower_expr(s, e);
    s->fn = saved;
    s->const_what = saved_what;
    return v;
}

/* A global written NAME = tl.constexpr(...) or NAME: tl.constexpr = ... */
static bool declared_constexpr(Sema *s, const NrGlobal *g) {
    if (nr_sm_is_constexpr_annotation(s, g->annotation)) return true;
    const NrExpr *v = g->value;
    return v->kind == NR_E_CALL && nr_sm_is_constexpr_annotation(s, v->call.func);
}

/* Evaluate a plain global; false (with no diagnostic left behind) if it is
 * not a compile-time constant: then it is host data. */
static bool try_eval_global(Sema *s, const NrGlobal *g, Val *out) {
    jmp_buf jb;
    jmp_buf *outer = s->fail;
    SmFn *fn = s->fn;
    const char *what = s->const_what;
    int depth = s->depth, ncalls = s->ncalls, ndiags = s->d->n, nerrors = s->d->nerrors;
    s->fail = &jb;
    if (setjmp(jb)) {
        s->fail = outer;
        s->fn = fn;
        s->const_what = what;
        s->depth = depth;
        s->ncalls = ncalls;
        s->d->n = ndiags;
        s->d->nerrors = nerrors;
        return false;
    }
    Val v = eval_const(s, g->value, nr_sprintf(s->a, "global '%s'", g->name));
    s->fail = outer;
    if (!is_const_val(v)) return false;
    *out = v;
    return true;
}

static bool lookup_global(Sema *s, NrLoc loc, const char *name, Val *out) {
    int gi = -1;
    for (int i = 0; i < s->ast->nglobals; i++)
        if (strcmp(s->ast->globals[i].name, name) == 0) gi = i;
    if (gi < 0) return false;
    SmGlobal *g = &s->globals[gi];
    if (g->state == 1) nr_sm_fail(s, loc, "global '%s' is defined in terms of itself", name);
    if (g->state == 0) {
        const NrGlobal *gl = &s->ast->globals[gi];
        g->state = 1;
        if (declared_constexpr(s, gl)) {
            Val v = eval_const(s, gl->value, nr_sprintf(s->a, "global '%s'", name));
            if (!is_const_val(v)) nr_sm_fail(s, gl->loc, "global '%s' must be a compile-time constant", name);
            g->v = v;
        } else if (!try_eval_global(s, gl, &g->v)) {
            nr_sm_fail(s, loc, "'%s' is a host variable; kernels can only use constexpr globals (%s = tl.constexpr(...))",
                       name, name);
        }
        g->state = 2;
    }
    *out = g->v;
    return true;
}

Val nr_sm_lookup(Sema *s, NrLoc loc, const char *name) {
    if (s->fn) {
        Var *x = scope_find(&s->fn->sc, name);
        if (x) return x->v;
    }
    Val v;
    if (lookup_global(s, loc, name, &v)) return v;
    const NrFuncDecl *fd = nr_ast_find_func(s->ast, name);
    if (fd) {
        v.k = V_JITFN;
        v.fn = fd;
        return v;
    }
    for (int i = s->ast->nimports - 1; i >= 0; i--) {
        const NrImport *im = &s->ast->imports[i];
        if (im->alias && strcmp(im->alias, name) == 0) return import_value(s, im);
    }
    const Builtin *bi = nr_sm_find_builtin(name, SM_IN_PY);
    if (bi) {
        v.k = V_BUILTIN;
        v.bi.bi = bi;
        v.bi.self = NULL;
        return v;
    }
    if (strcmp(name, "tl") == 0 || strcmp(name, "triton") == 0) {
        v.k = V_MODULE;
        v.mod = name[0] == 't' && name[1] == 'l' ? SM_MOD_TL : SM_MOD_TRITON;
        return v;
    }
    for (int i = s->ast->nhosts - 1; i >= 0; i--) {
        const NrHostName *h = &s->ast->hosts[i];
        if (strcmp(h->name, name) != 0) continue;
        if (h->what && strcmp(h->what, "function") == 0)
            nr_sm_fail(s, loc, "'%s' is a host function, not a @jit function; kernels can only call @jit functions",
                       name);
        if (h->what && strcmp(h->what, "class") == 0)
            nr_sm_fail(s, loc, "'%s' is a host class; kernels cannot use it", name);
        nr_sm_fail(s, loc, "'%s' is a host variable; kernels can only use constexpr globals (%s = tl.constexpr(...))",
                   name, name);
    }
    static const char *const py_hints[][2] = {
        {"abs", "tl.abs"}, {"sum", "tl.sum"}, {"pow", "libdevice.pow"}, {"round", "libdevice.round"},
        {"divmod", "// and %"}, {"any", "tl.reduce_or or tl.max"}, {"all", "tl.min"}, {"zip", "tl.static_range"},
        {"enumerate", "tl.static_range"}, {"list", "a tuple"}, {"tuple", "a tuple display (a, b)"},
        {"isinstance", "x.dtype comparisons"}, {"getattr", "attribute access"}, {"hasattr", "attribute access"},
    };
    for (size_t i = 0; i < NR_COUNTOF(py_hints); i++)
        if (strcmp(py_hints[i][0], name) == 0)
            nr_sm_fail(s, loc, "the Python builtin '%s' is not available in kernels; use %s", name, py_hints[i][1]);
    nr_sm_fail(s, loc, "'%s' is not defined", name);
}

bool nr_sm_is_constexpr_annotation(Sema *s, const NrExpr *ann) {
    (void)s;
    if (!ann) return false;
    switch (ann->kind) {
    case NR_E_NAME: return strcmp(ann->name.id, "constexpr") == 0;
    case NR_E_ATTR: return strcmp(ann->attr.name, "constexpr") == 0;
    case NR_E_STR: return ann->str.len >= 9 && memmem(ann->str.s, ann->str.len, "constexpr", 9) != NULL;
    default: return false;
    }
}

/* --- moving ops between regions ------------------------------------------------------------------- */
static void move_ops(NrFunc *f, NrBlockId from, NrBlockId to) {
    NrOpId o = f->blocks[from].first;
    while (o) {
        NrOpId next = f->ops[o].next;
        nr_op_unlink(f, o);
        nr_op_append(f, to, o);
        o = next;
    }
}

static void emit_terminator(Sema *s, NrLoc loc, NrOpcode opc, int n, const NrValId *vals) {
    NrOpId op = nr_op_new(s->fn->f, opc, n, vals, 0, NULL, 0, loc);
    nr_op_append(s->fn->f, s->fn->b.block, op);
}

/* Flatten a value's IR leaves (in order) into *out; constants are skipped. */
static void flatten_ir(Sema *s, Val v, NrValId **out, int *n, int *cap) {
    if (v.k == V_IR) {
        *NR_PUSH(s->a, *out, *n, *cap) = v.ir;
    } else if (v.k == V_TUPLE) {
        for (int i = 0; i < v.tup.n; i++) flatten_ir(s, v.tup.v[i], out, n, cap);
    }
}

/* A copy of template t whose IR leaves are replaced, in order, by vals[*k...]. */
static Val refill(Sema *s, Val t, const NrValId *vals, int *k) {
    if (t.k == V_IR) return v_ir(vals[(*k)++]);
    if (t.k != V_TUPLE) return t;
    Val r = nr_sm_tuple(s, t.tup.n);
    r.tup.desc = t.tup.desc;
    for (int i = 0; i < t.tup.n; i++) r.tup.v[i] = refill(s, t.tup.v[i], vals, k);
    return r;
}

/* --- statements ----------------------------------------------------------------------------------- */
typedef struct Cont {
    const NrStmtList *list;
    int start;
    const struct Cont *next;
} Cont;

static bool lower_seq(Sema *s, const NrStmtList *list, int start, const Cont *cont);
static void lower_stmt(Sema *s, const NrStmt *st);

static const NrStmt *find_return_list(const NrStmtList *l);

static const NrStmt *find_return(const NrStmt *st) {
    switch (st->kind) {
    case NR_S_RETURN: return st;
    case NR_S_IF: {
        const NrStmt *r = find_return_list(&st->if_.body);
        return r ? r : find_return_list(&st->if_.orelse);
    }
    case NR_S_FOR: return find_return_list(&st->for_.body);
    case NR_S_WHILE: return find_return_list(&st->while_.body);
    default: return NULL;
    }
}

static const NrStmt *find_return_list(const NrStmtList *l) {
    for (int i = 0; i < l->n; i++) {
        const NrStmt *r = find_return(l->v[i]);
        if (r) return r;
    }
    return NULL;
}

/* Triton's rule for assigned values: Python numbers become IR scalars. */
static Val sanitize(Sema *s, NrLoc loc, Val v) {
    if (v.k == V_CONST && nr_cv_is_num(&v.c)) return v_ir(nr_sm_to_ir(s, loc, v, "value"));
    if (v.k == V_TUPLE && !v.tup.desc) { /* a descriptor keeps its constant sizes and strides */
        Val r = nr_sm_tuple(s, v.tup.n);
        for (int i = 0; i < v.tup.n; i++) r.tup.v[i] = sanitize(s, loc, v.tup.v[i]);
        return r;
    }
    return v;
}

static void assign_target(Sema *s, const NrExpr *t, Val v, NrLoc loc) {
    switch (t->kind) {
    case NR_E_NAME: scope_set(s, &s->fn->sc, t->name.id, v, loc); return;
    case NR_E_TUPLE:
    case NR_E_LIST:
        if (v.k != V_TUPLE)
            nr_sm_fail(s, t->loc, "cannot unpack %s into %d names", nr_sm_val_kind(s, v), t->seq.n);
        if (v.tup.n != t->seq.n)
            nr_sm_fail(s, t->loc, "%s values to unpack (expected %d, got %d)", v.tup.n > t->seq.n ? "too many" : "not enough",
                       t->seq.n, v.tup.n);
        for (int i = 0; i < t->seq.n; i++) assign_target(s, t->seq.v[i], v.tup.v[i], loc);
        return;
    case NR_E_ATTR: nr_sm_fail(s, t->loc, "assigning to an attribute is not supported in kernels");
    case NR_E_SUBSCRIPT:
        nr_sm_fail(s, t->loc, "assigning to an element or slice is not supported in kernels (blocks are immutable; "
                              "use tl.where to build a new one)");
    default: nr_sm_fail(s, t->loc, "cannot assign to this expression");
    }
}

static void lower_assign(Sema *s, const NrStmt *st) {
    Val v = sanitize(s, st->assign.value->loc, nr_sm_lower_expr(s, st->assign.value));
    for (int i = 0; i < st->assign.ntargets; i++) assign_target(s, st->assign.targets[i], v, st->loc);
}

static void lower_augassign(Sema *s, const NrStmt *st) {
    const NrExpr *t = st->aug.target;
    if (t->kind != NR_E_NAME) assign_target(s, t, nr_sm_none(), st->loc); /* reports the target */
    Val cur = nr_sm_lookup(s, t->loc, t->name.id);
    Val rhs = nr_sm_lower_expr(s, st->aug.value);
    Val v = nr_sm_binop(s, st->loc, st->aug.op, cur, rhs);
    scope_set(s, &s->fn->sc, t->name.id, sanitize(s, st->loc, v), st->loc);
}

static void lower_annassign(Sema *s, const NrStmt *st) {
    const NrExpr *t = st->ann.target;
    if (!st->ann.value) return;
    if (nr_sm_is_constexpr_annotation(s, st->ann.annotation)) {
        if (t->kind != NR_E_NAME) nr_sm_fail(s, t->loc, "only a name can be annotated tl.constexpr");
        if (scope_find(&s->fn->sc, t->name.id))
            nr_sm_fail(s, t->loc, "'%s' is already defined; a constexpr cannot be reassigned", t->name.id);
        Val v = nr_sm_lower_expr(s, st->ann.value);
        if (!is_const_val(v))
            nr_sm_fail(s, st->ann.value->loc, "'%s' is annotated tl.constexpr but its value is %s, not a compile-time "
                                              "constant",
                       t->name.id, nr_sm_val_kind(s, v));
        scope_set(s, &s->fn->sc, t->name.id, v, st->loc);
        return;
    }
    Val v = sanitize(s, st->ann.value->loc, nr_sm_lower_expr(s, st->ann.value));
    assign_target(s, t, v, st->loc);
}

static void lower_assert(Sema *s, const NrStmt *st) {
    Val c = nr_sm_lower_expr(s, st->assert_.cond);
    const char *msg = "";
    if (st->assert_.msg) {
        Val m = nr_sm_lower_expr(s, st->assert_.msg);
        if (m.k != V_CONST) nr_sm_fail(s, st->assert_.msg->loc, "the message of an assert must be a string");
        msg = nr_cv_str_of(s->a, &m.c);
    }
    if (c.k == V_CONST && nr_cv_truthy(&c.c)) return;
    NrValId cond = nr_sm_to_ir(s, st->assert_.cond->loc, c, "assert condition");
    if (nr_sm_type(s, cond)->dtype != NR_DT_I1 || nr_sm_type(s, cond)->ptr)
        cond = nr_sm_cast(s, st->loc, cond, NR_DT_I1, 0, NULL);
    NrOpId op = nr_sm_emit_op(s, st->loc, NR_OP_ASSERT, 1, &cond, 0, NULL, 0);
    nr_op_set_str(s->fn->f, op, NR_A_MSG, msg);
}

/* The value of an `if` condition: a constexpr, or an i1 scalar. */
static Val if_condition(Sema *s, const NrExpr *e, const char *what) {
    Val c = nr_sm_lower_expr(s, e);
    if (c.k == V_CONST) {
        if (c.c.kind != NR_CV_BOOL && c.c.kind != NR_CV_INT && c.c.kind != NR_CV_NONE)
            nr_sm_fail(s, e->loc, "%s must be a bool, an int or None when it is a compile-time value, not %s", what,
                       nr_sm_val_kind(s, c));
        return c;
    }
    if (c.k != V_IR) nr_sm_fail(s, e->loc, "%s cannot be %s", what, nr_sm_val_kind(s, c));
    /* in a function applied elementwise, a block condition chooses element by element */
    if (s->elementwise > 0 && nr_sm_type(s, c.ir)->rank > 0 && nr_type_numel(s->m, nr_sm_tid(s, c.ir)) > 1) {
        const NrType *t = nr_sm_type(s, c.ir);
        if (t->ptr || t->dtype != NR_DT_I1) return v_ir(nr_sm_cast(s, e->loc, c.ir, NR_DT_I1, 0, NULL));
        return c;
    }
    return v_ir(nr_sm_to_i1(s, e->loc, c.ir, what));
}

static bool is_block_cond(Sema *s, Val c) { return c.k == V_IR && nr_sm_type(s, c.ir)->rank > 0; }

/* c ? a : b for leaves of one type, c broadcast to their shape. */
static NrValId select_leaf(Sema *s, NrLoc loc, NrValId c, NrValId a, NrValId b, const char *name) {
    if (a == b) return a;
    const NrType *t = nr_sm_type(s, a);
    const NrType *ct = nr_sm_type(s, c);
    if (t->rank < ct->rank)
        nr_sm_fail(s, loc, "'%s' is %s but the if's condition differs between elements of %s; in tl.map_elementwise "
                           "a value chosen by such an if must be a tensor of the condition's shape",
                   name, nr_sm_val_kind(s, v_ir(a)), nr_sm_type_str(s, nr_sm_tid(s, c)));
    NrValId cb = nr_sm_broadcast_to(s, loc, c, t->rank, t->shape, false);
    return nr_sm_emit(s, loc, NR_OP_SELECT, nr_sm_tid(s, a), 3, (NrValId[]){cb, a, b});
}

/* --- if ------------------------------------------------------------------------------------------- */
/* Whether a and b have the same structure: tensors of one type, tuples of
 * such, and equal compile-time values elsewhere. */
static bool same_shape_val(Sema *s, Val a, Val b) {
    if (a.k == V_IR && b.k == V_IR) return nr_sm_tid(s, a.ir) == nr_sm_tid(s, b.ir);
    if (a.k == V_TUPLE && b.k == V_TUPLE) {
        if (a.tup.n != b.tup.n || !desc_same(a.tup.desc, b.tup.desc)) return false;
        for (int i = 0; i < a.tup.n; i++)
            if (!same_shape_val(s, a.tup.v[i], b.tup.v[i])) return false;
        return true;
    }
    if (a.k == V_IR || b.k == V_IR || a.k == V_TUPLE || b.k == V_TUPLE) return false;
    return nr_sm_val_same(a, b);
}

static bool has_ir(Val v) {
    if (v.k == V_IR) return true;
    if (v.k == V_TUPLE)
        for (int i = 0; i < v.tup.n; i++)
            if (has_ir(v.tup.v[i])) return true;
    return false;
}

/* A variable whose tensors differ between the branches of an if. */
typedef struct Merge {
    const char *name;
    Val tmpl;           /* the then-value: its structure */
    NrValId *t, *e;     /* the tensor leaves in each branch */
    int n;
} Merge;

/* Merge the scopes of two branches into s->fn->sc (from s0); returns the
 * variables whose tensors become results of the if. */
static Merge *merge_branches(Sema *s, NrLoc loc, const Scope *s0, const Scope *st, const Scope *se, int *nm) {
    Merge *m = NULL;
    int n = 0, cap = 0;
    Scope out = scope_copy(s, s0);
    for (int i = 0; i < st->n; i++) {
        const Var *tv = &st->v[i];
        Var *ev = scope_find((Scope *)se, tv->name);
        Var *bv = scope_find((Scope *)s0, tv->name);
        if (!ev) continue; /* defined in the then-branch only: not visible after the if */
        if (bv && nr_sm_val_same(tv->v, bv->v) && nr_sm_val_same(ev->v, bv->v)) continue;
        if (same_shape_val(s, tv->v, ev->v)) {
            if (nr_sm_val_same(tv->v, ev->v) || !has_ir(tv->v)) {
                scope_set(s, &out, tv->name, tv->v, loc);
                continue;
            }
            Merge *mm = NR_PUSH(s->a, m, n, cap);
            mm->name = tv->name;
            mm->tmpl = tv->v;
            mm->t = mm->e = NULL;
            int ct = 0, ce = 0, ne = 0;
            mm->n = 0;
            flatten_ir(s, tv->v, &mm->t, &mm->n, &ct);
            flatten_ir(s, ev->v, &mm->e, &ne, &ce);
            continue;
        }
        if (tv->v.k == V_IR && ev->v.k == V_IR)
            nr_sm_fail(s, loc, "'%s' is %s in the then-branch but %s in the else-branch of this if", tv->name,
                       nr_sm_type_str(s, nr_sm_tid(s, tv->v.ir)), nr_sm_type_str(s, nr_sm_tid(s, ev->v.ir)));
        if (!bv) continue; /* defined differently in each branch and not before: not visible after */
        const Var *changed = nr_sm_val_same(tv->v, bv->v) ? ev : tv;
        nr_sm_fail(s, changed->loc, "'%s' becomes %s in one branch of an if on a runtime condition but is %s in the "
                                    "other; only tensors can differ between branches",
                   tv->name, nr_sm_val_kind(s, changed->v), nr_sm_val_kind(s, changed == ev ? tv->v : ev->v));
    }
    s->fn->sc = out;
    *nm = n;
    return m;
}

/* An if op with `nres` results of types rts built from the temporary op
 * `tmp` whose regions were lowered; appends yields of tv / ev. */
static NrOpId finish_if(Sema *s, NrLoc loc, NrBuilder parent, NrOpId tmp, NrValId cond, int nres, const NrTypeId *rts,
                        const NrValId *tv, const NrValId *ev) {
    NrFunc *f = s->fn->f;
    s->fn->b = parent;
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_IF, 1, &cond, nres, rts, 2);
    NrBlockId r0 = f->ops[op].regions[0], r1 = f->ops[op].regions[1];
    move_ops(f, f->ops[tmp].regions[0], r0);
    move_ops(f, f->ops[tmp].regions[1], r1);
    nr_op_erase(f, tmp);
    NrOpId y0 = nr_op_new(f, NR_OP_YIELD, nres, tv, 0, NULL, 0, loc);
    nr_op_append(f, r0, y0);
    NrOpId y1 = nr_op_new(f, NR_OP_YIELD, nres, ev, 0, NULL, 0, loc);
    nr_op_append(f, r1, y1);
    return op;
}

/* An if on a condition that differs between elements (in tl.map_elementwise):
 * both branches are lowered in line and each variable they change becomes
 * a select. */
static void lower_if_select(Sema *s, const NrStmt *st, NrValId c) {
    SmFn *fn = s->fn;
    Scope s0 = scope_copy(s, &fn->sc);
    lower_seq(s, &st->if_.body, 0, NULL);
    Scope sthen = fn->sc;
    fn->sc = scope_copy(s, &s0);
    lower_seq(s, &st->if_.orelse, 0, NULL);
    Scope selse = fn->sc;
    int nm;
    Merge *m = merge_branches(s, st->loc, &s0, &sthen, &selse, &nm);
    for (int i = 0; i < nm; i++) {
        NrValId *leaves = nr_alloc(s->a, sizeof(NrValId) * (size_t)(m[i].n + 1));
        for (int k = 0; k < m[i].n; k++) leaves[k] = select_leaf(s, st->loc, c, m[i].t[k], m[i].e[k], m[i].name);
        int q = 0;
        scope_set(s, &fn->sc, m[i].name, refill(s, m[i].tmpl, leaves, &q), st->loc);
    }
}

static void lower_if(Sema *s, const NrStmt *st) {
    Val c = if_condition(s, st->if_.cond, "the condition of an if");
    if (c.k == V_CONST) {
        const NrStmtList *taken = nr_cv_truthy(&c.c) ? &st->if_.body : &st->if_.orelse;
        lower_seq(s, taken, 0, NULL);
        return;
    }
    if (is_block_cond(s, c)) {
        lower_if_select(s, st, c.ir);
        return;
    }
    SmFn *fn = s->fn;
    NrFunc *f = fn->f;
    NrBuilder parent = fn->b;
    NrOpId tmp = nr_op_new(f, NR_OP_IF, 1, &c.ir, 0, NULL, 2, st->loc);
    Scope s0 = scope_copy(s, &fn->sc);
    fn->b = nr_builder_at_end(f, f->ops[tmp].regions[0]);
    lower_seq(s, &st->if_.body, 0, NULL);
    Scope sthen = fn->sc;
    fn->sc = scope_copy(s, &s0);
    fn->b = nr_builder_at_end(f, f->ops[tmp].regions[1]);
    lower_seq(s, &st->if_.orelse, 0, NULL);
    Scope selse = fn->sc;
    fn->b = parent;
    int nm;
    Merge *m = merge_branches(s, st->loc, &s0, &sthen, &selse, &nm);
    /* one result per tensor leaf that differs between the branches */
    int nr = 0;
    for (int i = 0; i < nm; i++)
        for (int k = 0; k < m[i].n; k++) nr += m[i].t[k] != m[i].e[k];
    NrTypeId *rts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(nr + 1));
    NrValId *tv = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nr + 1));
    NrValId *ev = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nr + 1));
    nr = 0;
    for (int i = 0; i < nm; i++)
        for (int k = 0; k < m[i].n; k++)
            if (m[i].t[k] != m[i].e[k]) {
                rts[nr] = nr_sm_tid(s, m[i].t[k]);
                tv[nr] = m[i].t[k];
                ev[nr++] = m[i].e[k];
            }
    NrOpId op = finish_if(s, st->loc, parent, tmp, c.ir, nr, rts, tv, ev);
    int r = 0;
    for (int i = 0; i < nm; i++) {
        NrValId *leaves = nr_alloc(s->a, sizeof(NrValId) * (size_t)(m[i].n + 1));
        for (int k = 0; k < m[i].n; k++) leaves[k] = m[i].t[k] != m[i].e[k] ? nr_op_result(f, op, r++) : m[i].t[k];
        int q = 0;
        scope_set(s, &fn->sc, m[i].name, refill(s, m[i].tmpl, leaves, &q), st->loc);
    }
}

/* Returned values flattened for yields: constexpr numbers become IR values. */
static Val decay_ret(Sema *s, NrLoc loc, Val v) {
    if (v.k == V_CONST && nr_cv_is_num(&v.c)) return v_ir(nr_sm_to_ir(s, loc, v, "returned value"));
    if (v.k == V_TUPLE) {
        Val r = nr_sm_tuple(s, v.tup.n);
        r.tup.desc = v.tup.desc;
        for (int i = 0; i < v.tup.n; i++) r.tup.v[i] = decay_ret(s, loc, v.tup.v[i]);
        return r;
    }
    return v;
}

/* Both branches return: check that they return the same kind of value. */
static void check_same_ret(Sema *s, NrLoc loc, Val a, Val b) {
    bool ok = a.k == b.k;
    if (ok && a.k == V_IR) ok = nr_sm_tid(s, a.ir) == nr_sm_tid(s, b.ir);
    else if (ok && a.k == V_TUPLE) {
        ok = a.tup.n == b.tup.n && desc_same(a.tup.desc, b.tup.desc);
        for (int i = 0; ok && i < a.tup.n; i++) check_same_ret(s, loc, a.tup.v[i], b.tup.v[i]);
    } else if (ok) {
        ok = nr_sm_val_same(a, b);
    }
    if (!ok)
        nr_sm_fail(s, loc, "inconsistent return types: %s and %s", nr_sm_val_kind(s, a), nr_sm_val_kind(s, b));
}

/* An if on a runtime condition holding a return: both branches continue with
 * `next` and end in a return; the if's results are the returned values. */
static bool lower_if_return(Sema *s, const NrStmt *st, const Cont *next) {
    Val c = if_condition(s, st->if_.cond, "the condition of an if");
    if (c.k == V_CONST) {
        const NrStmtList *taken = nr_cv_truthy(&c.c) ? &st->if_.body : &st->if_.orelse;
        return lower_seq(s, taken, 0, next);
    }
    SmFn *fn = s->fn;
    NrFunc *f = fn->f;
    if (fn->loops > 0) nr_sm_fail(s, find_return(st)->loc, "'return' inside a loop is not supported");
    if (is_block_cond(s, c)) { /* elementwise: both ways lowered in line, the results selected */
        Scope s0 = scope_copy(s, &fn->sc);
        Val rets[2];
        for (int r = 0; r < 2; r++) {
            fn->sc = scope_copy(s, &s0);
            bool returned = lower_seq(s, r == 0 ? &st->if_.body : &st->if_.orelse, 0, next);
            rets[r] = decay_ret(s, st->loc, returned ? fn->ret : nr_sm_none());
        }
        check_same_ret(s, st->loc, rets[0], rets[1]);
        NrValId *tv = NULL, *ev = NULL;
        int nt = 0, ne = 0, ct = 0, ce = 0;
        flatten_ir(s, rets[0], &tv, &nt, &ct);
        flatten_ir(s, rets[1], &ev, &ne, &ce);
        NR_ASSERT(nt == ne);
        for (int i = 0; i < nt; i++) tv[i] = select_leaf(s, st->loc, c.ir, tv[i], ev[i], "the returned value");
        int k = 0;
        fn->ret = refill(s, rets[0], tv, &k);
        fn->sc = s0;
        return true;
    }
    NrBuilder parent = fn->b;
    NrOpId tmp = nr_op_new(f, NR_OP_IF, 1, &c.ir, 0, NULL, 2, st->loc);
    Scope s0 = scope_copy(s, &fn->sc);
    Val rets[2];
    for (int r = 0; r < 2; r++) {
        fn->sc = scope_copy(s, &s0);
        fn->b = nr_builder_at_end(f, f->ops[tmp].regions[r]);
        bool returned = lower_seq(s, r == 0 ? &st->if_.body : &st->if_.orelse, 0, next);
        rets[r] = decay_ret(s, st->loc, returned ? fn->ret : nr_sm_none());
    }
    fn->b = parent;
    check_same_ret(s, st->loc, rets[0], rets[1]);
    NrValId *tv = NULL, *ev = NULL;
    int nt = 0, ne = 0, ct = 0, ce = 0;
    flatten_ir(s, rets[0], &tv, &nt, &ct);
    flatten_ir(s, rets[1], &ev, &ne, &ce);
    NR_ASSERT(nt == ne);
    NrTypeId *rts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(nt + 1));
    for (int i = 0; i < nt; i++) rts[i] = nr_sm_tid(s, tv[i]);
    NrOpId op = finish_if(s, st->loc, parent, tmp, c.ir, nt, rts, tv, ev);
    int k = 0;
    fn->ret = refill(s, rets[0], f->ops[op].results, &k);
    fn->sc = s0;
    return true;
}

/* --- loops ---------------------------------------------------------------------------------------- */
typedef struct Names {
    const char **v;
    int n, cap;
} Names;

static void add_name(Sema *s, Names *ns, const char *name) {
    for (int i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0) return;
    *NR_PUSH(s->a, ns->v, ns->n, ns->cap) = name;
}

static void target_names(Sema *s, const NrExpr *t, Names *ns) {
    if (!t) return;
    if (t->kind == NR_E_NAME) add_name(s, ns, t->name.id);
    if (t->kind == NR_E_TUPLE || t->kind == NR_E_LIST)
        for (int i = 0; i < t->seq.n; i++) target_names(s, t->seq.v[i], ns);
}

/* The names a statement list may assign (syntactically). */
static void assigned_names(Sema *s, const NrStmtList *l, Names *ns) {
    for (int i = 0; i < l->n; i++) {
        const NrStmt *st = l->v[i];
        switch (st->kind) {
        case NR_S_ASSIGN:
            for (int k = 0; k < st->assign.ntargets; k++) target_names(s, st->assign.targets[k], ns);
            break;
        case NR_S_AUGASSIGN: target_names(s, st->aug.target, ns); break;
        case NR_S_ANNASSIGN:
            if (st->ann.value) target_names(s, st->ann.target, ns);
            break;
        case NR_S_IF:
            assigned_names(s, &st->if_.body, ns);
            assigned_names(s, &st->if_.orelse, ns);
            break;
        case NR_S_FOR:
            target_names(s, st->for_.target, ns);
            assigned_names(s, &st->for_.body, ns);
            break;
        case NR_S_WHILE: assigned_names(s, &st->while_.body, ns); break;
        default: break;
        }
    }
}

/* Loop-carried candidates: variables holding tensors (or tuples with
 * tensors) before the loop that the body may assign; each tensor leaf is one
 * Carry.  Other assigned variables must not change. */
typedef struct Carry {
    NrValId init;
    NrValId arg;     /* block argument standing for it in the body (region 1 for while) */
    NrValId arg0;    /* while: block argument of region 0 */
    NrValId final;
    bool keep;
} Carry;

typedef struct CarryVar {
    const char *name;
    Val tmpl;        /* the value before the loop: its structure */
    int first, n;    /* its leaves in the Carry array */
} CarryVar;

static Carry *loop_candidates(Sema *s, const NrStmtList *body, const char *ignore, int *nc, CarryVar **vars,
                              int *nv) {
    Names ns = {NULL, 0, 0};
    assigned_names(s, body, &ns);
    Carry *c = NULL;
    int n = 0, cap = 0;
    *vars = nr_alloc(s->a, sizeof(CarryVar) * (size_t)(ns.n + 1));
    *nv = 0;
    for (int i = 0; i < ns.n; i++) {
        if (ignore && strcmp(ns.v[i], ignore) == 0) continue;
        Var *x = scope_find(&s->fn->sc, ns.v[i]);
        if (!x || !has_ir(x->v)) continue;
        NrValId *leaves = NULL;
        int nl = 0, lcap = 0;
        flatten_ir(s, x->v, &leaves, &nl, &lcap);
        CarryVar *cv = &(*vars)[(*nv)++];
        cv->name = ns.v[i];
        cv->tmpl = x->v;
        cv->first = n;
        cv->n = nl;
        for (int k = 0; k < nl; k++) {
            Carry *ck = NR_PUSH(s->a, c, n, cap);
            ck->init = leaves[k];
        }
    }
    *nc = n;
    return c;
}

/* The value of variable v made of leaves vals[v->first ...]. */
static Val carry_value(Sema *s, const CarryVar *v, const NrValId *vals) {
    int k = 0;
    return refill(s, v->tmpl, vals + v->first, &k);
}

/* After the body: the final value of each candidate, type checks, and
 * checks that compile-time variables did not change. */
static void loop_finals(Sema *s, const Scope *s0, const CarryVar *vars, int nv, Carry *c) {
    Scope *sc = &s->fn->sc;
    for (int i = 0; i < nv; i++) {
        const CarryVar *v = &vars[i];
        Var *x = scope_find(sc, v->name);
        if (v->tmpl.k == V_IR && x->v.k == V_IR && nr_sm_tid(s, v->tmpl.ir) != nr_sm_tid(s, x->v.ir))
            nr_sm_fail(s, x->loc, "loop-carried variable '%s' changes type from %s to %s inside the loop", v->name,
                       nr_sm_type_str(s, nr_sm_tid(s, v->tmpl.ir)), nr_sm_type_str(s, nr_sm_tid(s, x->v.ir)));
        if (!same_shape_val(s, v->tmpl, x->v))
            nr_sm_fail(s, x->loc, "loop-carried variable '%s' changes from %s to %s inside the loop; it must keep its "
                                  "type",
                       v->name, nr_sm_val_kind(s, v->tmpl), nr_sm_val_kind(s, x->v));
        NrValId *leaves = NULL;
        int nl = 0, lcap = 0;
        flatten_ir(s, x->v, &leaves, &nl, &lcap);
        NR_ASSERT(nl == v->n);
        for (int k = 0; k < nl; k++) {
            Carry *ck = &c[v->first + k];
            ck->final = leaves[k];
            ck->keep = ck->final != ck->arg;
        }
    }
    for (int i = 0; i < s0->n; i++) {
        const Var *b = &s0->v[i];
        if (has_ir(b->v)) continue;
        Var *x = scope_find(sc, b->name);
        if (x && !nr_sm_val_same(x->v, b->v))
            nr_sm_fail(s, x->loc, "'%s' is %s before the loop and cannot change inside it (only tensors can be "
                                  "loop-carried)",
                       b->name, nr_sm_val_kind(s, b->v));
    }
}

/* After a loop op: the scope before the loop, with the carried variables
 * made of the op's results (kept leaves) and their initial values (others). */
static void loop_results(Sema *s, NrLoc loc, Scope s0, const CarryVar *vars, int nv, const Carry *c, int nc, NrOpId op) {
    NrFunc *f = s->fn->f;
    NrValId *leaves = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    for (int i = 0, r = 0; i < nc; i++) leaves[i] = c[i].keep ? nr_op_result(f, op, r++) : c[i].init;
    s->fn->sc = s0;
    for (int i = 0; i < nv; i++) {
        bool changed = false;
        for (int k = 0; k < vars[i].n; k++) changed = changed || c[vars[i].first + k].keep;
        if (changed) scope_set(s, &s->fn->sc, vars[i].name, carry_value(s, &vars[i], leaves), loc);
    }
}

typedef struct RangeArgs {
    Val lo, hi, step;
    NrLoc lo_loc, hi_loc, step_loc;
    Val num_stages, unroll, flatten, disallow, warp_spec;
} RangeArgs;

static void eval_call_args(Sema *s, const NrExpr *call, Val **args, NrLoc **locs, const char ***kwn, Val **kwv,
                           NrLoc **kwl) {
    int na = call->call.nargs, nk = call->call.nkw;
    *args = nr_alloc(s->a, sizeof(Val) * (size_t)(na + 1));
    *locs = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(na + 1));
    *kwn = nr_alloc(s->a, sizeof(char *) * (size_t)(nk + 1));
    *kwv = nr_alloc(s->a, sizeof(Val) * (size_t)(nk + 1));
    *kwl = nr_alloc(s->a, sizeof(NrLoc) * (size_t)(nk + 1));
    for (int i = 0; i < na; i++) {
        (*args)[i] = nr_sm_lower_expr(s, call->call.args[i]);
        (*locs)[i] = call->call.args[i]->loc;
    }
    for (int i = 0; i < nk; i++) {
        (*kwn)[i] = call->call.kw[i].name;
        (*kwv)[i] = nr_sm_lower_expr(s, call->call.kw[i].value);
        (*kwl)[i] = call->call.kw[i].loc;
    }
}

static void range_args(Sema *s, const NrExpr *call, int kind, const Builtin *bi, RangeArgs *ra) {
    Val *args, *kwv;
    NrLoc *locs, *kwl;
    const char **kwn;
    eval_call_args(s, call, &args, &locs, &kwn, &kwv, &kwl);
    SmCall c;
    nr_sm_bind_args(s, call->loc, bi, NULL, call->call.nargs, args, locs, call->call.nkw, kwn, kwv, kwl, &c);
    memset(ra, 0, sizeof *ra);
    /* range(stop) / range(start, stop[, step]) */
    bool one = c.arg[1].k == V_CONST && c.arg[1].c.kind == NR_CV_NONE && !c.given[1];
    ra->lo = one ? v_const(nr_cv_int(0)) : c.arg[0];
    ra->lo_loc = c.argloc[0];
    ra->hi = one ? c.arg[0] : c.arg[1];
    ra->hi_loc = one ? c.argloc[0] : c.argloc[1];
    bool nostep = c.arg[2].k == V_CONST && c.arg[2].c.kind == NR_CV_NONE;
    ra->step = nostep ? v_const(nr_cv_int(1)) : c.arg[2];
    ra->step_loc = c.argloc[2];
    if (kind == SM_RANGE_TL) {
        ra->num_stages = c.arg[3];
        ra->unroll = c.arg[4];
        ra->disallow = c.arg[5];
        ra->flatten = c.arg[6];
        ra->warp_spec = c.arg[7];
    }
}

static int64_t const_int_arg(Sema *s, Val v, NrLoc loc, const char *what) {
    if (v.k != V_CONST || (v.c.kind != NR_CV_INT && v.c.kind != NR_CV_BOOL))
        nr_sm_fail(s, loc, "%s must be a constexpr int, got %s%s", what, nr_sm_val_kind(s, v), nr_sm_const_hint(s, v));
    if (v.c.kind == NR_CV_BOOL) return v.c.b;
    if (v.c.is_unsigned) nr_sm_fail(s, loc, "%s is too large", what);
    return v.c.i;
}

static void lower_static_range(Sema *s, const NrStmt *st, const RangeArgs *ra) {
    int64_t lo = const_int_arg(s, ra->lo, ra->lo_loc, "the start of tl.static_range");
    int64_t hi = const_int_arg(s, ra->hi, ra->hi_loc, "the end of tl.static_range");
    int64_t step = const_int_arg(s, ra->step, ra->step_loc, "the step of tl.static_range");
    if (step == 0) nr_sm_fail(s, ra->step_loc, "the step of tl.static_range must not be zero");
    __int128 count = step > 0 ? ((__int128)hi - lo + step - 1) / step : ((__int128)lo - hi - step - 1) / -step;
    if (count < 0) count = 0;
    if (count > SM_MAX_UNROLL)
        nr_sm_fail(s, st->for_.iter->loc, "tl.static_range unrolls at most %d iterations, this one has %lld",
                   SM_MAX_UNROLL, (long long)count);
    s->fn->loops++;
    for (int64_t k = 0; k < (int64_t)count; k++) {
        int64_t i = lo + k * step;
        scope_set(s, &s->fn->sc, st->for_.target->name.id, v_const(nr_cv_int(i)), st->loc);
        lower_seq(s, &st->for_.body, 0, NULL);
    }
    s->fn->loops--;
}

/* A loop bound as an IR value of dtype dt (constants are made in dt directly). */
static NrValId bound_as(Sema *s, NrLoc loc, Val v, NrDtype dt) {
    if (v.k == V_CONST) return nr_sm_const(s, loc, nr_type_scalar(s->m, dt), &v.c);
    return nr_sm_cast(s, loc, v.ir, dt, 0, NULL);
}

static NrDtype bound_dtype(Sema *s, NrLoc loc, Val v, const char *what) {
    if (v.k == V_CONST && nr_cv_is_num(&v.c)) {
        NrDtype dt = nr_cv_default_dtype(&v.c);
        if (!nr_dt_is_int(dt))
            nr_sm_fail(s, loc, "%s of a for loop must be an integer, got %s", what, nr_sm_val_kind(s, v));
        return dt;
    }
    if (v.k != V_IR) nr_sm_fail(s, loc, "%s of a for loop must be an integer, got %s", what, nr_sm_val_kind(s, v));
    const NrType *t = nr_sm_type(s, v.ir);
    if (t->ptr || !nr_dt_is_int((NrDtype)t->dtype))
        nr_sm_fail(s, loc, "%s of a for loop must be an integer, got %s", what, nr_sm_val_kind(s, v));
    if (t->rank != 0) nr_sm_fail(s, loc, "%s of a for loop must be a scalar, got %s", what, nr_sm_val_kind(s, v));
    return (NrDtype)t->dtype;
}

static void set_loop_attrs(Sema *s, NrOpId op, const RangeArgs *ra) {
    NrFunc *f = s->fn->f;
    if (ra->num_stages.k == V_CONST && ra->num_stages.c.kind != NR_CV_NONE)
        nr_op_set_int(f, op, NR_A_NUM_STAGES, const_int_arg(s, ra->num_stages, f->ops[op].loc, "num_stages"));
    if (ra->unroll.k == V_CONST && ra->unroll.c.kind != NR_CV_NONE)
        nr_op_set_int(f, op, NR_A_UNROLL, const_int_arg(s, ra->unroll, f->ops[op].loc, "loop_unroll_factor"));
    if (ra->flatten.k == V_CONST && nr_cv_truthy(&ra->flatten.c)) nr_op_set_bool(f, op, NR_A_FLATTEN, true);
    if (ra->disallow.k == V_CONST && nr_cv_truthy(&ra->disallow.c))
        nr_op_set_bool(f, op, NR_A_DISALLOW_ACC_MULTI_BUFFER, true);
    if (ra->warp_spec.k == V_CONST && nr_cv_truthy(&ra->warp_spec.c)) nr_op_set_bool(f, op, NR_A_WARP_SPECIALIZE, true);
}

static void check_loop_flag(Sema *s, Val v, NrLoc loc, const char *what) {
    if (v.k != V_CONST) nr_sm_fail(s, loc, "%s of tl.range must be a compile-time constant", what);
}

static void lower_for(Sema *s, const NrStmt *st) {
    const NrExpr *it = st->for_.iter;
    int kind = 0;
    Val fnv = nr_sm_none();
    if (it->kind == NR_E_CALL) fnv = nr_sm_lower_expr(s, it->call.func);
    if (it->kind != NR_E_CALL || !nr_sm_is_range_builtin(&fnv, &kind))
        nr_sm_fail(s, it->loc, "for loops must iterate over range(...), tl.range(...) or tl.static_range(...)");
    if (!st->for_.target || st->for_.target->kind != NR_E_NAME)
        nr_sm_fail(s, st->for_.target ? st->for_.target->loc : st->loc, "the target of a for loop must be a single name");
    const char *tname = st->for_.target->name.id;
    RangeArgs ra;
    range_args(s, it, kind, fnv.bi.bi, &ra);
    if (kind == SM_RANGE_STATIC) {
        lower_static_range(s, st, &ra);
        return;
    }
    if (kind == SM_RANGE_TL) {
        check_loop_flag(s, ra.flatten, it->loc, "flatten");
        check_loop_flag(s, ra.disallow, it->loc, "disallow_acc_multi_buffer");
        check_loop_flag(s, ra.warp_spec, it->loc, "warp_specialize");
    }
    Val lo = ra.lo, hi = ra.hi, step = ra.step;
    NrLoc lo_loc = ra.lo_loc, hi_loc = ra.hi_loc;
    bool negative = false;
    if (step.k == V_CONST && nr_cv_is_num(&step.c)) {
        if (step.c.kind == NR_CV_INT && step.c.i == 0 && !step.c.is_unsigned)
            nr_sm_fail(s, ra.step_loc, "the step of range() must not be zero");
        if (step.c.kind == NR_CV_INT && !step.c.is_unsigned && step.c.i < 0) {
            negative = true;
            step = v_const(nr_cv_binop(s, ra.step_loc, NR_BIN_SUB, &(NrCVal){.kind = NR_CV_INT}, &step.c));
            Val t = lo;
            lo = hi;
            hi = t;
            NrLoc tl = lo_loc;
            lo_loc = hi_loc;
            hi_loc = tl;
        }
    }
    NrDtype dlo = bound_dtype(s, lo_loc, lo, "the start");
    NrDtype dhi = bound_dtype(s, hi_loc, hi, "the end");
    NrDtype dst = bound_dtype(s, ra.step_loc, step, "the step");
    NrDtype ivt = nr_sm_integer_promote(nr_sm_integer_promote(dlo, dhi), dst);
    if (ivt == NR_DT_I1) ivt = NR_DT_I32;
    NrValId lb = bound_as(s, lo_loc, lo, ivt), ub = bound_as(s, hi_loc, hi, ivt),
            sp = bound_as(s, ra.step_loc, step, ivt);

    SmFn *fn = s->fn;
    NrFunc *f = fn->f;
    NrBuilder parent = fn->b;
    int nc, nv;
    CarryVar *vars;
    Carry *c = loop_candidates(s, &st->for_.body, tname, &nc, &vars, &nv);
    NrValId *opnds = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 3));
    NrTypeId *rts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(nc + 1));
    opnds[0] = lb, opnds[1] = ub, opnds[2] = sp;
    for (int i = 0; i < nc; i++) {
        opnds[3 + i] = c[i].init;
        rts[i] = nr_sm_tid(s, c[i].init);
    }
    NrOpId tmp = nr_op_new(f, NR_OP_FOR, 3 + nc, opnds, nc, rts, 1, st->loc);
    NrBlockId body = f->ops[tmp].regions[0];
    NrTypeId ivtype = nr_type_scalar(s->m, ivt);
    NrValId iv = nr_block_add_arg(f, body, ivtype);
    for (int i = 0; i < nc; i++) c[i].arg = nr_block_add_arg(f, body, rts[i]);

    Scope s0 = scope_copy(s, &fn->sc);
    fn->b = nr_builder_at_end(f, body);
    NrValId *args = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) args[i] = c[i].arg;
    for (int i = 0; i < nv; i++) scope_set(s, &fn->sc, vars[i].name, carry_value(s, &vars[i], args), st->loc);
    NrValId target = iv;
    if (negative) {
        /* iterate lb' = ub .. ub' = lb upward; the value is ub' + lb' - iv */
        NrValId t = nr_sm_emit(s, st->loc, NR_OP_SUB, ivtype, 2, (NrValId[]){ub, iv});
        target = nr_sm_emit(s, st->loc, NR_OP_ADD, ivtype, 2, (NrValId[]){t, lb});
    }
    scope_set(s, &fn->sc, tname, v_ir(target), st->loc);
    fn->loops++;
    lower_seq(s, &st->for_.body, 0, NULL);
    fn->loops--;
    loop_finals(s, &s0, vars, nv, c);

    /* rebuild with the carried values that changed; the yield moves with the body */
    int nk = 0;
    NrValId *yv = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++)
        if (c[i].keep) yv[nk++] = c[i].final;
    NrOpId y = nr_op_new(f, NR_OP_YIELD, nk, yv, 0, NULL, 0, st->loc);
    nr_op_append(f, body, y);
    nk = 0;
    for (int i = 0; i < nc; i++)
        if (c[i].keep) opnds[3 + nk] = c[i].init, rts[nk] = rts[i], nk++;
    fn->b = parent;
    NrOpId op = nr_sm_emit_op(s, st->loc, NR_OP_FOR, 3 + nk, opnds, nk, rts, 1);
    if (kind == SM_RANGE_TL) set_loop_attrs(s, op, &ra);
    NrBlockId nbody = f->ops[op].regions[0];
    NrValId niv = nr_block_add_arg(f, nbody, ivtype);
    move_ops(f, body, nbody);
    nr_replace_all_uses(f, iv, niv);
    for (int i = 0; i < nc; i++)
        nr_replace_all_uses(f, c[i].arg, c[i].keep ? nr_block_add_arg(f, nbody, nr_sm_tid(s, c[i].init)) : c[i].init);
    nr_op_erase(f, tmp);

    loop_results(s, st->loc, s0, vars, nv, c, nc, op);
}

static void lower_while(Sema *s, const NrStmt *st) {
    SmFn *fn = s->fn;
    NrFunc *f = fn->f;
    NrBuilder parent = fn->b;
    int nc, nv;
    CarryVar *vars;
    Carry *c = loop_candidates(s, &st->while_.body, NULL, &nc, &vars, &nv);
    NrValId *inits = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    NrTypeId *rts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) {
        inits[i] = c[i].init;
        rts[i] = nr_sm_tid(s, c[i].init);
    }
    NrOpId tmp = nr_op_new(f, NR_OP_WHILE, nc, inits, nc, rts, 2, st->loc);
    NrBlockId r0 = f->ops[tmp].regions[0], r1 = f->ops[tmp].regions[1];
    for (int i = 0; i < nc; i++) c[i].arg0 = nr_block_add_arg(f, r0, rts[i]);
    for (int i = 0; i < nc; i++) c[i].arg = nr_block_add_arg(f, r1, rts[i]);
    Scope s0 = scope_copy(s, &fn->sc);

    /* region 0: the condition */
    fn->b = nr_builder_at_end(f, r0);
    NrValId *args = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) args[i] = c[i].arg0;
    for (int i = 0; i < nv; i++) scope_set(s, &fn->sc, vars[i].name, carry_value(s, &vars[i], args), st->loc);
    Val cv = nr_sm_lower_expr(s, st->while_.cond);
    if (cv.k == V_CONST) {
        if (!nr_cv_truthy(&cv.c)) { /* never runs */
            nr_op_erase(f, tmp);
            fn->b = parent;
            fn->sc = s0;
            return;
        }
        nr_sm_fail(s, st->while_.cond->loc, "the condition of a while loop is always true: the loop would never end "
                                            "(kernels have no 'break')");
    }
    if (cv.k != V_IR) nr_sm_fail(s, st->while_.cond->loc, "the condition of a while loop cannot be %s",
                                 nr_sm_val_kind(s, cv));
    if (s->elementwise > 0 && nr_sm_type(s, cv.ir)->rank > 0 && nr_type_numel(s->m, nr_sm_tid(s, cv.ir)) > 1)
        nr_sm_fail(s, st->while_.cond->loc, "a while loop whose condition differs between elements is not supported in "
                                            "a function applied by tl.map_elementwise; loop a fixed number of times and "
                                            "select with tl.where");
    NrValId cond = nr_sm_to_i1(s, st->while_.cond->loc, cv.ir, "the condition of a while loop");
    NrOpId condop = nr_op_new(f, NR_OP_CONDITION, 1, &cond, 0, NULL, 0, st->loc);
    nr_op_append(f, r0, condop);

    /* region 1: the body */
    fn->sc = scope_copy(s, &s0);
    fn->b = nr_builder_at_end(f, r1);
    for (int i = 0; i < nc; i++) args[i] = c[i].arg;
    for (int i = 0; i < nv; i++) scope_set(s, &fn->sc, vars[i].name, carry_value(s, &vars[i], args), st->loc);
    fn->loops++;
    lower_seq(s, &st->while_.body, 0, NULL);
    fn->loops--;
    loop_finals(s, &s0, vars, nv, c);

    int nk = 0;
    NrValId *yv = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    NrValId *cargs = nr_alloc(s->a, sizeof(NrValId) * (size_t)(nc + 1));
    cargs[0] = cond;
    for (int i = 0; i < nc; i++)
        if (c[i].keep) {
            yv[nk] = c[i].final;
            inits[nk] = c[i].init;
            rts[nk] = nr_sm_tid(s, c[i].init);
            cargs[1 + nk] = c[i].arg0;
            nk++;
        }
    NrOpId y = nr_op_new(f, NR_OP_YIELD, nk, yv, 0, NULL, 0, st->loc);
    nr_op_append(f, r1, y);
    nr_op_set_operands(f, condop, 1 + nk, cargs);
    fn->b = parent;
    NrOpId op = nr_sm_emit_op(s, st->loc, NR_OP_WHILE, nk, inits, nk, rts, 2);
    NrBlockId n0 = f->ops[op].regions[0], n1 = f->ops[op].regions[1];
    move_ops(f, r0, n0);
    move_ops(f, r1, n1);
    for (int i = 0; i < nc; i++) {
        NrTypeId t = nr_sm_tid(s, c[i].init);
        nr_replace_all_uses(f, c[i].arg0, c[i].keep ? nr_block_add_arg(f, n0, t) : c[i].init);
        nr_replace_all_uses(f, c[i].arg, c[i].keep ? nr_block_add_arg(f, n1, t) : c[i].init);
    }
    nr_op_erase(f, tmp);
    loop_results(s, st->loc, s0, vars, nv, c, nc, op);
}

/* --- statement sequences -------------------------------------------------------------------------- */
static void lower_return(Sema *s, const NrStmt *st) {
    SmFn *fn = s->fn;
    if (fn->loops > 0) nr_sm_fail(s, st->loc, "'return' inside a loop is not supported");
    fn->ret = st->ret.value ? nr_sm_lower_expr(s, st->ret.value) : nr_sm_none();
    if (fn->is_kernel && !(fn->ret.k == V_CONST && fn->ret.c.kind == NR_CV_NONE))
        nr_sm_fail(s, st->ret.value ? st->ret.value->loc : st->loc,
                   "a kernel cannot return a value (kernels write their results through pointers)");
}

static bool lower_seq(Sema *s, const NrStmtList *list, int start, const Cont *cont) {
    for (int i = start; i < list->n; i++) {
        const NrStmt *st = list->v[i];
        if (st->kind == NR_S_RETURN) {
            nr_sm_enter(s, st->loc);
            lower_return(s, st);
            nr_sm_leave(s);
            return true;
        }
        if (st->kind == NR_S_IF && find_return(st)) {
            Cont next = {list, i + 1, cont};
            nr_sm_enter(s, st->loc);
            bool r = lower_if_return(s, st, &next);
            nr_sm_leave(s);
            if (r) return true;
            /* a constexpr if whose taken branch fell through already ran the continuation */
            return false;
        }
        lower_stmt(s, st);
    }
    if (cont) return lower_seq(s, cont->list, cont->start, cont->next);
    return false;
}

static void lower_stmt(Sema *s, const NrStmt *st) {
    nr_sm_enter(s, st->loc);
    switch (st->kind) {
    case NR_S_EXPR:
        if (st->expr->kind != NR_E_STR) (void)nr_sm_lower_expr(s, st->expr); /* docstrings are skipped */
        break;
    case NR_S_ASSIGN: lower_assign(s, st); break;
    case NR_S_AUGASSIGN: lower_augassign(s, st); break;
    case NR_S_ANNASSIGN: lower_annassign(s, st); break;
    case NR_S_IF: lower_if(s, st); break;
    case NR_S_FOR: lower_for(s, st); break;
    case NR_S_WHILE: lower_while(s, st); break;
    case NR_S_PASS: break;
    case NR_S_ASSERT: lower_assert(s, st); break;
    case NR_S_RETURN: NR_UNREACHABLE();
    }
    nr_sm_leave(s);
}

/* --- conditional expressions ---------------------------------------------------------------------- */
Val nr_sm_lower_ifexp(Sema *s, const NrExpr *e) {
    Val c = if_condition(s, e->ifexp.cond, "the condition of a conditional expression");
    if (c.k == V_CONST) return nr_sm_lower_expr(s, nr_cv_truthy(&c.c) ? e->ifexp.then : e->ifexp.els);
    if (is_block_cond(s, c)) { /* elementwise: tl.where */
        Val a = nr_sm_lower_expr(s, e->ifexp.then), b = nr_sm_lower_expr(s, e->ifexp.els);
        const Builtin *where = nr_sm_find_builtin("where", SM_IN_TL);
        return nr_sm_call_builtin(s, e->loc, where, NULL, 3, (Val[]){c, a, b}, NULL, 0, NULL, NULL, NULL);
    }
    SmFn *fn = s->fn;
    NrFunc *f = fn->f;
    NrBuilder parent = fn->b;
    NrOpId tmp = nr_op_new(f, NR_OP_IF, 1, &c.ir, 0, NULL, 2, e->loc);
    NrValId v[2];
    for (int r = 0; r < 2; r++) {
        fn->b = nr_builder_at_end(f, f->ops[tmp].regions[r]);
        const NrExpr *x = r == 0 ? e->ifexp.then : e->ifexp.els;
        v[r] = nr_sm_to_ir(s, x->loc, nr_sm_lower_expr(s, x), "a branch of a conditional expression");
    }
    NrTypeId t0 = nr_sm_tid(s, v[0]), t1 = nr_sm_tid(s, v[1]);
    if (t0 != t1)
        nr_sm_fail(s, e->loc, "the two branches of this conditional expression have different types: %s and %s",
                   nr_sm_type_str(s, t0), nr_sm_type_str(s, t1));
    NrOpId op = finish_if(s, e->loc, parent, tmp, c.ir, 1, &t0, &v[0], &v[1]);
    return v_ir(nr_op_result(f, op, 0));
}

/* --- functions ------------------------------------------------------------------------------------ */
/* Lower decl's body into fn->f (whose scope holds the parameters) and end it
 * with a return; returns the returned value (IR leaves as result indices). */
static Val lower_body(Sema *s, SmFn *fn) {
    SmFn *saved = s->fn;
    s->fn = fn;
    bool returned = lower_seq(s, &fn->decl->body, 0, NULL);
    Val rv = returned ? fn->ret : nr_sm_none();
    NrValId *vals = NULL;
    int n = 0, cap = 0;
    flatten_ir(s, rv, &vals, &n, &cap);
    NrFunc *f = fn->f;
    f->nrtypes = n;
    f->rtypes = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) f->rtypes[i] = nr_sm_tid(s, vals[i]);
    emit_terminator(s, fn->decl->loc, NR_OP_RETURN, n, vals);
    s->fn = saved;
    /* the template: IR leaves numbered in order */
    NrValId *idx = nr_alloc(s->a, sizeof(NrValId) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) idx[i] = i;
    int k = 0;
    return refill(s, rv, idx, &k);
}

/* Specialization names are built in a growable buffer (keys may be long:
 * strings and tuples are part of them). */
typedef struct Buf {
    NrArena *a;
    char *p;
    size_t n, cap;
} Buf;

static void buf_put(Buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->n + n + 1) nc *= 2;
        b->p = nr_arena_grow(b->a, b->p, b->cap, nc);
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void buf_str(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

/* [A-Za-z0-9] as is, every other byte as $xx: lossless and printable bare. */
static void mangle_escaped(Buf *b, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        char esc[4];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
            buf_put(b, (const char *)&ch, 1);
        } else {
            snprintf(esc, sizeof esc, "$%02x", ch);
            buf_put(b, esc, 3);
        }
    }
}

static void mangle_type(Sema *s, Buf *b, NrTypeId t) {
    const NrType *ty = nr_type(s->m, t);
    char num[16];
    for (int i = 0; i < ty->rank; i++) {
        snprintf(num, sizeof num, "%dx", ty->shape[i]);
        buf_str(b, num);
    }
    for (int i = 0; i < ty->ptr; i++) buf_str(b, "p");
    buf_str(b, nr_dtype_info[ty->dtype].ir);
}

/* One argument of a specialization, losslessly. */
static void mangle_val(Sema *s, Buf *b, Val v) {
    switch (v.k) {
    case V_IR: mangle_type(s, b, nr_sm_tid(s, v.ir)); return;
    case V_CONST:
        switch (v.c.kind) {
        case NR_CV_NONE: buf_str(b, "None"); return;
        case NR_CV_BOOL: buf_str(b, v.c.b ? "True" : "False"); return;
        case NR_CV_INT: {
            const char *d = nr_cv_str_of(s->a, &v.c);
            buf_str(b, d[0] == '-' ? "cm" : "c");
            buf_str(b, d[0] == '-' ? d + 1 : d);
            return;
        }
        case NR_CV_FLOAT: {
            char *d = nr_cv_str_of(s->a, &v.c);
            for (char *q = d; *q; q++) *q = *q == '-' ? 'm' : *q == '+' ? 'p' : *q == '.' ? 'd' : *q; /* (an identifier) */
            buf_str(b, "f");
            buf_str(b, d);
            return;
        }
        case NR_CV_STR:
            buf_str(b, "s");
            mangle_escaped(b, v.c.str.s, v.c.str.len);
            return;
        case NR_CV_DTYPE:
            buf_str(b, "d");
            for (int i = 0; i < v.c.ptr; i++) buf_str(b, "p");
            buf_str(b, nr_dtype_info[v.c.dt].ir);
            return;
        }
        return;
    case V_TUPLE: {
        char num[64];
        if (v.tup.desc) { /* what a descriptor fixes: dtype, padding, block */
            const SmDesc *d = v.tup.desc;
            buf_str(b, "D");
            buf_str(b, nr_dtype_info[d->dt].ir);
            if (d->nan_pad) buf_str(b, "nan");
            for (int i = 0; i < d->rank; i++) {
                snprintf(num, sizeof num, "x%lld", (long long)d->block[i]);
                buf_str(b, num);
            }
        }
        snprintf(num, sizeof num, "T%d", v.tup.n);
        buf_str(b, num);
        for (int i = 0; i < v.tup.n; i++) {
            buf_str(b, "_");
            mangle_val(s, b, v.tup.v[i]);
        }
        return;
    }
    case V_MODULE: {
        char num[16];
        snprintf(num, sizeof num, "M%d", (int)v.mod);
        buf_str(b, num);
        return;
    }
    case V_JITFN:
        buf_str(b, "F");
        mangle_escaped(b, v.fn->name, strlen(v.fn->name));
        return;
    case V_BUILTIN:
        buf_str(b, "B");
        mangle_escaped(b, v.bi.bi->name, strlen(v.bi.bi->name));
        if (v.bi.self) {
            buf_str(b, "_");
            mangle_val(s, b, *v.bi.self);
        }
        return;
    case V_TYPE:
        buf_str(b, "Y");
        mangle_type(s, b, v.type);
        return;
    case V_SLICE: buf_str(b, "S"); return;
    }
}

/* Bind the arguments of a call of fn to its parameters (defaults evaluated
 * at compile time); out[i] for parameter i. */
static void bind_jit_args(Sema *s, NrLoc loc, const NrFuncDecl *fn, int nargs, const Val *args, int nkw,
                          const char *const *kwnames, const Val *kwargs, Val *out) {
    int np = fn->nparams;
    bool *set = nr_alloc(s->a, sizeof(bool) * (size_t)(np + 1));
    if (nargs > np)
        nr_sm_fail(s, loc, "'%s' takes %d argument%s but %d were given", fn->name, np, np == 1 ? "" : "s", nargs);
    for (int i = 0; i < nargs; i++) {
        out[i] = args[i];
        set[i] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int i = 0;
        while (i < np && strcmp(fn->params[i].name, kwnames[k]) != 0) i++;
        if (i == np) nr_sm_fail(s, loc, "'%s' got an unexpected keyword argument '%s'", fn->name, kwnames[k]);
        if (set[i]) nr_sm_fail(s, loc, "'%s' got multiple values for argument '%s'", fn->name, kwnames[k]);
        out[i] = kwargs[k];
        set[i] = true;
    }
    for (int i = 0; i < np; i++) {
        if (set[i]) continue;
        if (!fn->params[i].dflt) nr_sm_fail(s, loc, "'%s' is missing the argument '%s'", fn->name, fn->params[i].name);
        Val d = eval_const(s, fn->params[i].dflt, nr_sprintf(s->a, "the default value of parameter '%s' of '%s'",
                                                              fn->params[i].name, fn->name));
        if (!is_const_val(d))
            nr_sm_fail(s, fn->params[i].dflt->loc, "the default value of parameter '%s' must be a compile-time constant",
                       fn->params[i].name);
        out[i] = d;
    }
}

/* Bind a parameter value in the callee: IR leaves become its block arguments. */
static Val param_value(Sema *s, NrFunc *g, Val v, int *k) {
    if (v.k == V_IR) return v_ir(f_arg(g, (*k)++));
    if (v.k != V_TUPLE) return v;
    Val r = nr_sm_tuple(s, v.tup.n);
    r.tup.desc = v.tup.desc;
    for (int i = 0; i < v.tup.n; i++) r.tup.v[i] = param_value(s, g, v.tup.v[i], k);
    return r;
}

Val nr_sm_call_jit(Sema *s, NrLoc loc, const NrFuncDecl *fn, int nargs, const Val *args, const NrLoc *arglocs,
                   int nkw, const char *const *kwnames, const Val *kwargs) {
    (void)arglocs;
    if (!s->fn) nr_sm_fail(s, loc, "%s must be a compile-time constant; it cannot call '%s'", s->const_what, fn->name);
    int np = fn->nparams;
    Val *pv = nr_alloc(s->a, sizeof(Val) * (size_t)(np + 1));
    bind_jit_args(s, loc, fn, nargs, args, nkw, kwnames, kwargs, pv);
    Buf kb = {s->a, NULL, 0, 0};
    buf_str(&kb, fn->name);
    for (int i = 0; i < np; i++) {
        if (nr_sm_is_constexpr_annotation(s, fn->params[i].annotation) && !is_const_val(pv[i]))
            nr_sm_fail(s, loc, "argument '%s' of '%s' must be a compile-time constant (the parameter is a "
                               "tl.constexpr), got %s",
                       fn->params[i].name, fn->name, nr_sm_val_kind(s, pv[i]));
        buf_str(&kb, i ? "_" : "__");
        mangle_val(s, &kb, pv[i]);
    }
    if (s->elementwise > 0) buf_str(&kb, "__elementwise");
    const char *key = kb.p;
    for (int i = 0; i < s->ncalls; i++)
        if (s->calls[i] == fn) nr_sm_fail(s, loc, "recursive call of '%s': @jit functions cannot call themselves", fn->name);
    if (s->ncalls >= SM_MAX_CALL_DEPTH)
        nr_sm_fail(s, loc, "calls of @jit functions are nested too deeply (more than %d)", SM_MAX_CALL_DEPTH);

    NrValId *av = NULL;
    int na = 0, acap = 0;
    for (int i = 0; i < np; i++) flatten_ir(s, pv[i], &av, &na, &acap);

    SmSpec *sp = NULL;
    for (int i = 0; i < s->nspecs; i++)
        if (strcmp(s->specs[i].key, key) == 0) sp = &s->specs[i];
    if (!sp) {
        const char *name = key;
        for (int k = 2; nr_module_find_func(s->m, name); k++) name = nr_sprintf(s->a, "%s$%d", key, k);
        NrTypeId *ts = nr_alloc(s->a, sizeof(NrTypeId) * (size_t)(na + 1));
        for (int i = 0; i < na; i++) ts[i] = nr_sm_tid(s, av[i]);
        NrFunc *g = nr_func_new(s->m, name, na, ts, 0, NULL);
        g->noinline = fn->noinline;
        g->loc = fn->loc;
        SmFn callee;
        memset(&callee, 0, sizeof callee);
        callee.f = g;
        callee.decl = fn;
        callee.b = nr_builder_at_end(g, g->body);
        int k = 0;
        for (int i = 0; i < np; i++) {
            if (pv[i].k == V_IR) {
                g->params[k].name = fn->params[i].name;
                g->vals[f_arg(g, k)].name = fn->params[i].name;
            }
            Val bound = param_value(s, g, pv[i], &k);
            scope_set(s, &callee.sc, fn->params[i].name, bound, fn->params[i].loc);
        }
        s->calls[s->ncalls++] = fn;
        Val ret = lower_body(s, &callee);
        s->ncalls--;
        sp = NR_PUSH(s->a, s->specs, s->nspecs, s->capspecs);
        sp->key = key;
        sp->f = g;
        sp->ret = ret;
        /* a helper that only computes a compile-time value needs no call */
        NrOpId only = g->blocks[g->body].first;
        if (g->nrtypes == 0 && only && g->ops[only].opc == NR_OP_RETURN) {
            nr_module_remove_func(s->m, g);
            sp->f = NULL;
        }
    }
    if (!sp->f) return sp->ret;
    NrFunc *g = sp->f;
    NrOpId op = nr_sm_emit_op(s, loc, NR_OP_CALL, na, av, g->nrtypes, g->rtypes, 0);
    nr_op_set_str(s->fn->f, op, NR_A_CALLEE, g->name);
    int k = 0;
    return refill(s, sp->ret, s->fn->f->ops[op].results, &k);
}

/* --- the kernel ----------------------------------------------------------------------------------- */
static const char *sig_entry_str(Sema *s, const NrSigArg *g) {
    NrSignature one = {(NrSigArg *)g, 1};
    return nr_signature_str(s->a, &one);
}

/* The runtime argument types of signature entry g (its leaves, in order). */
static void sig_leaf_types(Sema *s, const NrSigArg *g, NrTypeId **ts, int *n, int *cap) {
    switch (g->kind) {
    case NR_SIG_PTR: *NR_PUSH(s->a, *ts, *n, *cap) = nr_type_ptr(s->m, g->dtype, g->ptr); break;
    case NR_SIG_SCALAR: *NR_PUSH(s->a, *ts, *n, *cap) = nr_type_scalar(s->m, g->dtype); break;
    case NR_SIG_CONSTEXPR: break;
    case NR_SIG_TUPLE:
        for (int i = 0; i < g->nelems; i++) sig_leaf_types(s, &g->elems[i], ts, n, cap);
        break;
    case NR_SIG_DESC:
        *NR_PUSH(s->a, *ts, *n, *cap) = nr_type_ptr(s->m, g->dtype, 1);
        for (int i = 0; i < g->rank; i++) *NR_PUSH(s->a, *ts, *n, *cap) = nr_type_scalar(s->m, NR_DT_I32);
        for (int i = 0; i < g->rank; i++) *NR_PUSH(s->a, *ts, *n, *cap) = nr_type_scalar(s->m, NR_DT_I64);
        break;
    }
}

static bool sig_all_const(const NrSigArg *g) {
    if (g->kind == NR_SIG_CONSTEXPR) return true;
    if (g->kind != NR_SIG_TUPLE) return false;
    for (int i = 0; i < g->nelems; i++)
        if (!sig_all_const(&g->elems[i])) return false;
    return true;
}

/* The next runtime argument of f, named `name`, with g's facts. */
static Val sig_arg(NrFunc *f, int *k, const char *name, int divisibility, bool equal_to_1) {
    NrValId a = f_arg(f, *k);
    f->params[*k].name = name;
    f->params[*k].divisibility = divisibility == 16 ? 16 : 1;
    f->params[*k].equal_to_1 = equal_to_1;
    f->vals[a].name = name;
    (*k)++;
    return equal_to_1 ? v_const(nr_cv_int(1)) : v_ir(a);
}

/* The value of parameter `name` given by signature entry g: its leaves are
 * the kernel's next arguments (NAME.0, NAME.base, ...). */
static Val sig_value(Sema *s, NrFunc *f, const NrSigArg *g, const char *name, int *k) {
    switch (g->kind) {
    case NR_SIG_CONSTEXPR: return v_const(g->cval);
    case NR_SIG_PTR:
    case NR_SIG_SCALAR: return sig_arg(f, k, name, g->divisibility, g->equal_to_1);
    case NR_SIG_TUPLE: {
        Val t = nr_sm_tuple(s, g->nelems);
        for (int i = 0; i < g->nelems; i++)
            t.tup.v[i] = sig_value(s, f, &g->elems[i], nr_sprintf(s->a, "%s.%d", name, i), k);
        return t;
    }
    case NR_SIG_DESC: {
        SmDesc *d = nr_alloc(s->a, sizeof *d);
        memset(d, 0, sizeof *d);
        d->dt = g->dtype;
        d->rank = g->rank;
        d->nan_pad = g->nan_pad;
        d->host = true;
        for (int i = 0; i < g->rank; i++) d->block[i] = g->block[i];
        /* as Triton's host descriptors: a 16-byte aligned base, contiguous rows */
        f->params[*k].tensordesc = g->rank;
        Val base = sig_arg(f, k, nr_sprintf(s->a, "%s.base", name), 16, false);
        Val sh[NR_MAX_RANK], st[NR_MAX_RANK];
        for (int i = 0; i < g->rank; i++) sh[i] = sig_arg(f, k, nr_sprintf(s->a, "%s.shape.%d", name, i), 1, false);
        for (int i = 0; i < g->rank; i++)
            st[i] = sig_arg(f, k, nr_sprintf(s->a, "%s.strides.%d", name, i), 1, i == g->rank - 1);
        return nr_sm_desc_new(s, f->loc, d, base, sh, st);
    }
    }
    NR_UNREACHABLE();
}

NrFunc *nr_lower_kernel(NrModule *m, const NrAstModule *ast, const char *name, const NrSignature *sig,
                        NrDiags *d) {
    jmp_buf jb;
    Sema s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.a = m->arena;
    s.ast = ast;
    s.d = d;
    s.fail = &jb;
    s.globals = nr_alloc(s.a, sizeof(SmGlobal) * (size_t)(ast->nglobals + 1));
    int nfuncs0 = m->nfuncs;
    if (setjmp(jb)) {
        m->nfuncs = nfuncs0; /* drop the functions of the failed lowering */
        return NULL;
    }
    NrLoc fileloc = {ast->file, 0, 0};
    const NrFuncDecl *decl = nr_ast_find_func(ast, name);
    if (!decl) nr_sm_fail(&s, fileloc, "no @jit function named '%s' in this module", name);
    if (sig->nargs != decl->nparams)
        nr_sm_fail(&s, decl->loc, "kernel '%s' takes %d parameter%s, but the signature gives %d", name, decl->nparams,
                   decl->nparams == 1 ? "" : "s", sig->nargs);
    NrTypeId *ts = NULL;
    int nrt = 0, cap = 0;
    for (int i = 0; i < decl->nparams; i++) {
        const NrParamDecl *p = &decl->params[i];
        const NrSigArg *g = &sig->args[i];
        bool ann = nr_sm_is_constexpr_annotation(&s, p->annotation);
        if (ann && !sig_all_const(g))
            nr_sm_fail(&s, p->loc, "parameter '%s' is a tl.constexpr, so the signature must give its value, not '%s'",
                       p->name, sig_entry_str(&s, g));
        sig_leaf_types(&s, g, &ts, &nrt, &cap);
    }
    NrFunc *f = nr_func_new(m, name, nrt, ts, 0, NULL);
    f->is_kernel = true;
    f->noinline = decl->noinline;
    f->loc = decl->loc;
    SmFn fn;
    memset(&fn, 0, sizeof fn);
    fn.f = f;
    fn.decl = decl;
    fn.is_kernel = true;
    fn.b = nr_builder_at_end(f, f->body);
    s.fn = &fn;
    int k = 0;
    for (int i = 0; i < decl->nparams; i++) {
        const NrParamDecl *p = &decl->params[i];
        int k0 = k;
        Val v = sig_value(&s, f, &sig->args[i], p->name, &k);
        for (int j = k0; j < k; j++) f->params[j].index = i; /* a tuple's leaves: the tuple's position */
        scope_set(&s, &fn.sc, p->name, v, p->loc);
    }
    s.calls[s.ncalls++] = decl;
    lower_body(&s, &fn);
    return f;
}
