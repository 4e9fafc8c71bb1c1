# ARGS: ir -k k -s '*i32'
import triton
import triton.language as tl


@triton.jit
def steps(v):
    n = 0
    while v > 1:
        v = v // 2
        n += 1
    return n


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16))
    tl.store(p + tl.arange(0, 16), tl.map_elementwise(steps, x))
