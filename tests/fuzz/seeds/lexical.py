# Lexical corner cases: tabs, CRLF, form feeds, unicode, numbers, strings.
import triton
import triton.language as tl

@triton.jit
def lexical(x, \
            n):
	value = 0x_FF + 0o17 + 0b1010 + 1_000_000 + 0 + 00
	f = 1. + .5 + 1e-3 + 2.5E+2 + 1_0.0_1
	s = "dq" 'sq' """tri
ple""" r"\raw" u"\u00e9\x41\101\n"
	if n > 0:  # comment
		x = x + \
			value
	else:
		x = (x *
  f)
	return x, s

αβ = 3
nameé = "été"
