"""Instruction semantics: each PTX instruction becomes a closure f(mask)
over the registers of a Frame (mask: None for every thread of the wave,
else a bool array of the active threads).

Registers hold bits in arrays of their declared width (.pred bool, .b16
uint16, .b32 uint32, .b64 uint64); an instruction views them as its own
type.  Arithmetic follows the PTX ISA: integers wrap, shifts clamp their
amount, float arithmetic rounds to nearest even with subnormals kept,
f16/bf16 arithmetic is computed in f32 and rounded once (exact for + - *
by the 2p+2 rule; fma goes through a round-to-odd double), conversions
round once (fp.py), float-to-integer conversions saturate and give 0 for
NaN.  The .approx instructions (ex2, lg2, sqrt, rsqrt, sin, cos, tanh,
div.full) are computed exactly or with numpy's float32 functions: they may
differ from the GPU by a few ulps.
"""
import numpy as np

from . import fp
from . import hopper
from . import mem_ops
from .memory import SimError
from .parser import Addr, Imm, Reg, Sink, Special, Sym, Vec
from .types import NP, SINT, SIZE, TYPES, UINT, imm_value, is_float, is_int, is_signed

TRUE = True
_ERR = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")


class CompileError(SimError):
    pass


# --- operands ----------------------------------------------------------------------------------------------
def special(fr, name):
    parts = name.split(".")
    base = parts[0]
    axis = "xyz".index(parts[1]) if len(parts) > 1 and parts[1] in ("x", "y", "z") else 0
    if base == "%tid":
        return fr.tid[axis]
    if base == "%ntid":
        return np.uint32(fr.block[axis])
    if base == "%ctaid":
        return fr.ctaid[axis]
    if base == "%nctaid":
        return _GridDim(fr, axis)
    if base == "%laneid":
        return fr.laneid
    if base == "%warpid":
        return fr.warpid
    if base == "%nwarpid":
        return np.uint32(fr.nthr // 32)
    raise CompileError(f"special register {name} is not modelled")


class _GridDim:
    """%nctaid: read at run time (the grid is known per launch)."""

    def __init__(self, fr, axis):
        self.fr, self.axis = fr, axis

    def value(self):
        return np.uint32(self.fr.grid[self.axis])


def rd(fr, op, ty):
    """A function returning operand op as values of PTX type ty."""
    if isinstance(op, Reg):
        arr = fr.regs[op.name]
        if ty == "pred":
            if arr.dtype != np.bool_:
                raise CompileError(f"{op.name} is not a predicate")
            return lambda: arr
        if arr.dtype == np.bool_:
            raise CompileError(f"predicate {op.name} used as a .{ty} value")
        W, w = arr.itemsize, SIZE[ty]
        if W == w:
            v = arr.view(NP[ty])
            return lambda: v
        if W > w:
            t = NP[ty] if ty != "bf16" else np.uint16
            if ty in ("f16",):
                return lambda: arr.astype(np.uint16).view(np.float16)
            return lambda: arr.astype(t)
        raise CompileError(f"{op.name} (.b{8 * W}) is too narrow for .{ty}")
    if isinstance(op, Imm):
        c = imm_value(op.text, ty)
        return lambda: c
    if isinstance(op, Special):
        v = special(fr, op.name)
        if isinstance(v, _GridDim):
            return lambda: NP[ty](v.value())
        if isinstance(v, np.ndarray):
            if SIZE[ty] != 4:
                vv = v.astype(NP[ty])
                return lambda: vv
            vv = v.view(NP[ty])
            return lambda: vv
        c = NP[ty](v)
        return lambda: c
    if isinstance(op, Sym):
        name, off = op.name, op.offset
        t = NP[ty]
        return lambda: t(fr.symbol_address(name) + off)
    raise CompileError(f"operand {op!r} cannot be read as .{ty}")


def wr(fr, op, ty):
    """A function w(value, mask) writing value (of PTX type ty) into op."""
    if isinstance(op, Sink):
        return lambda v, m: None
    if not isinstance(op, Reg):
        raise CompileError(f"destination {op!r} is not a register")
    arr = fr.regs[op.name]
    if ty == "pred":
        if arr.dtype != np.bool_:
            raise CompileError(f"{op.name} is not a predicate")

        def wp(v, m):
            np.copyto(arr, v, where=TRUE if m is None else m)

        return wp
    if arr.dtype == np.bool_:
        raise CompileError(f"predicate {op.name} written as .{ty}")
    W, w = arr.itemsize, SIZE[ty]
    if W == w:
        view = arr.view(NP[ty])

        def wsame(v, m):
            np.copyto(view, v, casting="unsafe", where=TRUE if m is None else m)

        return wsame
    if W < w:
        raise CompileError(f"{op.name} (.b{8 * W}) is too narrow for .{ty}")
    signed = is_signed(ty)
    u_w, s_w, u_W, s_W = UINT[w], SINT[w], UINT[W], SINT[W]

    def wext(v, m):
        v = np.asarray(v)
        bits = v.view(u_w) if v.dtype.itemsize == w else v.astype(u_w)
        ext = bits.view(s_w).astype(s_W).view(u_W) if signed else bits.astype(u_W)
        np.copyto(arr, ext, where=TRUE if m is None else m)

    return wext


def last_type(ins, k=1):
    ts = [m for m in ins.mods if m in TYPES]
    if len(ts) < k:
        raise CompileError(f"no type in '{ins.text}'")
    return ts[-k]


# --- float helpers ------------------------------------------------------------------------------------------
def halves(x):
    """(lo, hi) uint16 halves of a uint32 array or scalar."""
    x = np.asarray(x, dtype=np.uint32)
    return (x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)


def pack_halves(lo, hi):
    return np.asarray(lo).astype(np.uint32) | (np.asarray(hi).astype(np.uint32) << np.uint32(16))


def bf16_val(bits):
    return fp.bf16_bits_to_f32(bits)


def bf16_from(x32):
    return fp.f32_to_bf16_bits_rn(x32)


def f16_val(bits):
    return np.asarray(bits, dtype=np.uint16).view(np.float16)


def to_f32(ty, v):
    """Value of a 16-bit float (bits or float16) as float32."""
    if ty == "bf16":
        return bf16_val(v)
    return np.asarray(v, dtype=np.float16).astype(np.float32)


def fmin(a, b, nan_prop=False, want_max=False):
    """PTX min/max on float arrays: the non-NaN operand (NaN if both, or with .NaN if
    either); -0 is below +0."""
    a = np.asarray(a)
    b = np.asarray(b)
    with np.errstate(**_ERR):
        sel_a = (a > b) if want_max else (a < b)
        r = np.where(sel_a, a, b)
        z = (a == b) & (np.signbit(a) != np.signbit(b))
        if z.any():
            pick_a = ~np.signbit(a) if want_max else np.signbit(a)
            r = np.where(z, np.where(pick_a, a, b), r)
        na, nb = np.isnan(a), np.isnan(b)
        if nan_prop:
            r = np.where(na | nb, np.array(np.nan, dtype=r.dtype), r)
        else:
            r = np.where(na, b, r)
            r = np.where(nb, a, r)
            r = np.where(na & nb, np.array(np.nan, dtype=r.dtype), r)
    return r


def canon_nan_bits(ty):
    return {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}[ty]


# --- arithmetic ---------------------------------------------------------------------------------------------
def _int_binop(name, ty, hi=False, wide=False):
    w = SIZE[ty]
    sg = is_signed(ty)

    if name == "add":
        return lambda a, b: a + b
    if name == "sub":
        return lambda a, b: a - b
    if name == "mul":
        if wide:
            wt = SINT[2 * w] if sg else UINT[2 * w]
            return lambda a, b: np.asarray(a).astype(wt) * np.asarray(b).astype(wt)
        if hi:
            return lambda a, b: mulhi(a, b, w, sg)
        return lambda a, b: a * b
    if name == "div":
        return lambda a, b: idiv(a, b, w, sg, rem=False)
    if name == "rem":
        return lambda a, b: idiv(a, b, w, sg, rem=True)
    if name == "and":
        return lambda a, b: a & b
    if name == "or":
        return lambda a, b: a | b
    if name == "xor":
        return lambda a, b: a ^ b
    if name == "min":
        return lambda a, b: np.minimum(a, b)
    if name == "max":
        return lambda a, b: np.maximum(a, b)
    raise CompileError(f"integer {name} is not modelled")


def mulhi(a, b, w, sg):
    a = np.asarray(a)
    b = np.asarray(b)
    if w <= 4:
        t = np.int64 if sg else np.uint64
        p = a.astype(t) * b.astype(t)
        return (p >> (8 * w)).astype(SINT[w] if sg else UINT[w])
    # 64 x 64 -> high 64 bits through 32-bit limbs
    ua, ub = a.view(np.uint64) if a.dtype == np.int64 else a.astype(np.uint64), \
        b.view(np.uint64) if b.dtype == np.int64 else b.astype(np.uint64)
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1 = ua & m32, ua >> s32
    b0, b1 = ub & m32, ub >> s32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    p11 = a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    if sg:  # signed correction: hi -= (a < 0 ? b : 0) + (b < 0 ? a : 0)
        hi = hi - np.where(a.astype(np.int64) < 0, ub, np.uint64(0)) - np.where(b.astype(np.int64) < 0, ua,
                                                                                   np.uint64(0))
        return hi.view(np.int64)
    return hi


def idiv(a, b, w, sg, rem):
    """C division (truncating); x / 0 gives all ones and x % 0 gives x (undefined in PTX)."""
    a = np.asarray(a)
    b = np.asarray(b)
    t = a.dtype
    b = b.astype(t)
    zero = b == 0
    bs = np.where(zero, t.type(1), b)
    with np.errstate(**_ERR):
        if sg:
            q = np.floor_divide(a, bs)
            r = a - q * bs
            fix = (r != 0) & ((a < 0) != (bs < 0))
            q = np.where(fix, q + t.type(1), q)
            # MIN / -1 wraps to MIN
            r = a - q * bs
        else:
            q = a // bs
            r = a % bs
    if rem:
        return np.where(zero, a, r)
    return np.where(zero, ~t.type(0), q)


def float_binop(name, ty):
    """f(a, b) on values of float type ty (f16 as float16, bf16 as bits, f32, f64; packed as uint32)."""
    if ty in ("f16x2", "bf16x2"):
        h = "f16" if ty == "f16x2" else "bf16"
        inner = float_binop(name, h)
        hb = (lambda x: f16_val(x)) if h == "f16" else (lambda x: x)
        ob = (lambda x: np.asarray(x, np.float16).view(np.uint16)) if h == "f16" else (lambda x: x)

        def packed(a, b):
            al, ah = halves(a)
            bl, bh = halves(b)
            return pack_halves(ob(inner(hb(al), hb(bl))), ob(inner(hb(ah), hb(bh))))

        return packed
    if ty == "bf16":
        if name in ("min", "max", "min.NaN", "max.NaN"):
            def bmm(a, b):
                r = fmin(bf16_val(a), bf16_val(b), name.endswith("NaN"), name.startswith("max"))
                return np.where(np.isnan(r), np.uint16(0x7FFF), bf16_from(r))
            return bmm
        if name == "copysign":
            return lambda a, b: (np.asarray(b) & np.uint16(0x7FFF)) | (np.asarray(a) & np.uint16(0x8000))
        f32op = float_binop(name, "f32")
        return lambda a, b: bf16_from(f32op(bf16_val(a), bf16_val(b)))
    if name == "add":
        return lambda a, b: a + b
    if name == "sub":
        return lambda a, b: a - b
    if name == "mul":
        return lambda a, b: a * b
    if name == "div":
        return lambda a, b: a / b
    if name in ("min", "max", "min.NaN", "max.NaN"):
        nanp = name.endswith("NaN")
        mx = name.startswith("max")
        if ty == "f16":
            return lambda a, b: fmin(np.asarray(a, np.float16).astype(np.float32),
                                     np.asarray(b, np.float16).astype(np.float32), nanp, mx).astype(np.float16)
        return lambda a, b: fmin(a, b, nanp, mx)
    if name == "copysign":  # d = |b| with a's sign
        u = UINT[SIZE[ty]]
        sb = u(1 << (8 * SIZE[ty] - 1))

        def cs(a, b):
            ab = np.asarray(a).view(u)
            bb = np.asarray(b).view(u)
            return ((bb & ~sb) | (ab & sb)).view(NP[ty])

        return cs
    raise CompileError(f"float {name}.{ty} is not modelled")


def fma_values(ty, a, b, c):
    """fma.rn on values of float type ty, rounded once."""
    if ty == "f64":
        return fp.fma_f64(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    if ty == "f32":
        p = np.asarray(a, np.float64) * np.asarray(b, np.float64)  # exact
        return fp.add_odd(p, np.asarray(c, np.float64)).astype(np.float32)
    if ty == "f16":
        p = np.asarray(a, np.float16).astype(np.float64) * np.asarray(b, np.float16).astype(np.float64)
        s = fp.add_odd(p, np.asarray(c, np.float16).astype(np.float64))
        with np.errstate(**_ERR):
            return s.astype(np.float16)
    if ty == "bf16":
        p = bf16_val(a).astype(np.float64) * bf16_val(b).astype(np.float64)
        s = fp.add_odd(p, bf16_val(c).astype(np.float64))
        return fp.f64_to_bf16_bits(s)
    if ty in ("f16x2", "bf16x2"):
        h = "f16" if ty == "f16x2" else "bf16"
        al, ah = halves(a)
        bl, bh = halves(b)
        cl, ch = halves(c)
        if h == "f16":
            lo = fma_values(h, f16_val(al), f16_val(bl), f16_val(cl))
            hi = fma_values(h, f16_val(ah), f16_val(bh), f16_val(ch))
            return pack_halves(np.asarray(lo, np.float16).view(np.uint16), np.asarray(hi, np.float16).view(np.uint16))
        return pack_halves(fma_values(h, al, bl, cl), fma_values(h, ah, bh, ch))
    raise CompileError(f"fma.{ty} is not modelled")


# --- instruction compilers -------------------------------------------------------------------------------------
def _move(t, s, e, mode, finite):
    """The rounded-to-nearest s moved to the directed rounding `mode` of s + e (e: the exact
    error's sign is all that counts); finite: the operands were finite (an overflow to
    infinity rounds to the largest finite value toward zero)."""
    big = t(np.finfo(t).max)
    e = np.where(np.isfinite(s), e, t(0))
    down, up = e < 0, e > 0
    if mode == "rm":
        r = np.where(down, np.nextafter(s, t(-np.inf)), s)
        return np.where(np.isposinf(s) & finite, big, r)
    if mode == "rp":
        r = np.where(up, np.nextafter(s, t(np.inf)), s)
        return np.where(np.isneginf(s) & finite, -big, r)
    r = np.where(np.where(s > 0, down, up), np.nextafter(s, t(0)), s)
    return np.where(np.isinf(s) & finite, np.copysign(big, s), r)


def _directed(name, ty, mode):
    """add/sub/mul/div.{rz,rm,rp} of f32 or f64: the rounded-to-nearest result moved one ulp
    where its exact error (two-sum, two-product or the division's remainder, by fma) says the
    directed rounding lies on the other side."""
    t = NP[ty]

    def f(a, b):
        a, b = np.asarray(a, t), np.asarray(b, t)
        with np.errstate(all="ignore"):
            bb = b
            if name in ("add", "sub"):
                bb = b if name == "add" else -b
                s = a + bb
                z = s - a
                e = (a - (s - z)) + (bb - z)  # two-sum: a + bb = s + e exactly
            elif name == "mul":
                s = a * b
                e = _fma_exact(ty, a, b, -s)   # a b - s, exact
            else:
                s = a / b
                r = _fma_exact(ty, -s, b, a)   # a - s b: its sign is that of a / b - s times b's
                e = np.where(b < 0, -r, r)
            r = _move(t, s, e, mode, np.isfinite(a) & np.isfinite(b))
            if mode == "rm" and name in ("add", "sub"):  # an exact zero sum of nonzero terms is -0
                r = np.where((s == 0) & (e == 0) & ~((a == 0) & (bb == 0)), t(-0.0), r)
        return r.astype(t)

    return f


def _fma_directed(ty, mode, a, b, c):
    """fma.{rz,rm,rp} of f32 or f64."""
    t = NP[ty]
    a, b, c = np.asarray(a, t), np.asarray(b, t), np.asarray(c, t)
    with np.errstate(all="ignore"):
        s = fma_values(ty, a, b, c)
        if ty == "f32":  # a b exact in f64; a b + c rounded to odd in f64 is off s exactly when inexact
            odd = fp.add_odd(a.astype(np.float64) * b.astype(np.float64), c.astype(np.float64))
            e = np.sign(odd - s.astype(np.float64)).astype(t)
        else:
            hi = a * b
            lo = fp.fma_f64(a, b, -hi)  # a b = hi + lo
            th = hi + c
            z = th - hi
            tl = (hi - (th - z)) + (c - z)  # hi + c = th + tl
            e = (th - s) + (tl + lo)
        r = _move(t, s, e, mode, np.isfinite(a) & np.isfinite(b) & np.isfinite(c))
    return r.astype(t)


def _fma_exact(ty, a, b, c):
    """a b + c, rounded once (f32 through the simulator's f32 fma, f64 through fp.fma_f64)."""
    if ty == "f64":
        return fp.fma_f64(np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64))
    return fma_values("f32", a, b, c)


def c_binary(fr, ins):
    ty = last_type(ins)
    name = ins.opcode
    d, a, b = ins.operands[:3]
    mods = ins.mods
    if name in ("min", "max") and "NaN" in mods:
        name = name + ".NaN"
    if is_float(ty):
        fn = float_binop(name, ty)
        mode = next((x for x in mods if x in ("rz", "rm", "rp")), None)
        if mode and ty in ("f32", "f64") and name in ("add", "sub", "mul", "div"):
            fn = _directed(name, ty, mode)
    else:
        fn = _int_binop(name, ty, hi="hi" in mods, wide="wide" in mods)
    if "wide" in mods:
        dty = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[ty]
    else:
        dty = ty
    ra, rb, w = rd(fr, a, ty), rd(fr, b, ty), wr(fr, d, dty)

    def f(m):
        w(fn(ra(), rb()), m)

    return f


def c_shift(fr, ins):
    ty = last_type(ins)
    d, a, b = ins.operands
    ra, rb, w = rd(fr, a, ty), rd(fr, b, "u32"), wr(fr, d, ty)
    bits = 8 * SIZE[ty]
    left = ins.opcode == "shl"
    arith = is_signed(ty) and not left
    t = NP[ty]
    u = UINT[SIZE[ty]]

    def f(m):
        x = np.asarray(ra())
        s = np.asarray(rb())
        big = s >= bits
        sc = np.minimum(s, bits - 1).astype(u)
        if left:
            r = np.where(big, t(0), (x.astype(u) << sc).astype(t))
        elif arith:
            r = np.where(big, np.where(x < 0, t(-1), t(0)), x >> sc.astype(t))
        else:
            r = np.where(big, t(0), (x.astype(u) >> sc).astype(t))
        w(r, m)

    return f


def c_mad(fr, ins):
    ty = last_type(ins)
    d, a, b, c = ins.operands
    ra, rb, rc = rd(fr, a, ty), rd(fr, b, ty), rd(fr, c, ty)
    if is_float(ty):
        w = wr(fr, d, ty)
        return lambda m: w(fma_values(ty, ra(), rb(), rc()), m)
    hi = "hi" in ins.mods
    wide = "wide" in ins.mods
    mul = _int_binop("mul", ty, hi=hi, wide=wide)
    dty = {"s16": "s32", "u16": "u32", "s32": "s64", "u32": "u64"}[ty] if wide else ty
    rc = rd(fr, c, dty)
    w = wr(fr, d, dty)
    return lambda m: w(mul(ra(), rb()) + rc(), m)


def c_fma(fr, ins):
    ty = last_type(ins)
    d, a, b, c = ins.operands
    ra, rb, rc, w = rd(fr, a, ty), rd(fr, b, ty), rd(fr, c, ty), wr(fr, d, ty)
    mode = next((x for x in ins.mods if x in ("rz", "rm", "rp")), None)
    if mode and ty in ("f32", "f64"):
        return lambda m: w(_fma_directed(ty, mode, ra(), rb(), rc()), m)
    return lambda m: w(fma_values(ty, ra(), rb(), rc()), m)


def c_unary(fr, ins):
    ty = last_type(ins)
    op = ins.opcode
    d, a = ins.operands[:2]
    ra = rd(fr, a, ty)
    dty = "u32" if op in ("clz", "popc") else ty
    w = wr(fr, d, dty)
    fn = unary_fn(op, ty, ins)
    mode = next((x for x in ins.mods if x in ("rz", "rm", "rp")), None)
    if mode and op in ("sqrt", "rcp") and ty in ("f32", "f64"):
        inner, t = fn, NP[ty]

        def fn(x):  # the rounded-to-nearest result moved by the sign of its exact remainder
            x = np.asarray(x, t)
            with np.errstate(all="ignore"):
                s = np.asarray(inner(x), t)
                if op == "sqrt":
                    e = _fma_exact(ty, -s, s, x)           # x - s^2
                else:
                    r = _fma_exact(ty, -s, x, t(1))         # 1 - s x
                    e = np.where(x < 0, -r, r)
                return _move(t, s, np.where(np.isnan(e), t(0), e), mode, np.isfinite(x)).astype(t)
    if "ftz" in ins.mods and ty == "f32":
        inner32 = fn

        def fn(x):  # subnormal operands and results are flushed to a zero of their sign
            x = np.asarray(x, np.float32)
            tiny = np.float32(2.0 ** -126)
            x = np.where(np.abs(x) < tiny, np.copysign(np.float32(0), x), x)
            with np.errstate(all="ignore"):
                r = np.asarray(inner32(x), np.float32)
            return np.where(np.abs(r) < tiny, np.copysign(np.float32(0), r), r)
    return lambda m: w(fn(ra()), m)


def unary_fn(op, ty, ins):
    if ty in ("f16x2", "bf16x2") and op not in ("not",):
        h = "f16" if ty == "f16x2" else "bf16"
        inner = unary_fn(op, h, ins)
        if h == "f16":
            return lambda x: pack_halves(np.asarray(inner(f16_val(halves(x)[0])), np.float16).view(np.uint16),
                                         np.asarray(inner(f16_val(halves(x)[1])), np.float16).view(np.uint16))
        return lambda x: pack_halves(inner(halves(x)[0]), inner(halves(x)[1]))
    if op == "not":
        return lambda x: ~np.asarray(x)
    if op in ("neg", "abs") and is_float(ty):
        u = UINT[SIZE[ty]]
        sb = u(1 << (8 * SIZE[ty] - 1))
        if op == "neg":
            return lambda x: (np.asarray(x).view(u) ^ sb).view(NP[ty])
        return lambda x: (np.asarray(x).view(u) & ~sb).view(NP[ty])
    if op == "neg":
        return lambda x: -np.asarray(x)
    if op == "abs":
        return lambda x: np.abs(np.asarray(x))
    if op == "popc":
        return lambda x: np.bitwise_count(np.asarray(x)).astype(np.uint32)
    if op == "clz":
        bits = 8 * SIZE[ty]
        if bits == 32:
            return lambda x: (32 - fp.bitlen32(np.asarray(x))).astype(np.uint32)
        return lambda x: (64 - fp.bitlen64(np.asarray(x).view(np.uint64) if np.asarray(x).dtype == np.int64
                                           else np.asarray(x))).astype(np.uint32)
    if op == "brev":
        bits = 8 * SIZE[ty]
        u = UINT[SIZE[ty]]

        def brev(x):
            x = np.asarray(x).view(u) if np.asarray(x).ndim else u(x)
            r = np.zeros_like(x)
            for i in range(bits):
                r |= ((x >> u(i)) & u(1)) << u(bits - 1 - i)
            return r

        return brev
    # float functions
    if ty == "bf16" or ty == "f16":
        inner = unary_fn(op, "f32", ins)
        if ty == "bf16":
            return lambda x: bf16_from(inner(bf16_val(x)))
        return lambda x: np.asarray(inner(np.asarray(x, np.float16).astype(np.float32))).astype(np.float16)
    t = NP[ty]
    with_one = t(1)
    if op == "sqrt":
        return lambda x: np.sqrt(x)
    if op == "rsqrt":
        return lambda x: (1.0 / np.sqrt(np.asarray(x, np.float64))).astype(t)
    if op == "rcp":
        return lambda x: with_one / x
    if op == "ex2":
        return lambda x: np.exp2(np.asarray(x, t))
    if op == "lg2":
        return lambda x: np.log2(np.asarray(x, t))
    if op == "sin":
        return lambda x: np.sin(np.asarray(x, np.float64)).astype(t)
    if op == "cos":
        return lambda x: np.cos(np.asarray(x, np.float64)).astype(t)
    if op == "tanh":
        return lambda x: np.tanh(np.asarray(x, np.float64)).astype(t)
    raise CompileError(f"{op}.{ty} is not modelled")


def c_setp(fr, ins):
    mods = [m for m in ins.mods if m not in ("ftz",)]
    ty = last_type(ins)
    cmp = mods[0]
    bop = mods[1] if len(mods) > 2 and mods[1] in ("and", "or", "xor") else None
    d = ins.operands[0]
    a, b = ins.operands[1], ins.operands[2]
    ra, rb = rd(fr, a, ty), rd(fr, b, ty)
    dq = None
    if isinstance(d, Vec):  # p|q written as a vector by nobody here; keep the first
        d, dq = d.items[0], d.items[1]
    wp = wr(fr, d, "pred")
    rc = rd(fr, ins.operands[3], "pred") if bop else None
    fn = compare_fn(cmp, ty)

    def f(m):
        r = fn(ra(), rb())
        if bop == "and":
            r = r & rc()
        elif bop == "or":
            r = r | rc()
        elif bop == "xor":
            r = r ^ rc()
        wp(r, m)

    if dq is not None:
        raise CompileError("setp with two destinations is not modelled")
    return f


def compare_fn(cmp, ty):
    if ty in ("f16", "bf16"):
        inner = compare_fn(cmp, "f32")
        return lambda a, b: inner(to_f32(ty, a), to_f32(ty, b))
    if is_float(ty):
        ordered = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
                   "ge": np.greater_equal}

        def fc(a, b):
            with np.errstate(**_ERR):
                nan = np.isnan(a) | np.isnan(b)
                if cmp in ordered:
                    r = ordered[cmp](a, b)
                    return r & ~nan if cmp == "ne" else r
                if cmp == "num":
                    return ~nan
                if cmp == "nan":
                    return nan
                base = ordered[cmp[:-1]]
                return base(a, b) | nan

        return fc
    table = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
             "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
    if cmp not in table:
        raise CompileError(f"setp.{cmp}.{ty} is not modelled")
    fn = table[cmp]
    if cmp in ("lo", "ls", "hi", "hs") and is_signed(ty):
        u = UINT[SIZE[ty]]
        return lambda a, b: fn(np.asarray(a).view(u), np.asarray(b).view(u))
    if cmp in ("lt", "le", "gt", "ge") and ty.startswith("b"):
        raise CompileError(f"setp.{cmp}.{ty}: ordered comparison of untyped bits")
    return fn


