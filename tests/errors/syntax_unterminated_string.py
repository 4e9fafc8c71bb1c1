import triton
import triton.language as tl


@triton.jit
def message(x_ptr):
    tl.device_print('value, tl.load(x_ptr))
