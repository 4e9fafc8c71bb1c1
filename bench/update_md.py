"""Renders BENCHMARKS.md from the JSON results of the benchmark scripts.

    python3 bench/update_md.py bench/results/2026-11-23.json \\
        bench/results/launch-2026-11-23.json bench/results/compile-2026-11-23.json
    python3 bench/update_md.py --template        the page with every case and no numbers

Each JSON file is one script's output (run.py --json, launch.py --json,
compile_time.py --json), recognised by its "kind".  Several run.py files
(parts of the suite run separately) are merged; a case measured in more than
one keeps the last file's numbers.  Writes BENCHMARKS.md at the repository
root unless -o says otherwise."""
import argparse
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

SYSTEMS = ("torch", "triton", "nereid")
NAMES = {"torch": "torch", "triton": "Triton", "nereid": "Nereid"}
DASH = "—"


def load(paths):
    """{"suite": [docs], "launch": [docs], "compile": [docs]} from JSON files."""
    docs = {"suite": [], "launch": [], "compile": []}
    for p in paths:
        doc = json.loads(Path(p).read_text(encoding="utf-8"))
        kind = doc.get("kind")
        if kind not in docs:
            raise SystemExit(f"update_md: {p}: not a benchmark result (kind {kind!r})")
        doc["_path"] = str(p)
        docs[kind].append(doc)
    return docs


def merged_rows(suites):
    rows = {}
    for doc in suites:
        for row in doc["rows"]:
            rows[row["id"]] = row
    return list(rows.values())


# --- cells -------------------------------------------------------------------------------------------

