"""noinline @jit functions: calls that stay calls.  The interpreter runs
them as calls; the GPU code has one PTX .func per specialization, called
with the elements each thread holds (blocks in the default layout of their
shape) in registers.  Covered: block and scalar arguments and results,
several results, a reduction in the callee (its own shared memory, placed
after the caller's), a loop calling the function, nested noinline calls, 2-D
blocks, several dtypes and masked edges."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err


@triton.jit(noinline=True)
def affine(x, a, b):
    return x * a + b


@triton.jit(noinline=True)
def row_stats(x):
    """Mean and max of each row of a 2-D block (reductions: shared memory in the callee)."""
    return tl.sum(x, axis=1) / x.shape[1], tl.max(x, axis=1)


@triton.jit(noinline=True)
def normalize(x, eps):
    mean, mx = row_stats(x)
    return (x - mean[:, None]) / (mx[:, None] - mean[:, None] + eps)


@triton.jit
def noinline_kernel(X, Y, Z, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    y = affine(x, a, b)
    for _ in range(3):  # the same function called in a loop
        y = affine(y, a, b)
    tl.store(Y + offs, y, mask=m)
    tl.store(Z + offs, affine(x, 2, 0), mask=m)


@triton.jit
def noinline_rows(X, Y, M, N, eps, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=m, other=0.0)
    # a reduction in the caller too: its shared memory and the callee's must not overlap
    total = tl.sum(tl.sum(x, axis=1), axis=0)
    y = normalize(x, eps) + total * 0
    tl.store(Y + rm[:, None] * N + rn[None, :], y, mask=m)


@pytest.mark.parametrize("n", [1, 100, 1000])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
def test_noinline_calls(rng, n, dt):
    if dt == np.int32:
        x = rng.integers(-100, 100, n).astype(dt)
        a, b = 3, -7
    else:
        x = rng.standard_normal(n).astype(dt)
        a, b = 0.5, 1.25
    y, z = poisoned(n, dt), poisoned(n, dt)
    noinline_kernel[(triton.cdiv(n, 128),)](x, y, z, n, a, b, BLOCK=128)
    want = x.astype(np.float64)
    for _ in range(4):
        want = want * a + b
    if dt == np.int32:
        assert np.array_equal(y, want.astype(np.int64).astype(np.int32))
        assert np.array_equal(z, x * 2)
    else:
        tol = 3e-3 if dt == np.float16 else 1e-6
        assert rel_err(y, want) < tol
        assert rel_err(z, x.astype(np.float64) * 2) < tol


@pytest.mark.parametrize("M,N", [(20, 30), (64, 64), (3, 7)])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_noinline_reductions(rng, M, N, num_warps):
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = poisoned((M, N), np.float32)
    BN = triton.next_power_of_2(N)
    noinline_rows[(triton.cdiv(M, 16),)](x, y, M, N, 1e-3, BM=16, BN=BN, num_warps=num_warps)
    # padded columns are zeros in the block and take part in the mean and max
    xp = np.zeros((M, BN))
    xp[:, :N] = x
    mean = xp.sum(1, keepdims=True) / BN
    mx = xp.max(1, keepdims=True)
    want = (xp - mean) / (mx - mean + 1e-3)
    assert rel_err(y, want[:, :N]) < 1e-5


def test_noinline_ptx_has_functions():
    k = noinline_rows.compile("*fp32:16, *fp32:16, i32, i32, fp32, 16, 32", arch="sm_80")
    assert ".func" in k.ptx and "call.uni" in k.ptx
    assert k.ptx.count(".func") >= 2  # normalize and row_stats


@triton.jit(noinline=True)
def _times(x, s):
    return x * s


@triton.jit
def float_const_arg(x_ptr, out_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, _times(x, 2.5) + _times(x, -1e-3))


def test_noinline_float_constant_args(rng):
    # float constants specialize the callee; its PTX name stays an identifier
    k = float_const_arg.compile("*fp32:16, *fp32:16, 64", arch="sm_80")
    names = [line.split("(")[-2].split()[-1] for line in k.ptx.splitlines() if line.startswith(".func")]
    assert len(names) == 2 and all(n.replace("_", "a").replace("$", "a").isalnum() for n in names), names
    x = rng.standard_normal(64).astype(np.float32)
    out = poisoned(64, np.float32)
    float_const_arg[(1,)](x, out, B=64)
    assert rel_err(out, x.astype(np.float64) * (2.5 - 1e-3)) < 1e-6
