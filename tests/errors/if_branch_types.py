# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.load(p)
    if x > 0:
        y = x.to(tl.float16)
    else:
        y = x
    tl.store(p, y)
