# RUN: nereid ir %s -k debug -s '*fp32, *i32, 64' --after lower 2>&1 | filecheck %s
# Hints, assumptions, printing and assertions; static_print is a note at
# compile time and static_assert checks at compile time.
import triton
import triton.language as tl


@triton.jit
def debug(f, i, B: tl.constexpr):
    tl.static_assert(B % 16 == 0, "B must be a multiple of 16")
    tl.static_print("B =", B, "dtype", f.dtype.element_ty)
    x = tl.load(f)
    tl.device_print("x is", x, hex=True)
    print("pid", tl.program_id(0))
    tl.device_assert(x > 0, "x must be positive")
    assert x < 100, "x too big"
    assert B > 0
    tl.debug_barrier()
    n = tl.multiple_of(tl.load(i), 16)
    tl.assume(n > 0)
    offs = tl.max_contiguous(tl.multiple_of(tl.arange(0, B), B), B)
    o2 = tl.max_constancy(offs[:, None] + offs[None, :], (1, B))
    tl.store(f + offs + n, 1.0)
    tl.store(f + o2, 2.0)

# CHECK: note: B = 64 dtype fp32
# CHECK-LABEL: func @debug
# CHECK:      [[X:%[0-9]+]] = load %f, _, _ : f32
# CHECK-NEXT: print [[X]] {hex = true, prefix = " x is: "}
# CHECK-NEXT: [[PID:%[0-9]+]] = program_id {axis = 0} : i32
# CHECK-NEXT: print [[PID]] {prefix = " pid: "}
# CHECK:      [[C:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "gt"} : i1
# CHECK-NEXT: assert [[C]] {msg = "x must be positive"}
# CHECK:      [[C2:%[0-9]+]] = cmp [[X]], {{%[0-9]+}} {pred = "lt"} : i1
# CHECK-NEXT: assert [[C2]] {msg = "x too big"}
# CHECK-NEXT: barrier
# CHECK-NEXT: [[N:%[0-9]+]] = load %i, _, _ : i32
# CHECK-NEXT: [[NH:%[0-9]+]] = hint [[N]] {kind = "multiple_of", values = [16]} : i32
# CHECK:      [[A:%[0-9]+]] = cmp [[NH]], {{%[0-9]+}} {pred = "gt"} : i1
# CHECK-NEXT: assume [[A]]
# CHECK-NEXT: [[AR:%[0-9]+]] = arange {end = 64, start = 0} : tensor<64xi32>
# CHECK-NEXT: [[M:%[0-9]+]] = hint [[AR]] {kind = "multiple_of", values = [64]} : tensor<64xi32>
# CHECK-NEXT: hint [[M]] {kind = "max_contiguous", values = [64]} : tensor<64xi32>
# CHECK:      hint {{%[0-9]+}} {kind = "max_constancy", values = [1, 64]} : tensor<64x64xi32>
