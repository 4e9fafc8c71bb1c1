# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    offs = tl.arange(0, 16)
    x = tl.load(p + offs, maks=offs < n)
    tl.store(p + offs, x)
