import triton
import triton.language as tl


@triton.jit
def in_range(x_ptr, lo, hi, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    inside = lo <= x < hi
    tl.store(x_ptr + offs, tl.where(inside, x, 0))
