"""Cross-entropy loss over a large vocabulary, one program per row.

loss = logsumexp(x) - x[label], with logsumexp computed in one pass over
chunks of the vocabulary: a running maximum m and a running sum s of
exp(x - m), rescaled by exp(m_old - m_new) whenever the maximum grows.
Rows whose label is ignore_index get loss 0.  With a gradient pointer the
kernel makes a second pass and writes
  dx = (softmax(x) - onehot(label)) * grad_scale
(zero for ignored rows); grad_scale is, for a mean loss, 1 / (number of
rows that are not ignored).  Optional, as recent models use them: label
smoothing eps (the target is (1 - eps) onehot + eps / V) and a logit soft cap
(x -> cap * tanh(x / cap), through libdevice).  Logits may be fp32, fp16 or
bf16; math in fp32."""
import nereid as triton
import nereid.language as tl
from nereid.language.extra import libdevice


@triton.jit
def _logits(x_row, cols, mask, softcap, SOFTCAP: tl.constexpr):
    # the chunk of logits in fp32, capped (cap * tanh(x / cap)) when SOFTCAP; -inf where masked
    x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    if SOFTCAP:
        x = softcap * libdevice.tanh(x / softcap)
    return tl.where(mask, x, -float("inf"))


@triton.jit
def cross_entropy_fwd(Logits, Labels, Loss, LSE, DLogits, stride_row, stride_drow, n_vocab, ignore_index,
                      grad_scale, label_smoothing, softcap, WITH_GRAD: tl.constexpr, SOFTCAP: tl.constexpr,
                      BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = Logits + row * stride_row
    label = tl.load(Labels + row)
    m = -float("inf")
    s = 0.0
    sum_x = 0.0
    for start in range(0, n_vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < n_vocab
        x = _logits(x_row, cols, mask, softcap, SOFTCAP)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        sum_x += tl.sum(tl.where(mask, x, 0.0), axis=0)
    lse = m + tl.log(s)
    valid = label != ignore_index
    safe = tl.where(valid, label, 0)
    x_label = tl.load(x_row + safe).to(tl.float32)
    if SOFTCAP:
        x_label = softcap * libdevice.tanh(x_label / softcap)
    # the target is (1 - eps) * onehot(label) + eps / V
    loss = lse - (1.0 - label_smoothing) * x_label - label_smoothing * sum_x / n_vocab
    tl.store(Loss + row, tl.where(valid, loss, 0.0))
    tl.store(LSE + row, lse)
    if WITH_GRAD:
        scale = tl.where(valid, grad_scale, 0.0)
        d_row = DLogits + row * stride_drow
        for start in range(0, n_vocab, BLOCK_V):
            cols = start + tl.arange(0, BLOCK_V)
            mask = cols < n_vocab
            x = _logits(x_row, cols, mask, softcap, SOFTCAP)
            g = tl.exp(x - lse) - label_smoothing / n_vocab
            g = tl.where(cols == label, g - (1.0 - label_smoothing), g)
            if SOFTCAP:
                t = x / softcap
                g = g * (1.0 - t * t)  # d(cap * tanh(z / cap)) / dz
            tl.store(d_row + cols, (g * scale).to(d_row.dtype.element_ty), mask=mask)


def cross_entropy(logits, labels, loss, lse, dlogits=None, ignore_index=-100, block=1024, label_smoothing=0.0,
                  softcap=None):
    """Per-row loss (and log-sum-exp); with dlogits, the gradient of the mean loss."""
    M, V = logits.shape
    n_valid = int((labels != ignore_index).sum())
    scale = 1.0 / max(n_valid, 1)
    with_grad = dlogits is not None
    d = dlogits if with_grad else logits
    cross_entropy_fwd[(M,)](logits, labels, loss, lse, d, logits.strides[0] // logits.itemsize,
                            d.strides[0] // d.itemsize, V, ignore_index, scale, label_smoothing,
                            1.0 if softcap is None else softcap, WITH_GRAD=with_grad, SOFTCAP=softcap is not None,
                            BLOCK_V=block)
