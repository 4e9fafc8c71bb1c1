# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    tl.store(n, 1.0)
