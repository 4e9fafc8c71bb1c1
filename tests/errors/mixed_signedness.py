# ARGS: ir -k k -s '*i32, *u32'
import triton
import triton.language as tl


@triton.jit
def k(a, b):
    x = tl.load(a)
    y = tl.load(b)
    tl.store(a, x // y)
