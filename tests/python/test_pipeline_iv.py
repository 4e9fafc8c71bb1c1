"""Software pipelining of loads addressed from the loop's index.

A dot loop whose tiles are loaded through pointers computed from the
induction variable (`k + offs` each iteration, no carried pointer) and
masked on it: with num_stages > 1 the GPU pipeline turns those loads into
cp.async copies issued ahead, each copy's address and mask recomputed for
its own iteration and masked off past the loop's end.  The launches run on
the interpreter here and are checked against float64 numpy; the suite's
simulator mode (NEREID_TEST_DEVICE=sim) reruns each one on the PTX
simulator (sm_80 and sm_90 mma.sync PTX), the GPU mode on the GPU (sm_90a
wgmma there).  Lengths cover loops shorter than the pipeline, partial last
blocks, a nonzero lower bound and an empty loop; the PTX tests check that
the copies are there for sm_80 and sm_90a."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err
import sim_mode


@triton.jit
def iv_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, lo, s_am, s_bk, s_cm,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C = A[:, lo:K] @ B[lo:K, :]; tiles addressed from k, masked at every edge
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(lo, K, BK):
        kk = k + rk
        a = tl.load(a_ptr + rm[:, None] * s_am + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * s_bk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def iv_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, L, stride, D: tl.constexpr, BM: tl.constexpr,
                        BN: tl.constexpr):
    # softmax(Q K^T) V over keys 0..L-1 in blocks of BN: K read transposed,
    # P V with P from registers; both tiles addressed from the block index
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * stride + offs_d[None, :], mask=rows[:, None] < L, other=0.0)
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in range(0, L, BN):
        cols = start + offs_n
        kt = tl.load(k_ptr + offs_d[:, None] + cols[None, :] * stride, mask=cols[None, :] < L, other=0.0)
        s = tl.where(cols[None, :] < L, tl.dot(q, kt), -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptr + cols[:, None] * stride + offs_d[None, :], mask=cols[:, None] < L, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    tl.store(o_ptr + rows[:, None] * D + offs_d[None, :], acc / l_i[:, None], mask=rows[:, None] < L)


def run_matmul(rng, M, N, K, lo, stages, BM=32, BN=32, BK=32):
    a = rng.standard_normal((M, max(K, 1))).astype(np.float16)
    b = rng.standard_normal((max(K, 1), N)).astype(np.float16)
    c = poisoned((M, N), np.float32)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    iv_matmul_kernel[grid](a, b, c, M, N, K, lo, a.shape[1], N, N, BM=BM, BN=BN, BK=BK, num_warps=4,
                           num_stages=stages)
    ref = a[:, lo:K].astype(np.float64) @ b[lo:K].astype(np.float64)
    return c, ref


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("K", [32, 80, 100])
def test_matmul_iv_addressed(rng, stages, K):
    # K = 32: one iteration, every copy issued ahead is past the end; K = 80:
    # a partial last block (16-byte copies); K = 100: no 16-byte alignment
    # (element copies)
    c, ref = run_matmul(rng, 40, 48, K, 0, stages)
    assert rel_err(c, ref) < 2e-3


def test_matmul_iv_lower_bound(rng):
    # the prologue's copies start at lo, not at 0
    c, ref = run_matmul(rng, 32, 32, 96, 32, 3)
    assert rel_err(c, ref) < 2e-3


def test_matmul_iv_empty_loop(rng):
    # lo >= K: no iteration; the prologue's copies are all masked off
    c, _ = run_matmul(rng, 32, 32, 16, 32, 3)
    assert np.array_equal(c, np.zeros_like(c))


@pytest.mark.parametrize("L", [32, 50, 96])
def test_attention_iv_addressed(rng, L):
    D, BM, BN = 32, 32, 16
    q, k, v = [rng.standard_normal((L, D)).astype(np.float16) for _ in range(3)]
    o = poisoned((L, D), np.float32)
    # P is rounded to fp16 before the second dot: where two targets' exp differ in the last bit,
    # an element of P may round the other way, so they are compared with the interpreter to 1e-3
    launch = sim_mode.tolerance(1e-3)(lambda: iv_attention_kernel[(triton.cdiv(L, BM),)](
        q, k, v, o, L, D, D=D, BM=BM, BN=BN, num_warps=4, num_stages=3))
    launch()
    s = q.astype(np.float64) @ k.astype(np.float64).T
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
    assert rel_err(o, ref) < 5e-3


MM_SIG = "*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32"
ATTN_SIG = "*fp16:16, *fp16:16, *fp16:16, *fp32:16, i32, i32:16, 64, 64, 64"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_ptx_copies_replace_loads(arch):
    mm = iv_matmul_kernel.compile(MM_SIG, num_warps=4, num_stages=3, arch=arch).ptx
    assert "cp.async.cg.shared.global" in mm and "cp.async.wait_group 1;" in mm
    assert "ld.global" not in mm  # both tiles arrive by cp.async
    one = iv_matmul_kernel.compile(MM_SIG, num_warps=4, num_stages=1, arch=arch).ptx
    assert "cp.async" not in one and "ld.global" in one
    attn = iv_attention_kernel.compile(ATTN_SIG, num_warps=4, num_stages=3, arch=arch).ptx
    plain = iv_attention_kernel.compile(ATTN_SIG, num_warps=4, num_stages=1, arch=arch).ptx
    # only Q's load is left (before the loop); K and V are copied
    assert attn.count("cp.async.cg.shared.global") > 0
    assert attn.count("ld.global") < plain.count("ld.global")
    if arch == "sm_90a":
        assert "wgmma.mma_async" in attn
