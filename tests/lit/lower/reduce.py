# RUN: nereid ir %s -k reductions -s '*fp32, *fp16, *i8, 32' --after lower | filecheck %s
# RUN: nereid ir %s -k custom -s '*fp32' --after lower | filecheck %s --check-prefix=CUSTOM
# Reductions: axis=None reduces everything (a reshape to one axis first),
# keep_dims re-inserts the axes, small integers sum in 32 bits, fp16 and
# integers narrower than 32 bits take their max in 32 bits, and return_indices
# gives (values, indices).
import triton
import triton.language as tl


@triton.jit
def reductions(f, h, q, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(f + r[:, None] * B + r[None, :])
    s0 = tl.sum(x, axis=0)
    s1 = tl.sum(x, 1, keep_dims=True)
    sa = tl.sum(x)
    sk = x.sum(keep_dims=True)
    m, i = tl.max(x, axis=1, return_indices=True)
    am = tl.argmin(x, 0)
    mn = tl.min(x, -1)
    hx = tl.load(h + r)
    hm = tl.max(hx, axis=0)
    qx = tl.load(q + r)
    qs = tl.sum(qx)
    qf = tl.sum(qx, dtype=tl.float32)
    xs = tl.xor_sum(qx)
    ro = tl.reduce_or(qx, 0)
    tl.store(f + r, s0 + tl.reshape(s1, B) + sa + m + i + am + mn + hm + qs + qf + xs + ro + tl.ravel(sk))

# CHECK-LABEL: func @reductions
# CHECK:      [[X:%[0-9]+]] = load {{.*}} : tensor<32x32xf32>
# CHECK-NEXT: reduce [[X]] {axis = 0, kind = "add"} : tensor<32xf32>
# CHECK-NEXT: [[S1:%[0-9]+]] = reduce [[X]] {axis = 1, kind = "add"} : tensor<32xf32>
# CHECK-NEXT: expand_dims [[S1]] {axis = 1} : tensor<32x1xf32>
# CHECK-NEXT: [[FLAT:%[0-9]+]] = reshape [[X]] {can_reorder = true} : tensor<1024xf32>
# CHECK-NEXT: reduce [[FLAT]] {axis = 0, kind = "add"} : f32
# CHECK-NEXT: [[FLAT2:%[0-9]+]] = reshape [[X]] {can_reorder = true} : tensor<1024xf32>
# CHECK-NEXT: [[SK:%[0-9]+]] = reduce [[FLAT2]] {axis = 0, kind = "add"} : f32
# CHECK-NEXT: [[SK1:%[0-9]+]] = splat [[SK]] : tensor<1xf32>
# CHECK-NEXT: expand_dims [[SK1]] {axis = 0} : tensor<1x1xf32>
# CHECK-NEXT: argreduce [[X]] {axis = 1, kind = "max"} : tensor<32xf32>, tensor<32xi32>
# CHECK-NEXT: argreduce [[X]] {axis = 0, kind = "min"} : tensor<32xf32>, tensor<32xi32>
# CHECK-NEXT: reduce [[X]] {axis = 1, kind = "min"} : tensor<32xf32>
# CHECK:      [[HX:%[0-9]+]] = load {{.*}} : tensor<32xf16>
# CHECK-NEXT: [[HF:%[0-9]+]] = cast [[HX]] : tensor<32xf32>
# CHECK-NEXT: reduce [[HF]] {axis = 0, kind = "max"} : f32
# CHECK:      [[QX:%[0-9]+]] = load {{.*}} : tensor<32xi8>
# CHECK-NEXT: [[Q32:%[0-9]+]] = cast [[QX]] : tensor<32xi32>
# CHECK-NEXT: reduce [[Q32]] {axis = 0, kind = "add"} : i32
# CHECK-NEXT: [[QF:%[0-9]+]] = cast [[QX]] : tensor<32xf32>
# CHECK-NEXT: reduce [[QF]] {axis = 0, kind = "add"} : f32
# CHECK-NEXT: reduce [[QX]] {axis = 0, kind = "xor"} : i8
# CHECK-NEXT: reduce [[QX]] {axis = 0, kind = "or"} : i8


# tl.reduce with a @jit combine function that is one +, maximum, minimum, &,
# | or ^ of its arguments is the matching reduce op.
@triton.jit
def add_fn(a, b):
    return a + b


@triton.jit
def max_fn(a, b):
    return tl.maximum(b, a, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def custom(p):
    x = tl.load(p + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    s = tl.reduce(x, 1, add_fn)
    m = x.reduce(0, max_fn, keep_dims=True)
    tl.store(p + tl.arange(0, 16), s + tl.reshape(m, 16))

# CUSTOM-LABEL: func @custom
# CUSTOM:     reduce {{%[0-9]+}} {axis = 1, kind = "add"} : tensor<16xf32>
# CUSTOM:     reduce {{%[0-9]+}} {axis = 0, kind = "max", nan = "all"} : tensor<16xf32>
# the combine functions are not part of the module
# CUSTOM-NOT: func