def c_selp(fr, ins):
    ty = last_type(ins)
    d, a, b, c = ins.operands
    ra, rb, rc, w = rd(fr, a, ty), rd(fr, b, ty), rd(fr, c, "pred"), wr(fr, d, ty)
    return lambda m: w(np.where(rc(), ra(), rb()), m)


def c_logic_pred(fr, ins):
    op = ins.opcode
    if op == "not":
        d, a = ins.operands
        ra, w = rd(fr, a, "pred"), wr(fr, d, "pred")
        return lambda m: w(~ra(), m)
    d, a, b = ins.operands
    ra, rb, w = rd(fr, a, "pred"), rd(fr, b, "pred"), wr(fr, d, "pred")
    fn = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
    return lambda m: w(fn(ra(), rb()), m)


def c_mov(fr, ins):
    ty = last_type(ins)
    d, a = ins.operands
    if isinstance(d, Vec):  # unpack
        w = SIZE[ty] // len(d.items)
        pt = {1: "b8", 2: "b16", 4: "b32"}[w]
        ra = rd(fr, a, ty)
        ws = [wr(fr, x, pt) for x in d.items]
        u = UINT[w]
        sh = [np.uint64(8 * w * i) for i in range(len(d.items))]
        mask = np.uint64((1 << (8 * w)) - 1)

        def unpack(m):
            x = np.asarray(ra()).astype(np.uint64)
            for i, wi in enumerate(ws):
                wi(((x >> sh[i]) & mask).astype(u), m)

        return unpack
    if isinstance(a, Vec):  # pack
        w = SIZE[ty] // len(a.items)
        pt = {1: "b8", 2: "b16", 4: "b32"}[w]
        rs = [rd(fr, x, pt) for x in a.items]
        wd = wr(fr, d, ty)
        U = UINT[SIZE[ty]]
        sh = [U(8 * w * i) for i in range(len(a.items))]

        def pack(m):
            acc = None
            for i, r in enumerate(rs):
                v = np.asarray(r()).astype(U) << sh[i]
                acc = v if acc is None else acc | v
            wd(acc, m)

        return pack
    if ty == "pred" and isinstance(a, Imm):
        c = a.text.strip() not in ("0",)
        w = wr(fr, d, "pred")
        return lambda m: w(c, m)
    ra, w = rd(fr, a, ty), wr(fr, d, ty)
    return lambda m: w(ra(), m)


