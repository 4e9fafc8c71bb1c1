# RUN: nereid ir %s -k k -s '*fp32' --after lower | filecheck %s
# tl.sort / tl.topk: Triton's bitonic network over a [2, 2, ...] view of the
# block: each compare-and-swap finds the partner by an xor reduction of the
# element bits and selects the smaller or larger.
import triton
import triton.language as tl


@triton.jit
def k(p):
    x = tl.load(p + tl.arange(0, 8))
    tl.store(p + tl.arange(0, 8), tl.sort(x))
    tl.store(p + tl.arange(0, 2), tl.topk(x, 2))

# CHECK-LABEL: func @k
# CHECK:      [[X:%[0-9]+]] = load
# CHECK:      [[H:%[0-9]+]] = reshape [[X]] : tensor<2x2x2xf32>
# CHECK:      [[HI:%[0-9]+]] = bitcast [[H]] : tensor<2x2x2xi32>
# CHECK-NEXT: reduce [[HI]] {axis = 2, kind = "xor"} : tensor<2x2xi32>
# 1 + 2 + 3 layers for 8 elements
# CHECK-COUNT-5: select
# CHECK:      [[S:%[0-9]+]] = select
# CHECK-NEXT: reshape [[S]] : tensor<8xf32>
# topk(x, 2): sort pairs, then keep the larger halves with max reductions
# CHECK:      reduce {{%[0-9]+}} {axis = {{[0-9]}}, kind = "max"}
# CHECK:      [[T:%[0-9]+]] = select {{.*}} : tensor<2xf32>
# CHECK-NEXT: store {{%[0-9]+}}, [[T]], _
