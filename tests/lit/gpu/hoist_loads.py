# gpu-hoist-loads: a global load that follows block reductions (barriers
# through shared memory) is issued before the first of them, with the ops
# that compute its address, as long as no store or other memory effect
# lies between. Only loads of at most 16 bytes per thread move, 32 in all
# before one reduction, so that the registers they hold longer stay few.
# RUN: nereid ir %s -k ln -s '*fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp16:16, *fp32:16, i32, 1024' --stage gpu --num-warps 4 | filecheck %s
import triton
import triton.language as tl


@triton.jit
def ln(x_ptr, w_ptr, b_ptr, y_ptr, z_ptr, big_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    big = tl.load(big_ptr + tl.arange(0, 8192))
    y = xc / tl.sqrt(var + 1e-5) * w + b
    tl.store(y_ptr + row * n + cols, y, mask=mask)
    s = tl.sum(y, axis=0)
    z = tl.load(z_ptr + cols)
    tl.store(z_ptr + cols, (z + s + tl.sum(big, axis=0)).to(tl.float16))

# The row, then the weights and biases, before the two reductions.
# CHECK: [[X:%[0-9]+]] = load {{.*}} : tensor<1024xf16
# CHECK: [[W:%[0-9]+]] = load {{.*}} : tensor<1024xf16
# CHECK: [[B:%[0-9]+]] = load {{.*}} : tensor<1024xf16
# CHECK: reduce
# CHECK: reduce
# 256 bytes per thread: not moved.
# CHECK: [[BIG:%[0-9]+]] = load {{.*}} : tensor<8192xf32
# A load after a store moves only up to the store: before the next reduction.
# CHECK: store
# CHECK-NOT: reduce
# CHECK: [[Z:%[0-9]+]] = load {{.*}} : tensor<1024xf16
# CHECK-NEXT: reduce
# CHECK: reduce [[BIG]]
