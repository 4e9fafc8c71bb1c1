"""The PTX simulator (tools/ptxsim) on hand-written PTX with known results:
mma.sync fragments, ldmatrix, stmatrix, shfl.sync, conversions and their rounding,
fp8, min/max NaN rules, integer corner cases, divergence, atomics,
cp.async, and the checks (bounds, alignment, races, barriers, warp
uniformity)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools"))
import ptxsim  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None


def kernel(body, nparams=2, threads=32, regs=64, smem=False, extra=""):
    params = ",\n".join(f"  .param .u64 k_param_{i}" for i in range(nparams))
    loads = "\n".join(f"  ld.param.u64 %rd{i}, [k_param_{i}];" for i in range(nparams))
    return f"""
.version 8.0
.target sm_90
.address_size 64
{".extern .shared .align 16 .b8 nr_smem[];" if smem else ""}
{extra}
.visible .entry k(
{params}
)
.reqntid {threads}, 1, 1
{{
  .reg .pred %p<{regs}>;
  .reg .b16 %rs<{regs}>;
  .reg .b32 %r<{regs}>;
  .reg .b64 %rd<{regs}>;
  .reg .b32 %tid;
  .reg .b64 %off;
  mov.u32 %tid, %tid.x;
  cvt.u64.u32 %off, %tid;
{loads}
{body}
  ret;
}}
"""


def run(body, arrays, threads=32, grid=1, smem=0, **kw):
    mem = ptxsim.GlobalMemory()
    allocs = [mem.from_array(a, f"a{i}") for i, a in enumerate(arrays)]
    ptx = kernel(body, len(arrays), threads, smem=smem > 0, extra=kw.pop("extra", ""))
    ptxsim.launch(ptx, "k", (grid,), params=allocs, memory=mem, shared_bytes=smem, **kw)
    return [al.ndarray(a.dtype, a.shape, a.strides) for al, a in zip(allocs, arrays)]


def elementwise(op_lines, x, out_dtype, in_bytes=None, out_bytes=None):
    """out[t] = f(x[t]) per thread: op_lines read %r1 (or %rd41/%rs1) and write %r2 (%rd42/%rs2)."""
    n = x.size
    ib = in_bytes or x.itemsize
    ob = out_bytes or np.dtype(out_dtype).itemsize
    regs = {1: "%r", 2: "%rs", 4: "%r", 8: "%rd4"}
    body = f"""
  mul.lo.u64 %rd10, %off, {ib};
  add.u64 %rd11, %rd0, %rd10;
  ld.global.b{8 * ib if ib > 1 else 8} {regs[ib]}1, [%rd11];
{op_lines}
  mul.lo.u64 %rd12, %off, {ob};
  add.u64 %rd13, %rd1, %rd12;
  st.global.b{8 * ob} [%rd13], {regs[ob]}2;
