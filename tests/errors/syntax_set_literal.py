import triton
import triton.language as tl


@triton.jit
def choices(x_ptr):
    allowed = {1, 2, 4}
