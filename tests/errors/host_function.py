# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


def relu(x):
    return max(x, 0)


@triton.jit
def k(p):
    x = tl.load(p)
    tl.store(p, relu(x))
