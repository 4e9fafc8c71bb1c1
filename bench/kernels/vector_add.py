"""Vector addition, out = x + y, BLOCK elements per program.

Written in the Triton dialect; bench/harness.py executes this file twice, once
with `triton` bound to Triton and once bound to Nereid."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y, out, n, block=1024):
    """out[:n] = x[:n] + y[:n]; returns out."""
    add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out
