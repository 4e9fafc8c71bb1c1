/* test_aot.c - the parts of ahead-of-time compilation that need neither a
 * driver nor ptxas: grid and condition expressions (syntax, types, errors,
 * C text), the per-SM limits and occupancy, reading `ptxas -v`, generating
 * C with PTX only, and the C API additions (device target, cache directory,
 * assembling).  The generated C itself is built and run by tests/aot/run.sh. */
#include "aot.h"
#include "nereid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
            failures++;                                            \
        }                                                          \
    } while (0)

/* ---- expressions ---- */

/* Names: n and m are runtime integers (C names n_ and m), B is the constant 64. */
static bool resolve(void *user, const NrAotExpr *e, NrAotBinding *out, NrDiags *d) {
    (void)user;
    if (strcmp(e->name, "n") == 0) out->c_name = "n_";
    else if (strcmp(e->name, "m") == 0) out->c_name = "m";
    else if (strcmp(e->name, "B") == 0) out->value = 64;
    else {
        nr_error(d, e->loc, "unknown name '%s'", e->name);
        return false;
    }
    return true;
}

/* The C text of text, or the rendered errors ("error: <col>: message"). */
static const char *lower(NrArena *a, const char *text) {
    NrSources s;
    nr_sources_init(&s, a);
    NrDiags d;
    nr_diags_init(&d, a, &s);
    uint32_t file = nr_sources_add(&s, a, "<e>", text, strlen(text));
    NrAotExpr *e = nr_aot_parse_expr(a, &d, file, text, 0, strlen(text));
    char *c = e ? nr_aot_expr_to_c(a, e, "p_", resolve, NULL, &d) : NULL;
    if (c && !nr_has_errors(&d)) return nr_sprintf(a, "%s%s", e->is_bool ? "bool " : "", c);
    return nr_sprintf(a, "error: %u: %s", d.n ? d.v[0].loc.col : 0, d.n ? d.v[0].msg : "?");
}

