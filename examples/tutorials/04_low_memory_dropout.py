"""Tutorial 4: low-memory dropout.

Dropout zeroes each element with probability p and scales the others by
1 / (1 - p).  The plain way keeps the random keep-mask in memory for the
backward pass.  Here the mask is not stored at all: it is a pure function
of a seed and the element's offset (tl.rand, a counter-based generator),
so the same seed gives the same mask again whenever it is needed, on any
number of programs and block sizes.

    python3 examples/tutorials/04_low_memory_dropout.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import nereid  # noqa: E402
import nereid.language as tl  # noqa: E402

import common as C  # noqa: E402


@nereid.jit
def masked_dropout_kernel(x_ptr, keep_ptr, out_ptr, n, p, BLOCK_SIZE: tl.constexpr):
    """The plain way: the keep-mask (1 keep, 0 drop) is an input array."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    keep = tl.load(keep_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, tl.where(keep != 0, x / (1 - p), 0.0), mask=inside)


@nereid.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK_SIZE: tl.constexpr):
    """The mask from (seed, offset): uniform numbers in [0, 1), kept above p."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=inside)


def dropout(x, keep, p):
    out = C.empty(tuple(x.shape))
    n = C.numel(x)
    masked_dropout_kernel[(nereid.cdiv(n, 1024),)](x, keep, out, n, p, BLOCK_SIZE=1024)
    return out


def seeded_dropout(x, p, seed, block=1024):
    out = C.empty(tuple(x.shape))
    n = C.numel(x)
    seeded_dropout_kernel[lambda meta: (nereid.cdiv(n, meta["BLOCK_SIZE"]),)](x, out, n, p, seed, BLOCK_SIZE=block)
    return out


def main():
    n = 1 << 20 if C.ON_GPU else 3000
    p = 0.5
    x = C.randn(n, seed=9)
    xs = C.to_numpy(x)

    keep = C.asarray((np.random.default_rng(10).random(n) > p).astype(np.float32))
    C.check("dropout with a stored mask", dropout(x, keep, p), np.where(C.to_numpy(keep) != 0, xs / (1 - p), 0), 1e-6)

    a = C.to_numpy(seeded_dropout(x, p, seed=123))
    b = C.to_numpy(seeded_dropout(x, p, seed=123, block=256))  # another grid, the same mask
    c = C.to_numpy(seeded_dropout(x, p, seed=512))
    kept = a != 0
    print(f"seeded dropout: kept {kept.mean():.3f} of the elements (p = {p})")
    if not np.array_equal(a, b):
        raise SystemExit("the same seed gave two different masks")
    if np.array_equal(a, c):
        raise SystemExit("two seeds gave the same mask")
    if abs(kept.mean() - (1 - p)) > 0.05:
        raise SystemExit("the fraction kept is not 1 - p")
    C.check("kept elements are scaled by 1/(1-p)", a[kept], xs[kept] / (1 - p), 1e-6)


if __name__ == "__main__":
    main()
