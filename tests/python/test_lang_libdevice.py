"""libdevice (tl.extra.libdevice / tl.extra.cuda.libdevice): every function
Nereid implements, on fresh random inputs over each function's domain with a
masked tail, in float32 and float64, against float64 references (numpy,
Python's math, exact rationals for the directed roundings and conversions).

The interpreter evaluates each function in double precision (long double
where libm has no function) and rounds once, so float32 results are within
an ulp of the reference; float64 results within a few ulps.  The kernels
are generated into a module of their own (one kernel per group of
functions), so each is compiled once per dtype; under NEREID_TEST_PTXAS=1
that compilation is also assembled for sm_80 and sm_90."""
import importlib.util
import decimal
import math
import os
import sys
import tempfile
from fractions import Fraction

import numpy as np
import pytest

import nereid as triton  # noqa: F401
from conftest import poisoned

BLOCK = 64
N = 150  # three programs, the last one masked

SQRT_PI = math.sqrt(math.pi)


# --- references in float64 --------------------------------------------------------------------
def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


def _libm_long_double(name, fallback):
    """C's long double function `name` (glibc's lgammal, tgammal: within a few long double
    ulp, where CPython's lgamma is off by thousands of ulp near the zeros at 1 and 2 and by
    several elsewhere); `fallback` where libm or long double is not there."""
    try:
        import ctypes
        import ctypes.util
        f = getattr(ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6"), name)
        if ctypes.sizeof(ctypes.c_longdouble) <= 8:
            return fallback
        f.restype, f.argtypes = ctypes.c_longdouble, [ctypes.c_longdouble]
        return lambda x: float(f(x))
    except (OSError, AttributeError):
        return fallback


def _erfinv(y):
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a = abs(y)
    x = a * 0.886 if a < 0.5 else math.sqrt(-math.log(1 - a))
    for _ in range(100):
        f = math.erf(x) - a if a <= 0.5 else (1 - a) - math.erfc(x)
        nx = x - f / (2 / SQRT_PI * math.exp(-x * x))
        if nx == x:
            break
        x = nx
    return math.copysign(x, y)


def _erfcinv(z):
    if z > 1:
        return -_erfcinv(2 - z)
    if z >= 0.5:
        return _erfinv(1 - z)
    x = math.sqrt(-math.log(z))
    for _ in range(100):
        nx = x + (math.erfc(x) - z) / (2 / SQRT_PI * math.exp(-x * x))
        if nx == x:
            break
        x = nx
    return x


def _sinpi(x, cos=False):
    t = x - 2 * round(x / 2)
    n = round(2 * t)
    r = t - n / 2
    q = (int(n) + (1 if cos else 0)) & 3
    y = math.cos(math.pi * r) if q & 1 else math.sin(math.pi * r)
    return -y if q & 2 else y


def _round_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _logb(x):
    return np.array([math.frexp(v)[1] - 1 if v != 0 else -math.inf for v in np.abs(x)])


def _erfcx(x):
    """exp(x^2) erfc(x) with x^2 split exactly into h + l."""
    out = []
    for v in x:
        q = Fraction(float(v)) ** 2
        h = float(q)
        out.append(math.exp(h) * (1 + float(q - Fraction(h))) * math.erfc(v))
    return np.array(out)


def _normcdf(x):
    """erfc(-x / sqrt 2) / 2 with the quotient's rounding corrected to first order."""
    out = []
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        r2 = decimal.Decimal(2).sqrt()
        for v in x:
            t = -v / math.sqrt(2)
            tl = float(decimal.Decimal(-float(v)) / r2 - decimal.Decimal(t))
            out.append(0.5 * (math.erfc(t) - 2 / SQRT_PI * math.exp(-t * t) * tl))
    return np.array(out)


# name: (arguments, float64 reference, input sampler, ulp bound for f32, for f64)
def _u(lo, hi):
    return lambda rng, n: rng.uniform(lo, hi, n)


def _mag(lo, hi):  # random magnitudes and signs over exponents lo..hi
    return lambda rng, n: np.exp2(rng.uniform(lo, hi, n)) * rng.choice([-1.0, 1.0], n)


def _pos(lo, hi):
    return lambda rng, n: np.exp2(rng.uniform(lo, hi, n))


UNARY = {
    "exp": (np.exp, _u(-80, 80)), "exp2": (np.exp2, _u(-120, 120)), "exp10": (lambda x: 10.0 ** x, _u(-35, 35)),
    "expm1": (np.expm1, _u(-3, 3)), "log": (np.log, _pos(-100, 100)), "log2": (np.log2, _pos(-100, 100)),
    "log10": (np.log10, _pos(-100, 100)), "log1p": (np.log1p, _u(-0.9, 5)), "logb": (_logb, _mag(-100, 100)),
    "sqrt": (np.sqrt, _pos(-100, 100)), "rsqrt": (lambda x: 1 / np.sqrt(x), _pos(-100, 100)),
    "cbrt": (np.cbrt, _mag(-100, 100)), "rcbrt": (lambda x: 1 / np.cbrt(x), _mag(-100, 100)),
    "sin": (np.sin, _u(-20, 20)), "cos": (np.cos, _u(-20, 20)), "tan": (np.tan, _u(-1.5, 1.5)),
    "sinpi": (_vec(_sinpi), _u(-8, 8)), "cospi": (_vec(lambda x: _sinpi(x, True)), _u(-8, 8)),
    "asin": (np.arcsin, _u(-1, 1)), "acos": (np.arccos, _u(-1, 1)), "atan": (np.arctan, _mag(-20, 20)),
    "sinh": (np.sinh, _u(-20, 20)), "cosh": (np.cosh, _u(-20, 20)), "tanh": (np.tanh, _u(-8, 8)),
    "asinh": (np.arcsinh, _mag(-20, 20)), "acosh": (np.arccosh, _u(1, 50)), "atanh": (np.arctanh, _u(-0.99, 0.99)),
    "erf": (_vec(math.erf), _u(-4, 4)), "erfc": (_vec(math.erfc), _u(-3, 9)),
    "erfinv": (_vec(_erfinv), _u(-0.999, 0.999)), "erfcinv": (_vec(_erfcinv), _u(0.001, 1.999)),
    "erfcx": (_erfcx, _u(-3, 20)), "normcdf": (_normcdf, _u(-8, 8)),
    "normcdfinv": (_vec(lambda p: -math.sqrt(2) * _erfcinv(2 * p)), _u(0.001, 0.999)),
    "lgamma": (_vec(_libm_long_double("lgammal", math.lgamma)), _u(0.1, 30)),
    "tgamma": (_vec(_libm_long_double("tgammal", math.gamma)), _u(0.1, 30)),
    "floor": (np.floor, _u(-100, 100)), "ceil": (np.ceil, _u(-100, 100)), "trunc": (np.trunc, _u(-100, 100)),
    "round": (_round_away, _u(-100, 100)), "rint": (np.rint, _u(-100, 100)), "nearbyint": (np.rint, _u(-100, 100)),
    "fabs": (np.abs, _u(-100, 100)), "abs": (np.abs, _u(-100, 100)),
}
BINARY = {
    "atan2": (np.arctan2, _u(-10, 10), _u(-10, 10)), "hypot": (np.hypot, _mag(-60, 60), _mag(-60, 60)),
    "rhypot": (lambda x, y: 1 / np.hypot(x, y), _mag(-60, 60), _mag(-60, 60)),
    "fmod": (np.fmod, _u(-100, 100), _u(-10, 10)),
    "remainder": (_vec(math.remainder), _u(-100, 100), _u(-10, 10)),
    "copysign": (np.copysign, _u(-100, 100), _u(-1, 1)), "fdim": (lambda x, y: np.maximum(x - y, 0), _u(-5, 5), _u(-5, 5)),
    "fmax": (np.fmax, _u(-5, 5), _u(-5, 5)), "fmin": (np.fmin, _u(-5, 5), _u(-5, 5)),
    "pow": (np.power, _u(0.1, 10), _u(-10, 10)),
}
TERNARY = {
    "fma": (lambda x, y, z: x * y + z, _u(-10, 10)),
    "norm3d": (lambda x, y, z: np.sqrt(x * x + y * y + z * z), _u(-10, 10)),
    "rnorm3d": (lambda x, y, z: 1 / np.sqrt(x * x + y * y + z * z), _u(-10, 10)),
}
QUATERNARY = {
    "norm4d": (lambda a, b, c, d: np.sqrt(a * a + b * b + c * c + d * d), _u(-10, 10)),
    "rnorm4d": (lambda a, b, c, d: 1 / np.sqrt(a * a + b * b + c * c + d * d), _u(-10, 10)),
}
FAST = {"fast_expf": "exp", "fast_exp10f": "exp10", "fast_logf": "log", "fast_log2f": "log2", "fast_log10f": "log10",
        "fast_sinf": "sin", "fast_cosf": "cos", "fast_tanf": "tan"}
# bounds in ulps of the result (f32, f64): the interpreter's own error plus the reference's
LOOSE64 = {"tan": 4, "sinh": 4, "cosh": 4, "lgamma": 8, "tgamma": 8, "erfc": 4, "erfcx": 16, "pow": 4,
           "exp10": 4, "normcdf": 8, "rcbrt": 3, "rhypot": 3, "norm3d": 3, "rnorm3d": 3, "norm4d": 3, "rnorm4d": 3,
           "erfinv": 4, "erfcinv": 4, "normcdfinv": 4, "sinpi": 4, "cospi": 4}
LOOSE32 = {"tgamma": 2, "lgamma": 2}
# f32 bounds of the GPU's math library (src/ptx_math.c, measured in tests/c/test_ptx_math.h): its
# results run in the device modes of the suite (the simulator reproduces them bit for bit)
PTX32 = {"sin": 1.5, "cos": 1.5, "tan": 2, "asin": 1.5, "acos": 1.5, "atan2": 1.5, "sinh": 2, "cosh": 2, "tanh": 2,
         "asinh": 3, "acosh": 3, "atanh": 2, "erf": 1.5, "erfc": 4, "exp10": 1.5, "expm1": 1.5, "log1p": 1.5,
         "log2": 2, "log10": 2, "rsqrt": 1.5}


def _bound32(f):
    return max(LOOSE32.get(f, 1), PTX32.get(FAST.get(f, f), 1))


def _ulps(got, ref, dt, floor=0.0):
    """Error in ulps of the reference (of max(|ref|, floor): absolute error near a function's zeros)."""
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    sp = np.spacing(np.maximum(np.abs(ref), floor).astype(dt)).astype(np.float64)
    err = np.abs(got - ref) / np.maximum(sp, np.finfo(dt).smallest_subnormal)
    return np.where(same, 0.0, err)


# --- the generated kernels --------------------------------------------------------------------
def _gen_source():
    lines = ["import nereid as triton", "import nereid.language as tl",
             "from nereid.language.extra import libdevice",
             "from nereid.language.extra.cuda import libdevice as cuda_libdevice", ""]

    def kernel(name, fns, nargs, call):
        params = ", ".join(f"x{i}" for i in range(nargs))
        lines.append("@triton.jit")
        lines.append(f"def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):")
        lines.append("    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)")
        lines.append("    m = offs < n")
        for j, fn in enumerate(fns):
            for i in range(nargs):
                lines.append(f"    x{i} = tl.load(x_ptr + ({j * nargs + i}) * n + offs, mask=m, other=1)")
            lines.append(f"    tl.store(out_ptr + {j} * n + offs, {call(fn, params)}, mask=m)")
        lines.append("")

    # half the names through the extra.cuda alias, one through tl.extra.cuda.libdevice
    def ld(fn, params, j=[0]):
        j[0] += 1
        mod = ("libdevice", "cuda_libdevice", "tl.extra.libdevice", "tl.extra.cuda.libdevice")[j[0] % 4]
        return f"{mod}.{fn}({params})"

    kernel("k_unary", list(UNARY), 1, ld)
    kernel("k_binary", list(BINARY), 2, ld)
    kernel("k_ternary", list(TERNARY), 3, ld)
    kernel("k_quaternary", list(QUATERNARY), 4, ld)
    kernel("k_fast", list(FAST) + ["saturatef", "rsqrt_rn"], 1, ld)
    return "\n".join(lines)


_MOD = None


def _kernels():
    global _MOD
    if _MOD is None:
        d = tempfile.mkdtemp(prefix="nereid_libdevice_")
        path = os.path.join(d, "libdevice_kernels.py")
        with open(path, "w") as f:
            f.write(_gen_source())
        spec = importlib.util.spec_from_file_location("libdevice_kernels", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["libdevice_kernels"] = mod
        spec.loader.exec_module(mod)
        _MOD = mod
    return _MOD


def _run(kernel, inputs, nout, dt, out_dt=None):
    x = np.ascontiguousarray(np.stack(inputs).astype(dt))
    out = poisoned((nout, N), out_dt or dt)
    kernel[(triton.cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK)
    return out


# Python's lgamma (CPython's own) is accurate to absolute, not relative, error near the zeros at 1 and 2
FLOOR = {"lgamma": 1.0}


def _check(name, got, ref, dt, bound):
    e = _ulps(got, ref, dt, FLOOR.get(name, 0.0))
    worst = int(np.argmax(e))
    assert e[worst] <= bound, f"{name} {np.dtype(dt).name}: {e[worst]:.2f} ulp at element {worst}: got {got[worst]!r}, want {ref[worst]!r}"


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_unary(rng, dt):
    k = _kernels()
    xs = [UNARY[f][1](rng, N) for f in UNARY]
    xs = [np.asarray(v, dt) for v in xs]
    out = _run(k.k_unary, xs, len(UNARY), dt)
    for j, f in enumerate(UNARY):
        ref = UNARY[f][0](xs[j].astype(np.float64))
        bound = LOOSE64.get(f, 2) if dt == np.float64 else _bound32(f)
        _check(f, out[j], ref, dt, bound)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_binary(rng, dt):
    k = _kernels()
    xs = []
    for f in BINARY:
        xs += [np.asarray(BINARY[f][1](rng, N), dt), np.asarray(BINARY[f][2](rng, N), dt)]
    out = _run(k.k_binary, xs, len(BINARY), dt)
    for j, f in enumerate(BINARY):
        a, b = xs[2 * j].astype(np.float64), xs[2 * j + 1].astype(np.float64)
        bound = LOOSE64.get(f, 2) if dt == np.float64 else _bound32(f)
        _check(f, out[j], BINARY[f][0](a, b), dt, bound)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_ternary_quaternary(rng, dt):
    k = _kernels()
    for table, kern, n in ((TERNARY, k.k_ternary, 3), (QUATERNARY, k.k_quaternary, 4)):
        xs = []
        for f in table:
            xs += [np.asarray(table[f][1](rng, N), dt) for _ in range(n)]
        out = _run(kern, xs, len(table), dt)
        for j, f in enumerate(table):
            args = [xs[n * j + i].astype(np.float64) for i in range(n)]
            if f == "fma":  # exact product and sum for f32 inputs; one rounding for f64 is checked loosely
                ref = np.array([float(Fraction(a) * Fraction(b) + Fraction(c)) for a, b, c in zip(*args)])
            else:
                ref = table[f][0](*args)
            bound = LOOSE64.get(f, 2) if dt == np.float64 else _bound32(f)
            _check(f, out[j], ref, dt, bound)


def test_fast_and_f32_only(rng):
    k = _kernels()
    ref_of = {"exp": np.exp, "exp10": lambda x: 10.0 ** x, "log": np.log, "log2": np.log2, "log10": np.log10,
              "sin": np.sin, "cos": np.cos, "tan": np.tan}
    dom = {"exp": _u(-80, 80), "exp10": _u(-30, 30), "log": _pos(-60, 60), "log2": _pos(-60, 60),
           "log10": _pos(-60, 60), "sin": _u(-10, 10), "cos": _u(-10, 10), "tan": _u(-1.5, 1.5)}
    names = list(FAST) + ["saturatef", "rsqrt_rn"]
    xs = [np.asarray(dom[FAST[f]](rng, N) if f in FAST else (_u(-0.5, 1.5)(rng, N) if f == "saturatef"
                                                              else _pos(-100, 100)(rng, N)), np.float32)
          for f in names]
    out = _run(k.k_fast, xs, len(names), np.float32)
    for j, f in enumerate(names):
        x = xs[j].astype(np.float64)
        if f in FAST:
            ref = ref_of[FAST[f]](x)
        elif f == "saturatef":
            ref = np.clip(x, 0, 1)
        else:
            ref = 1 / np.sqrt(x)
        _check(f, out[j], ref, np.float32, 0.5 if f == "rsqrt_rn" else _bound32(f))


# --- directed roundings and conversions against exact rationals --------------------------------------
def _round_dir(q, dt, mode):
    """The float of dtype dt nearest to rational q in direction mode (rn rz rd ru)."""
    r = dt(float(q)) if dt == np.float64 else np.float32(float(q))  # float(q) is RN; f32 from f64 can double-round
    if dt == np.float32:  # repair a double rounding of the RN candidate
        lo, hi = np.nextafter(r, np.float32(-np.inf)), np.nextafter(r, np.float32(np.inf))
        cands = [lo, r, hi]
        r = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(np.float32(c).view(np.int32)) & 1))
    if mode == "rn" or Fraction(float(r)) == q:
        return r
    up = Fraction(float(r)) < q
    if mode == "ru" or (mode == "rz" and q < 0):
        return np.nextafter(r, dt(np.inf)) if up else r
    return r if up else np.nextafter(r, dt(-np.inf))


def _dir_kernel_source():
    ops = [("add", 2), ("sub", 2), ("mul", 2), ("div", 2), ("fma", 3), ("sqrt", 1), ("rcp", 1)]
    lines = ["import nereid as triton", "import nereid.language as tl",
             "from nereid.language.extra import libdevice", "", "@triton.jit",
             "def k_dir(x_ptr, out_ptr, n, BLOCK: tl.constexpr):",
             "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "    m = offs < n",
             "    a = tl.load(x_ptr + offs, mask=m, other=1)", "    b = tl.load(x_ptr + n + offs, mask=m, other=1)",
             "    c = tl.load(x_ptr + 2 * n + offs, mask=m, other=1)"]
    j = 0
    for op, na in ops:
        for mode in ("rn", "rz", "rd", "ru"):
            args = ", ".join("abc"[:na])
            if op == "sqrt":
                args = "tl.abs(a)"
            lines.append(f"    tl.store(out_ptr + {j} * n + offs, libdevice.{op}_{mode}({args}), mask=m)")
            j += 1
    return "\n".join(lines) + "\n", ops


def _load_module(name, src):
    d = tempfile.mkdtemp(prefix="nereid_ld_")
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_directed_roundings(rng, dt):
    src, ops = _dir_kernel_source()
    mod = _load_module("libdevice_dir_" + np.dtype(dt).name, src)
    a = (rng.standard_normal(N) * 10).astype(dt)
    b = (rng.standard_normal(N) * 3).astype(dt)
    c = (rng.standard_normal(N)).astype(dt)
    out = _run(mod.k_dir, [a, b, c], 28, dt)
    j = 0
    for op, _na in ops:
        for mode in ("rn", "rz", "rd", "ru"):
            for i in range(N):
                A, B, C = Fraction(float(a[i])), Fraction(float(b[i])), Fraction(float(c[i]))
                if op == "sqrt":
                    s = dt(np.sqrt(abs(float(a[i]))))
                    # the candidate and its neighbours: pick by exact comparison of squares
                    q2 = abs(A)
                    cands = [np.nextafter(s, dt(-np.inf)), s, np.nextafter(s, dt(np.inf))]
                    below = [x for x in cands if Fraction(float(x)) ** 2 <= q2]
                    above = [x for x in cands if Fraction(float(x)) ** 2 >= q2]
                    lo, hi = max(below), min(above)
                    if mode in ("rz", "rd"):
                        want = lo
                    elif mode == "ru":
                        want = hi
                    else:  # rounding the f64 square root of an f32 to f32 is correct rounding
                        want = dt(np.sqrt(np.float64(abs(float(a[i])))))
                else:
                    q = {"add": A + B, "sub": A - B, "mul": A * B, "div": A / B, "fma": A * B + C,
                         "rcp": 1 / A}[op]
                    want = _round_dir(q, dt, mode)
                got = out[j][i]
                assert got == want, f"{op}_{mode}({a[i]!r}, {b[i]!r}, {c[i]!r}) = {got!r}, want {want!r}"
            j += 1


CONVS = [("double2float", np.float64, np.float32), ("int2float", np.int32, np.float32),
         ("uint2float", np.uint32, np.float32), ("ll2float", np.int64, np.float32),
         ("ull2float", np.uint64, np.float32), ("ll2double", np.int64, np.float64),
         ("ull2double", np.uint64, np.float64), ("float2int", np.float32, np.int32),
         ("float2uint", np.float32, np.int32), ("double2int", np.float64, np.int32),
         ("double2uint", np.float64, np.int32), ("float2ll", np.float32, np.int64),
         ("float2ull", np.float32, np.int64), ("double2ll", np.float64, np.int64),
         ("double2ull", np.float64, np.int64)]


def _conv_source():
    lines = ["import nereid as triton", "import nereid.language as tl",
             "from nereid.language.extra import libdevice", ""]
    for name, _s, _d in CONVS:
        lines += ["@triton.jit", f"def k_{name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):",
                  "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "    m = offs < n",
                  "    x = tl.load(x_ptr + offs, mask=m, other=1)"]
        for j, mode in enumerate(("rn", "rz", "rd", "ru")):
            lines.append(f"    tl.store(out_ptr + {j} * n + offs, libdevice.{name}_{mode}(x), mask=m)")
        lines.append("")
    return "\n".join(lines)


def _conv_inputs(rng, src):
    if src == np.float64:
        return rng.standard_normal(N) * np.exp2(rng.uniform(-10, 40, N))
    if src == np.float32:
        return (rng.standard_normal(N) * np.exp2(rng.uniform(-10, 28, N))).astype(np.float32)
    info = np.iinfo(src)
    v = rng.integers(info.min, info.max, N, dtype=src, endpoint=True)
    v[:8] = np.array([0, 1, int(info.max), int(info.min), int(info.max) - 1, 2 ** 24 + 1 if info.max > 2 ** 25 else 3,
                      (2 ** 53 + 1) if info.max > 2 ** 54 else 5, 7], dtype=src)
    return v


def _int_of(q, mode, dt):
    """Integer rounding of rational q in mode, saturated to the range of dt (unsigned variants: their bits)."""
    if mode == "rn":
        f = math.floor(q)
        r = f + 1 if (q - f > Fraction(1, 2) or (q - f == Fraction(1, 2) and f % 2)) else f
    else:
        r = {"rz": int(q), "rd": math.floor(q), "ru": math.ceil(q)}[mode]
    return r


def test_conversions(rng):
    mod = _load_module("libdevice_conv", _conv_source())
    for name, src, dst in CONVS:
        x = _conv_inputs(rng, src)
        out = poisoned((4, N), dst)
        getattr(mod, "k_" + name)[(triton.cdiv(N, BLOCK),)](np.ascontiguousarray(x), out, N, BLOCK=BLOCK)
        unsigned = "uint" in name or "ull" in name.split("2")[1]
        for j, mode in enumerate(("rn", "rz", "rd", "ru")):
            for i in range(N):
                q = Fraction(int(x[i])) if np.issubdtype(src, np.integer) else Fraction(float(x[i]))
                if np.issubdtype(dst, np.floating):
                    want = _round_dir(q, dst, mode)
                else:
                    bits = 64 if dst == np.int64 else 32
                    lo, hi = (0, 2 ** bits - 1) if unsigned else (-2 ** (bits - 1), 2 ** (bits - 1) - 1)
                    v = min(max(_int_of(q, mode, dst), lo), hi)
                    want = np.array(v % 2 ** bits, dtype=np.uint64 if bits == 64 else np.uint32).view(dst)
                got = out[j][i]
                assert got == want, f"{name}_{mode}({x[i]!r}) = {got!r}, want {want!r}"


# --- classification, integer functions, bits ----------------------------------------------------
def _misc_source():
    return """import nereid as triton
import nereid.language as tl
from nereid.language.extra import libdevice


@triton.jit
def k_class(x_ptr, out_ptr, n, BLOCK: tl.constexpr, F32: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    tl.store(out_ptr + offs, libdevice.isnan(x).to(tl.int32), mask=m)
    tl.store(out_ptr + n + offs, libdevice.isinf(x).to(tl.int32), mask=m)
    if F32:
        tl.store(out_ptr + 2 * n + offs, libdevice.finitef(x).to(tl.int32), mask=m)
    else:
        tl.store(out_ptr + 2 * n + offs, libdevice.isfinited(x).to(tl.int32), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.signbit(x), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.ilogb(x), mask=m)
    tl.store(out_ptr + 5 * n + offs, libdevice.llrint(x).to(tl.int32), mask=m)
    tl.store(out_ptr + 6 * n + offs, libdevice.llround(x).to(tl.int32), mask=m)


@triton.jit
def k_ldexp(x_ptr, k_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    k = tl.load(k_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, libdevice.ldexp(x, k), mask=m)
    tl.store(out_ptr + n + offs, libdevice.scalbn(x, k), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.pow(x, k), mask=m)


@triton.jit
def k_int(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr, NARROW: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    c = tl.load(c_ptr + offs, mask=m, other=1)
    tl.store(out_ptr + offs, libdevice.clz(a).to(a.dtype), mask=m)
    tl.store(out_ptr + n + offs, libdevice.popc(a).to(a.dtype), mask=m)
    tl.store(out_ptr + 2 * n + offs, libdevice.brev(a), mask=m)
    tl.store(out_ptr + 3 * n + offs, libdevice.ffs(a).to(a.dtype), mask=m)
    tl.store(out_ptr + 4 * n + offs, libdevice.mulhi(a, b), mask=m)
    if NARROW:
        tl.store(out_ptr + 5 * n + offs, libdevice.mul24(a, b), mask=m)
        tl.store(out_ptr + 6 * n + offs, libdevice.hadd(a, b), mask=m)
        tl.store(out_ptr + 7 * n + offs, libdevice.rhadd(a, b), mask=m)
        tl.store(out_ptr + 8 * n + offs, libdevice.sad(a, b, c), mask=m)
        tl.store(out_ptr + 9 * n + offs, libdevice.byte_perm(a, b, c), mask=m)


@triton.jit
def k_bits(f_ptr, i_ptr, d_ptr, l_ptr, of_ptr, oi_ptr, od_ptr, ol_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    f = tl.load(f_ptr + offs, mask=m, other=1)
    i = tl.load(i_ptr + offs, mask=m, other=1)
    d = tl.load(d_ptr + offs, mask=m, other=1)
    l = tl.load(l_ptr + offs, mask=m, other=1)
    tl.store(of_ptr + offs, libdevice.int_as_float(i), mask=m)
    tl.store(oi_ptr + offs, libdevice.float_as_int(f), mask=m)
    tl.store(oi_ptr + n + offs, libdevice.float_as_uint(f), mask=m)
    tl.store(oi_ptr + 2 * n + offs, libdevice.double2loint(d), mask=m)
    tl.store(oi_ptr + 3 * n + offs, libdevice.double2hiint(d), mask=m)
    tl.store(od_ptr + offs, libdevice.longlong_as_double(l), mask=m)
    tl.store(od_ptr + n + offs, libdevice.hiloint2double(libdevice.double2hiint(d), libdevice.double2loint(d)), mask=m)
    tl.store(ol_ptr + offs, libdevice.double_as_longlong(d), mask=m)
    tl.store(ol_ptr + n + offs, libdevice.abs(l), mask=m)
"""


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_classification(rng, dt):
    mod = _load_module("libdevice_misc_c" + np.dtype(dt).name, _misc_source())
    x = (rng.standard_normal(N) * np.exp2(rng.uniform(-20, 20, N))).astype(dt)
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 2.5, -2.5, np.finfo(dt).smallest_subnormal]
    out = poisoned((7, N), np.int32)
    mod.k_class[(triton.cdiv(N, BLOCK),)](x, out, N, BLOCK=BLOCK, F32=dt == np.float32)
    assert np.array_equal(out[0], np.isnan(x))
    assert np.array_equal(out[1], np.isinf(x))
    assert np.array_equal(out[2], np.isfinite(x))
    assert np.array_equal(out[3], np.signbit(x))
    fin = np.isfinite(x) & (x != 0)
    want_ilogb = np.where(fin, _logb(np.where(fin, x, 1.0).astype(np.float64)), 0).astype(np.int64)
    want_ilogb = np.where(np.isinf(x), 2 ** 31 - 1, np.where(fin, want_ilogb, -2 ** 31))
    assert np.array_equal(out[4], want_ilogb)
    f = np.isfinite(x) & (np.abs(x) < 2 ** 31)
    assert np.array_equal(out[5][f], np.rint(x[f]).astype(np.int64).astype(np.int32))
    assert np.array_equal(out[6][f], _round_away(x[f].astype(np.float64)).astype(np.int64).astype(np.int32))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_ldexp_and_integer_pow(rng, dt):
    mod = _load_module("libdevice_misc_l" + np.dtype(dt).name, _misc_source())
    x = (rng.standard_normal(N) * 4).astype(dt)
    k = rng.integers(-160 if dt == np.float32 else -1100, 160 if dt == np.float32 else 1100, N).astype(np.int32)
    k[::3] = rng.integers(-12, 12, len(k[::3]))
    out = poisoned((3, N), dt)
    mod.k_ldexp[(triton.cdiv(N, BLOCK),)](x, k, out, N, BLOCK=BLOCK)
    with np.errstate(over="ignore", under="ignore"):
        want = np.ldexp(x, k)
    assert np.array_equal(out[0], want)
    assert np.array_equal(out[1], want)
    small = np.abs(k) <= 12
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        pw = np.power(x.astype(np.float64), k.astype(np.float64))
    e = _ulps(out[2][small], pw[small], dt)
    assert e.max() <= (1 if dt == np.float32 else 4)


