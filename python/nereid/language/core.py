"""Host-side objects of the kernel language: dtypes, constexpr, builtin stubs."""
import enum


class constexpr:
    """A compile-time constant.  Used as a parameter annotation
    (``BLOCK: tl.constexpr``) and to declare module-level constants
    (``BLOCK = tl.constexpr(128)``)."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return int(self.value)

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __bool__(self):
        return bool(self.value)

    def __eq__(self, other):
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self):
        return hash(self.value)


class dtype:
    """An element type: tl.float16, tl.int32, ..."""

    SINT, UINT, FLOAT, BOOL = "sint", "uint", "float", "bool"

    def __init__(self, name, sig, bits, kind):
        self.name = name
        self._sig = sig
        self.primitive_bitwidth = bits
        self.kind_ = kind

    # Predicates that kernels and host code use.
    def is_floating(self):
        return self.kind_ == dtype.FLOAT

    def is_int(self):
        return self.kind_ in (dtype.SINT, dtype.UINT, dtype.BOOL)

    def is_int_signed(self):
        return self.kind_ == dtype.SINT

    def is_int_unsigned(self):
        return self.kind_ == dtype.UINT

    def is_bool(self):
        return self.kind_ == dtype.BOOL

    def is_fp8(self):
        return self.name in ("fp8e4nv", "fp8e5")

    def is_fp16(self):
        return self.name == "fp16"

    def is_bf16(self):
        return self.name == "bf16"

    def is_fp32(self):
        return self.name == "fp32"

    def is_fp64(self):
        return self.name == "fp64"

    def is_ptr(self):
        return False

    @property
    def int_bitwidth(self):
        return self.primitive_bitwidth

    def __repr__(self):
        return f"triton.language.{_TL_NAME[self.name]}"

    def __str__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, dtype) and not isinstance(other, pointer_type) and other.name == self.name

    def __hash__(self):
        return hash(("dtype", self.name))

    def signature(self):
        """The name used in kernel signatures (fp32, i32, ...)."""
        return self._sig


class pointer_type(dtype):
    def __init__(self, element_ty):
        super().__init__("*" + element_ty.name, "*" + element_ty._sig, 64, dtype.UINT)
        self.element_ty = element_ty

    def is_ptr(self):
        return True

    def __eq__(self, other):
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self):
        return hash(("ptr", self.element_ty.name))

    def __repr__(self):
        return f"pointer<{self.element_ty!r}>"


_TL_NAME = {}


def _dt(tl_name, name, sig, bits, kind):
    d = dtype(name, sig, bits, kind)
    _TL_NAME[name] = tl_name
    return d


int1 = _dt("int1", "int1", "i1", 1, dtype.BOOL)
int8 = _dt("int8", "int8", "i8", 8, dtype.SINT)
int16 = _dt("int16", "int16", "i16", 16, dtype.SINT)
int32 = _dt("int32", "int32", "i32", 32, dtype.SINT)
int64 = _dt("int64", "int64", "i64", 64, dtype.SINT)
uint8 = _dt("uint8", "uint8", "u8", 8, dtype.UINT)
uint16 = _dt("uint16", "uint16", "u16", 16, dtype.UINT)
uint32 = _dt("uint32", "uint32", "u32", 32, dtype.UINT)
uint64 = _dt("uint64", "uint64", "u64", 64, dtype.UINT)
float8e4nv = _dt("float8e4nv", "fp8e4nv", "fp8e4nv", 8, dtype.FLOAT)
float8e5 = _dt("float8e5", "fp8e5", "fp8e5", 8, dtype.FLOAT)
float16 = _dt("float16", "fp16", "fp16", 16, dtype.FLOAT)
bfloat16 = _dt("bfloat16", "bf16", "bf16", 16, dtype.FLOAT)
float32 = _dt("float32", "fp32", "fp32", 32, dtype.FLOAT)
float64 = _dt("float64", "fp64", "fp64", 64, dtype.FLOAT)
void = _dt("void", "void", "void", 0, dtype.SINT)
pi32_t = pointer_type(int32)

ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float8e4nv, float8e5, float16, bfloat16, float32, float64]


class tensor:
    """The type of block values inside kernels (host code never holds one)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("tl.tensor values exist only inside @jit functions")


class PropagateNan(enum.Enum):
    NONE = 0
    ALL = 0xFFFF


_builtin_names = [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "cdiv",
    "load", "store", "where", "maximum", "minimum", "clamp",
    "exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "abs", "sin", "cos",
    "floor", "ceil", "fma", "erf", "sigmoid", "div_rn", "fdiv", "umulhi", "softmax",
    "sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce",
    "dot", "reshape", "view", "trans", "permute", "broadcast_to", "broadcast", "expand_dims", "cast",
    "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
    "atomic_xchg", "atomic_cas",
    "multiple_of", "max_contiguous", "max_constancy", "assume",
    "device_print", "device_assert", "debug_barrier", "static_print", "static_assert",
    "associative_scan", "cumsum", "cumprod", "flip", "gather", "histogram", "interleave", "join", "split", "cat",
    "ravel", "sort", "topk", "swizzle2d", "reduce_or", "bitonic_merge",
    "rand", "rand4x", "randint", "randint4x", "randn", "randn4x", "philox", "philox_impl",
    "pair_uniform_to_normal", "uint_to_uniform_float",
]


def _make_builtin(name):
    def builtin(*args, **kwargs):
        raise RuntimeError(f"tl.{name} can only be called inside a @jit function")

    builtin.__name__ = name
    builtin.__qualname__ = name
    builtin.__doc__ = f"tl.{name}: a kernel builtin (see docs/language.md)."
    return builtin
