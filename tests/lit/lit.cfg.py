# lit configuration for Nereid's FileCheck tests (tests/lit/<area>/*.ir, *.py).
#
# RUN lines use `nereid` (found on PATH; the Makefile puts build/ first),
# `filecheck` (the PyPI filecheck package, on PATH or beside this Python),
# and lit's internal shell builtins `not`, `diff`, `cat`, `echo`.
import os
import shutil
import sys

import lit.formats

config.name = "nereid"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir", ".py"]
config.excludes = ["lit.cfg.py", "Inputs", "Output", "__pycache__"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
_repo = os.path.dirname(os.path.dirname(config.test_source_root))
config.test_exec_root = os.path.join(os.environ.get("NEREID_LIT_OUT", os.path.join(_repo, "build")), "lit")

# Commands run with the caller's PATH and sanitizer settings.
for var in ("PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "PYTHONPATH", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]


def _find(tool):
    path = shutil.which(tool, path=os.environ.get("PATH", ""))
    if not path:
        beside = os.path.join(os.path.dirname(sys.executable), tool)
        if os.path.exists(beside):
            path = beside
    if not path:
        lit_config.fatal("cannot find '%s' on PATH" % tool)
    return path


# Whole words only, so that paths and names containing them are left alone.
def _word(name):
    return r"(?<![\w/.-])" + name + r"(?![\w/.-])"


config.substitutions.append((_word("nereid"), _find("nereid")))
config.substitutions.append((_word("filecheck"), _find("filecheck")))
config.substitutions.append(("%python", sys.executable))
