/* test_ptx.c - the PTX emitter.
 *
 *   semantics   the emitter's scalar instruction sequences run on the CPU
 *               (evaluation mode) and are compared bit for bit with the
 *               interpreter: every elementwise op on every dtype, every
 *               cast pair, edge values (zero divisors, MIN / -1, huge shift
 *               amounts, NaN, infinities, subnormals, fp8 saturation)
 *   assembly    kernels covering every op, dtype, layout shape, vector
 *               width, num_warps 1..16, masks, scalars, reductions,
 *               conversions, control flow, atomics, print and assert are
 *               emitted for sm_80 and sm_90 and assembled with ptxas (when
 *               /usr/local/cuda/bin/ptxas exists; otherwise skipped with a
 *               message)
 *   patterns    the text shows the chosen forms (vector widths, packed
 *               f16x2, shuffles, shared memory only where needed)
 *
 * Random inputs are seeded from the clock (NR_TEST_SEED=n repeats a run).
 * NR_TEST_KEEP=dir keeps every emitted PTX file there. */
#include "fp.h"
#include "interp.h"
#include "ptx.h"
#include "gpu_impl.h"
#include "test_ptx_shim.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* --- checking ----------------------------------------------------------------------------------- */
static int failures, checks;
static uint64_t seed;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        checks++;                                                                                                      \
        if (!(cond)) {                                                                                                 \
            if (failures++ == 0) printf("seed %llu\n", (unsigned long long)seed);                                      \
            if (failures <= 80) {                                                                                      \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                            \
                printf(__VA_ARGS__);                                                                                   \
                printf("\n");                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static const char *dn(NrDtype dt) { return nr_dtype_info[dt].ir; }
static int esz(NrDtype dt) { return nr_dtype_info[dt].bytes; }

/* --- ptxas ------------------------------------------------------------------------------------------ */
static const char *const PTXAS = "/usr/local/cuda/bin/ptxas";
static bool have_ptxas;
static int assembled;
static const char *keep_dir;

/* Assembles ptx for arch; on failure prints ptxas's messages. */
static bool ptxas_ok(const char *ptx, const char *arch, const char *what) {
    static int serial;
    char path[512];
    if (keep_dir) snprintf(path, sizeof path, "%s/%03d_%s_%s.ptx", keep_dir, serial++, what, arch);
    else snprintf(path, sizeof path, "/tmp/nr_test_ptx_%d.ptx", (int)getpid());
    FILE *fp = fopen(path, "w");
    if (!fp) return false;
    fputs(ptx, fp);
    fclose(fp);
    if (!have_ptxas) return true;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o /dev/null 2>&1", PTXAS, arch, path);
    FILE *pp = popen(cmd, "r");
    if (!pp) return false;
    char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, pp);
    out[n] = 0;
    int rc = pclose(pp);
    assembled++;
    if (!keep_dir) remove(path);
    if (rc != 0) {
        printf("ptxas -arch=%s rejected %s:\n%s\n", arch, what, out);
        if (getenv("NR_TEST_VERBOSE")) printf("%s\n", ptx);
    }
    return rc == 0;
}

/* --- kernels ------------------------------------------------------------------------------------------ */
typedef struct Kern {
    NrArena a;
    NrSources src;
    NrDiags d;
    NrModule *m;
    NrFunc *f;
    char *text;
} Kern;

/* Parses IR text whose types name layouts #L1.. . The text carries no layout
 * table: the caller interns layout i (ids from 1) into k->m after parsing, and
 * emit_check re-parses the text under that table (kern_relayout). Until then
 * the module holds the text without its layouts, which the interpreter runs. */
typedef int32_t (*LayFn)(NrModule *m, int nw);

static char *strip_layouts(const char *text) {
    size_t n = strlen(text);
    char *out = malloc(n + 1), *o = out;
    for (const char *c = text; *c;) {
        if (c[0] == ',' && c[1] == ' ' && c[2] == '#' && c[3] == 'L' && c[4] >= '0' && c[4] <= '9') {
            c += 4;
            while (*c >= '0' && *c <= '9') c++;
            continue;
        }
        *o++ = *c++;
    }
    *o = 0;
    return out;
}

static bool kern_parse(Kern *k, const char *text, int nw) {
    memset(k, 0, sizeof *k);
    nr_arena_init(&k->a);
    nr_sources_init(&k->src, &k->a);
    nr_diags_init(&k->d, &k->a, &k->src);
    k->text = strdup(text);
    if (strstr(text, "#L")) {
        /* GPU ops parse only with their layouts: then the module is empty until kern_relayout */
        char *bare = strip_layouts(text);
        NrDiags quiet;
        nr_diags_init(&quiet, &k->a, &k->src);
        k->m = nr_module_parse(&k->a, bare, strlen(bare), "k.ir", &quiet);
        free(bare);
        if (!k->m) k->m = nr_module_new(&k->a);
        k->m->num_warps = nw;
        k->f = k->m->nfuncs ? k->m->funcs[0] : NULL;
        return true;
    }
    k->m = nr_module_parse(&k->a, text, strlen(text), "k.ir", &k->d);
    if (!k->m) {
        CHECK(0, "kernel does not parse:\n%s\n%s", nr_diags_render(&k->a, &k->d), text);
        return false;
    }
    k->m->num_warps = nw;
    k->f = k->m->funcs[0];
    return true;
}

/* Re-parses k's text with the layout table the caller built in k->m. */
static bool kern_relayout(Kern *k) {
    if (!k->text || !strstr(k->text, "#L")) return true;
    const char *body = strstr(k->text, "module {\n");
    if (!body) return true; /* the text has its own header */
    body += strlen("module {\n");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "module attributes {num_warps = %d, sm = %d} {\n", k->m->num_warps, k->m->sm);
    for (int32_t l = 1; l < k->m->nlayouts; l++) {
        fprintf(f, "  #L%d = ", l);
        nr_layout_print(k->m, l, f);
        fputc('\n', f);
    }
    fputs(body, f);
    fclose(f);
    NrModule *m = nr_module_parse(&k->a, buf, len, "k.ir", &k->d);
    if (!m) {
        CHECK(0, "kernel does not parse with its layouts:\n%s\n%s", nr_diags_render(&k->a, &k->d), buf);
        free(buf);
        return false;
    }
    free(buf);
    int nw = k->m->num_warps;
    nr_module_free(k->m);
    k->m = m;
    k->m->num_warps = nw;
    k->f = m->funcs[0];
    return true;
}

