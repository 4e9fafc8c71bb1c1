"""The PTX simulator (tools/ptxsim) on Hopper's asynchronous instructions, in
hand-written sm_90a PTX with results computed here in numpy: wgmma.mma_async
from shared-memory matrix descriptors (every swizzle mode, K- and MN-major,
start offsets inside a swizzle row) and from registers, for every operand
type and accumulator, with the ISA's fragment tables written out here;
mbarrier phases and transaction counts; TMA loads (out-of-bounds fill,
swizzled placement, element strides, ranks 1 to 5, tensor maps in global
memory or kernel parameters, as Nereid's launch passes them and the
simulator mode of the suite encodes them) and stores; a TMA -> wgmma
pipeline; warp-specialized kernels (a producer warp and consumer warps
spinning on each other's mbarriers, named barriers with a thread count);
and the checks (warpgroup convergence, registers in flight, missing
fences, races with the async proxy, hangs and deadlocks)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "tools"))
import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402
import ptxsim  # noqa: E402
from ptxsim import hopper  # noqa: E402
from test_ptxsim import isa_a  # noqa: E402  (mma.sync's A fragment: wgmma's, per warp)

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

SMEM = ptxsim.SMEM_BASE


# --- kernels ------------------------------------------------------------------------------------------------
def kernel(body, params=None, nparams=2, threads=128, decls=""):
    """An sm_90a entry k over .u64 parameters p0.. (loaded into %rd0..) or the given declarations."""
    if params is None:
        params = [f".param .u64 p{i}" for i in range(nparams)]
    loads = "\n".join(f"  ld.param.u64 %rd{i}, [p{i}];" for i, p in enumerate(params) if p.startswith(".param .u64"))
    plist = ",\n".join("  " + p for p in params)
    return f"""
