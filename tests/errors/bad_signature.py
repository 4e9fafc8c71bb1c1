# ARGS: ir -k k -s '*fp32:16, i32:8'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    tl.store(p + n, 1.0)
