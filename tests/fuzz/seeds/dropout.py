import triton
import triton.language as tl


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    r = tl.rand(seed, offs)
    keep = r > p
    out = tl.where(keep, x / (1 - p), 0.0)
    tl.store(out_ptr + offs, out, mask=mask)


@triton.jit
def philox_bits(out, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(out + offs, a ^ b ^ c ^ d, mask=offs < n)
