"""Floating-point formats of PTX on numpy arrays, bit-exact.

Every rounding goes through one function, ``round_f64``: a float64 array
holding either the exact value or a value rounded to odd with at least two
more bits than the target (so one more rounding is a correct single
rounding) is rounded to a target format with a PTX rounding mode:

    rn   to nearest, ties to even          rz   toward zero
    rm   toward -inf                       rp   toward +inf
    rna  to nearest, ties away from zero

Formats are described by ``Fmt`` (precision with the implicit bit, minimum
normal exponent, largest finite value, whether infinities exist).  The
8-bit formats are encoded and decoded here; f16, bf16, f32 and f64 use
numpy's own types for the bits.
"""
import numpy as np


class Fmt:
    def __init__(self, name, bits, p, emin, maxfin, has_inf, nan_code):
        self.name, self.bits, self.p, self.emin = name, bits, p, emin
        self.maxfin = float(maxfin)
        self.has_inf = has_inf
        self.nan_code = nan_code
        self.bias = 1 - emin


F16 = Fmt("f16", 16, 11, -14, 65504.0, True, 0x7FFF)
BF16 = Fmt("bf16", 16, 8, -126, float.fromhex("0x1.fep127"), True, 0x7FFF)
F32 = Fmt("f32", 32, 24, -126, float.fromhex("0x1.fffffep127"), True, 0x7FFFFFFF)
F64 = Fmt("f64", 64, 53, -1022, float.fromhex("0x1.fffffffffffffp1023"), True, 0x7FFFFFFFFFFFFFFF)
E4M3 = Fmt("e4m3", 8, 4, -6, 448.0, False, 0x7F)
E5M2 = Fmt("e5m2", 8, 3, -14, 57344.0, True, 0x7F)

