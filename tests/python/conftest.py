import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.environ.get("NEREID_TEST_PYTHONPATH") or os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples"))


@pytest.fixture
def rng(request):
    """A fresh random generator per test; the seed is printed on failure."""
    seed = int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)


def rel_err(got, ref):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert not np.isnan(got).any(), "output has NaN (an element was not written?)"
    den = np.linalg.norm(ref.ravel())
    return float(np.linalg.norm((got - ref).ravel()) / (den if den > 0 else 1.0))


def poisoned(shape, dtype):
    """An output array filled with NaN (floats) or a sentinel (ints), so an unwritten element fails."""
    a = np.empty(shape, dtype=dtype)
    if np.issubdtype(np.dtype(dtype), np.floating) or str(dtype) in ("bfloat16",):
        a.fill(np.nan)
    elif np.dtype(dtype) == np.bool_:
        a.fill(True)
    else:
        a.fill(np.iinfo(dtype).max if np.issubdtype(np.dtype(dtype), np.signedinteger) else 0xA5)
    return a


if os.environ.get("NEREID_TEST_DEVICE") == "cuda":
    import gpu_mode

    gpu_mode.install()

if os.environ.get("NEREID_TEST_DEVICE") == "sim":
    import sim_mode

    sim_mode.install()

if os.environ.get("NEREID_TEST_PTXAS") == "1":
    import ptxas_mode

    if ptxas_mode.ptxas_path():
        ptxas_mode.install()


def pytest_runtest_logreport(report):
    """NEREID_TEST_INSTAFAIL=1 (set by `make gpu-test`): a failure's report is written the moment
    it happens, so a run cut short (a GPU run's time limit, a hung launch) still shows why the
    tests before the cut failed."""
    if report.failed and os.environ.get("NEREID_TEST_INSTAFAIL") == "1":
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
        sys.stderr.write(f"\n===== FAILED {report.nodeid} ({report.when})\n>>> {crash[:2000]}\n"
                         f"{report.longreprtext}\n=====\n")
        sys.stderr.flush()


def pytest_collection_modifyitems(config, items):
    """NEREID_TEST_SHARD=i/n keeps every n-th collected test starting at the i-th (0-based), so
    n processes share one run (`make gpu-test GPU_TEST_JOBS=n`) with the slow cases spread out."""
    shard = os.environ.get("NEREID_TEST_SHARD")
    if not shard:
        return
    i, n = (int(v) for v in shard.split("/"))
    if not 0 <= i < n:
        raise pytest.UsageError(f"NEREID_TEST_SHARD={shard}: want i/n with 0 <= i < n")
    keep = [it for k, it in enumerate(items) if k % n == i]
    config.hook.pytest_deselected(items=[it for k, it in enumerate(items) if k % n != i])
    items[:] = keep
