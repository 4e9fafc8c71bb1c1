/* interp_matmul.c - speed of the reference interpreter on the standard
 * Triton fp32 matmul kernel (bench/interp_matmul.ir, built here with the IR
 * builder): C = A @ B for M = N = K = 1024 (or argv[1]) with 64x64x32
 * blocks, one program per output block.  Prints the launch time in seconds
 * and checks a sample of the result against a double-precision product.
 *
 *   cc -O2 -Iinclude -Isrc bench/interp_matmul.c build/libnereid.a -lm -o build/interp_matmul
 *   build/interp_matmul [size] */
#include "interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BM = 64, BN = 64, BK = 32 };

typedef struct K {
    NrModule *m;
    NrBuilder b;
} K;

static NrTypeId tensor(K *k, NrTypeId elem, int rank, int d0, int d1) {
    int32_t shape[2] = {d0, d1};
    return nr_type_block(k->m, elem, rank, shape);
}
static NrValId op1(K *k, NrOpcode opc, NrTypeId t, int n, const NrValId *x) { return nr_build1(&k->b, opc, t, n, x); }
static NrValId bin(K *k, NrOpcode opc, NrValId x, NrValId y) { return nr_build_binary(&k->b, opc, x, y); }
static NrValId cint(K *k, NrTypeId t, int64_t v) { return nr_build_const_int(&k->b, t, v); }
static NrValId splat(K *k, NrValId x, NrTypeId t) { return op1(k, NR_OP_SPLAT, t, 1, &x); }
static NrValId bcast(K *k, NrValId x, NrTypeId t) { return op1(k, NR_OP_BROADCAST, t, 1, &x); }
static NrValId arange(K *k, int n) {
    NrTypeId t = tensor(k, nr_type_scalar(k->m, NR_DT_I32), 1, n, 0);
    NrOpId o = nr_build(&k->b, NR_OP_ARANGE, 0, NULL, 1, &t, 0);
    nr_op_set_int(k->b.f, o, NR_A_START, 0);
    nr_op_set_int(k->b.f, o, NR_A_END, n);
    return nr_op_result(k->b.f, o, 0);
}
static NrValId expand(K *k, NrValId x, int axis) {
    const NrType *t = nr_type(k->m, nr_val_type(k->b.f, x));
    int n = t->shape[0];
    NrTypeId rt = tensor(k, nr_type_elem(k->m, nr_val_type(k->b.f, x)), 2, axis ? n : 1, axis ? 1 : n);
    NrOpId o = nr_build(&k->b, NR_OP_EXPAND_DIMS, 1, &x, 1, &rt, 0);
    nr_op_set_int(k->b.f, o, NR_A_AXIS, axis);
    return nr_op_result(k->b.f, o, 0);
}
static NrValId cmp_lt(K *k, NrValId x, NrValId y) {
    NrTypeId rt = nr_type_with_dtype(k->m, nr_val_type(k->b.f, x), NR_DT_I1);
    NrValId xs[2] = {x, y};
    NrOpId o = nr_build(&k->b, NR_OP_CMP, 2, xs, 1, &rt, 0);
    nr_op_set_str(k->b.f, o, NR_A_PRED, "lt");
    return nr_op_result(k->b.f, o, 0);
}
static NrValId addptr(K *k, NrValId p, NrValId off) {
    NrValId xs[2] = {p, off};
    return op1(k, NR_OP_ADDPTR, nr_val_type(k->b.f, p), 2, xs);
}
/* offs_r[:, None] * stride_r + offs_c[None, :] * stride_c, as an R x C block of i32 */
static NrValId grid2(K *k, NrValId offs_r, NrValId stride_r, NrValId offs_c, NrValId stride_c, int R, int C) {
    NrTypeId i32 = nr_type_scalar(k->m, NR_DT_I32);
    NrValId r = bin(k, NR_OP_MUL, expand(k, offs_r, 1), splat(k, stride_r, tensor(k, i32, 2, R, 1)));
    NrValId c = bin(k, NR_OP_MUL, expand(k, offs_c, 0), splat(k, stride_c, tensor(k, i32, 2, 1, C)));
    return bin(k, NR_OP_ADD, bcast(k, r, tensor(k, i32, 2, R, C)), bcast(k, c, tensor(k, i32, 2, R, C)));
}

