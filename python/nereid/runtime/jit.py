"""@nereid.jit: kernels compiled from their source text and launched over a grid.

A JITFunction keeps the source of the Python module that defines it.  On a
launch ``kernel[grid](*args, **meta)`` it binds the arguments to the
parameters, derives the specialization signature (pointer dtypes, scalar
types, divisible-by-16 and equal-to-1 integers, constexpr values), compiles
once per signature with the C compiler and runs the kernel.  Without a GPU
backend, kernels run on the reference interpreter over host memory.
"""
import inspect
import math
import os
import textwrap

from .. import _C
from ..errors import CompilationError, LaunchError
from ..language import core as _core

# NEREID_VERIFY_EACH=1 runs the IR verifier after every pass (the test suite sets it).
_VERIFY_EACH = os.environ.get("NEREID_VERIFY_EACH", "") not in ("", "0")
# NEREID_SYNC=1 waits for every GPU launch and reports its faults at the launch.
_SYNC = os.environ.get("NEREID_SYNC", "") not in ("", "0")

_NP_DTYPES = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "float32": "fp32", "float64": "fp64",
    "bfloat16": "bf16", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}
_TORCH_DTYPES = {
    "torch.bool": "i1", "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "torch.float64": "fp64",
    "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5",
}


def _is_constexpr_annotation(ann):
    if ann is inspect.Parameter.empty:
        return False
    if ann is _core.constexpr:
        return True
    if isinstance(ann, type) and ann.__name__ == "constexpr":
        return True
    return isinstance(ann, str) and ann.split(".")[-1] == "constexpr"


def _float_literal(v):
    if math.isnan(v):
        return "float('nan')"
    if math.isinf(v):
        return "float('inf')" if v > 0 else "float('-inf')"
    r = repr(float(v))
    return r


def _str_literal(s):
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _constexpr_literal(name, v):
    if isinstance(v, _core.constexpr):
        v = v.value
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float_literal(v)
    if isinstance(v, str):
        return _str_literal(v)
    if isinstance(v, _core.dtype):
        return "tl." + _core._TL_NAME.get(v.name, v.name)
    raise TypeError(f"constexpr argument '{name}' must be an int, float, bool, str, None or a dtype, "
                    f"not {type(v).__name__}")


def _extent(shape, strides_bytes, item):
    """Bytes from the first element to the end of the last one, or None with negative strides."""
    if any(n == 0 for n in shape):
        return 0
    hi = item
    for n, st in zip(shape, strides_bytes):
        ext = (n - 1) * st
        if ext < 0:
            return None
        hi += ext
    return hi


def _buffer_of(name, v):
    """(signature dtype, address, nbytes, device) of an array-like argument, or None.
    device is None for host memory, else the CUDA device ordinal."""
    if hasattr(v, "data_ptr") and hasattr(v, "dtype") and hasattr(v, "stride"):  # torch.Tensor
        dt = _TORCH_DTYPES.get(str(v.dtype))
        if dt is None:
            raise TypeError(f"argument '{name}': tensors of dtype {v.dtype} are not supported")
        item = v.element_size()
        nbytes = _extent(v.shape, [st * item for st in v.stride()], item)
        if nbytes is None:
            raise TypeError(f"argument '{name}': tensors with negative strides are not supported")
        dev = v.device
        if dev.type == "cuda":
            return dt, v.data_ptr(), nbytes, dev.index if dev.index is not None else 0
        if dev.type != "cpu":
            raise TypeError(f"argument '{name}' is on device {dev}; Nereid runs on CUDA devices and the CPU")
        return dt, v.data_ptr(), nbytes, None
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np
        npdt = np.dtype(cai["typestr"])
        dt = _NP_DTYPES.get(str(npdt)) or _NP_DTYPES.get(str(getattr(v, "dtype", "")))
        if dt is None:
            raise TypeError(f"argument '{name}': arrays of dtype {npdt} are not supported")
        shape = cai["shape"]
        strides = cai.get("strides") or _c_strides(shape, npdt.itemsize)
        nbytes = _extent(shape, strides, npdt.itemsize)
        if nbytes is None:
            raise TypeError(f"argument '{name}': arrays with negative strides are not supported")
        dev = getattr(getattr(v, "device", None), "id", 0)
        return dt, cai["data"][0], nbytes, dev
    ai = getattr(v, "__array_interface__", None)
    if ai is not None and hasattr(v, "dtype"):
        dt = _NP_DTYPES.get(str(v.dtype))
        if dt is None:
            raise TypeError(f"argument '{name}': arrays of dtype {v.dtype} are not supported")
        nbytes = _extent(v.shape, v.strides, v.dtype.itemsize)
        if nbytes is None:
            raise TypeError(f"argument '{name}': arrays with negative strides are not supported")
        return dt, ai["data"][0], nbytes, None
    return None


