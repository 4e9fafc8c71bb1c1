/* test_gpu.c - the GPU passes on IR text: axis analysis facts on known
 * kernels (vector add, 2-D tiles, loops, hints, unaligned pointers); the
 * GPU pipeline's options (stop_after, verify_each, dump) and its results on
 * vector add and matmul at every warp count. */
#include "gpu.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            failures++;                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                 \
            printf(__VA_ARGS__);                                        \
            putchar('\n');                                              \
        }                                                               \
    } while (0)

typedef struct Ctx {
    NrArena a;
    NrSources s;
    NrDiags d;
    NrModule *m;
    const char *text;
} Ctx;

static bool ctx_parse(Ctx *c, const char *text) {
    nr_arena_init(&c->a);
    nr_sources_init(&c->s, &c->a);
    nr_diags_init(&c->d, &c->a, &c->s);
    c->text = text;
    c->m = nr_module_parse(&c->a, text, strlen(text), "t.ir", &c->d);
    CHECK(c->m != NULL, "parse:\n%s", nr_diags_render(&c->a, &c->d));
    return c->m != NULL;
}

static void ctx_free(Ctx *c) { nr_arena_free(&c->a); }

/* The value defined on the line of the text containing `marker` (the
 * first result of the op on that line). */
static NrValId value_at(Ctx *c, const char *marker) {
    const char *p = strstr(c->text, marker);
    if (!p) {
        printf("no marker %s\n", marker);
        exit(2);
    }
    uint32_t line = 1;
    for (const char *q = c->text; q < p; q++) line += *q == '\n';
    NrFunc *f = c->m->funcs[0];
    for (NrOpId o = 1; o < f->nops; o++)
        if (!f->ops[o].dead && f->ops[o].loc.line == line && f->ops[o].nresults) return f->ops[o].results[0];
    printf("no op on the line of %s\n", marker);
    exit(2);
}

/* Facts of the value at `marker` along dim d. */
static void expect_axis(Ctx *c, const NrAxisInfo *ai, const char *marker, int d, int contig, int64_t div, int cons) {
    NrValId v = value_at(c, marker);
    const NrAxisInfo *a = &ai[v];
    CHECK(a->contiguity[d] == contig && a->divisibility[d] == div && a->constancy[d] == cons,
          "%s dim %d: contiguity %d, divisibility %lld, constancy %d; expected %d, %lld, %d", marker, d,
          a->contiguity[d], (long long)a->divisibility[d], a->constancy[d], contig, (long long)div, cons);
}

/* --- axis analysis -------------------------------------------------------------------------------- */
static void test_axis_vector_add(void) {
    Ctx c;
    if (!ctx_parse(&c, "module {\n"
                       "  func @k(%x: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16}, %u: i32) kernel {\n"
                       "    %0 = program_id {axis = 0} : i32\n"
                       "    %1 = const {value = 1024} : i32            // C1024\n"
                       "    %2 = mul %0, %1 : i32                      // BASE\n"
                       "    %3 = arange {end = 1024, start = 0} : tensor<1024xi32>   // RANGE\n"
                       "    %4 = splat %2 : tensor<1024xi32>\n"
                       "    %5 = add %4, %3 : tensor<1024xi32>         // OFFS\n"
                       "    %6 = splat %n : tensor<1024xi32>\n"
                       "    %7 = cmp %5, %6 {pred = \"lt\"} : tensor<1024xi1>   // MASK16\n"
                       "    %8 = splat %u : tensor<1024xi32>\n"
                       "    %9 = cmp %5, %8 {pred = \"lt\"} : tensor<1024xi1>   // MASKU\n"
                       "    %10 = splat %x : tensor<1024xptr<f32>>       // XS\n"
                       "    %11 = addptr %10, %5 : tensor<1024xptr<f32>> // PTR\n"
                       "    %12 = load %11, %7, _ : tensor<1024xf32>     // LOAD\n"
                       "    %13 = cmp %5, %6 {pred = \"le\"} : tensor<1024xi1>  // MASKLE\n"
                       "    %14 = const {value = 3} : tensor<1024xi32>\n"
                       "    %15 = addptr %11, %14 : tensor<1024xptr<f32>> // PTR3\n"
                       "    %16 = sub %6, %3 : tensor<1024xi32>          // SUB\n"
                       "    return\n"
                       "  }\n"
                       "}\n"))
        return;
    NrAxisInfo *ai = nr_axis_analysis(c.m->funcs[0]);
    expect_axis(&c, ai, "C1024", 0, 1, 1024, 1);
    expect_axis(&c, ai, "BASE", 0, 1, 1024, 1);
    expect_axis(&c, ai, "RANGE", 0, 1024, 1 << 30, 1);
    expect_axis(&c, ai, "OFFS", 0, 1024, 1024, 1);
    expect_axis(&c, ai, "MASK16", 0, 1, 1, 16);
    expect_axis(&c, ai, "MASKU", 0, 1, 1, 1);
    expect_axis(&c, ai, "MASKLE", 0, 1, 1, 1);
    expect_axis(&c, ai, "XS", 0, 1, 4, 1024);
    expect_axis(&c, ai, "PTR", 0, 1024, 4, 1);
    expect_axis(&c, ai, "LOAD", 0, 1, 1, 1);
    expect_axis(&c, ai, "PTR3", 0, 1024, 1, 1);
    expect_axis(&c, ai, "SUB", 0, 1, 1, 1);
    CHECK(ai[value_at(&c, "PTR")].divisibility_bytes == 16, "PTR divisibility_bytes %lld",
          (long long)ai[value_at(&c, "PTR")].divisibility_bytes);
    ctx_free(&c);
}

