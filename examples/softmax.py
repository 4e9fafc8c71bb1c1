"""Row-wise softmax, one program per row (rows of any length up to BLOCK_SIZE)."""
import nereid as triton
import nereid.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float('inf')).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    from arrays import empty, strides
    n_rows, n_cols = x.shape
    out = empty(x, x.shape)
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](out, x, strides(x)[0], strides(out)[0],
                              n_rows, n_cols, BLOCK_SIZE=block)
    return out


if __name__ == "__main__":
    import numpy as np
    x = np.random.randn(37, 781).astype(np.float32)
    ref = np.exp(x - x.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    print("max abs error:", float(np.max(np.abs(softmax(x) - ref))))
