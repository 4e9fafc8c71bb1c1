import triton
import triton.language as tl


@triton.jit
def crlf(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, x ? 1)