def c_cvta(fr, ins):
    d, a = ins.operands
    ty = last_type(ins)
    ra, w = rd(fr, a, ty), wr(fr, d, ty)
    to = "to" in ins.mods
    space = next((s for s in ("global", "local", "shared", "const") if s in ins.mods), "global")
    from .machine import LOCAL_GENERIC
    if space == "local":
        off = NP[ty](LOCAL_GENERIC)
        if to:
            return lambda m: w(ra() - off, m)
        return lambda m: w(ra() + off, m)
    if space == "shared":
        from .machine import SHARED_GENERIC
        off = NP[ty](SHARED_GENERIC)
        if to:
            return lambda m: w(ra() - off, m)
        return lambda m: w(ra() + off, m)
    return lambda m: w(ra(), m)


def c_bfe(fr, ins):
    ty = last_type(ins)
    d, a, b, c = ins.operands
    ra, rb, rc, w = rd(fr, a, ty), rd(fr, b, "u32"), rd(fr, c, "u32"), wr(fr, d, ty)
    bits = 8 * SIZE[ty]
    u = UINT[SIZE[ty]]
    sg = is_signed(ty)

    def f(m):
        x = np.asarray(ra()).astype(u) if np.asarray(ra()).dtype != u else np.asarray(ra())
        pos = np.asarray(rb()).astype(np.int64) & 0xFF
        ln = np.asarray(rc()).astype(np.int64) & 0xFF
        msb = np.minimum(pos + ln - 1, bits - 1)
        with np.errstate(**_ERR):
            sh = np.minimum(pos, bits - 1).astype(u)
            v = np.where(pos >= bits, u(0), x >> sh)
            keep = np.minimum(ln, bits)
            maskv = np.where(keep >= bits, ~u(0), (u(1) << np.minimum(keep, bits - 1).astype(u)) - u(1))
            v = v & maskv
            if sg:
                sbit = np.where(ln == 0, u(0), (x >> np.maximum(msb, 0).astype(u)) & u(1))
                sbit = np.where(pos >= bits, (x >> u(bits - 1)) & u(1), sbit)
                fill = np.where(sbit == 1, ~maskv, u(0))
                v = np.where(ln == 0, u(0), v | fill)
            else:
                v = np.where(ln == 0, u(0), v)
        w(v.astype(u).view(NP[ty]), m)

    return f


