"""Tutorial 2: fused softmax, on a grid sized by occupancy.

Each row is read once, normalized in registers and written once, instead of
the five passes over memory of an unfused softmax.  The kernel is
persistent: a fixed number of programs, as many as the GPU keeps resident at
once, walk over the rows with a stride.  How many fit is computed from the
compiled kernel itself: its registers per thread (n_regs) and its shared
memory (metadata.shared), against the device's limits.

    python3 examples/tutorials/02_fused_softmax.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402
from nereid.runtime import driver  # noqa: E402

import common as C  # noqa: E402


@nereid.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    # Rows first, first + step, ...; the loads of the next rows overlap this one's math.
    for r in tl.range(first, n_rows, step, num_stages=num_stages):
        cols = tl.arange(0, BLOCK_SIZE)
        inside = cols < n_cols
        # -inf outside the row: it adds nothing to the max or to the sum of exponentials.
        v = tl.load(in_ptr + r * in_row_stride + cols, mask=inside, other=-float("inf"))
        shifted = v - tl.max(v, axis=0)  # for stability: every exponent <= 0
        e = tl.exp(shifted)
        tl.store(out_ptr + r * out_row_stride + cols, e / tl.sum(e, axis=0), mask=inside)


DEVICE_PROPS = driver.active.utils.get_device_properties(driver.active.get_current_device())
_compiled = {}


def softmax(x):
    n_rows, n_cols = x.shape
    block = nereid.next_power_of_2(n_cols)
    num_warps = 4 if block < 2048 else 8 if block < 4096 else 16
    num_stages = 4 if DEVICE_PROPS["max_shared_mem"] > 200_000 else 2
    y = C.empty(tuple(x.shape), C.dtype_name(x))
    key = (block, num_warps, num_stages, C.dtype_name(x))
    if key not in _compiled:
        # Compile without launching, then ask the compiled kernel what it uses.
        k = softmax_kernel.warmup(y, x, C.stride(x, 0), C.stride(y, 0), n_rows, n_cols, BLOCK_SIZE=block,
                                  num_stages=num_stages, num_warps=num_warps, grid=(1,))
        k._init_handles()
        threads = DEVICE_PROPS["warpSize"] * num_warps
        per_sm = DEVICE_PROPS["max_num_regs"] // (k.n_regs * threads)
        if k.metadata.shared:
            per_sm = min(per_sm, DEVICE_PROPS["max_shared_mem"] // k.metadata.shared)
        _compiled[key] = (k, max(1, per_sm) * DEVICE_PROPS["multiprocessor_count"])
    k, programs = _compiled[key]
    k[(min(programs, n_rows), 1, 1)](y, x, C.stride(x, 0), C.stride(y, 0), n_rows, n_cols, block, num_stages)
    return y


def reference(x):
    x = C.to_numpy(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    shape = (1823, 781) if C.ON_GPU else (37, 300)
    x = C.randn(shape, seed=3)
    C.check("softmax fp32", softmax(x), reference(x), 1e-5)
    x16 = C.randn((shape[0] // 3, 1030), "float16", seed=4)
    C.check("softmax fp16", softmax(x16), reference(x16), 2e-3)
    if not C.ON_GPU:
        return
    import torch
    theirs = C.load_as_triton(__file__)

    def data(N):
        return C.randn((4096, N), seed=N)

    providers = {"nereid": lambda N: (lambda x=data(N): softmax(x)),
                 "torch": lambda N: (lambda x=data(N): torch.softmax(x, dim=-1))}
    if theirs is not None:
        providers["triton"] = lambda N: (lambda x=data(N): theirs.softmax(x))
    C.report(nereid, "softmax-performance", ["N"], [128 * i for i in range(2, 100, 8)], "GB/s", providers,
             lambda ms, N: 2 * 4096 * N * 4 * 1e-9 / (ms * 1e-3))


if __name__ == "__main__":
    main()
