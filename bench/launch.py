"""Launch overhead from Python: the host time of one launch of a cached
kernel with six runtime arguments (three tensors, two floats and an int) on
tiny tensors, for Nereid, Triton and torch.add, in one process.

Each system is warmed up (compiled, cached), then launched --launches times
in a row without synchronizing; each call is timed on the host clock and the
median is reported, with the mean per launch including the final
synchronization.  The kernel is bench/kernels/launch.py, loaded once under
each compiler.  Also measured: what reading the current torch stream costs
(Nereid's fast path reads it at every launch), whether Nereid's launches
took the fast path (the C dispatcher) or went through Python, and the same
kernel launched from C (bench/launch_floor.c): the driver's own cost.

--cpu-dispatch measures Nereid's dispatcher without a GPU: stand-in tensors,
the whole C path (binding, specialization key, lookup, grid, stream, packing)
and a launch that only records its parameters.

Rows "<system> warmup": kernel.warmup(...) of a compiled specialization
followed by what programs read of the result (_init_handles(), n_regs,
metadata.shared), as Triton's fused-softmax tutorial does at every call.

Rows "<system> desc": the same computation with its three tensors passed as
host tensor descriptors (each system's own TensorDescriptor class, one
(8, 16) block each; TMA on Hopper): axpby_desc_kernel, five runtime
arguments of which three are descriptors.

    python3 bench/launch.py [--launches 10000] [--json [PATH]] [--dry-run] [--cpu-dispatch]"""
import argparse
import dataclasses
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

N = 128
ALPHA, BETA = 2.0, 0.5
DEVICE = "cuda"  # tests use "cpu", with the interpreter


def measure(launch, sync, launches, warmup):
    """Per-launch host times (seconds) and the mean per launch including the final synchronization."""
    for _ in range(warmup):
        launch()
    sync()
    times = []
    clock = time.perf_counter
    start = clock()
    for _ in range(launches):
        t0 = clock()
        launch()
        times.append(clock() - t0)
    sync()
    total = clock() - start
    return times, total / launches


def row(system, times, mean_s, note=""):
    times = sorted(times)
    return {"system": system, "status": "ok", "median_us": statistics.median(times) * 1e6,
            "p20_us": harness.percentile(times, 0.2) * 1e6, "p80_us": harness.percentile(times, 0.8) * 1e6,
            "mean_us": mean_s * 1e6, "launches": len(times), "note": note}


def failed(system, status, note):
    return {"system": system, "status": status, "note": note}


def run_gpu(args):
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("launch: torch sees no CUDA device (use --dry-run to test without a GPU)")
    harness.use_repo_python_package()
    x = torch.randn(N, device=DEVICE)
    y = torch.randn(N, device=DEVICE)
    expect = ALPHA * x + BETA * y
    rows, modules = [], {"torch": torch}
    for backend in ("triton", "nereid"):
        try:
            mod = harness.load_kernels("launch", backend)
            modules[backend] = sys.modules[backend]
        except Exception as e:
            rows.append(failed(backend, "n/a", harness.short_error(e)))
            continue
        out = torch.full_like(x, float("nan"))
        rows.append(warmup_row(f"{backend} warmup", mod.axpby_kernel, (x, y, out, N, ALPHA, BETA), args))

        def launch(mod=mod, out=out):
            mod.axpby_kernel[(1,)](x, y, out, N, ALPHA, BETA, BLOCK=N)
        try:
            launch()
            torch.cuda.synchronize()
            err = harness.rel_error(out, expect)
            if not harness.passes(err, "fp32"):
                rows.append(failed(backend, "FAILED", f"relative error {err:.2e}"))
                continue
            times, mean_s = measure(launch, torch.cuda.synchronize, args.launches, args.warmup)
        except Exception as e:
            rows.append(failed(backend, "FAILED", harness.short_error(e)))
            continue
        rows.append(row(backend, times, mean_s))
        if backend == "nereid":
            rows[-1]["note"] = fast_note(mod.axpby_kernel, launch)
            if "fast path" in rows[-1]["note"]:
                rows.extend(stage_rows(mod.axpby_kernel, launch, lambda: None, args))
        rows.append(desc_row(backend, mod, x, y, expect, args))
    z = torch.empty_like(x)
    times, mean_s = measure(lambda: torch.add(x, y, out=z), torch.cuda.synchronize, args.launches, args.warmup)
    rows.insert(0, row("torch.add", times, mean_s, note="3 arguments"))
    rows.extend(stream_rows(torch, args))
    rows.extend(floor_rows(args))
    machine = harness.describe_machine(torch, modules.get("triton"), modules.get("nereid"))
    return machine, rows


