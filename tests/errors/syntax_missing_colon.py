import triton
import triton.language as tl


@triton.jit
def clamp(x_ptr, n):
    x = tl.load(x_ptr)
    if x > n
        x = n
    tl.store(x_ptr, x)
