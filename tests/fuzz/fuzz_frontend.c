/* fuzz_frontend.c - libFuzzer target for the front end.
 *
 * Each input is registered as a source file and run through the stages
 * below, one function per stage; a stage checks the invariants of its
 * output and traps when one is broken.  Later stages (lowering, passes)
 * are added as further functions called from LLVMFuzzerTestOneInput.
 *
 *   stage_lex    tokens: EOF last, INDENT/DEDENT balanced, every location
 *                and text inside the input
 *   stage_parse  the module; parsing twice gives the same dump (no hidden
 *                state), and a NULL module comes with an error
 *   stage_dump   the AST dump and every rendered diagnostic */
#include "ast.h"
#include "lex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Fuzz {
    NrArena arena;
    NrSources sources;
    NrDiags diags;
    uint32_t file;
    const uint8_t *data;
    size_t size;
    NrAstModule *ast;
    char *dump;
} Fuzz;

#define CHECK(c) ((c) ? (void)0 : __builtin_trap())

static uint32_t count_lines(const uint8_t *d, size_t n) {
    uint32_t lines = 1;
    for (size_t i = 0; i < n; i++)
        if (d[i] == '\n' || (d[i] == '\r' && (i + 1 == n || d[i + 1] != '\n'))) lines++;
    return lines;
}

static void check_loc(const Fuzz *f, NrLoc loc, uint32_t lines) {
    CHECK(loc.file == f->file);
    CHECK(loc.line >= 1 && loc.line <= lines);
    CHECK(loc.col >= 1 && loc.col <= f->size + 1);
}

static void stage_lex(Fuzz *f) {
    NrArena a;
    nr_arena_init(&a);
    NrTokens t = nr_lex(&a, &a, &f->sources, f->file);
    const NrSource *src = &f->sources.v[f->file];
    uint32_t lines = count_lines(f->data, f->size);
    int depth = 0;
    CHECK(t.n >= 1 && t.v[t.n - 1].kind == NR_T_EOF);
    for (int i = 0; i < t.n; i++) {
        const NrToken *k = &t.v[i];
        CHECK((unsigned)k->kind < NR_T_COUNT);
        CHECK(k->kind != NR_T_EOF || i == t.n - 1);
        check_loc(f, k->loc, lines);
        CHECK(k->text >= src->text && k->text + k->len <= src->text + src->len);
        if (k->kind == NR_T_INDENT) depth++;
        if (k->kind == NR_T_DEDENT) depth--;
        CHECK(depth >= 0 && depth == k->depth);
        if (k->kind == NR_T_ERROR) CHECK(k->v.msg && k->v.msg[0]);
        if (k->kind == NR_T_NAME || k->kind == NR_T_STRING) CHECK(k->v.str.s && k->v.str.s[k->v.str.n] == 0);
    }
    CHECK(depth == 0);
    nr_arena_free(&a);
}

static void stage_parse(Fuzz *f) {
    f->ast = nr_parse_module(&f->arena, &f->sources, f->file, &f->diags);
    CHECK(f->ast || nr_has_errors(&f->diags));
    uint32_t lines = count_lines(f->data, f->size);
    for (int i = 0; i < f->diags.n; i++) check_loc(f, f->diags.v[i].loc, lines);

    /* A second parse in a fresh arena must agree. */
    NrArena a;
    nr_arena_init(&a);
    NrDiags d;
    nr_diags_init(&d, &a, &f->sources);
    d.max_errors = f->diags.max_errors;
    NrAstModule *m = nr_parse_module(&a, &f->sources, f->file, &d);
    CHECK(!m == !f->ast && d.n == f->diags.n);
    if (m) CHECK(strcmp(nr_ast_dump(&a, m), nr_ast_dump(&f->arena, f->ast)) == 0);
    nr_arena_free(&a);
}

static void stage_dump(Fuzz *f) {
    if (f->ast) {
        f->dump = nr_ast_dump(&f->arena, f->ast);
        CHECK(f->dump != NULL);
        for (int i = 0; i < f->ast->nfuncs; i++) CHECK(nr_ast_find_func(f->ast, f->ast->funcs[i]->name) != NULL);
    }
    char *text = nr_diags_render(&f->arena, &f->diags);
    CHECK(text != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Fuzz f;
    memset(&f, 0, sizeof f);
    f.data = data;
    f.size = size;
    nr_arena_init(&f.arena);
    nr_sources_init(&f.sources, &f.arena);
    f.file = nr_sources_add(&f.sources, &f.arena, "fuzz.py", (const char *)data, size);
    nr_diags_init(&f.diags, &f.arena, &f.sources);
    f.diags.max_errors = 1000;

    stage_lex(&f);
    stage_parse(&f);
    stage_dump(&f);

    nr_arena_free(&f.arena);
    return 0;
}
