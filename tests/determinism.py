#!/usr/bin/env python3
"""Compiling the same kernel twice must give byte-identical output.

For every example kernel listed in examples/kernels.txt (lines: FILE KERNEL
SIGNATURE [num_warps=N] [num_stages=N] [name=LABEL]), run `nereid ir` (the
block IR, verified after each pass) and `nereid ptx` for each --arch twice,
in separate processes, and compare.
"""
import argparse
import shlex
import subprocess
import sys


def read_kernel_list(path):
    """[(label, file, kernel, signature, {num_warps, num_stages})] from a kernels.txt."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            if len(words) < 3:
                sys.exit(f"{path}:{n}: expected FILE KERNEL SIGNATURE [key=value]...")
            file, kernel, sig = words[:3]
            opts, label = {}, kernel
            for kv in words[3:]:
                key, _, value = kv.partition("=")
                if key == "name":
                    label = value
                elif key in ("num_warps", "num_stages"):
                    opts[key] = int(value)
                else:
                    sys.exit(f"{path}:{n}: unknown option '{kv}'")
            out.append((label, file, kernel, sig, opts))
    return out


def option_args(opts):
    """--num-warps / --num-stages arguments of the CLI for a line's options."""
    args = []
    for key, flag in (("num_warps", "--num-warps"), ("num_stages", "--num-stages")):
        if key in opts:
            args += [flag, str(opts[key])]
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nereid", default="build/nereid")
    ap.add_argument("--arch", action="append", default=None,
                    help="also compare the PTX for this target (repeatable; default sm_80 and sm_90a)")
    ap.add_argument("dir")
    a = ap.parse_args()
    archs = a.arch if a.arch is not None else ["sm_80", "sm_90a"]
    n = bad = 0
    for label, file, kernel, sig, opts in read_kernel_list(f"{a.dir}/kernels.txt"):
        base = [f"{a.dir}/{file}", "-k", kernel, "-s", sig] + option_args(opts)
        cmds = [("ir", [a.nereid, "ir"] + base + ["--verify-each"])]
        cmds += [(arch, [a.nereid, "ptx"] + base + ["--arch", arch]) for arch in archs]
        n += 1
        for what, cmd in cmds:
            outs = [subprocess.run(cmd, capture_output=True, text=True) for _ in range(2)]
            if outs[0].returncode != 0:
                bad += 1
                print(f"FAIL {file}:{label} ({what}): {outs[0].stderr}")
                break
            if outs[0].stdout != outs[1].stdout:
                bad += 1
                print(f"FAIL {file}:{label} ({what}): output differs between two runs")
                break
    print(f"determinism: {n - bad}/{n} kernels identical")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
