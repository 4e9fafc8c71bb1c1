"""Prints and asserts from a kernel, run by tests/python/test_debug_ops.py in
a child process: `debug_ops.py print|assert cpu|cuda`.  On cuda the arrays
are torch tensors on the GPU and launches are synchronous, so a failed
device assertion is reported by the launch that made it."""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import nereid as triton  # noqa: E402
import nereid.language as tl  # noqa: E402


@triton.jit
def show(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.device_print("x is", x)
    tl.device_print("h", x, hex=True)
    tl.device_print("y", y)
    tl.device_print("sum", tl.sum(x, axis=0))


@triton.jit
def check(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.device_assert(x < 100, "x too big")


def main():
    what, where = sys.argv[1], sys.argv[2]
    x = np.arange(8, dtype=np.int32) * 7 - 20
    y = np.linspace(-2, 2, 8).astype(np.float32)
    if what == "assert":
        x[5] = 500
    if where == "cuda":
        import torch
        x, y = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    if what == "print":
        show[(2,)](x, y, 6, BLOCK=8)
    else:
        check[(1,)](x, 8, BLOCK=8)
    if where == "cuda":
        torch.cuda.synchronize()
    sys.stdout.flush()
    print("done", file=sys.stderr)


if __name__ == "__main__":
    main()
