# RUN: nereid ir %s -k k -s '*fp32, *i32' --after lower | filecheck %s
# Scans (tl.cumsum, tl.cumprod, tl.associative_scan) and tl.reduce with any
# combine function are trees of pairwise combines over [.., n/2, 2] views of
# the minor axis, log2(n) levels deep; a combine function that is not an op
# is called on whole blocks.
import triton
import triton.language as tl


@triton.jit
def mul_fn(a, b):
    return a * b


@triton.jit
def k(p, q):
    x = tl.load(p + tl.arange(0, 4))
    tl.store(p + tl.arange(0, 4), tl.cumsum(x, 0))
    y = tl.load(q + tl.arange(0, 4))
    tl.store(q, tl.reduce(y, 0, mul_fn))

# CHECK-LABEL: func @k
# cumsum of 4: pairs, then pairs of pairs
# CHECK:      reshape {{%[0-9]+}} : tensor<2x2xf32>
# CHECK:      [[S1:%[0-9]+]] = add {{%[0-9]+}}, {{%[0-9]+}} : tensor<2xf32>
# CHECK:      reshape [[S1]] : tensor<1x2xf32>
# CHECK:      add {{%[0-9]+}}, {{%[0-9]+}} : tensor<1xf32>
# CHECK:      reshape {{%[0-9]+}} : tensor<4xf32>
# the reduction calls the combine function twice (4 -> 2 -> 1)
# CHECK:      call {{%[0-9]+}}, {{%[0-9]+}} {callee = "mul_fn__2xi32_2xi32"} : tensor<2xi32>
# CHECK:      call {{%[0-9]+}}, {{%[0-9]+}} {callee = "mul_fn__1xi32_1xi32"} : tensor<1xi32>
# CHECK:      reshape {{%[0-9]+}} : i32
