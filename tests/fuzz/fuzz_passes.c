/* fuzz_passes.c - libFuzzer target for the block-level passes.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Iinclude \
 *       -o fuzz_passes tests/fuzz/fuzz_passes.c src/arena.c src/diag.c src/util.c src/fp.c \
 *       src/ir*.c src/pass*.c -lm
 *   ./fuzz_passes -max_total_time=300 -dict=tests/fuzz/ir.dict corpus/ tests/lit/passes/ tests/lit/ir/
 *
 * Every module that parses (and so verifies) must go through the pipeline
 * with the verifier after each pass, or fail with diagnostics; the result
 * must print and parse back. */
#include "passes.h"
#include "util.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    NrArena a;
    nr_arena_init(&a);
    NrSources s;
    nr_sources_init(&s, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &s);
    NrModule *m = nr_module_parse(&a, (const char *)data, size, "fuzz.ir", &d);
    if (m) {
        d.sources = &m->sources;
        NrPipelineOptions po = {NULL, true, NULL};
        if (!nr_run_block_pipeline(m, &po, &d)) {
            if (d.nerrors == 0) NR_ICE("a pass failed without a diagnostic");
        } else {
            char *t = nr_module_to_string(m, NULL);
            if (!nr_module_parse(&a, t, strlen(t), "optimized.ir", &d))
                NR_ICE("optimized IR does not parse back:\n%s\n%s", t, nr_diags_render(&a, &d));
        }
    }
    nr_arena_free(&a);
    return 0;
}
