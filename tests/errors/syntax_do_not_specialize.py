import triton
import triton.language as tl


@triton.jit(do_not_specialize=["m"])
def k(x_ptr, n):
    pass
