/* api.c - the public C API (include/nereid.h) over the compiler phases:
 *
 *   source --parse--> AST --lower--> block IR --block pipeline--> kernel
 *                                                     `--> interpreter launch
 *
 * A context holds the diagnostics of its last call; a kernel owns the arena
 * of its compilation (module, IR text, argument table). */
#include "nereid.h"

#include "aot.h"
#include "ast.h"
#include "cache.h"
#include "cuda_rt.h"
#include "fp.h"
#include "gpu.h"
#include "interp.h"
#include "ir.h"
#include "passes.h"
#include "sema.h"
#include "tensor_map.h"
#include "util.h"

#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_MAX_DEVICES 16

struct NrContext {
    NrArena arena;              /* diagnostics of the last call; reset by each call */
    NrDiagnostic *diags;
    int ndiags;
    const char *error_text;
    NrCuda *cuda[NR_MAX_DEVICES]; /* driver handles for launches, opened on first use */
};

/* The tensor maps of a repeated launch: the last map encoded for each,
 * reused while its descriptor's base, sizes and strides stay the same.  An
 * entry is shared by every thread that launches the kernel: the lock guards
 * slot[] and is only ever tried, never waited for (a thread that finds it
 * taken encodes its maps itself). */
typedef struct NrTmapSlot {
    bool valid;
    uint64_t key[NR_TENSOR_MAP_KEY_WORDS];
    uint64_t map[16];              /* the CUtensorMap's bytes (copied to aligned storage to launch) */
} NrTmapSlot;

typedef struct NrTmapCache {
    pthread_mutex_t lock;
    NrCuTensorMapEncodeTiled encode;
    int nargs;                     /* runtime arguments; the maps' parameters follow them */
    int ntmaps;
    NrTensorMapInfo info[NR_MAX_TMAPS];
    NrTmapSlot slot[NR_MAX_TMAPS];
} NrTmapCache;

/* What a repeated launch needs (nr_kernel_gpu_entry). */
struct NrGpuEntry {
    const NrCuDriver *drv;
    NrCuContext cuctx;
    NrCuFunction fn;
    unsigned block[3];
    unsigned shared_bytes;
    unsigned max_grid[3];
    NrTmapCache *tmaps;            /* NULL when the kernel takes no tensor map */
};

/* A GPU kernel loaded on one device. */
typedef struct NrLoaded {
    NrCuda *cu;                 /* the kernel's own handle: loads and unloads under the kernel's lock */
    NrCudaModule *mod;
    NrCudaFunction *fn;
    NrGpuEntry entry;           /* set by nr_kernel_gpu_entry (entry.fn non-NULL) */
} NrLoaded;

struct NrKernel {
    NrArena arena;              /* everything below lives here */
    NrModule *mod;
    NrFunc *fn;
    const char *name;
    const char *ir_text;        /* printed on first request (nr_kernel_ir), under lock */
    NrArgInfo *args;
    int nargs;
    /* GPU kernels */
    bool gpu;
    int sm;
    bool sm_a;
    const char *ptx;
    NrPtxInfo pinfo;
    pthread_mutex_t lock;       /* guards loaded[] and ir_text */
    NrLoaded loaded[NR_MAX_DEVICES];
};

void nr_options_default(NrOptions *o) {
    memset(o, 0, sizeof *o);
    o->num_warps = 4;
    o->num_stages = 3;
    o->debug = 1;
    o->fp_fusion = 1;
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
    for (int i = 0; i < NR_MAX_DEVICES; i++) nr_cuda_close(ctx->cuda[i]);
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
        ai->param_index = f->params[i].index;
    }
}

/* "sm_80", "sm_90a", ... */
static bool parse_arch(const char *s, int *sm, bool *sm_a) {
    if (strncmp(s, "sm_", 3) != 0) return false;
    char *end;
    long v = strtol(s + 3, &end, 10);
    *sm_a = *end == 'a';
    if (*sm_a) end++;
    if (*end || v < 80 || v > 120) return false;
    if (*sm_a && v != 90) return false;
    *sm = (int)v;
    return true;
}

static bool is_block_pass(const char *name) {
    const NrPassInfo *p = nr_pass_find(name);
    return p && (p->run == nr_pass_inline || p->run == nr_pass_canonicalize || p->run == nr_pass_cse ||
                 p->run == nr_pass_licm || p->run == nr_pass_dce);
}

