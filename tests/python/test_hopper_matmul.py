"""Matmuls on Hopper's warpgroup tensor cores (wgmma, sm_90a).

Every launch goes through the normal launch path: on the interpreter it
checks the semantics against a float64 reference; under
NEREID_TEST_DEVICE=cuda on an H100 the same launch also runs on the GPU,
compiled for sm_90a (wgmma.mma_async from swizzled shared memory, cp.async
pipelines), and is compared with the interpreter (tests/python/gpu_mode.py).
The configurations are the ones wgmma takes: 4 warps or more, 64 rows per
warpgroup, every operand dtype, both storage orders of B, A loaded or
computed (then it stays in registers), f16 and i32 accumulators, masked
edges and 1 to 4 pipeline stages.

The PTX tests need no GPU: each kernel compiled for sm_90a must use wgmma
(and assemble with ptxas -arch=sm_90a where ptxas exists), the same kernel
for sm_90 must not.  On an H100 with the CUDA toolkit, the SASS of the
sm_90a kernels must show HGMMA (QGMMA for fp8)."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                  ACC_INT: tl.constexpr, OUT_F16: tl.constexpr):
    # the grouped ordering of Triton's matmul tutorial; wrapped rows and
    # columns past the edges keep the loads in bounds without masks
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    first_m = (pid // (GROUP_M * tiles_n)) * GROUP_M
    rows = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * tiles_n)) % rows
    pid_n = (pid % (GROUP_M * tiles_n)) // rows
    rm = (pid_m * BM + tl.arange(0, BM)) % M
    rn = (pid_n * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * s_am + rk[None, :] * s_ak
    b_ptrs = b_ptr + rk[:, None] * s_bk + rn[None, :] * s_bn
    if ACC_INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * s_ak
        b_ptrs += BK * s_bk
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    if OUT_F16:
        out = acc.to(tl.float16)
    else:
        out = acc
    tl.store(c_ptr + cm[:, None] * s_cm + cn[None, :], out, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def f16_acc_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * BN + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k in range(0, K, BK):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, out_dtype=tl.float16)
        a_ptrs += BK
        b_ptrs += BK * BN
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@triton.jit
def computed_a_kernel(x_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A is computed (attention's softmax-times-V shape): wgmma reads it from registers
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + rm[:, None] * K + k + rk[None, :])
        p = (x * 0.5 + 1.0).to(tl.float16)
        b = tl.load(b_ptr + (k + rk[:, None]) * BN + rn[None, :])
        acc = tl.dot(p, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def _np_dtype(name):
    if name == "f16":
        return np.float16
    if name == "tf32":
        return np.float32
    if name == "i8":
        return np.int8
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    return {"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[name]


def _tf32(x):
    """fp32 rounded to tf32 (to nearest, ties away), as the interpreter and the GPU round dot operands."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)


def _operand(rng, shape, name, col_major):
    if name == "i8":
        x = rng.integers(-128, 128, shape).astype(np.int8)
    else:
        x = (rng.standard_normal(shape) * (4 if name.startswith("f8") else 1)).astype(np.float32).astype(_np_dtype(name))
    return np.asfortranarray(x) if col_major else x


def run_matmul(rng, name, M, N, K, b_col, BM, BN, BK, warps, stages, out_f16=False):
    a = _operand(rng, (M, K), name, False)
    b = _operand(rng, (K, N), name, b_col)
    is_int = name == "i8"
    c = poisoned((M, N), np.int32 if is_int else np.float16 if out_f16 else np.float32)
    sa = [s // a.itemsize for s in a.strides]
    sb = [s // b.itemsize for s in b.strides]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    matmul_kernel[grid](a, b, c, M, N, K, sa[0], sa[1], sb[0], sb[1], N, BM=BM, BN=BN, BK=BK, GROUP_M=4,
                        ACC_INT=is_int, OUT_F16=out_f16, num_warps=warps, num_stages=stages)
    if is_int:
        assert np.array_equal(c.astype(np.int64), a.astype(np.int64) @ b.astype(np.int64))
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if name == "tf32":
        a64, b64 = _tf32(a).astype(np.float64), _tf32(b).astype(np.float64)
    ref = a64 @ b64
    tol = 2e-3 if out_f16 else 2e-6 * max(1.0, np.sqrt(K) / 4)
    assert rel_err(c, ref) < tol


def _bk(name, bk):
    return bk * 2 if name in ("f8e4m3", "f8e5m2", "i8") else bk // 2 if name == "tf32" else bk


# (dtype, B column-major, BM, BN, BK for 16-bit operands, warps, stages): 64 rows per warpgroup,
# warpgroups along M first; every dtype on the common tiles, the other warp arrangements on f16
CASES = [(name, b_col, 128, 128, 64, 4, stages)
         for name, b_col in [("f16", False), ("f16", True), ("bf16", False), ("tf32", True), ("f8e4m3", True),
                             ("f8e5m2", True), ("i8", True)]
         for stages in (1, 3)] + [
    ("f16", False, 64, 64, 32, 4, 2), ("f16", False, 128, 256, 64, 8, 3), ("bf16", True, 256, 128, 64, 8, 3),
    ("f16", False, 64, 128, 64, 8, 3), ("f16", True, 128, 64, 32, 16, 2), ("f8e4m3", True, 128, 256, 64, 8, 3),
]


# K a multiple of 16 (so that 16-byte copies go asynchronously) but not of BK: the last step is masked
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}_{'bcol' if c[1] else 'brow'}_{c[2]}x{c[3]}x{c[4]}"
                                                      f"_w{c[5]}_s{c[6]}")
def test_hopper_matmul(rng, case):
    name, b_col, bm, bn, bk, warps, stages = case
    run_matmul(rng, name, bm + 17, bn + 9, 2 * _bk(name, bk) + 32, b_col, bm, bn, _bk(name, bk), warps, stages)


