# RUN: nereid ir %s -k k -s '*fp32, *i32' --after lower | filecheck %s
# tl.gather and tl.histogram compare every position with every value (a
# one-hot block, within the block size limit): gather xor-reduces the selected
# element bits, histogram sums the matches.
import triton
import triton.language as tl


@triton.jit
def k(p, q):
    src = tl.load(p + tl.arange(0, 16))
    idx = tl.load(q + tl.arange(0, 16))
    tl.store(p + tl.arange(0, 16), tl.gather(src, idx, 0))
    tl.store(q + tl.arange(0, 4), tl.histogram(idx, 4))

# CHECK-LABEL: func @k
# CHECK:      cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "eq"} : tensor<16x16xi1>
# CHECK:      select {{.*}} : tensor<16x16xi32>
# CHECK:      reduce {{%[0-9]+}} {axis = 1, kind = "xor"} : tensor<16xi32>
# CHECK:      bitcast {{%[0-9]+}} : tensor<16xf32>
# CHECK:      cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "eq"} : tensor<16x4xi1>
# CHECK:      cast {{%[0-9]+}} : tensor<16x4xi32>
# CHECK:      reduce {{%[0-9]+}} {axis = 0, kind = "add"} : tensor<4xi32>
