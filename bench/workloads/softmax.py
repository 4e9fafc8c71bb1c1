"""Fused softmax over rows: 4096 rows x 256 .. 32768 columns, fp16 and fp32.

Two kernel forms for each compiler (bench/kernels/softmax.py): one program
per row, and persistent programs looping over rows with tl.range; the faster
is reported, with its name.  torch: torch.softmax."""
from . import ITEMSIZE, Case, Prepared, Workload, kernel_candidates, once, torch_dtype

ROWS = 4096
COLS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
QUICK = [1024, 4096, 16384]


def cases(quick):
    return [Case("softmax", f"{ROWS}x{n}", dt, work=2 * ROWS * n * ITEMSIZE[dt], x=n, series=dt,
                 params={"rows": ROWS, "cols": n})
            for dt in ("fp16", "fp32") for n in (QUICK if quick else COLS)]


def prepare(case, env):
    torch = env.torch
    rows, cols = case.params["rows"], case.params["cols"]
    x = torch.randn(rows, cols, device=env.device, dtype=torch_dtype(torch, case.dtype))
    out = {s: torch.empty_like(x) for s in ("triton", "nereid")}

    def make(mod, backend):
        y = out[backend]
        return [("row", lambda: mod.softmax_row(y, x, rows, cols, x.stride(0), y.stride(0))),
                ("persistent", lambda: mod.softmax_persistent(y, x, rows, cols, x.stride(0), y.stride(0),
                                                              env.num_sms))]

    candidates, notes = kernel_candidates(env, "softmax", make)
    candidates["torch"] = [("torch.softmax", lambda: torch.softmax(x, dim=-1))]
    return Prepared(reference=once(lambda: torch.softmax(x.double(), dim=-1)), candidates=candidates, notes=notes)


WORKLOADS = [Workload("softmax", "GB/s", f"fused softmax over rows, {ROWS} rows", cases, prepare, xlabel="columns")]
