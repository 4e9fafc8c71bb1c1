# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    a = tl.zeros((64, 32), dtype=tl.float32)
    b = tl.arange(0, 16)
    tl.store(p, tl.sum(a + b))
