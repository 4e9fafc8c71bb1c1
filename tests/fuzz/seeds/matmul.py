import triton
import triton.language as tl


def configs():
    return [
        triton.Config({'BM': bm, 'BN': bn, 'BK': 32, 'GROUP': 8}, num_stages=s, num_warps=w)
        for bm, bn, s, w in [(128, 256, 3, 8), (64, 64, 4, 4)]
    ]


@triton.jit
def relu(x):
    return tl.where(x > 0, x, 0.0)


@triton.autotune(configs=configs(), key=['M', 'N', 'K'])
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K,
           sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP: tl.constexpr, ACT: tl.constexpr = ""):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    g = pid // per_group
    m0 = g * GROUP
    gm = min(tiles_m - m0, GROUP)
    pm = m0 + (pid % per_group) % gm
    pn = (pid % per_group) // gm
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + (rm[:, None] * sam + rk[None, :] * sak)
    b_ptrs = b_ptr + (rk[:, None] * sbk + rn[None, :] * sbn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc, allow_tf32=False)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    if ACT == "relu":
        acc = relu(acc)
    c = acc.to(tl.float16)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + scm * om[:, None] + scn * on[None, :]
    tl.store(c_ptrs, c, mask=(om[:, None] < M) & (on[None, :] < N))
