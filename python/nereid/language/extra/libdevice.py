"""libdevice-style math functions, usable as tl.extra.libdevice.<name> in kernels."""
from ..core import _make_builtin


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _make_builtin(name)
