"""Fused attention (examples/attention.py) against float64 numpy.

Forward: O and the base-2 log-sum-exp M, causal and not, head dims 64 and
128, fp16 and bf16, lengths that are and are not multiples of the blocks,
inputs with non-contiguous strides, and an fp8 e4m3 forward with V stored
D-major.  Backward: dQ, dK, dV against the analytic gradients of
softmax(Q K^T * scale + mask) V.  Small blocks are used beside the H100
configurations so that every part of the key and query loops (unmasked,
diagonal, trailing partial block) runs on these short sequences.

Outputs are poisoned (NaN) before each launch; the suite's GPU and simulator
modes rerun every launch there and compare with the interpreter."""
import math
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import attention as A
import sim_mode
from conftest import rel_err

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - installed by tests/requirements.txt
    ml_dtypes = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Relative-error bounds against float64.  fp16 inputs and output round once
# (2^-11) and P is rounded to fp16 before the P V dot; bf16 keeps 8 bits;
# fp8 e4m3 keeps 3 bits of P (the inputs are exact in the reference).
FWD_TOL = {"fp16": 2e-3, "bf16": 1.5e-2, "fp8": 6e-2}
BWD_TOL = {"fp16": 2e-3, "bf16": 1.5e-2}

# Block configurations small enough that L = 64..128 spans several blocks.
SMALL_FWD = (32, 16, 4, 2)
SMALL_BWD = (16, 32, 32, 16, 4, 2)
# fp8 dots take K >= 32 on the tensor cores: the P V dot's K is BLOCK_N.
SMALL_FP8 = (64, 32, 4, 2)


def np_dtype(name):
    if name == "fp16":
        return np.float16
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    return {"bf16": ml_dtypes.bfloat16, "fp8": ml_dtypes.float8_e4m3fn}[name]


def inputs(rng, shape, dtype, n=3, scale=1.0):
    return [(rng.standard_normal(shape) * scale).astype(np_dtype(dtype)) for _ in range(n)]


def ref_lse2(q, k, causal, sm_scale):
    """log2 of the row sums of exp(scores): what the forward stores as M."""
    s = np.asarray(q, np.float64) @ np.asarray(k, np.float64).swapaxes(-1, -2) * sm_scale
    if causal:
        L = q.shape[2]
        s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
    top = s.max(-1)
    return (top + np.log(np.exp(s - top[..., None]).sum(-1))) / math.log(2)


@pytest.fixture(autouse=True)
def nan_outputs(monkeypatch):
    """Every array the wrappers allocate starts as NaN, so an element no
    program stores fails the comparison."""
    import arrays

    real = arrays.empty

    def empty(like, shape, dtype=None):
        out = real(like, shape, dtype)
        if not arrays.is_torch(out):
            out.fill(np.nan)
        return out

    monkeypatch.setattr(arrays, "empty", empty)


# --- forward ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("L", [64, 100, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward(rng, dtype, D, L, causal):
    B, H = 1 + (L == 100), 2
    q, k, v = inputs(rng, (B, H, L, D), dtype)
    scale = 1.0 / math.sqrt(D)
    ref = A.reference(q, k, v, causal, scale)
    lse = ref_lse2(q, k, causal, scale)
    for config in (SMALL_FWD, None):
        o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=config)
        assert o.dtype == q.dtype and o.shape == q.shape and m.dtype == np.float32 and m.shape == (B, H, L)
        assert rel_err(o, ref) < FWD_TOL[dtype], config
        assert np.abs(m - lse).max() < 1e-2 * max(1.0, np.abs(lse).max()), config


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_descriptors(rng, dtype, D, causal):
    # attn_fwd_desc_kernel: q, k, v and O through host tensor descriptors of
    # their (B * H * L, D) rows (TMA on sm_90a); blocks never cross heads.
    B, H, L = 2, 2, 64
    q, k, v = (np.ascontiguousarray(x) for x in inputs(rng, (B, H, L, D), dtype))
    scale = 1.0 / math.sqrt(D)
    ref = A.reference(q, k, v, causal, scale)
    lse = ref_lse2(q, k, causal, scale)
    # (64, 32, 8, 3) warp-specialized: two consumer warpgroups taking turns on sm_90a
    for config, ws in (((32, 16, 4, 2), False), ((64, 32, 4, 3), False), ((64, 32, 4, 3), True),
                       ((64, 32, 8, 3), True)):
        o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=config, descriptors=True,
                                   warp_specialize=ws)
        assert rel_err(o, ref) < FWD_TOL[dtype], (config, ws)
        assert np.abs(m - lse).max() < 1e-2 * max(1.0, np.abs(lse).max()), (config, ws)
    with pytest.raises(ValueError, match="multiple of both blocks"):
        A.attention_forward(q[:, :, :48], k[:, :, :48], v[:, :, :48], config=(32, 16, 4, 2), descriptors=True)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D", [64, 128])
