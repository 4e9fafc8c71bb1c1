# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.load(p)
    x.dtype = tl.float16
    tl.store(p, x)
