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
  padded to BLOCK_G rows).
- `paged_attn_decode_split` + `paged_attn_reduce`: long sequences split into
  partitions of PARTITION_SIZE tokens, one program each (a 3-d grid: sequence,
  head, partition); each writes its partial output, maximum and denominator,
  and a second kernel merges the partitions of each (sequence, head),
  weighting partition i by l_i exp(m_i - max_i m_i)."""
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


@triton.jit
def paged_attn_decode_split(Q, KCache, VCache, BlockTable, SeqLens, PartOut, PartMax, PartSum, sm_scale,
                            stride_qs, stride_qh, stride_cp, stride_ct, stride_ch, stride_bt,
                            stride_ps, stride_ph, stride_pp,
                            HEAD_DIM: tl.constexpr, QUERIES_PER_KV: tl.constexpr, PAGE_SIZE: tl.constexpr,
                            PARTITION_SIZE: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    part = tl.program_id(2)
    seq_len = tl.load(SeqLens + seq)
    first = part * PARTITION_SIZE
    if first >= seq_len:
        return  # this sequence is shorter: the partition has no token
    kv_head = head // QUERIES_PER_KV
    d = tl.arange(0, BLOCK_D)
    dmask = d < HEAD_DIM
    q = tl.load(Q + seq * stride_qs + head * stride_qh + d, mask=dmask, other=0.0).to(tl.float32) * sm_scale
    t = tl.arange(0, PAGE_SIZE)
    m = -float("inf")
    l = 0.0
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    last = tl.minimum(first + PARTITION_SIZE, seq_len)
    for j in tl.range(first // PAGE_SIZE, tl.cdiv(last, PAGE_SIZE)):
        page = tl.load(BlockTable + seq * stride_bt + j).to(tl.int64)
        tmask = j * PAGE_SIZE + t < seq_len
        offs = page * stride_cp + t[:, None] * stride_ct + kv_head * stride_ch + d[None, :]
        kv_mask = tmask[:, None] & dmask[None, :]
        k = tl.load(KCache + offs, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.where(tmask, tl.sum(k * q[None, :], axis=1), -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        v = tl.load(VCache + offs, mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
    base = seq * stride_ps + head * stride_ph + part * stride_pp
    tl.store(PartOut + base * BLOCK_D + d, acc / l)
    tl.store(PartMax + base, m)
    tl.store(PartSum + base, l)


@triton.jit
def paged_attn_reduce(PartOut, PartMax, PartSum, SeqLens, Out, stride_ps, stride_ph, stride_pp,
                      stride_os, stride_oh, HEAD_DIM: tl.constexpr, PARTITION_SIZE: tl.constexpr,
                      BLOCK_D: tl.constexpr, BLOCK_P: tl.constexpr):
    seq = tl.program_id(0)
    head = tl.program_id(1)
    n_parts = tl.cdiv(tl.load(SeqLens + seq), PARTITION_SIZE)
    parts = tl.arange(0, BLOCK_P)
    pmask = parts < n_parts
    base = seq * stride_ps + head * stride_ph + parts * stride_pp
    m = tl.load(PartMax + base, mask=pmask, other=-float("inf"))
    l = tl.load(PartSum + base, mask=pmask, other=0.0)
    w = l * tl.exp(m - tl.max(m, axis=0))
    w = tl.where(pmask, w, 0.0)
    d = tl.arange(0, BLOCK_D)
    o = tl.load(PartOut + base[:, None] * BLOCK_D + d[None, :], mask=pmask[:, None], other=0.0)
    out = tl.sum(o * w[:, None], axis=0) / tl.sum(w, axis=0)
    tl.store(Out + seq * stride_os + head * stride_oh + d, out.to(Out.dtype.element_ty), mask=d < HEAD_DIM)


def paged_attention_split(q, k_cache, v_cache, block_table, seq_lens, out, sm_scale, partition_size,
                          num_warps=4):
    """Split-partition decode: partial results in fp32 scratch arrays, then the merge."""
    import numpy as np
    n_seqs, n_heads, head_dim = q.shape
    n_kv = k_cache.shape[2]
    page = k_cache.shape[1]
    max_parts = triton.cdiv(int(seq_lens.max()), partition_size)
    block_d = triton.next_power_of_2(head_dim)
    part_out = np.full((n_seqs, n_heads, max_parts, block_d), np.nan, np.float32)
    part_max = np.full((n_seqs, n_heads, max_parts), np.nan, np.float32)
    part_sum = np.full((n_seqs, n_heads, max_parts), np.nan, np.float32)
    st = [s // k_cache.itemsize for s in k_cache.strides]
    sp = [s // part_max.itemsize for s in part_max.strides]
    paged_attn_decode_split[(n_seqs, n_heads, max_parts)](
        q, k_cache, v_cache, block_table, seq_lens, part_out, part_max, part_sum, sm_scale,
        q.strides[0] // q.itemsize, q.strides[1] // q.itemsize, st[0], st[1], st[2],
        block_table.strides[0] // block_table.itemsize, sp[0], sp[1], sp[2],
        HEAD_DIM=head_dim, QUERIES_PER_KV=n_heads // n_kv, PAGE_SIZE=page, PARTITION_SIZE=partition_size,
        BLOCK_D=block_d, num_warps=num_warps)
    paged_attn_reduce[(n_seqs, n_heads)](
        part_out, part_max, part_sum, seq_lens, out, sp[0], sp[1], sp[2],
        out.strides[0] // out.itemsize, out.strides[1] // out.itemsize,
        HEAD_DIM=head_dim, PARTITION_SIZE=partition_size, BLOCK_D=block_d,
        BLOCK_P=triton.next_power_of_2(max_parts))


def paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, sm_scale, use_dot=False, num_warps=4):
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
                                              BLOCK_D=block_d, BLOCK_G=max(16, triton.next_power_of_2(group)),
                                              num_warps=num_warps)
    else:
        paged_attn_decode[(n_seqs, n_heads)](*args, HEAD_DIM=head_dim, QUERIES_PER_KV=n_heads // n_kv,
                                             PAGE_SIZE=page, BLOCK_D=block_d, num_warps=num_warps)