def test_forward_persistent(rng, dtype, D):
    # attn_fwd_persistent_kernel: programs walk the (query block, head) tiles,
    # some programs one tile more than others.  On sm_90a the tile loop of
    # the 3-stage configurations is warp-specialized: the producer runs ahead
    # into the next tile while the consumers store this one; at 128 rows the
    # two consumer warpgroups take turns at the tensor cores across tiles.
    B, H, L = 2, 3, 128
    q, k, v = (np.ascontiguousarray(x) for x in inputs(rng, (B, H, L, D), dtype))
    scale = 1.0 / math.sqrt(D)
    ref = A.reference(q, k, v, False, scale)
    lse = ref_lse2(q, k, False, scale)
    for config, programs in (((32, 16, 4, 2), 5), ((64, 32, 8, 3), 5), ((128, 32, 8, 3), 4)):
        o, m = A.attention_forward(q, k, v, sm_scale=scale, config=config, descriptors=True, persistent=True,
                                   programs=programs)
        assert rel_err(o, ref) < FWD_TOL[dtype], (config, programs)
        assert np.abs(m - lse).max() < 1e-2 * max(1.0, np.abs(lse).max()), (config, programs)
    with pytest.raises(ValueError, match="no causal mask"):
        A.attention_forward(q, k, v, causal=True, config=(32, 16, 4, 2), descriptors=True, persistent=True)
    with pytest.raises(ValueError, match="options of the descriptor forward"):
        A.attention_forward(q, k, v, config=(32, 16, 4, 2), persistent=True)
    with pytest.raises(ValueError, match="options of the descriptor forward"):
        A.attention_forward(q, k, v, config=(32, 16, 4, 2), descriptors=True, programs=3)


PERSISTENT_SIG = ("tensordesc<fp16[128, {d}]>, tensordesc<fp16[128, {d}]>, tensordesc<fp16[128, {d}]>, "
                  "tensordesc<fp16[128, {d}]>, *fp32:16, i32:16, i32, fp32, {d}, 128, 128, 132")


@pytest.mark.parametrize("d", [64, 128])
def test_forward_persistent_ptx(d):
    # The H100 configuration of the persistent kernel on sm_90a: split (a
    # producer warpgroup beside the two), a ring of 3 stages beside Q (at
    # d128 O's store tile reuses Q's bytes: 3 x 64 KiB + 32 KiB), Q copied by
    # TMA in the tile loop, and the first turn given once, before that loop.
    k = A.attn_fwd_persistent_kernel.compile(PERSISTENT_SIG.format(d=d), num_warps=8, num_stages=3, arch="sm_90a")
    ptx = k.ptx
    assert ".reqntid 384," in ptx and "setmaxnreg.inc" in ptx
    smem = int(re.search(r"(\d+) bytes of dynamic shared memory", ptx).group(1))
    assert 3 * 2 * 128 * d * 2 + 128 * d * 2 <= smem <= 227 * 1024
    # mbarriers: 3 full, 3 empty, 2 turns and Q's
    assert ptx.count("mbarrier.init.shared") == 9
    loops = re.findall(r"\n(\$L\d+):\n(.*?)\n  bra\.uni \1;", ptx[ptx.index(".entry"):], re.S)
    # the tile loop holds the rotated key loop: a prologue's Q K^T, the loop's
    # Q K^T and P V (the softmax waiting for all groups but P V's), and an
    # epilogue's P V
    tile = [b for _, b in loops if b.count("wgmma.commit_group") == 4 and "cp.async.bulk.tensor" in b
            and b.count("wgmma.wait_group.sync.aligned 1;") == 1 and "setmaxnreg" not in b]
    assert tile, "no consumer tile loop with a TMA copy"


