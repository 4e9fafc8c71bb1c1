import triton
import triton.language as tl


@triton.jit
def ctx(x_ptr):
    with tl.static_range(4) as r:
        pass
