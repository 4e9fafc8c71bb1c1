"""nereid.runtime.errors (as triton.runtime.errors)."""
from ..errors import CompilationError, LaunchError, OutOfResources  # noqa: F401
