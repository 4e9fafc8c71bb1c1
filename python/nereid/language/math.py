"""nereid.language.math: the math functions (same names as triton.language.math)."""
from .core import _make_builtin

_names = ["exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "abs", "sin", "cos",
          "floor", "ceil", "fma", "erf", "div_rn", "fdiv", "umulhi", "cdiv"]
for _n in _names:
    globals()[_n] = _make_builtin(_n)
del _n