def _imath_ref(fn, a, b, c, bits, signed):
    mask = (1 << bits) - 1
    ua, ub = a & mask, b & mask
    if fn == "clz":
        return bits - ua.bit_length()
    if fn == "popc":
        return bin(ua).count("1")
    if fn == "brev":
        return int(format(ua, f"0{bits}b")[::-1], 2)
    if fn == "ffs":
        return (ua & -ua).bit_length()
    if fn == "mulhi":
        return (a * b) >> bits if signed else (ua * ub) >> bits
    if fn == "mul24":
        def s24(v):
            v &= 0xffffff
            return v - (1 << 24) if signed and v >> 23 else v
        return s24(a) * s24(b)
    if fn == "hadd":
        return (a + b) >> 1
    if fn == "rhadd":
        return (a + b + 1) >> 1
    if fn == "sad":
        return abs(a - b) + (c & mask)
    if fn == "byte_perm":
        v, r = ua | ub << 32, 0
        for i in range(4):
            s = (c >> (4 * i)) & 7
            r |= ((v >> (8 * s)) & 0xff) << (8 * i)
        return r
    raise AssertionError(fn)


@pytest.mark.parametrize("dt", [np.int32, np.uint32, np.int64, np.uint64])
def test_integer_functions(rng, dt):
    mod = _load_module("libdevice_misc_i" + np.dtype(dt).name, _misc_source())
    info = np.iinfo(dt)
    a, b, c = (rng.integers(info.min, info.max, N, dtype=dt, endpoint=True) for _ in range(3))
    a[:4] = [0, 1, info.max, info.min]
    narrow = info.bits == 32
    out = poisoned((10, N), dt)
    mod.k_int[(triton.cdiv(N, BLOCK),)](a, b, c, out, N, BLOCK=BLOCK, NARROW=narrow)
    fns = ["clz", "popc", "brev", "ffs", "mulhi"] + (["mul24", "hadd", "rhadd", "sad", "byte_perm"] if narrow else [])
    signed = info.min < 0
    for j, fn in enumerate(fns):
        want = [_imath_ref(fn, int(a[i]), int(b[i]), int(c[i]), info.bits, signed) for i in range(N)]
        want = np.array([w % (1 << info.bits) for w in want], dtype=np.uint64 if info.bits == 64 else np.uint32)
        want = want.view(dt)
        assert np.array_equal(out[j], want), f"{fn} {np.dtype(dt).name}: {out[j][:6]} != {want[:6]}"


