# RUN: nereid ir %s -k runtime_if -s '*fp32, i32, 64' --after lower | filecheck %s --check-prefix=RT
# RUN: nereid ir %s -k const_if -s '*fp32, 1, "relu"' --after lower | filecheck %s --check-prefix=CT
# RUN: nereid ir %s -k ifexp -s '*fp32, i32' --after lower | filecheck %s --check-prefix=EXP
# An if on a runtime value is an `if` op whose results are the variables
# either branch changes and the ones both branches define; a variable defined
# in one branch only is not visible after the if.  An if on a constexpr
# lowers only the taken branch.
import triton
import triton.language as tl


@triton.jit
def runtime_if(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    k = pid
    if pid < n:
        acc = acc + 1.0
        only_then = acc * 2
        both = pid * 2
    else:
        k = k + 1
        both = pid + 3
    tl.store(x_ptr + k + tl.arange(0, BLOCK), acc + both)
    if pid == 0:
        tl.store(x_ptr, 0.0)

# RT-LABEL: func @runtime_if
# RT:      [[PID:%[0-9]+]] = program_id {axis = 0} : i32
# RT-NEXT: [[ACC:%[0-9]+]] = const {value = 0.0} : tensor<64xf32>
# RT-NEXT: [[C:%[0-9]+]] = cmp [[PID]], %n {pred = "lt"} : i1
# RT-NEXT: [[R:%[0-9]+]], [[K:%[0-9]+]], [[BOTH:%[0-9]+]] = if [[C]] : tensor<64xf32>, i32, i32 {
# RT:        [[A1:%[0-9]+]] = add [[ACC]], {{%[0-9]+}} : tensor<64xf32>
# RT:        [[B1:%[0-9]+]] = mul [[PID]], {{%[0-9]+}} : i32
# RT-NEXT:   yield [[A1]], [[PID]], [[B1]]
# RT-NEXT: } {
# RT:        [[K2:%[0-9]+]] = add [[PID]], {{%[0-9]+}} : i32
# RT:        [[B2:%[0-9]+]] = add [[PID]], {{%[0-9]+}} : i32
# RT-NEXT:   yield [[ACC]], [[K2]], [[B2]]
# RT-NEXT: }
# RT:      addptr %x_ptr, [[K]] : ptr<f32>
# an if with no results
# RT:      [[C2:%[0-9]+]] = cmp [[PID]], {{%[0-9]+}} {pred = "eq"} : i1
# RT-NEXT: if [[C2]] {
# RT:        store %x_ptr, {{%[0-9]+}}, _
# RT-NEXT:   yield
# RT-NEXT: } {
# RT-NEXT:   yield
# RT-NEXT: }


@triton.jit
def const_if(x_ptr, MODE: tl.constexpr, ACT: tl.constexpr):
    x = tl.load(x_ptr)
    if MODE == 0:
        x = x + 100.0
    elif MODE == 1:
        x = x * 3.0
    else:
        x = x - 5.0
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    if not (ACT == "gelu" or MODE > 4):
        x = x + 1.0
    tl.store(x_ptr, x)

# CT-LABEL: func @const_if
# CT-NOT:  if
# CT:      const {value = 3.0} : f32
# CT-NOT:  100.0
# CT:      max {{.*}} {nan = "none"} : f32
# CT:      const {value = 1.0} : f32
# CT-NOT:  if


@triton.jit
def ifexp(x_ptr, n):
    pid = tl.program_id(0)
    v = pid * 2 if pid < n else pid + 7
    w = 1.0 if n > 0 else 2.0
    tl.store(x_ptr + v, w)

# EXP-LABEL: func @ifexp
# EXP:      [[C:%[0-9]+]] = cmp {{%[0-9]+}}, %n {pred = "lt"} : i1
# EXP-NEXT: [[V:%[0-9]+]] = if [[C]] : i32 {
# EXP:        yield
# EXP:      } {
# EXP:        yield
# EXP:      }
# EXP:      [[W:%[0-9]+]] = if {{%[0-9]+}} : f32 {
# EXP-NEXT:   [[ONE:%[0-9]+]] = const {value = 1.0} : f32
# EXP-NEXT:   yield [[ONE]]
# EXP:      addptr %x_ptr, [[V]] : ptr<f32>