# Pipelined configurations (3 and 4 stages) over many key blocks: on sm_90a
# the P V wgmma stays in flight into the next iteration (gpu-pipeline's
# chain_async_dot), with L leaving a masked last block.
@pytest.mark.parametrize("config", [(64, 32, 4, 3), (64, 16, 4, 4)], ids=["64x32s3", "64x16s4"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_many_blocks(rng, config, causal):
    D, L = 64, 200
    q, k, v = inputs(rng, (1, 2, L, D), "fp16")
    scale = 1.0 / math.sqrt(D)
    o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=config)
    assert rel_err(o, A.reference(q, k, v, causal, scale)) < FWD_TOL["fp16"]
    lse = ref_lse2(q, k, causal, scale)
    assert np.abs(m - lse).max() < 1e-2 * max(1.0, np.abs(lse).max())


FWD_SIG = ("*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, i32, i32:16, fp32, "
           + "i32:16, i32:16, i32:16, 1, " * 4 + "{d}, {bm}, {bn}, {causal}")


@pytest.mark.parametrize("block", [(64, 128, 64, 4), (128, 128, 128, 8)], ids=["d64", "d128"])
@pytest.mark.parametrize("causal", [0, 1], ids=["full", "causal"])
def test_forward_pv_stays_in_flight(block, causal):
    # The sm_90a PTX of every key loop: the Q K^T group is waited for, the
    # P V group is committed and the loop branches back with no wait between
    # (the accumulator is waited for after the next Q K^T); ptxas, where
    # present, assembles it without serializing the wgmma pipeline.
    d, bm, bn, warps = block
    k = A.attn_fwd_kernel.compile(FWD_SIG.format(d=d, bm=bm, bn=bn, causal=causal), num_warps=warps, num_stages=3,
                                  arch="sm_90a")
    body = k.ptx[k.ptx.index(".entry"):]
    loops = re.findall(r"\n(\$L\d+):\n(.*?)\n  bra\.uni \1;", body, re.S)
    key_loops = [b for _, b in loops if b.count("wgmma.commit_group") == 2]
    assert len(key_loops) == 2, [b.count("wgmma.commit_group") for _, b in loops]
    for b in key_loops:
        qk, pv = [m.start() for m in re.finditer(r"wgmma\.commit_group", b)]
        assert "wgmma.wait_group.sync.aligned 0;" in b[qk:pv]
        assert "wgmma.wait_group" not in b[pv:]
    ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas")
                                      else None)
    if ptxas:
        with tempfile.TemporaryDirectory() as t:
            src = os.path.join(t, "k.ptx")
            with open(src, "w") as f:
                f.write(k.ptx)
            r = subprocess.run([ptxas, "-arch=sm_90a", "-v", src, "-o", os.path.join(t, "k.cubin")],
                               capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]
        assert "serialized" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_forward_strided_inputs(rng):
    # q is a (B, L, H, D) array seen as (B, H, L, D); k is every other head
    # of a wider array; v is D-major; O is written into a transposed view.
    B, H, L, D = 2, 2, 100, 64
    q = rng.standard_normal((B, L, H, D)).astype(np.float16).transpose(0, 2, 1, 3)
    k = rng.standard_normal((B, 2 * H, L, D)).astype(np.float16)[:, ::2]
    v = A.fp8_value_layout(rng.standard_normal((B, H, L, D)).astype(np.float16))
    assert not q.flags.c_contiguous and not k.flags.c_contiguous and not v.flags.c_contiguous
    scale = 0.3
    for causal in (False, True):
        o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
        assert rel_err(o, A.reference(q, k, v, causal, scale)) < FWD_TOL["fp16"]


