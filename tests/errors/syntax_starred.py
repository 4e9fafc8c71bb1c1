import triton
import triton.language as tl


@triton.jit
def unpack(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    first, *rest = offs, offs, offs