def number(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def cell(res):
    if not res:
        return DASH
    status = res.get("status")
    if status == "ok":
        return f"{number(res['throughput'])} ({res['us']:.1f} us)"
    if status == "FAILED":
        return "FAILED"
    return status or DASH


def ratio(row):
    return f"{row['ratio']:.2f}x" if row.get("ratio") is not None else DASH


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


# --- sections ----------------------------------------------------------------------------------------

def machine_section(suites, launches, compiles):
    docs = suites + launches + compiles
    m = (suites or launches or compiles)[-1]["machine"] if docs else {}
    gpus = {d["machine"].get("gpu") for d in docs}
    dry = any(d["machine"].get("dry_run") for d in docs)

    def val(key):
        return m.get(key) or DASH

    gpu = val("gpu") + (f" ({m['sms']} SMs)" if m.get("sms") else "")
    lines = ["## Machine", "", "| | |", "| --- | --- |",
             f"| GPU | {gpu} |", f"| driver | {val('driver')} (CUDA {val('cuda')}) |",
             f"| torch | {val('torch')} |", f"| Triton | {val('triton')} |",
             f"| Nereid | {val('nereid')} (commit {val('commit')}) |", f"| date | {val('date')} |", ""]
    if dry:
        lines += ["**Dry run: the numbers below are made up; they test the scripts, not a GPU.**", ""]
    if len(gpus) > 1:
        lines += [f"Note: these results come from different GPUs: {', '.join(sorted(map(str, gpus)))}.", ""]
    if docs:
        lines += ["Commands:", ""] + [f"    {d['settings']['command']}" for d in docs] + [""]
        notes = [d["settings"]["note"] for d in docs if d["settings"].get("note")]
        if notes:
            lines += [f"- {n}" for n in notes] + [""]
    return lines


def summary_section(rows, workloads):
    lines = ["## Summary", "",
             "Nereid's throughput over that of the fastest other system that passed, geometric mean over the "
             "cases of each workload (above 1: Nereid is faster).", "",
             "| workload | cases | Nereid / best | Nereid failed |", "| --- | --- | --- | --- |"]
    for w in workloads:
        wrows = [r for r in rows if r["workload"] == w.name]
        if not wrows:
            continue
        g = geomean([r.get("ratio") for r in wrows])
        failed = sum(1 for r in wrows if r["systems"].get("nereid", {}).get("status") == "FAILED")
        lines.append(f"| {w.name} | {len(wrows)} | {f'{g:.2f}x' if g else DASH} | {failed} |")
    return lines + [""]


def workload_section(w, rows, plots):
    unit = w.metric
    lines = [f"### {w.name}: {w.title}", "",
             f"| shape | dtype | torch {unit} | Triton {unit} | Nereid {unit} | Nereid / best | Nereid's variant "
             "| Triton's variant |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        labels = [row["systems"].get(s, {}).get("label") or DASH for s in ("nereid", "triton")]
        lines.append(f"| {row['shape']} | {row['dtype']} | " + " | ".join(cell(row["systems"].get(s)) for s in SYSTEMS)
                     + f" | {ratio(row)} | {labels[0]} | {labels[1]} |")
    lines.append("")
    for p in plots:
        if p.stem.rsplit("-", 1)[-1] == w.name:
            lines += [f"![{w.name}]({p.as_posix()})", ""]
    return lines


def template_rows(w):
    return [{"id": c.id, "workload": w.name, "shape": c.shape, "dtype": c.dtype, "systems": {}, "ratio": None}
            for c in w.cases(False)]


def failures_section(rows):
    out = []
    for row in rows:
        for s in SYSTEMS:
            res = row["systems"].get(s, {})
            if res.get("status") == "FAILED":
                out.append(f"- {row['workload']} {row['shape']} {row['dtype']}, {NAMES[s]}: {res.get('note', '')}")
    return ["### Failures", ""] + out + [""] if out else []


def launch_section(docs):
    lines = ["## Launch overhead", "",
             "Host time of one launch from Python of a cached kernel with six runtime arguments on tiny tensors "
             "(bench/launch.py); torch.add for comparison.  Median and 20th/80th percentiles of the per-launch "
             "time; mean: per launch, including the final synchronization.", "",
             "| system | median us | p20 us | p80 us | mean us |", "| --- | --- | --- | --- | --- |"]
    rows = docs[-1]["rows"] if docs else [{"system": s, "status": None} for s in ("torch.add", "triton", "nereid")]
    for r in rows:
        if r.get("status") == "ok":
            lines.append(f"| {r['system']} | {r['median_us']:.2f} | {r['p20_us']:.2f} | {r['p80_us']:.2f} | "
                         f"{r['mean_us']:.2f} |")
        else:
            note = f" ({r['note']})" if r.get("note") else ""
            lines.append(f"| {r['system']} | {r.get('status') or DASH}{note} | {DASH} | {DASH} | {DASH} |")
    return lines + [""]


def compile_section(docs):
    lines = ["## Compile time", "",
             "Nereid's compiler in process (medians; front end = parse, specialize and lower), and the first "
             "launch of each example kernel in a fresh process, until it completes: cold with an empty cache, "
             "then with the cache the cold run filled (bench/compile_time.py).", "",
             "| kernel | front end us | block passes us | GPU passes + PTX us | source to PTX us | "
             "Nereid cold ms | Nereid filled ms | Triton cold ms | Triton filled ms |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def us(v):  # (a split is a difference of medians: below its noise it is shown as 0)
        return f"{max(0.0, v) * 1e6:.0f}" if v is not None else DASH

    def ms(launch, backend, which):
        v = (((launch or {}).get(backend) or {}).get(which) or {}).get("first_launch_s")
        return f"{v * 1e3:.1f}" if v is not None else DASH

    if not docs:
        import compile_time
        rows = [{"kernel": e["kernel"], "name": e["name"], "splits": {}, "stages": {}, "launch": None}
                for e in compile_time.read_kernel_entries()]
    else:
        rows = docs[-1]["rows"]
    for r in rows:
        sp, launch = r.get("splits") or {}, r.get("launch")
        lines.append(f"| {r.get('name') or r['kernel']} | {us(sp.get('front end'))} | {us(sp.get('block passes'))} | "
                     f"{us(sp.get('GPU passes + PTX'))} | {us((r.get('stages') or {}).get('ptx'))} | "
                     f"{ms(launch, 'nereid', 'cold')} | {ms(launch, 'nereid', 'filled_cache')} | "
                     f"{ms(launch, 'triton', 'cold')} | {ms(launch, 'triton', 'filled_cache')} |")
    return lines + [""]


def plot_links(suites, out_dir):
    """The plots named in the results that lie beside their JSON file, as
    paths relative to out_dir; the last file's plot of a workload wins."""
    links = {}
    for d in suites:
        for name in d.get("plots", []):
            p = Path(d["_path"]).resolve().parent / Path(name).name
            if p.exists():
                links[p.stem.rsplit("-", 1)[-1]] = Path(os.path.relpath(p, out_dir))
    return list(links.values())


def render(docs, sources, out_dir=harness.REPO):
    import workloads as W
    suites, launches, compiles = docs["suite"], docs["launch"], docs["compile"]
    rows = merged_rows(suites)
    plots = plot_links(suites, out_dir)
    lines = ["# Benchmarks", "",
             "Nereid against Triton and torch (cuBLAS and its native kernels) on one GPU, each case run by all "
             "three in one process on the same random inputs, each result checked against a float64 reference "
             "before it is timed.  Times are medians of CUDA-event timings with the L2 cache flushed before each "
             "run.  Cells read `throughput (time)`; \"Nereid / best\" is Nereid's throughput over that of the "
             "fastest other system.  How it is measured: [docs/benchmarks.md](docs/benchmarks.md).", "",
             f"<!-- Generated by bench/update_md.py from {', '.join(sources) or 'no results (a template)'}; "
             "edit the generator, not this file. -->", ""]
    if not suites:
        lines += ["**Not measured yet.** On the GPU machine:", "",
                  "    python3 bench/run.py --json",
                  "    python3 bench/launch.py --json",
                  "    python3 bench/compile_time.py --json",
                  "    python3 bench/update_md.py bench/results/*.json", ""]
    lines += machine_section(suites, launches, compiles)
    if suites:
        lines += summary_section(rows, W.all_workloads())
    lines += ["## Throughput", ""]
    for w in W.all_workloads():
        wrows = [r for r in rows if r["workload"] == w.name] if suites else template_rows(w)
        if wrows:
            lines += workload_section(w, wrows, plots)
    lines += failures_section(rows)
    lines += launch_section(launches)
    lines += compile_section(compiles)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="Render BENCHMARKS.md from benchmark JSON files.")
    ap.add_argument("results", nargs="*", help="JSON files from run.py, launch.py and compile_time.py")
    ap.add_argument("--template", action="store_true", help="render the page without results")
    ap.add_argument("-o", "--output", default=str(harness.REPO / "BENCHMARKS.md"))
    args = ap.parse_args(argv)
    if not args.results and not args.template:
        ap.error("give result files, or --template")
    docs = load(args.results)
    text = render(docs, [str(Path(p)) for p in args.results], Path(args.output).resolve().parent)
    Path(args.output).write_text(text, encoding="utf-8")
    print(f"update_md: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
