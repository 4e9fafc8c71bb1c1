"""Fused attention, O = softmax(Q K^T * sm_scale [+ causal mask]) V, after
the FlashAttention-2 algorithm (Dao, 2023), forward and backward.

Shapes: q, k, v, o and their gradients are (B, H, L, D) with any strides;
D is 64 or 128 (any power of two from 16 works); L need not be a multiple
of the blocks.  q, k, v are fp16 or bf16, or fp8 e4m3 for the forward only
(then O is fp16).

Forward (attn_fwd_kernel): one program per BLOCK_M query rows of one head.
It walks the keys BLOCK_N at a time, keeping for each row the running
maximum m of its scores, the running sum l of exp(score - m) and the
unnormalized output acc; a new block rescales l and acc by exp(m_old - m_new)
(the online softmax).  Scores are taken in base 2: the scale is folded into
qk_scale = sm_scale * log2(e), so one multiply and exp2 replace exp.  It
stores O = acc / l and, for the backward, M = m + log2(l) per row: the
log-sum-exp of the row's scores in base-2 units.  With a causal mask the key
loop runs in parts: the blocks wholly left of the diagonal with no mask,
then the blocks that cross the diagonal with the mask; a trailing partial
key block (non-causal, L not a multiple of BLOCK_N) is a third, masked part.

Backward: attn_bwd_preprocess stores delta = rowsum(dO * O) per row;
attn_bwd_dkdv_kernel keeps a block of keys and values and loops over query
blocks, recomputing P^T = exp2(K Q^T * qk_scale - M) and adding
dV += P^T dO, dK += dS^T Q with dS = P * (dP - delta), dP = dO V^T;
attn_bwd_dq_kernel keeps a block of queries and loops over key blocks for
dQ += dS K.  No program writes what another reads: no atomics."""
import nereid as triton
import nereid.language as tl
from nereid.tools.tensor_descriptor import TensorDescriptor

LOG2E = 1.4426950408889634


# --- forward ----------------------------------------------------------------------------------------

@triton.jit
def _fwd_key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                    lo, hi, rows, offs_n, offs_d, L, qk_scale,
                    BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, KEY_MASK: tl.constexpr):
    # Keys lo .. hi-1 (lo and hi multiples of BLOCK_N, or hi = L), folded into
    # the running state (acc, m_i, l_i) of the query rows `rows`.
    for start in range(lo, hi, BLOCK_N):
        cols = start + offs_n
        kt_ptrs = k_base + offs_d[:, None] * stride_kd + cols[None, :] * stride_kn
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd
        if KEY_MASK:
            kt = tl.load(kt_ptrs, mask=cols[None, :] < L, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
        s = tl.dot(q, kt)
        if CAUSAL_MASK:
            s = tl.where(rows[:, None] >= cols[None, :], s, -float("inf"))
        if KEY_MASK:
            s = tl.where(cols[None, :] < L, s, -float("inf"))
        # qk_scale > 0: the row max of the scaled scores is the scaled row max,
        # and each score's scale and shift is one fused multiply-add
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if KEY_MASK:
            v = tl.load(v_ptrs, mask=cols[:, None] < L, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, m_ptr, H, L, qk_scale,
                    stride_qb, stride_qh, stride_qm, stride_qd,
                    stride_kb, stride_kh, stride_kn, stride_kd,
                    stride_vb, stride_vh, stride_vn, stride_vd,
                    stride_ob, stride_oh, stride_om, stride_od,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr):
    # grid: (cdiv(L, BLOCK_M), B * H).  M is a contiguous (B * H, L) fp32 array.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    o_base = o_ptr + b * stride_ob + h * stride_oh

    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_base + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd, mask=rows[:, None] < L, other=0.0)

    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        # Blocks left of this query block see no mask; the blocks of the
        # diagonal, start_m .. start_m + BLOCK_M, do.  Key columns past L there
        # only meet rows past L (rows >= cols), which are not stored.
        acc, m_i, l_i = _fwd_key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                        stride_vn, stride_vd, 0, start_m, rows, offs_n, offs_d, L, qk_scale,
                                        BLOCK_N, False, False)
        acc, m_i, l_i = _fwd_key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                        stride_vn, stride_vd, start_m, tl.minimum(start_m + BLOCK_M, L), rows,
                                        offs_n, offs_d, L, qk_scale, BLOCK_N, True, True)
    else:
        full = (L // BLOCK_N) * BLOCK_N
        acc, m_i, l_i = _fwd_key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                        stride_vn, stride_vd, 0, full, rows, offs_n, offs_d, L, qk_scale,
                                        BLOCK_N, False, False)
        acc, m_i, l_i = _fwd_key_blocks(acc, m_i, l_i, q, k_base, v_base, stride_kn, stride_kd,
                                        stride_vn, stride_vd, full, L, rows, offs_n, offs_d, L, qk_scale,
                                        BLOCK_N, False, True)

    # Rows past L hold garbage (never NaN: their scores are finite) and are not stored.
    o = acc / l_i[:, None]
    tl.store(m_ptr + bh * L + rows, m_i + tl.log2(l_i), mask=rows < L)
    o_ptrs = o_base + rows[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, o.to(o_ptr.dtype.element_ty), mask=rows[:, None] < L)


