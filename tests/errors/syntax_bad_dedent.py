import triton
import triton.language as tl


@triton.jit
def dedent(x_ptr, n):
    if n > 0:
        x = tl.load(x_ptr)
      tl.store(x_ptr, x)
