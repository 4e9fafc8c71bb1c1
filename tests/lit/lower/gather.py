# RUN: nereid ir %s -k k -s '*fp32, *i32' --after lower | filecheck %s
# RUN: nereid ir %s -k big -s '*i32, *i32' --after lower | filecheck %s --check-prefix=BIG
# tl.gather and tl.histogram are ops of their own (linear in the block
# sizes); tl.flip is a gather at the mirrored index i ^ (n - 1), for any
# power-of-two length.
import triton
import triton.language as tl


@triton.jit
def k(p, q):
    src = tl.load(p + tl.arange(0, 16))
    idx = tl.load(q + tl.arange(0, 16))
    tl.store(p + tl.arange(0, 16), tl.gather(src, idx, 0))
    tl.store(q + tl.arange(0, 4), tl.histogram(idx, 4))
    tl.store(q + tl.arange(0, 8), tl.histogram(idx, 8, mask=idx > 2))

# CHECK-LABEL: func @k
# CHECK:      [[SRC:%[0-9]+]] = load {{.*}} : tensor<16xf32>
# CHECK:      [[IDX:%[0-9]+]] = load {{.*}} : tensor<16xi32>
# CHECK:      gather [[SRC]], [[IDX]] {axis = 0} : tensor<16xf32>
# CHECK:      histogram [[IDX]], _ : tensor<4xi32>
# CHECK:      [[M:%[0-9]+]] = cmp [[IDX]], {{%[0-9]+}} {pred = "gt"} : tensor<16xi1>
# CHECK:      histogram [[IDX]], [[M]] : tensor<8xi32>


@triton.jit
def big(p, q):
    r = tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :]
    x = tl.load(p + r)
    i = tl.load(q + r)
    tl.store(p + r, tl.gather(x, i, 1) + tl.gather(x, i, 0))
    tl.store(q + tl.arange(0, 4096), tl.flip(tl.reshape(x, [4096]), 0))
    tl.store(q + r, tl.flip(x, 0))
    tl.store(q + tl.arange(0, 1024), tl.histogram(tl.reshape(i, [4096]), 1024))

# BIG-LABEL: func @big
# BIG:      gather {{%[0-9]+}}, {{%[0-9]+}} {axis = 1} : tensor<64x64xi32>
# BIG:      gather {{%[0-9]+}}, {{%[0-9]+}} {axis = 0} : tensor<64x64xi32>
# BIG:      const {value = 4095} : tensor<4096xi32>
# BIG:      gather {{%[0-9]+}}, {{%[0-9]+}} {axis = 0} : tensor<4096xi32>
# BIG:      const {value = 63} : tensor<64xi32>
# BIG:      expand_dims {{%[0-9]+}} {axis = 1} : tensor<64x1xi32>
# BIG:      broadcast {{%[0-9]+}} : tensor<64x64xi32>
# BIG:      gather {{%[0-9]+}}, {{%[0-9]+}} {axis = 0} : tensor<64x64xi32>
# BIG:      histogram {{%[0-9]+}}, _ : tensor<1024xi32>