# K of any size: element-wise (synchronous) copies at the edge
def test_hopper_matmul_odd_k(rng):
    run_matmul(rng, "f16", 70, 90, 77, False, 64, 64, 32, 4, 3)



@pytest.mark.parametrize("stages", [2, 4])
def test_hopper_matmul_f16_out(rng, stages):
    run_matmul(rng, "f16", 200, 140, 208, False, 128, 128, 64, 4, stages, out_f16=True)


def test_hopper_f16_accumulator(rng):
    K = 256
    a = rng.standard_normal((128, K)).astype(np.float16)
    b = (rng.standard_normal((K, 128)) * 0.25).astype(np.float16)
    c = poisoned((128, 128), np.float16)
    f16_acc_kernel[(1,)](a, b, c, K, BM=128, BN=128, BK=64, num_warps=4, num_stages=3)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 3e-3


def test_hopper_computed_a(rng):
    K = 96
    x = rng.standard_normal((64, K)).astype(np.float32)
    b = rng.standard_normal((K, 64)).astype(np.float16)
    c = poisoned((64, 64), np.float32)
    computed_a_kernel[(1,)](x, b, c, K, BM=64, BN=64, BK=32, num_warps=4, num_stages=1)
    p = (x * np.float32(0.5) + np.float32(1.0)).astype(np.float16)
    assert rel_err(c, p.astype(np.float64) @ b.astype(np.float64)) < 1e-5


# --- the PTX and the SASS -------------------------------------------------------------------------------------
SIG = {
    "f16": ("fp16", "fp32", "0"),
    "bf16": ("bf16", "fp32", "0"),
    "tf32": ("fp32", "fp32", "0"),
    "f8e4m3": ("fp8e4nv", "fp32", "0"),
    "i8": ("i8", "i32", "1"),
}


def _signature(name, b_col, bm, bn, bk):
    a, c, is_int = SIG[name]
    sbk, sbn = ("1", "i32:16") if b_col else ("i32:16", "1")
    return (f"*{a}:16, *{a}:16, *{c}:16, i32:16, i32:16, i32:16, i32:16, 1, {sbk}, {sbn}, i32:16, "
            f"{bm}, {bn}, {bk}, 4, {is_int}, 0")


def _ptxas():
    p = os.environ.get("PTXAS") or shutil.which("ptxas")
    if not p and os.path.exists("/usr/local/cuda/bin/ptxas"):
        p = "/usr/local/cuda/bin/ptxas"
    return p


def _cubin(ptx, arch):
    """ptxas -arch=arch of ptx into a cubin file's bytes (None without ptxas)."""
    ptxas = _ptxas()
    if not ptxas:
        return None
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas, f"-arch={arch}", src, "-o", out], capture_output=True, text=True)
        assert r.returncode == 0, f"ptxas -arch={arch} rejected the PTX:\n{r.stderr[:3000]}"
        with open(out, "rb") as f:
            return f.read()


@pytest.mark.parametrize("name,b_col,block", [("f16", False, (128, 256, 64, 8)), ("f16", True, (128, 128, 64, 4)),
                                              ("bf16", False, (128, 128, 64, 4)), ("tf32", True, (128, 128, 64, 4)),
                                              ("f8e4m3", True, (128, 256, 64, 8)), ("i8", True, (128, 128, 64, 4))])
def test_hopper_ptx(name, b_col, block):
    bm, bn, bk, warps = block
    sig = _signature(name, b_col, bm, bn, _bk(name, bk))
    k = matmul_kernel.compile(sig, num_warps=warps, num_stages=3, arch="sm_90a")
    assert ".target sm_90a" in k.ptx
    assert "wgmma.mma_async.sync.aligned.m64n" in k.ptx and "mma.sync" not in k.ptx
    assert "wgmma.fence.sync.aligned" in k.ptx and "wgmma.wait_group.sync.aligned 0" in k.ptx
    assert "fence.proxy.async.shared::cta" in k.ptx and "cp.async.cg.shared.global" in k.ptx
    _cubin(k.ptx, "sm_90a")
    off = matmul_kernel.compile(sig, num_warps=warps, num_stages=3, arch="sm_90")
    assert ".target sm_90\n" in off.ptx and "wgmma" not in off.ptx and "mma.sync" in off.ptx


def _on_hopper():
    if os.environ.get("NEREID_TEST_DEVICE") != "cuda":
        return False
    try:
        import torch
        return torch.cuda.is_available() and torch.cuda.get_device_capability(0) == (9, 0)
    except Exception:
        return False


@pytest.mark.skipif(not _on_hopper(), reason="needs an H100 (NEREID_TEST_DEVICE=cuda)")
@pytest.mark.parametrize("name,b_col,sass", [("f16", False, "HGMMA"), ("bf16", False, "HGMMA"),
                                             ("tf32", True, "HGMMA"), ("f8e4m3", True, "QGMMA"),
                                             ("i8", True, "IGMMA")])
def test_hopper_sass(name, b_col, sass):
    cuobjdump = shutil.which("cuobjdump") or ("/usr/local/cuda/bin/cuobjdump"
                                              if os.path.exists("/usr/local/cuda/bin/cuobjdump") else None)
    if not cuobjdump or not _ptxas():
        pytest.skip("needs ptxas and cuobjdump")
    sig = _signature(name, b_col, 128, 128, _bk(name, 64))
    k = matmul_kernel.compile(sig, num_warps=4, num_stages=3, arch="sm_90a")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(_cubin(k.ptx, "sm_90a"))
        out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True).stdout
    assert sass in out, f"no {sass} in the SASS of the sm_90a matmul"
