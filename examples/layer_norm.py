"""Layer normalization forward: one program per row, statistics in fp32."""
import nereid as triton
import nereid.language as tl


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        acc += x * x
    var = tl.sum(acc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    from arrays import empty, float32, strides
    M, N = x.shape
    y = empty(x, x.shape)
    mean = empty(x, (M,), float32(x))
    rstd = empty(x, (M,), float32(x))
    block = min(1024, triton.next_power_of_2(N))
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, strides(x)[0], N, eps, BLOCK_SIZE=block)
    return y, mean, rstd


if __name__ == "__main__":
    import numpy as np
    x = np.random.randn(64, 1000).astype(np.float32)
    w = np.random.rand(1000).astype(np.float32)
    b = np.random.rand(1000).astype(np.float32)
    y, _, _ = layer_norm(x, w, b)
    xm = x - x.mean(1, keepdims=True)
    ref = xm / np.sqrt((xm * xm).mean(1, keepdims=True) + 1e-5) * w + b
    print("max abs error:", float(np.max(np.abs(y - ref))))
