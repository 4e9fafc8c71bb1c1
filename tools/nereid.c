/* nereid - command-line driver.
 *
 *   nereid check FILE                         parse FILE; report errors in its @jit functions
 *   nereid ir FILE -k KERNEL -s SIG [--after PASS] [--stage block|gpu] [--arch SM] [--num-warps N]
 *             [--num-stages N] [--verify-each] [--no-tma]
 *                                             print the block IR (or GPU IR) of one specialized kernel
 *   nereid ptx FILE -k KERNEL -s SIG [--arch sm_90] [--num-warps N] [--num-stages N] [--no-fp-fusion]
 *             [--no-tma]
 *                                             print the PTX of one specialized kernel
 *   nereid sass FILE -k KERNEL -s SIG [--arch sm_90a] [--num-warps N] [--num-stages N] [--ptxas PATH]
 *             [--no-fp-fusion] [--no-tma]
 *                                             print the SASS of one specialized kernel (ptxas, cuobjdump)
 *   nereid info FILE -k KERNEL -s SIG [--arch SM] [--gpu GPU|all] [--from auto|driver|ptxas] [--device N]
 *             [--num-warps N] [--num-stages N] [--ptxas PATH] [--no-fp-fusion] [--no-tma]
 *                                             registers, spills, shared memory, occupancy
 *   nereid aot FILE -k KERNEL -s SIG [-s SIG]... [--arch sm_80,sm_90a] [-g GRID] [-c CONFIG]... [--key ARGS]
 *             [--ptx SM|none] [--ptx-only] [--num-warps N] [--num-stages N] [--ptxas PATH] [-v] -o NAME
 *                                             write NAME.h and NAME.c: the kernel compiled ahead of time
 *   nereid opt FILE.ir [--pass NAME]... [--loc]
 *                                             parse IR text, run passes in order, print
 *   nereid passes                             list the passes
 *   nereid version
 *
 * User errors print as file:line:col diagnostics and exit with status 1;
 * usage errors exit with status 2. */
#include "nereid.h"

#include "aot.h"
#include "ir.h"
#include "passes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fputs("usage: nereid check FILE\n"
          "       nereid ir FILE -k KERNEL -s SIGNATURE [--after PASS] [--stage block|gpu] [--arch SM]\n"
          "                 [--num-warps N] [--num-stages N] [--verify-each] [--no-tma]\n"
          "       nereid ptx FILE -k KERNEL -s SIGNATURE [--arch sm_80|sm_90|sm_90a] [--num-warps N] [--num-stages N]\n"
          "                 [--no-fp-fusion] [--no-tma]\n"
          "       nereid sass FILE -k KERNEL -s SIGNATURE [--arch SM] [--num-warps N] [--num-stages N] [--ptxas PATH]\n"
          "                 [--no-fp-fusion] [--no-tma]\n"
          "       nereid info FILE -k KERNEL -s SIGNATURE [--arch SM] [--gpu GPU|all] [--from auto|driver|ptxas]\n"
          "                 [--device N] [--num-warps N] [--num-stages N] [--ptxas PATH] [--no-fp-fusion] [--no-tma]\n"
          "       nereid aot FILE -k KERNEL -s SIGNATURE [-s SIGNATURE]... [--arch sm_80,sm_90a] [-g GRID]\n"
          "                 [-c CONFIG]... [--key ARGS] [--ptx SM|none] [--ptx-only] [--num-warps N]\n"
          "                 [--num-stages N] [--ptxas PATH] [-v] -o NAME\n"
          "       nereid opt FILE.ir [--pass NAME]... [--loc]\n"
          "       nereid passes\n"
          "       nereid version\n"
          "\n"
          "SIGNATURE is Triton's AOT form, one entry per kernel parameter, e.g.\n"
          "  '*fp32:16, *fp32:16, *fp32:16, i32, 1024'   or   '*fp16, i32, 64, \"leaky\"'\n"
          "PASS is 'lower' (the IR as lowered, before any pass) or a pass name (nereid passes).\n"
          "GRID is up to three integer expressions over the integer arguments, e.g. 'cdiv(n, 1024)';\n"
          "CONFIG sets constexprs named in the signature, e.g. 'BLOCK=128, num_warps=8 if n > 4096'\n"
          "(docs/aot.md).  GPU is an architecture (sm_80, sm_86, sm_89, sm_90) or a GPU (A100, H100, L4...).\n"
          "--no-tma loads host tensor descriptors through pointers on sm_90a, not with TMA tensor maps.\n",
          out);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) exit(2);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb) exit(2);
        buf = nb;
    }
    if (f != stdin) fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static int print_diags(NrContext *ctx) {
    fputs(nr_error_text(ctx), stderr);
    return 1;
}

