"""Matrix multiplication, C = A @ B, with the grouped-ordering kernel of
bench/kernels/matmul.py against torch.matmul (cuBLAS).

  matmul           fp16 and bf16, square 256 .. 8192
  matmul_llm       bf16, M in {1, 16, 128, 4096} x (N, K) of a 7B-class model's
                   projections: (4096, 4096), (14336, 4096), (4096, 14336)
  matmul_fp8       fp8 e4m3 operands, fp16 output, B column-major (K-major),
                   against torch._scaled_mm with unit scales
  matmul_tf32      fp32 operands multiplied as tf32 (Triton's default for an
                   fp32 dot; torch with allow_tf32)
  matmul_epilogue  fp16 with bias + GELU fused into the epilogue, against
                   torch.addmm then torch.nn.functional.gelu

There is no autotuner: for each shape, Nereid and Triton each try a few
(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) configurations
and the fastest correct one is reported.  Skinny shapes (M <= 256) also try
K split across 2 or 4 programs per tile."""
from . import ITEMSIZE, Case, Prepared, Workload, kernel_candidates, once, torch_dtype

SQUARE = [256, 512, 1024, 2048, 4096, 8192]
LLM_M = [1, 16, 128, 4096]
LLM_NK = [(4096, 4096), (14336, 4096), (4096, 14336)]

# Configurations for 2-byte operands, by the size of the problem; BLOCK_K is
# scaled to keep the bytes of a K step for other operand sizes (x2 for fp8,
# /2 for fp32).  (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
SMALL_M = [(16, 32, 256, 8, 4, 4), (16, 64, 128, 8, 4, 4), (16, 128, 128, 8, 4, 3), (32, 64, 128, 8, 4, 4)]
MEDIUM = [(64, 64, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4), (128, 128, 64, 8, 4, 4)]
# with TMA loads (see TMA below): at 2048 the 128x128 tile by TMA outran its pointer form
MEDIUM_TMA = [(64, 128, 64, 8, 4, 4, "tma"), (128, 128, 64, 8, 4, 4, "tma")]
LARGE = [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (128, 256, 64, 8, 8, 4), (256, 128, 64, 8, 8, 3)]
# Persistent programs (bench/kernels/matmul.py: one per SM, walking the tiles),
# tried beside LARGE on the big squares and LLM shapes.
PERSISTENT = [(128, 256, 64, 8, 8, 3, "persistent"), (128, 128, 64, 8, 4, 4, "persistent")]
# The same tiles loaded through host tensor descriptors (TMA on Hopper), for
# operands with 16-byte aligned rows (kernels.matmul.tma_applies), with or
# without the epilogue; "tma-ws-persistent" persistent and warp-specialized
# (bench/kernels/matmul.py also has "tma-ws": one tile per program, its K
# loop warp-specialized, which the persistent one outran at 4096 and 8192).
TMA = [(128, 256, 64, 8, 8, 3, "tma"), (128, 256, 64, 8, 8, 4, "tma"), (128, 256, 64, 8, 8, 3, "tma-persistent"),
       (128, 256, 64, 8, 8, 3, "tma-ws-persistent")]
# K split across programs (bench/kernels/matmul.py's matmul_splitk_kernel,
# and matmul_tma_splitk_kernel through descriptors), for skinny outputs
# (M <= 256) whose tiles are too few to fill the SMs: with M = 128,
# N = 4096 the 64x128 tiles are 64 for 132 SMs.
SPLIT_SMALL_M = [(16, 64, 128, 8, 4, 4, "splitk2"), (16, 128, 128, 8, 4, 3, "splitk4")]
SPLIT_MEDIUM = [(64, 128, 64, 8, 4, 4, "splitk2"), (128, 128, 64, 8, 8, 4, "splitk4"),
                (64, 128, 64, 8, 4, 4, "tma-splitk2")]


def configs(M, N, dtype):
    """The configurations tried for an M x N output with operands of `dtype`."""
    if M <= 32:
        base = SMALL_M + SPLIT_SMALL_M
    elif M * N <= 2048 * 2048:
        base = MEDIUM + LARGE[:2] + MEDIUM_TMA + (SPLIT_MEDIUM if M <= 256 else [])
    else:
        base = LARGE + PERSISTENT + TMA
    scale = 2 / ITEMSIZE[dtype]
    return [(bm, bn, int(bk * scale), *rest) for bm, bn, bk, *rest in base]


def config_label(cfg):
    bm, bn, bk, gm, w, s = cfg[:6]
    return f"{bm}x{bn}x{bk} g{gm} w{w} s{s}" + (f" {cfg[6]}" if len(cfg) > 6 else "")


