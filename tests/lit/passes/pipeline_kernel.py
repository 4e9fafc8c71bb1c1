# RUN: nereid ir %s -k kernel -s '*fp32, *fp32, i32, 64, 32' --verify-each | filecheck %s
# RUN: nereid ir %s -k kernel -s '*fp32, *fp32, i32, 64, 32' --after inline | filecheck %s --check-prefix=INLINE
# RUN: nereid ir %s -k kernel -s '*fp32, *fp32, i32, 64, 32' --after lower | filecheck %s --check-prefix=LOWER
# A kernel through the block pipeline: the helper is inlined and removed,
# the invariant offsets leave the loop, a dead accumulator goes.
import triton
import triton.language as tl


@triton.jit
def scaled(x, s):
    return x * s + 0.0 * s


@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    unused = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(STEPS):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        acc += scaled(x, 2.0)
        unused += x
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, acc, mask=offs < n)

# LOWER: call {{.*}} {callee = "scaled
# INLINE-NOT: call
# INLINE-NOT: func @scaled
# CHECK-NOT: func @scaled
# CHECK-LABEL: func @kernel(
# CHECK: [[PTRS:%[0-9]+]] = addptr
# CHECK: [[ACC:%[0-9]+]] = for {{.*}} : tensor<64xf32> {
# CHECK-NEXT: ^(%{{[0-9]+}}: i32, [[A:%[0-9]+]]: tensor<64xf32>):
# CHECK-NEXT: [[X:%[0-9]+]] = load [[PTRS]], %{{[0-9]+}}, %{{[0-9]+}} : tensor<64xf32>
# CHECK-NOT: arange
# CHECK-NOT: program_id
# CHECK: yield
# CHECK-NEXT: }
# CHECK: store %{{[0-9]+}}, [[ACC]], %{{[0-9]+}}
