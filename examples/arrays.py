"""The few array operations the examples' host code needs, for numpy arrays
(run on the reference interpreter) and torch tensors (run on the GPU)."""


def is_torch(x):
    return type(x).__module__.startswith("torch")


def empty(like, shape, dtype=None):
    """An uninitialized array of `shape` beside `like` (same library and device)."""
    if is_torch(like):
        return like.new_empty(shape, dtype=dtype or like.dtype)
    import numpy as np
    return np.empty(shape, dtype=dtype or like.dtype)


def strides(x):
    """Strides in elements."""
    if is_torch(x):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def float32(like):
    if is_torch(like):
        import torch
        return torch.float32
    import numpy as np
    return np.float32