def c_bfi(fr, ins):
    ty = last_type(ins)
    d, a, b, c, e = ins.operands
    ra, rb, rc, re_, w = rd(fr, a, ty), rd(fr, b, ty), rd(fr, c, "u32"), rd(fr, e, "u32"), wr(fr, d, ty)
    bits = 8 * SIZE[ty]
    u = UINT[SIZE[ty]]

    def f(m):
        x, y = np.asarray(ra()).astype(u), np.asarray(rb()).astype(u)
        pos = np.asarray(rc()).astype(np.int64) & 0xFF
        ln = np.asarray(re_()).astype(np.int64) & 0xFF
        keep = np.clip(np.minimum(ln, bits - pos), 0, bits)
        mk = np.where(keep >= bits, ~u(0), (u(1) << np.minimum(keep, bits - 1).astype(u)) - u(1))
        sh = np.minimum(pos, bits - 1).astype(u)
        r = np.where((ln == 0) | (pos >= bits), y, (y & ~(mk << sh)) | ((x & mk) << sh))
        w(r, m)

    return f


def c_prmt(fr, ins):
    if len([m for m in ins.mods if m not in ("b32",)]) > 0:
        raise CompileError("prmt modes other than the default are not modelled")
    d, a, b, c = ins.operands
    ra, rb, rc, w = rd(fr, a, "b32"), rd(fr, b, "b32"), rd(fr, c, "b32"), wr(fr, d, "b32")

    def f(m):
        x = (np.asarray(rb()).astype(np.uint64) << np.uint64(32)) | np.asarray(ra()).astype(np.uint64)
        sel = np.asarray(rc()).astype(np.uint64)
        r = np.zeros(np.broadcast(x, sel).shape, np.uint64)
        for i in range(4):
            s = (sel >> np.uint64(4 * i)) & np.uint64(0xF)
            byte = (x >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where((s & np.uint64(8)) != 0, np.where((byte & np.uint64(0x80)) != 0, np.uint64(0xFF),
                                                               np.uint64(0)), byte)
            r |= byte << np.uint64(8 * i)
        w(r.astype(np.uint32), m)

    return f


# --- conversions ------------------------------------------------------------------------------------------------
_IRND = ("rni", "rzi", "rmi", "rpi")
_FRND = ("rn", "rz", "rm", "rp", "rna")


def c_cvt(fr, ins):
    mods = ins.mods
    ts = [m for m in mods if m in TYPES or m in ("tf32", "e4m3x2", "e5m2x2")]
    irnd = next((m for m in mods if m in _IRND), None)
    frnd = next((m for m in mods if m in _FRND), None)
    sat = "sat" in mods
    satfinite = "satfinite" in mods
    if "relu" in mods:
        raise CompileError("cvt .relu is not modelled")
    dt, st = ts[-2], ts[-1]
    ops_ = ins.operands
    # fp8 pairs
    if dt in ("e4m3x2", "e5m2x2"):
        fmt = fp.E4M3 if dt == "e4m3x2" else fp.E5M2
        w = wr(fr, ops_[0], "b16")
        if st == "f32":
            ra, rb = rd(fr, ops_[1], "f32"), rd(fr, ops_[2], "f32")

            def f8pair(m):
                hi = fp.f64_to_f8(np.asarray(ra(), np.float64), fmt, frnd or "rn", satfinite)
                lo = fp.f64_to_f8(np.asarray(rb(), np.float64), fmt, frnd or "rn", satfinite)
                w((hi.astype(np.uint16) << np.uint16(8)) | lo.astype(np.uint16), m)

            return f8pair
        if st == "f16x2":
            ra = rd(fr, ops_[1], "b32")

            def f8h(m):
                lo, hi = halves(ra())
                vlo = f16_val(lo).astype(np.float64)
                vhi = f16_val(hi).astype(np.float64)
                clo = fp.f64_to_f8(vlo, fmt, frnd or "rn", satfinite)
                chi = fp.f64_to_f8(vhi, fmt, frnd or "rn", satfinite)
                w((chi.astype(np.uint16) << np.uint16(8)) | clo.astype(np.uint16), m)

            return f8h
        raise CompileError(f"cvt.{dt}.{st} is not modelled")
    if st in ("e4m3x2", "e5m2x2"):
        fmt = fp.E4M3 if st == "e4m3x2" else fp.E5M2
        ra = rd(fr, ops_[1], "b16")
        w = wr(fr, ops_[0], "b32")

        def f8to(m):
            x = np.asarray(ra())
            lo = fp.f8_to_f64(x & np.uint16(0xFF), fmt)
            hi = fp.f8_to_f64(x >> np.uint16(8), fmt)
            with np.errstate(**_ERR):
                bl = lo.astype(np.float16).view(np.uint16)
                bh = hi.astype(np.float16).view(np.uint16)
            w(pack_halves(bl, bh), m)

        return f8to
    if dt == "tf32":
        ra, w = rd(fr, ops_[1], "f32"), wr(fr, ops_[0], "b32")
        if frnd != "rna":
            raise CompileError(f"cvt.{frnd}.tf32 is not modelled")
        return lambda m: w(fp.tf32_rna(ra()), m)
    if dt in ("f16x2", "bf16x2"):
        ra, rb, w = rd(fr, ops_[1], "f32"), rd(fr, ops_[2], "f32"), wr(fr, ops_[0], "b32")
        fmtb = fp.f64_to_f16_bits if dt == "f16x2" else fp.f64_to_bf16_bits
        return lambda m: w(pack_halves(fmtb(np.asarray(rb(), np.float64), frnd or "rn", satfinite),
                                       fmtb(np.asarray(ra(), np.float64), frnd or "rn", satfinite)), m)
    ra = rd(fr, ops_[1], st)
    w = wr(fr, ops_[0], dt)
    fn = convert_fn(dt, st, irnd, frnd, sat, satfinite)
    return lambda m: w(fn(ra()), m)


def _src_value(st, x):
    """Source values as float64 (floats) or int64/uint64 (ints)."""
    x = np.asarray(x)
    if st == "bf16":
        return bf16_val(x).astype(np.float64)
    if st == "f16":
        return x.astype(np.float64)
    if st in ("f32", "f64"):
        return x.astype(np.float64)
    if is_signed(st):
        return x.astype(np.int64)
    return x.astype(np.uint64)


def convert_fn(dt, st, irnd, frnd, sat, satfinite):
    sf, df = is_float(st), is_float(dt)
    # integer <- integer: truncate / extend
    if not sf and not df:
        t = NP[dt]
        if sat:
            lo, hi = _int_range(dt)

            def isat(x):
                v = _src_value(st, x)
                if v.dtype == np.uint64:
                    v = np.minimum(v, np.uint64(hi)).astype(np.int64) if hi < 2 ** 64 else v
                    return np.asarray(v).astype(t)
                return np.clip(v, lo, min(hi, 2 ** 63 - 1)).astype(t)

            return isat
        return lambda x: np.asarray(x).astype(t)
    # integer <- float: round, saturate, NaN -> 0
    if sf and not df:
        lo, hi = _int_range(dt)
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}[irnd]
        t = NP[dt]

        def f2i(x):
            v = rnd(_src_value(st, x))
            nan = np.isnan(v)
            with np.errstate(**_ERR):
                big = v >= float(hi)
                small = v <= float(lo)
                vc = np.where(nan | big | small, 0.0, v)
                if t == np.uint64:
                    r = vc.astype(np.uint64)
                    r = np.where(big, np.uint64(hi), r)
                    return np.where(small, np.uint64(0), r)
                r = vc.astype(np.int64)
                r = np.where(big, np.int64(hi), r)
                r = np.where(small, np.int64(lo), r)
                return r.astype(t)

        return f2i
    # float <- integer
    if not sf and df:
        mode = frnd or "rn"
        signed = is_signed(st)

        def i2f(x):
            v = _src_value(st, x)
            if dt == "f64":
                if mode == "rn":
                    return v.astype(np.float64)
                if mode == "rz":
                    return fp.int_to_f64_rz(v, signed)
                raise CompileError(f"cvt.{mode}.f64 from integers is not modelled")
            odd = fp.int_to_f64_odd(v, signed)
            return _float_out(dt, odd, mode, satfinite)

        return i2f
    # float <- float
    if irnd is not None:
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[irnd]
        return lambda x: _float_out(dt, rnd(_src_value(st, x)), "rn", satfinite)
    mode = frnd or "rn"
    if dt == "f32" and st == "f16" and not sat:
        return lambda x: np.asarray(x, np.float16).astype(np.float32)
    if dt == "f16" and st == "f32" and mode == "rn" and not satfinite and not sat:
        def f32_16(x):
            with np.errstate(**_ERR):
                return np.asarray(x, np.float32).astype(np.float16)
        return f32_16

    def ff(x):
        v = _src_value(st, x)
        if sat:
            v = np.where(np.isnan(v), 0.0, np.clip(v, 0.0, 1.0))
        return _float_out(dt, v, mode, satfinite)

    return ff


