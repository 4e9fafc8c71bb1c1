import triton
import triton.language as tl


@triton.jit
def empty_if(x_ptr, n):
    if n > 0:
    tl.store(x_ptr, n)