static void test_axis_2d(void) {
    Ctx c;
    if (!ctx_parse(&c, "module {\n"
                       "  func @k(%x: ptr<f16> {divisibility = 16}, %s: i32 {divisibility = 16}, %t: i32) kernel {\n"
                       "    %0 = arange {end = 64, start = 0} : tensor<64xi32>\n"
                       "    %1 = expand_dims %0 {axis = 1} : tensor<64x1xi32>   // ROWS\n"
                       "    %2 = splat %s : tensor<64x1xi32>\n"
                       "    %3 = mul %1, %2 : tensor<64x1xi32>                   // ROWOFF\n"
                       "    %4 = broadcast %3 : tensor<64x32xi32>                // ROWB\n"
                       "    %5 = arange {end = 32, start = 0} : tensor<32xi32>\n"
                       "    %6 = expand_dims %5 {axis = 0} : tensor<1x32xi32>\n"
                       "    %7 = broadcast %6 : tensor<64x32xi32>                // COLB\n"
                       "    %8 = add %4, %7 : tensor<64x32xi32>                  // OFF2D\n"
                       "    %9 = splat %x : tensor<64x32xptr<f16>>\n"
                       "    %10 = addptr %9, %8 : tensor<64x32xptr<f16>>         // PTR\n"
                       "    %11 = splat %t : tensor<64x1xi32>\n"
                       "    %12 = mul %1, %11 : tensor<64x1xi32>\n"
                       "    %13 = broadcast %12 : tensor<64x32xi32>\n"
                       "    %14 = add %13, %7 : tensor<64x32xi32>\n"
                       "    %15 = addptr %9, %14 : tensor<64x32xptr<f16>>        // PTRT\n"
                       "    %16 = trans %10 {order = [1, 0]} : tensor<32x64xptr<f16>>  // TRANS\n"
                       "    %17 = const {value = 8} : tensor<64x32xi32>\n"
                       "    %18 = div %8, %17 : tensor<64x32xi32>               // DIV\n"
                       "    %19 = rem %8, %17 : tensor<64x32xi32>               // REM\n"
                       "    %20 = const {value = 2} : tensor<64x32xi32>\n"
                       "    %21 = shl %8, %20 : tensor<64x32xi32>               // SHL\n"
                       "    return\n"
                       "  }\n"
                       "}\n"))
        return;
    NrAxisInfo *ai = nr_axis_analysis(c.m->funcs[0]);
    expect_axis(&c, ai, "ROWS", 0, 64, 1 << 30, 1);
    expect_axis(&c, ai, "ROWS", 1, 1, 1, 1);
    expect_axis(&c, ai, "ROWOFF", 0, 1, 16, 1);
    expect_axis(&c, ai, "ROWB", 1, 1, 16, 32);
    expect_axis(&c, ai, "COLB", 1, 32, 1 << 30, 1);
    expect_axis(&c, ai, "COLB", 0, 1, 1, 64);
    expect_axis(&c, ai, "OFF2D", 1, 32, 16, 1);
    expect_axis(&c, ai, "OFF2D", 0, 1, 1, 1);
    expect_axis(&c, ai, "PTR", 1, 32, 8, 1);
    expect_axis(&c, ai, "PTRT", 1, 32, 1, 1);
    expect_axis(&c, ai, "TRANS", 0, 32, 8, 1);
    expect_axis(&c, ai, "DIV", 1, 1, 1, 8);
    expect_axis(&c, ai, "REM", 1, 8, 8, 1);
    expect_axis(&c, ai, "SHL", 1, 1, 4, 1);
    ctx_free(&c);
}

