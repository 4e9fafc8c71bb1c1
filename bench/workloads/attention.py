"""Fused attention, B4 H16, L in {1024, 4096, 16384}, head dims 64 and 128,
causal and not, fp16: the FlashAttention-2 kernels of
bench/kernels/attention.py (the kernels of examples/attention.py) under
Triton and Nereid, against torch.

  attention_fwd  O = softmax(Q K^T / sqrt(d) [+ causal mask]) V, against
                 torch.nn.functional.scaled_dot_product_attention
  attention_bwd  dQ, dK, dV from dO given the forward's O and log-sum-exp,
                 against torch.autograd.grad through SDPA (its backward alone)

Work counts the matrix products: 4 B H L^2 d for the forward (two products),
2.5 times that for the backward (five), half of each with the causal mask.
The float64 reference is taken for every 8th head, in blocks of query rows
(a whole score matrix at L = 16384 would take 2 GiB per head)."""
import math

from . import Case, Prepared, Workload, kernel_candidates, once

BATCH, HEADS = 4, 16
SEQS = [1024, 4096, 16384]
HEAD_DIMS = [64, 128]
EVERY = 8       # the heads compared: 0, 8
CHUNK = 1024    # query rows of the reference at a time

# (BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward, and
# (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, num_warps, num_stages) of the
# backward, tried for each head dim; the fastest correct one is reported.
# "desc": K and V through host tensor descriptors; "desc-ws": the same with
# the key loop warp-specialized (tl.range(warp_specialize=True)); "desc-wsp":
# without the causal mask, a persistent kernel whose tile loop is
# warp-specialized.
FWD_CONFIGS = {64: [(128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 4), (128, 64, 4, 3, "desc"),
                    (128, 128, 4, 3, "desc"), (64, 64, 4, 3, "desc"), (128, 128, 8, 3, "desc"),
                    (128, 128, 8, 3, "desc-ws"), (128, 128, 8, 3, "desc-wsp")],
               128: [(128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 64, 8, 3, "desc"),
                     (64, 64, 4, 3, "desc"), (128, 128, 8, 3, "desc"), (128, 128, 8, 3, "desc-ws"),
                     (128, 128, 8, 3, "desc-wsp")]}
# A backward config's "desc": Q, K, V and dO through host tensor descriptors
# (attn_bwd_dkdv_desc_kernel and attn_bwd_dq_desc_kernel).
BWD_CONFIGS = {64: [(32, 128, 128, 32, 4, 3), (64, 128, 128, 64, 8, 2), (64, 64, 64, 64, 4, 2), (64, 64, 64, 64, 4, 3),
                    (64, 64, 64, 64, 4, 2, "desc"), (64, 64, 64, 64, 4, 3, "desc"), (64, 64, 64, 64, 4, 4, "desc")],
               128: [(32, 128, 128, 32, 8, 2), (64, 64, 64, 64, 4, 2), (64, 64, 64, 64, 4, 2, "desc"),
                     (64, 64, 64, 64, 4, 3, "desc")]}


def _label(cfg):
    if len(cfg) == 5:
        return f"{cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]} {cfg[4]}"
    if len(cfg) == 4:
        return f"{cfg[0]}x{cfg[1]} w{cfg[2]} s{cfg[3]}"
    return f"kv {cfg[1]}x{cfg[0]} q {cfg[2]}x{cfg[3]} w{cfg[4]} s{cfg[5]}" + (f" {cfg[6]}" if len(cfg) > 6 else "")


def _cases(name, factor, quick_set):
    def cases(quick):
        out = []
        for causal in (False, True):
            for L in SEQS:
                for d in HEAD_DIMS:
                    if quick and (L, d, causal) not in quick_set:
                        continue
                    work = factor * 4.0 * BATCH * HEADS * L * L * d * (0.5 if causal else 1.0)
                    out.append(Case(name, f"L{L} d{d}{' causal' if causal else ''}", "fp16",
                                    work=work, x=L, series=f"d{d}{' causal' if causal else ''}",
                                    params={"seq": L, "head_dim": d, "causal": causal}))
        return out
    return cases


def _heads(t):
    """The heads the reference computes (a view: no copy)."""
    return t[:, ::EVERY]


def _inputs(case, env, n):
    torch = env.torch
    L, d = case.params["seq"], case.params["head_dim"]
    return [torch.randn(BATCH, HEADS, L, d, device=env.device, dtype=torch.float16) for _ in range(n)]


