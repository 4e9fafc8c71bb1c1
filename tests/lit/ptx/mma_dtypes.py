# Tensor-core dots of every operand type.  bf16: m16n8k16 .bf16.  f32:
# tf32 rounds each operand once (cvt.rna.tf32.f32) into m16n8k8; tf32x3
# adds the tails (x - tf32(x), rounded again) in three products per tile;
# A row-major ldmatrix, B row-major by ld.shared (32-bit elements have no
# transposing ldmatrix).  int8 with both operands k-contiguous: ldmatrix
# for both, m16n8k32 .s8 into .s32.  fp8: native m16n8k32 .e4m3.e5m2 on
# sm_90 (PTX 8.4; B row-major by byte loads packed with prmt), f16 on sm_80
# (the operands are converted before the dot).  f16 accumulators:
# .f16.f16.f16.f16.  f32 results are stored from the accumulator layout as
# pairs.
# RUN: nereid ptx %s -k mm -s '*bf16:16, *bf16:16, *fp32:16, i32:16, 64, 64, 32, "tf32"' --arch sm_80 | filecheck %s --check-prefix=BF16
# RUN: nereid ptx %s -k mm -s '*fp32:16, *fp32:16, *fp32:16, i32:16, 64, 64, 32, "tf32"' --arch sm_80 | filecheck %s --check-prefix=TF32
# RUN: nereid ptx %s -k mm -s '*fp32:16, *fp32:16, *fp32:16, i32:16, 64, 64, 32, "tf32x3"' --arch sm_80 | filecheck %s --check-prefix=X3
# RUN: nereid ptx %s -k mmi -s '*i8:16, *i8:16, *i32:16, i32:16, 64, 64, 64' --arch sm_80 | filecheck %s --check-prefix=I8
# RUN: nereid ptx %s -k mm -s '*fp8e4nv:16, *fp8e5:16, *fp32:16, i32:16, 64, 64, 32, "tf32"' --arch sm_90 | filecheck %s --check-prefix=F8H
# RUN: nereid ptx %s -k mm -s '*fp8e4nv:16, *fp8e5:16, *fp32:16, i32:16, 64, 64, 32, "tf32"' --arch sm_80 | filecheck %s --check-prefix=F8A
# RUN: nereid ptx %s -k mmh -s '*fp16:16, *fp16:16, *fp16:16, 64, 64, 32' --arch sm_80 | filecheck %s --check-prefix=H16
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * BN + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K // BK, num_stages=3):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, input_precision=PREC)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def mmi(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] + offs_n[None, :] * K
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in tl.range(0, K // BK, num_stages=2):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def mmh(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a = tl.load(a_ptr + offs_m[:, None] * BK + offs_k[None, :])
    b = tl.load(b_ptr + offs_k[:, None] * BN + offs_n[None, :])
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], tl.dot(a, b, out_dtype=tl.float16))

# BF16: .version 8.0
# BF16: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# BF16: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# BF16-COUNT-16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
# BF16: st.global.v2.b32

# TF32-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# TF32-DAG: ld.shared.b32
# TF32: cvt.rna.tf32.f32
# TF32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
# TF32-NOT: sub.rn.f32

# X3: cvt.rna.tf32.f32 [[HEAD:%r[0-9]+]], [[X:%r[0-9]+]];
# X3: sub.rn.f32 [[D:%r[0-9]+]], [[X]], [[HEAD]];
# X3-NEXT: cvt.rna.tf32.f32 {{%r[0-9]+}}, [[D]];
# X3-COUNT-3: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32

# I8: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# I8-NOT: ld.shared.u8
# I8: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32

# F8H: .version 8.4
# F8H: .target sm_90
# F8H-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# F8H-DAG: ld.shared.u8
# F8H: prmt.b32
# F8H: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32

# F8A: .version 8.0
# F8A: cvt.rn.f16.f32
# F8A: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# F8A: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# F8A-NOT: e4m3

# H16: mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}};
# H16: st.global.v4.b32
