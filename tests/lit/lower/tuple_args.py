# RUN: nereid ir %s -k k -s '((*fp32:16, i32:16), 2.0, (i32, 4)), *fp32' --after lower | filecheck %s
# A tuple argument: its runtime leaves are the kernel's arguments, named
# after the parameter; its constexpr leaves are compile-time values.
import triton
import triton.language as tl


@triton.jit
def k(args, out):
    (p, n), scale, (m, _) = args  # unpacked numbers become tensors, as in Triton
    B: tl.constexpr = args[2][1]
    x = tl.load(p + tl.arange(0, B), mask=tl.arange(0, B) < n)
    tl.store(out + tl.arange(0, B), x * scale + m)

# CHECK-LABEL: func @k(%arg0: ptr<f32> {divisibility = 16}, %arg1: i32 {divisibility = 16}, %arg2: i32, %out: ptr<f32>)
# the constexpr 2.0 unpacked into a variable becomes a tensor; B stays a constexpr
# CHECK:      const {value = 2.0} : f32
# CHECK:      arange {end = 4, start = 0} : tensor<4xi32>