@triton.jit
def _fwd_desc_key_blocks(acc, m_i, l_i, q, k_desc, v_desc, kv_row, lo, hi, rows, offs_n, qk_scale,
                         BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, WS: tl.constexpr):
    # _fwd_key_blocks with K and V read through tensor descriptors over the
    # (B * H * L, HEAD_DIM) rows: this head's keys start at row kv_row.
    # WS: warp-specialized (a producer warpgroup loads K and V).
    for start in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        kt = k_desc.load([kv_row + start, 0]).T
        s = tl.dot(q, kt)
        if CAUSAL_MASK:
            s = tl.where(rows[:, None] >= (start + offs_n)[None, :], s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([kv_row + start, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def attn_fwd_desc_kernel(q_desc, k_desc, v_desc, o_desc, m_ptr, L, qk_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, WS: tl.constexpr = False):
    # attn_fwd_kernel for contiguous q, k, v, o, read and written through host
    # tensor descriptors of their (B * H * L, HEAD_DIM) rows (TMA on Hopper),
    # with L a multiple of BLOCK_M and of BLOCK_N: no block crosses a head.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([bh * L + start_m, 0])
    m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        acc, m_i, l_i = _fwd_desc_key_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, 0, start_m, rows, offs_n,
                                             qk_scale, BLOCK_N, False, WS)
        acc, m_i, l_i = _fwd_desc_key_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, start_m, start_m + BLOCK_M,
                                             rows, offs_n, qk_scale, BLOCK_N, True, False)
    else:
        acc, m_i, l_i = _fwd_desc_key_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, 0, L, rows, offs_n,
                                             qk_scale, BLOCK_N, False, WS)
    o = acc / l_i[:, None]
    tl.store(m_ptr + bh * L + rows, m_i + tl.log2(l_i))
    o_desc.store([bh * L + start_m, 0], o.to(o_desc.dtype))


@triton.jit
def attn_fwd_persistent_kernel(q_desc, k_desc, v_desc, o_desc, m_ptr, L, BH, qk_scale,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               NUM_PROGRAMS: tl.constexpr):
    # attn_fwd_desc_kernel without the causal mask, persistent: NUM_PROGRAMS
    # programs walk the BH * (L // BLOCK_M) tiles (a head's query blocks one
    # after another), and the tile loop is warp-specialized: on sm_90a a
    # producer warpgroup loads every tile's K and V, the next tile's while
    # the program's warps run this one's epilogue.
    blocks = L // BLOCK_M
    offs_n = tl.arange(0, BLOCK_N)
    for tile in tl.range(tl.program_id(0), blocks * BH, NUM_PROGRAMS, warp_specialize=True):
        bh = tile // blocks
        start_m = (tile % blocks) * BLOCK_M
        rows = start_m + tl.arange(0, BLOCK_M)
        q = q_desc.load([bh * L + start_m, 0])
        m_i = tl.full((BLOCK_M,), -float("inf"), tl.float32)
        l_i = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
        acc, m_i, l_i = _fwd_desc_key_blocks(acc, m_i, l_i, q, k_desc, v_desc, bh * L, 0, L, rows, offs_n,
                                             qk_scale, BLOCK_N, False, False)
        o = acc / l_i[:, None]
        tl.store(m_ptr + bh * L + rows, m_i + tl.log2(l_i))
        o_desc.store([bh * L + start_m, 0], o.to(o_desc.dtype))


