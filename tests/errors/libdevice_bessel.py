# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 16))
    tl.store(p + tl.arange(0, 16), libdevice.j0(x))
