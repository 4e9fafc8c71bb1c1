import triton
import triton.language as tl


@triton.jit
def gen(x_ptr, n):
    for i in range(n):
        yield tl.load(x_ptr + i)
