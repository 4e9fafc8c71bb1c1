"""Simulator mode of the end-to-end suite (NEREID_TEST_DEVICE=sim, `make test-sim`).

Every launch a test makes with numpy arrays runs on the reference
interpreter over copies of the arrays, then its kernel is compiled for
sm_90 and for sm_80 with the same specialization, and each PTX runs on the
CPU PTX simulator (tools/ptxsim) over its own copies.  Each simulated
array is compared with the interpreter's (integers exactly, floats by
relative error for their dtype, NaNs at the same places); then the sm_90
results are copied into the test's arrays, so the test's own checks judge
the simulated PTX too.  A launch that fails on the interpreter is not
simulated.  Kernels whose sm_90a PTX uses Hopper's own instructions (wgmma,
mbarriers, TMA: a dot on 4 warps or more) run a third time from that PTX;
for the others it is the sm_90 PTX again and is not simulated twice.
NEREID_SIM_ARCHS=sm_90 (a comma-separated list) narrows the targets.
A kernel that loads host tensor descriptors by TMA gets, after its runtime
arguments, the 128-byte tensor maps CUDA's launch would encode, written by
the simulator's encoder (ptxsim.encode_tensor_map) from the descriptors'
values; NEREID_DISABLE_TMA=1 compiles sm_90a without TMA, as a launch does.
"""
import copy
import importlib
import inspect
import os
import sys

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(_ROOT, "tools"))
import ptxsim  # noqa: E402

_jit = importlib.import_module("nereid.runtime.jit")

ARCHS = tuple(a for a in os.environ.get("NEREID_SIM_ARCHS", "sm_90,sm_80,sm_90a").split(",") if a)
# what only sm_90a PTX has; without it, the sm_90a PTX is the sm_90 PTX
_HOPPER_ONLY = ("wgmma.", "mbarrier.", "cp.async.bulk", "setmaxnreg.", "elect.sync")
_TOL = {np.float16: 2e-3, np.float32: 2e-5, np.float64: 1e-12}
_RUN_OPTS = ("num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid")
_state = {"compiled": None}

# Compiler bugs the simulator finds, until they are fixed: (kernel name, text of the
# simulator's error) -> why.  A launch that fails this way is an expected failure
# (pytest.xfail) instead of an error, so the rest of the suite still runs.
KNOWN_BUGS = []


def _known(name, text):
    for kname, needle, why in KNOWN_BUGS:
        if kname == name and needle in text:
            return why
    return None


def _tol(dtype):
    for k, v in _TOL.items():
        if dtype == k:
            return v
    return 1e-2  # bf16 / fp8 via ml_dtypes


_CHUNK = 1 << 24  # elements: huge arrays are compared and copied back chunk by chunk


def compare(name, got, ref):
    """None, or why got (simulated) differs from ref (interpreter)."""
    if got.size > 4 * _CHUNK and got.flags.c_contiguous and ref.flags.c_contiguous:
        g, r = got.reshape(-1), ref.reshape(-1)
        for i in range(0, g.size, _CHUNK):
            a, b = g[i:i + _CHUNK], r[i:i + _CHUNK]
            if a.view(np.uint8).tobytes() != b.view(np.uint8).tobytes():
                msg = _compare(name, a, b)
                if msg:
                    return msg + f" (in the chunk at element {i})"
        return None
    return _compare(name, got, ref)


def _assign(v, new):
    """v[...] = new, skipping the equal chunks of huge arrays (their untouched pages stay unallocated)."""
    if v.size > 4 * _CHUNK and v.flags.c_contiguous and new.flags.c_contiguous:
        a, b = v.reshape(-1), new.reshape(-1)
        for i in range(0, a.size, _CHUNK):
            if a[i:i + _CHUNK].view(np.uint8).tobytes() != b[i:i + _CHUNK].view(np.uint8).tobytes():
                a[i:i + _CHUNK] = b[i:i + _CHUNK]
        return
    v[...] = new


