/* test_gpu.c - the GPU passes on IR text: axis analysis facts on known
 * kernels (vector add, 2-D tiles, loops, hints, unaligned pointers). */
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

int main(void) {
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