static int cmd_check(int argc, char **argv) {
    if (argc != 1) {
        usage(stderr);
        return 2;
    }
    size_t len;
    char *src = read_file(argv[0], &len);
    if (!src) {
        fprintf(stderr, "nereid: cannot read '%s'\n", argv[0]);
        return 2;
    }
    NrContext *ctx = nr_context_create();
    NrStatus st = nr_check_source(ctx, src, len, argv[0]);
    int rc = 0;
    if (st != NR_OK) rc = print_diags(ctx);
    else fputs(nr_error_text(ctx), stderr); /* warnings */
    nr_context_destroy(ctx);
    free(src);
    return rc;
}

/* ir and ptx: compile one kernel and print its IR (block or GPU) or its PTX. */
static int cmd_compile(int argc, char **argv, bool ptx) {
    const char *file = NULL, *kernel = NULL, *sig = NULL, *stage = "block";
    NrOptions o;
    nr_options_default(&o);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) kernel = argv[++i];
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) sig = argv[++i];
        else if (strcmp(argv[i], "--after") == 0 && i + 1 < argc) o.stop_after = argv[++i];
        else if (strcmp(argv[i], "--verify-each") == 0) o.verify_each = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) o.arch = argv[++i];
        else if (strcmp(argv[i], "--stage") == 0 && i + 1 < argc) stage = argv[++i];
        else if (strcmp(argv[i], "--num-warps") == 0 && i + 1 < argc) o.num_warps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--num-stages") == 0 && i + 1 < argc) o.num_stages = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-fp-fusion") == 0) o.fp_fusion = 0;
        else if (strcmp(argv[i], "--no-tma") == 0) o.no_tma = 1;
        else if (argv[i][0] != '-' && !file) file = argv[i];
        else {
            fprintf(stderr, "nereid ir: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!file || !kernel || !sig) {
        usage(stderr);
        return 2;
    }
    if (strcmp(stage, "block") != 0 && strcmp(stage, "gpu") != 0) {
        fprintf(stderr, "nereid ir: unknown stage '%s' (block or gpu)\n", stage);
        return 2;
    }
    if ((ptx || strcmp(stage, "gpu") == 0) && !o.arch) o.arch = "sm_90";
    if (o.stop_after && strcmp(o.stop_after, "lower") != 0 && !nr_pass_find(o.stop_after)) {
        fprintf(stderr, "nereid ir: unknown pass '%s' (see nereid passes)\n", o.stop_after);
        return 2;
    }
    size_t len;
    char *src = read_file(file, &len);
    if (!src) {
        fprintf(stderr, "nereid: cannot read '%s'\n", file);
        return 2;
    }
    NrContext *ctx = nr_context_create();
    NrKernel *k = NULL;
    int rc = 0;
    if (nr_compile(ctx, src, len, file, kernel, sig, &o, &k) != NR_OK) {
        rc = print_diags(ctx);
    } else {
        fputs(nr_error_text(ctx), stderr); /* notes (static_print) and warnings */
        fputs(ptx ? nr_kernel_ptx(k) : nr_kernel_ir(k), stdout);
    }
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    free(src);
    return rc;
}

/* ---- sass, info, aot ---- */

/* Options shared by the commands that compile one kernel for a GPU. */
typedef struct GpuArgs {
    const char *file, *kernel, *sig, *ptxas, *gpu, *from;
    int device;
    NrOptions o;
} GpuArgs;

/* Parse argv into a; returns 0, or 2 after printing a usage error.  `extra`
 * says whether --gpu, --from and --device are accepted. */
