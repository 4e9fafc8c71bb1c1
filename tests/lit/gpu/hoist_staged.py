# gpu-pipeline on the shape of attention's dK/dV pass: each step reads its
# Q^T tile for two dots and transposed (Q) for two more.  The transposed
# staging holds the same bytes (the same 128-byte swizzle, the order
# reversed), so it becomes a memdesc_trans view of the Q^T buffer: the
# tile is stored once, and its load, with one user left, is pipelined
# through a 2-stage cp.async ring.  The K and V tiles, loop-invariant wgmma
# operands, are staged once in front of the first loop, and the second
# loop reads the same buffers, so their registers die before the loops.
# RUN: nereid ir %s -k dkdv -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, i32, i32:16, 64, 32, 64' --stage gpu --arch sm_90a --num-warps 4 --num-stages 2 | filecheck %s
import triton
import triton.language as tl


@triton.jit
def dkdv(q_ptr, k_ptr, v_ptr, dk_ptr, dv_ptr, L, stride, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    offs_m = tl.arange(0, BM)
    k = tl.load(k_ptr + cols[:, None] * stride + offs_d[None, :])
    v = tl.load(v_ptr + cols[:, None] * stride + offs_d[None, :])
    dk = tl.zeros((BN, D), tl.float32)
    dv = tl.zeros((BN, D), tl.float32)
    half = L // 2
    for start in range(0, half, BM):
        rows = start + offs_m
        qt = tl.load(q_ptr + rows[None, :] * stride + offs_d[:, None], mask=rows[None, :] < L, other=0.0)
        pt = tl.dot(k, qt).to(tl.float16)
        dv = tl.dot(pt, tl.trans(qt), dv)
        dk = tl.dot(tl.dot(v, qt).to(tl.float16), tl.trans(qt), dk)
    for start in range(half, L, BM):
        rows = start + offs_m
        qt = tl.load(q_ptr + rows[None, :] * stride + offs_d[:, None], mask=rows[None, :] < L, other=0.0)
        pt = tl.dot(k, qt).to(tl.float16)
        dv = tl.dot(pt, tl.trans(qt), dv)
        dk = tl.dot(tl.dot(v, qt).to(tl.float16), tl.trans(qt), dk)
    tl.store(dk_ptr + cols[:, None] * D + offs_d[None, :], dk)
    tl.store(dv_ptr + cols[:, None] * D + offs_d[None, :], dv)

# CHECK: [[K:%[0-9]+]] = load
# CHECK: [[V:%[0-9]+]] = load
# CHECK-DAG: [[SK:%[0-9]+]] = local_alloc [[K]] {smem_offset = {{[0-9]+}}} : !smem<64x64xf16
# CHECK-DAG: [[SV:%[0-9]+]] = local_alloc [[V]] {smem_offset = {{[0-9]+}}} : !smem<64x64xf16
# CHECK-DAG: [[RING:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<2x64x32xf16
# CHECK: async_copy
# CHECK: = for
# CHECK-NOT: local_alloc
# CHECK: async_wait {num = 0}
# CHECK-NOT: local_alloc
# CHECK: [[QT:%[0-9]+]] = memdesc_index [[RING]]
# CHECK-NEXT: barrier
# CHECK-NEXT: warp_group_dot [[SK]], [[QT]]
# The accumulating dots (dV, dK) run asynchronously: the next stage's copies
# come after the first dot, whose wait completes the previous iteration's,
# which read the stage they refill, behind a barrier.
# CHECK: barrier
# CHECK-NEXT: async_copy
# CHECK: [[Q:%[0-9]+]] = memdesc_trans [[QT]] : !smem<32x64xf16
# CHECK-NEXT: warp_group_dot {{%[0-9]+}}, [[Q]], {{%[0-9]+}} {is_async = true}
# CHECK-NEXT: warp_group_dot [[SV]], [[QT]]
# CHECK-NOT: local_alloc
# CHECK: warp_group_dot {{%[0-9]+}}, [[Q]], {{%[0-9]+}} {is_async = true}
# CHECK: yield
# CHECK: warp_group_dot_wait {{%[0-9]+}} {num = 0}
# CHECK: warp_group_dot_wait {{%[0-9]+}} {num = 0}
# CHECK-NOT: local_alloc [[K]]
# CHECK-NOT: local_alloc [[V]]
# CHECK: = for
# CHECK-NOT: local_alloc [[K]]
# CHECK-NOT: local_alloc [[V]]
# CHECK: warp_group_dot [[SK]]
# CHECK: warp_group_dot [[SV]]
# CHECK: yield