static void test_expressions(void) {
    NrArena a;
    nr_arena_init(&a);
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"cdiv(n, 1024)", "p_cdiv(ok, (int64_t)n_, (int64_t)1024)"},
        {"triton.cdiv(n, B)", "p_cdiv(ok, (int64_t)n_, (int64_t)64)"},
        {"tl.cdiv(m,B)*2", "p_mul(ok, p_cdiv(ok, (int64_t)m, (int64_t)64), (int64_t)2)"},
        {"n // 2 + m % 3 - -1",
         "p_sub(ok, p_add(ok, p_div(ok, (int64_t)n_, (int64_t)2), p_mod(ok, (int64_t)m, (int64_t)3)), "
         "p_sub(ok, 0, (int64_t)1))"},
        {"n / 2", "p_div(ok, (int64_t)n_, (int64_t)2)"},
        {"min(n, m, 7)", "p_min(p_min((int64_t)n_, (int64_t)m), (int64_t)7)"},
        {"max(n, 1)", "p_max((int64_t)n_, (int64_t)1)"},
        {"next_power_of_2(n)", "p_npow2(ok, (int64_t)n_)"},
        {"4294967296", "(int64_t)4294967296LL"},
        {"n <= 1024", "bool ((int64_t)n_ <= (int64_t)1024)"},
        {"n > 1 and m != 2 or not n == 3",
         "bool ((((int64_t)n_ > (int64_t)1) && ((int64_t)m != (int64_t)2)) || !((int64_t)n_ == (int64_t)3))"},
        {"n>=1 && !(m<2) || True", "bool ((((int64_t)n_ >= (int64_t)1) && !((int64_t)m < (int64_t)2)) || 1)"},
        {"(n)", "(int64_t)n_"},
        /* errors, with the column of the offending token */
        {"", "error: 1: expected an expression"},
        {"n +", "error: 4: expected an expression"},
        {"cdiv(n)", "error: 1: cdiv takes 2 arguments, got 1"},
        {"min(n)", "error: 1: min takes at least 2 arguments"},
        {"foo(n)", "error: 1: unknown function 'foo' (cdiv, min, max and next_power_of_2 are known)"},
        {"x", "error: 1: unknown name 'x'"},
        {"a.b", "error: 1: unknown name 'a.b'"},
        {"1 < n < 3", "error: 7: comparisons do not chain; join them with 'and'"},
        {"n and 3", "error: 1: the operand of 'and' must be a condition (a comparison), not an integer"},
        {"not n", "error: 5: the operand of 'not' must be a condition (a comparison), not an integer"},
        {"(n < 1) + 2", "error: 4: the operand of '+' must be an integer, not a condition"},
        {"cdiv(n < 1, 2)", "error: 8: a function argument must be an integer, not a condition"},
        {"(n", "error: 3: expected ')'"},
        {"n = 3", "error: 3: unexpected '=' after the expression"},
        {"n 3", "error: 3: unexpected '3' after the expression"},
        {"9223372036854775808", "error: 1: integer literal does not fit in 64 bits"},
        {"2.5", "error: 2: expected an integer (grid and condition expressions compute on integers)"},
        {"+n", "error: 1: unary '+' is not supported"},
        {"n if m", "error: 3: unexpected 'i' after the expression"},
        {"cdiv(n, )", "error: 9: expected an expression"},
        {"n $ 2", "error: 3: unexpected '$' after the expression"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = lower(&a, cases[i].text);
        CHECK(strcmp(got, cases[i].want) == 0, "'%s':\n  got  %s\n  want %s", cases[i].text, got, cases[i].want);
    }
    /* Nesting is bounded: no stack overflow, a clear error. */
    char deep[4001];
    for (int i = 0; i < 2000; i++) deep[i] = '(';
    deep[2000] = 'n';
    for (int i = 0; i < 2000; i++) deep[2001 + i - 1] = ')';
    deep[4000] = 0;
    CHECK(strstr(lower(&a, deep), "nested too deeply") != NULL, "deep parentheses: %s", lower(&a, deep));
    char neg[3002];
    memset(neg, '-', 3000);
    neg[3000] = 'n';
    neg[3001] = 0;
    CHECK(strstr(lower(&a, neg), "nested too deeply") != NULL, "deep negation");
    char nots[4005];
    for (int i = 0; i < 1000; i++) memcpy(nots + 4 * i, "not ", 4);
    strcpy(nots + 4000, "n<1");
    CHECK(strstr(lower(&a, nots), "nested too deeply") != NULL, "deep not");
    nr_arena_free(&a);
}

/* ---- occupancy ---- */

