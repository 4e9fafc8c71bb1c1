/* test_ir.c - the IR's text form and verifier: modules built with the
 * builder API print, parse back and print identically; parse errors and
 * verifier violations give the expected diagnostics; random modules and
 * random corruptions of printed text round-trip or fail cleanly. */
#include "ir.h"

#include <math.h>
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

/* --- helpers ----------------------------------------------------------------------------------- */
typedef struct Ctx {
    NrArena a;
    NrDiags d;
    NrSources s;
} Ctx;

static void ctx_init(Ctx *c) {
    nr_arena_init(&c->a);
    nr_sources_init(&c->s, &c->a);
    nr_diags_init(&c->d, &c->a, &c->s);
}

static void ctx_free(Ctx *c) { nr_arena_free(&c->a); }

static NrModule *parse(Ctx *c, const char *text) { return nr_module_parse(&c->a, text, strlen(text), "t.ir", &c->d); }

static char *print_opts(NrModule *m, bool locs) {
    NrPrintOptions o = {locs};
    return nr_module_to_string(m, &o);
}
static char *print(NrModule *m) { return print_opts(m, false); }

/* print -> parse -> print gives the same text; returns the parsed module */
static NrModule *roundtrip(Ctx *c, NrModule *m, const char *what) {
    char *t1 = print(m);
    NrModule *m2 = parse(c, t1);
    CHECK(m2 != NULL, "%s: printed text does not parse back:\n%s\n%s", what, t1, nr_diags_render(&c->a, &c->d));
    if (!m2) return NULL;
    char *t2 = print(m2);
    CHECK(strcmp(t1, t2) == 0, "%s: round trip differs:\n--- first\n%s--- second\n%s", what, t1, t2);
    return m2;
}

/* Parsing `text` fails with a diagnostic containing `want`. */
static void expect_parse_error(const char *text, const char *want) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = parse(&c, text);
    char *r = nr_diags_render(&c.a, &c.d);
    CHECK(m == NULL, "expected an error for:\n%s", text);
    CHECK(strstr(r, want) != NULL, "expected '%s' in the diagnostics for:\n%s\ngot:\n%s", want, text, r);
    ctx_free(&c);
}

/* Verifying m fails with a diagnostic containing `want`. */
static void expect_verify_error(Ctx *c, NrModule *m, const char *want) {
    int before = c->d.n;
    bool ok = nr_module_verify(m, &c->d);
    CHECK(!ok, "expected the verifier to reject (%s)", want);
    bool found = false;
    for (int i = before; i < c->d.n; i++) found |= strstr(c->d.v[i].msg, want) != NULL;
    CHECK(found, "expected a diagnostic containing '%s'; got %d: %s", want, c->d.n - before,
          c->d.n > before ? c->d.v[before].msg : "(none)");
}

static void expect_verify_ok(Ctx *c, NrModule *m, const char *what) {
    int before = c->d.n;
    bool ok = nr_module_verify(m, &c->d);
    CHECK(ok, "%s: verifier rejected: %s", what, c->d.n > before ? c->d.v[before].msg : "?");
}

/* --- a kernel built with the builder API ------------------------------------------------------- */
static NrFunc *build_add_kernel(NrModule *m) {
    NrTypeId pf32 = nr_type_ptr(m, NR_DT_F32, 1), i32 = nr_type_scalar(m, NR_DT_I32);
    NrTypeId args[4] = {pf32, pf32, pf32, i32};
    NrFunc *f = nr_func_new(m, "add_kernel", 4, args, 0, NULL);
    f->is_kernel = true;
    const char *names[4] = {"x", "y", "out", "n"};
    for (int i = 0; i < 4; i++) {
        f->vals[f->blocks[f->body].args[i]].name = names[i];
        f->params[i].name = names[i];
        if (i < 3) f->params[i].divisibility = 16;
    }
    NrValId x = f->blocks[f->body].args[0], y = f->blocks[f->body].args[1];
    NrValId out = f->blocks[f->body].args[2], n = f->blocks[f->body].args[3];
    NrBuilder b = nr_builder_at_end(f, f->body);
    b.loc = (NrLoc){0, 7, 3};
    int32_t shape[1] = {1024};
    NrTypeId vi = nr_type_block(m, i32, 1, shape), vf = nr_type_block(m, nr_type_scalar(m, NR_DT_F32), 1, shape);
    NrTypeId vp = nr_type_block(m, pf32, 1, shape), vb = nr_type_block(m, nr_type_scalar(m, NR_DT_I1), 1, shape);
    NrOpId pid = nr_build(&b, NR_OP_PROGRAM_ID, 0, NULL, 1, &i32, 0);
    nr_op_set_int(f, pid, NR_A_AXIS, 0);
    NrValId bs = nr_build_const_int(&b, i32, 1024);
    NrValId start = nr_build_binary(&b, NR_OP_MUL, nr_op_result(f, pid, 0), bs);
    NrOpId ar = nr_build(&b, NR_OP_ARANGE, 0, NULL, 1, &vi, 0);
    nr_op_set_int(f, ar, NR_A_START, 0);
    nr_op_set_int(f, ar, NR_A_END, 1024);
    NrValId splat = nr_build1(&b, NR_OP_SPLAT, vi, 1, &start);
    NrValId offs = nr_build_binary(&b, NR_OP_ADD, splat, nr_op_result(f, ar, 0));
    NrValId cmpops[2] = {offs, nr_build1(&b, NR_OP_SPLAT, vi, 1, &n)};
    NrOpId cmp = nr_build(&b, NR_OP_CMP, 2, cmpops, 1, &vb, 0);
    nr_op_set_str(f, cmp, NR_A_PRED, "lt");
    NrValId mask = nr_op_result(f, cmp, 0);
    NrValId ptrs[3];
    NrValId bases[3] = {x, y, out};
    for (int i = 0; i < 3; i++) {
        NrValId ap[2] = {nr_build1(&b, NR_OP_SPLAT, vp, 1, &bases[i]), offs};
        ptrs[i] = nr_build1(&b, NR_OP_ADDPTR, vp, 2, ap);
    }
    NrValId l0[3] = {ptrs[0], mask, NR_NONE}, l1[3] = {ptrs[1], mask, NR_NONE};
    NrValId v0 = nr_build1(&b, NR_OP_LOAD, vf, 3, l0);
    NrValId v1 = nr_build1(&b, NR_OP_LOAD, vf, 3, l1);
    NrValId sum = nr_build_binary(&b, NR_OP_ADD, v0, v1);
    NrValId st[3] = {ptrs[2], sum, mask};
    nr_build(&b, NR_OP_STORE, 3, st, 0, NULL, 0);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    return f;
}

