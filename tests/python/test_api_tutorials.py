"""The tutorials (examples/tutorials) on the interpreter, in this process so that the
suite's PTX check compiles their kernels for the GPU targets too."""
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TUTORIALS = os.path.join(ROOT, "examples", "tutorials")
NAMES = sorted(f for f in os.listdir(TUTORIALS) if f[:2].isdigit() and f.endswith(".py"))


def test_all_five_are_there():
    assert [n[:2] for n in NAMES] == ["01", "02", "03", "04", "05"]


@pytest.mark.parametrize("name", NAMES)
def test_tutorial_runs_on_the_interpreter(name, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("NEREID_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NEREID_INTERPRET", "1")  # small sizes, numpy (on a GPU they are run by hand)
    monkeypatch.syspath_prepend(TUTORIALS)
    sys.modules.pop("common", None)
    spec = importlib.util.spec_from_file_location("tutorial_" + name[:2], os.path.join(TUTORIALS, name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main()
    out = capsys.readouterr().out
    assert "relative error" in out
