import triton
import triton.language as tl


@triton.jit
def checked(x_ptr, n):
    if n < 0:
        raise ValueError("n must be non-negative")
