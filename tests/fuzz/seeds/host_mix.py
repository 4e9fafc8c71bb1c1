# -*- coding: utf-8 -*-
"""Host code of many shapes around one kernel; none of it is compiled."""
from __future__ import annotations

import functools
import os, sys
from dataclasses import dataclass, field
from typing import Optional

import triton
import triton.language as tl

DEBUG = os.environ.get("DEBUG", "0") == "1"
SIZES = {"small": 128, "large": 4096}
NAMES = [n.upper() for n in SIZES if n]
square = lambda v: v * v
count: int = 0
count += 1
a, b = 1, 2
x = y = 3
(walrus := 10)


@dataclass
class Shape:
    rows: int
    cols: int = 1
    tags: list = field(default_factory=list)

    @property
    def numel(self) -> int:
        return self.rows * self.cols

    @triton.jit
    def not_found(x):
        return x

    async def fetch(self):
        async with self.lock:
            await self.go()


@functools.lru_cache(maxsize=None)
def pick(n, *args, key=None, **kw):
    global count
    try:
        match n:
            case 0 | 1:
                return "tiny"
            case {"k": v}:
                return v
            case _:
                pass
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"bad {n!r:>{8}} {e}") from e
    finally:
        del kw
    yield from range(3)
    return {**kw, 'n': n}


@triton.jit
def scale(x_ptr, n, factor, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + i, mask=i < n)
    tl.store(x_ptr + i, v * factor, mask=i < n)


class Runner(object):
    def __init__(self, *shapes):
        self.shapes = shapes
        self.fn = lambda *a, **k: scale[(1,)](*a, **k)

    def __call__(self):
        for s in self.shapes:
            with open(os.devnull, "w") as f:
                print(s, file=f)
        else:
            return [s.numel for s in self.shapes if s.rows > 0]


if __name__ == "__main__":
    r = Runner(Shape(4, 4), Shape(rows=2))
    print(r(), sys.argv[1:] if len(sys.argv) > 1 else None, sep="\t", end="\n")
