# ARGS: ir -k k -s '*fp32, 48'
import triton
import triton.language as tl


@triton.jit
def k(p, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
    tl.store(p + tl.arange(0, BLOCK), 0.0)
