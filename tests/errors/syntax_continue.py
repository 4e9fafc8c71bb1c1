import triton
import triton.language as tl


@triton.jit
def skip_negative(x_ptr, n):
    for i in range(n):
        x = tl.load(x_ptr + i)
        if x < 0:
            continue
        tl.store(x_ptr + i, x * 2)