def _float_out(dt, v, mode, satfinite):
    if dt == "f64":
        return v
    if dt == "f32":
        return fp.f64_to_f32(v, mode, satfinite)
    if dt == "f16":
        return fp.f64_to_f16_bits(v, mode, satfinite).view(np.float16)
    if dt == "bf16":
        return fp.f64_to_bf16_bits(v, mode, satfinite)
    raise CompileError(f"cvt to .{dt} is not modelled")


def _int_range(t):
    w = 8 * SIZE[t]
    if is_signed(t):
        return -(1 << (w - 1)), (1 << (w - 1)) - 1
    return 0, (1 << w) - 1


def c_sad(fr, ins):
    """sad: d = c + |a - b| (the difference exact, the sum modulo 2^bits)."""
    ty = last_type(ins)
    d, a, b, c = ins.operands
    ra, rb, rc, w = rd(fr, a, ty), rd(fr, b, ty), rd(fr, c, ty), wr(fr, d, ty)
    t, u = NP[ty], UINT[SIZE[ty]]

    def f(m):
        x, y = np.asarray(ra(), t), np.asarray(rb(), t)
        with np.errstate(over="ignore"):
            xu, yu = x.view(u), y.view(u)
            diff = np.where(x > y, xu - yu, yu - xu)
            w((diff + np.asarray(rc(), t).view(u)).view(t), m)

    return f


