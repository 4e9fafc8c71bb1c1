# RUN: nereid ir %s -k logic -s '*i32, *u32, i32, None, "gelu"' --after lower 2>&1 | filecheck %s
# Boolean and bitwise operators: `and`/`or`/`not` on int1 tensors, constexpr
# short-circuiting, `is None`, `in`, shifts by the tensor's signedness,
# pointer comparisons, and compile-time folding with Python semantics.
import triton
import triton.language as tl


@triton.jit
def logic(p, q, n, OPT: tl.constexpr, ACT: tl.constexpr):
    x = tl.load(p + tl.arange(0, 8))
    u = tl.load(q + tl.arange(0, 8))
    a = (x > 0) and (x < n)
    b = not (n > 3)
    c = OPT is None and x > 1
    d = (x == 2) or True
    tl.static_print(ACT in ("gelu", "relu"), OPT is not None, 7 // -2, -7 % 3, 2 ** 10, 1 << 4, ~5, not 0, 3 < 4.5,
                    int("12") + int(2.9), float("-inf"), len((1, 2)), max(3, 9), min(2.5, 1), True + True)
    tl.store(p + tl.arange(0, 8), (x >> 1) + (u >> 1).to(tl.int32) + a + b + c + d + (x << 2) + ~x + (p < p + 1))

# CHECK: note: True False -4 2 1024 16 -6 True True 14 -inf 2 9 1 2
# CHECK-LABEL: func @logic
# CHECK:      [[X:%[0-9]+]] = load {{.*}} : tensor<8xi32>
# CHECK:      [[U:%[0-9]+]] = load {{.*}} : tensor<8xu32>
# `and` of two int1 blocks is `and`
# CHECK:      [[A1:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "gt"} : tensor<8xi1>
# CHECK:      [[A2:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "lt"} : tensor<8xi1>
# CHECK-NEXT: and [[A1]], [[A2]] : tensor<8xi1>
# `not` of an int1 scalar is xor with true
# CHECK:      [[NB:%[0-9]+]] = cmp %n, {{%[0-9]+}} {pred = "gt"} : i1
# CHECK-NEXT: [[T:%[0-9]+]] = const {value = 1} : i1
# CHECK-NEXT: xor [[NB]], [[T]] : i1
# OPT is None is True, so `and` gives x > 1; `or True` gives True (a constant)
# CHECK:      cmp [[X]], {{%[0-9]+}} {pred = "gt"} : tensor<8xi1>
# signed >> is arithmetic, unsigned >> logical: both are shr of their dtype
# CHECK:      shr [[X]], {{%[0-9]+}} : tensor<8xi32>
# CHECK:      shr [[U]], {{%[0-9]+}} : tensor<8xu32>
# CHECK:      shl [[X]], {{%[0-9]+}} : tensor<8xi32>
# CHECK:      [[M1:%[0-9]+]] = const {value = -1} : tensor<8xi32>
# CHECK-NEXT: xor [[X]], [[M1]] : tensor<8xi32>
# pointers compare with pointers
# CHECK:      [[P1:%[0-9]+]] = addptr %p, {{%[0-9]+}} : ptr<i32>
# CHECK-NEXT: cmp %p, [[P1]] {pred = "lt"} : i1
