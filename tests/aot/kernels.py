"""Kernels of the ahead-of-time tests (tests/aot/run.sh, test_aot_rt.c)."""
import nereid as triton
import nereid.language as tl


@triton.jit
def mix(out_ptr, x_ptr, n, flag, a, b, c, h, bf, e4, e5, d, BLOCK: tl.constexpr):
    """out = x + s where flag, else x - s, with s the sum of the scalars of every dtype (c may be
    specialized as equal to 1, a constant then)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    s = a.to(tl.float32) + b.to(tl.float32) + c * 1.0 + h.to(tl.float32) + bf.to(tl.float32)
    s = s + e4.to(tl.float32) + e5.to(tl.float32) + d.to(tl.float32)
    tl.store(out_ptr + offs, tl.where(flag, x + s, x - s), mask=m)


@triton.jit
def grid3(out_ptr, n, m, k):
    """Each program writes its linear index at its place in an (x, y, z) grid."""
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    i = (z * ny + y) * nx + x
    tl.store(out_ptr + i, i + n * 0 + m * 0 + k * 0)


@triton.jit
def clash(stream, grid_x, cuda_ptr, aot_arg0, config, n, BLOCK: tl.constexpr):
    """Parameters named like the generated code's own names."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(cuda_ptr + offs, mask=m, other=0)
    tl.store(stream + offs, v + grid_x + aot_arg0 + config, mask=m)


@triton.jit
def empty():
    """No arguments at all."""
    pass
