# ARGS: ir -k kernel -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    tl.store(p, 1.0)