static const char *const add_kernel_text =
    "module {\n"
    "  func @add_kernel(%x: ptr<f32> {divisibility = 16}, %y: ptr<f32> {divisibility = 16}, %out: ptr<f32> "
    "{divisibility = 16}, %n: i32) kernel {\n"
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
    "    %10 = splat %y : tensor<1024xptr<f32>>\n"
    "    %11 = addptr %10, %5 : tensor<1024xptr<f32>>\n"
    "    %12 = splat %out : tensor<1024xptr<f32>>\n"
    "    %13 = addptr %12, %5 : tensor<1024xptr<f32>>\n"
    "    %14 = load %9, %7, _ : tensor<1024xf32>\n"
    "    %15 = load %11, %7, _ : tensor<1024xf32>\n"
    "    %16 = add %14, %15 : tensor<1024xf32>\n"
    "    store %13, %16, %7\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_builder_roundtrip(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = nr_module_new(&c.a);
    build_add_kernel(m);
    expect_verify_ok(&c, m, "add_kernel");
    char *t = print(m);
    CHECK(strcmp(t, add_kernel_text) == 0, "add_kernel prints as\n%s", t);
    roundtrip(&c, m, "add_kernel");
    char *tl = print_opts(m, true);
    CHECK(strstr(tl, "%0 = program_id {axis = 0} : i32 loc(7:3)\n") != NULL, "locs:\n%s", tl);
    /* nr_func_print: the function alone, at indent 0 */
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    nr_func_print(m->funcs[0], NULL, fp);
    fclose(fp);
    CHECK(buf && strncmp(buf, "func @add_kernel(", 17) == 0 && strstr(buf, "\n  %0 = program_id") &&
              buf[len - 2] == '}',
          "nr_func_print:\n%s", buf ? buf : "");
    free(buf);
    ctx_free(&c);
}

/* Parsed ops carry the line and column of their name; loc(L:C) overrides. */
static void test_locations(void) {
    Ctx c;
    ctx_init(&c);
    const char *text = "module {\n"
                       "  func @f(%a: i32) {\n"
                       "    %0 = add %a, %a : i32\n"
                       "    %1 = mul %0, %0 : i32 loc(42:7)\n"
                       "    return\n"
                       "  }\n"
                       "}\n";
    NrModule *m = parse(&c, text);
    CHECK(m != NULL, "parse failed: %s", nr_diags_render(&c.a, &c.d));
    if (m) {
        NrFunc *f = m->funcs[0];
        NrOpId o1 = f->blocks[f->body].first, o2 = f->ops[o1].next, o3 = f->ops[o2].next;
        CHECK(f->ops[o1].loc.line == 3 && f->ops[o1].loc.col == 10 && f->ops[o1].loc.file != 0, "add loc %u:%u",
              f->ops[o1].loc.line, f->ops[o1].loc.col);
        CHECK(f->ops[o2].loc.line == 42 && f->ops[o2].loc.col == 7, "mul loc %u:%u", f->ops[o2].loc.line,
              f->ops[o2].loc.col);
        CHECK(f->ops[o3].loc.line == 5 && f->ops[o3].loc.col == 5, "return loc");
        CHECK(strcmp(f->params[0].name, "a") == 0 && strcmp(f->vals[f->blocks[f->body].args[0]].name, "a") == 0,
              "param name");
    }
    /* A verifier error in parsed IR shows the .ir line with a caret. */
    NrModule *bad =
        parse(&c, "module {\n  func @f(%a: i32, %b: f32) {\n    %0 = add %a, %b : i32\n    return\n  }\n}\n");
    char *r = nr_diags_render(&c.a, &c.d);
    CHECK(bad == NULL, "expected a verifier error");
    CHECK(strstr(r, "t.ir:3:10: error: add: operand 1 has type f32, expected i32\n"
                    "        %0 = add %a, %b : i32\n"
                    "             ^\n") != NULL,
          "rendered:\n%s", r);
    ctx_free(&c);
}

