"""tl.dot on every operand dtype, operand order and masked edge.

Each case multiplies random matrices whose sizes are not multiples of the
block, with A and B in row- or column-major order, over several block
shapes, warp counts and pipeline depths, and compares with a float64
reference (integers exactly).  On the interpreter this checks the
semantics; under NEREID_TEST_DEVICE=cuda every launch also runs on the GPU
(tensor cores through mma.sync) and is compared with the interpreter."""
import math

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
def dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               IS_INT: tl.constexpr, PREC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if IS_INT:
        acc = tl.zeros((BM, BN), dtype=tl.int32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * s_am + kk[None, :] * s_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptr + kk[:, None] * s_bk + rn[None, :] * s_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _dtype(name):
    if name in ("f16",):
        return np.float16
    if name in ("f32", "tf32", "ieee"):
        return np.float32
    if name == "i8":
        return np.int8
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    return {"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[name]


def _operand(rng, shape, name, col_major):
    dt = _dtype(name)
    if name == "i8":
        x = rng.integers(-128, 128, shape).astype(np.int8)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        if name.startswith("f8"):
            x *= 4  # use the exponent range, not only values near 1
        x = x.astype(dt)
    if col_major:
        x = np.asfortranarray(x)
    return x


def _tf32(x):
    """fp32 rounded to tf32 (10 mantissa bits, to nearest, ties away), as cvt.rna.tf32.f32 does."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x1000) & 0xFFFFE000
    return u.astype(np.uint32).view(np.float32)


def run_dot(rng, name, M, N, K, a_col, b_col, BM, BN, BK, warps, stages):
    a = _operand(rng, (M, K), name, a_col)
    b = _operand(rng, (K, N), name, b_col)
    is_int = name == "i8"
    c = poisoned((M, N), np.int32 if is_int else np.float32)
    prec = "ieee" if name == "ieee" else "tf32"
    sa = [s // a.itemsize for s in a.strides]
    sb = [s // b.itemsize for s in b.strides]
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    dot_kernel[grid](a, b, c, M, N, K, sa[0], sa[1], sb[0], sb[1], N, 1,
                     BM=BM, BN=BN, BK=BK, IS_INT=is_int, PREC=prec, num_warps=warps, num_stages=stages)
    if is_int:
        ref = a.astype(np.int64) @ b.astype(np.int64)
        assert np.array_equal(c.astype(np.int64), ref), "int8 dot differs from the exact product"
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if name == "tf32":
        a64, b64 = _tf32(a.astype(np.float32)).astype(np.float64), _tf32(b.astype(np.float32)).astype(np.float64)
    ref = a64 @ b64
    # The operands are exact in the reference (tf32 rounded the same way), so
    # only the fp32 accumulation differs: its error grows with K.  Hopper's fp8
    # tensor cores (wgmma) add their products with about 14 bits, as they do for
    # cuBLAS and Triton: fp8 dots are held to 1e-3.
    tol = 1e-3 if name.startswith("f8") else 2e-6 * max(1.0, np.sqrt(K) / 4)
    assert rel_err(c, ref) < tol


DTYPES = ["f16", "bf16", "tf32", "ieee", "i8", "f8e4m3", "f8e5m2"]


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("a_col,b_col", [(False, False), (False, True), (True, False), (True, True)])
def test_dot_dtypes_and_orders(rng, name, a_col, b_col):
    run_dot(rng, name, 37, 45, 53, a_col, b_col, 32, 32, 16, 4, 2)


BLOCKS = [(16, 16, 16, 1, 1), (32, 64, 32, 4, 3), (64, 32, 16, 2, 2), (128, 64, 32, 8, 3), (128, 128, 32, 16, 2),
          (64, 64, 64, 4, 4)]
SHAPES = [(1, 70, 33), (130, 9, 200), (64, 64, 64), (97, 131, 17)]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: "x".join(map(str, b[:3])) + f"_w{b[3]}_s{b[4]}")
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ["f16", "tf32"])
def test_dot_edges(rng, name, shape, block):
    run_dot(rng, name, *shape, False, True, *block)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: "x".join(map(str, b[:3])) + f"_w{b[3]}_s{b[4]}")
@pytest.mark.parametrize("name", ["bf16", "i8", "f8e4m3"])
def test_dot_blocks(rng, name, block):
    run_dot(rng, name, 97, 131, 70, True, False, *block)


@triton.jit
def dot_out_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, s_cm, s_cn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EPILOGUE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc)
    if EPILOGUE:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0).to(tl.float32)[None, :]
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def run_dot_out(rng, out, c_col, M, N, K, BM, BN, BK, warps, stages, epilogue=False):
    """f16 operands, the result cast to `out` and stored row- or column-major (on sm_90 16-bit results
    leave the accumulator by stmatrix, .trans for column-major; fp8 and f32 ones by st.shared)."""
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    bias = rng.standard_normal(N).astype(np.float16)
    dt = _dtype(out)
    c = np.full((N, M) if c_col else (M, N), np.nan, np.float32).astype(dt)
    cv = c.T if c_col else c
    s_cm, s_cn = (1, M) if c_col else (N, 1)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    dot_out_kernel[grid](a, b, bias, c, M, N, K, s_cm, s_cn, BM=BM, BN=BN, BK=BK, EPILOGUE=epilogue,
                         num_warps=warps, num_stages=stages)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        ref += bias.astype(np.float64)[None, :]
        ref = 0.5 * ref * (1.0 + np.vectorize(math.erf)(ref / math.sqrt(2.0)))
    tol = {"f16": 2e-3, "bf16": 1e-2, "f8e4m3": 8e-2, "f32": 1e-5}[out]
    assert rel_err(cv.astype(np.float64), ref) < tol


@pytest.mark.parametrize("out", ["f16", "bf16", "f8e4m3", "f32"])
@pytest.mark.parametrize("c_col", [False, True], ids=["c_row", "c_col"])
def test_dot_result_dtypes_and_orders(rng, out, c_col):
    run_dot_out(rng, out, c_col, 70, 90, 40, 64, 64, 32, 4, 2)


OUT_BLOCKS = [(16, 16, 16, 1, 1), (16, 64, 16, 2, 1), (32, 64, 32, 4, 3), (128, 64, 32, 8, 3), (64, 128, 32, 8, 2),
              (128, 128, 32, 4, 1)]


@pytest.mark.parametrize("block", OUT_BLOCKS, ids=lambda b: "x".join(map(str, b[:3])) + f"_w{b[3]}_s{b[4]}")
@pytest.mark.parametrize("out,c_col", [("f16", False), ("bf16", True)])
def test_dot_result_blocks(rng, out, c_col, block):
    run_dot_out(rng, out, c_col, 130, 97, 48, *block)


@pytest.mark.parametrize("block", [(64, 64, 32, 4, 2), (128, 64, 32, 8, 3)],
                         ids=lambda b: "x".join(map(str, b[:3])) + f"_w{b[3]}_s{b[4]}")
@pytest.mark.parametrize("out,c_col", [("f16", False), ("bf16", False), ("f16", True)])
def test_dot_bias_gelu_epilogue(rng, out, c_col, block):
    run_dot_out(rng, out, c_col, 100, 140, 64, *block, epilogue=True)