NrStatus nr_compile(NrContext *ctx, const char *src, size_t len, const char *filename, const char *kernel,
                    const char *signature, const NrOptions *opts, NrKernel **out) {
    if (!ctx || !out || !kernel || !signature || (!src && len)) return NR_ERR_INVALID;
    *out = NULL;
    ctx_reset(ctx);
    NrOptions o;
    if (opts) o = *opts;
    else nr_options_default(&o);

    int sm = 0;
    bool sm_a = false;
    if (o.arch && *o.arch && !parse_arch(o.arch, &sm, &sm_a)) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "unknown target '%s' (expected sm_80, sm_86, sm_89, sm_90 or sm_90a)",
                                  o.arch));
        return NR_ERR_INVALID;
    }
    if (o.num_warps < 1 || o.num_warps > 16 || (o.num_warps & (o.num_warps - 1))) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "num_warps must be 1, 2, 4, 8 or 16, got %d", o.num_warps));
        return NR_ERR_INVALID;
    }
    if (o.maxnreg < 0 || o.maxnreg > 255) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "maxnreg must be from 0 (no limit) to 255, got %d", o.maxnreg));
        return NR_ERR_INVALID;
    }
    NrKernel *k = calloc(1, sizeof *k);
    if (!k) return NR_ERR_INTERNAL;
    pthread_mutex_init(&k->lock, NULL);
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
    bool stop_in_block = o.stop_after && (strcmp(o.stop_after, "lower") == 0 || is_block_pass(o.stop_after));
    if (!(o.stop_after && strcmp(o.stop_after, "lower") == 0)) {
        NrPipelineOptions po = {o.stop_after, o.verify_each != 0, NULL};
        if (!nr_run_block_pipeline(k->mod, &po, &d) || nr_has_errors(&d)) goto fail;
    }
    if (sm && !stop_in_block) {
        NrGpuOptions go = {o.num_warps, o.num_stages, sm, sm_a, o.stop_after, o.verify_each != 0, NULL, !o.fp_fusion,
                            o.no_tma != 0, o.maxnreg};
        if (!nr_run_gpu_pipeline(k->mod, &go, &d) || nr_has_errors(&d)) goto fail;
        k->gpu = true;
        k->sm = sm;
        k->sm_a = sm_a;
        if (!o.stop_after || strcmp(o.stop_after, "ptx") == 0) {
            k->ptx = nr_emit_ptx_info(k->fn, &go, &d, &k->pinfo);
            if (!k->ptx || nr_has_errors(&d)) goto fail;
        }
    }
    k->name = nr_strdup(a, kernel);
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
    for (int i = 0; i < NR_MAX_DEVICES; i++) {
        if (k->loaded[i].entry.tmaps) pthread_mutex_destroy(&k->loaded[i].entry.tmaps->lock);
        if (!k->loaded[i].cu) continue;
        nr_cuda_module_unload(k->loaded[i].cu, k->loaded[i].mod);
        nr_cuda_close(k->loaded[i].cu);
    }
    pthread_mutex_destroy(&k->lock);
    nr_arena_free(&k->arena);
    free(k);
}

const char *nr_kernel_name(const NrKernel *k) { return k ? k->name : ""; }
const char *nr_kernel_ptx(const NrKernel *k) { return k && k->ptx ? k->ptx : ""; }
int nr_kernel_is_gpu(const NrKernel *k) { return k && k->gpu; }
int nr_kernel_num_warps(const NrKernel *k) { return k && k->gpu ? k->pinfo.num_warps : 0; }
int nr_kernel_shared_bytes(const NrKernel *k) { return k && k->gpu ? (int)k->pinfo.shared_bytes : 0; }
/* The IR text costs as much as a good part of the compilation and most
 * callers never ask for it: it is printed when first asked for.  Nothing
 * changes the module after nr_compile, so the text is the final IR. */
const char *nr_kernel_ir(const NrKernel *k) {
    if (!k) return "";
    NrKernel *mk = (NrKernel *)k; /* allocated mutable by nr_compile */
    pthread_mutex_lock(&mk->lock);
    if (!mk->ir_text) mk->ir_text = nr_module_to_string(mk->mod, &(NrPrintOptions){false});
    pthread_mutex_unlock(&mk->lock);
    return mk->ir_text;
}
int nr_kernel_num_args(const NrKernel *k) { return k ? k->nargs : 0; }

int nr_kernel_arg_info(const NrKernel *k, int i, NrArgInfo *out) {
    if (!k || !out || i < 0 || i >= k->nargs) return -1;
    *out = k->args[i];
    return 0;
}

int nr_kernel_num_tensor_maps(const NrKernel *k) { return k && k->gpu && k->ptx ? k->pinfo.ntmaps : 0; }

