"""Fused MoE gather-GEMM against numpy (float64), alone and as an expert MLP."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import fused_moe as K
import swiglu


def route(rng, T, E, top_k):
    """Top-k experts per token from random router logits (skewed, one expert left idle)."""
    logits = rng.standard_normal((T, E)) + np.linspace(2, 0, E)[None, :]
    logits[:, E - 1] = -1e9
    ids = np.argsort(-logits, axis=1)[:, :top_k].astype(np.int32)
    sel = np.take_along_axis(logits, ids, axis=1)
    w = np.exp(sel - sel.max(axis=1, keepdims=True))
    return ids, (w / w.sum(axis=1, keepdims=True)).astype(np.float32)


def reference(a, w, ids, weights, top_k, mul, remote=()):
    T2 = ids.size
    out = np.empty((T2, w.shape[1]))
    for pair in range(T2):
        e = ids.ravel()[pair]
        out[pair] = 0.0 if e in remote else f64(w[e]) @ f64(a[pair // top_k])
        if mul:
            out[pair] *= weights.ravel()[pair]
    return out


# fp32 operands of tl.dot go through tf32
DOT_TOL = {"fp32": 3e-3, "fp16": 2e-3, "bf16": 1.6e-2}


@pytest.mark.parametrize("T,E,top_k,N,Kd", [(37, 8, 2, 72, 100), (5, 4, 1, 64, 64), (64, 6, 3, 40, 48)])
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("mul", [False, True], ids=["plain", "weighted"])
def test_fused_moe_gemm(rng, T, E, top_k, N, Kd, dt, mul):
    dtype = dtype_of(dt)
    a = rng.standard_normal((T, Kd)).astype(dtype)
    w = (rng.standard_normal((E, N, Kd)) / np.sqrt(Kd)).astype(dtype)
    ids, weights = route(rng, T, E, top_k)
    routing = K.align_by_expert(ids, E, 16)
    c = poisoned((T * top_k, N), dtype)
    K.fused_moe(a, w, c, weights, ids, routing, top_k, mul)
    assert rel_err(c, reference(a, w, ids, weights, top_k, mul)) < DOT_TOL[dt]


@pytest.mark.parametrize("num_warps,block_m,block_n,block_k", [(8, 32, 64, 32), (2, 16, 16, 16), (4, 64, 32, 64)])
def test_fused_moe_tile_shapes_and_remote_experts(rng, num_warps, block_m, block_n, block_k):
    T, E, top_k, N, Kd = 45, 8, 2, 80, 72
    a = rng.standard_normal((T, Kd)).astype(np.float16)
    w = (rng.standard_normal((E, N, Kd)) / np.sqrt(Kd)).astype(np.float16)
    ids, weights = route(rng, T, E, top_k)
    remote = (1, 4)
    routing = K.align_by_expert(ids, E, block_m, remote)
    c = poisoned((T * top_k, N), np.float16)
    K.fused_moe(a, w, c, weights, ids, routing, top_k, True, block_m, block_n, block_k, num_warps=num_warps)
    assert rel_err(c, reference(a, w, ids, weights, top_k, True, remote)) < 2e-3
    assert np.all(c[np.isin(ids.ravel(), remote)] == 0)


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_moe_mlp(rng, dt):
    """x -> (gate | up) = x W1[e]^T -> silu(gate) * up -> W2[e] -> weighted sum over the top-k."""
    dtype = dtype_of(dt)
    T, E, top_k, H, F = 29, 6, 2, 64, 48
    x = rng.standard_normal((T, H)).astype(dtype)
    w1 = (rng.standard_normal((E, 2 * F, H)) / np.sqrt(H)).astype(dtype)
    w2 = (rng.standard_normal((E, H, F)) / np.sqrt(F)).astype(dtype)
    ids, weights = route(rng, T, E, top_k)
    routing = K.align_by_expert(ids, E, 16)
    up = poisoned((T * top_k, 2 * F), dtype)
    K.fused_moe(x, w1, up, weights, ids, routing, top_k, False)
    act = poisoned((T * top_k, F), dtype)
    swiglu.swiglu(up[:, :F], up[:, F:], act, 64)
    down = poisoned((T * top_k, H), dtype)
    K.fused_moe(act, w2, down, weights, ids, routing, 1, True, block_k=16)
    out = f64(down).reshape(T, top_k, H).sum(axis=1)
    ref = np.zeros((T, H))
    for t in range(T):
        for j in range(top_k):
            e = ids[t, j]
            h = f64(w1[e]) @ f64(x[t])
            g, u = h[:F], h[F:]
            ref[t] += weights[t, j] * (f64(w2[e]) @ (g / (1 + np.exp(-g)) * u))
    assert rel_err(out, ref) < (1e-2 if dt == "fp16" else 4e-2)


def test_align_by_expert_blocks_belong_to_one_expert(rng):
    ids, _ = route(rng, 50, 5, 2)
    sorted_ids, expert_ids, num_padded = K.align_by_expert(ids, 5, 16)
    n = int(num_padded[0])
    assert n % 16 == 0
    flat = ids.ravel()
    valid = sorted_ids[:n][sorted_ids[:n] < flat.size]
    assert np.array_equal(np.sort(valid), np.arange(flat.size))
    for b in range(n // 16):
        blk = sorted_ids[b * 16:(b + 1) * 16]
        assert np.all(flat[blk[blk < flat.size]] == expert_ids[b])
