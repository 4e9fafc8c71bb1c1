"""Tensor maps of the simulator: the 128-byte objects cp.async.bulk.tensor reads.

On a GPU a tensor map (CUtensorMap) is an opaque 128-byte object that the
driver's cuTensorMapEncodeTiled writes.  The simulator defines its own
layout of those 128 bytes, documented here and in docs/ptxsim.md, and
encode_tensor_map() writes it from the same arguments as
cuTensorMapEncodeTiled, checked by the driver's documented rules.  A kernel
finds the map as on a GPU: 128 bytes (64-byte aligned) in global or const
memory, or a kernel parameter `.param .align 64 .b8 name[128]`.

Layout (little endian; entries past `rank` are zero):

    offset  size  field
      0      4    magic b"PXTM"
      4      1    layout version (1)
      5      1    rank (1..5)
      6      1    data type (CUtensorMapDataType: 0 uint8 ... 12 tfloat32_ftz)
      7      1    element size in bytes (1, 2, 4, 8)
      8      1    interleave (CUtensorMapInterleave: 0 none, 1 16B, 2 32B)
      9      1    swizzle (CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B)
     10      1    L2 promotion (CUtensorMapL2promotion, 0..3; no effect)
     11      1    out-of-bounds fill (CUtensorMapFloatOOBfill: 0 zeros, 1 NaN)
     12      4    reserved (0)
     16      8    global address
     24     40    global dims[5] (u64, elements, dimension 0 fastest)
     64     32    global strides[4] (u64, bytes, of dimensions 1..rank-1)
     96     20    box dims[5] (u32, elements)
    116      5    element strides[5] (u8)
    121      7    reserved (0)
"""
import struct

import numpy as np

MAGIC = b"PXTM"
VERSION = 1
SIZE = 128

# CUtensorMapDataType (cuda.h): element sizes, and whether out-of-bounds NaN fill applies
DATA_TYPES = {
    0: ("uint8", 1), 1: ("uint16", 2), 2: ("uint32", 4), 3: ("int32", 4), 4: ("uint64", 8), 5: ("int64", 8),
    6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2), 10: ("float32_ftz", 4),
    11: ("tfloat32", 4), 12: ("tfloat32_ftz", 4),
}
FLOAT_TYPES = {6, 7, 8, 9, 10, 11, 12}
SWIZZLE_BYTES = {0: 0, 1: 32, 2: 64, 3: 128}

# the enums of cuda.h, for callers that like names
TENSOR_MAP_DATA_TYPE = {name.upper(): code for code, (name, _) in DATA_TYPES.items()}
INTERLEAVE_NONE, INTERLEAVE_16B, INTERLEAVE_32B = 0, 1, 2
SWIZZLE_NONE, SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B = 0, 1, 2, 3
L2_PROMOTION_NONE, L2_PROMOTION_64B, L2_PROMOTION_128B, L2_PROMOTION_256B = 0, 1, 2, 3
OOB_FILL_NONE, OOB_FILL_NAN_REQUEST_ZERO_FMA = 0, 1

_HEAD = struct.Struct("<4sBBBBBBBBI")  # magic .. reserved (16 bytes)


