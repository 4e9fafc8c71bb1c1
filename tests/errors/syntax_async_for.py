import triton
import triton.language as tl


@triton.jit
def loops(x_ptr, n):
    async for i in range(n):
        pass
