import triton
import triton.language as tl


@triton.jit
def search(x_ptr, n):
    for i in range(n):
        tl.store(x_ptr + i, 0)
    else:
        tl.store(x_ptr, 1)
