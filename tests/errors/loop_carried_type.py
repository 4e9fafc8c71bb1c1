# ARGS: ir -k k -s '*fp16, i32'
import triton
import triton.language as tl


@triton.jit
def k(p, n):
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for i in range(n):
        acc = acc.to(tl.float16)
    tl.store(p, tl.sum(acc))
