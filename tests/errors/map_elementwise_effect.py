# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def f(x, p):
    tl.store(p, x)
    return x


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16))
    tl.store(p + tl.arange(0, 16), tl.map_elementwise(f, x, p))