def _c_strides(shape, item):
    st, acc = [], item
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return list(reversed(st))


def _arch_for(device):
    """The PTX target for a CUDA device: NEREID_ARCH if set, else from its compute capability."""
    env = os.environ.get("NEREID_ARCH")
    if env:
        return env
    try:
        import torch
        major, minor = torch.cuda.get_device_capability(device)
    except Exception:  # no torch: ask the driver through a tiny probe compile is overkill; default to sm_80
        return "sm_80"
    if major >= 9:
        return "sm_90"
    return f"sm_{major}{minor}" if (major, minor) in ((8, 0), (8, 6), (8, 9)) else "sm_80"


def _current_stream(device):
    try:
        import torch
        return torch.cuda.current_stream(device).cuda_stream
    except Exception:
        return 0


class _ModuleSource:
    """The text that the C compiler parses for a kernel: its whole module
    when the kernel is defined at top level, else its own dedented source
    placed at its original line."""

    def __init__(self, fn):
        self.filename = inspect.getsourcefile(fn) or "<unknown>"
        lines, first = inspect.getsourcelines(fn)
        toplevel = lines and not lines[0][:1].isspace()
        if toplevel and os.path.exists(self.filename):
            with open(self.filename, encoding="utf-8") as f:
                self.text = f.read()
        else:
            self.text = "\n" * max(first - 1, 0) + textwrap.dedent("".join(lines))


class _Buf(tuple):
    """(address, nbytes) with the device it lives on."""

    def __new__(cls, addr, nbytes, device, name):
        t = super().__new__(cls, (addr, nbytes))
        t.device = device
        t.name = name
        return t


