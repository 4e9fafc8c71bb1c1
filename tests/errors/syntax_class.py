import triton
import triton.language as tl


@triton.jit
def with_class(x_ptr):
    class Pair:
        pass
