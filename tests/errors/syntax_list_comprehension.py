import triton
import triton.language as tl


@triton.jit
def comp(x_ptr, BLOCK: tl.constexpr):
    ptrs = [x_ptr + i for i in range(4)]