/* The facts of result `i` of the op at `marker`. */
static const NrAxisInfo *result_info(Ctx *c, const NrAxisInfo *ai, const char *marker, int i) {
    NrValId v = value_at(c, marker);
    NrFunc *f = c->m->funcs[0];
    return &ai[f->ops[f->vals[v].def].results[i]];
}

static void test_axis_loops_and_hints(void) {
    Ctx c;
    if (!ctx_parse(&c, "module {\n"
                       "  func @k(%x: ptr<f32> {divisibility = 16}, %n: i32, %K: i32) kernel {\n"
                       "    %0 = const {value = 0} : i32\n"
                       "    %1 = const {value = 32} : i32\n"
                       "    %2 = arange {end = 32, start = 0} : tensor<32xi32>\n"
                       "    %3 = splat %x : tensor<32xptr<f32>>\n"
                       "    %4 = addptr %3, %2 : tensor<32xptr<f32>>\n"
                       "    %5 = splat %1 : tensor<32xi32>\n"
                       "    %6 = const {value = 1} : i32\n"
                       "    %7, %8, %9 = for %0, %K, %1, %4, %0, %6 : tensor<32xptr<f32>>, i32, i32 {   // LOOP\n"
                       "    ^(%iv: i32, %p: tensor<32xptr<f32>>, %acc: i32, %odd: i32):\n"
                       "      %10 = splat %iv : tensor<32xi32>         // IV\n"
                       "      %11 = add %10, %2 : tensor<32xi32>       // IVOFF\n"
                       "      %12 = addptr %p, %5 : tensor<32xptr<f32>> // PNEXT\n"
                       "      %13 = add %acc, %1 : i32\n"
                       "      %14 = add %odd, %6 : i32\n"
                       "      yield %12, %13, %14\n"
                       "    }\n"
                       "    %15 = hint %n {kind = \"multiple_of\", values = [16]} : i32   // HINT\n"
                       "    %16 = splat %15 : tensor<32xi32>\n"
                       "    %17 = add %16, %2 : tensor<32xi32>\n"
                       "    %18 = hint %17 {kind = \"max_contiguous\", values = [8]} : tensor<32xi32>  // HC\n"
                       "    %19 = splat %n : tensor<32xi32>\n"
                       "    %20 = hint %19 {kind = \"max_constancy\", values = [4]} : tensor<32xi32>  // HK\n"
                       "    %21 = while %0 : i32 {\n"
                       "    ^(%w: i32):\n"
                       "      %22 = cmp %w, %K {pred = \"lt\"} : i1\n"
                       "      condition %22, %w\n"
                       "    } {\n"
                       "    ^(%w2: i32):\n"
                       "      %23 = add %w2, %1 : i32\n"
                       "      yield %23\n"
                       "    }    // WHILE\n"
                       "    %24 = cmp %n, %K {pred = \"lt\"} : i1\n"
                       "    %25 = if %24 : i32 {\n"
                       "      yield %1\n"
                       "    } {\n"
                       "      %26 = const {value = 48} : i32\n"
                       "      yield %26\n"
                       "    }    // IF\n"
                       "    return\n"
                       "  }\n"
                       "}\n"))
        return;
    NrAxisInfo *ai = nr_axis_analysis(c.m->funcs[0]);
    expect_axis(&c, ai, "IV", 0, 1, 32, 32);
    expect_axis(&c, ai, "IVOFF", 0, 32, 32, 1);
    expect_axis(&c, ai, "PNEXT", 0, 32, 4, 1);
    expect_axis(&c, ai, "LOOP", 0, 32, 4, 1);
    CHECK(result_info(&c, ai, "LOOP", 1)->divisibility[0] == 32, "carried acc: %lld",
          (long long)result_info(&c, ai, "LOOP", 1)->divisibility[0]);
    CHECK(result_info(&c, ai, "LOOP", 2)->divisibility[0] == 1, "carried odd: %lld",
          (long long)result_info(&c, ai, "LOOP", 2)->divisibility[0]);
    expect_axis(&c, ai, "HINT", 0, 1, 16, 1);
    expect_axis(&c, ai, "HC", 0, 8, 16, 1);
    expect_axis(&c, ai, "HK", 0, 1, 1, 4);
    /* the while's result: the condition passes w, which meets 0 and w + 32 */
    NrFunc *f = c.m->funcs[0];
    NrValId w = NR_NONE, i = NR_NONE;
    for (NrOpId o = 1; o < f->nops; o++) {
        if (f->ops[o].opc == NR_OP_WHILE) w = f->ops[o].results[0];
        if (f->ops[o].opc == NR_OP_IF) i = f->ops[o].results[0];
    }
    CHECK(ai[w].divisibility[0] == 32, "while result: %lld", (long long)ai[w].divisibility[0]);
    CHECK(ai[i].divisibility[0] == 16, "if result: %lld", (long long)ai[i].divisibility[0]);
    ctx_free(&c);
}

