# ARGS: ir -k k -s '*fp32, (64, i32)'
import triton
import triton.language as tl


@triton.jit
def k(p, SIZES: tl.constexpr):
    tl.store(p + tl.arange(0, SIZES[0]), 1.0)