# --- backward ---------------------------------------------------------------------------------------

@triton.jit
def attn_bwd_preprocess(o_ptr, do_ptr, delta_ptr, H, L,
                        stride_ob, stride_oh, stride_om, stride_od,
                        stride_dob, stride_doh, stride_dom, stride_dod,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    # grid: (cdiv(L, BLOCK_M), B * H); delta is a contiguous (B * H, L) fp32 array.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_d = tl.arange(0, HEAD_DIM)
    live = rows[:, None] < L
    o = tl.load(o_ptr + b * stride_ob + h * stride_oh + rows[:, None] * stride_om + offs_d[None, :] * stride_od,
                mask=live, other=0.0)
    do = tl.load(do_ptr + b * stride_dob + h * stride_doh + rows[:, None] * stride_dom
                 + offs_d[None, :] * stride_dod, mask=live, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(delta_ptr + bh * L + rows, delta, mask=rows < L)


@triton.jit
def _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                       stride_qm, stride_qd, stride_dom, stride_dod,
                       lo, hi, cols, offs_m, offs_d, L, qk_scale,
                       BLOCK_M: tl.constexpr, CAUSAL_MASK: tl.constexpr, ROW_MASK: tl.constexpr):
    # Query rows lo .. hi-1 in blocks of BLOCK_M, added into dK and dV of the
    # key rows `cols`.  Everything is kept transposed (keys along axis 0):
    # K Q^T, V dO^T and P^T come out of the dots in the shape they are used in.
    for start in range(lo, hi, BLOCK_M):
        rows = start + offs_m
        qt_ptrs = q_base + offs_d[:, None] * stride_qd + rows[None, :] * stride_qm
        dot_ptrs = do_base + offs_d[:, None] * stride_dod + rows[None, :] * stride_dom
        if ROW_MASK:
            qt = tl.load(qt_ptrs, mask=rows[None, :] < L, other=0.0)
            dot = tl.load(dot_ptrs, mask=rows[None, :] < L, other=0.0)
            m = tl.load(m_base + rows, mask=rows < L, other=0.0)
            delta = tl.load(delta_base + rows, mask=rows < L, other=0.0)
        else:
            qt = tl.load(qt_ptrs)
            dot = tl.load(dot_ptrs)
            m = tl.load(m_base + rows)
            delta = tl.load(delta_base + rows)
        pt = tl.exp2(tl.dot(k, qt) * qk_scale - m[None, :])
        if CAUSAL_MASK:
            pt = tl.where(rows[None, :] >= cols[:, None], pt, 0.0)
        if ROW_MASK:
            pt = tl.where(rows[None, :] < L, pt, 0.0)
        dv = tl.dot(pt.to(dot.dtype), tl.trans(dot), dv)
        dpt = tl.dot(v, dot)
        dst = pt * (dpt - delta[None, :])
        dk = tl.dot(dst.to(qt.dtype), tl.trans(qt), dk)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, delta_ptr, dk_ptr, dv_ptr, H, L, qk_scale, sm_scale,
                         stride_qb, stride_qh, stride_qm, stride_qd,
                         stride_kb, stride_kh, stride_kn, stride_kd,
                         stride_vb, stride_vh, stride_vn, stride_vd,
                         stride_dob, stride_doh, stride_dom, stride_dod,
                         stride_dkb, stride_dkh, stride_dkn, stride_dkd,
                         stride_dvb, stride_dvh, stride_dvn, stride_dvd,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    # grid: (cdiv(L, BLOCK_N), B * H); BLOCK_N is a multiple of BLOCK_M.
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    q_base = q_ptr + b * stride_qb + h * stride_qh
    do_base = do_ptr + b * stride_dob + h * stride_doh
    m_base = m_ptr + bh * L
    delta_base = delta_ptr + bh * L

    cols = start_n + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    # Key rows past L load as zeros; their dK and dV are not stored.
    live = cols[:, None] < L
    k = tl.load(k_ptr + b * stride_kb + h * stride_kh + cols[:, None] * stride_kn + offs_d[None, :] * stride_kd,
                mask=live, other=0.0)
    v = tl.load(v_ptr + b * stride_vb + h * stride_vh + cols[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                mask=live, other=0.0)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    full = (L // BLOCK_M) * BLOCK_M
    if CAUSAL:
        # Query rows below start_n see none of these keys.  The rows of the
        # diagonal, start_n .. start_n + BLOCK_N, take the mask; the rows below
        # them see every key, the last partial block with a row mask.
        diag_end = start_n + BLOCK_N
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod,
                                    start_n, tl.minimum(diag_end, L), cols, offs_m, offs_d, L, qk_scale,
                                    BLOCK_M, True, True)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod,
                                    diag_end, full, cols, offs_m, offs_d, L, qk_scale, BLOCK_M, False, False)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod,
                                    tl.maximum(diag_end, full), L, cols, offs_m, offs_d, L, qk_scale,
                                    BLOCK_M, False, True)
    else:
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod,
                                    0, full, cols, offs_m, offs_d, L, qk_scale, BLOCK_M, False, False)
        dk, dv = _dkdv_query_blocks(dk, dv, k, v, q_base, do_base, m_base, delta_base,
                                    stride_qm, stride_qd, stride_dom, stride_dod,
                                    full, L, cols, offs_m, offs_d, L, qk_scale, BLOCK_M, False, True)

    # dS was taken against base-2 scores; the chain rule through S * sm_scale
    # leaves one factor sm_scale on dK.
    dk = dk * sm_scale
    tl.store(dk_ptr + b * stride_dkb + h * stride_dkh + cols[:, None] * stride_dkn + offs_d[None, :] * stride_dkd,
             dk.to(dk_ptr.dtype.element_ty), mask=live)
    tl.store(dv_ptr + b * stride_dvb + h * stride_dvh + cols[:, None] * stride_dvn + offs_d[None, :] * stride_dvd,
             dv.to(dv_ptr.dtype.element_ty), mask=live)


