"""Tutorial 1: vector addition.

The smallest complete kernel: each program adds one block of BLOCK_SIZE
elements; the last block is cut short by a mask.  The launch grid is a
function of the meta-parameters, so the number of programs follows the
block size the kernel is launched with.

    python3 examples/tutorials/01_vector_add.py

On a GPU with torch the result is checked against torch and timed against
torch (and Triton when installed); otherwise it runs on Nereid's
interpreter over numpy arrays.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402

import common as C  # noqa: E402


@nereid.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # Program `pid` owns elements [pid * BLOCK_SIZE, (pid + 1) * BLOCK_SIZE).
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # The mask keeps the last program inside the arrays.
    in_bounds = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=in_bounds)
    b = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, a + b, mask=in_bounds)


def add(x, y):
    out = C.empty(tuple(x.shape), C.dtype_name(x))
    n = C.numel(out)
    # One program per block; meta holds the launch's arguments by name.
    grid = lambda meta: (nereid.cdiv(n, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    return out


def main():
    size = 98432 if C.ON_GPU else 5000
    x = C.rand(size, seed=1)
    y = C.rand(size, seed=2)
    out = add(x, y)
    C.check("vector add", out, C.to_numpy(x) + C.to_numpy(y), 1e-7)
    if not C.ON_GPU:
        return
    theirs = C.load_as_triton(__file__)
    providers = {"nereid": lambda size: (lambda a=C.rand(size), b=C.rand(size): add(a, b)),
                 "torch": lambda size: (lambda a=C.rand(size), b=C.rand(size): a + b)}
    if theirs is not None:
        providers["triton"] = lambda size: (lambda a=C.rand(size), b=C.rand(size): theirs.add(a, b))
    C.report(nereid, "vector-add-performance", ["size"], [2**i for i in range(12, 28, 2)], "GB/s", providers,
             lambda ms, size: 3 * size * 4 * 1e-9 / (ms * 1e-3))


if __name__ == "__main__":
    main()
