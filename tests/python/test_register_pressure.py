"""Register pressure of the large tiles: the kernels the benchmarks launch
with their biggest configurations assemble without spills (ptxas -v, no GPU
needed).  The bias + GELU epilogue of a 128x256 fp16 tile holds 128 fp32
accumulators a thread; emitted op by op its intermediates would all be live
at once and ptxas would spill."""
import os
import re
import subprocess

import pytest

from ptxas_mode import ptxas_path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEREID = os.path.join(ROOT, "build", "nereid")
MATMUL = os.path.join(ROOT, "bench", "kernels", "matmul.py")
MM_SIG = ("*fp16:16, *fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, "
          "i32:16, i32:1")

pytestmark = pytest.mark.skipif(not ptxas_path() or not os.path.exists(NEREID), reason="needs ptxas and build/nereid")


def info(path, kernel, sig, arch, warps, stages):
    r = subprocess.run([NEREID, "info", path, "-k", kernel, "-s", sig, "--arch", arch, "--num-warps", str(warps),
                        "--num-stages", str(stages), "--gpu", "H100", "--from", "ptxas", "--ptxas", ptxas_path()],
                       capture_output=True, text=True, env=dict(os.environ, NEREID_NO_CACHE="1"))
    assert r.returncode == 0, r.stderr
    regs = int(re.search(r"^registers:\s+(\d+)", r.stdout, re.M).group(1))
    m = re.search(r"^spills:\s+(\d+) bytes stored, (\d+) bytes loaded", r.stdout, re.M)
    return regs, int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("tile", [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)])
@pytest.mark.parametrize("epilogue", ['True, "gelu"', 'False, ""'])
def test_matmul_epilogue_no_spills(arch, tile, epilogue):
    bm, bn, bk, warps, stages = tile
    regs, st, ld = info(MATMUL, "matmul_kernel", f"{MM_SIG}, {bm}, {bn}, {bk}, 8, {epilogue}", arch, warps, stages)
    # sm_80's 128x128 tile on 4 warps with the GELU epilogue sits at ptxas's 255-register
    # limit: its allocation moves by a register with the numbering of the PTX's virtual
    # registers (a shorter prologue), which costs one 4-byte spill; more than that fails.
    allowed = 8 if arch == "sm_80" and regs == 255 and warps == 4 else 0
    assert st <= allowed and ld <= allowed, \
        f"{arch} {tile} {epilogue}: {regs} registers, {st} bytes spilled, {ld} reloaded"
    assert regs <= 255


# On sm_80 (mma.sync) the persistent 128x256 tile needs a few registers more than
# the grid version and spills 60-70 bytes; there only the sm_90a path is held to none.
@pytest.mark.parametrize("arch", ["sm_90a"])
@pytest.mark.parametrize("epilogue", ['True, "gelu"', 'False, ""'])
def test_persistent_matmul_no_spills(arch, epilogue):
    regs, st, ld = info(MATMUL, "matmul_persistent_kernel", f"{MM_SIG}, 128, 256, 64, 8, {epilogue}, 132", arch, 8, 3)
    assert st == 0 and ld == 0, f"{arch} {epilogue}: {regs} registers, {st} bytes spilled, {ld} reloaded"


import nereid as triton  # noqa: E402
import nereid.language as tl  # noqa: E402


@triton.jit
def _row_stats(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # one row of BLOCK floats per program: 32 values a thread on 4 warps, all live across two reductions
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n + cols, mask=cols < n, other=0.0)
    mean = tl.sum(x, axis=0) / n
    d = x - mean
    var = tl.sum(d * d, axis=0) / n
    tl.store(out_ptr + tl.program_id(0) * n + cols, d * tl.rsqrt(var + 1e-5) + x * mean, mask=cols < n)


def _ptxas_regs(ptx, arch):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([ptxas_path(), f"-arch={arch}", "-v", src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return int(re.search(r"Used (\d+) registers", r.stderr).group(1))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_maxnreg_is_a_ptx_directive(arch):
    """maxnreg is the entry's .maxnreg: ptxas ignores a register limit given as an option
    (-maxrregcount, or the driver JIT's) for a kernel with .reqntid, as every kernel has."""
    sig = "*fp32:16, *fp32:16, i32:16, 4096"
    free = _row_stats.compile(sig, num_warps=4, arch=arch)
    assert ".maxnreg" not in free.ptx
    limited = _row_stats.compile(sig, num_warps=4, arch=arch, maxnreg=40)
    assert re.search(r"^\.maxnreg 40\n\.reqntid 128, 1, 1$", limited.ptx, re.M), limited.ptx[:2000]
    used = _ptxas_regs(free.ptx, arch)
    assert used > 40, f"the test kernel needs only {used} registers; it checks nothing"
    assert _ptxas_regs(limited.ptx, arch) <= 40
    with pytest.raises(Exception, match="maxnreg must be from 0"):
        _row_stats.compile(sig, num_warps=4, arch=arch, maxnreg=256)