static int parse_gpu_args(const char *cmd, int argc, char **argv, GpuArgs *a, bool extra) {
    memset(a, 0, sizeof *a);
    nr_options_default(&a->o);
    a->from = "auto";
    for (int i = 0; i < argc; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "-k") == 0 && more) a->kernel = argv[++i];
        else if (strcmp(argv[i], "-s") == 0 && more) a->sig = argv[++i];
        else if (strcmp(argv[i], "--arch") == 0 && more) a->o.arch = argv[++i];
        else if (strcmp(argv[i], "--num-warps") == 0 && more) a->o.num_warps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--num-stages") == 0 && more) a->o.num_stages = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-fp-fusion") == 0) a->o.fp_fusion = 0;
        else if (strcmp(argv[i], "--no-tma") == 0) a->o.no_tma = 1;
        else if (strcmp(argv[i], "--ptxas") == 0 && more) a->ptxas = argv[++i];
        else if (extra && strcmp(argv[i], "--gpu") == 0 && more) a->gpu = argv[++i];
        else if (extra && strcmp(argv[i], "--from") == 0 && more) a->from = argv[++i];
        else if (extra && strcmp(argv[i], "--device") == 0 && more) a->device = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !a->file) a->file = argv[i];
        else {
            fprintf(stderr, "nereid %s: unexpected argument '%s'\n", cmd, argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!a->file || !a->kernel || !a->sig) {
        usage(stderr);
        return 2;
    }
    if (!a->o.arch) a->o.arch = "sm_90";
    if (strcmp(a->from, "auto") != 0 && strcmp(a->from, "driver") != 0 && strcmp(a->from, "ptxas") != 0) {
        fprintf(stderr, "nereid %s: --from takes auto, driver or ptxas, not '%s'\n", cmd, a->from);
        return 2;
    }
    return 0;
}

/* Compile the kernel of a; returns it, or NULL after printing why (*rc set). */
static NrKernel *compile_gpu(NrContext *ctx, const GpuArgs *a, int *rc) {
    size_t len;
    char *src = read_file(a->file, &len);
    if (!src) {
        fprintf(stderr, "nereid: cannot read '%s'\n", a->file);
        *rc = 2;
        return NULL;
    }
    NrKernel *k = NULL;
    if (nr_compile(ctx, src, len, a->file, a->kernel, a->sig, &a->o, &k) != NR_OK) *rc = print_diags(ctx);
    else fputs(nr_error_text(ctx), stderr);
    free(src);
    return k;
}

static int cmd_sass(int argc, char **argv) {
    GpuArgs a;
    int rc = parse_gpu_args("sass", argc, argv, &a, false);
    if (rc) return rc;
    NrContext *ctx = nr_context_create();
    NrKernel *k = compile_gpu(ctx, &a, &rc);
    void *cubin = NULL;
    size_t size = 0;
    if (k && nr_kernel_assemble(ctx, k, a.ptxas, &cubin, &size, NULL) != NR_OK) {
        fprintf(stderr, "nereid sass: %s", nr_error_text(ctx));
        rc = 1;
    } else if (k) {
        NrArena ar;
        nr_arena_init(&ar);
        char *sass;
        const char *err = nr_disassemble(&ar, cubin, size, &sass);
        if (err) {
            fprintf(stderr, "nereid sass: %s\n", err);
            rc = 1;
        } else {
            fputs(sass, stdout);
        }
        nr_arena_free(&ar);
    }
    free(cubin);
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    return rc;
}

static void print_occupancy(const NrSmLimits *lim, int threads, int regs, int shared) {
    NrOccupancy oc;
    if (nr_occupancy(lim, threads, regs, shared, &oc) != 0) return;
    if (oc.blocks_per_sm == 0) {
        printf("occupancy:       sm_%d (%s): the kernel cannot run (too many %s)\n", lim->sm, lim->gpus, oc.limiter);
        return;
    }
    printf("occupancy:       sm_%d (%s): %d program%s per SM, %d of %d warps (%.0f%%), limited by %s\n", lim->sm,
           lim->gpus, oc.blocks_per_sm, oc.blocks_per_sm == 1 ? "" : "s", oc.warps_per_sm, lim->max_warps_per_sm,
           100.0 * oc.occupancy, oc.limiter);
}

