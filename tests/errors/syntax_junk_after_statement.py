import triton
import triton.language as tl


@triton.jit
def junk(x_ptr, y):
    x = y y
