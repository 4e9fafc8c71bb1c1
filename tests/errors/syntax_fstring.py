import triton
import triton.language as tl


@triton.jit
def prints(x_ptr):
    x = tl.load(x_ptr)
    tl.device_print(f"x = {x}")
