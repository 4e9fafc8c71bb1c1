import triton
import triton.language as tl


@triton.jit
def spin(x_ptr):
    while tl.load(x_ptr) == 0:
        pass
    else:
        tl.store(x_ptr, 1)
