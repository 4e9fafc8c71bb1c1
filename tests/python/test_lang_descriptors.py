"""Tensor descriptors without TMA: tl.make_tensor_descriptor in the kernel and
host TensorDescriptor arguments, desc.load / desc.store / desc.atomic_add and
the tl.*_tensor_descriptor functions, on blocks that overhang every edge
(out-of-bounds elements read as zero, or NaN with padding "nan", and are
not written), several dtypes and ranks, strided views, descriptors passed
to helpers and used in a K loop feeding tl.dot."""
import os

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid.tools.tensor_descriptor import TensorDescriptor
from conftest import poisoned, rel_err

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs).  Under NEREID_TEST_DEVICE=cuda (where the
    suite's GPU mode moves only top-level arrays) every numpy array, also
    inside tuples and tensor descriptors, goes to the GPU with its strides,
    and comes back after the launch for the test's own checks."""
    if os.environ.get("NEREID_TEST_DEVICE") != "cuda":
        return kernel[grid](*args, **kwargs)
    import torch
    special = {"bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
    bases = {}

    def dev(v):
        if isinstance(v, np.ndarray):
            root = v
            while isinstance(root.base, np.ndarray):
                root = root.base
            key = id(root)
            if key not in bases:
                flat = np.ascontiguousarray(root)
                name = str(root.dtype)
                if name in special:
                    t = torch.from_numpy(flat.view(np.uint8 if root.itemsize == 1 else np.int16)).view(special[name])
                else:
                    t = torch.from_numpy(flat)
                bases[key] = (root, t.cuda())
            t = bases[key][1]
            off = (v.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // v.itemsize
            return torch.as_strided(t, v.shape, [s // v.itemsize for s in v.strides], off)
        if isinstance(v, tuple):
            return tuple(dev(e) for e in v)
        if type(v).__name__ == "TensorDescriptor":
            return TensorDescriptor(dev(v.base), v.shape, v.strides, v.block_shape, v.padding)
        return v

    gargs = [dev(a) for a in args]
    gkw = {k: dev(v) for k, v in kwargs.items()}
    r = kernel[grid](*gargs, **gkw)
    torch.cuda.synchronize()
    for root, t in bases.values():
        host = t.cpu()
        if str(root.dtype) in special:
            host = host.view(torch.uint8 if root.itemsize == 1 else torch.int16)
        root[...] = host.numpy().view(root.dtype).reshape(root.shape)
    return r


@triton.jit
def scale2d(in_ptr, out_ptr, M, N, s_in, s_out, factor, BM: tl.constexpr, BN: tl.constexpr):
    a = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[s_in, 1], block_shape=[BM, BN])
    b = tl.make_tensor_descriptor(out_ptr, [M, N], [s_out, 1], [BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    x = a.load([om, on])
    b.store([om, on], x * factor)


@triton.jit
def desc_copy3d(in_ptr, out_ptr, A, B, C, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    a = tl.make_tensor_descriptor(in_ptr, [A, B, C], [B * C, C, 1], [B0, B1, B2])
    b = tl.make_tensor_descriptor(out_ptr, [A, B, C], [B * C, C, 1], [B0, B1, B2])
    o = [tl.program_id(0) * B0, tl.program_id(1) * B1, tl.program_id(2) * B2]
    tl.store_tensor_descriptor(b, o, tl.load_tensor_descriptor(a, o) + 1)


@triton.jit
def host_copy(a_desc, b_desc, BM: tl.constexpr, BN: tl.constexpr):
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    b_desc.store([om, on], a_desc.load([om, on]))


@triton.jit
def window(in_ptr, out_ptr, M, N, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    """One block at (off_m, off_n), which may lie partly or wholly outside the tensor."""
    a = tl.make_tensor_descriptor(in_ptr, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    x = a.load([off_m, off_n])
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(out_ptr + rm[:, None] * BN + rn[None, :], x)


@triton.jit
def load_block(desc, i, j):
    return desc.load([i, j])


@triton.jit
def desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BK, BN])
    c = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(load_block(a, om, k), b.load([k, on]), acc)
    c.store([om, on], acc.to(c.dtype))


@triton.jit
def desc_accumulate(acc_ptr, x_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    acc = tl.make_tensor_descriptor(acc_ptr, [M, N], [N, 1], [BM, BN])
    x = tl.make_tensor_descriptor(x_ptr, [2 * M, N], [N, 1], [BM, BN])
    om = (tl.program_id(0) % tl.cdiv(M, BM)) * BM
    src = tl.program_id(0) * BM  # two programs add into each block of acc
    acc.atomic_add([om, 0], x.load([src, 0]))


def _np_dt(name):
    if name == "bfloat16":
        if ml_dtypes is None:
            pytest.skip("needs ml_dtypes")
        return ml_dtypes.bfloat16
    return np.dtype(name).type


@pytest.mark.parametrize("M,N", [(100, 70), (64, 32), (5, 300)])
@pytest.mark.parametrize("dtname", ["float32", "float16", "bfloat16", "int32", "float64"])
def test_make_descriptor_2d(rng, M, N, dtname):
    dt = _np_dt(dtname)
    BM, BN = 32, 32
    pad = 8  # a row stride that is not N, a multiple of 16 bytes
    x = (rng.standard_normal((M, N + pad)) * 8).astype(dt)
    out = poisoned((M, N + pad), dt)
    init = out.copy()
    factor = 3 if dtname == "int32" else 1.5
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    scale2d[grid](x, out, M, N, N + pad, N + pad, factor, BM=BM, BN=BN)
    want = x[:, :N].astype(np.float64) * factor
    if dtname == "int32":
        assert np.array_equal(out[:, :N], (x[:, :N] * factor).astype(np.int32))
    else:
        assert rel_err(out[:, :N], want) < (1e-2 if dtname == "bfloat16" else 1e-3 if dtname == "float16" else 1e-6)
    # the padding columns were never written
    assert out[:, N:].tobytes() == init[:, N:].tobytes()


def test_descriptor_3d_functions(rng):
    A, B, C = 5, 9, 40
    x = rng.standard_normal((A, B, C)).astype(np.float32)
    out = poisoned((A, B, C), np.float32)
    launch(desc_copy3d, (triton.cdiv(A, 2), triton.cdiv(B, 4), triton.cdiv(C, 16)), x, out, A, B, C, B0=2, B1=4, B2=16)
    assert np.array_equal(out, x + 1)


@pytest.mark.parametrize("M,N", [(100, 70), (33, 128)])
@pytest.mark.parametrize("dt", [np.float16, np.float32])
def test_host_descriptors(rng, M, N, dt):
    W = (N + 8 + 15) // 16 * 16
    big = rng.standard_normal((M, W)).astype(dt)
    x = big[:, 8:8 + N]  # a strided view whose row stride is a multiple of 16 bytes
    if x.__array_interface__["data"][0] % 16:
        pytest.skip("view not 16-byte aligned")
    out = poisoned((M, W), dt)
    init = out.copy()
    BM, BN = 16, 32
    a = TensorDescriptor.from_tensor(x, [BM, BN])
    b = TensorDescriptor(out, [M, N], [W, 1], [BM, BN])
    assert a.strides == [W, 1]
    launch(host_copy, (triton.cdiv(M, BM), triton.cdiv(N, BN)), a, b, BM=BM, BN=BN)
    assert np.array_equal(out[:, :N], x)
    assert out[:, N:].tobytes() == init[:, N:].tobytes()


@pytest.mark.parametrize("off", [(-5, -7), (10, 20), (-40, 3), (60, 0), (0, 0)])
@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_out_of_bounds(rng, off, pad):
    M, N, BM, BN = 30, 50, 16, 32
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = poisoned((BM, BN), np.float32)
    launch(window, (1,), x, out, M, N, off[0], off[1], BM=BM, BN=BN, PAD=pad)
    want = np.full((BM, BN), 0.0 if pad == "zero" else np.nan, np.float32)
    for i in range(BM):
        for j in range(BN):
            r, c = off[0] + i, off[1] + j
            if 0 <= r < M and 0 <= c < N:
                want[i, j] = x[r, c]
    assert np.array_equal(out, want, equal_nan=True)


def test_descriptor_matmul(rng):
    M, N, K = 64, 64, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = poisoned((M, N), np.float16)
    launch(desc_matmul, (2, 2), a, b, c, M, N, K, BM=32, BN=32, BK=32)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 2e-3


def test_descriptor_matmul_edges(rng):
    M, N, K = 50, 72, 88  # strides 88 and 72 halves: multiples of 16 bytes; blocks overhang M, N and K
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = poisoned((M, N), np.float16)
    launch(desc_matmul, (triton.cdiv(M, 32), triton.cdiv(N, 32)), a, b, c, M, N, K, BM=32, BN=32, BK=32)
    assert rel_err(c, a.astype(np.float64) @ b.astype(np.float64)) < 2e-3


@pytest.mark.parametrize("dt", [np.float32, np.int32])
def test_descriptor_atomic_add(rng, dt):
    M, N, BM = 40, 32, 16
    acc = (rng.standard_normal((M, N)) * 10).astype(dt)
    x = (rng.standard_normal((2 * M, N)) * 10).astype(dt)
    init = acc.copy()
    nblk = triton.cdiv(M, BM)
    launch(desc_accumulate, (2 * nblk,), acc, x, M, N, BM=BM, BN=N)
    want = init.astype(np.float64)
    for pid in range(2 * nblk):
        om, src = (pid % nblk) * BM, pid * BM
        for i in range(BM):
            if om + i < M and src + i < 2 * M:
                want[om + i] += x[src + i]
    if dt == np.int32:
        assert np.array_equal(acc, want.astype(np.int32))
    else:
        assert rel_err(acc, want) < 1e-6


def test_host_descriptor_checks():
    x = np.zeros((8, 10), np.float32)
    with pytest.raises(ValueError):
        TensorDescriptor.from_tensor(x, [8, 8])  # row stride 40 bytes
    with pytest.raises(ValueError):
        TensorDescriptor(np.zeros(64, np.float32), [64], [2], [16])  # not contiguous
    with pytest.raises(ValueError):
        TensorDescriptor(np.zeros(64, np.float32), [64], [1], [12])  # block not a power of two


@triton.jit
def once_dot(a_ptr, b_desc, c_ptr, r0, c0, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # B: a block of a host descriptor loaded once (at an offset that may
    # overhang the tensor) and staged for the dot; on sm_90a it comes by TMA
    # straight into shared memory, the overhang filled as the padding says
    b = b_desc.load([r0, c0])
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    rn = tl.arange(0, BN)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


ONCE_SIG = "*{t}:16, tensordesc<{t}[64, 64]{pad}>, *fp32:16, i32, i32, 64, 64, 64"


@pytest.mark.parametrize("pad,off", [("zero", (0, 0)), ("zero", (-8, 24)), ("zero", (40, -16)),
                                     ("nan", (0, -16)), ("nan", (8, 40))])
@pytest.mark.parametrize("dtname", ["float16", "bfloat16"])
def test_one_off_block_for_dot(rng, pad, off, dtname):
    dt = _np_dt(dtname)
    K, N, B = 72, 96, 64
    a = rng.standard_normal((B, B)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    c = poisoned((B, B), np.float32)
    launch(once_dot, (1,), a, TensorDescriptor(b, [K, N], [N, 1], [B, B], pad), c, off[0], off[1],
           BM=B, BN=B, BK=B, num_warps=4)
    win = np.full((B, B), 0.0 if pad == "zero" else np.nan)
    for i in range(B):
        for j in range(B):
            if 0 <= off[0] + i < K and 0 <= off[1] + j < N:
                win[i, j] = b[off[0] + i, off[1] + j]
    ref = a.astype(np.float64) @ win
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(c), nan)
    assert nan.any() == (pad == "nan") and not nan.all()  # NaN padding: the overhanging columns alone
    assert rel_err(c[~nan], ref[~nan]) < 1e-2


def test_one_off_block_by_tma():
    # the block above is copied by TMA on an mbarrier of its own on sm_90a, and
    # read through pointers without TMA
    sig = ONCE_SIG.format(t="fp16", pad=", nan")
    ptx = once_dot.compile(sig, num_warps=4, arch="sm_90a").ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 1
    assert ptx.count("mbarrier.init.shared") == 1 and ptx.count("mbarrier.inval.shared") == 1
    assert "wgmma.mma_async" in ptx
    plain = once_dot.compile(sig, num_warps=4, arch="sm_90a", no_tma=True).ptx
    assert "cp.async.bulk" not in plain and "mbarrier" not in plain
