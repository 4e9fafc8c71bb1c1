"""nereid.runtime: the JIT, the launch machinery, autotuning and the driver."""
from .jit import CompiledKernel, JITFunction, jit  # noqa: F401
from .errors import OutOfResources  # noqa: F401
from .autotuner import Autotuner, Config, Heuristics, autotune, heuristics  # noqa: F401
from .driver import driver  # noqa: F401  (the object, as triton.runtime.driver)
from . import cache  # noqa: F401

__all__ = ["jit", "JITFunction", "CompiledKernel", "OutOfResources", "Autotuner", "Config", "Heuristics",
           "autotune", "heuristics", "driver"]
