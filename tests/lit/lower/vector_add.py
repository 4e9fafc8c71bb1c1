# RUN: nereid ir %s -k add_kernel -s '*fp32:16, *fp32:16, *fp32:16, i32, 1024' --after lower | filecheck %s
# The lowered form of the canonical kernel: parameters keep their names and
# facts, the constexpr BLOCK is folded in, scalars are splatted to blocks.
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)

# CHECK-LABEL: func @add_kernel(%x_ptr: ptr<f32> {divisibility = 16}, %y_ptr: ptr<f32> {divisibility = 16}, %out_ptr: ptr<f32> {divisibility = 16}, %n: i32) kernel {
# CHECK-NEXT: [[PID:%[0-9]+]] = program_id {axis = 0} : i32
# CHECK-NEXT: [[B:%[0-9]+]] = const {value = 1024} : i32
# CHECK-NEXT: [[START:%[0-9]+]] = mul [[PID]], [[B]] : i32
# CHECK-NEXT: [[AR:%[0-9]+]] = arange {end = 1024, start = 0} : tensor<1024xi32>
# CHECK-NEXT: [[SPL:%[0-9]+]] = splat [[START]] : tensor<1024xi32>
# CHECK-NEXT: [[OFFS:%[0-9]+]] = add [[SPL]], [[AR]] : tensor<1024xi32>
# CHECK-NEXT: [[N:%[0-9]+]] = splat %n : tensor<1024xi32>
# CHECK-NEXT: [[MASK:%[0-9]+]] = cmp [[OFFS]], [[N]] {pred = "lt"} : tensor<1024xi1>
# CHECK-NEXT: [[XP:%[0-9]+]] = splat %x_ptr : tensor<1024xptr<f32>>
# CHECK-NEXT: [[XA:%[0-9]+]] = addptr [[XP]], [[OFFS]] : tensor<1024xptr<f32>>
# CHECK-NEXT: [[X:%[0-9]+]] = load [[XA]], [[MASK]], _ : tensor<1024xf32>
# CHECK:      [[Y:%[0-9]+]] = load {{%[0-9]+}}, [[MASK]], _ : tensor<1024xf32>
# CHECK:      [[OA:%[0-9]+]] = addptr {{%[0-9]+}}, [[OFFS]] : tensor<1024xptr<f32>>
# CHECK-NEXT: [[SUM:%[0-9]+]] = add [[X]], [[Y]] : tensor<1024xf32>
# CHECK-NEXT: store [[OA]], [[SUM]], [[MASK]]
# CHECK-NEXT: return
# CHECK-NEXT: }
