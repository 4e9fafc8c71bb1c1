"""Tutorial 5: layer normalization, forward and backward.

Forward: one program per row computes the row's mean and 1/std in fp32 and
writes y = (x - mean) / std * w + b, keeping mean and 1/std for the
backward pass.

Backward: dx needs only its own row, but dw and db are sums over all rows.
Instead of one atomic add per element, the rows are split into GROUP_SIZE_M
groups; each program adds its row's share into its group's partial-sum row,
holding that group's lock (a spin lock on tl.atomic_cas) while it does, and
a second kernel sums the GROUP_SIZE_M partial rows.

    python3 examples/tutorials/05_layer_norm.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402

import common as C  # noqa: E402


@nereid.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    # the mean, one block of the row at a time
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        total += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    # the variance, around that mean
    squares = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        d = tl.where(cols < N, tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32) - mean, 0.0)
        squares += d * d
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for start in range(0, N, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        inside = cols < N
        x = tl.load(X + cols, mask=inside, other=0.0).to(tl.float32)
        w = tl.load(W + cols, mask=inside)
        b = tl.load(B + cols, mask=inside)
        tl.store(Y + cols, ((x - mean) * rstd * w + b).to(Y.dtype.element_ty), mask=inside)


@nereid.jit
def layer_norm_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP_SIZE_M: tl.constexpr,
                      BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    inside = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # this row's group: its lock, its "already written" flag, its partial-sum rows
    group = row % GROUP_SIZE_M
    Lock += group
    Written = Lock + GROUP_SIZE_M
    DW = DW + group * N + cols
    DB = DB + group * N + cols

    x = tl.load(X + cols, mask=inside, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=inside, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=inside).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(inside, (x - mean) * rstd, 0.0)
    wdy = tl.where(inside, w * dy, 0.0)
    # dx = (w*dy - mean(w*dy) - xhat * mean(xhat*w*dy)) / std
    dx = (wdy - (xhat * (tl.sum(xhat * wdy, axis=0) / N) + tl.sum(wdy, axis=0) / N)) * rstd
    tl.store(DX + cols, dx, mask=inside)

    dw_part = (dy * xhat).to(w.dtype)
    db_part = dy.to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:  # take the group's lock
        pass
    if tl.load(Written) == 0:  # the first row of the group writes, the others add
        tl.atomic_xchg(Written, 1)
    else:
        dw_part += tl.load(DW, mask=inside)
        db_part += tl.load(DB, mask=inside)
    tl.store(DW, dw_part, mask=inside)
    tl.store(DB, db_part, mask=inside)
    tl.atomic_xchg(Lock, 0)  # release


@nereid.jit
def layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # the sum of the M partial rows, BLOCK_SIZE_N columns per program
    cols = tl.program_id(0) * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for start in range(0, M, BLOCK_SIZE_M):
        rows = start + tl.arange(0, BLOCK_SIZE_M)
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=inside, other=0.0)
        db += tl.load(DB + offs, mask=inside, other=0.0)
    tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)


def forward(x, w, b, eps=1e-5):
    M, N = x.shape
    dt = C.dtype_name(x)
    y = C.empty((M, N), dt)
    mean = C.empty(M)
    rstd = C.empty(M)
    block = min(65536 // C.itemsize(x), nereid.next_power_of_2(N))
    if N > block:
        raise ValueError("this layer norm takes rows of up to 64 KB")
    num_warps = min(max(block // 256, 1), 8)
    layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, C.stride(x, 0), N, eps, BLOCK_SIZE=block, num_warps=num_warps)
    return y, mean, rstd, block, num_warps


def backward(dy, x, w, mean, rstd, block, num_warps):
    M, N = x.shape
    dt = C.dtype_name(w)
    # more groups for short rows: more locks to spread the programs over
    group = 256 if N <= 1024 else 128 if N <= 4096 else 96 if N <= 8192 else 64
    group = min(group, M)
    locks = C.zeros(2 * group, "int32")
    partial_dw = C.zeros((group, N), dt)
    partial_db = C.zeros((group, N), dt)
    dw = C.empty(N, dt)
    db = C.empty(N, dt)
    dx = C.empty((M, N), C.dtype_name(x))
    layer_norm_bwd_dx[(M,)](dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, C.stride(x, 0), N,
                            GROUP_SIZE_M=group, BLOCK_SIZE_N=block, num_warps=num_warps)
    grid = lambda meta: (nereid.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    layer_norm_bwd_dwdb[grid](partial_dw, partial_db, dw, db, group, N, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)
    return dx, dw, db


def reference(x, w, b, dy, eps=1e-5):
    x, w, b, dy = (C.to_numpy(a) for a in (x, w, b, dy))
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    y = xhat * w + b
    wdy = w * dy
    dx = (wdy - xhat * (xhat * wdy).mean(axis=1, keepdims=True) - wdy.mean(axis=1, keepdims=True)) * rstd
    return y, dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def main():
    M, N = (1151, 8192) if C.ON_GPU else (48, 300)
    x = C.randn((M, N), "float16", seed=11, scale=2.0, shift=0.5)
    w = C.rand(N, "float16", seed=12)
    b = C.rand(N, "float16", seed=13)
    dy = C.randn((M, N), "float16", seed=14, scale=0.1)
    y, mean, rstd, block, num_warps = forward(x, w, b)
    dx, dw, db = backward(dy, x, w, mean, rstd, block, num_warps)
    ry, rdx, rdw, rdb = reference(x, w, b, dy)
    C.check("layer norm forward", y, ry, 2e-3)
    C.check("layer norm dx", dx, rdx, 5e-3)
    C.check("layer norm dw", dw, rdw, 5e-3)
    C.check("layer norm db", db, rdb, 5e-3)
    if not C.ON_GPU:
        return
    import torch
    theirs = C.load_as_triton(__file__)

    def data(N):
        return (C.randn((4096, N), "float16", seed=N), C.rand(N, "float16", seed=1), C.rand(N, "float16", seed=2),
                C.randn((4096, N), "float16", seed=3, scale=0.1))

    def fwd_bwd(mod):
        def run(x, w, b, dy):
            y, mean, rstd, block, nw = mod.forward(x, w, b)
            mod.backward(dy, x, w, mean, rstd, block, nw)
        return run

    def torch_fwd_bwd(x, w, b, dy):
        xx = x.detach().requires_grad_(True)
        ww = w.detach().requires_grad_(True)
        bb = b.detach().requires_grad_(True)
        torch.nn.functional.layer_norm(xx, (x.shape[1],), ww, bb, 1e-5).backward(dy)

    ours = sys.modules[__name__]
    providers = {"nereid": lambda N: (lambda d=data(N): fwd_bwd(ours)(*d)),
                 "torch": lambda N: (lambda d=data(N): torch_fwd_bwd(*d))}
    if theirs is not None:
        providers["triton"] = lambda N: (lambda d=data(N): fwd_bwd(theirs)(*d))
    C.report(nereid, "layer-norm-forward-backward", ["N"], [512 * i for i in range(2, 32, 4)], "GB/s", providers,
             lambda ms, N: 6 * 4096 * N * 2 * 1e-9 / (ms * 1e-3))


if __name__ == "__main__":
    main()
