# Python 3.12 f-strings in host code: nested quotes, nested f-strings, format specs.
import triton
import triton.language as tl

songs = ["a", "b"]
msg = f"{", ".join(songs)}"
nested = f"{f"{f"{1 + 1}"}"}"
spec = f"{3.14159:{'>'}{10}.{2}f}"
multi = f"""
{
    songs[0]  # a comment in a multi-line field
}
"""
conv = f'{msg!r} {nested!s:^20} {{literal}} {spec=}'
raw = rf"\d{len(songs)}\w"
byt = rb"\x00" + b'\xff'


@triton.jit
def after_fstrings(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)
