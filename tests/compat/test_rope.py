"""Rotary embedding of q and k (both pairing conventions) against numpy (float64)."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import rope as K


def tables(max_pos, rot, base=10000.0):
    inv = 1.0 / base ** (np.arange(0, rot, 2, dtype=np.float64) / rot)
    ang = np.arange(max_pos, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang), np.sin(ang)


def reference(x, cos, sin, pos, rot, interleaved):
    x = f64(x).copy()
    c = f64(cos)[pos][:, :, None, :]  # (B, S, 1, rot/2)
    s = f64(sin)[pos][:, :, None, :]
    if interleaved:
        a, b = x[..., 0:rot:2].copy(), x[..., 1:rot:2].copy()
        x[..., 0:rot:2] = a * c - b * s
        x[..., 1:rot:2] = b * c + a * s
    else:
        h = rot // 2
        a, b = x[..., :h].copy(), x[..., h:rot].copy()
        x[..., :h] = a * c - b * s
        x[..., h:rot] = b * c + a * s
    return x


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("B,S,H,Hk,D,rot", [(2, 7, 6, 2, 64, 64), (1, 5, 5, 5, 80, 80), (3, 3, 4, 1, 96, 48),
                                            (1, 9, 3, 3, 32, 32)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
def test_rope(rng, interleaved, B, S, H, Hk, D, rot, dt):
    dtype = dtype_of(dt)
    max_pos = 64
    q = rng.standard_normal((B, S, H, D)).astype(dtype)
    k = rng.standard_normal((B, S, Hk, D)).astype(dtype)
    cos, sin = tables(max_pos, rot)
    cos32, sin32 = cos.astype(np.float32), sin.astype(np.float32)
    pos = rng.integers(0, max_pos, (B, S)).astype(np.int32)
    q_out = poisoned(q.shape, dtype)
    k_out = poisoned(k.shape, dtype)
    K.rope_qk(q, k, cos32, sin32, pos, q_out, k_out, interleaved, rot)
    assert rel_err(q_out, reference(q, cos32, sin32, pos, rot, interleaved)) < TOL[dt]
    assert rel_err(k_out, reference(k, cos32, sin32, pos, rot, interleaved)) < TOL[dt]
    if rot < D:
        assert np.array_equal(q_out[..., rot:], q[..., rot:])


def test_rope_strided_qk_from_a_fused_projection(rng):
    # q and k as views of one (B, S, H + 2 * Hk, D) qkv buffer, as a fused projection gives them
    B, S, H, Hk, D = 2, 6, 4, 2, 64
    qkv = rng.standard_normal((B, S, H + 2 * Hk, D)).astype(np.float32)
    q, k = qkv[:, :, :H], qkv[:, :, H:H + Hk]
    cos, sin = tables(32, D)
    cos32, sin32 = cos.astype(np.float32), sin.astype(np.float32)
    pos = np.tile(np.arange(3, 3 + S, dtype=np.int32), (B, 1))
    q_out = poisoned(q.shape, np.float32)
    k_out = poisoned(k.shape, np.float32)
    K.rope_qk(q, k, cos32, sin32, pos, q_out, k_out, False)
    assert rel_err(q_out, reference(q, cos32, sin32, pos, D, False)) < 1e-6
    assert rel_err(k_out, reference(k, cos32, sin32, pos, D, False)) < 1e-6
