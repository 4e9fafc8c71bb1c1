import triton
import triton.language as tl


@triton.jit
def table(x_ptr):
    scales = {i: i * i for i in range(4)}
