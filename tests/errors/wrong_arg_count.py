# ARGS: ir -k k -s '*fp32'
import triton
import triton.language as tl


@triton.jit
def k(p):
    pid = tl.program_id(0, 1)
    tl.store(p + pid, 1.0)
