"""SwiGLU: c = silu(a) * b with silu(a) = a * sigmoid(a), and its backward.

a (the gate) and b (the up projection) are (rows, cols) arrays, often the
two halves of one fused projection, so each has its own row stride.  Math in
fp32, results in the output's dtype.  The backward, given dc, gives
  db = dc * silu(a)
  da = dc * b * sigmoid(a) * (1 + a * (1 - sigmoid(a))).
A 2-d grid: rows by blocks of columns; `swiglu_fwd_tuned` lets @triton.autotune
pick the block size and num_warps."""
import nereid as triton
import nereid.language as tl


@triton.jit
def _swiglu_tile(A, B, C, stride_a, stride_b, stride_c, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(A + row * stride_a + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + row * stride_b + cols, mask=mask, other=0.0).to(tl.float32)
    c = a * tl.sigmoid(a) * b
    tl.store(C + row * stride_c + cols, c.to(C.dtype.element_ty), mask=mask)


@triton.jit
def swiglu_fwd(A, B, C, stride_a, stride_b, stride_c, n_cols, BLOCK: tl.constexpr):
    _swiglu_tile(A, B, C, stride_a, stride_b, stride_c, n_cols, BLOCK)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=4),
                          triton.Config({"BLOCK": 1024}, num_warps=8)], key=["n_cols"])
@triton.jit
def swiglu_fwd_tuned(A, B, C, stride_a, stride_b, stride_c, n_cols, BLOCK: tl.constexpr):
    _swiglu_tile(A, B, C, stride_a, stride_b, stride_c, n_cols, BLOCK)


@triton.jit
def swiglu_bwd(DC, A, B, DA, DB, stride_dc, stride_a, stride_b, stride_da, stride_db, n_cols,
               BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    dc = tl.load(DC + row * stride_dc + cols, mask=mask, other=0.0).to(tl.float32)
    a = tl.load(A + row * stride_a + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(B + row * stride_b + cols, mask=mask, other=0.0).to(tl.float32)
    sig = 1.0 / (1.0 + tl.exp(-a))
    silu = a * sig
    db = dc * silu
    da = dc * b * sig * (1.0 + a * (1.0 - sig))
    tl.store(DA + row * stride_da + cols, da.to(DA.dtype.element_ty), mask=mask)
    tl.store(DB + row * stride_db + cols, db.to(DB.dtype.element_ty), mask=mask)


def _rs(x):
    return x.strides[0] // x.itemsize


def swiglu(a, b, c, block=256):
    M, N = a.shape
    swiglu_fwd[(M, triton.cdiv(N, block))](a, b, c, _rs(a), _rs(b), _rs(c), N, BLOCK=block)


def swiglu_tuned(a, b, c):
    """The forward with the block size and num_warps chosen by the autotuner (per n_cols)."""
    M, N = a.shape
    swiglu_fwd_tuned[lambda meta: (M, triton.cdiv(N, meta["BLOCK"]))](a, b, c, _rs(a), _rs(b), _rs(c), N)


def swiglu_backward(dc, a, b, da, db, block=256):
    M, N = a.shape
    swiglu_bwd[(M, triton.cdiv(N, block))](dc, a, b, da, db, _rs(dc), _rs(a), _rs(b), _rs(da), _rs(db), N,
                                          BLOCK=block)
