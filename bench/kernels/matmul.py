"""C = act(A @ B + bias): blocked matrix multiplication with grouped program
ordering, fp32 accumulation and an optional fused epilogue (bias, GELU).

A is M x K and B is K x N with any strides; C is M x N.  Operands may be
fp16, bf16, fp8 (e4m3) or fp32 (whose dot runs as tf32 on tensor cores).
Written in the Triton dialect; bench/harness.py executes this file once with
`triton` bound to Triton and once to Nereid."""
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def gelu(x):
    # The exact GELU, x * Phi(x), as torch.nn.functional.gelu computes it by default.
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def _tile_of(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Tiles are numbered down columns of GROUP_M tile rows at a time, so that
    # programs running together share tiles of A and B in the L2 cache.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_per_group = GROUP_M * tl.cdiv(N, BLOCK_N)
    first_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    return first_m + (tile % tiles_per_group) % group_rows, (tile % tiles_per_group) // group_rows


@triton.jit
def _matmul_tile(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, pid_m, pid_n,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    # Rows and columns past the edges wrap around: their loads stay in bounds
    # without masks, and their results are never stored.
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn).to(tl.float32)[None, :]
    if ACTIVATION == "gelu":
        acc = gelu(acc)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    _matmul_tile(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, pid_m, pid_n, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M, BLOCK_N, BLOCK_K, HAS_BIAS, ACTIVATION)


@triton.jit
def matmul_persistent_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                             NUM_PROGRAMS: tl.constexpr):
    # One program per SM walks the output tiles (tile, tile + NUM_PROGRAMS,
    # ...) in the same grouped order as matmul_kernel, so the programs that
    # run at the same time still share tiles of A and B in L2; each tile's K
    # loop is pipelined num_stages deep.
    for tile in range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N), NUM_PROGRAMS):
        pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        _matmul_tile(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, pid_m, pid_n, stride_am, stride_ak, stride_bk,
                     stride_bn, stride_cm, stride_cn, BLOCK_M, BLOCK_N, BLOCK_K, HAS_BIAS, ACTIVATION)


@triton.jit
def _tma_epilogue(acc, c_desc, bias_ptr, N, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    # matmul_kernel's epilogue (bias, GELU), then the tile stored through c_desc
    if HAS_BIAS:
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "gelu":
        acc = gelu(acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr, B_T: tl.constexpr,
                      HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, WS: tl.constexpr = False):
    # A, B and C through host tensor descriptors (on Hopper, TMA copies the
    # tiles; out-of-bounds elements read as zero and are not written).  With
    # NUM_PROGRAMS programs, each walks the tiles tile, tile + NUM_PROGRAMS,
    # ... in the grouped order (one tile each when there are as many
    # programs as tiles).  B_T: b_desc describes B^T (N x K, K contiguous:
    # a column-major B), whose tiles are read transposed.  The epilogue (bias,
    # GELU) is matmul_kernel's, applied before the tile is stored.  WS:
    # warp-specialized, a producer warpgroup issuing the TMA copies of every
    # tile while the num_warps warps run the dots and the epilogues.
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N), NUM_PROGRAMS,
                         warp_specialize=WS):
        pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            if B_T:
                b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T
            else:
                b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        _tma_epilogue(acc, c_desc, bias_ptr, N, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)


@triton.jit
def matmul_tma_ws_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    # matmul_tma_kernel's tile, one per program, with a warp-specialized K
    # loop: a producer warpgroup issues the TMA copies num_stages deep while
    # the num_warps warps run the dots.
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=True):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    _tma_epilogue(acc, c_desc, bias_ptr, N, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)


def _elem_strides(x):
    if hasattr(x, "stride") and callable(x.stride):  # torch
        return tuple(x.stride()), x.element_size()
    return tuple(st // x.itemsize for st in x.strides), x.itemsize


def tma_applies(a, b, c, bias, activation):
    """Whether matmul's "tma" configurations apply: A, B (or B^T: a
    column-major B) and C as host tensor descriptors take them: contiguous
    rows, 16-byte aligned.  The epilogue (bias, activation) is the kernel's
    own."""
    bs, bitem = _elem_strides(b)
    bt = (bs[1], bs[0]) if bs[0] == 1 and bs[1] != 1 else bs
    for strides, item in (_elem_strides(a), (bt, bitem), _elem_strides(c)):
        if strides[1] != 1 or strides[0] * item % 16:
            return False
    return True


def matmul(c, a, b, bias, M, N, K, a_strides, b_strides, c_strides, config, activation="", num_sms=1):
    """config: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages[, kind]);
    bias: None or a vector of N.  Kind "persistent" launches num_sms programs
    (at most one per tile) running matmul_persistent_kernel; "tma" runs
    matmul_tma_kernel on host tensor descriptors, one program per tile, and
    "tma-persistent" the same with num_sms programs (see tma_applies);
    "tma-ws" runs matmul_tma_ws_kernel, one program per tile, its K loop
    warp-specialized (a row-major B; a column-major one runs "tma"), and
    "tma-ws-persistent" matmul_tma_kernel warp-specialized on num_sms
    programs."""
    bm, bn, bk, gm, warps, stages = config[:6]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    if len(config) > 6 and config[6].startswith("tma"):
        persistent = config[6] in ("tma-persistent", "tma-ws-persistent")
        programs = max(1, min(num_sms, tiles)) if persistent else tiles
        a_desc = TensorDescriptor(a, [M, K], [a_strides[0], 1], [bm, bk])
        b_t = b_strides[0] == 1 and b_strides[1] != 1  # column-major B: a descriptor of B^T
        if b_t:
            b_desc = TensorDescriptor(b, [N, K], [b_strides[1], 1], [bn, bk])
        else:
            b_desc = TensorDescriptor(b, [K, N], [b_strides[0], 1], [bk, bn])
        c_desc = TensorDescriptor(c, [M, N], [c_strides[0], 1], [bm, bn])
        if config[6] == "tma-ws" and not b_t:
            matmul_tma_ws_kernel[(tiles,)](a_desc, b_desc, c_desc, bias, M, N, K, BLOCK_M=bm, BLOCK_N=bn,
                                           BLOCK_K=bk, GROUP_M=gm, HAS_BIAS=bias is not None,
                                           ACTIVATION=activation, num_warps=warps, num_stages=stages)
            return c
        matmul_tma_kernel[(programs,)](a_desc, b_desc, c_desc, bias, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                       GROUP_M=gm, NUM_PROGRAMS=programs, B_T=b_t, HAS_BIAS=bias is not None,
                                       ACTIVATION=activation, WS=config[6] == "tma-ws-persistent",
                                       num_warps=warps, num_stages=stages)
        return c
    if len(config) > 6 and config[6] == "persistent":
        programs = max(1, min(num_sms, tiles))
        matmul_persistent_kernel[(programs,)](
            a, b, c, bias, M, N, K, a_strides[0], a_strides[1], b_strides[0], b_strides[1],
            c_strides[0], c_strides[1], BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
            HAS_BIAS=bias is not None, ACTIVATION=activation, NUM_PROGRAMS=programs, num_warps=warps,
            num_stages=stages)
        return c
    grid = (tiles,)
    matmul_kernel[grid](a, b, c, bias, M, N, K, a_strides[0], a_strides[1], b_strides[0], b_strides[1],
                        c_strides[0], c_strides[1], BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm,
                        HAS_BIAS=bias is not None, ACTIVATION=activation, num_warps=warps, num_stages=stages)
    return c
