"""Block operations built in the front end: scans (tl.cumsum, tl.cumprod,
tl.associative_scan with a user combine function, forward and reverse, on
either axis, tuple scans), tl.reduce with a user combine function (tuple
reductions included), tl.sort (both orders), tl.flip, tl.topk,
tl.histogram (masked), tl.gather, tl.join / tl.split / tl.interleave /
tl.cat.  Fresh random inputs on blocks that overhang the data (padded with
each operation's neutral value), several dtypes, float64 / exact
references."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err
import sim_mode


@triton.jit
def add_fn(a, b):
    return a + b


@triton.jit
def max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@triton.jit
def affine_compose(a1, b1, a2, b2):
    """(x -> a1 x + b1) then (x -> a2 x + b2): an associative, non-commutative combine."""
    return a1 * a2, b1 * a2 + b2


@triton.jit
def argmax_combine(v1, i1, v2, i2):
    pick = (v1 > v2) | ((v1 == v2) & (i1 < i2))
    return tl.where(pick, v1, v2), tl.where(pick, i1, i2)


@triton.jit
def scan_kernel(X, Y, Z, M, N, AXIS: tl.constexpr, REV: tl.constexpr, KIND: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    ptrs = rm[:, None] * N + rn[None, :]
    if KIND == "cumprod":
        x = tl.load(X + ptrs, mask=m, other=1)
        y = tl.cumprod(x, axis=AXIS, reverse=REV)
    elif KIND == "cumsum":
        x = tl.load(X + ptrs, mask=m, other=0)
        y = tl.cumsum(x, axis=AXIS, reverse=REV)
    elif KIND == "fnsum":
        x = tl.load(X + ptrs, mask=m, other=0)
        y = tl.associative_scan(x, AXIS, add_fn, reverse=REV)
    else:  # affine: a tuple scan
        x = tl.load(X + ptrs, mask=m, other=1)
        b = tl.load(Z + ptrs, mask=m, other=0)
        y, yb = tl.associative_scan((x, b), AXIS, affine_compose, reverse=REV)
        tl.store(Z + ptrs, yb, mask=m)
    tl.store(Y + ptrs, y, mask=m)


def _scan_ref(kind, x, axis, rev, b=None):
    x = x.astype(np.float64)
    if rev:
        x = np.flip(x, axis)
        b = None if b is None else np.flip(b.astype(np.float64), axis)
    if kind in ("cumsum", "fnsum"):
        y = np.cumsum(x, axis)
        yb = None
    elif kind == "cumprod":
        y = np.cumprod(x, axis)
        yb = None
    else:
        y = np.cumprod(x, axis)
        yb = np.zeros_like(x)
        acc = np.take(b, 0, axis=axis) * 0
        for i in range(x.shape[axis]):
            acc = acc * np.take(x, i, axis=axis) + np.take(b, i, axis=axis)
            idx = [slice(None)] * 2
            idx[axis] = i
            yb[tuple(idx)] = acc
    if rev:
        y = np.flip(y, axis)
        yb = None if yb is None else np.flip(yb, axis)
    return y, yb


@pytest.mark.parametrize("kind", ["cumsum", "cumprod", "fnsum", "affine"])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("rev", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float64])
def test_scans(rng, kind, axis, rev, dt):
    M, N, BM, BN = 13, 27, 16, 32
    if dt == np.int32:
        x = rng.integers(-3, 4, (M, N)).astype(dt) if kind != "cumprod" else rng.choice([-1, 1, 2], (M, N)).astype(dt)
    else:
        x = (rng.standard_normal((M, N)) if kind in ("cumsum", "fnsum") else rng.uniform(0.8, 1.2, (M, N))).astype(dt)
    if kind == "affine" and dt == np.int32:
        x = rng.choice([-1, 1], (M, N)).astype(dt)
    z = (rng.standard_normal((M, N)) * 2).astype(dt) if dt != np.int32 else rng.integers(-5, 5, (M, N)).astype(dt)
    y = poisoned((M, N), dt)
    want, wantb = _scan_ref(kind, x, axis, rev, z)
    scan_kernel[(1,)](x, y, z, M, N, AXIS=axis, REV=rev, KIND=kind, BM=BM, BN=BN)
    if dt == np.int32:
        assert np.array_equal(y, want.astype(np.int64).astype(np.int32))
        if wantb is not None:
            assert np.array_equal(z, wantb.astype(np.int64).astype(np.int32))
    else:
        assert rel_err(y, want) < 1e-5
        if wantb is not None:
            assert rel_err(z, wantb) < 1e-5


@triton.jit
def reduce_kernel(X, S, A, V, IDX, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=m, other=0)
    tl.store(S + rm, tl.reduce(x, 1, add_fn), mask=rm < M)
    tl.store(A + rn, tl.reduce(x, 0, max_abs), mask=rn < N)
    xm = tl.where(m, x, -1000)
    idx = tl.broadcast_to(rn[None, :], (BM, BN))
    v, i = tl.reduce((xm, idx), 1, argmax_combine)
    tl.store(V + rm, v, mask=rm < M)
    tl.store(IDX + rm, i, mask=rm < M)


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("M,N", [(5, 30), (16, 16), (1, 7)])
def test_reduce_combine(rng, dt, M, N):
    x = (rng.standard_normal((M, N)) * 4).astype(dt) if dt != np.int32 else rng.integers(-50, 50, (M, N)).astype(dt)
    if dt == np.int32:
        x[0, -1] = x[0, 0]  # a tie: the smaller index wins
    s, a, v, idx = poisoned(M, dt), poisoned(N, dt), poisoned(M, dt), poisoned(M, np.int32)
    x64 = x.astype(np.float64)
    launch = lambda: reduce_kernel[(1,)](x, s, a, v, idx, M, N, BM=16, BN=32)  # noqa: E731
    if dt != np.int32:
        # A float sum's rounding error scales with sum |x|, not with the sum, which may cancel
        # (7 normal values summing to 0.02): compared with another summation order (the GPU's
        # against the interpreter's), it is bounded by N units of rounding of sum |x|.
        unit = 2.0 ** -11 if dt == np.float16 else 2.0 ** -24
        cond = np.linalg.norm(np.abs(x64).sum(1)) / max(np.linalg.norm(x64.sum(1)), 1e-30)
        launch = sim_mode.tolerance(2 * N * unit * cond)(launch)
    launch()
    if dt == np.int32:
        assert np.array_equal(s, x.sum(1))
        assert np.array_equal(a, np.abs(x).max(0))
    else:
        unit = 2.0 ** -11 if dt == np.float16 else 2.0 ** -24
        assert np.all(np.abs(s - x64.sum(1)) <= 2 * N * unit * np.abs(x64).sum(1)), (s, x64.sum(1))
        assert np.array_equal(a, np.abs(x).max(0))
    assert np.array_equal(v, x.max(1))
    assert np.array_equal(idx, x.argmax(1))


@triton.jit
def sort_kernel(X, S, D, F0, F1, T, M, N, PAD, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    ptrs = rm[:, None] * BN + rn[None, :]
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=m, other=PAD)
    tl.store(S + ptrs, tl.sort(x))
    tl.store(D + ptrs, tl.sort(x, descending=True))
    tl.store(F0 + ptrs, tl.flip(x, 0))
    tl.store(F1 + ptrs, x.flip(1))
    rk = tl.arange(0, K)
    tl.store(T + rm[:, None] * K + rk[None, :], tl.topk(x, K))


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16, np.uint8, np.int64])
def test_sort_flip_topk(rng, dt):
    M, N, BM, BN, K = 6, 29, 8, 32, 8
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), (M, N)).astype(dt)
        pad = int(info.max)
    else:
        x = rng.standard_normal((M, N)).astype(dt)
        x[0, :4] = x[0, 4]  # duplicates
        pad = float("inf")
    full = np.full((BM, BN), pad, dtype=dt)
    full[:M, :N] = x
    outs = [poisoned((BM, BN), dt) for _ in range(4)]
    top = poisoned((BM, K), dt)
    sort_kernel[(1,)](x, *outs, top, M, N, pad, BM=BM, BN=BN, K=K)
    assert np.array_equal(outs[0], np.sort(full, 1))
    assert np.array_equal(outs[1], np.flip(np.sort(full, 1), 1))
    assert np.array_equal(outs[2], np.flip(full, 0))
    assert np.array_equal(outs[3], np.flip(full, 1))
    assert np.array_equal(top, np.flip(np.sort(full, 1), 1)[:, :K])


@triton.jit
def hist_gather_kernel(X, H, SRC, IDX, G, n, NB: tl.constexpr, BLOCK: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.store(H + tl.arange(0, NB), tl.histogram(x, NB, mask=m))
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    src = tl.load(SRC + rr[:, None] * C + rc[None, :])
    idx = tl.load(IDX + rr[:, None] * C + rc[None, :])
    tl.store(G + rr[:, None] * C + rc[None, :], tl.gather(src, idx, 1))
    tl.store(G + R * C + rr[:, None] * C + rc[None, :], tl.gather(src, idx % R, 0))


@pytest.mark.parametrize("n", [1, 100, 256])
@pytest.mark.parametrize("dt", [np.float32, np.int32])
def test_histogram_gather(rng, n, dt):
    NB, BLOCK, R, C = 32, 256, 8, 16
    x = rng.integers(-3, NB + 3, n).astype(np.int32)  # some values outside [0, NB) are not counted
    h = poisoned(NB, np.int32)
    src = (rng.standard_normal((R, C)) * 10).astype(dt)
    idx = rng.integers(0, C, (R, C)).astype(np.int32)
    g = poisoned((2, R, C), dt)
    hist_gather_kernel[(1,)](x, h, src, idx, g, n, NB=NB, BLOCK=BLOCK, R=R, C=C)
    inb = x[(x >= 0) & (x < NB)]
    assert np.array_equal(h, np.bincount(inb, minlength=NB)[:NB])
    assert np.array_equal(g[0], np.take_along_axis(src, idx, 1))
    assert np.array_equal(g[1], np.take_along_axis(src, idx % R, 0))


@triton.jit
def gather1d_kernel(SRC, IDX, G, N: tl.constexpr, NI: tl.constexpr):
    src = tl.load(SRC + tl.arange(0, N))
    ri = tl.arange(0, NI)
    tl.store(G + ri, tl.gather(src, tl.load(IDX + ri), 0))


@triton.jit
def gather2d_kernel(SRC, IDX, G, R: tl.constexpr, C: tl.constexpr, RI: tl.constexpr, CI: tl.constexpr,
                    AXIS: tl.constexpr):
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    src = tl.load(SRC + rr[:, None] * C + rc[None, :])
    ri = tl.arange(0, RI)
    ci = tl.arange(0, CI)
    idx = tl.load(IDX + ri[:, None] * CI + ci[None, :])
    tl.store(G + ri[:, None] * CI + ci[None, :], tl.gather(src, idx, AXIS))


def _take_or_zero(src, idx, axis):
    """np.take_along_axis where idx is in range, 0 elsewhere."""
    n = src.shape[axis]
    ok = (idx >= 0) & (idx < n)
    out = np.take_along_axis(src, np.where(ok, idx, 0).astype(np.int64), axis)
    return np.where(ok, out, np.zeros((), src.dtype))


def _random_of(rng, shape, dt):
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -10**6), min(info.max, 10**6), shape).astype(dt)
    return (rng.standard_normal(shape) * 10).astype(dt)


@pytest.mark.parametrize("dt,it", [(np.int32, np.int32), (np.float32, np.int64), (np.float16, np.int16),
                                   (np.uint8, np.uint8), (np.float64, np.int32)])
@pytest.mark.parametrize("N,NI", [(1024, 1024), (1024, 256), (64, 512)])
def test_gather_1d(rng, dt, it, N, NI):
    src = _random_of(rng, N, dt)
    lo = 0 if np.issubdtype(it, np.unsignedinteger) else -N // 4
    hi = min(N + N // 4, np.iinfo(it).max)
    idx = rng.integers(lo, hi, NI).astype(it)  # some outside [0, N): 0
    g = poisoned(NI, dt)
    gather1d_kernel[(1,)](src, idx, g, N=N, NI=NI)
    assert np.array_equal(g, _take_or_zero(src, idx, 0))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.float16, np.int64])
@pytest.mark.parametrize("R,C,K", [(32, 64, 16), (64, 16, 128), (8, 128, 8)])
def test_gather_2d(rng, axis, dt, R, C, K):
    RI, CI = (K, C) if axis == 0 else (R, K)
    src = _random_of(rng, (R, C), dt)
    n = (R, C)[axis]
    idx = rng.integers(-2, n + 2, (RI, CI)).astype(np.int32)
    g = poisoned((RI, CI), dt)
    gather2d_kernel[(1,)](src, idx, g, R=R, C=C, RI=RI, CI=CI, AXIS=axis)
    assert np.array_equal(g, _take_or_zero(src, idx, axis))


@triton.jit
def histogram_kernel(X, H, n, NB: tl.constexpr, BLOCK: tl.constexpr, MASKED: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if MASKED:
        h = tl.histogram(x, NB, mask=(offs < n) & (x != 3))
    else:
        h = tl.histogram(x, NB)
    tl.store(H + tl.arange(0, NB), h)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint8, np.int16])
@pytest.mark.parametrize("NB,BLOCK", [(16, 1024), (1024, 4096), (1024, 256), (512, 64)])
def test_histogram_bins(rng, masked, dt, NB, BLOCK):
    hi = min(NB + NB // 8 + 1, np.iinfo(dt).max)
    lo = 0 if np.issubdtype(dt, np.unsignedinteger) else -5
    x = rng.integers(lo, hi, BLOCK).astype(dt)  # some values outside [0, NB) are not counted
    n = int(rng.integers(1, BLOCK + 1))
    h = poisoned(NB, np.int32)
    histogram_kernel[(1,)](x, h, n, NB=NB, BLOCK=BLOCK, MASKED=masked)
    xs = x.astype(np.int64)
    keep = (xs >= 0) & (xs < NB)
    if masked:
        keep &= (np.arange(BLOCK) < n) & (xs != 3)
    assert np.array_equal(h, np.bincount(xs[keep], minlength=NB)[:NB])


@triton.jit
def flip_kernel(X, F, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr):
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    ptrs = rr[:, None] * C + rc[None, :]
    tl.store(F + ptrs, tl.flip(tl.load(X + ptrs), AXIS))


@triton.jit
def flip1d_kernel(X, F, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(F + r, tl.flip(tl.load(X + r)))


@pytest.mark.parametrize("dt", [np.float32, np.int8, np.float16, np.int64])
@pytest.mark.parametrize("N", [512, 1024, 4096])
def test_flip_1d(rng, dt, N):
    x = _random_of(rng, N, dt)
    f = poisoned(N, dt)
    flip1d_kernel[(1,)](x, f, N=N)
    assert np.array_equal(f, np.flip(x))


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("R,C", [(64, 32), (2, 1024), (1024, 2), (128, 64)])
def test_flip_2d(rng, axis, R, C):
    x = _random_of(rng, (R, C), np.float32)
    f = poisoned((R, C), np.float32)
    flip_kernel[(1,)](x, f, R=R, C=C, AXIS=axis)
    assert np.array_equal(f, np.flip(x, axis))


@triton.jit
def join_kernel(A, B, J, I, C, S0, S1, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other=0)
    b = tl.load(B + offs, mask=m, other=0)
    j = tl.join(a, b)  # [BLOCK, 2]
    tl.store(J + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j, mask=m[:, None])
    tl.store(I + tl.arange(0, 2 * BLOCK), tl.interleave(a, b))
    tl.store(C + tl.arange(0, 2 * BLOCK), tl.cat(a, b, can_reorder=True).sort())
    s0, s1 = tl.split(j)
    tl.store(S0 + offs, s0 * 2, mask=m)
    tl.store(S1 + offs, s1 + s0, mask=m)


@pytest.mark.parametrize("dt", [np.float32, np.int32, np.float16, np.int8])
def test_join_split_interleave_cat(rng, dt):
    n, BLOCK = 50, 64
    if np.issubdtype(dt, np.integer):
        a = rng.integers(-50, 50, n).astype(dt)
        b = rng.integers(-50, 50, n).astype(dt)
    else:
        a = rng.standard_normal(n).astype(dt)
        b = rng.standard_normal(n).astype(dt)
    j = poisoned((n, 2), dt)
    inter, cat = poisoned(2 * BLOCK, dt), poisoned(2 * BLOCK, dt)
    s0, s1 = poisoned(n, dt), poisoned(n, dt)
    join_kernel[(1,)](a, b, j, inter, cat, s0, s1, n, BLOCK=BLOCK)
    pa = np.zeros(BLOCK, dt)
    pa[:n] = a
    pb = np.zeros(BLOCK, dt)
    pb[:n] = b
    assert np.array_equal(j, np.stack([a, b], 1))
    assert np.array_equal(inter, np.stack([pa, pb], 1).reshape(-1))
    assert np.array_equal(cat, np.sort(np.concatenate([pa, pb])))
    assert np.array_equal(s0, (a * 2).astype(dt))
    assert np.array_equal(s1, (b + a).astype(dt))


@triton.jit
def range_options(X, Y, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, steps, num_stages=3, loop_unroll_factor=2, flatten=True, disallow_acc_multi_buffer=True,
                      warp_specialize=False, disable_licm=True):
        acc += tl.load(X + i * n + offs, mask=m, other=0.0)
    for i in tl.range(steps, num_stages=1):
        acc = acc * 0.5
    for i in tl.static_range(2):
        acc += i
    tl.store(Y + offs, acc, mask=m)


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_range_options(rng, steps):
    n = 100
    x = rng.standard_normal((max(steps, 1), n)).astype(np.float32)
    y = poisoned(n, np.float32)
    range_options[(1,)](x, y, n, steps, BLOCK=128)
    want = x[:steps].astype(np.float64).sum(0) * 0.5 ** steps + 1
    assert rel_err(y, want) < 1e-5
