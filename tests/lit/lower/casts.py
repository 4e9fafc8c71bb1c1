# RUN: nereid ir %s -k casts -s '*fp32, *i32, *u8' --after lower | filecheck %s
# x.to(...) and tl.cast: one cast op per conversion (rounding "rtz" on
# request), bitcasts between equal widths, and the pointer conversions.
import triton
import triton.language as tl


@triton.jit
def casts(f, i, u):
    x = tl.load(f)
    a = x.to(tl.float16, fp_downcast_rounding="rtz")
    b = x.to(tl.int32, bitcast=True)
    c = tl.cast(x, tl.bfloat16)
    d = x.to(tl.int1)
    e = x.to(tl.float32)
    g = tl.load(u).to(tl.int32)
    n = f.to(tl.int64)
    p = n.to(tl.pointer_type(tl.float32))
    q = i.to(tl.pointer_type(tl.float32))
    k = x.to(tl.float8e5)
    tl.store(p, a.to(tl.float32) + b + c + d + e + g + k)
    tl.store(q, 1.0)

# CHECK-LABEL: func @casts
# CHECK:      [[X:%[0-9]+]] = load %f, _, _ : f32
# CHECK-NEXT: cast [[X]] {rounding = "rtz"} : f16
# CHECK-NEXT: bitcast [[X]] : i32
# CHECK-NEXT: cast [[X]] : bf16
# CHECK-NEXT: cast [[X]] : i1
# CHECK-NEXT: [[U:%[0-9]+]] = load %u, _, _ : u8
# CHECK-NEXT: cast [[U]] : i32
# CHECK-NEXT: [[N:%[0-9]+]] = ptrtoint %f : i64
# CHECK-NEXT: inttoptr [[N]] : ptr<f32>
# CHECK-NEXT: bitcast %i : ptr<f32>
# CHECK-NEXT: cast [[X]] : f8e5
