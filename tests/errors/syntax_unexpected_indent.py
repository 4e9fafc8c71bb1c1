import triton
import triton.language as tl


@triton.jit
def indented(x_ptr, n):
    x = tl.load(x_ptr)
        tl.store(x_ptr, x + n)
