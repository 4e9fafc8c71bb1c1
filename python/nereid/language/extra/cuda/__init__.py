"""nereid.language.extra.cuda: the CUDA flavour of the libdevice names."""
from . import libdevice  # noqa: F401
