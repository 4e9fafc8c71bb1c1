"""The global memory of the simulator: registered allocations in a flat,
bounds-checked address space.

Allocation k lives in its own 2^36-byte page: its first byte is at
(k + 1) << 36 plus a lead offset that reproduces the low 12 bits of the
host address it mirrors (a kernel specialized for 16-byte aligned pointers
gets 16-byte aligned addresses, an array view that starts at an odd
element keeps its misalignment).  Addresses outside every allocation, in
the gaps between them, or not aligned to the access size are faults; the
fault names the instruction, the thread and the address.

An allocation's bytes are a numpy uint8 array; typed views of it serve
aligned accesses of 1, 2, 4 and 8 bytes.
"""
import ctypes

import numpy as np

PAGE_SHIFT = 36
_UINTS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


class SimError(Exception):
    """An error a kernel made, found by the simulator."""


class MemoryFault(SimError):
    pass


class Allocation:
    """size bytes at address base.  data[lead:lead + size] are the bytes;
    space is 'global' or 'const'."""

    def __init__(self, index, size, lead, name, space="global"):
        self.index = index
        self.size = int(size)
        self.lead = int(lead)
        self.name = name
        self.space = space
        padded = (self.lead + self.size + 15) & ~15
        self.data = np.zeros(padded + 16, dtype=np.uint8)
        self.views = {w: self.data[:len(self.data) // w * w].view(t) for w, t in _UINTS.items()}
        self.page = (index + 1) << PAGE_SHIFT
        self.base = self.page + self.lead

    @property
    def bytes(self):
        """The allocation's bytes (a writable view)."""
        return self.data[self.lead:self.lead + self.size]

    def ndarray(self, dtype, shape, strides=None, offset=0):
        """A numpy array over the allocation's bytes (strides in bytes)."""
        return np.ndarray(shape, dtype=dtype, buffer=self.data, offset=self.lead + offset, strides=strides)

    def __repr__(self):
        return f"<allocation '{self.name}' [0x{self.base:x}, 0x{self.base + self.size:x})>"


class GlobalMemory:
    """Registered allocations.  alloc() makes one; from_array() copies an
    array's bytes (its whole extent, strides kept) into a new one."""

    def __init__(self):
        self.allocs = []

    def alloc(self, nbytes, name=None, align_like=0, space="global"):
        k = len(self.allocs)
        a = Allocation(k, nbytes, int(align_like) & 0xFFF, name or f"alloc{k}", space)
        self.allocs.append(a)
        return a

    def from_array(self, arr, name=None):
        """An allocation holding arr's bytes from its first to its last element
        (as the kernel sees them through its data pointer)."""
        arr = np.asarray(arr)
        addr = arr.__array_interface__["data"][0]
        nbytes = _extent(arr)
        a = self.alloc(nbytes, name, addr)
        if nbytes:
            copy_sparse(a.bytes, host_bytes(addr, nbytes))
        return a

    def describe(self, addr):
        """Where an address is, for an error message."""
        k = (addr >> PAGE_SHIFT) - 1
        if 0 <= k < len(self.allocs):
            a = self.allocs[k]
            if addr < a.base:
                return f"{a.base - addr} bytes before allocation '{a.name}' [0x{a.base:x}, +{a.size})"
            if addr >= a.base + a.size:
                return f"{addr - a.base - a.size} bytes past the end of allocation '{a.name}' " \
                       f"[0x{a.base:x}, +{a.size})"
            return f"offset {addr - a.base} of allocation '{a.name}' [0x{a.base:x}, +{a.size})"
        return "in no allocation"

    def resolve(self, addrs, nbytes, space, fault):
        """Per address: (allocation index array, byte offset in data) after
        checking bounds, alignment and state space; fault(i, msg) raises for
        the i-th address."""
        addrs = np.asarray(addrs, dtype=np.uint64)
        if addrs.size == 0:
            return np.zeros(0, np.intp), np.zeros(0, np.int64)
        k = (addrs >> np.uint64(PAGE_SHIFT)).astype(np.int64) - 1
        off = (addrs & np.uint64((1 << PAGE_SHIFT) - 1)).astype(np.int64)
        k0 = int(k[0])
        if (k == k0).all() and 0 <= k0 < len(self.allocs):
            a = self.allocs[k0]
            lo, hi = a.lead, a.lead + a.size
            bad = (off < lo) | (off + nbytes > hi)
        else:
            n = len(self.allocs)
            valid = (k >= 0) & (k < n)
            kk = np.where(valid, k, 0)
            leads = np.array([a.lead for a in self.allocs] or [0], dtype=np.int64)
            sizes = np.array([a.size for a in self.allocs] or [0], dtype=np.int64)
            bad = ~valid | (off < leads[kk]) | (off + nbytes > leads[kk] + sizes[kk])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            ad = int(addrs[i])
            fault(i, f"out-of-bounds access of {nbytes} bytes at address 0x{ad:x} ({self.describe(ad)})")
        mis = (off & (nbytes - 1)) != 0 if nbytes & (nbytes - 1) == 0 else np.zeros(off.shape, bool)
        if mis.any():
            i = int(np.flatnonzero(mis)[0])
            fault(i, f"misaligned access of {nbytes} bytes at address 0x{int(addrs[i]):x}")
        spaces = {self.allocs[int(x)].space for x in np.unique(k)}
        if spaces != {space}:
            i = int(np.flatnonzero(np.array([self.allocs[int(x)].space != space for x in k]))[0])
            a = self.allocs[int(k[i])]
            fault(i, f"{space} access to address 0x{int(addrs[i]):x} of {a.space} variable '{a.name}'")
        return k, off

    def load(self, addrs, w, n, space, fault):
        """n consecutive w-byte elements at each address: array (len, n) of uint{8w}."""
        k, off = self.resolve(addrs, w * n, space, fault)
        out = np.empty((len(k), n), dtype=_UINTS[w])
        if len(k) == 0:
            return out
        idx = (off // w)[:, None] + np.arange(n)
        k0 = int(k[0])
        if (k == k0).all():
            out[:] = self.allocs[k0].views[w][idx]
        else:
            for kk in np.unique(k):
                sel = k == kk
                out[sel] = self.allocs[int(kk)].views[w][idx[sel]]
        return out

    def store(self, addrs, vals, w, space, fault):
        """vals (len, n) of uint{8w} at each address; later threads win on overlap."""
        n = vals.shape[1]
        k, off = self.resolve(addrs, w * n, space, fault)
        if len(k) == 0:
            return
        idx = (off // w)[:, None] + np.arange(n)
        k0 = int(k[0])
        if (k == k0).all():
            self.allocs[k0].views[w][idx] = vals
        else:
            for kk in np.unique(k):
                sel = k == kk
                self.allocs[int(kk)].views[w][idx[sel]] = vals[sel]

    def read_bytes(self, addr, n):
        k = (addr >> PAGE_SHIFT) - 1
        if not 0 <= k < len(self.allocs):
            return None
        a = self.allocs[k]
        off = addr - a.page
        if off < a.lead or off + n > a.lead + a.size:
            return None
        return bytes(a.data[off:off + n])

    def read_cstring(self, addr, limit=1 << 16):
        k = (addr >> PAGE_SHIFT) - 1
        if not 0 <= k < len(self.allocs):
            return None
        a = self.allocs[k]
        off = addr - a.page
        if off < a.lead or off >= a.lead + a.size:
            return None
        raw = bytes(a.data[off:a.lead + a.size][:limit])
        z = raw.find(b"\0")
        return raw if z < 0 else raw[:z]


def _extent(arr):
    if arr.size == 0:
        return 0
    hi = arr.itemsize
    for n, st in zip(arr.shape, arr.strides):
        if st < 0:
            raise ValueError("arrays with negative strides are not supported")
        hi += (n - 1) * st
    return hi


def host_bytes(addr, nbytes):
    """A writable uint8 view of nbytes of host memory at addr (an array's extent)."""
    if nbytes == 0:
        return np.zeros(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(addr))


def copy_sparse(dst, src, chunk=1 << 20):
    """dst[:] = src for a freshly zeroed dst, touching only the chunks of src that are
    not zero: huge, mostly untouched arrays stay mostly unallocated."""
    n = len(src)
    if n <= 64 * chunk:
        dst[:] = src
        return
    for i in range(0, n, chunk):
        part = src[i:i + chunk]
        if part.any():
            dst[i:i + chunk] = part
