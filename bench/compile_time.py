"""Compile times of the example kernels (examples/kernels.txt: file, kernel,
signature, launch options), for Nereid and Triton.

Nereid's compiler alone, in process through the extension module, median of
--runs compilations each, the disk cache disabled (NEREID_NO_CACHE=1);
three compilations that stop at successive points split the time:
    stop after lowering                      front end (parse, specialize, lower)
    the block pipeline (no arch)             + block passes
    to PTX for --arch                        + GPU passes and PTX emission
(the extension has no finer timing hook; a stage it cannot do is n/a).  The
CLI's `nereid ptx` is timed too, process start included, beside
`nereid version` (the start alone).

End to end on the GPU, each in a fresh process (this script started again
with --child), the first launch until its completion:
  - Nereid with an empty NEREID_CACHE_DIR (compile, driver JIT of the PTX,
    load, launch), then again in a new process with that cache filled;
  - Triton with an empty TRITON_CACHE_DIR (its whole compile, including the
    launcher it builds on first use), then again with that cache filled.
The driver JIT is about Nereid's cold launch less its source-to-PTX time and
less its launch from the filled cache.

    python3 bench/compile_time.py [--runs 20] [--arch sm_90] [--json [PATH]] [--dry-run]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

# In-process stages: (name, stop_after, arch?) in pipeline order.
STAGES = [("lower", "lower", False), ("block", None, False), ("ptx", None, True)]
SPLITS = [("front end", None, "lower"), ("block passes", "lower", "block"), ("GPU passes + PTX", "block", "ptx")]


def read_kernel_entries(path=harness.EXAMPLES / "kernels.txt"):
    """The lines of examples/kernels.txt as dicts: file, kernel, signature,
    name (the line's label, default the kernel), num_warps and num_stages
    (defaults 4 and 3, as a launch has them).  Lines are
    FILE KERNEL 'SIGNATURE' [num_warps=N] [num_stages=N] [name=LABEL]."""
    import shlex
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        if len(words) < 3:
            raise ValueError(f"{path}:{n}: expected FILE KERNEL SIGNATURE [key=value]...")
        entry = {"file": words[0], "kernel": words[1], "signature": words[2], "name": words[1],
                 "num_warps": 4, "num_stages": 3}
        for kv in words[3:]:
            key, _, value = kv.partition("=")
            if key == "name" and value:
                entry["name"] = value
            elif key in ("num_warps", "num_stages") and value.isdigit():
                entry[key] = int(value)
            else:
                raise ValueError(f"{path}:{n}: unknown option '{kv}'")
        out.append(entry)
    return out


def read_kernel_list(path=harness.EXAMPLES / "kernels.txt"):
    """[(file, kernel, signature)] from examples/kernels.txt (read_kernel_entries has the options)."""
    return [(e["file"], e["kernel"], e["signature"]) for e in read_kernel_entries(path)]


# --- the compiler alone --------------------------------------------------------------------------

def time_command(cmd, runs, env):
    """Median wall time of a command (seconds), or None if it fails."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            return None
    return statistics.median(times)


def cli_times(file, kernel, sig, arch, runs, num_warps=4, num_stages=3):
    """{"start": `nereid version`, "ptx": `nereid ptx ...`}: median seconds, None where it fails."""
    env = dict(os.environ, NEREID_NO_CACHE="1")
    cli = str(harness.NEREID_CLI)
    return {"start": time_command([cli, "version"], runs, env),
            "ptx": time_command([cli, "ptx", str(harness.EXAMPLES / file), "-k", kernel, "-s", sig,
                                 "--arch", arch, "--num-warps", str(num_warps), "--num-stages", str(num_stages)],
                                runs, env)}


def stage_times(file, kernel, sig, arch, runs, num_warps=4, num_stages=3):
    """({stage: median seconds or None}, notes) of in-process compilations."""
    os.environ["NEREID_NO_CACHE"] = "1"
    harness.use_repo_python_package()
    try:
        from nereid import _C
    except Exception as e:
        return {name: None for name, _, _ in STAGES}, [f"no extension module: {harness.short_error(e)}"]
    path = harness.EXAMPLES / file
    text = path.read_text(encoding="utf-8")
    out, notes = {}, []
    for name, stop_after, gpu in STAGES:
        kw = {"stop_after": stop_after, "num_warps": num_warps, "num_stages": num_stages}
        if gpu:
            kw["arch"] = arch
        times = []
        try:
            for _ in range(runs):
                t0 = time.perf_counter()
                k, _notes = _C.compile(text, str(path), kernel, sig, **kw)
                times.append(time.perf_counter() - t0)
            if gpu and not getattr(k, "ptx", ""):
                raise RuntimeError("no PTX made")
        except TypeError as e:  # an extension without GPU compilation takes no arch
            out[name] = None
            notes.append(f"{name}: {harness.short_error(e)}")
            continue
        except Exception as e:
            out[name] = None
            notes.append(f"{name}: {harness.short_error(e)}")
            continue
        out[name] = statistics.median(times)
    return out, notes


DEVICE = "cuda"  # tests use "cpu", with the interpreter


# How to launch example kernels, by their line's name in kernels.txt: (args, grid, meta) on the GPU.
def _add_inputs(torch):
    n = 100003
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    return (x, y, torch.empty_like(x), n), ((n + 1023) // 1024,), {"BLOCK_SIZE": 1024}


def _softmax_inputs(torch):
    rows, cols = 37, 1000
    x = torch.randn(rows, cols, device=DEVICE)
    return (torch.empty_like(x), x, cols, cols, rows, cols), (rows,), {"BLOCK_SIZE": 1024}


def _layer_norm_inputs(torch):
    rows, cols = 64, 1000
    x = torch.randn(rows, cols, device=DEVICE, dtype=torch.float16)
    w, b = torch.rand(cols, device=DEVICE), torch.rand(cols, device=DEVICE)
    mean, rstd = torch.empty(rows, device=DEVICE), torch.empty(rows, device=DEVICE)
    return (x, torch.empty_like(x), w, b, mean, rstd, cols, cols, 1e-5), (rows,), {"BLOCK_SIZE": 1024}


def _matmul_inputs(torch):
    M, N, K = 300, 170, 200
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b = torch.randn(K, N, device=DEVICE, dtype=torch.float16)
    c = torch.empty(M, N, device=DEVICE, dtype=torch.float16)
    grid = (((M + 63) // 64) * ((N + 63) // 64),)
    return ((a, b, c, M, N, K, K, 1, N, 1, N, 1), grid,
            {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "ACTIVATION": "leaky_relu"})


def _attention_inputs(torch):
    B, H, L, D = 1, 2, 256, 128
    q, k, v = (torch.randn(B, H, L, D, device=DEVICE, dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    m = torch.empty(B, H, L, device=DEVICE, dtype=torch.float32)
    strides = [s for t in (q, k, v, o) for s in t.stride()]
    return ((q, k, v, o, m, H, L, 0.125 * 1.4426950408889634, *strides), ((L + 127) // 128, B * H),
            {"HEAD_DIM": D, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": True, "num_warps": 8, "num_stages": 3})


RECIPES = {"add_kernel": _add_inputs, "softmax_kernel": _softmax_inputs, "layer_norm_fwd": _layer_norm_inputs,
           "matmul_kernel": _matmul_inputs, "attn_fwd_d128_causal": _attention_inputs}


def child(backend, file, kernel, name=None):
    """In a fresh process: import, load the example under backend, time the first and second launches
    of the recipe RECIPES[name] (name: the line's name, default the kernel)."""
    t0 = time.perf_counter()
    import torch
    torch.zeros(1, device=DEVICE).sum().item()
    t1 = time.perf_counter()
    if backend == "nereid":
        harness.use_repo_python_package()
    mod = harness.load_kernel_file(harness.EXAMPLES / file, backend)
    t2 = time.perf_counter()
    args, grid, meta = RECIPES[name or kernel](torch)
    fn = getattr(mod, kernel)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    fn[grid](*args, **meta)
    torch.cuda.synchronize()
    t4 = time.perf_counter()
    fn[grid](*args, **meta)
    torch.cuda.synchronize()
    t5 = time.perf_counter()
    print(json.dumps({"torch_init_s": t1 - t0, "import_s": t2 - t1, "first_launch_s": t4 - t3,
                      "second_launch_s": t5 - t4}))


def fresh_launch(backend, file, kernel, name, cache_dir):
    """Run child() in a new process with the given cache directory; (result dict, error)."""
    env = dict(os.environ)
    env.pop("NEREID_NO_CACHE", None)
    env["NEREID_CACHE_DIR" if backend == "nereid" else "TRITON_CACHE_DIR"] = str(cache_dir)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", backend, file, kernel, name]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        return None, "timed out"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        return None, last[:300]
    return json.loads(r.stdout.strip().splitlines()[-1]), ""


def gpu_launches(file, kernel, name):
    """Cold and filled-cache first launches of Nereid and Triton."""
    out = {}
    for backend in ("nereid", "triton"):
        with tempfile.TemporaryDirectory(prefix=f"{backend}-cache-") as cache:
            cold, err = fresh_launch(backend, file, kernel, name, cache)
            warm, err2 = fresh_launch(backend, file, kernel, name, cache) if cold else (None, "")
        out[backend] = {"cold": cold, "filled_cache": warm, "note": err or err2}
    return out


def have_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


# --- main ----------------------------------------------------------------------------------------

def measure(args):
    rows = []
    gpu = have_gpu() and not args.no_launch
    for e in read_kernel_entries():
        file, kernel, sig, name = e["file"], e["kernel"], e["signature"], e["name"]
        opts = {"num_warps": e["num_warps"], "num_stages": e["num_stages"]}
        print(f"{file} {name}", flush=True)
        row = dict(e)
        row["stages"], row["notes"] = stage_times(file, kernel, sig, args.arch, args.runs, **opts)
        row["cli"] = cli_times(file, kernel, sig, args.arch, max(3, args.runs // 4), **opts)
        if gpu and name in RECIPES:
            row["launch"] = gpu_launches(file, kernel, name)
        else:
            row["launch"] = None
            row["launch_note"] = "no GPU" if not gpu else "no launch recipe for this kernel"
        rows.append(row)
    return rows


def fake(args):
    rows = []
    for i, e in enumerate(read_kernel_entries()):
        base = 0.001 * (i + 1)
        stages = {"lower": base, "block": 1.5 * base, "ptx": 3 * base}
        cli = {"start": 0.001, "ptx": 0.001 + 3 * base}
        launch = {b: {"cold": {"torch_init_s": 0.5, "import_s": 0.1, "first_launch_s": s, "second_launch_s": 1e-5},
                      "filled_cache": {"torch_init_s": 0.5, "import_s": 0.1, "first_launch_s": s / 5,
                                       "second_launch_s": 1e-5}, "note": ""}
                  for b, s in (("nereid", 0.05 * (i + 1)), ("triton", 0.3 * (i + 1)))}
        rows.append(dict(e, stages=stages, notes=[], cli=cli, launch=launch))
    return rows


def splits(row):
    """{split name: seconds or None} from the in-process stages."""
    st = row["stages"]
    out = {}
    for name, a, b in SPLITS:
        ok = st.get(b) is not None and (a is None or st.get(a) is not None)
        # a difference of two medians: a stage shorter than their noise may come out below 0
        out[name] = max(0.0, st[b] - (st[a] if a else 0.0)) if ok else None
    return out


def ms(v):
    return f"{v * 1e3:.1f}" if v is not None else "n/a"


def us(v):
    return f"{v * 1e6:.0f}" if v is not None else "n/a"


def label(row):
    """A row's name: its line's name in kernels.txt, else the kernel's."""
    return row.get("name") or row["kernel"]


def table(rows):
    width = max([16] + [len(label(r)) + 2 for r in rows])
    head = (f"{'':<{width}}{'--- Nereid compiler, us ---':^46}{'--- first launch, ms ---':^44}\n"
            f"{'kernel':<{width}}{'front end':>10}{'block':>8}{'GPU+PTX':>9}{'to PTX':>9}{'CLI ptx':>10}"
            f"{'nereid cold':>13}{'filled':>9}{'triton cold':>13}{'filled':>9}")
    lines = ["compiler: in process, medians (CLI ptx: the whole `nereid ptx` command); first launch: in a fresh "
             "process, cold = empty cache, filled = cache filled by the cold run", head]
    for row in rows:
        sp = splits(row)
        line = (f"{label(row):<{width}}{us(sp['front end']):>10}{us(sp['block passes']):>8}"
                f"{us(sp['GPU passes + PTX']):>9}{us(row['stages'].get('ptx')):>9}{us(row['cli'].get('ptx')):>10}")
        for b in ("nereid", "triton"):
            launch = (row.get("launch") or {}).get(b) or {}
            cold = (launch.get("cold") or {}).get("first_launch_s")
            warm = (launch.get("filled_cache") or {}).get("first_launch_s")
            line += f"{ms(cold):>13}{ms(warm):>9}"
        lines.append(line)
    for row in rows:
        notes = list(row.get("notes") or []) + [f"{b}: {v['note']}" for b, v in (row.get("launch") or {}).items()
                                                if v.get("note")]
        if row.get("launch_note"):
            notes.append("launches: " + row["launch_note"])
        if notes:
            lines.append(f"  {label(row)}: " + "; ".join(notes))
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(*argv[1:5])
        return 0
    ap = argparse.ArgumentParser(description="Compile times of the example kernels: Nereid and Triton.")
    ap.add_argument("--runs", type=int, default=20, help="compilations per median")
    ap.add_argument("--arch", default="sm_90", help="PTX target for Nereid (sm_80, sm_90, sm_90a)")
    ap.add_argument("--no-launch", action="store_true", help="only the compiler, no GPU launches")
    ap.add_argument("--dry-run", action="store_true", help="made-up numbers, to test the plumbing")
    ap.add_argument("--json", nargs="?", const="", metavar="PATH",
                    help="write JSON (default <out>/compile-<date>.json)")
    ap.add_argument("--out", default=str(harness.BENCH / "results"))
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if not args.dry_run and not args.no_build:
        harness.build(always=True)
    if args.dry_run:
        rows, machine = fake(args), dict(harness.describe_machine(), dry_run=True)
    else:
        rows = measure(args)
        torch = None
        if have_gpu():
            import torch
        harness.use_repo_python_package()
        try:
            import nereid
        except Exception:
            nereid = None
        try:
            import triton
        except Exception:
            triton = None
        machine = harness.describe_machine(torch, triton, nereid)
    print(table(rows))
    if args.json is not None:
        out = Path(args.json) if args.json else Path(args.out) / (
            f"compile-{time.strftime('%Y-%m-%d')}{'-dry-run' if args.dry_run else ''}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"kind": "compile", "version": 1, "machine": machine,
               "settings": {"command": " ".join(["python3", "bench/compile_time.py"] + list(argv)),
                            "runs": args.runs, "arch": args.arch},
               "rows": [dict(r, splits=splits(r)) for r in rows]}
        out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"compile_time: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
