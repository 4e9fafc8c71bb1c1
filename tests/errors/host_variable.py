# ARGS: ir -k k -s '*fp32'
import numpy as np
import triton
import triton.language as tl

SCALE = np.float32(2.0)


@triton.jit
def k(p):
    x = tl.load(p)
    tl.store(p, x * SCALE)