/* --- every form of the text ---------------------------------------------------------------------- */
static const char *const forms_text =
    "module {\n"
    "  func @helper(%a: f32, %b: f32) -> (f32, f32) noinline {\n"
    "    %0 = add %a, %b : f32\n"
    "    return %0, %a\n"
    "  }\n"
    "\n"
    "  func @k(%n: i32 {divisibility = 16, equal_to_1}, %p: ptr<f32>, %q: ptr<ptr<f16>>, %arg3: i64) kernel {\n"
    "    %0 = const {value = 0} : i32\n"
    "    %1 = const {value = 1} : i32\n"
    "    %2 = const {value = 0.0} : f32\n"
    "    %3, %4 = for %0, %n, %1, %2, %0 {num_stages = 3} : f32, i32 {\n"
    "    ^(%5: i32, %6: f32, %7: i32):\n"
    "      %8 = cmp %5, %n {pred = \"lt\"} : i1\n"
    "      %9 = if %8 : f32 {\n"
    "        yield %6\n"
    "      } {\n"
    "        %10, %11 = call %6, %6 {callee = \"helper\"} : f32, f32\n"
    "        yield %10\n"
    "      }\n"
    "      %12 = add %7, %5 : i32\n"
    "      yield %9, %12\n"
    "    }\n"
    "    %13 = while %0 : i32 {\n"
    "    ^(%14: i32):\n"
    "      %15 = cmp %14, %n {pred = \"lt\"} : i1\n"
    "      condition %15, %14\n"
    "    } {\n"
    "    ^(%16: i32):\n"
    "      %17 = add %16, %1 : i32\n"
    "      yield %17\n"
    "    }\n"
    "    for %0, %n, %1 {\n"
    "    ^(%18: i32):\n"
    "      yield\n"
    "    }\n"
    "    store %p, %3, _\n"
    "    print %13, %4 {hex = true, prefix = \"w=\\t\\\"x\\\"\\n\\r\\x01\\x7f\\xff\"}\n"
    "    barrier\n"
    "    %19 = const {value = -1.5e-07} : f64\n"
    "    %20 = const {value = nan} : f32\n"
    "    %21 = const {value = -inf} : f32\n"
    "    %22 = const {value = 1e+20} : f64\n"
    "    %23 = const {value = -0.0} : f64\n"
    "    %24 = const {value = 0.1} : f64\n"
    "    %25 = const {value = 123456.0} : f32\n"
    "    %26 = const {value = -9223372036854775808} : i64\n"
    "    %27 = arange {end = 64, start = 0} : tensor<64xi32>\n"
    "    %28 = expand_dims %27 {axis = 1} : tensor<64x1xi32>\n"
    "    %29 = broadcast %28 : tensor<64x32xi32>\n"
    "    %30 = trans %29 {order = [1, 0]} : tensor<32x64xi32>\n"
    "    %31 = load %q, _, _ : ptr<f16>\n"
    "    %32 = cast %arg3 : f32\n"
    "    return\n"
    "  }\n"
    "\n"
    "  func @\"odd name\"() {\n"
    "    return\n"
    "  }\n"
    "}\n";

static void test_forms(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = parse(&c, forms_text);
    CHECK(m != NULL, "forms do not parse:\n%s", nr_diags_render(&c.a, &c.d));
    if (m) {
        char *t = print(m);
        CHECK(strcmp(t, forms_text) == 0, "forms print as\n%s", t);
        roundtrip(&c, m, "forms");
        NrFunc *k = m->funcs[1];
        CHECK(k->params[0].divisibility == 16 && k->params[0].equal_to_1 && k->params[1].divisibility == 1,
              "param facts");
        CHECK(k->is_kernel && !k->noinline && m->funcs[0]->noinline && !m->funcs[0]->is_kernel, "func flags");
        CHECK(strcmp(m->funcs[2]->name, "odd name") == 0, "quoted function name");
    }
    ctx_free(&c);
}

/* Parameters print by name when the name is a unique identifier that cannot
 * clash with the %argN fallback of another parameter. */
static void test_param_names(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = nr_module_new(&c.a);
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
    NrTypeId args[8] = {i32, i32, i32, i32, i32, i32, i32, i32};
    NrFunc *f = nr_func_new(m, "f", 8, args, 0, NULL);
    const char *names[8] = {"a", "a", "0bad", NULL, "arg5", "arg5x", "with space", "arg7"};
    for (int i = 0; i < 8; i++) f->vals[f->blocks[f->body].args[i]].name = names[i];
    NrBuilder b = nr_builder_at_end(f, f->body);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    char *t = print(m);
    CHECK(strstr(t, "func @f(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: i32, %arg5x: i32, %arg6: i32, "
                    "%arg7: i32)") != NULL,
          "names:\n%s", t);
    roundtrip(&c, m, "param names");
    ctx_free(&c);
}

/* --- floats ------------------------------------------------------------------------------------ */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int rndn(int n) { return (int)(rnd() % (uint64_t)n); }

static void test_floats(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = nr_module_new(&c.a);
    NrTypeId f64 = nr_type_scalar(m, NR_DT_F64);
    NrFunc *f = nr_func_new(m, "f", 0, NULL, 0, NULL);
    NrBuilder b = nr_builder_at_end(f, f->body);
    enum { N = 3000 };
    static double vals[N];
    double fixed[] = {0.0, -0.0, 1.0, -1.0, 0.1, 1e-5, 1e300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                      123456789.0, 1e16, 1e17, 3.0e-7, INFINITY, -INFINITY, 0.30000000000000004, 65504.0, 448.0};
    int n = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) vals[n++] = fixed[i];
    while (n < N) {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isnan(d)) continue;
        vals[n] = (n & 1) ? d : (double)(float)((double)rndn(1000000) / (1 + rndn(1000)));
        n++;
    }
    for (int i = 0; i < N; i++) nr_build_const_float(&b, f64, vals[i]);
    nr_build_const_float(&b, f64, NAN);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    char *t = print(m);
    /* every printed float is marked as a float */
    for (char *p = strstr(t, "value = "); p; p = strstr(p + 1, "value = ")) {
        char *e = strchr(p, '}');
        size_t len = (size_t)(e - p - 8);
        char tok[64];
        snprintf(tok, sizeof tok, "%.*s", (int)len, p + 8);
        CHECK(strpbrk(tok, ".e") || strcmp(tok, "nan") == 0 || strcmp(tok, "inf") == 0 || strcmp(tok, "-inf") == 0,
              "float printed without a float marker: %s", tok);
    }
    NrModule *m2 = roundtrip(&c, m, "floats");
    if (m2) {
        NrFunc *g = m2->funcs[0];
        int i = 0;
        NR_FOR_OPS(g, g->body, o) {
            if (g->ops[o].opc != NR_OP_CONST || i >= N) continue;
            double got = nr_op_float(g, o, NR_A_VALUE, 0);
            CHECK(memcmp(&got, &vals[i], sizeof got) == 0, "float %.17g read back as %.17g", vals[i], got);
            i++;
        }
        CHECK(i == N, "read %d floats", i);
    }
    /* shortest form */
    CHECK(strstr(t, "{value = 0.1}") && strstr(t, "{value = 1e-05}") && strstr(t, "{value = 5e-324}") &&
              strstr(t, "{value = -0.0}") && strstr(t, "{value = 1.0}") && strstr(t, "{value = 123456789.0}") &&
              strstr(t, "{value = 1e+16}") && strstr(t, "{value = 0.30000000000000004}"),
          "shortest floats:\n%.400s", t);
    ctx_free(&c);
}

