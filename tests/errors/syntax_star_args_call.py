import triton
import triton.language as tl


@triton.jit
def forward(x_ptr, shape):
    z = tl.zeros(*shape, dtype=tl.float32)
