# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def bad_combine(a, b):
    return a + b, a


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16))
    tl.store(p, tl.reduce(x, 0, bad_combine))
