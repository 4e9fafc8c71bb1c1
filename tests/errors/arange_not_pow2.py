# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    offs = tl.arange(0, 100)
    tl.store(p + offs, 0.0)
