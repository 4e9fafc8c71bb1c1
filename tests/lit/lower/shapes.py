# RUN: nereid ir %s -k shapes -s '*fp32, 64' --after lower 2>&1 | filecheck %s
# Shape functions and indexing with None and ':'.
import triton
import triton.language as tl


@triton.jit
def shapes(p, B: tl.constexpr):
    x = tl.load(p + tl.arange(0, B))
    y = tl.reshape(x, (B // 4, 4))
    z = y.trans()
    w = tl.permute(z, 1, 0)
    t = z.T
    v = tl.expand_dims(x, (0, 2))
    u = tl.broadcast_to(x[None, :], (4, B))
    col = x[:, None]
    vw = x.view(4, B // 4)
    a, b = tl.broadcast(col, x[None, :])
    tl.static_print(y.shape, z.shape, v.shape, u.shape, x.shape[0], len(y.shape), x.numel)
    same = tl.permute(y, (0, 1))
    tl.store(p + tl.arange(0, B), tl.reshape(w, B) + tl.sum(u, 0) + tl.ravel(v) + tl.ravel(t) + tl.sum(a + b, 1) + tl.ravel(vw) + tl.ravel(same))

# CHECK: note: (16, 4) (4, 16) (1, 64, 1) (4, 64) 64 2 64
# CHECK-LABEL: func @shapes
# CHECK:      [[X:%[0-9]+]] = load {{.*}} : tensor<64xf32>
# CHECK-NEXT: [[Y:%[0-9]+]] = reshape [[X]] : tensor<16x4xf32>
# CHECK-NEXT: [[Z:%[0-9]+]] = trans [[Y]] {order = [1, 0]} : tensor<4x16xf32>
# CHECK-NEXT: trans [[Z]] {order = [1, 0]} : tensor<16x4xf32>
# CHECK-NEXT: trans [[Z]] {order = [1, 0]} : tensor<16x4xf32>
# CHECK-NEXT: [[V0:%[0-9]+]] = expand_dims [[X]] {axis = 0} : tensor<1x64xf32>
# CHECK-NEXT: expand_dims [[V0]] {axis = 2} : tensor<1x64x1xf32>
# CHECK-NEXT: [[U0:%[0-9]+]] = expand_dims [[X]] {axis = 0} : tensor<1x64xf32>
# CHECK-NEXT: broadcast [[U0]] : tensor<4x64xf32>
# CHECK-NEXT: [[COL:%[0-9]+]] = expand_dims [[X]] {axis = 1} : tensor<64x1xf32>
# CHECK-NEXT: reshape [[X]] {can_reorder = true} : tensor<4x16xf32>
# CHECK-NEXT: [[ROW:%[0-9]+]] = expand_dims [[X]] {axis = 0} : tensor<1x64xf32>
# CHECK-NEXT: broadcast [[COL]] : tensor<64x64xf32>
# CHECK-NEXT: broadcast [[ROW]] : tensor<64x64xf32>
# the identity permutation is no op
# CHECK-NEXT: arange {end = 64, start = 0}
