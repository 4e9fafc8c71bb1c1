"""Vector addition: the smallest useful kernel."""
import nereid as triton
import nereid.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    from arrays import empty
    n = x.numel() if hasattr(x, "numel") else x.size
    out = empty(x, x.shape)
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)
    return out


if __name__ == "__main__":
    import numpy as np
    x = np.random.rand(98432).astype(np.float32)
    y = np.random.rand(98432).astype(np.float32)
    out = add(x, y)
    print("max abs error:", float(np.max(np.abs(out - (x + y)))))
