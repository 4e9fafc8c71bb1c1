/* fuzz_ir.c - libFuzzer target for the IR text parser and verifier.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Iinclude \
 *       -o fuzz_ir tests/fuzz/fuzz_ir.c src/arena.c src/diag.c src/util.c src/ir*.c src/gpu_layout.c -lm
 *   ./fuzz_ir -max_total_time=300 -dict=tests/fuzz/ir.dict corpus/ tests/lit/ir/
 *
 * Any input must parse to a verified module or fail with diagnostics; a
 * module that parses must print, parse back and print the same text. */
#include "ir.h"
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
    if (!m) {
        if (d.nerrors == 0) NR_ICE("parse failed without a diagnostic");
        (void)nr_diags_render(&a, &d);
    } else {
        char *t1 = nr_module_to_string(m, NULL);
        NrModule *m2 = nr_module_parse(&a, t1, strlen(t1), "printed.ir", &d);
        if (!m2) NR_ICE("printed IR does not parse back:\n%s\n%s", t1, nr_diags_render(&a, &d));
        char *t2 = nr_module_to_string(m2, NULL);
        if (strcmp(t1, t2) != 0) NR_ICE("round trip differs:\n%s\n---\n%s", t1, t2);
        NrPrintOptions locs = {true};
        (void)nr_module_to_string(m, &locs);
    }
    nr_arena_free(&a);
    return 0;
}
