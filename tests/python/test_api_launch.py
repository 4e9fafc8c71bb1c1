"""The launch fast path (nereid._C.Dispatcher) on the CPU: stand-in tensors and a
launch that records its parameters instead of calling the driver."""
import os
import struct
import sys

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid import _C
from nereid.tools.tensor_descriptor import TensorDescriptor
import importlib

jitmod = importlib.import_module("nereid.runtime.jit")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import launch as launch_bench  # noqa: E402
from conftest import rel_err  # noqa: E402
from launch import FakeTensor, FakeDtype, FAKE_FP32  # noqa: E402


@triton.jit
def axpby(x_ptr, y_ptr, out_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + beta * y, mask=mask)


@triton.jit
def scalars(out_ptr, a, b, c, d, FLAG: tl.constexpr = False):
    tl.store(out_ptr, (a + b + c).to(tl.float32) + d)


FAKE_FP16 = FakeDtype("float16")


@pytest.fixture
def fake_api():
    # (the GPU mode of the suite replaces JITFunction.run: the fast path is tested behind it all the same)
    old = _C.set_api(tensor_type=FakeTensor, get_stream=lambda device: 0x5000 + device,
                     plain_run=jitmod.JITFunction.run)
    _C.register_dtype(FAKE_FP32, "fp32")
    _C.register_dtype(FAKE_FP16, "fp16")
    yield
    _C.set_api(tensor_type=old["tensor_type"], get_stream=old["get_stream"], plain_run=old["plain_run"])
    axpby._clear_fast_path()
    scalars._clear_fast_path()


def register(kernel, values, num_warps=4, num_stages=3, result="compiled"):
    key, objs, sigs, device, fast = _C.Dispatcher._specialize(kernel, values, num_warps, num_stages, 0)
    assert key is not None and fast
    entries = [s if s is not None else jitmod._constexpr_literal("k", n, v)
               for s, n, v in zip(sigs, kernel.arg_names, values)]
    compiled = kernel.compile(", ".join(entries), num_warps, num_stages)
    kernel._register(key, objs, compiled, device, True, result)
    return key


