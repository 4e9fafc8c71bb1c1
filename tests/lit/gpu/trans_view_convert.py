# gpu-pipeline on sm_90a: a descriptor's tile that feeds two wgmma dots,
# once transposed (attention backward's K: Q K^T and dS K), is staged once.
# gpu-convert puts a convert_layout between the load and the trans of k.T;
# the buffer of k.T is still the other staging's bytes read transposed
# (memdesc_trans), so the load keeps one user and is copied by TMA into the
# stages ahead, with nothing staged in the body itself; the accumulating
# dot stays in flight, and the copies come after the first dot's wait.
# RUN: nereid ir %s -k two_uses -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, 64, 64' --arch sm_90a --num-warps 4 --num-stages 3 --verify-each --after gpu-pipeline | filecheck %s
import nereid as triton
import nereid.language as tl


@triton.jit
def two_uses(q_desc, k_desc, out_ptr, L, BM: tl.constexpr, BN: tl.constexpr):
    q = q_desc.load([0, 0])
    acc = tl.zeros((BM, 64), tl.float32)
    for start in range(0, L, BN):
        k = k_desc.load([start, 0])
        s = tl.dot(q, k.T)
        acc = tl.dot(s.to(tl.float16), k, acc)
    offs = tl.arange(0, BM)
    tl.store(out_ptr + offs[:, None] * 64 + tl.arange(0, 64)[None, :], acc)

# CHECK:      [[BUF:%[0-9]+]] = local_alloc : !smem<3x64x64xf16
# CHECK:      tma_load {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}
# CHECK:      for {{.*}} {num_stages = 3}
# CHECK-NOT:  local_alloc
# CHECK-NOT:  {{= trans }}
# CHECK:      [[K:%[0-9]+]] = memdesc_index [[BUF]],
# CHECK-NEXT: [[KT:%[0-9]+]] = memdesc_trans [[K]]
# CHECK-NEXT: warp_group_dot {{%[0-9]+}}, [[KT]],
# CHECK-NOT:  local_alloc
# CHECK:      tma_load
# CHECK-NOT:  local_alloc
# CHECK:      warp_group_dot {{%[0-9]+}}, [[K]], {{.*}} {is_async = true}
# CHECK:      yield
