"""Launch overhead from Python: the host time of one launch of a cached
kernel with six runtime arguments (three tensors, two floats and an int) on
tiny tensors, for Nereid, Triton and torch.add, in one process.

Each system is warmed up (compiled, cached), then launched --launches times
in a row without synchronizing; each call is timed on the host clock and the
median is reported, with the mean per launch including the final
synchronization.  The kernel is bench/kernels/launch.py, loaded once under
each compiler.

    python3 bench/launch.py [--launches 10000] [--json [PATH]] [--dry-run]"""
import argparse
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
    z = torch.empty_like(x)
    times, mean_s = measure(lambda: torch.add(x, y, out=z), torch.cuda.synchronize, args.launches, args.warmup)
    rows.insert(0, row("torch.add", times, mean_s, note="3 arguments"))
    machine = harness.describe_machine(torch, modules.get("triton"), modules.get("nereid"))
    return machine, rows


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
    ap.add_argument("--json", nargs="?", const="", metavar="PATH", help="write JSON (default <out>/launch-<date>.json)")
    ap.add_argument("--out", default=str(harness.BENCH / "results"))
    ap.add_argument("--no-build", action="store_true")
    args = ap.parse_args(argv)
    if args.launches < 1 or args.warmup < 0:
        ap.error("--launches must be at least 1 and --warmup not negative")
    if not args.dry_run and not args.no_build:
        harness.build(always=True)
    machine, rows = run_dry(args) if args.dry_run else run_gpu(args)
    print(f"launch overhead, {args.launches} launches of a kernel with 6 runtime arguments "
          f"({machine.get('gpu') or 'dry run'})")
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
