"""Nereid's GPU benchmark suite: each workload for Nereid, Triton and torch
in one process, checked against a float64 reference, then timed.

    python3 bench/run.py                      everything (builds Nereid first)
    python3 bench/run.py --quick              a few sizes of each workload
    python3 bench/run.py --only softmax,matmul_llm --json
    python3 bench/run.py --dry-run            no GPU: made-up times, to test the plumbing
    python3 bench/run.py --resume bench/results/2026-11-23.events.jsonl   go on where a run stopped
    python3 bench/run.py --only matmul --hopper off    Nereid on the H100 without wgmma (sm_90, mma.sync)

The cases run in a worker process (bench/worker.py) that logs each step to
<out>/<name>.events.jsonl.  If the worker dies, hangs (no event for
--stall-s seconds) or loses its CUDA context to a fault, the candidate it was
running is marked FAILED and a new worker goes on with the next one.  At the
end (or at --time-limit) the table is printed and <out>/<name>.csv, the PNG
plots and, with --json, <out>/<name>.json are written.  See docs/benchmarks.md."""
import argparse
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import report  # noqa: E402
import worker  # noqa: E402
import workloads as W  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Nereid's GPU benchmarks against Triton and torch.",
                                 epilog="Workloads: " + ", ".join(w.name for w in W.all_workloads()))
    ap.add_argument("--only", metavar="NAMES",
                    help="comma-separated workloads; a prefix before '_' selects a family (matmul: all matmul_*)")
    ap.add_argument("--quick", action="store_true", help="a few sizes of each workload")
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch: made-up times, to test the plumbing")
    ap.add_argument("--json", nargs="?", const="", metavar="PATH",
                    help="also write the results as JSON (default <out>/<name>.json), for bench/update_md.py")
    ap.add_argument("--out", default=str(harness.BENCH / "results"), help="directory for the results")
    ap.add_argument("--resume", metavar="EVENTS", help="go on with the run logged in this events file")
    ap.add_argument("--systems", default=",".join(harness.SYSTEMS), help="systems to run (default: all)")
    ap.add_argument("--warmup-ms", type=float, default=25.0, help="warm-up time per measurement")
    ap.add_argument("--rep-ms", type=float, default=100.0, help="repetition time per measurement")
    ap.add_argument("--screen-ms", type=float, default=25.0,
                    help="repetition time for screening several candidates (matmul configs)")
    ap.add_argument("--stall-s", type=float, default=300.0,
                    help="end a worker that logs nothing for this long (a hung kernel)")
    ap.add_argument("--time-limit", type=float, default=0.0,
                    help="stop after this many seconds and report what was measured (0: no limit)")
    ap.add_argument("--no-build", action="store_true", help="do not run make first")
    ap.add_argument("--hopper", choices=("on", "off"), default="on",
                    help="on an H100, compile Nereid's kernels for sm_90a (wgmma; the default) or for sm_90 "
                         "(mma.sync, as on Ampere: NEREID_DISABLE_HOPPER=1)")
    ap.add_argument("--list", action="store_true", help="list the workloads and their cases, and exit")
    ap.add_argument("--dry-run-fail", help=argparse.SUPPRESS)  # tests: see worker.py
    args = ap.parse_args(argv)
    unknown = set(args.systems.split(",")) - set(harness.SYSTEMS)
    if unknown:
        ap.error(f"unknown system(s) {', '.join(sorted(unknown))} (known: {', '.join(harness.SYSTEMS)})")
    try:
        args.workloads = W.select(args.only)
    except ValueError as e:
        ap.error(str(e))
    return args


def output_name(out_dir, args):
    """<date>[-quick][-dry-run][-nohopper], with -2, -3... if that run's files already exist."""
    base = time.strftime("%Y-%m-%d") + ("-quick" if args.quick else "") + ("-dry-run" if args.dry_run else "")
    base += "-nohopper" if args.hopper == "off" else ""
    name, n = base, 1
    while (out_dir / f"{name}.events.jsonl").exists() or (out_dir / f"{name}.csv").exists():
        n += 1
        name = f"{base}-{n}"
    return name


# --- supervising the worker -------------------------------------------------------------------------

def worker_command(args, events):
    cmd = [sys.executable, str(harness.BENCH / "worker.py"), "--events", str(events),
           "--only", ",".join(w.name for w in args.workloads), "--systems", args.systems,
           "--warmup-ms", str(args.warmup_ms), "--rep-ms", str(args.rep_ms), "--screen-ms", str(args.screen_ms)]
    if args.quick:
        cmd.append("--quick")
    if args.dry_run:
        cmd.append("--dry-run")
    if args.dry_run_fail:
        cmd += ["--dry-run-fail", args.dry_run_fail]
    return cmd


def worker_env(args):
    """The worker's environment: Hopper's instructions off with --hopper off."""
    env = dict(os.environ)
    if args.hopper == "off":
        env["NEREID_DISABLE_HOPPER"] = "1"
    else:
        env.pop("NEREID_DISABLE_HOPPER", None)
    return env


def read_events(path):
    events = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return events


def blame(events_path, reason, systems):
    """After a worker died: mark FAILED what it was running, so that the next
    worker goes on past it.  Returns the number of results written."""
    events = read_events(events_path)
    cases = [e for e in events if e.get("event") == "case"]
    if not cases:
        return 0
    case = cases[-1]["id"]
    results = {e["system"] for e in events if e.get("event") == "result" and e["id"] == case}
    starts = [e for e in events if e.get("event") == "start" and e["id"] == case and e["system"] not in results]
    if starts:
        culprits = [(starts[-1]["system"], f"the worker ended ({reason}) while running {starts[-1]['label']}")]
    else:  # it ended while making the inputs or the reference
        culprits = [(s, f"the worker ended ({reason}) while preparing the case") for s in systems if s not in results]
    with worker.open_events(events_path) as f:
        for system, note in culprits:
            f.write(json.dumps({"event": "result", "id": case, "system": system, "status": "FAILED",
                                "note": note}) + "\n")
    return len(culprits)


