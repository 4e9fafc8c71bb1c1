# gpu-convert on sm_90a: dots that wgmma can run become warp_group_dot with
# an mma version 3 accumulator (warpgroups along M first, Triton's rule) and
# operands in nvmma buffers (the swizzle of the contiguous dimension's
# bytes); a computed A stays in registers; 8-bit B stored by rows, and
# every dot on sm_90 without 'a', keep mma.sync (version 2).  gpu-pipeline
# then stages the loaded tiles straight into the buffers wgmma reads.
# RUN: nereid ir %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 128, 64' --arch sm_90a --after gpu-convert | filecheck %s --check-prefix=CONV
# RUN: nereid ir %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 256, 64' --arch sm_90a --num-warps 8 --after gpu-convert | filecheck %s --check-prefix=W8
# RUN: nereid ir %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 64, 256, 32' --arch sm_90a --num-warps 8 --after gpu-convert | filecheck %s --check-prefix=W4X2
# RUN: nereid ir %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 128, 64' --arch sm_90 --after gpu-convert | filecheck %s --check-prefix=SM90
# RUN: nereid ir %s -k mmt -s '*fp8e4nv:16, *fp8e4nv:16, *fp32:16, i32:16, 128, 128, 128' --arch sm_90a --after gpu-convert | filecheck %s --check-prefix=KMAJOR
# RUN: nereid ir %s -k mm -s '*fp8e4nv:16, *fp8e4nv:16, *fp32:16, i32:16, 128, 128, 128' --arch sm_90a --after gpu-convert | filecheck %s --check-prefix=ROWS8
# RUN: nereid ir %s -k areg -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 64, 64, 32' --arch sm_90a --after gpu-convert | filecheck %s --check-prefix=AREG
# RUN: nereid ir %s -k mmp -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 128, 64' --arch sm_90a --num-stages 4 --after gpu-barriers | filecheck %s --check-prefix=PIPE
# RUN: nereid ir %s -k mmp -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 128, 64' --arch sm_90a --num-stages 2 --after gpu-barriers | filecheck %s --check-prefix=SYNC
# RUN: nereid ir %s -k mmp -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 256, 64' --arch sm_90a --num-warps 8 --num-stages 4 --after gpu-barriers | filecheck %s --check-prefix=FULL
# RUN: nereid ir %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 128, 128, 64' --arch sm_90a --num-stages 1 --after gpu-barriers | filecheck %s --check-prefix=STORE
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + k + rk[None, :])
        b = tl.load(b_ptr + (k + rk[:, None]) * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# CONV: module attributes {num_warps = 4, sm = 90a} {
# CONV-DAG: #[[MMA:L[0-9]+]] = mma<version = 3, wpc = [4, 1], instr = [16, 128, 16]>
# CONV-DAG: #[[SW:L[0-9]+]] = nvmma_shared<swizzle = 128, order = [1, 0]>
# CONV: [[A:%[0-9]+]] = local_alloc %{{[0-9]+}} : !smem<128x64xf16, #[[SW]]>
# CONV-NEXT: [[B:%[0-9]+]] = local_alloc %{{[0-9]+}} : !smem<64x128xf16, #[[SW]]>
# CONV: warp_group_dot [[A]], [[B]], %{{[0-9]+}} : tensor<128x128xf32, #[[MMA]]>
# CONV-NOT: = dot

# W8: #{{L[0-9]+}} = mma<version = 3, wpc = [8, 1], instr = [16, 256, 16]>
# W8: warp_group_dot
# W4X2: #{{L[0-9]+}} = mma<version = 3, wpc = [4, 2], instr = [16, 128, 16]>
# W4X2-DAG: nvmma_shared<swizzle = 64, order = [1, 0]>
# W4X2-DAG: nvmma_shared<swizzle = 128, order = [1, 0]>
# W4X2: warp_group_dot

# SM90: module attributes {num_warps = 4, sm = 90} {
# SM90: mma<version = 2
# SM90-NOT: warp_group_dot
# SM90: = dot


@triton.jit
def mmt(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # B column-major: its tiles are K-contiguous
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + k + rk[None, :])
        b = tl.load(b_ptr + rn[None, :] * K + k + rk[:, None])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# KMAJOR-DAG: #[[MMA:L[0-9]+]] = mma<version = 3, wpc = [4, 1], instr = [16, 128, 32]>
# KMAJOR-DAG: #[[SA:L[0-9]+]] = nvmma_shared<swizzle = 128, order = [1, 0]>
# KMAJOR-DAG: #[[SB:L[0-9]+]] = nvmma_shared<swizzle = 128, order = [0, 1]>
# KMAJOR: local_alloc %{{[0-9]+}} : !smem<128x128xf8e4nv, #[[SA]]>
# KMAJOR-NEXT: local_alloc %{{[0-9]+}} : !smem<128x128xf8e4nv, #[[SB]]>
# KMAJOR: warp_group_dot

# ROWS8: mma<version = 2
# ROWS8-NOT: warp_group_dot


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

# AREG-DAG: #[[MMA:L[0-9]+]] = mma<version = 3, wpc = [4, 1], instr = [16, 64, 16]>
# AREG-DAG: #[[OPA:L[0-9]+]] = dot_op<op_idx = 0, parent = #[[MMA]], k_width = 2>
# AREG-DAG: #[[SB:L[0-9]+]] = nvmma_shared<swizzle = 128, order = [1, 0]>
# AREG: [[B:%[0-9]+]] = local_alloc %{{[0-9]+}} : !smem<32x64xf16, #[[SB]]>
# AREG: [[A:%[0-9]+]] = convert_layout %{{[0-9]+}} : tensor<64x32xf16, #[[OPA]]>
# AREG: warp_group_dot [[A]], [[B]], %{{[0-9]+}} : tensor<64x64xf32, #[[MMA]]>



@triton.jit
def mmp(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# Tiles that are not pipelined are stored into the buffers each iteration,
# between barriers (the previous dot's reads, then this dot's).
# STORE: for
# STORE: load
# STORE: load
# STORE-NEXT: barrier
# STORE-NEXT: local_alloc
# STORE-NEXT: local_alloc
# STORE-NEXT: barrier
# STORE-NEXT: warp_group_dot

# The pipelined loop, 4 stages: the dot is asynchronous with one group in
# flight, all waited for after the loop; with room for a fifth buffer (the
# stage two dots back is the one the copies overwrite) they still run 3
# iterations ahead (3 stages in the prologue).  In the body the dot is
# issued as soon as its stage is in (the wait, then the barrier); the
# copies follow it, behind a second barrier (the buffer they fill was read
# by the dot two iterations back), and the wait for the dot ends the body.
# PIPE: local_alloc {smem_offset = {{[0-9]+}}} : !smem<5x128x64xf16, #[[SA:L[0-9]+]]>
# PIPE: local_alloc {smem_offset = {{[0-9]+}}} : !smem<5x64x128xf16, #[[SB:L[0-9]+]]>
# PIPE-COUNT-3: async_commit_group
# PIPE-NOT: async_commit_group
# PIPE: for
# PIPE: async_wait {num = 2}
# PIPE: [[VA:%[0-9]+]] = memdesc_index %{{[0-9]+}}, %{{[0-9]+}} : !smem<128x64xf16, #[[SA]]>
# PIPE-NEXT: [[VB:%[0-9]+]] = memdesc_index %{{[0-9]+}}, %{{[0-9]+}} : !smem<64x128xf16, #[[SB]]>
# PIPE-NEXT: barrier
# PIPE-NEXT: [[D:%[0-9]+]] = warp_group_dot [[VA]], [[VB]], %{{[0-9]+}} {is_async = true}
# PIPE: barrier
# PIPE-NEXT: async_copy
# PIPE: async_copy
# PIPE-NEXT: async_commit_group
# PIPE: [[W:%[0-9]+]] = warp_group_dot_wait [[D]] {num = 1}
# PIPE-NOT: local_load
# PIPE: yield [[W]],
# PIPE: async_wait {num = 0}
# PIPE-NEXT: [[R:%[0-9]+]] = warp_group_dot_wait %{{[0-9]+}} {num = 0}
# PIPE: store %{{[0-9]+}}, [[R]]

# 2 stages: the dot stays synchronous, the copies 1 iteration ahead.
# SYNC: for
# SYNC: async_wait {num = 0}
# SYNC: warp_group_dot
# SYNC-NOT: is_async
# SYNC-NOT: warp_group_dot_wait

# 128 x 256 x 64 in 4 stages: no room for a fifth 48 KiB buffer; the copies
# run 2 iterations ahead in 4.
# FULL: local_alloc {smem_offset = {{[0-9]+}}} : !smem<4x128x64xf16
# FULL: local_alloc {smem_offset = {{[0-9]+}}} : !smem<4x64x256xf16
# FULL-COUNT-2: async_commit_group
# FULL-NOT: async_commit_group
# FULL: for
# FULL: async_wait {num = 1}
# FULL: warp_group_dot {{.*}} {is_async = true}
