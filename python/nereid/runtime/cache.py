"""Caches and dumps of the Python runtime.

- Compiled kernels are kept in memory per JITFunction, keyed by signature,
  options and target; the cubins the driver makes from their PTX are kept on
  disk by the C runtime (keyed by the PTX text, the GPU and the driver).
- Autotuning choices are kept on disk (``autotune/<key>.json``), keyed by the
  kernel's cache key (compiler version, module text: the kernel, the @jit
  helpers it calls, its constexpr globals), the configs, the values of the
  autotune key and the device, so that a second process does not tune again.
- ``NEREID_DUMP_DIR``: every compiled kernel's stages are written there.

The directory is NEREID_CACHE_DIR, else $XDG_CACHE_HOME/nereid, else
~/.cache/nereid (the same as the C runtime's); NEREID_NO_CACHE=1 turns the
disk cache off.
"""
import json
import hashlib
import os
import tempfile


def cache_dir():
    d = os.environ.get("NEREID_CACHE_DIR")
    if d:
        return d
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return os.path.join(xdg, "nereid")
    return os.path.join(os.path.expanduser("~"), ".cache", "nereid")


def disabled():
    return os.environ.get("NEREID_NO_CACHE", "") not in ("", "0")


def key_of(*parts):
    """A hex SHA-256 over parts, each length-prefixed (so no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _write_atomic(path, text):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_json(kind, key):
    """The JSON stored under (kind, key), or None (missing, unreadable, disabled)."""
    if disabled():
        return None
    path = os.path.join(cache_dir(), kind, key + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store_json(kind, key, obj):
    """Store obj under (kind, key); a failure (read-only directory...) is ignored."""
    if disabled():
        return False
    try:
        _write_atomic(os.path.join(cache_dir(), kind, key + ".json"), json.dumps(obj, indent=1, sort_keys=True))
        return True
    except OSError:
        return False


def dump(fn, kernel, signature, num_warps, num_stages, arch):
    """Write the stages of one compiled kernel into $NEREID_DUMP_DIR/<name>-<hash>/:
    the lowered IR, the block IR after the pipeline, and for GPU kernels the
    GPU IR, the PTX and the metadata (with what the driver says of the cubin
    when a GPU is present)."""
    root = os.environ.get("NEREID_DUMP_DIR")
    if not root:
        return None
    name = fn.__name__
    h = key_of(fn.cache_key(), signature, num_warps, num_stages, arch or "")[:16]
    d = os.path.join(root, f"{name}-{h}")
    try:
        os.makedirs(d, exist_ok=True)
        files = {"signature.txt": signature + "\n"}
        try:
            files[f"{name}.lower.ir"] = fn.compile(signature, num_warps, num_stages, stop_after="lower").ir
        except Exception as e:  # the dump never fails a compilation
            files[f"{name}.lower.ir"] = f"; not available: {e}\n"
        meta = {"name": name, "signature": signature, "num_warps": num_warps, "num_stages": num_stages,
                "target": arch or "interpreter", "args": [list(a) for a in kernel.args]}
        if arch:
            files[f"{name}.gpu.ir"] = kernel.ir
            files[f"{name}.ptx"] = kernel.ptx
            meta["shared"] = kernel.shared
            meta["threads_per_program"] = kernel.num_warps * 32
            from .driver import properties
            if properties(0) is not None:
                try:
                    meta["cubin"] = kernel.gpu_info(0)
                except Exception as e:
                    meta["cubin"] = f"not available: {e}"
        else:
            files[f"{name}.ir"] = kernel.ir
        files[f"{name}.json"] = json.dumps(meta, indent=1) + "\n"
        for fname, text in files.items():
            with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
                f.write(text)
    except OSError:
        return None
    return d
