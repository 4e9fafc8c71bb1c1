# RUN: nereid ir %s -k kernel -s '*fp32, i32, 16' --after lower | filecheck %s
# RUN: nereid ir %s -k early -s '*fp32, i32' --after lower | filecheck %s --check-prefix=EARLY
# Calls of @jit functions: one helper per specialization (argument types and
# constexpr values, defaults included), named after them, reused when the
# same specialization is called again; several results; constexpr results
# stay compile-time; an early return in a helper yields the returned values
# from an `if`; noinline is kept.
import triton
import triton.language as tl


@triton.jit
def scale(x, factor, BIAS: tl.constexpr = 1):
    return x * factor + BIAS


@triton.jit
def divmod2(a, b):
    return a // b, a % b


@triton.jit
def block_size(n: tl.constexpr):
    return n * 2


@triton.jit(noinline=True)
def clamp_pos(x):
    if x < 0:
        return 0.0
    return x


@triton.jit
def nothing(p):
    tl.store(p, 1.0)


@triton.jit
def kernel(p, n, B: tl.constexpr):
    x = tl.load(p)
    y = scale(x, 2.0)
    z = scale(x, 2.0)
    w = scale(x, 3.0, BIAS=4)
    q, r = divmod2(n, 7)
    tl.static_assert(block_size(B) == 32)
    v = clamp_pos(y + z + w)
    nothing(p)
    offs = tl.arange(0, block_size(B))
    tl.store(p + offs + q + r, v)

# CHECK-LABEL: func @kernel(%p: ptr<f32>, %n: i32) kernel {
# CHECK:      [[X:%[0-9]+]] = load %p, _, _ : f32
# CHECK-NEXT: [[Y:%[0-9]+]] = call [[X]] {callee = "scale__f32_f2d0_c1"} : f32
# CHECK-NEXT: [[Z:%[0-9]+]] = call [[X]] {callee = "scale__f32_f2d0_c1"} : f32
# CHECK-NEXT: [[W:%[0-9]+]] = call [[X]] {callee = "scale__f32_f3d0_c4"} : f32
# CHECK-NEXT: [[Q:%[0-9]+]], [[R:%[0-9]+]] = call %n {callee = "divmod2__i32_c7"} : i32, i32
# CHECK:      call {{%[0-9]+}} {callee = "clamp_pos__f32"} : f32
# CHECK-NEXT: call %p {callee = "nothing__pf32"}
# CHECK-NEXT: arange {end = 32, start = 0} : tensor<32xi32>
# CHECK-LABEL: func @scale__f32_f2d0_c1(%x: f32) -> (f32) {
# CHECK-NEXT: [[F:%[0-9]+]] = const {value = 2.0} : f32
# CHECK-NEXT: [[M:%[0-9]+]] = mul %x, [[F]] : f32
# CHECK-NEXT: [[B:%[0-9]+]] = const {value = 1.0} : f32
# CHECK-NEXT: [[S:%[0-9]+]] = add [[M]], [[B]] : f32
# CHECK-NEXT: return [[S]]
# CHECK-LABEL: func @scale__f32_f3d0_c4(%x: f32) -> (f32) {
# CHECK-LABEL: func @divmod2__i32_c7(%a: i32) -> (i32, i32) {
# CHECK:      div %a, {{%[0-9]+}} : i32
# CHECK:      rem %a, {{%[0-9]+}} : i32
# CHECK:      return
# CHECK-LABEL: func @clamp_pos__f32(%x: f32) -> (f32) noinline {
# CHECK:      [[C:%[0-9]+]] = cmp %x, {{%[0-9]+}} {pred = "lt"} : i1
# CHECK-NEXT: [[RV:%[0-9]+]] = if [[C]] : f32 {
# CHECK-NEXT:   [[ZERO:%[0-9]+]] = const {value = 0.0} : f32
# CHECK-NEXT:   yield [[ZERO]]
# CHECK-NEXT: } {
# CHECK-NEXT:   yield %x
# CHECK-NEXT: }
# CHECK-NEXT: return [[RV]]
# CHECK-LABEL: func @nothing__pf32(%p: ptr<f32>) {
# CHECK-NEXT: const {value = 1.0} : f32
# CHECK-NEXT: store %p


@triton.jit
def early(p, n):
    pid = tl.program_id(0)
    if pid >= n:
        return
    x = tl.load(p + pid)
    if x < 0:
        tl.store(p + pid, 0.0)
        return
    tl.store(p + pid, x * 2)

# The rest of the function becomes the else-branch of each early return.
# EARLY-LABEL: func @early
# EARLY:      [[C1:%[0-9]+]] = cmp {{%[0-9]+}}, %n {pred = "ge"} : i1
# EARLY-NEXT: if [[C1]] {
# EARLY-NEXT:   yield
# EARLY-NEXT: } {
# EARLY:        [[X:%[0-9]+]] = load
# EARLY:        [[C2:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "lt"} : i1
# EARLY-NEXT:   if [[C2]] {
# EARLY:          store
# EARLY-NEXT:     yield
# EARLY-NEXT:   } {
# EARLY:          mul [[X]]
# EARLY:          store
# EARLY-NEXT:     yield
# EARLY-NEXT:   }
# EARLY-NEXT:   yield
# EARLY-NEXT: }
# EARLY-NEXT: return
