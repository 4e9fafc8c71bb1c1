# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    n = 64
    offs = tl.arange(0, n)
    tl.store(p + offs, 0.0)
