"""Launch errors: each one a Python exception that names the argument and says what was expected."""
import importlib

import numpy as np
import pytest

import nereid as triton
import nereid.language as tl

jitmod = importlib.import_module("nereid.runtime.jit")
drivermod = importlib.import_module("nereid.runtime.driver")


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


class CudaArray:
    """A device array seen through __cuda_array_interface__ (as numba or cupy expose it)."""

    def __init__(self, n, device=0, dtype=np.float32, ptr=0x7f0000000000):
        self.dtype = np.dtype(dtype)
        self.shape = (n,)
        self.device = type("Dev", (), {"id": device})()
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": self.dtype.str, "data": (ptr, False),
                                         "version": 3, "strides": None}


def arrays(n=10):
    return [np.zeros(n, np.float32) for _ in range(3)]


def test_too_few_arguments():
    x, y, o = arrays()
    with pytest.raises(TypeError, match=r"add\(x_ptr, y_ptr, out_ptr, n, BLOCK\): missing a required argument: 'n'"):
        add[(1,)](x, y, o, BLOCK=16)


def test_too_many_arguments():
    x, y, o = arrays()
    with pytest.raises(TypeError, match=r"add\(x_ptr, y_ptr, out_ptr, n, BLOCK\): too many positional arguments"):
        add[(1,)](x, y, o, 10, 16, 3)


def test_unknown_keyword():
    x, y, o = arrays()
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        add[(1,)](x, y, o, 10, BLOCK=16, bogus=1)


def test_wrong_type_names_the_argument():
    x, y, o = arrays()
    with pytest.raises(TypeError, match="argument 'y_ptr' must be a tensor or array, an int, a float, a bool or "
                                        "None, got list"):
        add[(1,)](x, [1, 2], o, 10, BLOCK=16)
    with pytest.raises(TypeError, match="argument 'y_ptr' is an array of dtype complex64, which kernels do not take"):
        add[(1,)](x, np.zeros(4, np.complex64), o, 10, BLOCK=16)
    with pytest.raises(TypeError, match="constexpr argument 'BLOCK' must be an int, float, bool, str, None or a "
                                        "dtype, not list"):
        add[(1,)](x, y, o, 10, BLOCK=[16])
    with pytest.raises(TypeError, match="argument 'n' = 1180591620717411303424 does not fit in 64 bits"):
        add[(1,)](x, y, o, 2**70, BLOCK=16)
    with pytest.raises(TypeError, match="argument 'x_ptr' has negative strides"):
        add[(1,)](x[::-1], y, o, 10, BLOCK=16)


def test_tensors_on_different_devices():
    with pytest.raises(ValueError, match=r"arguments are on different CUDA devices: 'x_ptr' on cuda:0, "
                                         r"'y_ptr' on cuda:1; expected every tensor on one device"):
        add[(1,)](CudaArray(10, 0), CudaArray(10, 1), CudaArray(10, 0), 10, BLOCK=16)


def test_cpu_array_in_a_gpu_launch():
    with pytest.raises(ValueError, match=r"argument 'out_ptr' is in host memory but the other tensors are on CUDA "
                                         r"device 0; expected a CUDA tensor"):
        add[(1,)](CudaArray(10), CudaArray(10), np.zeros(10, np.float32), 10, BLOCK=16)


@pytest.mark.parametrize("grid,exc,msg", [
    ((0,), ValueError, "grid dimension 0 is 0; expected a positive number of programs"),
    ((2, -1), ValueError, "grid dimension 1 is -1; expected a positive number of programs"),
    (lambda meta: (0,), ValueError, "grid dimension 0 is 0"),
    ((1, 2, 3, 4), ValueError, "the grid must have 1 to 3 dimensions, got 4"),
    (("a",), TypeError, "grid dimension 0 must be an int, got str"),
    (None, TypeError, "the grid must be a tuple of 1 to 3 positive ints or a callable returning one, got NoneType"),
])
def test_bad_grid(grid, exc, msg):
    x, y, o = arrays()
    o[:] = 7
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        add[grid](x, y, o, 10, BLOCK=16)
    assert (o == 7).all()  # nothing ran


def test_bad_launch_options():
    x, y, o = arrays()
    with pytest.raises(ValueError, match="num_warps must be 1, 2, 4, 8 or 16, got 3"):
        add[(1,)](x, y, o, 10, BLOCK=16, num_warps=3)
    with pytest.raises(TypeError, match="num_stages must be an int, got str"):
        add[(1,)](x, y, o, 10, BLOCK=16, num_stages="2")


def test_compile_error_shows_the_line_with_a_caret():
    x, y, o = arrays()
    with pytest.raises(triton.CompilationError) as e:
        add[(1,)](x, y, o, 10, BLOCK=15)
    text = str(e.value)
    assert "arange's range must be a power of 2, got 15" in text
    assert "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)" in text and "^" in text
    assert e.value.filename.endswith("test_api_errors.py") and e.value.lineno == 16


class FakeGpuKernel:
    """What _check_resources reads of a compiled kernel."""

    def __init__(self, shared=0, static_shared=0, n_regs=32, threads=128, max_threads=1024):
        self.shared = shared
        self.info = {"n_regs": n_regs, "n_spills": 0, "static_shared": static_shared, "shared": shared,
                     "max_threads": max_threads, "threads": threads, "max_shared_optin": 232448}

    def gpu_info(self, device):
        return dict(self.info)


@pytest.fixture
def h100(monkeypatch):
    props = dict(drivermod.INTERPRETER_PROPERTIES, max_shared_mem=232448, max_num_regs=65536)
    monkeypatch.setattr(drivermod, "properties", lambda device: props)


def test_shared_memory_over_the_device_limit(h100):
    with pytest.raises(triton.OutOfResources, match=r"kernel 'add' needs 300000 bytes of shared memory, over the "
                                                    r"device's limit of 232448") as e:
        add._check_resources(FakeGpuKernel(shared=300000), 0)
    assert (e.value.required, e.value.limit, e.value.name) == (300000, 232448, "shared memory")
    with pytest.raises(triton.OutOfResources, match="needs 232449 bytes of shared memory"):
        add._check_resources(FakeGpuKernel(shared=232000, static_shared=449), 0)


def test_registers_over_the_device_limit(h100):
    with pytest.raises(triton.OutOfResources, match=r"kernel 'add' needs 261120 registers, over the device's limit "
                                                    r"of 65536; use fewer warps"):
        add._check_resources(FakeGpuKernel(n_regs=255, threads=1024, max_threads=256), 0)
    add._check_resources(FakeGpuKernel(n_regs=64, threads=1024, max_threads=1024), 0)  # fits


def test_gpu_launch_without_a_driver_says_so():
    if drivermod.properties(0) is not None:
        pytest.skip("a GPU is present")
    with pytest.raises(triton.LaunchError, match="driver|device"):
        add[(1,)](CudaArray(10), CudaArray(10), CudaArray(10), 10, BLOCK=16)


def test_host_call_of_a_kernel():
    with pytest.raises(RuntimeError, match="cannot be called from host code; launch it with add\\[grid\\]"):
        add(1, 2)
