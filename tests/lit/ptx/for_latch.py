# The latch of a for loop checks that iv + step stays in iv's type.  A
# constant positive step wraps exactly when the sum comes out below iv: one
# add and one compare in iv's type.  A step known only at run time takes the
# sum in 64 bits and compares it with the type's bounds.
# RUN: nereid ptx %s -k count -s '*i32:16, i32, 4' --arch sm_90 --num-warps 1 | filecheck %s
# RUN: nereid ptx %s -k count_by -s '*i32:16, i32, i32' --arch sm_90 --num-warps 1 | filecheck %s --check-prefix=RT
import triton
import triton.language as tl


@triton.jit
def count(out_ptr, n, STEP: tl.constexpr):
    c = 0
    for i in range(0, n, STEP):
        c += i
    tl.store(out_ptr, c)


@triton.jit
def count_by(out_ptr, n, step):
    c = 0
    for i in range(0, n, step):
        c += i
    tl.store(out_ptr, c)

# CHECK: setp.ge.s32 {{%p[0-9]+}}, [[IV:%r[0-9]+]], {{%r[0-9]+}};
# CHECK-NOT: cvt.s64.s32
# CHECK: add.s32 [[NEXT:%r[0-9]+]], [[IV]], 4;
# CHECK-NEXT: setp.lt.s32 [[WRAP:%p[0-9]+]], [[NEXT]], [[IV]];
# CHECK-NEXT: @[[WRAP]] bra.uni
# CHECK-NEXT: mov.b32 [[IV]], [[NEXT]];
# CHECK-NEXT: bra.uni

# RT: setp.ge.s32
# RT: cvt.s64.s32
# RT: setp.lt.s64 {{%p[0-9]+}}, {{%rd[0-9]+}}, -2147483648;
# RT: setp.ge.s64 {{%p[0-9]+}}, {{%rd[0-9]+}}, 2147483648;
