# RUN: nereid ir %s -k scalars -s '*fp16, *i8, *u32, *i64, *bf16' --after lower | filecheck %s --check-prefix=SCALARS
# RUN: nereid ir %s -k tensors -s '*fp16, *i8, *u32, *i64, *bf16, *fp8e5, *fp8e4nv, *fp64' --after lower | filecheck %s --check-prefix=TENSORS
# RUN: nereid ir %s -k literals -s '*fp32' --after lower | filecheck %s --check-prefix=LITERALS
# Triton's promotion: a Python number takes the tensor's dtype unless it is of
# a higher kind (bool < int < float); tensors promote by Triton's rules;
# fp16/bf16 divide in fp32; comparisons first make numbers tensors.
import triton
import triton.language as tl


@triton.jit
def scalars(h, c, u, l, b):
    offs = tl.arange(0, 16)
    x = tl.load(h + offs)
    tl.store(h + offs, x * 2.0)
    tl.store(h + offs, x * 2)
    tl.store(h + offs, x / 2)
    tl.store(h + offs, x < 0.5)
    q = tl.load(c + offs)
    tl.store(c + offs, q + 100)
    tl.store(c + offs, q * 1.5)
    v = tl.load(u + offs)
    tl.store(u + offs, v + 7)
    w = tl.load(l + offs)
    tl.store(l + offs, w + 3)
    y = tl.load(b + offs)
    tl.store(b + offs, y + 1.0)
    tl.store(b + offs, y % 3.0)

# SCALARS-LABEL: func @scalars
# fp16 * 2.0 and fp16 * 2 stay fp16
# SCALARS:      [[X:%[0-9]+]] = load {{%[0-9]+}}, _, _ : tensor<16xf16>
# SCALARS:      [[TWO:%[0-9]+]] = const {value = 2.0} : tensor<16xf16>
# SCALARS-NEXT: mul [[X]], [[TWO]] : tensor<16xf16>
# SCALARS:      [[TWO2:%[0-9]+]] = const {value = 2.0} : tensor<16xf16>
# SCALARS-NEXT: mul [[X]], [[TWO2]] : tensor<16xf16>
# fp16 / 2 divides in fp32, then the store converts back
# SCALARS:      [[XF:%[0-9]+]] = cast [[X]] : tensor<16xf32>
# SCALARS-NEXT: [[TWO3:%[0-9]+]] = const {value = 2.0} : tensor<16xf32>
# SCALARS-NEXT: [[Q:%[0-9]+]] = div [[XF]], [[TWO3]] : tensor<16xf32>
# SCALARS-NEXT: cast [[Q]] : tensor<16xf16>
# comparing with 0.5 makes 0.5 an fp32 tensor first
# SCALARS:      [[XF2:%[0-9]+]] = cast [[X]] : tensor<16xf32>
# SCALARS-NEXT: [[HALF:%[0-9]+]] = const {value = 0.5} : tensor<16xf32>
# SCALARS-NEXT: cmp [[XF2]], [[HALF]] {pred = "lt"} : tensor<16xi1>
# int8 + 100 is int8; int8 * 1.5 is fp32
# SCALARS:      const {value = 100} : tensor<16xi8>
# SCALARS-NEXT: add {{%[0-9]+}}, {{%[0-9]+}} : tensor<16xi8>
# SCALARS:      cast {{%[0-9]+}} : tensor<16xf32>
# SCALARS-NEXT: const {value = 1.5} : tensor<16xf32>
# SCALARS:      const {value = 7} : tensor<16xu32>
# SCALARS:      const {value = 3} : tensor<16xi64>
# bf16 + 1.0 stays bf16; bf16 % 3.0 is computed in fp32
# SCALARS:      const {value = 1.0} : tensor<16xbf16>
# SCALARS:      cast {{%[0-9]+}} : tensor<16xf32>
# SCALARS-NEXT: const {value = 3.0} : tensor<16xf32>
# SCALARS-NEXT: rem {{%[0-9]+}}, {{%[0-9]+}} : tensor<16xf32>


