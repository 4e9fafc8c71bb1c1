"""The Python API on a real GPU: the fast path with torch tensors, streams, devices, CUDA graphs,
what the driver says of compiled kernels.  Skipped without torch and a CUDA device."""
import importlib
import os
import sys

import pytest

import nereid as triton
import nereid.language as tl

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

jitmod = importlib.import_module("nereid.runtime.jit")
drivermod = importlib.import_module("nereid.runtime.driver")
PLAIN = os.environ.get("NEREID_FAST_LAUNCH") != "0"


@pytest.fixture(autouse=True)
def plain_launches(monkeypatch):
    """These tests are of the launch path itself: the GPU mode of the suite (which runs
    every launch on the interpreter too, through JITFunction.run) steps aside."""
    gpu_mode = sys.modules.get("gpu_mode")
    if gpu_mode is not None and gpu_mode.plain_run is not None:
        monkeypatch.setattr(jitmod.JITFunction, "run", gpu_mode.plain_run)
    yield


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
    hits = axpby._fast_hits
    for alpha in (1.0, -3.0, 0.25):  # the same key, new values each time
        x, y, out = data()
        launch(x, y, out, alpha=alpha)
        torch.cuda.synchronize()
        assert torch.allclose(out, alpha * x + 0.5 * y)
    if PLAIN:
        assert axpby._fast_hits == hits + 3
    x, y, out = data(1001)  # a new specialization: through Python, then registered
    launch(x, y, out, n=999)
    torch.cuda.synchronize()
    assert torch.allclose(out[:999], 2 * x[:999] + 0.5 * y[:999]) and out[999:].isnan().all()


def test_launches_follow_the_current_stream():
    x, y, out = data(1 << 20)
    launch(x, y, out)
    s = torch.cuda.Stream()
    out2 = torch.full_like(x, float("nan"))
    assert out2.isnan().all().item()  # (its kernels loaded now: loading one later may wait for the device)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keep the stream busy: a launch on the default stream would finish first
        launch(x, y, out2)
        ev = torch.cuda.Event()
        ev.record(s)
    unwritten = out2.isnan().all().item()  # on the default stream: not behind s
    assert not ev.query()  # still queued behind the sleep on s
    s.synchronize()
    assert unwritten and torch.equal(out, out2)


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
    # the current stream of the tensors' device (a side stream of device 1), whatever the current device
    x, y, out = data(1 << 20, device="cuda:1")
    launch(x, y, out)  # compiled and loaded before: nothing below waits for the device
    out.fill_(float("nan"))
    assert out.isnan().all().item()  # (the same for the kernels of this check)
    torch.cuda.synchronize(1)
    s = torch.cuda.Stream(device=1)
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy
        with torch.cuda.device(0):
            launch(x, y, out)
    unwritten = out.isnan().all().item()  # on device 1's default stream: not behind s
    s.synchronize()
    assert unwritten and torch.allclose(out, 2 * x + 0.5 * y)


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


@triton.jit
def matmul_bias(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    # the benchmark suite's signature: a None pointer and constexprs among the runtime arguments
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("shape", [(256, 192, 128), (100, 72, 40)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("b_order", ["row", "col"])
def test_fast_path_matmul_with_constexprs_among_the_arguments(shape, bias, b_order):
    M, N, K = shape
    hits = matmul_bias._fast_hits
    for rep in range(3):  # the first launch registers the key, the next two take the fast path
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16) if b_order == "row" else \
            torch.randn(N, K, device="cuda", dtype=torch.float16).T
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        bv = torch.randn(N, device="cuda", dtype=torch.float16) if bias else None
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        matmul_bias[grid](a, b, c, bv, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, HAS_BIAS=bias,
                          ACTIVATION="relu" if rep == 2 else "", num_warps=4, num_stages=3)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        if bias:
            ref += bv.double()[None, :]
        if rep == 2:
            ref = ref.clamp_min(0)
        err = ((c.double() - ref).norm() / ref.norm()).item()
        assert not c.isnan().any() and err < 1e-2, (rep, err)
    if PLAIN:
        assert matmul_bias._fast_hits >= hits + 1
