/* aot.c - `nereid aot`: a kernel compiled ahead of time into C.
 *
 *   request --check--> configs, specializations, key, grid, conditions
 *           --compile--> one kernel per (config, specialization, target):
 *                        PTX from nr_compile, cubins from ptxas
 *           --emit--> NAME.h: the typed interface (docs/aot.md)
 *                     NAME.c: the binaries as byte arrays, the loader, the
 *                             dispatcher and the launchers
 *
 * Vocabulary.  A specialization is one -s signature; they differ only in the
 * facts they assume of the runtime arguments (':16', ':1').  A config is one
 * --config: values for the constexpr parameters written by name in the
 * signatures, and num_warps / num_stages, with an optional condition.  A
 * variant is one (config, specialization) pair, numbered config *
 * nspecs + spec; each variant has a binary per target.  The generated code
 * loads, for each variant, the best binary for the device, and at each launch
 * picks the config (first condition that holds, or tuned by timing per key),
 * then the most specific specialization whose facts hold. */
#include "aot.h"

#include "ast.h"
#include "sema.h"
#include "util.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CONFIGS = 256, MAX_SPECS = 64, MAX_ARCHS = 8, MAX_GRID = 3 };

/* ---- output text ---- */

typedef struct Out {
    NrArena *a;
    char *s;
    size_t n, cap;
} Out;

static void out_reserve(Out *o, size_t more) {
    if (o->n + more + 1 <= o->cap) return;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->n + more + 1) cap *= 2;
    o->s = o->s ? nr_arena_grow(o->a, o->s, o->cap, cap) : nr_alloc(o->a, cap);
    o->cap = cap;
}

