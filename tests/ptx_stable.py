#!/usr/bin/env python3
"""Whether a change to the compiler changed the code it makes.

    python3 tests/ptx_stable.py dump DIR [--nereid build/nereid] [--arch sm_80 ...]
    python3 tests/ptx_stable.py compare OLD NEW [--ptxas /usr/local/cuda/bin/ptxas]

`dump` writes the PTX of every kernel of examples/kernels.txt (with its
num_warps and num_stages) for each target (default sm_80, sm_90, sm_90a) as
DIR/<arch>/<name>.ptx.  `compare` takes two dumps, typically before and after
a change: files that differ are assembled by ptxas for their target and pass
if both give the same cubin, byte for byte (the PTX changed, the machine
code did not: e.g. fewer dead or repeated instructions).  Exit status 1 if
any kernel fails to compile, or differs in its machine code (or in its PTX,
when there is no ptxas)."""
import argparse
import filecmp
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHS = ["sm_80", "sm_90", "sm_90a"]


def kernel_lines(examples):
    """[(name, file, kernel, signature, [CLI options])] of kernels.txt."""
    out = []
    for n, line in enumerate((examples / "kernels.txt").read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        name, opts = words[1], []
        for kv in words[3:]:
            key, _, value = kv.partition("=")
            if key == "name":
                name = value
            elif key in ("num_warps", "num_stages"):
                opts += ["--" + key.replace("_", "-"), value]
            else:
                sys.exit(f"kernels.txt:{n}: unknown option '{kv}'")
        out.append((name, words[0], words[1], words[2], opts))
    return out


def dump(args):
    bad = 0
    for arch in args.arch or ARCHS:
        d = Path(args.dir) / arch
        d.mkdir(parents=True, exist_ok=True)
        for name, file, kernel, sig, opts in kernel_lines(Path(args.examples)):
            cmd = [args.nereid, "ptx", str(Path(args.examples) / file), "-k", kernel, "-s", sig, "--arch", arch] + opts
            r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, NEREID_NO_CACHE="1"))
            if r.returncode != 0:
                bad += 1
                print(f"FAIL {arch} {name}: {r.stderr.strip()[:300]}")
                continue
            (d / f"{name}.ptx").write_text(r.stdout, encoding="utf-8")
    print(f"ptx_stable: dumped into {args.dir}" + (f", {bad} failed" if bad else ""))
    return 1 if bad else 0


def assemble(ptxas, arch, ptx, out):
    r = subprocess.run([ptxas, f"-arch={arch}", str(ptx), "-o", str(out)], capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def compare(args):
    old, new = Path(args.old), Path(args.new)
    ptxas = args.ptxas or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    have_ptxas = Path(ptxas).exists()
    same = same_code = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for arch_dir in sorted(p for p in old.iterdir() if p.is_dir()):
            arch = arch_dir.name
            for f in sorted(arch_dir.glob("*.ptx")):
                g = new / arch / f.name
                if not g.exists():
                    bad += 1
                    print(f"MISSING {arch} {f.stem}")
                    continue
                if filecmp.cmp(f, g, shallow=False):
                    same += 1
                    continue
                if not have_ptxas:
                    bad += 1
                    print(f"DIFFERS {arch} {f.stem} (no ptxas to compare the machine code)")
                    continue
                a, b = Path(tmp) / "old.cubin", Path(tmp) / "new.cubin"
                ok_a, err_a = assemble(ptxas, arch, f, a)
                ok_b, err_b = assemble(ptxas, arch, g, b)
                if not ok_b:
                    bad += 1
                    print(f"PTXAS FAILS {arch} {f.stem}: {err_b[:300]}")
                elif ok_a and filecmp.cmp(a, b, shallow=False):
                    same_code += 1
                    print(f"same machine code {arch} {f.stem}: {len(f.read_text().splitlines())} -> "
                          f"{len(g.read_text().splitlines())} lines of PTX")
                else:
                    bad += 1
                    print(f"DIFFERS {arch} {f.stem}: the machine code changed")
    print(f"ptx_stable: {same} identical, {same_code} with the same machine code, {bad} different")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("dir")
    d.add_argument("--nereid", default=str(ROOT / "build" / "nereid"))
    d.add_argument("--examples", default=str(ROOT / "examples"))
    d.add_argument("--arch", action="append")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--ptxas")
    args = ap.parse_args()
    return dump(args) if args.cmd == "dump" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
