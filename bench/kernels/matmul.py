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
def _split_k_share(M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr):
    # Program (tile, split) of a split-K launch: its output tile (in the
    # grouped order), and the K blocks k_first .. k_end - 1 of its share.
    tile = tl.program_id(0) // SPLIT_K
    split = tl.program_id(0) % SPLIT_K
    pid_m, pid_n = _tile_of(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    k_blocks = tl.cdiv(K, BLOCK_K)
    share = tl.cdiv(k_blocks, SPLIT_K)
    k_first = split * share
    return tile, split, pid_m, pid_n, k_first, min(k_first + share, k_blocks)


@triton.jit
def matmul_splitk_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, ws_ptr, count_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr,
                         ACTIVATION: tl.constexpr):
    # Split K, for outputs too small to give every SM a tile (LLM decode and
    # small-batch shapes): program (tile, split) multiplies the split-th
    # share of the K blocks and writes its fp32 partial sum to the
    # workspace (SPLIT_K x M x N).  The tile's counter counts the finished
    # splits; the last to finish adds the partials in split order (the same
    # result whichever finishes last), runs the epilogue, stores C and
    # resets the counter for the next launch.
    tile, split, pid_m, pid_n, k_first, k_end = _split_k_share(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + (k_first * BLOCK_K + rk)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_first * BLOCK_K + rk)[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_first, k_end):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    _split_k_finish(acc, c_ptr, bias_ptr, ws_ptr, count_ptr, M, N, pid_m, pid_n, tile, split, stride_cm, stride_cn,
                    BLOCK_M, BLOCK_N, SPLIT_K, HAS_BIAS, ACTIVATION)


@triton.jit
def _split_k_finish(acc, c_ptr, bias_ptr, ws_ptr, count_ptr, M, N, pid_m, pid_n, tile, split, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr,
                    ACTIVATION: tl.constexpr):
    # Split `split` of output tile `tile` is done with its partial sum acc:
    # it goes to the workspace, and the last split of the tile to finish
    # adds all of them in split order, runs the epilogue and stores C.
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    in_c = (cm[:, None] < M) & (cn[None, :] < N)
    part = cm[:, None] * N + cn[None, :]
    tl.store(ws_ptr + split * M * N + part, acc, mask=in_c)
    # every thread's partial is written before the counter says so
    tl.debug_barrier()
    if tl.atomic_add(count_ptr + tile, 1, sem="acq_rel") == SPLIT_K - 1:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in range(0, SPLIT_K):
            acc += tl.load(ws_ptr + s * M * N + part, mask=in_c, other=0.0, cache_modifier=".cg")
        if HAS_BIAS:
            acc += tl.load(bias_ptr + cn, mask=cn < N, other=0.0).to(tl.float32)[None, :]
        if ACTIVATION == "gelu":
            acc = gelu(acc)
        c_ptrs = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=in_c)
        tl.atomic_xchg(count_ptr + tile, 0)


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


@triton.jit
def matmul_tma_splitk_kernel(a_desc, b_desc, c_ptr, bias_ptr, ws_ptr, count_ptr, M, N, K, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, B_T: tl.constexpr,
                             HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    # matmul_splitk_kernel with A and B read through host tensor
    # descriptors (TMA on Hopper); C is written through its pointer.
    tile, split, pid_m, pid_n, k_first, k_end = _split_k_share(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_first, k_end):
        a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        if B_T:
            b = b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T
        else:
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    _split_k_finish(acc, c_ptr, bias_ptr, ws_ptr, count_ptr, M, N, pid_m, pid_n, tile, split, stride_cm, stride_cn,
                    BLOCK_M, BLOCK_N, SPLIT_K, HAS_BIAS, ACTIVATION)


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


_SPLITK_BUFFERS = {}


def _splitk_buffers(c, ws_elems, tiles):
    """matmul_splitk_kernel's fp32 workspace and its per-tile counters (zero,
    and left zero by every launch), kept per device and size: torch tensors
    beside a torch C, numpy arrays beside a numpy one."""
    torch_c = hasattr(c, "device") and hasattr(c, "data_ptr")
    key = (str(c.device) if torch_c else "numpy", ws_elems, tiles)
    if key not in _SPLITK_BUFFERS:
        if torch_c:
            import torch
            bufs = (torch.empty(ws_elems, device=c.device, dtype=torch.float32),
                    torch.zeros(tiles, device=c.device, dtype=torch.int32))
        else:
            import numpy as np
            bufs = (np.empty(ws_elems, dtype=np.float32), np.zeros(tiles, dtype=np.int32))
        _SPLITK_BUFFERS[key] = bufs
    return _SPLITK_BUFFERS[key]


def matmul(c, a, b, bias, M, N, K, a_strides, b_strides, c_strides, config, activation="", num_sms=1):
    """config: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages[, kind]);
    bias: None or a vector of N.  Kind "persistent" launches num_sms programs
    (at most one per tile) running matmul_persistent_kernel; "tma" runs
    matmul_tma_kernel on host tensor descriptors, one program per tile, and
    "tma-persistent" the same with num_sms programs (see tma_applies);
    "tma-ws" runs matmul_tma_ws_kernel, one program per tile, its K loop
    warp-specialized (a row-major B; a column-major one runs "tma"), and
    "tma-ws-persistent" matmul_tma_kernel warp-specialized on num_sms
    programs; "splitk<S>" matmul_splitk_kernel, S programs per tile, and
    "tma-splitk<S>" the same through descriptors (matmul_tma_splitk_kernel)."""
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
        if config[6].startswith("tma-splitk"):
            split = int(config[6][len("tma-splitk"):])
            ws, count = _splitk_buffers(c, split * M * N, tiles)
            matmul_tma_splitk_kernel[(tiles * split,)](
                a_desc, b_desc, c, bias, ws, count, M, N, K, c_strides[0], c_strides[1], BLOCK_M=bm, BLOCK_N=bn,
                BLOCK_K=bk, GROUP_M=gm, SPLIT_K=split, B_T=b_t, HAS_BIAS=bias is not None, ACTIVATION=activation,
                num_warps=warps, num_stages=stages)
            return c
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
    if len(config) > 6 and config[6].startswith("splitk"):
        split = int(config[6][len("splitk"):])
        ws, count = _splitk_buffers(c, split * M * N, tiles)
        matmul_splitk_kernel[(tiles * split,)](
            a, b, c, bias, ws, count, M, N, K, a_strides[0], a_strides[1], b_strides[0], b_strides[1],
            c_strides[0], c_strides[1], BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, SPLIT_K=split,
            HAS_BIAS=bias is not None, ACTIVATION=activation, num_warps=warps, num_stages=stages)
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