def f32(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def tensors(n=3, dtype=FAKE_FP32, device=0, base=0x10000):
    return [FakeTensor(base * (i + 1), dtype, device) for i in range(n)]


def test_hit_packs_parameters_and_uses_the_current_stream(fake_api):
    x, y, out = tensors(device=1)
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    assert axpby._fast_entries == 1
    r = axpby[(7, 2)](x, y, out, 100, 2.0, 0.5, BLOCK=128)
    assert r == "compiled"
    f = axpby._fake_launch()
    assert f["count"] == 1 and f["grid"] == (7, 2, 1) and f["device"] == 1 and f["stream"] == 0x5001
    assert f["params"] == (0x10000, 0x20000, 0x30000, 100, f32(2.0), f32(0.5))
    # other pointers and values of the same specialization: the same entry
    x2, y2, out2 = tensors(device=1, base=0x40000)
    axpby[lambda meta: (meta["n"] // meta["BLOCK"] + 1,)](x2, y2, out2, 300, -1.5, 3.0, BLOCK=128)
    f = axpby._fake_launch()
    assert f["count"] == 2 and f["grid"] == (3, 1, 1)
    assert f["params"] == (0x40000, 0x80000, 0xC0000, 300, f32(-1.5), f32(3.0))


def test_keyword_arguments_and_defaults_bind_like_python(fake_api):
    (out,) = tensors(1)
    register(scalars, (out, 5, 2**40, 2**63 + 5, 0.25, False))
    scalars[(1,)](out, d=0.25, c=2**63 + 5, b=2**40, a=5)
    f = scalars._fake_launch()
    assert f["count"] == 1
    assert f["params"] == (0x10000, 5, 2**40, 2**63 + 5, f32(0.25))


@triton.jit
def interleaved(x_ptr, bias_ptr, BLOCK: tl.constexpr, n, HAS_BIAS: tl.constexpr, out_ptr, scale, stride):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride, mask=offs < n)
    if HAS_BIAS:
        x += tl.load(bias_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * scale, mask=offs < n)


def test_constexprs_and_none_before_runtime_arguments_pack_by_position(fake_api):
    # Constexpr and None parameters between runtime ones: each runtime value goes
    # to its own kernel parameter (the matmul signature: a, b, c, bias=None, M, ...).
    x, out, bias = tensors(3, base=0x7000)
    try:
        register(interleaved, (x, None, 64, 100, False, out, 0.5, 3))
        interleaved[(2,)](x, None, 64, 100, False, out, 0.5, 3)
        f = interleaved._fake_launch()
        assert f["count"] == 1
        assert f["params"] == (0x7000, 100, 0xE000, f32(0.5), 3)
        register(interleaved, (x, bias, 64, 37, True, out, -2.0, 1))
        interleaved[(1,)](x, bias, BLOCK=64, n=37, HAS_BIAS=True, out_ptr=out, scale=-2.0, stride=1)
        f = interleaved._fake_launch()
        assert f["count"] == 2
        assert f["params"] == (0x7000, 0x15000, 37, 0xE000, f32(-2.0), 1)
        kernel = interleaved.compile("*fp32:16, *fp32:16, 64, i32, True, *fp32:16, fp32, i32:1", 4, 3)
        assert [a[1] for a in kernel.args] == ["x_ptr", "bias_ptr", "n", "out_ptr", "scale", "stride"]
        assert [a[3] for a in kernel.args] == [0, 1, 3, 5, 6, 7]
    finally:
        interleaved._clear_fast_path()


def test_a_new_specialization_misses(fake_api):
    x, y, out = tensors()
    base = register(axpby, (x, y, out, 100, 2.0, 0.5, 128))

    def key(*values, num_warps=4, num_stages=3):
        return _C.Dispatcher._specialize(axpby, values, num_warps, num_stages, 0)[0]

    assert key(*tensors(base=0x1000), 37, 1.0, 2.0, 128) == base
    differ = {
        "misaligned": key(FakeTensor(0x10008, FAKE_FP32), y, out, 100, 2.0, 0.5, 128),
        "dtype": key(FakeTensor(0x10000, FAKE_FP16), y, out, 100, 2.0, 0.5, 128),
        "device": key(*tensors(device=1), 100, 2.0, 0.5, 128),
        "n divisible by 16": key(x, y, out, 96, 2.0, 0.5, 128),
        "n equal to 1": key(x, y, out, 1, 2.0, 0.5, 128),
        "n int64": key(x, y, out, 2**33 + 1, 2.0, 0.5, 128),
        "alpha int": key(x, y, out, 100, 2, 0.5, 128),
        "constexpr": key(x, y, out, 100, 2.0, 0.5, 256),
        "constexpr bool": key(x, y, out, 100, 2.0, 0.5, True),
        "num_warps": key(x, y, out, 100, 2.0, 0.5, 128, num_warps=8),
        "num_stages": key(x, y, out, 100, 2.0, 0.5, 128, num_stages=2),
    }
    for what, k in differ.items():
        assert k is not None and k != base, what
    assert len(set(differ.values())) == len(differ)


def test_misses_and_other_launches_go_to_run(fake_api, monkeypatch):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    calls = []
    orig = jitmod.JITFunction.run  # the plain run, or the suite's GPU mode around it

    def spy(self, *args, grid, **kwargs):
        calls.append((args, grid, kwargs))
        return "python"

    # a hook that replaces run takes every launch, hits included
    monkeypatch.setattr(jitmod.JITFunction, "run", spy)
    assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"
    monkeypatch.setattr(jitmod.JITFunction, "run", orig)
    assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "compiled"
    # with the plain run in place, what the fast path does not handle goes to run
    n = axpby._fake_launch()["count"]

    def via_python(*a, grid=(1,), **kw):
        jitmod.JITFunction.run = spy
        _C.set_api(plain_run=spy)
        try:
            return axpby[grid](*a, **kw)
        finally:
            jitmod.JITFunction.run = orig
            _C.set_api(plain_run=orig)

    # each of these is a miss: the spy (installed as the plain run) sees it
    assert via_python(x, y, out, 97, 2.0, 0.5, BLOCK=64) == "python"          # another key
    assert via_python(x, y, out, 100, 2.0, 0.5, BLOCK=128, num_ctas=2) == "python"  # an option Python handles
    assert via_python(x, y, out, 100, 2.0, BLOCK=128) == "python"             # a missing argument
    assert via_python(x, y, out, 100, 2.0, 0.5, 128, 9) == "python"           # too many arguments
    assert via_python(x, y, out, 100, 2.0, 0.5, BLOCK=128, grid=(0,)) == "python"  # a zero grid
    assert via_python(x, y, out, 100, 2.0, 0.5, BLOCK=128, grid=(1, 70000)) == "python"  # past the grid limit
    monkeypatch.setenv("NEREID_INTERPRET", "1")
    assert via_python(x, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"
    monkeypatch.delenv("NEREID_INTERPRET")
    assert axpby._fake_launch()["count"] == n
    assert [c[1] for c in calls] == [(1,), (1,), (1,), (1,), (1,), (0,), (1, 70000), (1,)]
    assert calls[2][2]["num_ctas"] == 2 and calls[2][2]["BLOCK"] == 128
    axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128, num_ctas=1)  # the fast path takes num_ctas=1
    assert axpby._fake_launch()["count"] == n + 1


def test_grid_forms(fake_api):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    for grid, want in [((3,), (3, 1, 1)), (5, (5, 1, 1)), ([2, 3], (2, 3, 1)), ((2, 3, 4), (2, 3, 4)),
                       ((tl.constexpr(6),), (6, 1, 1)), (lambda m: (m["BLOCK"] // 64, 2), (2, 2, 1)),
                       (lambda m: m["num_warps"], (4, 1, 1))]:
        axpby[grid](x, y, out, 100, 2.0, 0.5, BLOCK=128)
        assert axpby._fake_launch()["grid"] == want, grid


def test_meta_dict_kept_by_a_grid_is_not_reused(fake_api):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    kept = []

    def grid(meta):
        kept.append(meta)
        return (1,)

    axpby[grid](x, y, out, 100, 2.0, 0.5, BLOCK=128)
    axpby[grid](x, y, out, 200, 2.0, 0.5, BLOCK=128)
    assert kept[0] is not kept[1] and kept[0]["n"] == 100 and kept[1]["n"] == 200
    assert kept[0]["num_warps"] == 4 and kept[0]["num_stages"] == 3


def test_c_signature_matches_python_signature(rng):
    """What the C key says of an argument is what the Python path compiles for."""
    import ml_dtypes

    arrays = [np.zeros(8, np.float32), np.zeros(9, np.float16)[1:], np.zeros(4, np.int64), np.zeros(3, np.uint8),
              np.zeros(4, ml_dtypes.bfloat16), np.zeros(4, np.bool_)]
    scalars_ = [0, 1, 16, 17, -16, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**63 - 1, 2**63, 2**64 - 1, True, False,
                0.5, float("inf"), -0.0]
    for v in arrays + scalars_:
        for name in ("x_ptr", "n"):
            jf = axpby if name == "x_ptr" else axpby
            i = jf.arg_names.index(name)
            values = [np.zeros(4, np.float32)] * 3 + [5, 1.0, 1.0, 128]
            values[i] = v
            py_text, _ = jf._signature_entry(i, name, v)  # registers the dtype
            _, _, sigs, _, _ = _C.Dispatcher._specialize(jf, tuple(values), 4, 3, 0)
            assert sigs is not None and sigs[i] == py_text, (v, sigs, py_text)


def test_bool_int_float_values_pack_by_kernel_dtype(fake_api):
    (out,) = tensors(1)
    register(scalars, (out, True, -3, 2**40, 1.5, True))
    scalars[(1,)](out, True, -3, 2**40, 1.5, FLAG=True)
    f = scalars._fake_launch()
    assert f["params"] == (0x10000, 1, (-3) & 0xFFFFFFFF, 2**40, f32(1.5))


@pytest.mark.skipif(bool(os.environ.get("NEREID_TEST_DEVICE")), reason="stand-in tensors: the suite's device mode replaces run")
def test_cpu_dispatch_benchmark_runs():
    args = type("Args", (), {"launches": 2000, "warmup": 10})
    machine, rows = launch_bench.run_cpu_dispatch(args)
    by = {r["system"]: r for r in rows}
    assert by["nereid"]["status"] == "ok" and 0 < by["nereid"]["median_us"] < 1000
    assert by["nereid desc"]["status"] == "ok" and 0 < by["nereid desc"]["median_us"] < 1000
    assert machine["cpu_dispatch"]


def test_interpreter_launch_returns_a_compiled_kernel(rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    k = axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128)
    assert isinstance(k, triton.CompiledKernel) and k.name == "axpby"
    np.testing.assert_allclose(out[:100], 2.0 * x + 0.5 * y, rtol=1e-6)
    assert np.isnan(out[100:]).all()
    if os.environ.get("NEREID_TEST_DEVICE") != "cuda":  # (there the same launch also runs on the GPU)
        assert axpby._fast_entries == 0  # host launches are never registered


@triton.jit
def staged(x_ptr, n, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in tl.range(0, 2, num_stages=num_stages):
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_parameter_named_like_an_option(fake_api):
    """num_stages: tl.constexpr is both the parameter and the launch option (Triton's fused softmax)."""
    x = np.zeros(8, np.float32)
    ck = staged.warmup(x, 8, BLOCK=8, num_stages=2, grid=(1,))
    assert ck.num_stages == 2
    ck[(1,)](x, 8, 8, 2)  # the compiled kernel, every argument positional
    assert (x == 2).all()
    staged[(1,)](x, 8, BLOCK=8, num_stages=2)
    assert (x == 4).all()
    # the C key: the parameter's value is the option's
    (t,) = tensors(1)
    k_kw = _C.Dispatcher._specialize(staged, (t, 8, 8, 2), 4, 2, 0)[0]
    register(staged, (t, 8, 8, 2), num_stages=2)
    staged[(1,)](t, 8, 8, 2)
    assert staged._fake_launch()["count"] == 1
    staged[(1,)](t, 8, BLOCK=8, num_stages=2)
    assert staged._fake_launch()["count"] == 2
    assert k_kw is not None
    staged._clear_fast_path()


def test_maxnreg(rng):
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128, maxnreg=64)  # the interpreter ignores it
    np.testing.assert_allclose(out[:100], 2.0 * x + 0.5 * y, rtol=1e-6)
    k = axpby.compile("*fp32:16, *fp32:16, *fp32:16, i32, fp32, fp32, 128", arch="sm_90", maxnreg=64)
    assert k is not axpby.compile("*fp32:16, *fp32:16, *fp32:16, i32, fp32, fp32, 128", arch="sm_90")
    with pytest.raises(ValueError, match="maxnreg must be a positive int"):
        axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128, maxnreg="x")


def test_enable_fp_fusion(rng, monkeypatch):
    x = rng.standard_normal(100).astype(np.float32)
    y = rng.standard_normal(100).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128, enable_fp_fusion=False)  # the interpreter rounds every step
    ref = 2.0 * x.astype(np.float64) + 0.5 * y.astype(np.float64)
    assert np.linalg.norm(out[:100] - ref) / np.linalg.norm(ref) < 1e-6
    sig = "*fp32:16, *fp32:16, *fp32:16, i32, fp32, fp32, 128"
    fused = axpby.compile(sig, arch="sm_90")
    plain = axpby.compile(sig, arch="sm_90", enable_fp_fusion=False)
    assert fused is not plain and fused is axpby.compile(sig, arch="sm_90", enable_fp_fusion=True)
    # Triton's default: ptxas may fuse the multiply into the add (no rounding modifier on either)
    assert "mul.f32" in fused.ptx and "add.f32" in fused.ptx and "mul.rn.f32" not in fused.ptx
    assert "mul.rn.f32" in plain.ptx and "add.rn.f32" in plain.ptx and "mul.f32" not in plain.ptx
    with pytest.raises(TypeError, match="enable_fp_fusion must be a bool"):
        axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128, enable_fp_fusion=1)
    monkeypatch.setenv("NEREID_DEFAULT_FP_FUSION", "0")
    assert jitmod._default_fp_fusion() is False
    monkeypatch.delenv("NEREID_DEFAULT_FP_FUSION")
    assert jitmod._default_fp_fusion() is True


# --- the readers of tensors, the stream, the launcher, the switches -------------------------------------------

def make_ctensor_type():
    """A tensor type whose readers are C descriptors, as torch.Tensor's are: dtype a
    getset (int.denominator: always 1, registered as fp32), data_ptr and get_device C
    methods without arguments (int.conjugate: the value; int.bit_length: 17 for
    0x1xxxx)."""

    class CTensor(int):
        dtype = int.denominator
        data_ptr = int.conjugate
        get_device = int.bit_length

    return CTensor


def launch_outcome(kernel, *args, grid=(1,), **kw):
    """'fast' when the fast path made the launch, else what run returned."""
    n = kernel._fake_launch()["count"]
    r = kernel[grid](*args, **kw)
    return "fast" if kernel._fake_launch()["count"] == n + 1 and r == "compiled" else r


@pytest.fixture
def spy_run():
    """JITFunction.run replaced by one that returns 'python' (installed as the plain run: misses reach it)."""
    orig = jitmod.JITFunction.run

    def spy(self, *args, grid, **kwargs):
        return "python"

    jitmod.JITFunction.run = spy
    old = _C.set_api(plain_run=spy)
    yield
    jitmod.JITFunction.run = orig
    _C.set_api(plain_run=old["plain_run"])


def test_c_descriptor_readers_and_c_stream_function(fake_api, spy_run):
    CTensor = make_ctensor_type()
    _C.set_api(tensor_type=CTensor, get_stream=abs)
    _C.register_dtype(1, "fp32")
    info = _C.fast_path_info()
    assert (info["dtype"], info["data_ptr"], info["get_device"], info["stream"]) == (
        "getset", "c-method", "c-method", "c-function")
    x, y, out = CTensor(0x10000), CTensor(0x10040), CTensor(0x1ff00)
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128, grid=(2,)) == "fast"
    f = axpby._fake_launch()
    assert f["device"] == 17 and f["stream"] == 17 and f["params"][:3] == (0x10000, 0x10040, 0x1ff00)
    # a misaligned pointer read the direct way is another key
    assert launch_outcome(axpby, CTensor(0x10008), y, out, 100, 2.0, 0.5, BLOCK=128) == "python"
    CTensor.unrelated = 1  # the type changed, its readers did not
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert _C.fast_path_info()["data_ptr"] == "c-method"
    # a method replaced on the type is seen at the next launch (the type's version changed)
    CTensor.data_ptr = lambda self: int(self) + 0x100
    assert _C.fast_path_info()["data_ptr"] == "python-method"
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["params"][:3] == (0x10100, 0x10140, 0x20000)
    # a C stream function whose value is not an address: the launch goes to Python
    _C.set_api(get_stream=chr)
    assert _C.fast_path_info()["stream"] == "c-function"
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"
    _C.set_api(get_stream=lambda device: 0x5000 + device)
    assert _C.fast_path_info()["stream"] == "call"
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["stream"] == 0x5000 + 17