"""
    out = np.zeros(n, out_dtype)
    return run(body, [x, out], threads=n)[1]


# --- conversions ---------------------------------------------------------------------------------------------
def test_cvt_f32_to_f16_rounding():
    x = np.array([1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, -(1.0 + 2 ** -11), 65520.0, 65519.0, 1e-8, np.nan, -0.0]
                 + [0.1] * 24, np.float32)
    rn = elementwise("  cvt.rn.f16.f32 %rs2, %r1;", x, np.float16, out_bytes=2)
    rz = elementwise("  cvt.rz.f16.f32 %rs2, %r1;", x, np.float16, out_bytes=2)
    assert np.array_equal(rn, x.astype(np.float16), equal_nan=True)  # numpy rounds to nearest even
    assert rn[0] == 1.0 and rn[1] == 1.0 + 2 ** -9 and np.isinf(rn[3]) and rn[4] == 65504
    assert rz[0] == 1.0 and rz[1] == 1.0 + 2 ** -10 and rz[3] == 65504 and rz[5] == 0
    assert np.signbit(rz[7]) and np.isnan(rz[6])


def test_cvt_bf16_and_tf32():
    x = np.array([1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.0e38, np.float32(1 + 2 ** -11 + 2 ** -12)] + [2.0] * 28,
                 np.float32)
    bf = elementwise("  cvt.rn.bf16.f32 %rs2, %r1;", x, np.uint16, out_bytes=2)
    vals = (bf.astype(np.uint32) << 16).view(np.float32)
    assert vals[0] == 1.0 and vals[1] == 1.0 + 2 ** -6 and vals[2] == np.float32(3.0e38).astype(np.float64).round(-36) \
        or abs(vals[2] - 3.0e38) / 3e38 < 2 ** -8
    tf = elementwise("  cvt.rna.tf32.f32 %r2, %r1;", x, np.float32)
    # 10 mantissa bits, ties away from zero: 1 + 2^-11 rounds up to 1 + 2^-10
    y = np.array([1 + 2 ** -11], np.float32)
    t = elementwise("  cvt.rna.tf32.f32 %r2, %r1;", np.resize(y, 32), np.float32)
    assert t[0] == 1 + 2 ** -10
    assert (tf.view(np.uint32) & 0x1FFF == 0).all()


def test_cvt_float_to_int_saturates():
    x = np.array([1.5, 2.5, -1.5, -2.5, 3e9, -3e9, np.nan, np.inf, -np.inf, 127.9, -128.9, 200.0] + [0.0] * 20,
                 np.float32)
    rni = elementwise("  cvt.rni.s32.f32 %r2, %r1;", x, np.int32)
    rzi = elementwise("  cvt.rzi.s32.f32 %r2, %r1;", x, np.int32)
    rmi = elementwise("  cvt.rmi.s32.f32 %r2, %r1;", x, np.int32)
    rpi = elementwise("  cvt.rpi.s32.f32 %r2, %r1;", x, np.int32)
    assert list(rni[:4]) == [2, 2, -2, -2] and list(rzi[:4]) == [1, 2, -1, -2]
    assert list(rmi[:4]) == [1, 2, -2, -3] and list(rpi[:4]) == [2, 3, -1, -2]
    assert list(rni[4:9]) == [2 ** 31 - 1, -2 ** 31, 0, 2 ** 31 - 1, -2 ** 31]
    s8 = elementwise("  cvt.rzi.s8.f32 %r2, %r1;", x, np.int32)  # sign-extended in the .b32 register
    assert list(s8[9:12]) == [127, -128, 127]
    u8 = elementwise("  cvt.rzi.u8.f32 %r2, %r1;", x, np.uint32)
    assert list(u8[9:12]) == [127, 0, 200] and u8[5] == 0


def test_cvt_int_to_float_rounding():
    big = np.array([2 ** 53 + 1, 2 ** 62 + 2 ** 38 + 1, -(2 ** 60) - 1, 2 ** 24 + 1, 7] + [1] * 27, np.int64)
    f32 = elementwise("  cvt.rn.f32.s64 %r2, %rd41;", big, np.float32)
    assert np.array_equal(f32, big.astype(np.float32))  # C conversion rounds once to nearest even
    f16 = elementwise("  cvt.rn.f16.s64 %rs2, %rd41;", big, np.float16, out_bytes=2)
    assert np.isinf(f16[0]) and f16[4] == 7
    rz = elementwise("  cvt.rz.f64.s64 %rd42, %rd41;", big, np.float64)
    assert rz[0] == 2.0 ** 53 and rz[2] == -(2.0 ** 60)


def test_cvt_int_widths():
    x = np.array([0x80, 0x7F, 0xFFFF8000, 0x12345678] + [0] * 28, np.uint32)
    s8 = elementwise("  cvt.s32.s8 %r2, %r1;", x, np.int32)
    u16 = elementwise("  cvt.u16.u32 %rs1, %r1;\n  cvt.u32.u16 %r2, %rs1;", x, np.uint32)
    s16 = elementwise("  cvt.s32.s16 %r2, %r1;", x, np.int32)
    assert list(s8[:4]) == [-128, 127, 0, 0x78]
    assert list(u16[:4]) == [0x80, 0x7F, 0x8000, 0x5678]
    assert list(s16[:4]) == [0x80, 0x7F, -0x8000, 0x5678]


@pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("fmt", ["e4m3x2", "e5m2x2"])
def test_fp8_conversions(rng, fmt):
    t = ml_dtypes.float8_e4m3fn if fmt == "e4m3x2" else ml_dtypes.float8_e5m2
    lim = 448.0 if fmt == "e4m3x2" else 57344.0
    x = (rng.standard_normal(64) * rng.choice([1e-3, 1, 30, 1e3, 1e5], 64)).astype(np.float32)
    x[:6] = [460.0, 1e6, -1e6, np.inf, np.nan, 2.0 ** -10]
    pairs = x.reshape(32, 2)
    # cvt.rn.satfinite.<fmt>.f32 d, a, b: a in the high byte, b in the low byte
    body = f"""
  mul.lo.u64 %rd10, %off, 8;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.v2.b32 {{%r1, %r2}}, [%rd11];
  cvt.rn.satfinite.{fmt}.f32 %rs1, %r2, %r1;
  mul.lo.u64 %rd12, %off, 2;
  add.u64 %rd13, %rd1, %rd12;
  st.global.b16 [%rd13], %rs1;
  cvt.rn.f16x2.{fmt} %r3, %rs1;
  mul.lo.u64 %rd14, %off, 4;
  add.u64 %rd15, %rd2, %rd14;
  st.global.b32 [%rd15], %r3;
