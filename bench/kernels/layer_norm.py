"""Layer normalization over the last dimension, forward and backward.

Forward: one program per row, the whole row in one block (BLOCK >= n_cols),
statistics in fp32; the mean and 1/std of each row are kept for the backward.

Backward, in two kernels:
  1. one program per row computes dx, and adds the row's contributions to dw
     and db into one of GROUP partial sums (row % GROUP).  Programs that share
     a partial sum take turns through a spin lock (atomic_cas / atomic_xchg);
     a counter per group says whether the partial sum holds data yet, so the
     partial buffers need no clearing.  locks holds GROUP locks, then GROUP
     counters, and must be zero at launch.
  2. programs over column blocks sum the partial sums into dw and db.

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
                             locks_ptr, stride, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)
    xhat = tl.where(mask, (x - mean) * rstd, 0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / n_cols
    c2 = tl.sum(wdy, axis=0) / n_cols
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(dx_ptr + row * stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)

    group = row % GROUP
    lock = locks_ptr + group
    count = locks_ptr + GROUP + group
    dw_ptrs = dw_part_ptr + group * n_cols + cols
    db_ptrs = db_part_ptr + group * n_cols + cols
    dw = dy * xhat
    db = dy
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    if tl.load(count) == 0:
        tl.atomic_xchg(count, 1)
    else:
        dw += tl.load(dw_ptrs, mask=mask, other=0.0)
        db += tl.load(db_ptrs, mask=mask, other=0.0)
    tl.store(dw_ptrs, dw, mask=mask)
    tl.store(db_ptrs, db, mask=mask)
    # Every thread's stores must be done before the lock is released.
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


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


def warps_for(block):
    return min(max(block // 256, 1), 8)


def group_for(n_cols):
    """Partial sums for dw and db: more groups (less lock contention) for short rows."""
    if n_cols <= 1024:
        return 256
    if n_cols <= 4096:
        return 128
    return 64


def forward(y, mean, rstd, x, w, b, n_rows, n_cols, stride, eps):
    block = triton.next_power_of_2(n_cols)
    layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, mean, rstd, stride, n_cols, eps, BLOCK=block,
                                     num_warps=warps_for(block))
    return y


def backward(dx, dw, db, dy, x, w, mean, rstd, dw_part, db_part, locks, n_rows, n_cols, stride):
    """dw_part and db_part: fp32 (group_for(n_cols), n_cols); locks: int32 (2 * group), zero."""
    block = triton.next_power_of_2(n_cols)
    group = group_for(n_cols)
    layer_norm_bwd_dx_kernel[(n_rows,)](dx, dy, x, w, mean, rstd, dw_part, db_part, locks, stride, n_cols,
                                        GROUP=group, BLOCK=block, num_warps=warps_for(block))
    block_n = 128
    layer_norm_bwd_dwdb_kernel[(triton.cdiv(n_cols, block_n),)](dw_part, db_part, dw, db, min(group, n_rows),
                                                                 n_cols, BLOCK_M=32, BLOCK_N=block_n)
    return dx, dw, db