static int cmd_info(int argc, char **argv) {
    GpuArgs a;
    int rc = parse_gpu_args("info", argc, argv, &a, true);
    if (rc) return rc;
    const NrSmLimits *gpu = NULL;
    bool all = a.gpu && strcmp(a.gpu, "all") == 0;
    if (a.gpu && !all && !(gpu = nr_sm_limits_by_name(a.gpu))) {
        int n;
        const NrSmLimits *t = nr_sm_limits_table(&n);
        fprintf(stderr, "nereid info: unknown GPU '%s'; known:", a.gpu);
        for (int i = 0; i < n; i++) fprintf(stderr, "%s sm_%d (%s)", i ? "," : "", t[i].sm, t[i].gpus);
        fprintf(stderr, "\n");
        return 2;
    }
    NrContext *ctx = nr_context_create();
    NrKernel *k = compile_gpu(ctx, &a, &rc);
    if (!k) {
        nr_context_destroy(ctx);
        return rc;
    }
    int regs = 0, shared = nr_kernel_shared_bytes(k), threads = 32 * nr_kernel_num_warps(k);
    const char *from = NULL;
    char why_not_driver[1024] = "";
    NrGpuKernelInfo gi;
    NrAsmInfo ai;
    memset(&gi, 0, sizeof gi);
    memset(&ai, 0, sizeof ai);
    if (strcmp(a.from, "ptxas") != 0) {
        if (nr_kernel_gpu_info(ctx, k, a.device, &gi) == NR_OK) from = "driver";
        else snprintf(why_not_driver, sizeof why_not_driver, "%s", nr_error_text(ctx));
    }
    if (!from && strcmp(a.from, "driver") != 0) {
        NrStatus st = nr_kernel_assemble(ctx, k, a.ptxas, NULL, NULL, &ai);
        if (st == NR_OK) from = "ptxas";
        else if (strcmp(a.from, "auto") == 0)
            fprintf(stderr, "nereid info: no driver (%.*s) and no ptxas: %s", (int)strcspn(why_not_driver, "\n"),
                    why_not_driver, nr_error_text(ctx));
        else
            fprintf(stderr, "nereid info: %s", nr_error_text(ctx));
    } else if (!from) {
        fprintf(stderr, "nereid info: %s", why_not_driver);
    }
    if (!from) {
        nr_kernel_destroy(k);
        nr_context_destroy(ctx);
        return 1;
    }
    printf("kernel:          %s\nsignature:       %s\ntarget:          %s\n", nr_kernel_name(k), a.sig, a.o.arch);
    printf("threads:         %d per program (%d warps)\n", threads, threads / 32);
    if (strcmp(from, "driver") == 0) {
        regs = gi.num_regs;
        printf("device:          %d: %s (sm_%d, %d SMs)\n", a.device, gi.device_name, gi.sm, gi.sm_count);
        printf("registers:       %d per thread (from the driver)\n", gi.num_regs);
        printf("local memory:    %d bytes per thread (spills and local arrays)\n", gi.spill_bytes);
        printf("shared memory:   %d bytes dynamic, %d bytes static per program\n", shared, gi.static_shared_bytes);
        printf("max threads:     %d per program\n", gi.max_threads_per_block);
        if (!gpu && !all) gpu = nr_sm_limits(gi.sm);
        shared += gi.static_shared_bytes;
    } else {
        regs = ai.num_regs;
        printf("registers:       %d per thread (from ptxas)\n", ai.num_regs);
        printf("spills:          %d bytes stored, %d bytes loaded per thread\n", ai.spill_store_bytes,
               ai.spill_load_bytes);
        printf("stack:           %d bytes per thread\n", ai.stack_bytes);
        printf("shared memory:   %d bytes dynamic, %d bytes static per program\n", shared, ai.static_shared_bytes);
        printf("barriers:        %d\n", ai.barriers);
        if (!gpu && !all) {
            int sm;
            bool sa;
            if (nr_aot_parse_arch(a.o.arch, &sm, &sa)) gpu = nr_sm_limits(sm);
        }
        shared += ai.static_shared_bytes;
    }
    if (all) {
        int n;
        const NrSmLimits *t = nr_sm_limits_table(&n);
        for (int i = 0; i < n; i++) print_occupancy(&t[i], threads, regs, shared);
    } else if (gpu) {
        print_occupancy(gpu, threads, regs, shared);
    }
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
    return 0;
}

