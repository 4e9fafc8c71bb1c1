"""Runs benchmark cases in one process and records each step as a JSON line
in an events file; bench/run.py starts it, watches it and writes the reports.

For each case: make the inputs and the float64 reference once; then for each
system (torch, Triton, Nereid, in that order) and each of its candidates,
run once (compiling), poison the outputs with NaN, run again and check the
outputs against the reference; screen the candidates that pass (a short
timing of them side by side, when there are several) and keep the fastest;
then time the systems' kept candidates in full, side by side (each
repetition runs every system once), and record the times.  A failing check
marks the system FAILED for that case and nothing of it is timed.

Events (one JSON object per line, appended and flushed one by one):
  machine  what the numbers depend on (GPU, driver, versions)
  case     a case begins (its workload, shape, dtype, work, metric)
  start    a candidate of a system begins its check (the one to blame if
           the process dies or hangs)
  result   a system's outcome on a case: status ok / FAILED / n/a / skipped,
           the time and the candidate's label
  fatal    the worker cannot run at all (no torch, no GPU)

Results already in the events file are not run again, so a run can be
resumed, and run.py restarts a worker that died to go on after the case it
died in.  Exit status: 0 done, 2 fatal, 3 the CUDA context was lost (a fault
makes it unusable: the process must end)."""
import argparse
import gc
import json
import os
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import workloads as W  # noqa: E402


class ContextLost(Exception):
    """The CUDA context is unusable after a fault."""


class EventLog:
    def __init__(self, path):
        self.file = open_events(path)

    def write(self, event, **fields):
        self.file.write(json.dumps(dict(event=event, **fields)) + "\n")
        self.file.flush()


def open_events(path):
    """The events file opened for appending, after ending a line that a
    killed writer left unfinished (so that it spoils no new line)."""
    f = open(path, "a+", encoding="utf-8")
    if f.tell() > 0:
        f.seek(f.tell() - 1)
        if f.read(1) != "\n":
            f.write("\n")
    return f


def read_done(path):
    """(case id, system) pairs that already have a result in the events file."""
    done = set()
    if Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed writer
            if e.get("event") == "result":
                done.add((e["id"], e["system"]))
    return done


# --- the GPU environment ----------------------------------------------------------------------------

class GpuEnv:
    """torch on the GPU, and the kernel files loaded under each compiler on demand."""

    def __init__(self, warmup_ms, rep_ms, screen_ms):
        import torch
        import torch.nn.functional as F
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        self.torch, self.F = torch, F
        self.device = "cuda"
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        self.timer = harness.CudaTimer(torch, warmup_ms=warmup_ms, rep_ms=rep_ms)
        self.screen_ms = screen_ms
        self.kernels = harness.KernelFiles()
        harness.use_repo_python_package()

    def modules(self):
        """(triton, nereid) modules, None where not importable."""
        found = []
        for name in ("triton", "nereid"):
            try:
                found.append(__import__(name))
            except Exception:
                found.append(None)
        return found

    def sync(self):
        self.torch.cuda.synchronize()

    def ensure_alive(self):
        """Raise ContextLost if the CUDA context no longer works (after a fault)."""
        try:
            self.torch.cuda.synchronize()
            self.torch.zeros(1, device=self.device).add_(1).item()
        except Exception as e:
            raise ContextLost(harness.short_error(e)) from None

    def release(self):
        gc.collect()
        self.torch.cuda.empty_cache()


def outputs_of(result):
    return result if isinstance(result, (tuple, list)) else (result,)


def poison(env, result):
    """Fill floating-point outputs with NaN, so that an element a run fails to write fails the check."""
    for t in outputs_of(result):
        if t.is_floating_point() and t.element_size() >= 2:
            t.fill_(float("nan"))


def check(env, fn, reference, dtype):
    """Relative error of fn's outputs (run after poisoning) against the reference."""
    result = fn()
    env.sync()
    poison(env, result)
    result = fn()
    env.sync()
    return harness.max_rel_error(outputs_of(result), outputs_of(reference()))


