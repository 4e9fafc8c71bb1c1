# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    acc = tl.zeros((n, 16), dtype=tl.float32)
    tl.store(p, tl.sum(acc))