def _compare(name, got, ref):
    if got.dtype.kind in "biu":
        bad = np.count_nonzero(got != ref)
        if bad:
            i = tuple(int(x) for x in np.argwhere(got != ref)[0])
            return f"{name}: {bad} of {got.size} elements differ from the interpreter (first at {i}: " \
                   f"{got[i]!r} vs {ref[i]!r})"
        return None
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(r)):
        i = tuple(int(x) for x in np.argwhere(np.isnan(g) != np.isnan(r))[0])
        return f"{name}: NaNs differ from the interpreter (first at {i}: {g[i]!r} vs {r[i]!r})"
    m = ~np.isnan(r)
    if not np.array_equal(g[m & np.isinf(r)], r[m & np.isinf(r)]):
        return f"{name}: infinities differ from the interpreter"
    m &= ~np.isinf(r)
    den = np.linalg.norm(r[m])
    err = np.linalg.norm(g[m] - r[m]) / (den if den > 0 else 1.0)
    if err > max(_tol(got.dtype), _state.get("tol", 0.0)):
        i = tuple(int(x) for x in np.argwhere(np.abs(g - r) == np.nanmax(np.abs(g - r)[m]))[0]) if m.any() else ()
        return f"{name}: relative error {err:.2e} against the interpreter (largest at {i}: {g[i]!r} vs {r[i]!r})"
    return None


def _clone(a):
    """A copy of array a with the same strides and the same address modulo 64."""
    ai = a.__array_interface__
    addr = ai["data"][0]
    nbytes = _extent(a)
    raw = np.zeros(nbytes + 128, dtype=np.uint8)  # (zeroed lazily: huge sparse arrays stay small)
    base = raw.__array_interface__["data"][0]
    off = ((addr % 64) - base) % 64
    buf = raw[off:off + nbytes]
    ptxsim.memory.copy_sparse(buf, ptxsim.memory.host_bytes(addr, nbytes))
    return np.ndarray(a.shape, dtype=a.dtype, buffer=buf, strides=a.strides)


def _extent(a):
    if a.size == 0:
        return 0
    hi = a.itemsize
    for n, st in zip(a.shape, a.strides):
        hi += (n - 1) * st
    return hi


def _arrays_in(v, path, out):
    """Appends (path, array) for each numpy array of argument v, also inside tuples, lists and
    tensor descriptors (their .base), named as the kernel's flattened parameters are
    ("args.0.1", "desc.base")."""
    if isinstance(v, np.ndarray):
        out.append((path, v))
    elif isinstance(v, (tuple, list)):
        for i, e in enumerate(v):
            _arrays_in(e, f"{path}.{i}", out)
    elif type(v).__name__ == "TensorDescriptor":
        _arrays_in(v.base, f"{path}.base", out)
    return out


def _with_clones(v, clones):
    """Argument v with each of its arrays replaced by a clone (clones: id of an array -> its clone)."""
    if isinstance(v, np.ndarray):
        if id(v) not in clones:
            clones[id(v)] = _clone(v)
        return clones[id(v)]
    if isinstance(v, tuple):
        return tuple(_with_clones(e, clones) for e in v)
    if isinstance(v, list):
        return [_with_clones(e, clones) for e in v]
    if type(v).__name__ == "TensorDescriptor":
        c = copy.copy(v)
        c.base = _with_clones(v.base, clones)
        return c
    return v


def simulate(fn, arch, signature, num_warps, num_stages, bound, grid, originals):
    """Runs fn's kernel for arch on the simulator over copies of originals; returns
    {name: simulated array}, or None for sm_90a PTX without Hopper's own instructions
    (the sm_90 PTX, simulated already where both targets run)."""
    no_tma = arch == "sm_90a" and _jit._disable_tma()
    k = fn.compile(signature, num_warps=num_warps, num_stages=num_stages, arch=arch, no_tma=no_tma)
    if arch == "sm_90a" and "sm_90" in ARCHS and not any(x in k.ptx for x in _HOPPER_ONLY):
        return None
    return run_compiled(k, bound, grid, originals)


def run_compiled(k, bound, grid, originals):
    """Runs compiled kernel k (its args, tensor_maps, ptx, name and shared) on the simulator over
    copies of the arrays of the bound arguments; returns {name: simulated array}."""
    mem = ptxsim.GlobalMemory()
    allocs, by_id = {}, {}
    params, values = [], {}
    for kind, name, _dt, _pi in sorted(k.args, key=lambda a: a[3]):
        v = _jit._resolve(bound, name)  # flattened parameter name ("args.0.1", "desc.shape.0")
        if kind == "buffer":
            if id(v) not in by_id:  # the same array passed twice is one allocation
                by_id[id(v)] = mem.from_array(v, name)
            allocs[name] = by_id[id(v)]
            params.append(allocs[name])
        elif kind == "float":
            params.append(float(v))
        else:
            params.append(int(v))
        values[name] = params[-1]
    params += [tensor_map(k, m, values) for m in k.tensor_maps]
    ptxsim.launch(k.ptx, k.name, grid, params=params, memory=mem, shared_bytes=k.shared)
    return {name: a.ndarray(originals[name].dtype, originals[name].shape, originals[name].strides)
            for name, a in allocs.items()}