def test_dlpack_exchange_table_reads_tensors_and_the_stream(fake_api, spy_run):
    """A tensor type with a DLPack exchange table (torch.Tensor from 2.10 on) is read
    through it: data + byte_offset, device and dtype in one C call, the stream from its
    current_work_stream; what it refuses is read through the methods."""
    CTensor = make_ctensor_type()
    CTensor.__dlpack_c_exchange_api__ = _C._stand_in_exchange()
    _C.set_api(tensor_type=CTensor, get_stream=abs, exchange=2)
    _C.register_dtype(1, "fp32")
    assert _C.fast_path_info()["tensors"] == "dlpack-exchange"
    assert _C.fast_path_info()["stream"] == "dlpack-exchange"
    x, y, out = CTensor(0x10000), CTensor(0x10040), CTensor(0x1ff00)
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    f = axpby._fake_launch()
    # byte_offset 0x10 shows the exchange read them; the stream is the table's
    assert f["params"][:3] == (0x10010, 0x10050, 0x1ff10) and f["device"] == 17 and f["stream"] == 0x7011
    # a tensor the table refuses (BufferError): its methods, another key (data 0, aligned: the same)
    assert launch_outcome(axpby, x, CTensor(0), out, 100, 2.0, 0.5, BLOCK=128) == "python"
    # a host tensor (odd: on the CPU) is no fast launch
    assert _C.Dispatcher._specialize(axpby, (x, CTensor(0x10001), out, 100, 2.0, 0.5, 128), 4, 3, 0)[3] == -2
    # a dtype the table gives (fp16 when v & 2) that no registered dtype has: Python
    h = CTensor(0x10002)
    assert launch_outcome(axpby, h, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"
    _C.register_dtype(FAKE_FP16, "fp16")
    assert _C.Dispatcher._specialize(axpby, (h, y, out, 100, 2.0, 0.5, 128), 4, 3, 0)[2][0] == "*fp16"
    # a stream the table cannot give: Python launches (and says why)
    far = CTensor(1 << 62)
    register(axpby, (far, far, far, 100, 2.0, 0.5, 128))
    assert launch_outcome(axpby, far, far, far, 100, 2.0, 0.5, BLOCK=128) == "python"
    # get_stream given alone: the stream from it, tensors still from the table
    _C.set_api(get_stream=abs)
    assert (_C.fast_path_info()["tensors"], _C.fast_path_info()["stream"]) == ("dlpack-exchange", "c-function")
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["stream"] == 17 and axpby._fake_launch()["params"][0] == 0x10010
    # exchange=0: the methods
    assert _C.set_api(exchange=0)["exchange"] == 1
    assert _C.fast_path_info()["tensors"] == "methods"
    assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["params"][:3] == (0x10000, 0x10040, 0x1ff00)
    # a table set on the type later is found with the readers (the type's version changed)
    _C.set_api(exchange=1)
    del CTensor.__dlpack_c_exchange_api__
    assert _C.fast_path_info()["tensors"] == "methods"
    CTensor.__dlpack_c_exchange_api__ = _C._stand_in_exchange()
    assert _C.fast_path_info()["tensors"] == "dlpack-exchange"
    # tables of versions without the non-owning view (before 1.2), or of another major version, are not used
    for version in ((1, 1), (2, 0), (0, 9)):
        CTensor.__dlpack_c_exchange_api__ = _C._stand_in_exchange(*version)
        assert _C.fast_path_info()["tensors"] == "methods", version
    CTensor.__dlpack_c_exchange_api__ = "not a capsule"
    assert _C.fast_path_info()["tensors"] == "methods"
    with pytest.raises(ValueError, match="exchange must be"):
        _C.set_api(exchange=3)


def test_dtypes_of_one_signature_name_share_a_key_code(fake_api):
    """Two dtype objects registered for one name (torch's and numpy's float32) key alike."""
    x, y, out = tensors()
    other = FakeDtype("float32 (another)")
    _C.register_dtype(other, "fp32")
    k1 = _C.Dispatcher._specialize(axpby, (x, y, out, 100, 2.0, 0.5, 128), 4, 3, 0)[0]
    x2, y2, out2 = tensors(dtype=other)
    k2 = _C.Dispatcher._specialize(axpby, (x2, y2, out2, 100, 2.0, 0.5, 128), 4, 3, 0)[0]
    assert k1 == k2


def test_python_readers_of_stand_in_tensors(fake_api):
    info = _C.fast_path_info()
    # FakeTensor: dtype an instance attribute, data_ptr and get_device Python methods
    assert (info["dtype"], info["data_ptr"], info["get_device"], info["stream"]) == (
        "getattr", "python-method", "python-method", "call")
    # a subclass of the tensor type: plain attribute lookups, the same key and values
    Sub = type("Sub", (FakeTensor,), {})
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    assert launch_outcome(axpby, Sub(0x20000, FAKE_FP32), y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["params"][:3] == (0x20000, 0x20000, 0x30000)


def test_launchers_are_reused_only_when_nobody_holds_them(fake_api):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    args = (x, y, out, 100, 2.0, 0.5)
    held = axpby[(3,)]
    other = axpby[(5,)]
    assert held is not other and held.grid == (3,) and other.grid == (5,) and held.fn is axpby
    held(*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (3, 1, 1)
    other(*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (5, 1, 1)
    held(*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (3, 1, 1)
    del held, other
    first = id(axpby[(1,)])
    assert id(axpby[(2,)]) == first  # made again in place
    assert axpby[(6, 2)].grid == (6, 2)
    axpby[(6, 2)](*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (6, 2, 1)
    # a list is read at every launch
    g = [2, 1]
    launcher = axpby[g]
    launcher(*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (2, 1, 1)
    g[0] = 4
    launcher(*args, BLOCK=128)
    assert axpby._fake_launch()["grid"] == (4, 1, 1)


def test_a_kernel_and_its_launcher_are_collected():
    import gc
    import weakref

    @triton.jit
    def one(x_ptr):
        tl.store(x_ptr, 1.0)

    one[(1,)]  # the kernel keeps its last launcher, which holds the kernel
    held = one[(2,)]
    ref = weakref.ref(one)
    del one
    gc.collect()
    assert ref() is not None and held.fn is ref()
    x = np.zeros(1, np.float32)
    held(x)
    assert x[0] == 1.0
    del held
    gc.collect()
    assert ref() is None


def test_switches_follow_the_environment(fake_api, spy_run, monkeypatch):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    args = (x, y, out, 100, 2.0, 0.5)
    monkeypatch.delenv("NEREID_INTERPRET", raising=False)
    assert launch_outcome(axpby, *args, BLOCK=128) == "fast"
    steps = [("NEREID_INTERPRET", "1", "python"), ("NEREID_LAUNCH_TEST_OTHER", "x", "python"),
             ("NEREID_INTERPRET", "0", "fast"), ("NEREID_INTERPRET", "1", "python"),
             ("NEREID_LAUNCH_TEST_OTHER", None, "python"), ("NEREID_INTERPRET", "", "fast"),
             ("NEREID_INTERPRET", "yes", "python"), ("NEREID_INTERPRET", None, "fast"),
             # registered launches are fused: without fusion by default, run compiles another kernel
             ("NEREID_DEFAULT_FP_FUSION", "0", "python"), ("NEREID_DEFAULT_FP_FUSION", "1", "fast"),
             ("NEREID_DEFAULT_FP_FUSION", "False", "python"), ("NEREID_DEFAULT_FP_FUSION", None, "fast")]
    for name, value, want in steps:
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
        assert launch_outcome(axpby, *args, BLOCK=128) == want, (name, value)
        assert launch_outcome(axpby, *args, BLOCK=128) == want, (name, value)  # (read from the copy)


def test_stand_in_device_takes_host_tensors(fake_api):
    x, y, out = tensors(device=-1)
    values = (x, y, out, 100, 2.0, 0.5, 128)
    assert _C.Dispatcher._specialize(axpby, values, 4, 3, 0)[4] is False  # host memory: not the fast path
    old = _C.set_api(stand_in_device=2)
    try:
        key, objs, sigs, device, fast = _C.Dispatcher._specialize(axpby, values, 4, 3, 0)
        assert fast and device == 2
        register(axpby, values)
        assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
        assert axpby._fake_launch()["device"] == 2
    finally:
        _C.set_api(stand_in_device=old["stand_in_device"])
    assert old["stand_in_device"] == -1
    with pytest.raises(ValueError, match="stand_in_device"):
        _C.set_api(stand_in_device=-5)


def test_int_and_float_subclasses_key_like_ints_and_floats(fake_api):
    import enum

    class Size(enum.IntEnum):
        N = 96

    class Scale(float):
        pass

    x, y, out = tensors()

    def key(*values):
        return _C.Dispatcher._specialize(axpby, values, 4, 3, 0)[0]

    assert key(x, y, out, Size.N, Scale(2.0), 0.5, 128) == key(x, y, out, 96, 2.0, 0.5, 128)
    register(axpby, (x, y, out, 96, 2.0, 0.5, 128))
    assert launch_outcome(axpby, x, y, out, Size.N, Scale(-1.0), 0.5, BLOCK=128) == "fast"
    assert axpby._fake_launch()["params"][3:5] == (96, f32(-1.0))


def test_stop_after_each_stage(fake_api):
    x, y, out = tensors()
    register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
    assert _C.FAST_STAGES[0] == "launch" and len(_C.FAST_STAGES) == 7
    n = axpby._fake_launch()["count"]
    try:
        for i in range(1, len(_C.FAST_STAGES)):
            axpby._fast_stop_after = i
            assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) is None
        assert axpby._fake_launch()["count"] == n
        with pytest.raises(ValueError, match="_fast_stop_after"):
            axpby._fast_stop_after = len(_C.FAST_STAGES)
    finally:
        axpby._fast_stop_after = 0
    assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "compiled"
    assert axpby._fake_launch()["count"] == n + 1


def test_torch_tensors_on_the_fast_path(fake_api):
    """torch.Tensor's readers are its C descriptors; host tensors stand in for CUDA ones."""
    torch = pytest.importorskip("torch")
    jitmod._hook_torch()
    _C.set_api(tensor_type=torch.Tensor, get_stream=abs, stand_in_device=0)
    try:
        info = _C.fast_path_info()
        assert (info["dtype"], info["data_ptr"], info["get_device"], info["stream"]) == (
            "getset", "c-method", "c-method", "c-function")
        # torch's DLPack exchange table (2.10 and later) reads its tensors
        exchange = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
        assert info["tensors"] == ("dlpack-exchange" if exchange else "methods")
        x, y, out = (torch.zeros(128) for _ in range(3))
        register(axpby, (x, y, out, 100, 2.0, 0.5, 128))
        assert launch_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
        assert axpby._fake_launch()["params"][:3] == (x.data_ptr(), y.data_ptr(), out.data_ptr())
        # a view at an offset: its own data pointer (4 bytes in: another key, not aligned)
        v = torch.zeros(256)[1:129]
        key = _C.Dispatcher._specialize(axpby, (v, y, out, 100, 2.0, 0.5, 128), 4, 3, 0)
        assert key[2][0] == "*fp32"
        register(axpby, (v, y, out, 100, 2.0, 0.5, 128))
        assert launch_outcome(axpby, v, y, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
        assert axpby._fake_launch()["params"][0] == v.data_ptr()
        # every dtype keys as its signature name, as the methods read it
        for dt, name in jitmod._TORCH_DTYPES.items():
            t = torch.zeros(16, dtype=getattr(torch, dt.split(".")[1]))
            sigs = _C.Dispatcher._specialize(axpby, (t, y, out, 100, 2.0, 0.5, 128), 4, 3, 0)[2]
            assert sigs[0] == f"*{name}:16", (dt, sigs[0])
        p = torch.nn.Parameter(torch.zeros(128))  # a subclass: plain attribute lookups
        assert launch_outcome(axpby, x, p, out, 100, 2.0, 0.5, BLOCK=128) == "fast"
        assert axpby._fake_launch()["params"][1] == p.data_ptr()
        h = torch.zeros(128, dtype=torch.float16)  # another dtype: another key
        assert _C.Dispatcher._specialize(axpby, (h, y, out, 100, 2.0, 0.5, 128), 4, 3, 0)[2][0].startswith("*fp16")
    finally:
        _C.set_api(stand_in_device=-1)


def test_python_path_reads_the_raw_stream(monkeypatch):
    """JITFunction.run's stream (the launches the fast path leaves to Python): torch's raw
    current stream when torch has the function, else current_stream(); 0 without torch."""
    import types

    cuda = types.SimpleNamespace(current_stream=lambda d: types.SimpleNamespace(cuda_stream=0x900 + d))
    fake = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 0x700 + d), cuda=cuda)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert jitmod._current_stream(1) == 0x701
    fake._C = types.SimpleNamespace()
    assert jitmod._current_stream(2) == 0x902
    monkeypatch.delitem(sys.modules, "torch")
    assert jitmod._current_stream(0) == 0


# --- warmups answered in C ---------------------------------------------------------------------------------------

@pytest.fixture
def warm_api():
    """Warmups of the plain run (the suite's device modes replace run: their run is the plain one here)."""
    old = _C.set_api(plain_run=jitmod.JITFunction.run)
    yield
    _C.set_api(plain_run=old["plain_run"])
    for k in (axpby, staged, softmax_rows):
        k._clear_fast_path()


def warm_outcome(kernel, *args, **kw):
    """(the CompiledKernel, whether the warmup was answered in C)."""
    hits = kernel._warm_hits
    ck = kernel.warmup(*args, **kw)
    return ck, kernel._warm_hits == hits + 1


def test_a_warmup_hit_returns_the_compiled_kernel_of_the_first(warm_api, rng, monkeypatch):
    x, y = (rng.standard_normal(100).astype(np.float32) for _ in range(2))
    out = np.full(128, np.nan, np.float32)
    args = (x, y, out, 100, 2.0, 0.5)
    first, hit = warm_outcome(axpby, *args, BLOCK=128, num_warps=2, grid=(1,))
    assert not hit and axpby._warm_entries >= 1
    again, hit = warm_outcome(axpby, *args, BLOCK=128, num_warps=2, grid=(1,))
    assert hit and again is first
    # other arrays, scalars and grid of the same specialization: the same kernel
    x2 = np.zeros(64, np.float32)
    assert warm_outcome(axpby, x2, y, out, 37, -1.0, 3.0, BLOCK=128, num_warps=2, grid=(7, 2)) == (first, True)
    assert warm_outcome(axpby, x2, y, out, 37, -1.0, 3.0, 128, num_warps=2) == (first, True)  # positional BLOCK
    # what run makes for the same call (NEREID_FAST_LAUNCH=0 takes every warmup there): equal to the hit's
    monkeypatch.setenv("NEREID_FAST_LAUNCH", "0")
    slow, hit = warm_outcome(axpby, *args, BLOCK=128, num_warps=2, grid=(1,))
    monkeypatch.delenv("NEREID_FAST_LAUNCH")
    assert not hit and slow is not first and type(slow) is type(first)
    for name in ("name", "signature", "num_warps", "num_stages", "maxnreg", "arch", "device", "n_regs", "n_spills"):
        assert getattr(slow, name) == getattr(first, name), name
    assert slow.metadata._asdict() == first.metadata._asdict()
    assert slow.kernel is first.kernel  # (one compilation per specialization)
    # what programs read of it is computed once
    first._init_handles()
    assert first.metadata is first.metadata and first.n_regs == jitmod.ASSUMED_REGS_PER_THREAD
    assert np.isnan(out).all()  # warmups do not launch


def test_warmups_of_another_specialization_miss(warm_api, monkeypatch):
    x, y, out = (np.zeros(128, np.float32) for _ in range(3))
    base, _ = warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128, grid=(1,))
    assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128)[1]
    h = np.zeros(128, np.float16)
    variants = {
        "dtype": ((h, y, out, 100, 2.0, 0.5), {"BLOCK": 128}, "*fp16"),
        "misaligned": ((np.zeros(129, np.float32)[1:], y, out, 100, 2.0, 0.5), {"BLOCK": 128}, "*fp32,"),
        "n divisible by 16": ((x, y, out, 96, 2.0, 0.5), {"BLOCK": 128}, "i32:16"),
        "n equal to 1": ((x, y, out, 1, 2.0, 0.5), {"BLOCK": 128}, "i32:1"),
        "alpha int": ((x, y, out, 100, 2, 0.5), {"BLOCK": 128}, "i32, fp32, 128"),
        "constexpr": ((x, y, out, 100, 2.0, 0.5), {"BLOCK": 64}, ", 64"),
        "num_warps": ((x, y, out, 100, 2.0, 0.5), {"BLOCK": 128, "num_warps": 8}, None),
        "num_stages": ((x, y, out, 100, 2.0, 0.5), {"BLOCK": 128, "num_stages": 1}, None),
        "maxnreg": ((x, y, out, 100, 2.0, 0.5), {"BLOCK": 128, "maxnreg": 64}, None),
    }
    seen = []
    for what, (args, kw, sig) in variants.items():
        ck, hit = warm_outcome(axpby, *args, **kw)
        assert not hit and ck is not base, what
        assert ck.num_warps == kw.get("num_warps", 4) and ck.num_stages == kw.get("num_stages", 3), what
        assert ck.maxnreg == kw.get("maxnreg"), what
        if sig:
            assert sig in ck.signature and ck.signature != base.signature, what
        assert warm_outcome(axpby, *args, **kw) == (ck, True), what  # its own key from now on
        seen.append(ck)
    assert len({id(c) for c in seen}) == len(seen)
    # the switches run reads: the interpreter, the GPU target, fma contraction
    for name, value in (("NEREID_INTERPRET", "1"), ("NEREID_ARCH", "sm_80"), ("NEREID_DISABLE_HOPPER", "1"),
                        ("NEREID_DISABLE_TMA", "1"), ("NEREID_DEFAULT_FP_FUSION", "0")):
        monkeypatch.setenv(name, value)
        ck, hit = warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128)
        assert not hit and ck is not base and ck.signature == base.signature, name
        assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == (ck, True), name
        monkeypatch.delenv(name)
        assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == (base, True), name
    # enable_fp_fusion given: run's (the C key does not have it), never registered
    entries = axpby._warm_entries
    for _ in range(2):
        ck, hit = warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128, enable_fp_fusion=False)
        assert not hit and ck is not base and ck.options["enable_fp_fusion"] is False
    assert axpby._warm_entries == entries
    assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == (base, True)
    # arrays run refuses are refused at every warmup
    with pytest.raises(TypeError, match="negative strides"):
        axpby.warmup(np.zeros(256, np.float32)[::-2], y, out, 100, 2.0, 0.5, BLOCK=128)
    with pytest.raises(TypeError, match="negative strides"):
        axpby.warmup(np.zeros(256, np.float32)[::-2], y, out, 100, 2.0, 0.5, BLOCK=128)
    with pytest.raises(TypeError, match="warmup"):
        axpby.warmup(x, y, out, 100, 2.0, 0.5, BLOCK=128, warmup=True)
    axpby._clear_fast_path()
    assert axpby._warm_entries == 0
    assert not warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128)[1]