static void out_printf(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(Out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0) return;
    out_reserve(o, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(o->s + o->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o->n += (size_t)n;
}

/* Bytes as a C initializer list, 24 to a line. */
static void out_bytes(Out *o, const unsigned char *p, size_t n) {
    out_reserve(o, n * 4 + n / 24 * 4 + 8);
    for (size_t i = 0; i < n; i++) {
        char buf[8];
        int k = snprintf(buf, sizeof buf, "%u%s", p[i], i + 1 < n ? "," : "");
        memcpy(o->s + o->n, buf, (size_t)k);
        o->n += (size_t)k;
        if (i % 24 == 23 || i + 1 == n) o->s[o->n++] = '\n';
    }
    o->s[o->n] = 0;
}

static char *out_text(Out *o) {
    out_reserve(o, 0);
    o->s[o->n] = 0;
    return o->s;
}

/* Text safe inside a C comment. */
static const char *comment_safe(NrArena *a, const char *s) {
    if (!strstr(s, "*/") && !strchr(s, '\n')) return s;
    char *r = nr_alloc(a, strlen(s) * 2 + 1), *q = r;
    for (const char *p = s; *p; p++) {
        if (*p == '\n') *q++ = ' ';
        else if (p[0] == '*' && p[1] == '/') *q++ = '*', *q++ = ' ';
        else *q++ = *p;
    }
    *q = 0;
    return r;
}

/* A C string literal of s. */
static const char *c_string(NrArena *a, const char *s) {
    char *r = nr_alloc(a, strlen(s) * 4 + 3), *q = r;
    *q++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') *q++ = '\\', *q++ = (char)*p;
        else if (*p < 32 || *p >= 127) q += sprintf(q, "\\%03o", *p);
        else *q++ = (char)*p;
    }
    *q++ = '"';
    *q = 0;
    return r;
}

/* ---- the state of one generation ---- */

typedef struct Param {
    const char *name;       /* as in the kernel */
    const char *c_name;     /* in the generated C */
    NrSigKind kind;
    NrDtype dtype;
    int rt;                 /* index among the runtime arguments, -1 for constexprs */
} Param;

typedef struct Assign {
    const char *key, *value;
    NrLoc loc;
} Assign;

typedef struct Config {
    const char *label;      /* "BLOCK=64, num_warps=4", "" without --config */
    Assign *set;
    int nset, capset;
    int num_warps, num_stages;
    NrAotExpr *cond;
    const char *cond_text;
    NrSignature sig;        /* of specialization 0, with this config's values */
    NrLoc loc;
} Config;

typedef struct Entry {
    const char *text;
    size_t pos;
} Entry;

typedef struct Spec {
    const char *text;       /* as given */
    Entry *entries;
    int nentries, capentries;
    uint32_t file;
    int *facts;             /* per runtime argument: 0, 16 or 1 */
    int nfacts;
    int order;              /* position in the dispatcher's tests */
} Spec;

typedef struct Bin {
    const char *arch;
    int sm;
    bool arch_specific, is_ptx;
    const unsigned char *data;
    size_t size;
    int threads, shared;
    NrAsmInfo info;
} Bin;

typedef struct Variant {
    int config, spec;
    const char *sig;        /* the signature compiled */
    Bin *bins;
    int nbins, capbins;
} Variant;

typedef struct Target {
    const char *arch;
    int sm;
    bool a;
} Target;

typedef struct Gen {
    NrArena *a;
    const NrAotRequest *req;
    NrSources sources;
    NrDiags d;
    Out msgs;               /* rendered diagnostics of nr_compile and ptxas */
    const char *P;          /* prefix */
    const char *U;          /* prefix in capitals */
    Param *params;
    int nparams;
    Param **rt;             /* runtime parameters */
    int nrt;
    Config *configs;
    int nconfigs;
    Spec *specs;
    int nspecs;
    const char **placeholders;
    int nplaceholders, capplaceholders;
    Target targets[MAX_ARCHS];
    int ntargets;
    Target ptx;             /* sm == 0: none */
    bool has_ptx;
    NrAotExpr *grid[MAX_GRID];
    int ngrid;
    int *key;               /* runtime argument indices */
    int nkey;
    bool tune, has_cond;
    Variant *variants;
    int nvariants;
    const char *entry;      /* the kernel's PTX entry name */
    char ***grid_c;         /* [config][dim] */
    char **cond_c;          /* [config] */
    int nerrors;            /* errors in msgs */
} Gen;

static bool failed(const Gen *g) { return nr_has_errors(&g->d) || g->nerrors; }

/* A message about no place in a text given: "error: ..." or "warning: ...". */
static void message(Gen *g, bool is_error, const char *fmt, va_list ap) {
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    out_printf(&g->msgs, "%s: %s\n", is_error ? "error" : "warning", msg);
    if (is_error) g->nerrors++;
}

static void error(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error(Gen *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    message(g, true, fmt, ap);
    va_end(ap);
}

static void warning(Gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warning(Gen *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    message(g, false, fmt, ap);
    va_end(ap);
}

static bool is_ident(const char *s, size_t n) {
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return false;
    return true;
}

static const char *trim(NrArena *a, const char *s, size_t start, size_t end, size_t *at) {
    while (start < end && isspace((unsigned char)s[start])) start++;
    while (end > start && isspace((unsigned char)s[end - 1])) end--;
    if (at) *at = start;
    return nr_strndup(a, s + start, end - start);
}

/* Split text at commas outside quotes and parentheses into entries. */
static void split_top(NrArena *a, const char *text, size_t start, size_t end, Entry **out, int *n, int *cap) {
    if (start >= end) return;
    size_t i = start, piece = start;
    char quote = 0;
    int depth = 0;
    for (; i <= end; i++) {
        char c = i < end ? text[i] : ',';
        if (quote) {
            if (c == '\\' && i + 1 < end) i++;
            else if (c == quote) quote = 0;
            continue;
        }
        if (c == '"' || c == '\'') quote = c;
        else if (c == '(') depth++;
        else if (c == ')') depth--;
        else if (c == ',' && depth == 0) {
            Entry *e = NR_PUSH(a, *out, *n, *cap);
            e->text = trim(a, text, piece, i, &e->pos);
            piece = i + 1;
        }
    }
}

/* ---- parameters ---- */

static const char *const C_RESERVED[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
    "_Complex", "_Imaginary", "bool", "true", "false", "NULL", "offsetof", "size_t", "ptrdiff_t", "wchar_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "intptr_t",
    "uintptr_t", "intmax_t", "uintmax_t", "memcpy", "memset", "stream", "config", "grid_x", "grid_y", "grid_z",
    "grid", "ok", "main", "errno", "assert", "specialization", "variant",
};
static const char *const C_RESERVED_PREFIXES[] = {"aot_", "cu", "CU", "__", "INT", "UINT", "SIZE_", "PTRDIFF_",
                                                  "WCHAR_", "WINT_", "SIG_ATOMIC_"};

static bool name_taken(const Gen *g, const char *name, int upto) {
    for (int i = 0; i < upto; i++)
        if (g->params[i].c_name && strcmp(g->params[i].c_name, name) == 0) return true;
    return false;
}

/* The C name of kernel parameter i: its own, unless that would clash with
 * C, the headers the generated code includes, or the generated names. */
static const char *c_name_of(Gen *g, const char *name, int i) {
    bool bad = false;
    for (size_t k = 0; k < NR_COUNTOF(C_RESERVED) && !bad; k++) bad = strcmp(name, C_RESERVED[k]) == 0;
    for (size_t k = 0; k < NR_COUNTOF(C_RESERVED_PREFIXES) && !bad; k++)
        bad = strncmp(name, C_RESERVED_PREFIXES[k], strlen(C_RESERVED_PREFIXES[k])) == 0;
    size_t pn = strlen(g->P);
    if (!bad) bad = strncmp(name, g->P, pn) == 0 && (name[pn] == '_' || name[pn] == 0);
    const char *c = bad ? nr_sprintf(g->a, "%s_", name) : name;
    while (name_taken(g, c, i)) c = nr_sprintf(g->a, "%s_", c);
    return c;
}

static bool load_params(Gen *g) {
    const NrAotRequest *r = g->req;
    NrSources s;
    nr_sources_init(&s, g->a);
    uint32_t file = nr_sources_add(&s, g->a, r->filename ? r->filename : "<input>", r->src ? r->src : "", r->len);
    NrDiags d;
    nr_diags_init(&d, g->a, &s);
    NrAstModule *ast = nr_parse_module(g->a, &s, file, &d);
    if (!ast || nr_has_errors(&d)) {
        out_printf(&g->msgs, "%s", nr_diags_render(g->a, &d));
        return false;
    }
    NrFuncDecl *f = nr_ast_find_func(ast, r->kernel);
    if (!f) {
        error(g, "no @jit function named '%s' in %s", r->kernel, r->filename ? r->filename : "<input>");
        return false;
    }
    g->nparams = f->nparams;
    g->params = nr_alloc(g->a, sizeof(Param) * (size_t)(f->nparams ? f->nparams : 1));
    for (int i = 0; i < f->nparams; i++) g->params[i].name = f->params[i].name;
    return true;
}

static int param_index(const Gen *g, const char *name) {
    for (int i = 0; i < g->nparams; i++)
        if (strcmp(g->params[i].name, name) == 0) return i;
    return -1;
}

static const char *param_list(Gen *g, bool ints_only) {
    const char *s = "";
    for (int i = 0; i < g->nparams; i++) {
        const Param *p = &g->params[i];
        if (ints_only && !(p->rt >= 0 && p->kind == NR_SIG_SCALAR && nr_dt_is_int(p->dtype))) continue;
        s = nr_sprintf(g->a, "%s%s%s", s, *s ? ", " : "", p->name);
    }
    return *s ? s : "none";
}

/* ---- targets ---- */

static bool check_targets(Gen *g) {
    const NrAotRequest *r = g->req;
    if (r->narchs < 1 || r->narchs > MAX_ARCHS) {
        error(g, "give 1 to %d targets with --arch (sm_80, sm_86, sm_89, sm_90, sm_90a)", MAX_ARCHS);
        return false;
    }
    int best = 0;
    for (int i = 0; i < r->narchs; i++) {
        Target *t = &g->targets[g->ntargets];
        if (!nr_aot_parse_arch(r->archs[i], &t->sm, &t->a)) {
            error(g, "unknown target '%s' (sm_80, sm_86, sm_89, sm_90 and sm_90a are known)", r->archs[i]);
            return false;
        }
        for (int k = 0; k < g->ntargets; k++)
            if (g->targets[k].sm == t->sm && g->targets[k].a == t->a) {
                error(g, "target '%s' is listed twice", r->archs[i]);
                return false;
            }
        t->arch = r->archs[i];
        if (t->sm > best) best = t->sm;
        g->ntargets++;
    }
    if (r->ptx_only) return true;
    if (r->ptx_arch && strcmp(r->ptx_arch, "none") == 0) return true;
    g->has_ptx = true;
    if (r->ptx_arch) {
        if (!nr_aot_parse_arch(r->ptx_arch, &g->ptx.sm, &g->ptx.a)) {
            error(g, "unknown PTX target '%s' (sm_80, sm_86, sm_89, sm_90, sm_90a or none)", r->ptx_arch);
            return false;
        }
        g->ptx.arch = r->ptx_arch;
    } else {
        /* The newest listed target without its arch-specific features, so
         * that the driver can compile it for any newer GPU. */
        g->ptx.sm = best;
        g->ptx.a = false;
        g->ptx.arch = nr_sprintf(g->a, "sm_%d", best);
    }
    return true;
}

/* ---- configs ---- */

/* config := NAME '=' VALUE (',' NAME '=' VALUE)* ['if' COND] */
static bool parse_config(Gen *g, int index, const char *text, Config *c) {
    const NrAotRequest *r = g->req;
    uint32_t file = nr_sources_add(&g->sources, g->a, nr_sprintf(g->a, "<config %d>", index + 1), text, strlen(text));
    c->loc = (NrLoc){file, 1, 1};
    c->num_warps = r->num_warps ? r->num_warps : 4;
    c->num_stages = r->num_stages ? r->num_stages : 3;
    size_t len = strlen(text), cut = len;
    char quote = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (quote) {
            if (ch == '\\' && i + 1 < len) i++;
            else if (ch == quote) quote = 0;
        } else if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (strncmp(text + i, "if", 2) == 0 &&
                   (i == 0 || isspace((unsigned char)text[i - 1]) || text[i - 1] == ',') &&
                   (i + 2 == len || isspace((unsigned char)text[i + 2]) || text[i + 2] == '(')) {
            cut = i;
            break;
        }
    }
    Entry *parts = NULL;
    int nparts = 0, cap = 0;
    split_top(g->a, text, 0, cut, &parts, &nparts, &cap);
    const char *label = "";
    for (int i = 0; i < nparts; i++) {
        const char *p = parts[i].text;
        NrLoc loc = {file, 1, (uint32_t)parts[i].pos + 1};
        const char *eq = strchr(p, '=');
        if (!*p) {
            nr_error(&g->d, loc, "empty setting in the config");
            return false;
        }
        if (!eq) {
            nr_error(&g->d, loc, "expected NAME=VALUE in the config, got '%s'", p);
            return false;
        }
        size_t kpos;
        const char *key = trim(g->a, p, 0, (size_t)(eq - p), &kpos);
        const char *val = trim(g->a, p, (size_t)(eq - p) + 1, strlen(p), NULL);
        if (!is_ident(key, strlen(key))) {
            nr_error(&g->d, loc, "expected a parameter name before '=' in the config, got '%s'", key);
            return false;
        }
        if (!*val) {
            nr_error(&g->d, loc, "no value for '%s' in the config", key);
            return false;
        }
        for (int k = 0; k < c->nset; k++)
            if (strcmp(c->set[k].key, key) == 0) {
                nr_error(&g->d, loc, "'%s' is set twice in the config", key);
                return false;
            }
        if (strcmp(key, "num_warps") == 0 || strcmp(key, "num_stages") == 0) {
            char *end;
            long v = strtol(val, &end, 10);
            if (*end || v < 1 || v > 64) {
                nr_error(&g->d, loc, "%s must be a small positive integer, got '%s'", key, val);
                return false;
            }
            if (key[4] == 'w') c->num_warps = (int)v;
            else c->num_stages = (int)v;
        } else {
            if (param_index(g, key) < 0) {
                nr_error(&g->d, loc, "'%s' is not a parameter of %s (its parameters: %s)", key, r->kernel,
                         param_list(g, false));
                return false;
            }
            /* The value must be a constant of the signature syntax. */
            NrSources ts;
            nr_sources_init(&ts, g->a);
            NrDiags td;
            nr_diags_init(&td, g->a, &ts);
            NrSignature one;
            if (!nr_signature_parse(g->a, val, &one, &td) || one.nargs != 1 || one.args[0].kind != NR_SIG_CONSTEXPR) {
                nr_error(&g->d, loc, "the value of '%s' must be a constant (an int, float, bool, string or tl dtype), "
                                     "got '%s'", key, val);
                return false;
            }
            Assign *as = NR_PUSH(g->a, c->set, c->nset, c->capset);
            as->key = key;
            as->value = val;
            as->loc = loc;
        }
        label = nr_sprintf(g->a, "%s%s%s=%s", label, *label ? ", " : "", key, val);
    }
    if (cut < len) {
        size_t cstart = cut + 2;
        c->cond = nr_aot_parse_expr(g->a, &g->d, file, text, cstart, len);
        if (!c->cond) return false;
        if (!c->cond->is_bool) {
            nr_error(&g->d, c->cond->loc, "the condition of a config must be a comparison, e.g. 'if n <= 1024'");
            return false;
        }
        c->cond_text = trim(g->a, text, cstart, len, NULL);
        g->has_cond = true;
    }
    c->label = label;
    return true;
}

static bool check_configs(Gen *g) {
    const NrAotRequest *r = g->req;
    if (r->nconfigs > MAX_CONFIGS) {
        error(g, "at most %d configs are supported, got %d", MAX_CONFIGS, r->nconfigs);
        return false;
    }
    g->nconfigs = r->nconfigs ? r->nconfigs : 1;
    g->configs = nr_alloc(g->a, sizeof(Config) * (size_t)g->nconfigs);
    if (!r->nconfigs) {
        g->configs[0].label = "";
        g->configs[0].num_warps = r->num_warps ? r->num_warps : 4;
        g->configs[0].num_stages = r->num_stages ? r->num_stages : 3;
        return true;
    }
    for (int i = 0; i < r->nconfigs; i++)
        if (!parse_config(g, i, r->configs[i], &g->configs[i])) return false;
    /* Placeholders: the keys set by configs. */
    for (int i = 0; i < g->nconfigs; i++)
        for (int k = 0; k < g->configs[i].nset; k++) {
            const char *key = g->configs[i].set[k].key;
            bool seen = false;
            for (int j = 0; j < g->nplaceholders && !seen; j++) seen = strcmp(g->placeholders[j], key) == 0;
            if (!seen) *NR_PUSH(g->a, g->placeholders, g->nplaceholders, g->capplaceholders) = key;
        }
    for (int i = 0; i < g->nconfigs; i++)
        for (int j = 0; j < g->nplaceholders; j++) {
            bool set = false;
            for (int k = 0; k < g->configs[i].nset && !set; k++)
                set = strcmp(g->configs[i].set[k].key, g->placeholders[j]) == 0;
            if (!set) {
                nr_error(&g->d, g->configs[i].loc, "this config gives no value for '%s', which other configs set",
                         g->placeholders[j]);
                return false;
            }
        }
    /* Without tuning, the first config whose condition holds is used: one
     * without a condition ends the list. */
    if (!r->key)
        for (int i = 0; i + 1 < g->nconfigs; i++)
            if (!g->configs[i].cond) {
                nr_warning(&g->d, g->configs[i + 1].loc,
                           "this config is never used: config %d has no condition and comes first (give --key to "
                           "choose among configs by timing them)",
                           i + 1);
                break;
            }
    return true;
}

/* ---- specializations ---- */

static const char *placeholder_value(const Config *c, const char *name) {
    for (int k = 0; k < c->nset; k++)
        if (strcmp(c->set[k].key, name) == 0) return c->set[k].value;
    return NULL;
}

/* Specialization s with config c's values in place of the names. */
static const char *substituted(Gen *g, const Spec *s, const Config *c) {
    const char *t = "";
    for (int i = 0; i < s->nentries; i++) {
        const char *e = s->entries[i].text;
        const char *v = placeholder_value(c, e);
        t = nr_sprintf(g->a, "%s%s%s", t, i ? ", " : "", v ? v : e);
    }
    return t;
}

static const char *entry_text(Gen *g, const NrSigArg *arg) {
    NrSignature one = {(NrSigArg *)arg, 1};
    return nr_signature_str(g->a, &one);
}

/* The first entry of signature text that is a host tensor descriptor
 * ("tensordesc<" at the start of an entry, or of a tuple's, outside
 * quotes), or NULL. */
static const char *desc_entry(const char *text) {
    bool at_start = true;
    char quote = 0;
    for (const char *p = text; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == quote) quote = 0;
            continue;
        }
        if (at_start && strncmp(p, "tensordesc<", 11) == 0) return p;
        if (*p == '"' || *p == '\'') quote = *p;
        if (!isspace((unsigned char)*p)) at_start = *p == ',' || *p == '(';
    }
    return NULL;
}

