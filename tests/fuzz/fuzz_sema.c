/* fuzz_sema.c - libFuzzer target for lowering.
 *
 * Each input is parsed as a module; every @jit function in it (up to 8) is
 * lowered as a kernel for three signatures made up from its parameters
 * (constexpr-annotated ones get constexpr values).  A lowering that succeeds
 * must produce IR that verifies (else the target aborts, printing it), and
 * the block pipeline then runs on it with verification after each pass.
 * Lowering errors are expected and fine; crashes, sanitizer reports and
 * hangs are not.
 *
 * Build it with clang -fsanitize=fuzzer,address,undefined from this file and
 * the sources of src/ except api.c, cuda_rt.c, cache.c and sha256.c, then
 * run it on a corpus such as tests/lit/lower with -dict=tests/fuzz/python.dict. */
#include "ast.h"
#include "ir.h"
#include "passes.h"
#include "sema.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A signature for fn: variant 0 is plain (a pointer, then i32s and 16s). */
static const char *sigs_for(NrArena *a, const NrFuncDecl *fn, int variant) {
    static const char *const kinds[] = {"*fp32", "i32",  "*fp16", "16",   "*i32", "fp32", "i64", "*bf16",
                                        "tl.float16", "\"x\"", "None", "1.5", "True", "*i1", "u32", "i32:1"};
    char *s = nr_strdup(a, "");
    for (int i = 0; i < fn->nparams; i++) {
        const char *k;
        const NrExpr *ann = fn->params[i].annotation;
        bool cx = ann && ((ann->kind == NR_E_ATTR && strcmp(ann->attr.name, "constexpr") == 0) ||
                          (ann->kind == NR_E_NAME && strcmp(ann->name.id, "constexpr") == 0));
        if (cx) k = variant == 0 ? "16" : variant == 1 ? "64" : kinds[(variant + i) % 16];
        else k = variant == 0 ? (i == 0 ? "*fp32" : "i32") : kinds[(variant * 7 + i * 3) % 16];
        s = nr_sprintf(a, "%s%s%s", s, i ? ", " : "", k);
    }
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NrModule *m = nr_module_new(NULL);
    NrArena *a = m->arena;
    uint32_t file = nr_sources_add(&m->sources, a, "f.py", (const char *)data, size);
    NrDiags d;
    nr_diags_init(&d, a, &m->sources);
    NrAstModule *ast = nr_parse_module(a, &m->sources, file, &d);
    if (ast && !nr_has_errors(&d)) {
        for (int i = 0; i < ast->nfuncs && i < 8; i++) {
            for (int v = 0; v < 3; v++) {
                NrModule *m2 = nr_module_new(a);
                m2->sources = m->sources;
                NrDiags d2;
                nr_diags_init(&d2, a, &m2->sources);
                NrSignature sig;
                if (!nr_signature_parse(a, sigs_for(a, ast->funcs[i], v), &sig, &d2)) continue;
                NrFunc *f = nr_lower_kernel(m2, ast, ast->funcs[i]->name, &sig, &d2);
                if (f && !nr_has_errors(&d2)) {
                    if (!nr_module_verify(m2, &d2)) {
                        fputs(nr_diags_render(a, &d2), stderr);
                        nr_module_print(m2, &(NrPrintOptions){false}, stderr);
                        abort();
                    }
                    NrPipelineOptions po = {NULL, true, NULL};
                    nr_run_block_pipeline(m2, &po, &d2);
                }
                (void)nr_diags_render(a, &d2);
            }
        }
    }
    nr_module_free(m);
    return 0;
}
