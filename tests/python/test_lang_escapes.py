"""The elementwise escapes.

tl.map_elementwise applies a function written for one element: on the
interpreter (and on the GPU, where every launch is also assembled) with
branches on the element's value, early returns, several results, pack > 1
and nested helpers, against numpy in float64 on masked edges and several
dtypes.

tl.inline_asm_elementwise is PTX: the interpreter reports it clearly; its
compilation for sm_80 and sm_90 substitutes the operands (packed narrow
types included) and assembles; with a CUDA device the kernel runs and is
compared with numpy."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err
import sim_mode


@triton.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return (alpha * (tl.exp(x.to(tl.float32)) - 1)).to(x.dtype)


@triton.jit
def piecewise(x, lo, hi):
    """Three pieces with an early return, a changed variable and a conditional expression."""
    if x < lo:
        return (lo - (lo - x) * 0.5).to(x.dtype)
    y = x
    if y > hi:
        y = (hi + (y - hi) * 0.25).to(x.dtype)
    y = y * 2 if y > 0 else y
    return y


@triton.jit
def split_sign(x):
    if x >= 0:
        pos = x
        neg = x * 0
    else:
        pos = x * 0
        neg = -x
    return pos, neg


@triton.jit
def clamp_pair(a0, a1, b0, b1):
    """pack=2: slot j of each argument; slots are independent."""
    return tl.minimum(a0, b0).to(a0.dtype), tl.minimum(a1, b1).to(a1.dtype)


@triton.jit
def map_kernel(X, Y, P, Q, R, n, alpha, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.store(Y + offs, tl.map_elementwise(selu_scalar, x, alpha), mask=m)
    tl.store(Y + n + offs, tl.map_elementwise(piecewise, x, lo, hi), mask=m)
    p, q = tl.map_elementwise(split_sign, x)
    tl.store(P + offs, p, mask=m)
    tl.store(Q + offs, q, mask=m)
    tl.store(R + offs, tl.map_elementwise(clamp_pair, x, hi, pack=2), mask=m)


def _ref(x, alpha, lo, hi):
    x = x.astype(np.float64)
    selu = np.where(x > 0, x, alpha * (np.exp(x) - 1))
    y = np.where(x > hi, hi + (x - hi) * 0.25, x)
    y = np.where(y > 0, y * 2, y)
    pw = np.where(x < lo, lo - (lo - x) * 0.5, y)
    return selu, pw, np.where(x >= 0, x, 0), np.where(x >= 0, 0, -x), np.minimum(x, hi)


@pytest.mark.parametrize("n", [1, 100, 513])
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
def test_map_elementwise(rng, n, dt):
    x = (rng.standard_normal(n) * 3).astype(dt)
    y = poisoned(2 * n, dt)
    p, q, r = poisoned(n, dt), poisoned(n, dt), poisoned(n, dt)
    alpha, lo, hi = 1.5, -2.0, 1.25
    def launch():
        map_kernel[(triton.cdiv(n, 128),)](x, y, p, q, r, n, alpha, lo, hi, BLOCK=128)

    if dt == np.float64:
        # selu takes its exponential in fp32: the GPU's (ex2.approx) and the interpreter's
        # differ in the last bit of an fp32, far above the fp64 tolerance of the device modes
        launch = sim_mode.tolerance(1e-6)(launch)
    launch()
    selu, pw, pos, neg, cl = _ref(x, alpha, lo, hi)
    tol = 3e-3 if dt == np.float16 else 1e-6
    # selu's negative branch subtracts 1 from an fp32 exponential: near x = 0 that
    # cancels, so each element's error is bounded by a few fp32 ulps of 1 (times
    # alpha) as well as relatively (seen: x = -0.0127, relative error 2e-6)
    err = np.abs(y[:n].astype(np.float64) - selu)
    assert (err <= tol * np.abs(selu) + 4 * alpha * np.finfo(np.float32).eps).all()
    assert rel_err(y[n:], pw) < tol
    assert rel_err(p, pos) < tol and rel_err(q, neg) < tol
    assert rel_err(r, cl) < tol


@triton.jit
def collatz_steps(v):
    """An integer function with nested conditions, applied elementwise."""
    if v % 2 == 0:
        r = v // 2
    elif v > 100:
        r = v - 7
    else:
        r = 3 * v + 1
    return r


@triton.jit
def map_int(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Y + offs, tl.map_elementwise(collatz_steps, tl.load(X + offs, mask=m)), mask=m)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.uint32])
def test_map_elementwise_int(rng, dt):
    n = 200
    x = rng.integers(1, 1000, n).astype(dt)
    y = poisoned(n, dt)
    map_int[(1,)](x, y, n, BLOCK=256)
    xi = x.astype(np.int64)
    want = np.where(xi % 2 == 0, xi // 2, np.where(xi > 100, xi - 7, 3 * xi + 1)).astype(dt)
    assert np.array_equal(y, want)


# --- inline assembly ---------------------------------------------------------------------------------------
@triton.jit
def asm_kernel(A, B, C, D, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + offs, mask=m, other=0)  # uint8
    b = tl.load(B + offs, mask=m, other=0.0)  # float32
    c, d = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
        args=[a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(C + offs, c, mask=m)
    tl.store(D + offs, d, mask=m)


@triton.jit
def asm_half(X, Y, n, BLOCK: tl.constexpr):
    """Two halves per 32-bit register (pack=2): y = x * 2 by a packed fma."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    y = tl.inline_asm_elementwise(
        "{ .reg .b32 two, nz; mov.b32 two, 0x40004000; mov.b32 nz, 0x80008000; fma.rn.f16x2 $0, $1, two, nz; }",
        "=r,r", [x], dtype=tl.float16, is_pure=True, pack=2)
    tl.store(Y + offs, y, mask=m)


