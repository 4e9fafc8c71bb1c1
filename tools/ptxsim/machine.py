"""Execution of one kernel launch.

CTAs run in waves: a wave holds several CTAs side by side, and every
register is a numpy array over all threads of the wave, so that one
instruction is a few numpy operations over thousands of threads.  The
program is cut into basic blocks.  While every live thread of the wave is
at the same block (the usual case: Nereid branches on values uniform over
a CTA), blocks run with all threads.  A divergent branch gives every thread
its own block index; the scheduler then runs the lowest block index first,
for the threads that wait there, until all live threads meet again (a
thread that ran ahead waits at a later block, so structured code
reconverges at its join points).  A thread whose last block ran an
mbarrier wait that failed is parked: the lowest block is taken among the
threads that are not, and only where every live thread of a CTA is parked
do the parked ones run again (all of them, lowest block first), so that a
producer warp spinning at a low block does not starve the consumers that
would release it.  bar.sync, shfl.sync, ldmatrix, stmatrix and mma.sync
check that the threads they need are all there.

Shared memory is one zero-based array per CTA at window address SMEM_BASE.
Its race detector keeps, per byte, the last writer and reader thread and
the barrier epoch of the access; a read of a byte another thread wrote in
the same epoch (no bar.sync between), a write after another thread's read
or a different value written by two threads in one epoch are races.
cp.async copies read global memory when issued and land in shared memory
at the cp.async.wait_group that completes their group; reading their bytes
before that is an error.  Kernels with Hopper's asynchronous instructions
carry more per-byte and per-thread state (hopper.State): the proxy fences,
in-flight wgmma reads, TMA data and mbarriers.
"""
import atexit
import os
import sys

import numpy as np

from . import hopper, ops
from .memory import MemoryFault, SimError
from .parser import Instr, Label, parse

SMEM_BASE = 0x400            # shared window address of the dynamic shared array
LOCAL_GENERIC = 0xFE << 40   # generic addresses of .local memory
SHARED_GENERIC = 0xFD << 40  # generic addresses of .shared memory
PARAM_GENERIC = 0xFC << 40   # addresses of kernel parameters (mov of a parameter's name, cvta.param)
WAVE_BYTES = 192 << 20       # register file budget of one wave
MAX_STEPS = 1_000_000        # basic blocks executed per wave before a kernel is called hung


class BarrierError(SimError):
    pass


class WarpSyncError(SimError):
    pass


class RaceError(SimError):
    pass


class DeviceAssertion(SimError):
    pass


class Unsupported(SimError):
    pass


class HangError(SimError):
    pass


class Block:
    __slots__ = ("start", "instrs", "body", "term", "index", "fn", "waits")

    def __init__(self, index, start):
        self.index, self.start = index, start
        self.instrs = []
        self.term = None  # the branch/ret/trap Instr ending the block, or None (falls through)
        self.waits = False  # holds an mbarrier test_wait / try_wait (whose failure parks a thread)


class Program:
    """A parsed entry cut into basic blocks."""

    def __init__(self, ptx, entry_name):
        self.module = parse(ptx) if isinstance(ptx, str) else ptx
        if entry_name not in self.module.entries:
            names = ", ".join(sorted(self.module.entries)) or "none"
            raise SimError(f"the PTX has no entry '{entry_name}' (entries: {names})")
        self.entry = self.module.entries[entry_name]
        self._cut()

    def _cut(self):
        body = self.entry.body
        self.blocks = []
        labels = {}
        cur = None
        after_counted = False
        for item in body:
            if isinstance(item, Label):
                cur = Block(len(self.blocks), item.line)
                self.blocks.append(cur)
                labels[item.name] = cur.index
                after_counted = False
                continue
            # a bar.sync with a thread count is a block of its own, which the threads it holds
            # until the others of the count come run again (c_bar)
            counted = item.opcode in ("bar", "barrier") and len(item.operands) == 2
            if cur is None or cur.term is not None or (counted and cur.instrs) or after_counted:
                cur = Block(len(self.blocks), item.line)
                self.blocks.append(cur)
            after_counted = counted
            if item.opcode in ("bra", "ret", "exit", "trap", "brx"):
                cur.term = item
            else:
                cur.instrs.append(item)
        if not self.blocks:
            self.blocks.append(Block(0, self.entry.line))
        self.labels = labels
        self.hopper = hopper.uses_hopper(self)
        for b in self.blocks:
            b.waits = any(hopper.is_wait(ins) for ins in b.instrs)
            t = b.term
            if t is not None and t.opcode == "bra":
                tgt = t.operands[0]
                name = getattr(tgt, "name", None)
                if name not in labels:
                    raise SimError(f"line {t.line}: branch to unknown label {tgt!r}")