static void test_occupancy(void) {
    const NrSmLimits *h100 = nr_sm_limits(90), *a100 = nr_sm_limits(80), *a10 = nr_sm_limits(86),
                     *l4 = nr_sm_limits(89);
    CHECK(h100 && a100 && a10 && l4 && !nr_sm_limits(75) && !nr_sm_limits(100), "table");
    CHECK(h100->max_warps_per_sm == 64 && a10->max_warps_per_sm == 48 && l4->max_blocks_per_sm == 24 &&
              a10->max_blocks_per_sm == 16 && h100->shared_per_block_optin == 232448 &&
              a100->shared_per_block_optin == 166912 && a10->shared_per_sm == 102400,
          "limits");
    static const struct {
        const char *name;
        int sm;
    } names[] = {{"H100", 90},         {"NVIDIA H100 80GB HBM3", 90}, {"a100-sxm4-40gb", 80}, {"sm_90a", 90},
                 {"sm80", 80},         {"RTX 4090", 89},              {"NVIDIA GeForce RTX 3090", 86},
                 {"L40S", 89},         {"h200", 90},                  {"A10G", 86},
                 {"sm 86", 86},        {"NVIDIA RTX A6000", 86},      {"Tesla A100", 80}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const NrSmLimits *l = nr_sm_limits_by_name(names[i].name);
        CHECK(l && l->sm == names[i].sm, "%s: %d", names[i].name, l ? l->sm : -1);
    }
    CHECK(!nr_sm_limits_by_name("Z80") && !nr_sm_limits_by_name("sm_75") && !nr_sm_limits_by_name("A1000") &&
              !nr_sm_limits_by_name(NULL) && !nr_sm_limits_by_name("sm_90b"),
          "unknown names");
    static const struct {
        const NrSmLimits *lim;
        int threads, regs, shared;
        int blocks;
        const char *limiter;
    } cases[] = {
        {NULL, 128, 32, 0, 16, "warps"},          /* h100: 4 warps each, 64 warps */
        {NULL, 128, 255, 0, 2, "registers"},      /* 8192 registers a warp: 2 warps per scheduler */
        {NULL, 256, 128, 0, 2, "registers"},      /* 4096 a warp: 4 per scheduler, 16 warps, 2 blocks of 8 */
        {NULL, 128, 40, 100000, 2, "shared memory"}, /* 233472 / roundup(101024, 128) */
        {NULL, 32, 16, 0, 32, "blocks"},
        {NULL, 1024, 64, 0, 1, "registers"},      /* 2048 a warp: 8 per scheduler, 32 warps: 1 block of 32 */
        {NULL, 128, 40, 232449, 0, "shared memory"},
        {NULL, 2048, 16, 0, 0, "warps"},          /* more threads than a block may have */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        NrOccupancy oc;
        CHECK(nr_occupancy(h100, cases[i].threads, cases[i].regs, cases[i].shared, &oc) == 0, "case %zu", i);
        CHECK(oc.blocks_per_sm == cases[i].blocks && strcmp(oc.limiter, cases[i].limiter) == 0,
              "case %zu: %d blocks limited by %s, want %d by %s", i, oc.blocks_per_sm, oc.limiter, cases[i].blocks,
              cases[i].limiter);
        CHECK(oc.warps_per_sm == oc.blocks_per_sm * ((cases[i].threads + 31) / 32), "case %zu: warps", i);
    }
    NrOccupancy oc;
    CHECK(nr_occupancy(a10, 256, 32, 0, &oc) == 0 && oc.blocks_per_sm == 6 && oc.occupancy == 1.0, "a10: %d %g",
          oc.blocks_per_sm, oc.occupancy);
    CHECK(nr_occupancy(a10, 128, 32, 101376, &oc) == 0 && oc.blocks_per_sm == 1, "a10 shared: %d", oc.blocks_per_sm);
    CHECK(nr_occupancy(a10, 128, 32, 101377, &oc) == 0 && oc.blocks_per_sm == 0, "a10 too much shared");
    CHECK(nr_occupancy(l4, 32, 8, 0, &oc) == 0 && oc.blocks_per_sm == 24 && strcmp(oc.limiter, "blocks") == 0,
          "l4: %d", oc.blocks_per_sm);
    CHECK(nr_occupancy(a100, 0, 32, 0, &oc) == -1 && nr_occupancy(NULL, 32, 32, 0, &oc) == -1 &&
              nr_occupancy(a100, 32, -1, 0, &oc) == -1 && nr_occupancy(a100, 32, 32, -1, &oc) == -1,
          "bad arguments");
    int n;
    const NrSmLimits *t = nr_sm_limits_table(&n);
    CHECK(n == 4 && t[0].sm == 80 && t[3].sm == 90, "table listing");
}

/* ---- ptxas -v ---- */

static void test_ptxas_info(void) {
    NrAsmInfo ai;
    memset(&ai, 0, sizeof ai);
    nr_ptxas_parse_info("ptxas info    : 0 bytes gmem\n"
                        "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                        "ptxas info    : Function properties for k\n"
                        "    16 bytes stack frame, 24 bytes spill stores, 28 bytes spill loads\n"
                        "ptxas info    : Used 254 registers, used 1 barriers, 512 bytes smem, 380 bytes cmem[0]\n",
                        &ai);
    CHECK(ai.num_regs == 254 && ai.stack_bytes == 16 && ai.spill_store_bytes == 24 && ai.spill_load_bytes == 28 &&
              ai.static_shared_bytes == 512 && ai.const_bytes == 380 && ai.barriers == 1,
          "parsed %d %d %d %d %d %d %d", ai.num_regs, ai.stack_bytes, ai.spill_store_bytes, ai.spill_load_bytes,
          ai.static_shared_bytes, ai.const_bytes, ai.barriers);
    memset(&ai, 0x55, sizeof ai);
    nr_ptxas_parse_info("garbage registers\n", &ai);
    CHECK(ai.num_regs == 0 && ai.spill_store_bytes == 0 && ai.barriers == 0, "garbage: %d", ai.num_regs);
    int sm;
    bool a;
    CHECK(nr_aot_parse_arch("sm_90a", &sm, &a) && sm == 90 && a && nr_aot_parse_arch("sm_86", &sm, &a) && sm == 86 &&
              !a && !nr_aot_parse_arch("sm_70", &sm, &a) && !nr_aot_parse_arch("sm_80a", &sm, &a),
          "arch names");
}

