import triton
import triton.language as tl


@triton.jit
def big_constant(x_ptr):
    tl.store(x_ptr, 36893488147419103232)
