"""@autotune, Config, @heuristics; compiling configs on threads; the choice cached on disk."""
import importlib
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from nereid import _C
from conftest import poisoned, rel_err

jitmod = importlib.import_module("nereid.runtime.jit")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEREID_CACHE_DIR", str(tmp_path / "cache"))


def scale_configs():
    return [triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2),
            triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2)]


def make_scale(**kw):
    @triton.autotune(configs=scale_configs(), key=["n"], **kw)
    @triton.jit
    def scale(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * s, mask=m)

    return scale


def run_scale(k, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, 3.0)
    assert rel_err(out, 3.0 * x.astype(np.float64)) < 1e-6


def test_config():
    c = triton.Config({"BLOCK": 64, "G": 8}, num_warps=8, num_stages=4, maxnreg=128)
    assert c.all_kwargs() == {"BLOCK": 64, "G": 8, "num_warps": 8, "num_stages": 4, "maxnreg": 128}
    assert str(c) == "BLOCK: 64, G: 8, num_warps: 8, num_ctas: 1, num_stages: 4, maxnreg: 128"
    assert triton.Config({"BLOCK": 64}).all_kwargs() == {"BLOCK": 64, "num_warps": 4, "num_stages": 3}


def test_autotune_picks_one_config_per_key(rng):
    k = make_scale()
    run_scale(k, rng, 1000)
    assert k.best_config in k.configs and len(k.configs_timings) == 3
    first = dict(k.cache)
    run_scale(k, rng, 1000)
    assert k.cache == first  # no second tuning for the same key
    run_scale(k, rng, 77)
    assert len(k.cache) == 2
    assert all(t[0] < float("inf") for t in k.configs_timings.values())


def test_configs_compile_in_parallel_on_threads(rng, monkeypatch):
    threads = set()
    real = _C.compile

    def spy(*a, **kw):
        threads.add(threading.current_thread().name)
        time.sleep(0.05)  # a slower compiler: the pool hands each config its own thread
        return real(*a, **kw)

    monkeypatch.setattr(_C, "compile", spy)
    k = make_scale()
    run_scale(k, rng, 500)
    tuned = {t for t in threads if t.startswith("nereid-tune")}
    if (os.cpu_count() or 1) > 1:
        assert len(tuned) >= 2, threads


def test_the_compiler_is_thread_safe():
    """Many kernels compiled at once on threads give what they give one at a time."""
    import concurrent.futures
    src = textwrap.dedent('''
        import nereid as triton
        import nereid.language as tl

        @triton.jit
        def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, P: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
            acc = tl.sum(x * P, axis=0) + tl.max(x, axis=0)
            tl.store(out_ptr + tl.program_id(0), acc)
        ''')
    jobs = [(f"*fp32:16, *fp32:16, i32, {b}, {p}", arch) for b in (16, 64, 256) for p in (1, 3)
            for arch in (None, "sm_80", "sm_90")]
    serial = {j: _C.compile(src, "k.py", "k", j[0], 4, 3, None, False, j[1])[0] for j in jobs}

    def one(j):
        k = _C.compile(src, "k.py", "k", j[0], 4, 3, None, False, j[1])[0]
        return (k.ir, k.ptx) == (serial[j].ir, serial[j].ptx)

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        assert all(ex.map(one, jobs * 4))


def test_reset_to_zero_restore_value_and_hooks(rng):
    seen = []

    @triton.autotune(configs=scale_configs(), key=["n"], reset_to_zero=["acc_ptr"], restore_value=["x_ptr"],
                     pre_hook=lambda nargs: seen.append("pre"),
                     post_hook=lambda nargs, exception: seen.append(("post", exception)))
    @triton.jit
    def accumulate(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.atomic_add(acc_ptr, tl.sum(tl.where(m, x, 0.0), axis=0))
        tl.store(x_ptr + offs, x + 1.0, mask=m)  # benchmark runs must not leave this behind

    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    x0 = x.copy()
    acc = np.zeros(1, np.float32)
    accumulate[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, acc, n)
    # the benchmark runs were undone; the final launch ran once
    assert np.allclose(x, x0 + 1.0)
    assert abs(acc[0] - x0.astype(np.float64).sum()) < 1e-3
    assert "pre" in seen and ("post", None) in seen


def test_prune_configs_by(rng):
    calls = []

    def early(configs, nargs, **kw):
        calls.append(sorted(nargs))
        return [c for c in configs if c.kwargs["BLOCK"] >= 64]

    def model(**kw):
        return -kw["BLOCK"]  # the largest block looks fastest

    k = make_scale(prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 1})
    run_scale(k, rng, 400)
    assert k.best_config.kwargs["BLOCK"] == 128 and len(k.configs_timings) == 1
    assert calls and "x_ptr" in calls[0]


