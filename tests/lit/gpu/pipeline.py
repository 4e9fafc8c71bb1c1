# gpu-pipeline: a loop that tl.range asks to pipeline 3 deep, whose A and B
# tiles feed a dot, stages them through 3-buffered shared memory with
# cp.async copies issued 2 iterations ahead, right after the dot: a barrier
# after the wait before the stage is read, another before the copies (which
# fill the stage the previous iteration read), a drain after the loop. A loop
# without num_stages is left alone. A 128x256x64 tile on sm_80 keeps its 3
# stages (144 KiB of the 163 KiB): the conversions the stages replace do not
# count against shared memory.
# RUN: nereid ir %s -k matmul -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts --pass gpu-pipeline --pass gpu-remove-converts --pass gpu-smem --pass gpu-barriers | filecheck %s
# RUN: nereid ir %s -k matmul -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, 128, 256, 64' --stage gpu --arch sm_80 --num-warps 8 | filecheck %s --check-prefix=BIG
# RUN: nereid ir %s -k plain -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 32' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts --pass gpu-pipeline | filecheck %s --check-prefix=PLAIN
import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=3):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))

# CHECK: #[[SA:L[0-9]+]] = shared<vec = 8, per_phase = 2, max_phase = 4, order = [1, 0]>
# CHECK: #[[SB:L[0-9]+]] = shared<vec = 8, per_phase = 1, max_phase = 8, order = [1, 0]>
# CHECK: kernel smem = 24576 {
# CHECK: [[A:%[0-9]+]] = local_alloc {smem_offset = 0} : !smem<3x64x32xf16, #[[SA]]>
# CHECK-NEXT: [[B:%[0-9]+]] = local_alloc {smem_offset = 12288} : !smem<3x32x64xf16, #[[SB]]>
# Prologue: iterations 0 and 1.
# CHECK: async_copy {{.*}}, {{.*}}, {{.*}}, _
# CHECK: async_copy {{.*}}, {{.*}}, {{.*}}, _
# CHECK: async_commit_group
# CHECK: async_copy {{.*}}, {{.*}}, {{.*}}, _
# CHECK: async_copy {{.*}}, {{.*}}, {{.*}}, _
# CHECK: async_commit_group
# CHECK-NOT: load
# CHECK: = for {{.*}} {num_stages = 3} : tensor<64x64xf32, #{{L[0-9]+}}>, tensor<64x32xptr<f16>, {{.*}}>, tensor<32x64xptr<f16>, {{.*}}>, i32, i32 {
# CHECK-NEXT: ^(%{{[0-9]+}}: i32, {{.*}}, [[R:%[0-9]+]]: i32, [[W:%[0-9]+]]: i32):
# CHECK-NEXT: async_wait {num = 1}
# CHECK-NOT: async_copy
# CHECK: [[VA:%[0-9]+]] = memdesc_index [[A]], [[R]]
# CHECK-NEXT: barrier
# CHECK-NEXT: [[TA:%[0-9]+]] = local_load [[VA]]
# CHECK-NEXT: [[VB:%[0-9]+]] = memdesc_index [[B]], [[R]]
# CHECK-NEXT: [[TB:%[0-9]+]] = local_load [[VB]]
# CHECK-NEXT: dot [[TA]], [[TB]]
# CHECK-NEXT: memdesc_index [[A]], [[W]]
# CHECK-NEXT: barrier
# CHECK-NEXT: async_copy
# CHECK-NEXT: memdesc_index [[B]], [[W]]
# CHECK-NEXT: async_copy
# CHECK-NEXT: async_commit_group
# CHECK-NOT: barrier
# CHECK: yield
# CHECK-NEXT: }
# CHECK-NEXT: async_wait {num = 0}


@triton.jit
def plain(a_ptr, b_ptr, c_ptr, K, B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for k in range(0, K, B):
        a = tl.load(a_ptr + r[:, None] * K + k + r[None, :])
        b = tl.load(b_ptr + (k + r[:, None]) * B + r[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + r[:, None] * B + r[None, :], acc)

# PLAIN-NOT: async_copy
# PLAIN-NOT: local_alloc
# PLAIN: dot

# BIG: kernel smem = 147456 {
# BIG-DAG: local_alloc {{.*}} : !smem<3x128x64xf16
# BIG-DAG: local_alloc {{.*}} : !smem<3x64x256xf16
# BIG: async_wait {num = 1}