/* Scratch sizes stand in for the PTX emitter's when it is not linked. */
__attribute__((weak)) int64_t nr_ptx_scratch_bytes(NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    if (o->opc == NR_OP_CONVERT_LAYOUT) return nr_type_numel(f->mod, f->vals[o->results[0]].type) * 4;
    return 0;
}

static const char *vadd_text =
    "module {\n"
    "  func @k(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %n: i32 {divisibility = 16}) kernel {\n"
    "    %0 = program_id {axis = 0} : i32\n"
    "    %1 = const {value = 1024} : i32\n"
    "    %2 = mul %0, %1 : i32\n"
    "    %3 = arange {end = 1024, start = 0} : tensor<1024xi32>\n"
    "    %4 = splat %2 : tensor<1024xi32>\n"
    "    %5 = add %4, %3 : tensor<1024xi32>\n"
    "    %6 = splat %n : tensor<1024xi32>\n"
    "    %7 = cmp %5, %6 {pred = \"lt\"} : tensor<1024xi1>\n"
    "    %8 = splat %x : tensor<1024xptr<f32>>\n"
    "    %9 = addptr %8, %5 : tensor<1024xptr<f32>>\n"
    "    %10 = load %9, %7, _ : tensor<1024xf32>\n"
    "    %11 = splat %y : tensor<1024xptr<f32>>\n"
    "    %12 = addptr %11, %5 : tensor<1024xptr<f32>>\n"
    "    %13 = mul %10, %10 : tensor<1024xf32>\n"
    "    store %12, %13, %7\n"
    "    return\n"
    "  }\n"
    "}\n";

static int count_ops(NrFunc *f, NrOpcode opc) {
    int n = 0;
    for (NrOpId o = 1; o < f->nops; o++) n += !f->ops[o].dead && f->ops[o].block && f->ops[o].opc == opc;
    return n;
}