int nr_kernel_tensor_map_info(const NrKernel *k, int i, NrTensorMapInfo *out) {
    if (!out || i < 0 || i >= nr_kernel_num_tensor_maps(k)) return -1;
    const NrTmapUse *u = &k->pinfo.tmaps[i];
    memset(out, 0, sizeof *out);
    out->base_arg = u->arg;
    out->rank = u->rank;
    out->dtype = nr_dtype_info[u->dtype].sig;
    out->elem_bytes = nr_dtype_info[u->dtype].bytes;
    for (int d = 0; d < u->rank && d < 5; d++) out->box[d] = u->box[d];
    out->swizzle = u->swizzle;
    out->nan_fill = u->nan_fill;
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

/* --- GPU launches ------------------------------------------------------------------------------------ */
/* The context's driver handle for `device`, opened on first use. */
static NrCuda *ctx_cuda(NrContext *ctx, int device) {
    if (device < 0 || device >= NR_MAX_DEVICES) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "CUDA device %d is out of range", device));
        return NULL;
    }
    if (!ctx->cuda[device]) {
        NrCudaConfig cfg;
        nr_cuda_config_default(&cfg);
        cfg.device = device;
        char err[512];
        if (nr_cuda_open(&cfg, &ctx->cuda[device], err, sizeof err) != NR_CUDA_OK) {
            ctx_error(ctx, err);
            return NULL;
        }
    }
    return ctx->cuda[device];
}

/* The cubin of k's PTX from ptxas (found as docs/aot.md says), when there is
 * one and its code runs on a device of compute capability dev_sm (the same
 * major version); else NULL, and the driver compiles the PTX.  The driver's
 * PTX compiler, run through cuLinkAddData for the cubin it returns, compiles
 * as for separate linking, which allocates registers less tightly (layer
 * norm forward at 1024 columns: 64 registers against ptxas's 44), and a
 * kernel's occupancy depends on them.  NEREID_PTXAS=0 skips ptxas;
 * NEREID_PTXAS=PATH names it. */
static const void *whole_program_cubin(NrArena *a, const NrKernel *k, int dev_sm, size_t *size) {
    const char *env = getenv("NEREID_PTXAS");
    if ((env && strcmp(env, "0") == 0) || dev_sm / 10 != k->sm / 10 || (k->sm_a && dev_sm != k->sm)) return NULL;
    const char *ptxas = env && *env ? env : nr_tool_find(a, "ptxas");
    if (!ptxas) return NULL;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%s", k->sm, k->sm_a ? "a" : "");
    const void *bin = NULL;
    if (nr_ptxas_assemble(a, ptxas, k->ptx, arch, &bin, size, NULL) != NULL) return NULL;
    return bin;
}

/* Load k on `device` through the disk cache of cubins; the caller holds k->lock. */
static NrLoaded *kernel_load(NrContext *ctx, NrKernel *k, int device) {
    NrLoaded *ld = &k->loaded[device];
    if (ld->fn) return ld;
    if (!ld->cu) {
        NrCudaConfig cfg;
        nr_cuda_config_default(&cfg);
        cfg.device = device;
        char err[512];
        if (nr_cuda_open(&cfg, &ld->cu, err, sizeof err) != NR_CUDA_OK) {
            ctx_error(ctx, err);
            return NULL;
        }
    }
    const NrCudaDeviceInfo *di = nr_cuda_device_info(ld->cu);
    int dev_sm = di->cc_major * 10 + di->cc_minor;
    if (dev_sm < k->sm) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' was compiled for sm_%d%s but device %d (%s) is sm_%d",
                                  k->name, k->sm, k->sm_a ? "a" : "", device, di->name, dev_sm));
        return NULL;
    }
    char cc[32], drv[32];
    snprintf(cc, sizeof cc, "sm_%d", dev_sm);
    snprintf(drv, sizeof drv, "%d", di->driver_version);
    /* (a register limit is the PTX's .maxnreg, so the PTX text covers it) */
    NrCachePart parts[5] = {NR_CACHE_STR("nereid-cubin"), NR_CACHE_STR(NEREID_VERSION), NR_CACHE_STR(k->ptx),
                            NR_CACHE_STR(cc), NR_CACHE_STR(drv)};
    NrCacheKey key = nr_cache_key(parts, 5);
    NrCache *cache = NULL;
    nr_cache_open(NULL, &cache);
    NrArena tmp;
    nr_arena_init(&tmp);
    const void *bin = NULL;
    size_t binlen = 0;
    NrCudaStatus st = NR_CUDA_ERR_JIT;
    if (cache && nr_cache_get(cache, &key, &tmp, &bin, &binlen) == 1)
        st = nr_cuda_module_load_cubin(ld->cu, bin, binlen, &ld->mod);
    bool put = false;
    if (st != NR_CUDA_OK && (bin = whole_program_cubin(&tmp, k, dev_sm, &binlen)) != NULL) {
        st = nr_cuda_module_load_cubin(ld->cu, bin, binlen, &ld->mod);
        put = st == NR_CUDA_OK;
    }
    if (st != NR_CUDA_OK) {
        st = nr_cuda_module_load_ptx(ld->cu, k->ptx, strlen(k->ptx), NULL, &ld->mod);
        bin = st == NR_CUDA_OK ? nr_cuda_module_cubin(ld->mod, &binlen) : NULL;
        put = bin && binlen;
    }
    if (put && cache) nr_cache_put(cache, &key, bin, binlen);
    nr_arena_free(&tmp);
    nr_cache_close(cache);
    if (st == NR_CUDA_OK) st = nr_cuda_get_function(ld->cu, ld->mod, k->fn->name, &ld->fn);
    if (st == NR_CUDA_OK && k->pinfo.shared_bytes > 0)
        st = nr_cuda_function_set_dynamic_shared(ld->cu, ld->fn, (size_t)k->pinfo.shared_bytes);
    if (st != NR_CUDA_OK) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s': %s", k->name, nr_cuda_error(ld->cu)));
        nr_cuda_module_unload(ld->cu, ld->mod);
        ld->mod = NULL;
        ld->fn = NULL;
        return NULL;
    }
    return ld;
}

