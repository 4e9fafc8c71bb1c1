/* fuzz_gpu.c - libFuzzer target for the GPU passes.
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Iinclude \
 *       -o fuzz_gpu tests/fuzz/fuzz_gpu.c src/arena.c src/diag.c src/util.c src/fp.c \
 *       src/ir*.c src/pass*.c src/gpu*.c -lm
 *   ./fuzz_gpu -max_total_time=300 -dict=tests/fuzz/ir.dict corpus/ tests/lit/gpu/ tests/lit/ir/
 *
 * Every module that parses (and so verifies) goes through the block pipeline
 * and then the GPU pipeline, with the verifier after each pass, or fails with
 * diagnostics; the GPU IR must print and parse back. */
#include "gpu.h"
#include "passes.h"
#include "util.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The PTX emitter's scratch sizes, when it is not linked in. */
__attribute__((weak)) int64_t nr_ptx_scratch_bytes(NrFunc *f, NrOpId op) {
    const NrOp *o = &f->ops[op];
    return o->opc == NR_OP_CONVERT_LAYOUT || o->opc == NR_OP_REDUCE ? 1024 : 0;
}

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
        int nw = size ? 1 << (data[0] % 5) : 4;
        NrGpuOptions go = {nw, 1, size > 1 && data[1] & 1 ? 90 : 80, false, NULL, true, NULL, false};
        if (!nr_run_block_pipeline(m, &po, &d) || !nr_run_gpu_pipeline(m, &go, &d)) {
            if (d.nerrors == 0) NR_ICE("a pass failed without a diagnostic");
        } else {
            char *t1 = nr_module_to_string(m, NULL);
            NrModule *m2 = nr_module_parse(&a, t1, strlen(t1), "gpu.ir", &d);
            if (!m2) NR_ICE("GPU IR does not parse back:\n%s\n%s", t1, nr_diags_render(&a, &d));
            char *t2 = nr_module_to_string(m2, NULL);
            if (strcmp(t1, t2) != 0) NR_ICE("round trip differs:\n%s\n---\n%s", t1, t2);
        }
    }
    nr_arena_free(&a);
    return 0;
}
