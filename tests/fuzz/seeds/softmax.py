import triton
import triton.language as tl


@triton.jit
def softmax_rows(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                 BLOCK: tl.constexpr, num_stages: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    for r in tl.range(first, n_rows, step, num_stages=num_stages):
        row_ptr = in_ptr + r * in_stride
        cols = tl.arange(0, BLOCK)
        ok = cols < n_cols
        row = tl.load(row_ptr + cols, mask=ok, other=-float('inf'))
        shifted = row - tl.max(row, axis=0)
        e = tl.exp(shifted)
        denom = tl.sum(e, axis=0)
        tl.store(out_ptr + r * out_stride + cols, e / denom, mask=ok)


@triton.jit
def online_softmax(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = -float("inf")
    s = 0.0
    for start in range(0, N, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(X + row * N + c, mask=c < N, other=float('-inf')).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    for start in range(0, N, BLOCK):
        c = start + tl.arange(0, BLOCK)
        x = tl.load(X + row * N + c, mask=c < N, other=float('-inf')).to(tl.float32)
        tl.store(Y + row * N + c, tl.exp(x - m) / s, mask=c < N)
