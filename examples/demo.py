"""Nereid demo: compile the example kernels and run them, checking each result
against numpy in float64.  Kernels run on the GPU when Nereid's GPU backend
and a GPU are available, else on the reference interpreter."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nereid as triton  # noqa: E402
import layer_norm  # noqa: E402
import matmul  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402


def gpu():
    """torch, when it can use a CUDA GPU (then the kernels run there), else None."""
    if os.environ.get("NEREID_INTERPRET", "") not in ("", "0"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def rel(got, ref):
    got = np.asarray(got, np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))


def main():
    rng = np.random.default_rng()
    rows = []
    torch = gpu()

    def dev(a):  # an input where the kernels run
        return torch.from_numpy(a).cuda() if torch else a

    def host(a):  # a result back as a numpy array
        if torch:
            torch.cuda.synchronize()
            return a.cpu().numpy()
        return a

    x = rng.standard_normal(1 << 20).astype(np.float32)
    y = rng.standard_normal(1 << 20).astype(np.float32)
    t = time.perf_counter()
    out = host(vector_add.add(dev(x), dev(y)))
    rows.append(("vector add", "1M fp32", time.perf_counter() - t, rel(out, x.astype(np.float64) + y), 1e-6))

    s = (rng.standard_normal((256, 1000)) * 2).astype(np.float32)
    t = time.perf_counter()
    out = host(softmax.softmax(dev(s)))
    s64 = s.astype(np.float64)
    ref = np.exp(s64 - s64.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    rows.append(("softmax", "256x1000 fp32", time.perf_counter() - t, rel(out, ref), 1e-5))

    xs = rng.standard_normal((128, 1536)).astype(np.float32)
    w = rng.random(1536).astype(np.float32)
    b = rng.random(1536).astype(np.float32)
    t = time.perf_counter()
    out = host(layer_norm.layer_norm(dev(xs), dev(w), dev(b))[0])
    x64 = xs.astype(np.float64)
    mu = x64.mean(1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + b
    rows.append(("layer norm", "128x1536 fp32", time.perf_counter() - t, rel(out, ref), 1e-5))

    a = rng.standard_normal((256, 384)).astype(np.float32)
    bm = rng.standard_normal((384, 320)).astype(np.float32)
    t = time.perf_counter()
    out = host(matmul.matmul(dev(a), dev(bm), "leaky_relu"))
    ref = a.astype(np.float64) @ bm
    ref = np.where(ref >= 0, ref, 0.01 * ref)
    rows.append(("matmul+leaky_relu", "256x320x384 fp32", time.perf_counter() - t, rel(out, ref), 3e-3))

    where = f"GPU ({torch.cuda.get_device_name()})" if torch else "reference interpreter (CPU)"
    print(f"Nereid {triton.__version__} - device: {where}")
    print("times include the first call's compilation" + (" and the GPU's module load" if torch else ""))
    print(f"{'kernel':<20}{'shape':<20}{'time (s)':>10}{'rel. error':>14}  check")
    ok = True
    for name, shape, sec, err, tol in rows:
        good = err < tol
        ok &= good
        print(f"{name:<20}{shape:<20}{sec:>10.3f}{err:>14.2e}  {'ok' if good else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
