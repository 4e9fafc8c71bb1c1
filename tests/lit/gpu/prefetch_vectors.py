# gpu-pipeline: a vector load of a pipelined loop that feeds no dot (the
# row statistics of attention's dK/dV pass, broadcast into its scores) is
# prefetched one iteration ahead into registers when the loop's
# accumulating dots run asynchronously: the first iteration's load goes in
# front of the loop (masked by lb < ub), each iteration loads the next
# one's at its top (masked by iv + step < ub) and the loop carries the value.
# RUN: nereid ir %s -k rows -s '*fp16:16, *fp16:16, *fp32:16, *fp32:16, i32:16, i32:16, 64, 64, 64' --stage gpu --arch sm_90a --num-warps 4 --num-stages 2 | filecheck %s
import triton
import triton.language as tl


@triton.jit
def rows(q_ptr, k_ptr, m_ptr, dk_ptr, L, stride, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    offs_m = tl.arange(0, BM)
    k = tl.load(k_ptr + cols[:, None] * stride + offs_d[None, :])
    dk = tl.zeros((BN, D), tl.float32)
    for start in range(0, L, BM):
        r = start + offs_m
        qt = tl.load(q_ptr + r[None, :] * stride + offs_d[:, None], mask=r[None, :] < L, other=0.0)
        m = tl.load(m_ptr + r, mask=r < L, other=0.0)
        pt = tl.exp2(tl.dot(k, qt) - m[None, :]).to(tl.float16)
        dk = tl.dot(pt, tl.trans(qt), dk)
    tl.store(dk_ptr + cols[:, None] * D + offs_d[None, :], dk)

# CHECK: [[IN0:%[0-9]+]] = cmp %{{[0-9]+}}, %L {pred = "lt"} : i1
# CHECK: [[M0:%[0-9]+]] = load {{.*}} : tensor<64xf32
# CHECK: = for {{.*}}, [[M0]] {num_stages = 2}
# CHECK-NEXT: ^({{.*}}, [[MCUR:%[0-9]+]]: tensor<64xf32
# CHECK: [[NEXT:%[0-9]+]] = add %{{[0-9]+}}, %{{[0-9]+}} : i32
# CHECK-NEXT: [[IN1:%[0-9]+]] = cmp [[NEXT]], %L {pred = "lt"} : i1
# CHECK: [[MNEXT:%[0-9]+]] = load {{.*}} : tensor<64xf32
# CHECK: warp_group_dot
# CHECK: expand_dims [[MCUR]]
# CHECK: warp_group_dot {{.*}} {is_async = true}
# CHECK: yield {{.*}}, [[MNEXT]]
