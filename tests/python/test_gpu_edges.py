"""Edge cases of code generation: every dtype, masked edges at sizes the block
does not divide, num_warps 1 to 16, blocks smaller than a warp and larger
than the threads, and pointers not aligned for vector access.

On the interpreter these check the semantics; with NEREID_TEST_PTXAS=1 every
kernel is also assembled for sm_80 and sm_90, and under
NEREID_TEST_DEVICE=cuda every launch also runs on the GPU and is compared
with the interpreter."""
import os
import subprocess

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import ROOT, poisoned, rel_err

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, x + y, mask=m)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def row_stats_kernel(x_ptr, sum_ptr, max_ptr, amax_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    xm = tl.where(m, x, -float("inf"))
    tl.store(max_ptr + row, tl.max(xm, axis=0))
    tl.store(amax_ptr + row, tl.argmax(xm, axis=0))


@triton.jit
def tile_kernel(x_ptr, out_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    # out = x^T * 2 + column sums broadcast: a 2-D tile with a transposed store and a reduction
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=m, other=0.0)
    colsum = tl.sum(x, axis=0)
    y = x * 2 + colsum[None, :]
    tl.store(out_ptr + rn[None, :] * M + rm[:, None], y, mask=m)


def _np_dtype(name):
    simple = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16,
              "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
              "bool": np.bool_}
    if name in simple:
        return simple[name]
    if ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    return {"bf16": ml_dtypes.bfloat16, "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}[name]


def _random(rng, n, dt):
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(np.dtype(dt), np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)
    return (rng.standard_normal(n) * 3).astype(np.float32).astype(dt)


ALL_DTYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2",
              "bool"]


@pytest.mark.parametrize("name", ALL_DTYPES)
@pytest.mark.parametrize("n", [1, 37, 1000, 4099])
def test_copy_every_dtype(rng, name, n):
    dt = _np_dtype(name)
    x = _random(rng, n, dt)
    out = poisoned(n, dt) if name not in ("f8e4m3", "f8e5m2", "bf16") else np.full(n, np.nan, dtype=dt)
    copy_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    assert np.array_equal(out.view(np.uint8), x.view(np.uint8)), f"{name}: copy differs"


@pytest.mark.parametrize("name", ["i8", "i32", "i64", "u16", "u64", "f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("block,warps", [(16, 1), (32, 2), (128, 4), (1024, 8), (8192, 16), (64, 16), (4096, 1)])
def test_add_blocks_and_warps(rng, name, block, warps):
    dt = _np_dtype(name)
    n = 3 * block + 5
    x, y = _random(rng, n, dt), _random(rng, n, dt)
    out = poisoned(n, dt) if name != "bf16" else np.full(n, np.nan, dtype=dt)
    axpy_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=warps)
    ref = (x.astype(np.float64) + y.astype(np.float64)) if name in ("f16", "bf16", "f32", "f64") else None
    if ref is None:
        assert np.array_equal(out, (x + y).astype(dt))
    else:
        assert rel_err(out, ref) < {"f16": 1e-3, "bf16": 8e-3, "f32": 1e-7, "f64": 1e-15}[name]


@pytest.mark.parametrize("offset", [1, 2, 3, 4])
@pytest.mark.parametrize("name", ["f16", "f32", "i8"])
def test_unaligned_pointers(rng, name, offset):
    """Views that start `offset` elements into their buffers: their pointers are not 16-byte aligned."""
    dt = _np_dtype(name)
    n = 1000
    xb, yb = _random(rng, n + offset, dt), _random(rng, n + offset, dt)
    outb = poisoned(n + offset, dt)
    x, y, out = xb[offset:], yb[offset:], outb[offset:]
    axpy_kernel[(triton.cdiv(n, 512),)](x, y, out, n, BLOCK=512, num_warps=4)
    ref = x.astype(np.float64) + y.astype(np.float64)
    if name == "i8":
        assert np.array_equal(out, (x + y).astype(dt))
    else:
        assert rel_err(out, ref) < (1e-3 if name == "f16" else 1e-7)
    assert np.all(np.isnan(outb[:offset])) if name != "i8" else True, "wrote before the view"


def _ptx(kernel, sig, warps=4):
    cli = os.path.join(ROOT, "build", "nereid")
    p = subprocess.run([cli, "ptx", os.path.abspath(__file__), "-k", kernel, "-s", sig, "--arch", "sm_90",
                        "--num-warps", str(warps)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "build", "nereid")), reason="needs build/nereid")
