# RUN: nereid ir %s -k k -s '*fp32' --after lower | filecheck %s
# tl.join / tl.split / tl.interleave, built exactly from shape ops, selects
# and xor reductions (in an integer type of the element's width); tl.flip, a
# gather at the mirrored index i ^ (n - 1).
import triton
import triton.language as tl


@triton.jit
def k(p):
    r = tl.arange(0, 8)
    x = tl.load(p + r)
    y = tl.load(p + 8 + r)
    j = tl.join(x, y)
    a, b = tl.split(j)
    f = tl.flip(x)
    tl.store(p + r, a + b + f + tl.sum(tl.interleave(x, y)))

# CHECK-LABEL: func @k
# join: both operands get a minor axis of 2, then a select on index 0
# CHECK:      [[EX:%[0-9]+]] = expand_dims [[X:%[0-9]+]] {axis = 1} : tensor<8x1xf32>
# CHECK-NEXT: [[EY:%[0-9]+]] = expand_dims [[Y:%[0-9]+]] {axis = 1} : tensor<8x1xf32>
# CHECK-NEXT: [[BX:%[0-9]+]] = broadcast [[EX]] : tensor<8x2xf32>
# CHECK-NEXT: [[BY:%[0-9]+]] = broadcast [[EY]] : tensor<8x2xf32>
# CHECK:      [[M:%[0-9]+]] = broadcast {{%[0-9]+}} : tensor<8x2xi1>
# CHECK-NEXT: [[J:%[0-9]+]] = select [[M]], [[BX]], [[BY]] : tensor<8x2xf32>
# split: bits as i32, zero the other half, xor-reduce the pair
# CHECK-NEXT: [[JI:%[0-9]+]] = bitcast [[J]] : tensor<8x2xi32>
# CHECK:      reduce {{%[0-9]+}} {axis = 1, kind = "xor"} : tensor<8xi32>
# CHECK-NEXT: bitcast {{%[0-9]+}} : tensor<8xf32>
# flip of 8 elements
# CHECK:      [[I:%[0-9]+]] = arange {end = 8, start = 0} : tensor<8xi32>
# CHECK-NEXT: [[S:%[0-9]+]] = const {value = 7} : tensor<8xi32>
# CHECK-NEXT: [[M:%[0-9]+]] = xor [[I]], [[S]] : tensor<8xi32>
# CHECK-NEXT: gather [[X]], [[M]] {axis = 0} : tensor<8xf32>
