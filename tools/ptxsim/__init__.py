"""ptxsim: a CPU simulator for the PTX that Nereid writes.

    import ptxsim
    mem = ptxsim.GlobalMemory()
    x = mem.from_array(np_array, "x")          # or mem.alloc(nbytes, "out")
    ptxsim.launch(ptx_text, "kernel", grid=(n, 1, 1), block=(128, 1, 1),
                  params=[x, out, 1000], memory=mem, shared_bytes=0)
    result = out.ndarray(np.float32, (1000,))

Every thread of a CTA runs the kernel's instructions as numpy operations
over the threads (see machine.py for the execution model, ops.py,
mem_ops.py and hopper.py (wgmma, mbarrier, TMA) for the instructions,
docs/ptxsim.md for what is modelled).  encode_tensor_map() writes the
simulator's tensor maps (tensormap.py), from cuTensorMapEncodeTiled's
arguments.  Faults raise subclasses of SimError naming the PTX line, the
thread and the address.
"""
import collections
import hashlib
import re
import struct

import numpy as np

from .hopper import AsyncError  # noqa: F401
from .machine import (BarrierError, DeviceAssertion, Frame, HangError, Options, PARAM_GENERIC, Program,  # noqa: F401
                      RaceError, SMEM_BASE, Unsupported, WarpSyncError)
from .memory import Allocation, GlobalMemory, MemoryFault, SimError  # noqa: F401
from .parser import PtxSyntaxError, parse  # noqa: F401
from .tensormap import TensorMap, decode_tensor_map, encode_tensor_map  # noqa: F401
from .types import SIZE

__all__ = ["launch", "GlobalMemory", "Allocation", "SimError", "MemoryFault", "RaceError", "BarrierError",
           "WarpSyncError", "DeviceAssertion", "HangError", "Unsupported", "AsyncError", "PtxSyntaxError",
           "LaunchResult", "parse", "program", "encode_tensor_map", "decode_tensor_map", "TensorMap"]

_PROGRAMS = collections.OrderedDict()
_FRAMES = collections.OrderedDict()


class LaunchResult:
    def __init__(self, warnings, printed, waves, ctas_per_wave):
        self.warnings = warnings
        self.printed = printed
        self.waves = waves
        self.ctas_per_wave = ctas_per_wave


def program(ptx, kernel):
    """The parsed and cut entry `kernel` of ptx (cached by text)."""
    key = (hashlib.sha1(ptx.encode()).hexdigest(), kernel)
    p = _PROGRAMS.get(key)
    if p is None:
        p = Program(ptx, kernel)
        p.text = ptx
        _PROGRAMS[key] = p
        if len(_PROGRAMS) > 64:
            _PROGRAMS.popitem(last=False)
    else:
        _PROGRAMS.move_to_end(key)
    return p


def _dims(v, what):
    if isinstance(v, int):
        v = (v,)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3 or any(x < 0 for x in v):
        raise ValueError(f"{what} must be 1 to 3 non-negative sizes, got {v}")
    return v + (1,) * (3 - len(v))


def _param_bytes(p, v):
    t = p.type.lstrip(".")
    size = p.size
    if isinstance(v, Allocation) and size == SIZE.get(t, size):
        v = v.base
    if isinstance(v, (bytes, bytearray)):
        if len(v) != size:
            raise ValueError(f"parameter {p.name} takes {size} bytes, got {len(v)}")
        return bytes(v)
    if size != SIZE.get(t, size):  # an array (a tensor map's 128 bytes): its bytes, not a number
        raise ValueError(f"parameter {p.name} is a .{t} array of {size} bytes: give bytes, got "
                         f"{type(v).__name__}")
    if t in ("f32", "f64"):
        return struct.pack("<f" if t == "f32" else "<d", float(v))
    if t == "f16":
        return np.float16(float(v)).tobytes()
    if isinstance(v, (float, np.floating)):
        raise ValueError(f"parameter {p.name} is .{t}, got the float {v}")
    iv = int(v) & ((1 << (8 * SIZE.get(t, size))) - 1)
    return iv.to_bytes(SIZE.get(t, size), "little").ljust(size, b"\0")


def _dynamic_smem_from_comment(text):
    m = re.search(r"(\d+) bytes of dynamic shared memory", text[:2000])
    return int(m.group(1)) if m else None


