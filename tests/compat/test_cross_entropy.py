"""Cross-entropy with a chunked log-sum-exp against numpy (float64)."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import cross_entropy as K


def reference(x, labels, ignore_index, label_smoothing=0.0, softcap=None):
    x = f64(x)
    if softcap is not None:
        t = np.tanh(x / softcap)
        x = softcap * t
    M, V = x.shape
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    valid = labels != ignore_index
    safe = np.where(valid, labels, 0)
    target = np.full((M, V), label_smoothing / V)
    target[np.arange(M), safe] += 1.0 - label_smoothing
    loss = np.where(valid, -(target * (x - lse[:, None])).sum(axis=1), 0.0)
    grad = (np.exp(x - lse[:, None]) - target) * valid[:, None] / max(int(valid.sum()), 1)
    if softcap is not None:
        grad *= 1.0 - t * t
    return loss, lse, grad


@pytest.mark.parametrize("M,V,block", [(6, 5000, 1024), (3, 32000, 4096), (9, 100, 32), (4, 1024, 1024)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("with_grad", [False, True], ids=["loss", "grad"])
def test_cross_entropy(rng, M, V, block, dt, with_grad):
    dtype = dtype_of(dt)
    # a wide range of logits, so that the running maximum changes between chunks
    x = (rng.standard_normal((M, V)) * 4 + np.linspace(-8, 8, V)[None, :] * rng.choice([-1, 1], (M, 1)))
    x = x.astype(dtype)
    labels = rng.integers(0, V, M).astype(np.int64)
    labels[rng.random(M) < 0.25] = -100
    labels[0] = V - 1
    loss = poisoned(M, np.float32)
    lse = poisoned(M, np.float32)
    grad = poisoned((M, V), dtype) if with_grad else None
    K.cross_entropy(x, labels, loss, lse, grad, block=block)
    ref_loss, ref_lse, ref_grad = reference(x, labels, -100)
    assert rel_err(lse, ref_lse) < 1e-5
    assert rel_err(loss, ref_loss) < 1e-5
    assert np.all(loss[labels == -100] == 0)
    if with_grad:
        assert rel_err(grad, ref_grad) < max(TOL[dt], 1e-5)


def test_cross_entropy_int32_labels_and_strided_logits(rng):
    M, V = 5, 3000
    buf = (rng.standard_normal((M, V + 100)) * 10).astype(np.float32)
    x = buf[:, 50:50 + V]
    labels = rng.integers(0, V, M).astype(np.int32)
    loss = poisoned(M, np.float32)
    lse = poisoned(M, np.float32)
    K.cross_entropy(x, labels, loss, lse, block=512)
    ref_loss, ref_lse, _ = reference(x, labels, -100)
    assert rel_err(loss, ref_loss) < 1e-5
    assert rel_err(lse, ref_lse) < 1e-5


@pytest.mark.parametrize("label_smoothing,softcap", [(0.1, None), (0.0, 30.0), (0.05, 15.0)])
@pytest.mark.parametrize("dt", ["fp32", "bf16"])
def test_cross_entropy_smoothing_and_softcap(rng, label_smoothing, softcap, dt):
    dtype = dtype_of(dt)
    M, V = 7, 3001
    x = (rng.standard_normal((M, V)) * 20).astype(dtype)
    labels = rng.integers(0, V, M).astype(np.int64)
    labels[3] = -100
    loss = poisoned(M, np.float32)
    lse = poisoned(M, np.float32)
    grad = poisoned((M, V), dtype)
    K.cross_entropy(x, labels, loss, lse, grad, block=512, label_smoothing=label_smoothing, softcap=softcap)
    ref_loss, ref_lse, ref_grad = reference(x, labels, -100, label_smoothing, softcap)
    assert rel_err(lse, ref_lse) < 1e-5
    assert rel_err(loss, ref_loss) < 1e-5
    assert rel_err(grad, ref_grad) < max(TOL[dt], 1e-5)