static void test_pipeline(void) {
    for (int nw = 1; nw <= 16; nw *= 2) {
        Ctx c;
        if (!ctx_parse(&c, vadd_text)) return;
        char *dump = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&dump, &len);
        NrGpuOptions o = {nw, 1, 80, false, NULL, true, out, false, false, 0};
        bool ok = nr_run_gpu_pipeline(c.m, &o, &c.d);
        fclose(out);
        CHECK(ok, "pipeline with %d warps: %s", nw, nr_diags_render(&c.a, &c.d));
        CHECK(c.m->num_warps == nw && c.m->sm == 80, "target recorded");
        NrFunc *f = c.m->funcs[0];
        CHECK(count_ops(f, NR_OP_CONVERT_LAYOUT) == 0, "vector add keeps conversions with %d warps", nw);
        CHECK(f->smem_bytes == 0, "vector add needs no shared memory: %lld", (long long)f->smem_bytes);
        CHECK(dump && strstr(dump, "// after gpu-convert") && strstr(dump, "// after gpu-barriers"),
              "dump names every pass");
        free(dump);
        ctx_free(&c);
    }
    /* stop_after */
    Ctx c;
    if (!ctx_parse(&c, vadd_text)) return;
    NrGpuOptions o = {4, 1, 80, false, "gpu-coalesce", true, NULL, false, false, 0};
    CHECK(nr_run_gpu_pipeline(c.m, &o, &c.d), "pipeline up to gpu-coalesce");
    CHECK(count_ops(c.m->funcs[0], NR_OP_CONVERT_LAYOUT) > 0, "stopped before gpu-remove-converts");
    ctx_free(&c);
    /* bad options are diagnostics */
    if (!ctx_parse(&c, vadd_text)) return;
    NrGpuOptions bad = {3, 1, 80, false, NULL, false, NULL, false, false, 0};
    CHECK(!nr_run_gpu_pipeline(c.m, &bad, &c.d) && strstr(nr_diags_render(&c.a, &c.d), "num_warps"),
          "num_warps = 3 is refused");
    ctx_free(&c);
    if (!ctx_parse(&c, vadd_text)) return;
    NrGpuOptions old = {4, 1, 75, false, NULL, false, NULL, false, false, 0};
    CHECK(!nr_run_gpu_pipeline(c.m, &old, &c.d) && strstr(nr_diags_render(&c.a, &c.d), "sm_80"), "sm_75 is refused");
    ctx_free(&c);
}

/* A reduction across warps, converted for a store: scratch gets an offset,
 * and the kernel's total covers it. */
static void test_scratch(void) {
    Ctx c;
    if (!ctx_parse(&c, "module {\n"
                       "  func @k(%x: ptr<f32> {divisibility = 16}) kernel {\n"
                       "    %0 = arange {end = 64, start = 0} : tensor<64xi32>\n"
                       "    %1 = expand_dims %0 {axis = 1} : tensor<64x1xi32>\n"
                       "    %2 = broadcast %1 : tensor<64x64xi32>\n"
                       "    %3 = cast %2 : tensor<64x64xf32>\n"
                       "    %4 = reduce %3 {axis = 1, kind = \"add\"} : tensor<64xf32>\n"
                       "    %5 = splat %x : tensor<64xptr<f32>>\n"
                       "    %6 = addptr %5, %0 : tensor<64xptr<f32>>\n"
                       "    store %6, %4, _\n"
                       "    return\n"
                       "  }\n"
                       "}\n"))
        return;
    NrGpuOptions o = {4, 1, 80, false, NULL, true, NULL, false, false, 0};
    CHECK(nr_run_gpu_pipeline(c.m, &o, &c.d), "pipeline: %s", nr_diags_render(&c.a, &c.d));
    NrFunc *f = c.m->funcs[0];
    int64_t end = 0;
    for (NrOpId op = 1; op < f->nops; op++) {
        if (f->ops[op].dead || !f->ops[op].block) continue;
        int64_t bytes = nr_ptx_scratch_bytes(f, op);
        if (bytes <= 0) continue;
        const NrAttr *a = nr_op_attr(f, op, NR_A_SMEM_OFFSET);
        CHECK(a && a->kind == NR_AK_INT, "an op with scratch has smem_offset");
        if (a && a->v.i + bytes > end) end = a->v.i + bytes;
    }
    CHECK(f->smem_bytes >= end, "total %lld covers the scratch (%lld)", (long long)f->smem_bytes, (long long)end);
    ctx_free(&c);
}

/* A matmul loop through the whole pipeline with num_stages = 3: both tiles
 * go through cp.async into 3-buffered shared memory. */
