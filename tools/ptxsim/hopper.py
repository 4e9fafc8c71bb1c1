"""Hopper's asynchronous instructions (sm_90, sm_90a): wgmma, mbarrier,
cp.async.bulk.tensor (TMA), the proxy fences, setmaxnreg and elect.sync.

wgmma.mma_async runs when it is issued: a warpgroup (4 consecutive warps,
the first a multiple of 4 in its CTA, all 128 threads converged) computes
D = A * B + D with A from a shared-memory matrix descriptor or from
registers and B from a descriptor.  Descriptors are decoded as the PTX ISA
defines them (start address, leading and stride byte offsets, base offset,
swizzle mode), the element addresses follow the ISA's canonical layouts
(K-major or MN-major, 8-row by swizzle-width atoms) and the swizzle XORs
the 16-byte chunk bits of the shared address.  Inputs are their dtype's
values (tf32 ignores the low 13 bits), products are exact, sums are taken
in double and rounded once to the accumulator type.

The asynchrony is checked instead of timed:
  - an instruction other than wgmma that touches an accumulator or A
    register of a wgmma.mma_async whose group no wgmma.wait_group completed
    yet is an error, and so is a wgmma.mma_async using registers that
    another instruction wrote since the last wgmma.fence;
  - shared memory a wgmma reads must be written before a bar.sync and, if
    by generic stores (or cp.async), fenced with fence.proxy.async by its
    writer; it may not be written again until the wgmma.wait_group that
    completes the reading group.
TMA loads read global memory and write shared memory when issued and
complete their bytes on the mbarrier at once; a thread that reads those
bytes must first have seen the mbarrier phase complete (test_wait or
try_wait returning true).  An mbarrier is a record per 8-byte object:
expected and pending arrivals, transaction count and phase, as the ISA's
phase-completion rules say.  A wait that keeps failing while every
thread of its block waits there, with nothing arriving, can never succeed
(nothing else runs): that is reported as a hang.  A thread whose wait
failed is parked (State.parked) and yields to the other threads of its
CTA (machine.py); a CTA whose live threads stay parked for 1000 rounds
with nothing arriving on any of its mbarriers is deadlocked, wherever
they wait.
"""
import numpy as np

from . import fp
from .memory import MemoryFault, SimError
from .parser import Addr, Imm, Pair, Reg, Sink, TensorAddr, Vec
from .tensormap import decode_tensor_map, oob_fill_bits, swizzle_address
from .types import UINT

WG = 128
DEADLOCK_ROUNDS = 1000  # rounds of a CTA's parked threads retrying, nothing arriving, before a hang is reported
_ERR = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")


class CompileError(SimError):
    pass


class AsyncError(SimError):
    """Misuse of the asynchronous instructions: wgmma registers touched in flight,
    a missing wgmma.fence or fence.proxy.async, mbarrier misuse."""


def _cls(name):
    from . import machine
    return getattr(machine, name)


def _cover(key):
    """Records a variant that ran for PTXSIM_COVERAGE (descriptor layouts, TMA boxes)."""
    from . import machine
    if machine.COVERAGE is not None:
        machine.COVERAGE.add(key)


# --- per-wave state -------------------------------------------------------------------------------------------
class MBarrier:
    __slots__ = ("expected", "pending", "tx", "phase", "init_tid", "init_ep", "spins")

    def __init__(self, count, tid, ep):
        self.expected = self.pending = count
        self.tx = 0
        self.phase = 0
        self.init_tid, self.init_ep = tid, ep
        self.spins = 0

    def describe(self):
        return (f"phase {self.phase}, {self.pending} of {self.expected} arrivals pending, transaction count "
                f"{self.tx}")


class State:
    """What the asynchronous instructions leave behind in one wave (Frame.hop)."""

    def __init__(self, fr):
        nb, T = len(fr.smem), fr.T
        self.w_fence = np.zeros(nb, np.int32)       # the writer's fence count at a generic write
        # the last async reader of each byte: a warpgroup (>= 0, wgmma) or -2 - t (thread t's TMA
        # store), and its group; in flight until that group completes
        self.rd_owner = np.full(nb, -1, np.int32)
        self.rd_seq = np.zeros(nb, np.int32)
        self.tma_bar = np.full(nb, -1, np.int32)    # mbarrier (flat offset) a TMA write completes on
        self.tma_phase = np.zeros(nb, np.int32)     # ... and its phase
        self.mbar_bytes = np.zeros(nb, np.bool_)    # bytes of initialized mbarriers
        self.fence_cnt = np.zeros(T, np.int32)      # fence.proxy.async executed per thread
        self.committed = np.zeros(T, np.int64)      # wgmma groups committed per thread
        self.completed = np.zeros(T, np.int64)      # ... and completed by wgmma.wait_group
        self.bulk_committed = np.zeros(T, np.int64)  # bulk (TMA store) groups committed per thread
        self.bulk_completed = np.zeros(T, np.int64)  # ... and completed by cp.async.bulk.wait_group
        self.tracked = set()                        # accumulator and A registers of wgmma.mma_async
        self.seq = {}                               # register -> group of its in-flight wgmma (-1)
        self.dirty = {}                             # register -> written since the last wgmma.fence
        self.shape = {}                             # register -> shape of the wgmma that wrote it
        # waits that failed: the thread is parked until its next block (machine.py); the wait
        # (index into waits), its mbarrier (flat offset) and its parity or state, for hang reports
        self.waits = []                             # the test_wait / try_wait instructions
        self.parked = np.zeros(T, np.bool_)
        self.wait_at = np.zeros(T, np.int32)
        self.wait_bar = np.zeros(T, np.int64)
        self.wait_arg = np.zeros(T, np.int64)
        # per CTA: mbarrier arrivals (and inits), their count at the last deadlock check, and the
        # rounds in a row that all of its live threads were parked with no arrival
        self.arrivals = np.zeros(fr.ncta, np.int64)
        self.arrivals_seen = np.zeros(fr.ncta, np.int64)
        self.idle = np.zeros(fr.ncta, np.int64)
        self.reset()

    def track(self, fr, names):
        for n in names:
            if n not in self.seq:
                self.tracked.add(n)
                self.seq[n] = np.full(fr.T, -1, np.int64)
                self.dirty[n] = np.ones(fr.T, np.bool_)

    def reset(self):
        self.w_fence.fill(0)
        self.rd_owner.fill(-1)
        self.rd_seq.fill(0)
        self.tma_bar.fill(-1)
        self.tma_phase.fill(0)
        self.mbar_bytes.fill(False)
        self.fence_cnt.fill(0)
        self.committed.fill(0)
        self.completed.fill(0)
        self.bulk_committed.fill(0)
        self.bulk_completed.fill(0)
        for n in self.seq:
            self.seq[n].fill(-1)
            self.dirty[n].fill(True)
        self.shape.clear()
        self.parked.fill(False)
        self.arrivals.fill(0)
        self.arrivals_seen.fill(0)
        self.idle.fill(0)
        self.mbar = {}          # flat offset -> MBarrier
        self.observed = {}      # flat offset -> phases each thread has seen complete
        self.maps = {}          # raw tensor map bytes -> TensorMap


def uses_hopper(prog):
    for b in prog.blocks:
        for ins in b.instrs:
            op = ins.opcode
            if op in ("wgmma", "mbarrier", "setmaxnreg", "elect") or (op == "cp" and "bulk" in ins.mods) or \
                    (op == "fence" and "proxy" in ins.mods):
                return True
    return False


