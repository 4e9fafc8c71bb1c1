"""nereid.runtime.driver: the device the kernels run on, as Triton's
``triton.runtime.driver`` presents it.

``driver.active`` is the CUDA driver when an NVIDIA driver and a device are
present (and NEREID_INTERPRET is not set), else the interpreter driver, which
answers the same queries for the CPU interpreter:

    driver.active.get_current_device()          -> 0
    driver.active.get_current_stream()          -> raw CUDA stream (0 on the interpreter)
    driver.active.get_current_target()          -> GPUTarget(backend="cuda", arch=90, warp_size=32)
    driver.active.get_active_torch_device()     -> torch.device("cuda", 0) (or "cpu" on the interpreter)
    driver.active.utils.get_device_properties(0) -> {"multiprocessor_count": 132, "max_shared_mem": ..., ...}

The interpreter driver reports a target of backend "cuda", arch 80, so that
programs written for NVIDIA GPUs take their CUDA paths, and the device
properties in INTERPRETER_PROPERTIES (an sm_80-like device with one
multiprocessor per CPU core).
"""
import os
import sys
import threading
from collections import namedtuple

from .. import _C

GPUTarget = namedtuple("GPUTarget", ["backend", "arch", "warp_size"])

_props_lock = threading.Lock()
_props = {}

# What the interpreter driver reports (the limits of an sm_80 device).
INTERPRETER_PROPERTIES = {
    "name": "Nereid interpreter (CPU)", "major": 8, "minor": 0, "multiprocessor_count": os.cpu_count() or 1,
    "warpSize": 32, "warp_size": 32, "max_threads_per_block": 1024, "max_shared_mem": 166912,
    "max_shared_mem_default": 49152, "max_shared_mem_per_sm": 167936, "max_num_regs": 65536,
    "max_regs_per_sm": 65536, "max_threads_per_sm": 2048, "l2_cache_size": 40 * 1024 * 1024,
    "sm_clock_rate": 1410000, "mem_clock_rate": 1215000, "mem_bus_width": 5120, "driver_version": 0,
    "total_memory": 0, "reserved_shared_mem": 1024, "max_grid": (2**31 - 1, 65535, 65535),
    "max_block": (1024, 1024, 64),
}


def properties(device):
    """The driver's properties of CUDA device `device` (a dict), or None without a driver."""
    with _props_lock:
        if device in _props:
            return _props[device]
    try:
        p = _C.device_properties(device)
    except RuntimeError:
        p = None
    if p is not None:
        p["warpSize"] = p["warp_size"]
    with _props_lock:
        _props[device] = p
    return p


def capability(device):
    """(major, minor) of CUDA device `device`; raises RuntimeError without a driver."""
    p = properties(device)
    if p is None:
        raise RuntimeError(f"no CUDA device {device} (no NVIDIA driver, or no such device)")
    return p["major"], p["minor"]


def _torch():
    return sys.modules.get("torch")


class _CudaUtils:
    def get_device_properties(self, device=0):
        p = properties(int(device))
        if p is None:
            raise RuntimeError(f"no CUDA device {device}: no NVIDIA driver or no such device")
        return dict(p)


class _InterpreterUtils:
    def get_device_properties(self, device=0):
        return dict(INTERPRETER_PROPERTIES)


class CudaDriver:
    """Kernels run on NVIDIA GPUs through the CUDA driver."""

    backend = "cuda"

    def __init__(self):
        self.utils = _CudaUtils()

    @staticmethod
    def is_active():
        return properties(0) is not None

    def get_current_device(self):
        t = _torch()
        if t is not None and t.cuda.is_available():
            return t.cuda.current_device()
        return 0

    def set_current_device(self, device):
        t = _torch()
        if t is not None:
            t.cuda.set_device(device)

    def get_current_stream(self, device=None):
        t = _torch()
        if t is None:
            return 0
        if device is None:
            device = self.get_current_device()
        return t.cuda.current_stream(device).cuda_stream

    def get_current_target(self):
        major, minor = capability(self.get_current_device())
        return GPUTarget("cuda", major * 10 + minor, 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        import torch
        return torch.cuda

    def get_benchmarker(self):
        from ..testing import do_bench
        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()

    def __repr__(self):
        return "CudaDriver()"


class InterpreterDriver(CudaDriver):
    """Kernels run on Nereid's reference interpreter, on the CPU."""

    backend = "interpreter"

    def __init__(self):
        super().__init__()
        self.utils = _InterpreterUtils()

    @staticmethod
    def is_active():
        return True

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 80, 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def get_device_interface(self):
        import torch
        return torch.cuda

    def get_empty_cache_for_benchmark(self):
        import numpy as np
        return _HostFlush(np.empty(8 * 1024 * 1024 // 4, dtype=np.int32))

    def __repr__(self):
        return "InterpreterDriver()"


class _HostFlush:
    """A buffer whose zero_() evicts the host's caches (what the L2 flush is on the GPU)."""

    def __init__(self, a):
        self.a = a

    def zero_(self):
        self.a.fill(0)


class _DriverConfig:
    def __init__(self):
        self._default = None
        self._active = None

    @property
    def default(self):
        if self._default is None:
            interp = os.environ.get("NEREID_INTERPRET", "") not in ("", "0")
            self._default = InterpreterDriver() if interp or not CudaDriver.is_active() else CudaDriver()
        return self._default

    @property
    def active(self):
        return self._active if self._active is not None else self.default

    def set_active(self, driver):
        self._active = driver

    def reset_active(self):
        self._active = None
        self._default = None


driver = _DriverConfig()