@triton.jit
def _dq_key_blocks(dq, q, do, m, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                   lo, hi, rows, offs_n, offs_d, L, qk_scale,
                   BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, KEY_MASK: tl.constexpr):
    # Keys lo .. hi-1 in blocks of BLOCK_N, added into dQ of the query rows `rows`.
    for start in range(lo, hi, BLOCK_N):
        cols = start + offs_n
        kt_ptrs = k_base + offs_d[:, None] * stride_kd + cols[None, :] * stride_kn
        vt_ptrs = v_base + offs_d[:, None] * stride_vd + cols[None, :] * stride_vn
        if KEY_MASK:
            kt = tl.load(kt_ptrs, mask=cols[None, :] < L, other=0.0)
            vt = tl.load(vt_ptrs, mask=cols[None, :] < L, other=0.0)
        else:
            kt = tl.load(kt_ptrs)
            vt = tl.load(vt_ptrs)
        p = tl.exp2(tl.dot(q, kt) * qk_scale - m[:, None])
        if CAUSAL_MASK:
            p = tl.where(rows[:, None] >= cols[None, :], p, 0.0)
        if KEY_MASK:
            p = tl.where(cols[None, :] < L, p, 0.0)
        dp = tl.dot(do, vt)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(kt.dtype), tl.trans(kt), dq)
    return dq


