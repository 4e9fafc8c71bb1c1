import triton
import triton.language as tl


@triton.jit
def variadic(x_ptr, *ptrs):
    pass
