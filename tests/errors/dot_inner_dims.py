# ARGS: ir -k k -s '*fp16'
import triton
import triton.language as tl


@triton.jit
def k(p):
    a = tl.zeros((32, 64), dtype=tl.float16)
    b = tl.zeros((32, 32), dtype=tl.float16)
    c = tl.dot(a, b)
    tl.store(p, tl.sum(c).to(tl.float16))
