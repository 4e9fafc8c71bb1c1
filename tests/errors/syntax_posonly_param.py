import triton
import triton.language as tl


@triton.jit
def posonly(x_ptr, /, n):
    pass
