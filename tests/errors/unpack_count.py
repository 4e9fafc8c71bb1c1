# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    a, b = tl.load(p), tl.load(p + 1), tl.load(p + 2)
    tl.store(p, a + b)
