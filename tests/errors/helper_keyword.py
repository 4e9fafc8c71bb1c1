# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def scale(x, factor):
    return x * factor


@triton.jit
def k(p):
    x = tl.load(p)
    tl.store(p, scale(x, fator=2.0))