class TensorMap:
    """A decoded tensor map: dims, strides (bytes, dimension 0's is the element
    size) and box dims fastest first."""

    def __init__(self, dtype, rank, esize, interleave, swizzle, l2, oob_fill, address, dims, strides, box, estrides):
        self.dtype, self.rank, self.esize = dtype, rank, esize
        self.interleave, self.swizzle, self.l2, self.oob_fill = interleave, swizzle, l2, oob_fill
        self.address = address
        self.dims, self.strides, self.box, self.estrides = dims, strides, box, estrides

    @property
    def swizzle_bytes(self):
        return SWIZZLE_BYTES[self.swizzle]

    def box_counts(self):
        """Elements one copy moves along each dimension (the box traversed with the element strides)."""
        return [-(-b // e) for b, e in zip(self.box, self.estrides)]

    def __repr__(self):
        return (f"TensorMap({DATA_TYPES[self.dtype][0]}, dims={self.dims}, strides={self.strides}, box={self.box}, "
                f"swizzle={self.swizzle_bytes}, address=0x{self.address:x})")


def _ints(v, n, what):
    v = [int(x) for x in v]
    if len(v) < n:
        raise ValueError(f"{what} needs {n} entries, got {len(v)}")
    return v[:n]


def encode_tensor_map(dtype, rank, global_address, global_dim, global_strides, box_dim, element_strides,
                      interleave=INTERLEAVE_NONE, swizzle=SWIZZLE_NONE, l2_promotion=L2_PROMOTION_NONE,
                      oob_fill=OOB_FILL_NONE):
    """The 128 bytes of a tiled tensor map, from cuTensorMapEncodeTiled's arguments.

    dtype: a CUtensorMapDataType value (0..12, or its name: "FLOAT16");
    rank: 1..5; global_address: an int or an Allocation (its address);
    global_dim: rank sizes, dimension 0 fastest; global_strides: rank - 1
    byte strides of dimensions 1..rank-1; box_dim, element_strides: rank
    entries; interleave, swizzle, l2_promotion, oob_fill: the cuda.h enum
    values.  Raises ValueError where the driver would return
    CUDA_ERROR_INVALID_VALUE."""
    if isinstance(dtype, str):
        if dtype.upper() not in TENSOR_MAP_DATA_TYPE:
            raise ValueError(f"unknown tensor map data type '{dtype}'")
        dtype = TENSOR_MAP_DATA_TYPE[dtype.upper()]
    dtype, rank = int(dtype), int(rank)
    if dtype not in DATA_TYPES:
        raise ValueError(f"tensor map data type {dtype} is not a CUtensorMapDataType (0..12)")
    if not 1 <= rank <= 5:
        raise ValueError(f"a tensor map has 1 to 5 dimensions, not {rank}")
    esize = DATA_TYPES[dtype][1]
    addr = int(getattr(global_address, "base", global_address))
    dims = _ints(global_dim, rank, "global_dim")
    strides = _ints(global_strides, rank - 1, "global_strides") if rank > 1 else []
    box = _ints(box_dim, rank, "box_dim")
    estr = _ints(element_strides, rank, "element_strides")
    interleave, swizzle, l2_promotion, oob_fill = int(interleave), int(swizzle), int(l2_promotion), int(oob_fill)
    if interleave not in (0, 1, 2):
        raise ValueError(f"interleave {interleave} is not a CUtensorMapInterleave")
    if swizzle not in SWIZZLE_BYTES:
        raise ValueError(f"swizzle {swizzle} is not a CUtensorMapSwizzle of sm_90 (0..3)")
    if l2_promotion not in (0, 1, 2, 3):
        raise ValueError(f"l2_promotion {l2_promotion} is not a CUtensorMapL2promotion")
    if oob_fill not in (0, 1):
        raise ValueError(f"oob_fill {oob_fill} is not a CUtensorMapFloatOOBfill")
    if oob_fill and dtype not in FLOAT_TYPES:
        raise ValueError("NaN out-of-bounds fill needs a floating-point data type")
    align = 32 if interleave == INTERLEAVE_32B else 16
    if addr % align:
        raise ValueError(f"the global address 0x{addr:x} is not {align}-byte aligned")
    if interleave != INTERLEAVE_NONE and rank < 3:
        raise ValueError("an interleaved tensor map needs at least 3 dimensions")
    for i, d in enumerate(dims):
        if not 1 <= d <= 1 << 32:
            raise ValueError(f"global_dim[{i}] = {d} is not in 1..2^32")
    for i, s in enumerate(strides):
        if s % align or not 0 < s < 1 << 40:
            raise ValueError(f"global_strides[{i}] = {s} is not a positive multiple of {align} below 2^40")
    for i, b in enumerate(box):
        if not 1 <= b <= 256:
            raise ValueError(f"box_dim[{i}] = {b} is not in 1..256")
    for i, e in enumerate(estr):
        if not 1 <= e <= 8:
            raise ValueError(f"element_strides[{i}] = {e} is not in 1..8")
    inner = box[0] * esize
    if interleave == INTERLEAVE_NONE:
        if inner % 16:
            raise ValueError(f"the box's inner dimension is {inner} bytes, not a multiple of 16")
        sw = SWIZZLE_BYTES[swizzle]
        if sw and inner > sw:
            raise ValueError(f"the box's inner dimension ({inner} bytes) is wider than the {sw}-byte swizzle")
    raw = bytearray(SIZE)
    raw[0:16] = _HEAD.pack(MAGIC, VERSION, rank, dtype, esize, interleave, swizzle, l2_promotion, oob_fill, 0)
    struct.pack_into("<Q", raw, 16, addr)
    struct.pack_into("<5Q", raw, 24, *(dims + [0] * (5 - rank)))
    struct.pack_into("<4Q", raw, 64, *(strides + [0] * (4 - len(strides))))
    struct.pack_into("<5I", raw, 96, *(box + [0] * (5 - rank)))
    struct.pack_into("<5B", raw, 116, *(estr + [0] * (5 - rank)))
    return bytes(raw)


def decode_tensor_map(raw):
    """A TensorMap from 128 bytes; ValueError if they are not one encode_tensor_map wrote."""
    raw = bytes(raw)
    if len(raw) != SIZE:
        raise ValueError(f"a tensor map has {SIZE} bytes, got {len(raw)}")
    magic, version, rank, dtype, esize, interleave, swizzle, l2, oob, _ = _HEAD.unpack_from(raw, 0)
    if magic != MAGIC or version != VERSION:
        raise ValueError("the bytes are not a tensor map (encode it with ptxsim.encode_tensor_map; the driver's "
                         "own encoding is opaque and not simulated)")
    if not 1 <= rank <= 5 or dtype not in DATA_TYPES or DATA_TYPES[dtype][1] != esize or swizzle not in SWIZZLE_BYTES:
        raise ValueError("the tensor map is corrupt (rank, data type or swizzle out of range)")
    addr = struct.unpack_from("<Q", raw, 16)[0]
    dims = list(struct.unpack_from("<5Q", raw, 24))[:rank]
    strides = [esize] + list(struct.unpack_from("<4Q", raw, 64))[:rank - 1]
    box = list(struct.unpack_from("<5I", raw, 96))[:rank]
    estr = list(struct.unpack_from("<5B", raw, 116))[:rank]
    if any(d < 1 for d in dims) or any(not 1 <= b <= 256 for b in box) or any(not 1 <= e <= 8 for e in estr):
        raise ValueError("the tensor map is corrupt (a dimension, box or element stride out of range)")
    return TensorMap(dtype, rank, esize, interleave, swizzle, l2, oob, addr, dims, strides, box, estr)


def oob_fill_bits(tm):
    """The bit pattern (uint of the element size) out-of-bounds elements read as."""
    if not tm.oob_fill:
        return 0
    return {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}.get(tm.esize, 0)


def swizzle_address(addr, swizzle_bytes):
    """The shared address the hardware writes (TMA) or reads (wgmma) for a linear one: bits
    4.. of the 16-byte chunk index XORed with bits 7.. (one bit for 32-byte, two for 64-byte,
    three for 128-byte swizzles); works on ints and integer arrays."""
    if isinstance(swizzle_bytes, np.ndarray):
        mask = np.maximum(swizzle_bytes // 16 - 1, 0)
    elif not swizzle_bytes:
        return addr
    else:
        mask = swizzle_bytes // 16 - 1
    return addr ^ (((addr >> 7) & mask) << 4)