NrStatus nr_kernel_gpu_info(NrContext *ctx, const NrKernel *kc, int device, NrGpuKernelInfo *out) {
    if (!ctx || !kc || !out) return NR_ERR_INVALID;
    ctx_reset(ctx);
    NrKernel *k = (NrKernel *)kc; /* loading is the only mutation, under the lock */
    if (!k->gpu || !k->ptx) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' was not compiled for a GPU", k->name));
        return NR_ERR_INVALID;
    }
    if (device < 0 || device >= NR_MAX_DEVICES) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "CUDA device %d is out of range", device));
        return NR_ERR_INVALID;
    }
    pthread_mutex_lock(&k->lock);
    NrLoaded *ld = kernel_load(ctx, k, device);
    if (ld) {
        const NrCudaFuncInfo *fi = nr_cuda_function_info(ld->fn);
        const NrCudaDeviceInfo *di = nr_cuda_device_info(ld->cu);
        memset(out, 0, sizeof *out);
        out->num_regs = fi->num_regs;
        out->spill_bytes = fi->local_bytes;
        out->static_shared_bytes = fi->static_shared_bytes;
        out->dynamic_shared_bytes = (int)k->pinfo.shared_bytes;
        out->max_threads_per_block = fi->max_threads_per_block;
        out->threads = k->pinfo.threads;
        snprintf(out->device_name, sizeof out->device_name, "%s", di->name);
        out->sm = di->cc_major * 10 + di->cc_minor;
        out->sm_count = di->sm_count;
        out->max_shared_optin = di->max_shared_per_block_optin;
    }
    pthread_mutex_unlock(&k->lock);
    return ld ? NR_OK : NR_ERR_LAUNCH;
}

/* One kernel parameter's bytes, at its PTX size (see the emitter's param types). */
typedef union NrParamSlot {
    uint64_t u64;
    int64_t i64;
    uint32_t u32;
    uint16_t u16;
    uint8_t u8;
    float f32;
    double f64;
} NrParamSlot;

static void pack_scalar(NrParamSlot *slot, NrDtype dt, const NrArg *a) {
    memset(slot, 0, sizeof *slot);
    switch (dt) {
    case NR_DT_I1: slot->u8 = a->i != 0; break;
    case NR_DT_I8:
    case NR_DT_U8: slot->u8 = (uint8_t)a->i; break;
    case NR_DT_I16:
    case NR_DT_U16: slot->u16 = (uint16_t)a->i; break;
    case NR_DT_I32:
    case NR_DT_U32: slot->u32 = (uint32_t)a->i; break;
    case NR_DT_I64:
    case NR_DT_U64: slot->i64 = a->i; break;
    case NR_DT_F8E4NV: slot->u8 = nr_f32_to_f8e4nv((float)a->f); break;
    case NR_DT_F8E5: slot->u8 = nr_f32_to_f8e5((float)a->f); break;
    case NR_DT_F16: slot->u16 = nr_f64_to_f16(a->f); break;
    case NR_DT_BF16: slot->u16 = nr_f64_to_bf16(a->f); break;
    case NR_DT_F32: slot->f32 = (float)a->f; break;
    case NR_DT_F64: slot->f64 = a->f; break;
    default: break;
    }
}