# CUtensorMapDataType of an element dtype (signature name) as the launch encodes it (src/tensor_map.c):
# fp8 and i1 as bytes
_TMAP_DTYPES = {"i1": "UINT8", "i8": "UINT8", "u8": "UINT8", "fp8e4nv": "UINT8", "fp8e5": "UINT8", "i16": "UINT16",
                "u16": "UINT16", "fp16": "FLOAT16", "bf16": "BFLOAT16", "i32": "INT32", "u32": "UINT32",
                "fp32": "FLOAT32", "i64": "INT64", "u64": "UINT64", "fp64": "FLOAT64"}
_TMAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> CUtensorMapSwizzle


def tensor_map(k, info, values):
    """The 128 bytes of tensor map `info` (an entry of k.tensor_maps) for this launch, as CUDA's
    launch encodes it with cuTensorMapEncodeTiled, in the simulator's layout.  values: runtime
    argument name -> the value the simulator passes (an Allocation for a buffer).  The descriptor's
    base is runtime argument info["base_arg"], its sizes and strides (elements, outermost first)
    the next 2 * rank; CUDA's dimensions run innermost first: sizes and box reversed, and the
    byte strides of the outer dimensions."""
    rank, es, b = info["rank"], info["elem_bytes"], info["base_arg"]
    args = k.args[b:b + 1 + 2 * rank]
    kinds = [a[0] for a in args]
    if kinds != ["buffer"] + ["int"] * (2 * rank):
        raise ValueError(f"kernel '{k.name}': tensor map of argument {b} ({info}) does not name a descriptor's "
                         f"base, {rank} sizes and {rank} strides (arguments {[a[:2] for a in args]})")
    base = values[args[0][1]]
    sizes = [values[a[1]] for a in args[1:1 + rank]]
    strides = [values[a[1]] for a in args[1 + rank:]]
    if strides[-1] != 1:
        raise ValueError(f"kernel '{k.name}': the descriptor at argument {b} has strides {strides}: TMA needs "
                         f"the last dimension contiguous")
    code = ptxsim.tensormap.TENSOR_MAP_DATA_TYPE.get(_TMAP_DTYPES.get(info["dtype"], ""))
    if code is None or ptxsim.tensormap.DATA_TYPES[code][1] != es or info["swizzle"] not in _TMAP_SWIZZLE:
        raise ValueError(f"kernel '{k.name}': tensor map {info}: no CUDA data type or swizzle for it")
    return ptxsim.encode_tensor_map(code, rank, base, sizes[::-1], [s * es for s in reversed(strides[:-1])],
                                    info["box"][::-1], [1] * rank, swizzle=_TMAP_SWIZZLE[info["swizzle"]],
                                    l2_promotion=2, oob_fill=1 if info["nan_fill"] else 0)


def _recording(orig_compile):
    def compile(self, signature, num_warps=4, num_stages=3, stop_after=None, arch=None, **kw):
        k = orig_compile(self, signature, num_warps, num_stages, stop_after, arch, **kw)
        if arch is None and stop_after is None:
            _state["compiled"] = (signature, num_warps, num_stages)
        return k

    return compile