class Options:
    def __init__(self, races=True, uninit=False, printf=None, max_steps=MAX_STEPS, wave_bytes=WAVE_BYTES):
        self.races = races
        self.uninit = uninit
        self.printf = printf if printf is not None else sys.stdout
        self.max_steps = max_steps
        self.wave_bytes = wave_bytes


class Frame:
    """The state of one wave of CTAs and the compiled closures over it."""

    def __init__(self, prog, mem, block, ncta, shared_bytes, symbols, params, opts):
        self.prog, self.mem, self.opts = prog, mem, opts
        self.block = block
        self.nthr = block[0] * block[1] * block[2]
        self.ncta = ncta
        self.T = T = self.nthr * ncta
        if self.nthr % 32:
            raise Unsupported(f"blocks of {self.nthr} threads are not whole warps")
        self.nwarp = T // 32
        self.warnings = []
        self.symbols = symbols
        self.params = params
        # registers, poisoned (NaN bit patterns for floats)
        classes = {}
        for name, cls in prog.entry.regs.items():
            classes.setdefault(cls, []).append(name)
        self.regs = {}
        self._reg_store = []
        for cls, names in classes.items():
            c = cls.lstrip(".")
            if c == "pred":
                store = np.zeros((len(names), T), dtype=np.bool_)
            else:
                from .types import UINT, SIZE
                store = np.empty((len(names), T), dtype=UINT[SIZE[c]])
            self._reg_store.append((c, store))
            for i, n in enumerate(names):
                self.regs[n] = store[i]
        # thread coordinates
        t = np.arange(T, dtype=np.int64)
        self.tindex = t
        self.cta_of = t // self.nthr
        lt = t % self.nthr
        self.tid = [(lt % block[0]).astype(np.uint32), ((lt // block[0]) % block[1]).astype(np.uint32),
                    (lt // (block[0] * block[1])).astype(np.uint32)]
        self.laneid = (lt % 32).astype(np.uint32)
        self.warpid = (lt // 32).astype(np.uint32)
        self.ctaid = [np.zeros(T, np.uint32) for _ in range(3)]
        self.grid = (1, 1, 1)
        self.live = np.ones(T, dtype=np.bool_)
        # shared memory
        self.smem_bytes = int(shared_bytes)
        self.S = (self.smem_bytes + 15) & ~15
        self.smem = np.zeros(max(ncta * self.S, 16), dtype=np.uint8)
        self.smem_views = {w: self.smem.view(u) for w, u in ((1, np.uint8), (2, np.uint16), (4, np.uint32),
                                                             (8, np.uint64))}
        self.cta_base = self.cta_of * self.S
        nb = len(self.smem)
        self.w_tid = np.full(nb, -1, np.int32)
        self.w_ep = np.full(nb, -1, np.int32)
        self.r_tid = np.full(nb, -1, np.int32)
        self.r_ep = np.full(nb, -1, np.int32)
        self.pending = np.zeros(nb, np.int16)
        self.epoch = np.zeros(ncta, np.int32)
        self.bar_hold = np.zeros(T, dtype=np.bool_)  # threads a counted bar.sync holds (c_bar)
        # local memory
        self.L = 0
        for v in prog.entry.locals:
            if v.space == ".local":
                v.offset = self.L
                self.L = (self.L + v.nbytes + 15) & ~15
        self.local = np.zeros((T, max(self.L, 16)), dtype=np.uint8)
        self.callparams = {}
        self.param_area = b""
        self.async_open = []
        self.async_groups = []
        self.printed = []
        # Hopper's asynchronous instructions (hopper.py): their state, and the wgmma registers
        # whose other uses are checked
        self.hop = hopper.State(self) if prog.hopper else None
        if self.hop is not None:
            self.hop.track(self, hopper.wgmma_registers(prog))
        self._compile()

    # --- identification -----------------------------------------------------------------------------
    def who(self, t):
        t = int(t)
        c = [int(self.ctaid[i][t]) for i in range(3)]
        th = [int(self.tid[i][t]) for i in range(3)]
        return f"thread ({th[0]}, {th[1]}, {th[2]}) of block ({c[0]}, {c[1]}, {c[2]})"

    def fail(self, cls, ins, t, msg):
        where = f" by {self.who(t)}" if t is not None else ""
        raise cls(f"{msg}\n  at PTX line {ins.line}: {ins.text}\n {where}")

    def warn(self, ins, t, msg):
        if len(self.warnings) < 100:
            where = f" by {self.who(t)}" if t is not None else ""
            self.warnings.append(f"{msg} at PTX line {ins.line}: {ins.text}{where}")

    # --- symbols, parameters, generic reads ------------------------------------------------------------
    def symbol_address(self, name):
        a = self.symbols.get(name)
        if a is None:
            raise SimError(f"symbol '{name}' has no address (not declared in the PTX?)")
        return a

    def param_bytes(self, name, off, n, ins):
        raw = self.params.get(name)
        if raw is None:
            raise SimError(f"PTX line {ins.line}: '{name}' is not a parameter of the entry")
        if off < 0 or off + n > len(raw):
            raise MemoryFault(f"PTX line {ins.line}: read of {n} bytes at offset {off} of parameter '{name}' "
                              f"({len(raw)} bytes)")
        return raw[off:off + n]

    def read_generic(self, ins, t, addr, n):
        """n bytes at a generic address as thread t sees it (vprintf's argument buffer)."""
        if addr >= LOCAL_GENERIC:
            off = addr - LOCAL_GENERIC
            if off < 0 or off + n > self.L:
                self.fail(MemoryFault, ins, t, f"vprintf argument at local address 0x{off:x} is out of bounds")
            return bytes(self.local[t, off:off + n])
        raw = self.mem.read_bytes(addr, n)
        if raw is None:
            self.fail(MemoryFault, ins, t, f"vprintf argument at 0x{addr:x} is not in global memory")
        return raw

    # --- compilation --------------------------------------------------------------------------------
    def _compile(self):
        for b in self.prog.blocks:
            fns = []
            for ins in b.instrs:
                try:
                    f = ops.compile_instr(self, ins)
                    fns.append(_covered(f, ins) if COVERAGE is not None else f)
                except SimError:
                    raise
                except Exception as e:  # a parser/compiler gap: name the instruction
                    raise Unsupported(f"PTX line {ins.line}: cannot simulate '{ins.text}': {e}") from e
            b.body = fns
            b.fn = _chain(fns)

    # --- waves --------------------------------------------------------------------------------------
    def reset(self, ctas, grid):
        """Prepares the frame for the CTAs ctas (list of (x, y, z)); padding CTAs are dead."""
        self.grid = grid
        for c, store in self._reg_store:
            if c == "pred":
                store.fill(False)
            else:
                store.fill(np.iinfo(store.dtype).max >> 1)  # 0x7f..f: a NaN of every float width
        n = len(ctas)
        cx = np.zeros(self.ncta, np.uint32)
        cy = np.zeros(self.ncta, np.uint32)
        cz = np.zeros(self.ncta, np.uint32)
        for i, (x, y, z) in enumerate(ctas):
            cx[i], cy[i], cz[i] = x, y, z
        self.ctaid[0][:] = cx[self.cta_of]
        self.ctaid[1][:] = cy[self.cta_of]
        self.ctaid[2][:] = cz[self.cta_of]
        self.live[:] = self.cta_of < n
        self.smem.fill(0xFF)
        self.w_tid.fill(-1)
        self.w_ep.fill(-1)
        self.r_tid.fill(-1)
        self.r_ep.fill(-1)
        self.pending.fill(0)
        self.epoch.fill(0)
        self.local.fill(0)
        self.async_open = []
        self.async_groups = []
        if self.hop is not None:
            self.hop.reset()

    def run_wave(self):
        blocks = self.prog.blocks
        nblocks = len(blocks)
        live = self.live
        mask = None if live.all() else live.copy()
        pcs = None
        cur = 0
        steps = 0
        limit = self.opts.max_steps
        while True:
            steps += 1
            if steps > limit:
                raise HangError(f"the kernel ran {limit} basic blocks in one wave without ending "
                                f"(an endless loop?); last block at PTX line {blocks[cur].start}")
            if pcs is None:
                b = blocks[cur]
                b.fn(mask)
                t = b.term
                if t is None:
                    cur += 1
                    if cur >= nblocks:
                        return
                    continue
                op = t.opcode
                if op == "bra":
                    tgt = self.prog.labels[t.operands[0].name]
                    if t.guard is None:
                        cur = tgt
                        continue
                    taken = self._guard(t)
                    if mask is not None:
                        taken = taken & mask
                        n_t = int(taken.sum())
                        n_l = int(mask.sum())
                    else:
                        n_t = int(taken.sum())
                        n_l = self.T
                    if n_t == n_l:
                        cur = tgt
                    elif n_t == 0:
                        cur += 1
                    else:
                        if "uni" in t.mods:
                            self._check_uniform(t, taken, mask)
                        if self.hop is not None and not b.waits:
                            self.hop.parked.fill(False)  # (flags of waits in blocks before this one)
                        pcs = np.full(self.T, -1, np.int64)
                        act = live if mask is not None else np.ones(self.T, bool)
                        pcs[act] = cur + 1
                        pcs[taken] = tgt
                    continue
                if op in ("ret", "exit"):
                    if t.guard is None:
                        return
                    g = self._guard(t)
                    if mask is not None:
                        g = g & mask
                    if g.all() or (mask is not None and (g == mask).all()):
                        return
                    if not g.any():
                        cur += 1
                        continue
                    live[g] = False
                    mask = live.copy()
                    cur += 1
                    continue
                if op == "trap":
                    g = self._guard(t) if t.guard is not None else None
                    act = mask if g is None else (g if mask is None else g & mask)
                    if act is None or act.any():
                        first = 0 if act is None else int(np.flatnonzero(act)[0])
                        self.fail(SimError, t, first, "trap executed")
                    cur += 1
                    continue
                raise Unsupported(f"PTX line {t.line}: '{t.text}' is not supported")
            # divergent: in each CTA the lowest block with waiting threads runs first (so that
            # structured code reconverges at its join points), parked threads last; CTAs progress
            # independently
            lv = pcs[live]
            if lv.size == 0:
                return
            if (lv == lv[0]).all():
                lo = int(lv[0])
                if lo >= nblocks:
                    return
                pcs = None
                cur = lo
                mask = None if live.all() else live.copy()
                continue
            big = nblocks + 1
            if self.hop is None:
                p2 = np.where(live, pcs, big).reshape(self.ncta, self.nthr)
                act = (p2 == p2.min(1)[:, None]).ravel() & live
            else:
                act = self._runnable(pcs, live, big)
            groups = [(int(lo), act & (pcs == lo)) for lo in np.unique(pcs[act])]  # before any moves
            for lo, m in groups:
                if lo >= nblocks:
                    live[m] = False
                    pcs[m] = -1
                    continue
                steps += 1
                self._step_divergent(blocks[lo], lo, m, pcs, live)

    def _runnable(self, pcs, live, big):
        """The threads of one divergent step when mbarrier waits may spin: in each CTA the lowest
        block among its live threads that are not parked; in a CTA whose live threads are all
        parked, every one of them (each block in turn, lowest first), to retry their waits."""
        hop = self.hop
        parked = hop.parked & live
        ready = live & ~parked
        p2 = np.where(ready, pcs, big).reshape(self.ncta, self.nthr)
        lo = p2.min(1)
        act = (p2 == lo[:, None]).ravel() & ready
        stuck = (lo == big) & parked.reshape(self.ncta, self.nthr).any(1)
        if not stuck.any():
            return act
        hopper.check_deadlock(self, stuck, parked)
        return act | (parked & stuck[self.cta_of])

    def _step_divergent(self, b, lo, m, pcs, live):
        if self.hop is not None:
            self.hop.parked[m] = False  # (until a wait of this block fails)
        b.fn(m)
        t = b.term
        if t is None:
            pcs[m] = lo + 1
            hold = self.bar_hold & m
            if hold.any():  # a counted bar.sync: they wait there, parked, for the rest of its count
                pcs[hold] = lo
                self.hop.parked[hold] = True
                self.bar_hold[hold] = False
            return
        op = t.opcode
        if op == "bra":
            tgt = self.prog.labels[t.operands[0].name]
            if t.guard is None:
                pcs[m] = tgt
                return
            taken = self._guard(t) & m
            if "uni" in t.mods:
                self._check_uniform(t, taken, m)
            pcs[m] = lo + 1
            pcs[taken] = tgt
            return
        if op in ("ret", "exit"):
            g = m if t.guard is None else (self._guard(t) & m)
            pcs[g] = -1
            live[g] = False
            pcs[m & ~g] = lo + 1
            return
        if op == "trap":
            g = m if t.guard is None else (self._guard(t) & m)
            if g.any():
                self.fail(SimError, t, int(np.flatnonzero(g)[0]), "trap executed")
            pcs[m] = lo + 1
            return
        raise Unsupported(f"PTX line {t.line}: '{t.text}' is not supported")

    def _guard(self, ins):
        reg, neg = ins.guard
        p = self.regs[reg.name]
        return ~p if neg else p

    def _check_uniform(self, ins, taken, mask):
        """bra.uni: every active thread of a warp branches the same way."""
        act = np.ones(self.T, bool) if mask is None else mask
        t2 = taken.reshape(-1, 32)
        a2 = act.reshape(-1, 32)
        some = (t2 & a2).any(1)
        notall = (a2 & ~t2).any(1)
        bad = some & notall
        if bad.any():
            w = int(np.flatnonzero(bad)[0])
            self.fail(WarpSyncError, ins, w * 32, "bra.uni whose condition differs between the threads of a "
                      "warp (the branch is divergent)")

    # --- warp and CTA checks ---------------------------------------------------------------------------
    def check_full_warps(self, ins, m, what):
        if m is None:
            return
        m2 = m.reshape(-1, 32)
        part = m2.any(1) & ~m2.all(1)
        if part.any():
            w = int(np.flatnonzero(part)[0])
            lane = int(np.flatnonzero(~m2[w])[0])
            self.fail(WarpSyncError, ins, w * 32 + lane,
                      f"{what} executed by part of a warp only (lane {lane} is not there: divergent control "
                      f"flow or an exited thread)")

    def complete_async(self, keep):
        """Lands every committed cp.async group but the newest keep ones."""
        while len(self.async_groups) > keep:
            group = self.async_groups.pop(0)
            for threads, flat, data in group:
                nb = data.shape[1]
                idx = flat[:, None] + np.arange(nb)
                self.pending[idx] -= 1
                self.smem[idx] = data
                if self.opts.races:
                    ep = self.epoch[self.cta_of[threads]]
                    self.w_tid[idx] = threads[:, None].astype(np.int32)
                    self.w_ep[idx] = ep[:, None]
                    if self.hop is not None:  # a generic-proxy write: wgmma needs its writer's fence
                        self.hop.w_fence[idx] = self.hop.fence_cnt[threads][:, None]
                        self.hop.tma_bar[idx] = -1


# PTXSIM_COVERAGE=file: the instruction forms (opcode and modifiers) that ran, one a line, added to file
COVERAGE = set() if os.environ.get("PTXSIM_COVERAGE") else None


def _form(ins):
    return ".".join([ins.opcode] + ins.mods) + (" (guarded)" if ins.guard else "")


def _covered(f, ins):
    key = _form(ins)

    def g(m):
        if m is None or m.any():
            COVERAGE.add(key)
        f(m)

    return g


def _write_coverage():
    path = os.environ.get("PTXSIM_COVERAGE")
    seen = set()
    if os.path.exists(path):
        with open(path) as fh:
            seen = set(fh.read().split("\n"))
    seen |= COVERAGE
    with open(path, "w") as fh:
        fh.write("\n".join(sorted(x for x in seen if x)) + "\n")


if COVERAGE is not None:
    atexit.register(_write_coverage)


def _chain(fns):
    if not fns:
        return lambda m: None
    if len(fns) == 1:
        return fns[0]

    def run(m):
        for f in fns:
            f(m)

    return run
