# RUN: nereid ir %s -k unary -s '*fp32, *fp64, *i32' --after lower | filecheck %s --check-prefix=UNARY
# RUN: nereid ir %s -k binary -s '*fp32, *bf16, *u32' --after lower | filecheck %s --check-prefix=BINARY
# Math functions: one op each (libdevice functions are `math {fn = ...}`);
# tl.maximum/minimum carry their NaN rule; sigmoid and the like expand as in
# Triton; abs of an unsigned integer is the identity.
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def unary(f, d, i):
    x = tl.load(f)
    y = tl.load(d)
    k = tl.load(i)
    a = tl.exp(x) + tl.exp2(x) + tl.log(x) + tl.log2(x) + tl.sqrt(x) + tl.rsqrt(x) + tl.sin(x) + tl.cos(x)
    b = tl.floor(x) + tl.ceil(x) + tl.erf(x) + tl.sqrt_rn(x) + tl.abs(x) + x.exp() + tl.math.exp(x)
    c = libdevice.tanh(y) + libdevice.atan2(y, y) + libdevice.pow(y, 3) + tl.sigmoid(y)
    tl.store(f, a + b)
    tl.store(d, c)
    tl.store(i, tl.abs(k) + (-k) + ~k)

# UNARY-LABEL: func @unary
# UNARY: exp [[X:%[0-9]+]] : f32
# UNARY: exp2 [[X]] : f32
# UNARY: log [[X]] : f32
# UNARY: log2 [[X]] : f32
# UNARY: sqrt [[X]] : f32
# UNARY: rsqrt [[X]] : f32
# UNARY: sin [[X]] : f32
# UNARY: cos [[X]] : f32
# UNARY: floor [[X]] : f32
# UNARY: ceil [[X]] : f32
# UNARY: erf [[X]] : f32
# UNARY: sqrt_rn [[X]] : f32
# UNARY: abs [[X]] : f32
# UNARY: exp [[X]] : f32
# UNARY: exp [[X]] : f32
# UNARY: math [[Y:%[0-9]+]] {fn = "tanh"} : f64
# UNARY: math [[Y]], [[Y]] {fn = "atan2"} : f64
# UNARY: [[E:%[0-9]+]] = const {value = 3.0} : f64
# UNARY-NEXT: math [[Y]], [[E]] {fn = "pow"} : f64
# sigmoid(y) = 1 / (1 + exp(0 - y))
# UNARY: [[Z:%[0-9]+]] = const {value = 0.0} : f64
# UNARY-NEXT: [[N:%[0-9]+]] = sub [[Z]], [[Y]] : f64
# UNARY-NEXT: [[EX:%[0-9]+]] = exp [[N]] : f64
# UNARY-NEXT: [[ONE:%[0-9]+]] = const {value = 1.0} : f64
# UNARY-NEXT: [[D:%[0-9]+]] = add [[ONE]], [[EX]] : f64
# UNARY-NEXT: [[ONE2:%[0-9]+]] = const {value = 1.0} : f64
# UNARY-NEXT: div [[ONE2]], [[D]] : f64
# UNARY: abs [[K:%[0-9]+]] : i32
# UNARY: neg [[K]] : i32
# UNARY: [[ONES:%[0-9]+]] = const {value = -1} : i32
# UNARY-NEXT: xor [[K]], [[ONES]] : i32


@triton.jit
def binary(f, b, u):
    x = tl.load(f + tl.arange(0, 8))
    h = tl.load(b + tl.arange(0, 8))
    v = tl.load(u + tl.arange(0, 8))
    r = tl.maximum(x, 0.0) + tl.minimum(x, 1.0, propagate_nan=tl.PropagateNan.ALL)
    r += tl.clamp(x, -1.0, 1.0) + tl.where(x > 0, x, 0) + tl.fma(x, x, 2.0) + tl.div_rn(x, 3.0)
    r += tl.fdiv(x, x, ieee_rounding=True) + tl.maximum(h, h) + max(x, 2.0)
    tl.store(f + tl.arange(0, 8), r)
    tl.store(u + tl.arange(0, 8), tl.umulhi(v, v) + tl.abs(v))

# BINARY-LABEL: func @binary
# BINARY:      [[V:%[0-9]+]] = load {{.*}} : tensor<8xu32>
# BINARY:      [[Z:%[0-9]+]] = const {value = 0.0} : tensor<8xf32>
# BINARY-NEXT: max [[X:%[0-9]+]], [[Z]] {nan = "none"} : tensor<8xf32>
# BINARY:      min [[X]], {{%[0-9]+}} {nan = "all"} : tensor<8xf32>
# clamp is max then min
# BINARY:      [[LO:%[0-9]+]] = const {value = -1.0} : tensor<8xf32>
# BINARY-NEXT: [[HI:%[0-9]+]] = const {value = 1.0} : tensor<8xf32>
# BINARY-NEXT: [[T:%[0-9]+]] = max [[X]], [[LO]] {nan = "none"} : tensor<8xf32>
# BINARY-NEXT: min [[T]], [[HI]] {nan = "none"} : tensor<8xf32>
# BINARY:      [[C:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "gt"} : tensor<8xi1>
# BINARY-NEXT: [[Z0:%[0-9]+]] = const {value = 0.0} : tensor<8xf32>
# BINARY-NEXT: select [[C]], [[X]], [[Z0]] : tensor<8xf32>
# BINARY:      fma [[X]], [[X]], {{%[0-9]+}} : tensor<8xf32>
# BINARY:      div_rn [[X]], {{%[0-9]+}} : tensor<8xf32>
# BINARY:      div [[X]], [[X]] {ieee_rounding = true} : tensor<8xf32>
# bf16 maximum is computed in fp32
# BINARY:      [[H1:%[0-9]+]] = cast [[H:%[0-9]+]] : tensor<8xf32>
# BINARY-NEXT: [[H2:%[0-9]+]] = cast [[H]] : tensor<8xf32>
# BINARY-NEXT: max [[H1]], [[H2]] {nan = "none"} : tensor<8xf32>
# builtin max on a tensor is tl.maximum
# BINARY:      max [[X]], {{%[0-9]+}} {nan = "none"} : tensor<8xf32>
# BINARY:      [[HI2:%[0-9]+]] = umulhi [[V]], [[V]] : tensor<8xu32>
# BINARY-NEXT: add [[HI2]], [[V]] : tensor<8xu32>
