import triton
import triton.language as tl


@triton.jit
def masked(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0, mask=offs < BLOCK)
