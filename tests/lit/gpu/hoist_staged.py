# gpu-pipeline on loops it cannot pipeline (the shape of attention's dK/dV
# pass: the Q tile of each step is read twice, once transposed, so it is no
# candidate): the K and V tiles, loop-invariant wgmma operands, are still
# staged in shared memory once, in front of the first loop, and the second
# loop reads the same buffers (no staging of K or V inside a loop, none in
# front of the second), so their registers die before the loops.  Inside a
# body, the Q^T tile staged for two dots is stored once.
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
# CHECK: = for
# CHECK-NOT: local_alloc [[K]]
# CHECK-NOT: local_alloc [[V]]
# CHECK: [[SQ:%[0-9]+]] = local_alloc [[QT:%[0-9]+]] {{.*}} : !smem<64x32xf16
# CHECK: warp_group_dot [[SK]], [[SQ]]
# CHECK-NOT: local_alloc [[QT]]
# CHECK: warp_group_dot [[SV]], [[SQ]]
# CHECK: yield
# CHECK-NOT: local_alloc [[K]]
# CHECK-NOT: local_alloc [[V]]
# CHECK: = for
# CHECK-NOT: local_alloc [[K]]
# CHECK-NOT: local_alloc [[V]]
# CHECK: warp_group_dot [[SK]]
# CHECK: warp_group_dot [[SV]]
# CHECK: yield
