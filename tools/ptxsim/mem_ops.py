"""Memory and warp-level instructions: ld, st, atom, red, cp.async,
ldmatrix, stmatrix, shfl.sync, bar.sync, mma.sync, and calls to vprintf and
__assertfail.

Only the active threads touch memory (inactive ones may hold garbage
addresses).  Loads of one instruction all happen before its stores;
atomics of one instruction are applied thread by thread in thread order.
"""
import numpy as np

from . import fp
from . import hopper
from .memory import MemoryFault, SimError
from .parser import Addr, Imm, Pair, Reg, Sym, Vec
from .printf import format_printf
from .types import NP, SINT, SIZE, TYPES, UINT, is_float, is_signed

_ERR = dict(over="ignore", invalid="ignore", divide="ignore", under="ignore")
_SPACES = ("global", "shared", "local", "param", "const")


class CompileError(SimError):
    pass


def _space(ins):
    for m in ins.mods:
        s = m.split("::")[0]
        if s in _SPACES:
            return s
    return "generic"


def _vec(ins):
    for m in ins.mods:
        if m in ("v2", "v4", "v8"):
            if m == "v8" and not any(t in ins.mods for t in ("b32", "u32", "s32", "f32")):
                # (.v8 is a 256-bit access of 32-bit elements: ptxas takes .v8.b8, the GPU
                # does not do what it says)
                raise CompileError(f"'{ins.text}': .v8 vectors hold 32-bit elements only")
            return int(m[1])
    return 1


def _type(ins):
    ts = [m for m in ins.mods if m in TYPES]
    if not ts:
        raise CompileError(f"no type in '{ins.text}'")
    return ts[-1]


def _items(op):
    return op.items if isinstance(op, Vec) else [op]


# --- addresses ---------------------------------------------------------------------------------------------
def addr_fn(fr, op):
    """A function giving the address operand's values (uint64, per thread or scalar)."""
    if not isinstance(op, Addr):
        raise CompileError(f"{op!r} is not an address")
    base, off = op.base, np.uint64(op.offset & 0xFFFFFFFFFFFFFFFF)
    if isinstance(base, Reg):
        arr = fr.regs[base.name]
        if arr.dtype == np.uint64:
            return lambda: arr + off
        return lambda: arr.astype(np.uint64) + off
    if isinstance(base, Sym):
        name = base.name
        return lambda: np.uint64(fr.symbol_address(name)) + off
    if isinstance(base, Imm):
        c = np.uint64(int(base.text, 0) & 0xFFFFFFFFFFFFFFFF) + off
        return lambda: c
    raise CompileError(f"address {op!r} is not modelled")


def _sel(m, T):
    return np.arange(T) if m is None else np.flatnonzero(m)


def _take(v, sel):
    v = np.asarray(v)
    if v.ndim == 0:
        return np.broadcast_to(v, sel.shape)
    return v[sel]


def _store_reg(fr, op, memty):
    """A function (bits (len,) uint of memty's size, sel) writing loaded bits into register op,
    sign- or zero-extended by memty."""
    arr = fr.regs[op.name]
    W, w = arr.itemsize, SIZE[memty]
    if arr.dtype == np.bool_:
        raise CompileError(f"cannot load into predicate {op.name}")
    if W < w:
        raise CompileError(f"{op.name} is too narrow for .{memty}")
    signed = memty[0] == "s"
    sw, uW, sW = SINT[w], UINT[W], SINT[W]

    def put(bits, sel):
        if W == w:
            arr[sel] = bits
        elif signed:
            arr[sel] = bits.view(sw).astype(sW).view(uW)
        else:
            arr[sel] = bits.astype(uW)

    return put


def _value_bits(fr, op, memty):
    """A function (sel) -> bits of a stored value, truncated to memty's size."""
    w = SIZE[memty]
    u = UINT[w]
    if isinstance(op, Reg):
        arr = fr.regs[op.name]
        if arr.dtype == np.bool_:
            raise CompileError(f"cannot store predicate {op.name}")
        if arr.itemsize == w:
            return lambda sel: arr[sel]
        return lambda sel: arr[sel].astype(u)
    if isinstance(op, Imm):
        from .types import imm_value
        c = np.asarray(imm_value(op.text, memty)).view(u) if memty in NP else None
        c = np.asarray(c, dtype=u)
        return lambda sel: np.broadcast_to(c, sel.shape)
    raise CompileError(f"cannot store {op!r}")


# --- shared memory ------------------------------------------------------------------------------------------
def shared_flat(fr, ins, addrs, threads, nbytes, what="access"):
    """Byte indices in fr.smem of nbytes at each shared-window address."""
    from .machine import SMEM_BASE, SHARED_GENERIC
    a = np.asarray(addrs).astype(np.int64)
    a = np.where(a >= SHARED_GENERIC, a - SHARED_GENERIC, a)
    off = a - SMEM_BASE
    bad = (off < 0) | (off + nbytes > fr.smem_bytes)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fr.fail(MemoryFault, ins, threads[i],
                f"out-of-bounds shared memory {what} of {nbytes} bytes at shared address 0x{int(a[i]):x} "
                f"(offset {int(off[i])} of the {fr.smem_bytes}-byte dynamic shared memory)")
    if nbytes & (nbytes - 1) == 0:
        mis = (off & (nbytes - 1)) != 0
        if mis.any():
            i = int(np.flatnonzero(mis)[0])
            fr.fail(MemoryFault, ins, threads[i],
                    f"misaligned shared memory {what} of {nbytes} bytes at shared address 0x{int(a[i]):x}")
    return fr.cta_base[threads] + off


