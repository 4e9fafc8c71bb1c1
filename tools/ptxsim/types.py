"""PTX types as numpy dtypes, and immediates."""
import struct

import numpy as np

NP = {
    "pred": np.bool_,
    "b8": np.uint8, "u8": np.uint8, "s8": np.int8,
    "b16": np.uint16, "u16": np.uint16, "s16": np.int16, "f16": np.float16, "bf16": np.uint16,
    "b32": np.uint32, "u32": np.uint32, "s32": np.int32, "f32": np.float32,
    "f16x2": np.uint32, "bf16x2": np.uint32,
    "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64,
}
SIZE = {"pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
        "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
        "b64": 8, "u64": 8, "s64": 8, "f64": 8}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
TYPES = set(NP)


def is_signed(t):
    return t[0] == "s"


def is_int(t):
    return t[0] in "sub" and t != "bf16" and t != "bf16x2"


def is_float(t):
    return t in ("f16", "bf16", "f32", "f64", "f16x2", "bf16x2")


def imm_value(text, ty):
    """A numpy scalar of type ty for immediate text."""
    t = text.strip()
    if t.endswith("U"):
        t = t[:-1]
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if body[:2] in ("0f", "0F"):
        bits = int(body[2:], 16)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        fv, iv, isf = v, bits, True
    elif body[:2] in ("0d", "0D"):
        bits = int(body[2:], 16)
        v = struct.unpack("<d", struct.pack("<Q", bits))[0]
        fv, iv, isf = v, bits, True
    elif body[:2] in ("0x", "0X"):
        iv = int(body, 16)
        fv, isf = float(iv), False
    elif body[:2] in ("0b", "0B"):
        iv = int(body[2:], 2)
        fv, isf = float(iv), False
    elif any(c in body for c in ".eE"):
        fv, isf = float(body), True
        iv = int(fv)
    else:
        iv = int(body, 10)
        fv, isf = float(iv), False
    if neg:
        fv, iv = -fv, -iv
    if ty == "pred":
        return np.bool_(iv != 0)
    if ty in ("f32", "f64", "f16"):
        if isf and body[:2].lower() in ("0f", "0d"):
            if ty == "f32" and body[:2].lower() == "0f":
                return np.array([bits], np.uint32).view(np.float32)[0] * (np.float32(-1) if neg else np.float32(1))
            if ty == "f64" and body[:2].lower() == "0d":
                return np.array([bits], np.uint64).view(np.float64)[0] * (-1.0 if neg else 1.0)
        return NP[ty](fv)
    if ty in ("bf16", "f16x2", "bf16x2"):
        return NP[ty](iv & ((1 << (8 * SIZE[ty])) - 1))
    w = SIZE[ty]
    u = iv & ((1 << (8 * w)) - 1)
    if is_signed(ty):
        if u >= 1 << (8 * w - 1):
            u -= 1 << (8 * w)
        return SINT[w](u)
    return UINT[w](u)