def is_wait(ins):
    """mbarrier.test_wait / try_wait: a wait that may fail, after which the thread yields."""
    return ins.opcode == "mbarrier" and bool(ins.mods) and ins.mods[0] in ("test_wait", "try_wait")


def wgmma_registers(prog):
    """Names of the registers wgmma.mma_async instructions use as accumulators or A fragments."""
    names = set()
    for b in prog.blocks:
        for ins in b.instrs:
            if ins.opcode == "wgmma" and ins.mods and ins.mods[0] == "mma_async":
                for op in ins.operands[:2]:
                    if isinstance(op, Vec):
                        names.update(x.name for x in op.items if isinstance(x, Reg))
    return names


# --- convergence ----------------------------------------------------------------------------------------------
def warpgroups(fr, ins, m, what):
    """Indices of the wave's warpgroups active under mask m; part of a warpgroup is an error."""
    if fr.nthr % WG:
        if m is None or m.any():
            t = 0 if m is None else int(np.flatnonzero(m)[0])
            fr.fail(_cls("WarpSyncError"), ins, t, f"{what} needs whole warpgroups of 128 threads; blocks of "
                    f"{fr.nthr} threads do not split into them")
        return np.zeros(0, np.int64)
    nwg = fr.T // WG
    if m is None:
        return np.arange(nwg)
    m2 = m.reshape(nwg, WG)
    part = m2.any(1) & ~m2.all(1)
    if part.any():
        g = int(np.flatnonzero(part)[0])
        t = int(np.flatnonzero(~m2[g])[0])
        fr.fail(_cls("WarpSyncError"), ins, g * WG + t,
                f"{what} executed by part of a warpgroup only (its thread {t} is not there: divergent control "
                f"flow or an exited thread); warpgroup instructions need all 128 threads")
    return np.flatnonzero(m2.all(1))


def _wg_threads(wgs):
    return (wgs[:, None] * WG + np.arange(WG)).ravel()


def _uniform(fr, ins, vals, wgs, what):
    """vals (len(wgs) * 128,) -> (len(wgs),): the value every thread of each warpgroup has."""
    v = np.asarray(vals).reshape(len(wgs), WG)
    bad = (v != v[:, :1]).any(1)
    if bad.any():
        g = int(np.flatnonzero(bad)[0])
        t = int(np.flatnonzero(v[g] != v[g, 0])[0])
        fr.fail(AsyncError, ins, int(wgs[g]) * WG + t, f"the {what} differs between the threads of a warpgroup")
    return v[:, 0]


# --- shared memory through the async proxy -------------------------------------------------------------------
def _flat_of(fr, ins, addrs, threads, nbytes, what):
    """Flat byte indices (len, nbytes) of shared-window addresses addrs read or written by threads."""
    from .machine import SMEM_BASE
    a = np.asarray(addrs, dtype=np.int64)
    off = a - SMEM_BASE
    bad = (off < 0) | (off + nbytes > fr.smem_bytes)
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        fr.fail(MemoryFault, ins, int(np.asarray(threads).ravel()[i]),
                f"{what} reaches shared address 0x{int(a.ravel()[i]):x}, outside the {fr.smem_bytes}-byte dynamic "
                f"shared memory at 0x{SMEM_BASE:x}")
    return fr.cta_base[threads] + off


def check_async_read(fr, ins, t_issue, flat, readers, own, what):
    """An async-proxy read (wgmma, TMA store) of flat bytes for the threads `readers`: written
    before a bar.sync (or by the threads `own`, None for none), fenced with fence.proxy.async
    by generic writers, TMA data seen complete by every reader."""
    if not fr.opts.races:
        return
    hop = fr.hop
    fb = flat.ravel()
    if fr.pending[fb].any():
        j = int(np.flatnonzero(fr.pending[fb] > 0)[0])
        fr.fail(_cls("RaceError"), ins, t_issue, f"{what} reads shared memory (offset {int(fb[j] % fr.S)}) that a "
                "cp.async is still writing (no cp.async.wait_group completed it)")
    ep = fr.epoch[fr.cta_of[t_issue]]
    wt = fr.w_tid[fb]
    gen = wt >= 0
    if gen.any():
        same = gen & (fr.w_ep[fb] == ep)
        if own is not None:
            same &= ~np.isin(wt, own)
        if same.any():
            j = int(np.flatnonzero(same)[0])
            fr.fail(_cls("RaceError"), ins, t_issue, f"shared memory race: {what} reads offset {int(fb[j] % fr.S)} "
                    f"written by {fr.who(wt[j])} with no bar.sync between them")
        unf = gen & (hop.fence_cnt[np.maximum(wt, 0)] <= hop.w_fence[fb])
        if unf.any():
            j = int(np.flatnonzero(unf)[0])
            fr.fail(AsyncError, ins, t_issue, f"{what} reads shared memory (offset {int(fb[j] % fr.S)}) that "
                    f"{fr.who(wt[j])} wrote with generic stores and did not fence (fence.proxy.async) before the "
                    f"async proxy reads it")
    if hop.mbar_bytes[fb].any():
        j = int(np.flatnonzero(hop.mbar_bytes[fb])[0])
        fr.fail(AsyncError, ins, t_issue, f"{what} reads the bytes of an initialized mbarrier (offset "
                f"{int(fb[j] % fr.S)})")
    check_tma_seen(fr, ins, readers, fb, what)


def check_tma_seen(fr, ins, threads, fb, what):
    """Bytes fb a TMA load wrote may be read (or overwritten) only by threads that saw the
    copy's mbarrier phase complete: threads is one thread per byte, or the threads that all
    read every byte (a warpgroup's wgmma)."""
    hop = fr.hop
    bars = hop.tma_bar[fb]
    tagged = bars >= 0
    if not tagged.any():
        return
    threads = np.asarray(threads)
    per_byte = threads.shape == fb.shape
    for bar in np.unique(bars[tagged]):
        sel = bars == bar
        seen = hop.observed.get(int(bar))
        if per_byte:
            who, need = threads[sel], hop.tma_phase[fb[sel]]
        else:
            who, need = threads, int(hop.tma_phase[fb[sel]].max())
        have = seen[who] if seen is not None else np.zeros(len(who), np.int64)
        short = have <= need
        if short.any():
            i = int(np.flatnonzero(short)[0])
            j = int(np.flatnonzero(sel)[i]) if per_byte else int(np.flatnonzero(sel)[0])
            phase = int(need[i]) if per_byte else need
            fr.fail(_cls("RaceError"), ins, int(who[i]), f"{what} reaches shared memory (offset {int(fb[j] % fr.S)}) "
                    f"that a TMA copy writes, before this thread saw the copy's mbarrier phase ({phase}) complete "
                    f"(mbarrier.try_wait / test_wait)")


