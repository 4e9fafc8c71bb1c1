"""The runtime around kernels: driver queries, testing helpers, dumps, cache keys, libdevice names,
NEREID_INTERPRET with torch tensors."""
import importlib
import json
import os
import textwrap

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid.language.extra import libdevice
from nereid.runtime import driver
from conftest import poisoned, rel_err

drivermod = importlib.import_module("nereid.runtime.driver")
jitmod = importlib.import_module("nereid.runtime.jit")


@triton.jit
def erf_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, libdevice.erf(x) + libdevice.pow(x, 2.0), mask=m)


def test_driver_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("NEREID_INTERPRET", "1")
    driver.reset_active()
    try:
        d = driver.active
        assert isinstance(d, drivermod.InterpreterDriver)
        t = d.get_current_target()
        assert (t.backend, t.arch, t.warp_size) == ("cuda", 80, 32)
        p = d.utils.get_device_properties(d.get_current_device())
        for k in ("multiprocessor_count", "max_shared_mem", "max_num_regs", "warpSize"):
            assert isinstance(p[k], int) and p[k] > 0, k
        assert d.get_current_stream() == 0
    finally:
        driver.reset_active()


def test_driver_without_a_gpu_is_the_interpreter():
    if drivermod.properties(0) is not None:
        pytest.skip("a GPU is present")
    driver.reset_active()
    assert isinstance(driver.active, drivermod.InterpreterDriver)
    with pytest.raises(RuntimeError, match="no CUDA device 0"):
        drivermod.CudaDriver().utils.get_device_properties(0)


def test_set_active_driver():
    class Mine(drivermod.InterpreterDriver):
        pass

    driver.set_active(Mine())
    try:
        assert isinstance(driver.active, Mine)
    finally:
        driver.reset_active()


def test_libdevice_names(rng):
    assert "erf" in libdevice.SUPPORTED and "j0" in libdevice.NOT_SUPPORTED
    with pytest.raises(RuntimeError, match="can only be called inside a @jit function"):
        libdevice.exp(1.0)
    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(100, np.float32)
    erf_scale[(1,)](x, out, 100, BLOCK=128)
    import math
    ref = np.array([math.erf(v) + v * v for v in x.astype(np.float64)])
    assert rel_err(out, ref) < 1e-6


def test_do_bench_host():
    calls = []
    t = triton.testing.do_bench(lambda: calls.append(1), warmup=1, rep=5)
    assert t > 0 and len(calls) > 5
    q = triton.testing.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0.5, 0.2, 0.8])
    assert len(q) == 3 and q[1] <= q[0] <= q[2]
    assert triton.testing.do_bench(lambda: None, warmup=0, rep=1, return_mode="min") >= 0
    with pytest.raises(ValueError, match="return_mode"):
        triton.testing.do_bench(lambda: None, warmup=0, rep=1, return_mode="avg")
    assert triton.testing.do_bench_cudagraph(lambda: None, rep=1) >= 0


def test_assert_close():
    a = np.array([1.0, 2.0, np.nan])
    triton.testing.assert_close(a, a + 0.005)
    triton.testing.assert_close(a, a * 1.1, atol=0, rtol=0.11)
    with pytest.raises(AssertionError):
        triton.testing.assert_close(a, a + 0.1)
    triton.testing.assert_close(np.array([True, False]), np.array([True, False]))
    triton.testing.assert_close(3.0, 3.001)


def test_perf_report_table_csv_and_plot(tmp_path, capsys):
    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["n"], x_vals=[10, 20], line_arg="provider", line_vals=["a", "b"], line_names=["A", "B"],
        styles=[("blue", "-"), ("green", "-")], ylabel="GB/s", plot_name="demo", args={"scale": 2}))
    def bench(n, provider, scale):
        v = n * scale + (1 if provider == "b" else 0)
        return v, v - 1, v + 1

    bench.run(print_data=True, save_path=str(tmp_path))
    out = capsys.readouterr().out
    assert "demo:" in out and "A" in out and "41" in out
    rows = (tmp_path / "demo.csv").read_text().splitlines()
    assert rows[0] == "n,A,B" and rows[1] == "10,20,21" and rows[2] == "20,40,41"
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "demo.png").exists()
    except ImportError:
        pass
    rows = bench.run(return_df=True)
    assert len(rows) == 2


