# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.zeros((16,), dtype=tl.float32)
    x[0] = 1.0
    tl.store(p + tl.arange(0, 16), x)
