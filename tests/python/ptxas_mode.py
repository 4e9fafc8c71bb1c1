"""PTX check of the end-to-end suite (NEREID_TEST_PTXAS=1, part of `make test`).

Every kernel a test launches is also compiled for sm_80, sm_90 and sm_90a (wgmma) with the
same specialization, and its PTX is assembled with ptxas, which must accept
it without errors.  Needs no GPU: only ptxas (CUDA toolkit)."""
import importlib
import os
import re
import shutil
import subprocess
import tempfile

_jit = importlib.import_module("nereid.runtime.jit")
ARCHS = ("sm_80", "sm_90", "sm_90a")
_seen = set()
_V8_NARROW = re.compile(r"\b(ld|st)\.[\w.]*\.v8\.[bsuf](8|16)\b")
_installed = []


def ptxas_path():
    p = os.environ.get("PTXAS") or shutil.which("ptxas")
    if not p and os.path.exists("/usr/local/cuda/bin/ptxas"):
        p = "/usr/local/cuda/bin/ptxas"
    return p


def install():
    if _installed:
        return  # installed already (tests/compat loads this suite's conftest too)
    _installed.append(True)
    ptxas = ptxas_path()
    orig_compile = _jit.JITFunction.compile

    def compile(self, signature, num_warps=4, num_stages=3, stop_after=None, arch=None, **kw):
        k = orig_compile(self, signature, num_warps, num_stages, stop_after, arch, **kw)
        key = (self.__name__, signature, num_warps, num_stages)
        if arch is None and stop_after is None and key not in _seen:
            _seen.add(key)
            for a in ARCHS:
                gk = orig_compile(self, signature, num_warps, num_stages, None, a)
                bad = _V8_NARROW.search(gk.ptx)
                if bad:
                    raise AssertionError(f"the {a} PTX of {self.__name__} [{signature}] has '{bad.group(0)}': "
                                         f".v8 vectors hold 32-bit elements only (ptxas takes it, the GPU "
                                         f"does not do what it says)")
                with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
                    f.write(gk.ptx)
                    path = f.name
                try:
                    p = subprocess.run([ptxas, f"-arch={a}", path, "-o", os.devnull], capture_output=True,
                                       text=True)
                finally:
                    os.unlink(path)
                if p.returncode != 0:
                    raise AssertionError(f"ptxas -arch={a} rejected the PTX of {self.__name__} [{signature}]:\n"
                                         f"{p.stderr[:4000]}")
        return k

    _jit.JITFunction.compile = compile
