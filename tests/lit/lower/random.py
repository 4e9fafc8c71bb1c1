# RUN: nereid ir %s -k dropout -s '*fp32, *fp32, i32, fp32, i64' --after lower | filecheck %s
# tl.rand and friends are Triton's Philox generator (10 rounds by default)
# built from integer operations: umulhi, xor, mul and add on uint32.
import triton
import triton.language as tl


@triton.jit
def dropout(x_ptr, out_ptr, n, p, seed):
    offs = tl.program_id(0) * 64 + tl.arange(0, 64)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    r = tl.rand(seed, offs, n_rounds=2)
    a, b, c, d = tl.randint4x(seed, offs, 1)
    keep = r > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0) + a + b + c + d, mask=m)

# CHECK-LABEL: func @dropout
# CHECK:      [[S:%[0-9]+]] = cast %seed : u64
# the key: the seed's low and high 32 bits
# CHECK:      shr [[S]], {{%[0-9]+}} : u64
# CHECK:      cast {{%[0-9]+}} : u32
# CHECK:      and [[S]], {{%[0-9]+}} : u64
# CHECK:      cast {{%[0-9]+}} : u32
# two rounds
# CHECK-COUNT-2: umulhi {{%[0-9]+}}, {{%[0-9]+}} : tensor<64xu32>
# CHECK:      umulhi
# CHECK:      umulhi
# CHECK-NOT:  umulhi
# to a float in [0, 1)
# CHECK:      bitcast {{%[0-9]+}} : tensor<64xi32>
# CHECK:      select
# CHECK:      cast {{%[0-9]+}} : tensor<64xf32>
# CHECK:      mul
# then one round for randint4x
# CHECK:      umulhi
# CHECK:      umulhi
# CHECK-NOT:  umulhi
