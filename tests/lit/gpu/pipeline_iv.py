# gpu-pipeline on loads addressed from the induction variable: pointers and
# masks computed from the loop's index and loop invariants alone are cloned
# for the copies issued ahead (the index replaced by iv + 2 * step in the
# body, by lb and lb + step in the prologue); the loop carries only the
# buffer indices.  A load whose address depends on another carried value
# stays a load.
# RUN: nereid ir %s -k ivmm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16, 64, 64, 32' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts --pass gpu-pipeline --pass gpu-remove-converts --pass gpu-smem --pass gpu-barriers | filecheck %s
# RUN: nereid ir %s -k carried_off -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 32' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts --pass gpu-pipeline | filecheck %s --check-prefix=OTHER
import triton
import triton.language as tl


@triton.jit
def ivmm(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=3):
        kk = k + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + kk[None, :], mask=kk[None, :] < K, other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + offs_n[None, :], mask=kk[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)

# CHECK: kernel smem = 24576 {
# CHECK: [[A:%[0-9]+]] = local_alloc {smem_offset = 0} : !smem<3x64x32xf16, #{{L[0-9]+}}>
# CHECK-NEXT: [[B:%[0-9]+]] = local_alloc {smem_offset = 12288} : !smem<3x32x64xf16, #{{L[0-9]+}}>
# Prologue: iterations lb and lb + step, each masked by its own index and by
# the loop's bound.
# CHECK: [[IN0:%[0-9]+]] = cmp %{{[0-9]+}}, %K {pred = "lt"} : i1
# CHECK: [[M0:%[0-9]+]] = and %{{[0-9]+}}, %{{[0-9]+}} : tensor<64x32xi1
# CHECK: async_copy %{{[0-9]+}}, %{{[0-9]+}}, [[M0]], _
# CHECK: async_copy
# CHECK: async_commit_group
# CHECK: [[IV1:%[0-9]+]] = add %{{[0-9]+}}, %{{[0-9]+}} : i32
# CHECK-NEXT: [[IN1:%[0-9]+]] = cmp [[IV1]], %K {pred = "lt"} : i1
# CHECK: splat [[IV1]] : tensor<32xi32
# CHECK: async_copy
# CHECK: async_copy
# CHECK: async_commit_group
# CHECK-NOT: load
# The loop carries no pointers, only the read and write stages.
# CHECK: = for {{.*}} {num_stages = 3} : tensor<64x64xf32, #{{L[0-9]+}}>, i32, i32 {
# CHECK-NEXT: ^([[IV:%[0-9]+]]: i32, {{.*}}, [[R:%[0-9]+]]: i32, [[W:%[0-9]+]]: i32):
# CHECK-NEXT: async_wait {num = 1}
# CHECK-NEXT: [[AHEAD:%[0-9]+]] = add [[IV]], %{{[0-9]+}} : i32
# CHECK-NEXT: cmp [[AHEAD]], %K {pred = "lt"} : i1
# CHECK: splat [[AHEAD]]
# CHECK-NOT: async_copy
# CHECK: [[VA:%[0-9]+]] = memdesc_index [[A]], [[R]]
# CHECK-NEXT: barrier
# CHECK-NEXT: [[TA:%[0-9]+]] = local_load [[VA]]
# CHECK: [[VB:%[0-9]+]] = memdesc_index [[B]], [[R]]
# CHECK-NEXT: [[TB:%[0-9]+]] = local_load [[VB]]
# CHECK: dot [[TA]], [[TB]]
# The copies follow the dot.
# CHECK: memdesc_index [[A]], [[W]]
# CHECK-NEXT: barrier
# CHECK-NEXT: async_copy
# CHECK: memdesc_index [[B]], [[W]]
# CHECK-NEXT: async_copy
# CHECK-NEXT: async_commit_group
# CHECK-NOT: barrier
# CHECK-NOT: load
# CHECK: yield
# CHECK-NEXT: }
# CHECK-NEXT: async_wait {num = 0}


@triton.jit
def carried_off(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    off = 0
    for k in tl.range(0, K, B, num_stages=3):
        a = tl.load(a_ptr + r[:, None] * K + off + r[None, :])
        b = tl.load(b_ptr + (k + r[:, None]) * B + r[None, :])
        acc = tl.dot(a, b, acc)
        off += B
    tl.store(c_ptr + r[:, None] * B + r[None, :], acc)

# Only B is pipelined: A's address depends on `off`, a carried value.
# OTHER: local_alloc : !smem<3x32x32xf16
# OTHER-NOT: local_alloc
# OTHER: for
# OTHER: async_copy
# OTHER-NOT: async_copy
# OTHER: load
# OTHER-NOT: async_copy
# OTHER: dot
