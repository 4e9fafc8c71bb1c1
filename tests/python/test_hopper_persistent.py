"""A persistent matmul on Hopper: a fixed number of programs (one per SM on
the GPU) walks the output tiles with the grouped schedule of Triton's
persistent-matmul tutorial, each tile's K loop pipelined and its dot on
wgmma (sm_90a), the accumulator waited for before each tile's epilogue.

On the interpreter the tests check the semantics (every tile computed once,
masked edges, every dtype wgmma takes); under NEREID_TEST_DEVICE=cuda each
launch also runs on the GPU and is compared with the interpreter.  The PTX
test needs no GPU."""
import numpy as np
import pytest

import nereid as triton
import nereid.language as tl
from conftest import poisoned, rel_err


@triton.jit
def _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr, STAGES: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    rk = tl.arange(0, BLOCK_K)
    for tile_id in range(start_pid, num_tiles, NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + rk[None, :] * stride_ak
        b_ptrs = b_ptr + rk[:, None] * stride_bk + offs_bn[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in tl.range(0, k_tiles, num_stages=STAGES):
            a = tl.load(a_ptrs, mask=rk[None, :] < K - ki * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=rk[:, None] < K - ki * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + cm[:, None] * stride_cm + cn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(cm[:, None] < M) & (cn[None, :] < N))


def _run(rng, dt, M, N, K, b_col, BM, BN, BK, warps, stages, programs):
    a = rng.standard_normal((M, K)).astype(np.float32).astype(dt)
    b = rng.standard_normal((K, N)).astype(np.float32).astype(dt)
    if b_col:
        b = np.asfortranarray(b)
    c = poisoned((M, N), np.float32)
    sb = [s // b.itemsize for s in b.strides]
    persistent_matmul[(programs,)](a, b, c, M, N, K, K, 1, sb[0], sb[1], N, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                                   GROUP_SIZE_M=4, NUM_PROGRAMS=programs, STAGES=stages, num_warps=warps)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert rel_err(c, ref) < 2e-6 * max(1.0, np.sqrt(K) / 4)


# (M, N, K, B column-major, BM, BN, BK, warps, stages, programs): more tiles than programs, edges on every side
CASES = [(300, 200, 192, False, 128, 128, 64, 4, 3, 3), (257, 511, 160, True, 128, 256, 32, 8, 4, 2),
         (130, 70, 96, False, 64, 64, 32, 4, 2, 5)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}_{c[4]}x{c[5]}x{c[6]}_w{c[7]}_s{c[8]}")
def test_hopper_persistent_f16(rng, case):
    _run(rng, np.float16, *case)


def test_hopper_persistent_ptx():
    sig = ("*fp16:16, *fp16:16, *fp32:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, "
           "128, 128, 64, 8, 132, 4")
    k = persistent_matmul.compile(sig, num_warps=4, num_stages=4, arch="sm_90a")
    ptx = k.ptx
    # the K loop pipelined (copies two iterations ahead) into an async wgmma with one group in flight,
    # all waited for before each tile's epilogue
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 8
    assert ptx.count("wgmma.wait_group.sync.aligned 1;") == 1 and ptx.count("wgmma.wait_group.sync.aligned 0;") == 1
    assert "cp.async.cg.shared.global" in ptx and "mma.sync" not in ptx
