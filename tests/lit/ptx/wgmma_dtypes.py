# wgmma for every operand type: bf16 and f16 (B N-major: transposed),
# tf32, fp8 e4m3/e5m2 and int8 (B K-major: wgmma transposes only 16-bit
# types); f16 and i32 accumulators; A from registers when it is computed.
# RUN: nereid ptx %s -k mm -s '*bf16:16, *bf16:16, *fp32:16, i32:16, i32:16, 1, 128, 128, 64' --arch sm_90a | filecheck %s --check-prefix=BF16
# RUN: nereid ptx %s -k mm -s '*fp32:16, *fp32:16, *fp32:16, i32:16, 1, i32:16, 128, 128, 32' --arch sm_90a | filecheck %s --check-prefix=TF32
# RUN: nereid ptx %s -k mm -s '*fp8e4nv:16, *fp8e5:16, *fp32:16, i32:16, 1, i32:16, 128, 128, 128' --arch sm_90a | filecheck %s --check-prefix=FP8
# RUN: nereid ptx %s -k mm -s '*fp8e4nv:16, *fp8e4nv:16, *fp32:16, i32:16, i32:16, 1, 128, 128, 128' --arch sm_90a | filecheck %s --check-prefix=FP8ROWS
# RUN: nereid ptx %s -k mmi -s '*i8:16, *i8:16, *i32:16, i32:16, 128, 128, 128' --arch sm_90a | filecheck %s --check-prefix=I8
# RUN: nereid ptx %s -k mmh -s '*fp16:16, *fp16:16, *fp16:16, i32:16, 64, 64, 64' --arch sm_90a | filecheck %s --check-prefix=F16ACC
# RUN: nereid ptx %s -k areg -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 64, 64, 32' --arch sm_90a | filecheck %s --check-prefix=AREG
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# BF16: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, 1, 1, 0, 1;
# TF32: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {{.*}}, %p{{[0-9]+}}, 1, 1;
# FP8: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 {{.*}}, %p{{[0-9]+}}, 1, 1;
# FP8ROWS-NOT: wgmma
# FP8ROWS: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32


@triton.jit
def mmi(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rn[None, :] * K + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# I8: wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {{.*}}, %p{{[0-9]+}};


@triton.jit
def mmh(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + k + rk[None, :])
        b = tl.load(b_ptr + (k + rk[:, None]) * BN + rn[None, :])
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# f16 accumulators: 64 / 4 = 16 words of f16 pairs per thread.
# F16ACC: wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 {[[R:(%r[0-9]+, ){15}%r[0-9]+]]}, %rd


@triton.jit
def areg(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        p = tl.exp(tl.load(a_ptr + rm[:, None] * K + k + rk[None, :]).to(tl.float32)).to(tl.float16)
        b = tl.load(b_ptr + (k + rk[:, None]) * BN + rn[None, :])
        acc = tl.dot(p, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# A from registers: four 32-bit words of f16 pairs, B's descriptor, B N-major.
# AREG: wgmma.fence.sync.aligned;
# AREG: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, %p{{[0-9]+}}, 1, 1, 1;
