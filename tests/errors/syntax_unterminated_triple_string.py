import triton
import triton.language as tl


@triton.jit
def docstring(x_ptr):
    """Documentation that never ends.
    tl.store(x_ptr, 0)
