import triton
import triton.language as tl


@triton.jit
def kwonly(x_ptr, *, BLOCK: tl.constexpr):
    pass
