import triton
import triton.language as tl


@triton.jit
def walrus(x_ptr, n):
    if (half := n // 2) > 0:
        tl.store(x_ptr, half)
