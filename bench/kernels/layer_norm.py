"""Layer normalization over the last dimension, forward and backward.

Forward: one program per row, the whole row in one block (BLOCK >= n_cols),
statistics in fp32; the mean and 1/std of each row are kept for the backward.

Backward, in two kernels:
  1. each of P programs takes a run of consecutive rows, computes their dx,
     and sums the rows' contributions to dw and db in registers; it stores
     the two sums as its row of the (P, n_cols) fp32 partial buffers.  No
     locks and no atomics: every partial row has one writer.
  2. programs over column blocks sum the P partial rows into dw and db.
(examples/layer_norm.py keeps the tutorial's form, one program per row
adding into shared partial sums under atomic_cas spin locks.)

Written in the Triton dialect; bench/harness.py executes this file once with
`triton` bound to Triton and once to Nereid."""
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, n_cols, eps,
                          BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_dx_kernel(dx_ptr, dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr,
                             stride, n_rows, n_cols, rows_per_prog, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    dw = tl.zeros((BLOCK,), tl.float32)
    db = tl.zeros((BLOCK,), tl.float32)
    start = pid * rows_per_prog
    end = tl.minimum(start + rows_per_prog, n_rows)
    # Each row's x and dy are loaded one iteration ahead, so that the loads
    # of the next row overlap this row's reductions.
    x_next = tl.load(x_ptr + start * stride + cols, mask=mask & (start < end), other=0.0)
    dy_next = tl.load(dy_ptr + start * stride + cols, mask=mask & (start < end), other=0.0)
    for row in range(start, end):
        x = x_next.to(tl.float32)
        dy = dy_next.to(tl.float32)
        x_next = tl.load(x_ptr + (row + 1) * stride + cols, mask=mask & (row + 1 < end), other=0.0)
        dy_next = tl.load(dy_ptr + (row + 1) * stride + cols, mask=mask & (row + 1 < end), other=0.0)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = w * dy
        c1 = tl.sum(xhat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += dy * xhat
        db += dy
    tl.store(dw_part_ptr + pid * n_cols + cols, dw, mask=mask)
    tl.store(db_part_ptr + pid * n_cols + cols, db, mask=mask)


@triton.jit
def layer_norm_bwd_dwdb_kernel(dw_part_ptr, db_part_ptr, dw_ptr, db_ptr, n_groups, n_cols,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, n_groups, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        mask = (rows[:, None] < n_groups) & (cols[None, :] < n_cols)
        offs = rows[:, None] * n_cols + cols[None, :]
        dw += tl.load(dw_part_ptr + offs, mask=mask, other=0.0)
        db += tl.load(db_part_ptr + offs, mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(dw, axis=0).to(dw_ptr.dtype.element_ty), mask=cols < n_cols)
    tl.store(db_ptr + cols, tl.sum(db, axis=0).to(db_ptr.dtype.element_ty), mask=cols < n_cols)


def block_for(n_cols):
    """The block of a row: the next power of two."""
    return triton.next_power_of_2(n_cols)


def warps_for(block):
    return min(max(block // 256, 1), 8)


def partials_for(n_rows, programs):
    """Rows of the backward's partial sums (and programs of its first kernel) for `programs` asked."""
    return max(1, min(n_rows, programs))


def forward(y, mean, rstd, x, w, b, n_rows, n_cols, stride, eps):
    block = block_for(n_cols)
    layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, mean, rstd, stride, n_cols, eps, BLOCK=block,
                                     num_warps=warps_for(block))
    return y


def backward(dx, dw, db, dy, x, w, mean, rstd, dw_part, db_part, n_rows, n_cols, stride, programs, num_warps=None):
    """dw_part and db_part: fp32, at least (partials_for(n_rows, programs), n_cols).  One to four
    programs per SM do best on an H100 (more for shorter rows)."""
    block = block_for(n_cols)
    programs = partials_for(n_rows, programs)
    rows_per_prog = triton.cdiv(n_rows, programs)
    layer_norm_bwd_dx_kernel[(programs,)](dx, dy, x, w, mean, rstd, dw_part, db_part, stride, n_rows, n_cols,
                                          rows_per_prog, BLOCK=block, num_warps=num_warps or warps_for(block))
    block_n = 32
    layer_norm_bwd_dwdb_kernel[(triton.cdiv(n_cols, block_n),)](dw_part, db_part, dw, db, programs, n_cols,
                                                                 BLOCK_M=64, BLOCK_N=block_n)
    return dx, dw, db
