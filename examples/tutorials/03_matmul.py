"""Tutorial 3: matrix multiplication, autotuned.

C = activation(A @ B) with fp32 accumulation, for fp16 and fp8 inputs.
- Each program computes one BLOCK_SIZE_M x BLOCK_SIZE_N tile of C, stepping
  through K one BLOCK_SIZE_K slice at a time with tl.dot.
- Programs are numbered in groups of GROUP_SIZE_M rows of tiles, so that
  programs running at the same time share rows of A and columns of B in the
  L2 cache.
- The activation is applied to the fp32 tile before it is stored (fused).
- @nereid.autotune picks the fastest block shape, warps and pipeline depth
  for each (M, N, K), compiling the candidates in parallel; the choice is
  kept on disk for the next run.

    python3 examples/tutorials/03_matmul.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402

import common as C  # noqa: E402


def tuning_space():
    if not C.ON_GPU:  # the interpreter: a small search over small tiles
        return [nereid.Config({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4},
                              num_warps=4, num_stages=2),
                nereid.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2},
                              num_warps=2, num_stages=2)]
    shapes = [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
              (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
              (128, 256, 128, 3, 8), (256, 128, 128, 3, 8), (256, 64, 128, 4, 4), (128, 128, 128, 4, 4)]
    return [nereid.Config({"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
                          num_stages=s, num_warps=w) for m, n, k, s, w in shapes]


@nereid.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@nereid.autotune(configs=tuning_space(), key=["M", "N", "K"])
@nereid.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    # Which tile: programs go down GROUP_SIZE_M rows of tiles before moving one column right.
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_SIZE_M)
    tiles_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * tiles_n
    group_row = (pid // per_group) * GROUP_SIZE_M
    rows_in_group = min(tiles_m - group_row, GROUP_SIZE_M)
    tile_m = group_row + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rm = tile_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    rn = tile_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    rk = tl.arange(0, BLOCK_SIZE_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - step * BLOCK_SIZE_K  # the last slice may be short: masked loads give 0
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_SIZE_K * stride_ak
        b_tile += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, activation=""):
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    c = C.empty((M, N), "float16")
    grid = lambda meta: (nereid.cdiv(M, meta["BLOCK_SIZE_M"]) * nereid.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa
    matmul_kernel[grid](a, b, c, M, N, K, C.stride(a, 0), C.stride(a, 1), C.stride(b, 0), C.stride(b, 1),
                        C.stride(c, 0), C.stride(c, 1), ACTIVATION=activation)
    return c


def reference(a, b, activation=""):
    r = C.to_numpy(a) @ C.to_numpy(b)
    return np.where(r >= 0, r, 0.01 * r) if activation == "leaky_relu" else r


def fp8_available():
    if C.ON_GPU:
        import torch
        return hasattr(torch, "float8_e5m2") and torch.cuda.get_device_capability() >= (8, 9)
    try:
        import ml_dtypes  # noqa: F401
        return True
    except ImportError:
        return False


def main():
    M, N, K = (512, 512, 512) if C.ON_GPU else (96, 80, 72)
    a = C.randn((M, K), "float16", seed=5)
    b = C.randn((K, N), "float16", seed=6)
    C.check("matmul fp16", matmul(a, b), reference(a, b), 2e-3)
    C.check("matmul fp16 + leaky_relu", matmul(a, b, "leaky_relu"), reference(a, b, "leaky_relu"), 2e-3)
    print("chosen:", matmul_kernel.best_config)
    if fp8_available():
        a8 = C.randn((M, K), "float8_e5m2", seed=7)
        b8 = C.randn((K, N), "float8_e5m2", seed=8)
        C.check("matmul fp8 (e5m2)", matmul(a8, b8), reference(a8, b8), 2e-3)
    if not C.ON_GPU:
        return
    import torch
    theirs = C.load_as_triton(__file__)

    def data(n):
        return C.randn((n, n), "float16", seed=n), C.randn((n, n), "float16", seed=n + 1)

    providers = {"nereid": lambda n: (lambda ab=data(n): matmul(*ab)),
                 "cuBLAS": lambda n: (lambda ab=data(n): torch.matmul(*ab))}
    if theirs is not None:
        providers["triton"] = lambda n: (lambda ab=data(n): theirs.matmul(*ab))
    C.report(nereid, "matmul-performance-fp16", ["n"], [256 * i for i in range(2, 17, 2)], "TFLOP/s", providers,
             lambda ms, n: 2 * n ** 3 * 1e-12 / (ms * 1e-3))


if __name__ == "__main__":
    main()
