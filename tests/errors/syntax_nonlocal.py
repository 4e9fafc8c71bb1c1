import triton
import triton.language as tl


@triton.jit
def counter(x_ptr):
    nonlocal total
