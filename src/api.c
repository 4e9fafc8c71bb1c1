/* api.c - the public C API (include/nereid.h) over the compiler phases:
 *
 *   source --parse--> AST --lower--> block IR --block pipeline--> kernel
 *                                                     `--> interpreter launch
 *
 * A context holds the diagnostics of its last call; a kernel owns the arena
 * of its compilation (module, IR text, argument table). */
#include "nereid.h"

#include "ast.h"
#include "interp.h"
#include "ir.h"
#include "passes.h"
#include "sema.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct NrContext {
    NrArena arena;              /* diagnostics of the last call; reset by each call */
    NrDiagnostic *diags;
    int ndiags;
    const char *error_text;
};

struct NrKernel {
    NrArena arena;              /* everything below lives here */
    NrModule *mod;
    NrFunc *fn;
    const char *name;
    const char *ir_text;
    NrArgInfo *args;
    int nargs;
};

void nr_options_default(NrOptions *o) {
    memset(o, 0, sizeof *o);
    o->num_warps = 4;
    o->num_stages = 3;
    o->debug = 1;
}

NrContext *nr_context_create(void) {
    NrContext *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    nr_arena_init(&c->arena);
    c->error_text = "";
    return c;
}

void nr_context_destroy(NrContext *ctx) {
    if (!ctx) return;
    nr_arena_free(&ctx->arena);
    free(ctx);
}

static void ctx_reset(NrContext *ctx) {
    nr_arena_free(&ctx->arena);
    nr_arena_init(&ctx->arena);
    ctx->diags = NULL;
    ctx->ndiags = 0;
    ctx->error_text = "";
}

static const char *sev_str(NrSeverity s) {
    return s == NR_SEV_ERROR ? "error" : s == NR_SEV_WARNING ? "warning" : "note";
}

/* Copy a compilation's diagnostics into the context, so that they outlive it. */
static void ctx_take_diags(NrContext *ctx, const NrDiags *d) {
    NrArena *a = &ctx->arena;
    ctx->ndiags = d->n;
    ctx->diags = nr_alloc(a, sizeof(NrDiagnostic) * (size_t)(d->n ? d->n : 1));
    for (int i = 0; i < d->n; i++) {
        const NrDiag *dg = &d->v[i];
        NrDiagnostic *o = &ctx->diags[i];
        o->severity = sev_str(dg->sev);
        const NrSources *s = d->sources;
        o->file = nr_strdup(a, (s && (int)dg->loc.file < s->n) ? s->v[dg->loc.file].name : "<unknown>");
        o->line = (int)dg->loc.line + ((s && (int)dg->loc.file < s->n) ? s->v[dg->loc.file].line_offset : 0);
        o->col = (int)dg->loc.col;
        o->message = nr_strdup(a, dg->msg);
        o->source_line = nr_source_line(a, s, dg->loc);
        o->rendered = nr_diag_render(a, s, dg);
    }
    ctx->error_text = nr_diags_render(a, d);
}

static void ctx_error(NrContext *ctx, const char *msg) {
    NrSources s;
    nr_sources_init(&s, &ctx->arena);
    NrDiags d;
    nr_diags_init(&d, &ctx->arena, &s);
    nr_error(&d, (NrLoc){0, 0, 0}, "%s", msg);
    ctx_take_diags(ctx, &d);
}

int nr_error_count(const NrContext *ctx) { return ctx ? ctx->ndiags : 0; }

int nr_error_get(const NrContext *ctx, int i, NrDiagnostic *out) {
    if (!ctx || !out || i < 0 || i >= ctx->ndiags) return -1;
    *out = ctx->diags[i];
    return 0;
}

const char *nr_error_text(const NrContext *ctx) { return ctx ? ctx->error_text : ""; }

NrStatus nr_check_source(NrContext *ctx, const char *src, size_t len, const char *filename) {
    if (!ctx || (!src && len)) return NR_ERR_INVALID;
    ctx_reset(ctx);
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    uint32_t file = nr_sources_add(&s, &a, filename ? filename : "<input>", src ? src : "", len);
    NrDiags d;
    nr_diags_init(&d, &a, &s);
    NrAstModule *ast = nr_parse_module(&a, &s, file, &d);
    NrStatus st = (ast && !nr_has_errors(&d)) ? NR_OK : NR_ERR_COMPILE;
    ctx_take_diags(ctx, &d);
    nr_arena_free(&a);
    return st;
}

static const char *dtype_sig_name(const NrModule *m, NrTypeId t) {
    return nr_dtype_info[nr_type(m, t)->dtype].sig;
}

/* The runtime-argument table of a compiled kernel. */
static void build_arg_table(NrKernel *k) {
    NrFunc *f = k->fn;
    NrBlock *body = nr_block(f, f->body);
    k->nargs = body->nargs;
    k->args = nr_alloc(&k->arena, sizeof(NrArgInfo) * (size_t)(k->nargs ? k->nargs : 1));
    for (int i = 0; i < body->nargs; i++) {
        NrTypeId t = nr_val_type(f, body->args[i]);
        NrArgInfo *ai = &k->args[i];
        if (nr_type_is_ptr(k->mod, t)) ai->kind = NR_ARG_BUFFER;
        else if (nr_dt_is_float(nr_type_dtype(k->mod, t))) ai->kind = NR_ARG_FLOAT;
        else ai->kind = NR_ARG_INT;
        ai->name = f->params[i].name ? f->params[i].name : "";
        ai->dtype = dtype_sig_name(k->mod, t);
        ai->param_index = i;
    }
}