def check_read(fr, ins, threads, flat, nbytes):
    if not fr.opts.races:
        return
    fb = flat[:, None] + np.arange(nbytes)
    t = threads[:, None]
    if fr.pending[fb].any():
        i, j = np.argwhere(fr.pending[fb] > 0)[0]
        fr.fail(RaceErrorT(), ins, threads[i], f"read of shared memory (offset {int(fb[i, j] % max(fr.S, 1))}) "
                "that a cp.async is still writing (no cp.async.wait_group completed it)")
    ep = fr.epoch[fr.cta_of[threads]][:, None]
    wt = fr.w_tid[fb]
    race = (fr.w_ep[fb] == ep) & (wt != t) & (wt >= 0)
    if race.any():
        i, j = np.argwhere(race)[0]
        fr.fail(RaceErrorT(), ins, threads[i],
                f"shared memory race: read of offset {int(fb[i, j] % max(fr.S, 1))} written by "
                f"{fr.who(wt[i, j])} with no bar.sync between them")
    if fr.opts.uninit:
        un = wt == -1  # (-2: written by the async proxy)
        if un.any():
            i, j = np.argwhere(un)[0]
            fr.warn(ins, threads[i], f"read of uninitialized shared memory (offset {int(fb[i, j] % max(fr.S, 1))})")
    if fr.hop is not None:
        hopper.on_generic_read(fr, ins, threads, fb)
    fr.r_tid[fb] = t
    fr.r_ep[fb] = ep


def check_write(fr, ins, threads, flat, nbytes, newbytes):
    """newbytes: (len, nbytes) uint8 to be written."""
    if not fr.opts.races:
        return
    fb = flat[:, None] + np.arange(nbytes)
    t = threads[:, None]
    if fr.pending[fb].any():
        i, j = np.argwhere(fr.pending[fb] > 0)[0]
        fr.fail(RaceErrorT(), ins, threads[i], f"write to shared memory (offset {int(fb[i, j] % max(fr.S, 1))}) "
                "that a cp.async is still writing")
    ep = fr.epoch[fr.cta_of[threads]][:, None]
    rt = fr.r_tid[fb]
    war = (fr.r_ep[fb] == ep) & (rt != t) & (rt >= 0)
    if war.any():
        i, j = np.argwhere(war)[0]
        fr.fail(RaceErrorT(), ins, threads[i],
                f"shared memory race: write of offset {int(fb[i, j] % max(fr.S, 1))} read by "
                f"{fr.who(rt[i, j])} with no bar.sync between them")
    wt = fr.w_tid[fb]
    waw = (fr.w_ep[fb] == ep) & (wt != t) & (wt >= 0) & (fr.smem[fb] != newbytes)
    if waw.any():
        i, j = np.argwhere(waw)[0]
        fr.fail(RaceErrorT(), ins, threads[i],
                f"shared memory race: offset {int(fb[i, j] % max(fr.S, 1))} written with different values by "
                f"{fr.who(wt[i, j])} and this thread with no bar.sync between them")
    fl = fb.ravel()
    if fl.size > 1:
        order = np.argsort(fl, kind="stable")
        fs = fl[order]
        dup = fs[1:] == fs[:-1]
        if dup.any():
            vs = newbytes.ravel()[order]
            conflict = dup & (vs[1:] != vs[:-1])
            if conflict.any():
                k = int(np.flatnonzero(conflict)[0])
                i1, i2 = order[k] // nbytes, order[k + 1] // nbytes
                fr.fail(RaceErrorT(), ins, threads[i2],
                        f"shared memory race: offset {int(fs[k] % max(fr.S, 1))} written with different values "
                        f"by {fr.who(threads[i1])} and this thread in one instruction")
    if fr.hop is not None:
        hopper.on_generic_write(fr, ins, threads, fb)
    fr.w_tid[fb] = t
    fr.w_ep[fb] = ep


def RaceErrorT():
    from .machine import RaceError
    return RaceError


def _bytes_of(vals):
    """(len, n) uint array -> (len, n * itemsize) uint8 (little endian)."""
    return np.ascontiguousarray(vals).view(np.uint8).reshape(vals.shape[0], -1)


