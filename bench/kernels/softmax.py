"""Row-wise softmax in two forms: one program per row, and a fixed number of
persistent programs that walk the rows with a pipelined tl.range loop.

Each row must fit in one block (BLOCK >= n_cols); statistics are kept in fp32
whatever the storage dtype.  Written in the Triton dialect; bench/harness.py
executes this file once with `triton` bound to Triton and once to Nereid."""
import triton
import triton.language as tl


@triton.jit
def softmax_row_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_persistent_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols,
                              BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # Program p handles rows p, p + P, p + 2P, ...; the loop is software
    # pipelined so that the next row's load overlaps this row's arithmetic.
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0), num_stages=NUM_STAGES):
        x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def warps_for(block):
    """Warps per program for a row of `block` elements (more threads for longer rows)."""
    if block <= 2048:
        return 4
    if block <= 8192:
        return 8
    return 16


def softmax_row(out, x, n_rows, n_cols, in_stride, out_stride):
    block = triton.next_power_of_2(n_cols)
    softmax_row_kernel[(n_rows,)](out, x, in_stride, out_stride, n_cols, BLOCK=block,
                                  num_warps=warps_for(block))
    return out


def softmax_persistent(out, x, n_rows, n_cols, in_stride, out_stride, num_sms, num_stages=2):
    block = triton.next_power_of_2(n_cols)
    warps = warps_for(block)
    # As many programs as the SMs hold at once when threads are the limit
    # (2048 per SM); programs that do not fit simply start later.
    programs = min(n_rows, num_sms * max(1, 2048 // (32 * warps)))
    softmax_persistent_kernel[(programs,)](out, x, in_stride, out_stride, n_rows, n_cols, BLOCK=block,
                                           NUM_STAGES=num_stages, num_warps=warps)
    return out
