import triton
import triton.language as tl


@triton.jit
def tabs(x_ptr, a, b, c):
	if a:
		ok = a < b < c
