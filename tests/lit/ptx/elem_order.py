# A chain of elementwise ops on one layout is emitted element-major: each
# pair of elements goes through the whole chain (mul, add, ex2) before the
# next pair starts, so only the chain's results stay live.  The constants
# are folded into the instructions.
# RUN: nereid ptx %s -k chain -s '*fp32:16, *fp32:16, 512' --arch sm_90 --num-warps 1 | filecheck %s
# RUN: nereid ptx %s -k hchain -s '*fp16:16, *fp16:16, 512' --arch sm_90 --num-warps 1 | filecheck %s --check-prefix=HALF
import triton
import triton.language as tl


@triton.jit
def chain(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    y = tl.exp2(x * 3.0 + 1.0)
    tl.store(y_ptr + r, y)


@triton.jit
def hchain(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, tl.maximum(x * 3.0 + 1.0, 0.0))

# CHECK: ld.global.v4.b32 {[[X0:%r[0-9]+]], [[X1:%r[0-9]+]], [[X2:%r[0-9]+]], [[X3:%r[0-9]+]]}
# CHECK: mul.f32 [[M0:%r[0-9]+]], [[X0]], 0f40400000;
# CHECK-NEXT: mul.f32 [[M1:%r[0-9]+]], [[X1]], 0f40400000;
# CHECK-NEXT: add.f32 [[A0:%r[0-9]+]], [[M0]], 0f3F800000;
# CHECK-NEXT: add.f32 [[A1:%r[0-9]+]], [[M1]], 0f3F800000;
# CHECK-NEXT: ex2.approx.ftz.f32 {{%r[0-9]+}}, [[A0]];
# CHECK-NEXT: ex2.approx.ftz.f32 {{%r[0-9]+}}, [[A1]];
# CHECK-NEXT: mul.f32 {{%r[0-9]+}}, [[X2]], 0f40400000;

# fp16 pairs stay packed: an f16x2 mul and add per pair, the maximum with
# the float 0.0 in f32 and rounded back (both of the pair in one
# cvt.rn.f16x2.f32), then the next pair.
# HALF: mul.f16x2
# HALF-NOT: mul.f16x2
# HALF: add.f16x2
# HALF-NOT: mul.f16x2
# HALF: cvt.rn.f16x2.f32
# HALF-NOT: cvt.rn.f16
# HALF: mul.f16x2