def screen(env, log, case, system, passed, notes):
    """The fastest of several passing candidates, by a short timing of them side by side (one by one when
    that fails, so that the candidate to blame is known); None if none could be timed."""
    for label, _, _ in passed:
        log.write("start", id=case.id, system=system, label=label + " (timing)")
    try:
        timings = env.timer.interleaved([fn for _, fn, _ in passed], rep_ms=env.screen_ms,
                                        warmup_ms=env.screen_ms / 4)
        screened = [(t.ms, label, fn, err) for t, (label, fn, err) in zip(timings, passed)]
    except Exception:
        env.ensure_alive()
        screened = []
        for label, fn, err in passed:
            log.write("start", id=case.id, system=system, label=label + " (timing)")
            try:
                screened.append((env.timer(fn, rep_ms=env.screen_ms, warmup_ms=env.screen_ms / 4).ms, label, fn, err))
            except Exception as e:
                env.ensure_alive()
                notes.append(f"{label}: {harness.short_error(e)}")
    if not screened:
        return None
    _, label, fn, err = min(screened, key=lambda s: s[0])
    return label, fn, err


def pick(env, log, case, system, candidates, reference):
    """Check one system's candidates and pick the one to time: a dict with status FAILED and a note, or
    with status ok, the label, fn, err and notes."""
    tol = harness.tolerance(case.dtype)
    notes, passed = [], []
    for label, fn in candidates:
        log.write("start", id=case.id, system=system, label=label)
        try:
            err = check(env, fn, reference, case.dtype)
        except Exception as e:
            env.ensure_alive()
            notes.append(f"{label}: {harness.short_error(e)}")
            continue
        if not harness.passes(err, case.dtype):
            notes.append(f"{label}: relative error {err:.2e} over the tolerance {tol:.0e}")
            continue
        passed.append((label, fn, err))
    if not passed:
        return dict(status="FAILED", note="; ".join(notes))
    best = screen(env, log, case, system, passed, notes) if len(passed) > 1 else passed[0]
    if best is None:
        return dict(status="FAILED", note="; ".join(notes))
    label, fn, err = best
    return dict(status="ok", label=label, fn=fn, err=err, notes=notes)


def time_picked(env, log, case, picked):
    """Time the picked candidates of the systems side by side; their result fields, by system."""
    for system, p in picked.items():
        log.write("start", id=case.id, system=system, label=p["label"] + " (timing)")
    try:
        timings = env.timer.interleaved([p["fn"] for p in picked.values()])
    except Exception as e:
        env.ensure_alive()
        if len(picked) == 1:
            (system, p), = picked.items()
            return {system: dict(status="FAILED", label=p["label"],
                                 note=f"{p['label']}: timing: {harness.short_error(e)}")}
        # Alone, one by one: the one that fails is then known.
        out = {}
        for system, p in picked.items():
            out.update(time_picked(env, log, case, {system: p}))
        return out
    out = {}
    for (system, p), t in zip(picked.items(), timings):
        notes = list(p["notes"])
        if t.host_us > t.ms * 1e3:
            # Timed alone (after a flush) the GPU waits for no one, but back to
            # back such calls would be bound by the host.
            notes.append(f"one call takes {t.host_us:.0f} us on the host, more than on the GPU")
        out[system] = dict(status="ok", ms=t.ms, p20=t.p20, p80=t.p80, reps=t.reps, host_us=t.host_us,
                           label=p["label"], err=p["err"], note="; ".join(notes))
    return out


def run_case(env, log, wl, case, systems):
    """Run the given systems on one case and log their results: each system's candidates are checked
    and screened in turn, then the picked ones are timed together."""
    try:
        prepared = wl.prepare(case, env)
    except Exception as e:
        env.ensure_alive()
        for system in systems:
            log.write("result", id=case.id, system=system, status="FAILED",
                      note=f"preparing the inputs: {harness.short_error(e)}")
        return

    def record(system, fields):
        log.write("result", id=case.id, system=system, **fields)
        print(f"  {system:<7} {describe(case, fields)}", flush=True)

    picked = {}
    for system in systems:
        if system not in wl.systems:
            log.write("result", id=case.id, system=system, status="skipped", note=wl.skip_note)
            continue
        candidates = prepared.candidates.get(system)
        if not candidates:
            log.write("result", id=case.id, system=system, status="n/a",
                      note=prepared.notes.get(system, "no implementation"))
            continue
        try:
            outcome = pick(env, log, case, system, candidates, prepared.reference)
        except ContextLost as e:
            log.write("result", id=case.id, system=system, status="FAILED",
                      note=f"the CUDA context was lost (a fault): {e}")
            raise
        if outcome["status"] == "ok":
            picked[system] = outcome
        else:
            record(system, outcome)
    if picked:
        for system, fields in time_picked(env, log, case, picked).items():
            record(system, fields)
    del prepared, picked
    env.release()


