"""What the tutorials share.

Each tutorial runs either
- on an NVIDIA GPU with torch: arrays are CUDA tensors, results are checked
  against torch, and a table compares the time of Nereid, torch and (when it
  is installed) Triton running the same kernel source; or
- on Nereid's reference interpreter (no GPU, no torch, or NEREID_INTERPRET=1):
  arrays are numpy arrays at small sizes, results are checked against numpy
  in float64.

The helpers below hide that difference: randn/empty/zeros make arrays of the
right kind, to_numpy brings any of them back as float64 numpy, check compares.
"""
import builtins
import importlib.util
import os
import sys
import types

import numpy as np

try:
    import torch
except ImportError:  # the interpreter with numpy alone
    torch = None

ON_GPU = (torch is not None and torch.cuda.is_available()
          and os.environ.get("NEREID_INTERPRET", "") in ("", "0"))
DEVICE = "cuda" if ON_GPU else "cpu"


def _np_dtype(name):
    if name in ("bfloat16", "float8_e5m2", "float8_e4m3fn"):
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _torch_dtype(name):
    return getattr(torch, name)


def asarray(a, dtype="float32"):
    """A numpy array as an array of the run's kind (a CUDA tensor on the GPU)."""
    a = np.asarray(a)
    if ON_GPU:
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(DEVICE)
        return t.to(_torch_dtype(dtype))
    return a.astype(np.float32).astype(_np_dtype(dtype))


def randn(shape, dtype="float32", seed=0, scale=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    return asarray(rng.standard_normal(shape) * scale + shift, dtype)


def rand(shape, dtype="float32", seed=0):
    return asarray(np.random.default_rng(seed).random(shape), dtype)


def empty(shape, dtype="float32"):
    """An output array filled with NaN (or a sentinel), so an unwritten element shows."""
    if ON_GPU:
        t = torch.empty(shape, dtype=_torch_dtype(dtype), device=DEVICE)
        return t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-7)
    a = np.empty(shape, _np_dtype(dtype))
    a[...] = np.nan if dtype.startswith(("float", "bfloat")) else -7
    return a


def zeros(shape, dtype="float32"):
    if ON_GPU:
        return torch.zeros(shape, dtype=_torch_dtype(dtype), device=DEVICE)
    return np.zeros(shape, _np_dtype(dtype))


def dtype_name(a):
    return str(a.dtype).replace("torch.", "")


def stride(a, dim):
    """The stride of dimension dim in elements."""
    return a.stride(dim) if ON_GPU else a.strides[dim] // a.itemsize


def itemsize(a):
    return a.element_size() if ON_GPU else a.itemsize


def numel(a):
    return a.numel() if ON_GPU else a.size


def to_numpy(a):
    """float64 numpy array of any array or tensor."""
    if torch is not None and isinstance(a, torch.Tensor):
        return a.detach().float().cpu().numpy().astype(np.float64)
    return np.asarray(a).astype(np.float64)


def rel_error(got, ref):
    got, ref = to_numpy(got), to_numpy(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if np.isnan(got).any() and not np.isnan(ref).any():
        return float("inf")
    den = np.linalg.norm(ref.ravel())
    return float(np.linalg.norm((got - ref).ravel()) / (den if den > 0 else 1.0))


def check(what, got, ref, tol):
    """Print the relative error of got against ref and fail above tol."""
    err = rel_error(got, ref)
    where = "GPU" if ON_GPU else "interpreter"
    print(f"{what}: relative error {err:.2e} ({where})")
    if not err <= tol:
        raise SystemExit(f"{what}: relative error {err:.2e} is over {tol:.0e}")


# --- the same kernels under Triton, for the tables ---------------------------------------------------

def load_as_triton(path):
    """The tutorial file `path` executed again as a module in which `import
    nereid` (and its submodules) means `import triton`; None when Triton is
    not installed or there is no GPU."""
    if not ON_GPU or importlib.util.find_spec("triton") is None:
        return None
    real_import = builtins.__import__

    def import_(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.split(".")[0] == "nereid":
            name = "triton" + name[len("nereid"):]
        return real_import(name, globals, locals, fromlist, level)

    mod = types.ModuleType(os.path.basename(path)[:-3] + "_under_triton")
    mod.__file__ = path
    mod.__builtins__ = dict(vars(builtins), __import__=import_)
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    sys.modules[mod.__name__] = mod
    try:
        exec(code, mod.__dict__)
    except Exception as e:  # Triton may not take every construct; the table goes on without it
        print(f"(Triton could not load {os.path.basename(path)}: {type(e).__name__}: {e})")
        return None
    return mod


def report(nereid, plot_name, x_names, x_vals, ylabel, providers, metric, args=None):
    """A perf_report table: providers maps a line name to f(**x) -> the function to time;
    metric(ms, **x) turns a time into the table's unit."""
    names = list(providers)

    @nereid.testing.perf_report(nereid.testing.Benchmark(
        x_names=x_names, x_vals=x_vals, line_arg="provider", line_vals=names, line_names=names,
        plot_name=plot_name, ylabel=ylabel, args=args or {}))
    def bench(provider, **x):
        fn = providers[provider](**x)
        ms, lo, hi = nereid.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
        return metric(ms, **x), metric(hi, **x), metric(lo, **x)

    bench.run(print_data=True, save_path=os.environ.get("NEREID_TUTORIAL_OUT", ""))
