"""Warp specialization: tl.range(warp_specialize=True) on sm_90a.

A K loop whose tiles come from host tensor descriptors by TMA and feed one
wgmma dot is split: a producer warpgroup beyond num_warps issues the TMA
copies into an NB-stage ring as soon as a stage is free (an `empty`
mbarrier per stage, one arrival per consumer warp), and the num_warps
warps wait for each stage's `full` mbarrier, run the dot and free the
stage.  With two consumer warpgroups, setmaxnreg gives the producer 40
registers and the others 232.  The hint may also be on a persistent tile
loop around the K loop: the producer then walks the tiles too, and both
sides carry the ring's position from tile to tile.  Everywhere else the
hint changes nothing.

Every launch checks the result against a float64 reference on the
interpreter, and under NEREID_TEST_DEVICE=sim (ptxsim) or cuda (an H100)
on the compiled kernel too: short loops (fewer iterations than stages, or
none), rings that wrap many times, edges of M, N and K, 4 and 8 warps,
fp16, bf16 and fp8; persistent programs with several tiles, one or none.  The PTX tests need no GPU."""
import os
import subprocess
import tempfile

import re

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid.tools.tensor_descriptor import TensorDescriptor
from conftest import poisoned, rel_err
from test_hopper_matmul import _ptxas
from test_lang_descriptors import launch

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


@triton.jit
def ws_matmul(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              WS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=mask)


@triton.jit
def ws_pointer_matmul(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, warp_specialize=True):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@triton.jit(noinline=True)
def _scaled(x, s):
    return x * s


@triton.jit
def ws_calls(a_desc, b_desc, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([k * BK, 0]), acc)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], _scaled(acc, 2.0))


@triton.jit
def ws_persistent(a_desc, b_desc, c_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  NP: tl.constexpr, TMA_STORE: tl.constexpr):
    # NP programs walk the output tiles; the hint is on the tile loop
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, NP, warp_specialize=True):
        pid_m = tile // tiles_n
        pid_n = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([k * BK, pid_n * BN])
            acc = tl.dot(a, b, acc)
        if TMA_STORE:
            c_desc.store([pid_m * BM, pid_n * BN], acc)
        else:
            offs_m = pid_m * BM + tl.arange(0, BM)
            offs_n = pid_n * BN + tl.arange(0, BN)
            mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
            tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc + 1.0, mask=mask)


@triton.jit
def ws_two_loops(a_desc, b_desc, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    for t in tl.range(0, 2, warp_specialize=True):
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([k * BK, 0]), acc)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([k * BK, 0]), acc)
        rm = tl.arange(0, BM)
        rn = tl.arange(0, BN)
        tl.store(c_ptr + t * BM * BN + rm[:, None] * BN + rn[None, :], acc)


