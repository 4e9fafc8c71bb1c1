"""pytest configuration of the compatibility suite: the same fixtures, helpers and
device modes (NEREID_TEST_DEVICE, NEREID_TEST_PTXAS) as tests/python.

When both suites are collected in one run, this module replaces tests/python's
conftest as the module named `conftest`, so it offers every name that one
does (tests/python imports poisoned, rel_err and ROOT from it)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compat_util  # noqa: E402  (loads tests/python/conftest.py: paths and device modes)

ROOT = compat_util.base.ROOT
rel_err = compat_util.rel_err
poisoned = compat_util.poisoned
rng = compat_util.rng_fixture
pytest_runtest_logreport = compat_util.base.pytest_runtest_logreport
pytest_collection_modifyitems = compat_util.base.pytest_collection_modifyitems
