import triton
import triton.language as tl


@triton.jit
def apply(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    f = lambda v: v * 2
    tl.store(x_ptr + offs, f(tl.load(x_ptr + offs)))
