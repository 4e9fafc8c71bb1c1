"""Cross-entropy loss over a large vocabulary, one program per row.

loss = logsumexp(x) - x[label], with logsumexp computed in one pass over
chunks of the vocabulary: a running maximum m and a running sum s of
exp(x - m), rescaled by exp(m_old - m_new) whenever the maximum grows.
Rows whose label is ignore_index get loss 0.  With a gradient pointer the
kernel makes a second pass and writes
  dx = (softmax(x) - onehot(label)) * grad_scale
(zero for ignored rows); grad_scale is, for a mean loss, 1 / (number of
rows that are not ignored).  Logits may be fp32, fp16 or bf16; math in fp32."""
import nereid as triton
import nereid.language as tl


@triton.jit
def cross_entropy_fwd(Logits, Labels, Loss, LSE, DLogits, stride_row, stride_drow, n_vocab, ignore_index,
                      grad_scale, WITH_GRAD: tl.constexpr, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = Logits + row * stride_row
    label = tl.load(Labels + row)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(x_row + cols, mask=cols < n_vocab, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    valid = label != ignore_index
    x_label = tl.load(x_row + tl.where(valid, label, 0)).to(tl.float32)
    tl.store(Loss + row, tl.where(valid, lse - x_label, 0.0))
    tl.store(LSE + row, lse)
    if WITH_GRAD:
        scale = tl.where(valid, grad_scale, 0.0)
        d_row = DLogits + row * stride_drow
        for start in range(0, n_vocab, BLOCK_V):
            cols = start + tl.arange(0, BLOCK_V)
            mask = cols < n_vocab
            x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
            p = tl.exp(x - lse)
            p = tl.where(cols == label, p - 1.0, p)
            tl.store(d_row + cols, (p * scale).to(d_row.dtype.element_ty), mask=mask)


def cross_entropy(logits, labels, loss, lse, dlogits=None, ignore_index=-100, block=1024):
    """Per-row loss (and log-sum-exp); with dlogits, the gradient of the mean loss."""
    M, V = logits.shape
    n_valid = int((labels != ignore_index).sum())
    scale = 1.0 / max(n_valid, 1)
    with_grad = dlogits is not None
    d = dlogits if with_grad else logits
    cross_entropy_fwd[(M,)](logits, labels, loss, lse, d, logits.strides[0] // logits.itemsize,
                            d.strides[0] // d.itemsize, V, ignore_index, scale, WITH_GRAD=with_grad,
                            BLOCK_V=block)
