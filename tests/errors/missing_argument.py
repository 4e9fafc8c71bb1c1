# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.load(p)
    tl.store(p, tl.where(x > 0, x))
