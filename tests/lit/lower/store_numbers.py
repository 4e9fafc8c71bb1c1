# RUN: nereid ir %s -k k -s '*i32, *i8, *u32, i32' --after lower | filecheck %s
# Numbers stored (or used as `other`) convert to the element type as Triton's
# to_tensor followed by a cast: ints wrap, floats truncate toward zero and
# saturate, NaN gives 0.
import triton
import triton.language as tl


@triton.jit
def k(pi, pb, pu, n):
    offs = tl.arange(0, 16)
    x = tl.load(pi + offs, mask=offs < n, other=0.0)
    tl.store(pi + offs, 1.5)
    tl.store(pb + offs, 300)
    tl.store(pu + offs, -1)
    tl.store(pu + offs, float('nan'))
    tl.store(pi + offs, 1e20)

# CHECK-LABEL: func @k
# CHECK: const {value = 0} : tensor<16xi32>
# CHECK: const {value = 1} : tensor<16xi32>
# CHECK: const {value = 44} : tensor<16xi8>
# CHECK: const {value = 4294967295} : tensor<16xu32>
# CHECK: const {value = 0} : tensor<16xu32>
# CHECK: const {value = 2147483647} : tensor<16xi32>