def test_warmups_of_parameters_named_like_options(warm_api):
    """num_stages: tl.constexpr is the parameter and the option; warmup binds it like a launch."""
    x = np.zeros(8, np.float32)
    ck2, _ = warm_outcome(staged, x, 8, BLOCK=8, num_stages=2, num_warps=1, grid=(1,))
    assert ck2.num_stages == 2 and ck2.num_warps == 1 and ck2.signature.endswith("8, 2")
    assert warm_outcome(staged, x, 8, BLOCK=8, num_stages=2, num_warps=1) == (ck2, True)
    assert warm_outcome(staged, x, 8, 8, 2, num_warps=1) == (ck2, True)  # positional
    ck3, hit = warm_outcome(staged, x, 8, BLOCK=8, num_stages=3, num_warps=1)
    assert not hit and ck3.num_stages == 3 and ck3.signature.endswith("8, 3")
    # the parameter given positionally and the option apart: run's way (the option is the option)
    ck, hit = warm_outcome(staged, x, 8, 8, 2, num_stages=4, num_warps=1)
    assert not hit and ck.num_stages == 4 and ck.signature.endswith("8, 2")
    # the compiled kernel launches with its options: here the parameter gives num_stages
    ck2[(1,)](x, 8, 8, 2)
    assert (x == 2).all()