def test_vector_width_follows_alignment():
    aligned = _ptx("axpy_kernel", "*fp32:16, *fp32:16, *fp32:16, i32:16, 512")
    assert "ld.global.v4" in aligned, "16-byte loads expected for aligned pointers"
    unaligned = _ptx("axpy_kernel", "*fp32, *fp32, *fp32, i32:16, 512")
    assert ".v2" not in unaligned and ".v4" not in unaligned, "no vector access without known alignment"
    odd_n = _ptx("axpy_kernel", "*fp32:16, *fp32:16, *fp32:16, i32, 512")
    assert ".v4" not in odd_n, "a mask of unknown alignment forbids vector access"


@pytest.mark.parametrize("name", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("cols,block,warps", [(1, 16, 1), (13, 16, 1), (100, 128, 2), (1000, 1024, 4),
                                              (3000, 4096, 8), (8000, 8192, 16), (31, 32, 16)])
def test_row_reductions(rng, name, cols, block, warps):
    dt = _np_dtype(name)
    rows = 5
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32).astype(dt)
    s, mx = poisoned(rows, np.float32), poisoned(rows, np.float32)
    am = poisoned(rows, np.int32)
    row_stats_kernel[(rows,)](x, s, mx, am, cols, cols, BLOCK=block, num_warps=warps)
    x64 = x.astype(np.float64)
    assert rel_err(s, x64.sum(1)) < 1e-5 * max(1, np.sqrt(cols) / 8)
    assert np.array_equal(mx, x64.max(1).astype(np.float32))
    assert np.array_equal(am, x64.argmax(1)), "argmax picks the first of equal maxima"


@pytest.mark.parametrize("M,N", [(3, 5), (40, 70), (129, 33)])
@pytest.mark.parametrize("BM,BN,warps", [(4, 4, 1), (8, 16, 2), (32, 32, 4), (64, 128, 8), (128, 256, 16), (2, 64, 4)])
def test_tiles(rng, M, N, BM, BN, warps):
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = poisoned((N, M), np.float32)
    tile_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](x, out, M, N, N, 1, BM=BM, BN=BN, num_warps=warps)
    x64 = x.astype(np.float64)
    ref = np.empty((M, N))
    for i0 in range(0, M, BM):
        blk = x64[i0:i0 + BM]
        ref[i0:i0 + BM] = blk * 2 + blk.sum(0)[None, :]
    assert rel_err(out, ref.T) < 1e-6


@triton.jit
def far_copy_kernel(x_ptr, out_ptr, base, BLOCK: tl.constexpr):
    # base is an int64 past 2**31: the offsets, and the addresses, need 64 bits
    offs = base + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


@triton.jit
def far_index_kernel(x_ptr, out_ptr, row, stride, BLOCK: tl.constexpr):
    # row * stride fits in int32 elements, but not once scaled to bytes of fp32
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + cols, tl.load(x_ptr + row * stride + cols))


def test_offsets_past_2_31(rng):
    base = 2**31 + 12345
    x = np.zeros(base + 64, dtype=np.int8)  # untouched pages stay unallocated
    x[base:base + 64] = rng.integers(-100, 100, 64).astype(np.int8)
    out = poisoned(64, np.int8)
    far_copy_kernel[(1,)](x, out, base, BLOCK=64)
    assert np.array_equal(out, x[base:base + 64])


def test_byte_offsets_past_2_32(rng):
    stride = 2**20 + 16
    row = 1100  # row * stride = 1.15e9 elements: 4.6e9 bytes of fp32
    x = np.zeros(row * stride + 32, dtype=np.float32)
    x[row * stride:row * stride + 32] = rng.standard_normal(32)
    out = poisoned(32, np.float32)
    far_index_kernel[(1,)](x, out, row, stride, BLOCK=32)
    assert np.array_equal(out, x[row * stride:row * stride + 32])


@triton.jit
def range_end_kernel(out_ptr, lo, hi, STEP: tl.constexpr):
    # a loop whose induction variable ends at the top of int32: with a step
    # of 1 the last increment reaches hi at most; larger steps must stop
    # where the next value would leave int32 rather than wrap
    count = 0
    last = 0
    for i in range(lo, hi, STEP):
        count += 1
        last = i
    tl.store(out_ptr, count)
    tl.store(out_ptr + 1, last)


@pytest.mark.parametrize("lo, hi, step", [(2**31 - 4, 2**31 - 1, 1), (2**31 - 7, 2**31 - 1, 3),
                                          (2**31 - 5, 2**31 - 1, 3), (-5, 3, 1), (5, 5, 1)])
def test_loop_at_the_top_of_int32(lo, hi, step):
    out = poisoned(2, np.int32)
    range_end_kernel[(1,)](out, lo, hi, STEP=step)
    vals = list(range(lo, hi, step))
    assert out[0] == len(vals) and (not vals or out[1] == vals[-1]), (out, len(vals))
