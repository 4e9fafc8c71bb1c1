"""RMSNorm forward against numpy (float64)."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import rms_norm as K


def reference(x, w, eps):
    x = f64(x)
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1) + eps)
    return x * rstd[:, None] * f64(w), rstd


@pytest.mark.parametrize("M,N,max_block", [(13, 96, 1024), (7, 1000, 1024), (1, 5, 1024), (5, 3000, 512)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_rms_norm(rng, M, N, max_block, dt):
    dtype = dtype_of(dt)
    eps = 1e-6
    x = (rng.standard_normal((M, N)) * 2 + 0.3).astype(dtype)
    w = (rng.random(N) + 0.5).astype(dtype)
    y = poisoned((M, N), dtype)
    rstd = poisoned(M, np.float32)
    K.rms_norm(x, w, y, rstd, eps, max_block)
    ref_y, ref_rstd = reference(x, w, eps)
    assert rel_err(y, ref_y) < TOL[dt]
    assert rel_err(rstd, ref_rstd) < 1e-5


def test_rms_norm_strided_rows(rng):
    # a view into a wider buffer: the row stride is not the width
    buf = rng.standard_normal((9, 200)).astype(np.float32)
    x = buf[:, 10:110]
    w = rng.random(100).astype(np.float32)
    out = poisoned((9, 160), np.float32)
    y = out[:, :100]
    rstd = poisoned(9, np.float32)
    K.rms_norm(x, w, y, rstd)
    ref_y, ref_rstd = reference(x, w, 1e-6)
    assert rel_err(y, ref_y) < 1e-5
    assert np.isnan(out[:, 100:]).all(), "wrote past the end of a row"
    assert rel_err(rstd, ref_rstd) < 1e-5


@pytest.mark.parametrize("M,N,num_warps", [(6, 768, 4), (3, 200, 8), (4, 4000, 8)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_fused_add_rms_norm_in_place(rng, M, N, num_warps, dt):
    dtype = dtype_of(dt)
    x = rng.standard_normal((M, N)).astype(dtype)
    res = (rng.standard_normal((M, N)) * 3).astype(dtype)
    w = (rng.random(N) + 0.5).astype(dtype)
    h = (f64(x) + f64(res)).astype(dtype)  # the kernel rounds the sum to the residual's dtype
    ref_y, _ = reference(h, w, 1e-6)
    K.add_rms_norm_(x, res, w, num_warps=num_warps)
    assert rel_err(res, h) < TOL[dt]
    assert rel_err(x, ref_y) < TOL[dt]


@pytest.mark.parametrize("M,N", [(5, 300), (3, 2500)])
@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_rms_norm_heuristics(rng, M, N, dt):
    dtype = dtype_of(dt)
    x = rng.standard_normal((M, N)).astype(dtype)
    w = (rng.random(N) + 0.5).astype(dtype)
    y = poisoned((M, N), dtype)
    rstd = poisoned(M, np.float32)
    K.rms_norm_fwd_auto[(M,)](x, w, y, rstd, N, N, N, 1e-5)
    ref_y, ref_rstd = reference(x, w, 1e-5)
    assert rel_err(y, ref_y) < TOL[dt]
    assert rel_err(rstd, ref_rstd) < 1e-5