/* --- parse errors ------------------------------------------------------------------------------ */
static void test_parse_errors(void) {
    expect_parse_error("module { func @f(%a: i32) { %0 = add %a, %zz : i32\n return } }",
                       "1:42: error: use of undefined value %zz");
    expect_parse_error("module { func @f(%a: i32) { %0 = frob %a : i32\n return } }", "unknown op 'frob'");
    expect_parse_error("module { func @f(%a: i32) { %0 = add %a, %a : i32, i32\n return } }",
                       "add has 1 result but 2 result types");
    expect_parse_error("module { func @f(%a: i32) { %a = add %a, %a : i32\n return } }",
                       "value %a is already defined at 1:18");
    expect_parse_error("module { func @f(%a: tensor<0xf32>) { return } }", "block dimensions must be positive");
    expect_parse_error("module { func @f(%a: tensor<4294967296xf32>) { return } }",
                       "block dimensions must fit in 32 bits");
    expect_parse_error("module { func @f(%a: tensor<1x1x1x1x1x1x1x1x1xf32>) { return } }", "block rank exceeds 8");
    expect_parse_error("module { func @f(%a: tensor<f32>) { return } }", "a tensor type needs at least one dimension");
    expect_parse_error("module { func @f(%a: tensor<4xf31>) { return } }", "unknown element type 'f31'");
    expect_parse_error("module { func @f(%a: tensor<4xf32, #L0>) { return } }", "layout ids must be positive");
    expect_parse_error("module { func @f(%a: tensor<4xf32, L1>) { return } }", "expected a layout '#L<n>'");
    expect_parse_error("module { func @f(%a: tensor<4xf32) { return } }", "expected '>' in type");
    expect_parse_error("module { func @f(%a: ptr<ptr<ptr<ptr<ptr<ptr<ptr<ptr<ptr<f32>>>>>>>>>) { return } }",
                       "pointer types nest more than 8 deep");
    expect_parse_error("module { func @f() { %0 = const {value = 99999999999999999999} : i64\n return } }",
                       "integer '99999999999999999999' is out of range");
    expect_parse_error("module { func @f() { %0 = const {value = 1, value = 2} : i64\n return } }",
                       "duplicate attribute 'value'");
    expect_parse_error("module { func @f() { %0 = const {valu = 1} : i64\n return } }", "unknown attribute 'valu'");
    expect_parse_error("module { func @f() { print {prefix = \"a\\qb\"}\n return } }", "unknown escape sequence '\\q'");
    expect_parse_error("module { func @f() { print {prefix = \"a\\x00b\"}\n return } }", "strings may not contain NUL");
    expect_parse_error("module { func @f() { print {prefix = \"ab\n\"}\n return } }", "an unterminated string");
    expect_parse_error("module { func @f() { return } } junk", "expected end of input, got 'junk'");
    expect_parse_error("module { func @f() { return } func @f() { return } }", "function @f is already defined");
    expect_parse_error("module { func @f() kernel kernel { return } }", "'kernel' is given twice");
    expect_parse_error("module { func @f(%a: i32 {divisibility = 0}) { return } }", "integer 0 is out of range [1,");
    expect_parse_error("module { func @f(%a: i32 {divisible}) { return } }",
                       "expected 'divisibility', 'equal_to_1', 'constexpr' or 'tensordesc'");
    expect_parse_error("module { func @f() { return } ", "expected 'func' or '}', got end of input");
    expect_parse_error("module { func @\"\"() { return } }", "function names may not be empty");
    expect_parse_error("module { func @f() { return $ } }", "got '$'");
    expect_parse_error("module { func @f() { %0 = const {value = 1} : i32 loc(1:x)\n return } }",
                       "expected an integer");
    /* a use in a region of a value defined inside a sibling region */
    expect_parse_error("module { func @f(%c: i1) {\n if %c {\n %x = add %c, %c : i1\n yield\n } {\n %y = add %x, %x : "
                       "i1\n yield\n }\n return } }",
                       "value %x is not visible here: it is defined at 3:2");
    /* an op's own results are not visible in its regions */
    expect_parse_error("module { func @f(%c: i1) {\n %r = if %c : i1 {\n yield %r\n } {\n yield %c\n }\n return } }",
                       "use of undefined value %r");
    {
        char num[600] = "module { func @f() { %0 = const {value = 1.";
        size_t n = strlen(num);
        memset(num + n, '5', 450);
        strcpy(num + n + 450, "} : f64\n return } }");
        expect_parse_error(num, "number is too long");
    }
    expect_parse_error("module { func @f(%c: i1) { if %c {yield} {yield} {yield} {yield} {yield} {yield} {yield} "
                       "{yield} {yield} {yield} {yield} {yield} {yield} {yield} {yield} {yield} {yield}\n return } }",
                       "more than 16 regions");
    expect_parse_error("module { func @f() { print {prefix = \"\x01\"}\n return } } \x01", "character 0x01");
    /* list lengths are bounded */
    {
        size_t cap = 70000 * 4 + 200;
        char *s = malloc(cap);
        size_t n = (size_t)snprintf(s, cap, "module { func @f(%%a: i32) { print %%a");
        for (int i = 0; i < 65536; i++) n += (size_t)snprintf(s + n, cap - n, ", %%a");
        snprintf(s + n, cap - n, "\n return } }");
        expect_parse_error(s, "more than 65536 operands");
        n = (size_t)snprintf(s, cap, "module { func @f() { %%0 = trans {order = [0");
        for (int i = 0; i < 65536; i++) n += (size_t)snprintf(s + n, cap - n, ", 0");
        snprintf(s + n, cap - n, "]} : i32\n return } }");
        expect_parse_error(s, "more than 65536 elements in a list");
        free(s);
    }
    /* deep nesting is an error, not a stack overflow */
    {
        size_t cap = 300 * 40 + 200;
        char *s = malloc(cap);
        size_t n = (size_t)snprintf(s, cap, "module { func @f(%%c: i1) {\n");
        for (int i = 0; i < 300; i++) n += (size_t)snprintf(s + n, cap - n, "if %%c {\n");
        snprintf(s + n, cap - n, "yield\n");
        expect_parse_error(s, "regions nest more than 200 deep");
        free(s);
    }
}

