"""Rotary position embedding (RoPE) applied to q and k.

q: (batch, seq, heads, head_dim), k: (batch, seq, kv_heads, head_dim) (fewer
heads under grouped-query attention); cos and sin: (max_pos, rot_dim / 2)
tables indexed through per-token positions (batch, seq).  The first rot_dim
features of each head rotate by pairs, the rest are copied unchanged.

Two pairing conventions:
- half-split (GPT-NeoX, Llama in HF): feature i pairs with i + rot_dim/2;
- interleaved (GPT-J): feature 2i pairs with 2i + 1.
For a pair (a, b) with angle i: a' = a cos - b sin, b' = b cos + a sin.

One program handles one token (batch, seq) and a block of heads of q and of
k; outputs go to separate arrays."""
import nereid as triton
import nereid.language as tl


@triton.jit
def _rotate_heads(X, Out, cos, sin, stride_xh, stride_oh, n_heads, head0, HEAD_DIM: tl.constexpr,
                  ROT_DIM: tl.constexpr, INTERLEAVED: tl.constexpr, BLOCK_H: tl.constexpr,
                  BLOCK_D: tl.constexpr):
    # X and Out point at the token's first head; cos/sin: [BLOCK_D // 2] (zero past ROT_DIM // 2)
    HALF: tl.constexpr = ROT_DIM // 2
    heads = head0 + tl.arange(0, BLOCK_H)
    hmask = heads < n_heads
    x_rows = X + heads[:, None] * stride_xh
    o_rows = Out + heads[:, None] * stride_oh
    if INTERLEAVED:
        # load the rotated features as one tile, view it as [heads, pairs, 2] and split the pairs
        d = tl.arange(0, BLOCK_D)
        m = hmask[:, None] & (d[None, :] < ROT_DIM)
        x = tl.load(x_rows + d[None, :], mask=m, other=0.0).to(tl.float32)
        a, b = tl.split(tl.reshape(x, (BLOCK_H, BLOCK_D // 2, 2)))
        ra = a * cos[None, :] - b * sin[None, :]
        rb = b * cos[None, :] + a * sin[None, :]
        out = tl.reshape(tl.join(ra, rb), (BLOCK_H, BLOCK_D))
        tl.store(o_rows + d[None, :], out.to(Out.dtype.element_ty), mask=m)
    else:
        # the two halves as two tiles of [heads, BLOCK_D // 2]
        i = tl.arange(0, BLOCK_D // 2)
        m = hmask[:, None] & (i[None, :] < HALF)
        a = tl.load(x_rows + i[None, :], mask=m, other=0.0).to(tl.float32)
        b = tl.load(x_rows + HALF + i[None, :], mask=m, other=0.0).to(tl.float32)
        tl.store(o_rows + i[None, :], (a * cos[None, :] - b * sin[None, :]).to(Out.dtype.element_ty), mask=m)
        tl.store(o_rows + HALF + i[None, :], (b * cos[None, :] + a * sin[None, :]).to(Out.dtype.element_ty),
                 mask=m)
    if ROT_DIM < HEAD_DIM:
        # partial rotary: the remaining features pass through
        REST: tl.constexpr = HEAD_DIM - ROT_DIM
        r = tl.arange(0, triton.next_power_of_2(REST))
        m = hmask[:, None] & (r[None, :] < REST)
        v = tl.load(x_rows + ROT_DIM + r[None, :], mask=m)
        tl.store(o_rows + ROT_DIM + r[None, :], v, mask=m)


@triton.jit
def rope_qk_kernel(Q, K, QOut, KOut, Cos, Sin, Pos,
                   seq_len, n_q_heads, n_kv_heads,
                   stride_qb, stride_qs, stride_qh, stride_kb, stride_ks, stride_kh,
                   stride_ob, stride_os, stride_oh, stride_kob, stride_kos, stride_koh,
                   stride_cos,
                   HEAD_DIM: tl.constexpr, ROT_DIM: tl.constexpr, INTERLEAVED: tl.constexpr,
                   BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    token = tl.program_id(0)
    head0 = tl.program_id(1) * BLOCK_H
    b = token // seq_len
    s = token % seq_len
    pos = tl.load(Pos + token)
    i = tl.arange(0, BLOCK_D // 2)
    cmask = i < ROT_DIM // 2
    cos = tl.load(Cos + pos * stride_cos + i, mask=cmask, other=0.0).to(tl.float32)
    sin = tl.load(Sin + pos * stride_cos + i, mask=cmask, other=0.0).to(tl.float32)
    _rotate_heads(Q + b * stride_qb + s * stride_qs, QOut + b * stride_ob + s * stride_os, cos, sin,
                  stride_qh, stride_oh, n_q_heads, head0, HEAD_DIM, ROT_DIM, INTERLEAVED, BLOCK_H, BLOCK_D)
    if head0 < n_kv_heads:
        _rotate_heads(K + b * stride_kb + s * stride_ks, KOut + b * stride_kob + s * stride_kos, cos, sin,
                      stride_kh, stride_koh, n_kv_heads, head0, HEAD_DIM, ROT_DIM, INTERLEAVED, BLOCK_H, BLOCK_D)


def _st(a):
    return [s // a.itemsize for s in a.strides]


def rope_qk(q, k, cos, sin, pos, q_out, k_out, interleaved, rot_dim=None, block_h=4):
    B, S, H, D = q.shape
    Hk = k.shape[2]
    rot = D if rot_dim is None else rot_dim
    block_d = triton.next_power_of_2(rot)
    grid = (B * S, triton.cdiv(H, block_h))
    qs, ks, qo, ko = _st(q), _st(k), _st(q_out), _st(k_out)
    rope_qk_kernel[grid](q, k, q_out, k_out, cos, sin, pos, S, H, Hk,
                         qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], qo[0], qo[1], qo[2], ko[0], ko[1], ko[2],
                         _st(cos)[0], HEAD_DIM=D, ROT_DIM=rot, INTERLEAVED=interleaved, BLOCK_H=block_h,
                         BLOCK_D=block_d)
