import triton
import triton.language as tl


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def row_stats(X, MAX, SUM, ARGMAX, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    x = tl.load(X + rows * stride + cols, mask=mask, other=float("-inf"))
    mx = tl.reduce(x, 1, _max_combine)
    sm = tl.sum(tl.where(mask, x, 0.0), axis=1)
    am = tl.argmax(x, axis=1)
    cs = tl.cumsum(x, axis=1)
    xt = tl.trans(x)
    flat = tl.reshape(x, (BM * BN,))
    b = tl.broadcast_to(tl.expand_dims(sm, 1), (BM, BN))
    tl.store(MAX + rows[:, 0], mx, mask=rows[:, 0] < M)
    tl.store(SUM + rows[:, 0], sm, mask=rows[:, 0] < M)
    tl.store(ARGMAX + rows[:, 0], am, mask=rows[:, 0] < M)
