import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, O, sm_scale, L,
             stride_qm, stride_kn, stride_vn, stride_om,
             N_CTX, HEAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0)
    offs_m = start_m * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(Q + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BM], dtype=tl.float32) + 1.0
    acc = tl.zeros([BM, HEAD], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = (start_m + 1) * BM if CAUSAL else N_CTX
    for start_n in range(0, hi, BN):
        start_n = tl.multiple_of(start_n, BN)
        k = tl.load(K + (start_n + offs_n)[None, :] * stride_kn + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + (start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc += tl.dot(p.to(tl.float16), v)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(L + offs_m, m_i + tl.math.log2(l_i))
    tl.store(O + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(O.dtype.element_ty))