def test_heuristics(rng):
    @triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"]),
                        "EVEN": lambda args: args["n"] % 2 == 0})
    @triton.jit
    def fill(out_ptr, n, v, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + v + EVEN, mask=offs < n)

    for n in (5, 8):
        out = poisoned(n, np.float32)
        fill[(1,)](out, n, 2.0)
        assert (out == 2.0 + (n % 2 == 0)).all()


def test_autotune_over_heuristics(rng):
    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
    @triton.heuristics({"DOUBLE": lambda args: args["n"] > 100})
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, DOUBLE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        if DOUBLE:
            x = x * 2
        tl.store(out_ptr + offs, x, mask=m)

    for n in (50, 150):
        x = rng.standard_normal(n).astype(np.float32)
        out = poisoned(n, np.float32)
        k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        assert np.array_equal(out, x * (2 if n > 100 else 1))


def test_a_failing_config_is_skipped(rng):
    @triton.autotune(configs=[triton.Config({"BLOCK": 48}), triton.Config({"BLOCK": 64})], key=["n"])
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # 48 is not a power of 2
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    x = rng.standard_normal(100).astype(np.float32)
    out = poisoned(100, np.float32)
    k[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
    assert k.best_config.kwargs["BLOCK"] == 64 and np.array_equal(out, x)


def test_autotune_key_must_name_an_argument():
    with pytest.raises(ValueError, match="autotune key 'm' is not an argument of k"):
        @triton.autotune(configs=[triton.Config({})], key=["m"])
        @triton.jit
        def k(x_ptr, n):
            pass


SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    sys.path.insert(0, {python!r})
    import nereid as triton
    import nereid.language as tl

    @triton.autotune(configs=[triton.Config({{"BLOCK": 32}}), triton.Config({{"BLOCK": 64}}),
                              triton.Config({{"BLOCK": 128}})], key=["n"])
    @triton.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(x)
    scale[lambda m: (triton.cdiv(1000, m["BLOCK"]),)](x, out, 1000)
    assert (out == 2 * x).all()
    print("best", scale.best_config.kwargs["BLOCK"], "timed", scale.configs_timings is not None)
    ''')


def test_choice_is_cached_on_disk_across_processes(tmp_path):
    path = tmp_path / "tune.py"
    path.write_text(SCRIPT.format(python=os.environ.get("NEREID_TEST_PYTHONPATH") or os.path.join(ROOT, "python")))
    env = dict(os.environ, NEREID_CACHE_DIR=str(tmp_path / "c"), NEREID_PRINT_AUTOTUNING="1")

    def run():
        p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        return p.stdout

    first, second = run(), run()
    assert "timed True" in first and ": best BLOCK" in first
    assert "ms" in first  # NEREID_PRINT_AUTOTUNING printed each config's time
    assert "(cached on disk)" in second and "timed False" in second
    assert first.split("best ")[-1].split()[0] == second.split("best ")[-1].split()[0]
    assert list((tmp_path / "c" / "autotune").glob("*.json"))
    env["NEREID_CACHE_AUTOTUNING"] = "0"
    assert "timed True" in run()


def test_warmup_returns_a_compiled_kernel(rng):
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

    x = np.zeros(8, np.float32)
    ck = k.warmup(x, 8, BLOCK=8, num_warps=2, num_stages=1, grid=(1,))
    assert (x == 0).all()  # compiled, not run
    assert isinstance(ck, triton.CompiledKernel) and ck.name == "k"
    assert ck.metadata.num_warps == 2 and ck.metadata.num_stages == 1
    assert ck.n_regs == jitmod.ASSUMED_REGS_PER_THREAD and ck.n_spills == 0  # no driver here
    assert isinstance(ck.metadata.shared, int) and ck.metadata.shared >= 0
    assert "tt.func" in ck.asm["ir"] or "func" in ck.asm["ir"]
    ck._init_handles()
    ck[(1,)](x, 8, 8)  # the compiled kernel launches with every argument, constexprs included
    assert (x == 1).all()
