import triton
import triton.language as tl


@triton.jit
def octal(x_ptr):
    tl.store(x_ptr, 0755)
