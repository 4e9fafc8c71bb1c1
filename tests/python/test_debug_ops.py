"""tl.device_print and tl.device_assert, on the interpreter and (under
NEREID_TEST_DEVICE=cuda) on the GPU, each in a child process: a failed
assertion on the GPU leaves the CUDA context unusable."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "tests", "python", "scripts", "debug_ops.py")
PLACES = ["cpu"] + (["cuda"] if os.environ.get("NEREID_TEST_DEVICE") == "cuda" else [])


def run(what, where):
    env = dict(os.environ, NEREID_SYNC="1")
    env.pop("NEREID_TEST_DEVICE", None)
    return subprocess.run([sys.executable, SCRIPT, what, where], capture_output=True, text=True, env=env, timeout=300)


def expected_prints():
    lines = set()
    xs = [i * 7 - 20 for i in range(8)]
    ys = [-2 + 4 * i / 7 for i in range(8)]
    for pid in range(2):
        for i in range(8):
            x = xs[i] if i < 6 else 0
            lines.add(f"pid ({pid}, 0, 0) idx ({i})  x is: {x}")
            lines.add(f"pid ({pid}, 0, 0) idx ({i})  h: 0x{x & 0xffffffff:08x}")
        lines.add(f"pid ({pid}, 0, 0) idx ()  sum: {sum(xs[:6])}")
    return lines, ys


@pytest.mark.parametrize("where", PLACES)
def test_device_print(where):
    p = run("print", where)
    assert p.returncode == 0, p.stderr
    got = [ln for ln in p.stdout.splitlines() if ln.strip()]
    want, ys = expected_prints()
    ints = {ln for ln in got if " y: " not in ln}
    assert ints == want, f"printed lines differ:\n{sorted(ints ^ want)}"
    floats = [ln for ln in got if " y: " in ln]
    assert len(floats) == 16, floats
    for ln in floats:
        idx = int(ln.split("idx (")[1].split(")")[0])
        v = float(ln.rsplit(":", 1)[1])
        want_v = ys[idx] if idx < 6 else 0.0
        assert abs(v - want_v) <= 1e-5 * max(1.0, abs(want_v)), ln


@pytest.mark.parametrize("where", PLACES)
def test_device_assert(where):
    p = run("assert", where)
    assert p.returncode != 0, "a failed device assertion must fail the launch"
    assert "x too big" in p.stdout + p.stderr, p.stdout + p.stderr