/* The name of the host tensor descriptor of tensor map `info` of k. */
static const char *tmap_desc_name(const NrKernel *k, const NrTensorMapInfo *info, char *buf, size_t size) {
    const char *base = info->base_arg >= 0 && info->base_arg < k->nargs ? k->args[info->base_arg].name : "?";
    return nr_tensor_map_desc_name(base, buf, size);
}

/* Encode k's tensor maps into maps[] from the packed runtime arguments
 * params[0..k->nargs), through cu: all are checked before any is encoded;
 * on failure the context says why. */
static NrStatus encode_tmaps(NrContext *ctx, const NrKernel *k, NrCuda *cu, void **params, NrCuTensorMap *maps) {
    int n = k->pinfo.ntmaps;
    NR_ASSERT(n <= NR_MAX_TMAPS);
    NrTensorMapArgs ta[NR_MAX_TMAPS];
    char names[NR_MAX_TMAPS][128];
    for (int j = 0; j < n; j++) {
        NrTensorMapInfo info;
        char why[512];
        if (nr_kernel_tensor_map_info(k, j, &info) != 0) NR_ICE("tensor map %d of kernel '%s'", j, k->name);
        tmap_desc_name(k, &info, names[j], sizeof names[j]);
        if (!nr_tensor_map_from_params(&info, names[j], params, k->nargs, &ta[j], why, sizeof why)) {
            ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s': %s", k->name, why));
            return NR_ERR_INVALID;
        }
    }
    for (int j = 0; j < n; j++)
        if (nr_cuda_tensor_map_tiled(cu, &ta[j], &maps[j]) != NR_CUDA_OK) {
            ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s': tensor descriptor '%s': %s", k->name, names[j],
                                      nr_cuda_error(cu)));
            return NR_ERR_LAUNCH;
        }
    return NR_OK;
}

NrStatus nr_launch_gpu(NrContext *ctx, const NrKernel *kc, const NrLaunchConfig *cfg, const NrArg *args, int nargs) {
    if (!ctx || !kc || !cfg || (nargs && !args)) return NR_ERR_INVALID;
    ctx_reset(ctx);
    NrKernel *k = (NrKernel *)kc;
    if (!k->gpu || !k->ptx) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' was not compiled for a GPU", k->name));
        return NR_ERR_INVALID;
    }
    if (nargs != k->nargs) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' takes %d runtime arguments, got %d", k->name,
                                  k->nargs, nargs));
        return NR_ERR_INVALID;
    }
    if (cfg->device < 0 || cfg->device >= NR_MAX_DEVICES) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "CUDA device %d is out of range", cfg->device));
        return NR_ERR_INVALID;
    }
    NrCuda *cu = ctx_cuda(ctx, cfg->device);
    if (!cu) return NR_ERR_LAUNCH;
    pthread_mutex_lock(&k->lock);
    NrLoaded *ld = kernel_load(ctx, k, cfg->device);
    pthread_mutex_unlock(&k->lock);
    if (!ld) return NR_ERR_LAUNCH;

    /* The runtime arguments, then the tensor maps (encoded from them). */
    int ntmaps = k->pinfo.ntmaps;
    NrParamSlot *slots = nr_alloc(&ctx->arena, sizeof(NrParamSlot) * (size_t)(nargs ? nargs : 1));
    void **params = nr_alloc(&ctx->arena, sizeof(void *) * (size_t)(nargs + ntmaps ? nargs + ntmaps : 1));
    NrBlock *body = nr_block(k->fn, k->fn->body);
    for (int i = 0; i < nargs; i++) {
        const NrArgInfo *ai = &k->args[i];
        if (args[i].kind != ai->kind) {
            static const char *const kinds[] = {"a device buffer", "an integer", "a float"};
            ctx_error(ctx, nr_sprintf(&ctx->arena, "argument %d ('%s') of kernel '%s' must be %s", i, ai->name,
                                      k->name, kinds[ai->kind]));
            return NR_ERR_INVALID;
        }
        NrTypeId t = nr_val_type(k->fn, body->args[i]);
        if (ai->kind == NR_ARG_BUFFER) slots[i].u64 = (uint64_t)(uintptr_t)args[i].data;
        else pack_scalar(&slots[i], nr_type_dtype(k->mod, t), &args[i]);
        params[i] = &slots[i];
    }
    NrCuTensorMap maps[NR_MAX_TMAPS]; /* 64-byte aligned, as the driver needs */
    bool empty = cfg->grid[0] == 0 || cfg->grid[1] == 0 || cfg->grid[2] == 0; /* launches nothing */
    if (ntmaps && !empty) {
        NrStatus st = encode_tmaps(ctx, k, cu, params, maps);
        if (st != NR_OK) return st;
    }
    for (int j = 0; j < ntmaps; j++) params[nargs + j] = &maps[j];
    NrCudaLaunchConfig lc;
    memset(&lc, 0, sizeof lc);
    for (int i = 0; i < 3; i++) lc.grid[i] = cfg->grid[i];
    lc.block[0] = (unsigned)k->pinfo.threads;
    lc.block[1] = lc.block[2] = 1;
    lc.shared_bytes = (unsigned)k->pinfo.shared_bytes;
    lc.stream = (NrCuStream)cfg->stream;
    lc.sync = cfg->sync;
    if (nr_cuda_launch(cu, ld->fn, &lc, params) != NR_CUDA_OK) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s': %s", k->name, nr_cuda_error(cu)));
        return NR_ERR_LAUNCH;
    }
    return NR_OK;
}

