# Triton-style kernels from source through the block pipeline and the GPU
# layout passes: memory-bound kernels end with one vectorized layout and no
# convert_layout; matmul keeps exactly the conversions tensor cores need.
# RUN: nereid ir %s -k add_kernel -s '*fp32:16, *fp32:16, *fp32:16, i32:16, 1024' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=VADD
# RUN: nereid ir %s -k softmax_kernel -s '*fp16:16, *fp16:16, i32:16, i32:16, i32:16, 1024' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=SOFTMAX
# RUN: nereid ir %s -k softmax_rows -s '*fp32:16, *fp32:16, i32, i32:16, 16, 256' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=ROWS
# RUN: nereid ir %s -k layer_norm_fwd -s '*fp16:16, *fp16:16, *fp32:16, *fp32:16, *fp32:16, *fp32:16, i32:16, i32:16, fp32, 1024' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=LN
# RUN: nereid ir %s -k matmul -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:16, i32:16, 64, 64, 32' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=MM
# RUN: nereid ir %s -k dot_minus_vec -s '*fp16:16, *fp16:16, *fp32:16, *fp32:16, 64' | nereid opt - --pass gpu-convert --pass gpu-coalesce --pass gpu-remove-converts | filecheck %s --check-prefix=VEC
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

# VADD: #[[V:L[0-9]+]] = blocked<spt = [4], tpw = [32], wpc = [4], order = [0]>
# VADD-NOT: #L{{[0-9]+}} =
# VADD-NOT: convert_layout
# VADD: load {{.*}} : tensor<1024xf32, #[[V]]>
# VADD: load {{.*}} : tensor<1024xf32, #[[V]]>
# VADD: store
# VADD-NOT: convert_layout


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float('inf')).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(tl.float16), mask=cols < n_cols)

# SOFTMAX: #[[V:L[0-9]+]] = blocked<spt = [8], tpw = [32], wpc = [4], order = [0]>
# SOFTMAX-NOT: #L{{[0-9]+}} =
# SOFTMAX-NOT: convert_layout
# SOFTMAX: reduce {{.*}} {axis = 0, kind = "max"} : f32
# SOFTMAX: store


@triton.jit
def softmax_rows(out_ptr, in_ptr, n_rows, n_cols, R: tl.constexpr, C: tl.constexpr):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    cols = tl.arange(0, C)
    offs = rows[:, None] * n_cols + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(in_ptr + offs, mask=mask, other=-float('inf'))
    x = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(x)
    tl.store(out_ptr + offs, num / tl.sum(num, axis=1)[:, None], mask=mask)

# ROWS: #[[V:L[0-9]+]] = blocked<spt = [1, 4], tpw = [1, 32], wpc = [2, 2], order = [1, 0]>
# ROWS-NEXT: #[[S:L[0-9]+]] = slice<dim = 1, parent = #[[V]]>
# ROWS-NOT: convert_layout
# ROWS: load {{.*}} : tensor<16x256xf32, #[[V]]>
# ROWS: reduce {{.*}} {axis = 1, kind = "max"} : tensor<16xf32, #[[S]]>
# ROWS: expand_dims {{.*}} : tensor<16x1xf32, #[[V]]>
# ROWS: store
# ROWS-NOT: convert_layout


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        acc += x * x
    var = tl.sum(acc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y.to(Y.dtype.element_ty), mask=mask)

# LN-NOT: convert_layout
# LN: load {{.*}} : tensor<1024xf16, #[[X:L[0-9]+]]>
# LN: load {{.*}} : tensor<1024xf32, #[[W:L[0-9]+]]>
# LN: load {{.*}} : tensor<1024xf32, #[[W]]>
# LN: load {{.*}} : tensor<1024xf16, #[[W]]>
# LN: store


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))

# MM-DAG: #[[A:L[0-9]+]] = blocked<spt = [1, 8], tpw = [8, 4], wpc = [4, 1], order = [1, 0]>
# MM-DAG: #[[B:L[0-9]+]] = blocked<spt = [1, 8], tpw = [4, 8], wpc = [4, 1], order = [1, 0]>
# MM-DAG: #[[MMA:L[0-9]+]] = mma<version = 2, wpc = [2, 2], instr = [16, 8, 16]>
# MM-DAG: #[[DA:L[0-9]+]] = dot_op<op_idx = 0, parent = #[[MMA]], k_width = 2>
# MM-DAG: #[[DB:L[0-9]+]] = dot_op<op_idx = 1, parent = #[[MMA]], k_width = 2>
# MM: = for {{.*}} : tensor<64x64xf32, #[[MMA]]>, tensor<64x32xptr<f16>, #[[A]]>, tensor<32x64xptr<f16>, #[[B]]>
# MM-NOT: convert_layout
# MM: load {{.*}} : tensor<64x32xf16, #[[A]]>
# MM-NEXT: convert_layout {{.*}} : tensor<64x32xf16, #[[DA]]>
# MM-NOT: convert_layout
# MM: load {{.*}} : tensor<32x64xf16, #[[B]]>
# MM-NEXT: convert_layout {{.*}} : tensor<32x64xf16, #[[DB]]>
# MM-NEXT: dot {{.*}} : tensor<64x64xf32, #[[MMA]]>
# MM-NOT: convert_layout
# MM: cast {{.*}} : tensor<64x64xf16, #[[MMA]]>
# MM-NEXT: convert_layout {{.*}} : tensor<64x64xf16, #[[B]]>
# MM-NOT: convert_layout
# MM: store


@triton.jit
def dot_minus_vec(a_ptr, b_ptr, m_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    m = tl.load(m_ptr + r)
    tl.store(out_ptr + r[:, None] * BLOCK + r[None, :], tl.exp2(tl.dot(a, b) - m[None, :]))

# A vector broadcast into a dot's result (attention backward's m and delta)
# is loaded in the slice of the mma layout, which uses whole 32-byte sectors
# (4 lanes x 2 floats): no conversion through shared memory.
# VEC: #[[MMA:L[0-9]+]] = mma<
# VEC: #[[S:L[0-9]+]] = slice<dim = 0, parent = #[[MMA]]>
# VEC: %[[M:[0-9]+]] = load {{.*}} : tensor<64xf32, #[[S]]>
# VEC-NOT: convert_layout
# VEC: expand_dims %[[M]] {axis = 0} : tensor<1x64xf32, #[[MMA]]>