/* The operand list starts on the line of the op's name. */
static void test_operand_lines(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = parse(&c, "module {\n  func @f(%a: i32) {\n    barrier\n    %0 = add %a,\n      %a : i32\n    "
                            "print\n    %1 = add %0, %0 : i32\n    return\n  }\n}\n");
    CHECK(m != NULL, "operand lines: %s", nr_diags_render(&c.a, &c.d));
    ctx_free(&c);
}

/* --- verifier via the API ---------------------------------------------------------------------- */
static void test_verifier_api(void) {
    Ctx c;
    ctx_init(&c);
    NrModule *m = nr_module_new(&c.a);
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), f32 = nr_type_scalar(m, NR_DT_F32);
    NrTypeId args[2] = {i32, f32};

    /* SAME: types differ */
    NrFunc *f = nr_func_new(m, "same", 2, args, 0, NULL);
    NrValId a = f->blocks[f->body].args[0], x = f->blocks[f->body].args[1];
    NrBuilder b = nr_builder_at_end(f, f->body);
    NrValId ops[2] = {a, x};
    nr_build1(&b, NR_OP_ADD, i32, 2, ops);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    expect_verify_error(&c, m, "add: operand 1 has type f32, expected i32");
    nr_module_remove_func(m, f);

    /* absent operand, wrong arity, missing terminator */
    f = nr_func_new(m, "arity", 2, args, 0, NULL);
    a = f->blocks[f->body].args[0];
    b = nr_builder_at_end(f, f->body);
    NrValId none[2] = {a, NR_NONE};
    nr_build1(&b, NR_OP_ADD, i32, 2, none);
    nr_build1(&b, NR_OP_ADD, i32, 1, &a);
    expect_verify_error(&c, m, "add: operand 1 is absent ('_')");
    expect_verify_error(&c, m, "add: expected 2 operands, got 1");
    expect_verify_error(&c, m, "function @arity: body does not end with return");
    nr_module_remove_func(m, f);

    /* use before definition; terminator not last */
    f = nr_func_new(m, "order", 2, args, 0, NULL);
    a = f->blocks[f->body].args[0];
    b = nr_builder_at_end(f, f->body);
    NrOpId ret = nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    NrValId later = nr_build_binary(&b, NR_OP_ADD, a, a);
    NrBuilder before = nr_builder_before(f, ret);
    nr_build_binary(&before, NR_OP_MUL, later, later);
    expect_verify_error(&c, m, "mul: operand 0 is not visible here");
    expect_verify_error(&c, m, "return: must be the last op of its block");
    nr_module_remove_func(m, f);

    /* block limits */
    f = nr_func_new(m, "limits", 0, NULL, 0, NULL);
    b = nr_builder_at_end(f, f->body);
    int32_t three[1] = {3}, big[2] = {2048, 1024};
    nr_build_const_int(&b, nr_type_block(m, i32, 1, three), 0);
    nr_build_const_int(&b, nr_type_block(m, i32, 2, big), 0);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    expect_verify_error(&c, m, "const: result has type tensor<3xi32>, whose dimension 3 is not a power of two");
    expect_verify_error(&c, m, "const: result has type tensor<2048x1024xi32>, which has more than 1048576 elements");
    nr_module_remove_func(m, f);

    /* corrupt structure does not crash the verifier or the printer */
    f = nr_func_new(m, "corrupt", 1, args, 0, NULL);
    a = f->blocks[f->body].args[0];
    b = nr_builder_at_end(f, f->body);
    NrValId s = nr_build_binary(&b, NR_OP_ADD, a, a);
    NrOpId bad = nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    NrValId wild[2] = {s, 12345};
    nr_op_set_operands(f, f->vals[s].def, 2, wild);
    (void)bad;
    expect_verify_error(&c, m, "add: operand 1 is an invalid value id 12345");
    char *t = print(m);
    CHECK(strstr(t, "%<undef:12345>") != NULL, "printer on bad ids:\n%s", t);
    nr_module_remove_func(m, f);

    /* links broken by a careless pass: a cycle in the op list, an erased op
     * still listed, a result that another op claims */
    f = nr_func_new(m, "links", 1, args, 0, NULL);
    a = f->blocks[f->body].args[0];
    b = nr_builder_at_end(f, f->body);
    NrValId s1 = nr_build_binary(&b, NR_OP_ADD, a, a);
    NrValId s2 = nr_build_binary(&b, NR_OP_ADD, s1, a);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    NrOpId o1 = f->vals[s1].def, o2 = f->vals[s2].def;
    f->ops[o2].dead = 1;
    expect_verify_error(&c, m, "add: op is erased but still listed in a block");
    f->ops[o2].dead = 0;
    f->ops[o2].results[0] = s1;
    expect_verify_error(&c, m, "add: result 0 is not a value defined by this op");
    f->ops[o2].results[0] = s2;
    NrOpId saved = f->ops[o2].next;
    f->ops[o2].next = o1;
    expect_verify_error(&c, m, "function @links: the body has a corrupt op list");
    t = print(m); /* the printer stops too */
    f->ops[o2].next = saved;
    f->ops[o1].opc = NR_OP_COUNT + 3;
    expect_verify_error(&c, m, "invalid opcode");
    t = print(m);
    CHECK(strstr(t, "%0 = invalid %arg0, %arg0 : i32") != NULL, "printer on a bad opcode:\n%s", t);
    nr_module_remove_func(m, f);

    /* function-level rules */
    f = nr_func_new(m, "dup", 1, args, 0, NULL);
    b = nr_builder_at_end(f, f->body);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    NrFunc *f2 = nr_func_new(m, "dup", 1, args, 0, NULL);
    b = nr_builder_at_end(f2, f2->body);
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    f2->params[0].divisibility = 0;
    expect_verify_error(&c, m, "function @dup is defined twice");
    expect_verify_error(&c, m, "function @dup: parameter 0 has divisibility 0, expected a positive value");
    nr_module_remove_func(m, f);
    nr_module_remove_func(m, f2);

    /* a module-level rule: call of a missing function */
    f = nr_func_new(m, "caller", 1, args, 0, NULL);
    b = nr_builder_at_end(f, f->body);
    NrOpId call = nr_build(&b, NR_OP_CALL, 0, NULL, 0, NULL, 0);
    nr_op_set_str(f, call, NR_A_CALLEE, "nowhere");
    nr_build(&b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    expect_verify_error(&c, m, "call: callee @nowhere is not defined in the module");
    nr_module_remove_func(m, f);

    CHECK(m->nfuncs == 0, "functions left");
    expect_verify_ok(&c, m, "empty module");
    ctx_free(&c);
}

