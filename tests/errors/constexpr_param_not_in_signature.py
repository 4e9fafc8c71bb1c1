# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, BLOCK: tl.constexpr):
    tl.store(p + tl.arange(0, BLOCK), 0.0)
