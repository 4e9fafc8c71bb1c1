"""Vector add (fp32) and, as the bandwidth ceiling beside it, a plain copy
(torch clone).  Sizes 2^20 .. 2^28 elements; 2^26 is the anchor's size."""
from . import Case, Prepared, Workload, kernel_candidates

SIZES = [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28]
QUICK = [1 << 20, 1 << 26]


def _cases(name, tensors):
    def cases(quick):
        return [Case(name, f"2^{n.bit_length() - 1}", "fp32", work=tensors * 4 * n, x=n, series="fp32",
                     params={"n": n})
                for n in (QUICK if quick else SIZES)]
    return cases


def prepare_copy(case, env):
    torch = env.torch
    x = torch.randn(case.params["n"], device=env.device)
    return Prepared(reference=lambda: x.double(),
                    candidates={"torch": [("torch.clone", lambda: torch.clone(x))]})


def prepare_add(case, env):
    torch = env.torch
    n = case.params["n"]
    x = torch.randn(n, device=env.device)
    y = torch.randn(n, device=env.device)
    out = {s: torch.empty_like(x) for s in ("torch", "triton", "nereid")}

    def make(mod, backend):
        z = out[backend]
        return [("BLOCK=1024", lambda: mod.add(x, y, z, n, block=1024))]

    candidates, notes = kernel_candidates(env, "vector_add", make)
    candidates["torch"] = [("torch.add", lambda: torch.add(x, y, out=out["torch"]))]
    return Prepared(reference=lambda: x.double() + y.double(), candidates=candidates, notes=notes)


WORKLOADS = [
    Workload("copy", "GB/s", "memory copy, fp32 (torch clone): the bandwidth ceiling", _cases("copy", 2), prepare_copy,
             xlabel="elements", systems=("torch",), skip_note="torch only: the bandwidth ceiling"),
    Workload("vector_add", "GB/s", "vector add, fp32: out = x + y", _cases("vector_add", 3), prepare_add,
             xlabel="elements"),
]
