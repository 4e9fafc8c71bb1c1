# ARGS: ir -k k -s '*fp32, i32'
import triton
import triton.language as tl


@triton.jit
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


@triton.jit
def k(p, n):
    tl.store(p, fact(n))