/* --- random modules ------------------------------------------------------------------------------ */
/* A random well-typed function: a pool of values of several types grows as
 * random ops are appended; for/if/while nest to a small depth. */
typedef struct Gen {
    NrModule *m;
    NrFunc *f;
    NrValId pool[4096];
    int npool;
} Gen;

static const NrDtype gen_dtypes[] = {NR_DT_I1, NR_DT_I8, NR_DT_I16, NR_DT_I32, NR_DT_I64, NR_DT_U8, NR_DT_U16,
                                     NR_DT_U32, NR_DT_U64, NR_DT_F8E4NV, NR_DT_F8E5, NR_DT_F16, NR_DT_BF16,
                                     NR_DT_F32, NR_DT_F64};

static NrTypeId gen_type(Gen *g) {
    NrTypeId e = nr_type_scalar(g->m, gen_dtypes[rndn((int)(sizeof gen_dtypes / sizeof gen_dtypes[0]))]);
    int rank = rndn(3);
    int32_t shape[2];
    for (int i = 0; i < rank; i++) shape[i] = 1 << rndn(5);
    return rank ? nr_type_block(g->m, e, rank, shape) : e;
}

/* A visible value of type t, made by a const if the pool has none. */
static NrValId gen_value(Gen *g, NrBuilder *b, NrTypeId t, int visible) {
    int start = rndn(visible > 0 ? visible : 1);
    for (int k = 0; k < visible; k++) {
        NrValId v = g->pool[(start + k) % visible];
        if (g->f->vals[v].type == t) return v;
    }
    NrDtype dt = nr_type_dtype(g->m, t);
    NrValId v;
    if (nr_dt_is_float(dt)) v = nr_build_const_float(b, t, (double)(int64_t)rnd() / (double)(1ull << (rndn(62) + 1)));
    else v = nr_build_const_int(b, t, dt == NR_DT_I1 ? rndn(2) : (int64_t)(rnd() % 100));
    return v;
}

static void gen_block(Gen *g, NrBlockId blk, int depth, NrOpcode term, int nterm, const NrTypeId *termtypes);

