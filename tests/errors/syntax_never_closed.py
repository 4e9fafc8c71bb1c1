import triton
import triton.language as tl


@triton.jit
def unclosed(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK
    tl.store(x_ptr + offs, 0, mask=offs < n)
