# RUN: nereid ir %s -k partials -s '*fp32, *fp32, i32, 64, 4' --verify-each | filecheck %s
# RUN: nereid ir %s -k partials -s '*fp32, *fp32, i32, 64, 0' --verify-each | filecheck %s --check-prefix=ZERO
# RUN: nereid ir %s -k partials -s '*fp32, *fp32, i32, 64, 17' | filecheck %s --check-prefix=LONG
# RUN: nereid ir %s -k staged -s '*fp32, *fp32, i32, 64' | filecheck %s --check-prefix=STAGED
# RUN: nereid ir %s -k dots -s '*fp16, *fp32, 16' | filecheck %s --check-prefix=DOTS
# RUN: nereid ir %s -k partials -s '*fp32, *fp32, i32, 64, 4' --after canonicalize | filecheck %s --check-prefix=BEFORE
# Short loops of constant bounds become copies of their body (pass unroll):
# the loads of every copy can then be in flight at once.
import triton
import triton.language as tl


@triton.jit
def partials(ws_ptr, out_ptr, n, BLOCK: tl.constexpr, SPLITS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLITS):
        acc += tl.load(ws_ptr + s * n + offs)
    tl.store(out_ptr + offs, acc)


@triton.jit
def staged(ws_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in tl.range(0, 4, num_stages=2):
        acc += tl.load(ws_ptr + s * n + offs)
    tl.store(out_ptr + offs, acc)


@triton.jit
def dots(a_ptr, c_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for k in range(0, 4):
        a = tl.load(a_ptr + k * B * B + r[:, None] * B + r[None, :])
        acc = tl.dot(a, a, acc)
    tl.store(c_ptr + r[:, None] * B + r[None, :], acc)

# BEFORE: for
# CHECK-LABEL: func @partials(
# CHECK-NOT: for
# CHECK-COUNT-4: load
# CHECK-NOT: load
# CHECK-NOT: for
# CHECK: store
# ZERO-LABEL: func @partials(
# ZERO-NOT: for
# ZERO-NOT: load
# ZERO: store
# LONG-LABEL: func @partials(
# LONG: for
# LONG: load
# LONG: yield
# STAGED-LABEL: func @staged(
# STAGED: for {{.*}}num_stages = 2
# DOTS-LABEL: func @dots(
# DOTS: for
# DOTS: dot
