# RUN: nereid ir %s -k loads -s '*fp16, *i1, i32' --after lower | filecheck %s --check-prefix=LOAD
# RUN: nereid ir %s -k atomics -s '*fp32, *i32, *fp16' --after lower | filecheck %s --check-prefix=ATOM
# Loads and stores: masks and `other` broadcast to the pointer's shape and
# `other` converts to the element type; cache and eviction hints and volatile
# become attributes; int1 memory is accessed as int8.  Atomics default to
# sem "acq_rel" and scope "gpu"; atomic max/min on floats are single
# atomic_rmw ops (the interpreter and the GPU back end implement Triton's
# sign-split integer sequence for them).
import triton
import triton.language as tl


@triton.jit
def loads(p, flags, n):
    offs = tl.arange(0, 32)
    rows = tl.arange(0, 4)[:, None]
    m = offs < n
    a = tl.load(p + offs, mask=m, other=1.5, cache_modifier=".cg", eviction_policy="evict_first")
    b = tl.load(p + rows * 32 + offs[None, :], mask=m, other=0, volatile=True)
    s = tl.load(p)
    f = tl.load(flags + offs, mask=m, other=False)
    tl.store(flags + offs, f | (a > 0), mask=m, cache_modifier=".wt")
    tl.store(p + rows * 32 + offs[None, :], b + s)
    tl.store(p + offs, 0)

# LOAD-LABEL: func @loads
# LOAD:      [[M:%[0-9]+]] = cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "lt"} : tensor<32xi1>
# LOAD:      [[O:%[0-9]+]] = const {value = 1.5} : tensor<32xf16>
# LOAD-NEXT: [[A:%[0-9]+]] = load {{%[0-9]+}}, [[M]], [[O]] {cache = ".cg", evict = "evict_first"} : tensor<32xf16>
# the 1-d mask broadcasts to the 4x32 pointers
# LOAD:      [[M2:%[0-9]+]] = broadcast {{%[0-9]+}} : tensor<4x32xi1>
# LOAD:      [[Z:%[0-9]+]] = const {value = 0.0} : tensor<4x32xf16>
# LOAD-NEXT: load {{%[0-9]+}}, [[M2]], [[Z]] {volatile = true} : tensor<4x32xf16>
# LOAD-NEXT: load %p, _, _ : f16
# LOAD:      [[F8:%[0-9]+]] = bitcast {{%[0-9]+}} : tensor<32xptr<i8>>
# LOAD-NEXT: [[FL:%[0-9]+]] = load [[F8]], [[M]], {{%[0-9]+}} : tensor<32xi8>
# LOAD-NEXT: cast [[FL]] : tensor<32xi1>
# LOAD:      [[V8:%[0-9]+]] = cast {{%[0-9]+}} : tensor<32xi8>
# LOAD-NEXT: [[P8:%[0-9]+]] = bitcast {{%[0-9]+}} : tensor<32xptr<i8>>
# LOAD-NEXT: store [[P8]], [[V8]], [[M]] {cache = ".wt"}
# a number stored through f16 pointers is made as f16
# LOAD:      [[ZERO:%[0-9]+]] = const {value = 0.0} : tensor<32xf16>
# LOAD-NEXT: store {{%[0-9]+}}, [[ZERO]], _


@triton.jit
def atomics(p, q, h):
    offs = tl.arange(0, 16)
    m = offs < 10
    a = tl.atomic_add(p + offs, 1.0, mask=m)
    b = tl.atomic_max(p, 2.0, sem="relaxed", scope="cta")
    c = tl.atomic_min(q + offs, offs)
    d = tl.atomic_cas(q, 0, 1)
    e = tl.atomic_xchg(q + offs, 5, sem="release")
    f = tl.atomic_and(q + offs, 3)
    g = tl.atomic_add(h, 1.0)
    tl.store(p + offs, a + b + c + d + e + f + g)

# ATOM-LABEL: func @atomics
# ATOM:      atomic_rmw {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}} {kind = "add", scope = "gpu", sem = "acq_rel"} : tensor<16xf32>
# ATOM:      atomic_rmw %p, {{%[0-9]+}}, _ {kind = "max", scope = "cta", sem = "relaxed"} : f32
# ATOM:      atomic_rmw {{%[0-9]+}}, {{%[0-9]+}}, _ {kind = "min", scope = "gpu", sem = "acq_rel"} : tensor<16xi32>
# ATOM:      [[C0:%[0-9]+]] = const {value = 0} : i32
# ATOM-NEXT: [[C1:%[0-9]+]] = const {value = 1} : i32
# ATOM-NEXT: atomic_cas %q, [[C0]], [[C1]] {scope = "gpu", sem = "acq_rel"} : i32
# ATOM:      {kind = "xchg", scope = "gpu", sem = "release"} : tensor<16xi32>
# ATOM:      {kind = "and", scope = "gpu", sem = "acq_rel"} : tensor<16xi32>
# ATOM:      atomic_rmw %h, {{%[0-9]+}}, _ {kind = "add", scope = "gpu", sem = "acq_rel"} : f16
