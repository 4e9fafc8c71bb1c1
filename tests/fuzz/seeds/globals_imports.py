import triton
import triton.language as tl
from triton.language import core as tlc, math as tlm
from triton import jit
from . import sibling
from .. import parent
from .utils import helper as h
import numpy as np, math

BLOCK = 1024
HALF: tl.constexpr = tl.constexpr(BLOCK // 2)
EPS = 1e-6
NEG_INF = -float("inf")
MODE = "fast"
DTYPE = tl.float16
SHAPE = (64, 32)
FLAGS = [True, False, None]
MASK = 0xFF_FF
TABLE = {"a": 1}
CALLBACK = lambda: 0
BLOCK = 2048


@jit
def use_globals(x_ptr, n):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=(i < n) & (i < HALF), other=NEG_INF)
    if MODE == "fast":
        x = x * 2
    elif MODE == "slow":
        x = x + EPS
    else:
        x = -x
    tl.store(x_ptr + i, x.to(DTYPE), mask=i < n)


@triton.heuristics({"EVEN": lambda args: args["n"] % args["B"] == 0})
@triton.jit(do_not_specialize=["n", 2], noinline=False, debug=True)
def heur(x_ptr, n, stride, B: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.arange(0, B)
    if EVEN:
        v = tl.load(x_ptr + offs * stride)
    else:
        v = tl.load(x_ptr + offs * stride, mask=offs < n, other=0)
    tl.store(x_ptr + offs * stride, v + 1, mask=offs < n)
