"""Layer normalization over rows, fp16, M = 4096 rows x N = 512 .. 8192:
the forward, and the backward as two kernels (dx with dw/db partial sums,
one per program over a run of rows, then the reduction of the partial sums).
torch: torch.nn.functional.layer_norm and its autograd backward."""
from . import Case, Prepared, Workload, kernel_candidates, once

ROWS = 4096
COLS = [512, 1024, 2048, 4096, 8192]
QUICK = [1024, 4096]
EPS = 1e-5


def _cases(name, tensors):
    # Bytes: the forward reads x and writes y; the backward reads x and dy and
    # writes dx (w, b, dw, db and the row statistics are small beside them).
    def cases(quick):
        return [Case(name, f"{ROWS}x{n}", "fp16", work=tensors * ROWS * n * 2, x=n, series="fp16",
                     params={"rows": ROWS, "cols": n})
                for n in (QUICK if quick else COLS)]
    return cases


def _inputs(case, env):
    torch = env.torch
    rows, cols = case.params["rows"], case.params["cols"]
    x = torch.randn(rows, cols, device=env.device, dtype=torch.float16)
    w = (torch.rand(cols, device=env.device) + 0.5).half()
    b = torch.randn(cols, device=env.device, dtype=torch.float16)
    return x, w, b


def prepare_fwd(case, env):
    torch, F = env.torch, env.F
    rows, cols = case.params["rows"], case.params["cols"]
    x, w, b = _inputs(case, env)

    def make(mod, backend):
        y = torch.empty_like(x)
        mean = torch.empty(rows, device=env.device, dtype=torch.float32)
        rstd = torch.empty(rows, device=env.device, dtype=torch.float32)
        return [("row", lambda: mod.forward(y, mean, rstd, x, w, b, rows, cols, x.stride(0), EPS))]

    candidates, notes = kernel_candidates(env, "layer_norm", make)
    candidates["torch"] = [("F.layer_norm", lambda: F.layer_norm(x, (cols,), w, b, EPS))]
    reference = once(lambda: F.layer_norm(x.double(), (cols,), w.double(), b.double(), EPS))
    return Prepared(reference=reference, candidates=candidates, notes=notes)


def prepare_bwd(case, env):
    torch, F = env.torch, env.F
    rows, cols = case.params["rows"], case.params["cols"]
    x, w, b = _inputs(case, env)
    dy = torch.randn_like(x)
    # The row statistics the backward kernels read, as the forward stores them.
    x32 = x.float()
    mean = x32.mean(dim=1)
    rstd = torch.rsqrt(x32.var(dim=1, unbiased=False) + EPS)

    def make(mod, backend):
        dx = torch.empty_like(x)
        dw = torch.empty_like(w)
        db = torch.empty_like(b)

        def candidate(per_sm, warps=None):
            programs = mod.partials_for(rows, per_sm * env.num_sms)
            dw_part = torch.empty(programs, cols, device=env.device, dtype=torch.float32)
            db_part = torch.empty(programs, cols, device=env.device, dtype=torch.float32)
            name = f"dx+dwdb P={per_sm}/SM" + (f" w{warps}" if warps else "")
            return (name, lambda: mod.backward(dx, dw, db, dy, x, w, mean, rstd, dw_part, db_part,
                                               rows, cols, x.stride(0), programs, num_warps=warps))
        # programs per SM for the dx kernel (and rows of partial sums); from 4096
        # columns on, also one program per SM of twice the warps (half the
        # elements a thread: its rows' reductions are shorter)
        more = 2 * mod.warps_for(mod.block_for(cols))
        return [candidate(per_sm) for per_sm in (1, 2, 4)] + ([candidate(1, more)] if cols >= 4096 and more <= 16 else [])

    candidates, notes = kernel_candidates(env, "layer_norm", make)

    xt, wt, bt = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
    yt = F.layer_norm(xt, (cols,), wt, bt, EPS)
    candidates["torch"] = [("autograd", lambda: torch.autograd.grad(yt, (xt, wt, bt), dy, retain_graph=True))]

    def reference():
        xd, wd, bd = (t.double().requires_grad_(True) for t in (x, w, b))
        yd = F.layer_norm(xd, (cols,), wd, bd, EPS)
        return torch.autograd.grad(yd, (xd, wd, bd), dy.double())

    return Prepared(reference=once(reference), candidates=candidates, notes=notes)


WORKLOADS = [
    Workload("layer_norm_fwd", "GB/s", f"layer norm forward, fp16, {ROWS} rows", _cases("layer_norm_fwd", 2),
             prepare_fwd, xlabel="columns (N)"),
    Workload("layer_norm_bwd", "GB/s", f"layer norm backward (dx, dw, db), fp16, {ROWS} rows",
             _cases("layer_norm_bwd", 3), prepare_bwd, xlabel="columns (N)"),
]
