"""Host tensor descriptors, as triton.tools.tensor_descriptor.TensorDescriptor.

A TensorDescriptor passed to a kernel is specialized as "tensordesc<fp16[64, 64]>"
(its element type and block shape) and reaches the kernel as its base pointer,
its sizes (int32) and its strides (int64, in elements; the last one is 1).
desc.load / desc.store mean masked loads and stores of the block; on sm_90a the
compiler may use TMA for them, and the launch then encodes a CUtensorMap from
these same values.

signature_entry() also specializes tuple arguments, element by element.
"""


class TensorDescriptor:
    """base: an array or tensor; shape, strides: per dimension (strides in elements);
    block_shape: the block a load or store moves (powers of two); padding: "zero" or "nan"
    (what out-of-bounds elements read as)."""

    def __init__(self, base, shape, strides, block_shape, padding="zero"):
        self.base = base
        self.shape = [int(s) for s in shape]
        self.strides = [int(s) for s in strides]
        self.block_shape = [int(b) for b in block_shape]
        self.padding = padding
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"tensor descriptors have 1 to 5 dimensions, got {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"rank mismatch: shape {self.shape}, strides {self.strides}, block {self.block_shape}")
        for b in self.block_shape:
            if b < 1 or b & (b - 1):
                raise ValueError(f"block dimensions must be powers of two, got {self.block_shape}")
        if any(s <= 0 for s in self.shape):
            raise ValueError(f"shape must be positive, got {self.shape}")
        if self.strides[-1] != 1:
            raise ValueError("the last dimension must be contiguous (stride 1)")
        item = _itemsize(base)
        for st in self.strides[:-1]:
            if st * item % 16:
                raise ValueError(f"strides must be multiples of 16 bytes, got {self.strides} of {item}-byte elements")
        if _address(base) % 16:
            raise ValueError("the base must be 16-byte aligned")
        if padding not in ("zero", "nan"):
            raise ValueError(f"padding must be 'zero' or 'nan', got {padding!r}")

    @staticmethod
    def from_tensor(tensor, block_shape, padding="zero"):
        if hasattr(tensor, "stride") and callable(tensor.stride):  # torch
            strides = list(tensor.stride())
        else:  # numpy: strides in bytes
            strides = [s // tensor.itemsize for s in tensor.strides]
        return TensorDescriptor(tensor, list(tensor.shape), strides, block_shape, padding)

    def __repr__(self):
        return (f"TensorDescriptor(shape={self.shape}, strides={self.strides}, block_shape={self.block_shape}, "
                f"padding={self.padding!r})")


def _itemsize(base):
    if hasattr(base, "element_size"):
        return base.element_size()
    return base.dtype.itemsize


def _address(base):
    if hasattr(base, "data_ptr"):
        return base.data_ptr()
    return base.__array_interface__["data"][0]


def is_aggregate(v):
    """Arguments specialized by signature_entry: tuples and tensor descriptors (Nereid's or Triton's)."""
    return isinstance(v, tuple) or (type(v).__name__ == "TensorDescriptor" and hasattr(v, "block_shape"))


def signature_entry(leaf, name, v):
    """(signature text, {runtime argument name: value}) of an aggregate argument;
    leaf(name, value) gives a leaf's (text, runtime value or None)."""
    if isinstance(v, tuple):
        texts, values = [], {}
        for i, e in enumerate(v):
            t, vals = signature_entry(leaf, f"{name}.{i}", e) if is_aggregate(e) else _leaf(leaf, f"{name}.{i}", e)
            texts.append(t)
            values.update(vals)
        return "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")", values
    text, base = leaf(name + ".base", v.base)
    if not text.startswith("*"):
        raise TypeError(f"argument '{name}': the base of a tensor descriptor must be an array or a tensor")
    dtype = text[1:].split(":")[0]
    pad = ", nan" if getattr(v, "padding", "zero") == "nan" else ""
    values = {name + ".base": base}
    for i, s in enumerate(v.shape):
        values[f"{name}.shape.{i}"] = int(s)
    for i, s in enumerate(v.strides):
        values[f"{name}.strides.{i}"] = int(s)
    return f"tensordesc<{dtype}[{', '.join(str(int(b)) for b in v.block_shape)}]{pad}>", values


def _leaf(leaf, name, v):
    text, rt = leaf(name, v)
    return text, ({} if rt is None else {name: rt})
