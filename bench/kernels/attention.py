"""Fused attention after FlashAttention-2, forward and backward: the kernels
of examples/attention.py (kept identical to them; tests/python/test_attention.py
checks), with the benchmark's host functions.

q, k, v are (B, H, L, D) CUDA tensors with any strides, fp16 or bf16 (fp8
e4m3 for the forward, with an fp16 output).  Written in the Triton dialect;
bench/harness.py executes this file once with `triton` bound to Triton and
once to Nereid."""
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

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


# --- host functions ---------------------------------------------------------------------------------

def strides(x):
    """Strides in elements of a torch tensor or a numpy array."""
    if hasattr(x, "stride"):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def fwd_config(head_dim):
    """(BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward for an H100."""
    return (128, 64, 4, 3) if head_dim <= 64 else (128, 64, 8, 3)


def bwd_config(head_dim):
    """(BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages) of the backward."""
    return (32, 128, 128, 32, 4, 3) if head_dim <= 64 else (32, 128, 128, 32, 8, 2)


def _sm_count(x):
    """The SMs of a torch CUDA tensor's device; 3 on the interpreter."""
    if hasattr(x, "is_cuda") and x.is_cuda:
        import torch
        return torch.cuda.get_device_properties(x.device).multi_processor_count
    return 3


def desc_applies(q, k, v, out, config):
    """Whether the forward's "desc" configuration (attn_fwd_desc_kernel) runs
    these tensors: contiguous fp16 or bf16 q, k, v and out, L a multiple of
    both blocks (config's first two; the backward's descriptor dQ asks it of
    its dQ blocks)."""
    B, H, L, D = q.shape
    bm, bn = config[:2]
    contiguous = all(strides(x) == (H * L * D, L * D, D, 1) for x in (q, k, v, out))
    return contiguous and "float8" not in str(q.dtype) and L % bm == 0 and L % bn == 0 and bm % bn == 0