def _case(workload, M, N, K, dtype, shape=None, series=None, x=None):
    return Case(workload, shape or f"{M}x{N}x{K}", dtype, work=2.0 * M * N * K, x=x or M, series=series or dtype,
                params={"M": M, "N": N, "K": K})


def square_cases(quick):
    if quick:
        return [_case("matmul", s, s, s, "fp16", shape=str(s)) for s in (1024, 4096, 8192)] + \
               [_case("matmul", 4096, 4096, 4096, "bf16", shape="4096")]
    return [_case("matmul", s, s, s, dt, shape=str(s)) for dt in ("fp16", "bf16") for s in SQUARE]


def llm_cases(quick):
    ms = [1, 4096] if quick else LLM_M
    nks = LLM_NK[:2] if quick else LLM_NK
    return [_case("matmul_llm", m, n, k, "bf16", series=f"N={n} K={k}") for n, k in nks for m in ms]


def _square(name, dtype, sizes, quick_sizes):
    def cases(quick):
        return [_case(name, s, s, s, dtype, shape=str(s)) for s in (quick_sizes if quick else sizes)]
    return cases


def prepare(case, env, b_column_major=False, epilogue=False):
    torch, F = env.torch, env.F
    M, N, K = case.params["M"], case.params["N"], case.params["K"]
    fp8 = case.dtype == "fp8e4m3"
    if fp8:
        a = torch.randn(M, K, device=env.device).to(torch.float8_e4m3fn)
        c_dtype = torch.float16
    else:
        a = torch.randn(M, K, device=env.device, dtype=torch_dtype(torch, case.dtype))
        c_dtype = a.dtype
    if b_column_major:
        b = torch.randn(N, K, device=env.device).to(a.dtype).t()
    else:
        b = torch.randn(K, N, device=env.device).to(a.dtype)
    bias = torch.randn(N, device=env.device, dtype=c_dtype) if epilogue else None
    activation = "gelu" if epilogue else ""
    out = {s: torch.empty(M, N, device=env.device, dtype=c_dtype) for s in ("torch", "triton", "nereid")}

    def make(mod, backend):
        c = out[backend]

        def candidate(cfg):
            return lambda: mod.matmul(c, a, b, bias, M, N, K, a.stride(), b.stride(), c.stride(), cfg, activation,
                                      env.num_sms)
        tma = mod.tma_applies(a, b, c, bias, activation)
        return [(config_label(cfg), candidate(cfg)) for cfg in configs(M, N, case.dtype)
                if tma or len(cfg) < 7 or not cfg[6].startswith("tma")]

    candidates, notes = kernel_candidates(env, "matmul", make)

    c = out["torch"]
    if fp8:
        if hasattr(torch, "_scaled_mm"):
            one = torch.ones((), device=env.device, dtype=torch.float32)
            candidates["torch"] = [("torch._scaled_mm",
                                    lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=c_dtype))]
        else:
            notes["torch"] = "torch._scaled_mm is not available in this torch"
    elif epilogue:
        candidates["torch"] = [("addmm+gelu", lambda: F.gelu(torch.addmm(bias, a, b)))]
    else:
        if case.dtype == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
        candidates["torch"] = [("torch.matmul", lambda: torch.matmul(a, b, out=c))]

    def reference():
        r = a.float().double() @ b.float().double()
        if epilogue:
            r = F.gelu(r + bias.double())
        return r

    return Prepared(reference=once(reference), candidates=candidates, notes=notes)


WORKLOADS = [
    Workload("matmul", "TFLOP/s", "matmul, square, fp16 and bf16", square_cases, prepare,
             xlabel="M = N = K"),
    Workload("matmul_llm", "TFLOP/s", "matmul, LLM projection shapes (M x N x K), bf16", llm_cases, prepare,
             xlabel="M (tokens)"),
    Workload("matmul_fp8", "TFLOP/s", "matmul, fp8 e4m3 operands (B column-major), fp16 output",
             _square("matmul_fp8", "fp8e4m3", [1024, 2048, 4096, 8192], [4096]),
             lambda case, env: prepare(case, env, b_column_major=True), xlabel="M = N = K"),
    Workload("matmul_tf32", "TFLOP/s", "matmul, fp32 operands as tf32",
             _square("matmul_tf32", "tf32", [1024, 2048, 4096, 8192], [4096]), prepare, xlabel="M = N = K"),
    Workload("matmul_epilogue", "TFLOP/s", "matmul + bias + GELU fused, fp16",
             _square("matmul_epilogue", "fp16", [1024, 2048, 4096, 8192], [4096]),
             lambda case, env: prepare(case, env, epilogue=True), xlabel="M = N = K"),
]
