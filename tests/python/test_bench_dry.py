"""The GPU benchmark suite (bench/) without a GPU: the dry run end to end
(made-up times through the real worker, supervisor and reports), recovery
from a worker that crashes, hangs or faults, resuming, the reports and
BENCHMARKS.md, the reference checks, and every benchmark kernel on the
reference interpreter against numpy in float64.

With torch installed (not needed otherwise), the workloads themselves also
run on tiny cases: torch on the CPU, Nereid on the interpreter."""
import csv
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import poisoned, rel_err

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import harness  # noqa: E402
import report  # noqa: E402
import workloads as W  # noqa: E402
from workloads import matmul as MM  # noqa: E402

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - installed by tests/requirements.txt
    ml_dtypes = None


def run_script(*args, timeout=120):
    env = dict(os.environ)
    env.pop("NEREID_VERIFY_EACH", None)
    return subprocess.run([sys.executable] + list(args), capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=ROOT)


def run_bench(tmp_path, *args, timeout=120):
    return run_script(os.path.join(BENCH, "run.py"), "--dry-run", "--out", str(tmp_path), *args, timeout=timeout)


def n_cases(only=None, quick=False):
    return sum(len(w.cases(quick)) for w in W.select(only))


def one_file(tmp_path, pattern):
    found = sorted(tmp_path.glob(pattern))
    assert len(found) == 1, found
    return found[0]


# --- the dry run ------------------------------------------------------------------------------------