def count_results(events_path):
    return sum(1 for e in read_events(events_path) if e.get("event") == "result")


def supervise(args, events, deadline):
    """Run workers until every case is done.  Returns "done", "time limit",
    "interrupted" or "stopped".

    The worker stays in this process's group, so that whatever ends this
    process from outside (a terminal's Ctrl-C, a job's time limit) ends it
    too; a worker that hangs is killed alone."""
    systems = args.systems.split(",")
    restarts = 0
    while True:
        before = count_results(events)
        proc = subprocess.Popen(worker_command(args, events), env=worker_env(args))
        size, last_change, stop = -1, time.monotonic(), None
        try:
            while proc.poll() is None:
                time.sleep(0.2)
                now = time.monotonic()
                new_size = events.stat().st_size if events.exists() else 0
                if new_size != size:
                    size, last_change = new_size, now
                if now - last_change > args.stall_s:
                    stop = f"no progress for {args.stall_s:.0f} s"
                elif deadline and now > deadline:
                    stop = "time limit"
                if stop:
                    proc.kill()
                    proc.wait()
                    break
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            return "interrupted"
        rc = proc.returncode
        if stop == "time limit":
            return "time limit"
        if rc == 0:
            return "done"
        fatal = [e for e in read_events(events) if e.get("event") == "fatal"]
        if rc == 2 and fatal:
            print(f"run: {fatal[-1]['message']}", file=sys.stderr)
            return "stopped"
        reason = stop or (f"signal {-rc}" if rc < 0 else f"exit status {rc}")
        if rc != 3:  # with 3 the worker has marked the culprit itself
            blame(events, reason, systems)
        if count_results(events) == before:
            print(f"run: the worker made no progress ({reason}); stopping", file=sys.stderr)
            return "stopped"
        restarts += 1
        if restarts > 50:
            print("run: too many worker restarts; stopping", file=sys.stderr)
            return "stopped"
        print(f"run: worker ended ({reason}); starting a new one", flush=True)


# --- main -------------------------------------------------------------------------------------------

def list_cases(args):
    for w in args.workloads:
        cases = w.cases(args.quick)
        print(f"{w.name} ({w.metric}, {len(cases)} cases): {w.title}")
        for c in cases:
            print(f"    {c.shape:<24}{c.dtype}")


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        list_cases(args)
        return 0
    started = time.monotonic()
    deadline = started + args.time_limit if args.time_limit > 0 else None
    if args.resume:
        events = Path(args.resume).resolve()
        out_dir = events.parent
        name = events.name[: -len(".events.jsonl")] if events.name.endswith(".events.jsonl") else events.stem
    else:
        out_dir = Path(args.out).resolve()
        out_dir.mkdir(parents=True, exist_ok=True)
        name = output_name(out_dir, args)
        events = out_dir / f"{name}.events.jsonl"
    if not args.dry_run and not args.no_build:
        try:
            harness.build(always=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"run: building Nereid failed ({e}); fix the build or run with --no-build", file=sys.stderr)
            return 2

    command = " ".join(shlex.quote(a) for a in ["python3", "bench/run.py"] + list(argv if argv is not None
                                                                                   else sys.argv[1:]))
    print(f"run: {command}\nrun: events in {events}", flush=True)
    outcome = supervise(args, events, deadline)

    machine, rows, _ = report.load_events(events) if events.exists() else ({}, [], None)
    print()
    print(report.table(rows) if rows else "no results")
    csv_path = report.write_csv(rows, machine, out_dir / f"{name}.csv")
    plots = report.write_plots(rows, out_dir, name)
    written = [csv_path] + plots
    if args.json is not None:
        settings = {"command": command, "quick": args.quick, "dry_run": args.dry_run, "only": args.only,
                    "systems": args.systems, "warmup_ms": args.warmup_ms, "rep_ms": args.rep_ms,
                    "screen_ms": args.screen_ms, "hopper": args.hopper, "outcome": outcome}
        json_path = Path(args.json) if args.json else out_dir / f"{name}.json"
        written.append(report.write_json(rows, machine, settings, json_path, plots=[p.name for p in plots]))
    print()
    if machine.get("gpu") or machine.get("dry_run"):
        print(f"run: {'dry run (made-up times)' if machine.get('dry_run') else machine.get('gpu')}; "
              f"torch {machine.get('torch')}, triton {machine.get('triton')}, nereid {machine.get('nereid')}")
    print("run: wrote " + ", ".join(str(_rel(p)) for p in written))
    if not plots:
        print("run: no plots (matplotlib is not installed)" if not _have_matplotlib() else "run: nothing to plot")
    if outcome in ("time limit", "interrupted"):
        print(f"run: stopped ({outcome}); go on with: python3 bench/run.py --resume {_rel(events)} "
              + " ".join(shlex.quote(a) for a in _rerun_flags(args)))
    elapsed = time.monotonic() - started
    print(f"run: {outcome} in {elapsed:.0f} s")
    return 0 if outcome == "done" else 1


def _rel(path):
    try:
        return Path(path).resolve().relative_to(harness.REPO)
    except ValueError:
        return Path(path)


def _rerun_flags(args):
    flags = []
    if args.only:
        flags += ["--only", args.only]
    if args.quick:
        flags.append("--quick")
    if args.json is not None:
        flags.append("--json")
    if args.hopper == "off":
        flags += ["--hopper", "off"]
    return flags


def _have_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None


if __name__ == "__main__":
    sys.exit(main())
