"""Nereid: a block-level GPU kernel compiler for the Triton kernel language.

Use it as Triton: ``import nereid as triton`` and ``import nereid.language as tl``.
"""
from . import _C
from . import language  # noqa: F401
from .errors import CompilationError, LaunchError, OutOfResources  # noqa: F401
from .runtime.jit import CompiledKernel, JITFunction, jit  # noqa: F401
from .runtime.autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from . import runtime  # noqa: F401
from . import testing  # noqa: F401

__version__ = _C.VERSION


def cdiv(x, y):
    """Ceiling division of integers: cdiv(10, 4) == 3."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    if n <= 1:
        return 1
    return 1 << (n - 1).bit_length()


__all__ = ["jit", "JITFunction", "CompiledKernel", "autotune", "Config", "heuristics", "Autotuner", "Heuristics",
           "cdiv", "next_power_of_2", "CompilationError", "LaunchError", "OutOfResources", "language", "runtime",
           "testing"]