def checked_run(orig_run, fn, args, kwargs, grid):
    """fn[grid](*args, **kwargs) on the interpreter, then on the simulator for each of
    ARCHS, compared; the test's arrays get the first target's results."""
    found = [a for k, v in list(enumerate(args)) + list(kwargs.items()) for _, a in _arrays_in(v, str(k), [])]
    negative = any(st < 0 for a in found for st in a.strides)
    if not found or kwargs.get("warmup") or negative:
        # (nothing to compare, or a launch whose own error is what the test checks)
        return orig_run(fn, *args, grid=grid, **kwargs)
    # 1. the interpreter, on copies
    clones = {}
    iargs = [_with_clones(a, clones) for a in args]
    ikw = {k: _with_clones(v, clones) for k, v in kwargs.items()}
    _state["compiled"] = None
    result = orig_run(fn, *iargs, grid=grid, **ikw)
    if _state["compiled"] is None:
        return result
    signature, num_warps, num_stages = _state["compiled"]
    # 2. the launch as the runtime makes it: bound arguments and the grid
    kw = {k: v for k, v in kwargs.items() if k in fn.arg_names}
    bound = inspect.signature(fn.fn).bind(*args, **kw)
    bound.apply_defaults()
    bound = dict(bound.arguments)
    g = grid
    if callable(g):
        meta = dict(bound)
        meta.update(num_warps=num_warps, num_stages=num_stages)
        g = g(meta)
    if isinstance(g, int):
        g = (g,)
    g = tuple(int(getattr(x, "value", x)) for x in g)
    if not all(x > 0 for x in g):
        return result
    originals = {path: a for n, v in bound.items() for path, a in _arrays_in(v, n, [])}
    iresults = {n: clones[id(v)] for n, v in originals.items() if id(v) in clones}
    # 3. the simulator, per target; compare; the first target's results go back to the test
    first = None
    for arch in ARCHS:
        try:
            got = simulate(fn, arch, signature, num_warps, num_stages, bound, g, originals)
        except ptxsim.SimError as e:
            why = _known(fn.__name__, str(e))
            if why:
                import pytest
                pytest.xfail(f"known compiler bug: {why}")
            raise AssertionError(f"simulated {arch} PTX of {fn.__name__} [{signature}] num_warps={num_warps} "
                                 f"failed:\n{e}") from None
        if got is None:
            continue
        for n, arr in got.items():
            if n in _state.get("ignore", ()):
                continue
            msg = compare(f"{fn.__name__} [{signature}] num_warps={num_warps} {arch}: argument '{n}'",
                          arr, iresults[n])
            if msg:
                raise AssertionError(msg)
        if first is None:
            first = got
    for n, v in originals.items():
        _assign(v, first[n])
    return result


def install():
    if _state.get("installed"):
        return
    _state["installed"] = True
    orig_run = _jit.JITFunction.run
    _state["orig_run"] = orig_run

    def run(self, *args, grid, **kwargs):
        return checked_run(orig_run, self, args, kwargs, grid)

    _jit.JITFunction.run = run
    _jit.JITFunction.compile = _recording(_jit.JITFunction.compile)


def check(fn, grid, *args, **kwargs):
    """One launch checked on the simulator, whether or not the whole suite runs in sim mode."""
    if _state.get("installed"):
        return fn[grid](*args, **kwargs)
    saved = _jit.JITFunction.compile
    _jit.JITFunction.compile = _recording(saved)
    try:
        return checked_run(_jit.JITFunction.run, fn, args, kwargs, grid)
    finally:
        _jit.JITFunction.compile = saved


def ignoring(*names):
    """Decorator: within the function, arguments of these names are not compared
    (results that depend on the order of atomics)."""
    def deco(f):
        def g(*a, **k):
            saved = _state.get("ignore", ())
            _state["ignore"] = tuple(saved) + names
            gpu_mode = sys.modules.get("gpu_mode")  # the GPU mode of the suite honors them too
            gsaved = set(gpu_mode.ignored) if gpu_mode else None
            if gpu_mode:
                gpu_mode.ignored.update(names)
            try:
                return f(*a, **k)
            finally:
                _state["ignore"] = saved
                if gpu_mode:
                    gpu_mode.ignored.clear()
                    gpu_mode.ignored.update(gsaved)
        return g
    return deco


def tolerance(tol):
    """Decorator: within the function, floats are compared with the interpreter's to at least
    this relative error (kernels whose results carry the error of a lower precision inside, such
    as fp32 math stored as fp64).  The GPU mode of the suite honors it too."""
    def deco(f):
        def g(*a, **k):
            saved = _state.get("tol", 0.0)
            _state["tol"] = max(saved, tol)
            gpu_mode = sys.modules.get("gpu_mode")
            gsaved = gpu_mode.tol_override if gpu_mode else None
            if gpu_mode:
                gpu_mode.tol_override = max(gsaved, tol)
            try:
                return f(*a, **k)
            finally:
                _state["tol"] = saved
                if gpu_mode:
                    gpu_mode.tol_override = gsaved
        return g
    return deco


def sig_dtype(a):
    """The signature dtype of a numpy array (fp32, i8, bf16, ...)."""
    return _jit._NP_DTYPES[str(a.dtype)]


def interpret(fn, grid, *args, **kwargs):
    """One launch on the interpreter alone, whether or not the suite runs in sim mode."""
    gpu_mode = sys.modules.get("gpu_mode")  # the suite's GPU mode would launch it on the GPU too
    plain = gpu_mode.plain_run if gpu_mode is not None and gpu_mode.plain_run is not None else None
    run = _state.get("orig_run", plain or _jit.JITFunction.run)
    return run(fn, *args, grid=grid, **kwargs)
