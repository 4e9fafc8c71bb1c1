# RUN: nereid ir %s -k tuples -s '*fp32, i32' --after lower 2>&1 | filecheck %s
# RUN: nereid ir %s -k carried -s '*fp32, i32' --after lower | filecheck %s --check-prefix=CARRIED
# Tuples: unpacking, indexing, slicing, concatenation, `in`, and helpers
# returning tuples of tensors and constants.
import triton
import triton.language as tl


@triton.jit
def pair(x):
    return x + 1, (x * 2, 7)


@triton.jit
def tuples(p, n):
    shape: tl.constexpr = (4, 8)
    a, b = shape
    both: tl.constexpr = shape + (2,)
    # an assignment without `: tl.constexpr` turns numbers into tensors, as in Triton
    t = (1, 2)
    tl.static_print(t)
    tl.static_print(both, both[-1], both[1:], len(both), 8 in shape, shape[::-1], [1] * 3)
    u, (v, k) = pair(n)
    z = tl.zeros(shape, tl.float32)
    tl.store(p + u + v + k + a + b, tl.sum(z))

# CHECK: note: (int32[], int32[])
# CHECK: note: (4, 8, 2) 2 (8, 2) 3 True (8, 4) (1, 1, 1)
# CHECK-LABEL: func @tuples
# CHECK:      const {value = 1} : i32
# CHECK-NEXT: const {value = 2} : i32
# CHECK:      [[U:%[0-9]+]], [[V:%[0-9]+]] = call %n {callee = "pair__i32"} : i32, i32
# CHECK-NEXT: [[K:%[0-9]+]] = const {value = 7} : i32
# CHECK:      [[P1:%[0-9]+]] = addptr %p, [[U]] : ptr<f32>
# CHECK-NEXT: [[P2:%[0-9]+]] = addptr [[P1]], [[V]] : ptr<f32>
# CHECK-NEXT: addptr [[P2]], [[K]] : ptr<f32>
# CHECK-LABEL: func @pair__i32(%x: i32) -> (i32, i32)


# Tuples of tensors can be carried by loops and merged by ifs: each tensor
# that changes is one carried value or result.
@triton.jit
def carried(p, n):
    st = (tl.zeros((8,), tl.float32), tl.zeros((8,), tl.int32))
    for i in range(n):
        a, b = st
        st = (a + tl.load(p + i + tl.arange(0, 8)), b)
    if n > 2:
        st = (st[0] * 2, st[1])
    tl.store(p + tl.arange(0, 8), st[0] + st[1])

# CARRIED-LABEL: func @carried
# CARRIED:      [[A0:%[0-9]+]] = const {value = 0.0} : tensor<8xf32>
# CARRIED-NEXT: [[B0:%[0-9]+]] = const {value = 0} : tensor<8xi32>
# only the first element changes in the loop
# CARRIED:      [[A:%[0-9]+]] = for {{%[0-9]+}}, %n, {{%[0-9]+}}, [[A0]] : tensor<8xf32> {
# CARRIED:      [[A2:%[0-9]+]] = if {{%[0-9]+}} : tensor<8xf32> {
# CARRIED:      cast [[B0]] : tensor<8xf32>
