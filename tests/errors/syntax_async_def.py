import triton
import triton.language as tl


@triton.jit
async def coroutine_kernel(x_ptr):
    pass