def test_dump_dir(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("NEREID_DUMP_DIR", str(tmp_path))

    @triton.jit
    def double(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = np.ones(8, np.float32)
    double[(1,)](x, 8, BLOCK=8)
    double.compile("*fp32:16, i32, 8", arch="sm_80")
    dirs = sorted(os.listdir(tmp_path))
    # (the PTX check of the test suite compiles for more targets: more directories)
    assert len(dirs) >= 2 and all(d.startswith("double-") for d in dirs)
    files = set()
    for d in dirs:
        files |= set(os.listdir(tmp_path / d))
    assert {"double.lower.ir", "double.ir", "double.gpu.ir", "double.ptx", "double.json", "signature.txt"} <= files
    gpu = next(d for d in dirs if (tmp_path / d / "double.ptx").exists()
               and '"sm_80"' in (tmp_path / d / "double.json").read_text())
    meta = json.loads((tmp_path / gpu / "double.json").read_text())
    assert meta["target"] == "sm_80" and meta["signature"] == "*fp32:16, i32, 8" and "shared" in meta
    assert ".entry double" in (tmp_path / gpu / "double.ptx").read_text()


def test_cache_key_covers_the_module_text(tmp_path):
    """Editing a helper (or a constexpr global) changes the key of the kernels calling it, and their code."""
    def load(helper_body, block):
        path = tmp_path / "mod.py"
        path.write_text(textwrap.dedent(f'''
            import nereid as triton
            import nereid.language as tl

            SCALE = tl.constexpr({block})

            @triton.jit
            def helper(x):
                return {helper_body}

            @triton.jit
            def kern(x_ptr, n, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n)
                tl.store(x_ptr + offs, helper(x) * SCALE, mask=offs < n)
            '''))
        spec = importlib.util.spec_from_file_location(f"mod_{abs(hash((helper_body, block)))}", path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        return m

    a = load("x + 1", 1)
    ka = a.kern.cache_key()
    x = np.ones(8, np.float32)
    a.kern[(1,)](x, 8, BLOCK=8)
    assert (x == 2).all()
    b = load("x + 2", 1)
    assert b.kern.cache_key() != ka
    b.kern[(1,)](x, 8, BLOCK=8)
    assert (x == 4).all()
    c = load("x + 2", 3)
    assert c.kern.cache_key() not in (ka, b.kern.cache_key())
    c.kern[(1,)](x, 8, BLOCK=8)
    assert (x == 18).all()


def test_interpret_with_torch_tensors(monkeypatch, rng):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("NEREID_INTERPRET", "1")
    x = torch.randn(100)
    out = torch.full((100,), float("nan"))
    erf_scale[(1,)](x, out, 100, BLOCK=128)
    ref = torch.erf(x.double()) + x.double() ** 2
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-6)
    if torch.cuda.is_available():  # CUDA tensors: copied to the host and back
        xc, oc = x.cuda(), torch.full((100,), float("nan"), device="cuda")
        erf_scale[(1,)](xc, oc, 100, BLOCK=128)
        assert torch.allclose(oc.cpu().double(), ref, rtol=1e-5, atol=1e-6)


def test_host_copies_copy_back():
    """NEREID_INTERPRET with CUDA tensors, on a stand-in: host copies are made and copied back."""
    class Tensor:
        def __init__(self):
            self.a = np.zeros(4, np.float32)
            self.copied = None

        def detach(self):
            return self

        def to(self, where):
            assert where == "cpu"
            return HostTensor(self.a.copy())

        def copy_(self, src):
            self.copied = src

    class HostTensor:
        def __init__(self, a):
            self.a, self.shape = a, a.shape

        def element_size(self):
            return 4

        def stride(self):
            return (1,)

        def data_ptr(self):
            return self.a.ctypes.data

    fake_torch = type("torch", (), {"Tensor": Tensor})
    import sys
    saved = sys.modules.get("torch")
    sys.modules["torch"] = fake_torch
    try:
        t = Tensor()
        values, copies = jitmod._host_copies({"x": t, "n": 4}, {"x": jitmod._Buf(0x1000, 16, 0, "x"), "n": 4})
        assert values["x"].device is None and values["x"][1] == 16 and values["n"] == 4
        assert len(copies) == 1 and copies[0][0] is t
    finally:
        if saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved
