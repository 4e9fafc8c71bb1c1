"""Shared pieces of the benchmark suite: paths and the build, loading one
kernel file under Triton or under Nereid, checking results against a
reference, timing on the GPU, and describing the machine.

Nothing here imports torch, Triton or Nereid at module level: the dry run
(`run.py --dry-run`) works with the Python standard library alone."""
import builtins
import math
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
import types
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
KERNELS = BENCH / "kernels"
EXAMPLES = REPO / "examples"
NEREID_CLI = REPO / "build" / "nereid"

# The order in which systems run on each case: the references first, Nereid
# last, so that a fault in Nereid loses no other system's number.
SYSTEMS = ("torch", "triton", "nereid")


# --- the build ------------------------------------------------------------------------------------

def use_repo_python_package():
    """Make `import nereid` find the package of this checkout (python/nereid)."""
    path = str(REPO / "python")
    if path not in sys.path:
        sys.path.insert(0, path)


def extension_path():
    """The path the extension module of this checkout has for the running Python."""
    return REPO / "python" / "nereid" / ("_C" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))


def build(always=False):
    """Build the library, the CLI and the extension for this Python with make.

    make is run whenever the extension for this interpreter is missing, and
    with always=True also otherwise (a no-op when everything is up to date,
    a rebuild when sources changed since the last build)."""
    if not always and extension_path().exists() and NEREID_CLI.exists():
        return
    jobs = str(os.cpu_count() or 2)
    cmd = ["make", "-j", jobs, "all", "pyext", f"PYTHON={sys.executable}"]
    print("building:", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, check=True)


# --- one kernel file, two compilers ----------------------------------------------------------------

def _import_redirected_to(backend):
    """An __import__ that resolves `triton...` and `nereid...` to `backend...`."""
    real_import = builtins.__import__

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            head, dot, rest = name.partition(".")
            if head in ("triton", "nereid"):
                name = backend + dot + rest
        return real_import(name, globals, locals, fromlist, level)

    return import_


def load_kernel_file(path, backend):
    """Execute the kernel file `path` as a fresh module in which `import triton`
    (and `import nereid`, and their submodules) import `backend`, "triton" or
    "nereid".

    The file is compiled with its real path as the code's file name, so both
    compilers' jit decorators read the kernel source from the file itself
    (inspect finds it through the functions' code objects).  Each call makes
    a new module, registered in sys.modules as bench_<backend>_<stem>."""
    if backend not in ("triton", "nereid"):
        raise ValueError(f"backend must be 'triton' or 'nereid', not {backend!r}")
    path = Path(path).resolve()
    name = f"bench_{backend}_{path.stem}"
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__["__builtins__"] = dict(vars(builtins), __import__=_import_redirected_to(backend))
    sys.modules[name] = module
    try:
        code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_kernels(stem, backend):
    """bench/kernels/<stem>.py under `backend`."""
    return load_kernel_file(KERNELS / f"{stem}.py", backend)


class KernelFiles:
    """bench/kernels/<stem>.py loaded once per compiler.  Calling it returns
    (module, None), or (None, why) when the file does not load under that
    compiler (not installed, an import error)."""

    def __init__(self):
        self._loaded = {}

    def __call__(self, stem, backend):
        key = (stem, backend)
        if key not in self._loaded:
            try:
                self._loaded[key] = (load_kernels(stem, backend), None)
            except Exception as e:
                self._loaded[key] = (None, f"cannot load bench/kernels/{stem}.py with {backend}: {short_error(e)}")
        return self._loaded[key]


# --- checking results ------------------------------------------------------------------------------

# Largest accepted relative error ||out - ref|| / ||ref|| against a float64
# reference, by the precision a case computes in.  fp32 elementwise and
# reduction work lands near 1e-7; tf32 products near 3e-4; fp16 outputs near
# 3e-4 (one rounding); bf16 near 3e-3; fp8 inputs are exact in the reference,
# so only the fp32 accumulation and the fp16 output round.
TOLERANCE = {
    "fp32": 1e-5,
    "tf32": 5e-3,
    "fp16": 5e-3,
    "bf16": 2e-2,
    "fp8e4m3": 2e-2,
}


def tolerance(dtype):
    return TOLERANCE[dtype]


def rel_error(out, ref):
    """||out - ref|| / ||ref|| in float64 (absolute when ref is all zero).

    out and ref are numpy arrays or torch tensors of the same shape; NaN or
    infinity anywhere in out gives NaN or infinity, which no check accepts."""
    if hasattr(out, "detach"):  # torch.Tensor
        import torch
        o = out.detach().to(torch.float64)
        r = ref.detach().to(device=o.device, dtype=torch.float64)
        if o.shape != r.shape:
            raise ValueError(f"result has shape {tuple(o.shape)}, reference {tuple(r.shape)}")
        num = torch.linalg.vector_norm(o - r).item()
        den = torch.linalg.vector_norm(r).item()
    else:
        import numpy as np
        o = np.asarray(out).astype(np.float64)
        r = np.asarray(ref).astype(np.float64)
        if o.shape != r.shape:
            raise ValueError(f"result has shape {o.shape}, reference {r.shape}")
        num = float(np.linalg.norm(o - r))
        den = float(np.linalg.norm(r))
    return num / den if den > 0 else num


def max_rel_error(outs, refs):
    """The worst rel_error over matching outputs (a tensor, or tuples of them)."""
    if not isinstance(outs, (tuple, list)):
        outs, refs = (outs,), (refs,)
    if len(outs) != len(refs):
        raise ValueError(f"{len(outs)} results for {len(refs)} references")
    worst = 0.0
    for o, r in zip(outs, refs):
        e = rel_error(o, r)
        if math.isnan(e):
            return e
        worst = max(worst, e)
    return worst


def passes(err, dtype):
    """True when err is a number no larger than the tolerance (NaN never passes)."""
    return err <= tolerance(dtype)


# --- timing on the GPU -----------------------------------------------------------------------------

@dataclass
class Timing:
    ms: float          # median over the repetitions
    p20: float
    p80: float
    reps: int
    host_us: float     # median host time of one call of fn (launch cost, no synchronization)


def percentile(sorted_values, q):
    """The q-quantile (0..1) of sorted values, interpolated linearly."""
    if not sorted_values:
        raise ValueError("no values")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class CudaTimer:
    """Times a function's GPU work with CUDA events, as triton.testing.do_bench
    does: a run first, then an estimate over 5 runs, warm-up runs for about
    warmup_ms, then repetitions for about rep_ms (at least min_reps, at most
    max_reps), each preceded by writing over a 256 MB buffer so that no input
    is left in the L2 cache; the result is the median of the repetitions.

    interleaved(fns) times several functions side by side: repetition i runs
    each of them once, starting from a different one each time, so that all
    of them see the GPU in the same states.  A kernel of 10 us times at one of
    two levels some 0.7 us apart, and which of the two most repetitions land
    on changes from one stretch of time to the next; functions timed one
    after the other can differ by that much with identical kernels."""

    FLUSH_BYTES = 256 * 1024 * 1024

    def __init__(self, torch, warmup_ms=25.0, rep_ms=100.0, min_reps=10, max_reps=1000):
        self.torch = torch
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        self.min_reps = min_reps
        self.max_reps = max_reps
        self.flush_buffer = torch.empty(self.FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def __call__(self, fn, rep_ms=None, warmup_ms=None):
        return self.interleaved([fn], rep_ms=rep_ms, warmup_ms=warmup_ms)[0]

    def _estimate_ms(self, fn):
        """One run, then the mean over 5 runs each after a flush (the flush included)."""
        torch = self.torch
        fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            self.flush_buffer.zero_()
            fn()
        end.record()
        torch.cuda.synchronize()
        return max(start.elapsed_time(end) / 5, 1e-3)

    def interleaved(self, fns, rep_ms=None, warmup_ms=None):
        """A Timing for each of fns, their repetitions interleaved; each gets
        about rep_ms of repetitions (as many for all) and its own warm-up."""
        rep_ms = self.rep_ms if rep_ms is None else rep_ms
        warmup_ms = self.warmup_ms if warmup_ms is None else warmup_ms
        fns = list(fns)
        if not fns:
            return []
        torch = self.torch
        event = torch.cuda.Event
        estimates = [self._estimate_ms(fn) for fn in fns]
        mean_estimate = sum(estimates) / len(estimates)
        n_reps = min(self.max_reps, max(self.min_reps, int(rep_ms / mean_estimate)))
        for fn, estimate in zip(fns, estimates):
            for _ in range(max(1, int(warmup_ms / estimate))):
                fn()
        k = len(fns)
        starts = [[event(enable_timing=True) for _ in range(n_reps)] for _ in fns]
        ends = [[event(enable_timing=True) for _ in range(n_reps)] for _ in fns]
        host = [[] for _ in fns]
        for i in range(n_reps):
            for j in range(k):
                f = (i + j) % k
                self.flush_buffer.zero_()
                starts[f][i].record()
                t0 = time.perf_counter()
                fns[f]()
                host[f].append(time.perf_counter() - t0)
                ends[f][i].record()
        torch.cuda.synchronize()
        out = []
        for f in range(k):
            times = sorted(s.elapsed_time(e) for s, e in zip(starts[f], ends[f]))
            out.append(Timing(ms=statistics.median(times), p20=percentile(times, 0.2), p80=percentile(times, 0.8),
                              reps=n_reps, host_us=statistics.median(host[f]) * 1e6))
        return out


# --- the machine -----------------------------------------------------------------------------------

def _command_output(cmd, cwd=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def describe_machine(torch=None, triton=None, nereid=None):
    """What a result depends on: GPU, driver, library versions, commit."""
    info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": platform.node(),
        "python": platform.python_version(),
        "gpu": None,
        "sms": None,
        "driver": None,
        "cuda": None,
        "torch": None,
        "triton": None,
        "nereid": None,
        "commit": _command_output(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO),
    }
    if info["commit"] and _command_output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO):
        info["commit"] += "+dirty"
    smi = _command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    if smi:
        info["driver"] = smi.splitlines()[0].strip()
    if torch is not None:
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        try:
            props = torch.cuda.get_device_properties(0)
            info["gpu"] = props.name
            info["sms"] = props.multi_processor_count
        except Exception:
            pass  # no GPU
        if info["driver"] is None and info["gpu"]:
            try:
                v = torch._C._cuda_getDriverVersion()
                info["driver"] = f"CUDA {v // 1000}.{v % 1000 // 10}"
            except Exception:
                pass
    if triton is not None:
        info["triton"] = getattr(triton, "__version__", None)
    if nereid is not None:
        info["nereid"] = getattr(nereid, "__version__", None)
    return info


def short_error(exc, limit=300):
    """One line naming an exception, for a result's note."""
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " | ")
    return text if len(text) <= limit else text[: limit - 3] + "..."
