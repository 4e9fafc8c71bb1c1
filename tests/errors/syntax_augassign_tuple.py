import triton
import triton.language as tl


@triton.jit
def aug_tuple(x_ptr, y):
    a, b = y, y
    a, b += 1
