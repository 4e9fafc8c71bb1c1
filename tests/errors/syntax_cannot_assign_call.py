import triton
import triton.language as tl


@triton.jit
def assign_call(x_ptr):
    tl.load(x_ptr) = 1
