import triton
import triton.language as tl


@triton.jit
def waits(x_ptr):
    x = await tl.load(x_ptr)
