"""The Python API on a real GPU: the fast path with torch tensors, streams, devices, CUDA graphs,
what the driver says of compiled kernels.  Skipped without torch and a CUDA device."""
import importlib
import os

import pytest

import nereid as triton
import nereid.language as tl

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

jitmod = importlib.import_module("nereid.runtime.jit")
drivermod = importlib.import_module("nereid.runtime.driver")
PLAIN = "run" in jitmod.JITFunction.__dict__ and os.environ.get("NEREID_TEST_DEVICE") != "cuda"


@triton.jit
def axpby(x_ptr, y_ptr, out_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=m) + beta * tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def big_smem(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, a))


def data(n=1000, device="cuda"):
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    return x, y, torch.full_like(x, float("nan"))


def launch(x, y, out, n=None, alpha=2.0, beta=0.5):
    n = x.numel() if n is None else n
    return axpby[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, alpha, beta, BLOCK=256)


def test_fast_path_is_taken_and_correct():
    x, y, out = data()
    launch(x, y, out)
    torch.cuda.synchronize()
    assert torch.allclose(out, 2 * x + 0.5 * y)
    if PLAIN:
        assert axpby._fast_entries >= 1
    for alpha in (1.0, -3.0, 0.25):  # the same key, new values each time
        x, y, out = data()
        launch(x, y, out, alpha=alpha)
        torch.cuda.synchronize()
        assert torch.allclose(out, alpha * x + 0.5 * y)
    x, y, out = data(1001)  # a new specialization: through Python, then registered
    launch(x, y, out, n=999)
    torch.cuda.synchronize()
    assert torch.allclose(out[:999], 2 * x[:999] + 0.5 * y[:999]) and out[999:].isnan().all()


def test_launches_follow_the_current_stream():
    x, y, out = data(1 << 20)
    launch(x, y, out)
    s = torch.cuda.Stream()
    out2 = torch.full_like(x, float("nan"))
    with torch.cuda.stream(s):
        torch.cuda._sleep(10_000_000)  # keep the stream busy: a launch on the default stream would finish first
        launch(x, y, out2)
        ev = torch.cuda.Event()
        ev.record(s)
    assert not ev.query()  # still queued behind the sleep on s
    s.synchronize()
    assert torch.equal(out, out2)


def test_cuda_graph_capture():
    x, y, out = data()
    launch(x, y, out)  # compiled and registered outside the capture
    out.fill_(float("nan"))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        launch(x, y, out)
    out.fill_(float("nan"))
    x.copy_(torch.ones_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.allclose(out, 2 + 0.5 * y)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="one GPU")
def test_second_device():
    for dev in (1, 0, 1):
        x, y, out = data(device=f"cuda:{dev}")
        launch(x, y, out)  # the tensors' device, whatever torch's current device
        torch.cuda.synchronize(dev)
        assert torch.allclose(out, 2 * x + 0.5 * y)
    with pytest.raises(ValueError, match="different CUDA devices"):
        launch(data(device="cuda:0")[0], *data(device="cuda:1")[1:])


def test_cpu_tensor_in_a_gpu_launch():
    x, y, out = data()
    with pytest.raises(ValueError, match="argument 'y_ptr' is in host memory"):
        launch(x, y.cpu(), out)


def test_compiled_kernel_attributes_from_the_driver():
    x, y, out = data()
    ck = axpby.warmup(x, y, out, 1000, 1.0, 1.0, BLOCK=256, num_warps=4, grid=(1,))
    ck._init_handles()
    assert 0 < ck.n_regs <= 255 and ck.n_spills >= 0
    assert ck.metadata.shared >= 0 and ck.metadata.num_warps == 4 and "ptx" in ck.asm
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    assert props["multiprocessor_count"] > 0 and props["warpSize"] == 32 and props["max_shared_mem"] > 48 * 1024
    t = triton.runtime.driver.active.get_current_target()
    assert t.backend == "cuda" and t.arch >= 80


def test_shared_memory_over_the_limit_is_refused_before_launch():
    x = torch.randn(512 * 512, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    try:
        big_smem[(1,)](x, out, BLOCK=512, num_stages=1)
    except triton.OutOfResources as e:
        assert e.name == "shared memory" and e.required > e.limit
    except triton.CompilationError:
        pytest.skip("the compiler refuses the block itself")
    else:
        pytest.fail("a 512x512 fp16 dot ran: expected OutOfResources")


def test_interpret_with_cuda_tensors(monkeypatch):
    monkeypatch.setenv("NEREID_INTERPRET", "1")
    x, y, out = data(300)
    launch(x, y, out)
    assert torch.allclose(out, 2 * x + 0.5 * y)


def test_do_bench_on_the_gpu():
    x, y, out = data(1 << 20)
    ms = triton.testing.do_bench(lambda: launch(x, y, out), warmup=5, rep=20)
    assert 0 < ms < 10
    ms = triton.testing.do_bench_cudagraph(lambda: launch(x, y, out), rep=5)
    assert 0 < ms < 10
