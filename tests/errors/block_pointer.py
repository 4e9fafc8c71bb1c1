# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16), boundary_check=(0,))
    tl.store(p + tl.arange(0, 16), x)
