"""Nereid kernels over every family of ops, each launch run on the reference
interpreter and on the PTX simulator (tools/ptxsim) for sm_90 and sm_80,
compared element by element (sim_mode.check).  This is the simulator's
coverage of the instructions the PTX emitter writes, and a check of the
emitter against the interpreter without a GPU."""
import math
import os

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid.language.extra import libdevice
import sim_mode
from conftest import poisoned

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

check = sim_mode.check


# --- math ------------------------------------------------------------------------------------------------
@triton.jit
def unary_math(x_ptr, o_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "sqrt_rn":
        y = tl.sqrt_rn(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    elif FN == "tan":
        y = libdevice.tan(x)
    elif FN == "asin":
        y = libdevice.asin(x)
    elif FN == "acos":
        y = libdevice.acos(x)
    elif FN == "atan":
        y = libdevice.atan(x)
    elif FN == "sinh":
        y = libdevice.sinh(x)
    elif FN == "cosh":
        y = libdevice.cosh(x)
    elif FN == "tanh":
        y = libdevice.tanh(x)
    elif FN == "asinh":
        y = libdevice.asinh(x)
    elif FN == "acosh":
        y = libdevice.acosh(x)
    elif FN == "atanh":
        y = libdevice.atanh(x)
    elif FN == "erfc":
        y = libdevice.erfc(x)
    elif FN == "lgamma":
        y = libdevice.lgamma(x)
    elif FN == "tgamma":
        y = libdevice.tgamma(x)
    elif FN == "trunc":
        y = libdevice.trunc(x)
    elif FN == "round":
        y = libdevice.round(x)
    elif FN == "rint":
        y = libdevice.rint(x)
    elif FN == "expm1":
        y = libdevice.expm1(x)
    elif FN == "log1p":
        y = libdevice.log1p(x)
    elif FN == "log10":
        y = libdevice.log10(x)
    elif FN == "exp10":
        y = libdevice.exp10(x)
    elif FN == "cbrt":
        y = libdevice.cbrt(x)
    else:
        y = tl.where(libdevice.isnan(x), 1.0, 0.0) + tl.where(libdevice.isinf(x), 2.0, 0.0)
    tl.store(o_ptr + offs, y, mask=m)


# (function, low, high) of the inputs: inside the domain, away from poles
UNARY = [("exp", -20, 20), ("exp2", -30, 30), ("log", 1e-3, 1e4), ("log2", 1e-3, 1e4), ("sin", -100, 100),
         ("cos", -100, 100), ("sqrt", 0, 1e4), ("sqrt_rn", 0, 1e4), ("rsqrt", 1e-3, 1e4), ("erf", -4, 4),
         ("floor", -100, 100), ("ceil", -100, 100), ("abs", -100, 100), ("sigmoid", -20, 20), ("tan", -1.5, 1.5),
         ("asin", -1, 1), ("acos", -1, 1), ("atan", -50, 50), ("sinh", -10, 10), ("cosh", -10, 10),
         ("tanh", -10, 10), ("asinh", -50, 50), ("acosh", 1, 50), ("atanh", -0.99, 0.99), ("erfc", -3, 8),
         ("lgamma", 0.1, 30), ("tgamma", 0.1, 20), ("trunc", -100, 100), ("round", -100, 100),
         ("rint", -100, 100), ("expm1", -5, 5), ("log1p", -0.9, 100), ("log10", 1e-3, 1e4),
         ("exp10", -10, 10), ("cbrt", -1000, 1000), ("classify", -1, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn,lo,hi", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math(rng, fn, lo, hi, dtype):
    if dtype == np.float64 and fn in ("sqrt_rn",):
        pytest.skip("fp32 only")
    n = 300
    x = rng.uniform(lo, hi, n).astype(dtype)
    x[:6] = [lo, hi, (lo + hi) / 2, lo, hi, lo]
    if fn in ("floor", "ceil", "trunc", "round", "rint"):
        x[6:12] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]
    if fn == "classify":
        x[6:9] = [np.nan, np.inf, -np.inf]
    out = poisoned(n, dtype)
    check(unary_math, (triton.cdiv(n, 128),), x, out, n, FN=fn, BLOCK=128)


@triton.jit
def binary_math(x_ptr, y_ptr, o_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    if FN == "atan2":
        r = libdevice.atan2(x, y)
    elif FN == "pow":
        r = libdevice.pow(x, y)
    elif FN == "hypot":
        r = libdevice.hypot(x, y)
    elif FN == "fmod":
        r = libdevice.fmod(x, y)
    elif FN == "remainder":
        r = libdevice.remainder(x, y)
    elif FN == "copysign":
        r = libdevice.copysign(x, y)
    elif FN == "fdim":
        r = libdevice.fdim(x, y)
    elif FN == "fmax":
        r = libdevice.fmax(x, y)
    elif FN == "fmin":
        r = libdevice.fmin(x, y)
    elif FN == "nextafter":
        r = libdevice.nextafter(x, y)
    elif FN == "fdiv":
        r = tl.fdiv(x, y)
    elif FN == "div_rn":
        r = tl.div_rn(x, y)
    elif FN == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif FN == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif FN == "clamp":
        r = tl.clamp(x, -tl.abs(y), tl.abs(y))
    else:
        r = tl.fma(x, y, x * 0.5)
    tl.store(o_ptr + offs, r, mask=m)


BINARY = ["atan2", "pow", "hypot", "fmod", "remainder", "copysign", "fdim", "fmax", "fmin", "nextafter", "fdiv",
          "div_rn", "maximum_nan", "minimum_nan", "clamp", "fma"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", BINARY)
def test_binary_math(rng, fn, dtype):
    if dtype == np.float64 and fn == "div_rn":
        pytest.skip("fp32 only")
    n = 300
    x = (rng.standard_normal(n) * 10).astype(dtype)
    y = (rng.standard_normal(n) * 10).astype(dtype)
    if fn == "pow":
        x = np.abs(x) + 0.1
        y = y / 4
    x[:8] = [0.0, -0.0, np.nan, 1.0, np.nan, -3.0, np.inf, 2.0]
    y[:8] = [-0.0, 0.0, 1.0, np.nan, np.nan, -0.0, 3.0, 2.0]
    out = poisoned(n, dtype)
    check(binary_math, (triton.cdiv(n, 128),), x, y, out, n, FN=fn, BLOCK=128)


# --- elementwise ops of every dtype -------------------------------------------------------------------------------
@triton.jit
def int_ops(x_ptr, y_ptr, o_ptr, n, SIGNED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    o = o_ptr + offs * 16
    tl.store(o + 0, x + y, mask=m)
    tl.store(o + 1, x - y, mask=m)
    tl.store(o + 2, x * y, mask=m)
    tl.store(o + 3, x // y, mask=m)
    tl.store(o + 4, x % y, mask=m)
    tl.store(o + 5, x & y, mask=m)
    tl.store(o + 6, x | y, mask=m)
    tl.store(o + 7, x ^ y, mask=m)
    tl.store(o + 8, x << (y & 7), mask=m)
    tl.store(o + 9, x >> (y & 7), mask=m)
    tl.store(o + 10, tl.minimum(x, y), mask=m)
    tl.store(o + 11, tl.maximum(x, y), mask=m)
    tl.store(o + 12, -x, mask=m)
    tl.store(o + 13, tl.where(x < y, x, y) + tl.where(x == y, 1, 0) + tl.where(x >= y, 2, 0), mask=m)
    tl.store(o + 14, tl.abs(x), mask=m)
    if SIGNED:
        tl.store(o + 15, ~x, mask=m)
    else:
        tl.store(o + 15, x ^ y, mask=m)


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_int_ops(rng, dtype):
    n = 200
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y[:n // 2] = rng.integers(max(info.min, -9), 10, n // 2).astype(dtype)
    x[:4] = [info.min, info.max, 0, info.min]
    y[:4] = [np.array(-1).astype(dtype), 0, 0, 1]
    out = poisoned((n, 16), dtype)
    check(int_ops, (triton.cdiv(n, 64),), x, y, out, n, SIGNED=info.min < 0, BLOCK=64)


@triton.jit
def int_special(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    o = o_ptr + offs * 4
    tl.store(o + 0, tl.umulhi(x, y), mask=m)
    tl.store(o + 1, x << y, mask=m)
    tl.store(o + 2, x >> y, mask=m)
    tl.store(o + 3, tl.cdiv(x, y), mask=m)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_int_special(rng, dtype):
    n = 200
    info = np.iinfo(dtype)
    bits = 8 * np.dtype(dtype).itemsize
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    y[: n // 2] = rng.integers(0, bits + 4, n // 2).astype(dtype)  # shift amounts past the width
    out = poisoned((n, 4), dtype)
    check(int_special, (triton.cdiv(n, 64),), x, y, out, n, BLOCK=64)


@triton.jit
def float_ops(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    o = o_ptr + offs * 12
    tl.store(o + 0, x + y, mask=m)
    tl.store(o + 1, x - y, mask=m)
    tl.store(o + 2, x * y, mask=m)
    tl.store(o + 3, x / y, mask=m)
    tl.store(o + 4, tl.minimum(x, y), mask=m)
    tl.store(o + 5, tl.maximum(x, y), mask=m)
    tl.store(o + 6, -x, mask=m)
    tl.store(o + 7, tl.abs(x), mask=m)
    tl.store(o + 8, tl.where(x < y, x, y), mask=m)
    tl.store(o + 9, tl.where(x != y, 1.0, 0.0) + tl.where(x >= y, 2.0, 0.0), mask=m)
    tl.store(o + 10, x * y + x, mask=m)
    tl.store(o + 11, x % y, mask=m)


def _float_dtypes():
    d = [np.float16, np.float32, np.float64]
    if ml_dtypes is not None:
        d += [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
    return d


@pytest.mark.parametrize("dtype", _float_dtypes(), ids=lambda d: np.dtype(d).name)
def test_float_ops(rng, dtype):
    n = 200
    scale = 4.0 if np.dtype(dtype).itemsize == 1 else 100.0
    x = (rng.standard_normal(n) * scale).astype(np.float32).astype(dtype)
    y = (rng.standard_normal(n) * scale).astype(np.float32).astype(dtype)
    x[:6] = np.array([0.0, -0.0, np.nan, 1.0, 2.0, -2.0], np.float32).astype(dtype)
    y[:6] = np.array([-0.0, 0.0, 1.0, np.nan, 2.0, 0.0], np.float32).astype(dtype)
    out = poisoned((n, 12), dtype)
    check(float_ops, (triton.cdiv(n, 64),), x, y, out, n, BLOCK=64)


# --- casts -------------------------------------------------------------------------------------------------------
@triton.jit
def cast_all(x_ptr, o_b, o_i8, o_i16, o_i32, o_i64, o_u8, o_u16, o_u32, o_u64, o_f16, o_f32, o_f64, o_bf16,
             o_e4, o_e5, o_r16, o_rbf, n, RTZ: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_b + offs, x.to(tl.int1), mask=m)
    tl.store(o_i8 + offs, x.to(tl.int8), mask=m)
    tl.store(o_i16 + offs, x.to(tl.int16), mask=m)
    tl.store(o_i32 + offs, x.to(tl.int32), mask=m)
    tl.store(o_i64 + offs, x.to(tl.int64), mask=m)
    tl.store(o_u8 + offs, x.to(tl.uint8), mask=m)
    tl.store(o_u16 + offs, x.to(tl.uint16), mask=m)
    tl.store(o_u32 + offs, x.to(tl.uint32), mask=m)
    tl.store(o_u64 + offs, x.to(tl.uint64), mask=m)
    tl.store(o_f16 + offs, x.to(tl.float16), mask=m)
    tl.store(o_f32 + offs, x.to(tl.float32), mask=m)
    tl.store(o_f64 + offs, x.to(tl.float64), mask=m)
    tl.store(o_bf16 + offs, x.to(tl.bfloat16), mask=m)
    tl.store(o_e4 + offs, x.to(tl.float8e4nv), mask=m)
    tl.store(o_e5 + offs, x.to(tl.float8e5), mask=m)
    if RTZ:
        tl.store(o_r16 + offs, x.to(tl.float16, fp_downcast_rounding="rtz"), mask=m)
        tl.store(o_rbf + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=m)


def _cast_inputs(rng, dtype, n):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        x[: n // 2] = rng.integers(max(info.min, -300), min(info.max, 300), n // 2).astype(dt)
        return x
    x = (rng.standard_normal(n) * rng.choice([1e-6, 1e-2, 1, 100, 1e5, 1e12], n)).astype(np.float64)
    x[:12] = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 65520.0, 448.0, 460.0, 1e30, 3e9, -3e9]
    x[12:15] = [np.nan, np.inf, -np.inf]
    if dt == np.float16 or (ml_dtypes is not None and dt in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                                             ml_dtypes.float8_e5m2)):
        x = np.clip(x, -30000, 30000)
    return x.astype(np.float32).astype(dtype)


def _cast_sources():
    d = [np.bool_] + INT_DTYPES + [np.float16, np.float32, np.float64]
    if ml_dtypes is not None:
        d += [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
    return d


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("src", _cast_sources(), ids=lambda d: np.dtype(d).name)
def test_casts(rng, src):
    n = 256
    x = _cast_inputs(rng, src, n)
    dts = [np.bool_] + INT_DTYPES + [np.float16, np.float32, np.float64, ml_dtypes.bfloat16,
                                     ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16, ml_dtypes.bfloat16]
    outs = [poisoned(n, d) if np.dtype(d) != np.bool_ else np.ones(n, np.bool_) for d in dts]
    rtz = np.dtype(src) in (np.float32, np.float64)
    if not rtz:
        outs[-2][:] = 0
        outs[-1][:] = 0
    check(cast_all, (triton.cdiv(n, 128),), x, *outs, n, RTZ=rtz, BLOCK=128)


# --- atomics -----------------------------------------------------------------------------------------------------
@triton.jit
def atomics(p_ptr, v_ptr, idx_ptr, old_ptr, n, KIND: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    v = tl.load(v_ptr + offs, mask=m)
    if KIND == "add":
        old = tl.atomic_add(p_ptr + i, v, mask=m)
    elif KIND == "max":
        old = tl.atomic_max(p_ptr + i, v, mask=m)
    elif KIND == "min":
        old = tl.atomic_min(p_ptr + i, v, mask=m)
    elif KIND == "and":
        old = tl.atomic_and(p_ptr + i, v, mask=m)
    elif KIND == "or":
        old = tl.atomic_or(p_ptr + i, v, mask=m)
    elif KIND == "xor":
        old = tl.atomic_xor(p_ptr + i, v, mask=m)
    elif KIND == "xchg":
        old = tl.atomic_xchg(p_ptr + i, v, mask=m)
    else:
        old = tl.atomic_cas(p_ptr + i, v, v + 1)
    tl.store(old_ptr + offs, old, mask=m)


ATOMIC_CASES = [(k, d) for k in ("add", "max", "min", "and", "or", "xor", "xchg", "cas")
                for d in (np.int32, np.uint32, np.int64, np.uint64)] + \
               [(k, d) for k in ("add", "max", "min", "xchg", "cas") for d in (np.float32, np.float64)] + \
               [("add", np.float16), ("cas", np.int16), ("cas", np.float16)]


@pytest.mark.parametrize("kind,dtype", ATOMIC_CASES, ids=[f"{k}-{np.dtype(d).name}" for k, d in ATOMIC_CASES])
def test_atomics_distinct(rng, kind, dtype):
    """Every element its own address: the old values are determined."""
    n = 150
    dt = np.dtype(dtype)
    if dt.kind == "f":
        p = rng.standard_normal(n).astype(dtype)
        v = rng.standard_normal(n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        p = rng.integers(max(info.min, -1000), 1000, n).astype(dtype)
        v = rng.integers(max(info.min, -1000), 1000, n).astype(dtype)
    if kind == "cas":
        v[::2] = p[::2]  # half of them match
    idx = rng.permutation(n).astype(np.int32)
    old = poisoned(n, dtype)
    check(atomics, (triton.cdiv(n, 64),), p, v, idx, old, n, KIND=kind, BLOCK=64)


@pytest.mark.parametrize("kind,dtype", [("add", np.int32), ("max", np.int64), ("xor", np.uint32),
                                        ("min", np.float32), ("max", np.float64), ("or", np.int32)])
def test_atomics_colliding(rng, kind, dtype):
    """Many elements on few addresses: only the final memory is determined."""
    n = 300
    dt = np.dtype(dtype)
    v = rng.standard_normal(n).astype(dtype) if dt.kind == "f" else rng.integers(-1000, 1000, n).astype(dtype)
    p = np.zeros(7, dtype)
    idx = rng.integers(0, 7, n).astype(np.int32)
    old = np.zeros(n, dtype)  # old values depend on the order: not compared

    @sim_mode.ignoring("old_ptr")
    def go():
        check(atomics, (triton.cdiv(n, 128),), p, v, idx, old, n, KIND=kind, BLOCK=128)

    go()


# --- reductions, scans, shapes -----------------------------------------------------------------------------------
@triton.jit
def reductions(x_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, SORT: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(o_ptr + rn, tl.sum(x, axis=0))
    tl.store(o_ptr + BN + rm, tl.max(x, axis=1))
    tl.store(o_ptr + BN + BM + rn, tl.min(x, axis=0))
    tl.store(o_ptr + 2 * BN + BM + rm, tl.argmax(x, axis=1).to(x.dtype))
    tl.store(o_ptr + 2 * BN + 2 * BM + rn, tl.argmin(x, axis=0).to(x.dtype))
    c = tl.cumsum(x, axis=1)
    tl.store(o_ptr + 3 * BN + 2 * BM + rm[:, None] * BN + rn[None, :], c)
    if SORT:
        s = tl.sort(x, dim=1)
    else:
        s = x * 2
    tl.store(o_ptr + 3 * BN + 2 * BM + BM * BN + rm[:, None] * BN + rn[None, :], s)
    t = tl.trans(x)
    tl.store(o_ptr + 3 * BN + 2 * BM + 2 * BM * BN + rn[:, None] * BM + rm[None, :], t)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.int8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape,warps", [((8, 16), 1), ((32, 64), 4), ((64, 32), 8), ((4, 128), 2)])
def test_reductions(rng, dtype, shape, warps):
    BM, BN = shape
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(shape).astype(dtype)
    else:
        x = rng.integers(-50, 50, shape).astype(dtype)
    out = poisoned(3 * BN + 2 * BM + 3 * BM * BN, dtype)
    check(reductions, (1,), x, out, BM=BM, BN=BN, SORT=BM * BN <= 256, num_warps=warps)


@triton.jit
def shapes(x_ptr, o_ptr, B: tl.constexpr, FLIP: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    a, b = tl.split(tl.reshape(x, (B // 2, 2)))
    tl.store(o_ptr + tl.arange(0, B // 2), a)
    tl.store(o_ptr + B // 2 + tl.arange(0, B // 2), b)
    if FLIP:
        tl.store(o_ptr + B + r, tl.flip(x, 0))
    else:
        tl.store(o_ptr + B + r, x)
    j = tl.interleave(a, b)
    tl.store(o_ptr + 2 * B + r, j)
    tl.store(o_ptr + 3 * B + r, tl.sum(tl.reshape(tl.cat(x, x * 2, can_reorder=True), (2, B)), axis=0) * 0 + x)
    tl.store(o_ptr + 4 * B + r, tl.cumsum(x, 0))
    h = tl.histogram((x & 15).to(tl.int32), 16)
    tl.store(o_ptr + 5 * B + tl.arange(0, 16), h.to(x.dtype))
    g = tl.gather(x, (r * 7) & (B - 1), 0)
    tl.store(o_ptr + 5 * B + 16 + r, g)


@pytest.mark.parametrize("B,warps", [(32, 1), (256, 4), (1024, 8)])
def test_shapes(rng, B, warps):
    x = rng.integers(-100, 100, B).astype(np.int32)
    out = poisoned(6 * B + 16, np.int32)
    check(shapes, (1,), x, out, B=B, FLIP=True, num_warps=warps)


@triton.jit
def gather_hist(x_ptr, i_ptr, o_ptr, n, R: tl.constexpr, C: tl.constexpr, K: tl.constexpr, NB: tl.constexpr):
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    rk = tl.arange(0, K)
    x = tl.load(x_ptr + rr[:, None] * C + rc[None, :])
    i1 = tl.load(i_ptr + rr[:, None] * K + rk[None, :])  # [R, K]: along axis 1
    i0 = tl.load(i_ptr + R * K + rk[:, None] * C + rc[None, :]).to(tl.int64)  # [K, C]: along axis 0
    tl.store(o_ptr + rr[:, None] * K + rk[None, :], tl.gather(x, i1, 1))
    tl.store(o_ptr + R * K + rk[:, None] * C + rc[None, :], tl.gather(x, i0, 0))
    tl.store(o_ptr + R * K + K * C + rr[:, None] * C + rc[None, :], tl.flip(x, 0))
    v = tl.reshape(i1, [R * K])
    h = tl.histogram(v, NB, mask=tl.arange(0, R * K) < n)
    tl.store(o_ptr + R * K + K * C + R * C + tl.arange(0, NB), h.to(x.dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.float16])
@pytest.mark.parametrize("R,C,K,NB,warps", [(8, 16, 4, 16, 1), (16, 32, 64, 64, 2), (4, 64, 8, 256, 4)])
def test_gather_histogram(rng, dtype, R, C, K, NB, warps):
    x = rng.integers(-100, 100, (R, C)).astype(dtype)
    idx = np.concatenate([rng.integers(-2, C + 2, R * K), rng.integers(-2, R + 2, K * C)]).astype(np.int32)
    out = poisoned(R * K + K * C + R * C + NB, dtype)
    n = int(rng.integers(0, R * K + 1))
    check(gather_hist, (1,), x, idx, out, n, R=R, C=C, K=K, NB=NB, num_warps=warps)

    def take(src, i, axis):
        ok = (i >= 0) & (i < src.shape[axis])
        return np.where(ok, np.take_along_axis(src, np.where(ok, i, 0), axis), 0).astype(dtype)

    i1, i0 = idx[:R * K].reshape(R, K), idx[R * K:].reshape(K, C)
    v = i1.reshape(-1)[:n]
    want = np.concatenate([take(x, i1, 1).ravel(), take(x, i0, 0).ravel(), np.flip(x, 0).ravel(),
                           np.bincount(v[(v >= 0) & (v < NB)], minlength=NB)[:NB].astype(dtype)])
    assert np.array_equal(out, want)


# --- control flow, scalars, random numbers --------------------------------------------------------------------------
@triton.jit
def control(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    i = 0
    while i < v:
        if i % 3 == 0:
            acc += tl.arange(0, BLOCK).to(tl.float32)
        elif i % 3 == 1:
            acc -= 1.0
        else:
            acc = acc * 0.5
        i += 1
    for k in range(0, v, 2):
        acc += k
    if v > 5:
        tl.store(o_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)
        return
    tl.store(o_ptr + pid * BLOCK + tl.arange(0, BLOCK), -acc)


def test_control_flow(rng):
    n = 24
    x = rng.integers(0, 12, n).astype(np.int32)
    out = poisoned((n, 64), np.float32)
    check(control, (n,), x, out, n, BLOCK=64)


@triton.jit
def randoms(o_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.rand(seed, offs))
    tl.store(o_ptr + 4 * BLOCK + offs, tl.randn(seed, offs))
    tl.store(o_ptr + 8 * BLOCK + offs, tl.randint(seed, offs).to(tl.float32))


def test_random(rng):
    out = poisoned(12 * 128, np.float32)
    check(randoms, (4,), out, 1234, BLOCK=128)


@triton.jit
def scalars(x_ptr, o_ptr, a, b, f, flag):
    x = tl.load(x_ptr)
    y = x * a + b
    if flag:
        y = y + 1
    tl.store(o_ptr, y)
    tl.store(o_ptr + 1, (x.to(tl.float32) * f).to(tl.int64))
    tl.store(o_ptr + 2, tl.num_programs(0).to(tl.int64) + tl.program_id(0))


def test_scalars():
    x = np.array([7], np.int64)
    out = poisoned(3, np.int64)
    check(scalars, (1,), x, out, 3, 2 ** 40, 2.5, True)


# --- dots the e2e suite leaves out ----------------------------------------------------------------------------------
@triton.jit
def dot_misc(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr,
             OUT16: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if OUT16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("case", ["tf32x3", "ieee", "f16acc", "f8acc16"])
def test_dot_misc(rng, case):
    M, N, K = 32, 32, 32
    dt = {"tf32x3": np.float32, "ieee": np.float32, "f16acc": np.float16}.get(case)
    if case == "f8acc16":
        if os.environ.get("NEREID_TEST_DEVICE") == "cuda":
            # on an H100 (sm_90a) this launch did not finish: not diagnosed yet, so the GPU
            # mode of the suite leaves it to the interpreter, ptxas and the simulator
            pytest.skip("fp8 x fp8 -> fp16 dot: the H100 launch does not finish (under investigation)")
        if ml_dtypes is None:
            pytest.skip("needs ml_dtypes")
        dt = ml_dtypes.float8_e4m3fn
    a = rng.standard_normal((M, K)).astype(np.float32).astype(dt)
    b = rng.standard_normal((K, N)).astype(np.float32).astype(dt)
    out16 = case in ("f16acc", "f8acc16")
    c = poisoned((M, N), np.float16 if out16 else np.float32)
    check(dot_misc, (1,), a, b, c, M=M, N=N, K=K, PREC="tf32x3" if case == "tf32x3" else "ieee", OUT16=out16)


# --- printing and assertions ----------------------------------------------------------------------------------------
@triton.jit
def printing(x_ptr, BLOCK: tl.constexpr, HEX: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x, hex=HEX)
    tl.device_print("scalar", tl.sum(x, axis=0))


@pytest.mark.parametrize("dtype,hex_", [(np.int32, False), (np.float32, False), (np.float16, False),
                                        (np.int64, True), (np.uint8, False)])
def test_device_print(capfd, dtype, hex_):
    x = (np.arange(8) * 3 - 5).astype(dtype)
    sim_mode.interpret(printing, (1,), x, BLOCK=8, HEX=hex_)
    interp = capfd.readouterr().out
    import ptxsim
    for arch in sim_mode.ARCHS:
        k = printing.compile(f"*{sim_mode.sig_dtype(x)}:16, 8, {hex_}", num_warps=4, arch=arch)
        mem = ptxsim.GlobalMemory()
        r = ptxsim.launch(k.ptx, k.name, (1,), params=[mem.from_array(x)], memory=mem, shared_bytes=k.shared)
        assert _lines("".join(r.printed)) == _lines(interp), arch


def _lines(text):
    """Printed lines with their values as numbers (the interpreter prints floats
    in the shortest form that reads back, vprintf with %.9g)."""
    out = []
    for ln in text.splitlines():
        head, _, val = ln.rpartition(" ")
        try:
            v = float(val) if not val.startswith("0x") else int(val, 16)
        except ValueError:
            v = val
        out.append((head, v))
    return sorted(out, key=repr)


@triton.jit
def asserting(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x < 100, "x is too large")
    tl.store(x_ptr + offs, x + 1)


def test_device_assert():
    import ptxsim
    x = np.arange(32).astype(np.int32)
    check(asserting, (1,), x, BLOCK=32)  # passes on both
    x[7] = 500
    for arch in sim_mode.ARCHS:
        k = asserting.compile("*i32:16, 32", num_warps=1, arch=arch)
        mem = ptxsim.GlobalMemory()
        with pytest.raises(ptxsim.DeviceAssertion, match="x is too large"):
            ptxsim.launch(k.ptx, k.name, (1,), params=[mem.from_array(x)], memory=mem, shared_bytes=k.shared)
    with pytest.raises(triton.LaunchError):
        asserting[(1,)](x, BLOCK=32)


# --- compiler bugs the simulator found ---------------------------------------------------------------------------
def test_epilogue_waits_for_pipeline_copies(rng):
    # the epilogue's layout conversion must not take shared memory that the
    # pipelined loop's last (zero-fill) cp.async groups may still be writing:
    # gpu-smem keeps those buffers live to the drain (async_wait 0)
    from test_hopper_matmul import f16_acc_kernel
    K = 128
    a = rng.standard_normal((128, K)).astype(np.float16)
    b = (rng.standard_normal((K, 128)) * 0.25).astype(np.float16)
    c = poisoned((128, 128), np.float16)
    check(f16_acc_kernel, (1,), a, b, c, K, BM=128, BN=128, BK=64, num_warps=4, num_stages=2)