/* --- repeated launches ----------------------------------------------------------------------------- */
enum { MAX_ENTRY_PARAMS = 512 }; /* runtime arguments and tensor maps of a launch with tensor maps */

/* Set up e's tensor maps (if k has any); the caller holds k->lock. */
static NrStatus entry_tmaps(NrContext *ctx, NrKernel *k, NrLoaded *ld, NrGpuEntry *e) {
    int n = k->pinfo.ntmaps;
    if (n == 0 || e->tmaps) return NR_OK;
    NR_ASSERT(n <= NR_MAX_TMAPS);
    NrCuTensorMapEncodeTiled encode = nr_cuda_tensor_map_encoder(ld->cu);
    if (!encode) {
        ctx_error(ctx, nr_sprintf(&ctx->arena,
                                  "kernel '%s' loads host tensor descriptors with TMA, but the NVIDIA driver lacks "
                                  "cuTensorMapEncodeTiled (CUDA 12 or newer); compile it with no_tma",
                                  k->name));
        return NR_ERR_LAUNCH;
    }
    if (k->nargs + n > MAX_ENTRY_PARAMS) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' has %d runtime arguments and %d tensor maps, over the %d "
                                               "parameters of a repeated launch",
                                  k->name, k->nargs, n, MAX_ENTRY_PARAMS));
        return NR_ERR_LAUNCH;
    }
    NrTmapCache *c = nr_alloc(&k->arena, sizeof *c); /* zeroed: no slot valid */
    pthread_mutex_init(&c->lock, NULL);
    c->encode = encode;
    c->nargs = k->nargs;
    c->ntmaps = n;
    for (int j = 0; j < n; j++) {
        const NrTensorMapInfo *t = &c->info[j];
        /* the launch reads the descriptor's arguments unchecked: they must be the kernel's */
        if (nr_kernel_tensor_map_info(k, j, &c->info[j]) != 0 || t->rank < 1 || t->rank > 5 || t->base_arg < 0 ||
            t->base_arg + 2 * t->rank >= k->nargs)
            NR_ICE("tensor map %d of kernel '%s'", j, k->name);
    }
    e->tmaps = c;
    return NR_OK;
}

NrStatus nr_kernel_gpu_entry(NrContext *ctx, const NrKernel *kc, int device, const NrGpuEntry **out) {
    if (!ctx || !kc || !out) return NR_ERR_INVALID;
    *out = NULL;
    ctx_reset(ctx);
    NrKernel *k = (NrKernel *)kc; /* loading is the only mutation, under the lock */
    if (!k->gpu || !k->ptx) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' was not compiled for a GPU", k->name));
        return NR_ERR_INVALID;
    }
    if (device < 0 || device >= NR_MAX_DEVICES) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "CUDA device %d is out of range", device));
        return NR_ERR_INVALID;
    }
    NrStatus st = NR_OK;
    pthread_mutex_lock(&k->lock);
    NrLoaded *ld = kernel_load(ctx, k, device);
    if (!ld) {
        st = NR_ERR_LAUNCH;
    } else if (!ld->entry.fn) {
        const NrCudaFuncInfo *fi = nr_cuda_function_info(ld->fn);
        const NrCudaDeviceInfo *di = nr_cuda_device_info(ld->cu);
        if (fi->max_threads_per_block < k->pinfo.threads) {
            ctx_error(ctx, nr_sprintf(&ctx->arena,
                                      "kernel '%s' uses %d registers per thread: %d threads per program need %d "
                                      "registers, over the %d per block of device %d (%s); use fewer warps",
                                      k->name, fi->num_regs, k->pinfo.threads, fi->num_regs * k->pinfo.threads,
                                      di->regs_per_block, device, di->name));
            st = NR_ERR_LAUNCH;
        } else {
            NrGpuEntry *e = &ld->entry;
            e->drv = nr_cuda_driver(ld->cu);
            e->cuctx = nr_cuda_context(ld->cu);
            e->block[0] = (unsigned)k->pinfo.threads;
            e->block[1] = e->block[2] = 1;
            e->shared_bytes = (unsigned)k->pinfo.shared_bytes;
            for (int i = 0; i < 3; i++) e->max_grid[i] = (unsigned)di->max_grid_dim[i];
            st = entry_tmaps(ctx, k, ld, e);
            if (st == NR_OK) e->fn = nr_cuda_function_handle(ld->fn);
        }
    }
    pthread_mutex_unlock(&k->lock);
    if (st == NR_OK) *out = &ld->entry;
    return st;
}

