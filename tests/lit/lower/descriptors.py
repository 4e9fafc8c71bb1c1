# RUN: nereid ir %s -k k -s '*fp16:16, i32, i32, 32, 16' --after lower | filecheck %s
# RUN: nereid ir %s -k host -s 'tensordesc<fp32[8, 32], nan>, *fp32' --after lower | filecheck %s --check-prefix=HOST
# A tensor descriptor's load is a masked load of base + (off_d + arange) * stride_d,
# each dimension's indices kept in [0, size_d); the last stride 1 costs nothing.
import triton
import triton.language as tl


@triton.jit
def k(p, M, N, BM: tl.constexpr, BN: tl.constexpr):
    d = tl.make_tensor_descriptor(p, [M, N], [N, 1], [BM, BN])
    x = d.load([tl.program_id(0) * BM, 8])
    d.store([0, 0], x + 1)

# CHECK-LABEL: func @k
# CHECK:      [[R:%[0-9]+]] = arange {end = 32, start = 0} : tensor<32xi32>
# CHECK:      reshape [[R]] : tensor<32x1xi32>
# CHECK:      mul {{%[0-9]+}}, {{%[0-9]+}} : tensor<32x1xi64>
# CHECK:      cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "ge"} : tensor<32x1xi1>
# CHECK:      cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "lt"} : tensor<32x1xi1>
# CHECK:      [[C:%[0-9]+]] = arange {end = 16, start = 0} : tensor<16xi32>
# CHECK:      reshape [[C]] : tensor<1x16xi32>
# CHECK-NOT:  mul {{.*}} : tensor<1x16xi64>
# CHECK:      [[Z:%[0-9]+]] = const {value = 0.0} : tensor<32x16xf16>
# CHECK-NEXT: load {{%[0-9]+}}, {{%[0-9]+}}, [[Z]] : tensor<32x16xf16>
# CHECK:      store


@triton.jit
def host(d, out):
    x = d.load([-3, 5])
    tl.store(out + tl.arange(0, 8)[:, None] * 32 + tl.arange(0, 32)[None, :], x)

# the host descriptor's arguments: base (16-byte aligned), sizes, strides (the last one 1)
# HOST-LABEL: func @host(%arg0: ptr<f32> {divisibility = 16, tensordesc = 2}, %arg1: i32, %arg2: i32, %arg3: i64, %arg4: i64 {equal_to_1}, %out: ptr<f32>)
# leading strides are multiples of 16 bytes
# HOST:       hint %arg3 {kind = "multiple_of", values = [4]} : i64
# padding "nan": out-of-bounds elements read NaN
# HOST:       const {value = nan} : tensor<8x32xf32>
# the block names its descriptor (the base argument) and coordinates, for TMA on sm_90a
# HOST:       load {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, %arg0, {{%[0-9]+}}, {{%[0-9]+}} : tensor<8x32xf32>
