# fp32 tl.exp2 is one ex2.approx.ftz.f32 (results below 2^-126 flush to 0,
# as in Triton); tl.exp scales by log2(e) and keeps subnormal results.
# RUN: nereid ptx %s -k exps -s '*fp32:16, *fp32:16, *fp32:16, 128' --arch sm_90 --num-warps 4 | filecheck %s
import triton
import triton.language as tl


@triton.jit
def exps(x_ptr, a_ptr, b_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(a_ptr + r, tl.exp2(x))
    tl.store(b_ptr + r, tl.exp(x))

# CHECK: ex2.approx.ftz.f32 [[A:%r[0-9]+]], [[X:%r[0-9]+]];
# CHECK: st.global
# CHECK: mul.rn.f32 [[S:%r[0-9]+]], [[X]], 0f3FB8AA3B;
# CHECK-NEXT: ex2.approx.f32 {{%r[0-9]+}}, [[S]];
