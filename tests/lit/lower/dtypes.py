# RUN: nereid ir %s -k attrs -s '*fp16, *i8, 16' --after lower 2>&1 | filecheck %s
# dtype objects and their attributes and methods; tensor attributes.
import triton
import triton.language as tl


@triton.jit
def attrs(p, q, B: tl.constexpr):
    x = tl.load(p + tl.arange(0, B))
    et = p.dtype.element_ty
    tl.static_print(et, x.dtype, et.primitive_bitwidth, et.is_fp16(), et.is_floating(), q.dtype.element_ty.is_int_signed(),
                    p.dtype.is_ptr(), x.shape, x.type.shape, x.type.scalar, tl.float8e4nv, x.dtype == tl.float16,
                    et.itemsize, et.fp_mantissa_width, tl.int1.is_int_unsigned(), et.name)
    if x.dtype.is_fp16():
        y = x.to(tl.float32)
    else:
        y = x
    tl.store(p + tl.arange(0, B), y.to(p.dtype.element_ty))

# CHECK: note: fp16 fp16 16 True True True True (16,) (16,) fp16 fp8e4nv True 2 10 True fp16
# CHECK-LABEL: func @attrs
# CHECK-NOT:  if
# CHECK:      cast {{%[0-9]+}} : tensor<16xf32>