@triton.jit
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, do_ptr, m_ptr, delta_ptr, dq_ptr, H, L, qk_scale, sm_scale,
                       stride_qb, stride_qh, stride_qm, stride_qd,
                       stride_kb, stride_kh, stride_kn, stride_kd,
                       stride_vb, stride_vh, stride_vn, stride_vd,
                       stride_dob, stride_doh, stride_dom, stride_dod,
                       stride_dqb, stride_dqh, stride_dqm, stride_dqd,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr):
    # grid: (cdiv(L, BLOCK_M), B * H); BLOCK_M is a multiple of BLOCK_N.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh

    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    live = rows[:, None] < L
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + rows[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=live, other=0.0)
    do = tl.load(do_ptr + b * stride_dob + h * stride_doh + rows[:, None] * stride_dom
                 + offs_d[None, :] * stride_dod, mask=live, other=0.0)
    m = tl.load(m_ptr + bh * L + rows, mask=rows < L, other=0.0)
    delta = tl.load(delta_ptr + bh * L + rows, mask=rows < L, other=0.0)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        dq = _dq_key_blocks(dq, q, do, m, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                            0, start_m, rows, offs_n, offs_d, L, qk_scale, BLOCK_N, False, False)
        dq = _dq_key_blocks(dq, q, do, m, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                            start_m, tl.minimum(start_m + BLOCK_M, L), rows, offs_n, offs_d, L, qk_scale,
                            BLOCK_N, True, True)
    else:
        full = (L // BLOCK_N) * BLOCK_N
        dq = _dq_key_blocks(dq, q, do, m, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                            0, full, rows, offs_n, offs_d, L, qk_scale, BLOCK_N, False, False)
        dq = _dq_key_blocks(dq, q, do, m, delta, k_base, v_base, stride_kn, stride_kd, stride_vn, stride_vd,
                            full, L, rows, offs_n, offs_d, L, qk_scale, BLOCK_N, False, True)
    dq = dq * sm_scale
    tl.store(dq_ptr + b * stride_dqb + h * stride_dqh + rows[:, None] * stride_dqm + offs_d[None, :] * stride_dqd,
             dq.to(dq_ptr.dtype.element_ty), mask=live)


@triton.jit
def _dkdv_desc_query_blocks(dk, dv, k, v, q_desc, do_desc, m_base, delta_base, row0, lo, hi, cols, offs_m,
                            qk_scale, BLOCK_M: tl.constexpr, CAUSAL_MASK: tl.constexpr):
    # _dkdv_query_blocks with Q and dO read through tensor descriptors over
    # the (B * H * L, HEAD_DIM) rows (this head's queries start at row row0):
    # one Q tile serves K Q^T and dS^T Q, one dO tile P^T dO and V dO^T.
    for start in range(lo, hi, BLOCK_M):
        rows = start + offs_m
        q = q_desc.load([row0 + start, 0])
        do = do_desc.load([row0 + start, 0])
        m = tl.load(m_base + rows)
        delta = tl.load(delta_base + rows)
        pt = tl.exp2(tl.dot(k, q.T) * qk_scale - m[None, :])
        if CAUSAL_MASK:
            pt = tl.where(rows[None, :] >= cols[:, None], pt, 0.0)
        dv = tl.dot(pt.to(do.dtype), do, dv)
        dpt = tl.dot(v, do.T)
        dst = pt * (dpt - delta[None, :])
        dk = tl.dot(dst.to(q.dtype), q, dk)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_desc_kernel(q_desc, k_desc, v_desc, do_desc, dk_desc, dv_desc, m_ptr, delta_ptr, L, qk_scale,
                              sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                              CAUSAL: tl.constexpr):
    # attn_bwd_dkdv_kernel for contiguous q, k, v, dO, dK and dV through host
    # tensor descriptors of their (B * H * L, HEAD_DIM) rows (TMA on Hopper),
    # with L a multiple of BLOCK_N and BLOCK_N of BLOCK_M.
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1)
    cols = start_n + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    k = k_desc.load([bh * L + start_n, 0])
    v = v_desc.load([bh * L + start_n, 0])
    m_base = m_ptr + bh * L
    delta_base = delta_ptr + bh * L
    dk = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), tl.float32)
    if CAUSAL:
        # the diagonal's query rows take the mask; those below it see every key
        dk, dv = _dkdv_desc_query_blocks(dk, dv, k, v, q_desc, do_desc, m_base, delta_base, bh * L, start_n,
                                         start_n + BLOCK_N, cols, offs_m, qk_scale, BLOCK_M, True)
        dk, dv = _dkdv_desc_query_blocks(dk, dv, k, v, q_desc, do_desc, m_base, delta_base, bh * L,
                                         start_n + BLOCK_N, L, cols, offs_m, qk_scale, BLOCK_M, False)
    else:
        dk, dv = _dkdv_desc_query_blocks(dk, dv, k, v, q_desc, do_desc, m_base, delta_base, bh * L, 0, L, cols,
                                         offs_m, qk_scale, BLOCK_M, False)
    dk_desc.store([bh * L + start_n, 0], (dk * sm_scale).to(dk_desc.dtype))
    dv_desc.store([bh * L + start_n, 0], dv.to(dv_desc.dtype))


