"""Atomics: every kind on every dtype Triton allows, masked, with colliding
and distinct addresses; the whole sem x scope matrix; a compare-and-swap
spin lock guarding a shared accumulator (the pattern of layer norm's
backward pass).  References are numpy's unbuffered ufunc.at in float64 or
exact integers.  Old values returned by an atomic are compared only where
each address is hit once (elsewhere the order of the updates is the GPU's)."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


@triton.jit
def atomic_scatter(dst, idx_ptr, val_ptr, old_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr,
                   STORE_OLD: tl.constexpr = True):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    idx = tl.load(idx_ptr + offs, mask=m, other=0)
    v = tl.load(val_ptr + offs, mask=m, other=0)
    p = dst + idx
    if KIND == "add":
        old = tl.atomic_add(p, v, mask=m)
    elif KIND == "max":
        old = tl.atomic_max(p, v, mask=m)
    elif KIND == "min":
        old = tl.atomic_min(p, v, mask=m)
    elif KIND == "and":
        old = tl.atomic_and(p, v, mask=m)
    elif KIND == "or":
        old = tl.atomic_or(p, v, mask=m)
    elif KIND == "xor":
        old = tl.atomic_xor(p, v, mask=m)
    else:
        old = tl.atomic_xchg(p, v, mask=m)
    if STORE_OLD:  # (with colliding addresses the old values depend on the order of the updates)
        tl.store(old_ptr + offs, old, mask=m)


@triton.jit
def atomic_sem_scope(dst, val_ptr, old_ptr, n, SEM: tl.constexpr, SCOPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(val_ptr + offs, mask=m, other=0)
    old = tl.atomic_add(dst + offs, v, mask=m, sem=SEM, scope=SCOPE)
    old2 = tl.atomic_max(dst + n + offs, v, mask=m, sem=SEM, scope=SCOPE)
    old3 = tl.atomic_cas(dst + 2 * n + offs, tl.zeros_like(v), v, sem=SEM, scope=SCOPE)
    old4 = tl.atomic_xchg(dst + 3 * n + offs, v, mask=m, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + offs, old + old2 + old3 + old4, mask=m)
    # a scalar atomic: done once per program, its old value seen by every thread; the
    # old values summed (whatever the order of the programs): 0 + 1 + ... + (grid - 1)
    s = tl.atomic_add(dst + 4 * n, 1, sem=SEM, scope=SCOPE)
    tl.atomic_add(dst + 4 * n + 1, s, sem=SEM, scope=SCOPE)
    # every one of the BLOCK lanes adds the value it holds: BLOCK * (0 + 1 + ... + (grid - 1)) in all
    tl.atomic_add(dst + 4 * n + 2 + offs * 0, s, sem=SEM, scope=SCOPE)


_KINDS = ["add", "max", "min", "and", "or", "xor", "xchg"]
_DTYPES = ["int32", "uint32", "int64", "uint64", "float32", "float64", "float16", "bfloat16"]


def _dt(name):
    if name == "bfloat16":
        if ml_dtypes is None:
            pytest.skip("needs ml_dtypes")
        return ml_dtypes.bfloat16
    return np.dtype(name).type


def _values(rng, dt, n):
    if np.issubdtype(np.dtype(dt), np.integer):
        info = np.iinfo(dt)
        lo, hi = (int(info.min) // 4, int(info.max) // 4) if info.min < 0 else (0, int(info.max) // 4)
        return rng.integers(lo, hi, n, dtype=np.int64 if info.min < 0 else np.uint64, endpoint=True).astype(dt)
    return (rng.standard_normal(n) * 4).astype(dt)


def _ref(kind, dst, idx, v):
    """dst after the atomics, in float64 / Python ints (order-independent for these kinds)."""
    out = dst.astype(np.float64) if dst.dtype.kind == "f" or str(dst.dtype) == "bfloat16" else dst.copy()
    vv = v.astype(out.dtype)
    if kind == "add":
        np.add.at(out, idx, vv)
    elif kind == "max":
        np.maximum.at(out, idx, vv)
    elif kind == "min":
        np.minimum.at(out, idx, vv)
    elif kind == "and":
        np.bitwise_and.at(out, idx, vv)
    elif kind == "or":
        np.bitwise_or.at(out, idx, vv)
    elif kind == "xor":
        np.bitwise_xor.at(out, idx, vv)
    else:
        out[idx] = vv
    return out


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("dtname", _DTYPES)
@pytest.mark.parametrize("collide", [False, True])
def test_atomic_kinds(rng, kind, dtname, collide):
    dt = _dt(dtname)
    flt = dtname.startswith("float") or dtname == "bfloat16"
    if flt and kind in ("and", "or", "xor"):
        pytest.skip("bitwise atomics take integers")
    if dtname in ("float16", "bfloat16") and kind != "add":
        pytest.skip("Triton allows only add on 16-bit floats")
    if collide and kind == "xchg":
        pytest.skip("the last exchange depends on the order")
    n, BLOCK = 300, 128
    nd = 37 if collide else n
    idx = rng.integers(0, nd, n).astype(np.int32) if collide else rng.permutation(n).astype(np.int32)
    v = _values(rng, dt, n)
    dst = _values(rng, dt, nd)
    want = _ref(kind, dst, idx, v)
    init = dst.copy()
    old = poisoned(n, dt)
    atomic_scatter[(triton.cdiv(n, BLOCK),)](dst, idx, v, old, n, KIND=kind, BLOCK=BLOCK, STORE_OLD=not collide)
    if flt:
        tol = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5, "float64": 1e-12}[dtname]
        got = dst.astype(np.float64)
        scale = np.abs(want) + (np.abs(v.astype(np.float64)).max() * (n / nd) if kind == "add" else 0)
        assert np.all(np.abs(got - want) <= tol * (scale + 1)), (got, want)
    else:
        assert np.array_equal(dst, want)
    if not collide:  # each address once: the old values are the ones replaced
        assert np.array_equal(old.astype(np.float64), init[idx].astype(np.float64))


@pytest.mark.parametrize("sem", ["relaxed", "acquire", "release", "acq_rel", None])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys", None])
def test_sem_scope_matrix(rng, sem, scope):
    n, BLOCK = 200, 64
    grid = triton.cdiv(n, BLOCK)
    v = rng.integers(-1000, 1000, n).astype(np.int32)
    dst = rng.integers(-1000, 1000, 4 * n + 3).astype(np.int32)
    dst[2 * n:3 * n] = np.where(rng.random(n) < 0.5, 0, 5)  # cas hits where the value is 0
    dst[4 * n:] = 0
    init = dst.copy()
    old = poisoned(n, np.int32)
    atomic_sem_scope[(grid,)](dst, v, old, n, SEM=sem, SCOPE=scope, BLOCK=BLOCK)
    a, b, c, d = (init[k * n:(k + 1) * n] for k in range(4))
    assert np.array_equal(dst[:n], a + v)
    assert np.array_equal(dst[n:2 * n], np.maximum(b, v))
    assert np.array_equal(dst[2 * n:3 * n], np.where(c == 0, v, c))
    assert np.array_equal(dst[3 * n:4 * n], v)
    assert np.array_equal(old[:n], a + b + c + d)
    assert dst[4 * n] == grid
    assert dst[4 * n + 1] == grid * (grid - 1) // 2
    assert dst[4 * n + 2] == BLOCK * grid * (grid - 1) // 2


def test_atomic_old_values_distinct(rng):
    """Each address hit once: every kind returns the value it replaced."""
    n, BLOCK = 256, 64
    for kind in _KINDS:
        idx = rng.permutation(n).astype(np.int32)
        v = rng.integers(-2 ** 30, 2 ** 30, n).astype(np.int32)
        dst = rng.integers(-2 ** 30, 2 ** 30, n).astype(np.int32)
        init = dst.copy()
        old = poisoned(n, np.int32)
        atomic_scatter[(triton.cdiv(n, BLOCK),)](dst, idx, v, old, n, KIND=kind, BLOCK=BLOCK)
        assert np.array_equal(old, init[idx]), kind
        assert np.array_equal(dst, _ref(kind, init, idx, v)), kind


@triton.jit
def locked_group_sum(X, Partial, Lock, Count, M, N, GROUP: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row r of X is added into Partial[r % GROUP] under the lock of that group:
    the first writer stores, the others accumulate."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0)
    g = row % GROUP
    lock = Lock + g
    count = Count + g
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    c = tl.load(count, volatile=True)
    if c == 0:
        tl.atomic_xchg(count, 1)
    else:
        x += tl.load(Partial + g * N + cols, mask=mask, other=0.0, volatile=True)
    tl.store(Partial + g * N + cols, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@pytest.mark.parametrize("M,N,GROUP", [(64, 100, 8), (33, 257, 4), (7, 16, 16)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_spin_lock_group_sum(rng, M, N, GROUP, dt):
    x = rng.standard_normal((M, N)).astype(dt)
    partial = poisoned((GROUP, N), dt)
    lock = np.zeros(GROUP, np.int32)
    count = np.zeros(GROUP, np.int32)
    block = triton.next_power_of_2(N)
    locked_group_sum[(M,)](x, partial, lock, count, M, N, GROUP=GROUP, BLOCK_N=block)
    want = np.zeros((GROUP, N))
    for r in range(M):
        want[r % GROUP] += x[r].astype(np.float64)
    hit = [g for g in range(GROUP) if g < M]
    assert np.allclose(partial[hit].astype(np.float64), want[hit], rtol=1e-5, atol=1e-5)
    assert np.array_equal(lock, np.zeros(GROUP, np.int32))
    assert np.array_equal(count, (np.arange(GROUP) < M).astype(np.int32))
