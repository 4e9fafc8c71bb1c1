# RUN: nereid ir %s -k mapped -s '*fp32, 64' --after lower | filecheck %s
# RUN: nereid ir %s -k asm -s '*fp16, *fp32, 64' --after lower | filecheck %s --check-prefix=ASM
# tl.map_elementwise inlines the function on blocks: an if on a per-element
# condition becomes selects; tl.inline_asm_elementwise is one inline_asm op.
import triton
import triton.language as tl


@triton.jit
def f(x, lim):
    if x > lim:
        y = lim
    else:
        y = x * 2
    return y if y > 0 else -y


@triton.jit
def mapped(p, B: tl.constexpr):
    x = tl.load(p + tl.arange(0, B))
    tl.store(p + tl.arange(0, B), tl.map_elementwise(f, x, 3.0))

# CHECK-LABEL: func @mapped
# CHECK:      call {{%[0-9]+}}, {{%[0-9]+}} {callee = "f__64xf32_64xf32__elementwise"} : tensor<64xf32>
# CHECK-LABEL: func @f__64xf32_64xf32__elementwise(%x: tensor<64xf32>, %lim: tensor<64xf32>)
# CHECK-NOT:  if
# CHECK:      [[C:%[0-9]+]] = cmp %x, %lim {pred = "gt"} : tensor<64xi1>
# CHECK:      [[D:%[0-9]+]] = mul %x, {{%[0-9]+}} : tensor<64xf32>
# CHECK-NEXT: [[Y:%[0-9]+]] = select [[C]], %lim, [[D]] : tensor<64xf32>
# CHECK:      [[P:%[0-9]+]] = cmp [[Y]], {{%[0-9]+}} {pred = "gt"} : tensor<64xi1>
# CHECK:      select [[P]], [[Y]], {{%[0-9]+}} : tensor<64xf32>


@triton.jit
def asm(h, o, B: tl.constexpr):
    x = tl.load(h + tl.arange(0, B))
    lo, hi = tl.inline_asm_elementwise("cvt.f32.f16 $0, $2; cvt.f32.f16 $1, $3;", "=r,=r,h,h", [x, x],
                                       dtype=(tl.float32, tl.float32), is_pure=True, pack=1)
    tl.store(o + tl.arange(0, B), lo + hi)

# ASM-LABEL: func @asm
# ASM:       {{%[0-9]+}}, {{%[0-9]+}} = inline_asm [[X:%[0-9]+]], [[X]] {asm = "cvt.f32.f16 $0, $2; cvt.f32.f16 $1, $3;", constraints = "=r,=r,h,h", pack = 1, pure = true} : tensor<64xf32>, tensor<64xf32>
