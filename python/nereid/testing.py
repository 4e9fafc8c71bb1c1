"""nereid.testing: benchmarking and checking helpers (as triton.testing).

- do_bench(fn, warmup=25, rep=100, quantiles=None, return_mode="mean"):
  the time of fn in ms on the GPU, measured with CUDA events around each
  call, the L2 cache flushed before each; on the interpreter (no GPU, or
  NEREID_INTERPRET=1) the same on the host clock.
- do_bench_cudagraph(fn, rep=20, ...): fn captured in a CUDA graph and
  replayed, which removes the launch overhead from the time.
- perf_report(Benchmark(...)): a decorator; ``.run(print_data=True,
  save_path=..., show_plots=...)`` prints a table, writes a CSV and, when
  matplotlib is installed, a PNG plot.
- assert_close(x, y, atol, rtol): numpy arrays, torch tensors or numbers.
"""
import csv
import math
import os
import statistics
import sys
import time


def _torch():
    return sys.modules.get("torch")


def _on_gpu():
    from .runtime.driver import CudaDriver, driver
    t = _torch()
    return type(driver.active) is CudaDriver and t is not None and t.cuda.is_available()


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        s = sorted(times)
        out = [_quantile(s, q) for q in quantiles]
        return out[0] if len(out) == 1 else out
    if return_mode == "all":
        return list(times)
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    if return_mode == "mean":
        return statistics.fmean(times)
    raise ValueError(f"return_mode must be one of min, max, mean, median, all; got {return_mode!r}")


def _quantile(sorted_times, q):
    """Linear interpolation between the closest ranks (as numpy.quantile)."""
    if not 0 <= q <= 1:
        raise ValueError(f"quantiles must be between 0 and 1, got {q}")
    if len(sorted_times) == 1:
        return sorted_times[0]
    pos = q * (len(sorted_times) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_times) - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (pos - lo)


def _clear_grads(grad_to_none):
    for x in grad_to_none or ():
        x.grad = None


def do_bench_host(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """do_bench on the host clock (the interpreter, or any host function)."""
    fn()
    t0 = time.perf_counter()
    runs = 0
    while runs < 5 and (runs == 0 or time.perf_counter() - t0 < 1.0):
        fn()
        runs += 1
    estimate_ms = max((time.perf_counter() - t0) * 1e3 / runs, 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        _clear_grads(grad_to_none)
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return _summarize(times, quantiles, return_mode)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """The time of fn in ms: warmup and rep are in ms.  Each timed call runs
    after an L2 flush (a 256 MB buffer zeroed) and between two CUDA events."""
    if not _on_gpu():
        return do_bench_host(fn, warmup, rep, grad_to_none, quantiles, return_mode)
    import torch
    fn()
    torch.cuda.synchronize()
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-4)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        _clear_grads(grad_to_none)
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return _summarize(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    """The time of fn in ms, replayed from a CUDA graph (no launch overhead).
    On the interpreter: do_bench_host."""
    if not _on_gpu():
        return do_bench_host(fn, 0, rep, grad_to_none, quantiles, return_mode)
    import torch
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        _clear_grads(grad_to_none)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        estimate_ms = max(start.elapsed_time(end), 1e-4)
        n_repeat = max(1, int(rep / estimate_ms))
        # One graph holding n_repeat calls, replayed a few times: the time per call.
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_repeat):
                _clear_grads(grad_to_none)
                fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(10):
            start.record()
            g.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / n_repeat)
    return _summarize(times, quantiles, return_mode)


