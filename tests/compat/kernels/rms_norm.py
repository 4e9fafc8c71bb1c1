"""RMSNorm forward: y = x / sqrt(mean(x^2) + eps) * w, one program per row.

The statistics accumulate in fp32 whatever the input dtype; the output has the
input's dtype.  `rms_norm_fwd` holds a whole row in one block (the usual
choice when the hidden size fits); `rms_norm_fwd_looped` walks a wide row in
chunks, twice (sum of squares, then the scaled write)."""
import nereid as triton
import nereid.language as tl


@triton.jit
def rms_norm_fwd(X, W, Y, Rstd, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / N
    rstd = tl.rsqrt(mean_sq + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(Y + row * stride_y + cols, y.to(Y.dtype.element_ty), mask=mask)
    tl.store(Rstd + row, rstd)


@triton.jit
def rms_norm_fwd_looped(X, W, Y, Rstd, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    sq = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        sq += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(sq, axis=0) / N + eps)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * rstd * w).to(y_row.dtype.element_ty), mask=mask)


@triton.heuristics({"BLOCK_N": lambda args: triton.next_power_of_2(args["N"]),
                    "num_warps": lambda args: 8 if args["N"] >= 2048 else 4})
@triton.jit
def rms_norm_fwd_auto(X, W, Y, Rstd, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    """rms_norm_fwd with its block size (and num_warps) derived from N by @triton.heuristics."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = 1.0 / tl.sqrt_rn(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)
    tl.store(Rstd + row, rstd)


def rms_norm(x, w, y, rstd, eps=1e-6, max_block=1024):
    """Launches one program per row of the 2-d array x (rows may be strided)."""
    M, N = x.shape
    block = triton.next_power_of_2(N)
    if block <= max_block:
        rms_norm_fwd[(M,)](x, w, y, rstd, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, N, eps,
                           BLOCK_N=block)
    else:
        rms_norm_fwd_looped[(M,)](x, w, y, rstd, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, N,
                                  eps, BLOCK_N=max_block)


@triton.jit
def fused_add_rms_norm(X, Residual, W, stride_x, stride_r, N, eps, BLOCK_N: tl.constexpr):
    """In place, between two layers: residual <- x + residual, x <- rmsnorm(residual) * w.
    The sum is rounded to the residual's dtype before it is normalized."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x_ptrs = X + row * stride_x + cols
    r_ptrs = Residual + row * stride_r + cols
    h = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32) + tl.load(r_ptrs, mask=mask, other=0.0).to(tl.float32)
    h = h.to(Residual.dtype.element_ty)
    tl.store(r_ptrs, h, mask=mask)
    h = h.to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptrs, (h * rstd * w).to(X.dtype.element_ty), mask=mask)


def add_rms_norm_(x, residual, w, eps=1e-6, num_warps=4):
    M, N = x.shape
    fused_add_rms_norm[(M,)](x, residual, w, x.strides[0] // x.itemsize, residual.strides[0] // residual.itemsize,
                             N, eps, BLOCK_N=triton.next_power_of_2(N), num_warps=num_warps)
