"""@nereid.jit: kernels compiled from their source text and launched over a grid.

A JITFunction keeps the source of the Python module that defines it.  A
launch ``kernel[grid](*args, **meta)`` is handled in C (nereid._C.Dispatcher)
when its specialization has been seen before on the same GPU: the extension
binds the arguments, computes the specialization key and launches the
compiled kernel on the tensors' current stream.  Everything else comes here,
to ``JITFunction.run``: it binds the arguments to the parameters, derives the
signature (pointer dtypes, scalar types, divisible-by-16 and equal-to-1
integers, constexpr values), compiles once per signature with the C compiler,
runs the kernel (on the GPU for CUDA tensors, else on the reference
interpreter) and registers the key for the fast path.

``kernel.warmup(*args, grid=(1,), **kwargs)`` is answered in C too
(Dispatcher.warmup) when run made a warmup with the same key before: it
returns the CompiledKernel run made then.
"""
import hashlib
import inspect
import math
import os
import sys
import textwrap
import threading

from .. import _C
from ..errors import CompilationError, LaunchError, OutOfResources
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
# (the most common first: the fast path finds a dtype by looking through them in this order)
_TORCH_DTYPES = {
    "torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.int32": "i32",
    "torch.int64": "i64", "torch.bool": "i1", "torch.int8": "i8", "torch.int16": "i16",
    "torch.uint8": "u8", "torch.uint16": "u16", "torch.uint32": "u32", "torch.uint64": "u64",
    "torch.float64": "fp64", "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5",
}
# Launch options of Triton that Nereid accepts and does not need.
_IGNORED_OPTIONS = ("num_ctas", "launch_cooperative_grid", "launch_pdl", "num_buffers_warp_spec",
                    "num_consumer_groups", "reg_dec_producer", "reg_inc_consumer", "maxnreg_ignored", "debug",
                    "sanitize_overflow", "extern_libs", "instrumentation_mode")


class _NoDefault:
    def __repr__(self):
        return "<no default>"


_NO_DEFAULT = _NoDefault()


def _interpret():
    return os.environ.get("NEREID_INTERPRET", "") not in ("", "0")


def _default_fp_fusion():
    """enable_fp_fusion when a launch does not say: NEREID_DEFAULT_FP_FUSION=0 turns it off."""
    return os.environ.get("NEREID_DEFAULT_FP_FUSION", "1") not in ("0", "false", "False")


def _disable_tma():
    """NEREID_DISABLE_TMA=1: sm_90a kernels load host tensor descriptors through pointers
    (cp.async), not TMA (NrOptions.no_tma)."""
    return os.environ.get("NEREID_DISABLE_TMA", "") not in ("", "0")


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
    return repr(float(v))


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