/* A shell word for the command line quoted in the generated files. */
static char *shell_word(NrArena *a, const char *s) {
    bool plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%", *p) != NULL;
    if (plain) return nr_strdup(a, s);
    char *r = nr_strdup(a, "'");
    for (const char *p = s; *p; p++) r = *p == '\'' ? nr_sprintf(a, "%s'\\''", r) : nr_sprintf(a, "%s%c", r, *p);
    return nr_sprintf(a, "%s'", r);
}

/* Write text to path through a temporary file renamed over it. */
static int write_text(NrArena *a, const char *path, const char *text) {
    const char *tmp = nr_sprintf(a, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    size_t n = strlen(text);
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "nereid aot: cannot write '%s': %s\n", path, strerror(errno));
        remove(tmp);
        return 1;
    }
    return 0;
}

/* Split "a,b,c" into the array *out (arena strings). */
static int split_list(NrArena *a, const char *s, const char ***out, int n, int *cap) {
    while (*s) {
        size_t k = strcspn(s, ", ");
        if (k) *NR_PUSH(a, *out, n, *cap) = nr_strndup(a, s, k);
        s += k;
        while (*s == ',' || *s == ' ') s++;
    }
    return n;
}

static int cmd_aot(int argc, char **argv) {
    NrArena ar;
    nr_arena_init(&ar);
    NrAotRequest r;
    memset(&r, 0, sizeof r);
    const char *file = NULL, *out = NULL;
    int capsigs = 0, capconfigs = 0, caparchs = 0;
    bool verbose = false;
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "-k") == 0 && more) r.kernel = argv[++i];
        else if (strcmp(argv[i], "-s") == 0 && more) *NR_PUSH(&ar, r.sigs, r.nsigs, capsigs) = argv[++i];
        else if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && more)
            *NR_PUSH(&ar, r.configs, r.nconfigs, capconfigs) = argv[++i];
        else if (strcmp(argv[i], "--arch") == 0 && more)
            r.narchs = split_list(&ar, argv[++i], &r.archs, r.narchs, &caparchs);
        else if ((strcmp(argv[i], "-g") == 0 || strcmp(argv[i], "--grid") == 0) && more) r.grid = argv[++i];
        else if (strcmp(argv[i], "--key") == 0 && more) r.key = argv[++i];
        else if (strcmp(argv[i], "--ptx") == 0 && more) r.ptx_arch = argv[++i];
        else if (strcmp(argv[i], "--ptx-only") == 0) r.ptx_only = true;
        else if (strcmp(argv[i], "--num-warps") == 0 && more) r.num_warps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--num-stages") == 0 && more) r.num_stages = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ptxas") == 0 && more) r.ptxas = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && more) out = argv[++i];
        else if (strcmp(argv[i], "-v") == 0) verbose = true;
        else if (argv[i][0] != '-' && !file) file = argv[i];
        else {
            fprintf(stderr, "nereid aot: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            nr_arena_free(&ar);
            return 2;
        }
    }
    if (!file || !r.kernel || !r.nsigs || !out) {
        fprintf(stderr, "nereid aot: FILE, -k KERNEL, -s SIGNATURE and -o NAME are required\n");
        usage(stderr);
        nr_arena_free(&ar);
        return 2;
    }
    if (!r.narchs) r.narchs = split_list(&ar, "sm_80,sm_90a", &r.archs, r.narchs, &caparchs);
    const char *slash = strrchr(out, '/');
    r.name = slash ? slash + 1 : out;
    r.filename = file;
    const char *cmd = "nereid aot";
    for (int i = 0; i < argc; i++) cmd = nr_sprintf(&ar, "%s %s", cmd, shell_word(&ar, argv[i]));
    r.command = cmd;
    size_t len;
    char *src = read_file(file, &len);
    if (!src) {
        fprintf(stderr, "nereid: cannot read '%s'\n", file);
        nr_arena_free(&ar);
        return 2;
    }
    r.src = src;
    r.len = len;
    NrAotResult res;
    bool ok = nr_aot_generate(&ar, &r, &res);
    fputs(res.messages, stderr);
    if (!ok) {
        rc = 1;
    } else {
        rc = write_text(&ar, nr_sprintf(&ar, "%s.h", out), res.header) ||
             write_text(&ar, nr_sprintf(&ar, "%s.c", out), res.source);
        if (verbose) {
            fprintf(stderr, "%-8s %-13s %9s %8s %7s %5s %7s\n", "variant", "binary", "bytes", "threads", "shared",
                    "regs", "spills");
            for (int i = 0; i < res.nbins; i++) {
                const NrAotBinary *b = &res.bins[i];
                if (b->is_ptx)
                    fprintf(stderr, "%-8d %-7s PTX   %9zu %8d %7d %5s %7s\n", b->variant, b->arch, b->bytes, b->threads,
                            b->shared_bytes, "-", "-");
                else
                    fprintf(stderr, "%-8d %-7s cubin %9zu %8d %7d %5d %7d\n", b->variant, b->arch, b->bytes, b->threads,
                            b->shared_bytes, b->info.num_regs, b->info.spill_store_bytes + b->info.spill_load_bytes);
            }
        }
    }
    free(src);
    nr_arena_free(&ar);
    return rc ? 1 : 0;
}