def describe(case, fields):
    if fields["status"] != "ok":
        return f"{fields['status']}: {fields.get('note', '')}"
    return f"{fields['ms'] * 1e3:10.1f} us  [{fields['label']}]  rel. error {fields['err']:.1e}"


# --- the dry run ------------------------------------------------------------------------------------

# Made-up rates (bytes/s, flop/s) for the dry run, which tests the plumbing on
# a machine without a GPU: never reported as measurements.
FAKE_RATE = {"GB/s": {"torch": 2.5e12, "triton": 2.8e12, "nereid": 2.6e12},
             "TFLOP/s": {"torch": 600e12, "triton": 550e12, "nereid": 500e12}}


def fake_case(log, wl, case, systems, fail=None):
    """Made-up results.  fail = (mode, system, case id) makes that system of
    that case crash (the process exits), hang, or fault (the CUDA context is
    lost), to test how run.py recovers."""
    for system in systems:
        if system not in wl.systems:
            log.write("result", id=case.id, system=system, status="skipped", note=wl.skip_note)
            continue
        log.write("start", id=case.id, system=system, label="dry-run")
        if fail and fail[1:] == (system, case.id):
            if fail[0] == "crash":
                os._exit(1)
            if fail[0] == "hang":
                while True:
                    time.sleep(1)
            log.write("result", id=case.id, system=system, status="FAILED", note="the CUDA context was lost: dry run")
            raise ContextLost("dry run")
        jitter = 0.9 + 0.2 * (zlib.crc32(f"{case.id}|{system}".encode()) % 1000) / 1000
        ms = (case.work / FAKE_RATE[wl.metric][system] * 1e3 + 0.002) * jitter
        log.write("result", id=case.id, system=system, status="ok", ms=ms, p20=ms * 0.98, p80=ms * 1.02, reps=100,
                  host_us=5.0, label="dry-run", err=0.0, note="")


# --- main -------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", required=True, help="the events file to append to")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--systems", default=",".join(harness.SYSTEMS))
    ap.add_argument("--warmup-ms", type=float, default=25.0)
    ap.add_argument("--rep-ms", type=float, default=100.0)
    ap.add_argument("--screen-ms", type=float, default=25.0)
    ap.add_argument("--dry-run-fail", metavar="MODE:SYSTEM:CASE",
                    help="dry run: crash, hang or fault at SYSTEM on CASE (a case id), for tests")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    log = EventLog(args.events)
    done = read_done(args.events)
    systems = [s for s in harness.SYSTEMS if s in args.systems.split(",")]
    selected = W.select(args.only)
    fail = tuple(args.dry_run_fail.split(":", 2)) if args.dry_run_fail else None
    if fail and (len(fail) != 3 or fail[0] not in ("crash", "hang", "fault") or not args.dry_run):
        raise SystemExit("worker: --dry-run-fail takes crash|hang|fault:SYSTEM:CASE_ID, with --dry-run")
    env = None
    if args.dry_run:
        log.write("machine", dry_run=True, **harness.describe_machine())
    else:
        try:
            env = GpuEnv(args.warmup_ms, args.rep_ms, args.screen_ms)
        except Exception as e:
            log.write("fatal", message=f"cannot use the GPU through torch: {harness.short_error(e)}")
            print(f"worker: cannot use the GPU through torch: {e}", file=sys.stderr)
            return 2
        triton, nereid = env.modules()
        log.write("machine", dry_run=False, **harness.describe_machine(env.torch, triton, nereid))
    for wl in selected:
        for case in wl.cases(args.quick):
            todo = [s for s in systems if (case.id, s) not in done]
            if not todo:
                continue
            log.write("case", id=case.id, workload=wl.name, title=wl.title, metric=wl.metric, xlabel=wl.xlabel,
                      shape=case.shape, dtype=case.dtype, work=case.work, x=case.x, series=case.series)
            print(f"{wl.name} {case.shape} {case.dtype}", flush=True)
            try:
                if env is None:
                    fake_case(log, wl, case, todo, fail)
                else:
                    run_case(env, log, wl, case, todo)
            except ContextLost as e:
                print(f"worker: the CUDA context was lost: {e}", file=sys.stderr)
                return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