static void test_pipelined_matmul(void) {
    static const char *text =
        "module {\n"
        "  func @mm(%a: ptr<f16> {divisibility = 16}, %b: ptr<f16> {divisibility = 16}, %c: ptr<f32> {divisibility = 16},\n"
        "           %n: i32) kernel {\n"
        "    %0 = arange {end = 64, start = 0} : tensor<64xi32>\n"
        "    %1 = expand_dims %0 {axis = 1} : tensor<64x1xi32>\n"
        "    %2 = const {value = 64} : tensor<64x1xi32>\n"
        "    %3 = mul %1, %2 : tensor<64x1xi32>\n"
        "    %4 = broadcast %3 : tensor<64x64xi32>\n"
        "    %5 = expand_dims %0 {axis = 0} : tensor<1x64xi32>\n"
        "    %6 = broadcast %5 : tensor<64x64xi32>\n"
        "    %7 = add %4, %6 : tensor<64x64xi32>\n"
        "    %8 = splat %a : tensor<64x64xptr<f16>>\n"
        "    %9 = addptr %8, %7 : tensor<64x64xptr<f16>>\n"
        "    %10 = splat %b : tensor<64x64xptr<f16>>\n"
        "    %11 = addptr %10, %7 : tensor<64x64xptr<f16>>\n"
        "    %12 = const {value = 0.0} : tensor<64x64xf32>\n"
        "    %13 = const {value = 0} : i32\n"
        "    %14 = const {value = 1} : i32\n"
        "    %15 = const {value = 4096} : tensor<64x64xi32>\n"
        "    %26 = const {value = 64} : tensor<64x64xi32>\n"
        "    %16, %17, %18 = for %13, %n, %14, %12, %9, %11 : tensor<64x64xf32>, tensor<64x64xptr<f16>>, tensor<64x64xptr<f16>> {\n"
        "    ^(%i: i32, %acc: tensor<64x64xf32>, %pa: tensor<64x64xptr<f16>>, %pb: tensor<64x64xptr<f16>>):\n"
        "      %19 = load %pa, _, _ : tensor<64x64xf16>\n"
        "      %20 = load %pb, _, _ : tensor<64x64xf16>\n"
        "      %21 = dot %19, %20, %acc : tensor<64x64xf32>\n"
        "      %22 = addptr %pa, %26 : tensor<64x64xptr<f16>>\n"
        "      %23 = addptr %pb, %15 : tensor<64x64xptr<f16>>\n"
        "      yield %21, %22, %23\n"
        "    }\n"
        "    %24 = splat %c : tensor<64x64xptr<f32>>\n"
        "    %25 = addptr %24, %7 : tensor<64x64xptr<f32>>\n"
        "    store %25, %16, _\n"
        "    return\n"
        "  }\n"
        "}\n";
    for (int stages = 1; stages <= 4; stages++) {
        Ctx c;
        if (!ctx_parse(&c, text)) return;
        NrGpuOptions o = {4, stages, 80, false, NULL, true, NULL, false, false, 0};
        CHECK(nr_run_gpu_pipeline(c.m, &o, &c.d), "pipeline (%d stages): %s", stages, nr_diags_render(&c.a, &c.d));
        NrFunc *f = c.m->funcs[0];
        int allocs = count_ops(f, NR_OP_LOCAL_ALLOC), copies = count_ops(f, NR_OP_ASYNC_COPY);
        int loads = count_ops(f, NR_OP_LOAD), waits = count_ops(f, NR_OP_ASYNC_WAIT);
        if (stages == 1) {
            CHECK(allocs == 0 && copies == 0 && loads == 2, "1 stage: no pipelining");
        } else {
            CHECK(allocs == 2 && loads == 0, "%d stages: %d allocs, %d loads", stages, allocs, loads);
            CHECK(copies == 2 * stages, "%d stages: %d copies", stages, copies);
            CHECK(waits == 2, "%d stages: %d waits", stages, waits);
            CHECK(f->smem_bytes >= 2 * stages * 64 * 64 * 2, "%d stages: %lld bytes", stages, (long long)f->smem_bytes);
        }
        ctx_free(&c);
    }
}

int main(void) {
    test_pipelined_matmul();
    test_pipeline();
    test_scratch();
    test_axis_vector_add();
    test_axis_2d();
    test_axis_loops_and_hints();
    if (failures) {
        printf("test_gpu: %d checks failed\n", failures);
        return 1;
    }
    printf("test_gpu: ok\n");
    return 0;
}