static void kern_free(Kern *k) {
    free(k->text);
    if (k->m) nr_module_free(k->m);
    nr_arena_free(&k->a);
}

static int32_t mk_blocked(NrModule *m, int rank, const int *spt, const int *tpw, const int *wpc, const int *order) {
    int32_t s[NR_MAX_RANK], t[NR_MAX_RANK], w[NR_MAX_RANK], o[NR_MAX_RANK];
    for (int i = 0; i < rank; i++) s[i] = spt[i], t[i] = tpw[i], w[i] = wpc[i], o[i] = order[i];
    return shim_blocked(m, rank, s, t, w, o);
}

/* Emits k for sm (0 = both 80 and 90) and assembles; returns the sm_80 text. */
static char *emit_check(Kern *k, const char *what, bool want_ok) {
    char *first = NULL;
    if (!kern_relayout(k)) return NULL;
    int sms[2] = {80, 90};
    for (int i = 0; i < 2; i++) {
        NrGpuOptions o;
        memset(&o, 0, sizeof o);
        o.sm = sms[i];
        o.num_warps = k->m->num_warps;
        int before = k->d.nerrors;
        NrPtxInfo info;
        char *ptx = nr_emit_ptx_info(k->f, &o, &k->d, &info);
        if (!want_ok) {
            CHECK(!ptx && k->d.nerrors > before, "%s: emission should fail", what);
            return NULL;
        }
        CHECK(ptx != NULL, "%s (sm_%d): %s", what, sms[i], nr_diags_render(&k->a, &k->d));
        if (!ptx) return NULL;
        CHECK(ptxas_ok(ptx, sms[i] == 80 ? "sm_80" : "sm_90", what), "%s: ptxas sm_%d", what, sms[i]);
        if (!first) first = ptx;
    }
    return first;
}

static int count_of(const char *s, const char *pat) {
    int n = 0;
    if (!s) return 0;
    for (const char *q = strstr(s, pat); q; q = strstr(q + 1, pat)) n++;
    return n;
}

/* --- a growable text buffer for generated kernels -------------------------------------------------- */
typedef struct Txt {
    char *s;
    size_t n, cap;
} Txt;

static void tx(Txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx(Txt *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (t->n + (size_t)n + 1 > t->cap) {
        t->cap = (t->n + (size_t)n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        if (!t->s) abort();
    }
    vsnprintf(t->s + t->n, (size_t)n + 1, fmt, ap);
    t->n += (size_t)n;
    va_end(ap);
}

#include "test_ptx_sem.h"
#include "test_ptx_math.h"
#include "test_ptx_kernels.h"

int main(void) {
    const char *s = getenv("NR_TEST_SEED");
    seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    rng_state = seed;
    keep_dir = getenv("NR_TEST_KEEP");
    have_ptxas = access(PTXAS, X_OK) == 0;
    if (!have_ptxas) printf("test_ptx: %s not found; PTX is emitted but not assembled\n", PTXAS);
    if (!getenv("NR_TEST_MATH_ONLY")) run_semantics_tests();
    run_math_tests();
    if (getenv("NR_TEST_MATH_ONLY")) return failures ? 1 : 0;
    run_kernel_tests();
    printf("test_ptx: %d checks, %d failures, %d ptxas runs\n", checks, failures, assembled);
    return failures ? 1 : 0;
}