def _constexpr_literal(fn_name, name, v):
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
    raise TypeError(f"{fn_name}: constexpr argument '{name}' must be an int, float, bool, str, None or a dtype, "
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


def _c_strides(shape, item):
    st, acc = [], item
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return list(reversed(st))


def _is_torch_tensor(v):
    t = sys.modules.get("torch")
    return t is not None and isinstance(v, t.Tensor)


def _buffer_of(fn_name, name, v):
    """(signature dtype, address, nbytes, device) of an array-like argument, or None.
    device is None for host memory, else the CUDA device ordinal."""
    if hasattr(v, "data_ptr") and hasattr(v, "dtype") and hasattr(v, "stride"):  # torch.Tensor
        dt = _TORCH_DTYPES.get(str(v.dtype))
        if dt is None:
            raise TypeError(f"{fn_name}: argument '{name}' is a tensor of dtype {v.dtype}, which kernels do not "
                            f"take; expected one of {', '.join(sorted(_TORCH_DTYPES))}")
        _C.register_dtype(v.dtype, dt)
        item = v.element_size()
        nbytes = _extent(v.shape, [st * item for st in v.stride()], item)
        if nbytes is None:
            raise TypeError(f"{fn_name}: argument '{name}' has negative strides; pass a tensor with "
                            f"non-negative strides (e.g. .contiguous())")
        dev = v.device
        if dev.type == "cuda":
            return dt, v.data_ptr(), nbytes, dev.index if dev.index is not None else 0
        if dev.type != "cpu":
            raise TypeError(f"{fn_name}: argument '{name}' is on device {dev}; kernels run on CUDA devices "
                            f"(and on the CPU interpreter)")
        return dt, v.data_ptr(), nbytes, None
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np
        npdt = np.dtype(cai["typestr"])
        dt = _NP_DTYPES.get(str(npdt)) or _NP_DTYPES.get(str(getattr(v, "dtype", "")))
        if dt is None:
            raise TypeError(f"{fn_name}: argument '{name}' is an array of dtype {npdt}, which kernels do not take")
        if hasattr(v, "dtype"):
            _C.register_dtype(v.dtype, dt)
        shape = cai["shape"]
        strides = cai.get("strides") or _c_strides(shape, npdt.itemsize)
        nbytes = _extent(shape, strides, npdt.itemsize)
        if nbytes is None:
            raise TypeError(f"{fn_name}: argument '{name}' has negative strides")
        dev = getattr(getattr(v, "device", None), "id", 0)
        return dt, cai["data"][0], nbytes, dev
    ai = getattr(v, "__array_interface__", None)
    if ai is not None and hasattr(v, "dtype"):
        dt = _NP_DTYPES.get(str(v.dtype))
        if dt is None:
            raise TypeError(f"{fn_name}: argument '{name}' is an array of dtype {v.dtype}, which kernels do not "
                            f"take; expected one of {', '.join(sorted(_NP_DTYPES))}")
        _C.register_dtype(v.dtype, dt)
        nbytes = _extent(v.shape, v.strides, v.dtype.itemsize)
        if nbytes is None:
            raise TypeError(f"{fn_name}: argument '{name}' has negative strides; pass a copy "
                            f"(numpy.ascontiguousarray)")
        return dt, ai["data"][0], nbytes, None
    return None


def _arch_for(device):
    """The PTX target for a CUDA device: NEREID_ARCH if set, else from its compute capability
    (sm_90a on Hopper, for wgmma; sm_90 with NEREID_DISABLE_HOPPER=1)."""
    env = os.environ.get("NEREID_ARCH")
    if env:
        return env
    from .driver import capability
    try:
        major, minor = capability(device)
    except Exception:  # no driver: the oldest target Nereid supports
        return "sm_80"
    if major >= 9:
        return "sm_90" if os.environ.get("NEREID_DISABLE_HOPPER", "") not in ("", "0") or major > 9 else "sm_90a"
    return f"sm_{major}{minor}" if (major, minor) in ((8, 0), (8, 6), (8, 9)) else "sm_80"


def _current_stream(device):
    """torch's current CUDA stream on `device` (the raw handle), or 0 (the default stream) without torch."""
    t = sys.modules.get("torch")
    if t is None:
        return 0
    raw = getattr(getattr(t, "_C", None), "_cuda_getCurrentRawStream", None)
    try:
        return raw(device) if raw is not None else t.cuda.current_stream(device).cuda_stream
    except Exception:
        return 0


# --- the torch hookup of the fast path -------------------------------------------------------------------------

_torch_lock = threading.Lock()
_torch_done = []


def _hook_torch():
    """Tell the extension about torch once torch is imported: its tensor type,
    its dtypes and the cheapest way to read the current stream."""
    if _torch_done:
        return
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "Tensor"):
        return
    with _torch_lock:
        if _torch_done:
            return
        get_stream = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
        if get_stream is None:
            def get_stream(device, _torch=torch):
                return _torch.cuda.current_stream(device).cuda_stream
        # torch.Tensor's DLPack exchange table (torch 2.10 and later), when it has one,
        # reads tensors and the current stream in C; otherwise the methods and get_stream
        _C.set_api(tensor_type=torch.Tensor, get_stream=get_stream, exchange=2)
        for name, sig in _TORCH_DTYPES.items():
            dt = getattr(torch, name.split(".", 1)[1], None)
            if dt is not None:
                _C.register_dtype(dt, sig)
        _torch_done.append(True)


_numpy_done = []