/* ---- generation ---- */

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    *len = fread(s, 1, (size_t)n, f);
    s[*len] = 0;
    fclose(f);
    return s;
}

static void test_generate(void) {
    size_t len;
    char *src = read_text("examples/vector_add.py", &len);
    CHECK(src != NULL, "examples/vector_add.py");
    if (!src) return;
    const char *sigs[] = {"*fp32, *fp32, *fp32, i32, BLOCK_SIZE", "*fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE"};
    const char *archs[] = {"sm_80", "sm_90a"};
    const char *configs[] = {"BLOCK_SIZE=256, num_warps=2 if n_elements < 4096", "BLOCK_SIZE=1024"};
    NrAotRequest r;
    memset(&r, 0, sizeof r);
    r.src = src;
    r.len = len;
    r.filename = "examples/vector_add.py";
    r.kernel = "add_kernel";
    r.sigs = sigs;
    r.nsigs = 2;
    r.archs = archs;
    r.narchs = 2;
    r.ptx_only = true;
    r.configs = configs;
    r.nconfigs = 2;
    r.grid = "cdiv(n_elements, BLOCK_SIZE)";
    r.name = "vadd";
    r.command = "nereid aot */ and more";
    NrArena a;
    nr_arena_init(&a);
    NrAotResult res;
    bool ok = nr_aot_generate(&a, &r, &res);
    CHECK(ok && !*res.messages, "generate: %s", res.messages);
    if (ok) {
        CHECK(res.nvariants == 4 && res.nbins == 8, "%d variants, %d binaries", res.nvariants, res.nbins);
        CHECK(strstr(res.header, "CUresult vadd_launch(CUstream stream, CUdeviceptr x_ptr, CUdeviceptr y_ptr, "
                                 "CUdeviceptr out_ptr, int32_t n_elements);"),
              "launch prototype");
        CHECK(strstr(res.header, "CUresult vadd_launch_grid(CUstream stream, int config, unsigned grid_x"), "grid");
        CHECK(strstr(res.header, "CUresult vadd_choose_config(CUstream stream, int *config,"), "choose_config");
        CHECK(!strstr(res.header, "vadd_set_config"), "set_config without --key");
        CHECK(strstr(res.header, "#define VADD_NUM_VARIANTS 4"), "variants");
        CHECK(strstr(res.header, "*     nereid aot * / and more"), "the command line must not end the comment");
        CHECK(strstr(res.source, "// nereid-aot-signature: *fp32:16, *fp32:16, *fp32:16, i32:16, 1024") == NULL,
              "the PTX is embedded as bytes, not text");
        CHECK(strstr(res.source, "\"sm_90a PTX\", 90, 1, 1, 64u, 0u}") &&
                  strstr(res.source, "\"sm_80 PTX\", 80, 0, 1, 128u, 0u}"),
              "binary table");
        CHECK(strstr(res.source,
                     "if (x_ptr % 16 == 0 && y_ptr % 16 == 0 && out_ptr % 16 == 0 && n_elements % 16 == 0) return 1;"),
              "dispatcher");
        CHECK(strstr(res.source, "aot_g[0] = vadd_cdiv(ok, (int64_t)n_elements, (int64_t)256);") &&
                  strstr(res.source, "aot_g[0] = vadd_cdiv(ok, (int64_t)n_elements, (int64_t)1024);"),
              "grid per config");
        CHECK(!strstr(res.source, "vadd_mul(") && strstr(res.source, "static int64_t vadd_cdiv("),
              "only the helpers used");
    }
    /* Generation is deterministic. */
    NrAotResult again;
    CHECK(nr_aot_generate(&a, &r, &again) && strcmp(again.source, res.source) == 0 &&
              strcmp(again.header, res.header) == 0,
          "not deterministic");
    /* Errors come back rendered, with the place. */
    r.grid = "cdiv(n_elements, BLOCK)";
    CHECK(!nr_aot_generate(&a, &r, &res) && strstr(res.messages, "<grid>:1:18: error: unknown name 'BLOCK'"),
          "grid error: %s", res.messages);
    r.grid = NULL;
    r.key = "n_elements";
    CHECK(nr_aot_generate(&a, &r, &res) &&
              strstr(res.header, "CUresult vadd_set_config(int32_t n_elements, int config);"),
          "key: %s", res.messages);
    r.key = NULL;
    r.name = "2x";
    CHECK(!nr_aot_generate(&a, &r, &res) && strstr(res.messages, "error: the output name '2x' must be a C identifier"),
          "name: %s", res.messages);
    nr_arena_free(&a);
    free(src);
}

