"""Reports of a benchmark run, made from its events file (see worker.py):
the table printed at the end, the CSV, the JSON that update_md.py renders
into BENCHMARKS.md, and plots (PNG, when matplotlib is installed).

Throughput: GB/s = bytes / time / 1e9 for memory-bound workloads, TFLOP/s =
floating-point operations / time / 1e12 for matrix products.  "nereid/best"
is the time of the fastest other system that passed divided by Nereid's:
above 1, Nereid is faster."""
import csv
import json
from pathlib import Path

SYSTEMS = ("torch", "triton", "nereid")


def load_events(path):
    """(machine, rows, fatal) from an events file.

    rows: a list of dicts, one per case in the order the cases began, each
    with the case's fields and "systems": {system: last result fields}."""
    machine, fatal, rows = {}, None, {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        kind = e.pop("event", None)
        if kind == "machine":
            machine = e
        elif kind == "fatal":
            fatal = e.get("message")
        elif kind == "case":
            rows.setdefault(e["id"], dict(e, systems={}))
        elif kind == "result" and e["id"] in rows:
            rows[e["id"]]["systems"][e.pop("system")] = e
    return machine, [summarize(r) for r in rows.values()], fatal


def throughput(metric, work, ms):
    scale = 1e9 if metric == "GB/s" else 1e12
    return work / (ms * 1e-3) / scale


def summarize(row):
    """Add each system's time in us and throughput, and Nereid's ratio to the best other system."""
    for res in row["systems"].values():
        if res.get("status") == "ok":
            res["us"] = res["ms"] * 1e3
            res["throughput"] = throughput(row["metric"], row["work"], res["ms"])
    others = [(res["ms"], s) for s, res in row["systems"].items() if s != "nereid" and res.get("status") == "ok"]
    nereid = row["systems"].get("nereid", {})
    row["best_other"] = min(others)[1] if others else None
    row["ratio"] = min(others)[0] / nereid["ms"] if others and nereid.get("status") == "ok" else None
    return row


# --- the table --------------------------------------------------------------------------------------

def _cell(res, metric):
    """(time, throughput) text of one system's result."""
    if not res:
        return "", ""
    if res.get("status") != "ok":
        return res.get("status", "?"), ""
    digits = 0 if res["throughput"] >= 100 else 1
    return f"{res['us']:.1f}", f"{res['throughput']:.{digits}f}"


def table(rows):
    """The results as text, one block per workload."""
    lines = []
    unit = {"GB/s": "GB/s", "TFLOP/s": "TF/s"}
    workload = None
    for row in rows:
        if row["workload"] != workload:
            workload = row["workload"]
            u = unit[row["metric"]]
            lines.append("")
            lines.append(f"== {workload}: {row['title']} ({row['metric']})")
            head = f"{'shape':<22}{'dtype':<8}"
            for s in SYSTEMS:
                head += f"{s + ' us':>12}{u:>8}"
            head += f"{'nereid/best':>13}  nereid variant"
            lines.append(head)
        text = f"{row['shape']:<22}{row['dtype']:<8}"
        for s in SYSTEMS:
            t, v = _cell(row["systems"].get(s), row["metric"])
            text += f"{t:>12}{v:>8}"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        text += f"{ratio:>13}  {row['systems'].get('nereid', {}).get('label', '')}"
        lines.append(text)
    notes = failures(rows)
    if notes:
        lines += ["", "Notes:"] + [f"  {n}" for n in notes]
    return "\n".join(lines).lstrip("\n")


def failures(rows):
    """One line per system that did not pass on a case, with why."""
    out = []
    for row in rows:
        for s in SYSTEMS:
            res = row["systems"].get(s)
            if res and res.get("status") == "FAILED":
                out.append(f"{row['workload']} {row['shape']} {row['dtype']} {s}: FAILED: {res.get('note', '')}")
    return out


# --- files ------------------------------------------------------------------------------------------

CSV_FIELDS = ["status", "us", "throughput", "variant", "rel_err", "p20_us", "p80_us", "reps", "host_us", "note"]


def write_csv(rows, machine, path):
    head = ["date", "gpu", "workload", "shape", "dtype", "metric", "work"]
    head += [f"{s}_{f}" for s in SYSTEMS for f in CSV_FIELDS] + ["best_other", "nereid_over_best"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(head)
        for row in rows:
            line = [machine.get("date"), machine.get("gpu"), row["workload"], row["shape"], row["dtype"],
                    row["metric"], row["work"]]
            for s in SYSTEMS:
                res = row["systems"].get(s, {})
                ok = res.get("status") == "ok"
                line += [res.get("status", ""),
                         f"{res['us']:.3f}" if ok else "",
                         f"{res['throughput']:.2f}" if ok else "",
                         res.get("label", ""),
                         f"{res['err']:.3e}" if res.get("err") is not None else "",
                         f"{res['p20'] * 1e3:.3f}" if ok else "",
                         f"{res['p80'] * 1e3:.3f}" if ok else "",
                         res.get("reps", "") if ok else "",
                         f"{res['host_us']:.1f}" if ok and res.get("host_us") is not None else "",
                         res.get("note", "")]
            line += [row["best_other"] or "", f"{row['ratio']:.4f}" if row["ratio"] is not None else ""]
            w.writerow(line)
    return path


def write_json(rows, machine, settings, path, plots=()):
    doc = {"kind": "suite", "version": 1, "machine": machine, "settings": settings,
           "plots": [str(p) for p in plots], "rows": rows}  # plots: file names beside this file
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def write_plots(rows, out_dir, base):
    """One PNG per workload: throughput against size, one panel per series
    (dtype or shape family), one line per system.  Returns the paths
    written; none when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    colors = {"torch": "tab:blue", "triton": "tab:green", "nereid": "tab:red"}
    markers = {"torch": "s", "triton": "^", "nereid": "o"}
    by_workload = {}
    for row in rows:
        by_workload.setdefault(row["workload"], []).append(row)
    paths = []
    for workload, wrows in by_workload.items():
        series = list(dict.fromkeys(r["series"] for r in wrows))
        fig, axes = plt.subplots(1, len(series), figsize=(4.5 * len(series) + 1, 4.2), squeeze=False)
        plotted = False
        for ax, ser in zip(axes[0], series):
            for s in SYSTEMS:
                pts = sorted((r["x"], r["systems"][s]["throughput"]) for r in wrows
                             if r["series"] == ser and r["systems"].get(s, {}).get("status") == "ok")
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[s], color=colors[s], label=s)
                    plotted = True
            ax.set_xscale("log", base=2)
            ax.set_xlabel(wrows[0].get("xlabel", "size"))
            ax.set_ylabel(wrows[0]["metric"])
            ax.set_ylim(bottom=0)
            ax.set_title(ser, fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        if not plotted:
            plt.close(fig)
            continue
        fig.suptitle(f"{workload}: {wrows[0]['title']}", fontsize=11)
        fig.tight_layout()
        path = Path(out_dir) / f"{base}-{workload}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