_ERR = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def round_f64(x, fmt, mode="rn", satfinite=False):
    """x (float64) rounded to fmt with mode; a float64 array of representable values.
    Overflow gives +-inf (or the largest finite value where the mode rounds
    toward zero, or with satfinite); NaN stays NaN; the sign of zero is kept."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(**_ERR):
        ax = np.abs(x)
        _, e = np.frexp(ax)
        e = np.maximum(e.astype(np.int64) - 1, fmt.emin)
        ue = e - (fmt.p - 1)
        q = np.ldexp(ax, -ue)
        neg = np.signbit(x)
        if mode == "rn":
            qi = np.rint(q)
        elif mode == "rna":
            qi = np.floor(q + 0.5)
        elif mode == "rz":
            qi = np.trunc(q)
        elif mode == "rm":
            qi = np.where(neg, np.ceil(q), np.floor(q))
        elif mode == "rp":
            qi = np.where(neg, np.floor(q), np.ceil(q))
        else:
            raise ValueError(f"unknown rounding mode {mode}")
        r = np.ldexp(qi, ue)
        fin = np.isfinite(x)
        over = fin & (r > fmt.maxfin)
        if over.any():
            if satfinite or not fmt.has_inf:
                big = np.full(r.shape, fmt.maxfin)
            else:
                toward_zero = {"rn": False, "rna": False, "rz": True}.get(mode)
                if toward_zero is None:  # rm: positive overflow is finite, rp: negative is
                    toward_zero = ~neg if mode == "rm" else neg
                big = np.where(toward_zero, fmt.maxfin, np.inf)
            r = np.where(over, big, r)
        if satfinite or not fmt.has_inf:
            r = np.where(np.isinf(x), fmt.maxfin, r)
        r = np.where(np.isnan(x), np.nan, r)
        return np.copysign(r, x)


def add_odd(x, y):
    """x + y (float64) rounded to odd: exact, or the neighbour with an odd last bit."""
    with np.errstate(**_ERR):
        s = x + y
        bb = s - x
        err = (x - (s - bb)) + (y - bb)
        inexact = (err != 0) & np.isfinite(s)
        if not inexact.any():
            return s
        bits = s.view(np.int64)
        even = (bits & 1) == 0
        fix = inexact & even
        toward = np.where(err > 0, np.inf, -np.inf)
        return np.where(fix, np.nextafter(s, toward), s)


def two_prod(a, b):
    """(p, e) with p + e == a * b exactly (float64, no overflow)."""
    with np.errstate(**_ERR):
        p = a * b
        c = 134217729.0  # 2^27 + 1
        ah = a * c
        ah = ah - (ah - a)
        al = a - ah
        bh = b * c
        bh = bh - (bh - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        return p, e


def fma_f64(a, b, c):
    """a * b + c in float64 (error-free product, then a compensated sum; correct
    but for rare double roundings)."""
    with np.errstate(**_ERR):
        p, e = two_prod(a, b)
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        r = s + (t + e)
        plain = a * b + c
        return np.where(np.isfinite(r), r, plain)


# --- bits <-> values ---------------------------------------------------------------------------------------
def f16_bits_to_f64(u16):
    return np.asarray(u16, dtype=np.uint16).view(np.float16).astype(np.float64)


def bf16_bits_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f64_to_f16_bits(x, mode="rn", satfinite=False):
    if mode == "rn" and not satfinite:
        with np.errstate(**_ERR):
            return np.asarray(x, dtype=np.float64).astype(np.float16).view(np.uint16)
    r = round_f64(x, F16, mode, satfinite)
    with np.errstate(**_ERR):
        return r.astype(np.float16).view(np.uint16)


def f64_to_bf16_bits(x, mode="rn", satfinite=False):
    r = round_f64(x, BF16, mode, satfinite)
    with np.errstate(**_ERR):
        u = r.astype(np.float32).view(np.uint32)
    u = np.where(np.isnan(r), np.uint32(0x7FFF0000), u)
    return (u >> np.uint32(16)).astype(np.uint16)


def f32_to_bf16_bits_rn(x32):
    """f32 -> bf16, round to nearest even (the common case, in integer arithmetic)."""
    u = np.asarray(x32, dtype=np.float32).view(np.uint32)
    with np.errstate(**_ERR):
        r = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    r = np.where(nan, np.uint32(0x7FFF0000), r)
    return (r >> np.uint32(16)).astype(np.uint16)


def f64_to_f32(x, mode="rn", satfinite=False):
    if mode == "rn" and not satfinite:
        with np.errstate(**_ERR):
            return np.asarray(x, dtype=np.float64).astype(np.float32)
    r = round_f64(x, F32, mode, satfinite)
    with np.errstate(**_ERR):
        return r.astype(np.float32)


def _f8_table(fmt):
    codes = np.arange(256, dtype=np.int64)
    s = codes >> 7
    e = (codes >> (fmt.p - 1)) & ((1 << (7 - (fmt.p - 1))) - 1)
    m = codes & ((1 << (fmt.p - 1)) - 1)
    emax_field = (1 << (7 - (fmt.p - 1))) - 1
    val = np.where(e == 0, np.ldexp(m.astype(np.float64), fmt.emin - (fmt.p - 1)),
                   np.ldexp((m + (1 << (fmt.p - 1))).astype(np.float64), e - fmt.bias - (fmt.p - 1)))
    if fmt.has_inf:
        val = np.where((e == emax_field) & (m == 0), np.inf, val)
        val = np.where((e == emax_field) & (m != 0), np.nan, val)
    else:
        val = np.where((e == emax_field) & (m == (1 << (fmt.p - 1)) - 1), np.nan, val)
    return np.where(s == 1, -val, val)


E4M3_VALUES = _f8_table(E4M3)
E5M2_VALUES = _f8_table(E5M2)


def f8_to_f64(codes, fmt):
    table = E4M3_VALUES if fmt is E4M3 else E5M2_VALUES
    return table[np.asarray(codes).astype(np.intp) & 0xFF]


def f64_to_f8(x, fmt, mode="rn", satfinite=True):
    """Codes (uint8) of x rounded to an 8-bit format; NaN gives nan_code."""
    r = round_f64(x, fmt, mode, satfinite)
    with np.errstate(**_ERR):
        a = np.abs(r)
        _, e = np.frexp(a)
        e = e.astype(np.int64) - 1
        sub = a < np.ldexp(1.0, fmt.emin)
        mfield = fmt.p - 1
        mant_sub = np.ldexp(a, -(fmt.emin - mfield))
        mant_norm = np.ldexp(a, -(e - mfield)) - (1 << mfield)
        efield = np.where(sub, 0, e + fmt.bias)
        mant = np.where(sub, mant_sub, mant_norm)
        finite = np.isfinite(r)
        code = np.where(finite, (efield << mfield) + np.nan_to_num(mant).astype(np.int64), 0)
        if fmt.has_inf:
            code = np.where(np.isinf(r), ((1 << (7 - mfield)) - 1) << mfield, code)
        code = code | np.where(np.signbit(r), 0x80, 0)
        code = np.where(np.isnan(r), fmt.nan_code, code)
    return code.astype(np.uint8)


def tf32_rna(x32):
    """cvt.rna.tf32.f32: 10 mantissa bits, to nearest with ties away; NaN stays NaN."""
    u = np.asarray(x32, dtype=np.float32).view(np.uint32)
    with np.errstate(**_ERR):
        r = (u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    inf = (u & np.uint32(0x7FFFFFFF)) == np.uint32(0x7F800000)
    r = np.where(inf, u, r)
    return np.where(nan, np.uint32(0x7FFFFFFF), r)


def int_to_f64_odd(v, signed):
    """64-bit integers (int64 or uint64 array) as float64: exact below 2^53, else
    rounded to odd, so that one more rounding to a narrower format is correct."""
    v = np.asarray(v)
    u = v.view(np.uint64) if v.dtype.itemsize == 8 else v.astype(np.int64).view(np.uint64)
    with np.errstate(**_ERR):
        if signed:
            neg = v.astype(np.int64) < 0
            mag = np.where(neg, np.uint64(0) - u, u)
        else:
            neg = np.zeros(u.shape, dtype=bool)
            mag = u
        big = mag >= np.uint64(1 << 53)
        out = mag.astype(np.float64)
        if big.any():
            m = mag[big]
            nb = _bitlen64(m)
            drop = (nb - 53).astype(np.uint64)
            kept = m >> drop
            lost = m & ((np.uint64(1) << drop) - np.uint64(1))
            kept = kept | (lost != 0).astype(np.uint64)
            out[big] = np.ldexp(kept.astype(np.float64), drop.astype(np.int64))
        return np.where(neg, -out, out)


def int_to_f64_rz(v, signed):
    v = np.asarray(v)
    u = v.view(np.uint64) if v.dtype.itemsize == 8 else v.astype(np.int64).view(np.uint64)
    with np.errstate(**_ERR):
        if signed:
            neg = v.astype(np.int64) < 0
            mag = np.where(neg, np.uint64(0) - u, u)
        else:
            neg = np.zeros(u.shape, dtype=bool)
            mag = u
        nb = _bitlen64(mag)
        drop = np.maximum(nb - 53, 0).astype(np.uint64)
        kept = (mag >> drop) << drop
        out = kept.astype(np.float64)
        return np.where(neg, -out, out)


def _bitlen64(m):
    """Number of significant bits of uint64 values (0 for 0)."""
    m = np.asarray(m, dtype=np.uint64)
    hi = (m >> np.uint64(32)).astype(np.uint32)
    lo = (m & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return np.where(hi != 0, 32 + bitlen32(hi), bitlen32(lo)).astype(np.int64)


def bitlen32(x):
    x = np.asarray(x, dtype=np.uint32).astype(np.float64)
    _, e = np.frexp(x)  # exact: x < 2^32 fits a double
    return e.astype(np.int64)


def bitlen64(m):
    return _bitlen64(m)