def _hook_numpy():
    """Tell the extension numpy's array type once numpy is imported: it reads those
    arrays through the buffer protocol rather than their __array_interface__."""
    if _numpy_done:
        return
    np = sys.modules.get("numpy")
    if np is not None and isinstance(getattr(np, "ndarray", None), type):
        _C.set_api(array_type=np.ndarray)
        _numpy_done.append(True)


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
        self.hash = hashlib.sha256((self.filename + "\0" + self.text).encode()).hexdigest()


class _Buf(tuple):
    """(address, nbytes) with the device it lives on."""

    def __new__(cls, addr, nbytes, device, name):
        t = super().__new__(cls, (addr, nbytes))
        t.device = device
        t.name = name
        return t


class _Metadata:
    """What Triton's CompiledKernel.metadata holds, for the fields programs read."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "Metadata(" + ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items())) + ")"

    def _asdict(self):
        return dict(self.__dict__)


# Without a driver, n_regs and n_spills are these (documented in docs/python_api.md).
ASSUMED_REGS_PER_THREAD = 32
_NO_DRIVER_INFO = {"n_regs": ASSUMED_REGS_PER_THREAD, "n_spills": 0}


class CompiledKernel:
    """A kernel compiled for one specialization: what ``kernel.warmup(...)``
    and a launch return.

    ``n_regs`` and ``n_spills`` come from the driver once the kernel is
    loaded on its GPU (``_init_handles``); without a driver (interpreter
    kernels, machines without a GPU) they are ASSUMED_REGS_PER_THREAD and 0.
    ``metadata.shared`` is the dynamic shared memory a launch requests (the
    compiler's figure; for interpreter kernels, that of the same
    specialization compiled for the GPU target).  What the driver and the
    compiler say is read once: warmups with the same key return the same
    object, and programs read these at every call."""

    def __init__(self, fn, kernel, signature, options, device, arch):
        self.fn = fn
        self.kernel = kernel
        self.signature = signature
        self.device = device
        self.arch = arch
        self.name = kernel.name
        self.num_warps = options["num_warps"]
        self.num_stages = options["num_stages"]
        self.maxnreg = options.get("maxnreg")
        self.options = dict(options)
        self._info = None
        self._shared = None
        self._metadata = None
        self.asm = {"ir": kernel.ir}
        if arch:
            self.asm["ptx"] = kernel.ptx

    # -- what the driver says ----------------------------------------------------------------
    def _init_handles(self):
        """Load the kernel on its GPU (for interpreter kernels: nothing to load)."""
        if self._info is None:
            if self.arch and self.device is not None:
                try:
                    self._info = self.kernel.gpu_info(self.device)
                except (_C.LaunchError, ValueError) as e:
                    raise LaunchError(*e.args) if isinstance(e, _C.LaunchError) else e
            else:
                self._info = _NO_DRIVER_INFO
        return self

    @property
    def n_regs(self):
        return (self._info or self._init_handles()._info)["n_regs"]

    @property
    def n_spills(self):
        return (self._info or self._init_handles()._info)["n_spills"]

    def _shared_bytes(self):
        if self._shared is None:
            if self.arch:
                self._shared = self.kernel.shared
            else:
                try:
                    gk = self.fn.compile(self.signature, self.num_warps, self.num_stages,
                                         arch=os.environ.get("NEREID_ARCH") or "sm_80")
                    self._shared = gk.shared
                except CompilationError:
                    self._shared = 0
        return self._shared

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = _Metadata(name=self.name, num_warps=self.num_warps, num_stages=self.num_stages,
                                       num_ctas=1, shared=self._shared_bytes(), maxnreg=self.maxnreg,
                                       target=self.arch or "interpreter", signature=self.signature)
        return self._metadata

    @property
    def packed_metadata(self):
        return self.metadata

    def __getitem__(self, grid):
        """compiled[grid](*args): launch with every argument of the kernel (constexprs included), with
        this kernel's options unless the call gives them (a keyword, or a parameter named like one);
        a launch of the kernel itself, through the C fast path."""
        launcher = self.fn._launcher(grid, self.num_warps, self.num_stages, self.maxnreg)
        if "enable_fp_fusion" not in self.options:
            return launcher
        fusion = self.options["enable_fp_fusion"]

        def launch(*args, **kwargs):  # (a launch that gives enable_fp_fusion goes to run)
            kwargs.setdefault("enable_fp_fusion", fusion)
            return launcher(*args, **kwargs)

        return launch

    def __repr__(self):
        return f"CompiledKernel({self.name}, [{self.signature}], {self.arch or 'interpreter'})"


class JITFunction(_C.Dispatcher):
    """A kernel (or a helper called by kernels)."""

    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None, noinline=False,
                 debug=None, repr=None, launch_metadata=None):  # noqa: A002 - Triton's keyword
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__wrapped__ = fn
        self.__globals__ = getattr(fn, "__globals__", {})
        self.signature = inspect.signature(fn)
        self.params = list(self.signature.parameters.values())
        self.arg_names = [p.name for p in self.params]
        self._param_index = {n: i for i, n in enumerate(self.arg_names)}
        self.constexprs = [i for i, p in enumerate(self.params) if _is_constexpr_annotation(p.annotation)]
        for p in self.params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"@jit function '{fn.__name__}': parameter '{p.name}' must be a plain positional "
                                f"parameter (no *args, **kwargs or keyword-only parameters)")
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d for d in (do_not_specialize or ())}
        self.do_not_specialize_on_alignment = {self.arg_names[d] if isinstance(d, int) else d
                                               for d in (do_not_specialize_on_alignment or ())}
        self.noinline = noinline
        self.debug = debug
        self._repr = repr
        self.launch_metadata = launch_metadata
        self._source = None
        self.cache = {}
        self._cache_lock = threading.Lock()
        self._resources_checked = set()
        flags = bytearray()
        for i, p in enumerate(self.params):
            f = _C.PF_CONSTEXPR if i in self.constexprs else 0
            if p.name in self.do_not_specialize:
                f |= _C.PF_NOSPEC
            if p.name in self.do_not_specialize_on_alignment:
                f |= _C.PF_NOSPEC_ALIGN
            flags.append(f)
        defaults = tuple(_NO_DEFAULT if p.default is inspect.Parameter.empty else p.default for p in self.params)
        self._setup(tuple(self.arg_names), bytes(flags), defaults)

    @property
    def src(self):
        return inspect.getsource(self.fn)

    def _module_source(self):
        if self._source is None:
            self._source = _ModuleSource(self.fn)
        return self._source

    def cache_key(self):
        """A hash of everything the compiled code depends on besides the
        specialization: the compiler's version and the text of the module
        (which holds the kernel, the @jit helpers it calls and its constexpr
        globals)."""
        src = self._module_source()
        return hashlib.sha256(f"{_C.VERSION}\0{self.__name__}\0{src.hash}".encode()).hexdigest()

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"@jit function '{self.__name__}' cannot be called from host code; "
                           f"launch it with {self.__name__}[grid](...)")

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # -- specialization --------------------------------------------------------------
    def _bind(self, args, kwargs):
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            params = ", ".join(self.arg_names)
            raise TypeError(f"{self.__name__}({params}): {e}") from None
        bound.apply_defaults()
        return bound.arguments

    def _signature_entry(self, i, name, v):
        """(signature text, runtime value or None; for tuples and tensor descriptors a dict of them)."""
        from ..tools import tensor_descriptor as _agg
        if _agg.is_aggregate(v):
            return _agg.signature_entry(lambda n, x: self._signature_entry(i, n, x), name, v)
        if i in self.constexprs:
            return _constexpr_literal(self.__name__, name, v), None
        if v is None or isinstance(v, (_core.constexpr, str, _core.dtype)):
            return _constexpr_literal(self.__name__, name, v), None
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
                raise TypeError(f"{self.__name__}: argument '{name}' = {v} does not fit in 64 bits")
            if spec and v == 1:
                ty += ":1"
            elif spec and v % 16 == 0:
                ty += ":16"
            return ty, v
        if isinstance(v, float):
            return "fp32", v
        buf = _buffer_of(self.__name__, name, v)
        if buf is not None:
            dt, addr, nbytes, dev = buf
            ty = "*" + dt
            if spec and name not in self.do_not_specialize_on_alignment and addr % 16 == 0:
                ty += ":16"
            return ty, _Buf(addr, nbytes, dev, name)
        raise TypeError(f"{self.__name__}: argument '{name}' must be a tensor or array, an int, a float, a bool "
                        f"or None, got {type(v).__name__}")

    def compile(self, signature, num_warps=4, num_stages=3, stop_after=None, arch=None, maxnreg=None,
                enable_fp_fusion=True, no_tma=False):
        """The kernel compiled for `signature` (cached); arch None: for the interpreter.
        enable_fp_fusion=False: GPU float multiplies and adds round one by one (no fma contraction).
        no_tma=True: sm_90a loads host tensor descriptors through pointers, without TMA."""
        key = (signature, num_warps, num_stages, stop_after, arch)
        if maxnreg:
            key += (maxnreg,)
        if not enable_fp_fusion:
            key += ("no_fp_fusion",)
        if no_tma:
            key += ("no_tma",)
        k = self.cache.get(key)
        if k is None:
            src = self._module_source()
            extra = {"maxnreg": maxnreg} if maxnreg else {}
            if not enable_fp_fusion:
                extra["fp_fusion"] = False
            if no_tma:
                extra["no_tma"] = True
            try:
                k, _notes = _C.compile(src.text, src.filename, self.__name__, signature, num_warps, num_stages,
                                       stop_after, _VERIFY_EACH, arch, **extra)
            except _C.CompileError as e:
                raise CompilationError(*e.args) from None
            with self._cache_lock:
                k = self.cache.setdefault(key, k)
            if stop_after is None and os.environ.get("NEREID_DUMP_DIR"):
                from .cache import dump
                dump(self, k, signature, num_warps, num_stages, arch)
        return k

    def _specialize(self, bound, opts):
        """(signature, runtime values by name, C key, its objects, fast) for bound arguments."""
        values = tuple(bound.values())
        key = objs = sigs = None
        fast = False
        if len(values) <= _C.MAX_FAST_PARAMS:
            key, objs, sigs, _dev, fast = _C.Dispatcher._specialize(self, values, *opts)
        entries, rt_values = [], {}
        for i, (name, v) in enumerate(bound.items()):
            text, rt = self._signature_entry(i, name, v)
            if sigs is not None and sigs[i] is not None:
                text = sigs[i]
            entries.append(text)
            if isinstance(rt, dict):
                rt_values.update(rt)
            elif rt is not None:
                rt_values[name] = rt
        if key is None and len(values) <= _C.MAX_FAST_PARAMS:
            # _signature_entry registered the dtypes it met: the key may be known now.
            key, objs, sigs2, _dev, fast = _C.Dispatcher._specialize(self, values, *opts)
            if sigs2 is not None:
                for i, s in enumerate(sigs2):
                    if s is not None:
                        entries[i] = s
        return ", ".join(entries), rt_values, key, objs, fast

    def _device_of(self, values):
        """The CUDA device of the arrays, or None for host memory; raises on a mix."""
        bufs = [b for b in values.values() if isinstance(b, _Buf)]
        gpu = sorted({b.device for b in bufs if b.device is not None})
        if len(gpu) > 1:
            names = {d: next(b.name for b in bufs if b.device == d) for d in gpu}
            raise ValueError(f"{self.__name__}: arguments are on different CUDA devices: "
                             + ", ".join(f"'{n}' on cuda:{d}" for d, n in names.items())
                             + "; expected every tensor on one device")
        if gpu:
            host = [b.name for b in bufs if b.device is None]
            if host:
                raise ValueError(f"{self.__name__}: argument '{host[0]}' is in host memory but the other tensors are "
                                 f"on CUDA device {gpu[0]}; expected a CUDA tensor (move it with .cuda())")
            return gpu[0]
        return None

    def _grid(self, grid, bound, options):
        if callable(grid):
            meta = dict(bound)
            meta.update(options)
            grid = grid(meta)
        if isinstance(grid, (int, _core.constexpr)) and not isinstance(grid, bool):
            grid = (grid,)
        try:
            grid = tuple(grid)
        except TypeError:
            raise TypeError(f"{self.__name__}: the grid must be a tuple of 1 to 3 positive ints or a callable "
                            f"returning one, got {type(grid).__name__}") from None
        if not 1 <= len(grid) <= 3:
            raise ValueError(f"{self.__name__}: the grid must have 1 to 3 dimensions, got {len(grid)}")
        out = []
        for d, g in enumerate(grid):
            try:
                g = int(g.value if isinstance(g, _core.constexpr) else g.__index__())
            except (AttributeError, TypeError):
                raise TypeError(f"{self.__name__}: grid dimension {d} must be an int, "
                                f"got {type(g).__name__}") from None
            if g <= 0:
                raise ValueError(f"{self.__name__}: grid dimension {d} is {g}; expected a positive number of "
                                 f"programs")
            if g > 0x7fffffff:
                raise ValueError(f"{self.__name__}: grid dimension {d} is {g}; expected at most 2^31-1")
            out.append(g)
        return tuple(out)

    def _check_resources(self, kernel, device):
        """Shared memory and registers against the device's limits, before the first launch there."""
        if (id(kernel), device) in self._resources_checked:
            return
        from .driver import properties
        props = properties(device)
        shared = kernel.shared
        if props is not None and shared > props["max_shared_mem"]:
            raise OutOfResources(shared, props["max_shared_mem"], "shared memory", kernel=self.__name__)
        try:
            info = kernel.gpu_info(device)
        except _C.LaunchError as e:
            raise LaunchError(*e.args) from None
        threads = info["threads"]
        if info["max_threads"] < threads:
            need = info["n_regs"] * threads
            limit = props["max_num_regs"] if props else need
            raise OutOfResources(need, limit, "registers", kernel=self.__name__)
        if info["static_shared"] + shared > info["max_shared_optin"]:
            raise OutOfResources(info["static_shared"] + shared, info["max_shared_optin"], "shared memory",
                                 kernel=self.__name__)
        self._resources_checked.add((id(kernel), device))

    def run(self, *args, grid, num_warps=None, num_stages=None, maxnreg=None, warmup=False, **kwargs):
        for opt in _IGNORED_OPTIONS:
            kwargs.pop(opt, None)
        fusion_given = "enable_fp_fusion" in kwargs and "enable_fp_fusion" not in self._param_index
        fp_fusion = kwargs.pop("enable_fp_fusion") if fusion_given else _default_fp_fusion()
        if not isinstance(fp_fusion, bool):
            raise TypeError(f"{self.__name__}: enable_fp_fusion must be a bool, got {type(fp_fusion).__name__}")
        # A parameter named like a launch option (num_stages: tl.constexpr) is
        # that option too, unless the option was given on its own.
        given = {"num_warps": num_warps, "num_stages": num_stages, "maxnreg": maxnreg}
        shared = [o for o in given if o in self._param_index]
        for o in shared:
            if given[o] is not None and self._param_index[o] >= len(args) and o not in kwargs:
                kwargs[o] = given[o]
        if shared:
            params = dict(zip(self.arg_names, args))
            params.update(kwargs)
            for o in shared:
                if given[o] is None and isinstance(params.get(o), int):
                    given[o] = params[o]
            num_warps, num_stages, maxnreg = given["num_warps"], given["num_stages"], given["maxnreg"]
        num_warps = 4 if num_warps is None else num_warps
        num_stages = 3 if num_stages is None else num_stages
        for oname, ov in (("num_warps", num_warps), ("num_stages", num_stages)):
            if isinstance(ov, bool) or not isinstance(ov, int):
                raise TypeError(f"{self.__name__}: {oname} must be an int, got {type(ov).__name__}")
        if num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"{self.__name__}: num_warps must be 1, 2, 4, 8 or 16, got {num_warps}")
        if maxnreg is not None and (isinstance(maxnreg, bool) or not isinstance(maxnreg, int) or maxnreg < 0):
            raise ValueError(f"{self.__name__}: maxnreg must be a positive int, got {maxnreg!r}")
        if num_stages < 0:
            raise ValueError(f"{self.__name__}: num_stages must not be negative, got {num_stages}")
        _hook_torch()
        _hook_numpy()
        bound = self._bind(args, kwargs)
        opts = (num_warps, num_stages, maxnreg or 0)
        signature, values, key, objs, fast = self._specialize(bound, opts)
        interpret = _interpret()
        device = self._device_of(values)
        copies = []
        if interpret and device is not None:
            if not warmup:  # (a warmup reads no memory)
                values, copies = _host_copies(bound, values)
            device = None
        arch = _arch_for(device) if device is not None else None
        # (the interpreter has no registers to limit and rounds every step)
        kernel = self.compile(signature, num_warps, num_stages, arch=arch, maxnreg=maxnreg if arch else None,
                              enable_fp_fusion=fp_fusion or not arch, no_tma=bool(arch) and _disable_tma())
        options = {"num_warps": num_warps, "num_stages": num_stages}
        if maxnreg:  # (0 is no limit, as None: one key, one CompiledKernel)
            options["maxnreg"] = maxnreg
        if not fp_fusion:
            options["enable_fp_fusion"] = False
        compiled = CompiledKernel(self, kernel, signature, options, device, arch)
        if warmup:
            # (the next warmup of this key returns `compiled` from C; the C key has no enable_fp_fusion)
            if key is not None and not fusion_given:
                _C.Dispatcher._register_warmup(self, tuple(bound.values()), *opts, compiled)
            return compiled
        grid = self._grid(grid, bound, options)
        rt_args = [values[name] for _kind, name, _dt, _pi in kernel.args]
        try:
            if device is None:
                kernel.launch_interp(grid, rt_args)
                for tensor, host in copies:
                    tensor.copy_(host)
            else:
                self._check_resources(kernel, device)
                kernel.launch_gpu(grid, rt_args, _current_stream(device), device, _SYNC)
                # (the fast path knows nothing of enable_fp_fusion: it serves the default only)
                if fast and key is not None and not _SYNC and not interpret and fp_fusion and not fusion_given:
                    self._register(key, objs, kernel, device, False, compiled)
        except _C.LaunchError as e:
            raise LaunchError(*e.args) from None
        return compiled

    # warmup(*args, grid=(1,), **kwargs): compile for these arguments without launching; returns the
    # CompiledKernel.  Dispatcher.warmup, in C: the CompiledKernel of an earlier warmup with the same key,
    # else self.run(*args, grid=grid, warmup=True, **kwargs).


