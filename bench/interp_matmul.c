/* interp_matmul.c - speed of the reference interpreter on the standard
 * Triton fp32 matmul kernel, bench/interp_matmul.ir: C = A @ B for
 * M = N = K = 1024 (or argv[1]) with 64x64x32 blocks, one program per output
 * block.  Prints the launch time in seconds and checks a sample of the result
 * against a double-precision product.
 *
 *   make
 *   cc -O2 -Iinclude -Isrc bench/interp_matmul.c build/libnereid.a -lm -o build/interp_matmul
 *   build/interp_matmul [size [kernel.ir]]      (run from the repository root) */
#include "interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BM = 64, BN = 64, BK = 32 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    *len = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    buf[*len] = 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n <= 0) n = 1024;
    const char *path = argc > 2 ? argv[2] : "bench/interp_matmul.ir";
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "interp_matmul: cannot read %s (run from the repository root)\n", path);
        return 2;
    }
    NrArena arena;
    nr_arena_init(&arena);
    NrSources sources;
    nr_sources_init(&sources, &arena);
    NrDiags d;
    nr_diags_init(&d, &arena, &sources);
    NrModule *m = nr_module_parse(&arena, text, len, path, &d);
    free(text);
    NrFunc *f = m ? nr_module_find_func(m, "matmul_kernel") : NULL;
    if (!f) {
        fputs(nr_diags_render(&arena, &d), stderr);
        fprintf(stderr, "interp_matmul: no kernel @matmul_kernel in %s\n", path);
        return 2;
    }
    float *A = malloc(sizeof(float) * (size_t)n * (size_t)n), *B = malloc(sizeof(float) * (size_t)n * (size_t)n);
    float *C = malloc(sizeof(float) * (size_t)n * (size_t)n);
    srand(1);
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
        A[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        B[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        C[i] = NAN;
    }
    size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
    NrInterpArg args[12] = {
        {NR_IA_BUFFER, A, bytes, "a_ptr", 0, 0}, {NR_IA_BUFFER, B, bytes, "b_ptr", 0, 0},
        {NR_IA_BUFFER, C, bytes, "c_ptr", 0, 0}, {NR_IA_INT, NULL, 0, "M", n, 0},
        {NR_IA_INT, NULL, 0, "N", n, 0},         {NR_IA_INT, NULL, 0, "K", n, 0},
        {NR_IA_INT, NULL, 0, NULL, n, 0},        {NR_IA_INT, NULL, 0, NULL, 1, 0},
        {NR_IA_INT, NULL, 0, NULL, n, 0},        {NR_IA_INT, NULL, 0, NULL, 1, 0},
        {NR_IA_INT, NULL, 0, NULL, n, 0},        {NR_IA_INT, NULL, 0, NULL, 1, 0},
    };
    uint32_t grid[3] = {(uint32_t)(((n + BM - 1) / BM) * ((n + BN - 1) / BN)), 1, 1};
    double t0 = now();
    bool ok = nr_interp_launch(f, grid, args, 12, NULL, &d);
    double t1 = now();
    if (!ok) {
        fputs(nr_diags_render(&arena, &d), stderr);
        return 1;
    }
    /* Spot-check against a double product (tf32 operands: loose tolerance). */
    double maxerr = 0;
    for (int s = 0; s < 200; s++) {
        int i = rand() % n, j = rand() % n;
        double ref = 0, mag = 0;
        for (int q = 0; q < n; q++) {
            ref += (double)A[(size_t)i * n + q] * B[(size_t)q * n + j];
            mag += fabs((double)A[(size_t)i * n + q] * B[(size_t)q * n + j]);
        }
        double err = fabs(C[(size_t)i * n + j] - ref) / (mag + 1e-30);
        if (!(err <= maxerr)) maxerr = err;
    }
    printf("interp matmul %dx%dx%d fp32 (tf32 dot), blocks %dx%dx%d: %.3f s  (%.2f GFLOP/s, max rel err %.1e)\n", n, n,
           n, BM, BN, BK, t1 - t0, 2.0 * n * (double)n * n / (t1 - t0) * 1e-9, maxerr);
    free(A);
    free(B);
    free(C);
    nr_arena_free(&arena);
    return maxerr < 1e-2 ? 0 : 1;
}