def test_forward_large_scores(rng):
    # Scores of hundreds: exp without the running maximum would overflow.
    B, H, L, D = 1, 2, 128, 64
    q, k, v = inputs(rng, (B, H, L, D), "fp16", scale=4.0)
    scale = 1.0
    for causal in (False, True):
        o, _ = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
        assert rel_err(o, A.reference(q, k, v, causal, scale)) < FWD_TOL["fp16"]


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("L", [64, 100])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_forward_fp8(rng, D, L, causal):
    B, H = 1, 2
    q, k, v = inputs(rng, (B, H, L, D), "fp8")
    v = A.fp8_value_layout(v)
    scale = 1.0 / math.sqrt(D)
    ref = A.reference(q, k, v, causal, scale)
    # P is rounded to fp8 before the second dot, so where the GPU's exp2 and the interpreter's
    # differ in the last bits, an element of P may round to the other fp8 neighbour: the two
    # are compared to 2e-2 (each is held to the float64 reference below)
    forward = sim_mode.tolerance(2e-2)(A.attention_forward)
    for config in (SMALL_FP8, None):
        o, m = forward(q, k, v, causal=causal, sm_scale=scale, config=config)
        assert o.dtype == np.float16
        assert rel_err(o, ref) < FWD_TOL["fp8"], config
        assert np.abs(m - ref_lse2(q, k, causal, scale)).max() < 1e-2 * max(1.0, np.abs(m).max())


# --- backward ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("L", [64, 100, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_backward(rng, dtype, D, L, causal):
    B, H = 1 + (L == 100), 2
    q, k, v, do = inputs(rng, (B, H, L, D), dtype, n=4)
    scale = 1.0 / math.sqrt(D)
    _, ref_dq, ref_dk, ref_dv = A.reference(q, k, v, causal, scale, do)
    configs = (SMALL_BWD, None) if L != 64 else (SMALL_BWD,)
    for config in configs:
        o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
        dq, dk, dv = A.attention_backward(q, k, v, o, m, do, causal=causal, sm_scale=scale, config=config)
        for name, got, ref in (("dq", dq, ref_dq), ("dk", dk, ref_dk), ("dv", dv, ref_dv)):
            assert got.dtype == q.dtype and got.shape == q.shape
            assert rel_err(got, ref) < BWD_TOL[dtype], (name, config)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_backward_descriptors(rng, dtype, D, causal):
    # through host tensor descriptors (attn_bwd_dkdv_desc_kernel and
    # attn_bwd_dq_desc_kernel), with several blocks per program and the
    # causal diagonal split
    B, H, L = 1, 2, 128
    q, k, v, do = inputs(rng, (B, H, L, D), dtype, n=4)
    scale = 1.0 / math.sqrt(D)
    _, ref_dq, ref_dk, ref_dv = A.reference(q, k, v, causal, scale, do)
    o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
    dq, dk, dv = A.attention_backward(q, k, v, o, m, do, causal=causal, sm_scale=scale,
                                      config=(16, 32, 64, 16, 4, 2), descriptors=True)
    for name, got, ref in (("dq", dq, ref_dq), ("dk", dk, ref_dk), ("dv", dv, ref_dv)):
        assert got.dtype == q.dtype and got.shape == q.shape
        assert rel_err(got, ref) < BWD_TOL[dtype], name


@pytest.mark.parametrize("stages", [3, 4])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_backward_descriptors_stages(rng, stages, causal):
    # deeper rings of TMA stages (the benchmark's d64 configurations run 2 to
    # 4), with more key and query blocks per program than stages
    B, H, L, D = 1, 2, 256, 64
    q, k, v, do = inputs(rng, (B, H, L, D), "fp16", n=4)
    scale = 1.0 / math.sqrt(D)
    _, ref_dq, ref_dk, ref_dv = A.reference(q, k, v, causal, scale, do)
    o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
    dq, dk, dv = A.attention_backward(q, k, v, o, m, do, causal=causal, sm_scale=scale,
                                      config=(16, 32, 32, 16, 4, stages), descriptors=True)
    for name, got, ref in (("dq", dq, ref_dq), ("dk", dk, ref_dk), ("dv", dv, ref_dv)):
        assert rel_err(got, ref) < BWD_TOL["fp16"], name


