import triton
import triton.language as tl


@triton.jit
def stray_else(x_ptr):
    x = tl.load(x_ptr)
    else:
        x = 0
