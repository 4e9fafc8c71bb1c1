import triton
import triton.language as tl


@triton.jit
def extra_paren(x_ptr):
    x = tl.load(x_ptr))
