"""pytest configuration of the compatibility suite: the same fixtures and
device modes (NEREID_TEST_DEVICE, NEREID_TEST_PTXAS) as tests/python."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compat_util  # noqa: E402  (loads tests/python/conftest.py: paths and device modes)

rng = compat_util.rng_fixture
