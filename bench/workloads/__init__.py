"""The benchmark workloads and the types they share.

A workload is a family of cases (one row of results each: a shape and a
dtype).  For a case, `prepare` makes the inputs on the GPU (random, the same
for every system), a float64 reference, and for each system the candidates
to try: (label, fn) pairs where fn() runs the computation into its own
output buffers and returns the outputs.  Softmax has two kernel variants and
matmul a few block configurations per system; the runner checks every
candidate, times those that pass and reports the fastest, with its label.

Listing cases needs no GPU and no torch (the dry run uses it)."""
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple


@dataclass
class Case:
    workload: str
    shape: str            # as printed, e.g. "4096x1024"
    dtype: str            # the precision, which picks the tolerance: fp32 tf32 fp16 bf16 fp8e4m3
    work: float           # bytes moved (GB/s workloads) or floating-point operations (TFLOP/s)
    x: float              # the size on the plots' x axis
    series: str           # one line per series and system on the plots
    params: dict = field(default_factory=dict)

    @property
    def id(self):
        return f"{self.workload}|{self.shape}|{self.dtype}"


Candidate = Tuple[str, Callable[[], object]]


@dataclass
class Prepared:
    reference: Callable[[], object]                     # float64 outputs, computed once when first needed
    candidates: Dict[str, List[Candidate]]              # system -> candidates
    notes: Dict[str, str] = field(default_factory=dict)  # system -> why it has no candidates


@dataclass
class Workload:
    name: str
    metric: str           # "GB/s" or "TFLOP/s"
    title: str
    cases: Callable[[bool], List[Case]]       # cases(quick)
    prepare: Optional[Callable] = None        # prepare(case, env) -> Prepared
    xlabel: str = "size"  # what Case.x is, for the plots
    systems: Tuple[str, ...] = ("torch", "triton", "nereid")  # the others are skipped, with skip_note
    skip_note: str = ""


def kernel_candidates(env, stem, make):
    """Candidates of the two compilers for kernels in bench/kernels/<stem>.py.

    make(module, backend) returns the candidate list of one compiler; a
    compiler whose module cannot be loaded (not installed, import error) gets
    a note instead.  Returns (candidates, notes)."""
    candidates, notes = {}, {}
    for backend in ("triton", "nereid"):
        module, error = env.kernels(stem, backend)
        if module is None:
            notes[backend] = error
        else:
            candidates[backend] = make(module, backend)
    return candidates, notes


def once(fn):
    """fn, called at most once; later calls return the first result."""
    memo = []

    def wrapper():
        if not memo:
            memo.append(fn())
        return memo[0]

    return wrapper


def all_workloads():
    from . import attention, layer_norm, matmul, softmax, vector_add
    return (vector_add.WORKLOADS + softmax.WORKLOADS + layer_norm.WORKLOADS + matmul.WORKLOADS
            + attention.WORKLOADS)


def select(only):
    """The workloads named in `only` (a comma-separated string; None: all).

    A name selects the workload of that name, or every workload whose name
    starts with it and an underscore: `matmul` selects matmul, matmul_llm,
    matmul_fp8, ...  Raises ValueError naming an unknown name."""
    workloads = all_workloads()
    if not only:
        return workloads
    chosen = []
    for name in [n.strip() for n in only.split(",") if n.strip()]:
        hits = [w for w in workloads if w.name == name or w.name.startswith(name + "_")]
        if not hits:
            known = ", ".join(w.name for w in workloads)
            raise ValueError(f"unknown workload '{name}' (known: {known})")
        chosen += [w for w in hits if w not in chosen]
    return [w for w in workloads if w in chosen]


def torch_dtype(torch, name):
    """The torch dtype of a case's storage dtype name."""
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
            "fp8e4m3": torch.float8_e4m3fn}[name]


ITEMSIZE = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8e4m3": 1}


def kernel_file_exists(stem):
    """True when bench/kernels/<stem>.py exists."""
    from pathlib import Path
    return (Path(__file__).resolve().parent.parent / "kernels" / f"{stem}.py").exists()
