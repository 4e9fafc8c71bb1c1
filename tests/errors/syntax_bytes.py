import triton
import triton.language as tl


@triton.jit
def raw_bytes(x_ptr):
    tag = b"abc"
