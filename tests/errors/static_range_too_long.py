# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    acc = tl.load(p)
    for i in tl.static_range(100000):
        acc += i
    tl.store(p, acc)
