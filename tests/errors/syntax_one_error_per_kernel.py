import triton
import triton.language as tl


@triton.jit
def cascade(x_ptr):
    x = tl.load(x_ptr) +
    y = = 2
    break
