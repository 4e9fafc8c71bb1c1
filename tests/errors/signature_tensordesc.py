# ARGS: ir -k k -s 'tensordesc<fp16[64, 48]>'
import triton
import triton.language as tl


@triton.jit
def k(d):
    pass