"""
    codes = np.zeros(32, np.uint16)
    back = np.zeros(64, np.float16)
    _, codes, back = run(body, [pairs, codes, back])
    lo, hi = (codes & 0xFF).astype(np.uint8), (codes >> 8).astype(np.uint8)
    ref = np.clip(x, -lim, lim).astype(t)
    got = np.stack([lo, hi], axis=1).ravel()  # low byte: x[2i] (operand b), high: x[2i+1]
    refb = ref.view(np.uint8)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], refb[~nan])
    assert (got[nan] & 0x7F == 0x7F).all()
    assert np.array_equal(back.astype(np.float32)[~nan], ref.astype(np.float32)[~nan])


# --- min / max / NaN ----------------------------------------------------------------------------------------------
def test_min_max_nan_rules():
    a = np.array([1.0, np.nan, np.nan, -0.0, 0.0, 3.0] + [0.0] * 26, np.float32)
    b = np.array([np.nan, 2.0, np.nan, 0.0, -0.0, -3.0] + [0.0] * 26, np.float32)
    x = np.stack([a, b], 1).ravel().view(np.uint64)
    body = """
  mov.b64 {%r1, %r3}, %rd41;
  min.f32 %r2, %r1, %r3;"""
    mn = elementwise(body, x, np.float32, in_bytes=8)
    mx = elementwise(body.replace("min.f32", "max.f32"), x, np.float32, in_bytes=8)
    mnn = elementwise(body.replace("min.f32", "min.NaN.f32"), x, np.float32, in_bytes=8)
    assert mn[0] == 1.0 and mn[1] == 2.0 and np.isnan(mn[2]) and np.signbit(mn[3]) and np.signbit(mn[4])
    assert not np.signbit(mx[3]) and not np.signbit(mx[4]) and mx[5] == 3.0
    assert np.isnan(mnn[:3]).all() and mnn[5] == -3.0


def test_ex2_ftz_flushes_subnormals():
    # ex2.approx.f32 keeps subnormal results; .ftz flushes them (and subnormal operands) to zero
    x = np.array([-127.5, -130.0, -149.0, 3.0, -1e-40, 1e-40, -126.0, 0.5] + [0.0] * 24, np.float32)
    keep = elementwise("  ex2.approx.f32 %r2, %r1;", x, np.float32)
    ftz = elementwise("  ex2.approx.ftz.f32 %r2, %r1;", x, np.float32)
    assert keep[0] == np.float32(2.0 ** -127.5) and keep[1] == np.float32(2.0 ** -130) and keep[2] > 0
    assert (ftz[:3] == 0).all() and ftz[3] == 8.0 and ftz[6] == np.float32(2.0 ** -126)
    assert ftz[4] == 1.0 and ftz[5] == 1.0 and abs(ftz[7] - np.sqrt(2)) < 1e-6


# --- integers ----------------------------------------------------------------------------------------------------
def test_div_rem_shift_bfe_prmt():
    a = np.array([-7, 7, -7, 7, -2 ** 31, 1, 0x12345678, -1] + [5] * 24, np.int32)
    b = np.array([2, -2, -2, 2, -1, 40, 3, 33] + [3] * 24, np.int32)
    x = np.stack([a, b], 1).ravel().view(np.uint64)
    unpack = "  mov.b64 {%r1, %r3}, %rd41;\n"
    q = elementwise(unpack + "  div.s32 %r2, %r1, %r3;", x, np.int32, in_bytes=8)
    r = elementwise(unpack + "  rem.s32 %r2, %r1, %r3;", x, np.int32, in_bytes=8)
    assert list(q[:5]) == [-3, -3, 3, 3, -2 ** 31] and list(r[:4]) == [-1, 1, -1, 1]
    shl = elementwise(unpack + "  shl.b32 %r2, %r1, %r3;", x, np.int32, in_bytes=8)
    sra = elementwise(unpack + "  shr.s32 %r2, %r1, %r3;", x, np.int32, in_bytes=8)
    assert shl[5] == 0 and sra[7] == -1 and sra[0] == -2  # amounts past the width clamp
    e = elementwise(unpack + "  bfe.s32 %r2, %r1, 4, 8;", x, np.int32, in_bytes=8)
    assert e[6] == 0x67 and e[7] == -1
    p = elementwise(unpack + "  prmt.b32 %r2, %r1, %r3, 0x5410;", x, np.uint32, in_bytes=8)
    assert p[6] == (0x5678 | (3 << 16))
    hi = elementwise(unpack + "  mul.hi.s32 %r2, %r1, %r3;", x, np.int32, in_bytes=8)
    assert hi[4] == 0 and hi[7] == -1


def test_mul_hi_64():
    a = np.array([2 ** 63 - 1, -(2 ** 63), -5, 3] + [1] * 28, np.int64)
    x = np.stack([a, a[::-1].copy()], 1)
    body = """
  mul.lo.u64 %rd10, %off, 16;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.v2.b64 {%rd41, %rd43}, [%rd11];
  mul.hi.s64 %rd42, %rd41, %rd43;
  mul.hi.u64 %rd44, %rd41, %rd43;
  add.u64 %rd13, %rd1, %rd10;
  st.global.v2.b64 [%rd13], {%rd42, %rd44};
"""
    out = np.zeros((32, 2), np.uint64)
    _, out = run(body, [x, out])
    for i in range(32):
        aa, bb = int(x[i, 0]), int(x[i, 1])
        assert int(out[i, 0].astype(np.int64)) == (aa * bb) >> 64
        assert int(out[i, 1]) == ((aa % 2 ** 64) * (bb % 2 ** 64)) >> 64


# --- warp operations ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,b,c,expect", [
    ("bfly", 5, 31, lambda l: l ^ 5),
    ("idx", 9, 31, lambda l: 9),
    ("up", 3, 0, lambda l: l - 3 if l >= 3 else l),
    ("down", 3, 31, lambda l: l + 3 if l + 3 <= 31 else l),
    ("idx", 2, 0x1807, lambda l: (l & ~7) | 2),       # segments of 8 lanes
    ("down", 1, 0x181F & ~0x1F | 0x7, lambda l: l + 1 if (l & 7) < 7 else l),
])
def test_shfl(mode, b, c, expect):
    x = (np.arange(64) * 10 + 1).astype(np.int32)
    body = f"""
  mul.lo.u64 %rd10, %off, 4;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.b32 %r1, [%rd11];
  shfl.sync.{mode}.b32 %r2, %r1, {b}, {c}, -1;
  add.u64 %rd13, %rd1, %rd10;
  st.global.b32 [%rd13], %r2;
