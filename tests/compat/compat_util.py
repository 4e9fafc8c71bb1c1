"""Helpers of the compatibility suite, shared with the end-to-end suite.

tests/python/conftest.py is loaded (under its own module name, unless pytest
has it in sys.modules already): loading it puts python/ on sys.path and
installs the device modes that NEREID_TEST_DEVICE (cuda: every launch also on
the GPU; sim: also on the PTX simulator) and NEREID_TEST_PTXAS=1 (every kernel
also assembled with ptxas) select, so this suite runs under exactly the same
modes as tests/python.  The modes install once however often that file runs
(both suites in one pytest run load it twice)."""
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY_TESTS = os.path.join(ROOT, "tests", "python")
_BASE_PATH = os.path.join(PY_TESTS, "conftest.py")


def _load_base():
    # pytest may already have imported it (both suites in one run): reuse that
    # module, so that the device modes are not installed twice
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and os.path.abspath(f) == _BASE_PATH:
            return mod
    if PY_TESTS not in sys.path:
        sys.path.insert(0, PY_TESTS)  # gpu_mode, sim_mode, ptxas_mode
    spec = importlib.util.spec_from_file_location("nereid_py_suite_conftest", _BASE_PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


base = _load_base()
sys.path.insert(0, os.path.join(HERE, "kernels"))

rel_err = base.rel_err
poisoned = base.poisoned
rng_fixture = base.rng

try:
    import ml_dtypes
except ImportError:  # pragma: no cover - installed by tests/requirements.txt
    ml_dtypes = None

# Relative errors allowed for results stored in each dtype (compute in fp32).
TOL = {"fp32": 2e-5, "fp16": 2e-3, "bf16": 1.6e-2}


def dtype_of(name):
    """The numpy dtype for a short name (fp32, fp16, bf16)."""
    if name == "bf16":
        if ml_dtypes is None:
            import pytest
            pytest.skip("bf16 needs ml_dtypes")
        return ml_dtypes.bfloat16
    return {"fp32": np.float32, "fp16": np.float16}[name]


def f64(a):
    return np.asarray(a).astype(np.float64)
