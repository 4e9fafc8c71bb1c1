"""Paged-attention decode: one new query token per sequence attends to the
sequence's keys and values, which live in a paged cache.

Caches: (num_pages, PAGE_SIZE, num_kv_heads, head_dim).  Sequence i owns the
pages block_table[i, 0 : cdiv(seq_lens[i], PAGE_SIZE)] in order; token t of the
sequence is slot t % PAGE_SIZE of page block_table[i, t // PAGE_SIZE].  Query
heads share kv heads in groups of QUERIES_PER_KV (grouped-query attention).
Softmax is online: a running maximum m, a running denominator l and an
accumulator rescaled by exp(m_old - m_new) page after page.

- `paged_attn_decode`: one program per (sequence, query head); scores and the
  weighted sum of values are elementwise products and reductions.
- `paged_attn_decode_gqa`: one program per (sequence, kv head) for all the
  query heads of its group at once, with tl.dot for q k^T and p v (the group
  padded to BLOCK_G rows)."""
import nereid as triton
import nereid.language as tl


@triton.jit
def paged_attn_decode(Q, KCache, VCache, BlockTable, SeqLens, Out, sm_scale,
                      stride_qs, stride_qh, stride_cp, stride_ct, stride_ch, stride_bt, stride_os, stride_oh,
                      HEAD_DIM: tl.constexpr, QUERIES_PER_KV: tl.constexpr, PAGE_SIZE: tl.constexpr,
                      BLOCK_D: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    kv_head = head // QUERIES_PER_KV
    d = tl.arange(0, BLOCK_D)
    dmask = d < HEAD_DIM
    q = tl.load(Q + seq * stride_qs + head * stride_qh + d, mask=dmask, other=0.0).to(tl.float32)
    q = q * sm_scale
    seq_len = tl.load(SeqLens + seq)
    t = tl.arange(0, PAGE_SIZE)
    m = -float("inf")
    l = 0.0
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for j in range(0, tl.cdiv(seq_len, PAGE_SIZE)):
        page = tl.load(BlockTable + seq * stride_bt + j).to(tl.int64)
        tmask = j * PAGE_SIZE + t < seq_len
        offs = page * stride_cp + t[:, None] * stride_ct + kv_head * stride_ch + d[None, :]
        kv_mask = tmask[:, None] & dmask[None, :]
        k = tl.load(KCache + offs, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1)
        s = tl.where(tmask, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(VCache + offs, mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
    out = acc / l
    tl.store(Out + seq * stride_os + head * stride_oh + d, out.to(Out.dtype.element_ty), mask=dmask)


@triton.jit
def paged_attn_decode_gqa(Q, KCache, VCache, BlockTable, SeqLens, Out, sm_scale,
                          stride_qs, stride_qh, stride_cp, stride_ct, stride_ch, stride_bt, stride_os, stride_oh,
                          HEAD_DIM: tl.constexpr, QUERIES_PER_KV: tl.constexpr, PAGE_SIZE: tl.constexpr,
                          BLOCK_D: tl.constexpr, BLOCK_G: tl.constexpr):
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    g = tl.arange(0, BLOCK_G)
    heads = kv_head * QUERIES_PER_KV + g
    gmask = g < QUERIES_PER_KV
    d = tl.arange(0, BLOCK_D)
    dmask = d < HEAD_DIM
    q = tl.load(Q + seq * stride_qs + heads[:, None] * stride_qh + d[None, :],
                mask=gmask[:, None] & dmask[None, :], other=0.0)
    seq_len = tl.load(SeqLens + seq)
    t = tl.arange(0, PAGE_SIZE)
    m = tl.full([BLOCK_G], -float("inf"), tl.float32)
    l = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for j in range(0, tl.cdiv(seq_len, PAGE_SIZE)):
        page = tl.load(BlockTable + seq * stride_bt + j).to(tl.int64)
        tmask = j * PAGE_SIZE + t < seq_len
        offs = page * stride_cp + t[:, None] * stride_ct + kv_head * stride_ch + d[None, :]
        kv_mask = tmask[:, None] & dmask[None, :]
        k = tl.load(KCache + offs, mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where(tmask[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        v = tl.load(VCache + offs, mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        l = l * alpha + tl.sum(p, axis=1)
        m = m_new
    out = acc / l[:, None]
    tl.store(Out + seq * stride_os + heads[:, None] * stride_oh + d[None, :], out.to(Out.dtype.element_ty),
             mask=gmask[:, None] & dmask[None, :])


def paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, sm_scale, use_dot=False):
    n_seqs, n_heads, head_dim = q.shape
    n_kv = k_cache.shape[2]
    page = k_cache.shape[1]
    assert k_cache.strides == v_cache.strides
    st = [s // k_cache.itemsize for s in k_cache.strides]
    args = (q, k_cache, v_cache, block_table, seq_lens, out, sm_scale,
            q.strides[0] // q.itemsize, q.strides[1] // q.itemsize, st[0], st[1], st[2],
            block_table.strides[0] // block_table.itemsize, out.strides[0] // out.itemsize,
            out.strides[1] // out.itemsize)
    block_d = max(16, triton.next_power_of_2(head_dim)) if use_dot else triton.next_power_of_2(head_dim)
    if use_dot:
        group = n_heads // n_kv
        paged_attn_decode_gqa[(n_seqs, n_kv)](*args, HEAD_DIM=head_dim, QUERIES_PER_KV=group, PAGE_SIZE=page,
                                              BLOCK_D=block_d, BLOCK_G=max(16, triton.next_power_of_2(group)))
    else:
        paged_attn_decode[(n_seqs, n_heads)](*args, HEAD_DIM=head_dim, QUERIES_PER_KV=n_heads // n_kv,
                                             PAGE_SIZE=page, BLOCK_D=block_d)
