"""Paged-attention decode against numpy (float64) attention over the gathered keys and values."""
import numpy as np
import pytest

from compat_util import TOL, dtype_of, f64, poisoned, rel_err

import paged_attention as K
import sim_mode


def make_cache(rng, seq_lens, page, n_kv, head_dim, dtype, spare_pages=3):
    """Caches with the pages of every sequence scattered over a shuffled pool; every slot
    no sequence owns (and every token past a sequence's length) holds NaN, so reading
    one poisons the result; unused block-table entries point far outside the pool."""
    pages_of = [-(-int(n) // page) for n in seq_lens]
    n_pages = sum(pages_of) + spare_pages
    perm = rng.permutation(n_pages)
    max_pages = max(pages_of) + 1
    table = np.full((len(seq_lens), max_pages), 1 << 20, np.int32)
    kc = np.full((n_pages, page, n_kv, head_dim), np.nan, np.float32)
    vc = np.full_like(kc, np.nan)
    keys, values = [], []
    at = 0
    for i, n in enumerate(seq_lens):
        kk = rng.standard_normal((n, n_kv, head_dim))
        vv = rng.standard_normal((n, n_kv, head_dim))
        for j in range(pages_of[i]):
            p = perm[at]
            at += 1
            table[i, j] = p
            lo, hi = j * page, min(n, (j + 1) * page)
            kc[p, :hi - lo] = kk[lo:hi]
            vc[p, :hi - lo] = vv[lo:hi]
        keys.append(kk)
        values.append(vv)
    kc, vc = kc.astype(dtype), vc.astype(dtype)
    # the reference sees the values as stored
    keys = [f64(kc[table[i, :pages_of[i]]].reshape(-1, n_kv, head_dim)[:n]) for i, n in enumerate(seq_lens)]
    values = [f64(vc[table[i, :pages_of[i]]].reshape(-1, n_kv, head_dim)[:n]) for i, n in enumerate(seq_lens)]
    return kc, vc, table, keys, values


def reference(q, keys, values, sm_scale):
    n_seqs, n_heads, head_dim = q.shape
    out = np.empty((n_seqs, n_heads, head_dim))
    for i in range(n_seqs):
        n_kv = keys[i].shape[1]
        for h in range(n_heads):
            kh = h // (n_heads // n_kv)
            s = keys[i][:, kh, :] @ f64(q[i, h]) * sm_scale
            p = np.exp(s - s.max())
            out[i, h] = (p / p.sum()) @ values[i][:, kh, :]
    return out


CASES = [
    # seq_lens, page, n_heads, n_kv, head_dim
    ([1, 17, 64, 70, 33], 16, 4, 4, 64),
    ([5, 40], 16, 8, 2, 128),
    ([100, 3, 31], 32, 6, 1, 80),
    ([16, 48], 16, 2, 2, 32),
]


@pytest.mark.parametrize("seq_lens,page,n_heads,n_kv,head_dim", CASES)
@pytest.mark.parametrize("dt", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("use_dot", [False, True], ids=["vector", "dot"])
def test_paged_attention_decode(rng, seq_lens, page, n_heads, n_kv, head_dim, dt, use_dot):
    dtype = dtype_of(dt)
    q = rng.standard_normal((len(seq_lens), n_heads, head_dim)).astype(dtype)
    kc, vc, table, keys, values = make_cache(rng, seq_lens, page, n_kv, head_dim, dtype)
    lens = np.array(seq_lens, np.int32)
    out = poisoned(q.shape, dtype)
    scale = 1.0 / np.sqrt(head_dim)
    if use_dot:
        # the dot path rounds p to the cache's dtype (fp32 operands go through tf32): where
        # the GPU's fused multiply-adds (enable_fp_fusion) move p by an fp32 ulp, its tf32
        # rounding may land a tf32 ulp away from the interpreter's
        sim_mode.tolerance(1e-4)(K.paged_attention)(q, kc, vc, table, lens, out, scale, use_dot)
    else:
        K.paged_attention(q, kc, vc, table, lens, out, scale, use_dot)
    ref = reference(q, keys, values, scale)
    tol = TOL[dt] if not use_dot else {"fp32": 3e-3, "fp16": 3e-3, "bf16": 2e-2}[dt]
    assert rel_err(out, ref) < tol


@pytest.mark.parametrize("use_dot,num_warps", [(False, 1), (False, 8), (True, 8)])
def test_paged_attention_num_warps(rng, use_dot, num_warps):
    seq_lens, page, n_heads, n_kv, head_dim = [9, 50, 64], 16, 4, 2, 64
    q = rng.standard_normal((len(seq_lens), n_heads, head_dim)).astype(np.float16)
    kc, vc, table, keys, values = make_cache(rng, seq_lens, page, n_kv, head_dim, np.float16)
    out = poisoned(q.shape, np.float16)
    K.paged_attention(q, kc, vc, table, np.array(seq_lens, np.int32), out, 0.125, use_dot, num_warps)
    assert rel_err(out, reference(q, keys, values, 0.125)) < 3e-3


@pytest.mark.parametrize("seq_lens,page,partition", [([1, 200, 65, 130], 16, 64), ([300, 7], 32, 128),
                                                     ([16, 48], 16, 16)])
@pytest.mark.parametrize("dt", ["fp32", "fp16"])
def test_paged_attention_split_partitions(rng, seq_lens, page, partition, dt):
    dtype = dtype_of(dt)
    n_heads, n_kv, head_dim = 4, 2, 48
    q = rng.standard_normal((len(seq_lens), n_heads, head_dim)).astype(dtype)
    kc, vc, table, keys, values = make_cache(rng, seq_lens, page, n_kv, head_dim, dtype)
    out = poisoned(q.shape, dtype)
    scale = 1.0 / np.sqrt(head_dim)
    K.paged_attention_split(q, kc, vc, table, np.array(seq_lens, np.int32), out, scale, partition)
    assert rel_err(out, reference(q, keys, values, scale)) < TOL[dt]
