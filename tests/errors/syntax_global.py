import triton
import triton.language as tl


@triton.jit
def counter(x_ptr):
    global COUNT
    tl.store(x_ptr, COUNT)