@triton.jit
def _attn_blocks(acc, m_i, l_i, q, k_desc, v_desc, kv_row, lo, hi, rows, offs_n, qk_scale, BN: tl.constexpr,
                 MASK: tl.constexpr, WS: tl.constexpr):
    for start in tl.range(lo, hi, BN, warp_specialize=WS):
        s = tl.dot(q, k_desc.load([kv_row + start, 0]).T) * qk_scale
        if MASK:
            s = tl.where(rows[:, None] >= (start + offs_n)[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([kv_row + start, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def ws_attention(q_desc, k_desc, v_desc, o_ptr, L, qk_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 CAUSAL: tl.constexpr, WS: tl.constexpr):
    # attention forward over (heads * L, D) rows, two dots a key block: the
    # second one's group stays in flight into the next iteration
    start_m = tl.program_id(0) * BM
    bh = tl.program_id(1)
    rows = start_m + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    q = q_desc.load([bh * L + start_m, 0])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    if CAUSAL:
        acc, m_i, l_i = _attn_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, 0, start_m, rows, offs_n, qk_scale,
                                     BN, False, WS)
        acc, m_i, l_i = _attn_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, start_m, start_m + BM, rows, offs_n,
                                     qk_scale, BN, True, WS)
    else:
        acc, m_i, l_i = _attn_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, 0, L, rows, offs_n, qk_scale, BN,
                                     False, WS)
    o = acc / l_i[:, None]
    offs_d = tl.arange(0, D)
    tl.store(o_ptr + (bh * L + rows)[:, None] * D + offs_d[None, :], o.to(tl.float16))


def _dtype(name):
    if name == "float16":
        return np.float16
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    return {"bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn}[name]


def _run(rng, M, N, K, BM, BN, BK, dt="float16", num_warps=4, num_stages=3, ws=True):
    """C = A B with K steps of BK; K = 0: a loop of no iterations (the
    descriptors still describe one step)."""
    t = _dtype(dt)
    KD = K or BK
    a = rng.standard_normal((M, KD)).astype(t)
    b = rng.standard_normal((KD, N)).astype(t)
    c = poisoned((M, N), np.float32)
    ad = TensorDescriptor(a, [M, KD], [KD, 1], [BM, BK])
    bd = TensorDescriptor(b, [KD, N], [N, 1], [BK, BN])
    launch(ws_matmul, (triton.cdiv(M, BM), triton.cdiv(N, BN)), ad, bd, c, M, N, K, BM=BM, BN=BN, BK=BK, WS=ws,
           num_warps=num_warps, num_stages=num_stages)
    if K == 0:
        assert np.array_equal(c, np.zeros((M, N), np.float32))
    else:
        assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5


def _run_attention(rng, heads, L, D, BM, BN, causal, num_warps, num_stages=3, ws=True):
    q, k, v = (rng.standard_normal((heads * L, D)).astype(np.float16) for _ in range(3))
    o = poisoned((heads * L, D), np.float16)
    qd = TensorDescriptor(q, [heads * L, D], [D, 1], [BM, D])
    kd, vd = (TensorDescriptor(x, [heads * L, D], [D, 1], [BN, D]) for x in (k, v))
    scale = 1.0 / np.sqrt(D)
    launch(ws_attention, (L // BM, heads), qd, kd, vd, o, L, scale * 1.4426950408889634, D=D, BM=BM, BN=BN,
           CAUSAL=causal, WS=ws, num_warps=num_warps, num_stages=num_stages)
    ref = np.empty((heads * L, D))
    for h in range(heads):
        r = slice(h * L, (h + 1) * L)
        s = q[r].astype(np.float64) @ k[r].astype(np.float64).T * scale
        if causal:
            s = np.where(np.tril(np.ones((L, L), bool)), s, -np.inf)
        p = np.exp(s - s.max(1, keepdims=True))
        ref[r] = (p / p.sum(1, keepdims=True)) @ v[r].astype(np.float64)
    # P and O are rounded to fp16
    assert rel_err(o, ref) < 3e-3


# one key block (fewer than the stages), 4 and 12 (the ring wraps); two
# consumer warpgroups and one; causal: the masked last block runs unsplit
@pytest.mark.parametrize("L", [64, 256, 768])
@pytest.mark.parametrize("warps", [4, 8])
def test_ws_attention(rng, L, warps):
    BM = 64 if warps == 4 or L == 64 else 128
    _run_attention(rng, 2, L, 64, BM, 64, False, warps)


@pytest.mark.parametrize("stages", [2, 4])
def test_ws_attention_stages(rng, stages):
    _run_attention(rng, 1, 384, 64, 128, 64, False, 8, num_stages=stages)


def test_ws_attention_causal(rng):
    _run_attention(rng, 2, 512, 64, 128, 64, True, 8)


def test_ws_attention_d128(rng):
    _run_attention(rng, 1, 256, 128, 128, 64, False, 8)


# K steps of 64: 1 (fewer than the stages), 3 (as many), 9 (the ring wraps
# twice or more), and a last step that overhangs K
@pytest.mark.parametrize("K", [64, 192, 576, 200])
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_ws_matmul_stages(rng, K, stages):
    _run(rng, 128, 128, K, 128, 128, 64, num_stages=stages)


def test_ws_matmul_no_iterations(rng):
    _run(rng, 64, 64, 0, 64, 64, 64)


@pytest.mark.parametrize("M,N,K", [(200, 136, 328), (64, 256, 128)])
def test_ws_matmul_eight_warps(rng, M, N, K):
    # two consumer warpgroups (setmaxnreg 232 / 40), edges of M and N
    _run(rng, M, N, K, 128, 128, 64, num_warps=8, num_stages=3)


@pytest.mark.parametrize("dt", ["bfloat16", "float8_e4m3fn"])
def test_ws_matmul_dtypes(rng, dt):
    BK = 128 if dt.startswith("float8") else 64
    _run(rng, 128, 64, 4 * BK + 32, 64, 64, BK, dt=dt, num_warps=4, num_stages=3)


def _run_persistent(rng, M, N, K, BM, BN, BK, programs, tma_store=True, num_warps=4, num_stages=3):
    """C = A B (+ 1 through the pointer store) by `programs` programs
    walking the tiles; K = 0: inner loops of no iterations."""
    KD = K or BK
    a = rng.standard_normal((M, KD)).astype(np.float16)
    b = rng.standard_normal((KD, N)).astype(np.float16)
    c = poisoned((M, N), np.float32)
    ad = TensorDescriptor(a, [M, KD], [KD, 1], [BM, BK])
    bd = TensorDescriptor(b, [KD, N], [N, 1], [BK, BN])
    cd = TensorDescriptor(c, [M, N], [N, 1], [BM, BN])
    launch(ws_persistent, (programs,), ad, bd, cd, c, M, N, K, BM=BM, BN=BN, BK=BK, NP=programs,
           TMA_STORE=tma_store, num_warps=num_warps, num_stages=num_stages)
    ref = a.astype(np.float64) @ b.astype(np.float64) if K else np.zeros((M, N))
    if not tma_store:
        ref = ref + 1.0
    assert rel_err(c, ref) < 1e-5


# programs with several tiles each (the ring's position carries over from
# tile to tile), with one, or with none; K steps of 1, 3 and 9 and an
# overhanging last one
@pytest.mark.parametrize("K", [64, 192, 576, 136])
@pytest.mark.parametrize("programs", [1, 3, 20])
def test_ws_persistent(rng, K, programs):
    _run_persistent(rng, 256, 192, K, 64, 64, 64, programs)


def test_ws_persistent_no_iterations(rng):
    _run_persistent(rng, 128, 128, 0, 64, 64, 64, 3)


@pytest.mark.parametrize("stages", [2, 4])
def test_ws_persistent_stages(rng, stages):
    _run_persistent(rng, 192, 128, 320, 64, 64, 64, 2, num_stages=stages)


@pytest.mark.parametrize("M,N,K", [(200, 136, 328), (256, 128, 512)])
def test_ws_persistent_eight_warps(rng, M, N, K):
    # two consumer warpgroups; M and N edges clipped by the TMA store
    _run_persistent(rng, M, N, K, 128, 64, 64, 3, num_warps=8)


def test_ws_persistent_pointer_store(rng):
    # a masked pointer store in the epilogue, its offsets computed behind the split
    _run_persistent(rng, 200, 136, 328, 64, 64, 64, 4, tma_store=False)


def test_ws_pointer_loads_fall_back(rng):
    # pointer loads are not copied by TMA: the hint changes nothing
    K = 256
    a = rng.standard_normal((64, K)).astype(np.float16)
    b = rng.standard_normal((K, 64)).astype(np.float16)
    c = poisoned((64, 64), np.float32)
    launch(ws_pointer_matmul, (1,), a, b, c, K, BM=64, BN=64, BK=64, num_stages=3)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-5
    sig = "*fp16:16, *fp16:16, *fp32:16, i32:16, 64, 64, 64"
    k = ws_pointer_matmul.compile(sig, num_warps=4, num_stages=3, arch="sm_90a")
    assert ".reqntid 128," in k.ptx and "setmaxnreg" not in k.ptx and "mbarrier.arrive.shared" not in k.ptx


SIG = "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp32:16, i32, i32, i32:16, 128, 128, 64, {ws}"


def _assemble(ptx):
    """ptxas -arch=sm_90a: its messages (None without ptxas); it must accept the PTX."""
    ptxas = _ptxas()
    if not ptxas:
        return None
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, "-arch=sm_90a", "-v", src, "-o", out], capture_output=True, text=True)
        assert r.returncode == 0, f"ptxas rejected the PTX:\n{r.stderr[:3000]}"
        return r.stdout + r.stderr


@pytest.mark.parametrize("warps", [4, 8])
def test_ws_ptx(warps):
    k = ws_matmul.compile(SIG.format(ws=1), num_warps=warps, num_stages=4, arch="sm_90a")
    ptx = k.ptx
    assert f".reqntid {32 * (warps + 4)}, 1, 1" in ptx
    assert k.num_warps == warps + 4
    # the split, the producer's TMA copies and the consumers' releases
    assert f"bar.sync 1, {32 * warps};" in ptx
    assert ptx.count("mbarrier.arrive.shared::cta.b64 _,") == 1
    assert "mbarrier.arrive.expect_tx" in ptx and "cp.async.bulk.tensor.2d" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    if warps == 8:
        assert ".maxnreg 168" in ptx
        assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    else:
        assert "setmaxnreg" not in ptx and ".maxnreg" not in ptx
    # the TMA copies are issued by the producer alone: after the split
    split = ptx.index("  ret;\n$L")  # the producer's end; the consumers' label follows
    assert "cp.async.bulk.tensor" not in ptx[:ptx.index("@%p", ptx.index("bar.sync 0;"))]
    assert ptx.index("cp.async.bulk.tensor") < split
    msgs = _assemble(ptx)
    if msgs is not None:
        assert "C7508" not in msgs and "setmaxnreg" not in msgs.lower().replace("setmaxnreg.", ""), msgs
        assert "spill" not in msgs or " 0 bytes spill stores, 0 bytes spill loads" in msgs, msgs


ASIG = ("tensordesc<fp16[{bm}, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp16:16, i32:16, fp32, "
        "64, {bm}, 64, {causal}, True")


@pytest.mark.parametrize("warps", [4, 8])
def test_ws_attention_ptx(warps):
    # attention's key loop: the producer loads K and V; with two consumer
    # warpgroups they take turns at the tensor cores (two more mbarriers)
    bm = 128 if warps == 8 else 64
    ptx = ws_attention.compile(ASIG.format(bm=bm, causal=False), num_warps=warps, num_stages=3, arch="sm_90a").ptx
    assert f".reqntid {32 * (warps + 4)}, 1, 1" in ptx
    split = ptx.index("  ret;\n$L")
    producer = ptx[:split]
    assert producer.count("cp.async.bulk.tensor.2d") >= 2 and "wgmma.mma_async" not in producer[producer.rindex("bar.sync 0;"):]
    consumers = ptx[split:]
    # the consumers copy their Q tile alone (one box: 64 fp16 columns), on an mbarrier of its own
    assert consumers.count("cp.async.bulk.tensor.2d.shared") == 1
    assert ptx.count("mbarrier.init.shared") == (9 if warps == 8 else 7)
    # the key loop is rotated: Q K^T of a block, then P V of the one before,
    # and the softmax runs while P V does (waiting for all groups but one)
    assert consumers.count("wgmma.wait_group.sync.aligned 1;") == 1
    if warps == 8:
        assert "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
        # arrivals: the first turn; a turn passed by the prologue, the loop and
        # the epilogue (the last P V); a stage freed by the loop and the epilogue
        assert consumers.count("mbarrier.arrive.shared::cta.b64 _,") == 6
    msgs = _assemble(ptx)
    if msgs is not None:
        assert "C7508" not in msgs
        assert " 0 bytes spill stores, 0 bytes spill loads" in msgs, msgs


def test_ws_attention_causal_ptx():
    # the masked diagonal block's loop after the split runs unsplit, its
    # barriers counting the consumers
    ptx = ws_attention.compile(ASIG.format(bm=128, causal=True), num_warps=8, num_stages=3, arch="sm_90a").ptx
    assert ".reqntid 384, 1, 1" in ptx and "bar.sync 1, 256;" in ptx
    assert ptx.count("warp_specialize") == 0 and ptx.count("setmaxnreg.dec") == 1


PSIG = ("tensordesc<fp16[128, 64]>, tensordesc<fp16[64, {bn}]>, tensordesc<fp32[128, {bn}]>, *fp32:16, i32, i32, "
        "i32:16, 128, {bn}, 64, 132, {tma}")


@pytest.mark.parametrize("tma", [1, 0])
def test_ws_persistent_ptx(tma):
    # the producer walks the tiles too: its loop over them holds its K loop
    k = ws_persistent.compile(PSIG.format(tma=tma, bn=128), num_warps=8, num_stages=3, arch="sm_90a")
    ptx = k.ptx
    assert ".reqntid 384, 1, 1" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    split = ptx.index("  ret;\n$L")
    producer = ptx[ptx.index("setmaxnreg.dec"):split]
    assert producer.count("bra.uni") >= 2 and "cp.async.bulk.tensor.2d" in producer
    assert "wgmma" not in producer and "st.global" not in producer
    # the consumers free each stage in the loop and each tile's last after it
    assert ptx.count("mbarrier.arrive.shared::cta.b64 _,") == 2
    assert ("cp.async.bulk.tensor.2d.global.shared::cta" in ptx) == bool(tma)
    msgs = _assemble(ptx)
    if msgs is not None:
        assert "C7508" not in msgs
        assert " 0 bytes spill stores, 0 bytes spill loads" in msgs, msgs


def test_ws_persistent_smem():
    # the ring stays live through the epilogue: beside a 64 KiB tile (128 x
    # 256 fp16) there is room for 3 stages of 48 KiB, not 4; beside a 128
    # KiB one (fp32) for 2; with 96 KiB stages (BK = 128) beside it, for
    # none, and the loop is not split
    sig = PSIG.format(tma=1, bn=256)
    ptx = ws_persistent.compile(sig.replace("fp32[128, 256]", "fp16[128, 256]"), num_warps=8, num_stages=4,
                                arch="sm_90a").ptx
    assert ".reqntid 384," in ptx and ptx.count("mbarrier.init.shared") == 6
    ptx = ws_persistent.compile(sig, num_warps=8, num_stages=4, arch="sm_90a").ptx
    assert ".reqntid 384," in ptx and ptx.count("mbarrier.init.shared") == 4
    assert int(re.search(r"(\d+) bytes of dynamic shared memory", ptx).group(1)) <= 227 * 1024
    wide = sig.replace("tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 256]>",
                       "tensordesc<fp16[128, 128]>, tensordesc<fp16[128, 256]>").replace("256, 64, 132", "256, 128, 132")
    ptx = ws_persistent.compile(wide, num_warps=8, num_stages=4, arch="sm_90a").ptx
    assert ".reqntid 256," in ptx and "bar.sync 1," not in ptx


def test_ws_persistent_not_two_loops():
    # a tile loop holding two K loops is not split
    sig = "tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, 64, 64, 64"
    ptx = ws_two_loops.compile(sig, num_warps=4, num_stages=3, arch="sm_90a").ptx
    assert ".reqntid 128," in ptx and "bar.sync 1," not in ptx


def test_ws_off_is_unchanged():
    on = ws_matmul.compile(SIG.format(ws=0), num_warps=4, num_stages=4, arch="sm_90a").ptx
    assert ".reqntid 128," in on and "mbarrier.arrive.shared" not in on and "bar.sync 1," not in on


def test_ws_not_on_sm90():
    # plain sm_90 has no setmaxnreg and no wgmma: the hint is a no-op
    k = ws_matmul.compile(SIG.format(ws=1), num_warps=4, num_stages=3, arch="sm_90")
    assert ".reqntid 128," in k.ptx and "bar.sync 1," not in k.ptx


def test_ws_not_with_calls(rng):
    # a called function's barriers would count the producer's warps too: no split
    sig = "tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, 64, 64, 64"
    ptx = ws_calls.compile(sig, num_warps=4, num_stages=3, arch="sm_90a").ptx
    assert ".reqntid 128," in ptx and ".func" in ptx and "bar.sync 1," not in ptx
    K = 192
    a = rng.standard_normal((64, K)).astype(np.float16)
    b = rng.standard_normal((K, 64)).astype(np.float16)
    c = poisoned((64, 64), np.float32)
    launch(ws_calls, (1,), TensorDescriptor(a, [64, K], [K, 1], [64, 64]), TensorDescriptor(b, [K, 64], [64, 1], [64, 64]),
           c, K, BM=64, BN=64, BK=64)
    assert rel_err(c, 2.0 * (a.astype(np.float64) @ b.astype(np.float64))) < 1e-5