def _reference(torch, q, k, v, causal, scale, do=None):
    """float64 O (or dQ, dK, dV with do) of the compared heads, CHUNK query rows at a time."""
    q, k, v = (_heads(t).double() for t in (q, k, v))
    do = None if do is None else _heads(do).double()
    L = q.shape[2]
    o = torch.empty_like(q)
    if do is not None:
        dq, dk, dv = torch.empty_like(q), torch.zeros_like(k), torch.zeros_like(v)
    cols = torch.arange(L, device=q.device)
    for r0 in range(0, L, CHUNK):
        rows = torch.arange(r0, min(r0 + CHUNK, L), device=q.device)
        s = (q[:, :, rows] @ k.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        if do is None:
            o[:, :, rows] = p @ v
            continue
        dob = do[:, :, rows]
        dp = dob @ v.transpose(-1, -2)
        ds = p * (dp - (p * dp).sum(-1, keepdim=True))
        dq[:, :, rows] = (ds @ k) * scale
        dk += (ds.transpose(-1, -2) @ q[:, :, rows]) * scale
        dv += p.transpose(-1, -2) @ dob
    return o if do is None else (dq, dk, dv)


def prepare_fwd(case, env):
    torch, F = env.torch, env.F
    d, causal = case.params["head_dim"], case.params["causal"]
    q, k, v = _inputs(case, env, 3)
    B, H, L, _ = q.shape
    scale = 1.0 / math.sqrt(d)

    def make(mod, backend):
        o = torch.empty_like(q)
        m = torch.empty(B, H, L, device=env.device, dtype=torch.float32)

        def candidate(cfg):
            return lambda: _heads(mod.attention(q, k, v, o, m, scale, causal, cfg))
        return [(_label(cfg), candidate(cfg)) for cfg in FWD_CONFIGS[d]
                if len(cfg) == 4 or (mod.desc_applies(q, k, v, o, cfg) and not (causal and cfg[4] == "desc-wsp"))]

    candidates, notes = kernel_candidates(env, "attention", make)
    candidates["torch"] = [("sdpa", lambda: _heads(F.scaled_dot_product_attention(q, k, v, is_causal=causal)))]
    return Prepared(reference=once(lambda: _reference(torch, q, k, v, causal, scale)), candidates=candidates,
                    notes=notes)


def prepare_bwd(case, env):
    torch, F = env.torch, env.F
    d, causal = case.params["head_dim"], case.params["causal"]
    q, k, v, do = _inputs(case, env, 4)
    B, H, L, _ = q.shape
    scale = 1.0 / math.sqrt(d)

    def make(mod, backend):
        # The forward runs once here, untimed: the candidates time the backward alone.
        o = torch.empty_like(q)
        m = torch.empty(B, H, L, device=env.device, dtype=torch.float32)
        mod.attention(q, k, v, o, m, scale, causal)
        delta = torch.empty_like(m)
        dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))

        def candidate(cfg):
            def run():
                mod.attention_backward(q, k, v, o, m, do, dq, dk, dv, delta, scale, causal, cfg)
                return _heads(dq), _heads(dk), _heads(dv)
            return run
        return [(_label(cfg), candidate(cfg)) for cfg in BWD_CONFIGS[d]
                if len(cfg) == 6 or (mod.desc_applies(q, k, v, dq, cfg[2:4])
                                     and mod.desc_applies(q, k, v, dq, (cfg[1], cfg[0])))]

    candidates, notes = kernel_candidates(env, "attention", make)
    qr, kr, vr = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)

    def torch_bwd():
        g = torch.autograd.grad(out, (qr, kr, vr), do, retain_graph=True)
        return tuple(_heads(t) for t in g)

    candidates["torch"] = [("sdpa autograd", torch_bwd)]
    return Prepared(reference=once(lambda: _reference(torch, q, k, v, causal, scale, do)), candidates=candidates,
                    notes=notes)


WORKLOADS = [
    Workload("attention_fwd", "TFLOP/s", f"attention forward, fp16, B{BATCH} H{HEADS}, causal and not",
             _cases("attention_fwd", 1.0, {(4096, 128, False), (4096, 128, True)}), prepare_fwd,
             xlabel="sequence length"),
    Workload("attention_bwd", "TFLOP/s", f"attention backward (dQ, dK, dV), fp16, B{BATCH} H{HEADS}, causal and not",
             _cases("attention_bwd", 2.5, {(4096, 128, True)}), prepare_bwd, xlabel="sequence length"),
]
