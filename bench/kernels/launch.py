"""A nearly empty kernel with six runtime arguments (three tensors, three
scalars), for measuring the host cost of a launch, and the same with its
three tensors as host tensor descriptors.  Written in the Triton dialect; bench/harness.py executes this file once with `triton` bound to
Triton and once to Nereid."""
import triton
import triton.language as tl


@triton.jit
def axpby_kernel(x_ptr, y_ptr, out_ptr, n, alpha, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + beta * y, mask=mask)


@triton.jit
def axpby_desc_kernel(x_desc, y_desc, out_desc, alpha, beta, BM: tl.constexpr, BN: tl.constexpr):
    # the same through three host tensor descriptors of one (BM, BN) block each (TMA on Hopper)
    x = x_desc.load([0, 0])
    y = y_desc.load([0, 0])
    out_desc.store([0, 0], alpha * x + beta * y)
