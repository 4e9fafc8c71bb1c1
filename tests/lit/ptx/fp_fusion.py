# Float arithmetic of the kernel is written without a rounding modifier, so
# that ptxas may fuse a multiply into the add that uses it (Triton's
# enable_fp_fusion, on by default); --no-fp-fusion rounds each step.
# Library code (here erf) rounds each step either way.
# RUN: nereid ptx %s -k axpy -s '*fp32:16, *fp32:16, *fp64:16, 256' --arch sm_90 | filecheck %s
# RUN: nereid ptx %s -k axpy -s '*fp32:16, *fp32:16, *fp64:16, 256' --arch sm_90 --no-fp-fusion | filecheck %s --check-prefix=RN
# RUN: nereid ptx %s -k erfs -s '*fp32:16, *fp32:16, 256' --arch sm_90 | filecheck %s --check-prefix=LIB
import triton
import triton.language as tl


@triton.jit
def axpy(x_ptr, y_ptr, z_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, x * 3.0 - 1.0)
    z = tl.load(z_ptr + r)
    tl.store(z_ptr + r, z * z + 0.5)
    tl.store(y_ptr + r, tl.fma(x, x, 2.0))


@triton.jit
def erfs(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(y_ptr + r, tl.erf(tl.load(x_ptr + r)))

# CHECK: mul.f32 [[M:%r[0-9]+]], {{%r[0-9]+}}, 0f40400000;
# CHECK: sub.f32 {{%r[0-9]+}}, [[M]], 0f3F800000;
# CHECK: mul.f64 [[D:%rd[0-9]+]]
# CHECK: add.f64 {{%rd[0-9]+}}, [[D]], 0d3FE0000000000000;
# CHECK: fma.rn.f32
# RN: mul.rn.f32
# RN: sub.rn.f32
# RN: mul.rn.f64
# RN: add.rn.f64
# LIB-NOT: {{(add|sub|mul)}}.f32
# LIB: fma.rn.f32
