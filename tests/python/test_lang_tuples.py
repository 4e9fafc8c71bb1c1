"""Tuples: tl.tuple, tuples as kernel arguments (each element specialized:
pointers, scalars, constexprs, nested tuples, a constexpr tuple parameter),
indexing and slicing with constants, unpacking, tuples through @jit helpers
(arguments and results) and loop-carried tuples; masked edges, several
dtypes, float64 references."""
import os

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err
from nereid.tools.tensor_descriptor import TensorDescriptor


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
def axpy_pair(args, out, BLOCK: tl.constexpr):
    (x_ptr, y_ptr), n, alpha = args
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out + offs, alpha * x + y, mask=m)


@triton.jit
def minmax(t):
    return tl.minimum(t[0], t[1]), tl.maximum(t[0], t[1])


@triton.jit
def tuple_ops(ptrs, n, BLOCKS: tl.constexpr):
    BLOCK: tl.constexpr = BLOCKS[0]
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    vals = tl.tuple([tl.load(ptrs[0] + offs, mask=m), tl.load(ptrs[1] + offs, mask=m)])
    lo, hi = minmax(vals)
    both = (lo, hi) + (vals[0] * 2,)
    last = both[-1]
    first_two = both[:2]
    tl.store(ptrs[2] + offs, first_two[0] + first_two[1] + last + len(both) + BLOCKS[1], mask=m)


@triton.jit
def running(x_ptr, out_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    state = (x, tl.zeros_like(x), 0)
    for _ in range(steps):
        a, b, k = state
        state = (a * 0.5, b + a, k + 1)
    tl.store(out_ptr + offs, state[1] + state[2], mask=m)


@pytest.mark.parametrize("n", [1, 100, 1000])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
def test_tuple_argument(rng, n, dt):
    x = rng.standard_normal(n).astype(dt)
    y = rng.standard_normal(n).astype(dt)
    out = poisoned(n, dt)
    launch(axpy_pair, (triton.cdiv(n, 128),), ((x, y), n, 2.5), out, BLOCK=128)
    ref = 2.5 * x.astype(np.float64) + y
    assert rel_err(out, ref) < (2e-3 if dt == np.float16 else 1e-6)


@pytest.mark.parametrize("dt", [np.int32, np.float32])
def test_tuple_operations(rng, dt):
    n = 300
    a = (rng.standard_normal(n) * 50).astype(dt)
    b = (rng.standard_normal(n) * 50).astype(dt)
    out = poisoned(n, dt)
    launch(tuple_ops, (triton.cdiv(n, 64),), (a, b, out), n, BLOCKS=(64, 7))
    want = np.minimum(a, b).astype(np.float64) + np.maximum(a, b) + 2 * a.astype(np.float64) + 3 + 7
    if dt == np.int32:
        assert np.array_equal(out, want.astype(np.int32))
    else:
        assert rel_err(out, want) < 1e-6


def test_loop_carried_tuple(rng):
    n, steps = 50, 6
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    launch(running, (1,), x, out, n, steps, BLOCK=64)
    want = sum(x.astype(np.float64) * 0.5 ** k for k in range(steps)) + steps
    assert rel_err(out, want) < 1e-6


def test_tuple_specializations_are_distinct(rng):
    """The same kernel with a constexpr and a runtime element compiles twice."""
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out1, out2 = poisoned(n, np.float32), poisoned(n, np.float32)
    launch(axpy_pair, (1,), ((x, y), n, 2.0), out1, BLOCK=64)
    launch(axpy_pair, (1,), ((x, y), n, 3), out2, BLOCK=64)
    assert rel_err(out1, 2 * x.astype(np.float64) + y) < 1e-6
    assert rel_err(out2, 3 * x.astype(np.float64) + y) < 1e-6
    sigs = [k[0] for k in axpy_pair.cache]
    assert any(s.startswith("((*fp32") for s in sigs)
