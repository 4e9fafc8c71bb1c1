# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    for i in range(n):
        if tl.load(p + i) < 0:
            return
        tl.store(p + i, 1.0)