/* The kernel of bench/interp_matmul.ir. */
static NrFunc *build_matmul(NrModule *m) {
    NrTypeId i32 = nr_type_scalar(m, NR_DT_I32), f32 = nr_type_scalar(m, NR_DT_F32), pf = nr_type_ptr(m, NR_DT_F32, 1);
    NrTypeId args[12] = {pf, pf, pf, i32, i32, i32, i32, i32, i32, i32, i32, i32};
    static const char *const names[12] = {"a_ptr",     "b_ptr",     "c_ptr",     "M",         "N",         "K",
                                          "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"};
    NrFunc *f = nr_func_new(m, "matmul_kernel", 12, args, 0, NULL);
    f->is_kernel = true;
    NrValId a[12];
    for (int i = 0; i < 12; i++) {
        a[i] = f->blocks[f->body].args[i];
        f->params[i].name = names[i];
        f->vals[a[i]].name = names[i];
    }
    K kk = {m, nr_builder_at_end(f, f->body)}, *k = &kk;
    NrValId M = a[3], N = a[4], Kd = a[5];
    NrOpId pido = nr_build(&k->b, NR_OP_PROGRAM_ID, 0, NULL, 1, &i32, 0);
    nr_op_set_int(f, pido, NR_A_AXIS, 0);
    NrValId pid = nr_op_result(f, pido, 0);
    NrValId npn = bin(k, NR_OP_DIV, bin(k, NR_OP_ADD, N, cint(k, i32, BN - 1)), cint(k, i32, BN));
    NrValId pid_m = bin(k, NR_OP_DIV, pid, npn), pid_n = bin(k, NR_OP_REM, pid, npn);
    NrTypeId vm = tensor(k, i32, 1, BM, 0), vn = tensor(k, i32, 1, BN, 0);
    NrValId offs_cm = bin(k, NR_OP_ADD, splat(k, bin(k, NR_OP_MUL, pid_m, cint(k, i32, BM)), vm), arange(k, BM));
    NrValId offs_cn = bin(k, NR_OP_ADD, splat(k, bin(k, NR_OP_MUL, pid_n, cint(k, i32, BN)), vn), arange(k, BN));
    NrValId offs_am = bin(k, NR_OP_REM, offs_cm, splat(k, M, vm));
    NrValId offs_bn = bin(k, NR_OP_REM, offs_cn, splat(k, N, vn));
    NrValId offs_k = arange(k, BK);
    NrTypeId pa_t = tensor(k, pf, 2, BM, BK), pb_t = tensor(k, pf, 2, BK, BN);
    NrValId a_ptrs = addptr(k, splat(k, a[0], pa_t), grid2(k, offs_am, a[6], offs_k, a[7], BM, BK));
    NrValId b_ptrs = addptr(k, splat(k, a[1], pb_t), grid2(k, offs_k, a[8], offs_bn, a[9], BK, BN));
    NrTypeId acc_t = tensor(k, f32, 2, BM, BN);
    NrValId acc0 = nr_build_const_float(&k->b, acc_t, 0.0);
    NrValId kt = bin(k, NR_OP_DIV, bin(k, NR_OP_ADD, Kd, cint(k, i32, BK - 1)), cint(k, i32, BK));
    NrValId ok_row = expand(k, offs_k, 0), ok_col = expand(k, offs_k, 1); /* hoisted out of the loop */
    NrValId a_step = splat(k, bin(k, NR_OP_MUL, a[7], cint(k, i32, BK)), tensor(k, i32, 2, BM, BK));
    NrValId b_step = splat(k, bin(k, NR_OP_MUL, a[8], cint(k, i32, BK)), tensor(k, i32, 2, BK, BN));
    NrValId zero_a = nr_build_const_float(&k->b, tensor(k, f32, 2, BM, BK), 0.0);
    NrValId zero_b = nr_build_const_float(&k->b, tensor(k, f32, 2, BK, BN), 0.0);
    /* for k in range(0, kt): carried acc, a_ptrs, b_ptrs */
    NrValId fops[6] = {cint(k, i32, 0), kt, cint(k, i32, 1), acc0, a_ptrs, b_ptrs};
    NrTypeId frt[3] = {acc_t, pa_t, pb_t};
    NrOpId loop = nr_build(&k->b, NR_OP_FOR, 6, fops, 3, frt, 1);
    NrBlockId body = f->ops[loop].regions[0];
    NrValId iv = nr_block_add_arg(f, body, i32), acc = nr_block_add_arg(f, body, acc_t);
    NrValId ap = nr_block_add_arg(f, body, pa_t), bp = nr_block_add_arg(f, body, pb_t);
    K lk = {m, nr_builder_at_end(f, body)}, *l = &lk;
    NrValId rem = bin(l, NR_OP_SUB, Kd, bin(l, NR_OP_MUL, iv, cint(l, i32, BK)));
    NrValId ma = bcast(l, cmp_lt(l, ok_row, splat(l, rem, tensor(l, i32, 2, 1, BK))),
                       tensor(l, nr_type_scalar(m, NR_DT_I1), 2, BM, BK));
    NrValId mb = bcast(l, cmp_lt(l, ok_col, splat(l, rem, tensor(l, i32, 2, BK, 1))),
                       tensor(l, nr_type_scalar(m, NR_DT_I1), 2, BK, BN));
    NrValId la[3] = {ap, ma, zero_a}, lb[3] = {bp, mb, zero_b};
    NrValId av = op1(l, NR_OP_LOAD, tensor(l, f32, 2, BM, BK), 3, la);
    NrValId bv = op1(l, NR_OP_LOAD, tensor(l, f32, 2, BK, BN), 3, lb);
    NrValId dops[3] = {av, bv, acc};
    NrValId acc1 = op1(l, NR_OP_DOT, acc_t, 3, dops);
    NrValId y[3] = {acc1, addptr(l, ap, a_step), addptr(l, bp, b_step)};
    nr_build(&l->b, NR_OP_YIELD, 3, y, 0, NULL, 0);
    NrValId accf = nr_op_result(f, loop, 0);
    NrTypeId pc_t = tensor(k, pf, 2, BM, BN), i1 = nr_type_scalar(m, NR_DT_I1);
    NrValId c_ptrs = addptr(k, splat(k, a[2], pc_t), grid2(k, offs_cm, a[10], offs_cn, a[11], BM, BN));
    NrValId cm =
        bcast(k, cmp_lt(k, expand(k, offs_cm, 1), splat(k, M, tensor(k, i32, 2, BM, 1))), tensor(k, i1, 2, BM, BN));
    NrValId cn =
        bcast(k, cmp_lt(k, expand(k, offs_cn, 0), splat(k, N, tensor(k, i32, 2, 1, BN))), tensor(k, i1, 2, BM, BN));
    NrValId st[3] = {c_ptrs, accf, bin(k, NR_OP_AND, cm, cn)};
    nr_build(&k->b, NR_OP_STORE, 3, st, 0, NULL, 0);
    nr_build(&k->b, NR_OP_RETURN, 0, NULL, 0, NULL, 0);
    return f;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n <= 0) n = 1024;
    NrModule *m = nr_module_new(NULL);
    NrFunc *f = build_matmul(m);
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
    NrDiags d;
    nr_diags_init(&d, m->arena, &m->sources);
    double t0 = now();
    bool ok = nr_interp_launch(f, grid, args, 12, NULL, &d);
    double t1 = now();
    if (!ok) {
        fputs(nr_diags_render(m->arena, &d), stderr);
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
    nr_module_free(m);
    return maxerr < 1e-2 ? 0 : 1;
}