"""
    out = np.zeros(64, np.int32)
    _, out = run(body, [x, out], threads=64)
    for w in range(2):
        for lane in range(32):
            assert out[32 * w + lane] == x[32 * w + expect(lane)], (w, lane)


@pytest.mark.parametrize("nmat,trans", [(1, False), (2, False), (4, False), (1, True), (2, True), (4, True)])
def test_ldmatrix(nmat, trans):
    """Matrix j is 8 rows of 8 b16 at row stride 32 bytes (rows need not be contiguous);
    lanes 8j..8j+7 give the row addresses."""
    vals = np.arange(4 * 8 * 16, dtype=np.uint16)  # 4 matrices x 8 rows x 16 halves (8 used)
    copy = "".join(f"""
  add.u64 %rd12, %rd11, {64 * j};
  ld.global.b16 %rs2, [%rd12];
  st.shared.b16 [%r22+{64 * j}], %rs2;""" for j in range(16))
    body = f"""
  mov.u32 %r20, nr_smem;
  mul.lo.u64 %rd10, %off, 2;
  add.u64 %rd11, %rd0, %rd10;
  cvt.u32.u64 %r21, %rd10;
  add.u32 %r22, %r20, %r21;
{copy}
  bar.sync 0;
  mul.lo.u32 %r23, %tid, 32;
  add.u32 %r24, %r20, %r23;
  ldmatrix.sync.aligned.m8n8.x{nmat}{".trans" if trans else ""}.shared.b16 {{{", ".join(f"%r{30 + j}" for j in range(nmat))}}}, [%r24];
  mul.lo.u64 %rd14, %off, 16;
  add.u64 %rd15, %rd1, %rd14;
  st.global.v4.b32 [%rd15], {{{", ".join(f"%r{30 + j}" if j < nmat else "0" for j in range(4)).replace(", 0", ", %r29")}}};
"""
    body = "  mov.b32 %r29, 0;\n" + body
    out = np.zeros((32, 4), np.uint32)
    _, out = run(body, [vals, out], smem=1024)
    rows = vals.reshape(32, 16)  # row r of the buffer: matrix r // 8, row r % 8
    for lane in range(32):
        for j in range(nmat):
            m = rows[8 * j:8 * j + 8, :8]
            if trans:
                lo, hi = m[2 * (lane % 4), lane // 4], m[2 * (lane % 4) + 1, lane // 4]
            else:
                lo, hi = m[lane // 4, 2 * (lane % 4)], m[lane // 4, 2 * (lane % 4) + 1]
            assert out[lane, j] == int(lo) | (int(hi) << 16), (lane, j)


def stmatrix_body(nmat, trans, rows_at="mul.lo.u32 %r23, %tid, 32;", pre=""):
    """Lane l's registers %r30.. are x[l, :nmat]; stmatrix with lane l giving the address of buffer row l
    (32 bytes apart: rows need not be contiguous); then every thread copies its row's 16 bytes out."""
    regs = ", ".join(f"%r{30 + j}" for j in range(nmat))
    loads = "".join(f"""
  ld.global.b32 %r{30 + j}, [%rd11+{4 * j}];""" for j in range(nmat))
    return f"""
  mov.u32 %r20, nr_smem;
  mul.lo.u64 %rd10, %off, 16;
  add.u64 %rd11, %rd0, %rd10;{loads}
  {rows_at}
  add.u32 %r24, %r20, %r23;
{pre}  stmatrix.sync.aligned.m8n8.x{nmat}{".trans" if trans else ""}.shared.b16 [%r24], {{{regs}}};
  bar.sync 0;
  mul.lo.u32 %r25, %tid, 32;
  add.u32 %r26, %r20, %r25;
  ld.shared.v4.b32 {{%r1, %r2, %r3, %r4}}, [%r26];
  add.u64 %rd12, %rd1, %rd10;
  st.global.v4.b32 [%rd12], {{%r1, %r2, %r3, %r4}};
"""


