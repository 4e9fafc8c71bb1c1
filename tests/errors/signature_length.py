# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(p + offs, 0.0, mask=offs < n)
