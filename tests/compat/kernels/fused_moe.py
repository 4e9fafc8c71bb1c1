"""Fused mixture-of-experts GEMM: each token is routed to TOP_K experts, and
the rows of A that go to one expert are gathered, multiplied by that expert's
weight matrix with tl.dot and written back to their own rows of C.

Routing, prepared on the host by `align_by_expert`:
- the T * TOP_K (token, choice) pairs are numbered pair = token * TOP_K + choice;
- `sorted_ids` lists the pairs grouped by expert, each expert's group padded
  with the invalid id T * TOP_K to a multiple of BLOCK_M, so one block of
  BLOCK_M rows belongs to one expert; `expert_ids[b]` is the expert of block b
  and `num_padded[0]` the total length used (the array has room for the worst case).

A program computes a BLOCK_M x BLOCK_N tile of C for one block of pairs.  Row r
of the tile reads row pair // TOP_K of A (the token; TOP_K = 1 when A already
holds one row per pair, as in the second GEMM of an expert MLP) and writes row
pair of C, scaled by the pair's routing weight if MUL_ROUTED_WEIGHT.  B holds
the experts' weights as (E, N, K): the kernel reads each as its transpose
through strides.  Blocks whose expert id is -1 (an expert another device holds)
write zeros.  Programs are ordered in groups of GROUP_M block rows so
that neighbouring programs share tiles of B."""
import numpy as np

import nereid as triton
import nereid.language as tl


@triton.jit
def fused_moe_kernel(A, B, C, TopkWeights, SortedIds, ExpertIds, NumPadded,
                     N, K, capacity, num_valid,
                     stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
                     MUL_ROUTED_WEIGHT: tl.constexpr, TOP_K: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(capacity, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_pid_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    if pid_m * BLOCK_M >= tl.load(NumPadded):
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pair = tl.load(SortedIds + rows)
    pmask = pair < num_valid
    expert = tl.load(ExpertIds + pid_m).to(tl.int64)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = offs_n < N
    c_ptrs = C + pair[:, None] * stride_cm + offs_n[None, :] * stride_cn
    if expert == -1:
        # an expert held elsewhere (expert parallelism): its rows are zero here
        tl.store(c_ptrs, tl.zeros([BLOCK_M, BLOCK_N], dtype=C.dtype.element_ty), mask=pmask[:, None] & nmask[None, :])
        return
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = A + (pair // TOP_K)[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + expert * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - kb * BLOCK_K
        a = tl.load(a_ptrs, mask=pmask[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & nmask[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        w = tl.load(TopkWeights + pair, mask=pmask, other=0.0)
        acc = acc * w[:, None]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=pmask[:, None] & nmask[None, :])


def align_by_expert(topk_ids, n_experts, block_m, remote=()):
    """(sorted_ids, expert_ids, num_padded): the routing arrays described above; the
    blocks of the experts in `remote` get expert id -1 (their rows are written as zeros)."""
    flat = topk_ids.ravel()
    invalid = flat.size
    capacity = flat.size + n_experts * (block_m - 1)
    capacity = -(-capacity // block_m) * block_m
    sorted_ids = np.full(capacity, invalid, np.int32)
    expert_ids = np.full(capacity // block_m, -1, np.int32)  # blocks past num_padded are never read
    at = 0
    for e in range(n_experts):
        pairs = np.nonzero(flat == e)[0]
        if pairs.size == 0:
            continue
        sorted_ids[at:at + pairs.size] = pairs
        n_blocks = -(-pairs.size // block_m)
        expert_ids[at // block_m:at // block_m + n_blocks] = -1 if e in remote else e
        at += n_blocks * block_m
    return sorted_ids, expert_ids, np.array([at], np.int32)


def fused_moe(a, w, c, topk_weights, topk_ids, routing, top_k, mul_routed_weight,
              block_m=16, block_n=32, block_k=32, group_m=4, num_warps=4):
    """c[pair] = a[pair // top_k] @ w[expert(pair)].T (times the pair's weight)."""
    sorted_ids, expert_ids, num_padded = routing
    E, N, K = w.shape
    capacity = sorted_ids.size
    grid = (triton.cdiv(capacity, block_m) * triton.cdiv(N, block_n),)
    sa = [s // a.itemsize for s in a.strides]
    sw = [s // w.itemsize for s in w.strides]
    sc = [s // c.itemsize for s in c.strides]
    fused_moe_kernel[grid](a, w, c, topk_weights, sorted_ids, expert_ids, num_padded,
                           N, K, capacity, topk_ids.size,
                           sa[0], sa[1], sw[0], sw[1], sw[2], sc[0], sc[1],
                           MUL_ROUTED_WEIGHT=mul_routed_weight, TOP_K=top_k,
                           BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m,
                           num_warps=num_warps)