def test_dry_run_quick_writes_table_csv_and_json(tmp_path):
    r = run_bench(tmp_path, "--quick", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "== softmax: fused softmax" in r.stdout
    assert "nereid/best" in r.stdout
    assert "run: done" in r.stdout
    doc = json.loads(one_file(tmp_path, "*.json").read_text())
    assert doc["kind"] == "suite" and doc["machine"]["dry_run"] is True
    assert len(doc["rows"]) == n_cases(quick=True)
    for row in doc["rows"]:
        w = next(w for w in W.all_workloads() if w.name == row["workload"])
        for s in harness.SYSTEMS:
            res = row["systems"][s]
            assert res["status"] == ("ok" if s in w.systems else "skipped"), (row["id"], s, res)
            if res["status"] == "ok":
                assert res["throughput"] == pytest.approx(report.throughput(row["metric"], row["work"], res["ms"]))
        if "nereid" in w.systems:
            best = min(row["systems"][s]["ms"] for s in ("torch", "triton"))
            assert row["ratio"] == pytest.approx(best / row["systems"]["nereid"]["ms"])
        else:
            assert row["ratio"] is None
    with open(one_file(tmp_path, "*.csv"), newline="") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == n_cases(quick=True)
    assert {"workload", "shape", "dtype", "nereid_us", "triton_throughput", "nereid_over_best"} <= set(lines[0])


def test_dry_run_all_cases(tmp_path):
    r = run_bench(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = report.load_events(one_file(tmp_path, "*.events.jsonl"))
    assert len(doc[1]) == n_cases()
    shapes = {(row["workload"], row["shape"], row["dtype"]) for row in doc[1]}
    assert ("vector_add", "2^26", "fp32") in shapes  # the anchor's size
    assert ("softmax", "4096x32768", "fp32") in shapes
    assert ("matmul_llm", "1x14336x4096", "bf16") in shapes
    assert ("matmul", "8192", "bf16") in shapes


def test_only_selects_families_and_rejects_unknown_names(tmp_path):
    assert [w.name for w in W.select("matmul")] == ["matmul", "matmul_llm", "matmul_fp8", "matmul_tf32",
                                                    "matmul_epilogue"]
    assert [w.name for w in W.select("layer_norm,copy")] == ["copy", "layer_norm_fwd", "layer_norm_bwd"]
    r = run_bench(tmp_path, "--only", "softmax,nosuch")
    assert r.returncode == 2 and "unknown workload 'nosuch'" in r.stderr
    r = run_bench(tmp_path, "--systems", "torch,cublas")
    assert r.returncode == 2 and "unknown system(s) cublas" in r.stderr


def test_systems_subset(tmp_path):
    r = run_bench(tmp_path, "--only", "vector_add", "--quick", "--systems", "nereid,torch", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(one_file(tmp_path, "*.json").read_text())["rows"]
    assert all(set(row["systems"]) == {"torch", "nereid"} for row in rows)


@pytest.mark.parametrize("mode", ["crash", "hang", "fault"])
def test_a_dying_worker_fails_one_result_and_the_run_goes_on(tmp_path, mode):
    case = "softmax|4096x4096|fp16"
    r = run_bench(tmp_path, "--only", "softmax", "--quick", "--json", "--stall-s", "2",
                  "--dry-run-fail", f"{mode}:triton:{case}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "starting a new one" in r.stdout
    rows = {row["id"]: row for row in json.loads(one_file(tmp_path, "*.json").read_text())["rows"]}
    assert len(rows) == n_cases("softmax", quick=True)
    for cid, row in rows.items():
        for s, res in row["systems"].items():
            expect = "FAILED" if (cid, s) == (case, "triton") else "ok"
            assert res["status"] == expect, (cid, s, res)
    note = rows[case]["systems"]["triton"]["note"]
    assert {"crash": "exit status 1", "hang": "no progress", "fault": "CUDA context was lost"}[mode] in note
    assert rows[case]["best_other"] == "torch"  # Triton failed: Nereid is compared with torch


def test_time_limit_then_resume(tmp_path):
    case = "layer_norm_fwd|4096x1024|fp16"
    r = run_bench(tmp_path, "--only", "layer_norm", "--quick", "--time-limit", "2", "--stall-s", "100",
                  "--dry-run-fail", f"hang:nereid:{case}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "stopped (time limit)" in r.stdout and "--resume" in r.stdout
    events = one_file(tmp_path, "*.events.jsonl")
    _, rows, _ = report.load_events(events)
    assert "nereid" not in rows[0]["systems"]
    r = run_script(os.path.join(BENCH, "run.py"), "--dry-run", "--resume", str(events), "--only", "layer_norm",
                   "--quick", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    _, rows, _ = report.load_events(events)
    assert len(rows) == n_cases("layer_norm", quick=True)
    assert all(res["status"] == "ok" for row in rows for res in row["systems"].values())


def test_list(tmp_path):
    r = run_script(os.path.join(BENCH, "run.py"), "--list", "--only", "matmul_llm")
    assert r.returncode == 0
    assert "matmul_llm (TFLOP/s, 12 cases)" in r.stdout and "4096x4096x14336" in r.stdout


# --- the other scripts and BENCHMARKS.md ------------------------------------------------------------

def test_launch_and_compile_time_dry_runs_and_update_md(tmp_path):
    r = run_bench(tmp_path, "--only", "softmax,matmul_fp8,attention", "--quick", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_script(os.path.join(BENCH, "launch.py"), "--dry-run", "--json", str(tmp_path / "launch.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nereid" in r.stdout and json.loads((tmp_path / "launch.json").read_text())["kind"] == "launch"
    r = run_script(os.path.join(BENCH, "compile_time.py"), "--dry-run", "--json", str(tmp_path / "compile.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "compile.json").read_text())
    assert doc["kind"] == "compile" and {r["kernel"] for r in doc["rows"]} >= {"add_kernel", "matmul_kernel"}
    md = tmp_path / "BENCHMARKS.md"
    results = [str(p) for p in tmp_path.glob("*.json")]
    r = run_script(os.path.join(BENCH, "update_md.py"), *results, "-o", str(md))
    assert r.returncode == 0, r.stdout + r.stderr
    text = md.read_text()
    assert "Dry run: the numbers below are made up" in text
    assert "### softmax: fused softmax" in text and "### matmul_fp8" in text
    assert "| 4096x1024 | fp16 |" in text
    assert "### attention_fwd: " in text and "| L4096 d128 causal | fp16 |" in text
    assert "## Launch overhead" in text and "| nereid | 9.00 |" in text
    assert "## Compile time" in text and "| matmul_kernel |" in text
    assert "python3 bench/run.py --dry-run" in text


def test_update_md_template(tmp_path):
    md = tmp_path / "B.md"
    r = run_script(os.path.join(BENCH, "update_md.py"), "--template", "-o", str(md))
    assert r.returncode == 0, r.stdout + r.stderr
    text = md.read_text()
    assert "Not measured yet" in text
    for w in W.all_workloads():
        assert f"### {w.name}: " in text
    assert "| 4096x14336x4096 | bf16 | — |" in text
    r = run_script(os.path.join(BENCH, "update_md.py"))
    assert r.returncode == 2


def test_report_table_with_failures():
    rows = [report.summarize({"id": "a|1|fp16", "workload": "softmax", "title": "t", "metric": "GB/s",
                              "shape": "1", "dtype": "fp16", "work": 2e9, "x": 1, "series": "fp16",
                              "systems": {"torch": {"status": "ok", "ms": 1.0, "label": "torch.softmax"},
                                          "triton": {"status": "ok", "ms": 0.5, "label": "row"},
                                          "nereid": {"status": "FAILED", "note": "row: boom"}}})]
    assert rows[0]["best_other"] == "triton" and rows[0]["ratio"] is None
    assert rows[0]["systems"]["triton"]["throughput"] == pytest.approx(4000.0)
    text = report.table(rows)
    assert "FAILED" in text and "softmax 1 fp16 nereid: FAILED: row: boom" in text


# --- checks and timing helpers ----------------------------------------------------------------------

def test_rel_error_and_tolerances():
    ref = np.array([1.0, -2.0, 3.0])
    assert harness.rel_error(ref.astype(np.float32), ref) == 0.0
    assert harness.rel_error(ref * (1 + 1e-3), ref) == pytest.approx(1e-3)
    bad = ref.copy()
    bad[1] = np.nan
    assert math.isnan(harness.rel_error(bad, ref)) and not harness.passes(harness.rel_error(bad, ref), "fp16")
    assert not harness.passes(harness.rel_error(np.array([1.0, np.inf, 3.0]), ref), "bf16")
    assert harness.rel_error(np.zeros(3), np.zeros(3)) == 0.0
    assert math.isnan(harness.max_rel_error((ref, bad), (ref, ref)))
    with pytest.raises(ValueError):
        harness.rel_error(np.zeros(2), np.zeros(3))
    for dtype in ("fp32", "tf32", "fp16", "bf16", "fp8e4m3"):
        assert 0 < harness.tolerance(dtype) < 0.05
    for w in W.all_workloads():
        for c in w.cases(False):
            harness.tolerance(c.dtype)  # every case's dtype has a tolerance
    assert harness.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    assert harness.percentile([1.0, 2.0], 0.2) == pytest.approx(1.2)


def test_matmul_configs():
    for M, N, dtype in [(1, 4096, "bf16"), (16, 14336, "bf16"), (128, 4096, "bf16"), (256, 256, "fp16"),
                        (4096, 4096, "fp16"), (8192, 8192, "fp8e4m3"), (4096, 4096, "tf32")]:
        cfgs = MM.configs(M, N, dtype)
        assert 1 <= len(cfgs) <= 10
        for bm, bn, bk, gm, warps, stages, *kind in cfgs:
            assert kind in ([], ["persistent"], ["tma"], ["tma-persistent"], ["tma-ws"], ["tma-ws-persistent"],
                            ["splitk2"], ["splitk4"], ["tma-splitk2"])
            for v in (bm, bn, bk, warps):
                assert v & (v - 1) == 0, (M, N, dtype, bm, bn, bk)
            assert bm >= 16 and bn >= 16 and bk >= 16 and stages >= 2
            # shared memory of the operand tiles, all stages, under the 227 KB of an H100
            assert (bm + bn) * bk * W.ITEMSIZE[dtype] * stages <= 227 * 1024
    assert MM.configs(1, 4096, "bf16")[0][0] == 16
    # K is split for skinny outputs only
    split = {M: [c[6] for c in MM.configs(M, N, "bf16") if len(c) == 7 and "splitk" in c[6]]
             for M, N in [(1, 4096), (128, 4096), (512, 512), (2048, 2048), (4096, 4096)]}
    assert split == {1: ["splitk2", "splitk4"], 128: ["splitk2", "splitk4", "tma-splitk2"], 512: [], 2048: [],
                     4096: []}
    assert [c[2] for c in MM.configs(4096, 4096, "fp8e4m3")] == [2 * c[2] for c in MM.configs(4096, 4096, "fp16")]
    assert [MM.config_label(c) for c in MM.configs(2048, 2048, "fp16") if len(c) == 7] == \
        ["64x128x64 g8 w4 s4 tma", "128x128x64 g8 w4 s4 tma"]
    big = MM.configs(4096, 4096, "fp16")
    assert any(len(c) == 7 and c[6] == "persistent" for c in big)
    assert MM.config_label(big[-2]).endswith(" tma-persistent") and MM.config_label(big[-1]).endswith(" tma-ws-persistent")


# --- loading one kernel file under a compiler --------------------------------------------------------

def test_load_kernel_file_binds_triton_to_the_chosen_compiler():
    import nereid
    mod = harness.load_kernels("vector_add", "nereid")
    assert mod.triton is nereid and mod.tl is nereid.language
    assert isinstance(mod.add_kernel, nereid.JITFunction)
    # Nereid's jit reads the kernel's source from the file itself.
    assert "def add_kernel(" in mod.add_kernel._module_source().text
    assert mod.add_kernel._module_source().filename == os.path.join(BENCH, "kernels", "vector_add.py")
    again = harness.load_kernels("vector_add", "nereid")
    assert again is not mod and again.add_kernel is not mod.add_kernel
    with pytest.raises(ValueError):
        harness.load_kernels("vector_add", "cuda")


def test_examples_load_under_nereid():
    import nereid
    mod = harness.load_kernel_file(os.path.join(ROOT, "examples", "matmul.py"), "nereid")
    assert mod.triton is nereid and isinstance(mod.matmul_kernel, nereid.JITFunction)


# --- the benchmark kernels on the interpreter --------------------------------------------------------

def kernels(stem):
    return harness.load_kernels(stem, "nereid")


def test_vector_add_kernel(rng):
    mod = kernels("vector_add")
    n = 5000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = poisoned(n, np.float32)
    assert mod.add(x, y, out, n) is out
    assert rel_err(out, x.astype(np.float64) + y) < harness.tolerance("fp32")


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype,name", [(np.float32, "fp32"), (np.float16, "fp16")])
@pytest.mark.parametrize("cols", [1, 300, 1024])
def test_softmax_kernels(rng, dtype, name, cols):
    mod = kernels("softmax")
    rows = 9
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    out = poisoned((rows, cols), dtype)
    mod.softmax_row(out, x, rows, cols, cols, cols)
    assert rel_err(out, softmax_ref(x)) < harness.tolerance(name)
    out = poisoned((rows, cols), dtype)
    mod.softmax_persistent(out, x, rows, cols, cols, cols, num_sms=2)  # 2 programs loop over 9 rows
    assert rel_err(out, softmax_ref(x)) < harness.tolerance(name)


def layer_norm_ref(x, w, b, dy, eps):
    x64, w64, dy64 = x.astype(np.float64), w.astype(np.float64), dy.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    xhat = (x64 - mean) * rstd
    y = xhat * w64 + b.astype(np.float64)
    wdy = w64 * dy64
    dx = (wdy - (xhat * (xhat * wdy).mean(axis=1, keepdims=True) + wdy.mean(axis=1, keepdims=True))) * rstd
    return y, mean[:, 0], rstd[:, 0], dx, (dy64 * xhat).sum(axis=0), dy64.sum(axis=0)


@pytest.mark.parametrize("rows,cols", [(300, 200), (7, 1000), (3, 1), (1000, 24)])
def test_layer_norm_kernels(rng, rows, cols):
    mod = kernels("layer_norm")
    eps = 1e-5
    x = rng.standard_normal((rows, cols)).astype(np.float16)
    w = (rng.random(cols) + 0.5).astype(np.float16)
    b = rng.standard_normal(cols).astype(np.float16)
    dy = rng.standard_normal((rows, cols)).astype(np.float16)
    y_ref, mean_ref, rstd_ref, dx_ref, dw_ref, db_ref = layer_norm_ref(x, w, b, dy, eps)
    y, mean, rstd = poisoned((rows, cols), np.float16), poisoned(rows, np.float32), poisoned(rows, np.float32)
    mod.forward(y, mean, rstd, x, w, b, rows, cols, cols, eps)
    assert rel_err(y, y_ref) < harness.tolerance("fp16")
    assert rel_err(mean, mean_ref) < 1e-5 and rel_err(rstd, rstd_ref) < 1e-5
    # one program for all rows, several rows each, one row each (or none); the default warps and 16
    for programs, warps in ((1, None), (5, None), (256, None), (5, 16)):
        parts = mod.partials_for(rows, programs)
        dw_part, db_part = poisoned((parts, cols), np.float32), poisoned((parts, cols), np.float32)
        dx, dw, db = poisoned((rows, cols), np.float16), poisoned(cols, np.float16), poisoned(cols, np.float16)
        mod.backward(dx, dw, db, dy, x, w, mean, rstd, dw_part, db_part, rows, cols, cols, programs, num_warps=warps)
        assert rel_err(dx, dx_ref) < harness.tolerance("fp16")
        assert rel_err(dw, dw_ref) < harness.tolerance("fp16")
        assert rel_err(db, db_ref) < harness.tolerance("fp16")


def gelu_ref(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


MATMUL_DTYPES = [("fp32", np.float32, np.float32), ("fp16", np.float16, np.float16)]
if ml_dtypes is not None:
    MATMUL_DTYPES += [("bf16", ml_dtypes.bfloat16, ml_dtypes.bfloat16),
                      ("fp8e4m3", ml_dtypes.float8_e4m3fn, np.float16)]


@pytest.mark.parametrize("name,dtype,out_dtype", MATMUL_DTYPES)
@pytest.mark.parametrize("epilogue", [False, True])
@pytest.mark.parametrize("M", [1, 70])
def test_matmul_kernel(rng, name, dtype, out_dtype, epilogue, M):
    mod = kernels("matmul")
    N, K = 90, 100
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((N, K)).astype(dtype).T  # column-major, as the fp8 workload passes it
    if name == "fp16":
        b = np.ascontiguousarray(b)  # row-major
    bias = rng.standard_normal(N).astype(out_dtype) if epilogue else None
    c = poisoned((M, N), out_dtype)
    item = a.itemsize
    cfg = (16, 32, 32, 4, 4, 3) if M == 1 else (32, 64, 32, 2, 4, 3)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:
        ref = gelu_ref(ref + bias.astype(np.float64))
    tol = harness.tolerance("tf32" if name == "fp32" else name)
    # the grid of tiles, then persistent programs: 3 of them walk the tiles (one when M = 1), then K
    # split 3 ways (4 K blocks: the last split has none) and 2 ways, twice each: the tile counters the
    # last split of a tile resets serve the next launch
    for config in (cfg, cfg + ("persistent",), cfg + ("splitk3",), cfg + ("splitk3",), cfg + ("splitk2",)):
        c = poisoned((M, N), out_dtype)
        mod.matmul(c, a, b, bias, M, N, K, (a.strides[0] // item, a.strides[1] // item),
                   (b.strides[0] // item, b.strides[1] // item), (N, 1), config, "gelu" if epilogue else "",
                   num_sms=3)
        assert rel_err(c.astype(np.float64), ref) < tol, config
    assert mod._SPLITK_BUFFERS and all(not count.any() for _, count in mod._SPLITK_BUFFERS.values())
    # row-major operands also through host tensor descriptors (rows of a multiple of 16 bytes;
    # ragged edges: the descriptors' bounds mask them), one tile per program and persistent, with
    # and without warp specialization
    N, K = 80, 112
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = poisoned((M, N), out_dtype)
    bias = rng.standard_normal(N).astype(out_dtype) if epilogue else None
    assert not mod.tma_applies(a, np.zeros((K, N + 1), dtype)[:, :N], c, None, "")  # rows not 16-byte multiples
    ref = a.astype(np.float64) @ b.astype(np.float64)
    if epilogue:  # the bias and GELU applied before the descriptor's store
        ref = gelu_ref(ref + bias.astype(np.float64))
    # B row-major, and column-major (a descriptor of B^T, its tiles read transposed)
    for bb in (b, np.asfortranarray(b)):
        assert mod.tma_applies(a, bb, c, bias, "gelu" if epilogue else "")
        for kind in ("tma", "tma-persistent", "tma-ws", "tma-ws-persistent", "tma-splitk2", "tma-splitk3"):
            c = poisoned((M, N), out_dtype)
            mod.matmul(c, a, bb, bias, M, N, K, (K, 1), (bb.strides[0] // item, bb.strides[1] // item), (N, 1),
                       cfg + (kind,), "gelu" if epilogue else "", num_sms=3)
            assert rel_err(c.astype(np.float64), ref) < tol, (kind, bb.strides)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_kernels(rng, causal):
    # The workloads' launch functions on small blocks, with numpy arrays.
    import attention as example  # examples/, on the path through conftest
    mod = kernels("attention")
    B, H, L, D = 1, 2, 100, 64
    q, k, v, do = (rng.standard_normal((B, H, L, D)).astype(np.float16) for _ in range(4))
    scale = D ** -0.5
    ref_o, ref_dq, ref_dk, ref_dv = example.reference(q, k, v, causal, scale, do)
    o, m = poisoned(q.shape, np.float16), poisoned((B, H, L), np.float32)
    assert mod.attention(q, k, v, o, m, scale, causal, (32, 16, 4, 2)) is o
    assert rel_err(o, ref_o) < harness.tolerance("fp16")
    grads = [poisoned(q.shape, np.float16) for _ in range(3)]
    delta = poisoned((B, H, L), np.float32)
    mod.attention_backward(q, k, v, o, m, do, *grads, delta, scale, causal, (16, 32, 32, 16, 4, 2))
    for got, ref in zip(grads, (ref_dq, ref_dk, ref_dv)):
        assert rel_err(got, ref) < harness.tolerance("fp16")
    # the forward through host tensor descriptors, its key loop warp-specialized or not
    L = 128
    q, k, v = (rng.standard_normal((B, H, L, D)).astype(np.float16) for _ in range(3))
    ref_o = example.reference(q, k, v, causal, scale)
    for kind in ("desc", "desc-ws", "desc-wsp"):
        o, m = poisoned(q.shape, np.float16), poisoned((B, H, L), np.float32)
        if kind == "desc-wsp" and causal:
            with pytest.raises(ValueError, match="no causal mask"):
                mod.attention(q, k, v, o, m, scale, causal, (32, 32, 8, 3, kind))
            continue
        # desc-wsp: 3 programs over 8 tiles
        cfg = (32, 32, 8, 3, kind) if kind == "desc-wsp" else (64, 32, 8, 3, kind)
        assert mod.attention(q, k, v, o, m, scale, causal, cfg) is o
        assert rel_err(o, ref_o) < harness.tolerance("fp16"), kind
    # through descriptors: one K tile for Q K^T and dS K, one Q tile for K Q^T and dS^T Q
    do = rng.standard_normal((B, H, L, D)).astype(np.float16)
    ref_o, ref_dq, ref_dk, ref_dv = example.reference(q, k, v, causal, scale, do)
    o, m = poisoned(q.shape, np.float16), poisoned((B, H, L), np.float32)
    mod.attention(q, k, v, o, m, scale, causal, (32, 16, 4, 2))
    grads = [poisoned(q.shape, np.float16) for _ in range(3)]
    delta = poisoned((B, H, L), np.float32)
    mod.attention_backward(q, k, v, o, m, do, *grads, delta, scale, causal, (16, 32, 64, 32, 4, 2, "desc"))
    for got, ref in zip(grads, (ref_dq, ref_dk, ref_dv)):
        assert rel_err(got, ref) < harness.tolerance("fp16")
    with pytest.raises(ValueError, match="descriptor backward"):
        mod.attention_backward(q, k, v, o, m, do, *grads, delta, scale, causal, (16, 32, 48, 32, 4, 2, "desc"))
    # a key block wider than the query block would cross the causal diagonal unmasked
    for config in ((32, 64, 4, 2), (64, 128, 4, 3, "desc")):
        with pytest.raises(ValueError, match="BLOCK_M must be a multiple of BLOCK_N"):
            mod.attention(q, k, v, o, m, scale, causal, config)


def test_launch_kernel(rng):
    mod = kernels("launch")
    x, y = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    out = poisoned(128, np.float32)
    mod.axpby_kernel[(1,)](x, y, out, 100, 2.0, 0.5, BLOCK=128)
    assert rel_err(out[:100], 2.0 * x[:100].astype(np.float64) + 0.5 * y[:100]) < 1e-6
    assert np.isnan(out[100:]).all()


# --- the workloads themselves, with torch on the CPU ------------------------------------------------

class HostTimer:
    """CudaTimer's interface on the host clock: three runs, the middle one."""

    def __call__(self, fn, rep_ms=None, warmup_ms=None):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        times.sort()
        return harness.Timing(ms=times[1] * 1e3, p20=times[0] * 1e3, p80=times[2] * 1e3, reps=3,
                              host_us=times[1] * 1e6)

    def interleaved(self, fns, rep_ms=None, warmup_ms=None):
        return [self(fn) for fn in fns]


class CpuEnv:
    """The worker's environment with torch on the CPU and Nereid on the interpreter."""

    def __init__(self):
        torch = pytest.importorskip("torch")
        import torch.nn.functional as F
        self.torch, self.F, self.device, self.num_sms = torch, F, "cpu", 2
        self.screen_ms = 1.0
        self.kernels = harness.KernelFiles()

        self.timer = HostTimer()

    def sync(self):
        pass

    def ensure_alive(self):
        pass

    def release(self):
        pass


class ListLog:
    def __init__(self):
        self.events = []

    def write(self, event, **fields):
        self.events.append(dict(fields, event=event))


TINY = [("copy", "fp32", {"n": 1000}), ("vector_add", "fp32", {"n": 5000}),
        ("softmax", "fp16", {"rows": 8, "cols": 300}), ("softmax", "fp32", {"rows": 8, "cols": 300}),
        ("layer_norm_fwd", "fp16", {"rows": 16, "cols": 200}), ("layer_norm_bwd", "fp16", {"rows": 300, "cols": 200}),
        ("matmul", "fp16", {"M": 70, "N": 90, "K": 100}), ("matmul", "bf16", {"M": 70, "N": 90, "K": 100}),
        ("matmul_llm", "bf16", {"M": 1, "N": 64, "K": 128}), ("matmul_fp8", "fp8e4m3", {"M": 64, "N": 64, "K": 64}),
        ("matmul_tf32", "tf32", {"M": 64, "N": 48, "K": 80}), ("matmul_epilogue", "fp16", {"M": 64, "N": 96, "K": 64})]


@pytest.mark.parametrize("workload,dtype,params", TINY, ids=[f"{w}-{d}" for w, d, _ in TINY])
def test_workload_on_cpu(monkeypatch, workload, dtype, params):
    import worker
    env = CpuEnv()
    monkeypatch.setattr(MM, "configs", lambda M, N, dt: [(16, 32, 32, 4, 4, 3), (32, 32, 16, 2, 4, 2)])
    wl = next(w for w in W.all_workloads() if w.name == workload)
    case = W.Case(workload, "tiny", dtype, work=1e6, x=1, series=dtype, params=params)
    log = ListLog()
    worker.run_case(env, log, wl, case, ["torch", "nereid"])
    results = {e["system"]: e for e in log.events if e["event"] == "result"}
    assert results["torch"]["status"] == "ok", results["torch"]
    if "nereid" in wl.systems:
        assert results["nereid"]["status"] == "ok", results["nereid"]
        assert results["nereid"]["err"] < harness.tolerance(dtype)
    else:
        assert results["nereid"]["status"] == "skipped"


# --- the GPU-only code, on stand-ins ------------------------------------------------------------------

class FakeClock:
    """A device clock in ms that the stand-ins below advance."""
    now = 0.0


class FakeEvent:
    def __init__(self, enable_timing=False):
        assert enable_timing
        self.t = None

    def record(self):
        self.t = FakeClock.now

    def elapsed_time(self, end):
        return end.t - self.t


class FakeBuffer:
    zeroed = 0

    def zero_(self):
        FakeBuffer.zeroed += 1
        FakeClock.now += 0.09  # the flush takes 90 us


class FakeTorch:
    int32 = "int32"

    class cuda:
        Event = FakeEvent

        @staticmethod
        def synchronize():
            pass

    @staticmethod
    def empty(n, dtype, device):
        assert n * 4 == 256 * 1024 * 1024 and device == "cuda"
        return FakeBuffer()


def test_cuda_timer_times_the_function_alone_after_flushing_the_cache():
    calls = []

    def fn():
        calls.append(1)
        FakeClock.now += 0.01 + 0.001 * (len(calls) % 3)  # 10, 11 or 12 us

    FakeBuffer.zeroed = 0
    timer = harness.CudaTimer(FakeTorch, warmup_ms=1.0, rep_ms=10.0)
    t = timer(fn)
    # estimate: 5 runs of 90 + about 11 us -> 0.1 ms; 10 ms of repetitions -> about 99 runs
    assert 90 <= t.reps <= 100
    assert FakeBuffer.zeroed == 5 + t.reps  # a flush before each timed run
    assert t.ms == pytest.approx(0.011) and t.p20 <= t.ms <= t.p80
    assert len(calls) == 1 + 5 + 9 + t.reps  # first run, estimate, warm-up (1 ms / 0.1 ms), repetitions
    t = timer(fn, rep_ms=1.0, warmup_ms=0.0)
    assert t.reps == timer.min_reps


def test_cuda_timer_interleaves_the_functions_it_compares():
    """Repetition i runs every function once, starting from a different one each time, each after a
    flush and between its own events; each function gets its own median."""
    order = []

    def make(name, us):
        def fn():
            order.append(name)
            FakeClock.now += us * 1e-3
        return fn

    FakeBuffer.zeroed = 0
    timer = harness.CudaTimer(FakeTorch, warmup_ms=0.0, rep_ms=3.0)
    ta, tb, tc = timer.interleaved([make("a", 10), make("b", 20), make("c", 40)])
    assert ta.ms == pytest.approx(0.010) and tb.ms == pytest.approx(0.020) and tc.ms == pytest.approx(0.040)
    n = ta.reps
    assert tb.reps == tc.reps == n and 10 <= n <= 30  # 3 ms over estimates of about 0.11, 0.11 and 0.13 ms
    assert FakeBuffer.zeroed == 3 * 5 + 3 * n
    timed = order[-3 * n:]
    rounds = [timed[3 * i:3 * i + 3] for i in range(n)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert [r[0] for r in rounds[:3]] == ["a", "b", "c"]  # a different one first in each repetition
    assert timer.interleaved([]) == []


@pytest.fixture
def cpu_torch(monkeypatch):
    """torch on the CPU posing as CUDA for the scripts' GPU paths (Nereid runs on the interpreter)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    return torch


def test_launch_overhead_on_cpu(cpu_torch, monkeypatch):
    import launch
    monkeypatch.setattr(launch, "DEVICE", "cpu")
    args = type("Args", (), {"launches": 50, "warmup": 5})
    machine, rows = launch.run_gpu(args)
    by = {r["system"]: r for r in rows}
    assert by["torch.add"]["status"] == "ok" and by["torch.add"]["launches"] == 50
    assert by["nereid"]["status"] == "ok" and by["nereid"]["median_us"] > 0
    assert by["triton"]["status"] in ("FAILED", "n/a")  # no GPU driver for Triton here
    assert machine["torch"] == cpu_torch.__version__
    assert "nereid" in launch.table(rows)


@pytest.mark.parametrize("kernel", ["add_kernel", "softmax_kernel", "layer_norm_fwd", "matmul_kernel"])
def test_compile_time_child_on_cpu(cpu_torch, monkeypatch, capsys, kernel):
    import compile_time
    monkeypatch.setattr(compile_time, "DEVICE", "cpu")
    file = next(f for f, k, _ in compile_time.read_kernel_list() if k == kernel)
    compile_time.child("nereid", file, kernel)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["first_launch_s"] > 0 and out["second_launch_s"] > 0


def test_compile_time_stages_in_process(monkeypatch):
    import compile_time
    # stage_times turns the disk cache off for its process: restored for the tests after this one
    monkeypatch.setenv("NEREID_NO_CACHE", "1")
    for file, kernel, sig in compile_time.read_kernel_list():
        stages, notes = compile_time.stage_times(file, kernel, sig, "sm_90", 2)
        assert stages["lower"] > 0 and stages["block"] > 0, notes
        row = {"kernel": kernel, "stages": stages, "notes": notes, "cli": {"start": None, "ptx": None}}
        assert compile_time.splits(row)["front end"] == stages["lower"]
        assert kernel in compile_time.table([row])


def test_events_after_a_line_cut_short(tmp_path):
    import worker
    path = tmp_path / "e.jsonl"
    path.write_text('{"event": "case", "id": "a"}\n{"event": "resu')  # a writer killed mid-line
    log = worker.EventLog(path)
    log.write("result", id="a", system="torch", status="ok")
    log.file.close()
    assert worker.read_done(path) == {("a", "torch")}