def fast_note(kernel, launch):
    """Whether a launch of a Nereid kernel took the fast path (a _fast_hits count) or went through Python."""
    hits = getattr(kernel, "_fast_hits", 0)
    launch()
    return "fast path (C dispatcher)" if getattr(kernel, "_fast_hits", 0) > hits else \
        "Python path (not a fast-path hit)"


DESC_SHAPE = (N // 16, 16)  # the N elements as one block of a 2-D descriptor


def desc_row(backend, mod, x, y, expect, args):
    """axpby_desc_kernel on descriptors of x, y and a new output (the backend's own TensorDescriptor)."""
    import torch
    system = f"{backend} desc"
    kernel = mod.axpby_desc_kernel
    try:
        td = importlib.import_module(f"{backend}.tools.tensor_descriptor").TensorDescriptor
        out = torch.full(DESC_SHAPE, float("nan"), device=DEVICE)
        descs = [td.from_tensor(t, list(DESC_SHAPE)) for t in (x.view(DESC_SHAPE), y.view(DESC_SHAPE), out)]

        def launch():
            return kernel[(1,)](*descs, ALPHA, BETA, BM=DESC_SHAPE[0], BN=DESC_SHAPE[1])
        launch()
        torch.cuda.synchronize()
        err = harness.rel_error(out, expect.view(DESC_SHAPE))
        if not harness.passes(err, "fp32"):
            return failed(system, "FAILED", f"relative error {err:.2e}")
        times, mean_s = measure(launch, torch.cuda.synchronize, args.launches, args.warmup)
    except Exception as e:
        return failed(system, "n/a" if isinstance(e, ImportError) else "FAILED", harness.short_error(e))
    note = "3 TensorDescriptor arguments, 2 floats"
    if backend == "nereid":
        note += "; " + fast_note(kernel, launch)
    return row(system, times, mean_s, note=note)


def floor_rows(args):
    """The same kernel launched from C (bench/launch_floor.c): what the driver's launch costs on this
    machine, below any Python."""
    import subprocess
    root = harness.BENCH.parent
    exe = root / "build" / "bench" / "launch_floor"
    notes = {"entry": "C: nr_gpu_entry_launch (cuLaunchKernel), the fast path's launch",
             "entry0": "C: the same on the default stream (torch's unless told otherwise)",
             "c_api": "C: nr_launch_gpu (the C API's checked launch)"}
    try:
        subprocess.run(["make", "-s", "build/bench/launch_floor", "WERROR="], cwd=root, check=True,
                       capture_output=True, text=True)
        r = subprocess.run([str(exe), str(root / "bench" / "kernels" / "launch.py"), str(args.launches)], cwd=root,
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return [failed("C floor", "n/a", harness.short_error(e))]
    if r.returncode != 0:
        lines = (r.stderr or r.stdout).strip().splitlines()
        return [failed("C floor", "FAILED", lines[-1] if lines else f"exit status {r.returncode}")]
    out = []
    for line in r.stdout.splitlines():
        d = json.loads(line)
        d["note"] = notes.get(d["system"], "")
        d["system"] = "C " + d["system"]
        d["status"] = "ok"
        out.append(d)
    return out


def warmup_row(system, kernel, args6, args, note=""):
    """kernel.warmup of a compiled specialization and the reads of Triton's fused-softmax tutorial."""
    def warm():
        k = kernel.warmup(*args6, BLOCK=N, grid=(1,))
        k._init_handles()
        return k.n_regs, k.metadata.shared

    try:
        warm()
        times, mean_s = measure(warm, lambda: None, args.launches, args.warmup)
    except Exception as e:
        return failed(system, "FAILED", harness.short_error(e))
    return row(system, times, mean_s, note=note or "warmup(...), _init_handles(), n_regs, metadata.shared")


def stage_rows(kernel, launch, sync, args):
    """The fast path stopped after each of its stages (nereid._C.FAST_STAGES): what the
    stages up to there cost, cumulatively (the launch row is the whole)."""
    import nereid
    stages = nereid._C.FAST_STAGES
    out = []
    try:
        for i in range(1, len(stages)):
            kernel._fast_stop_after = i
            assert launch() is None, "the fast path did not stop"
            times, mean_s = measure(launch, sync, args.launches, args.warmup)
            out.append(row(f"  ..{stages[i]}", times, mean_s, note=f"stopped after '{stages[i]}'"))
    finally:
        kernel._fast_stop_after = 0
    return out


def stream_rows(torch, args):
    """What reading the current stream costs, two ways."""
    out = []
    dev = x_device = torch.device(DEVICE)
    idx = x_device.index or 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None and dev.type == "cuda":
        times, mean_s = measure(lambda: raw(idx), lambda: None, args.launches, args.warmup)
        out.append(row("raw stream", times, mean_s, note="torch._C._cuda_getCurrentRawStream(i)"))
    if dev.type == "cuda":
        times, mean_s = measure(lambda: torch.cuda.current_stream(idx).cuda_stream, lambda: None, args.launches,
                                args.warmup)
        out.append(row("cur. stream", times, mean_s, note="torch.cuda.current_stream(i).cuda_stream"))
    return out


# --- the dispatcher alone, on the CPU ---------------------------------------------------------------

class FakeTensor:
    """What the dispatcher reads of a torch tensor: data_ptr(), dtype and get_device()."""

    def __init__(self, ptr, dtype, device=0):
        self._ptr = ptr
        self.dtype = dtype
        self._device = device

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return self._device


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"fake.{self.name}"


FAKE_FP32 = FakeDtype("float32")

# A host tensor descriptor as Triton's is: a record of these five fields (Nereid
# takes any class named TensorDescriptor with them); over stand-in tensors.
FakeDescriptor = dataclasses.make_dataclass(
    "TensorDescriptor", ["base", "shape", "strides", "block_shape", ("padding", str, "zero")])


def fake_dispatch_setup(nereid, kernel, use_torch=False):
    """Install stand-in tensors, compile `kernel` for them on the interpreter target
    and register the key with a launch that records instead of launching.
    use_torch: torch tensors in host memory instead, counted as on device 0
    (set_api's stand_in_device) and read as on the GPU; the stream comes from a
    C function of one argument, as torch's does.  Returns (launch, restore)."""
    _C = nereid._C
    if use_torch:
        import torch
        dtype = torch.float32
        old = _C.set_api(tensor_type=torch.Tensor, get_stream=abs, stand_in_device=0)
        _C.register_dtype(dtype, "fp32")
        x, y, out = (torch.zeros(N, dtype=dtype) for _ in range(3))
    else:
        old = _C.set_api(tensor_type=FakeTensor, get_stream=lambda device: 0x5000 + device)
        _C.register_dtype(FAKE_FP32, "fp32")
        x, y, out = (FakeTensor(0x10000 * (i + 1), FAKE_FP32) for i in range(3))
    args = (x, y, out, N, ALPHA, BETA)
    values = args + (N,)
    key, objs, sigs, device, fast = _C.Dispatcher._specialize(kernel, values, 4, 3, 0)
    assert fast and key is not None, "stand-in tensors are not on the fast path"
    signature = ", ".join(s if s is not None else str(N) for s in sigs)
    compiled = kernel.compile(signature, 4, 3)
    kernel._register(key, objs, compiled, device, True, "compiled")

    def launch():
        return kernel[(1,)](x, y, out, N, ALPHA, BETA, BLOCK=N)

    def restore():
        kernel._clear_fast_path()
        _C.set_api(tensor_type=old["tensor_type"], get_stream=old["get_stream"],
                   stand_in_device=old["stand_in_device"])

    return launch, restore


def fake_desc_setup(nereid, kernel):
    """fake_dispatch_setup for axpby_desc_kernel: three descriptors over stand-in
    tensors (set_api as fake_dispatch_setup left it).  Returns launch."""
    _C = nereid._C
    rows, cols = DESC_SHAPE
    descs = [FakeDescriptor(FakeTensor(0x10000 * (i + 1), FAKE_FP32), [rows, cols], [cols, 1], [rows, cols])
             for i in range(3)]
    values = (*descs, ALPHA, BETA, rows, cols)
    key, objs, sigs, device, fast = _C.Dispatcher._specialize(kernel, values, 4, 3, 0)
    assert fast and key is not None, "stand-in descriptors are not on the fast path"
    signature = ", ".join(s if s is not None else str(v) for s, v in zip(sigs, values))
    kernel._register(key, objs, kernel.compile(signature, 4, 3), device, True, "compiled")

    def launch():
        return kernel[(1,)](*descs, ALPHA, BETA, BM=rows, BN=cols)

    return launch


def torch_importable():
    try:
        import torch  # noqa: F401
    except Exception:
        return False
    return True


def run_cpu_dispatch(args):
    """The C dispatcher with a recording launch: the host cost of Nereid's launch path
    less the driver call; with stand-in tensors, and with torch tensors when torch is
    installed."""
    harness.use_repo_python_package()
    import nereid
    mod = harness.load_kernels("launch", "nereid")
    kernel = mod.axpby_kernel
    rows = []
    for use_torch in (False, True) if torch_importable() else (False,):
        name = "nereid/torch" if use_torch else "nereid"
        launch, restore = fake_dispatch_setup(nereid, kernel, use_torch)
        try:
            count = kernel._fake_launch()["count"]
            if launch() != "compiled" or kernel._fake_launch()["count"] != count + 1:
                rows.append(failed(name, "FAILED", "the fast path was not taken"))
                continue
            times, mean_s = measure(launch, lambda: None, args.launches, args.warmup)
            note = "torch tensors in host memory" if use_torch else "stand-in tensors"
            rows.append(row(name, times, mean_s, note=f"C dispatch, recording launch (no GPU), {note}"))
            rows.extend(stage_rows(kernel, launch, lambda: None, args))
            if use_torch:
                continue
            rows.append(cpu_desc_row(nereid, mod.axpby_desc_kernel, args))
            before = kernel._fake_launch()["count"]
            grid_fn = lambda meta: (1,)  # noqa: E731
            largs = launch_args(kernel)
            times, mean_s = measure(lambda: kernel[grid_fn](*largs), lambda: None, args.launches, args.warmup)
            assert kernel._fake_launch()["count"] > before
            rows.append(row("nereid+λgrid", times, mean_s, note="the same with a callable grid"))
            wargs = launch_args(kernel)
            kernel._register_warmup(wargs, 4, 3, 0, stand_in_compiled(nereid, kernel, wargs))
            hits = kernel._warm_hits
            rows.append(warmup_row("nereid warmup", kernel, wargs[:6], args,
                                   note="a registered warmup key, stand-in tensors"))
            if kernel._warm_hits == hits:
                rows[-1] = failed("nereid warmup", "FAILED", "the warmup was not answered in C")
        finally:
            restore()
    rows.append(numpy_warmup_row(kernel, args))
    times, mean_s = measure(lambda: None, lambda: None, args.launches, args.warmup)
    rows.append(row("empty call", times, mean_s, note="the timing loop itself"))
    return dict(harness.describe_machine(), cpu_dispatch=True), rows


def cpu_desc_row(nereid, kernel, args):
    """The descriptor kernel through the C dispatcher with a recording launch."""
    try:
        launch = fake_desc_setup(nereid, kernel)
        count = kernel._fake_launch()["count"]
        if launch() != "compiled" or kernel._fake_launch()["count"] != count + 1:
            return failed("nereid desc", "FAILED", "the fast path was not taken")
        times, mean_s = measure(launch, lambda: None, args.launches, args.warmup)
    finally:
        kernel._clear_fast_path()
    return row("nereid desc", times, mean_s, note="the same with 3 stand-in TensorDescriptor arguments")


def jit_module():
    import importlib
    return importlib.import_module("nereid.runtime.jit")


def stand_in_compiled(nereid, kernel, values):
    """A CompiledKernel of `kernel` for stand-in tensors (the interpreter target)."""
    _key, _objs, sigs, _device, _fast = nereid._C.Dispatcher._specialize(kernel, values, 4, 3, 0)
    signature = ", ".join(s if s is not None else str(v) for s, v in zip(sigs, values))
    return jit_module().CompiledKernel(kernel, kernel.compile(signature, 4, 3), signature,
                                       {"num_warps": 4, "num_stages": 3}, None, None)


def numpy_warmup_row(kernel, args):
    """The warmup of numpy arrays (the interpreter's target): the key run registered at the first one."""
    import numpy as np
    x, y, out = (np.zeros(N, np.float32) for _ in range(3))
    hits = kernel._warm_hits
    r = warmup_row("warmup/numpy", kernel, (x, y, out, N, ALPHA, BETA), args, note="numpy arrays, interpreter kernel")
    if r["status"] == "ok" and kernel._warm_hits == hits:
        r = failed("warmup/numpy", "FAILED", "the warmup was not answered in C")
    kernel._clear_fast_path()
    return r


def launch_args(kernel):
    x, y, out = (FakeTensor(0x10000 * (i + 1), FAKE_FP32) for i in range(3))
    return (x, y, out, N, ALPHA, BETA, N)


def run_dry(args):
    fake = {"torch.add": 6.0, "triton": 13.0, "nereid": 9.0}
    rows = [row(s, [us * 1e-6] * args.launches, us * 1.05e-6, note="dry run: made-up") for s, us in fake.items()]
    return dict(harness.describe_machine(), dry_run=True), rows


def table(rows):
    lines = [f"{'system':<12}{'median us':>11}{'p20':>9}{'p80':>9}{'mean us':>10}"
             "  (mean: per launch incl. the final sync)"]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['system']:<12}{r['status']:>11}  {r['note']}")
        else:
            lines.append(f"{r['system']:<12}{r['median_us']:>11.2f}{r['p20_us']:>9.2f}{r['p80_us']:>9.2f}"
                         f"{r['mean_us']:>10.2f}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Launch overhead from Python: Nereid, Triton, torch.add.")
    ap.add_argument("--launches", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: made-up numbers, to test the plumbing")
    ap.add_argument("--cpu-dispatch", action="store_true",
                    help="no GPU: Nereid's C dispatcher with stand-in tensors and a recording launch")
    ap.add_argument("--json", nargs="?", const="", metavar="PATH", help="write JSON (default <out>/launch-<date>.json)")
    ap.add_argument("--out", default=str(harness.BENCH / "results"))
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args(argv)
    if args.launches < 1 or args.warmup < 0:
        ap.error("--launches must be at least 1 and --warmup not negative")
    if not args.dry_run and not args.no_build:
        harness.build(always=True)
    if args.dry_run:
        machine, rows = run_dry(args)
    elif args.cpu_dispatch:
        machine, rows = run_cpu_dispatch(args)
    else:
        machine, rows = run_gpu(args)
    where = machine.get("gpu") or ("CPU, C dispatch only" if args.cpu_dispatch else "dry run")
    print(f"launch overhead, {args.launches} launches of a kernel with 6 runtime arguments ({where})")
    print(table(rows))
    if args.json is not None:
        out = Path(args.json) if args.json else Path(args.out) / (
            f"launch-{time.strftime('%Y-%m-%d')}{'-dry-run' if args.dry_run else ''}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        command = " ".join(["python3", "bench/launch.py"] + list(sys.argv[1:] if argv is None else argv))
        doc = {"kind": "launch", "version": 1, "machine": machine,
               "settings": {"command": command, "launches": args.launches, "warmup": args.warmup}, "rows": rows}
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"launch: wrote {out}")
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
