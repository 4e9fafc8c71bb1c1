#!/usr/bin/env python3
"""Compiling the same kernel twice must give byte-identical output.

For every example kernel listed in examples/kernels.txt (lines: FILE KERNEL SIGNATURE),
run `nereid ir` twice in separate processes and compare.
"""
import argparse
import shlex
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nereid", default="build/nereid")
    ap.add_argument("dir")
    a = ap.parse_args()
    listing = f"{a.dir}/kernels.txt"
    n = bad = 0
    with open(listing) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            file, kernel, sig = shlex.split(line)
            cmd = [a.nereid, "ir", f"{a.dir}/{file}", "-k", kernel, "-s", sig, "--verify-each"]
            outs = [subprocess.run(cmd, capture_output=True, text=True) for _ in range(2)]
            n += 1
            if outs[0].returncode != 0:
                bad += 1
                print(f"FAIL {file}:{kernel}: {outs[0].stderr}")
            elif outs[0].stdout != outs[1].stdout:
                bad += 1
                print(f"FAIL {file}:{kernel}: output differs between two runs")
    print(f"determinism: {n - bad}/{n} kernels identical")
    sys.exit(1 if bad or n == 0 else 0)


if __name__ == "__main__":
    main()
