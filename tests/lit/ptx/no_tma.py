# --no-tma (NrOptions.no_tma): on sm_90a a pipelined loop loads host tensor
# descriptors with TMA from tensor maps the launch passes after the runtime
# arguments, one 128-byte parameter per descriptor; with --no-tma the same
# loads go through pointers and the kernel takes its runtime arguments
# alone.
# RUN: nereid ptx %s -k desc_mm -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32, i32, i32:16, 64, 64, 64' --arch sm_90a | filecheck %s --check-prefix=TMA
# RUN: nereid ptx %s -k desc_mm -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32, i32, i32:16, 64, 64, 64' --arch sm_90a --no-tma | filecheck %s --check-prefix=PTR
# RUN: nereid ir %s -k desc_mm -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32, i32, i32:16, 64, 64, 64' --arch sm_90a --stage gpu --no-tma | filecheck %s --check-prefix=IR
import triton
import triton.language as tl


@triton.jit
def desc_mm(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)

# TMA:      .param .s32 desc_mm_param_13,
# TMA-NEXT: .param .align 64 .b8 desc_mm_tmap_0[128],
# TMA-NEXT: .param .align 64 .b8 desc_mm_tmap_1[128]
# TMA-NEXT: )
# TMA:      cp.async.bulk.tensor.2d

# PTR:      .param .s32 desc_mm_param_13
# PTR-NEXT: )
# PTR-NOT:  _tmap_
# PTR-NOT:  cp.async.bulk.tensor
# PTR:      ld.global
# PTR-NOT:  cp.async.bulk.tensor

# IR-NOT:   tensormap
# IR-NOT:   tma_load
# IR:       async_copy
# IR-NOT:   tma_load
