"""End-to-end kernels on the reference interpreter, compared with numpy in float64."""
import numpy as np
import pytest

import nereid as triton
from conftest import poisoned, rel_err

import kernels_e2e as K
import vector_add
import softmax
import layer_norm
import matmul

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - installed by tests/requirements.txt
    ml_dtypes = None


@pytest.mark.parametrize("n", [1, 17, 1024, 98435])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.float64])
def test_vector_add(rng, n, dtype):
    if np.issubdtype(dtype, np.floating):
        x = rng.standard_normal(n).astype(dtype)
        y = rng.standard_normal(n).astype(dtype)
    else:
        x = rng.integers(-2**30, 2**30, n).astype(dtype)
        y = rng.integers(-2**30, 2**30, n).astype(dtype)
    out = poisoned(n, dtype)
    vector_add.add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    if np.issubdtype(dtype, np.integer):
        assert np.array_equal(out, x + y)
    else:
        assert rel_err(out, x.astype(np.float64) + y) < (1e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("shape", [(37, 781), (5, 1), (3, 1024), (8, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_softmax(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    out = poisoned(shape, dtype)
    block = triton.next_power_of_2(shape[1])
    softmax.softmax_kernel[(shape[0],)](out, x, shape[1], shape[1], shape[0], shape[1], BLOCK_SIZE=block)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    assert rel_err(out, ref) < (2e-3 if dtype == np.float16 else 1e-5)


@pytest.mark.parametrize("M,N", [(64, 1000), (3, 4096), (7, 33)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm(rng, M, N, dtype):
    x = (rng.standard_normal((M, N)) * 2 + 0.5).astype(dtype)
    w = rng.random(N).astype(dtype)
    b = rng.random(N).astype(dtype)
    y = poisoned((M, N), dtype)
    mean = poisoned(M, np.float32)
    rstd = poisoned(M, np.float32)
    block = min(1024, triton.next_power_of_2(N))
    layer_norm.layer_norm_fwd[(M,)](x, y, w, b, mean, rstd, N, N, 1e-5, BLOCK_SIZE=block)
    x64 = x.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(var + 1e-5) * w + b
    tol = 3e-3 if dtype == np.float16 else 1e-5
    assert rel_err(y, ref) < tol
    assert rel_err(mean, mu[:, 0]) < 1e-5
    assert rel_err(rstd, 1 / np.sqrt(var[:, 0] + 1e-5)) < 1e-5


@pytest.mark.parametrize("M,N,K", [(300, 200, 170), (64, 64, 64), (1, 65, 33), (129, 7, 250)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_matmul(rng, M, N, K, dtype, activation):
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = poisoned((M, N), dtype)
    grid = (triton.cdiv(M, 32) * triton.cdiv(N, 32),)
    matmul.matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1,
                               BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=4, ACTIVATION=activation)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if activation:
        ref = np.where(ref >= 0, ref, 0.01 * ref)
    # fp32 operands go through tf32 (as on tensor cores); fp16 results are rounded to fp16.
    assert rel_err(c, ref) < (3e-3 if dtype == np.float32 else 2e-3)


def test_matmul_example(rng):
    a = rng.standard_normal((100, 80)).astype(np.float32)
    b = rng.standard_normal((80, 90)).astype(np.float32)
    c = matmul.matmul(a, b)
    assert rel_err(c, a.astype(np.float64) @ b) < 3e-3


@pytest.mark.parametrize("M,N", [(50, 70), (64, 32), (1, 9)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8])
def test_transpose_copy(rng, M, N, dtype):
    src = rng.integers(0, 100, (M, N)).astype(dtype)
    dst = poisoned((N, M), dtype)
    K.transpose_copy[(triton.cdiv(M, 16), triton.cdiv(N, 32))](src, dst, M, N, N, M, BM=16, BN=32)
    assert np.array_equal(dst, src.T)


@pytest.mark.parametrize("n,bins", [(1000, 16), (4097, 64), (5, 4)])
def test_histogram_atomics(rng, n, bins):
    x = rng.integers(-3, bins + 3, n).astype(np.int32)
    out = np.zeros(bins, np.int32)
    K.histogram[(triton.cdiv(n, 128),)](x, out, n, NUM_BINS=bins, BLOCK=128)
    ref = np.bincount(np.clip(x, 0, bins - 1), minlength=bins)
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("M,N", [(16, 32), (13, 29), (1, 8)])
def test_reductions_each_axis(rng, M, N):
    x = rng.standard_normal((M, N)).astype(np.float32)
    outs = dict(sum0=N, sum1=M, max0=N, max1=M, min0=N, min1=M)
    arrs = {k: poisoned(v, np.float32) for k, v in outs.items()}
    amax1 = poisoned(M, np.int32)
    amin0 = poisoned(N, np.int32)
    K.reduce_axes[(1,)](x, arrs["sum0"], arrs["sum1"], arrs["max0"], arrs["max1"], arrs["min0"],
                        arrs["min1"], amax1, amin0, M, N, BM=16, BN=32)
    x64 = x.astype(np.float64)
    # an fp32 sum of n terms, in any order, errs by at most (n - 1) ulps of
    # the sum of their magnitudes; a sum that cancels to near zero (one row
    # of 8) has no small relative error
    for axis in (0, 1):
        got = arrs[f"sum{axis}"].astype(np.float64)
        assert not np.isnan(got).any()
        assert (np.abs(got - x64.sum(axis)) <= x.shape[axis] * 2.0**-24 * np.abs(x64).sum(axis)).all()
    assert np.array_equal(arrs["max0"], x.max(0))
    assert np.array_equal(arrs["max1"], x.max(1))
    assert np.array_equal(arrs["min0"], x.min(0))
    assert np.array_equal(arrs["min1"], x.min(1))
    assert np.array_equal(amax1, x.argmax(1))
    assert np.array_equal(amin0, x.argmin(0))


def test_reduce_all_and_xor(rng):
    x = rng.integers(-1000, 1000, (8, 16)).astype(np.int32)
    out = poisoned(2, np.int32)
    xo = poisoned(16, np.int32)
    K.reduce_all[(1,)](x, out, xo, BM=8, BN=16)
    assert out[0] == x.sum() and out[1] == x.max()
    ref = np.bitwise_xor.reduce(x, axis=1)
    assert np.array_equal(xo[:8], ref)
    assert np.array_equal(xo[8:], x.sum(1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_int_div_mod_negative(rng, dtype):
    n = 1000
    info = np.iinfo(dtype)
    a = rng.integers(info.min // 2, info.max // 2, n).astype(dtype)
    b = rng.integers(-100, 100, n).astype(dtype)
    b[b == 0] = 7
    a[:4] = [-7, 7, -7, 7]
    b[:4] = [2, -2, -2, 2]
    q = poisoned(n, dtype)
    r = poisoned(n, dtype)
    fq = poisoned(n, np.float32)
    K.int_divmod[(triton.cdiv(n, 256),)](a, b, q, r, fq, n, BLOCK=256)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    tq = np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))  # C: truncate toward zero
    assert np.array_equal(q, tq.astype(dtype))
    assert np.array_equal(r, (a64 - b64 * tq).astype(dtype))
    assert q[0] == -3 and r[0] == -1 and q[1] == -3 and r[1] == 1
    assert rel_err(fq, a64 / b64) < 1e-6


def _fp8_ref(x, kind):
    lim = 448.0 if kind == "e4" else 57344.0
    t = ml_dtypes.float8_e4m3fn if kind == "e4" else ml_dtypes.float8_e5m2
    y = np.clip(x, -lim, lim).astype(t).astype(np.float32)
    return np.where(np.isnan(x), np.nan, y)


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
def test_casts_fp16_bf16_fp8(rng):
    n = 4000
    x = (rng.standard_normal(n) * rng.choice([1e-6, 1e-2, 1, 100, 1e5], n)).astype(np.float32)
    x[:6] = [0.0, -0.0, 1000.0, -1e6, 448.0, 460.0]
    outs = [poisoned(n, np.float32) for _ in range(4)]
    i8 = poisoned(n, np.int8)
    K.cast_roundtrip[(triton.cdiv(n, 512),)](x, *outs, i8, n, BLOCK=512)
    assert np.array_equal(outs[0], x.astype(np.float16).astype(np.float32))
    assert np.array_equal(outs[1], x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert np.array_equal(outs[2], _fp8_ref(x, "e4"))
    assert np.array_equal(outs[3], _fp8_ref(x, "e5"))
    # float -> int8 truncates toward zero and saturates
    assert np.array_equal(i8, np.clip(np.trunc(x), -128, 127).astype(np.int8))


def test_while_loop(rng):
    x = rng.integers(1, 500, 40).astype(np.int32)
    out = poisoned(40, np.int32)
    K.collatz_steps[(40,)](x, out, 40)

    def steps(v):
        s = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    assert list(out) == [steps(int(v)) for v in x]


@pytest.mark.parametrize("grid", [1, 3, 8])
def test_grid_stride_loop(rng, grid):
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    K.grid_stride_scale[(grid,)](x, out, n, 2.5, BLOCK=256)
    assert rel_err(out, x.astype(np.float64) * 2.5 + 1.0) < 1e-6


def test_out_of_bounds_is_reported():
    x = np.zeros(100, np.float32)
    out = np.zeros(128, np.float32)
    with pytest.raises(triton.LaunchError) as e:
        K.oob_read[(1,)](x, out, BLOCK=128)
    msg = str(e.value)
    assert "kernels_e2e.py" in msg and "x_ptr" in msg


def test_compile_error_has_location():
    x = np.zeros(16, np.float32)
    with pytest.raises(triton.CompilationError) as e:
        K.bad_kernel[(1,)](x, BLOCK=16)
    err = e.value
    assert err.filename.endswith("kernels_e2e.py")
    assert err.lineno is not None and err.col is not None
    assert "undefined_function" in str(err) and "^" in str(err)
