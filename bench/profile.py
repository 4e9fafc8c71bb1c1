"""Run one benchmark case's kernels a few times each, for a profiler.

    python3 bench/profile.py softmax 4096x1024 fp16 [--systems triton,nereid] [--variant row] [--runs 3]
    ncu --section SpeedOfLight -k regex:softmax python3 bench/profile.py softmax 4096x1024 fp16

Each selected system's candidates (bench/workloads) for the case run
`--runs` times after one warm-up call, with a range marker per system
(NVTX when torch has it), so `ncu` or `nsys` sees the same kernels the
suite times.  Prints each candidate's mean time from CUDA events."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import workloads as W  # noqa: E402
from bench.worker import GpuEnv  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload")
    ap.add_argument("shape")
    ap.add_argument("dtype")
    ap.add_argument("--systems", default="triton,nereid")
    ap.add_argument("--variant", default=None, help="only candidates whose name starts with this")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    env = GpuEnv(10, 10, 10)
    torch = env.torch
    wl = next((w for w in W.select(args.workload) if w.name == args.workload), None)
    if wl is None:
        raise SystemExit(f"profile: no workload {args.workload!r}")
    case = next((c for c in wl.cases(False) + wl.cases(True) if c.shape == args.shape and c.dtype == args.dtype), None)
    if case is None:
        raise SystemExit(f"profile: {args.workload} has no case {args.shape} {args.dtype}")
    prep = wl.prepare(case, env)
    for system in args.systems.split(","):
        for name, fn in prep.candidates.get(system, []):
            if args.variant and not name.startswith(args.variant):
                continue
            fn()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.nvtx.range_push(f"{system}:{name}")
            start.record()
            for _ in range(args.runs):
                fn()
            end.record()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            print(f"{system:8s} {name:24s} {start.elapsed_time(end) * 1000 / args.runs:9.1f} us (mean of {args.runs}, L2 warm)")


if __name__ == "__main__":
    main()