static bool check_specs(Gen *g) {
    const NrAotRequest *r = g->req;
    if (r->nsigs < 1 || r->nsigs > MAX_SPECS) {
        error(g, "give 1 to %d signatures with -s", MAX_SPECS);
        return false;
    }
    g->nspecs = r->nsigs;
    g->specs = nr_alloc(g->a, sizeof(Spec) * (size_t)g->nspecs);
    NrSignature *sigs = nr_alloc(g->a, sizeof(NrSignature) * (size_t)g->nspecs);
    for (int s = 0; s < g->nspecs; s++) {
        Spec *sp = &g->specs[s];
        sp->text = r->sigs[s];
        sp->file = nr_sources_add(&g->sources, g->a, nr_sprintf(g->a, "<signature %d>", s + 1), sp->text,
                                  strlen(sp->text));
        /* A descriptor is several runtime arguments (and, with TMA, a tensor
         * map) behind one parameter: the launchers take pointers and scalars. */
        const char *desc = desc_entry(sp->text);
        if (desc) {
            nr_error(&g->d, (NrLoc){sp->file, 1, (uint32_t)(desc - sp->text) + 1},
                     "nereid aot does not take host tensor descriptors (tensordesc<...>); pass the tensor's "
                     "pointer, sizes and strides, and make the descriptor in the kernel");
            return false;
        }
        split_top(g->a, sp->text, 0, strlen(sp->text), &sp->entries, &sp->nentries, &sp->capentries);
        if (sp->nentries != g->nparams) {
            nr_error(&g->d, (NrLoc){sp->file, 1, 1}, "signature has %d entries, but %s has %d parameters (%s)",
                     sp->nentries, r->kernel, g->nparams, param_list(g, false));
            return false;
        }
        for (int i = 0; i < sp->nentries; i++) {
            const char *e = sp->entries[i].text;
            bool placeholder = false;
            for (int j = 0; j < g->nplaceholders && !placeholder; j++) placeholder = strcmp(g->placeholders[j], e) == 0;
            if (placeholder) {
                if (strcmp(e, g->params[i].name) != 0) {
                    nr_error(&g->d, (NrLoc){sp->file, 1, (uint32_t)sp->entries[i].pos + 1},
                             "'%s' stands in the place of parameter '%s'; a config value goes in the place of the "
                             "parameter it names",
                             e, g->params[i].name);
                    return false;
                }
            } else if (strcmp(e, g->params[i].name) == 0 && param_index(g, e) >= 0 &&
                       !nr_dtype_from_sig(e, strlen(e))) {
                nr_error(&g->d, (NrLoc){sp->file, 1, (uint32_t)sp->entries[i].pos + 1},
                         "'%s' stands for a config value, but no --config sets it", e);
                return false;
            }
        }
        NrDiags sd;
        nr_diags_init(&sd, g->a, &g->sources);
        const char *text = substituted(g, sp, &g->configs[0]);
        if (!nr_signature_parse(g->a, text, &sigs[s], &sd) || nr_has_errors(&sd)) {
            out_printf(&g->msgs, "%s", nr_diags_render(g->a, &sd));
            return false;
        }
    }
    /* Every placeholder must be used. */
    for (int j = 0; j < g->nplaceholders; j++) {
        bool used = false;
        for (int i = 0; i < g->specs[0].nentries && !used; i++)
            used = strcmp(g->specs[0].entries[i].text, g->placeholders[j]) == 0;
        if (!used) {
            error(g, "the configs set '%s', but the signature does not name it (write %s in its place in -s)",
                  g->placeholders[j], g->placeholders[j]);
            return false;
        }
    }
    /* Parameter kinds, from specialization 0; the others must agree. */
    for (int i = 0; i < g->nparams; i++) {
        Param *p = &g->params[i];
        p->kind = sigs[0].args[i].kind;
        p->dtype = sigs[0].args[i].dtype;
        p->rt = -1;
        for (int s = 1; s < g->nspecs; s++) {
            const NrSigArg *x = &sigs[0].args[i], *y = &sigs[s].args[i];
            bool same = x->kind == y->kind &&
                        (x->kind == NR_SIG_CONSTEXPR ? strcmp(entry_text(g, x), entry_text(g, y)) == 0
                                                     : x->dtype == y->dtype && x->ptr == y->ptr);
            if (!same) {
                NrSigArg bx = *x, by = *y;
                bx.divisibility = by.divisibility = 1;
                bx.equal_to_1 = by.equal_to_1 = false;
                error(g, "signatures 1 and %d differ in parameter '%s' ('%s' and '%s'); specializations may differ "
                         "only in the facts ':16' and ':1'",
                      s + 1, p->name, entry_text(g, &bx), entry_text(g, &by));
                return false;
            }
        }
    }
    g->rt = nr_alloc(g->a, sizeof(Param *) * (size_t)(g->nparams ? g->nparams : 1));
    for (int i = 0; i < g->nparams; i++) {
        Param *p = &g->params[i];
        p->c_name = c_name_of(g, p->name, i);
        if (p->kind != NR_SIG_CONSTEXPR) {
            p->rt = g->nrt;
            g->rt[g->nrt++] = p;
        }
    }
    /* Facts, and the dispatcher's order: most facts first, then as given. */
    for (int s = 0; s < g->nspecs; s++) {
        Spec *sp = &g->specs[s];
        sp->facts = nr_alloc(g->a, sizeof(int) * (size_t)(g->nrt ? g->nrt : 1));
        for (int i = 0; i < g->nparams; i++) {
            const NrSigArg *x = &sigs[s].args[i];
            if (g->params[i].rt < 0) continue;
            int f = x->equal_to_1 ? 1 : x->divisibility == 16 ? 16 : 0;
            sp->facts[g->params[i].rt] = f;
            sp->nfacts += f != 0;
        }
        for (int t = 0; t < s; t++)
            if (memcmp(g->specs[t].facts, sp->facts, sizeof(int) * (size_t)g->nrt) == 0) {
                error(g, "signatures %d and %d assume the same facts of the arguments", t + 1, s + 1);
                return false;
            }
    }
    for (int s = 0; s < g->nspecs; s++) {
        int before = 0;
        for (int t = 0; t < g->nspecs; t++)
            if (g->specs[t].nfacts > g->specs[s].nfacts || (g->specs[t].nfacts == g->specs[s].nfacts && t < s))
                before++;
        g->specs[s].order = before;
    }
    /* Each config's values, parsed, for the expressions. */
    for (int c = 0; c < g->nconfigs; c++) {
        NrDiags sd;
        nr_diags_init(&sd, g->a, &g->sources);
        const char *text = substituted(g, &g->specs[0], &g->configs[c]);
        if (!nr_signature_parse(g->a, text, &g->configs[c].sig, &sd) || nr_has_errors(&sd)) {
            out_printf(&g->msgs, "%s", nr_diags_render(g->a, &sd));
            return false;
        }
    }
    return true;
}

/* ---- key, grid, conditions ---- */

static bool is_int_arg(const Param *p) { return p->rt >= 0 && p->kind == NR_SIG_SCALAR && nr_dt_is_int(p->dtype); }

static bool check_key(Gen *g) {
    const NrAotRequest *r = g->req;
    if (!r->key) return true;
    Entry *names = NULL;
    int n = 0, cap = 0;
    uint32_t file = nr_sources_add(&g->sources, g->a, "<key>", r->key, strlen(r->key));
    split_top(g->a, r->key, 0, strlen(r->key), &names, &n, &cap);
    g->key = nr_alloc(g->a, sizeof(int) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        NrLoc loc = {file, 1, (uint32_t)names[i].pos + 1};
        int k = param_index(g, names[i].text);
        if (k < 0 || !is_int_arg(&g->params[k])) {
            nr_error(&g->d, loc, "the key names integer arguments of %s (%s), not '%s'", r->kernel,
                     param_list(g, true), names[i].text);
            return false;
        }
        for (int j = 0; j < g->nkey; j++)
            if (g->key[j] == g->params[k].rt) {
                nr_error(&g->d, loc, "'%s' is named twice in the key", names[i].text);
                return false;
            }
        g->key[g->nkey++] = g->params[k].rt;
    }
    if (g->nkey == 0) {
        nr_error(&g->d, (NrLoc){file, 1, 1}, "the key names no argument");
        return false;
    }
    g->tune = g->nconfigs > 1;
    return true;
}

typedef struct Resolve {
    Gen *g;
    const Config *c;
} Resolve;

static bool resolve_name(void *user, const NrAotExpr *e, NrAotBinding *out, NrDiags *d) {
    Resolve *r = user;
    Gen *g = r->g;
    int i = param_index(g, e->name);
    if (i < 0) {
        nr_error(d, e->loc, "unknown name '%s' (the integer arguments of %s: %s)", e->name, g->req->kernel,
                 param_list(g, true));
        return false;
    }
    const Param *p = &g->params[i];
    if (p->kind == NR_SIG_CONSTEXPR) {
        const NrCVal *v = &r->c->sig.args[i].cval;
        if (v->kind == NR_CV_INT) out->value = v->i;
        else if (v->kind == NR_CV_BOOL) out->value = v->b;
        else {
            nr_error(d, e->loc, "'%s' is the constant %s, not an integer", e->name, entry_text(g, &r->c->sig.args[i]));
            return false;
        }
        return true;
    }
    if (!is_int_arg(p)) {
        nr_error(d, e->loc, "'%s' is %s; expressions compute with integer arguments (%s)", e->name,
                 p->kind == NR_SIG_PTR ? "a pointer" : "a float", param_list(g, true));
        return false;
    }
    out->c_name = p->c_name;
    return true;
}