def test_backward_descriptors_errors(rng):
    q, k, v, do = inputs(rng, (1, 2, 96, 64), "fp16", n=4)
    o, m = A.attention_forward(q, k, v, config=SMALL_FWD)
    with pytest.raises(ValueError, match="L a multiple of BLOCK_N1 and BLOCK_M2"):
        A.attention_backward(q, k, v, o, m, do, config=(16, 32, 64, 16, 4, 2), descriptors=True)
    with pytest.raises(ValueError, match="contiguous"):
        A.attention_backward(q, k, v, o, m, do.swapaxes(-1, -2).copy().swapaxes(-1, -2),
                             config=(16, 32, 32, 16, 4, 2), descriptors=True)


DESC_SIG = "tensordesc<fp16[64, 64]>, " * 4 + "{outs}*fp32:16, *fp32:16, i32:16, fp32, fp32, 64, 64, 64, {causal}"


@pytest.mark.parametrize("causal", [0, 1], ids=["full", "causal"])
@pytest.mark.parametrize("kernel", ["dkdv", "dq"])
def test_backward_descriptors_ptx(kernel, causal):
    # The sm_90a PTX of the descriptor kernels (the H100 configuration at
    # d64): each loop copies its two tiles by TMA, each staged once for its
    # two dots (K for Q K^T and dS K; Q for K Q^T and dS^T Q, dO for P^T dO
    # and V dO^T: one dot reads it transposed), so nothing is stored to
    # shared memory in the loops; the accumulating dots stay in flight, the
    # others wait for their groups (dK/dV: S^T and dP^T; dQ: S and dP).
    outs = "tensordesc<fp16[64, 64]>, " * (2 if kernel == "dkdv" else 1)
    fn = A.attn_bwd_dkdv_desc_kernel if kernel == "dkdv" else A.attn_bwd_dq_desc_kernel
    k = fn.compile(DESC_SIG.format(outs=outs, causal=causal), num_warps=4, num_stages=2, arch="sm_90a")
    body = k.ptx[k.ptx.index(".entry"):]
    loops = re.findall(r"\n(\$L\d+):\n(.*?)\n  bra\.uni \1;", body, re.S)
    dots = 4 if kernel == "dkdv" else 3
    inner = [b for _, b in loops if b.count("wgmma.commit_group") == dots]
    assert len(inner) == 1 + causal, [b.count("wgmma.commit_group") for _, b in loops]
    for b in inner:
        assert b.count("cp.async.bulk.tensor.2d") == 2
        assert "st.shared" not in b
        assert b.count("wgmma.wait_group.sync.aligned 0;") == 2


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_backward_descriptors_ring(stages):
    # the causal kernel's two query loops each keep a ring of one mbarrier per
    # stage (beside K's and V's own copies); its bytes grow by one pair of
    # 64x64 fp16 tiles (Q and dO) per stage
    outs = "tensordesc<fp16[64, 64]>, " * 2
    k = A.attn_bwd_dkdv_desc_kernel.compile(DESC_SIG.format(outs=outs, causal=1), num_warps=4, num_stages=stages,
                                            arch="sm_90a")
    assert k.ptx.count("mbarrier.init.shared") == 2 * stages + 2
    smem = int(re.search(r"(\d+) bytes of dynamic shared memory", k.ptx).group(1))
    assert stages * 2 * 64 * 64 * 2 <= smem <= stages * 2 * 64 * 64 * 2 + 2 * 64 * 64 * 2 + 1024


BWD_SIG = ("*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, *fp16:16, *fp16:16, i32, i32:16, fp32, "
           "fp32, " + "i32:16, i32:16, i32:16, 1, " * 6 + "128, 64, 64, {causal}")


