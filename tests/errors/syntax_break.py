import triton
import triton.language as tl


@triton.jit
def find_first(x_ptr, n, BLOCK: tl.constexpr):
    for i in range(0, n, BLOCK):
        x = tl.load(x_ptr + i)
        if x > 0:
            break
