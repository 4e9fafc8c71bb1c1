"""The PTX of reductions within a thread: a thread's registers along the
axis are combined in four interleaved chains, then pairwise, so that the
dependent steps (what a long row waits for before its shuffles) number
about a quarter of the registers; the combines themselves stay one fewer
than the registers.  No GPU needed."""
import re

import pytest

import nereid as triton
import nereid.language as tl


@triton.jit
def row_reduce(x_ptr, out_ptr, BLOCK: tl.constexpr, KIND: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK)).to(tl.float32)
    if KIND == 0:
        r = tl.sum(x, axis=0)
    else:
        r = tl.max(x, axis=0)
    tl.store(out_ptr, r)


def in_thread_combines(ptx, op):
    """The combines before the first shuffle, and their longest dependent chain."""
    body = ptx[ptx.index(".entry"):]
    body = body[:body.index("shfl.sync")]
    depth, n = {}, 0
    for d, a, b in re.findall(r"\b%s\.f32 (%%r\d+), (%%r\d+), (%%r\d+);" % op, body):
        depth[d] = 1 + max(depth.get(a, 0), depth.get(b, 0))
        n += 1
    return n, max(depth.values())


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("kind, op", [(0, "add"), (1, "max")])
@pytest.mark.parametrize("per_thread", [2, 4, 16, 64])
def test_in_thread_chains(arch, kind, op, per_thread):
    # one warp: each lane holds per_thread elements of the row
    k = row_reduce.compile(f"*fp16:16, *fp32:16, {32 * per_thread}, {kind}", num_warps=1, arch=arch)
    n, depth = in_thread_combines(k.ptx, op)
    assert n == per_thread - 1
    chains = min(4, per_thread)
    expected = (per_thread // chains - 1) + (chains - 1).bit_length()
    assert depth == expected, (n, depth)