def launch(ptx, kernel, grid, block=None, params=(), memory=None, shared_bytes=None, races=True, uninit=False,
           printf=None, wave_bytes=None, max_steps=None):
    """Runs entry `kernel` of PTX text ptx over grid (CTAs) x block (threads).

    params: one value per .param of the entry, in order: ints, floats,
    Allocations (their address) or raw bytes (an array parameter, such as
    a tensor map's `.align 64 .b8 map[128]`, takes exactly its bytes).
    memory: the GlobalMemory the pointers point into.  shared_bytes:
    dynamic shared memory per CTA (default: the size Nereid's header
    comment states, else 0).  races: check shared memory races and
    cp.async hazards.  uninit: warn about reads of never-written shared
    memory.  Returns a LaunchResult."""
    prog = program(ptx, kernel)
    entry = prog.entry
    grid = _dims(grid, "grid")
    if block is None:
        if entry.reqntid is None:
            raise ValueError(f"entry '{kernel}' has no .reqntid: give block=")
        block = entry.reqntid
    block = _dims(block, "block")
    if entry.reqntid is not None and tuple(entry.reqntid) != block:
        raise SimError(f"entry '{kernel}' requires blocks of {entry.reqntid} threads (.reqntid), launched with "
                       f"{block}")
    if entry.maxntid is not None and block[0] * block[1] * block[2] > np.prod(entry.maxntid):
        raise SimError(f"entry '{kernel}' allows at most {entry.maxntid} threads (.maxntid)")
    if len(params) != len(entry.params):
        raise ValueError(f"entry '{kernel}' takes {len(entry.params)} parameters, got {len(params)}")
    memory = memory if memory is not None else GlobalMemory()
    pbytes = {p.name: _param_bytes(p, v) for p, v in zip(entry.params, params)}
    # the parameters side by side (each at its alignment), named by generic addresses
    symbols = {}
    area = bytearray()
    for p in entry.params:
        area.extend(b"\0" * (-len(area) % max(p.align, 1)))
        symbols[p.name] = PARAM_GENERIC + len(area)
        area.extend(pbytes[p.name])
    # module variables
    has_extern_shared = False
    for v in prog.module.variables.values():
        if v.space == ".shared":
            if not v.extern:
                raise Unsupported("static .shared variables are not modelled")
            symbols[v.name] = SMEM_BASE
            has_extern_shared = True
            continue
        space = "const" if v.space == ".const" else "global"
        a = memory.alloc(max(v.nbytes, 1), v.name, 0, space)
        if v.init:
            u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[v.elem_size]
            vals = np.array([x & ((1 << (8 * v.elem_size)) - 1) for x in v.init], dtype=u)
            a.bytes[:len(vals) * v.elem_size] = vals.view(np.uint8)
        symbols[v.name] = a.base
    if shared_bytes is None:
        shared_bytes = _dynamic_smem_from_comment(ptx) if has_extern_shared else 0
        if shared_bytes is None:
            raise ValueError("the PTX declares dynamic shared memory: give shared_bytes=")
    opts = Options(races=races, uninit=uninit, printf=printf)
    if max_steps:
        opts.max_steps = max_steps
    nthr = block[0] * block[1] * block[2]
    total = grid[0] * grid[1] * grid[2]
    if total == 0:
        return LaunchResult([], [], 0, 0)
    per_thread = sum(SIZE.get(c.lstrip("."), 1) for c in entry.regs.values()) + 16
    per_cta = per_thread * nthr + (42 if prog.hopper else 20) * ((int(shared_bytes) + 15) & ~15)
    budget = wave_bytes or opts.wave_bytes
    cap = max(1, budget // max(per_cta, 1))
    nwaves = -(-total // cap)
    ncta = -(-total // nwaves)
    fkey = (id(prog), block, ncta, int(shared_bytes))
    fr = _FRAMES.get(fkey)
    if fr is None:
        _FRAMES.clear()  # one frame at a time: frames hold the register file
        fr = Frame(prog, memory, block, ncta, shared_bytes, symbols, pbytes, opts)
        _FRAMES[fkey] = fr
    fr.mem, fr.symbols, fr.params, fr.opts = memory, symbols, pbytes, opts
    fr.param_area = bytes(area)
    for v in entry.locals:
        if v.space == ".local":
            symbols[v.name] = v.offset
    fr.warnings = []
    fr.printed = []
    fr.callparams = {}
    ctas = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for w in range(nwaves):
            part = ctas[w * ncta:(w + 1) * ncta]
            fr.reset(part, grid)
            fr.run_wave()
            fr.complete_async(0)
    return LaunchResult(list(fr.warnings), list(fr.printed), nwaves, ncta)