@triton.jit
def _dq_desc_key_blocks(dq, q, do, m, delta, k_desc, v_desc, kv_row, lo, hi, rows, offs_n, qk_scale,
                        BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr):
    # _dq_key_blocks with K and V read through tensor descriptors over the
    # (B * H * L, HEAD_DIM) rows (this head's keys start at row kv_row): one
    # K tile serves Q K^T and dS K.
    for start in range(lo, hi, BLOCK_N):
        k = k_desc.load([kv_row + start, 0])
        v = v_desc.load([kv_row + start, 0])
        p = tl.exp2(tl.dot(q, k.T) * qk_scale - m[:, None])
        if CAUSAL_MASK:
            p = tl.where(rows[:, None] >= (start + offs_n)[None, :], p, 0.0)
        dp = tl.dot(do, v.T)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    return dq


@triton.jit
def attn_bwd_dq_desc_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, m_ptr, delta_ptr, L, qk_scale, sm_scale,
                            HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            CAUSAL: tl.constexpr):
    # attn_bwd_dq_kernel for contiguous q, k, v, dO and dQ, read and written
    # through host tensor descriptors of their (B * H * L, HEAD_DIM) rows (TMA
    # on Hopper), with L a multiple of BLOCK_M and BLOCK_M of BLOCK_N.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    rows = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = q_desc.load([bh * L + start_m, 0])
    do = do_desc.load([bh * L + start_m, 0])
    m = tl.load(m_ptr + bh * L + rows)
    delta = tl.load(delta_ptr + bh * L + rows)
    dq = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    if CAUSAL:
        dq = _dq_desc_key_blocks(dq, q, do, m, delta, k_desc, v_desc, bh * L, 0, start_m, rows, offs_n, qk_scale,
                                 BLOCK_N, False)
        dq = _dq_desc_key_blocks(dq, q, do, m, delta, k_desc, v_desc, bh * L, start_m, start_m + BLOCK_M, rows,
                                 offs_n, qk_scale, BLOCK_N, True)
    else:
        dq = _dq_desc_key_blocks(dq, q, do, m, delta, k_desc, v_desc, bh * L, 0, L, rows, offs_n, qk_scale,
                                 BLOCK_N, False)
    dq_desc.store([bh * L + start_m, 0], (dq * sm_scale).to(dq_desc.dtype))


# --- host wrappers ----------------------------------------------------------------------------------

# (BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward by head dim, for an H100.
FWD_CONFIG = {64: (128, 64, 4, 3), 128: (128, 64, 8, 3)}
# (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages) of the backward:
# dK/dV programs hold BLOCK_N1 keys and step over BLOCK_M1 queries; dQ programs
# hold BLOCK_M2 queries and step over BLOCK_N2 keys.
BWD_CONFIG = {64: (32, 128, 128, 32, 4, 3), 128: (32, 128, 128, 32, 8, 2)}


def _is_fp8(x):
    return "float8" in str(x.dtype)


def _fp16(like):
    if _is_torch(like):
        import torch
        return torch.float16
    import numpy as np
    return np.float16


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _sm_count(x):
    import torch
    return torch.cuda.get_device_properties(x.device).multi_processor_count


def _check(q, k, v):
    if q.ndim != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k and v must be (B, H, L, D) of one shape, got {q.shape}, {k.shape}, {v.shape}")
    d = q.shape[3]
    if d < 16 or d & (d - 1):
        raise ValueError(f"head dim must be a power of two from 16, got {d}")


