"""Autotuning and heuristics: @nereid.autotune, nereid.Config, @nereid.heuristics.

An Autotuner launches the best of its configs for each value of its key (the
values of the named arguments and the dtypes of the tensor arguments).  On a
key it has not seen, it compiles every config at once on threads (the C
compiler keeps no global state and runs without the GIL), benchmarks them,
and keeps the fastest, in memory and on disk (keyed by the kernel's source,
the configs, the key and the device), so that another process launching the
same kernel does not tune again.  NEREID_PRINT_AUTOTUNING=1 prints each
config's time and the choice.
"""
import concurrent.futures
import os
import time

from ..errors import CompilationError, OutOfResources
from . import cache as _cache
from .jit import JITFunction, _is_torch_tensor


class Config:
    """One point of the search: the constexpr values in ``kwargs`` and the
    launch options (num_warps, num_stages, maxnreg, num_ctas), with a
    pre_hook run before each launch of this config."""

    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self):
        out = dict(self.kwargs)
        out["num_warps"] = self.num_warps
        out["num_stages"] = self.num_stages
        if self.maxnreg is not None:
            out["maxnreg"] = self.maxnreg
        return out

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __eq__(self, other):
        return isinstance(other, Config) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))

    def __str__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                  f"maxnreg: {self.maxnreg}"]
        return ", ".join(parts)

    __repr__ = __str__


def _launch(fn, args, grid, warmup, kwargs):
    """fn's launch or warmup: through the C fast path (kernel[grid], kernel.warmup) when fn is the kernel
    itself."""
    if isinstance(fn, JITFunction):
        return fn.warmup(*args, grid=grid, **kwargs) if warmup else fn[grid](*args, **kwargs)
    return fn.run(*args, grid=grid, warmup=warmup, **kwargs)


class KernelInterface:
    """kernel[grid](*args, **kwargs) for the wrappers (autotuner, heuristics)."""

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            return self.run(*args, grid=grid, **kwargs)

        return launcher

    def warmup(self, *args, grid=(1,), **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)


def _innermost(fn):
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def _print_autotuning():
    return os.environ.get("NEREID_PRINT_AUTOTUNING", "") not in ("", "0")


def _device_name(args):
    for a in args:
        if _is_torch_tensor(a) and a.device.type == "cuda":
            from .driver import properties
            p = properties(a.device.index or 0)
            return p["name"] if p else f"cuda:{a.device.index}"
    return "interpreter"