def _host_copies(bound, values):
    """NEREID_INTERPRET with CUDA tensors: host copies to run on, copied back after the launch."""
    torch = sys.modules.get("torch")
    out, copies, seen = dict(values), [], {}
    for name, b in values.items():
        if not isinstance(b, _Buf) or b.device is None:
            continue
        v = _resolve(bound, name)  # (a leaf of a tuple or descriptor: "t.0", "desc.base")
        if id(v) in seen:  # the same tensor twice: one copy
            out[name] = seen[id(v)]
            continue
        if torch is None or not isinstance(v, torch.Tensor):
            raise ValueError(f"argument '{name}': NEREID_INTERPRET=1 runs kernels on host memory; pass a CPU array "
                             f"or a torch tensor")
        host = v.detach().to("cpu")
        copies.append((v, host))
        item = host.element_size()
        nbytes = _extent(host.shape, [st * item for st in host.stride()], item)
        out[name] = seen[id(v)] = _Buf(host.data_ptr(), nbytes, None, name)
    return out, copies


def _resolve(bound, name):
    """The object of runtime argument `name` ("x", "t.0.1", "desc.base") in the bound arguments."""
    parts = name.split(".")
    v = bound[parts[0]]
    for p in parts[1:]:
        v = v[int(p)] if isinstance(v, (tuple, list)) else getattr(v, p)
    return v


def jit(fn=None, *, do_not_specialize=None, do_not_specialize_on_alignment=None, debug=None, noinline=False,
        repr=None, launch_metadata=None):  # noqa: A002 - Triton's keyword
    """Decorator: ``@nereid.jit`` or ``@nereid.jit(noinline=True, ...)``."""

    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize,
                           do_not_specialize_on_alignment=do_not_specialize_on_alignment, noinline=noinline,
                           debug=debug, repr=repr, launch_metadata=launch_metadata)

    if fn is not None:
        return wrap(fn)
    return wrap


_C.set_api(constexpr_type=_core.constexpr, literal_type=_core.dtype, plain_run=JITFunction.__dict__["run"],
           no_default=_NO_DEFAULT)