# --- ld / st -------------------------------------------------------------------------------------------------
def c_ld(fr, ins):
    space = _space(ins)
    ty = _type(ins)
    es = SIZE[ty] if ty != "pred" else 1
    n = _vec(ins)
    dst, src = ins.operands[0], ins.operands[1]
    dsts = _items(dst)
    if len(dsts) != n:
        raise CompileError("vector size and destination count differ")
    puts = [_store_reg(fr, x, ty) for x in dsts]
    u = UINT[es]
    if space == "param":
        if not isinstance(src, Addr) or not isinstance(src.base, Sym):
            raise CompileError("ld.param from a register address is not modelled")
        pname, poff = src.base.name, src.offset

        def ldp(m):
            sel = _sel(m, fr.T)
            buf = fr.callparams.get(pname)
            if buf is not None:  # a call's .param variable, per thread (an inlined function's)
                if poff + es * n > buf.shape[1]:
                    raise SimError(f"PTX line {ins.line}: ld.param past the end of {pname}")
                raw = np.ascontiguousarray(buf[sel][:, poff:poff + es * n]).view(u)
                for k, put in enumerate(puts):
                    put(raw[:, k], sel)
                return
            raw = fr.param_bytes(pname, poff, es * n, ins)
            vals = np.frombuffer(raw, dtype=u)
            for k, put in enumerate(puts):
                put(np.broadcast_to(vals[k], sel.shape), sel)

        return ldp
    af = addr_fn(fr, src)
    T = fr.T

    if space == "shared":
        def lds(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            flat = shared_flat(fr, ins, _take(af(), sel), sel, es * n, "load")
            check_read(fr, ins, sel, flat, es * n)
            idx = (flat // es)[:, None] + np.arange(n)
            raw = fr.smem_views[es][idx]
            for k, put in enumerate(puts):
                put(raw[:, k], sel)

        return lds
    if space == "local":
        def ldl(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            off = local_offsets(fr, ins, _take(af(), sel), sel, es * n)
            idx = off[:, None] + np.arange(es * n)
            raw = fr.local[sel[:, None], idx].reshape(len(sel), n * es).copy().view(u).reshape(len(sel), n)
            for k, put in enumerate(puts):
                put(raw[:, k], sel)

        return ldl
    if space == "generic":
        def ldg_generic(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            addrs = _take(af(), sel)
            raw = generic_load(fr, ins, addrs, sel, es, n)
            for k, put in enumerate(puts):
                put(raw[:, k], sel)

        return ldg_generic
    gspace = "const" if space == "const" else "global"

    def ldg(m):
        sel = _sel(m, T)
        if sel.size == 0:
            return
        addrs = _take(af(), sel)
        raw = fr.mem.load(addrs, es, n, gspace, lambda i, msg: fr.fail(MemoryFault, ins, sel[i], msg))
        for k, put in enumerate(puts):
            put(raw[:, k], sel)

    return ldg


def c_st(fr, ins):
    space = _space(ins)
    ty = _type(ins)
    es = SIZE[ty]
    n = _vec(ins)
    dst, src = ins.operands[0], ins.operands[1]
    srcs = _items(src)
    if len(srcs) != n:
        raise CompileError("vector size and source count differ")
    gets = [_value_bits(fr, x, ty) for x in srcs]
    u = UINT[es]
    T = fr.T
    if space == "param":
        if not isinstance(dst, Addr) or not isinstance(dst.base, Sym):
            raise CompileError("st.param to a register address is not modelled")
        pname, poff = dst.base.name, dst.offset

        def stp(m):
            sel = _sel(m, T)
            buf = fr.callparams.setdefault(pname, np.zeros((T, 64), np.uint8))
            if poff + es * n > buf.shape[1]:  # (a large result array)
                grown = np.zeros((T, max(2 * buf.shape[1], poff + es * n)), np.uint8)
                grown[:, :buf.shape[1]] = buf
                buf = fr.callparams[pname] = grown
            vals = np.stack([g(sel) for g in gets], axis=1).astype(u)
            buf[sel[:, None], poff + np.arange(es * n)] = _bytes_of(vals)

        return stp
    af = addr_fn(fr, dst)

    def values(sel):
        return np.stack([np.asarray(g(sel), dtype=u) for g in gets], axis=1)

    if space == "shared":
        def sts(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            flat = shared_flat(fr, ins, _take(af(), sel), sel, es * n, "store")
            vals = values(sel)
            check_write(fr, ins, sel, flat, es * n, _bytes_of(vals))
            idx = (flat // es)[:, None] + np.arange(n)
            fr.smem_views[es][idx] = vals

        return sts
    if space == "local":
        def stl(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            off = local_offsets(fr, ins, _take(af(), sel), sel, es * n)
            fr.local[sel[:, None], off[:, None] + np.arange(es * n)] = _bytes_of(values(sel))

        return stl
    if space == "generic":
        def stg_generic(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            generic_store(fr, ins, _take(af(), sel), sel, values(sel), es)

        return stg_generic
    if space == "const":
        raise CompileError("st.const is not valid")

    def stg(m):
        sel = _sel(m, T)
        if sel.size == 0:
            return
        fr.mem.store(_take(af(), sel), values(sel), es, "global",
                     lambda i, msg: fr.fail(MemoryFault, ins, sel[i], msg))

    return stg


def local_offsets(fr, ins, addrs, sel, nbytes):
    from .machine import LOCAL_GENERIC
    a = np.asarray(addrs).astype(np.int64)
    a = np.where(a >= LOCAL_GENERIC, a - LOCAL_GENERIC, a)
    bad = (a < 0) | (a + nbytes > fr.L)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fr.fail(MemoryFault, ins, sel[i], f"out-of-bounds local memory access of {nbytes} bytes at local "
                f"address 0x{int(a[i]):x} (the thread has {fr.L} bytes)")
    mis = (a % nbytes) != 0
    if mis.any():
        i = int(np.flatnonzero(mis)[0])
        fr.fail(MemoryFault, ins, sel[i], f"misaligned local memory access of {nbytes} bytes")
    return a


def generic_load(fr, ins, addrs, sel, es, n):
    from .machine import LOCAL_GENERIC, PARAM_GENERIC, SHARED_GENERIC
    a = np.asarray(addrs, dtype=np.uint64)
    out = np.empty((len(sel), n), UINT[es])
    loc = a >= np.uint64(LOCAL_GENERIC)
    sh = (a >= np.uint64(SHARED_GENERIC)) & ~loc
    par = (a >= np.uint64(PARAM_GENERIC)) & (a < np.uint64(SHARED_GENERIC))
    gl = ~loc & ~sh & ~par
    if par.any():  # kernel parameters by their generic address (cvta.param)
        for i in np.flatnonzero(par):
            off = int(a[i]) - PARAM_GENERIC
            if off % es or off + es * n > len(fr.param_area):
                fr.fail(MemoryFault, ins, sel[i], f"misaligned or out-of-bounds read of {es * n} bytes at parameter "
                        f"offset {off} (the parameters take {len(fr.param_area)} bytes)")
            out[i] = np.frombuffer(fr.param_area[off:off + es * n], UINT[es])
    if gl.any():
        out[gl] = fr.mem.load(a[gl], es, n, "global", lambda i, msg: fr.fail(MemoryFault, ins, sel[gl][i], msg))
    if loc.any():
        s2 = sel[loc]
        off = local_offsets(fr, ins, a[loc], s2, es * n)
        out[loc] = fr.local[s2[:, None], off[:, None] + np.arange(es * n)].copy().view(UINT[es]).reshape(-1, n)
    if sh.any():
        s2 = sel[sh]
        flat = shared_flat(fr, ins, a[sh], s2, es * n, "load")
        check_read(fr, ins, s2, flat, es * n)
        out[sh] = fr.smem_views[es][(flat // es)[:, None] + np.arange(n)]
    return out


def generic_store(fr, ins, addrs, sel, vals, es):
    from .machine import LOCAL_GENERIC, SHARED_GENERIC
    a = np.asarray(addrs, dtype=np.uint64)
    n = vals.shape[1]
    loc = a >= np.uint64(LOCAL_GENERIC)
    sh = (a >= np.uint64(SHARED_GENERIC)) & ~loc
    gl = ~loc & ~sh
    if gl.any():
        fr.mem.store(a[gl], vals[gl], es, "global", lambda i, msg: fr.fail(MemoryFault, ins, sel[gl][i], msg))
    if loc.any():
        s2 = sel[loc]
        off = local_offsets(fr, ins, a[loc], s2, es * n)
        fr.local[s2[:, None], off[:, None] + np.arange(es * n)] = _bytes_of(vals[loc])
    if sh.any():
        s2 = sel[sh]
        flat = shared_flat(fr, ins, a[sh], s2, es * n, "store")
        check_write(fr, ins, s2, flat, es * n, _bytes_of(vals[sh]))
        fr.smem_views[es][(flat // es)[:, None] + np.arange(n)] = vals[sh]


# --- atomics -----------------------------------------------------------------------------------------------
_ATOM_OPS = ("add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec")


def c_atom(fr, ins):
    red = ins.opcode == "red"
    space = _space(ins)
    if space not in ("global", "generic", "shared"):
        raise CompileError(f"{ins.opcode}.{space} is not modelled")
    ty = _type(ins)
    opn = next((m for m in ins.mods if m in _ATOM_OPS), None)
    if opn is None:
        raise CompileError(f"no operation in '{ins.text}'")
    es = SIZE[ty]
    u = UINT[es]
    if red:
        d = None
        a_op, rest = ins.operands[0], ins.operands[1:]
    else:
        d, a_op, rest = ins.operands[0], ins.operands[1], ins.operands[2:]
    af = addr_fn(fr, a_op)
    gets = [_value_bits(fr, x, ty) for x in rest]
    put = _store_reg(fr, d, ty) if d is not None and isinstance(d, Reg) else None
    fn = _atom_fn(opn, ty)
    T = fr.T
    if space == "shared":
        return _atom_shared(fr, ins, af, gets, put, fn, es, u)

    def f(m):
        sel = _sel(m, T)
        if sel.size == 0:
            return
        addrs = _take(af(), sel)
        fault = lambda i, msg: fr.fail(MemoryFault, ins, sel[i], msg)  # noqa: E731
        k, off = fr.mem.resolve(addrs, es, "global", fault)
        vals = [np.asarray(g(sel), dtype=u) for g in gets]
        olds = np.empty(len(sel), u)
        flat = k.astype(np.int64) * (1 << 40) + off
        views = [fr.mem.allocs[int(x)].views[es] for x in range(len(fr.mem.allocs))]
        if np.unique(flat).size == flat.size:  # distinct addresses: all at once
            for kk in np.unique(k):
                s = k == kk
                view = views[int(kk)]
                idx = off[s] // es
                old = view[idx].copy()
                olds[s] = old
                view[idx] = fn(old, *[v[s] for v in vals])
        else:  # thread by thread, in thread order
            for i in range(len(sel)):
                view = views[int(k[i])]
                j = int(off[i]) // es
                old = view[j:j + 1].copy()
                olds[i] = old[0]
                view[j:j + 1] = fn(old, *[v[i:i + 1] for v in vals])
        if put is not None:
            put(olds, sel)

    return f


def _atom_shared(fr, ins, af, gets, put, fn, es, u):
    """Shared-memory atomics, applied thread by thread in thread order.  Each
    is checked as a read (a plain write by another thread since the last
    bar.sync is a race) and recorded as one, so that a later plain write by
    another thread without a bar.sync is caught; atomics of several threads
    on one word are not races.  A plain read of an atomic's result without
    a bar.sync between them is not detected."""
    T = fr.T

    def f(m):
        sel = _sel(m, T)
        if sel.size == 0:
            return
        flat = shared_flat(fr, ins, _take(af(), sel), sel, es, ins.opcode)
        check_read(fr, ins, sel, flat, es)
        vals = [np.asarray(g(sel), dtype=u) for g in gets]
        view = fr.smem_views[es]
        olds = np.empty(len(sel), u)
        for i in range(len(sel)):
            j = int(flat[i]) // es
            old = view[j:j + 1].copy()
            olds[i] = old[0]
            view[j:j + 1] = fn(old, *[v[i:i + 1] for v in vals])
        if put is not None:
            put(olds, sel)

    return f


def _atom_fn(opn, ty):
    u = UINT[SIZE[ty]]
    if opn == "exch":
        return lambda old, b: b
    if opn == "cas":
        return lambda old, b, c: np.where(old == b, c, old)
    if opn in ("and", "or", "xor"):
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[opn]
        return lambda old, b: f(old, b)
    if opn == "inc":
        return lambda old, b: np.where(old >= b, u(0), old + u(1))
    if opn == "dec":
        return lambda old, b: np.where((old == 0) | (old > b), b, old - u(1))
    if ty in ("f32", "f64"):
        t = NP[ty]
        if opn == "add":
            return lambda old, b: (old.view(t) + b.view(t)).view(u)
        from .ops import fmin
        return lambda old, b: fmin(old.view(t), b.view(t), False, opn == "max").view(u)
    if ty in ("f16", "bf16", "f16x2", "bf16x2"):
        from .ops import float_binop
        fn = float_binop(opn, ty)
        if ty == "f16":
            return lambda old, b: np.asarray(fn(old.view(np.float16), b.view(np.float16)), np.float16).view(u)
        return lambda old, b: np.asarray(fn(old, b)).astype(u)
    t = NP[ty]
    if opn == "add":
        return lambda old, b: (old.view(t) + b.view(t)).view(u)
    if opn == "min":
        return lambda old, b: np.minimum(old.view(t), b.view(t)).view(u)
    if opn == "max":
        return lambda old, b: np.maximum(old.view(t), b.view(t)).view(u)
    raise CompileError(f"atom.{opn}.{ty} is not modelled")


# --- cp.async ----------------------------------------------------------------------------------------------------
def c_cp(fr, ins):
    if "bulk" in ins.mods:
        return hopper.c_cp_bulk(fr, ins)
    if "async" not in ins.mods:
        raise CompileError(f"'{ins.text}' is not modelled")
    if "commit_group" in ins.mods:
        def commit(m):
            fr.async_groups.append(fr.async_open)
            fr.async_open = []
        return commit
    if "wait_group" in ins.mods or "wait_all" in ins.mods:
        keep = 0 if "wait_all" in ins.mods else int(ins.operands[0].text, 0)

        def wait(m):
            if "wait_all" in ins.mods and fr.async_open:
                fr.async_groups.append(fr.async_open)
                fr.async_open = []
            fr.complete_async(keep)

        return wait
    if "shared" not in " ".join(ins.mods) or "global" not in ins.mods:
        raise CompileError(f"'{ins.text}' is not modelled")
    dst, src, size = ins.operands[0], ins.operands[1], ins.operands[2]
    cp = int(size.text, 0)
    if cp not in (4, 8, 16):
        raise CompileError(f"cp.async of {cp} bytes")
    srcsize = ins.operands[3] if len(ins.operands) > 3 else None
    from .ops import rd
    rs = rd(fr, srcsize, "u32") if srcsize is not None else None
    fd, fs = addr_fn(fr, dst), addr_fn(fr, src)
    T = fr.T

    def f(m):
        sel = _sel(m, T)
        if sel.size == 0:
            return
        flat = shared_flat(fr, ins, _take(fd(), sel), sel, cp, "cp.async")
        n = np.full(len(sel), cp, np.int64) if rs is None else _take(rs(), sel).astype(np.int64)
        if (n > cp).any():
            i = int(np.flatnonzero(n > cp)[0])
            fr.fail(SimError, ins, sel[i], f"cp.async src-size {int(n[i])} is larger than the copy ({cp} bytes)")
        data = np.zeros((len(sel), cp), np.uint8)
        srcs = _take(fs(), sel)
        full = n == cp
        if full.any():
            s = np.flatnonzero(full)
            raw = fr.mem.load(srcs[s], cp, 1, "global", lambda i, msg: fr.fail(MemoryFault, ins, sel[s[i]], msg)) \
                if cp in (4, 8) else fr.mem.load(srcs[s], 4, 4, "global",
                                                  lambda i, msg: fr.fail(MemoryFault, ins, sel[s[i]], msg))
            data[s] = _bytes_of(raw)
        part = (n > 0) & ~full
        for i in np.flatnonzero(part):  # partial copies: byte by byte
            raw = fr.mem.load(srcs[i:i + 1] + np.arange(n[i], dtype=np.uint64), 1, 1, "global",
                              lambda j, msg: fr.fail(MemoryFault, ins, sel[i], msg))
            data[i, :n[i]] = raw[:, 0]
        if fr.opts.races:
            fb = flat[:, None] + np.arange(cp)
            ep = fr.epoch[fr.cta_of[sel]][:, None]
            rt = fr.r_tid[fb]
            war = (fr.r_ep[fb] == ep) & (rt != sel[:, None]) & (rt >= 0)
            if war.any():
                i, j = np.argwhere(war)[0]
                fr.fail(RaceErrorT(), ins, sel[i], f"shared memory race: cp.async into offset "
                        f"{int(fb[i, j] % max(fr.S, 1))} read by {fr.who(rt[i, j])} with no bar.sync between them")
            if fr.pending[fb].any():
                i, j = np.argwhere(fr.pending[fb] > 0)[0]
                fr.fail(RaceErrorT(), ins, sel[i], "cp.async into shared memory that another cp.async is still "
                        "writing")
            if fr.hop is not None:
                hopper.check_async_write(fr, ins, sel, fb, "cp.async")
            fr.pending[fb] += 1
        else:
            fr.pending[flat[:, None] + np.arange(cp)] += 1
        fr.async_open.append((sel.copy(), flat, data))

    return f


# --- bar.sync -------------------------------------------------------------------------------------------------
def c_bar(fr, ins):
    """bar.sync a{, b} (barrier.sync, .aligned): barrier a (0 to 15) and an optional immediate
    thread count b (a multiple of 32).  Without b every live thread of the CTA arrives; with it
    exactly b threads, in whole warps.  The threads of one barrier arrive in one step (at one
    instruction), so the barrier's number plays no further part; in a kernel with Hopper's
    mbarriers, threads that reach a counted barrier before the rest of its count (the
    warpgroups of a warp-specialized program) are held there, parked, and run it again with
    the others.  The epoch of each CTA where it
    completes advances, for the threads that took no part too (docs/ptxsim.md, Checks)."""
    mods = [m for m in ins.mods if m not in ("aligned", "cta")]
    if mods and mods[0] not in ("sync",):
        raise CompileError(f"'{ins.text}' is not modelled")
    ops_ = ins.operands
    if not 1 <= len(ops_) <= 2:
        raise CompileError(f"'{ins.text}': bar.sync takes a barrier and an optional thread count")
    name = f"{ins.opcode}.sync"
    if isinstance(ops_[0], Imm):
        bar = int(ops_[0].text, 0)
        if not 0 <= bar <= 15:
            raise CompileError(f"'{ins.text}': barrier {bar} (the CTA's barriers are 0 to 15)")
        name += f" {bar}"
    count = None
    if len(ops_) == 2:
        if not isinstance(ops_[1], Imm):
            raise CompileError(f"'{ins.text}': a thread count in a register is not modelled")
        count = int(ops_[1].text, 0)
        if count <= 0 or count % 32:
            raise CompileError(f"'{ins.text}': the thread count must be a positive multiple of 32, not {count}")
        name += f", {count}"
    from .machine import BarrierError

    def f(m):
        if m is None:
            if count is not None and count != fr.nthr:
                fr.fail(BarrierError, ins, 0, f"{name} reached by all {fr.nthr} threads of the block, not {count}")
            fr.epoch += 1
            return
        m2 = m.reshape(fr.ncta, fr.nthr)
        here = m2.any(1)
        if count is None:
            l2 = fr.live.reshape(fr.ncta, fr.nthr)
            missing = here & (l2 & ~m2).any(1)
            if missing.any():
                c = int(np.flatnonzero(missing)[0])
                t = int(np.flatnonzero(l2[c] & ~m2[c])[0])
                fr.fail(BarrierError, ins, c * fr.nthr + t,
                        f"{name} not reached by every thread of the block: this thread is elsewhere "
                        "(barrier in divergent code)")
        else:
            w2 = m.reshape(-1, 32)
            part = w2.any(1) & ~w2.all(1)
            if part.any():
                w = int(np.flatnonzero(part)[0])
                lane = int(np.flatnonzero(~w2[w])[0])
                fr.fail(BarrierError, ins, w * 32 + lane,
                        f"{name} reached by part of a warp (lane {lane} is not there): a barrier with a thread "
                        "count takes whole warps")
            n = m2.sum(1)
            if fr.hop is not None:
                # fewer threads than the count, while enough others of the CTA live elsewhere (the
                # warpgroups of a warp-specialized program do not run in step): those here wait
                l2 = fr.live.reshape(fr.ncta, fr.nthr)
                wait = here & (n < count) & (n + (l2 & ~m2).sum(1) >= count)
                if wait.any():
                    fr.bar_hold |= (m2 & wait[:, None]).ravel()
                    here = here & ~wait
            bad = here & (n != count)
            if bad.any():
                c = int(np.flatnonzero(bad)[0])
                t = int(np.flatnonzero(m2[c])[0])
                fr.fail(BarrierError, ins, c * fr.nthr + t,
                        f"{name} reached by {int(n[c])} threads of the block, not {count} (all the threads of a "
                        "barrier with a count must reach it together)")
        fr.epoch[here] += 1

    return f


# --- shfl.sync ------------------------------------------------------------------------------------------------
def c_shfl(fr, ins):
    mode = next(m for m in ins.mods if m in ("up", "down", "bfly", "idx"))
    from .ops import rd, wr
    ops_ = ins.operands
    d = ops_[0]
    dp = None
    if isinstance(d, (Vec, Pair)):
        d, dp = d.items
    ra, rb, rc = rd(fr, ops_[1], "b32"), rd(fr, ops_[2], "u32"), rd(fr, ops_[3], "u32")
    rm = rd(fr, ops_[4], "u32") if len(ops_) > 4 else None
    w = wr(fr, d, "b32")
    wp = wr(fr, dp, "pred") if dp is not None else None
    lane = np.arange(32, dtype=np.int64)

    def f(m):
        if rm is not None:
            mm = np.asarray(rm())
            if mm.ndim == 0 and int(mm) != 0xFFFFFFFF:
                raise SimError("shfl.sync with a partial member mask is not modelled")
        fr.check_full_warps(ins, m, "shfl.sync")
        a2 = np.asarray(ra()).reshape(-1, 32)
        b = np.broadcast_to(np.asarray(rb()), (fr.T,)).reshape(-1, 32).astype(np.int64) & 31
        c = np.broadcast_to(np.asarray(rc()), (fr.T,)).reshape(-1, 32).astype(np.int64)
        cval = c & 31
        segmask = (c >> 8) & 31
        maxl = (lane & segmask) | (cval & ~segmask)
        minl = lane & segmask
        if mode == "up":
            j = lane - b
            pval = j >= maxl
        elif mode == "down":
            j = lane + b
            pval = j <= maxl
        elif mode == "bfly":
            j = lane ^ b
            pval = j <= maxl
        else:
            j = minl | (b & ~segmask)
            pval = j <= maxl
        j = np.where(pval, j, lane)
        out = np.take_along_axis(a2, j, axis=1).ravel()
        w(out, m)
        if wp is not None:
            wp(pval.ravel(), m)

    return f


# --- ldmatrix ---------------------------------------------------------------------------------------------------
def _matrices(ins):
    """(number of 8x8 b16 matrices, .trans) of an ldmatrix or stmatrix."""
    if "m8n8" not in ins.mods or "b16" not in ins.mods:
        raise CompileError(f"'{ins.text}' is not modelled")
    return int(next(m for m in ins.mods if m in ("x1", "x2", "x4"))[1]), "trans" in ins.mods


def c_ldmatrix(fr, ins):
    nmat, trans = _matrices(ins)
    from .ops import wr
    dsts = _items(ins.operands[0])
    if len(dsts) != nmat:
        raise CompileError("ldmatrix destination count")
    ws = [wr(fr, x, "b32") for x in dsts]
    af = addr_fn(fr, ins.operands[1])
    lane = np.arange(32)
    q, r4 = lane // 4, lane % 4

    def f(m):
        fr.check_full_warps(ins, m, "ldmatrix")
        warps = np.arange(fr.nwarp) if m is None else np.flatnonzero(m.reshape(-1, 32).all(1))
        if warps.size == 0:
            return
        rows = 8 * nmat
        threads = (warps[:, None] * 32 + np.arange(rows)).ravel()
        addrs = _take(af(), threads)
        flat = shared_flat(fr, ins, addrs, threads, 16, "ldmatrix row read")
        check_read(fr, ins, threads, flat, 16)
        data = fr.smem_views[2][(flat // 2)[:, None] + np.arange(8)].reshape(len(warps), rows, 8)
        out = np.zeros((fr.nwarp, 32), np.uint32)
        for jm in range(nmat):
            if trans:
                lo = data[:, 8 * jm + 2 * r4, q]
                hi = data[:, 8 * jm + 2 * r4 + 1, q]
            else:
                lo = data[:, 8 * jm + q, 2 * r4]
                hi = data[:, 8 * jm + q, 2 * r4 + 1]
            out[warps] = lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
            ws[jm](out.ravel(), m)

    return f


# --- stmatrix ------------------------------------------------------------------------------------------------
def c_stmatrix(fr, ins):
    """stmatrix (sm_90), the mirror of ldmatrix: lanes 8j..8j+7 give the row addresses of matrix j; without
    .trans lane l's register j holds row l/4, b16 columns 2(l%4) and 2(l%4)+1 of matrix j (low half first); with
    .trans its halves go to rows 2(l%4) and 2(l%4)+1 at column l/4.  The thread that gave a row's address is
    recorded as the writer of its 16 bytes."""
    nmat, trans = _matrices(ins)
    srcs = _items(ins.operands[1])
    if len(srcs) != nmat:
        raise CompileError("stmatrix source count")
    gets = [_value_bits(fr, x, "b32") for x in srcs]
    af = addr_fn(fr, ins.operands[0])
    i, c = np.arange(8)[:, None], np.arange(8)[None, :]
    # (row i, column c) of a matrix comes from this lane's register, this half
    src_lane, half = (4 * c + i // 2, i % 2 + 0 * c) if trans else (4 * i + c // 2, c % 2 + 0 * i)

    def f(m):
        fr.check_full_warps(ins, m, "stmatrix")
        warps = np.arange(fr.nwarp) if m is None else np.flatnonzero(m.reshape(-1, 32).all(1))
        if warps.size == 0:
            return
        rows = 8 * nmat
        threads = (warps[:, None] * 32 + np.arange(rows)).ravel()
        flat = shared_flat(fr, ins, _take(af(), threads), threads, 16, "stmatrix row write")
        every = (warps[:, None] * 32 + np.arange(32)).ravel()
        regs = np.stack([np.asarray(g(every), dtype=np.uint32) for g in gets], axis=1).reshape(len(warps), 32, nmat)
        halves = np.stack([regs & 0xFFFF, regs >> 16], axis=3).astype(np.uint16)  # [warp, lane, matrix, half]
        data = np.zeros((len(warps), rows, 8), np.uint16)
        for jm in range(nmat):
            data[:, 8 * jm:8 * jm + 8, :] = halves[:, src_lane, jm, half]
        vals = data.reshape(-1, 8)
        check_write(fr, ins, threads, flat, 16, _bytes_of(vals))
        fr.smem_views[2][(flat // 2)[:, None] + np.arange(8)] = vals

    return f


# --- mma.sync ----------------------------------------------------------------------------------------------------
def _frag_a(k, i, g, t):
    if k == 16:
        return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)
    if k == 8:
        return g + 8 * (i & 1), t + 4 * (i >> 1)
    return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)


def _frag_b(k, i, g, t):
    if k == 16:
        return 2 * t + (i & 1) + 8 * (i >> 1), g
    if k == 8:
        return t + 4 * i, g
    return 4 * t + (i & 3) + 16 * (i >> 2), g


def _frag_c(i, g, t):
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _index_maps(k, nelem, frag):
    lanes, items, rows, cols = [], [], [], []
    for l in range(32):
        g, t = l >> 2, l & 3
        for i in range(nelem):
            r, c = frag(k, i, g, t) if frag is not _frag_c else frag(i, g, t)
            lanes.append(l)
            items.append(i)
            rows.append(r)
            cols.append(c)
    return tuple(np.array(x) for x in (lanes, items, rows, cols))


_EPR = {"f16": 2, "bf16": 2, "tf32": 1, "s8": 4, "u8": 4, "e4m3": 4, "e5m2": 4, "f32": 1, "s32": 1}


def _decode(ty, words):
    """(nw, 32, nregs) uint32 -> (nw, 32, nregs * epr) values (float64 or int64), low bits first."""
    epr = _EPR[ty]
    if epr == 1:
        if ty == "tf32":
            return (words & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
        if ty == "f32":
            return words.view(np.float32).astype(np.float64)
        return words.view(np.int32).astype(np.int64)
    bits = 32 // epr
    parts = [(words >> np.uint32(bits * e)) & np.uint32((1 << bits) - 1) for e in range(epr)]
    x = np.stack(parts, axis=-1).reshape(words.shape[0], 32, -1)  # element index = reg * epr + e
    if ty == "f16":
        return x.astype(np.uint16).view(np.float16).astype(np.float64)
    if ty == "bf16":
        return fp.bf16_bits_to_f32(x.astype(np.uint16)).astype(np.float64)
    if ty == "s8":
        return x.astype(np.uint8).view(np.int8).astype(np.int64)
    if ty == "u8":
        return x.astype(np.int64)
    if ty == "e4m3":
        return fp.f8_to_f64(x, fp.E4M3)
    if ty == "e5m2":
        return fp.f8_to_f64(x, fp.E5M2)
    raise CompileError(f"mma operand type .{ty}")


def c_mma(fr, ins):
    shape = next(m for m in ins.mods if m.startswith("m16n8k"))
    k = int(shape[len("m16n8k"):])
    if "row" not in ins.mods or "col" not in ins.mods:
        raise CompileError("mma layouts other than .row.col are not modelled")
    ts = [m for m in ins.mods if m in _EPR or m in ("f16", "f32", "s32")]
    if len(ts) != 4:
        raise CompileError(f"mma types of '{ins.text}'")
    dty, aty, bty, cty = ts
    sat = "satfinite" in ins.mods
    d, a, b, c = ins.operands
    from .ops import rd, wr
    ra = [rd(fr, x, "b32") for x in _items(a)]
    rb = [rd(fr, x, "b32") for x in _items(b)]
    rc = [rd(fr, x, "b32") for x in _items(c)]
    wd = [wr(fr, x, "b32") for x in _items(d)]
    na, nb = len(ra) * _EPR[aty], len(rb) * _EPR[bty]
    if na != 16 * k // 32 or nb != 8 * k // 32:
        raise CompileError(f"mma operand counts of '{ins.text}'")
    nc = 4
    amap = _index_maps(k, na, _frag_a)
    bmap = _index_maps(k, nb, _frag_b)
    cmap = _index_maps(k, nc, _frag_c)
    cepr = 2 if cty == "f16" else 1
    depr = 2 if dty == "f16" else 1
    if len(rc) * cepr != 4 or len(wd) * depr != 4:
        raise CompileError(f"mma accumulator counts of '{ins.text}'")
    ints = dty == "s32"

    def f(m):
        fr.check_full_warps(ins, m, "mma.sync")
        warps = np.arange(fr.nwarp) if m is None else np.flatnonzero(m.reshape(-1, 32).all(1))
        nw = warps.size
        if nw == 0:
            return

        def words(readers):
            return np.stack([np.broadcast_to(np.asarray(r()), (fr.T,)).reshape(-1, 32)[warps] for r in readers],
                            axis=-1)

        ea = _decode(aty, words(ra))
        eb = _decode(bty, words(rb))
        cw = words(rc)
        if cty == "f16":
            ec = _decode("f16", cw)
        elif cty == "f32":
            ec = _decode("f32", cw)
        else:
            ec = _decode("s32", cw)
        dt = np.int64 if ints else np.float64
        A = np.zeros((nw, 16, k), dt)
        B = np.zeros((nw, k, 8), dt)
        C = np.zeros((nw, 16, 8), dt)
        A[:, amap[2], amap[3]] = ea[:, amap[0], amap[1]]
        B[:, bmap[2], bmap[3]] = eb[:, bmap[0], bmap[1]]
        C[:, cmap[2], cmap[3]] = ec[:, cmap[0], cmap[1]]
        with np.errstate(**_ERR):
            D = np.matmul(A, B) + C
        ed = D[:, cmap[2], cmap[3]].reshape(nw, 32, 4)
        if ints:
            if sat:
                ed = np.clip(ed, -2 ** 31, 2 ** 31 - 1)
            outw = [ed[:, :, i].astype(np.int64).astype(np.int32).view(np.uint32) for i in range(4)]
        elif dty == "f32":
            outw = [ed[:, :, i].astype(np.float32).view(np.uint32) for i in range(4)]
        else:
            with np.errstate(**_ERR):
                h = ed.astype(np.float16).view(np.uint16).astype(np.uint32)
            outw = [h[:, :, 2 * i] | (h[:, :, 2 * i + 1] << np.uint32(16)) for i in range(2)]
        full = np.zeros((fr.nwarp, 32), np.uint32)
        for i, wfn in enumerate(wd):
            full[warps] = outw[i]
            wfn(full.ravel(), m)

    return f


# --- calls ---------------------------------------------------------------------------------------------------------
def c_call(fr, ins):
    ops_ = ins.operands
    names = [o for o in ops_ if not o.startswith("(")]
    if not names:
        raise CompileError("call without a target")
    target = names[0]
    args = []
    for o in ops_:
        if o.startswith("(") and ops_.index(o) > ops_.index(target):
            args = [x.strip() for x in o.strip("()").split(",") if x.strip()]
    T = fr.T

    def param(name, sel, w):
        buf = fr.callparams.get(name)
        if buf is None:
            raise SimError(f"PTX line {ins.line}: call argument {name} was never stored")
        return buf[sel][:, :w].copy().view(UINT[w]).ravel()

    if target == "vprintf":
        def vprintf(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            fmts = param(args[0], sel, 8)
            bufs = param(args[1], sel, 8)
            out = []
            for i, t in enumerate(sel):
                fmt = fr.mem.read_cstring(int(fmts[i]))
                if fmt is None:
                    fr.fail(MemoryFault, ins, t, f"vprintf format at 0x{int(fmts[i]):x} is not in global memory")
                out.append(format_printf(fmt, lambda off, n, t=t, b=int(bufs[i]): fr.read_generic(ins, t, b + off,
                                                                                                    n)))
            s = "".join(out)
            fr.printed.append(s)
            fr.opts.printf.write(s)
            if hasattr(fr.opts.printf, "flush"):
                fr.opts.printf.flush()

        return vprintf
    if target == "__assertfail":
        def assertfail(m):
            sel = _sel(m, T)
            if sel.size == 0:
                return
            t = int(sel[0])
            msg = fr.mem.read_cstring(int(param(args[0], sel[:1], 8)[0])) or b""
            fil = fr.mem.read_cstring(int(param(args[1], sel[:1], 8)[0])) or b""
            line = int(param(args[2], sel[:1], 4)[0])
            fun = fr.mem.read_cstring(int(param(args[3], sel[:1], 8)[0])) or b""
            from .machine import DeviceAssertion
            c = [int(fr.ctaid[i][t]) for i in range(3)]
            th = [int(fr.tid[i][t]) for i in range(3)]
            raise DeviceAssertion(f"{fil.decode(errors='replace')}:{line}: {fun.decode(errors='replace')}: block: "
                                  f"[{c[0]},{c[1]},{c[2]}], thread: [{th[0]},{th[1]},{th[2]}] Assertion "
                                  f"`{msg.decode(errors='replace')}` failed.")

        return assertfail
    raise CompileError(f"call to '{target}' is not modelled")


def c_vote(fr, ins):
    mode = next((m for m in ins.mods if m in ("all", "any", "uni", "ballot")), None)
    from .ops import rd, wr
    d, a = ins.operands[0], ins.operands[1]
    ra = rd(fr, a, "pred")
    negate = False
    w = wr(fr, d, "b32" if mode == "ballot" else "pred")
    weights = (np.uint32(1) << np.arange(32, dtype=np.uint32))

    def f(m):
        fr.check_full_warps(ins, m, "vote.sync")
        p = np.broadcast_to(np.asarray(ra()), (fr.T,)).reshape(-1, 32) ^ negate
        if mode == "all":
            r = np.repeat(p.all(1), 32)
        elif mode == "any":
            r = np.repeat(p.any(1), 32)
        elif mode == "uni":
            r = np.repeat(p.all(1) | ~p.any(1), 32)
        else:
            r = np.repeat((p * weights).sum(1).astype(np.uint32), 32)
        w(r, m)

    return f


HANDLERS = {"ld": c_ld, "ldu": c_ld, "st": c_st, "atom": c_atom, "red": c_atom, "cp": c_cp, "bar": c_bar,
            "barrier": c_bar, "shfl": c_shfl, "ldmatrix": c_ldmatrix, "stmatrix": c_stmatrix,
            "mma": c_mma, "call": c_call, "vote": c_vote}