static bool check_grid(Gen *g) {
    const char *text = g->req->grid;
    if (!text) return true;
    uint32_t file = nr_sources_add(&g->sources, g->a, "<grid>", text, strlen(text));
    size_t start = 0, end = strlen(text);
    while (start < end && isspace((unsigned char)text[start])) start++;
    while (end > start && isspace((unsigned char)text[end - 1])) end--;
    /* "(a, b)" as Python writes a grid tuple: drop the parentheses. */
    if (end > start && text[start] == '(' && text[end - 1] == ')') {
        int depth = 0;
        bool outer = true, comma = false;
        for (size_t i = start; i < end; i++) {
            if (text[i] == '(') depth++;
            else if (text[i] == ')' && --depth == 0 && i + 1 < end) outer = false;
            else if (text[i] == ',' && depth == 1) comma = true;
        }
        if (outer && comma) start++, end--;
    }
    Entry *dims = NULL;
    int n = 0, cap = 0;
    split_top(g->a, text, start, end, &dims, &n, &cap);
    if (n < 1 || n > MAX_GRID) {
        nr_error(&g->d, (NrLoc){file, 1, 1}, "a grid has 1 to 3 dimensions, got %d", n);
        return false;
    }
    for (int i = 0; i < n; i++) {
        size_t s = dims[i].pos, e = s + strlen(dims[i].text);
        if (s == e) {
            nr_error(&g->d, (NrLoc){file, 1, (uint32_t)s + 1}, "empty grid dimension");
            return false;
        }
        NrAotExpr *x = nr_aot_parse_expr(g->a, &g->d, file, text, s, e);
        if (!x) return false;
        if (x->is_bool) {
            nr_error(&g->d, x->loc, "a grid dimension must be an integer, not a condition");
            return false;
        }
        g->grid[g->ngrid++] = x;
    }
    return true;
}

/* The C text of every config's grid and condition. */
static bool lower_exprs(Gen *g) {
    g->grid_c = nr_alloc(g->a, sizeof(char **) * (size_t)g->nconfigs);
    g->cond_c = nr_alloc(g->a, sizeof(char *) * (size_t)g->nconfigs);
    const char *pre = nr_sprintf(g->a, "%s_", g->P);
    for (int c = 0; c < g->nconfigs; c++) {
        Resolve r = {g, &g->configs[c]};
        g->grid_c[c] = nr_alloc(g->a, sizeof(char *) * MAX_GRID);
        for (int i = 0; i < g->ngrid; i++)
            if (!(g->grid_c[c][i] = nr_aot_expr_to_c(g->a, g->grid[i], pre, resolve_name, &r, &g->d))) return false;
        if (g->configs[c].cond &&
            !(g->cond_c[c] = nr_aot_expr_to_c(g->a, g->configs[c].cond, pre, resolve_name, &r, &g->d)))
            return false;
    }
    return true;
}

/* ---- compiling ---- */

/* The .entry name of PTX text. */
static const char *ptx_entry(NrArena *a, const char *ptx) {
    const char *p = strstr(ptx, ".entry ");
    if (!p) return NULL;
    p += 7;
    size_t n = 0;
    while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$')) n++;
    return n ? nr_strndup(a, p, n) : NULL;
}

/* Compile variant v for target t; appends its binary.  Returns false with messages. */
static bool compile_one(Gen *g, Variant *v, const Target *t, bool as_ptx) {
    const NrAotRequest *r = g->req;
    const Config *c = &g->configs[v->config];
    NrOptions o;
    nr_options_default(&o);
    o.arch = t->arch;
    o.num_warps = c->num_warps;
    o.num_stages = c->num_stages;
    o.no_tma = 1; /* the generated launchers pass the runtime arguments alone (docs/aot.md) */
    NrContext *ctx = nr_context_create();
    if (!ctx) nr_fatal_oom();
    NrKernel *k = NULL;
    bool ok = false;
    if (nr_compile(ctx, r->src, r->len, r->filename, r->kernel, v->sig, &o, &k) != NR_OK) {
        out_printf(&g->msgs, "%s", nr_error_text(ctx));
        goto done;
    }
    if (nr_kernel_num_args(k) != g->nrt) {
        error(g, "internal: kernel '%s' has %d runtime arguments, the signature %d", r->kernel, nr_kernel_num_args(k),
              g->nrt);
        goto done;
    }
    if (nr_kernel_num_tensor_maps(k) != 0) {
        error(g, "internal: kernel '%s' takes %d tensor maps with TMA disabled", r->kernel,
              nr_kernel_num_tensor_maps(k));
        goto done;
    }
    const char *ptx = nr_kernel_ptx(k);
    const char *entry = ptx_entry(g->a, ptx);
    if (!entry) {
        error(g, "internal: no .entry in the PTX of '%s'", r->kernel);
        goto done;
    }
    if (g->entry && strcmp(g->entry, entry) != 0) {
        error(g, "internal: the PTX entry of '%s' changed from '%s' to '%s'", r->kernel, g->entry, entry);
        goto done;
    }
    g->entry = entry;
    Bin *b = NR_PUSH(g->a, v->bins, v->nbins, v->capbins);
    b->arch = t->arch;
    b->sm = t->sm;
    b->arch_specific = t->a;
    b->is_ptx = as_ptx;
    b->threads = 32 * nr_kernel_num_warps(k);
    b->shared = nr_kernel_shared_bytes(k);
    if (as_ptx) {
        /* Where the PTX comes from, as comments the driver ignores. */
        const char *text = nr_sprintf(g->a,
                                      "// nereid-aot-file: %s\n// nereid-aot-kernel: %s\n// nereid-aot-signature: %s\n"
                                      "// nereid-aot-options: arch=%s num_warps=%d num_stages=%d\n%s",
                                      comment_safe(g->a, r->filename ? r->filename : "<input>"), r->kernel,
                                      comment_safe(g->a, v->sig), t->arch, c->num_warps, c->num_stages, ptx);
        b->data = (const unsigned char *)text;
        b->size = strlen(text) + 1;
    } else {
        const void *cubin;
        size_t size;
        const char *err = nr_ptxas_assemble(g->a, r->ptxas, ptx, t->arch, &cubin, &size, &b->info);
        if (err) {
            error(g, "%s", err);
            goto done;
        }
        b->data = cubin;
        b->size = size;
        if (b->info.spill_store_bytes || b->info.spill_load_bytes)
            warning(g, "%s, %s%s%s: %d bytes spilled (stores), %d (loads) per thread",
                       r->kernel, t->arch, *c->label ? ", config " : "", c->label, b->info.spill_store_bytes,
                       b->info.spill_load_bytes);
    }
    b->info.threads = b->threads;
    b->info.dynamic_shared_bytes = b->shared;
    snprintf(b->info.arch, sizeof b->info.arch, "%s", t->arch);
    ok = true;
done:
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    return ok;
}

static bool compile_all(Gen *g) {
    g->nvariants = g->nconfigs * g->nspecs;
    g->variants = nr_alloc(g->a, sizeof(Variant) * (size_t)g->nvariants);
    for (int c = 0; c < g->nconfigs; c++)
        for (int s = 0; s < g->nspecs; s++) {
            Variant *v = &g->variants[c * g->nspecs + s];
            v->config = c;
            v->spec = s;
            v->sig = substituted(g, &g->specs[s], &g->configs[c]);
            for (int t = 0; t < g->ntargets; t++)
                if (!compile_one(g, v, &g->targets[t], g->req->ptx_only)) return false;
            if (g->has_ptx && !compile_one(g, v, &g->ptx, true)) return false;
        }
    return true;
}

/* ---- emitting: shared pieces ---- */

typedef struct CType {
    const char *decl;      /* type of the C parameter */
    const char *packed;    /* type passed to the kernel, when it differs (NULL: the parameter itself) */
    const char *convert;   /* printf format converting the parameter (%s) to `packed` */
} CType;

static CType c_type(const Param *p) {
    if (p->kind == NR_SIG_PTR) return (CType){"CUdeviceptr", NULL, NULL};
    switch (p->dtype) {
    case NR_DT_I1: return (CType){"int", "uint8_t", "(uint8_t)(%s != 0)"};
    case NR_DT_I8: return (CType){"int8_t", NULL, NULL};
    case NR_DT_I16: return (CType){"int16_t", NULL, NULL};
    case NR_DT_I32: return (CType){"int32_t", NULL, NULL};
    case NR_DT_I64: return (CType){"int64_t", NULL, NULL};
    case NR_DT_U8: return (CType){"uint8_t", NULL, NULL};
    case NR_DT_U16: return (CType){"uint16_t", NULL, NULL};
    case NR_DT_U32: return (CType){"uint32_t", NULL, NULL};
    case NR_DT_U64: return (CType){"uint64_t", NULL, NULL};
    case NR_DT_F32: return (CType){"float", NULL, NULL};
    case NR_DT_F64: return (CType){"double", NULL, NULL};
    case NR_DT_F16: return (CType){"float", "uint16_t", "(uint16_t)@round(%s, 10, 15, 15, 0x7bffu, 0x7c00u, 0, 0u)"};
    case NR_DT_BF16: return (CType){"float", "uint16_t", "(uint16_t)@round(%s, 7, 127, 15, 0x7f7fu, 0x7f80u, 0, 0u)"};
    case NR_DT_F8E4NV: return (CType){"float", "uint8_t", "(uint8_t)@round(%s, 3, 7, 7, 0x7eu, 0u, 1, 0x7fu)"};
    case NR_DT_F8E5: return (CType){"float", "uint8_t", "(uint8_t)@round(%s, 2, 15, 7, 0x7bu, 0x7cu, 1, 0x7fu)"};
    default: NR_UNREACHABLE();
    }
}

/* ", CUdeviceptr x, int32_t n" */
static const char *decl_args(Gen *g) {
    const char *s = "";
    for (int i = 0; i < g->nrt; i++) s = nr_sprintf(g->a, "%s, %s %s", s, c_type(g->rt[i]).decl, g->rt[i]->c_name);
    return s;
}

/* ", x, n" */
static const char *call_args(Gen *g) {
    const char *s = "";
    for (int i = 0; i < g->nrt; i++) s = nr_sprintf(g->a, "%s, %s", s, g->rt[i]->c_name);
    return s;
}

/* "x, n" for calls that pass only the arguments. */
static const char *arg_list(Gen *g) {
    const char *s = call_args(g);
    return strncmp(s, ", ", 2) == 0 ? s + 2 : s;
}

/* "(void)x; (void)n;" for functions that may not use every argument. */
static void out_unused(Out *o, Gen *g) {
    for (int i = 0; i < g->nrt; i++) out_printf(o, "    (void)%s;\n", g->rt[i]->c_name);
}

