import triton
import triton.language as tl


@triton.jit
def dup(x_ptr, n, n):
    pass
