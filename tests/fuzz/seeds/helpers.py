import triton
import triton.language as tl


@triton.jit(noinline=True)
def clamp(x, lo, hi):
    return tl.minimum(tl.maximum(x, lo), hi)


@triton.jit
def divmod_(a, b):
    """Quotient and remainder, C style."""
    q = a // b
    r = a - q * b
    return q, r


@triton.jit
def combine(a, b):
    return a + b


@triton.jit
def helpers_kernel(X, Y, n, lo: float, hi: float = 1.0, STEPS: tl.constexpr = 4):
    pid = tl.program_id(0)
    offs = pid * 128 + tl.arange(0, 128)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    q, r = divmod_(offs, 7)
    (q2, r2) = divmod_(q, 3)
    y = clamp(x, lo, hi) if STEPS > 2 else x
    i = 0
    while i < STEPS:
        y = y * 0.5 + 1.0
        i += 1
    for j in tl.static_range(STEPS):
        y += j
    s = tl.reduce(y, 0, combine)
    c = tl.associative_scan(y, 0, combine)
    z = (y ** 2 - -x) ** -1 // 3 % 5 @ y if q2 >= r2 and not m is None or r != 0 else ~offs << 2 >> 1 | 3 ^ 4 & 5
    tl.device_assert(i == STEPS, "loop count")
    tl.static_assert(STEPS > 0)
    assert n > 0, "n must be positive"
    tl.store(Y + offs, y + s + c, mask=m); tl.debug_barrier()
    if pid == 0: tl.device_print("z", z)
    return
