"""Kernels exercised by test_e2e.py, written as a user would write them for Triton."""
import nereid as triton
import nereid.language as tl


@triton.jit
def transpose_copy(src, dst, M, N, stride_sm, stride_dm, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(src + rm[:, None] * stride_sm + rn[None, :], mask=mask)
    # dst is N x M: dst[n, m] = src[m, n]
    tl.store(dst + rn[None, :] * stride_dm + rm[:, None], x, mask=mask)


@triton.jit
def histogram(x_ptr, bins_ptr, n, NUM_BINS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    x = tl.minimum(tl.maximum(x, 0), NUM_BINS - 1)
    tl.atomic_add(bins_ptr + x, 1, mask=mask)


@triton.jit
def reduce_axes(x_ptr, sum0, sum1, max0, max1, min0, min1, amax1, amin0, M, N,
                BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tl.store(sum0 + rn, tl.sum(x, axis=0), mask=rn < N)
    tl.store(sum1 + rm, tl.sum(x, axis=1), mask=rm < M)
    xm = tl.where(mask, x, -float('inf'))
    tl.store(max0 + rn, tl.max(xm, axis=0), mask=rn < N)
    tl.store(max1 + rm, tl.max(xm, axis=1), mask=rm < M)
    tl.store(amax1 + rm, tl.argmax(xm, axis=1), mask=rm < M)
    xn = tl.where(mask, x, float('inf'))
    tl.store(min0 + rn, tl.min(xn, axis=0), mask=rn < N)
    tl.store(min1 + rm, tl.min(xn, axis=1), mask=rm < M)
    tl.store(amin0 + rn, tl.argmin(xn, axis=0), mask=rn < N)


@triton.jit
def reduce_all(x_ptr, out_ptr, xor_ptr, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * BN + rn[None, :])
    tl.store(out_ptr, tl.sum(tl.sum(x, axis=1), axis=0))
    tl.store(out_ptr + 1, tl.max(x))
    tl.store(xor_ptr + rm, tl.xor_sum(x, axis=1))
    k = tl.sum(x, axis=1, keep_dims=True)
    tl.store(xor_ptr + BM + rm[:, None] + tl.zeros([BM, 1], dtype=tl.int32), k)


@triton.jit
def int_divmod(a_ptr, b_ptr, q_ptr, r_ptr, fq_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=1)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    tl.store(q_ptr + offs, a // b, mask=mask)
    tl.store(r_ptr + offs, a % b, mask=mask)
    tl.store(fq_ptr + offs, a / b, mask=mask)


@triton.jit
def cast_roundtrip(x_ptr, f16_ptr, bf16_ptr, e4_ptr, e5_ptr, i8_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(f16_ptr + offs, x.to(tl.float16).to(tl.float32), mask=mask)
    tl.store(bf16_ptr + offs, x.to(tl.bfloat16).to(tl.float32), mask=mask)
    tl.store(e4_ptr + offs, x.to(tl.float8e4nv).to(tl.float32), mask=mask)
    tl.store(e5_ptr + offs, x.to(tl.float8e5).to(tl.float32), mask=mask)
    tl.store(i8_ptr + offs, x.to(tl.int8), mask=mask)


@triton.jit
def collatz_steps(x_ptr, out_ptr, n):
    i = tl.program_id(0)
    v = tl.load(x_ptr + i)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    tl.store(out_ptr + i, steps)


@triton.jit
def grid_stride_scale(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x * alpha + 1.0, mask=mask)


@triton.jit
def oob_read(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def bad_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.undefined_function(offs))
