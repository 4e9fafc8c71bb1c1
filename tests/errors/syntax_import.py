import triton
import triton.language as tl


@triton.jit
def uses_math(x_ptr):
    import math
    tl.store(x_ptr, math.pi)