@pytest.mark.parametrize("nmat,trans", [(1, False), (2, False), (4, False), (1, True), (2, True), (4, True)])
def test_stmatrix(nmat, trans):
    """stmatrix (sm_90) as the ISA's fragment table says: lane l's register j holds row l / 4, columns
    2 (l % 4) and 2 (l % 4) + 1 of matrix j (.trans: rows 2 (l % 4) and 2 (l % 4) + 1 at column l / 4), low
    half first; lanes 8j..8j+7 give the row addresses of matrix j."""
    rng = np.random.default_rng(7 + nmat + 10 * trans)
    x = rng.integers(0, 2**32, size=(32, 4), dtype=np.uint32)
    out = np.zeros((32, 8), np.uint16)
    _, out = run(stmatrix_body(nmat, trans), [x, out], smem=1024)
    halves = np.stack([x & 0xFFFF, x >> 16], axis=2).astype(np.uint16)  # [lane, register, half]
    for j in range(nmat):
        want = np.zeros((8, 8), np.uint16)
        for lane in range(32):
            for h in range(2):
                if trans:
                    want[2 * (lane % 4) + h, lane // 4] = halves[lane, j, h]
                else:
                    want[lane // 4, 2 * (lane % 4) + h] = halves[lane, j, h]
        assert np.array_equal(out[8 * j:8 * j + 8], want), j


def test_stmatrix_is_ldmatrix_inverse():
    """ldmatrix of what stmatrix stored gives the registers back, plain and transposed."""
    x = np.random.default_rng(3).integers(0, 2**32, size=(32, 4), dtype=np.uint32)
    for trans in (False, True):
        t = ".trans" if trans else ""
        body = f"""
  mov.u32 %r20, nr_smem;
  mul.lo.u64 %rd10, %off, 16;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.v4.b32 {{%r30, %r31, %r32, %r33}}, [%rd11];
  mul.lo.u32 %r23, %tid, 48;
  add.u32 %r24, %r20, %r23;
  stmatrix.sync.aligned.m8n8.x4{t}.shared.b16 [%r24], {{%r30, %r31, %r32, %r33}};
  bar.sync 0;
  ldmatrix.sync.aligned.m8n8.x4{t}.shared.b16 {{%r1, %r2, %r3, %r4}}, [%r24];
  add.u64 %rd12, %rd1, %rd10;
  st.global.v4.b32 [%rd12], {{%r1, %r2, %r3, %r4}};
"""
        _, out = run(body, [x, np.zeros((32, 4), np.uint32)], smem=2048)
        assert np.array_equal(out, x), trans


def test_stmatrix_checks():
    x = np.zeros((32, 4), np.uint32)
    out = np.zeros((32, 8), np.uint16)
    # a row address that is not 16-byte aligned
    with pytest.raises(ptxsim.MemoryFault, match="misaligned"):
        run(stmatrix_body(4, False, rows_at="mul.lo.u32 %r23, %tid, 40;"), [x, out], smem=2048)
    # rows past the end of shared memory
    with pytest.raises(ptxsim.MemoryFault, match="out-of-bounds"):
        run(stmatrix_body(4, False), [x, out], smem=512)
    # two matrices' rows on the same bytes with different values: a race within the instruction
    xs = np.arange(128, dtype=np.uint32).reshape(32, 4)
    with pytest.raises(ptxsim.RaceError, match="one instruction"):
        run(stmatrix_body(2, False, rows_at="and.b32 %r27, %tid, 7;\n  mul.lo.u32 %r23, %r27, 32;"), [xs, out],
            smem=1024)
    # part of a warp
    with pytest.raises(ptxsim.WarpSyncError, match="stmatrix"):
        run(stmatrix_body(1, False, pre="  setp.lt.u32 %p1, %tid, 7;\n  @%p1 bra $L1;\n").replace(
            "  bar.sync 0;", "$L1:\n  bar.sync 0;", 1), [x, out], smem=1024)


# The PTX ISA's fragment tables, written out here for the tests (lane = 4 * groupID + threadID_in_group).
def isa_a(k, i, lane):
    g, t = lane // 4, lane % 4
    if k == 16:
        return (g if i in (0, 1, 4, 5) else g + 8), 2 * t + (i % 2) + (8 if i >= 4 else 0)
    if k == 8:
        return (g if i in (0, 2) else g + 8), (t if i < 2 else t + 4)
    return (g if i < 4 or 8 <= i < 12 else g + 8), 4 * t + (i % 4) + (16 if i >= 8 else 0)


def isa_b(k, i, lane):
    g, t = lane // 4, lane % 4
    if k == 16:
        return 2 * t + (i % 2) + (8 if i >= 2 else 0), g
    if k == 8:
        return (t if i == 0 else t + 4), g
    return 4 * t + (i % 4) + (16 if i >= 4 else 0), g


def isa_c(i, lane):
    g, t = lane // 4, lane % 4
    return (g if i < 2 else g + 8), 2 * t + (i % 2)


MMA = [("m16n8k16", "f32.f16.f16.f32", 16, "f16"), ("m16n8k16", "f32.bf16.bf16.f32", 16, "bf16"),
       ("m16n8k8", "f32.tf32.tf32.f32", 8, "tf32"), ("m16n8k32", "s32.s8.s8.s32", 32, "s8"),
       ("m16n8k32", "s32.u8.s8.s32", 32, "u8s8"), ("m16n8k32", "f32.e4m3.e4m3.f32", 32, "e4m3"),
       ("m16n8k32", "f32.e5m2.e4m3.f32", 32, "e5m2e4m3"), ("m16n8k16", "f16.f16.f16.f16", 16, "f16acc")]


def _elem_bits(kind, v, operand):
    """Bits of value v as an operand element of the mma kind."""
    name = {"f16": "f16", "f16acc": "f16", "bf16": "bf16", "tf32": "tf32", "s8": "s8", "u8s8": "u8" if operand == "a"
            else "s8", "e4m3": "e4m3", "e5m2e4m3": "e5m2" if operand == "a" else "e4m3"}[kind]
    if name == "f16":
        return int(np.array(v, np.float16).view(np.uint16)), 16
    if name == "bf16":
        return int(np.array(v, np.float32).view(np.uint32)) >> 16, 16
    if name == "tf32":
        return int(np.array(v, np.float32).view(np.uint32)), 32
    if name in ("s8", "u8"):
        return int(v) & 0xFF, 8
    t = ml_dtypes.float8_e4m3fn if name == "e4m3" else ml_dtypes.float8_e5m2
    return int(np.array(v, np.float32).astype(t).view(np.uint8)), 8


@pytest.mark.parametrize("shape,types,k,kind", MMA, ids=[m[3] for m in MMA])
def test_mma_fragments(rng, shape, types, k, kind):
    if kind in ("e4m3", "e5m2e4m3") and ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    # small integers: every product and sum exact in every format
    A = rng.integers(-3, 4, (16, k)).astype(np.float64)
    B = rng.integers(-3, 4, (k, 8)).astype(np.float64)
    C = rng.integers(-3, 4, (16, 8)).astype(np.float64)
    if kind == "u8s8":
        A = np.abs(A) + 100  # u8 above 127
    na, nb = 16 * k // 32, 8 * k // 32
    words_a = np.zeros((32, 4), np.uint32)
    words_b = np.zeros((32, 2), np.uint32)
    for lane in range(32):
        for i in range(na):
            r, c = isa_a(k, i, lane)
            bits, w = _elem_bits(kind, A[r, c], "a")
            per = 32 // w
            words_a[lane, i // per] |= bits << (w * (i % per))
        for i in range(nb):
            r, c = isa_b(k, i, lane)
            bits, w = _elem_bits(kind, B[r, c], "b")
            per = 32 // w
            words_b[lane, i // per] |= bits << (w * (i % per))
    f16acc = kind == "f16acc"
    ints = kind in ("s8", "u8s8")
    cw = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        for i in range(4):
            r, c = isa_c(i, lane)
            if f16acc:
                cw[lane, i // 2] |= int(np.array(C[r, c], np.float16).view(np.uint16)) << (16 * (i % 2))
            elif ints:
                cw[lane, i] = np.uint32(np.int32(C[r, c]).view(np.uint32))
            else:
                cw[lane, i] = np.array(C[r, c], np.float32).view(np.uint32)
    nra, nrb = na * {"f16": 16, "f16acc": 16, "bf16": 16, "tf32": 32}.get(kind, 8) // 32, \
        nb * {"f16": 16, "f16acc": 16, "bf16": 16, "tf32": 32}.get(kind, 8) // 32
    ncw = 2 if f16acc else 4
    regs_a = ", ".join(f"%r{10 + j}" for j in range(nra))
    regs_b = ", ".join(f"%r{20 + j}" for j in range(nrb))
    regs_c = ", ".join(f"%r{30 + j}" for j in range(ncw))
    regs_d = ", ".join(f"%r{40 + j}" for j in range(ncw))
    inp = np.concatenate([words_a, np.pad(words_b, ((0, 0), (0, 2))), cw], axis=1)  # (32, 12) words
    body = f"""
  mul.lo.u64 %rd10, %off, 48;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.v4.b32 {{%r10, %r11, %r12, %r13}}, [%rd11];
  ld.global.v4.b32 {{%r20, %r21, %r22, %r23}}, [%rd11+16];
  ld.global.v4.b32 {{%r30, %r31, %r32, %r33}}, [%rd11+32];
  mma.sync.aligned.{shape}.row.col.{types} {{{regs_d}}}, {{{regs_a}}}, {{{regs_b}}}, {{{regs_c}}};
  mul.lo.u64 %rd12, %off, 16;
  add.u64 %rd13, %rd1, %rd12;
{"  mov.b32 %r42, 0;  mov.b32 %r43, 0;" if f16acc else ""}
  st.global.v4.b32 [%rd13], {{%r40, %r41, %r42, %r43}};
"""
    out = np.zeros((32, 4), np.uint32)
    _, out = run(body, [inp, out])
    D = A @ B + C
    for lane in range(32):
        for i in range(4):
            r, c = isa_c(i, lane)
            if f16acc:
                got = float(np.array((out[lane, i // 2] >> (16 * (i % 2))) & 0xFFFF, np.uint16).view(np.float16))
            elif ints:
                got = int(out[lane, i].view(np.int32))
            else:
                got = float(out[lane, i].view(np.float32))
            assert got == D[r, c], (lane, i, got, D[r, c])


# --- control flow -----------------------------------------------------------------------------------------------
def test_divergent_if_and_loop():
    """Odd threads take one branch, even ones the other; then a loop runs tid times."""
    body = """
  and.b32 %r1, %tid, 1;
  setp.eq.b32 %p1, %r1, 0;
  @%p1 bra $EVEN;
  mov.b32 %r2, 100;
  bra $JOIN;
$EVEN:
  mov.b32 %r2, 200;
$JOIN:
  mov.b32 %r3, 0;
  mov.b32 %r4, 0;
$LOOP:
  setp.ge.u32 %p2, %r4, %tid;
  @%p2 bra $DONE;
  add.u32 %r3, %r3, %r4;
  add.u32 %r4, %r4, 1;
  bra $LOOP;
$DONE:
  add.u32 %r5, %r2, %r3;
  mul.lo.u64 %rd10, %off, 4;
  add.u64 %rd11, %rd0, %rd10;
  st.global.b32 [%rd11], %r5;
"""
    out = np.zeros(64, np.uint32)
    (out,) = run(body, [out], threads=64)
    t = np.arange(64)
    assert np.array_equal(out, np.where(t % 2 == 0, 200, 100) + t * (t - 1) // 2)


def test_bra_uni_divergence_is_an_error():
    body = """
  setp.lt.u32 %p1, %tid, 5;
  @%p1 bra.uni $L1;
$L1:
"""
    with pytest.raises(ptxsim.WarpSyncError, match="bra.uni"):
        run(body, [np.zeros(4, np.uint8)])


def test_barrier_in_divergent_code_is_an_error():
    body = """
  setp.lt.u32 %p1, %tid, 40;
  @%p1 bra $L1;
  bar.sync 0;
$L1:
"""
    with pytest.raises(ptxsim.BarrierError):
        run(body, [np.zeros(4, np.uint8)], threads=64)


def test_shfl_in_divergent_code_is_an_error():
    body = """
  setp.lt.u32 %p1, %tid, 7;
  @%p1 bra $L1;
  shfl.sync.bfly.b32 %r2, %tid, 1, 31, -1;
$L1:
"""
    with pytest.raises(ptxsim.WarpSyncError):
        run(body, [np.zeros(4, np.uint8)])


# --- memory checks -------------------------------------------------------------------------------------------------
def test_out_of_bounds_names_line_thread_and_address():
    body = """
  mul.lo.u64 %rd10, %off, 4;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.b32 %r1, [%rd11];
"""
    with pytest.raises(ptxsim.MemoryFault) as e:
        run(body, [np.zeros(30, np.float32)])
    msg = str(e.value)
    assert "out-of-bounds" in msg and "thread (30, 0, 0) of block (0, 0, 0)" in msg
    assert "ld.global.b32 %r1, [%rd11]" in msg and "past the end of allocation 'a0'" in msg


def test_misaligned_vector_access():
    body = """
  mul.lo.u64 %rd10, %off, 8;
  add.u64 %rd11, %rd0, %rd10;
  ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd11];
"""
    with pytest.raises(ptxsim.MemoryFault, match="misaligned"):
        run(body, [np.zeros(1024, np.float32)])


def test_shared_race_and_barrier():
    write = """
  mov.u32 %r20, nr_smem;
  mul.lo.u32 %r21, %tid, 4;
  add.u32 %r22, %r20, %r21;
  st.shared.b32 [%r22], %tid;
"""
    read = """
  xor.b32 %r23, %tid, 33;
  mul.lo.u32 %r24, %r23, 4;
  add.u32 %r25, %r20, %r24;
  ld.shared.b32 %r2, [%r25];
  mul.lo.u64 %rd10, %off, 4;
  add.u64 %rd11, %rd0, %rd10;
  st.global.b32 [%rd11], %r2;
"""
    with pytest.raises(ptxsim.RaceError, match="no bar.sync"):
        run(write + read, [np.zeros(64, np.uint32)], threads=64, smem=256)
    (out,) = run(write + "  bar.sync 0;\n" + read, [np.zeros(64, np.uint32)], threads=64, smem=256)
    assert np.array_equal(out, np.arange(64) ^ 33)
    with pytest.raises(ptxsim.MemoryFault, match="shared"):
        run(write, [np.zeros(64, np.uint32)], threads=64, smem=128)


def test_cp_async_groups_and_zero_fill():
    src = np.arange(128, dtype=np.uint32)
    issue = """
  mov.u32 %r20, nr_smem;
  mul.lo.u32 %r21, %tid, 16;
  add.u32 %r22, %r20, %r21;
  mul.lo.u64 %rd10, %off, 16;
  add.u64 %rd11, %rd0, %rd10;
  setp.lt.u32 %p1, %tid, 8;
  selp.b32 %r26, 16, 0, %p1;
  cp.async.cg.shared.global [%r22], [%rd11], 16, %r26;
  cp.async.commit_group;
"""
    read = """
  ld.shared.v4.b32 {%r1, %r2, %r3, %r4}, [%r22];
  add.u64 %rd12, %rd1, %rd10;
  st.global.v4.b32 [%rd12], {%r1, %r2, %r3, %r4};
"""
    with pytest.raises(ptxsim.RaceError, match="cp.async"):
        run(issue + read, [src, np.zeros(128, np.uint32)], smem=512)
    _, out = run(issue + "  cp.async.wait_group 0;\n  bar.sync 0;\n" + read, [src, np.zeros(128, np.uint32)],
                 smem=512)
    assert np.array_equal(out[:32], src[:32]) and not out[32:].any()


def test_atomics_in_thread_order():
    body = """
  and.b32 %r1, %tid, 3;
  cvt.u64.u32 %rd10, %r1;
  mul.lo.u64 %rd11, %rd10, 4;
  add.u64 %rd12, %rd0, %rd11;
  atom.global.acq_rel.gpu.add.u32 %r2, [%rd12], 1;
  mul.lo.u64 %rd13, %off, 4;
  add.u64 %rd14, %rd1, %rd13;
  st.global.b32 [%rd14], %r2;
"""
    bins, old = run(body, [np.zeros(4, np.uint32), np.zeros(64, np.uint32)], threads=64)
    assert list(bins) == [16] * 4
    assert np.array_equal(old, np.arange(64) // 4)


def test_cas_spin_lock_across_blocks():
    """Block 0 holds a lock until block 1... every block takes the lock in turn: CTAs progress
    independently, as on the GPU."""
    body = """
  setp.ne.u32 %p1, %tid, 0;
  @%p1 bra $END;
$SPIN:
  atom.global.acq_rel.gpu.cas.b32 %r1, [%rd0], 0, 1;
  setp.ne.b32 %p2, %r1, 0;
  @%p2 bra $SPIN;
  ld.global.b32 %r2, [%rd1];
  add.u32 %r2, %r2, 1;
  st.global.b32 [%rd1], %r2;
  atom.global.acq_rel.gpu.exch.b32 %r3, [%rd0], 0;
$END:
"""
    lock, count = run(body, [np.zeros(1, np.uint32), np.zeros(1, np.uint32)], grid=5)
    assert count[0] == 5 and lock[0] == 0


def test_printf_and_assert():
    fmt = b"t %d x %.3f h %llx\n\0"
    extra = f".global .align 1 .b8 fmt[{len(fmt)}] = {{{', '.join(str(c) for c in fmt)}}};\n" + \
        ".extern .func (.param .b32 rv) vprintf(.param .b64 f, .param .b64 a);"
    body = """
  .local .align 8 .b8 buf[24];
  setp.ge.u32 %p1, %tid, 2;
  @%p1 bra $END;
  st.local.b32 [buf+0], %tid;
  cvt.rn.f64.u32 %rd5, %tid;
  st.local.b64 [buf+8], %rd5;
  st.local.b64 [buf+16], 255;
  mov.u64 %rd6, buf;
  cvta.local.u64 %rd6, %rd6;
  mov.u64 %rd7, fmt;
  cvta.global.u64 %rd7, %rd7;
  {
  .param .b64 a0;
  .param .b64 a1;
  .param .b32 rv;
  st.param.b64 [a0], %rd7;
  st.param.b64 [a1], %rd6;
  call (rv), vprintf, (a0, a1);
  }
$END:
"""
    mem = ptxsim.GlobalMemory()
    ptx = kernel(body, 0, 32, extra=extra)
    import io
    sink = io.StringIO()
    r = ptxsim.launch(ptx, "k", (1,), params=[], memory=mem, printf=sink)
    assert r.printed == ["t 0 x 0.000 h ff\nt 1 x 1.000 h ff\n"] and sink.getvalue() == r.printed[0]


FUNC = """
.func (.reg .b32 nr_rv0, .reg .b32 nr_rv1) twice_and_max(.reg .b32 nr_a0, .reg .b32 nr_a1)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.b32 %r1, nr_a0;
  mov.b32 %r2, nr_a1;
  add.s32 %r3, %r1, %r1;
  mov.b32 nr_rv0, %r3;
  mov.b32 nr_rv1, %r1;
  setp.gt.s32 %p1, %r1, %r2;
  @%p1 bra $L1;
  mov.b32 nr_rv1, %r2;
  ret;
$L1:
  ret;
}
"""


def test_functions_with_register_parameters_and_two_results():
    """Nereid's noinline functions: .reg parameters and results, early returns, labels, the
    callee's registers apart from the caller's (both have %r1), two calls of one function."""
    rng = np.random.default_rng()
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    y = rng.integers(-1000, 1000, 64).astype(np.int32)
    body = """
  shl.b64 %rd10, %off, 2;
  add.s64 %rd11, %rd0, %rd10;
  ld.global.s32 %r1, [%rd11];
  add.s64 %rd12, %rd1, %rd10;
  ld.global.s32 %r2, [%rd12];
  call.uni (%r3, %r4), twice_and_max, (%r1, %r2);
  call.uni (%r5, %r6), twice_and_max, (%r3, %r2);
  st.global.s32 [%rd11], %r4;
  st.global.s32 [%rd12], %r5;
"""
    a, b = run(body, [x.copy(), y.copy()], threads=64, extra=FUNC)
    assert np.array_equal(a, np.maximum(x, y))
    assert np.array_equal(b, 4 * x)


def _round_dir_f32(q, mode):
    from fractions import Fraction
    c = np.float32(float(q))
    cands = [np.nextafter(c, np.float32(-np.inf)), c, np.nextafter(c, np.float32(np.inf))]
    down = max(x for x in cands if Fraction(float(x)) <= q)
    up = min(x for x in cands if Fraction(float(x)) >= q)
    if mode == "rm":
        return down
    if mode == "rp":
        return up
    return down if q > 0 else up


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "fma", "sqrt", "rcp"])
@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_directed_rounding_f32(op, mode):
    """add/sub/mul/div/fma/sqrt/rcp.{rz,rm,rp}.f32 against the exact result (fractions)."""
    from fractions import Fraction
    rng = np.random.default_rng()
    n = 64
    a = (rng.standard_normal(n) * 10).astype(np.float32)
    b = (rng.standard_normal(n) * 3).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    if op == "sqrt":
        a = np.abs(a)
    operands = {"add": "%f1, %f2", "sub": "%f1, %f2", "mul": "%f1, %f2", "div": "%f1, %f2", "fma": "%f1, %f2, %f3",
                "sqrt": "%f1", "rcp": "%f1"}[op]
    body = f"""
  .reg .f32 %f<8>;
  shl.b64 %rd10, %off, 2;
  add.s64 %rd11, %rd0, %rd10;
  add.s64 %rd12, %rd1, %rd10;
  add.s64 %rd13, %rd2, %rd10;
  ld.global.f32 %f1, [%rd11];
  ld.global.f32 %f2, [%rd12];
  ld.global.f32 %f3, [%rd13];
  {op}.{mode}.f32 %f4, {operands};
  st.global.f32 [%rd11], %f4;
"""
    got = run(body, [a.copy(), b.copy(), c.copy()], threads=n)[0]
    for i in range(n):
        A, B, C = (Fraction(float(v[i])) for v in (a, b, c))
        if op == "sqrt":
            s = np.float32(np.sqrt(np.float64(a[i])))  # the neighbours of the root, chosen by squares
            cands = [np.nextafter(s, np.float32(-np.inf)), s, np.nextafter(s, np.float32(np.inf))]
            lo = max(x for x in cands if Fraction(float(x)) ** 2 <= A)
            hi = min(x for x in cands if Fraction(float(x)) ** 2 >= A)
            want = hi if mode == "rp" else lo
        else:
            q = {"add": A + B, "sub": A - B, "mul": A * B, "div": A / B, "fma": A * B + C, "rcp": 1 / A}[op]
            want = _round_dir_f32(q, mode)
        assert got[i] == want, f"{op}.{mode}({a[i]!r}, {b[i]!r}, {c[i]!r}) = {got[i]!r}, want {want!r}"