@triton.jit
def tensors(h, c, u, l, b, e5, e4, d):
    offs = tl.arange(0, 16)
    x = tl.load(h + offs)
    q = tl.load(c + offs)
    v = tl.load(u + offs)
    w = tl.load(l + offs)
    y = tl.load(b + offs)
    f5 = tl.load(e5 + offs)
    f4 = tl.load(e4 + offs)
    z = tl.load(d + offs)
    tl.store(l + offs, q + w)
    tl.store(u + offs, q + v)
    tl.store(h + offs, x + q)
    tl.store(h + offs, x + y)
    tl.store(b + offs, y * y)
    tl.store(h + offs, f5 + f4)
    tl.store(e5 + offs, f5 * f5)
    tl.store(d + offs, z + x)
    tl.store(l + offs, q // w)
    tl.store(l + offs, q % w)
    tl.store(h + offs, q / w)

# TENSORS-LABEL: func @tensors
# int8 + int64 -> int64
# TENSORS:      [[Q64:%[0-9]+]] = cast [[Q:%[0-9]+]] : tensor<16xi64>
# TENSORS-NEXT: add [[Q64]], [[W:%[0-9]+]] : tensor<16xi64>
# int8 + uint32 -> uint32
# TENSORS:      cast [[Q]] : tensor<16xu32>
# TENSORS-NEXT: add {{%[0-9]+}}, [[V:%[0-9]+]] : tensor<16xu32>
# fp16 + int8 -> fp16
# TENSORS:      cast [[Q]] : tensor<16xf16>
# TENSORS-NEXT: add [[X:%[0-9]+]], {{%[0-9]+}} : tensor<16xf16>
# fp16 + bf16 -> fp16 (Triton checks fp16 before bf16)
# TENSORS:      cast [[Y:%[0-9]+]] : tensor<16xf16>
# TENSORS-NEXT: add [[X]], {{%[0-9]+}} : tensor<16xf16>
# TENSORS:      mul [[Y]], [[Y]] : tensor<16xbf16>
# two different fp8 kinds -> fp16; one fp8 kind stays
# TENSORS:      cast [[F5:%[0-9]+]] : tensor<16xf16>
# TENSORS-NEXT: cast [[F4:%[0-9]+]] : tensor<16xf16>
# TENSORS:      mul [[F5]], [[F5]] : tensor<16xf8e5>
# TENSORS:      add [[Z:%[0-9]+]], {{%[0-9]+}} : tensor<16xf64>
# // and % on ints are div and rem (truncating)
# TENSORS:      div {{%[0-9]+}}, [[W]] : tensor<16xi64>
# TENSORS:      rem {{%[0-9]+}}, [[W]] : tensor<16xi64>
# int / int divides in fp32
# TENSORS:      [[A:%[0-9]+]] = cast {{%[0-9]+}} : tensor<16xf32>
# TENSORS-NEXT: [[B:%[0-9]+]] = cast [[W]] : tensor<16xf32>
# TENSORS-NEXT: div [[A]], [[B]] : tensor<16xf32>


@triton.jit
def literals(out):
    pid = tl.program_id(0)
    k = 2147483648
    a = pid + k
    b = pid.to(tl.int64) + 4294967296
    c = 3 // -2
    d = -7 % 3
    e = 2 ** 10
    f = 1e-300
    g = pid // -2
    h = True + 1
    tl.store(out, a.to(tl.float32) + b + c + d + e + f + g + h)

# LITERALS-LABEL: func @literals
# an assigned 2147483648 is a uint32 tensor, so pid becomes uint32
# LITERALS:      [[PID:%[0-9]+]] = program_id {axis = 0} : i32
# LITERALS-NEXT: [[K:%[0-9]+]] = const {value = 2147483648} : u32
# LITERALS-NEXT: [[P:%[0-9]+]] = cast [[PID]] : u32
# LITERALS-NEXT: add [[P]], [[K]] : u32
# LITERALS:      const {value = 4294967296} : i64
# constexpr arithmetic follows Python: 3 // -2 == -2, -7 % 3 == 2
# LITERALS:      const {value = -2} : i32
# LITERALS:      const {value = 2} : i32
# LITERALS:      const {value = 1024} : i32
# 1e-300 does not fit fp32: it is fp64
# LITERALS:      const {value = 1e-300} : f64
# IR integer division truncates
# LITERALS:      [[M2:%[0-9]+]] = const {value = -2} : i32
# LITERALS-NEXT: div [[PID]], [[M2]] : i32
# LITERALS:      const {value = 2} : i32
