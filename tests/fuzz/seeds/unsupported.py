import triton
import triton.language as tl


@triton.jit
def bad_break(x):
    for i in range(10):
        if i > 3:
            break


@triton.jit
def bad_chain(a, b, c):
    return a < b < c


@triton.jit
def bad_comp(x):
    return [i * 2 for i in range(4)]


@triton.jit
def bad_args(*args, **kwargs):
    pass


@triton.jit
def bad_indent(x):
    if x:
        y = 1
      z = 2


@triton.jit
def bad_string(x):
    s = 'unterminated
    return x


@triton.jit
def bad_kw(x):
    tl.store(x, 1, mask=x, mask=x)
    f(a=1, 2)
    g(*x)
    lam = lambda q: q
    d = {1: 2}
    w = (v := 3)
    t = f"{x}"
    i = 3j
    big = 99999999999999999999999


@triton.jit
def good(x):
    return x
