"""nereid.language.extra.libdevice: the libdevice math names (as
triton.language.extra.libdevice and triton.language.extra.cuda.libdevice).

Kernels call them as ``libdevice.exp(x)`` after ``from nereid.language.extra
import libdevice``; the compiler implements them (see docs/language.md).
Host code cannot call them.  SUPPORTED are the names the compiler accepts;
the others of libdevice's names are defined too (so that modules importing
them load) and the compiler reports their use in a kernel as unsupported.
"""
from ..core import _make_builtin

# The names kernels can use.
SUPPORTED = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos",
    "cosh", "div_rn", "erf", "erfc", "exp", "exp10", "exp2", "expm1", "fabs", "fast_cosf", "fast_exp10f",
    "fast_expf", "fast_log10f", "fast_log2f", "fast_logf", "fast_powf", "fast_sinf", "fast_tanf", "fdim",
    "finitef", "floor", "fma", "fmax", "fmin", "fmod", "hypot", "isfinited", "isinf", "isnan", "lgamma",
    "log", "log10", "log1p", "log2", "nearbyint", "nextafter", "pow", "remainder", "rint", "round", "rsqrt",
    "sin", "sinh", "sqrt", "sqrt_rn", "tan", "tanh", "tgamma", "trunc",
)

# libdevice names the compiler does not implement.
NOT_SUPPORTED = (
    "add_rd", "add_rn", "add_ru", "add_rz", "brev", "byte_perm", "clz", "cospi", "cyl_bessel_i0",
    "cyl_bessel_i1", "div_rd", "div_ru", "div_rz", "double2float_rd", "double2float_rn", "double2float_ru",
    "double2float_rz", "double2hiint", "double2int_rd", "double2int_rn", "double2int_ru", "double2int_rz",
    "double2ll_rd", "double2ll_rn", "double2ll_ru", "double2ll_rz", "double2loint", "double2uint_rd",
    "double2uint_rn", "double2uint_ru", "double2uint_rz", "double2ull_rd", "double2ull_rn", "double2ull_ru",
    "double2ull_rz", "double_as_longlong", "erfcinv", "erfcx", "erfinv", "fast_dividef", "ffs",
    "float2int_rd", "float2int_rn", "float2int_ru", "float2int_rz", "float2ll_rd", "float2ll_rn",
    "float2ll_ru", "float2ll_rz", "float2uint_rd", "float2uint_rn", "float2uint_ru", "float2uint_rz",
    "float2ull_rd", "float2ull_rn", "float2ull_ru", "float2ull_rz", "float_as_int", "float_as_uint",
    "fma_rd", "fma_rn", "fma_ru", "fma_rz", "hadd", "hiloint2double", "ilogb", "int2double_rn",
    "int2float_rd", "int2float_rn", "int2float_ru", "int2float_rz", "int_as_float", "j0", "j1", "jn",
    "ldexp", "ll2double_rd", "ll2double_rn", "ll2double_ru", "ll2double_rz", "ll2float_rd", "ll2float_rn",
    "ll2float_ru", "ll2float_rz", "llrint", "llround", "logb", "longlong_as_double", "mul24", "mul_rd",
    "mul_rn", "mul_ru", "mul_rz", "mulhi", "norm3d", "norm4d", "normcdf", "normcdfinv", "popc", "rcbrt",
    "rcp64h", "rcp_rd", "rcp_rn", "rcp_ru", "rcp_rz", "rhadd", "rhypot", "rnorm3d", "rnorm4d", "rsqrt_rn",
    "sad", "saturatef", "scalbn", "signbit", "sinpi", "sqrt_rd", "sqrt_ru", "sqrt_rz", "sub_rd", "sub_rn",
    "sub_ru", "sub_rz", "uint2double_rn", "uint2float_rd", "uint2float_rn", "uint2float_ru", "uint2float_rz",
    "uint_as_float", "ull2double_rd", "ull2double_rn", "ull2double_ru", "ull2double_rz", "ull2float_rd",
    "ull2float_rn", "ull2float_ru", "ull2float_rz", "y0", "y1", "yn",
)

for _n in SUPPORTED + NOT_SUPPORTED:
    globals()[_n] = _make_builtin(_n)
del _n

__all__ = list(SUPPORTED + NOT_SUPPORTED)


def __getattr__(name):
    raise AttributeError(f"libdevice has no function {name!r}")
