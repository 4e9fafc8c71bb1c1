"""Every Python file of the tree compiles, including the ones that only a GPU run imports
(gpu_mode.py, the benchmark harness), so a syntax error there shows up without a GPU."""
import os

import pytest

from conftest import ROOT

DIRS = ("python", "tests", "bench", "examples", "tools")
SKIP = (os.path.join("tests", "errors"), os.path.join("tests", "fuzz"))  # bad on purpose


def _sources():
    for d in DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, d)):
            dirnames[:] = [n for n in dirnames if not n.startswith((".", "__"))
                           and os.path.relpath(os.path.join(dirpath, n), ROOT) not in SKIP]
            for f in filenames:
                if f.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


@pytest.mark.parametrize("path", sorted(_sources()))
def test_compiles(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        src = f.read()
    compile(src, path, "exec", dont_inherit=True)  # raises SyntaxError with file:line
