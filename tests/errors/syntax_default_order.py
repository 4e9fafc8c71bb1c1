import triton
import triton.language as tl


@triton.jit
def defaults(x_ptr, n=16, BLOCK):
    pass