NrStatus nr_compile(NrContext *ctx, const char *src, size_t len, const char *filename, const char *kernel,
                    const char *signature, const NrOptions *opts, NrKernel **out) {
    if (!ctx || !out || !kernel || !signature || (!src && len)) return NR_ERR_INVALID;
    *out = NULL;
    ctx_reset(ctx);
    NrOptions o;
    if (opts) o = *opts;
    else nr_options_default(&o);

    NrKernel *k = calloc(1, sizeof *k);
    if (!k) return NR_ERR_INTERNAL;
    nr_arena_init(&k->arena);
    NrArena *a = &k->arena;
    k->mod = nr_module_new(a);
    NrSources *s = &k->mod->sources;
    uint32_t file = nr_sources_add(s, a, filename ? filename : "<input>", src ? src : "", len);
    NrDiags d;
    nr_diags_init(&d, a, s);

    NrStatus st = NR_ERR_COMPILE;
    NrAstModule *ast = nr_parse_module(a, s, file, &d);
    if (!ast || nr_has_errors(&d)) goto fail;
    NrSignature sig;
    if (!nr_signature_parse(a, signature, &sig, &d) || nr_has_errors(&d)) goto fail;
    k->fn = nr_lower_kernel(k->mod, ast, kernel, &sig, &d);
    if (!k->fn || nr_has_errors(&d)) goto fail;
    if (!(o.stop_after && strcmp(o.stop_after, "lower") == 0)) {
        NrPipelineOptions po = {o.stop_after, o.verify_each != 0, NULL};
        if (!nr_run_block_pipeline(k->mod, &po, &d) || nr_has_errors(&d)) goto fail;
    }
    k->name = nr_strdup(a, kernel);
    k->ir_text = nr_module_to_string(k->mod, &(NrPrintOptions){false});
    build_arg_table(k);
    ctx_take_diags(ctx, &d); /* notes and warnings, e.g. static_print */
    *out = k;
    return NR_OK;
fail:
    if (!nr_has_errors(&d)) nr_error(&d, (NrLoc){0, 0, 0}, "compilation of '%s' failed", kernel);
    ctx_take_diags(ctx, &d);
    nr_kernel_destroy(k);
    return st;
}

void nr_kernel_destroy(NrKernel *k) {
    if (!k) return;
    nr_arena_free(&k->arena);
    free(k);
}

const char *nr_kernel_name(const NrKernel *k) { return k ? k->name : ""; }
const char *nr_kernel_ir(const NrKernel *k) { return k ? k->ir_text : ""; }
int nr_kernel_num_args(const NrKernel *k) { return k ? k->nargs : 0; }

int nr_kernel_arg_info(const NrKernel *k, int i, NrArgInfo *out) {
    if (!k || !out || i < 0 || i >= k->nargs) return -1;
    *out = k->args[i];
    return 0;
}

NrStatus nr_launch_interp(NrContext *ctx, const NrKernel *k, const unsigned grid[3], const NrArg *args,
                          int nargs) {
    if (!ctx || !k || !grid || (nargs && !args)) return NR_ERR_INVALID;
    ctx_reset(ctx);
    if (nargs != k->nargs) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' takes %d runtime arguments, got %d", k->name,
                                  k->nargs, nargs));
        return NR_ERR_INVALID;
    }
    NrArena a;
    nr_arena_init(&a);
    NrInterpArg *ia = nr_alloc(&a, sizeof(NrInterpArg) * (size_t)(nargs ? nargs : 1));
    for (int i = 0; i < nargs; i++) {
        const NrArgInfo *ai = &k->args[i];
        if (args[i].kind != ai->kind) {
            static const char *const kinds[] = {"a buffer", "an integer", "a float"};
            ctx_error(ctx, nr_sprintf(&ctx->arena, "argument %d ('%s') of kernel '%s' must be %s", i, ai->name,
                                      k->name, kinds[ai->kind]));
            nr_arena_free(&a);
            return NR_ERR_INVALID;
        }
        ia[i].kind = ai->kind == NR_ARG_BUFFER ? NR_IA_BUFFER : ai->kind == NR_ARG_INT ? NR_IA_INT : NR_IA_FLOAT;
        ia[i].data = args[i].data;
        ia[i].bytes = args[i].bytes;
        ia[i].name = ai->name;
        ia[i].i = args[i].i;
        ia[i].f = args[i].f;
    }
    /* Diagnostics refer to the kernel's own sources; render them with those. */
    NrDiags d;
    nr_diags_init(&d, &a, &k->mod->sources);
    uint32_t g[3] = {grid[0], grid[1], grid[2]};
    NrInterpOptions io = {NULL, 0};
    bool ok = nr_interp_launch(k->fn, g, ia, nargs, &io, &d);
    ctx_take_diags(ctx, &d);
    nr_arena_free(&a);
    return ok ? NR_OK : NR_ERR_LAUNCH;
}
