/* nereid - command-line driver.
 *
 *   nereid check FILE                         parse FILE; report errors in its @jit functions
 *   nereid ir FILE -k KERNEL -s SIG [--after PASS] [--stage block|gpu] [--arch SM] [--num-warps N]
 *             [--num-stages N] [--verify-each]
 *                                             print the block IR (or GPU IR) of one specialized kernel
 *   nereid ptx FILE -k KERNEL -s SIG [--arch sm_90] [--num-warps N] [--num-stages N]
 *                                             print the PTX of one specialized kernel
 *   nereid opt FILE.ir [--pass NAME]... [--loc]
 *                                             parse IR text, run passes in order, print
 *   nereid passes                             list the passes
 *   nereid version
 *
 * User errors print as file:line:col diagnostics and exit with status 1;
 * usage errors exit with status 2. */
#include "nereid.h"

#include "ir.h"
#include "passes.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out) {
    fputs("usage: nereid check FILE\n"
          "       nereid ir FILE -k KERNEL -s SIGNATURE [--after PASS] [--stage block|gpu] [--arch SM]\n"
          "                 [--num-warps N] [--num-stages N] [--verify-each]\n"
          "       nereid ptx FILE -k KERNEL -s SIGNATURE [--arch sm_80|sm_90|sm_90a] [--num-warps N] [--num-stages N]\n"
          "       nereid opt FILE.ir [--pass NAME]... [--loc]\n"
          "       nereid passes\n"
          "       nereid version\n"
          "\n"
          "SIGNATURE is Triton's AOT form, one entry per kernel parameter, e.g.\n"
          "  '*fp32:16, *fp32:16, *fp32:16, i32, 1024'   or   '*fp16, i32, 64, \"leaky\"'\n"
          "PASS is 'lower' (the IR as lowered, before any pass) or a pass name (nereid passes).\n",
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