static void gen_ops(Gen *g, NrBuilder *b, int depth, int nops) {
    NrModule *m = g->m;
    NrFunc *f = g->f;
    for (int i = 0; i < nops && g->npool < 4000; i++) {
        int visible = g->npool;
        NrTypeId t = gen_type(g);
        NrDtype dt = nr_type_dtype(m, t);
        int kind = rndn(depth < 3 ? 11 : 8);
        NrValId r = NR_NONE;
        if (kind <= 2) {
            static const NrOpcode num[] = {NR_OP_ADD, NR_OP_SUB, NR_OP_MUL, NR_OP_MAX, NR_OP_MIN, NR_OP_NEG};
            static const NrOpcode ints[] = {NR_OP_AND, NR_OP_OR, NR_OP_XOR, NR_OP_SHL, NR_OP_UMULHI};
            static const NrOpcode flts[] = {NR_OP_EXP, NR_OP_SQRT, NR_OP_FMA, NR_OP_DIV_RN, NR_OP_FLOOR};
            NrOpcode opc = kind == 0 ? num[rndn(6)] : kind == 1 && nr_dt_is_int(dt) ? ints[rndn(5)]
                                                     : nr_dt_is_float(dt)          ? flts[rndn(5)]
                                                                                   : NR_OP_ADD;
            int n = nr_op_info[opc].nopnd;
            NrValId o[3];
            for (int k = 0; k < n; k++) o[k] = gen_value(g, b, t, visible);
            NrOpId op = nr_build(b, opc, n, o, 1, &t, 0);
            if (opc == NR_OP_MAX && nr_dt_is_float(dt)) nr_op_set_str(f, op, NR_A_NAN, rndn(2) ? "all" : "none");
            r = nr_op_result(f, op, 0);
        } else if (kind == 3) {
            NrValId o[2] = {gen_value(g, b, t, visible), gen_value(g, b, t, visible)};
            NrTypeId bt = nr_type_with_dtype(m, t, NR_DT_I1);
            NrOpId op = nr_build(b, NR_OP_CMP, 2, o, 1, &bt, 0);
            nr_op_set_str(f, op, NR_A_PRED, (const char *[]){"eq", "ne", "lt", "le", "gt", "ge"}[rndn(6)]);
            r = nr_op_result(f, op, 0);
        } else if (kind == 4) {
            NrTypeId to = nr_type_with_dtype(m, t, nr_type_dtype(m, gen_type(g)));
            NrValId a = gen_value(g, b, t, visible);
            NrOpId op = nr_build(b, NR_OP_CAST, 1, &a, 1, &to, 0);
            if (rndn(4) == 0) nr_op_set_str(f, op, NR_A_ROUNDING, "rtz");
            r = nr_op_result(f, op, 0);
        } else if (kind == 5) {
            NrTypeId ct = nr_type_with_dtype(m, t, NR_DT_I1);
            NrValId o[3] = {gen_value(g, b, ct, visible), gen_value(g, b, t, visible), gen_value(g, b, t, visible)};
            r = nr_build1(b, NR_OP_SELECT, t, 3, o);
        } else if (kind == 6) {
            const NrType *T = nr_type(m, t);
            if (T->rank >= 1) {
                NrValId a = gen_value(g, b, t, visible);
                int axis = rndn(T->rank);
                int32_t shape[NR_MAX_RANK];
                int k = 0;
                for (int d = 0; d < T->rank; d++)
                    if (d != axis) shape[k++] = T->shape[d];
                NrTypeId rt = nr_type_block(m, nr_type_elem(m, t), k, shape);
                bool isf = nr_dt_is_float(dt);
                NrOpId op = nr_build(b, NR_OP_REDUCE, 1, &a, 1, &rt, 0);
                nr_op_set_int(f, op, NR_A_AXIS, axis);
                nr_op_set_str(f, op, NR_A_KIND, isf ? "add" : (const char *[]){"add", "xor", "max"}[rndn(3)]);
                r = nr_op_result(f, op, 0);
            } else {
                NrValId a = gen_value(g, b, t, visible);
                int32_t shape[1] = {1 << rndn(4)};
                r = nr_build1(b, NR_OP_SPLAT, nr_type_block(m, t, 1, shape), 1, &a);
            }
        } else if (kind == 7) { /* shape ops */
            const NrType *T = nr_type(m, t);
            NrValId a = gen_value(g, b, t, visible);
            int32_t shape[NR_MAX_RANK];
            if (T->rank == 2) {
                shape[0] = T->shape[1];
                shape[1] = T->shape[0];
                NrOpId op =
                    nr_build(b, NR_OP_TRANS, 1, &a, 1, (NrTypeId[]){nr_type_block(m, nr_type_elem(m, t), 2, shape)}, 0);
                nr_op_set_ints(f, op, NR_A_ORDER, 2, (const int64_t[]){1, 0});
                shape[0] = T->shape[0] * T->shape[1];
                NrValId flat = nr_build1(b, NR_OP_RESHAPE, nr_type_block(m, nr_type_elem(m, t), 1, shape), 1, &a);
                g->pool[g->npool++] = nr_op_result(f, op, 0);
                r = flat;
            } else if (T->rank == 1) {
                shape[0] = T->shape[0];
                shape[1] = 1;
                NrOpId op = nr_build(b, NR_OP_EXPAND_DIMS, 1, &a, 1,
                                     (NrTypeId[]){nr_type_block(m, nr_type_elem(m, t), 2, shape)}, 0);
                nr_op_set_int(f, op, NR_A_AXIS, 1);
                shape[1] = 1 << rndn(4);
                NrValId x = nr_op_result(f, op, 0);
                r = nr_build1(b, NR_OP_BROADCAST, nr_type_block(m, nr_type_elem(m, t), 2, shape), 1, &x);
            } else {
                NrOpId op = nr_build(b, NR_OP_HINT, 1, &a, 1, &t, 0);
                nr_op_set_str(f, op, NR_A_KIND, "multiple_of");
                nr_op_set_ints(f, op, NR_A_VALUES, 1, (const int64_t[]){16});
                r = nr_op_result(f, op, 0);
            }
        } else if (kind == 8) { /* for with carried values */
            NrTypeId i32 = nr_type_scalar(m, NR_DT_I32);
            int n = rndn(3);
            NrValId o[5];
            NrTypeId ct[2];
            o[0] = gen_value(g, b, i32, visible);
            o[1] = gen_value(g, b, i32, visible);
            o[2] = gen_value(g, b, i32, visible);
            for (int k = 0; k < n; k++) {
                ct[k] = gen_type(g);
                o[3 + k] = gen_value(g, b, ct[k], visible);
            }
            NrOpId op = nr_build(b, NR_OP_FOR, 3 + n, o, n, ct, 1);
            if (rndn(2)) nr_op_set_int(f, op, NR_A_NUM_STAGES, rndn(5));
            NrBlockId body = f->ops[op].regions[0];
            int mark = g->npool;
            g->pool[g->npool++] = nr_block_add_arg(f, body, i32);
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_block_add_arg(f, body, ct[k]);
            gen_block(g, body, depth + 1, NR_OP_YIELD, n, ct);
            g->npool = mark;
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_op_result(f, op, k);
            continue;
        } else if (kind == 9) { /* if */
            NrTypeId i1 = nr_type_scalar(m, NR_DT_I1);
            NrValId cnd = gen_value(g, b, i1, visible);
            int n = rndn(3);
            NrTypeId ct[2];
            for (int k = 0; k < n; k++) ct[k] = gen_type(g);
            NrOpId op = nr_build(b, NR_OP_IF, 1, &cnd, n, ct, 2);
            for (int rg = 0; rg < 2; rg++) {
                int mark = g->npool;
                gen_block(g, f->ops[op].regions[rg], depth + 1, NR_OP_YIELD, n, ct);
                g->npool = mark;
            }
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_op_result(f, op, k);
            continue;
        } else { /* while */
            NrTypeId i1 = nr_type_scalar(m, NR_DT_I1);
            int n = 1 + rndn(2);
            NrTypeId ct[2];
            NrValId init[2];
            for (int k = 0; k < n; k++) {
                ct[k] = gen_type(g);
                init[k] = gen_value(g, b, ct[k], visible);
            }
            NrOpId op = nr_build(b, NR_OP_WHILE, n, init, n, ct, 2);
            int mark = g->npool;
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_block_add_arg(f, f->ops[op].regions[0], ct[k]);
            /* region 0 ends in condition(flag, values...) */
            NrBuilder rb = nr_builder_at_end(f, f->ops[op].regions[0]);
            gen_ops(g, &rb, depth + 1, rndn(4));
            NrValId co[3];
            co[0] = gen_value(g, &rb, i1, g->npool);
            for (int k = 0; k < n; k++) co[1 + k] = gen_value(g, &rb, ct[k], g->npool);
            nr_build(&rb, NR_OP_CONDITION, 1 + n, co, 0, NULL, 0);
            g->npool = mark;
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_block_add_arg(f, f->ops[op].regions[1], ct[k]);
            gen_block(g, f->ops[op].regions[1], depth + 1, NR_OP_YIELD, n, ct);
            g->npool = mark;
            for (int k = 0; k < n; k++) g->pool[g->npool++] = nr_op_result(f, op, k);
            continue;
        }
        if (r) g->pool[g->npool++] = r;
    }
}

