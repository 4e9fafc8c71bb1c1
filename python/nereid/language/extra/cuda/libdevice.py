"""nereid.language.extra.cuda.libdevice: the same names as nereid.language.extra.libdevice."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import NOT_SUPPORTED, SUPPORTED, __all__  # noqa: F401