def attention_forward(q, k, v, causal=False, sm_scale=None, config=None, descriptors=False, warp_specialize=False,
                      persistent=False, programs=None):
    """(O, M) for q, k, v of shape (B, H, L, D): torch CUDA tensors or numpy arrays
    (run on the interpreter).  M is the (B, H, L) fp32 log-sum-exp of each row's
    scores in base-2 units, which attention_backward takes.  fp8 e4m3 inputs give
    an fp16 O.  config: (BLOCK_M, BLOCK_N, num_warps, num_stages).  descriptors:
    read and write through host tensor descriptors (attn_fwd_desc_kernel: TMA on
    Hopper), for contiguous fp16/bf16 inputs with L a multiple of both blocks;
    warp_specialize: with descriptors, a producer warpgroup loads K and V (on
    sm_90a; with 8 warps the two warpgroups then take turns at the tensor cores).
    persistent (with descriptors, not causal): attn_fwd_persistent_kernel on
    `programs` programs (default: one per SM on a GPU, 4 on the interpreter),
    its tile loop warp-specialized."""
    from arrays import empty, float32, strides
    _check(q, k, v)
    B, H, L, D = q.shape
    if sm_scale is None:
        sm_scale = D ** -0.5
    block_m, block_n, warps, stages = config or FWD_CONFIG.get(D, (64, 64, 4, 2))
    if block_m % block_n:
        raise ValueError("BLOCK_M must be a multiple of BLOCK_N")
    o = empty(q, q.shape, _fp16(q) if _is_fp8(q) else None)
    m = empty(q, (B, H, L), float32(q))
    sq, sk, sv, so = strides(q), strides(k), strides(v), strides(o)
    if (persistent or programs is not None) and not (descriptors and persistent):
        raise ValueError("programs and persistent are options of the descriptor forward, together")
    if descriptors:
        dense = (H * L * D, L * D, D, 1)
        if _is_fp8(q) or any(s != dense for s in (sq, sk, sv)) or L % block_m or L % block_n:
            raise ValueError("descriptors need contiguous fp16/bf16 q, k, v and L a multiple of both blocks")
        rows = B * H * L
        qd, od = (TensorDescriptor(x, [rows, D], [D, 1], [block_m, D]) for x in (q, o))
        kd, vd = (TensorDescriptor(x, [rows, D], [D, 1], [block_n, D]) for x in (k, v))
        if persistent:
            if causal:
                raise ValueError("the persistent forward has no causal mask")
            tiles = B * H * (L // block_m)
            if programs is None:
                programs = _sm_count(q) if _is_torch(q) and q.is_cuda else 4
            programs = max(1, min(programs, tiles))
            attn_fwd_persistent_kernel[(programs,)](qd, kd, vd, od, m, L, B * H, sm_scale * LOG2E, HEAD_DIM=D,
                                                    BLOCK_M=block_m, BLOCK_N=block_n, NUM_PROGRAMS=programs,
                                                    num_warps=warps, num_stages=stages)
            return o, m
        attn_fwd_desc_kernel[(L // block_m, B * H)](qd, kd, vd, od, m, L, sm_scale * LOG2E, HEAD_DIM=D,
                                                     BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal),
                                                     WS=bool(warp_specialize), num_warps=warps, num_stages=stages)
        return o, m
    grid = (triton.cdiv(L, block_m), B * H)
    attn_fwd_kernel[grid](q, k, v, o, m, H, L, sm_scale * LOG2E, *sq, *sk, *sv, *so,
                          HEAD_DIM=D, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal),
                          num_warps=warps, num_stages=stages)
    return o, m


def fp8_value_layout(v):
    """v with its storage made D-major (each head dim's L values adjacent), the
    same (B, H, L, D) shape: the layout in which an fp8 P V dot reads V as a
    K-major operand, as Hopper's fp8 tensor cores take it."""
    if _is_torch(v):
        return v.transpose(-1, -2).contiguous().transpose(-1, -2)
    import numpy as np
    return np.ascontiguousarray(v.swapaxes(-1, -2)).swapaxes(-1, -2)


