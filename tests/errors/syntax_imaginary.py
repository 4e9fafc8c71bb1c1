import triton
import triton.language as tl


@triton.jit
def complex_scale(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * 2j)
