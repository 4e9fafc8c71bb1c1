# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def mul_fn(a, b):
    return a * b


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16))
    tl.store(p, tl.reduce(x, 0, mul_fn))
