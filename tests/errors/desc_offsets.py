# ARGS: ir -k k -s 'tensordesc<fp32[16, 16]>, *fp32'
import triton
import triton.language as tl


@triton.jit
def k(d, out):
    x = d.load([0])
    tl.store(out, tl.sum(x))
