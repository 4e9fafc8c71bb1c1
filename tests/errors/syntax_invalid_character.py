import triton
import triton.language as tl


@triton.jit
def dollar(x_ptr):
    x = $x_ptr