/* The args list without its leading ", ", or "void". */
static const char *proto(Gen *g, const char *lead, const char *args) {
    const char *s = nr_sprintf(g->a, "%s%s", lead, args);
    if (strncmp(s, ", ", 2) == 0) s += 2;
    return *s ? s : "void";
}

/* ---- the header ---- */

static void emit_intro(Out *o, Gen *g, const char *file) {
    const NrAotRequest *r = g->req;
    out_printf(o, "/* %s - kernel %s of %s, compiled ahead of time by nereid %s.\n", file, r->kernel,
               comment_safe(g->a, r->filename ? r->filename : "<input>"), NEREID_VERSION);
    if (r->command) out_printf(o, " * Generated by:\n *     %s\n", comment_safe(g->a, r->command));
    out_printf(o, " * Do not edit; generate it again instead.  docs/aot.md describes this interface. */\n");
}

static void emit_header(Out *o, Gen *g) {
    const NrAotRequest *r = g->req;
    const char *P = g->P, *U = g->U;
    emit_intro(o, g, nr_sprintf(g->a, "%s.h", P));
    out_printf(o, "#ifndef %s_H\n#define %s_H\n\n#include <cuda.h>\n#include <stdint.h>\n\n", U, U);
    out_printf(o, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    out_printf(o, "/* Binaries: ");
    for (int t = 0; t < g->ntargets; t++)
        out_printf(o, "%s%s", t ? ", " : "", g->targets[t].arch);
    out_printf(o, " %s", r->ptx_only ? "PTX" : "cubins");
    if (g->has_ptx) out_printf(o, ", and %s PTX for newer GPUs", g->ptx.arch);
    out_printf(o, ".\n *\n * Specializations: each launch uses the first of these whose facts hold of its arguments\n"
                  " * (':16' of a pointer: 16-byte aligned; of an integer: divisible by 16; ':1': equal to 1).\n");
    for (int k = 0; k < g->nspecs; k++)
        for (int s = 0; s < g->nspecs; s++)
            if (g->specs[s].order == k) out_printf(o, " *   %d: %s\n", s, comment_safe(g->a, g->specs[s].text));
    if (r->nconfigs) {
        if (g->tune)
            out_printf(
                o,
                " *\n * Configs: the fastest of those whose condition holds, timed at the first launch for each\n"
                " * value of the key (%s):\n",
                comment_safe(g->a, r->key));
        else
            out_printf(o, " *\n * Configs: each launch uses the first whose condition holds:\n");
        for (int c = 0; c < g->nconfigs; c++)
            out_printf(o, " *   %d: %s%s%s\n", c, comment_safe(g->a, g->configs[c].label),
                       g->configs[c].cond ? "  if " : "",
                       g->configs[c].cond ? comment_safe(g->a, g->configs[c].cond_text) : "");
    }
    out_printf(o, " *\n * Every function returns CUDA_SUCCESS or the CUresult of the first driver call that failed,\n"
                  " * and prints nothing.  The state lives in %s.c: use these functions from one thread at a\n"
                  " * time. */\n\n", P);
    out_printf(o, "#define %s_NUM_SPECIALIZATIONS %d\n#define %s_NUM_CONFIGS %d\n", U, g->nspecs, U, g->nconfigs);
    out_printf(
        o, "/* A variant is one (config, specialization): config * %s_NUM_SPECIALIZATIONS + specialization. */\n", U);
    out_printf(o, "#define %s_NUM_VARIANTS %d\n\n", U, g->nvariants);

    out_printf(o, "/* Load every variant into the CUDA context current on this thread, each from the best binary\n"
                  " * for its device: a cubin of its architecture, else PTX compiled by the driver.  Fails with\n"
                  " * CUDA_ERROR_NO_BINARY_FOR_GPU when none fits, and loads nothing then.  Loading again does\n"
                  " * nothing. */\nCUresult %s_load(void);\n", P);
    out_printf(o, "/* Unload (with the same context current).  Forgets tuned and pinned configs. */\n"
                  "CUresult %s_unload(void);\n\n", P);
    const char *args = decl_args(g);
    bool config_arg = g->nconfigs > 1;
    const char *what = g->nconfigs > 1 || g->has_cond ? "config or specialization" : "specialization";
    if (g->ngrid) {
        out_printf(o, "/* Launch on `stream` over the grid %s%s.\n", comment_safe(g->a, g->req->grid),
                   g->ngrid < 3 ? " (dimensions not given are 1)" : "");
        out_printf(o, " * Returns CUDA_ERROR_NOT_INITIALIZED before %s_load(), CUDA_ERROR_INVALID_VALUE when no %s\n"
                      " * fits the arguments or the grid cannot be computed (overflow, division by zero, a dimension\n"
                      " * out of range); a grid with a zero dimension launches nothing. */\n",
                   P, what);
        out_printf(o, "CUresult %s_launch(CUstream stream%s);\n\n", P, args);
    }
    out_printf(o, "/* Launch %sover an explicit grid.\n", config_arg ? "config `config` " : "");
    out_printf(o, " * Returns CUDA_ERROR_NOT_INITIALIZED before %s_load(), CUDA_ERROR_INVALID_VALUE when no\n"
                  " * specialization fits the arguments%s; a grid with a zero dimension launches nothing. */\n",
               P, config_arg ? " or there is no such config" : "");
    out_printf(o,
               "CUresult %s_launch_grid(CUstream stream%s, unsigned grid_x, unsigned grid_y, unsigned grid_z%s);\n\n",
               P, config_arg ? ", int config" : "", args);
    if (config_arg) {
        out_printf(o, "/* The config a launch with these arguments uses, into *config%s. */\n",
                   g->tune ? " (timing the candidates on `stream` if this key\n * is new: this runs the kernel, "
                             "so its outputs are overwritten)"
                           : "");
        out_printf(o, "CUresult %s_choose_config(CUstream stream, int *config%s);\n", P, args);
    }
    if (g->tune) {
        const char *kargs = "";
        for (int i = 0; i < g->nkey; i++)
            kargs = nr_sprintf(g->a, "%s%s%s %s", kargs, i ? ", " : "", c_type(g->rt[g->key[i]]).decl,
                               g->rt[g->key[i]]->c_name);
        out_printf(o, "/* Pin the config used for this value of the key (no timing then). */\n"
                      "CUresult %s_set_config(%s, int config);\n", P, kargs);
        out_printf(o, "/* The config chosen for this value of the key, or -1 if none yet. */\nint %s_get_config(%s);\n",
                   P, kargs);
    }
    if (config_arg) out_printf(o, "\n");
    out_printf(o, "/* The specialization a launch with these arguments uses, or -1 when none fits. */\n");
    out_printf(o, "int %s_select(%s);\n\n", P, proto(g, "", args));
    out_printf(o, "/* The signature of a specialization and the settings of a config (NULL out of range). */\n"
                  "const char *%s_specialization(int specialization);\nconst char *%s_config(int config);\n", P, P);
    out_printf(
        o,
        "/* After %s_load(): the binary loaded for a variant (\"sm_90a cubin\", \"sm_90 PTX\", ...) and\n"
        " * its function; NULL before. */\n"
                  "const char *%s_binary(int variant);\nCUfunction %s_function(int variant);\n\n",
        P, P, P);
    out_printf(o, "#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

/* ---- the source ---- */

/* text with each '@' replaced by the prefix and '_'. */
static const char *with_prefix(Gen *g, const char *text) {
    const char *r = "";
    for (const char *t = text; *t;) {
        size_t n = strcspn(t, "@");
        r = nr_sprintf(g->a, "%s%.*s%s", r, (int)n, t, t[n] == '@' ? nr_sprintf(g->a, "%s_", g->P) : "");
        t += n + (t[n] == '@');
    }
    return r;
}

/* The helpers of generated code, written with '@' for the prefix; each is
 * emitted only when used (compilers warn of unused static functions). */
static const struct Helper {
    const char *name;
    const char *deps;   /* helpers it calls */
    const char *text;
} HELPERS[] = {
    {"add", "",
     "static int64_t @add(int *ok, int64_t a, int64_t b) {\n"
     "    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    return a + b;\n"
     "}\n"},
    {"sub", "",
     "static int64_t @sub(int *ok, int64_t a, int64_t b) {\n"
     "    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    return a - b;\n"
     "}\n"},
    {"mul", "",
     "static int64_t @mul(int *ok, int64_t a, int64_t b) {\n"
     "    int over;\n"
     "    if (a > 0) over = b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a;\n"
     "    else over = b > 0 ? a < INT64_MIN / b : a != 0 && b < INT64_MAX / a;\n"
     "    if (over) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    return a * b;\n"
     "}\n"},
    {"div", "",
     "static int64_t @div(int *ok, int64_t a, int64_t b) {\n"
     "    int64_t q;\n"
     "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    q = a / b;\n"
     "    if (a % b != 0 && (a < 0) != (b < 0)) q -= 1;\n"
     "    return q;\n"
     "}\n"},
    {"mod", "",
     "static int64_t @mod(int *ok, int64_t a, int64_t b) {\n"
     "    int64_t r;\n"
     "    if (b == 0) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    if (b == -1) return 0;\n"
     "    r = a % b;\n"
     "    if (r != 0 && (r < 0) != (b < 0)) r += b;\n"
     "    return r;\n"
     "}\n"},
    {"cdiv", "add sub div",
     "/* (a + b - 1) // b, as triton.cdiv. */\n"
     "static int64_t @cdiv(int *ok, int64_t a, int64_t b) {\n"
     "    return @div(ok, @add(ok, a, @sub(ok, b, 1)), b);\n"
     "}\n"},
    {"min", "", "static int64_t @min(int64_t a, int64_t b) { return a < b ? a : b; }\n"},
    {"max", "", "static int64_t @max(int64_t a, int64_t b) { return a > b ? a : b; }\n"},
    {"npow2", "",
     "/* The smallest power of 2 >= a (0 for a <= 0), as triton.next_power_of_2. */\n"
     "static int64_t @npow2(int *ok, int64_t a) {\n"
     "    int64_t p = 1;\n"
     "    if (a <= 0) return 0;\n"
     "    if (a > ((int64_t)1 << 62)) {\n"
     "        *ok = 0;\n"
     "        return 0;\n"
     "    }\n"
     "    while (p < a) p <<= 1;\n"
     "    return p;\n"
     "}\n"},
    {"round", "",
     "/* x rounded once to a narrow float format, as the GPU converts: to nearest even; fp8 saturates to\n"
     " * its largest finite value and has one NaN.  The format: explicit mantissa bits, exponent bias,\n"
     " * position of the sign bit, largest finite value, infinity (0: none), saturating, NaN (0: from\n"
     " * the payload). */\n"
     "static uint32_t @round(double x, int mbits, int bias, int signbit, uint32_t maxfin, uint32_t inf, int sat,\n"
     "                       uint32_t nan) {\n"
     "    uint64_t u, a, sig, q, rem, half, code;\n"
     "    uint32_t sign;\n"
     "    int e, emin, shift;\n"
     "    memcpy(&u, &x, sizeof u);\n"
     "    sign = (u >> 63) ? (uint32_t)1 << signbit : 0u;\n"
     "    a = u & 0x7fffffffffffffffull;\n"
     "    if (a > 0x7ff0000000000000ull) {\n"
     "        if (nan) return nan;\n"
     "        return sign | inf | ((uint32_t)1 << (mbits - 1)) |\n"
     "               (uint32_t)((a & 0xfffffffffffffull) >> (52 - mbits));\n"
     "    }\n"
     "    if (a == 0x7ff0000000000000ull) return sign | (sat ? maxfin : inf);\n"
     "    if ((a >> 52) == 0) return sign;\n"
     "    e = (int)(a >> 52) - 1023;\n"
     "    emin = 1 - bias;\n"
     "    if (e > bias + 2) return sign | (sat ? maxfin : inf);\n"
     "    sig = (a & 0xfffffffffffffull) | (1ull << 52);\n"
     "    shift = 52 - mbits;\n"
     "    if (e < emin) shift += emin - e;\n"
     "    if (shift > 63) shift = 63;\n"
     "    q = sig >> shift;\n"
     "    rem = sig & ((1ull << shift) - 1);\n"
     "    half = 1ull << (shift - 1);\n"
     "    if (rem > half || (rem == half && (q & 1))) q++;\n"
     "    code = e < emin ? q : ((uint64_t)(e + bias) << mbits) + q - (1ull << mbits);\n"
     "    if (code > maxfin) code = sat ? maxfin : inf;\n"
     "    return sign | (uint32_t)code;\n"
     "}\n"},
};

/* The helpers `body` calls (and those they call), with the prefix in place. */
static void emit_helpers(Out *o, Gen *g, const char *body) {
    bool used[NR_COUNTOF(HELPERS)] = {false};
    bool any = false;
    for (size_t i = 0; i < NR_COUNTOF(HELPERS); i++) {
        const char *call = nr_sprintf(g->a, "%s_%s(", g->P, HELPERS[i].name);
        if (!strstr(body, call)) continue;
        used[i] = any = true;
        for (size_t k = 0; k < NR_COUNTOF(HELPERS); k++)
            if (*HELPERS[i].deps && strstr(HELPERS[i].deps, HELPERS[k].name)) used[k] = true;
    }
    if (!any) return;
    out_printf(o, "/* Checked int64 arithmetic of grid and condition expressions: *ok becomes 0 on overflow or\n"
                  " * division by zero.  Division rounds toward negative infinity, as in Python. */\n");
    for (size_t i = 0; i < NR_COUNTOF(HELPERS); i++)
        if (used[i]) out_printf(o, "%s", with_prefix(g, HELPERS[i].text));
    out_printf(o, "\n");
}

static void emit_binaries(Out *o, Gen *g) {
    const char *P = g->P;
    int n = 0;
    for (int v = 0; v < g->nvariants; v++) {
        const Variant *var = &g->variants[v];
        for (int b = 0; b < var->nbins; b++, n++) {
            const Bin *bin = &var->bins[b];
            out_printf(o, "/* variant %d (config %d, specialization %d): %s %s, %zu bytes */\n", v, var->config,
                       var->spec, bin->arch, bin->is_ptx ? "PTX" : "cubin", bin->size);
            out_printf(
                o,
                "static const union {\n    unsigned char b[%zu];\n    unsigned long long align;\n} %s_image_%d = {{\n",
                bin->size, P, n);
            out_bytes(o, bin->data, bin->size);
            out_printf(o, "}};\n\n");
        }
    }
    out_printf(o, "struct %s_binary {\n    const unsigned char *image;\n    const char *what;\n"
                  "    int sm;            /* target: 80, 86, 89, 90 */\n"
                  "    int arch_specific; /* sm_90a: runs on 9.0 only */\n    int is_ptx;\n"
                  "    unsigned threads;  /* per program */\n"
                  "    unsigned shared;   /* dynamic shared memory per launch */\n};\n\n", P);
    out_printf(o, "static const struct %s_binary %s_binaries[] = {\n", P, P);
    n = 0;
    for (int v = 0; v < g->nvariants; v++)
        for (int b = 0; b < g->variants[v].nbins; b++, n++) {
            const Bin *bin = &g->variants[v].bins[b];
            out_printf(o, "    {%s_image_%d.b, \"%s %s\", %d, %d, %d, %du, %du},\n", P, n, bin->arch,
                       bin->is_ptx ? "PTX" : "cubin", bin->sm, bin->arch_specific, bin->is_ptx, bin->threads,
                       bin->shared);
        }
    out_printf(o, "};\n\n/* The binaries of variant v: %s_binaries[%s_first[v] .. %s_first[v + 1]). */\n"
                  "static const int %s_first[%d] = {", P, P, P, P, g->nvariants + 1);
    n = 0;
    for (int v = 0; v <= g->nvariants; v++) {
        out_printf(o, "%s%d", v ? ", " : "", n);
        if (v < g->nvariants) n += g->variants[v].nbins;
    }
    out_printf(o, "};\n\n");
}

static void emit_tables(Out *o, Gen *g) {
    const char *P = g->P;
    out_printf(o, "static const char *const %s_signatures[%d] = {\n", P, g->nspecs);
    for (int s = 0; s < g->nspecs; s++) out_printf(o, "    %s,\n", c_string(g->a, g->specs[s].text));
    out_printf(o, "};\nstatic const char *const %s_configs[%d] = {\n", P, g->nconfigs);
    for (int c = 0; c < g->nconfigs; c++) {
        const Config *cf = &g->configs[c];
        const char *label = *cf->label ? cf->label : "";
        if (cf->cond) label = nr_sprintf(g->a, "%s%sif %s", label, *label ? " " : "", cf->cond_text);
        out_printf(o, "    %s,\n", c_string(g->a, label));
    }
    out_printf(o, "};\n\n");
    out_printf(o, "static struct {\n    int loaded;\n    CUmodule module[%d];\n    CUfunction function[%d];\n"
                  "    const struct %s_binary *binary[%d];\n", g->nvariants, g->nvariants, P, g->nvariants);
    if (g->tune)
        out_printf(o, "    struct {\n        int used, config;\n        int64_t key[%d];\n    } choice[64];\n"
                      "    int next_choice;\n", g->nkey);
    out_printf(o, "} %s_state;\n\n", P);
}

static void emit_loader(Out *o, Gen *g) {
    const char *P = g->P;
    out_printf(o,
               "/* Whether binary b runs on a device of compute capability cc (major * 10 + minor): a cubin on its\n"
               " * own major version from its minor up, PTX on its target and newer; sm_90a on 9.0 only. */\n"
               "static int %s_fits(const struct %s_binary *b, int cc) {\n"
               "    if (b->arch_specific) return cc == b->sm;\n"
               "    if (b->is_ptx) return cc >= b->sm;\n"
               "    return cc / 10 == b->sm / 10 && cc >= b->sm;\n}\n\n",
               P, P);
    out_printf(o,
               "/* Preference among binaries that fit: cubins before PTX, then the newer target, then sm_90a. */\n"
               "static int %s_rank(const struct %s_binary *b) {\n"
               "    return (b->is_ptx ? 0 : 1000) + 2 * b->sm + b->arch_specific;\n}\n\n",
               P, P);
    out_printf(
        o,
        "/* Errors after which the next binary is tried: the driver cannot use this one. */\n"
        "static int %s_try_next(CUresult e) {\n"
        "    return e == CUDA_ERROR_NO_BINARY_FOR_GPU || e == CUDA_ERROR_INVALID_IMAGE ||\n"
        "           e == CUDA_ERROR_INVALID_PTX ||\n"
        "           e == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || e == CUDA_ERROR_JIT_COMPILER_NOT_FOUND;\n}\n\n",
        P);
    out_printf(
        o,
        "static CUresult %s_load_variant(int v, int cc) {\n"
        "    static const char entry[] = %s;\n"
        "    CUresult e = CUDA_ERROR_NO_BINARY_FOR_GPU;\n"
        "    int bound = 1 << 30;\n"
        "    for (;;) {\n"
        "        const struct %s_binary *best = NULL;\n"
        "        CUmodule m = NULL;\n"
        "        CUfunction f = NULL;\n"
        "        int i;\n"
        "        for (i = %s_first[v]; i < %s_first[v + 1]; i++) {\n"
        "            const struct %s_binary *b = &%s_binaries[i];\n"
        "            if (%s_fits(b, cc) && %s_rank(b) < bound && (!best || %s_rank(b) > %s_rank(best))) best = b;\n"
        "        }\n"
        "        if (!best) return e;\n"
        "        bound = %s_rank(best);\n"
        "        e = cuModuleLoadData(&m, best->image);\n"
        "        if (e != CUDA_SUCCESS) {\n"
        "            if (%s_try_next(e)) continue;\n"
        "            return e;\n"
        "        }\n"
        "        e = cuModuleGetFunction(&f, m, entry);\n"
        "        if (e == CUDA_SUCCESS && best->shared > 49152u)\n"
        "            e = cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)best->shared);\n"
        "        if (e != CUDA_SUCCESS) {\n"
        "            (void)cuModuleUnload(m);\n"
        "            return e;\n"
        "        }\n"
        "        %s_state.module[v] = m;\n"
        "        %s_state.function[v] = f;\n"
        "        %s_state.binary[v] = best;\n"
        "        return CUDA_SUCCESS;\n"
        "    }\n}\n\n",
        P, c_string(g->a, g->entry), P, P, P, P, P, P, P, P, P, P, P, P, P, P);
    out_printf(o,
               "CUresult %s_unload(void) {\n"
               "    CUresult first = CUDA_SUCCESS;\n"
               "    int v;\n"
               "    for (v = 0; v < %d; v++) {\n"
               "        if (%s_state.module[v]) {\n"
               "            CUresult e = cuModuleUnload(%s_state.module[v]);\n"
               "            if (e != CUDA_SUCCESS && first == CUDA_SUCCESS) first = e;\n"
               "        }\n"
               "    }\n"
               "    memset(&%s_state, 0, sizeof %s_state);\n"
               "    return first;\n}\n\n",
               P, g->nvariants, P, P, P, P);
    out_printf(
        o,
        "CUresult %s_load(void) {\n"
        "    CUdevice dev;\n"
        "    int major = 0, minor = 0, v;\n"
        "    CUresult e;\n"
        "    if (%s_state.loaded) return CUDA_SUCCESS;\n"
        "    e = cuCtxGetDevice(&dev);\n"
        "    if (e == CUDA_SUCCESS)\n"
        "        e = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);\n"
        "    if (e == CUDA_SUCCESS)\n"
        "        e = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);\n"
        "    for (v = 0; e == CUDA_SUCCESS && v < %d; v++) e = %s_load_variant(v, major * 10 + minor);\n"
        "    if (e != CUDA_SUCCESS) {\n"
        "        for (v = 0; v < %d; v++)\n"
        "            if (%s_state.module[v]) (void)cuModuleUnload(%s_state.module[v]);\n"
        "        memset(%s_state.module, 0, sizeof %s_state.module);\n"
        "        memset(%s_state.function, 0, sizeof %s_state.function);\n"
        "        memset(%s_state.binary, 0, sizeof %s_state.binary);\n"
        "        return e;\n"
        "    }\n"
        "    %s_state.loaded = 1;\n"
        "    return CUDA_SUCCESS;\n}\n\n",
        P, P, g->nvariants, P, g->nvariants, P, P, P, P, P, P, P, P, P);
}

static void emit_dispatch(Out *o, Gen *g) {
    const char *P = g->P, *args = decl_args(g);
    out_printf(o, "int %s_select(%s) {\n", P, proto(g, "", args));
    out_unused(o, g);
    for (int k = 0; k < g->nspecs; k++)
        for (int s = 0; s < g->nspecs; s++) {
            const Spec *sp = &g->specs[s];
            if (sp->order != k) continue;
            if (!sp->nfacts) {
                out_printf(o, "    return %d;\n}\n\n", s);
                goto done;
            }
            const char *cond = "";
            for (int i = 0; i < g->nrt; i++) {
                if (!sp->facts[i]) continue;
                const char *name = g->rt[i]->c_name;
                const char *t = sp->facts[i] == 1 ? nr_sprintf(g->a, "%s == 1", name)
                                                  : nr_sprintf(g->a, "%s %% 16 == 0", name);
                cond = nr_sprintf(g->a, "%s%s%s", cond, *cond ? " && " : "", t);
            }
            out_printf(o, "    if (%s) return %d;\n", cond, s);
        }
    out_printf(o, "    return -1;\n}\n\n");
done:;
    /* The grid of each config. */
    if (g->ngrid) {
        out_printf(o, "/* The grid of config `config` for these arguments; 0 when it cannot be computed. */\n"
                      "static int %s_grid(int config, unsigned grid[3]%s) {\n"
                      "    static const int64_t aot_limit[3] = {2147483647, 65535, 65535};\n"
                      "    int aot_valid = 1, *ok = &aot_valid, aot_i;\n    int64_t aot_g[3] = {1, 1, 1};\n",
                      P, args);
        out_unused(o, g);
        out_printf(o, "    (void)ok;\n    switch (config) {\n");
        for (int c = 0; c < g->nconfigs; c++) {
            out_printf(o, "    case %d:\n", c);
            for (int i = 0; i < g->ngrid; i++) out_printf(o, "        aot_g[%d] = %s;\n", i, g->grid_c[c][i]);
            out_printf(o, "        break;\n");
        }
        out_printf(o, "    default:\n        return 0;\n    }\n    if (!aot_valid) return 0;\n"
                      "    for (aot_i = 0; aot_i < 3; aot_i++) {\n"
                      "        if (aot_g[aot_i] < 0 || aot_g[aot_i] > aot_limit[aot_i]) return 0;\n"
                      "        grid[aot_i] = (unsigned)aot_g[aot_i];\n    }\n    return 1;\n}\n\n");
    }
    if (g->has_cond) {
        out_printf(o,
                   "/* Whether the condition of config `config` holds: 1, 0, or -1 when it cannot be evaluated. */\n"
                   "static int %s_condition(int config%s) {\n    int aot_valid = 1, *ok = &aot_valid, aot_holds = 1;\n",
                   P, args);
        out_unused(o, g);
        out_printf(o, "    (void)ok;\n    switch (config) {\n");
        for (int c = 0; c < g->nconfigs; c++)
            if (g->configs[c].cond)
                out_printf(o, "    case %d:\n        aot_holds = %s;\n        break;\n", c, g->cond_c[c]);
        out_printf(o, "    default:\n        break;\n    }\n    return aot_valid ? aot_holds != 0 : -1;\n}\n\n");
    }
}

/* Generated functions taking the kernel's arguments name their own
 * variables aot_* (kernel parameters of such names are renamed). */
static void emit_run(Out *o, Gen *g) {
    const char *P = g->P, *args = decl_args(g);
    out_printf(o, "/* Launch variant aot_v (loaded) over grid. */\n"
                  "static CUresult %s_run(int aot_v, CUstream stream, const unsigned grid[3]%s) {\n"
                  "    const struct %s_binary *aot_b = %s_state.binary[aot_v];\n",
               P, args, P, P);
    for (int i = 0; i < g->nrt; i++) {
        CType t = c_type(g->rt[i]);
        if (!t.packed) continue;
        const char *conv = with_prefix(g, nr_sprintf(g->a, t.convert, g->rt[i]->c_name));
        out_printf(o, "    %s aot_arg%d = %s;\n", t.packed, i, conv);
    }
    if (g->nrt) out_printf(o, "    void *aot_params[%d];\n", g->nrt);
    for (int i = 0; i < g->nrt; i++) {
        CType t = c_type(g->rt[i]);
        if (t.packed) out_printf(o, "    aot_params[%d] = &aot_arg%d;\n", i, i);
        else out_printf(o, "    aot_params[%d] = &%s;\n", i, g->rt[i]->c_name);
    }
    out_printf(o,
               "    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return CUDA_SUCCESS;\n"
               "    return cuLaunchKernel(%s_state.function[aot_v], grid[0], grid[1], grid[2], aot_b->threads, 1, 1,\n"
               "                          aot_b->shared, stream, %s, NULL);\n}\n\n",
               P, g->nrt ? "aot_params" : "NULL");
}

static const char *key_args(Gen *g, bool decl) {
    const char *s = "";
    for (int i = 0; i < g->nkey; i++) {
        const Param *p = g->rt[g->key[i]];
        s = decl ? nr_sprintf(g->a, "%s%s%s %s", s, i ? ", " : "", c_type(p).decl, p->c_name)
                 : nr_sprintf(g->a, "%s%s%s", s, i ? ", " : "", p->c_name);
    }
    return s;
}

static void emit_tuning(Out *o, Gen *g) {
    const char *P = g->P, *args = decl_args(g), *call = call_args(g);
    const char *kdecl = key_args(g, true), *kcall = key_args(g, false);
    out_printf(o, "/* The slot holding the config chosen for a key, or -1. */\n"
                  "static int %s_find(%s) {\n    int aot_i;\n    for (aot_i = 0; aot_i < 64; aot_i++) {\n"
                  "        if (!%s_state.choice[aot_i].used) continue;\n",
               P, kdecl, P);
    for (int i = 0; i < g->nkey; i++)
        out_printf(o, "        if (%s_state.choice[aot_i].key[%d] != (int64_t)%s) continue;\n", P, i,
                   g->rt[g->key[i]]->c_name);
    out_printf(o, "        return aot_i;\n    }\n    return -1;\n}\n\n");
    out_printf(o, "/* Remember the config for a key, in a free slot or over the oldest. */\n"
                  "static void %s_remember(%s, int config) {\n    int aot_i = %s_find(%s);\n"
                  "    if (aot_i < 0) {\n        aot_i = %s_state.next_choice;\n"
                  "        %s_state.next_choice = (aot_i + 1) %% 64;\n    }\n"
                  "    %s_state.choice[aot_i].used = 1;\n    %s_state.choice[aot_i].config = config;\n",
               P, kdecl, P, kcall, P, P, P, P);
    for (int i = 0; i < g->nkey; i++)
        out_printf(o, "    %s_state.choice[aot_i].key[%d] = (int64_t)%s;\n", P, i, g->rt[g->key[i]]->c_name);
    out_printf(o, "}\n\n");
    out_printf(o, "CUresult %s_set_config(%s, int config) {\n"
                  "    if (config < 0 || config >= %d) return CUDA_ERROR_INVALID_VALUE;\n"
                  "    %s_remember(%s, config);\n    return CUDA_SUCCESS;\n}\n\n",
               P, kdecl, g->nconfigs, P, kcall);
    out_printf(o, "int %s_get_config(%s) {\n    int aot_i = %s_find(%s);\n"
                  "    return aot_i < 0 ? -1 : %s_state.choice[aot_i].config;\n}\n\n",
               P, kdecl, P, kcall, P);
    /* Timing. */
    out_printf(o,
               "/* Time every config whose condition holds on `stream` (one launch to warm up, then 5 timed), and\n"
               " * remember the fastest.  Configs the device cannot launch (too many resources) are skipped. */\n"
               "static CUresult %s_tune(CUstream stream, int *config%s) {\n"
               "    CUevent aot_start = NULL, aot_stop = NULL;\n"
               "    CUresult aot_e, aot_skipped = CUDA_ERROR_INVALID_VALUE;\n"
               "    float aot_best = 0.0f, aot_ms = 0.0f;\n"
               "    int aot_c, aot_r, aot_chosen = -1, aot_s = %s_select(%s);\n"
               "    unsigned aot_grid[3];\n"
               "    if (aot_s < 0) return CUDA_ERROR_INVALID_VALUE;\n"
               "    aot_e = cuEventCreate(&aot_start, CU_EVENT_DEFAULT);\n"
               "    if (aot_e == CUDA_SUCCESS) aot_e = cuEventCreate(&aot_stop, CU_EVENT_DEFAULT);\n"
               "    for (aot_c = 0; aot_c < %d && aot_e == CUDA_SUCCESS; aot_c++) {\n",
               P, args, P, arg_list(g), g->nconfigs);
    if (g->has_cond)
        out_printf(o, "        int aot_holds = %s_condition(aot_c%s);\n"
                      "        if (aot_holds < 0) aot_e = CUDA_ERROR_INVALID_VALUE;\n"
                      "        if (aot_holds <= 0) continue;\n",
                   P, call);
    if (g->ngrid)
        out_printf(o, "        if (!%s_grid(aot_c, aot_grid%s)) continue;\n", P, call);
    else
        out_printf(o, "        aot_grid[0] = aot_grid[1] = aot_grid[2] = 1;\n");
    out_printf(o,
               "        aot_e = %s_run(aot_c * %d + aot_s, stream, aot_grid%s);\n"
               "        if (aot_e == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || aot_e == CUDA_ERROR_INVALID_VALUE) {\n"
               "            aot_skipped = aot_e;\n"
               "            aot_e = CUDA_SUCCESS;\n"
               "            continue;\n"
               "        }\n"
               "        if (aot_e == CUDA_SUCCESS) aot_e = cuEventRecord(aot_start, stream);\n"
               "        for (aot_r = 0; aot_r < 5 && aot_e == CUDA_SUCCESS; aot_r++)\n"
               "            aot_e = %s_run(aot_c * %d + aot_s, stream, aot_grid%s);\n"
               "        if (aot_e == CUDA_SUCCESS) aot_e = cuEventRecord(aot_stop, stream);\n"
               "        if (aot_e == CUDA_SUCCESS) aot_e = cuEventSynchronize(aot_stop);\n"
               "        if (aot_e == CUDA_SUCCESS) aot_e = cuEventElapsedTime(&aot_ms, aot_start, aot_stop);\n"
               "        if (aot_e == CUDA_SUCCESS && (aot_chosen < 0 || aot_ms < aot_best)) {\n"
               "            aot_chosen = aot_c;\n"
               "            aot_best = aot_ms;\n"
               "        }\n"
               "    }\n"
               "    if (aot_start) (void)cuEventDestroy(aot_start);\n"
               "    if (aot_stop) (void)cuEventDestroy(aot_stop);\n"
               "    if (aot_e != CUDA_SUCCESS) return aot_e;\n"
               "    if (aot_chosen < 0) return aot_skipped;\n"
               "    %s_remember(%s, aot_chosen);\n"
               "    *config = aot_chosen;\n"
               "    return CUDA_SUCCESS;\n}\n\n",
               P, g->nspecs, call, P, g->nspecs, call, P, kcall);
}

static void emit_launchers(Out *o, Gen *g) {
    const char *P = g->P, *args = decl_args(g), *call = call_args(g);
    bool pick = g->nconfigs > 1 || g->has_cond;
    if (pick) {
        out_printf(o,
                   "/* The config for these arguments. */\nstatic CUresult %s_pick(CUstream stream, int *config%s) {\n",
                   P, args);
        if (g->tune) {
            out_printf(o, "    int aot_c = %s_get_config(%s);\n    if (aot_c >= 0) {\n        *config = aot_c;\n"
                          "        return CUDA_SUCCESS;\n    }\n    return %s_tune(stream, config%s);\n}\n\n",
                       P, key_args(g, false), P, call);
        } else {
            out_printf(o, "    int aot_c;\n    (void)stream;\n    for (aot_c = 0; aot_c < %d; aot_c++) {\n",
                       g->nconfigs);
            if (g->has_cond)
                out_printf(o, "        int aot_holds = %s_condition(aot_c%s);\n"
                              "        if (aot_holds < 0) return CUDA_ERROR_INVALID_VALUE;\n"
                              "        if (!aot_holds) continue;\n",
                           P, call);
            out_printf(o, "        *config = aot_c;\n        return CUDA_SUCCESS;\n    }\n"
                          "    return CUDA_ERROR_INVALID_VALUE;\n}\n\n");
        }
    }
    if (g->nconfigs > 1)
        out_printf(o, "CUresult %s_choose_config(CUstream stream, int *config%s) {\n"
                      "    if (!config) return CUDA_ERROR_INVALID_VALUE;\n"
                      "    return %s_pick(stream, config%s);\n}\n\n",
                   P, args, P, call);
    if (g->ngrid) {
        out_printf(
            o, "CUresult %s_launch(CUstream stream%s) {\n    unsigned aot_grid[3];\n    int aot_config = 0, aot_s;\n",
            P, args);
        if (pick) out_printf(o, "    CUresult aot_e;\n");
        out_printf(o, "    if (!%s_state.loaded) return CUDA_ERROR_NOT_INITIALIZED;\n", P);
        if (pick)
            out_printf(o, "    aot_e = %s_pick(stream, &aot_config%s);\n    if (aot_e != CUDA_SUCCESS) return aot_e;\n",
                       P, call);
        out_printf(o, "    aot_s = %s_select(%s);\n    if (aot_s < 0) return CUDA_ERROR_INVALID_VALUE;\n"
                      "    if (!%s_grid(aot_config, aot_grid%s)) return CUDA_ERROR_INVALID_VALUE;\n"
                      "    return %s_run(aot_config * %d + aot_s, stream, aot_grid%s);\n}\n\n",
                   P, arg_list(g), P, call, P, g->nspecs, call);
    }
    bool config_arg = g->nconfigs > 1;
    out_printf(o, "CUresult %s_launch_grid(CUstream stream%s, unsigned grid_x, unsigned grid_y, unsigned grid_z%s) {\n"
                  "    unsigned aot_grid[3];\n    int aot_s;\n",
               P, config_arg ? ", int config" : "", args);
    if (!config_arg) out_printf(o, "    const int config = 0;\n");
    out_printf(o, "    if (!%s_state.loaded) return CUDA_ERROR_NOT_INITIALIZED;\n", P);
    if (config_arg)
        out_printf(o, "    if (config < 0 || config >= %d) return CUDA_ERROR_INVALID_VALUE;\n", g->nconfigs);
    out_printf(o, "    aot_s = %s_select(%s);\n    if (aot_s < 0) return CUDA_ERROR_INVALID_VALUE;\n"
                  "    aot_grid[0] = grid_x;\n    aot_grid[1] = grid_y;\n    aot_grid[2] = grid_z;\n"
                  "    return %s_run(config * %d + aot_s, stream, aot_grid%s);\n}\n\n",
               P, arg_list(g), P, g->nspecs, call);
    out_printf(o,
               "const char *%s_specialization(int specialization) {\n"
               "    return specialization >= 0 && specialization < %d ? %s_signatures[specialization] : NULL;\n}\n\n",
               P, g->nspecs, P);
    out_printf(
        o,
        "const char *%s_config(int config) {\n"
        "    return config >= 0 && config < %d ? %s_configs[config] : NULL;\n}\n\n",
        P, g->nconfigs, P);
    out_printf(
        o,
        "const char *%s_binary(int variant) {\n"
        "    if (variant < 0 || variant >= %d || !%s_state.binary[variant]) return NULL;\n"
        "    return %s_state.binary[variant]->what;\n}\n\n",
        P, g->nvariants, P, P);
    out_printf(o, "CUfunction %s_function(int variant) {\n"
                  "    return variant >= 0 && variant < %d ? %s_state.function[variant] : NULL;\n}\n",
               P, g->nvariants, P);
}

static void emit_source(Out *o, Gen *g) {
    Out code = {g->a, NULL, 0, 0};
    emit_loader(&code, g);
    emit_dispatch(&code, g);
    emit_run(&code, g);
    if (g->tune) emit_tuning(&code, g);
    emit_launchers(&code, g);
    emit_intro(o, g, nr_sprintf(g->a, "%s.c", g->P));
    out_printf(o, "#include \"%s.h\"\n\n#include <stddef.h>\n#include <string.h>\n\n", g->P);
    emit_binaries(o, g);
    emit_tables(o, g);
    emit_helpers(o, g, out_text(&code));
    out_printf(o, "%s", out_text(&code));
}

/* ---- the whole ---- */

static bool check_name(Gen *g) {
    const char *n = g->req->name;
    if (!n || !is_ident(n, strlen(n)) || strlen(n) > 64) {
        error(g, "the output name '%s' must be a C identifier (letters, digits and '_', at most 64)", n ? n : "");
        return false;
    }
    g->P = n;
    char *u = nr_strdup(g->a, n);
    for (char *p = u; *p; p++) *p = (char)toupper((unsigned char)*p);
    g->U = u;
    return true;
}

bool nr_aot_generate(NrArena *a, const NrAotRequest *req, NrAotResult *out) {
    memset(out, 0, sizeof *out);
    Gen g;
    memset(&g, 0, sizeof g);
    g.a = a;
    g.req = req;
    g.msgs.a = a;
    nr_sources_init(&g.sources, a);
    nr_diags_init(&g.d, a, &g.sources);
    bool ok = check_name(&g) && check_targets(&g) && load_params(&g) && check_configs(&g) && check_specs(&g) &&
              check_key(&g) && check_grid(&g) && lower_exprs(&g) && compile_all(&g) && !failed(&g);
    const char *diags = nr_diags_render(a, &g.d);
    out->messages = nr_sprintf(a, "%s%s", g.msgs.s ? out_text(&g.msgs) : "", diags ? diags : "");
    if (!ok) return false;
    Out h = {a, NULL, 0, 0}, c = {a, NULL, 0, 0};
    emit_header(&h, &g);
    emit_source(&c, &g);
    out->header = out_text(&h);
    out->source = out_text(&c);
    out->nvariants = g.nvariants;
    /* The report: one row per binary. */
    int total = 0;
    for (int v = 0; v < g.nvariants; v++) total += g.variants[v].nbins;
    out->bins = nr_alloc(a, sizeof(NrAotBinary) * (size_t)(total ? total : 1));
    for (int v = 0; v < g.nvariants; v++)
        for (int b = 0; b < g.variants[v].nbins; b++) {
            const Bin *bin = &g.variants[v].bins[b];
            NrAotBinary *ob = &out->bins[out->nbins++];
            ob->variant = v;
            ob->arch = bin->arch;
            ob->is_ptx = bin->is_ptx;
            ob->bytes = bin->size;
            ob->threads = bin->threads;
            ob->shared_bytes = bin->shared;
            ob->info = bin->info;
        }
    return true;
}