.version 8.4
.target sm_90a
.address_size 64
.extern .shared .align 1024 .b8 nr_smem[];
.visible .entry k(
{plist}
)
.reqntid {threads}, 1, 1
{{
  .reg .pred %p<32>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<64>;
  .reg .b32 %d<130>;
  .reg .b32 %a<4>;
  .reg .b32 %tx;
{decls}
  mov.u32 %tx, %tid.x;
{loads}
{body}
  ret;
}}
"""


_RAN = {}  # PTX that ran without a fault: test_hand_written_ptx_assembles assembles it


def launch(ptx, *args, **kw):
    """ptxsim.launch of entry k, remembering the PTX when it runs cleanly."""
    r = ptxsim.launch(ptx, "k", *args, **kw)
    _RAN[hash(ptx)] = ptx
    return r


def run(ptx, arrays, scalars=(), grid=1, smem=0, **kw):
    """Launches k over allocations of arrays (then scalars or raw bytes); returns the arrays as the kernel left them."""
    mem = ptxsim.GlobalMemory()
    allocs = [mem.from_array(a, f"a{i}") for i, a in enumerate(arrays)]
    launch(ptx, (grid,), params=list(allocs) + list(scalars), memory=mem, shared_bytes=smem, **kw)
    return [al.ndarray(a.dtype, a.shape, a.strides) for al, a in zip(allocs, arrays)]


def _copy_lines(nbytes, threads, ptr, at, to_smem):
    """Lines copying nbytes (a multiple of 16) between global ptr and shared offset `at`, 16 bytes a thread."""
    lines = ["  mov.u32 %r1, nr_smem;", "  shl.b32 %r2, %tx, 4;", "  add.u32 %r3, %r1, %r2;",
             "  cvt.u64.u32 %rd40, %r2;", f"  add.u64 %rd41, {ptr}, %rd40;"]
    n = nbytes // 16
    for c in range(0, n, threads):
        g = ""
        if n - c < threads:
            lines.append(f"  setp.lt.u32 %p1, %tx, {n - c};")
            g = "@%p1 "
        glob, shared = f"[%rd41+{16 * c}]", f"[%r3+{16 * c + at}]"
        src, dst = (("global", glob), ("shared", shared)) if to_smem else (("shared", shared), ("global", glob))
        lines += [f"  {g}ld.{src[0]}.v4.b32 {{%r4, %r5, %r6, %r7}}, {src[1]};",
                  f"  {g}st.{dst[0]}.v4.b32 {dst[1]}, {{%r4, %r5, %r6, %r7}};"]
    return "\n".join(lines)


def copy_to_smem(nbytes, threads, src="%rd0", at=0):
    """Lines copying nbytes from global src to shared offset `at`."""
    return _copy_lines(nbytes, threads, src, at, True)


def copy_from_smem(nbytes, threads, dst="%rd1", at=0):
    """Lines copying nbytes of shared memory at offset `at` to global dst."""
    return _copy_lines(nbytes, threads, dst, at, False)


# --- element encodings ---------------------------------------------------------------------------------------
ES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
KOF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def encode(ty, v):
    """Bits (uint of the type's size) of values v."""
    v = np.asarray(v)
    if ty == "f16":
        return v.astype(np.float16).view(np.uint16)
    if ty == "bf16":
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # exact for the values used
    if ty == "tf32":
        return v.astype(np.float32).view(np.uint32)
    if ty == "e4m3":
        return v.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    if ty == "e5m2":
        return v.astype(np.float32).astype(ml_dtypes.float8_e5m2).view(np.uint8)
    return v.astype(np.int64).astype(np.int8 if ty == "s8" else np.uint8).view(np.uint8)


def values(rng, ty, shape):
    if ty == "u8":
        return rng.integers(0, 256, shape).astype(np.float64)
    if ty == "s8":
        return rng.integers(-128, 128, shape).astype(np.float64)
    if ty == "tf32":  # low mantissa bits set: wgmma ignores them
        return rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    return rng.integers(-4, 5, shape).astype(np.float64)


def as_input(ty, v):
    """The value wgmma computes with (tf32: the low 13 bits of the f32 dropped)."""
    if ty == "tf32":
        return (v.astype(np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32).astype(np.float64)
    return v


# --- the ISA's shared-memory matrix layouts, written out here -----------------------------------------------
def swizzled(addr, swz):
    """The ISA's swizzle modes: in each 128-byte line, the 16-byte chunk index XORed with the
    line index modulo swz / 16 (8 for 128-byte, 4 for 64-byte, 2 for 32-byte swizzles)."""
    if not swz:
        return addr
    line, chunk = addr >> 7, (addr >> 4) & 7
    return (addr & ~0x70) | ((chunk ^ (line % (swz // 16))) << 4)


def layout_offsets(rows, k, es, major, swz, lbo, sbo):
    """Byte offset of element (r, k) (r along M or N) in the ISA's canonical layouts: K-major:
    8-row atoms of swz-byte rows (16-byte core matrix rows unswizzled, their K neighbours lbo
    apart), atoms sbo apart; MN-major: swz bytes along r per k-row (16 unswizzled), 8 k-rows an
    atom, atoms along r lbo apart and along k sbo apart (the other way round unswizzled)."""
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    if major == "K":
        kb = kk * es
        if swz:
            return (r // 8) * sbo + (r % 8) * swz + kb
        return (r // 8) * sbo + (kb // 16) * lbo + (r % 8) * 16 + kb % 16
    rb = r * es
    if swz:
        return (rb // swz) * lbo + (kk // 8) * sbo + (kk % 8) * swz + rb % swz
    return (rb // 16) * sbo + (kk // 8) * lbo + (kk % 8) * 16 + rb % 16


def layout_strides(rows, es, major, swz):
    """(lbo, sbo, bytes) of a matrix of `rows` rows along M/N and one instruction's 32 bytes of K."""
    k = 32 // es
    if major == "K":
        if swz:
            return 16, 8 * swz, rows * swz
        return 128, 256, rows * 32
    atoms = -(-rows * es // (swz or 16))
    if swz:
        return (k // 8) * 8 * swz, 8 * swz, atoms * (k // 8) * 8 * swz
    return atoms * 128, 128, atoms * 128 * (k // 8)


def place(img, start, bits, es, major, swz, lbo, sbo):
    """Writes matrix bits (rows, k) into img (shared memory from SMEM) for a descriptor at start."""
    rows, k = bits.shape
    addr = SMEM + start + layout_offsets(rows, k, es, major, swz, lbo, sbo)
    phys = swizzled(addr, swz) - SMEM
    raw = np.ascontiguousarray(bits.astype(UINT[es])).view(np.uint8).reshape(rows, k, es)
    for b in range(es):
        img[phys + b] = raw[..., b]


def descriptor(start, lbo, sbo, swz):
    mode = {0: 0, 128: 1, 64: 2, 32: 3}[swz]
    return (((SMEM + start) & 0x3FFFF) >> 4) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | mode << 62


def isa_d(i, lane, w):
    """wgmma's accumulator fragment: slot i of lane of warp w of the warpgroup."""
    g, t = lane // 4, lane % 4
    return 16 * w + g + (8 if (i // 2) % 2 else 0), 8 * (i // 4) + 2 * t + i % 2


def test_descriptor_fields():
    d = descriptor(0x1230, 0x40, 0x400, 64) | 5 << 49
    start, lbo, sbo, base, swz = hopper.decode_descriptor(np.array([d], np.uint64))
    assert (int(start[0]), int(lbo[0]), int(sbo[0]), int(base[0]), int(swz[0])) == (SMEM + 0x1230, 0x40, 0x400, 5, 64)
    for mode, s in ((0, 0), (1, 128), (2, 64), (3, 32)):
        assert int(hopper.decode_descriptor(np.array([mode << 62], np.uint64))[4][0]) == s
    # the start address keeps 18 bits (14 encoded); offsets 14 bits of 16-byte units
    d = descriptor(0x3FFF0 - SMEM, 0xFFFF0, 0xFFFF0, 0)
    start, lbo, sbo, _, _ = hopper.decode_descriptor(np.array([d], np.uint64))
    assert (int(start[0]), int(lbo[0]), int(sbo[0])) == (0x3FFF0, 0x3FFF0, 0x3FFF0)


# --- wgmma.mma_async ------------------------------------------------------------------------------------------
WGMMA = [
    # a, b, d, n, A from, swizzle, A major, B major
    ("f16", "f16", "f32", 64, "desc", 128, "K", "K"),
    ("f16", "f16", "f32", 64, "desc", 64, "K", "K"),
    ("f16", "f16", "f32", 64, "desc", 32, "K", "K"),
    ("f16", "f16", "f32", 64, "desc", 0, "K", "K"),
    ("f16", "f16", "f32", 64, "desc", 128, "MN", "MN"),
    ("f16", "f16", "f32", 64, "desc", 64, "MN", "MN"),
    ("f16", "f16", "f32", 32, "desc", 32, "MN", "K"),
    ("f16", "f16", "f32", 16, "desc", 0, "MN", "MN"),
    ("bf16", "bf16", "f32", 256, "desc", 128, "K", "MN"),
    ("f16", "f16", "f16", 24, "desc", 64, "K", "K"),
    ("f16", "f16", "f32", 128, "regs", 128, "K", "MN"),
    ("tf32", "tf32", "f32", 8, "desc", 128, "K", "K"),
    ("tf32", "tf32", "f32", 40, "regs", 32, "K", "K"),
    ("e4m3", "e4m3", "f32", 64, "desc", 128, "K", "K"),
    ("e5m2", "e4m3", "f16", 16, "desc", 64, "K", "K"),
    ("s8", "s8", "s32", 32, "desc", 128, "K", "K"),
    ("u8", "s8", "s32", 48, "regs", 64, "K", "K"),
]


def _wgmma_case(rng, aty, bty, dty, n, asrc, swz, amaj, bmaj, scale_d=1, scale_a=1, scale_b=1, koff=0, wgs=1):
    if (aty in ("e4m3", "e5m2") or bty in ("e4m3", "e5m2")) and ml_dtypes is None:
        pytest.skip("needs ml_dtypes")
    es, k = ES[aty], KOF[aty]
    threads = 128 * wgs
    A = values(rng, aty, (64, k))
    B = values(rng, bty, (k, n))
    ints = dty == "s32"
    C = rng.integers(-1000, 1000, (wgs, 64, n)).astype(np.float64) if ints else \
        rng.integers(-8, 9, (wgs, 64, n)).astype(np.float64)
    # shared memory: A at koff, B at the next 1024-byte boundary (+ koff)
    albo, asbo, abytes = layout_strides(64, es, amaj, swz)
    blbo, bsbo, bbytes = layout_strides(n, es, bmaj, swz)
    a0 = koff
    b0 = -(-(abytes + koff) // 1024) * 1024 + koff
    total = -(-(b0 + bbytes) // 1024) * 1024
    img = rng.integers(0, 256, total).astype(np.uint8)  # garbage wherever the matrices are not
    if asrc == "desc":
        place(img, a0, encode(aty, A), es, amaj, swz, albo, asbo)
    place(img, b0, encode(bty, B).T, es, bmaj, swz, blbo, bsbo)
    nd = n // 4 if dty == "f16" else n // 2
    cw = np.zeros((threads, nd), np.uint32)
    afr = np.zeros((threads, 4), np.uint32)
    per = 4 // es
    for wg in range(wgs):
        for w in range(4):
            for lane in range(32):
                t = wg * 128 + w * 32 + lane
                for i in range(n // 2):
                    r, c = isa_d(i, lane, w)
                    v = C[wg, r, c]
                    if dty == "f16":
                        cw[t, i // 2] |= int(np.float16(v).view(np.uint16)) << (16 * (i % 2))
                    elif ints:
                        cw[t, i] = np.uint32(np.int64(v) & 0xFFFFFFFF)
                    else:
                        cw[t, i] = np.float32(v).view(np.uint32)
                na = {2: 8, 4: 4, 1: 16}[es]
                for i in range(na):
                    r, c = isa_a(k, i, lane)
                    bits = int(encode(aty, A[16 * w + r, c]))
                    afr[t, i // per] |= bits << (8 * es * (i % per))
    imm = ""
    if dty != "s32":
        imm = f", {scale_a}, {scale_b}"
        if aty in ("f16", "bf16"):
            imm += (f", {int(amaj == 'MN')}" if asrc == "desc" else "") + f", {int(bmaj == 'MN')}"
    dregs = ", ".join(f"%d{i}" for i in range(nd))
    aop = "%rd3" if asrc == "desc" else "{%a0, %a1, %a2, %a3}"
    body = f"""
{copy_to_smem(total, threads)}
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mul.wide.u32 %rd10, %tx, {4 * nd};
  add.u64 %rd11, %rd1, %rd10;
{chr(10).join(f"  ld.global.b32 %d{i}, [%rd11+{4 * i}];" for i in range(nd))}
  mul.wide.u32 %rd12, %tx, 16;
  add.u64 %rd13, %rd2, %rd12;
  ld.global.v4.b32 {{%a0, %a1, %a2, %a3}}, [%rd13];
  setp.{'ne' if scale_d else 'eq'}.u32 %p2, %tx, 999999;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n{n}k{k}.{dty}.{aty}.{bty} {{{dregs}}}, {aop}, %rd4, %p2{imm};
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{chr(10).join(f"  st.global.b32 [%rd11+{4 * i}], %d{i};" for i in range(nd))}
"""
    ptx = kernel(body, nparams=5, threads=threads)
    descs = [descriptor(a0, albo, asbo, swz), descriptor(b0, blbo, bsbo, swz)]
    _, out, _ = run(ptx, [img, cw, afr], descs, smem=total)
    D = (scale_a * as_input(aty, A)) @ (scale_b * as_input(bty, B))
    for wg in range(wgs):
        ref = D + C[wg] if scale_d else D
        got = np.zeros((64, n))
        for w in range(4):
            for lane in range(32):
                t = wg * 128 + w * 32 + lane
                for i in range(n // 2):
                    r, c = isa_d(i, lane, w)
                    word = int(out[t, i // 2] if dty == "f16" else out[t, i])
                    if dty == "f16":
                        got[r, c] = float(np.uint16((word >> (16 * (i % 2))) & 0xFFFF).view(np.float16))
                    elif ints:
                        got[r, c] = float(np.uint32(word).view(np.int32))
                    else:
                        got[r, c] = float(np.uint32(word).view(np.float32))
        if ints:
            ref = ((ref.astype(np.int64) + 2 ** 31) % 2 ** 32) - 2 ** 31
        if dty == "f16":
            ref = ref.astype(np.float16).astype(np.float64)
        if aty == "tf32":
            np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-6, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("aty,bty,dty,n,asrc,swz,amaj,bmaj", WGMMA,
                         ids=[f"{c[0]}x{c[1]}-{c[2]}-n{c[3]}-{c[4]}-sw{c[5]}-{c[6]}{c[7]}" for c in WGMMA])
def test_wgmma(rng, aty, bty, dty, n, asrc, swz, amaj, bmaj):
    _wgmma_case(rng, aty, bty, dty, n, asrc, swz, amaj, bmaj)


def test_wgmma_scales_and_start_inside_a_swizzle_row(rng):
    """scale-d false (D = A B), negated A and B, descriptors starting 32 and 64 bytes into a
    128-byte swizzled row (the next k step of a wider buffer), two warpgroups."""
    _wgmma_case(rng, "f16", "f16", "f32", 64, "desc", 128, "K", "K", scale_d=0, scale_a=-1, koff=32, wgs=2)
    _wgmma_case(rng, "bf16", "bf16", "f32", 32, "desc", 128, "K", "K", scale_b=-1, koff=64)


def test_wgmma_int_wraps_and_saturates(rng):
    """s32 accumulators wrap without .satfinite and clamp with it."""
    k = 32
    A = np.full((64, k), 127.0)
    B = np.full((k, 8), 127.0)
    img = np.zeros(9216, np.uint8)
    place(img, 0, encode("s8", A), 1, "K", 128, 16, 1024)
    place(img, 8192, encode("s8", B).T, 1, "K", 128, 16, 1024)
    for sat in (False, True):
        body = f"""
{copy_to_smem(9216, 128)}
  fence.proxy.async.shared::cta;
  bar.sync 0;
  mov.b32 %d0, 0x7fffff00;
  mov.b32 %d1, 0x7fffff00;
  mov.b32 %d2, 0x7fffff00;
  mov.b32 %d3, 0x7fffff00;
  setp.ne.u32 %p2, %tx, 999999;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k32{'.satfinite' if sat else ''}.s32.s8.s8 {{%d0, %d1, %d2, %d3}}, %rd2, %rd3, %p2;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd10, %tx, 16;
  add.u64 %rd11, %rd1, %rd10;
  st.global.v4.b32 [%rd11], {{%d0, %d1, %d2, %d3}};
"""
        out = np.zeros((128, 4), np.int32)
        descs = [descriptor(0, 16, 1024, 128), descriptor(8192, 16, 1024, 128)]
        _, out = run(kernel(body, nparams=4), [img, out], descs, smem=9216)
        want = 0x7fffff00 + 32 * 127 * 127
        assert (out == (2 ** 31 - 1 if sat else want - 2 ** 32)).all()


# --- wgmma checks ---------------------------------------------------------------------------------------------
def _simple_wgmma(pre="", between="", after="", threads=128, fence=True, wait=True, proxy=True, barrier=True):
    """f16 m64n8k16 from two zeroed matrices at 0 and 4096 (64-byte swizzles); pieces of PTX spliced in."""
    return kernel(f"""
{copy_to_smem(4608, threads)}
{"  fence.proxy.async.shared::cta;" if proxy else ""}
{"  bar.sync 0;" if barrier else ""}
  mov.b32 %d0, 0;
  mov.b32 %d1, 0;
  mov.b32 %d2, 0;
  mov.b32 %d3, 0;
  setp.ne.u32 %p2, %tx, 999999;
{pre}
{"  wgmma.fence.sync.aligned;" if fence else ""}
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%d0, %d1, %d2, %d3}}, %rd2, %rd3, %p2, 1, 1, 0, 0;
  wgmma.commit_group.sync.aligned;
{between}
{"  wgmma.wait_group.sync.aligned 0;" if wait else ""}
  mul.wide.u32 %rd10, %tx, 16;
  add.u64 %rd11, %rd1, %rd10;
  st.global.v4.b32 [%rd11], {{%d0, %d1, %d2, %d3}};
{after}
""", nparams=4, threads=threads)


def _run_simple(ptx, threads=128, **kw):
    img = np.zeros(4608, np.uint8)
    out = np.zeros((threads, 4), np.uint32)
    return run(ptx, [img, out], [descriptor(0, 16, 512, 64), descriptor(4096, 16, 512, 64)], smem=4608, **kw)


def test_wgmma_clean_kernel_passes():
    _, out = _run_simple(_simple_wgmma())
    assert (out == 0).all()


def test_wgmma_needs_whole_warpgroups():
    with pytest.raises(ptxsim.WarpSyncError, match="whole warpgroups"):
        _run_simple(_simple_wgmma(threads=64), threads=64)
    ptx = _simple_wgmma(pre="  setp.lt.u32 %p3, %tx, 64;\n  @!%p3 bra $Lskip;", after="$Lskip:")
    with pytest.raises(ptxsim.WarpSyncError, match="part of a warpgroup"):
        _run_simple(ptx)


def test_wgmma_accumulator_read_before_wait():
    with pytest.raises(ptxsim.AsyncError, match="still in flight"):
        _run_simple(_simple_wgmma(wait=False))
    # wait_group 1 leaves the newest group in flight
    with pytest.raises(ptxsim.AsyncError, match="still in flight"):
        _run_simple(_simple_wgmma(between="  wgmma.wait_group.sync.aligned 1;", wait=False))


def test_wgmma_needs_its_fence():
    with pytest.raises(ptxsim.AsyncError, match="wgmma.fence"):
        _run_simple(_simple_wgmma(fence=False))
    # a register written between the fence and the wgmma
    ptx = _simple_wgmma(fence=False, pre="  wgmma.fence.sync.aligned;\n  mov.b32 %d2, 0;")
    with pytest.raises(ptxsim.AsyncError, match="%d2"):
        _run_simple(ptx)


def test_wgmma_reads_through_the_async_proxy():
    with pytest.raises(ptxsim.AsyncError, match="fence.proxy.async"):
        _run_simple(_simple_wgmma(proxy=False))
    with pytest.raises(ptxsim.RaceError, match="no bar.sync"):
        _run_simple(_simple_wgmma(barrier=False))
    # shared memory the wgmma reads is written again before the wait
    ptx = _simple_wgmma(between="  mov.u32 %r9, nr_smem;\n  setp.eq.u32 %p4, %tx, 0;\n"
                                "  @%p4 st.shared.b32 [%r9+1024], %tx;")
    with pytest.raises(ptxsim.RaceError, match="still reads"):
        _run_simple(ptx)
    # ... and after it, it may be
    _run_simple(_simple_wgmma(after="  mov.u32 %r9, nr_smem;\n  bar.sync 0;\n  setp.eq.u32 %p4, %tx, 0;\n"
                                    "  @%p4 st.shared.b32 [%r9+1024], %tx;"))


def test_wgmma_descriptor_must_be_uniform():
    ptx = _simple_wgmma(pre="  cvt.u64.u32 %rd20, %tx;\n  and.b64 %rd20, %rd20, 1;\n  add.s64 %rd3, %rd3, %rd20;")
    with pytest.raises(ptxsim.AsyncError, match="differs between the threads of a warpgroup"):
        _run_simple(ptx)


def test_wgmma_operand_checks():
    ptx = _simple_wgmma().replace("m64n8k16.f32.f16.f16", "m64n8k32.f32.f16.f16")
    with pytest.raises(ptxsim.SimError, match="k16"):
        _run_simple(ptx)
    ptx = _simple_wgmma().replace("m64n8k16.f32.f16.f16", "m64n8k16.f32.f16.bf16")
    with pytest.raises(ptxsim.SimError, match="type pair"):
        _run_simple(ptx)
    ptx = _simple_wgmma().replace("{%d0, %d1, %d2, %d3}, %rd2", "{%d0, %d1, %d2}, %rd2")
    with pytest.raises(ptxsim.SimError, match="4 accumulator registers"):
        _run_simple(ptx)


# --- mbarrier ----------------------------------------------------------------------------------------------------
def _mbar_kernel(body, threads=64):
    return kernel(f"""
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
  mul.wide.u32 %rd10, %tx, 32;
  add.u64 %rd11, %rd0, %rd10;
{body}
""", nparams=1, threads=threads)


def _preds(ps):
    """Lines storing predicates ps as bytes out[tid, j]."""
    return "\n".join(f"  selp.u32 %r20, 1, 0, {p};\n  st.global.u8 [%rd11+{j}], %r20;" for j, p in enumerate(ps))


def test_mbarrier_phases_and_transactions():
    body = f"""
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 2;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r1], 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p5, [%r1], 1;
  setp.lt.u32 %p3, %tx, 2;
  @%p3 mbarrier.arrive.shared::cta.b64 %rd20, [%r1];
  mbarrier.test_wait.parity.shared::cta.b64 %p6, [%r1], 0;
  mbarrier.test_wait.parity.shared::cta.b64 %p7, [%r1], 1;
  @%p1 mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], 48;
  @%p3 mbarrier.arrive.release.cta.shared::cta.b64 %rd21, [%r1];
  mbarrier.test_wait.parity.shared::cta.b64 %p8, [%r1], 1;
  @%p1 mbarrier.complete_tx.shared::cta.b64 [%r1], 16;
  mbarrier.test_wait.parity.shared::cta.b64 %p9, [%r1], 1;
  @%p1 mbarrier.complete_tx.shared::cta.b64 [%r1], 32;
  mbarrier.try_wait.parity.shared::cta.b64 %p10, [%r1], 1;
  mov.pred %p11, 0;
  mov.pred %p12, 0;
  @%p3 mbarrier.test_wait.shared::cta.b64 %p11, [%r1], %rd21;
  @%p3 mbarrier.test_wait.shared::cta.b64 %p12, [%r1], %rd20;
  @%p3 mbarrier.arrive.expect_tx.shared::cta.b64 %rd22, [%r1], 8;
  mov.pred %p13, 0;
  @%p3 mbarrier.try_wait.shared::cta.b64 %p13, [%r1], %rd22;
{_preds(["%p4", "%p5", "%p6", "%p7", "%p8", "%p9", "%p10", "%p11", "%p12", "%p13"])}
"""
    out = np.zeros((64, 32), np.uint8)
    out, = run(_mbar_kernel(body), [out], smem=16)
    # fresh: phase 0 in progress (parity 0 waits, parity 1 - the phase before - is complete);
    # two arrivals complete phase 0; phase 1 needs its arrivals and 48 transaction bytes
    want = [0, 1, 1, 0, 0, 0, 1]
    assert (out[:, :7] == want).all(), out[0, :7]
    assert (out[:2, 7:10] == [1, 1, 0]).all() and (out[2:, 7:10] == 0).all()


def test_mbarrier_misuse():
    with pytest.raises(ptxsim.AsyncError, match="no initialized mbarrier"):
        run(_mbar_kernel("  mbarrier.arrive.shared::cta.b64 %rd20, [%r1];"), [np.zeros((64, 32), np.uint8)], smem=16)
    with pytest.raises(ptxsim.RaceError, match="initialized with no bar.sync"):
        run(_mbar_kernel("  @%p1 mbarrier.init.shared::cta.b64 [%r1], 64;\n"
                         "  mbarrier.arrive.shared::cta.b64 %rd20, [%r1];"), [np.zeros((64, 32), np.uint8)], smem=16)
    with pytest.raises(ptxsim.AsyncError, match="more arrivals"):
        run(_mbar_kernel("  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;\n  bar.sync 0;\n"
                         "  @%p1 mbarrier.arrive.shared::cta.b64 %rd20, [%r1], 2;"), [np.zeros((64, 32), np.uint8)],
            smem=16)
    with pytest.raises(ptxsim.AsyncError, match="initialized mbarrier"):
        run(_mbar_kernel("  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;\n  bar.sync 0;\n"
                         "  @%p1 st.shared.b32 [%r1], 0;"), [np.zeros((64, 32), np.uint8)], smem=16)
    with pytest.raises(ptxsim.HangError, match="can never complete"):
        run(_mbar_kernel("""  @%p1 mbarrier.init.shared::cta.b64 [%r1], 2;
  bar.sync 0;
  @%p1 mbarrier.arrive.shared::cta.b64 %rd20, [%r1];
$Lw:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $Lw;"""), [np.zeros((64, 32), np.uint8)], smem=16)
    # init, inval, init again is fine; init twice is not
    run(_mbar_kernel("  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;\n  @%p1 mbarrier.inval.shared::cta.b64 [%r1];\n"
                     "  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;"), [np.zeros((64, 32), np.uint8)], smem=16)
    with pytest.raises(ptxsim.AsyncError, match="mbarrier.init of an initialized"):
        run(_mbar_kernel("  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;\n"
                         "  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;"), [np.zeros((64, 32), np.uint8)], smem=16)


# --- tensor maps and TMA -------------------------------------------------------------------------------------------
def test_encode_tensor_map_layout_and_checks():
    raw = ptxsim.encode_tensor_map(6, 2, 0x10000, [100, 50], [256], [64, 16], [1, 1], swizzle=3, oob_fill=1)
    assert len(raw) == 128 and raw[:4] == b"PXTM"
    assert raw[5] == 2 and raw[6] == 6 and raw[7] == 2 and raw[9] == 3 and raw[11] == 1
    assert int.from_bytes(raw[16:24], "little") == 0x10000
    assert int.from_bytes(raw[24:32], "little") == 100 and int.from_bytes(raw[64:72], "little") == 256
    assert int.from_bytes(raw[96:100], "little") == 64 and raw[116] == 1
    tm = ptxsim.decode_tensor_map(raw)
    assert tm.dims == [100, 50] and tm.strides == [2, 256] and tm.box == [64, 16] and tm.swizzle_bytes == 128
    bad = [
        (dict(dtype=6, rank=2, global_address=0x10008), "16-byte aligned"),
        (dict(global_strides=[200]), "multiple of 16"),
        (dict(box_dim=[64, 300]), "1..256"),
        (dict(box_dim=[68, 16]), "multiple of 16"),
        (dict(box_dim=[72, 16], swizzle=2), "wider than the 64-byte swizzle"),
        (dict(element_strides=[1, 9]), "1..8"),
        (dict(dtype=0, oob_fill=1), "floating-point"),
        (dict(rank=6), "1 to 5"),
        (dict(global_dim=[0, 50]), r"1\.\.2\^32"),
    ]
    base = dict(dtype=6, rank=2, global_address=0x10000, global_dim=[100, 50], global_strides=[256], box_dim=[64, 16],
                element_strides=[1, 1])
    for over, msg in bad:
        with pytest.raises(ValueError, match=msg):
            ptxsim.encode_tensor_map(**{**base, **over})
    with pytest.raises(ValueError, match="not a tensor map"):
        ptxsim.decode_tensor_map(bytes(128))


def expected_box(t, dims, box, estr, coords, es, swz, fill_bits, at):
    """The shared-memory image (bytes from `at`, whole 128-byte lines) a TMA load leaves:
    the box, dimension 0 fastest, out-of-bounds elements filled, 16-byte chunks swizzled."""
    counts = [-(-b // e) for b, e in zip(box, estr)]
    n = int(np.prod(counts))
    nbytes = -(-n * es // 128) * 128
    img = np.full(nbytes, 0xFF, np.uint8)
    for e in range(n):
        idx, rem = [], e
        for c in counts:
            idx.append(rem % c)
            rem //= c
        coord = [coords[i] + idx[i] * estr[i] for i in range(len(dims))]
        if all(0 <= coord[i] < dims[i] for i in range(len(dims))):
            v = t[tuple(reversed(coord))]
            bits = np.asarray(v).view(UINT[es]).item() if es > 1 else int(np.asarray(v).view(np.uint8))
        else:
            bits = fill_bits
        addr = swizzled(SMEM + at + e * es, swz) - SMEM - at
        img[addr:addr + es] = np.array([bits], UINT[es]).view(np.uint8)
    return img, n * es


def _tma_kernel(rank, nbytes, dump, map_param=False, wait=True, extra=""):
    coords = ", ".join(f"%r{10 + i}" for i in range(rank))
    params = [".param .align 64 .b8 tmap[128]" if map_param else ".param .u64 p0", ".param .u64 p1"] + \
        [f".param .u64 p{2 + i}" for i in range(rank)]
    getmap = "  mov.u64 %rd0, tmap;\n  cvta.param.u64 %rd0, %rd0;" if map_param else ""
    body = f"""
{getmap}
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  add.u32 %r8, %r1, 1024;
{chr(10).join(f"  cvt.u32.u64 %r{10 + i}, %rd{2 + i};" for i in range(rank))}
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd30, [%r1], {nbytes};
  @%p1 cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r8], [%rd0, {{{coords}}}], [%r1];
{extra}
{'''$Lw:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $Lw;''' if wait else ""}
{copy_from_smem(dump, 128, at=1024)}
"""
    return kernel(body, params=params)


TMA = [
    # dtype, global dims (fastest first), padded row elements, box, element strides, coords, swizzle, NaN fill
    ("float16", [100, 50], 104, [64, 16], [1, 1], [40, -3], 3, 0),
    ("uint8", [70, 20], 80, [32, 8], [1, 1], [0, 0], 1, 0),
    ("float32", [30, 20], 32, [8, 8], [1, 1], [-4, 17], 2, 1),
    ("bfloat16", [24, 9, 5], 24, [16, 4, 3], [1, 2, 1], [8, -1, 3], 0, 0),
    ("uint16", [8, 3, 2, 3, 2], 8, [8, 2, 2, 2, 2], [1, 1, 1, 1, 1], [0, 2, 0, 1, -1], 0, 0),
    ("float16", [40], 40, [32], [1], [20], 2, 1),
    ("float32", [64, 64], 64, [32, 64], [1, 1], [32, 0], 3, 0),
]
_CODES = {"uint8": 0, "uint16": 1, "float16": 6, "float32": 7, "bfloat16": 9}
_NP = {"uint8": np.uint8, "uint16": np.uint16, "float16": np.float16, "float32": np.float32, "bfloat16": np.uint16}


@pytest.mark.parametrize("dtype,dims,row,box,estr,coords,swz,nan", TMA,
                         ids=[f"{c[0]}-{len(c[1])}d-sw{c[6]}" for c in TMA])
@pytest.mark.parametrize("where", ["global", "param"])
def test_tma_load(rng, dtype, dims, row, box, estr, coords, swz, nan, where):
    if where == "param" and len(dims) != 2:
        pytest.skip("one rank is enough for parameter maps")
    npt = _NP[dtype]
    es = np.dtype(npt).itemsize
    shape = list(reversed(dims[1:])) + [row]
    if npt in (np.float16, np.float32):
        t = rng.standard_normal(shape).astype(npt)
    else:
        t = rng.integers(0, 2 ** (8 * es), shape).astype(npt)
    strides = [row * es]
    for d in dims[1:-1]:
        strides.append(strides[-1] * d)
    fill = {2: 0x7FFF, 4: 0x7FFFFFFF}.get(es, 0) if nan else 0
    want, nbytes = expected_box(t[..., :dims[0]], dims, box, estr, coords, es, {0: 0, 1: 32, 2: 64, 3: 128}[swz],
                                fill, 1024)
    out = np.zeros(len(want), np.uint8)
    mem = ptxsim.GlobalMemory()
    ta = mem.from_array(t, "t")
    raw = ptxsim.encode_tensor_map(_CODES[dtype], len(dims), ta, dims, strides, box, estr, swizzle=swz, oob_fill=nan)
    oa = mem.from_array(out, "out")
    if where == "global":
        ma = mem.alloc(128, "map", 0)
        ma.bytes[:] = np.frombuffer(raw, np.uint8)
        params = [ma, oa] + [c & 0xFFFFFFFF for c in coords]
    else:
        params = [raw, oa] + [c & 0xFFFFFFFF for c in coords]
    ptx = _tma_kernel(len(dims), nbytes, len(want), map_param=where == "param")
    launch(ptx, (1,), params=params, memory=mem, shared_bytes=1024 + len(want))
    got = oa.ndarray(np.uint8, out.shape)
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:10]


def _tma_setup(rng, swz=3):
    t = rng.standard_normal((16, 64)).astype(np.float16)
    mem = ptxsim.GlobalMemory()
    ta = mem.from_array(t, "t")
    ma = mem.alloc(128, "map", 0)
    ma.bytes[:] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, ta, [64, 16], [128], [64, 16], [1, 1], swizzle=swz),
                                np.uint8)
    oa = mem.alloc(2048, "out")
    return mem, [ma, oa, 0, 0]


def test_tma_checks(rng):
    mem, params = _tma_setup(rng)
    # reading the data before waiting for the mbarrier's phase
    with pytest.raises(ptxsim.RaceError, match="before this thread saw"):
        launch(_tma_kernel(2, 2048, 2048, wait=False), (1,), params=params, memory=mem,
                      shared_bytes=3072)
    # the mbarrier expects more bytes than the copy brings: the phase never completes, and the
    # wait can never succeed with every thread waiting
    mem, params = _tma_setup(rng)
    with pytest.raises(ptxsim.HangError, match="can never complete"):
        launch(_tma_kernel(2, 4096, 2048), (1,), params=params, memory=mem, shared_bytes=3072)
    # a map that is not a tensor map
    mem, params = _tma_setup(rng)
    params[0].bytes[:4] = 0
    with pytest.raises(ptxsim.SimError, match="not a tensor map"):
        launch(_tma_kernel(2, 2048, 2048), (1,), params=params, memory=mem, shared_bytes=3072)
    # a map whose dims reach past the allocation
    mem, params = _tma_setup(rng)
    ta = mem.allocs[0]
    params[0].bytes[:] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, ta, [64, 17], [128], [64, 16], [1, 1],
                                                                swizzle=3), np.uint8)
    params[3] = 1
    with pytest.raises(ptxsim.MemoryFault, match="TMA load"):
        launch(_tma_kernel(2, 2048, 2048), (1,), params=params, memory=mem, shared_bytes=3072)


def test_tma_store(rng):
    """Threads write a 16 x 32 f32 box (64-byte swizzle), fence, barrier; thread 0 stores it at
    coordinates (20, 40) of a 36 x 48 tensor: what falls outside is not written."""
    dims, box = [36, 48], [16, 32]
    t = np.full((48, 40), -1.0, np.float32)  # rows of 40 elements (160 bytes)
    src = rng.standard_normal((32, 16)).astype(np.float32)
    img = np.zeros(3072, np.uint8)
    for e in range(512):
        addr = swizzled(SMEM + 1024 + 4 * e, 64) - SMEM
        img[addr:addr + 4] = np.array([src.reshape(-1)[e]], np.float32).view(np.uint8)

    def body(fence=True, reuse=""):
        return f"""
{copy_to_smem(3072, 128)}
{"  fence.proxy.async.shared::cta;" if fence else ""}
  bar.sync 0;
  setp.eq.u32 %p1, %tx, 0;
  mov.u32 %r10, 20;
  mov.u32 %r11, 40;
  add.u32 %r8, %r1, 1024;
  @%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd1, {{%r10, %r11}}], [%r8];
  @%p1 cp.async.bulk.commit_group;
{reuse}
  @%p1 cp.async.bulk.wait_group.read 0;
  @%p1 cp.async.bulk.wait_group 0;
"""

    def go(b):
        mem = ptxsim.GlobalMemory()
        ia = mem.from_array(img, "img")
        ta = mem.from_array(t, "t")
        ma = mem.alloc(128, "map", 0)
        ma.bytes[:] = np.frombuffer(ptxsim.encode_tensor_map(7, 2, ta, dims, [160], box, [1, 1], swizzle=2), np.uint8)
        launch(kernel(b, nparams=2), (1,), params=[ia, ma], memory=mem, shared_bytes=3072)
        return ta.ndarray(np.float32, t.shape)

    got = go(body())
    want = t.copy()
    for r in range(32):
        for c in range(16):
            y, x = 40 + r, 20 + c
            if y < 48 and x < 36:
                want[y, x] = src[r, c]
    assert np.array_equal(got, want)
    with pytest.raises(ptxsim.AsyncError, match="fence.proxy.async"):
        go(body(fence=False))
    with pytest.raises(ptxsim.RaceError, match="still reads"):
        go(body(reuse="  @%p1 st.shared.b32 [%r8], 0;"))


# --- tensor maps as kernel parameters, as Nereid's launch passes them -------------------------------------------
# The entry takes a host tensor descriptor (base, 2 sizes, 2 strides), the output and the box coordinates,
# then the map (`<kernel>_tmap_<j>`, after every runtime argument), whose address it takes as Nereid's PTX does.
_PARAM_MAP_PARAMS = [".param .u64 p0", ".param .u32 p1", ".param .u32 p2", ".param .u64 p3", ".param .u64 p4",
                     ".param .u64 p5", ".param .u32 p6", ".param .u32 p7", ".param .align 64 .b8 k_tmap_0[128]"]


def _param_map_kernel(nbytes, dump):
    body = f"""
  mov.b64 %rd20, k_tmap_0;
  cvta.param.u64 %rd21, %rd20;
  ld.param.u32 %r10, [p6];
  ld.param.u32 %r11, [p7];
  ld.param.u64 %rd22, [k_tmap_0+16];
  ld.u64 %rd23, [%rd21+16];
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  add.u32 %r8, %r1, 1024;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd30, [%r1], {nbytes};
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r8], [%rd21, {{%r10, %r11}}], [%r1];
$Lw:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $Lw;
{copy_from_smem(dump, 128, dst="%rd5", at=1024)}
  @%p1 st.global.u64 [%rd5+{dump}], %rd22;
  @%p1 st.global.u64 [%rd5+{dump + 8}], %rd23;
"""
    return kernel(body, params=_PARAM_MAP_PARAMS)


def _param_map_case(rng, nan):
    """A 50 x 100 f16 tensor in rows of 104, the box of 16 x 64 at row -3, column 40 (128-byte swizzle):
    (the tensor, the expected shared image, its bytes, the map's dims fastest first, box, coordinates)."""
    t = rng.standard_normal((50, 104)).astype(np.float16)
    dims, box, coords = [100, 50], [64, 16], [40, -3]
    want, nbytes = expected_box(t[:, :100], dims, box, [1, 1], coords, 2, 128, 0x7FFF if nan else 0, 1024)
    return t, want, nbytes, dims, box, coords


@pytest.mark.parametrize("nan", [0, 1])
def test_tma_load_from_a_parameter_map(rng, nan):
    """A 2-D load through a map passed as a 128-byte parameter (mov.b64 of its name, cvta.param): the box
    lands swizzled (128 bytes), out-of-bounds rows and columns filled with zeros or NaN; ld.param and a
    generic ld read the map's bytes."""
    t, want, nbytes, dims, box, coords = _param_map_case(rng, nan)
    mem = ptxsim.GlobalMemory()
    ta = mem.from_array(t, "t")
    out = np.zeros(len(want) + 16, np.uint8)
    oa = mem.from_array(out, "out")
    raw = ptxsim.encode_tensor_map("FLOAT16", 2, ta, dims, [208], box, [1, 1], swizzle=3, oob_fill=nan)
    params = [ta, 50, 100, 104, 1, oa] + [c & 0xFFFFFFFF for c in coords] + [raw]
    launch(_param_map_kernel(nbytes, len(want)), (1,), params=params, memory=mem, shared_bytes=1024 + len(want))
    got = oa.ndarray(np.uint8, out.shape)
    assert np.array_equal(got[:len(want)], want), np.flatnonzero(got[:len(want)] != want)[:10]
    assert list(got[len(want):].view(np.uint64)) == [ta.base, ta.base]
    # the box read back through the swizzle is the tensor's block, NaN or zero outside it
    img = np.zeros(1024 + len(want), np.uint8)
    img[1024:] = got[:len(want)]
    block = np.array([[img[swizzled(SMEM + 1024 + 2 * (64 * r + c), 128) - SMEM:][:2].view(np.float16)[0]
                       for c in range(64)] for r in range(16)])
    ref = np.full((16, 64), np.nan if nan else 0.0, np.float16)
    ref[3:16, 0:60] = t[0:13, 40:100]
    assert np.array_equal(block, ref, equal_nan=True)


def test_parameter_map_misuse(rng):
    t, want, nbytes, dims, box, coords = _param_map_case(rng, 0)
    mem = ptxsim.GlobalMemory()
    ta = mem.from_array(t, "t")
    oa = mem.alloc(len(want) + 16, "out")
    raw = ptxsim.encode_tensor_map("FLOAT16", 2, ta, dims, [208], box, [1, 1], swizzle=3)
    ptx = _param_map_kernel(nbytes, len(want))
    head = [ta, 50, 100, 104, 1, oa, 40, 0]
    for bad, msg in [(ta, "give bytes, got Allocation"), (ta.base, "give bytes, got int"),
                     (raw[:64], "takes 128 bytes, got 64")]:
        with pytest.raises(ValueError, match=msg):
            launch(ptx, (1,), params=head + [bad], memory=mem, shared_bytes=1024 + len(want))
    with pytest.raises(ptxsim.SimError, match="not a tensor map"):
        launch(ptx, (1,), params=head + [bytes(128)], memory=mem, shared_bytes=1024 + len(want))
    # without .align 64 the map lands after the 4-byte coordinate: not a place for a tensor map
    loose = ptx.replace(".param .align 64 .b8 k_tmap_0[128]", ".param .b8 k_tmap_0[128]")
    with pytest.raises(ptxsim.MemoryFault, match="not 64-byte aligned"):
        ptxsim.launch(loose, "k", (1,), params=head + [raw], memory=mem, shared_bytes=1024 + len(want))
    # reading past the parameter's 128 bytes
    past = ptx.replace("ld.param.u64 %rd22, [k_tmap_0+16]", "ld.param.u64 %rd22, [k_tmap_0+124]")
    with pytest.raises(ptxsim.MemoryFault, match="offset 124 of parameter 'k_tmap_0'"):
        ptxsim.launch(past, "k", (1,), params=head + [raw], memory=mem, shared_bytes=1024 + len(want))


# --- the simulator mode's tensor maps (tests/python/sim_mode.py) ----------------------------------------------
def _fake_compiled(ptx, box, swizzle, nan_fill, dtype="fp16", es=2):
    """What nereid's compiled kernel says of _param_map_kernel's entry: its runtime arguments
    (a host descriptor `desc`, `out`, `x`, `y`) and its tensor map."""
    import types
    args = (("buffer", "desc.base", dtype, 0), ("int", "desc.shape.0", "i32", 0), ("int", "desc.shape.1", "i32", 0),
            ("int", "desc.strides.0", "i64", 0), ("int", "desc.strides.1", "i64", 0), ("buffer", "out", "u8", 1),
            ("int", "x", "i32", 2), ("int", "y", "i32", 3))
    maps = [{"base_arg": 0, "rank": 2, "dtype": dtype, "elem_bytes": es, "box": box, "swizzle": swizzle,
             "nan_fill": nan_fill}]
    return types.SimpleNamespace(args=args, tensor_maps=maps, ptx=ptx, name="k", shared=None)


@pytest.mark.parametrize("nan", [False, True])
def test_sim_mode_encodes_the_launch_tensor_maps(rng, nan):
    """sim_mode.run_compiled appends the tensor map the launch encodes from the descriptor's values
    (sizes and box reversed, byte strides of the outer dimension, 128-byte swizzle, the fill)."""
    import sim_mode
    from nereid.tools.tensor_descriptor import TensorDescriptor
    t, want, nbytes, dims, box, coords = _param_map_case(rng, nan)
    ptx = _param_map_kernel(nbytes, len(want))
    k = _fake_compiled(ptx, [16, 64], 128, nan)
    k.shared = 1024 + len(want)
    out = np.zeros(len(want) + 16, np.uint8)
    desc = TensorDescriptor(t, [50, 100], [104, 1], [16, 64], padding="nan" if nan else "zero")
    bound = {"desc": desc, "out": out, "x": coords[0], "y": coords[1]}
    got = sim_mode.run_compiled(k, bound, (1,), {"desc.base": t, "out": out})
    assert np.array_equal(got["out"][:len(want)], want), np.flatnonzero(got["out"][:len(want)] != want)[:10]
    assert np.array_equal(got["desc.base"], t)
    _RAN[hash(ptx)] = ptx


def test_sim_mode_tensor_map_fields():
    """The map of a 3-D descriptor: CUDA's order (innermost first) from the descriptor's (outermost first)."""
    import sim_mode
    k = _fake_compiled("", [2, 8, 32], 64, False, "bf16")
    k.args = (("buffer", "d.base", "bf16", 0), ("int", "d.shape.0", "i32", 0), ("int", "d.shape.1", "i32", 0),
              ("int", "d.shape.2", "i32", 0), ("int", "d.strides.0", "i64", 0), ("int", "d.strides.1", "i64", 0),
              ("int", "d.strides.2", "i64", 0))
    k.tensor_maps[0]["rank"] = 3
    values = {"d.base": 0x10040, "d.shape.0": 5, "d.shape.1": 9, "d.shape.2": 30, "d.strides.0": 9 * 40,
              "d.strides.1": 40, "d.strides.2": 1}
    tm = ptxsim.decode_tensor_map(sim_mode.tensor_map(k, k.tensor_maps[0], values))
    assert tm.address == 0x10040 and tm.rank == 3 and tm.dtype == 9 and tm.esize == 2
    assert tm.dims == [30, 9, 5] and tm.strides == [2, 80, 720] and tm.box == [32, 8, 2]
    assert tm.swizzle_bytes == 64 and tm.oob_fill == 0 and tm.estrides == [1, 1, 1]
    k.tensor_maps[0]["nan_fill"] = True
    assert ptxsim.decode_tensor_map(sim_mode.tensor_map(k, k.tensor_maps[0], values)).oob_fill == 1
    with pytest.raises(ValueError, match="last dimension contiguous"):
        sim_mode.tensor_map(k, k.tensor_maps[0], {**values, "d.strides.2": 2})
    with pytest.raises(ValueError, match="does not name a descriptor"):
        sim_mode.tensor_map(k, {**k.tensor_maps[0], "base_arg": 1}, values)
    with pytest.raises(ValueError, match="no CUDA data type or swizzle"):
        sim_mode.tensor_map(k, {**k.tensor_maps[0], "swizzle": 16}, values)


@nereid.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_compiled_kernels_list_their_tensor_maps():
    """Kernels without TMA have none; the no_tma option compiles (and caches) apart."""
    copy = _copy
    for arch in (None, "sm_90a"):
        k = copy.compile("*fp32, *fp32, i32, 128", arch=arch)
        assert k.tensor_maps == []
        k2 = copy.compile("*fp32, *fp32, i32, 128", arch=arch, no_tma=True)
        assert k2.tensor_maps == [] and k2 is not k
        assert copy.compile("*fp32, *fp32, i32, 128", arch=arch, no_tma=True) is k2


@nereid.jit
def _desc_mm(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_host_descriptor_matmul_through_tma(rng, pad, monkeypatch):
    """Nereid's own TMA kernel (host descriptors loaded and stored by TMA on sm_90a) in the simulator
    mode: the maps its launch takes (kernel.tensor_maps), encoded by sim_mode from the descriptors,
    blocks overhanging M, N (and K with zero padding); NEREID_DISABLE_TMA=1 runs it without maps."""
    import sim_mode
    from nereid.tools.tensor_descriptor import TensorDescriptor
    M, N, K = 100, 72, 136 if pad == "zero" else 128
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ran = []
    real = sim_mode.ptxsim.launch

    def launch_seen(ptx, name, grid, params=(), **kw):
        ran.append(("cp.async.bulk.tensor" in ptx, [len(p) for p in params if isinstance(p, bytes)]))
        return real(ptx, name, grid, params=params, **kw)

    monkeypatch.setattr(sim_mode.ptxsim, "launch", launch_seen)
    for no_tma in (False, True):
        if no_tma:
            monkeypatch.setenv("NEREID_DISABLE_TMA", "1")
        c = np.full((M, N), np.nan, np.float16)
        descs = (TensorDescriptor(a, [M, K], [K, 1], [64, 64], pad), TensorDescriptor(b, [K, N], [N, 1], [64, 64], pad),
                 TensorDescriptor(c, [M, N], [N, 1], [64, 64]))
        ran.clear()
        sim_mode.check(_desc_mm, (2, 2), *descs, K, BM=64, BN=64, BK=64)
        assert sim_mode.compare("c", c, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)) is None
        if "sm_90a" in sim_mode.ARCHS:
            assert ran[-1] == ((False, []) if no_tma else (True, [128, 128, 128]))
    sig = _desc_mm.warmup(*descs, K, BM=64, BN=64, BK=64, grid=(1,)).signature
    maps = _desc_mm.compile(sig, arch="sm_90a").tensor_maps
    assert maps == [{"base_arg": 5 * i, "rank": 2, "dtype": "fp16", "elem_bytes": 2, "box": [64, 64], "swizzle": 128,
                     "nan_fill": pad == "nan" and i < 2} for i in range(3)]
    assert _desc_mm.compile(sig, arch="sm_90a", no_tma=True).tensor_maps == []


def test_tma_to_wgmma_pipeline(rng):
    """Two CTAs: each loads its 64 x 64 f16 tile of A (K-major) and the 64 x 64 B (N-major)
    by TMA with 128-byte swizzles, waits on the mbarrier and runs four k16 wgmmas whose
    descriptors advance 32 bytes (A) and 2048 bytes (B) per step."""
    A = rng.integers(-3, 4, (128, 64)).astype(np.float16)
    B = rng.integers(-3, 4, (64, 64)).astype(np.float16)
    mem = ptxsim.GlobalMemory()
    aa, ba = mem.from_array(A, "A"), mem.from_array(B, "B")
    maps = mem.alloc(256, "maps", 0)
    maps.bytes[:128] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, aa, [64, 128], [128], [64, 64], [1, 1], swizzle=3),
                                     np.uint8)
    maps.bytes[128:] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, ba, [64, 64], [128], [64, 64], [1, 1], swizzle=3),
                                     np.uint8)
    out = np.zeros((2, 128, 32), np.float32)
    oa = mem.from_array(out, "out")
    da = descriptor(1024, 16, 1024, 128)
    db = descriptor(1024 + 8192, 8192, 1024, 128)
    steps = "\n".join(f"""  add.s64 %rd20, %rd2, {2 * s};
  add.s64 %rd21, %rd3, {128 * s};
  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{", ".join(f"%d{i}" for i in range(32))}}}, %rd20, %rd21, %p3, 1, 1, 0, 1;"""
                      for s in range(4))
    body = f"""
  ld.param.u64 %rd0, [p0];
  add.u64 %rd5, %rd0, 128;
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  add.u32 %r8, %r1, 1024;
  add.u32 %r9, %r1, 9216;
  mov.u32 %r10, %ctaid.x;
  shl.b32 %r11, %r10, 6;
  mov.u32 %r12, 0;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd30, [%r1], 16384;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r8], [%rd0, {{%r12, %r11}}], [%r1];
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r9], [%rd5, {{%r12, %r12}}], [%r1];
$Lw:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
  @!%p2 bra $Lw;
{chr(10).join(f"  mov.b32 %d{i}, 0;" for i in range(32))}
  setp.ne.u32 %p3, %tx, 999999;
  wgmma.fence.sync.aligned;
{steps}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd10, %r10, 16384;
  mul.wide.u32 %rd12, %tx, 128;
  add.u64 %rd11, %rd1, %rd10;
  add.u64 %rd11, %rd11, %rd12;
{chr(10).join(f"  st.global.b32 [%rd11+{4 * i}], %d{i};" for i in range(32))}
"""
    ptx = kernel(body, params=[".param .u64 p0", ".param .u64 p1", ".param .u64 p2", ".param .u64 p3"])
    ptx = ptx.replace("  ld.param.u64 %rd0, [p0];\n  ld.param.u64 %rd1", "  ld.param.u64 %rd1", 1)
    launch(ptx, (2,), params=[maps, oa, da, db], memory=mem, shared_bytes=1024 + 16384)
    got = oa.ndarray(np.float32, out.shape)
    D = A.astype(np.float64) @ B.astype(np.float64)
    for cta in range(2):
        for w in range(4):
            for lane in range(32):
                for i in range(32):
                    r, c = isa_d(i, lane, w)
                    assert got[cta, w * 32 + lane, i] == D[64 * cta + r, c], (cta, w, lane, i)


# --- setmaxnreg, elect.sync --------------------------------------------------------------------------------------
def test_setmaxnreg_and_elect():
    body = """
  setmaxnreg.inc.sync.aligned.u32 240;
  setmaxnreg.dec.sync.aligned.u32 40;
  elect.sync %r5|%p5, 0xffffffff;
  elect.sync _|%p6, 0x000000f0;
  mul.wide.u32 %rd10, %tx, 8;
  add.u64 %rd11, %rd0, %rd10;
  st.global.u32 [%rd11], %r5;
  selp.u32 %r6, 1, 0, %p5;
  selp.u32 %r7, 2, 0, %p6;
  or.b32 %r6, %r6, %r7;
  st.global.u32 [%rd11+4], %r6;
"""
    out = np.zeros((256, 2), np.uint32)
    out, = run(kernel(body, nparams=1, threads=256), [out])
    lane = np.arange(256) % 32
    assert (out[:, 0] == 0).all()
    assert (out[:, 1] == (lane == 0) * 1 + (lane == 4) * 2).all()
    with pytest.raises(ptxsim.SimError, match="multiple of 8 from 24 to 256"):
        run(kernel("  setmaxnreg.inc.sync.aligned.u32 250;", nparams=1), [np.zeros(1, np.uint32)])
    with pytest.raises(ptxsim.WarpSyncError, match="part of a warpgroup"):
        run(kernel("  setp.lt.u32 %p1, %tx, 32;\n  @%p1 bra $Ls;\n  setmaxnreg.dec.sync.aligned.u32 40;\n$Ls:",
                   nparams=1), [np.zeros(1, np.uint32)])


# --- warp specialization: producer and consumer warps, named barriers -----------------------------------------
def _pingpong(rounds, producer_parity="xor.b32 %r11, %r11, 1;"):
    """Warp 1 (the producer, at the lower blocks) and warp 0 (the consumer) take turns through
    two mbarriers: the producer waits for `empty` (its parity: the consumer's release of the
    round before), takes a ticket and arrives on `full` from one lane (a sink destination); the
    consumer waits for `full`, takes a ticket and arrives on `empty` from every lane.  out[0]
    counts the tickets, out[2 + 2i] and out[3 + 2i] are round i's."""
    return kernel(f"""
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
  @%p1 mbarrier.init.shared::cta.b64 [%r1+8], 32;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mov.u32 %r10, 0;
  setp.lt.u32 %p2, %tx, 32;
  @%p2 bra $CONS;
$Lp:
  and.b32 %r11, %r10, 1;
  {producer_parity}
$Lpw:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r1+8], %r11;
  @!%p3 bra $Lpw;
  setp.eq.u32 %p4, %tx, 32;
  mul.wide.u32 %rd12, %r10, 8;
  add.u64 %rd13, %rd0, %rd12;
  @%p4 atom.global.add.u32 %r12, [%rd0], 1;
  @%p4 st.global.u32 [%rd13+8], %r12;
  @%p4 mbarrier.arrive.shared::cta.b64 _, [%r1];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p5, %r10, {rounds};
  @%p5 bra $Lp;
  ret;
$CONS:
  and.b32 %r11, %r10, 1;
$Lcw:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r1], %r11;
  @!%p3 bra $Lcw;
  setp.eq.u32 %p4, %tx, 0;
  mul.wide.u32 %rd12, %r10, 8;
  add.u64 %rd13, %rd0, %rd12;
  @%p4 atom.global.add.u32 %r12, [%rd0], 1;
  @%p4 st.global.u32 [%rd13+12], %r12;
  mbarrier.arrive.shared::cta.b64 %rd20, [%r1+8];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p5, %r10, {rounds};
  @%p5 bra $CONS;
""", nparams=1, threads=64)


def test_spinning_producer_yields_to_its_consumer():
    """The producer spins at a lower block than the consumer that releases it: a thread whose wait
    failed yields, so the two alternate (lowest block first would starve the consumer)."""
    out, = run(_pingpong(7), [np.zeros(16, np.uint32)], smem=16)
    assert out[0] == 14 and (out[2:16:2] == np.arange(0, 14, 2)).all() and (out[3:16:2] == np.arange(1, 14, 2)).all()


def test_mbarrier_arrive_with_a_sink():
    """mbarrier.arrive with the sink destination `_`, guarded: one arrival per thread the guard lets through."""
    body = """
  @%p1 mbarrier.init.shared::cta.b64 [%r1], 3;
  bar.sync 0;
  setp.lt.u32 %p3, %tx, 2;
  @%p3 mbarrier.arrive.shared::cta.b64 _, [%r1];
  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r1], 0;
  @%p1 mbarrier.arrive.release.cta.shared::cta.b64 _, [%r1];
  mbarrier.test_wait.parity.shared::cta.b64 %p5, [%r1], 0;
  @%p1 mbarrier.arrive.shared::cta.b64 _, [%r1], 3;
  mbarrier.test_wait.parity.shared::cta.b64 %p6, [%r1], 1;
""" + _preds(["%p4", "%p5", "%p6"])
    out, = run(_mbar_kernel(body), [np.zeros((64, 32), np.uint8)], smem=16)
    assert (out[:, :3] == [0, 1, 1]).all()


def _ws_kernel(nc, stages, iters, producer_parity="xor.b32 %r12, %r12, 1;"):
    """A warp-specialized matmul of the shape Nereid emits on sm_90a: consumer warpgroups (threads
    0 to nc - 1, 64 rows of A each) and a producer warpgroup (nc to nc + 127) whose first warp
    fills a ring of `stages` stages by TMA, each stage a 64-wide K slice of A and of B (128-byte
    swizzles), one elected lane arming the stage's `full` mbarrier; the consumers wait on
    `full`, run four m64n64k16 wgmmas, keep one group in flight and release the stage of the
    iteration before on its `empty` mbarrier (one arrival per consumer warp).  Parameters: the
    two tensor maps (A's, B's at +128), out, and the stage-0 descriptors of A and B."""
    a_bytes = 64 * nc  # nc / 128 warpgroups of 64 rows of 128 bytes
    stage = a_bytes + 8192
    full = [f"  @%p1 mbarrier.init.shared::cta.b64 [%r1+{8 * s}], 1;" for s in range(stages)]
    empty = [f"  @%p1 mbarrier.init.shared::cta.b64 [%r1+{8 * (stages + s)}], {nc // 32};" for s in range(stages)]
    dregs = ", ".join(f"%d{i}" for i in range(32))
    steps = "\n".join(f"""  add.s64 %rd20, %rd8, {2 * j};
  add.s64 %rd21, %rd9, {128 * j};
  wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{dregs}}}, %rd20, %rd21, %p7, 1, 1, 0, 1;"""
                      for j in range(4))
    return kernel(f"""
  mov.u32 %r1, nr_smem;
  setp.eq.u32 %p1, %tx, 0;
{chr(10).join(full + empty)}
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  setp.lt.u32 %p2, %tx, {nc};
  @%p2 bra $CONS;
  setmaxnreg.dec.sync.aligned.u32 40;
  shr.u32 %r2, %tx, 5;
  setp.ne.u32 %p3, %r2, {nc // 32};
  @%p3 ret;
  add.u64 %rd5, %rd0, 128;
  mov.u32 %r10, 0;
$Lp:
  rem.u32 %r11, %r10, {stages};
  div.u32 %r12, %r10, {stages};
  and.b32 %r12, %r12, 1;
  {producer_parity}
  shl.b32 %r13, %r11, 3;
  add.u32 %r14, %r1, %r13;
  add.u32 %r15, %r14, {8 * stages};
$Lpw:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r15], %r12;
  @!%p4 bra $Lpw;
  elect.sync _|%p5, 0xffffffff;
  mad.lo.u32 %r16, %r11, {stage}, %r1;
  add.u32 %r16, %r16, 1024;
  add.u32 %r17, %r16, {a_bytes};
  shl.b32 %r18, %r10, 6;
  mov.u32 %r19, 0;
  @%p5 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r14], {stage};
  @%p5 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r16], [%rd0, {{%r18, %r19}}], [%r14];
  @%p5 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r17], [%rd5, {{%r19, %r18}}], [%r14];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p6, %r10, {iters};
  @%p6 bra $Lp;
  ret;
$CONS:
{"  setmaxnreg.inc.sync.aligned.u32 232;" if nc > 128 else ""}
{chr(10).join(f"  mov.b32 %d{i}, 0;" for i in range(32))}
  setp.ne.u32 %p7, %tx, 999999;
  shr.u32 %r20, %tx, 7;
  and.b32 %r21, %tx, 31;
  setp.eq.u32 %p8, %r21, 0;
  mul.wide.u32 %rd6, %r20, 512;
  add.u64 %rd6, %rd2, %rd6;
  mov.u32 %r30, 0;
$Lc:
  rem.u32 %r31, %r30, {stages};
  div.u32 %r32, %r30, {stages};
  and.b32 %r32, %r32, 1;
  shl.b32 %r33, %r31, 3;
  add.u32 %r34, %r1, %r33;
$Lcw:
  mbarrier.try_wait.parity.shared::cta.b64 %p9, [%r34], %r32;
  @!%p9 bra $Lcw;
  mul.wide.u32 %rd7, %r31, {stage // 16};
  add.u64 %rd8, %rd6, %rd7;
  add.u64 %rd9, %rd3, %rd7;
  wgmma.fence.sync.aligned;
{steps}
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 1;
  add.u32 %r35, %r30, {stages - 1};
  rem.u32 %r35, %r35, {stages};
  shl.b32 %r35, %r35, 3;
  add.u32 %r36, %r1, %r35;
  add.u32 %r36, %r36, {8 * stages};
  setp.ne.and.u32 %p10, %r30, 0, %p8;
  @%p10 mbarrier.arrive.shared::cta.b64 _, [%r36];
  add.u32 %r30, %r30, 1;
  setp.lt.u32 %p11, %r30, {iters};
  @%p11 bra $Lc;
  wgmma.wait_group.sync.aligned 0;
  bar.sync 1, {nc};
  mul.wide.u32 %rd10, %tx, 128;
  add.u64 %rd11, %rd1, %rd10;
{chr(10).join(f"  st.global.b32 [%rd11+{4 * i}], %d{i};" for i in range(32))}
""", nparams=4, threads=nc + 128), 1024 + stages * stage


def _ws_run(rng, nc, stages, iters, edit=None, **kw):
    """Runs _ws_kernel (its text with edit[0] replaced by edit[1]) on random A (nc / 2 x 64 iters)
    and B (64 iters x 64); (out, A B)."""
    K, M = 64 * iters, nc // 2
    A = rng.integers(-3, 4, (M, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, 64)).astype(np.float16)
    mem = ptxsim.GlobalMemory()
    aa, ba = mem.from_array(A, "A"), mem.from_array(B, "B")
    maps = mem.alloc(256, "maps", 0)
    maps.bytes[:128] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, aa, [K, M], [2 * K], [64, M], [1, 1], swizzle=3),
                                     np.uint8)
    maps.bytes[128:] = np.frombuffer(ptxsim.encode_tensor_map(6, 2, ba, [64, K], [128], [64, 64], [1, 1], swizzle=3),
                                     np.uint8)
    oa = mem.from_array(np.zeros((nc, 32), np.float32), "out")
    ptx, smem = _ws_kernel(nc, stages, iters, **kw)
    if edit is not None:
        assert edit[0] in ptx
        ptx = ptx.replace(*edit)
    da = descriptor(1024, 16, 1024, 128)
    db = descriptor(1024 + 64 * nc, 8192, 1024, 128)
    launch(ptx, (1,), params=[maps, oa, da, db], memory=mem, shared_bytes=smem)
    return oa.ndarray(np.float32, (nc, 32)), A.astype(np.float64) @ B.astype(np.float64)


@pytest.mark.parametrize("nc,stages,iters", [(256, 3, 5), (128, 2, 5)])
def test_warp_specialized_matmul(rng, nc, stages, iters):
    """The ring wraps (more iterations than stages): every stage is refilled only after the
    consumers' wgmmas that read it completed and all their warps released it."""
    got, D = _ws_run(rng, nc, stages, iters)
    t = np.arange(nc)
    g, w, lane = t // 128, (t // 32) % 4, t % 32
    for i in range(32):
        r, c = isa_d(i, lane, w)
        assert np.array_equal(got[:, i], D[64 * g + r, c]), i


def test_warp_specialized_checks(rng):
    """A stage released while a wgmma group that reads it is in flight (released at the first
    iteration too, or with two groups kept in flight) is refilled under it: a race."""
    for edit in [("setp.ne.and.u32 %p10, %r30, 0, %p8;", "mov.pred %p10, %p8;"),
                 ("wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 2;")]:
        with pytest.raises(ptxsim.RaceError, match="TMA load writes shared memory .* still reads"):
            _ws_run(rng, 128, 2, 5, edit=edit)


def test_warp_specialized_deadlock_is_reported(rng):
    """Producer and consumers that wait on different mbarriers for phases that never come (the
    producer's parity is off by one: it waits for the consumers to release the first round
    before filling it): a hang naming both waits, after a thousand rounds of retries rather
    than two hundred thousand spins."""
    import time
    t0 = time.perf_counter()
    with pytest.raises(ptxsim.HangError, match="deadlock") as e:
        run(_pingpong(3, producer_parity=""), [np.zeros(8, np.uint32)], smem=16)
    msg = str(e.value)
    assert "32 thread(s) from thread (32, 0, 0)" in msg and "32 thread(s) from thread (0, 0, 0)" in msg, msg
    assert "parity 0 of the mbarrier at shared offset 8" in msg and "parity 0 of the mbarrier at shared offset 0" in msg
    with pytest.raises(ptxsim.HangError, match="deadlock") as e:
        _ws_run(rng, 128, 2, 3, producer_parity="")
    msg = str(e.value)
    assert "128 thread(s) from thread (0, 0, 0)" in msg and "32 thread(s) from thread (128, 0, 0)" in msg, msg
    assert time.perf_counter() - t0 < 60


def test_named_barrier_with_a_thread_count():
    """Each half of the block exchanges values through shared memory across its own barrier of
    128 threads, then the whole block meets at bar.sync 0, 256."""
    body = """
  mov.u32 %r1, nr_smem;
  shl.b32 %r2, %tx, 2;
  add.u32 %r3, %r1, %r2;
  st.shared.u32 [%r3], %tx;
  setp.lt.u32 %p1, %tx, 128;
  @%p1 bra $La;
  barrier.sync.aligned 2, 128;
  bra $Lj;
$La:
  bar.sync 1, 128;
$Lj:
  xor.b32 %r4, %r2, 4;
  add.u32 %r5, %r1, %r4;
  ld.shared.u32 %r6, [%r5];
  bar.sync 0, 256;
  mul.wide.u32 %rd10, %tx, 4;
  add.u64 %rd11, %rd0, %rd10;
  st.global.u32 [%rd11], %r6;
"""
    out, = run(kernel(body, nparams=1, threads=256), [np.zeros(256, np.uint32)], smem=1024)
    assert (out == np.arange(256) ^ 1).all()
    # the count is the number of threads there, in whole warps
    split = """
  setp.lt.u32 %p1, %tx, {n};
  @%p1 bra $La;
  bra $Lj;
$La:
  {bar}
$Lj:
"""
    for n, bar, msg in [(128, "bar.sync 1, 64;", "bar.sync 1, 64 reached by 128 threads of the block, not 64"),
                        (96, "barrier.sync 3, 128;", "reached by 96 threads of the block, not 128"),
                        (48, "bar.sync 1, 64;", "part of a warp"),
                        (256, "bar.sync 1, 128;", "reached by all 256 threads of the block, not 128"),
                        (128, "bar.sync 1;", "not reached by every thread")]:
        with pytest.raises(ptxsim.BarrierError, match=msg):
            run(kernel(split.format(n=n, bar=bar), nparams=1, threads=256), [np.zeros(1, np.uint32)])
    for bar, msg in [("bar.sync 1, 100;", "positive multiple of 32"), ("bar.sync 16;", "0 to 15"),
                     ("bar.sync 1, %r1;", "in a register")]:
        with pytest.raises(ptxsim.SimError, match=msg):
            run(kernel(bar, nparams=1, threads=256), [np.zeros(1, np.uint32)])


# --- Nereid's own TMA kernels ---------------------------------------------------------------------------------
# IR kernels (TMA copies into nvmma buffers, an mbarrier per phase, warp_group_dot) go through
# Nereid's GPU back end by a small C driver linked with the library's objects; the PTX then runs
# on the simulator with tensor maps laid out as the runtime's plan for tma_load says (the buffer's
# order gives the map's dimensions, a box one swizzle wide).
_IR2PTX = r"""
#include "arena.h"
#include "diag.h"
#include "gpu.h"
#include "ir.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, stdin);
    buf[n] = 0;
    NrArena a;
    nr_arena_init(&a);
    NrSources src;
    nr_sources_init(&src, &a);
    NrDiags d;
    nr_diags_init(&d, &a, &src);
    NrModule *m = nr_module_parse(&a, buf, n, "k.ir", &d);
    char *ptx = NULL;
    if (m) {
        d.sources = &m->sources;
        NrGpuOptions o;
        memset(&o, 0, sizeof o);
        o.sm = 90, o.sm_a = true;
        if (nr_gpu_alloc_smem(m, &d) && nr_gpu_barriers(m, &d)) ptx = nr_emit_ptx(m->funcs[0], &o, &d);
    }
    if (!ptx) fputs(nr_diags_render(&a, &d), stderr);
    else fputs(ptx, stdout);
    nr_arena_free(&a);
    return ptx ? 0 : 1;
}
"""

_TMA_IR = """module attributes {num_warps = 4, sm = 90a} {
  #L1 = mma<version = 3, wpc = [4, 1], instr = [16, 128, 16]>
  #L2 = nvmma_shared<swizzle = SA, order = OA>
  #L3 = nvmma_shared<swizzle = SB, order = OB>
  #L4 = shared<vec = 1, per_phase = 1, max_phase = 1, order = [0]>
  #L5 = slice<dim = 1, parent = #L1>
  #L6 = slice<dim = 0, parent = #L1>

  func @k(%ta: ptr<i8> {divisibility = 16}, %tb: ptr<i8> {divisibility = 16}, %c_ptr: ptr<f32> {divisibility = 16}, %K: i32) kernel {
    %bar = local_alloc : !smem<1xi64, #L4>
    mbarrier_init %bar {count = 1}
    %a = local_alloc : !smem<128x64xf16, #L2>
    %b = local_alloc : !smem<64x128xf16, #L3>
    %z = const {value = 0.0} : tensor<128x128xf32, #L1>
    %c0 = const {value = 0} : i32
    %c1 = const {value = 1} : i32
    %c64 = const {value = 64} : i32
    %t = const {value = 1} : i1
    %r, %ph = for %c0, %K, %c64, %z, %c0 : tensor<128x128xf32, #L1>, i32 {
    ^(%k: i32, %acc: tensor<128x128xf32, #L1>, %phase: i32):
      mbarrier_expect %bar, %t {bytes = 32768}
      tma_load %ta, %a, %bar, _, %c0, %k
      tma_load %tb, %b, %bar, %t, %k, %c0
      mbarrier_wait %bar, %phase
      %d = warp_group_dot %a, %b, %acc : tensor<128x128xf32, #L1>
      %p2 = xor %phase, %c1 : i32
      yield %d, %p2
    }
    %0 = arange {end = 128, start = 0} : tensor<128xi32, #L6>
    %1 = arange {end = 128, start = 0} : tensor<128xi32, #L5>
    %2 = expand_dims %1 {axis = 1} : tensor<128x1xi32, #L1>
    %3 = expand_dims %0 {axis = 0} : tensor<1x128xi32, #L1>
    %4 = const {value = 128} : tensor<128x1xi32, #L1>
    %5 = mul %2, %4 : tensor<128x1xi32, #L1>
    %6 = splat %c_ptr : tensor<128x1xptr<f32>, #L1>
    %7 = addptr %6, %5 : tensor<128x1xptr<f32>, #L1>
    %8 = broadcast %7 : tensor<128x128xptr<f32>, #L1>
    %9 = broadcast %3 : tensor<128x128xi32, #L1>
    %10 = addptr %8, %9 : tensor<128x128xptr<f32>, #L1>
    store %10, %r, _
    return
  }
}
"""


@pytest.fixture(scope="module")
def ir2ptx(tmp_path_factory):
    import glob
    import shutil
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    objs = sorted(glob.glob(os.path.join(root, "build", "obj", "*.o")))
    cc = shutil.which("cc") or shutil.which("gcc")
    if not objs or not cc:
        pytest.skip("needs a C compiler and the library's objects (make pyext)")
    d = tmp_path_factory.mktemp("ir2ptx")
    (d / "ir2ptx.c").write_text(_IR2PTX)
    exe = str(d / "ir2ptx")
    p = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-I" + os.path.join(root, "src"),
                        "-I" + os.path.join(root, "include"), str(d / "ir2ptx.c")] + objs +
                       ["-lm", "-lpthread", "-ldl", "-o", exe], capture_output=True, text=True)
    if p.returncode:
        pytest.fail(f"cannot build the IR driver:\n{p.stderr[:2000]}")

    def compile_ir(text):
        q = subprocess.run([exe], input=text, capture_output=True, text=True)
        assert q.returncode == 0, q.stderr
        return q.stdout

    return compile_ir


@pytest.mark.parametrize("sa,oa,sb,ob,K", [(128, [1, 0], 64, [0, 1], 192), (64, [1, 0], 128, [1, 0], 160),
                                          (32, [0, 1], 32, [1, 0], 64), (128, [0, 1], 64, [0, 1], 104)])
def test_nereid_tma_kernel(rng, ir2ptx, sa, oa, sb, ob, K):
    """A 128 x 128 matmul over K by Nereid's tma_load / mbarrier / warp_group_dot, A and B in
    both storage orders and every swizzle; K beyond the last whole step reads zeros."""
    ir = _TMA_IR.replace("SA", str(sa)).replace("OA", str(oa)).replace("SB", str(sb)).replace("OB", str(ob))
    ptx = ir2ptx(ir)
    assert ptx.count("cp.async.bulk.tensor.2d") >= 2 and "mbarrier.try_wait.parity" in ptx
    A = rng.integers(-3, 4, (128, K)).astype(np.float16)
    B = rng.integers(-3, 4, (K, 128)).astype(np.float16)
    mem = ptxsim.GlobalMemory()
    maps = []
    for X, order, buf, swz in ((A, oa, (128, 64), sa), (B, ob, (64, 128), sb)):
        o0, o1 = order
        g = mem.from_array(np.ascontiguousarray(X if o0 == 1 else X.T))  # dimension o0 fastest
        m = mem.alloc(128, "map", 0)
        m.bytes[:] = np.frombuffer(ptxsim.encode_tensor_map(
            6, 2, g, [X.shape[o0], X.shape[o1]], [X.shape[o0] * 2], [min(swz // 2, buf[o0]), buf[o1]], [1, 1],
            swizzle={32: 1, 64: 2, 128: 3}[swz]), np.uint8)
        maps.append(m)
    ca = mem.from_array(np.full((128, 128), np.nan, np.float32), "C")
    launch(ptx, (1,), params=maps + [ca, K], memory=mem)
    got = ca.ndarray(np.float32, (128, 128))
    np.testing.assert_array_equal(got, A.astype(np.float64) @ B.astype(np.float64))


def test_hand_written_ptx_assembles(rng):
    """Every kernel above that ran cleanly is PTX ptxas takes for sm_90a (when ptxas is there)."""
    import shutil
    import subprocess
    import tempfile
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas") or \
        ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
    if not ptxas:
        pytest.skip("needs ptxas")
    if len(_RAN) < 10:  # run alone: run some kernels first
        test_wgmma(rng, *WGMMA[0])
        test_wgmma(rng, *WGMMA[10])
        test_mbarrier_phases_and_transactions()
        test_tma_load(rng, *TMA[0], "param")
        test_tma_store(rng)
        test_tma_to_wgmma_pipeline(rng)
        test_setmaxnreg_and_elect()
        test_warp_specialized_matmul(rng, 256, 3, 5)
        test_named_barrier_with_a_thread_count()
    with tempfile.TemporaryDirectory() as d:
        for i, ptx in enumerate(_RAN.values()):
            path = os.path.join(d, f"k{i}.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            p = subprocess.run([ptxas, "-arch=sm_90a", path, "-o", os.devnull], capture_output=True, text=True)
            assert p.returncode == 0, f"{p.stderr[:2000]}\n{ptx}"