def _to_numpy(x):
    import numpy as np
    t = _torch()
    if t is not None and isinstance(x, t.Tensor):
        x = x.detach().cpu()
        if x.dtype in (t.bfloat16,) or str(x.dtype).startswith("torch.float8"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Element-wise |x - y| <= atol + rtol * |y| (NaNs equal), for numpy
    arrays, torch tensors (any device) and numbers.  Defaults: atol 1e-2, rtol 0."""
    import numpy as np
    atol = 1e-2 if atol is None else atol
    rtol = 0.0 if rtol is None else rtol
    if callable(atol):
        atol = atol(getattr(x, "dtype", None))
    if callable(rtol):
        rtol = rtol(getattr(x, "dtype", None))
    a = _to_numpy(x)
    b = _to_numpy(y)
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        np.testing.assert_array_equal(a, b, err_msg=err_msg)
        return
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=rtol, equal_nan=True,
                               err_msg=err_msg)


class Benchmark:
    """What perf_report measures: for each x in x_vals (of the x_names
    arguments) and each line value (of line_arg), the decorated function's
    result (a number, or (value, min, max))."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None, xlabel="",
                 ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        if len(self.line_names) != len(self.line_vals):
            raise ValueError("Benchmark: line_names and line_vals differ in length")
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.styles = styles


class Mark:
    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run_one(self, bench, save_path, show_plots, print_data, **kwargs):
        rows = []
        for x in bench.x_vals:
            xv = x if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            xargs = dict(zip(bench.x_names, xv))
            row = dict(xargs)
            for lv, ln in zip(bench.line_vals, bench.line_names):
                r = self.fn(**xargs, **{bench.line_arg: lv}, **bench.args, **kwargs)
                if isinstance(r, (list, tuple)):
                    y, ymin, ymax = (list(r) + [None, None])[:3]
                else:
                    y, ymin, ymax = r, None, None
                row[ln] = y
                row[f"{ln}-min"] = ymin
                row[f"{ln}-max"] = ymax
            rows.append(row)
        cols = bench.x_names + bench.line_names
        title = bench.plot_name
        if print_data:
            print(f"{title}:")
            print(_table(rows, cols))
        if save_path:
            os.makedirs(save_path, exist_ok=True)
            with open(os.path.join(save_path, f"{title}.csv"), "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(cols)
                for r in rows:
                    w.writerow([r[c] for c in cols])
        if save_path or show_plots:
            _plot(bench, rows, save_path, show_plots)
        return rows

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        benches = self.benchmarks if isinstance(self.benchmarks, (list, tuple)) else [self.benchmarks]
        results = [self._run_one(b, save_path, show_plots, print_data, **kwargs) for b in benches]
        if save_path:
            with open(os.path.join(save_path, "results.html"), "w", encoding="utf-8") as f:
                f.write("<html><body>\n")
                for b in benches:
                    f.write(f"<image src=\"{b.plot_name}.png\"/>\n")
                f.write("</body></html>\n")
        if return_df:
            try:
                import pandas as pd
                dfs = [pd.DataFrame(r) for r in results]
            except ImportError:
                dfs = results
            return dfs[0] if len(dfs) == 1 else dfs
        return None


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _table(rows, cols):
    cells = [[str(i)] + [_fmt(r[c]) for c in cols] for i, r in enumerate(rows)]
    head = [""] + cols
    widths = [max(len(h), *(len(c[j]) for c in cells)) if cells else len(h) for j, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(cell, widths)) for cell in cells]
    return "\n".join(lines)


def _plot(bench, rows, save_path, show_plots):
    try:
        import matplotlib
        if not show_plots:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig = plt.figure()
    ax = plt.subplot()
    x = [r[bench.x_names[0]] for r in rows]
    for i, ln in enumerate(bench.line_names):
        ys = [r[ln] for r in rows]
        style = bench.styles[i] if bench.styles and i < len(bench.styles) else None
        kw = {"label": ln}
        if style:
            kw["color"], kw["linestyle"] = style[0], style[1]
        ax.plot(x, ys, **kw)
        lo = [r[f"{ln}-min"] for r in rows]
        hi = [r[f"{ln}-max"] for r in rows]
        if all(v is not None for v in lo + hi):
            ax.fill_between(x, lo, hi, alpha=0.15, color=kw.get("color"))
    ax.legend()
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    if bench.x_log:
        ax.set_xscale("log")
    if bench.y_log:
        ax.set_yscale("log")
    if show_plots:
        plt.show()
    if save_path:
        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    plt.close(fig)


def perf_report(benchmarks):
    """Decorator: ``@perf_report(Benchmark(...))`` makes ``f.run(...)`` measure f
    over the benchmark's x values and lines."""

    def wrapper(fn):
        return Mark(fn, benchmarks)

    return wrapper