@triton.jit
def softmax_rows(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                 num_stages: tl.constexpr):
    for r in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=num_stages):
        cols = tl.arange(0, BLOCK)
        v = tl.load(in_ptr + r * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out_ptr + r * out_stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def tutorial_softmax(x, programs=3):
    """Triton's fused-softmax tutorial: warmup and the compiled kernel's figures at every call."""
    n_rows, n_cols = x.shape
    block = triton.next_power_of_2(n_cols)
    y = np.full_like(x, np.nan)
    k = softmax_rows.warmup(y, x, x.strides[0] // 4, y.strides[0] // 4, n_rows, n_cols, BLOCK=block, num_stages=2,
                            num_warps=4, grid=(1,))
    k._init_handles()
    assert k.n_regs > 0 and k.metadata.shared >= 0
    k[(min(programs, n_rows), 1, 1)](y, x, x.strides[0] // 4, y.strides[0] // 4, n_rows, n_cols, block, 2)
    return y, k


def test_warmup_then_compiled_launch_on_the_interpreter(warm_api, rng):
    cases = [(7, 50), (5, 50), (9, 70), (7, 50)]
    kernels = []
    for rows, cols in cases:
        x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
        hits = softmax_rows._warm_hits
        y, k = tutorial_softmax(x)
        kernels.append((k, softmax_rows._warm_hits > hits))
        ref = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        ref /= ref.sum(axis=1, keepdims=True)
        assert rel_err(y, ref) < 1e-5, (rows, cols)
    # (7, 50) compiles; (5, 50) is the same specialization; 70 columns: another block; (7, 50) again
    assert [hit for _k, hit in kernels] == [False, True, False, True]
    assert kernels[1][0] is kernels[0][0] and kernels[3][0] is kernels[0][0] and kernels[2][0] is not kernels[0][0]


def test_compiled_kernel_launches_through_the_fast_path(fake_api, spy_run):
    x, y, out = tensors()
    values = (x, y, out, 100, 2.0, 0.5, 128)
    register(axpby, values, num_warps=2, num_stages=1)
    sig = ", ".join(s if s is not None else "128" for s in _C.Dispatcher._specialize(axpby, values, 2, 1, 0)[2])
    ck = jitmod.CompiledKernel(axpby, axpby.compile(sig, 2, 1), sig, {"num_warps": 2, "num_stages": 1}, None, None)
    n = axpby._fake_launch()["count"]
    assert ck[(3,)](x, y, out, 100, 2.0, 0.5, 128) == "compiled"  # with the compiled kernel's options
    assert axpby._fake_launch()["count"] == n + 1 and axpby._fake_launch()["grid"] == (3, 1, 1)
    assert ck[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "compiled"
    assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"  # (num_warps 4: another key)
    assert ck[(1,)](x, y, out, 100, 2.0, 0.5, 128, num_warps=4) == "python"  # a keyword wins
    held = ck[(2,)]
    assert axpby[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128) == "python"  # (a plain launcher: no options)
    assert held(x, y, out, 100, 2.0, 0.5, 128) == "compiled" and axpby._fake_launch()["grid"] == (2, 1, 1)
    assert axpby._fake_launch()["count"] == n + 3


def test_compiled_kernel_misses_pass_its_options_to_run(monkeypatch):
    calls = []

    def spy(self, *args, grid, **kwargs):
        calls.append((grid, kwargs))
        return "python"

    monkeypatch.setattr(jitmod.JITFunction, "run", spy)
    x = np.zeros(8, np.float32)
    kernel = staged.compile("*fp32:16, i32:16, 8, 2", 2, 2)
    ck = jitmod.CompiledKernel(staged, kernel, "*fp32:16, i32:16, 8, 2", {"num_warps": 2, "num_stages": 2,
                                                                         "maxnreg": 40}, None, None)
    assert ck[(4,)](x, 8, 8, 2) == "python"
    assert ck[(5,)](x, 8, 8, 2, num_warps=8) == "python"
    kernel = axpby.compile("*fp32:16, *fp32:16, *fp32:16, i32, fp32, fp32, 128", 8, 1)
    ck = jitmod.CompiledKernel(axpby, kernel, "", {"num_warps": 8, "num_stages": 1}, None, None)
    assert ck[(6,)](x, x, x, 8, 1.0, 1.0, BLOCK=128) == "python"
    ck = jitmod.CompiledKernel(axpby, kernel, "", {"num_warps": 8, "num_stages": 1, "enable_fp_fusion": False},
                               None, None)
    assert ck[(7,)](x, x, x, 8, 1.0, 1.0, BLOCK=128) == "python"
    # staged: num_stages is a parameter (it gives the option), maxnreg and num_warps come from the kernel
    assert calls == [((4,), {"num_warps": 2, "maxnreg": 40}), ((5,), {"num_warps": 8, "maxnreg": 40}),
                     ((6,), {"BLOCK": 128, "num_warps": 8, "num_stages": 1}),
                     ((7,), {"BLOCK": 128, "enable_fp_fusion": False, "num_warps": 8, "num_stages": 1})]
    with pytest.raises(ValueError, match="num_warps"):
        axpby._launcher((1,), -1, 3, None)


def test_warmup_keys_of_stand_in_tensors(fake_api, warm_api):
    """Warmups registered for stand-in tensors (no run: no device) are answered like any other; keys
    that do not say everything run reads are not registered."""
    x, y, out = tensors()
    values = (x, y, out, 100, 2.0, 0.5, 128)
    assert axpby._register_warmup(values, 4, 3, 0, "compiled") is True
    assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == ("compiled", True)
    assert warm_outcome(axpby, *values) == ("compiled", True)
    # host tensors of the tensor type: not registered (other devices than the CPU read as host memory)
    hx, hy, hout = tensors(device=-1)
    assert axpby._register_warmup((hx, hy, hout, 100, 2.0, 0.5, 128), 4, 3, 0, "host") is False
    # host tensors standing in for device 0 are not the tensors of device 0
    old = _C.set_api(stand_in_device=0)
    try:
        assert axpby._register_warmup((hx, hy, hout, 100, 2.0, 0.5, 128), 4, 3, 0, "stand-in") is True
        assert warm_outcome(axpby, hx, hy, hout, 100, 2.0, 0.5, BLOCK=128) == ("stand-in", True)
        assert warm_outcome(axpby, x, y, out, 100, 2.0, 0.5, BLOCK=128) == ("compiled", True)
    finally:
        _C.set_api(stand_in_device=old["stand_in_device"])

    class CudaArray:  # the CUDA array interface: its device is not in the key
        dtype = np.dtype(np.float32)

        def __init__(self, addr):
            self.__cuda_array_interface__ = {"data": (addr, False), "shape": (128,), "typestr": "<f4", "version": 3}

    jitmod._C.register_dtype(np.dtype(np.float32), "fp32")
    a = CudaArray(0x10000)
    assert _C.Dispatcher._specialize(axpby, (a, a, a, 100, 2.0, 0.5, 128), 4, 3, 0)[0] is not None
    assert axpby._register_warmup((a, a, a, 100, 2.0, 0.5, 128), 4, 3, 0, "cai") is False


def test_hooks_that_replace_run_take_every_warmup(warm_api, monkeypatch):
    x = np.zeros(8, np.float32)
    ck, _ = warm_outcome(staged, x, 8, BLOCK=8, num_stages=2)
    assert warm_outcome(staged, x, 8, BLOCK=8, num_stages=2) == (ck, True)
    calls = []

    def spy(self, *args, grid, **kwargs):
        calls.append((args, grid, kwargs))
        return "python"

    monkeypatch.setattr(jitmod.JITFunction, "run", spy)
    assert warm_outcome(staged, x, 8, BLOCK=8, num_stages=2) == ("python", False)
    assert warm_outcome(staged, x, 8, BLOCK=8, num_stages=2, grid=(3,)) == ("python", False)
    assert calls == [((x, 8), (1,), {"BLOCK": 8, "num_stages": 2, "warmup": True}),
                     ((x, 8), (3,), {"BLOCK": 8, "num_stages": 2, "warmup": True})]


def test_a_kernel_with_warmups_is_collected(warm_api):
    import gc
    import weakref

    @triton.jit
    def one(x_ptr):
        tl.store(x_ptr, 1.0)

    x = np.zeros(1, np.float32)
    ck = one.warmup(x)
    assert one.warmup(x) is ck and one._warm_entries == 1
    ref = weakref.ref(one)
    del one, ck
    gc.collect()
    assert ref() is None


# --- host tensor descriptors and tuples on the fast path ---------------------------------------------------------

class TorchDtype:
    """A stand-in torch dtype: str() gives torch's name, which run's _buffer_of looks up."""

    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __str__(self):
        return "torch." + self.name


T_FP32, T_FP16 = TorchDtype("float32", 4), TorchDtype("float16", 2)


class TorchLike(FakeTensor):
    """A stand-in tensor that run reads too (strides, element size, device): the slow
    path's signature and runtime values can be compared with the fast path's."""

    def __init__(self, ptr, dtype=T_FP32, device=0, shape=(64, 64)):
        super().__init__(ptr, dtype, device)
        self.shape = tuple(shape)

    def stride(self):
        st, acc = [], 1
        for n in reversed(self.shape):
            st.append(acc)
            acc *= n
        return tuple(reversed(st))

    def element_size(self):
        return self.dtype.itemsize

    @property
    def device(self):
        import types
        return types.SimpleNamespace(type="cuda" if self._device >= 0 else "cpu", index=self._device)


# Triton's host descriptor is a record of these five fields; run takes any class named TensorDescriptor.
TritonDescriptor = launch_bench.FakeDescriptor


@pytest.fixture
def desc_api(fake_api):
    _C.register_dtype(T_FP32, "fp32")
    _C.register_dtype(T_FP16, "fp16")
    yield
    for k in (desc_mix, desc_nested):
        k._clear_fast_path()


@triton.jit
def desc_mix(x_desc, alpha, y_desc, BM: tl.constexpr, out_desc, pair, BN: tl.constexpr):
    om = tl.program_id(0) * BM
    x = x_desc.load([om, 0])
    y = y_desc.load([om, 0])
    out_desc.store([om, 0], alpha * x + y * pair[1] + pair[0])


@triton.jit
def desc_nested(args, out_ptr, n, BLOCK: tl.constexpr):
    (a_desc, (scale, shift)), flag = args
    offs = tl.arange(0, BLOCK)
    x = a_desc.load([0]).to(tl.float32)
    if flag:
        x = x * scale
    tl.store(out_ptr + offs, x + shift, mask=offs < n)


def desc(base, shape, block, padding="zero", cls=TensorDescriptor, strides=None):
    if strides is None:
        strides = [1]
        for n in reversed(shape[1:]):
            strides.insert(0, strides[0] * n)
    return cls(base, list(shape), strides, list(block), padding)


def specialize(kernel, values, num_warps=4, num_stages=3):
    return _C.Dispatcher._specialize(kernel, tuple(values), num_warps, num_stages, 0)


def slow_signature(kernel, values):
    return [kernel._signature_entry(i, n, v)[0] for i, (n, v) in enumerate(zip(kernel.arg_names, values))]


def mix_values(base=0x10000, dtype=T_FP32, block=(16, 64), padding="zero", cls=TensorDescriptor, device=0,
               shape=(64, 64), pair=(3, 0.5)):
    x, y, out = (TorchLike(base * (i + 1), dtype, device, shape) for i in range(3))
    return (desc(x, shape, block, cls=cls), 2.0, desc(y, shape, block, padding, TritonDescriptor),
            block[0], desc(out, shape, block, cls=cls), pair, block[1])


def test_descriptor_keys_and_signatures(desc_api):
    base = mix_values()
    key, _objs, sigs, device, fast = specialize(desc_mix, base)
    assert key is not None and fast and device == 0
    assert sigs == ["tensordesc<fp32[16, 64]>", "fp32", "tensordesc<fp32[16, 64]>", None, "tensordesc<fp32[16, 64]>",
                    "(i32, fp32)", None]
    assert [s for s in sigs if s is not None] == [t for t, s in zip(slow_signature(desc_mix, base), sigs)
                                                  if s is not None]
    # other bases, sizes, strides and scalars of the same specialization: the same key
    same = mix_values(base=0x40000, shape=(100, 64), pair=(-7, 1.5))
    assert specialize(desc_mix, same)[0] == key
    strided = list(base)
    strided[0] = desc(base[0].base, [48, 64], [16, 64], strides=[128, 1])
    assert specialize(desc_mix, strided)[0] == key
    differ = {
        "dtype": mix_values(dtype=T_FP16),
        "block": mix_values(block=(32, 64)),
        "padding": mix_values(padding="nan"),
        "class": mix_values(cls=TritonDescriptor),
        "device": mix_values(device=1),
        "tuple element": mix_values(pair=(3, 1)),
    }
    rank1 = list(base)
    rank1[0] = desc(base[0].base, [4096], [64])
    differ["rank"] = tuple(rank1)
    for what, values in differ.items():
        k, _objs, sigs, _dev, _fast = specialize(desc_mix, values)
        assert k is not None and k != key, what
        assert sigs[:3] + sigs[4:6] == [t for t, s in zip(slow_signature(desc_mix, values), sigs)
                                        if s is not None], what
    assert len({specialize(desc_mix, v)[0] for v in differ.values()}) == len(differ)
    assert specialize(desc_mix, mix_values(padding="nan"))[2][2] == "tensordesc<fp32[16, 64], nan>"


def test_tuple_signatures_match_the_slow_path(desc_api):
    t = TorchLike(0x10000)
    d = desc(TorchLike(0x20000, T_FP16), [4096], [128], "nan", TritonDescriptor)
    cases = [((d, (2.0, 5)), True), ((d, (0.5, 2**40)), False), ((desc(t, [4096], [256]), (16, 1)), 7),
             ((d, (1.0, 0.0)), 2.5), ((d, (t, d)), t)]
    keys = set()
    for args in cases:
        values = (args, t, 100, 128)
        k, _objs, sigs, _dev, fast = specialize(desc_nested, values)
        assert k is not None and fast, args
        assert sigs[:3] == slow_signature(desc_nested, values)[:3], args
        keys.add(k)
    assert len(keys) == len(cases)
    assert specialize(desc_nested, (((d, (2.0, 5)), True), t, 100, 128))[2][0] == \
        "((tensordesc<fp16[128], nan>, (fp32, i32)), i1)"
    one = specialize(desc_nested, ((t,), t, 100, 128))
    assert one[2][0] == "(*fp32:16,)" == slow_signature(desc_nested, ((t,), t, 100, 128))[0]


def fake_registered(kernel, values, result="compiled"):
    key, objs, sigs, device, fast = specialize(kernel, values)
    assert key is not None and fast
    sig = ", ".join(s if s is not None else jitmod._constexpr_literal("k", n, v)
                    for s, n, v in zip(sigs, kernel.arg_names, values))
    compiled = kernel.compile(sig, 4, 3)
    kernel._register(key, objs, compiled, device, True, result)
    return compiled


def slow_params(kernel, compiled, values):
    """The parameters run would pass: its runtime values in the kernel's argument order, at their sizes."""
    bound = kernel._bind(values, {})
    _sig, rt, _key, _objs, _fast = kernel._specialize(bound, (4, 3, 0))
    bits = {"i32": 32, "i64": 64, "fp32": 32, "i1": 1}
    out = []
    for kind, name, dt, _pi in compiled.args:
        v = rt[name]
        if kind == "buffer":
            out.append(v[0])
        elif dt == "fp32":
            out.append(f32(v))
        else:
            out.append(int(v) & ((1 << bits[dt]) - 1))
    return tuple(out)


def test_descriptor_launches_pack_like_the_slow_path(desc_api):
    values = mix_values()
    compiled = fake_registered(desc_mix, values)
    names = [a[1] for a in compiled.args]
    assert names[:6] == ["x_desc.base", "x_desc.shape.0", "x_desc.shape.1", "x_desc.strides.0", "x_desc.strides.1",
                         "alpha"]
    assert names[-2:] == ["pair.0", "pair.1"]
    for vals in (values, mix_values(base=0x70000, shape=(1000, 64), pair=(-9, 0.25))):
        n = desc_mix._fake_launch()["count"]
        assert desc_mix[(4,)](*vals[:3], BM=16, out_desc=vals[4], pair=vals[5], BN=64) == "compiled"
        f = desc_mix._fake_launch()
        assert f["count"] == n + 1 and f["grid"] == (4, 1, 1)
        assert f["params"] == slow_params(desc_mix, compiled, vals)
    # sizes and strides read at each launch: a view of other strides
    vals = list(values)
    vals[2] = desc(TorchLike(0x90000), [30, 40], [16, 64], "zero", TritonDescriptor, strides=[200, 1])
    desc_mix[(1,)](*vals)
    assert desc_mix._fake_launch()["params"][6:11] == (0x90000, 30, 40, 200, 1)
    assert desc_mix._fake_launch()["params"] == slow_params(desc_mix, compiled, vals)
    # nested tuples with a descriptor inside
    t = TorchLike(0x10000)
    nested = (((desc(TorchLike(0x20000, T_FP16), [4096], [128], "nan"), (2.5, -4)), True), t, 100, 128)
    compiled = fake_registered(desc_nested, nested)
    desc_nested[(2,)](*nested)
    assert [a[1] for a in compiled.args] == ["args.0.0.base", "args.0.0.shape.0", "args.0.0.strides.0",
                                             "args.0.1.0", "args.0.1.1", "args.1", "out_ptr", "n"]
    assert desc_nested._fake_launch()["params"] == slow_params(desc_nested, compiled, nested) == (
        0x20000, 4096, 1, f32(2.5), (-4) & 0xFFFFFFFF, 1, 0x10000, 100)


def test_unusual_descriptors_go_to_run(desc_api, spy_run):
    values = mix_values()
    fake_registered(desc_mix, values)
    assert launch_outcome(desc_mix, *values, grid=(2,)) == "fast"
    t = TorchLike(0x40000)

    def with_x(d):
        v = list(values)
        v[0] = d
        return tuple(v)

    unusual = {
        "numpy base": desc(np.zeros((64, 64), np.float32), [64, 64], [16, 64]),
        "host tensor": desc(TorchLike(0x40000, device=-1), [64, 64], [16, 64]),
        "size over i32": desc(t, [2**31, 64], [16, 64]),
        "size zero": desc(t, [0, 64], [16, 64], cls=TritonDescriptor),
        "negative stride": desc(t, [64, 64], [16, 64], strides=[-64, 1], cls=TritonDescriptor),
        "stride over i64": desc(t, [64, 64], [16, 64], strides=[2**63, 1], cls=TritonDescriptor),
        "last stride": desc(t, [64, 64], [16, 64], strides=[128, 2], cls=TritonDescriptor),
        "padding": desc(t, [64, 64], [16, 64], padding="inf", cls=TritonDescriptor),
        "block not a power of two": desc(t, [64, 64], [16, 48], cls=TritonDescriptor),
        "rank mismatch": desc(t, [64, 64], [16], strides=[64, 1], cls=TritonDescriptor),
        "rank 6": desc(t, [2] * 6, [2] * 6, cls=TritonDescriptor),
        "numpy ints": desc(t, [np.int64(64), 64], [16, 64], cls=TritonDescriptor),
        "unknown dtype": desc(TorchLike(0x40000, TorchDtype("complex64", 8)), [64, 64], [16, 64]),
        "no block_shape": type("TensorDescriptor", (), {"base": t, "shape": [64], "strides": [1]})(),
    }
    for what, d in unusual.items():
        key, _objs, _sigs, _dev, fast = specialize(desc_mix, with_x(d))
        assert key is None or (what == "host tensor" and not fast), what
        assert launch_outcome(desc_mix, *with_x(d)) == "python", what
    deep = 1
    for _ in range(10):
        deep = (deep,)
    for what, pair in {"None inside": (3, None), "str inside": (3, "a"), "empty": (), "nested deep": (deep, 2.0),
                       "constexpr inside": (tl.constexpr(3), 1.0)}.items():
        v = list(values)
        v[5] = pair
        assert specialize(desc_mix, v)[0] is None, what
        assert launch_outcome(desc_mix, *v) == "python", what
    assert launch_outcome(desc_mix, *values) == "fast"


def test_descriptor_kernels_on_the_interpreter(rng):
    """desc_mix and desc_nested compute what they say (numpy bases: run, the interpreter)."""
    x, y = (rng.standard_normal((40, 64)).astype(np.float32) for _ in range(2))
    out = np.full((40, 64), np.nan, np.float32)
    xd, od = TensorDescriptor.from_tensor(x, [16, 64]), TensorDescriptor.from_tensor(out, [16, 64])
    yd = TritonDescriptor(y, [40, 64], [64, 1], [16, 64], "zero")
    desc_mix[(3,)](xd, 2.0, yd, 16, od, (3, 0.5), 64)
    assert rel_err(out, 2.0 * x.astype(np.float64) + 0.5 * y + 3) < 1e-6
    a = rng.standard_normal(100).astype(np.float16)
    o = np.full(128, np.nan, np.float32)
    desc_nested[(1,)](((TensorDescriptor(a, [100], [1], [128]), (2.0, 1)), True), o, 128, 128)
    assert rel_err(o[:100], a.astype(np.float64) * 2 + 1) < 1e-6 and (o[100:] == 1).all()


def test_descriptor_launches_on_the_gpu(monkeypatch):
    """With torch and a CUDA device: descriptor and tuple launches after the first take the fast
    path (TMA kernels on Hopper: the launch encodes their tensor maps) and compute what run does."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpu_mode = sys.modules.get("gpu_mode")  # (the suite's GPU mode steps aside: this is the launch path itself)
    if gpu_mode is not None and gpu_mode.plain_run is not None:
        monkeypatch.setattr(jitmod.JITFunction, "run", gpu_mode.plain_run)
    if os.environ.get("NEREID_FAST_LAUNCH") == "0":
        pytest.skip("NEREID_FAST_LAUNCH=0")

    def check(M, padding):
        x, y = (torch.randn(M, 32, device="cuda") for _ in range(2))
        out = torch.full((M, 32), float("nan"), device="cuda")
        xd, od = (TensorDescriptor.from_tensor(t, [64, 32]) for t in (x, out))
        yd = TritonDescriptor(y, list(y.shape), list(y.stride()), [64, 32], padding)
        desc_mix[(triton.cdiv(M, 64),)](xd, 2.0, yd, 64, od, (3, 0.5), 32)
        torch.cuda.synchronize()
        assert torch.allclose(out, 2 * x + 0.5 * y + 3, rtol=1e-5, atol=1e-5), M

    try:
        check(200, "zero")
        hits = desc_mix._fast_hits
        for M in (200, 130, 64, 1000):  # other tensors and sizes: the same key, maps encoded again
            check(M, "zero")
        assert desc_mix._fast_hits == hits + 4
        check(200, "nan")  # another key: run, then the fast path
        check(77, "nan")
        assert desc_mix._fast_hits == hits + 5
        a = torch.randn(4096, device="cuda").half()
        o = torch.full((128,), float("nan"), device="cuda")
        nested_hits = desc_nested._fast_hits
        for scale in (2.0, -1.0, 0.5):
            d = TensorDescriptor.from_tensor(a, [128])
            desc_nested[(1,)](((d, (scale, 1)), True), o, 128, 128)
            torch.cuda.synchronize()
            assert torch.allclose(o, a[:128].float() * scale + 1, rtol=1e-3), scale
        assert desc_nested._fast_hits == nested_hits + 2
    finally:
        desc_mix._clear_fast_path()
        desc_nested._clear_fast_path()