def attention_backward(q, k, v, o, m, do, causal=False, sm_scale=None, config=None, descriptors=False):
    """(dQ, dK, dV) for dO, given the inputs and the (O, M) of attention_forward.
    fp16 or bf16; config: (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages).
    descriptors: read and write through host tensor descriptors
    (attn_bwd_dkdv_desc_kernel and attn_bwd_dq_desc_kernel: TMA on Hopper;
    contiguous tensors, L a multiple of BLOCK_N1 and BLOCK_M2)."""
    from arrays import empty, float32, strides
    _check(q, k, v)
    B, H, L, D = q.shape
    if sm_scale is None:
        sm_scale = D ** -0.5
    bm1, bn1, bm2, bn2, warps, stages = config or BWD_CONFIG.get(D, (32, 64, 64, 32, 4, 2))
    if bn1 % bm1 or bm2 % bn2:
        raise ValueError("BLOCK_N1 must be a multiple of BLOCK_M1 and BLOCK_M2 of BLOCK_N2")
    delta = empty(q, (B, H, L), float32(q))
    dq, dk, dv = empty(q, q.shape), empty(k, k.shape), empty(v, v.shape)
    sq, sk, sv, so, sdo = strides(q), strides(k), strides(v), strides(o), strides(do)
    qk_scale = sm_scale * LOG2E
    if descriptors:
        dense = (H * L * D, L * D, D, 1)
        if any(s != dense for s in (sq, sk, sv, sdo, strides(dq), strides(dk), strides(dv))) or L % bm2 or L % bn1:
            raise ValueError("descriptors need contiguous q, k, v and dO and L a multiple of BLOCK_N1 and BLOCK_M2")
    attn_bwd_preprocess[(triton.cdiv(L, 64), B * H)](o, do, delta, H, L, *so, *sdo, HEAD_DIM=D, BLOCK_M=64)
    if descriptors:
        rows = B * H * L
        qd1, dod1 = (TensorDescriptor(x, [rows, D], [D, 1], [bm1, D]) for x in (q, do))
        kd1, vd1, dkd, dvd = (TensorDescriptor(x, [rows, D], [D, 1], [bn1, D]) for x in (k, v, dk, dv))
        attn_bwd_dkdv_desc_kernel[(L // bn1, B * H)](qd1, kd1, vd1, dod1, dkd, dvd, m, delta, L, qk_scale, sm_scale,
                                                     HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=bool(causal),
                                                     num_warps=warps, num_stages=stages)
    else:
        attn_bwd_dkdv_kernel[(triton.cdiv(L, bn1), B * H)](
            q, k, v, do, m, delta, dk, dv, H, L, qk_scale, sm_scale, *sq, *sk, *sv, *sdo, *strides(dk),
            *strides(dv), HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=bool(causal), num_warps=warps,
            num_stages=stages)
    if descriptors:
        rows = B * H * L
        qd, dod, dqd = (TensorDescriptor(x, [rows, D], [D, 1], [bm2, D]) for x in (q, do, dq))
        kd, vd = (TensorDescriptor(x, [rows, D], [D, 1], [bn2, D]) for x in (k, v))
        attn_bwd_dq_desc_kernel[(L // bm2, B * H)](qd, kd, vd, dod, dqd, m, delta, L, qk_scale, sm_scale,
                                                   HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=bool(causal),
                                                   num_warps=warps, num_stages=stages)
        return dq, dk, dv
    attn_bwd_dq_kernel[(triton.cdiv(L, bm2), B * H)](
        q, k, v, do, m, delta, dq, H, L, qk_scale, sm_scale, *sq, *sk, *sv, *sdo, *strides(dq),
        HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=bool(causal), num_warps=warps, num_stages=stages)
    return dq, dk, dv


def reference(q, k, v, causal, sm_scale, do=None):
    """float64 numpy O (and with do: dQ, dK, dV) of attention on numpy inputs."""
    import numpy as np
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = q @ k.swapaxes(-1, -2) * sm_scale
    if causal:
        L = q.shape[2]
        s = np.where(np.tril(np.ones((L, L), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ v
    if do is None:
        return o
    do = np.asarray(do, dtype=np.float64)
    dv = p.swapaxes(-1, -2) @ do
    dp = do @ v.swapaxes(-1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = ds @ k * sm_scale
    dk = ds.swapaxes(-1, -2) @ q * sm_scale
    return o, dq, dk, dv


if __name__ == "__main__":
    import numpy as np
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((1, 2, 100, 64)).astype(np.float16) for _ in range(4))
    scale = 64 ** -0.5
    o, m = attention_forward(q, k, v, causal=True, sm_scale=scale, config=(32, 16, 4, 2))
    ref_o, ref_dq, ref_dk, ref_dv = reference(q, k, v, True, scale, do)
    dq, dk, dv = attention_backward(q, k, v, o, m, do, causal=True, sm_scale=scale, config=(16, 32, 32, 16, 4, 2))
    for name, got, ref in (("O", o, ref_o), ("dQ", dq, ref_dq), ("dK", dk, ref_dk), ("dV", dv, ref_dv)):
        err = np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref)
        print(f"{name} relative error: {err:.2e}")
