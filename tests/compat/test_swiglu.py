"""SwiGLU forward and backward against numpy (float64)."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import swiglu as K


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("M,N,block", [(5, 1000, 256), (16, 256, 256), (3, 11, 64), (1, 2752, 1024)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_swiglu_forward_from_fused_projection(rng, M, N, block, dt):
    dtype = dtype_of(dt)
    ab = (rng.standard_normal((M, 2 * N)) * 2).astype(dtype)
    a, b = ab[:, :N], ab[:, N:]
    c = poisoned((M, N), dtype)
    K.swiglu(a, b, c, block)
    a64, b64 = f64(a), f64(b)
    assert rel_err(c, a64 * sigmoid(a64) * b64) < TOL[dt]


@pytest.mark.parametrize("M,N", [(7, 300), (2, 64)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_swiglu_backward(rng, M, N, dt):
    dtype = dtype_of(dt)
    a = (rng.standard_normal((M, N)) * 3).astype(dtype)
    b = rng.standard_normal((M, N)).astype(dtype)
    dc = rng.standard_normal((M, N)).astype(dtype)
    da = poisoned((M, N), dtype)
    db = poisoned((M, N), dtype)
    K.swiglu_backward(dc, a, b, da, db, 128)
    a64, b64, dc64 = f64(a), f64(b), f64(dc)
    sg = sigmoid(a64)
    assert rel_err(db, dc64 * a64 * sg) < TOL[dt]
    assert rel_err(da, dc64 * b64 * sg * (1 + a64 * (1 - sg))) < TOL[dt]


def test_swiglu_backward_matches_finite_differences(rng):
    # the analytic gradient against a central difference of the forward kernel, in fp32
    M, N = 2, 40
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    dc = np.ones((M, N), np.float32)
    da = poisoned((M, N), np.float32)
    db = poisoned((M, N), np.float32)
    K.swiglu_backward(dc, a, b, da, db, 64)
    h = 1e-2
    cp, cm = poisoned((M, N), np.float32), poisoned((M, N), np.float32)
    K.swiglu((a + h).astype(np.float32), b, cp, 64)
    K.swiglu((a - h).astype(np.float32), b, cm, 64)
    assert rel_err(da, (f64(cp) - f64(cm)) / (2 * h)) < 1e-3


@pytest.mark.parametrize("M,N", [(4, 700), (3, 2000)])
def test_swiglu_autotuned(rng, M, N, tmp_path, monkeypatch):
    monkeypatch.setenv("NEREID_CACHE_DIR", str(tmp_path))  # the tuner's choice is cached on disk
    a = rng.standard_normal((M, N)).astype(np.float16)
    b = rng.standard_normal((M, N)).astype(np.float16)
    c = poisoned((M, N), np.float16)
    K.swiglu_tuned(a, b, c)
    a64, b64 = f64(a), f64(b)
    assert rel_err(c, a64 * sigmoid(a64) * b64) < 2e-3
    assert K.swiglu_fwd_tuned.best_config is not None
