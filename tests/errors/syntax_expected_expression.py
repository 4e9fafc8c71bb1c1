import triton
import triton.language as tl


@triton.jit
def dangling(x_ptr, y):
    x = tl.load(x_ptr) *
    tl.store(x_ptr, x)
