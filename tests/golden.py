#!/usr/bin/env python3
"""Golden tests: each tests/<dir>/NAME.py sits beside its expected output.

  NAME.py + NAME.err   nereid must fail (exit 1) and print exactly NAME.err on stderr
  NAME.py + NAME.out   nereid must succeed (exit 0) and print exactly NAME.out on stdout

The first line of NAME.py may be `# ARGS: <nereid arguments>` (default: `check`);
the file's path is appended.  --update rewrites the expected files.
"""
import argparse
import os
import shlex
import subprocess
import sys


def run_one(nereid, path, update):
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    args = ["check"]
    if first.startswith("# ARGS:"):
        args = shlex.split(first[len("# ARGS:"):])
    base = path[:-3]
    cmd = [nereid] + args + [path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if os.path.exists(base + ".err") or (update and not os.path.exists(base + ".out") and p.returncode != 0):
        exp_file, got, want_rc = base + ".err", p.stderr, 1
    elif os.path.exists(base + ".out") or update:
        exp_file, got, want_rc = base + ".out", p.stdout, 0
    else:
        return None
    if update:
        with open(exp_file, "w") as f:
            f.write(got)
        return True, ""
    with open(exp_file) as f:
        want = f.read()
    if p.returncode != want_rc:
        return False, f"exit status {p.returncode}, expected {want_rc}\n{p.stderr}"
    if got != want:
        import difflib
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), exp_file, "actual"))
        return False, diff
    return True, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nereid", default="build/nereid")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    npass = nfail = 0
    for d in a.dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".py"):
                continue
            path = os.path.join(d, name)
            r = run_one(a.nereid, path, a.update)
            if r is None:
                continue
            ok, msg = r
            if ok:
                npass += 1
                print(f"PASS {path}")
            else:
                nfail += 1
                print(f"FAIL {path}\n{msg}")
    print(f"{npass} passed, {nfail} failed")
    sys.exit(1 if nfail else 0)


if __name__ == "__main__":
    main()
