import triton
import triton.language as tl


@triton.jit
def args(x_ptr, y_ptr):
    tl.store(x_ptr tl.load(y_ptr))
