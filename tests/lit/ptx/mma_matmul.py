# The matmul example on tensor cores.  Pipelined (3 stages): the A and B
# tiles arrive by 16-byte cp.async copies (masked ones zero-filled through
# src-size), committed per stage and waited for with one group in flight;
# ldmatrix loads A (row-major: plain) and B (row-major: .trans) straight
# from the swizzled buffers into mma.sync fragments; the f16 result leaves
# through shared memory for 16-byte stores.  Not pipelined (1 stage): the
# loaded tiles go through the conversion scratch into the same ldmatrix.
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 128, 32, 8, ""' --arch sm_80 --num-stages 3 | filecheck %s --check-prefix=S3
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 128, 32, 8, ""' --arch sm_80 --num-stages 1 | filecheck %s --check-prefix=S1
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 128, 32, 8, ""' --arch sm_90 --num-stages 4 --num-warps 8 | filecheck %s --check-prefix=H

# S3: .version 8.0
# S3-NEXT: .target sm_80
# S3: .extern .shared .align 16 .b8 nr_smem[];
# Prologue: stages 0 and 1.
# S3: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
# S3: cp.async.commit_group;
# S3: cp.async.cg.shared.global
# S3: cp.async.commit_group;
# The loop: wait for the oldest stage, barrier, read the stage into the
# mma.sync fragments, then (after a barrier) the copies ahead.
# S3: cp.async.wait_group 1;
# S3: bar.sync 0;
# S3-NOT: cp.async
# S3: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%r{{[0-9]+}}];
# S3-NOT: cp.async
# S3: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# S3-NOT: cp.async
# S3: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
# S3: bar.sync 0;
# S3-NOT: mma.sync
# S3: cp.async.cg.shared.global
# S3: cp.async.commit_group;
# S3-NOT: mma.sync
# S3: bra.uni
# After the loop: drain, then the epilogue through shared memory.
# S3: cp.async.wait_group 0;
# S3: bar.sync 0;
# S3: st.shared.b32
# S3: bar.sync 0;
# S3: ld.shared.v4.b32
# S3: st.global.v4.b32
# S3-NOT: mma.sync

# S1-NOT: cp.async
# S1: ld.global.v4.b32
# S1: bar.sync 0;
# S1: st.shared.v4.b32
# S1: bar.sync 0;
# S1: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# S1: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# S1-NOT: cp.async

# H: .target sm_90
# H: cp.async.cg.shared.global
# H: cp.async.wait_group 2;
# H: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# H: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# H: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