class Autotuner(KernelInterface):
    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=None):
        self.fn = fn
        self.base_fn = _innermost(fn)
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({})]
        unknown = [k for k in key if k not in self.arg_names]
        if unknown:
            raise ValueError(f"autotune key {unknown[0]!r} is not an argument of {self.base_fn.__name__} "
                             f"({', '.join(self.arg_names)})")
        self.keys = list(key)
        self.cache = {}
        self.configs_timings = None
        self.best_config = None
        self.bench_time = 0.0
        self.reset_to_zero = [n for n in (reset_to_zero or [])]
        self.restore_value = [n for n in (restore_value or [])]
        for n in self.reset_to_zero + self.restore_value:
            if n not in self.arg_names:
                raise ValueError(f"autotune: {n!r} is not an argument of {self.base_fn.__name__}")
        self.user_pre_hook = pre_hook
        self.user_post_hook = post_hook
        prune_configs_by = prune_configs_by or {}
        self.perf_model = prune_configs_by.get("perf_model")
        self.configs_top_k = prune_configs_by.get("top_k", 1.0)
        self.early_config_prune = prune_configs_by.get("early_config_prune")
        self.num_warmups = warmup
        self.num_reps = rep
        self.use_cuda_graph = use_cuda_graph
        self.user_do_bench = do_bench
        if cache_results is None:
            cache_results = os.environ.get("NEREID_CACHE_AUTOTUNING", "1") not in ("", "0")
        self.cache_results = cache_results
        self.__name__ = self.base_fn.__name__
        self.__doc__ = getattr(fn, "__doc__", None)

    # -- hooks around each benchmarked launch ----------------------------------------------------------
    def _reset(self, nargs):
        for n in self.reset_to_zero:
            a = nargs[n]
            if hasattr(a, "zero_"):
                a.zero_()
            else:
                a[...] = 0

    def _pre(self, nargs, saved):
        self._reset(nargs)
        for n in self.restore_value:
            a = nargs[n]
            saved[n] = a.clone() if hasattr(a, "clone") else a.copy()
        if self.user_pre_hook:
            self.user_pre_hook(nargs)

    def _post(self, nargs, saved, exception):
        for n in self.restore_value:
            a = nargs[n]
            if hasattr(a, "copy_"):
                a.copy_(saved[n])
            else:
                a[...] = saved[n]
        if self.user_post_hook:
            self.user_post_hook(nargs, exception=exception)

    def _bencher(self, args):
        if self.user_do_bench is not None:
            return self.user_do_bench
        from .. import testing
        on_gpu = any(_is_torch_tensor(a) and a.device.type == "cuda" for a in args)
        kw = {}
        if self.num_warmups is not None:
            kw["warmup"] = self.num_warmups
        if self.num_reps is not None:
            kw["rep"] = self.num_reps
        if on_gpu and self.use_cuda_graph:
            return lambda f, quantiles: testing.do_bench_cudagraph(f, quantiles=quantiles, **kw)
        if on_gpu:
            return lambda f, quantiles: testing.do_bench(f, quantiles=quantiles, **kw)
        return lambda f, quantiles: testing.do_bench_host(f, quantiles=quantiles, **kw)

    # -- choosing -------------------------------------------------------------------------------------
    def _key(self, nargs):
        key = [nargs[k] for k in self.keys]
        key += [str(a.dtype) for a in nargs.values() if hasattr(a, "dtype") and hasattr(a, "shape")]
        return tuple(key)

    def prune_configs(self, kwargs, nargs=None):
        configs = self.configs
        if self.early_config_prune:
            configs = self.early_config_prune(configs, nargs if nargs is not None else kwargs, **kwargs)
            if not configs:
                raise ValueError(f"autotune of {self.__name__}: early_config_prune left no config")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(configs) * top_k)
            top_k = max(1, top_k)
            if len(configs) > top_k:
                est = {c: self.perf_model(**(nargs or {}), **kwargs, **c.all_kwargs()) for c in configs}
                configs = sorted(est, key=est.get)[:top_k]
        return configs

    def _compile_all(self, args, kwargs, grid, configs):
        """Compile every config on threads; returns the configs that failed to compile (with the error)."""
        failed = {}

        def one(cfg):
            try:
                self.fn.warmup(*args, grid=grid, **kwargs, **cfg.all_kwargs())
            except (CompilationError, OutOfResources, ValueError, TypeError) as e:
                failed[cfg] = e

        workers = min(len(configs), os.cpu_count() or 1, 16)
        if workers <= 1:
            for c in configs:
                one(c)
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nereid-tune") as ex:
                list(ex.map(one, configs))
        return failed

    def _bench(self, cfg, args, kwargs, grid, nargs, bencher):
        current = dict(kwargs, **cfg.all_kwargs())
        full = dict(nargs, **current)
        saved = {}

        def call():
            if cfg.pre_hook:
                cfg.pre_hook(full)
            self._pre(full, saved)
            exc = None
            try:
                self.fn.run(*args, grid=grid, **current)
            except Exception as e:
                exc = e
                raise
            finally:
                self._post(full, saved, exc)

        try:
            r = bencher(call, quantiles=(0.5, 0.2, 0.8))
        except (CompilationError, OutOfResources):
            return [float("inf")] * 3
        return list(r) if isinstance(r, (list, tuple)) else [r, r, r]

    def _disk_key(self, key, args):
        return _cache.key_of("autotune", self.base_fn.cache_key(), repr(key), [str(c) for c in self.configs],
                             self.keys, _device_name(args))

    def _tune(self, key, args, kwargs, grid, nargs):
        t0 = time.perf_counter()
        pruned = self.prune_configs(kwargs, nargs)
        failed = self._compile_all(args, kwargs, grid, pruned)
        bencher = self._bencher(args)
        timings = {}
        for c in pruned:
            timings[c] = [float("inf")] * 3 if c in failed else self._bench(c, args, kwargs, grid, nargs, bencher)
        self.bench_time = time.perf_counter() - t0
        best = min(timings, key=lambda c: timings[c][0])
        if timings[best][0] == float("inf"):
            first = next(iter(failed.values()), None)
            raise first if first is not None else RuntimeError(f"autotune of {self.__name__}: no config ran")
        self.configs_timings = timings
        if _print_autotuning():
            for c in pruned:
                why = f"  ({type(failed[c]).__name__})" if c in failed else ""
                print(f"autotune {self.__name__} {key}: {c}: {timings[c][0]:.4f} ms{why}")
            print(f"autotune {self.__name__} {key}: best {best} after {self.bench_time:.2f} s")
        return best

    def run(self, *args, grid=None, warmup=False, **kwargs):
        nargs = dict(zip(self.arg_names, args))
        nargs.update({k: v for k, v in kwargs.items() if k in self.arg_names})
        self.nargs = nargs
        used = len(self.configs) > 1
        config = self.configs[0]
        if used:
            key = self._key(nargs)
            config = self.cache.get(key)
            if config is None and self.cache_results:
                config = self._load(key, args)
                if config is not None and _print_autotuning():
                    print(f"autotune {self.__name__} {key}: {config} (cached on disk)")
            if config is None:
                config = self._tune(key, args, kwargs, grid, nargs)
                if self.cache_results:
                    self._store(key, args, config)
                self._reset(nargs)  # the benchmark runs' sums are not the caller's
            self.cache[key] = config
        self.best_config = config
        full = dict(nargs, **kwargs, **config.all_kwargs())
        if config.pre_hook is not None:
            config.pre_hook(full)
        clash = [k for k in config.all_kwargs() if k in kwargs]
        if clash:
            raise ValueError(f"{self.__name__}: {clash[0]!r} is set both by the autotune config and by the caller; "
                             f"leave it to the config")
        return _launch(self.fn, args, grid, warmup, dict(kwargs, **config.all_kwargs()))

    def _load(self, key, args):
        doc = _cache.load_json("autotune", self._disk_key(key, args))
        if not doc:
            return None
        try:
            i = int(doc["index"])
            if 0 <= i < len(self.configs) and str(self.configs[i]) == doc["config"]:
                return self.configs[i]
        except (KeyError, TypeError, ValueError):
            pass
        return None

    def _store(self, key, args, config):
        timings = {str(c): t[0] for c, t in (self.configs_timings or {}).items()}
        _cache.store_json("autotune", self._disk_key(key, args), {
            "kernel": self.__name__, "key": repr(key), "index": self.configs.index(config), "config": str(config),
            "timings_ms": timings})


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=None):
    """Decorator: launch the fastest of `configs` for each value of `key`.

    key: names of arguments whose values select the config (the dtypes of
    tensor arguments count too).  prune_configs_by: {"perf_model": f,
    "top_k": n, "early_config_prune": g}.  reset_to_zero / restore_value:
    names of arguments zeroed before / restored after each benchmarked
    launch.  warmup, rep: the benchmark's times in ms.  do_bench: a
    benchmarking function of your own.  cache_results: keep choices on disk
    (default on; NEREID_CACHE_AUTOTUNING=0 turns it off)."""

    def decorator(fn):
        return Autotuner(fn, _innermost(fn).arg_names, configs, key, reset_to_zero, restore_value, pre_hook,
                         post_hook, prune_configs_by, warmup, rep, use_cuda_graph, do_bench, cache_results)

    return decorator


class Heuristics(KernelInterface):
    """Constexpr values computed from the other arguments at each launch."""

    def __init__(self, fn, arg_names, values):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.values = dict(values)
        self.__name__ = _innermost(fn).__name__

    def run(self, *args, grid=None, warmup=False, **kwargs):
        for name, heur in self.values.items():
            kwargs[name] = heur({**dict(zip(self.arg_names, args)), **kwargs})
        return _launch(self.fn, args, grid, warmup, kwargs)


def heuristics(values):
    """Decorator: ``@heuristics({"BLOCK": lambda args: ...})`` computes
    constexpr arguments from the others (a dict of all arguments by name)."""

    def decorator(fn):
        return Heuristics(fn, _innermost(fn).arg_names, values)

    return decorator

