# RUN: nereid ir %s -k for_loop -s '*fp32, i32, 32' --after lower | filecheck %s --check-prefix=FOR
# RUN: nereid ir %s -k neg_step -s '*i32' --after lower | filecheck %s --check-prefix=NEG
# RUN: nereid ir %s -k tl_range -s '*fp32, i64' --after lower | filecheck %s --check-prefix=TLR
# RUN: nereid ir %s -k static -s '*fp32, 4' --after lower | filecheck %s --check-prefix=STATIC
# RUN: nereid ir %s -k while_loop -s '*i32, i32' --after lower | filecheck %s --check-prefix=WHILE
# Loops: the carried values are the tensors assigned in the body that were
# defined before the loop and that the body changes; the induction variable
# has the promoted type of the bounds; a negative constexpr step iterates
# upward and maps the induction variable back; static_range unrolls.
import triton
import triton.language as tl


@triton.jit
def for_loop(x_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    unchanged = tl.arange(0, BLOCK)
    count = 0
    for i in range(0, n, 2):
        acc += tl.load(x_ptr + unchanged + i)
        count = count + 1
        local = count * 2
        unchanged = unchanged
    tl.store(x_ptr + unchanged, acc + count)

# FOR-LABEL: func @for_loop
# FOR:      [[ACC:%[0-9]+]] = const {value = 0.0} : tensor<32xf32>
# FOR-NEXT: [[AR:%[0-9]+]] = arange {end = 32, start = 0} : tensor<32xi32>
# FOR-NEXT: [[CNT:%[0-9]+]] = const {value = 0} : i32
# FOR-NEXT: [[LB:%[0-9]+]] = const {value = 0} : i32
# FOR-NEXT: [[ST:%[0-9]+]] = const {value = 2} : i32
# FOR-NEXT: [[RACC:%[0-9]+]], [[RCNT:%[0-9]+]] = for [[LB]], %n, [[ST]], [[ACC]], [[CNT]] : tensor<32xf32>, i32 {
# FOR-NEXT: ^([[IV:%[0-9]+]]: i32, [[A:%[0-9]+]]: tensor<32xf32>, [[C:%[0-9]+]]: i32):
# FOR:        splat [[IV]] : tensor<32xi32>
# FOR:        [[NA:%[0-9]+]] = add [[A]], {{%[0-9]+}} : tensor<32xf32>
# FOR:        [[NC:%[0-9]+]] = add [[C]], {{%[0-9]+}} : i32
# FOR:        yield [[NA]], [[NC]]
# FOR-NEXT: }
# FOR:      addptr {{%[0-9]+}}, [[AR]]
# FOR:      cast [[RCNT]] : f32


@triton.jit
def neg_step(x_ptr):
    s = 0
    for j in range(10, 0, -3):
        s = s + j
    tl.store(x_ptr, s)

# NEG-LABEL: func @neg_step
# range(10, 0, -3) runs j = 10, 7, 4, 1: the loop counts up from 0 to 10 by 3
# NEG:      [[S0:%[0-9]+]] = const {value = 0} : i32
# NEG-NEXT: [[LB:%[0-9]+]] = const {value = 0} : i32
# NEG-NEXT: [[UB:%[0-9]+]] = const {value = 10} : i32
# NEG-NEXT: [[ST:%[0-9]+]] = const {value = 3} : i32
# NEG-NEXT: [[S:%[0-9]+]] = for [[LB]], [[UB]], [[ST]], [[S0]] : i32 {
# NEG-NEXT: ^([[IV:%[0-9]+]]: i32, [[ACC:%[0-9]+]]: i32):
# NEG-NEXT:   [[T:%[0-9]+]] = sub [[UB]], [[IV]] : i32
# NEG-NEXT:   [[J:%[0-9]+]] = add [[T]], [[LB]] : i32
# NEG-NEXT:   [[N:%[0-9]+]] = add [[ACC]], [[J]] : i32
# NEG-NEXT:   yield [[N]]


@triton.jit
def tl_range(x_ptr, n):
    for i in tl.range(0, n, num_stages=3, loop_unroll_factor=2, flatten=True, warp_specialize=True,
                      disallow_acc_multi_buffer=True):
        tl.store(x_ptr + i, 0.0)
    for i in range(n):
        pass

# TLR-LABEL: func @tl_range
# the bounds promote to the i64 of n
# TLR:      [[LB:%[0-9]+]] = const {value = 0} : i64
# TLR-NEXT: [[ST:%[0-9]+]] = const {value = 1} : i64
# TLR-NEXT: for [[LB]], %n, [[ST]] {disallow_acc_multi_buffer = true, flatten = true, num_stages = 3, unroll = 2, warp_specialize = true} {
# TLR-NEXT: ^([[IV:%[0-9]+]]: i64):
# TLR-NEXT:   addptr %x_ptr, [[IV]] : ptr<f32>
# TLR:      for {{%[0-9]+}}, %n, {{%[0-9]+}} {
# TLR-NEXT: ^({{%[0-9]+}}: i64):
# TLR-NEXT:   yield
# TLR-NEXT: }


@triton.jit
def static(x_ptr, N: tl.constexpr):
    acc = tl.load(x_ptr)
    for k in tl.static_range(1, N, 2):
        acc = acc * k
    for k in tl.static_range(N):
        tl.static_assert(k < N)
    tl.store(x_ptr, acc)

# STATIC-LABEL: func @static
# STATIC-NOT:  for
# STATIC:      const {value = 1.0} : f32
# STATIC:      const {value = 3.0} : f32
# STATIC-NOT:  const {value = 5.0}
# STATIC-NOT:  for


@triton.jit
def while_loop(x_ptr, n):
    i = 0
    total = tl.load(x_ptr)
    fixed = total + 1
    while i < n:
        total = total + i
        i += 1
    tl.store(x_ptr, total + fixed)

# WHILE-LABEL: func @while_loop
# WHILE:      [[I0:%[0-9]+]] = const {value = 0} : i32
# WHILE:      [[T0:%[0-9]+]] = load %x_ptr
# WHILE:      [[RT:%[0-9]+]], [[RI:%[0-9]+]] = while [[T0]], [[I0]] : i32, i32 {
# WHILE-NEXT: ^([[T:%[0-9]+]]: i32, [[I:%[0-9]+]]: i32):
# WHILE-NEXT:   [[C:%[0-9]+]] = cmp [[I]], %n {pred = "lt"} : i1
# WHILE-NEXT:   condition [[C]], [[T]], [[I]]
# WHILE-NEXT: } {
# WHILE-NEXT: ^([[T1:%[0-9]+]]: i32, [[I1:%[0-9]+]]: i32):
# WHILE-NEXT:   [[NT:%[0-9]+]] = add [[T1]], [[I1]] : i32
# WHILE:        [[NI:%[0-9]+]] = add [[I1]], {{%[0-9]+}} : i32
# WHILE-NEXT:   yield [[NT]], [[NI]]
# WHILE-NEXT: }
# WHILE-NEXT: add [[RT]], {{%[0-9]+}} : i32
