# Elements of an elementwise result that axis analysis proves equal (constant
# on aligned runs) are computed once: `r < n` with n a multiple of 16 is one
# compare per 4-element vector of a thread; with n unknown, one per element.
# RUN: nereid ptx %s -k masked -s '*fp32:16, *fp32:16, i32:16, 1024' --arch sm_90 | filecheck %s
# RUN: nereid ptx %s -k masked -s '*fp32:16, *fp32:16, i32, 1024' --arch sm_90 | filecheck %s --check-prefix=ANY
import triton
import triton.language as tl


@triton.jit
def masked(x_ptr, y_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, tl.where(r < n, x, 0.0))

# CHECK-COUNT-2: setp.lt.s32
# CHECK-NOT: setp.lt.s32
# CHECK: ret;

# ANY-COUNT-8: setp.lt.s32
# ANY-NOT: setp.lt.s32
# ANY: ret;