/* ---- the C API ---- */

static void test_c_api(void) {
    NrContext *ctx = nr_context_create();
    char buf[4096];
    /* Without a driver (CI), the device's target is refused clearly; with one, it is an sm_ name. */
    NrStatus st = nr_device_arch(ctx, 0, buf, sizeof buf);
    CHECK((st == NR_OK && strncmp(buf, "sm_", 3) == 0) || (st == NR_ERR_LAUNCH && *nr_error_text(ctx)),
          "device arch: %d %s", st, nr_error_text(ctx));
    setenv("NEREID_ARCH", "sm_86", 1);
    CHECK(nr_device_arch(ctx, 0, buf, sizeof buf) == NR_OK && strcmp(buf, "sm_86") == 0, "NEREID_ARCH");
    unsetenv("NEREID_ARCH");
    CHECK(nr_device_arch(ctx, 0, NULL, 4) == NR_ERR_INVALID, "no buffer");
    /* The cache directory follows the environment, as in Python. */
    char dir[] = "/tmp/nereid-aot-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    setenv("NEREID_CACHE_DIR", dir, 1);
    CHECK(nr_cache_directory(buf, sizeof buf) == 0 && strcmp(buf, dir) == 0, "cache dir %s", buf);
    setenv("NEREID_NO_CACHE", "1", 1);
    CHECK(nr_cache_directory(buf, sizeof buf) == -1 && buf[0] == 0, "NEREID_NO_CACHE");
    unsetenv("NEREID_NO_CACHE");
    unsetenv("NEREID_CACHE_DIR");
    rmdir(dir);
    /* Assembling needs a GPU kernel. */
    const char *src = "import nereid as triton\n@triton.jit\ndef k(x):\n    pass\n";
    NrKernel *k = NULL;
    CHECK(nr_compile(ctx, src, strlen(src), "k.py", "k", "*fp32", NULL, &k) == NR_OK, "%s", nr_error_text(ctx));
    NrAsmInfo ai;
    CHECK(nr_kernel_assemble(ctx, k, NULL, NULL, NULL, &ai) == NR_ERR_INVALID &&
              strstr(nr_error_text(ctx), "was not compiled for a GPU"),
          "assemble a CPU kernel: %s", nr_error_text(ctx));
    CHECK(nr_kernel_assemble(NULL, k, NULL, NULL, NULL, &ai) == NR_ERR_INVALID, "no context");
    nr_kernel_destroy(k);
    NrOptions o;
    nr_options_default(&o);
    o.arch = "sm_80";
    CHECK(nr_compile(ctx, src, strlen(src), "k.py", "k", "*fp32", &o, &k) == NR_OK, "%s", nr_error_text(ctx));
    CHECK(nr_kernel_assemble(ctx, k, "/nonexistent/ptxas", NULL, NULL, &ai) == NR_ERR_UNAVAILABLE &&
              strstr(nr_error_text(ctx), "ptxas '/nonexistent/ptxas' cannot be run"),
          "missing ptxas: %s", nr_error_text(ctx));
    nr_kernel_destroy(k);
    nr_context_destroy(ctx);
}

int main(void) {
    test_expressions();
    test_occupancy();
    test_ptxas_info();
    test_generate();
    test_c_api();
    if (failures) {
        printf("test_aot: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("test_aot: OK\n");
    return 0;
}
