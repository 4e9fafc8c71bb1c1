"""Attention forward (placeholder): torch's scaled_dot_product_attention is
measured; Triton and Nereid are skipped until bench/kernels/attention.py
exists.  That file is to define attention(q, k, v, out, sm_scale, causal)
for (batch, heads, seq, head_dim) fp16 tensors, returning out; the same
function then runs under both compilers."""
import math

from . import Case, Prepared, Workload, kernel_candidates, kernel_file_exists, once

BATCH, HEADS, SEQ = 4, 16, 4096
HEAD_DIMS = [64, 128]
HAVE_KERNEL = kernel_file_exists("attention")


def cases(quick):
    # Non-causal forward: two matrix products of seq x seq x head_dim per head.
    return [Case("attention_fwd", f"B{BATCH} H{HEADS} L{SEQ} d{d}", "fp16", work=4.0 * BATCH * HEADS * SEQ * SEQ * d,
                 x=d, series="fp16", params={"head_dim": d})
            for d in ([128] if quick else HEAD_DIMS)]


def _every_8th_head(fn):
    """fn, returning the heads that the reference computes (a view: no copy)."""
    return lambda: fn()[:, ::8]


def prepare(case, env):
    torch, F = env.torch, env.F
    d = case.params["head_dim"]
    q, k, v = (torch.randn(BATCH, HEADS, SEQ, d, device=env.device, dtype=torch.float16) for _ in range(3))
    scale = 1.0 / math.sqrt(d)

    def make(mod, backend):
        o = torch.empty_like(q)
        return [("fwd", _every_8th_head(lambda: mod.attention(q, k, v, o, scale, False)))]

    candidates, notes = kernel_candidates(env, "attention", make) if HAVE_KERNEL else ({}, {})
    candidates["torch"] = [("sdpa", _every_8th_head(lambda: F.scaled_dot_product_attention(q, k, v)))]

    def reference():
        # In float64 for every 8th head only: the whole score matrix would take 8 GiB.
        qd, kd, vd = (t[:, ::8].double() for t in (q, k, v))
        return torch.softmax((qd @ kd.transpose(-1, -2)) * scale, dim=-1) @ vd

    return Prepared(reference=once(reference), candidates=candidates, notes=notes)


WORKLOADS = [Workload("attention_fwd", "TFLOP/s", f"attention forward, fp16, B{BATCH} H{HEADS} L{SEQ}, non-causal",
                      cases, prepare, xlabel="head dim",
                      systems=("torch", "triton", "nereid") if HAVE_KERNEL else ("torch",),
                      skip_note="no attention kernel yet (bench/kernels/attention.py)")]