/* Launch e's kernel with params and its tensor maps after them: each map
 * the one cached for its slot when its descriptor's base, sizes and strides
 * are those of that map, else encoded (and cached).  Arguments TMA cannot
 * take give CUDA_ERROR_INVALID_VALUE (nr_launch_gpu says why).
 * Precondition: e's context is current. */
static NrCuResult entry_launch_tmaps(const NrGpuEntry *e, const unsigned grid[3], NrCuStream stream, void **params) {
    NrTmapCache *c = e->tmaps; /* mutable: the entry is const to its callers alone */
    int n = c->ntmaps;
    NrCuTensorMap maps[NR_MAX_TMAPS];
    uint64_t keys[NR_MAX_TMAPS][NR_TENSOR_MAP_KEY_WORDS];
    bool hit[NR_MAX_TMAPS] = {false}, missed = false;
    if (!params) return NR_CU_ERROR_INVALID_VALUE;
    for (int j = 0; j < n; j++)
        if (!nr_tensor_map_key(&c->info[j], params, keys[j])) return NR_CU_ERROR_INVALID_VALUE;
    if (pthread_mutex_trylock(&c->lock) == 0) {
        for (int j = 0; j < n; j++)
            if (c->slot[j].valid && memcmp(c->slot[j].key, keys[j], sizeof keys[j]) == 0) {
                memcpy(&maps[j], c->slot[j].map, sizeof maps[j]);
                hit[j] = true;
            }
        pthread_mutex_unlock(&c->lock);
    }
    NrTensorMapArgs ta[NR_MAX_TMAPS];
    for (int j = 0; j < n; j++)
        if (!hit[j] && !nr_tensor_map_from_params(&c->info[j], NULL, params, c->nargs, &ta[j], NULL, 0))
            return NR_CU_ERROR_INVALID_VALUE;
    for (int j = 0; j < n; j++) {
        if (hit[j]) continue;
        NrCuResult r = nr_tensor_map_encode_with(c->encode, &ta[j], &maps[j]);
        if (r != NR_CU_SUCCESS) return r;
        missed = true;
    }
    if (missed && pthread_mutex_trylock(&c->lock) == 0) {
        for (int j = 0; j < n; j++)
            if (!hit[j]) {
                c->slot[j].valid = true;
                memcpy(c->slot[j].key, keys[j], sizeof keys[j]);
                memcpy(c->slot[j].map, &maps[j], sizeof c->slot[j].map);
            }
        pthread_mutex_unlock(&c->lock);
    }
    void *all[MAX_ENTRY_PARAMS];
    memcpy(all, params, sizeof(void *) * (size_t)c->nargs);
    for (int j = 0; j < n; j++) all[c->nargs + j] = &maps[j];
    return e->drv->LaunchKernel(e->fn, grid[0], grid[1], grid[2], e->block[0], e->block[1], e->block[2],
                                e->shared_bytes, stream, all, NULL);
}

