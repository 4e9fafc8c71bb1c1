# RUN: nereid ir %s -k dots -s '*fp32, *fp16, *i8, *fp8e5, *fp8e4nv' --after lower | filecheck %s
# tl.dot: fp32 inputs take input_precision "tf32" unless allow_tf32=False
# ("ieee") or input_precision says otherwise; acc=None is a zero block of the
# result type; int8 accumulates in int32; out_dtype picks fp16 or fp32 for
# fp16 and fp8 inputs; batched 3-d dots.
import triton
import triton.language as tl


@triton.jit
def dots(f, h, q, e5, e4):
    r = tl.arange(0, 16)
    p = r[:, None] * 16 + r[None, :]
    a = tl.load(f + p)
    c = tl.dot(a, a)
    c = tl.dot(a, a, c, allow_tf32=False)
    c = tl.dot(a, a, acc=c, input_precision="tf32x3")
    ha = tl.load(h + p)
    hc = tl.dot(ha, ha, out_dtype=tl.float16)
    qa = tl.load(q + p)
    qc = tl.dot(qa, qa)
    fc = tl.dot(tl.load(e5 + p), tl.load(e4 + p), max_num_imprecise_acc=8)
    b3 = tl.reshape(a, (1, 16, 16))
    c3 = tl.dot(b3, b3)
    tl.store(f + p, c + hc + qc + fc + tl.reshape(c3, (16, 16)))

# CHECK-LABEL: func @dots
# CHECK:      [[A:%[0-9]+]] = load {{.*}} : tensor<16x16xf32>
# CHECK-NEXT: [[Z:%[0-9]+]] = const {value = 0.0} : tensor<16x16xf32>
# CHECK-NEXT: [[C1:%[0-9]+]] = dot [[A]], [[A]], [[Z]] {input_precision = "tf32"} : tensor<16x16xf32>
# CHECK-NEXT: [[C2:%[0-9]+]] = dot [[A]], [[A]], [[C1]] {input_precision = "ieee"} : tensor<16x16xf32>
# CHECK-NEXT: dot [[A]], [[A]], [[C2]] {input_precision = "tf32x3"} : tensor<16x16xf32>
# CHECK:      [[HA:%[0-9]+]] = load {{.*}} : tensor<16x16xf16>
# CHECK-NEXT: [[HZ:%[0-9]+]] = const {value = 0.0} : tensor<16x16xf16>
# CHECK-NEXT: dot [[HA]], [[HA]], [[HZ]] : tensor<16x16xf16>
# CHECK:      [[QA:%[0-9]+]] = load {{.*}} : tensor<16x16xi8>
# CHECK-NEXT: [[QZ:%[0-9]+]] = const {value = 0} : tensor<16x16xi32>
# CHECK-NEXT: dot [[QA]], [[QA]], [[QZ]] : tensor<16x16xi32>
# CHECK:      dot {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}} {max_num_imprecise_acc = 8} : tensor<16x16xf32>
# CHECK:      [[B3:%[0-9]+]] = reshape [[A]] : tensor<1x16x16xf32>
# CHECK-NEXT: [[Z3:%[0-9]+]] = const {value = 0.0} : tensor<1x16x16xf32>
# CHECK-NEXT: dot [[B3]], [[B3]], [[Z3]] {input_precision = "tf32"} : tensor<1x16x16xf32>