def check_async_write(fr, ins, t, flat, what):
    """A write to flat bytes (any proxy) while async reads of them are in flight, or into an
    initialized mbarrier, is an error.  t: the writing thread, or one per row of flat."""
    hop = fr.hop
    fb = flat.ravel()

    def culprit(j):
        return int(t) if np.ndim(t) == 0 else int(np.asarray(t)[j // (fb.size // len(t))])

    own = hop.rd_owner[fb]
    busy = np.zeros(fb.shape, np.bool_)
    wg = own >= 0
    if wg.any():
        busy[wg] = hop.rd_seq[fb[wg]] >= hop.completed[own[wg] * WG]
    st = own <= -2
    if st.any():
        busy[st] = hop.rd_seq[fb[st]] >= hop.bulk_completed[-2 - own[st]]
    if busy.any():
        j = int(np.flatnonzero(busy)[0])
        fr.fail(_cls("RaceError"), ins, culprit(j), f"{what} writes shared memory (offset {int(fb[j] % fr.S)}) that "
                "a wgmma.mma_async or TMA store still reads (no wgmma.wait_group / cp.async.bulk.wait_group "
                "completed it)")
    if hop.mbar_bytes[fb].any():
        j = int(np.flatnonzero(hop.mbar_bytes[fb])[0])
        fr.fail(AsyncError, ins, culprit(j), f"{what} writes the bytes of an initialized mbarrier (offset "
                f"{int(fb[j] % fr.S)}; mbarrier.inval it first)")


def on_generic_write(fr, ins, threads, fb):
    """Hooks of check_write: in-flight async reads, mbarrier bytes, TMA data not yet seen;
    records the writers' fence counts.  fb: (len(threads), nbytes)."""
    hop = fr.hop
    check_async_write(fr, ins, threads, fb, "a store")
    flat = fb.ravel()
    if (hop.tma_bar[flat] >= 0).any():
        tt = np.repeat(threads, fb.shape[1])
        check_tma_seen(fr, ins, tt, flat, "a store")
        hop.tma_bar[flat] = -1
    hop.w_fence[fb] = hop.fence_cnt[threads][:, None]


def on_generic_read(fr, ins, threads, fb):
    hop = fr.hop
    flat = fb.ravel()
    if hop.mbar_bytes[flat].any():
        j = int(np.flatnonzero(hop.mbar_bytes[flat])[0])
        fr.fail(AsyncError, ins, int(threads[j // fb.shape[1]]),
                f"a load reads the bytes of an initialized mbarrier (offset {int(flat[j] % fr.S)})")
    if (hop.tma_bar[flat] >= 0).any():
        check_tma_seen(fr, ins, np.repeat(threads, fb.shape[1]), flat, "a load")


# --- fences ---------------------------------------------------------------------------------------------------
def c_fence(fr, ins):
    if "proxy" in ins.mods and "async" in ins.mods:
        def proxy_async(m):
            if fr.hop is not None:
                if m is None:
                    fr.hop.fence_cnt += 1
                else:
                    fr.hop.fence_cnt[m] += 1
        return proxy_async
    return lambda m: None  # ordering fences: execution is sequentially consistent within a wave


# --- wgmma --------------------------------------------------------------------------------------------------------
_K_OF = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
_ES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
_INT_N = {8, 16, 24} | set(range(32, 257, 16))


def _decode_elems(ty, raw):
    """Element bits (uint of the type's size) -> float64 / int64 values."""
    if ty == "f16":
        return raw.view(np.float16).astype(np.float64)
    if ty == "bf16":
        return fp.bf16_bits_to_f32(raw).astype(np.float64)
    if ty == "tf32":
        return (raw & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if ty == "e4m3":
        return fp.f8_to_f64(raw, fp.E4M3)
    if ty == "e5m2":
        return fp.f8_to_f64(raw, fp.E5M2)
    if ty == "s8":
        return raw.view(np.int8).astype(np.int64)
    return raw.astype(np.int64)


def decode_descriptor(d):
    """Fields of 64-bit matrix descriptors (uint64 array): start address, leading and stride
    byte offsets (bytes), base offset, swizzle bytes (0, 128, 64, 32)."""
    d = np.asarray(d, dtype=np.uint64)
    start = ((d & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    lbo = (((d >> np.uint64(16)) & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    sbo = (((d >> np.uint64(32)) & np.uint64(0x3FFF)) << np.uint64(4)).astype(np.int64)
    base = ((d >> np.uint64(49)) & np.uint64(7)).astype(np.int64)
    mode = (d >> np.uint64(62)).astype(np.int64)
    swz = np.array([0, 128, 64, 32])[mode]
    return start, lbo, sbo, base, swz


def canonical_offsets(rows, k, es, trans, swz, lbo, sbo):
    """Byte offsets (n, rows, k) of element (r, k) of a canonical layout, before the swizzle:
    r along M (A) or N (B); trans: MN-major; swz: the swizzle's width (0: none); lbo, sbo:
    (n,) leading and stride byte offsets.  K-major: rows of swz bytes (16 unswizzled), 8-row
    groups sbo apart, unswizzled 16-byte K chunks lbo apart.  MN-major: swz bytes along r
    (16 unswizzled), repeated lbo apart (sbo unswizzled), 8 k-rows of swz bytes (16), 8-k
    groups sbo apart (lbo unswizzled)."""
    r = np.arange(rows, dtype=np.int64)[None, :, None]
    kk = np.arange(k, dtype=np.int64)[None, None, :]
    lbo = np.asarray(lbo, np.int64)[:, None, None]
    sbo = np.asarray(sbo, np.int64)[:, None, None]
    if not trans:
        kb = kk * es
        if swz:
            return (r % 8) * swz + (r // 8) * sbo + kb
        return (r % 8) * 16 + (r // 8) * sbo + (kb // 16) * lbo + kb % 16
    rb = r * es
    if swz:
        return rb % swz + (rb // swz) * lbo + (kk % 8) * swz + (kk // 8) * sbo
    return rb % 16 + (rb // 16) * sbo + (kk % 8) * 16 + (kk // 8) * lbo


def _frag_d_maps(n):
    """(rows, cols) of D slot i of lane l of warp w: arrays (4, 32, n / 2)."""
    w = np.arange(4)[:, None, None]
    lane = np.arange(32)[None, :, None]
    i = np.arange(n // 2)[None, None, :]
    g, t = lane >> 2, lane & 3
    rows = 16 * w + g + 8 * ((i >> 1) & 1)
    cols = 8 * (i >> 2) + 2 * t + (i & 1)
    return np.broadcast_to(rows, (4, 32, n // 2)), np.broadcast_to(cols, (4, 32, n // 2))


def _frag_a_maps(k, na):
    """(rows, cols) of A element i of lane l of warp w: arrays (4, 32, na) (mma.sync's A
    fragment per warp, the warp's 16 rows of the 64)."""
    from .mem_ops import _frag_a
    rows = np.zeros((4, 32, na), np.int64)
    cols = np.zeros((4, 32, na), np.int64)
    for lane in range(32):
        for i in range(na):
            r, c = _frag_a(k, i, lane >> 2, lane & 3)
            rows[:, lane, i] = r + 16 * np.arange(4)
            cols[:, lane, i] = c
    return rows, cols


class _Wgmma:
    """One wgmma.mma_async instruction, parsed."""

    def __init__(self, fr, ins):
        mods = ins.mods
        if "sp" in mods:
            raise CompileError("sparse wgmma (.sp) is not modelled")
        shape = next((x for x in mods if x.startswith("m64n")), None)
        if shape is None or "k" not in shape:
            raise CompileError(f"'{ins.text}': no m64nNkK shape")
        self.shape = shape
        self.n = int(shape[4:shape.index("k")])
        self.k = int(shape[shape.index("k") + 1:])
        types = [x for x in mods if x in _K_OF or x in ("f32", "s32")]
        if len(types) != 3:
            raise CompileError(f"'{ins.text}': expected .dtype.atype.btype")
        self.dty, self.aty, self.bty = types
        a, b = self.aty, self.bty
        self.ints = a in ("s8", "u8")
        fp8 = a in ("e4m3", "e5m2")
        ok = (a == b) if a in ("f16", "bf16", "tf32") else \
            (b in ("e4m3", "e5m2")) if fp8 else (b in ("s8", "u8"))
        if not ok:
            raise CompileError(f"'{ins.text}': .{a} x .{b} is not a wgmma type pair")
        if self.k != _K_OF[a]:
            raise CompileError(f"'{ins.text}': .{a} operands take k{_K_OF[a]}, not k{self.k}")
        want = ("s32",) if self.ints else ("f32", "f16") if a == "f16" or fp8 else ("f32",)
        if self.dty not in want:
            raise CompileError(f"'{ins.text}': .{a} operands accumulate into {' or '.join(want)}, not .{self.dty}")
        if self.n % 8 or not 8 <= self.n <= 256 or (self.ints and self.n not in _INT_N):
            raise CompileError(f"'{ins.text}': n{self.n} is not a wgmma shape")
        self.sat = "satfinite" in mods
        if self.sat and not self.ints:
            raise CompileError(f"'{ins.text}': .satfinite is for integer wgmma")
        ops = ins.operands
        if len(ops) < 4:
            raise CompileError(f"'{ins.text}': too few operands")
        d, a_op, b_op = ops[0], ops[1], ops[2]
        if not isinstance(d, Vec):
            raise CompileError(f"'{ins.text}': the accumulator must be a vector of registers")
        self.nd = self.n // 4 if self.dty == "f16" else self.n // 2
        if len(d.items) != self.nd:
            raise CompileError(f"'{ins.text}': m64n{self.n} .{self.dty} takes {self.nd} accumulator registers, "
                               f"got {len(d.items)}")
        self.d_regs = d.items
        self.a_regs = a_op.items if isinstance(a_op, Vec) else None
        if self.a_regs is not None and len(self.a_regs) != 4:
            raise CompileError(f"'{ins.text}': A in registers takes 4 registers")
        self.a_desc = None if self.a_regs is not None else a_op
        self.b_desc = b_op
        trans_ok = a in ("f16", "bf16")
        rest = ops[4:]
        n_imm = 0 if self.ints else (2 + (2 if self.a_regs is None else 1) if trans_ok else 2)
        if len(rest) != n_imm:
            raise CompileError(f"'{ins.text}': expected {n_imm} immediate operands after scale-d, got {len(rest)}")
        imms = []
        for x in rest:
            if not isinstance(x, Imm):
                raise CompileError(f"'{ins.text}': {x!r} must be an immediate")
            imms.append(int(x.text, 0))
        self.scale_a = imms[0] if not self.ints else 1
        self.scale_b = imms[1] if not self.ints else 1
        if self.scale_a not in (1, -1) or self.scale_b not in (1, -1):
            raise CompileError(f"'{ins.text}': imm-scale-a and imm-scale-b are 1 or -1")
        self.trans_a = imms[2] if trans_ok and self.a_regs is None else 0
        self.trans_b = imms[-1] if trans_ok else 0
        if self.trans_a not in (0, 1) or self.trans_b not in (0, 1):
            raise CompileError(f"'{ins.text}': imm-trans operands are 0 or 1")
        self.scale_d = ops[3]


def _load_desc_operand(fr, ins, wgs, desc, rows, w, trans, ty, what):
    """Values (nwg, rows, k) of the matrix of type ty each warpgroup's descriptor describes,
    and the flat bytes read (nwg, rows * k * es)."""
    es = _ES[ty]
    start, lbo, sbo, base, swz = decode_descriptor(desc)
    if (base != 0).any():
        g = int(np.flatnonzero(base != 0)[0])
        raise _cls("Unsupported")(f"PTX line {ins.line}: a matrix descriptor with base offset {int(base[g])} is not "
                                  "modelled (matrices start on their swizzle pattern)")
    nwg = len(wgs)
    off = np.empty((nwg, rows, w.k), np.int64)
    for s in np.unique(swz):
        _cover(f"wgmma {what} from a descriptor: .{ty}, {'MN' if trans else 'K'}-major, "
               + (f"{int(s)}-byte swizzle" if s else "no swizzle"))
        sel = swz == s
        off[sel] = canonical_offsets(rows, w.k, es, trans, int(s), lbo[sel], sbo[sel])
    addr = swizzle_address(start[:, None, None] + off, swz[:, None, None])
    if (addr % es).any():
        fr.fail(MemoryFault, ins, int(wgs[0]) * WG, f"{what}: a matrix descriptor reaches a misaligned element")
    t0 = np.repeat(wgs * WG, rows * w.k).reshape(nwg, rows, w.k)
    flat = _flat_of(fr, ins, addr, t0, es, f"the {what} matrix descriptor")
    fb = (flat[..., None] + np.arange(es)).reshape(nwg, -1)
    raw = fr.smem[fb].reshape(nwg, rows, w.k, es).copy().view(UINT[es])[..., 0]
    return _decode_elems(ty, raw), fb


def c_wgmma(fr, ins):
    kind = ins.mods[0] if ins.mods else ""
    if kind == "fence":
        def fence(m):
            wgs = warpgroups(fr, ins, m, "wgmma.fence")
            if wgs.size and fr.hop is not None:
                th = _wg_threads(wgs)
                for n in fr.hop.tracked:
                    fr.hop.dirty[n][th] = False
        return fence
    if kind == "commit_group":
        def commit(m):
            wgs = warpgroups(fr, ins, m, "wgmma.commit_group")
            if wgs.size:
                fr.hop.committed[_wg_threads(wgs)] += 1
        return commit
    if kind == "wait_group":
        if len(ins.operands) != 1 or not isinstance(ins.operands[0], Imm):
            raise CompileError(f"'{ins.text}': wgmma.wait_group takes an immediate count")
        keep = int(ins.operands[0].text, 0)

        def wait(m):
            wgs = warpgroups(fr, ins, m, "wgmma.wait_group")
            if not wgs.size:
                return
            hop = fr.hop
            th = _wg_threads(wgs)
            hop.completed[th] = np.maximum(hop.completed[th], hop.committed[th] - keep)
        return wait
    if kind != "mma_async":
        raise CompileError(f"'{ins.text}' is not modelled")
    return _c_mma_async(fr, ins)


def _c_mma_async(fr, ins):
    from .ops import rd, wr
    from .mem_ops import _decode
    w = _Wgmma(fr, ins)
    n, k, nd = w.n, w.k, w.nd
    d_rd = [rd(fr, x, "b32") for x in w.d_regs]
    d_wr = [wr(fr, x, "b32") for x in w.d_regs]
    a_rd = [rd(fr, x, "b32") for x in w.a_regs] if w.a_regs is not None else None
    ad_rd = rd(fr, w.a_desc, "b64") if w.a_desc is not None else None
    bd_rd = rd(fr, w.b_desc, "b64")
    sd = w.scale_d
    sd_rd = rd(fr, sd, "pred") if isinstance(sd, Reg) else None
    sd_const = None if sd_rd is not None else (int(sd.text, 0) != 0 if isinstance(sd, Imm) else None)
    if sd_rd is None and sd_const is None:
        raise CompileError(f"'{ins.text}': scale-d must be a predicate or an immediate")
    drows, dcols = _frag_d_maps(n)
    na = {2: 8, 4: 4, 1: 16}[_ES[w.aty]]
    arows, acols = _frag_a_maps({2: 16, 4: 8, 1: 32}[_ES[w.aty]], na) if w.a_regs is not None else (None, None)
    names = [x.name for x in w.d_regs] + ([x.name for x in w.a_regs] if w.a_regs is not None else [])

    def words(readers, th):
        return np.stack([np.broadcast_to(np.asarray(r()), (fr.T,))[th] for r in readers], axis=-1)

    def f(m):
        wgs = warpgroups(fr, ins, m, "wgmma.mma_async")
        nwg = wgs.size
        if not nwg:
            return
        hop = fr.hop
        th = _wg_threads(wgs)
        # registers: fenced since their last write by another instruction
        for nm in names:
            bad = hop.dirty[nm][th]
            if bad.any() or (hop.shape.get(nm, w.shape) != w.shape):
                t = int(th[np.flatnonzero(bad)[0]]) if bad.any() else int(th[0])
                fr.fail(AsyncError, ins, t, f"wgmma.mma_async uses {nm}, which "
                        + ("another instruction wrote" if bad.any() else "a wgmma of another shape wrote")
                        + " after the last wgmma.fence.sync.aligned (the fence must come between them)")
        # operands
        bdesc = _uniform(fr, ins, np.broadcast_to(np.asarray(bd_rd()), (fr.T,))[th], wgs, "B matrix descriptor")
        B, bfb = _load_desc_operand(fr, ins, wgs, bdesc, n, w, w.trans_b, w.bty, "B")
        B = np.swapaxes(B, 1, 2)  # (nwg, k, n)
        if ad_rd is not None:
            adesc = _uniform(fr, ins, np.broadcast_to(np.asarray(ad_rd()), (fr.T,))[th], wgs, "A matrix descriptor")
            A, afb = _load_desc_operand(fr, ins, wgs, adesc, 64, w, w.trans_a, w.aty, "A")
            fbs = np.concatenate([afb, bfb], axis=1)
        else:
            _cover(f"wgmma A from registers: .{w.aty}")
            aw = words(a_rd, th).reshape(nwg * 4, 32, 4).astype(np.uint32)
            ea = _decode(w.aty, aw).reshape(nwg, 4, 32, na)
            A = np.zeros((nwg, 64, k), np.int64 if w.ints else np.float64)
            A[:, arows, acols] = ea
            fbs = bfb
        for i in range(nwg):
            check_async_read(fr, ins, int(th[i * WG]), fbs[i], th[i * WG:(i + 1) * WG], None, "wgmma.mma_async")
        scale = np.broadcast_to(np.asarray(sd_rd()), (fr.T,))[th] if sd_rd is not None else \
            np.full(len(th), sd_const)
        scale = _uniform(fr, ins, scale, wgs, "scale-d predicate")
        # D = A B (+ D)
        if w.scale_a == -1:
            A = -A
        if w.scale_b == -1:
            B = -B
        with np.errstate(**_ERR):
            D = np.matmul(A, B)
        cw = words(d_rd, th).reshape(nwg, 4, 32, nd).astype(np.uint32)
        if scale.any():
            if w.dty == "f16":
                lo = (cw & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16)
                hi = (cw >> np.uint32(16)).astype(np.uint16).view(np.float16)
                cv = np.stack([lo, hi], axis=-1).reshape(nwg, 4, 32, 2 * nd).astype(np.float64)
            elif w.dty == "f32":
                cv = cw.view(np.float32).astype(np.float64)
            else:
                cv = cw.view(np.int32).astype(np.int64)
            C = np.zeros_like(D)
            C[:, drows, dcols] = cv
            with np.errstate(**_ERR):
                D = np.where(scale[:, None, None], D + C, D)
        ed = D[:, drows, dcols]  # (nwg, 4, 32, n / 2)
        if w.ints:
            if w.sat:
                ed = np.clip(ed, -2 ** 31, 2 ** 31 - 1)
            out = (ed & 0xFFFFFFFF).astype(np.uint32)
        elif w.dty == "f32":
            with np.errstate(**_ERR):
                out = ed.astype(np.float32).view(np.uint32)
        else:
            with np.errstate(**_ERR):
                h = ed.astype(np.float16).view(np.uint16).astype(np.uint32)
            out = h[..., 0::2] | (h[..., 1::2] << np.uint32(16))
        out = out.reshape(nwg * WG, nd)
        full = np.zeros(fr.T, np.uint32)
        for i, wfn in enumerate(d_wr):
            full[th] = out[:, i]
            wfn(full, m)
        # in flight until a wgmma.wait_group completes its group
        seq = hop.committed[th]
        for nm in names:
            hop.seq[nm][th] = seq
        for nm in (x.name for x in w.d_regs):
            hop.shape[nm] = w.shape
        if fr.opts.races:
            hop.rd_owner[fbs] = wgs[:, None]
            hop.rd_seq[fbs] = seq[::WG][:, None]

    return f


def _regs_of(op, out):
    """Adds the names of the registers operand op mentions to the set out."""
    if isinstance(op, Reg):
        out.add(op.name)
    elif isinstance(op, (Vec, Pair)):
        for x in op.items:
            _regs_of(x, out)
    elif isinstance(op, Addr):
        _regs_of(op.base, out)
    elif isinstance(op, TensorAddr):
        _regs_of(op.base, out)
        _regs_of(op.coords, out)
    return out


# instructions whose first operand is not a destination
_NO_DEST = ("st", "stmatrix", "red", "cp", "bar", "barrier", "prefetch", "fence", "membar", "mbarrier", "call")


def track_registers(fr, ins, core):
    """core wrapped with the checks of a non-wgmma instruction that names wgmma registers:
    none may be in flight, and those it writes need a wgmma.fence before the next wgmma."""
    hop = fr.hop
    ops_ = ins.operands if ins.opcode != "call" else []
    used = set()
    for op in ops_:
        _regs_of(op, used)
    if ins.guard is not None:
        used.add(ins.guard[0].name)
    names = sorted(used & hop.tracked)
    if not names:
        return core
    dest = _regs_of(ops_[0], set()) if ops_ and ins.opcode not in _NO_DEST else set()
    written = sorted(dest & hop.tracked)

    def f(m):
        act = fr.live if m is None else m
        for nm in names:
            bad = act & (hop.seq[nm] >= hop.completed)
            if bad.any():
                t = int(np.flatnonzero(bad)[0])
                fr.fail(AsyncError, ins, t, f"{nm} is an operand of a wgmma.mma_async still in flight: no "
                        f"wgmma.wait_group completed its group before this instruction used it")
        core(m)
        for nm in written:
            hop.dirty[nm] |= act
            hop.shape.pop(nm, None)

    return f


# --- mbarrier ---------------------------------------------------------------------------------------------------
_STATE_TAG = np.uint64(0xA5 << 56)


def _mbar_addr(ins):
    for i, op in enumerate(ins.operands):
        if isinstance(op, Addr):
            return i, op
    raise CompileError(f"'{ins.text}': no mbarrier address")


def _mbar_of(fr, ins, t, flat, what):
    b = fr.hop.mbar.get(int(flat))
    if b is None:
        fr.fail(AsyncError, ins, t, f"{what} on shared offset {int(flat % fr.S)}, which holds no initialized "
                "mbarrier (mbarrier.init it first)")
    if fr.opts.races and b.init_tid != t and b.init_ep == int(fr.epoch[fr.cta_of[t]]):
        fr.fail(_cls("RaceError"), ins, t, f"{what} on an mbarrier that {fr.who(b.init_tid)} initialized with no "
                "bar.sync between them (the initialization is not visible yet)")
    return b


def _complete_phase(b):
    if b.pending == 0 and b.tx == 0:
        b.phase += 1
        b.pending = b.expected
        b.spins = 0


def arrive(fr, ins, t, b, count=1, tx=0):
    """count arrivals and tx transaction bytes (negative: completed) on mbarrier b by thread t."""
    b.spins = 0
    fr.hop.arrivals[fr.cta_of[t]] += 1
    b.tx += tx
    if not -(1 << 20) < b.tx < (1 << 20):
        fr.fail(AsyncError, ins, t, f"the mbarrier's transaction count left its range (+-(2^20 - 1)): {b.describe()}")
    if count:
        if count > b.pending:
            fr.fail(AsyncError, ins, t, f"more arrivals on the mbarrier than its phase expects: {b.describe()}")
        b.pending -= count
    _complete_phase(b)


def c_mbarrier(fr, ins):
    from .mem_ops import _sel, _take, addr_fn, shared_flat
    from .ops import rd, wr
    kind = ins.mods[0] if ins.mods else ""
    ai, aop = _mbar_addr(ins)
    af = addr_fn(fr, aop)
    if "shared::cluster" in ins.mods:
        raise CompileError("mbarrier operations on .shared::cluster (other CTAs of a cluster) are not modelled")
    T = fr.T
    ops_ = ins.operands

    def flats(m, what):
        sel = _sel(m, T)
        if sel.size == 0:
            return sel, sel
        return sel, shared_flat(fr, ins, _take(af(), sel), sel, 8, what)

    if kind == "init":
        cnt = rd(fr, ops_[ai + 1], "u32")

        def init(m):
            sel, fl = flats(m, "mbarrier.init")
            c = np.broadcast_to(np.asarray(cnt()), (T,))
            for i, t in enumerate(sel):
                t = int(t)
                n = int(c[t])
                if not 1 <= n < 1 << 20:
                    fr.fail(AsyncError, ins, t, f"mbarrier.init with {n} arrivals (1 to 2^20 - 1)")
                if int(fl[i]) in fr.hop.mbar:
                    fr.fail(AsyncError, ins, t, "mbarrier.init of an initialized mbarrier (mbarrier.inval it first)")
                fb = fl[i] + np.arange(8)
                if fr.opts.races:
                    from .mem_ops import check_write
                    check_write(fr, ins, np.array([t]), fl[i:i + 1], 8, np.zeros((1, 8), np.uint8))
                fr.hop.mbar[int(fl[i])] = MBarrier(n, t, int(fr.epoch[fr.cta_of[t]]))
                fr.hop.mbar_bytes[fb] = True
                fr.hop.arrivals[fr.cta_of[t]] += 1  # (a wait on it may succeed now)
        return init
    if kind == "inval":
        def inval(m):
            sel, fl = flats(m, "mbarrier.inval")
            for i, t in enumerate(sel):
                _mbar_of(fr, ins, int(t), fl[i], "mbarrier.inval")
                b = fr.hop.mbar.pop(int(fl[i]), None)
                if b is not None and b.tx:
                    fr.fail(AsyncError, ins, int(t), f"mbarrier.inval while TMA copies still complete on it: "
                            f"{b.describe()}")
                fr.hop.observed.pop(int(fl[i]), None)
                fr.hop.mbar_bytes[fl[i] + np.arange(8)] = False
                # the copies that completed on it are done with (an inval follows every thread's last wait)
                fr.hop.tma_bar[fr.hop.tma_bar == int(fl[i])] = -1
        return inval
    if kind in ("arrive", "arrive_drop"):
        if "remote" in ins.mods or "noComplete" in ins.mods:
            raise CompileError(f"'{ins.text}' is not modelled")
        expect = "expect_tx" in ins.mods
        dst = ops_[0] if ai == 1 else None
        w_state = wr(fr, dst, "b64") if dst is not None and not isinstance(dst, Sink) else None
        extra = ops_[ai + 1] if len(ops_) > ai + 1 else None
        r_extra = rd(fr, extra, "u32") if extra is not None else None

        def arr(m):
            sel, fl = flats(m, ins.opcode + "." + kind)
            if sel.size == 0:
                return
            x = np.broadcast_to(np.asarray(r_extra()), (T,)) if r_extra is not None else None
            state = np.zeros(T, np.uint64)
            for i, t in enumerate(sel):
                t = int(t)
                b = _mbar_of(fr, ins, t, fl[i], "mbarrier." + kind)
                state[t] = _STATE_TAG | np.uint64(b.phase & 0xFFFFFFFF)
                if kind == "arrive_drop":
                    b.expected -= 1
                if expect:
                    arrive(fr, ins, t, b, 1, int(x[t]))
                else:
                    arrive(fr, ins, t, b, int(x[t]) if x is not None else 1)
            if w_state is not None:
                w_state(state, m)
        return arr
    if kind in ("expect_tx", "complete_tx"):
        r_tx = rd(fr, ops_[ai + 1], "u32")
        sign = 1 if kind == "expect_tx" else -1

        def tx(m):
            sel, fl = flats(m, "mbarrier." + kind)
            x = np.broadcast_to(np.asarray(r_tx()), (T,))
            for i, t in enumerate(sel):
                t = int(t)
                b = _mbar_of(fr, ins, t, fl[i], "mbarrier." + kind)
                arrive(fr, ins, t, b, 0, sign * int(x[t]))
        return tx
    if kind in ("test_wait", "try_wait"):
        parity = "parity" in ins.mods
        w_done = wr(fr, ops_[0], "pred")
        r_arg = rd(fr, ops_[ai + 1], "u32" if parity else "b64")
        widx = len(fr.hop.waits)
        fr.hop.waits.append(ins)

        def wait(m):
            sel, fl = flats(m, "mbarrier." + kind)
            if sel.size == 0:
                return
            arg = np.broadcast_to(np.asarray(r_arg()), (T,))
            done = np.zeros(T, np.bool_)
            for i, t in enumerate(sel):
                t = int(t)
                f0 = int(fl[i])
                b = _mbar_of(fr, ins, t, f0, "mbarrier." + kind)
                if parity:
                    ok = (b.phase & 1) != (int(arg[t]) & 1)
                else:
                    s = int(arg[t])
                    if s >> 56 != 0xA5:
                        fr.fail(AsyncError, ins, t, f"mbarrier.{kind} with a state that no mbarrier.arrive returned")
                    ok = b.phase > (s & 0xFFFFFFFF)
                done[t] = ok
                if ok:
                    seen = fr.hop.observed.get(f0)
                    if seen is None:
                        seen = fr.hop.observed[f0] = np.zeros(T, np.int64)
                    seen[t] = max(int(seen[t]), b.phase)
            w_done(done, m)
            hop = fr.hop
            ok = done[sel]
            hop.parked[sel] = ~ok
            if not ok.all():
                failed = sel[~ok]
                hop.wait_at[failed] = widx
                hop.wait_bar[failed] = fl[~ok]
                hop.wait_arg[failed] = arg[failed].astype(np.int64)
                _hang_check(fr, ins, sel, fl, done, kind)
        return wait
    raise CompileError(f"'{ins.text}' is not modelled")


def _hang_check(fr, ins, sel, fl, done, kind):
    """Waits that keep failing with nothing changing their mbarrier: after 1000 failures while
    every live thread of the block waits there (nothing else can arrive), or 200000 in all."""
    fail = sel[~done[sel]]
    if fail.size == 0:
        return
    live2 = fr.live.reshape(fr.ncta, fr.nthr)
    here = np.zeros(fr.T, np.bool_)
    here[sel] = True
    all_wait = (here.reshape(fr.ncta, fr.nthr) == live2).all(1)
    seen = set()
    for j in np.flatnonzero(~done[sel]):
        f0 = int(fl[j])
        if f0 in seen:
            continue
        seen.add(f0)
        b = fr.hop.mbar[f0]
        b.spins += 1
        t = int(sel[j])
        if b.spins > 1000 and all_wait[fr.cta_of[t]]:
            fr.fail(_cls("HangError"), ins, t, f"mbarrier.{kind} waits for a phase that can never complete: every "
                    f"thread of the block waits on it, 1000 times with nothing arriving ({b.describe()})")
        if b.spins > 200000:
            fr.fail(_cls("HangError"), ins, t, f"mbarrier.{kind} failed 200000 times with nothing arriving "
                    f"({b.describe()})")


def check_deadlock(fr, stuck, parked):
    """A divergent step found the live threads of the CTAs `stuck` all parked (parked: the
    wave's parked live threads), and runs them to retry their waits.  DEADLOCK_ROUNDS such rounds
    in a row with nothing arriving on any mbarrier of the CTA never end (the only changes to an
    mbarrier's phase are arrivals): a hang, reported with each group of threads' wait."""
    hop = fr.hop
    hop.idle[hop.arrivals != hop.arrivals_seen] = 0
    hop.idle[stuck] += 1
    hop.arrivals_seen[:] = hop.arrivals
    if hop.idle.max() <= DEADLOCK_ROUNDS:
        return
    c = int(np.flatnonzero(hop.idle > DEADLOCK_ROUNDS)[0])
    who = np.flatnonzero(parked & (fr.cta_of == c))
    groups = {}
    for t in who:
        key = (int(hop.wait_at[t]), int(hop.wait_bar[t]), int(hop.wait_arg[t]))
        groups.setdefault(key, []).append(int(t))
    lines = []
    for (w, f0, arg), ts in sorted(groups.items()):
        ins = hop.waits[w]
        b = hop.mbar.get(f0)
        what = f"a phase of parity {arg & 1}" if "parity" in ins.mods else f"phase {arg & 0xFFFFFFFF}"
        state = b.describe() if b is not None else "no longer initialized"
        lines.append(f"  {len(ts)} thread(s) from {fr.who(ts[0])}, at PTX line {ins.line} ({ins.text}), wait "
                     f"for the end of {what} of the mbarrier at shared offset {f0 % fr.S} ({state})")
    first = min(groups.items(), key=lambda kv: kv[1][0])
    fr.fail(_cls("HangError"), hop.waits[first[0][0]], first[1][0],
            f"deadlock: every live thread of the block waits on an mbarrier and nothing arrived on any of them "
            f"in {DEADLOCK_ROUNDS} rounds of retries; the waits:\n" + "\n".join(lines))


# --- TMA ------------------------------------------------------------------------------------------------------------
def read_tensor_map(fr, ins, t, addr):
    """The TensorMap at generic address addr (global, const or a kernel parameter)."""
    from .machine import PARAM_GENERIC
    if addr % 64:
        fr.fail(MemoryFault, ins, t, f"tensor map address 0x{addr:x} is not 64-byte aligned")
    if PARAM_GENERIC <= addr < PARAM_GENERIC + (1 << 32):
        off = addr - PARAM_GENERIC
        raw = fr.param_area[off:off + 128] if off + 128 <= len(fr.param_area) else None
    else:
        raw = fr.mem.read_bytes(addr, 128)
    if raw is None or len(raw) != 128:
        fr.fail(MemoryFault, ins, t, f"the 128-byte tensor map at 0x{addr:x} is not in global, const or parameter "
                f"memory ({fr.mem.describe(addr)})")
    tm = fr.hop.maps.get(raw)
    if tm is None:
        try:
            tm = decode_tensor_map(raw)
        except ValueError as e:
            fr.fail(SimError, ins, t, f"tensor map at 0x{addr:x}: {e}")
        fr.hop.maps[raw] = tm
    return tm


def _box(fr, ins, t, tm, coords):
    """(global byte addresses, in-bounds mask) of the box's elements in shared order
    (dimension 0 fastest), and the box's element counts."""
    if tm.interleave:
        raise _cls("Unsupported")(f"PTX line {ins.line}: interleaved tensor maps are not modelled")
    if tm.estrides[0] != 1:
        raise _cls("Unsupported")(f"PTX line {ins.line}: tensor maps with an element stride along dimension 0 are "
                                  "not modelled")
    counts = tm.box_counts()
    addr = np.full(1, tm.address, np.int64)
    inb = np.ones(1, np.bool_)
    for i in reversed(range(tm.rank)):
        c = coords[i] + np.arange(counts[i], dtype=np.int64) * tm.estrides[i]
        ok = (c >= 0) & (c < tm.dims[i])
        addr = (addr[:, None] + c[None, :] * tm.strides[i]).ravel()
        inb = (inb[:, None] & ok[None, :]).ravel()
    return addr, inb, counts


def _tma_smem(fr, ins, t, dst, tm, nelem, what):
    """Flat byte indices (nelem, esize) of the box's elements in shared memory at dst."""
    if dst % 128:
        fr.fail(MemoryFault, ins, t, f"{what}: shared address 0x{dst:x} is not 128-byte aligned")
    es = tm.esize
    lin = dst + np.arange(nelem, dtype=np.int64) * es
    phys = swizzle_address(lin, tm.swizzle_bytes)
    flat = _flat_of(fr, ins, phys, np.full(nelem, t), es, what)
    return flat[:, None] + np.arange(es)


def c_cp_bulk(fr, ins):
    from .mem_ops import _sel, addr_fn
    from .ops import rd
    mods = ins.mods
    T = fr.T
    if "commit_group" in mods:
        def commit(m):
            fr.hop.bulk_committed[_sel(m, T)] += 1
        return commit
    if "wait_group" in mods:
        keep = int(ins.operands[0].text, 0)

        def wait(m):
            sel = _sel(m, T)
            hop = fr.hop
            hop.bulk_completed[sel] = np.maximum(hop.bulk_completed[sel], hop.bulk_committed[sel] - keep)
        return wait
    if "tensor" not in mods:
        raise CompileError(f"'{ins.text}': bulk copies other than cp.async.bulk.tensor are not modelled")
    if any(x.startswith("multicast") or x == "im2col" or x.startswith("im2col") for x in mods):
        raise CompileError(f"'{ins.text}': multicast and im2col copies are not modelled")
    rank = next((int(x[:-1]) for x in mods if x.endswith("d") and x[:-1].isdigit()), None)
    load = any(x.startswith("shared") for x in mods) and mods.index("global") > \
        next(i for i, x in enumerate(mods) if x.startswith("shared"))
    ops_ = ins.operands
    ta = next((op for op in ops_ if isinstance(op, TensorAddr)), None)
    if ta is None or rank is None or len(ta.coords.items) != rank:
        raise CompileError(f"'{ins.text}': expected [tensorMap, {{{rank} coordinates}}]")
    map_rd = rd(fr, ta.base, "u64")
    c_rd = [rd(fr, c, "s32") for c in ta.coords.items]
    if load:
        if "mbarrier::complete_tx::bytes" not in mods:
            raise CompileError(f"'{ins.text}': a TMA load completes on an mbarrier (.mbarrier::complete_tx::bytes)")
        dst_f = addr_fn(fr, ops_[0])
        bar_f = addr_fn(fr, ops_[2])
        return _tma_load(fr, ins, rank, map_rd, c_rd, dst_f, bar_f)
    if "bulk_group" not in mods:
        raise CompileError(f"'{ins.text}': a TMA store completes in a bulk group (.bulk_group)")
    src_f = addr_fn(fr, ops_[1])
    return _tma_store(fr, ins, rank, map_rd, c_rd, src_f)


def _vals(fn, t):
    v = np.asarray(fn())
    return int(v) if v.ndim == 0 else int(v[t])


def _tma_box(fr, ins, t, rank, map_rd, c_rd):
    """Thread t's tensor map (of the copy's rank) and its box at the copy's coordinates:
    (map, global addresses, in-bounds mask, box extents)."""
    tm = read_tensor_map(fr, ins, t, _vals(map_rd, t))
    if tm.rank != rank:
        fr.fail(SimError, ins, t, f"a {rank}d TMA copy with a tensor map of rank {tm.rank}")
    gaddr, inb, counts = _box(fr, ins, t, tm, [_vals(c, t) for c in c_rd])
    return tm, gaddr, inb, counts


def _shared_offset(addr):
    """A shared address given in the generic window or in the shared window."""
    from .machine import SHARED_GENERIC
    return addr - SHARED_GENERIC if addr >= SHARED_GENERIC else addr


def _tma_load(fr, ins, rank, map_rd, c_rd, dst_f, bar_f):
    from .mem_ops import _sel, shared_flat

    def f(m):
        for t in _sel(m, fr.T):
            t = int(t)
            tm, gaddr, inb, counts = _tma_box(fr, ins, t, rank, map_rd, c_rd)
            _cover(f"TMA load: {rank}d, {tm.swizzle_bytes}-byte swizzle" + (", out of bounds" if not inb.all() else ""))
            es = tm.esize
            data = np.full(len(gaddr), oob_fill_bits(tm), UINT[es])
            if inb.any():
                data[inb] = fr.mem.load(gaddr[inb].astype(np.uint64), es, 1, "global",
                                        lambda i, msg: fr.fail(MemoryFault, ins, t, f"TMA load: {msg}"))[:, 0]
            fb = _tma_smem(fr, ins, t, _shared_offset(_vals(dst_f, t)), tm, len(gaddr), "TMA load")
            bflat = int(shared_flat(fr, ins, np.array([_vals(bar_f, t)]), np.array([t]), 8, "TMA mbarrier")[0])
            b = _mbar_of(fr, ins, t, bflat, "a TMA load's complete_tx")
            hop = fr.hop
            flat = fb.ravel()
            if fr.opts.races:
                ep = fr.epoch[fr.cta_of[t]]
                if fr.pending[flat].any():
                    j = int(np.flatnonzero(fr.pending[flat] > 0)[0])
                    fr.fail(_cls("RaceError"), ins, t, f"TMA load into shared memory (offset {int(flat[j] % fr.S)}) "
                            "that a cp.async is still writing")
                rt = fr.r_tid[flat]
                war = (fr.r_ep[flat] == ep) & (rt != t) & (rt >= 0)
                if war.any():
                    j = int(np.flatnonzero(war)[0])
                    fr.fail(_cls("RaceError"), ins, t, f"shared memory race: TMA load into offset "
                            f"{int(flat[j] % fr.S)} read by {fr.who(rt[j])} with no bar.sync between them")
                check_async_write(fr, ins, t, flat, "TMA load")
                fr.w_tid[flat] = -2  # the async proxy: readers synchronize through the mbarrier
                fr.w_ep[flat] = ep
                hop.tma_bar[flat] = bflat
                hop.tma_phase[flat] = b.phase
            fr.smem[fb] = data.view(np.uint8).reshape(-1, es)
            arrive(fr, ins, t, b, 0, -int(np.prod(counts)) * es)

    return f


def _tma_store(fr, ins, rank, map_rd, c_rd, src_f):
    from .mem_ops import _sel

    def f(m):
        for t in _sel(m, fr.T):
            t = int(t)
            tm, gaddr, inb, _ = _tma_box(fr, ins, t, rank, map_rd, c_rd)
            fb = _tma_smem(fr, ins, t, _shared_offset(_vals(src_f, t)), tm, len(gaddr), "TMA store")
            check_async_read(fr, ins, t, fb, np.array([t]), np.array([t]), "TMA store")
            es = tm.esize
            data = fr.smem[fb].copy().view(UINT[es])[:, 0]
            if inb.any():
                fr.mem.store(gaddr[inb].astype(np.uint64), data[inb][:, None], es, "global",
                             lambda i, msg: fr.fail(MemoryFault, ins, t, f"TMA store: {msg}"))
            if fr.opts.races:
                fr.hop.rd_owner[fb] = -2 - t
                fr.hop.rd_seq[fb] = fr.hop.bulk_committed[t]

    return f


# --- setmaxnreg, elect.sync -----------------------------------------------------------------------------------------
def c_setmaxnreg(fr, ins):
    if not ins.operands or not isinstance(ins.operands[0], Imm):
        raise CompileError(f"'{ins.text}': setmaxnreg takes an immediate register count")
    n = int(ins.operands[0].text, 0)
    if not 24 <= n <= 256 or n % 8:
        raise CompileError(f"'{ins.text}': the register count must be a multiple of 8 from 24 to 256, not {n}")
    if not ("inc" in ins.mods) ^ ("dec" in ins.mods):
        raise CompileError(f"'{ins.text}': setmaxnreg is .inc or .dec")

    def f(m):
        warpgroups(fr, ins, m, "setmaxnreg")  # (no effect beyond the check)

    return f


def c_elect(fr, ins):
    from .ops import rd, wr
    ops_ = ins.operands
    if len(ops_) != 2 or not isinstance(ops_[0], Pair):
        raise CompileError(f"'{ins.text}': elect.sync takes d|p, membermask")
    d, p = ops_[0].items
    wd = wr(fr, d, "b32")
    wp = wr(fr, p, "pred")
    rm = rd(fr, ops_[1], "u32")
    lanes = np.arange(32, dtype=np.uint32)

    def f(m):
        act = np.ones(fr.T, np.bool_) if m is None else m
        mask = np.broadcast_to(np.asarray(rm()).astype(np.uint32), (fr.T,))
        a2 = act.reshape(-1, 32)
        m2 = mask.reshape(-1, 32)
        member = ((m2 >> lanes) & np.uint32(1)).astype(np.bool_)
        warps = np.flatnonzero(a2.any(1))
        leader = np.zeros(fr.T, np.bool_)
        lane_out = np.zeros(fr.T, np.uint32)
        for w in warps:
            mem = member[w] & a2[w]
            if (member[w] & ~a2[w]).any():
                lane = int(np.flatnonzero(member[w] & ~a2[w])[0])
                fr.fail(_cls("WarpSyncError"), ins, int(w) * 32 + lane, "elect.sync: a thread of the member mask "
                        "is not there (divergent control flow or an exited thread)")
            if mem.any():
                first = int(np.flatnonzero(mem)[0])
                leader[w * 32 + first] = True
                lane_out[w * 32:(w + 1) * 32] = first
        wd(lane_out, m)
        wp(leader, m)

    return f


HANDLERS = {"wgmma": c_wgmma, "mbarrier": c_mbarrier, "setmaxnreg": c_setmaxnreg, "elect": c_elect,
            "fence": c_fence}