# --- control -------------------------------------------------------------------------------------------------------
def c_nop(fr, ins):
    return lambda m: None


HANDLERS = {
    "add": c_binary, "sub": c_binary, "mul": c_binary, "div": c_binary, "rem": c_binary,
    "min": c_binary, "max": c_binary, "copysign": c_binary,
    "shl": c_shift, "shr": c_shift,
    "mad": c_mad, "fma": c_fma, "sad": c_sad,
    "neg": c_unary, "abs": c_unary, "sqrt": c_unary, "rsqrt": c_unary, "rcp": c_unary, "ex2": c_unary,
    "lg2": c_unary, "sin": c_unary, "cos": c_unary, "tanh": c_unary, "clz": c_unary, "popc": c_unary,
    "brev": c_unary,
    "setp": c_setp, "selp": c_selp, "mov": c_mov, "cvt": c_cvt, "cvta": c_cvta,
    "bfe": c_bfe, "bfi": c_bfi, "prmt": c_prmt,
    "membar": c_nop, "prefetch": c_nop,
}


def compile_instr(fr, ins):
    op = ins.opcode
    if op in ("and", "or", "xor", "not"):
        ty = last_type(ins)
        core = c_logic_pred(fr, ins) if ty == "pred" else (c_unary(fr, ins) if op == "not" else c_binary(fr, ins))
    elif op in hopper.HANDLERS:
        core = hopper.HANDLERS[op](fr, ins)
    elif op in HANDLERS:
        core = HANDLERS[op](fr, ins)
    elif op in mem_ops.HANDLERS:
        core = mem_ops.HANDLERS[op](fr, ins)
    else:
        raise CompileError(f"'{op}' is not a modelled instruction")
    if fr.hop is not None and fr.hop.tracked and op != "wgmma":
        core = hopper.track_registers(fr, ins, core)
    if ins.guard is None:
        return core
    reg, neg = ins.guard
    p = fr.regs[reg.name]

    if neg:
        def guarded(m):
            g = ~p
            core(g if m is None else g & m)
    else:
        def guarded(m):
            core(p if m is None else p & m)
    return guarded
