"""nereid.language: the kernel language (use as ``import nereid.language as tl``).

Kernels are compiled from their source text by Nereid's C compiler, so the
functions here are never executed: they exist so that host code can refer
to dtypes and ``tl.constexpr``, and so that calling a kernel builtin from
host code fails with a clear message.  The dtype objects describe each type.
"""
from .core import (  # noqa: F401
    constexpr, dtype, pointer_type, tensor, PropagateNan,
    int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float8e4nv, float8e5, float16, bfloat16, float32, float64,
    void, pi32_t,
)
from .core import _builtin_names
from .core import _make_builtin as _mk
from . import math  # noqa: F401
from . import extra  # noqa: F401

bool_ = int1
float8e4m3fn = float8e4nv
float8e5m2 = float8e5

for _n in _builtin_names:
    globals()[_n] = _mk(_n)
del _n


def static_range(*args, **kwargs):
    """Compile-time unrolled range (only meaningful inside a kernel)."""
    raise RuntimeError("tl.static_range can only be used inside a @jit function")


def range(*args, **kwargs):  # noqa: A001 - mirrors triton.language.range
    """tl.range(start, end, step, num_stages=None, loop_unroll_factor=None, ...)."""
    raise RuntimeError("tl.range can only be used inside a @jit function")