def test_bits(rng):
    mod = _load_module("libdevice_misc_b", _misc_source())
    f = rng.standard_normal(N).astype(np.float32)
    i = rng.integers(-2 ** 31, 2 ** 31, N, dtype=np.int32)
    d = rng.standard_normal(N) * 1e10
    l = rng.integers(-2 ** 62, 2 ** 62, N, dtype=np.int64)
    of, oi, od, ol = poisoned(N, np.float32), poisoned((4, N), np.int32), poisoned((2, N), np.float64), \
        poisoned((2, N), np.int64)
    mod.k_bits[(triton.cdiv(N, BLOCK),)](f, i, d, l, of, oi, od, ol, N, BLOCK=BLOCK)
    assert np.array_equal(of.view(np.int32), i)
    assert np.array_equal(oi[0], f.view(np.int32))
    assert np.array_equal(oi[1], f.view(np.int32))
    assert np.array_equal(oi[2], d.view(np.int64).astype(np.int32))
    assert np.array_equal(oi[3], (d.view(np.int64) >> 32).astype(np.int32))
    assert np.array_equal(od[0].view(np.int64), l)
    assert np.array_equal(od[1], d)
    assert np.array_equal(ol[0], d.view(np.int64))
    assert np.array_equal(ol[1], np.abs(l))
