# gpu-pipeline on an attention loop: K and V are addressed from the key
# block's index, masked past L, and feed two dots (Q K^T from a loaded Q,
# P V with P computed in registers).  Both tiles come from 3-stage rings;
# each is read where its dot needs it (so that the V tile is not live
# across the softmax); one barrier per iteration after the wait.  On
# sm_90a the staged Q tile, loop-invariant, is stored once before the loop,
# and P V stays in flight into the next iteration: the accumulator is
# waited for after the next Q K^T, the loop's result after the loop, and
# the rings have a fourth buffer so that the copies, which must not
# overwrite the stage P V still reads, stay two iterations ahead.
# RUN: nereid ir %s -k attn -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, i32, i32:16, 64, 64, 64' --stage gpu --arch sm_90a --num-warps 4 --num-stages 3 | filecheck %s --check-prefix=H
# RUN: nereid ir %s -k attn -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, i32, i32:16, 64, 64, 64' --stage gpu --arch sm_80 --num-warps 4 --num-stages 3 | filecheck %s --check-prefix=A
# RUN: nereid ir %s -k attn -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, i32, i32:16, 128, 128, 128' --stage gpu --arch sm_90a --num-warps 4 --num-stages 3 | filecheck %s --check-prefix=BIG
# RUN: nereid ir %s -k old_acc_read -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, i32:16, 64, 64, 64' --stage gpu --arch sm_90a --num-warps 4 --num-stages 3 | filecheck %s --check-prefix=OLD
import triton
import triton.language as tl


@triton.jit
def attn(q_ptr, k_ptr, v_ptr, o_ptr, L, stride, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * stride + offs_d[None, :])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, L, BN):
        cols = start + offs_n
        kt = tl.load(k_ptr + offs_d[:, None] + cols[None, :] * stride, mask=cols[None, :] < L, other=0.0)
        s = tl.where(cols[None, :] < L, tl.dot(q, kt), -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + cols[:, None] * stride + offs_d[None, :], mask=cols[:, None] < L, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    tl.store(o_ptr + rows[:, None] * D + offs_d[None, :], acc / l_i[:, None])

# H: [[Q:%[0-9]+]] = local_alloc %{{[0-9]+}} {smem_offset = {{[0-9]+}}} : !smem<64x64xf16
# H-DAG: [[K:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<4x64x64xf16
# H-DAG: [[V:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<4x64x64xf16
# H-COUNT-2: async_commit_group
# H-NOT: load
# H: = for {{.*}} {num_stages = 3} : tensor<64xf32, {{.*}}>, tensor<64x64xf32, {{.*}}>, tensor<64xf32, {{.*}}>, i32, i32 {
# H-NEXT: ^({{.*}}, [[ACC:%[0-9]+]]: tensor<64x64xf32, {{.*}}>, {{.*}}, [[R:%[0-9]+]]: i32, [[W:%[0-9]+]]: i32):
# H-NEXT: async_wait {num = 1}
# H: barrier
# H-NEXT: async_copy
# H: async_copy
# H-NEXT: async_commit_group
# H-NOT: barrier
# H-NOT: load
# H: [[VK:%[0-9]+]] = memdesc_index [[K]], [[R]]
# H-NEXT: warp_group_dot [[Q]], [[VK]]
# H-NOT: is_async
# H-NEXT: warp_group_dot_wait [[ACC]] {num = 0}
# H: reduce
# H: [[P:%[0-9]+]] = convert_layout
# H-NEXT: [[VV:%[0-9]+]] = memdesc_index [[V]], [[R]]
# H-NEXT: [[PV:%[0-9]+]] = warp_group_dot [[P]], [[VV]], {{.*}} {is_async = true}
# H-NOT: barrier
# H: yield {{.*}}, [[PV]],
# H-NEXT: }
# H-NEXT: async_wait {num = 0}
# H-NEXT: warp_group_dot_wait {{.*}} {num = 0}

# A: [[K:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<3x64x64xf16
# A-NEXT: [[V:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<3x64x64xf16
# A: = for {{.*}} {num_stages = 3} : {{.*}}, i32, i32 {
# A-NEXT: ^({{.*}}, [[R:%[0-9]+]]: i32, [[W:%[0-9]+]]: i32):
# A-NEXT: async_wait {num = 1}
# A: barrier
# A-NEXT: async_copy
# A: async_copy
# A-NEXT: async_commit_group
# A-NOT: load
# A: [[VK:%[0-9]+]] = memdesc_index [[K]], [[R]]
# A-NEXT: [[TK:%[0-9]+]] = local_load [[VK]]
# A-NEXT: dot %{{[0-9]+}}, [[TK]]
# A: reduce
# A: [[VV:%[0-9]+]] = memdesc_index [[V]], [[R]]
# A-NEXT: [[TV:%[0-9]+]] = local_load [[VV]]
# A: dot %{{[0-9]+}}, [[TV]]
# A: yield
# A-NEXT: }
# A-NEXT: async_wait {num = 0}


# The carried accumulator is read after the second dot (its old value, into
# t): that dot cannot stay in flight, since it writes the accumulator's
# registers; both dots stay synchronous.
@triton.jit
def old_acc_read(q_ptr, k_ptr, v_ptr, o_ptr, t_ptr, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    acc = tl.zeros((BM, D), tl.float32)
    t = tl.zeros((BM,), tl.float32)
    for start in range(0, N, BN):
        kt = tl.load(k_ptr + (start + rn)[None, :] * D + rd[:, None])
        p = tl.exp2(tl.dot(q, kt) * 0.01)
        v = tl.load(v_ptr + (start + rn)[:, None] * D + rd[None, :])
        old = acc
        acc = tl.dot(p.to(tl.float16), v, acc * 0.5)
        t += tl.sum(old, 1)
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc)
    tl.store(t_ptr + rm, t)

# OLD: = for
# OLD-NOT: is_async
# OLD-NOT: warp_group_dot_wait
# OLD: warp_group_dot
# OLD-NOT: is_async
# OLD: warp_group_dot
# OLD-NOT: is_async
# OLD: yield

# 128x128 tiles at head dim 128 on one warpgroup: the accumulator (128
# words a thread), P (64) and the next S (128) do not fit 255 registers,
# so P V stays synchronous
# BIG: = for
# BIG-NOT: is_async
# BIG: warp_group_dot
# BIG-NOT: is_async
# BIG: warp_group_dot
# BIG-NOT: is_async
# BIG: yield