def _ptxas():
    p = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
    return p


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_inline_asm_compiles(arch):
    for kern, sig, marks in ((asm_kernel, "*u8:16, *fp32:16, *i32:16, *fp32:16, i32, 256", ["mov.b32 {tmp0"]),
                             (asm_half, "*fp16:16, *fp16:16, i32, 128", ["fma.rn.f16x2"])):
        k = kern.compile(sig, arch=arch)
        for mark in marks:
            assert mark in k.ptx
        assert "$" not in k.ptx.split(".entry")[1].replace("$L", "")  # every operand substituted
        ptxas = _ptxas()
        if ptxas:
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
                f.write(k.ptx)
            try:
                res = subprocess.run([ptxas, f"-arch={arch}", f.name, "-o", os.devnull], capture_output=True, text=True)
            finally:
                os.unlink(f.name)
            assert res.returncode == 0, res.stderr


def test_inline_asm_interpreter_error(rng):
    n = 64
    a = rng.integers(0, 255, n).astype(np.uint8)
    b = rng.standard_normal(n).astype(np.float32)
    c, d = poisoned(n, np.int32), poisoned(n, np.float32)
    with pytest.raises(triton.LaunchError, match="inline_asm_elementwise cannot run on the interpreter"):
        asm_kernel[(1,)](a, b, c, d, n, BLOCK=64)


def test_inline_asm_on_gpu(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    n = 1000
    a = rng.integers(0, 255, n).astype(np.uint8)
    b = (rng.standard_normal(n) * 100).astype(np.float32)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.full((n,), -1, dtype=torch.int32, device="cuda")
    td = torch.full((n,), float("nan"), dtype=torch.float32, device="cuda")
    asm_kernel[(triton.cdiv(n, 256),)](ta, tb, tc, td, n, BLOCK=256)
    assert np.array_equal(tc.cpu().numpy(), a.astype(np.int32))
    assert np.array_equal(td.cpu().numpy(), np.maximum(a.astype(np.float32), b))
    x = rng.standard_normal(100).astype(np.float16)
    tx = torch.from_numpy(x).cuda()
    ty = torch.full((100,), float("nan"), dtype=torch.float16, device="cuda")
    asm_half[(1,)](tx, ty, 100, BLOCK=128)
    assert np.array_equal(ty.cpu().numpy(), x * np.float16(2))