def attention(q, k, v, out, m, sm_scale, causal, config=None):
    """out = attention(q, k, v); m, a (B, H, L) fp32 tensor, receives the
    base-2 log-sum-exp of each row (the backward's input).  Tensors or, on
    Nereid's interpreter, numpy arrays (the strides are taken in elements).
    A config (BLOCK_M, BLOCK_N, num_warps, num_stages, "desc") runs
    attn_fwd_desc_kernel (see desc_applies); "desc-ws" runs it with its key
    loop warp-specialized; "desc-wsp" (not causal) runs
    attn_fwd_persistent_kernel on one program per SM."""
    B, H, L, D = q.shape
    bm, bn, warps, stages = (config or fwd_config(D))[:4]
    if bm % bn:
        # the causal split puts whole key blocks left of the diagonal block
        raise ValueError(f"BLOCK_M must be a multiple of BLOCK_N, got {bm} and {bn}")
    if config is not None and len(config) > 4 and config[4] in ("desc", "desc-ws", "desc-wsp"):
        if not desc_applies(q, k, v, out, config):
            raise ValueError("the descriptor forward needs contiguous fp16/bf16 tensors and L a multiple of the blocks")
        rows = B * H * L
        qd, od = (TensorDescriptor(x, [rows, D], [D, 1], [bm, D]) for x in (q, out))
        kd, vd = (TensorDescriptor(x, [rows, D], [D, 1], [bn, D]) for x in (k, v))
        if config[4] == "desc-wsp":
            if causal:
                raise ValueError("the persistent forward has no causal mask")
            programs = min(_sm_count(q), B * H * (L // bm))
            attn_fwd_persistent_kernel[(programs,)](qd, kd, vd, od, m, L, B * H, sm_scale * LOG2E, HEAD_DIM=D,
                                                    BLOCK_M=bm, BLOCK_N=bn, NUM_PROGRAMS=programs,
                                                    num_warps=warps, num_stages=stages)
            return out
        attn_fwd_desc_kernel[(L // bm, B * H)](qd, kd, vd, od, m, L, sm_scale * LOG2E, HEAD_DIM=D, BLOCK_M=bm,
                                                BLOCK_N=bn, CAUSAL=causal, WS=config[4] == "desc-ws", num_warps=warps,
                                                num_stages=stages)
        return out
    attn_fwd_kernel[(triton.cdiv(L, bm), B * H)](
        q, k, v, out, m, H, L, sm_scale * LOG2E, *strides(q), *strides(k), *strides(v), *strides(out),
        HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, num_warps=warps, num_stages=stages)
    return out


def attention_backward(q, k, v, o, m, do, dq, dk, dv, delta, sm_scale, causal, config=None):
    """(dq, dk, dv) from dO, written into the given tensors; m is the forward's
    log-sum-exp and delta a (B, H, L) fp32 scratch tensor.  A config
    (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages, "desc")
    runs attn_bwd_dkdv_desc_kernel and attn_bwd_dq_desc_kernel (contiguous
    fp16/bf16 tensors, L a multiple of the blocks, BLOCK_N1 of BLOCK_M1 and
    BLOCK_M2 of BLOCK_N2)."""
    B, H, L, D = q.shape
    bm1, bn1, bm2, bn2, warps, stages = (config or bwd_config(D))[:6]
    desc = config is not None and len(config) > 6 and config[6] == "desc"
    dense = (H * L * D, L * D, D, 1)
    if desc and ("float8" in str(q.dtype) or any(strides(x) != dense for x in (q, k, v, do, dq, dk, dv))
                 or L % bm2 or L % bn1 or bm2 % bn2 or bn1 % bm1):
        raise ValueError("the descriptor backward needs contiguous fp16/bf16 tensors and L a multiple of the blocks")
    attn_bwd_preprocess[(triton.cdiv(L, 64), B * H)](o, do, delta, H, L, *strides(o), *strides(do),
                                                      HEAD_DIM=D, BLOCK_M=64)
    qk_scale = sm_scale * LOG2E
    if desc:
        rows = B * H * L
        qd1, dod1 = (TensorDescriptor(x, [rows, D], [D, 1], [bm1, D]) for x in (q, do))
        kd1, vd1, dkd, dvd = (TensorDescriptor(x, [rows, D], [D, 1], [bn1, D]) for x in (k, v, dk, dv))
        attn_bwd_dkdv_desc_kernel[(L // bn1, B * H)](qd1, kd1, vd1, dod1, dkd, dvd, m, delta, L, qk_scale, sm_scale,
                                                     HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=causal,
                                                     num_warps=warps, num_stages=stages)
    else:
        attn_bwd_dkdv_kernel[(triton.cdiv(L, bn1), B * H)](
            q, k, v, do, m, delta, dk, dv, H, L, qk_scale, sm_scale, *strides(q), *strides(k), *strides(v),
            *strides(do), *strides(dk), *strides(dv),
            HEAD_DIM=D, BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=causal, num_warps=warps, num_stages=stages)
    if desc:
        qd, dod, dqd = (TensorDescriptor(x, [rows, D], [D, 1], [bm2, D]) for x in (q, do, dq))
        kd, vd = (TensorDescriptor(x, [rows, D], [D, 1], [bn2, D]) for x in (k, v))
        attn_bwd_dq_desc_kernel[(L // bm2, B * H)](qd, kd, vd, dod, dqd, m, delta, L, qk_scale, sm_scale,
                                                   HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=causal,
                                                   num_warps=warps, num_stages=stages)
        return dq, dk, dv
    attn_bwd_dq_kernel[(triton.cdiv(L, bm2), B * H)](
        q, k, v, do, m, delta, dq, H, L, qk_scale, sm_scale, *strides(q), *strides(k), *strides(v),
        *strides(do), *strides(dq),
        HEAD_DIM=D, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=causal, num_warps=warps, num_stages=stages)
    return dq, dk, dv