static int cmd_opt(int argc, char **argv) {
    const char *file = NULL;
    const char *passes[64];
    int npasses = 0;
    NrPrintOptions po = {false};
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--pass") == 0 && i + 1 < argc) {
            if (npasses == 64) {
                fputs("nereid opt: too many passes\n", stderr);
                return 2;
            }
            passes[npasses++] = argv[++i];
        } else if (strncmp(argv[i], "--pass=", 7) == 0 && npasses < 64) {
            passes[npasses++] = argv[i] + 7;
        } else if (strcmp(argv[i], "--loc") == 0) {
            po.locs = true;
        } else if ((argv[i][0] != '-' || strcmp(argv[i], "-") == 0) && !file) {
            file = argv[i];
        } else {
            fprintf(stderr, "nereid opt: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    for (int i = 0; i < npasses; i++) {
        if (!nr_pass_find(passes[i])) {
            fprintf(stderr, "nereid opt: unknown pass '%s' (see nereid passes)\n", passes[i]);
            return 2;
        }
    }
    size_t len;
    char *text = read_file(file, &len);
    if (!text) {
        fprintf(stderr, "nereid: cannot read '%s'\n", file);
        return 2;
    }
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &s);
    int rc = 0;
    NrModule *m = nr_module_parse(&a, text, len, file, &d);
    if (m) d.sources = &m->sources;
    for (int i = 0; m && i < npasses && !nr_has_errors(&d); i++) {
        nr_pass_find(passes[i])->run(m, &d);
        if (!nr_has_errors(&d)) nr_module_verify(m, &d);
    }
    if (!m || nr_has_errors(&d)) {
        fputs(nr_diags_render(&a, &d), stderr);
        rc = 1;
    } else {
        nr_module_print(m, &po, stdout);
    }
    nr_arena_free(&a);
    free(text);
    return rc;
}

static int cmd_passes(void) {
    int n;
    const NrPassInfo *p = nr_pass_list(&n);
    printf("%-14s %s\n", "lower", "the IR as lowered from the kernel source, before any pass");
    for (int i = 0; i < n; i++) printf("%-14s %s\n", p[i].name, p[i].summary);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "check") == 0) return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "ir") == 0) return cmd_compile(argc - 2, argv + 2, false);
    if (strcmp(cmd, "ptx") == 0) return cmd_compile(argc - 2, argv + 2, true);
    if (strcmp(cmd, "sass") == 0) return cmd_sass(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0) return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "aot") == 0) return cmd_aot(argc - 2, argv + 2);
    if (strcmp(cmd, "opt") == 0) return cmd_opt(argc - 2, argv + 2);
    if (strcmp(cmd, "passes") == 0) return cmd_passes();
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("nereid %s\n", NEREID_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "nereid: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