@pytest.mark.parametrize("causal", [0, 1], ids=["full", "causal"])
def test_backward_accumulators_in_flight(causal):
    # The sm_90a PTX of the dK/dV kernel's query loops (the H100
    # configuration at d128): dV += P^T dO and dK += dS^T Q are committed and
    # left in flight (dP^T's wait completes dV; the next iteration's first
    # dot completes dK), and the copies of the next stage come after that
    # first dot's wait, behind a barrier: they refill the stage dK read.
    k = A.attn_bwd_dkdv_kernel.compile(BWD_SIG.format(causal=causal), num_warps=4, num_stages=2, arch="sm_90a")
    body = k.ptx[k.ptx.index(".entry"):]
    loops = re.findall(r"\n(\$L\d+):\n(.*?)\n  bra\.uni \1;", body, re.S)
    query_loops = [b for _, b in loops if b.count("wgmma.commit_group") == 4]
    assert len(query_loops) == (3 if causal else 2), [b.count("wgmma.commit_group") for _, b in loops]
    for b in query_loops:
        marks = [(m.start(), m.group(0)) for m in re.finditer(
            r"wgmma\.commit_group|wgmma\.wait_group\.sync\.aligned \d+|cp\.async\.cg|bar\.sync", b)]
        seq = [t for _, t in marks]
        commits = [i for i, t in enumerate(seq) if t == "wgmma.commit_group"]
        waits = [i for i, t in enumerate(seq) if t.startswith("wgmma.wait_group")]
        # S^T waited for, dV not, dP^T waited for (with dV), dK not
        assert waits == [commits[0] + 1, commits[2] + 1], seq
        first_copy = seq.index("cp.async.cg")
        assert waits[0] < first_copy and "bar.sync" in seq[waits[0]:first_copy], seq


def test_backward_strided(rng):
    B, H, L, D = 1, 2, 100, 64
    q = rng.standard_normal((B, L, H, D)).astype(np.float16).transpose(0, 2, 1, 3)
    k = rng.standard_normal((B, 2 * H, L, D)).astype(np.float16)[:, 1::2]
    v = A.fp8_value_layout(rng.standard_normal((B, H, L, D)).astype(np.float16))
    do = rng.standard_normal((B, H, D, L)).astype(np.float16).swapaxes(-1, -2)
    scale = 0.2
    for causal in (False, True):
        _, ref_dq, ref_dk, ref_dv = A.reference(q, k, v, causal, scale, do)
        o, m = A.attention_forward(q, k, v, causal=causal, sm_scale=scale, config=SMALL_FWD)
        dq, dk, dv = A.attention_backward(q, k, v, o, m, do, causal=causal, sm_scale=scale, config=SMALL_BWD)
        for got, ref in ((dq, ref_dq), (dk, ref_dk), (dv, ref_dv)):
            assert rel_err(got, ref) < BWD_TOL["fp16"]


# --- the wrappers and the benchmark's copy -----------------------------------------------------------

def test_wrapper_errors():
    q = np.zeros((1, 2, 64, 64), np.float16)
    with pytest.raises(ValueError, match="one shape"):
        A.attention_forward(q, q[:, :1], q)
    with pytest.raises(ValueError, match="power of two"):
        A.attention_forward(q[..., :48], q[..., :48], q[..., :48])
    with pytest.raises(ValueError, match="multiple of BLOCK_N"):
        A.attention_forward(q, q, q, config=(16, 32, 4, 2))


def jit_sources(path):
    """The text of each @jit function of a file, by name."""
    text = open(path, encoding="utf-8").read()
    found = {}
    for m in re.finditer(r"^@triton\.jit\ndef (\w+)\(.*?(?=^\S)", text, re.S | re.M):
        found[m.group(1)] = m.group(0).rstrip()
    return found


def test_bench_kernels_match_the_example():
    # bench/kernels/attention.py runs the same kernels under Triton and Nereid.
    example = jit_sources(os.path.join(ROOT, "examples", "attention.py"))
    bench = jit_sources(os.path.join(ROOT, "bench", "kernels", "attention.py"))
    assert len(example) == 14 and example.keys() == bench.keys()
    for name in example:
        assert example[name] == bench[name], f"{name} differs between examples/ and bench/kernels/"