/* Fills blk (its arguments already in the pool) and ends it with `term`
 * passing values of termtypes. */
static void gen_block(Gen *g, NrBlockId blk, int depth, NrOpcode term, int nterm, const NrTypeId *termtypes) {
    NrBuilder b = nr_builder_at_end(g->f, blk);
    gen_ops(g, &b, depth, rndn(6));
    NrValId o[8];
    for (int k = 0; k < nterm; k++) o[k] = gen_value(g, &b, termtypes[k], g->npool);
    nr_build(&b, term, nterm, o, 0, NULL, 0);
}

static void test_random_roundtrips(void) {
    for (int iter = 0; iter < 300; iter++) {
        Ctx c;
        ctx_init(&c);
        Gen g;
        memset(&g, 0, sizeof g);
        g.m = nr_module_new(&c.a);
        int nargs = rndn(4);
        NrTypeId at[4];
        for (int k = 0; k < nargs; k++) at[k] = gen_type(&g);
        NrTypeId rt = gen_type(&g);
        g.f = nr_func_new(g.m, "rand", nargs, at, 1, &rt);
        g.f->is_kernel = rndn(2);
        for (int k = 0; k < nargs; k++) {
            g.pool[g.npool++] = g.f->blocks[g.f->body].args[k];
            g.f->params[k].divisibility = rndn(2) ? 16 : 1;
            g.f->params[k].equal_to_1 = rndn(5) == 0;
        }
        gen_block(&g, g.f->body, 0, NR_OP_RETURN, 1, &rt);
        int before = c.d.n;
        bool ok = nr_module_verify(g.m, &c.d);
        CHECK(ok, "random module %d does not verify: %s\n%s", iter, c.d.n > before ? c.d.v[before].msg : "",
              print(g.m));
        if (ok) {
            NrModule *m2 = roundtrip(&c, g.m, "random module");
            /* the text with locations also reads back */
            if (m2) {
                char *tl = print_opts(m2, true);
                NrModule *m3 = parse(&c, tl);
                CHECK(m3 && strcmp(print_opts(m3, true), tl) == 0, "loc round trip %d", iter);
            }
        }
        ctx_free(&c);
    }
}

/* Random byte edits of valid text: the parser reports or accepts, never
 * crashes; whatever it accepts round-trips. */
static void test_random_corruptions(void) {
    const char *texts[2] = {forms_text, add_kernel_text};
    static const char alphabet[] = "{}()[],:=^%@_-<>x\"\\ \n0123456789abcdefilnoprstuvxyz#L/.";
    for (int iter = 0; iter < 3000; iter++) {
        const char *src = texts[iter & 1];
        size_t len = strlen(src);
        char *t = malloc(len + 16);
        memcpy(t, src, len + 1);
        int edits = 1 + rndn(4);
        for (int k = 0; k < edits; k++) {
            size_t pos = (size_t)rndn((int)len);
            switch (rndn(3)) {
            case 0: t[pos] = alphabet[rndn((int)sizeof alphabet - 1)]; break;
            case 1: memmove(t + pos, t + pos + 1, len - pos); len--; break;
            default:
                memmove(t + pos + 1, t + pos, len - pos + 1);
                t[pos] = alphabet[rndn((int)sizeof alphabet - 1)];
                len++;
            }
        }
        Ctx c;
        ctx_init(&c);
        NrModule *m = nr_module_parse(&c.a, t, len, "t.ir", &c.d);
        if (m) roundtrip(&c, m, "corrupted text");
        else CHECK(c.d.nerrors > 0, "NULL without a diagnostic");
        (void)nr_diags_render(&c.a, &c.d);
        ctx_free(&c);
        free(t);
    }
}

int main(void) {
    test_builder_roundtrip();
    test_locations();
    test_forms();
    test_param_names();
    test_floats();
    test_parse_errors();
    test_operand_lines();
    test_verifier_api();
    test_random_roundtrips();
    test_random_corruptions();
    if (failures) printf("test_ir: %d failure%s\n", failures, failures == 1 ? "" : "s");
    return failures != 0;
}
