"""nereid.runtime: the JIT and launch machinery."""
from .jit import JITFunction, jit  # noqa: F401
