"""nereid.language.extra: vendor math libraries (libdevice names)."""
from . import libdevice  # noqa: F401
from . import cuda  # noqa: F401
