# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    dt = tl.float32
    for i in range(n):
        dt = tl.float16
    tl.store(p, tl.load(p).to(dt))
