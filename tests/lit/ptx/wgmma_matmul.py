# The matmul example on Hopper's warpgroup tensor cores (sm_90a), pipelined
# 4 deep: the tiles arrive by 16-byte cp.async copies into 128-byte-swizzled
# buffers (shared memory aligned to the 1024-byte swizzle period); after
# each wait, fence.proxy.async makes them visible to wgmma, a barrier
# orders them, and each warpgroup issues wgmma.mma_async m64n128k16 with
# matrix descriptors for A (K-major) and B (N-major: transposed), fenced,
# committed and left in flight (waited for at the end of the body, for all
# but the newest group, and all after the loop) while the copies, issued
# behind the wgmma, run 3 iterations ahead (5 buffers).  The descriptors' high words: SBO 1024 >> 4 =
# 64 and the 128-byte swizzle (mode 1 in bits 62-63); the low words' LBO:
# 1 for K-major A, rows x 128 = 8192 >> 4 = 512 for N-major B.  sm_90
# without 'a' keeps mma.sync.
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 128, 64, 8, ""' --arch sm_90a --num-stages 4 | filecheck %s
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 256, 64, 8, ""' --arch sm_90a --num-stages 3 --num-warps 8 | filecheck %s --check-prefix=W8
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 128, 64, 8, ""' --arch sm_90 --num-stages 3 | filecheck %s --check-prefix=SM90

# CHECK: .version 8.0
# CHECK-NEXT: .target sm_90a
# CHECK: .extern .shared .align 1024 .b8 nr_smem[];
# CHECK: cp.async.cg.shared.global
# CHECK: cp.async.commit_group;
# The loop.
# CHECK: cp.async.wait_group 2;
# CHECK-NEXT: fence.proxy.async.shared::cta;
# CHECK-NOT: wgmma
# CHECK: bar.sync 0;
# CHECK-NOT: cp.async.cg.shared.global
# CHECK: wgmma.fence.sync.aligned;
# CHECK: bfe.u32 [[T:%r[0-9]+]], %r{{[0-9]+}}, 4, 14;
# CHECK-NEXT: or.b32 [[LO:%r[0-9]+]], [[T]], 65536;
# CHECK-NEXT: mov.b64 [[DA:%rd[0-9]+]], {[[LO]], 1073741888};
# CHECK: or.b32 [[LOB:%r[0-9]+]], %r{{[0-9]+}}, 33554432;
# CHECK-NEXT: mov.b64 [[DB:%rd[0-9]+]], {[[LOB]], 1073741888};
# CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{[{]}}[[D:(%r[0-9]+, ){63}%r[0-9]+]]}, [[DA]], [[DB]], %p{{[0-9]+}}, 1, 1, 0, 1;
# Two 64-row tiles per warpgroup, 4 k steps of 16.
# CHECK-COUNT-7: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
# CHECK-NEXT: wgmma.commit_group.sync.aligned;
# The next stages' copies while the wgmma runs, then the wait for the one before it.
# CHECK: bar.sync 0;
# CHECK: cp.async.cg.shared.global
# CHECK: cp.async.commit_group;
# CHECK-NOT: wgmma.mma_async
# CHECK: wgmma.wait_group.sync.aligned 1;
# CHECK-NOT: wgmma.mma_async
# CHECK: bra.uni
# CHECK: cp.async.wait_group 0;
# CHECK-NEXT: fence.proxy.async.shared::cta;
# CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
# CHECK-NOT: mma.sync
# CHECK-NOT: ldmatrix

# 8 warps over 128 x 256: two warpgroups along M, one m64n256 per k step.
# W8: .target sm_90a
# W8-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
# W8-NEXT: wgmma.commit_group.sync.aligned;
# W8: cp.async.commit_group;
# W8: wgmma.wait_group.sync.aligned 1;

# SM90: .target sm_90
# SM90-NOT: wgmma
# SM90-NOT: fence.proxy.async
# SM90: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
