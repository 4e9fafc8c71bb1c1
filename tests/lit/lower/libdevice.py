# RUN: nereid ir %s -k k -s '*fp32, *i32, *i64' --after lower | filecheck %s
# libdevice: math and imath ops; directed conversions are the nearest
# conversion moved one ulp after an exact comparison; bits are bitcasts.
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def k(f, i, l):
    x = tl.load(f)
    n = tl.load(i)
    tl.store(f, libdevice.erfinv(x) + libdevice.add_rz(x, x) + libdevice.int_as_float(n))
    tl.store(i, libdevice.popc(n) + libdevice.float2int_rd(x) + libdevice.byte_perm(n, n, 0x3210))
    tl.store(l, libdevice.llrint(x))
    tl.store(f, libdevice.int2float_ru(n))

# CHECK-LABEL: func @k
# CHECK:      math [[X:%[0-9]+]] {fn = "erfinv"} : f32
# CHECK:      math [[X]], [[X]] {fn = "add_rz"} : f32
# CHECK:      bitcast [[N:%[0-9]+]] : f32
# CHECK:      imath [[N]] {fn = "popc"} : i32
# CHECK:      floor [[X]] : f32
# CHECK:      imath [[N]], [[N]], {{%[0-9]+}} {fn = "byte_perm"} : i32
# CHECK:      math [[X]] {fn = "rint"} : f32
# CHECK-NEXT: cast {{%[0-9]+}} : i64
# int2float_ru: the nearest conversion, compared exactly in f64, then one ulp up where it was below
# CHECK:      [[R:%[0-9]+]] = cast [[N]] : f32
# CHECK-NEXT: [[NF:%[0-9]+]] = cast [[N]] : f64
# CHECK-NEXT: [[RF:%[0-9]+]] = cast [[R]] : f64
# CHECK:      [[LT:%[0-9]+]] = cmp [[RF]], [[NF]] {pred = "lt"} : i1
# CHECK:      select [[LT]], {{%[0-9]+}}, [[R]] : f32