int nr_gpu_entry_launch(const NrGpuEntry *e, const unsigned grid[3], void *stream, void **params) {
    NrCuContext cur = NULL;
    bool pushed = false;
    NrCuResult r = e->drv->CtxGetCurrent(&cur);
    if (r != NR_CU_SUCCESS) return r;
    if (cur != e->cuctx) {
        r = e->drv->CtxPushCurrent(e->cuctx);
        if (r != NR_CU_SUCCESS) return r;
        pushed = true;
    }
    if (e->tmaps && grid[0] && grid[1] && grid[2])
        r = entry_launch_tmaps(e, grid, (NrCuStream)stream, params);
    else
        r = e->drv->LaunchKernel(e->fn, grid[0], grid[1], grid[2], e->block[0], e->block[1], e->block[2],
                                 e->shared_bytes, (NrCuStream)stream, params, NULL);
    if (pushed) {
        NrCuContext popped;
        e->drv->CtxPopCurrent(&popped);
    }
    return r;
}

void nr_gpu_entry_max_grid(const NrGpuEntry *e, unsigned out[3]) {
    for (int i = 0; i < 3; i++) out[i] = e->max_grid[i];
}

/* --- the device's target, the disk cache, ptxas ---------------------------------------------------- */
NrStatus nr_device_arch(NrContext *ctx, int device, char *buf, size_t size) {
    if (!ctx || !buf || size == 0) return NR_ERR_INVALID;
    ctx_reset(ctx);
    const char *env = getenv("NEREID_ARCH");
    int sm = 0;
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return NR_OK;
    }
    NrCuda *cu = ctx_cuda(ctx, device);
    if (!cu) return NR_ERR_LAUNCH;
    const NrCudaDeviceInfo *di = nr_cuda_device_info(cu);
    int cc = di->cc_major * 10 + di->cc_minor;
    /* As the Python package chooses: the device's own target where Nereid has
     * one, sm_80 for other Ampere-class devices, sm_90 PTX (compiled by the
     * driver) for newer ones. */
    if (cc == 80 || cc == 86 || cc == 89 || cc == 90) sm = cc;
    else if (cc >= 90) sm = 90;
    else if (cc >= 80) sm = 80;
    else {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "device %d (%s) has compute capability %d.%d; Nereid needs 8.0 or newer",
                                  device, di->name, di->cc_major, di->cc_minor));
        return NR_ERR_INVALID;
    }
    if ((size_t)snprintf(buf, size, "sm_%d", sm) >= size) return NR_ERR_INVALID;
    return NR_OK;
}

int nr_cache_directory(char *buf, size_t size) {
    if (!buf || size == 0) return -1;
    NrCache *c = NULL;
    NrCacheMode mode = nr_cache_open(NULL, &c);
    int rc = mode == NR_CACHE_DISABLED ? -1 : 0;
    if (rc == 0 && (size_t)snprintf(buf, size, "%s", nr_cache_dir(c)) >= size) rc = -1;
    if (rc != 0) buf[0] = 0;
    nr_cache_close(c);
    return rc;
}

NrStatus nr_kernel_assemble(NrContext *ctx, const NrKernel *k, const char *ptxas, void **cubin, size_t *size,
                            NrAsmInfo *info) {
    if (!ctx || !k) return NR_ERR_INVALID;
    ctx_reset(ctx);
    if (cubin) *cubin = NULL;
    if (size) *size = 0;
    if (!k->gpu || !k->ptx) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s' was not compiled for a GPU", k->name));
        return NR_ERR_INVALID;
    }
    NrArena a;
    nr_arena_init(&a);
    if (!ptxas) ptxas = nr_tool_find(&a, "ptxas");
    if (!ptxas || access(ptxas, X_OK) != 0) {
        ctx_error(ctx, ptxas ? nr_sprintf(&ctx->arena, "ptxas '%s' cannot be run", ptxas)
                             : "ptxas not found (looked " NR_TOOL_SEARCH_TEXT "); install the CUDA toolkit, or set "
                               "CUDA_HOME");
        nr_arena_free(&a);
        return NR_ERR_UNAVAILABLE;
    }
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%s", k->sm, k->sm_a ? "a" : "");
    const void *bin;
    size_t n;
    NrAsmInfo ai;
    memset(&ai, 0, sizeof ai);
    const char *err = nr_ptxas_assemble(&a, ptxas, k->ptx, arch, &bin, &n, &ai);
    NrStatus st = NR_OK;
    if (err) {
        ctx_error(ctx, nr_sprintf(&ctx->arena, "kernel '%s': %s", k->name, err));
        st = NR_ERR_INTERNAL;
    } else {
        ai.threads = k->pinfo.threads;
        ai.dynamic_shared_bytes = (int)k->pinfo.shared_bytes;
        if (info) *info = ai;
        if (size) *size = n;
        if (cubin) {
            *cubin = malloc(n);
            if (!*cubin) nr_fatal_oom();
            memcpy(*cubin, bin, n);
        }
    }
    nr_arena_free(&a);
    return st;
}