class JITFunction:
    """A kernel (or a helper called by kernels)."""

    def __init__(self, fn, do_not_specialize=None, noinline=False, debug=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self.constexprs = [i for i, p in enumerate(self.params) if _is_constexpr_annotation(p.annotation)]
        dns = do_not_specialize or ()
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in dns}
        self.noinline = noinline
        self.debug = debug
        self._source = None
        self.cache = {}

    @property
    def src(self):
        return inspect.getsource(self.fn)

    def _module_source(self):
        if self._source is None:
            self._source = _ModuleSource(self.fn)
        return self._source

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@jit function '{self.__name__}' cannot be called from host code; "
                           f"launch it with {self.__name__}[grid](...)")

    def __getitem__(self, grid):
        def launcher(*args, **kwargs):
            return self.run(*args, grid=grid, **kwargs)

        return launcher

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # -- specialization --------------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}: {e}") from None
        bound.apply_defaults()
        return bound.arguments

    def _signature_entry(self, i, name, v):
        """(signature text, runtime value or None; for tuples and tensor descriptors a dict of them)."""
        from ..tools import tensor_descriptor as _agg
        if _agg.is_aggregate(v):
            return _agg.signature_entry(lambda n, x: self._signature_entry(i, n, x), name, v)
        if i in self.constexprs:
            return _constexpr_literal(name, v), None
        if v is None or isinstance(v, (_core.constexpr, str, _core.dtype)):
            return _constexpr_literal(name, v), None
        spec = name not in self.do_not_specialize
        if isinstance(v, bool):
            return "i1", int(v)
        if isinstance(v, int):
            if -2**31 <= v < 2**31:
                ty = "i32"
            elif -2**63 <= v < 2**63:
                ty = "i64"
            elif 0 <= v < 2**64:
                ty = "u64"
            else:
                raise TypeError(f"argument '{name}' = {v} does not fit in 64 bits")
            if spec and v == 1:
                ty += ":1"
            elif spec and v % 16 == 0:
                ty += ":16"
            return ty, v
        if isinstance(v, float):
            return "fp32", v
        buf = _buffer_of(name, v)
        if buf is not None:
            dt, addr, nbytes, dev = buf
            ty = "*" + dt
            if spec and addr % 16 == 0:
                ty += ":16"
            return ty, _Buf(addr, nbytes, dev, name)
        # Objects exposing a numpy-like dtype but no buffer (e.g. a Python scalar type).
        raise TypeError(f"argument '{name}' of {self.__name__}: expected an array, a tensor, an int, a float, "
                        f"a bool or None, got {type(v).__name__}")

    def compile(self, signature, num_warps=4, num_stages=3, stop_after=None, arch=None):
        key = (signature, num_warps, num_stages, stop_after, arch)
        k = self.cache.get(key)
        if k is None:
            src = self._module_source()
            try:
                k, _notes = _C.compile(src.text, src.filename, self.__name__, signature, num_warps, num_stages,
                                       stop_after, _VERIFY_EACH, arch)
            except _C.CompileError as e:
                raise CompilationError(*e.args) from None
            self.cache[key] = k
        return k

    def run(self, *args, grid, num_warps=4, num_stages=3, **kwargs):
        for opt in ("num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid"):
            kwargs.pop(opt, None)
        bound = self._bind(args, kwargs)
        entries, values = [], {}
        for i, (name, v) in enumerate(bound.items()):
            text, rt = self._signature_entry(i, name, v)
            entries.append(text)
            if isinstance(rt, dict):
                values.update(rt)
            elif rt is not None:
                values[name] = rt
        signature = ", ".join(entries)
        devices = {b.device for b in values.values() if isinstance(b, _Buf)}
        gpu_devices = {d for d in devices if d is not None}
        interpret = os.environ.get("NEREID_INTERPRET", "") not in ("", "0")
        if gpu_devices and not interpret:
            if len(gpu_devices) > 1:
                raise ValueError(f"{self.__name__}: arguments are on different CUDA devices {sorted(gpu_devices)}")
            if None in devices:
                host = next(b.name for b in values.values() if isinstance(b, _Buf) and b.device is None)
                raise ValueError(f"{self.__name__}: argument '{host}' is in host memory but the other arrays are "
                                 f"on CUDA device {next(iter(gpu_devices))}")
            device = next(iter(gpu_devices))
        elif gpu_devices:
            raise ValueError(f"{self.__name__}: NEREID_INTERPRET=1 runs kernels on host memory; pass CPU arrays")
        else:
            device = None
        arch = _arch_for(device) if device is not None else None
        kernel = self.compile(signature, num_warps, num_stages, arch=arch)
        if callable(grid):
            meta = dict(bound)
            meta.update(num_warps=num_warps, num_stages=num_stages)
            grid = grid(meta)
        if isinstance(grid, int):
            grid = (grid,)
        grid = tuple(int(g.value if isinstance(g, _core.constexpr) else g) for g in grid)
        if not 1 <= len(grid) <= 3:
            raise ValueError(f"grid must have 1 to 3 dimensions, got {len(grid)}")
        for d, g in enumerate(grid):
            if g < 0:
                raise ValueError(f"grid dimension {d} is {g}; it must not be negative")
        rt_args = []
        for kind, name, _dt, _pi in kernel.args:
            rt_args.append(values[name])
        try:
            if device is None:
                kernel.launch_interp(grid, rt_args)
            elif all(g > 0 for g in grid):
                kernel.launch_gpu(grid, rt_args, _current_stream(device), device, _SYNC)
        except _C.LaunchError as e:
            raise LaunchError(*e.args) from None
        return kernel


def jit(fn=None, *, do_not_specialize=None, do_not_specialize_on_alignment=None, debug=None, noinline=False,
        repr=None, launch_metadata=None):  # noqa: A002 - Triton's keyword
    """Decorator: ``@nereid.jit`` or ``@nereid.jit(noinline=True, ...)``."""

    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, noinline=noinline, debug=debug)

    if fn is not None:
        return wrap(fn)
    return wrap
