import triton
import triton.language as tl


@triton.jit
def loop(x_ptr, n):
    for i range(n):
        tl.store(x_ptr + i, i)
