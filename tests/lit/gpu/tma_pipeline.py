# gpu-pipeline on sm_90a with host tensor descriptors: the blocks a
# pipelined loop loads from them for wgmma are copied by TMA from the
# tensor map the launch encodes (tensormap), into an NB-stage ring with one
# mbarrier per stage: each iteration issues the copies D stages ahead (one
# expect of their bytes, one tma_load per operand), then waits for its own
# stage on the mbarrier's phase parity, which flips when the ring wraps.
# Pointer loads stay on cp.async; sm_90 (no wgmma) keeps cp.async for all.
# RUN: nereid ir %s -k desc_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90a --verify-each --after gpu-barriers | filecheck %s --check-prefix=TMA
# RUN: nereid ir %s -k desc_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90 --after gpu-barriers | filecheck %s --check-prefix=SM90
# RUN: nereid ir %s -k mixed -s 'tensordesc<bf16[64, 64], nan>, *bf16:16, *fp32:16, i32:16, i32:16, 64, 64, 64' --arch sm_90a --after gpu-barriers | filecheck %s --check-prefix=MIXED
# RUN: nereid ir %s -k in_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 128, 64' --arch sm_90a --after gpu-barriers | filecheck %s --check-prefix=DEVICE
# RUN: nereid ir %s -k desc_out -s 'tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, 64' --arch sm_90a --verify-each --after gpu-barriers | filecheck %s --check-prefix=STORE
# RUN: nereid ir %s -k desc_out -s 'tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, 64' --arch sm_90a --verify-each --after gpu-barriers | filecheck %s --check-prefix=ONCE
# RUN: nereid ir %s -k desc_out -s 'tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, 64' --arch sm_90a --no-tma --after gpu-barriers | filecheck %s --check-prefix=NOTMA
# RUN: nereid ptx %s -k desc_out -s 'tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, 64' --arch sm_90a | filecheck %s --check-prefix=STOREPTX
# RUN: nereid ir %s -k desc_out -s 'tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, 64' --arch sm_90 --after gpu-barriers | filecheck %s --check-prefix=PLAINST
# RUN: nereid ir %s -k attn -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, i32:16, 128, 64, 64' --arch sm_90a --num-warps 8 --verify-each --after gpu-barriers | filecheck %s --check-prefix=ATTN
# RUN: nereid ptx %s -k desc_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90a | filecheck %s --check-prefix=PTX
import triton
import triton.language as tl


@triton.jit
def desc_mm(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK)):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16), mask=mask)

# TMA:       local_alloc {{.*}} : !smem<4x1xi64, [[BAR:#L[0-9]+]]>
# TMA:       mbarrier_init {{%[0-9]+}} {count = 1}
# TMA:       mbarrier_init {{%[0-9]+}} {count = 1}
# TMA:       mbarrier_init {{%[0-9]+}} {count = 1}
# TMA:       mbarrier_init {{%[0-9]+}} {count = 1}
# TMA:       [[MA:%[0-9]+]] = tensormap %arg0 : i64
# TMA:       [[MB:%[0-9]+]] = tensormap %arg5 : i64
# TMA-NOT:   async_copy
# prologue: stages 0 and 1, after the barrier that publishes the inits
# TMA:       barrier
# TMA-NEXT:  mbarrier_expect {{%[0-9]+}}, {{%[0-9]+}} {bytes = 32768}
# TMA:       tma_load [[MA]], {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}
# TMA:       tma_load [[MB]]
# TMA:       mbarrier_expect {{%[0-9]+}}, {{%[0-9]+}} {bytes = 32768}
# TMA:       tma_load [[MA]]
# TMA:       tma_load [[MB]]
# the loop carries the read stage, the write stage and the phase parity
# TMA:       for {{.*}} : tensor<128x128xf32, #L{{[0-9]+}}>, i32, i32, i32 {
# TMA-NEXT:  ^({{%[0-9]+}}: i32, {{%[0-9]+}}: tensor<128x128xf32, #L{{[0-9]+}}>, [[R:%[0-9]+]]: i32, [[W:%[0-9]+]]: i32, [[PH:%[0-9]+]]: i32):
# TMA:       mbarrier_expect
# TMA:       barrier
# TMA-NEXT:  tma_load [[MA]]
# TMA:       tma_load [[MB]]
# TMA:       [[RB:%[0-9]+]] = memdesc_index {{%[0-9]+}}, [[R]] : !smem<1xi64, [[BAR]]>
# TMA-NEXT:  mbarrier_wait [[RB]], [[PH]]
# TMA:       warp_group_dot {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}} {is_async = true}
# TMA-NOT:   barrier
# TMA:       xor [[PH]]
# TMA:       yield
# TMA-NOT:   async_wait
# after the loop, once every thread is done with them, the mbarriers are invalidated
# TMA:       barrier
# TMA-NEXT:  mbarrier_inval
# TMA:       mbarrier_inval
# TMA:       mbarrier_inval
# TMA:       mbarrier_inval
# TMA:       warp_group_dot_wait

# SM90-NOT:  tma_load
# SM90:      async_copy
# SM90-NOT:  tma_load


@triton.jit
def mixed(a_desc, b_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_n = tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK):
        a = a_desc.load([tl.program_id(0) * BM, k])
        offs_k = k + tl.arange(0, BK)
        b = tl.load(b_ptr + offs_k[:, None] * N + offs_n[None, :], mask=offs_k[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + offs_n[None, :], acc)

# padding "nan": the tensor map fills out-of-bounds elements with NaN
# MIXED:     tensormap %arg0 {nan = "fill"} : i64
# MIXED:     for
# MIXED:     async_wait {num = 1}
# MIXED:     async_copy
# MIXED:     async_commit_group
# MIXED:     mbarrier_expect {{%[0-9]+}}, {{%[0-9]+}} {bytes = 8192}
# MIXED:     tma_load
# MIXED:     mbarrier_wait
# MIXED:     yield
# MIXED:     async_wait {num = 0}


@triton.jit
def in_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([k * BK, 0]), acc)
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))

# descriptors made in the kernel have no tensor map: their blocks load through pointers
# DEVICE-NOT: tensormap
# DEVICE:     async_copy
# DEVICE-NOT: tma_load

# PTX:       .param .align 64 .b8 desc_mm_tmap_0[128],
# PTX-NEXT:  .param .align 64 .b8 desc_mm_tmap_1[128]
# PTX:       mov.b64 [[P:%rd[0-9]+]], desc_mm_tmap_0;
# PTX-NEXT:  cvta.param.u64 {{%rd[0-9]+}}, [[P]];
# PTX:       cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
# PTX:       mbarrier.try_wait.parity.shared::cta.b64


@triton.jit
def desc_out(a_desc, c_desc, K, BK: tl.constexpr):
    # a descriptor's block store: stored from registers to an nvmma buffer, then by TMA
    x = a_desc.load([0, 0]).to(tl.float32)
    c_desc.store([tl.program_id(0) * 128, 0], tl.dot(tl.zeros((128, 64), tl.float16), a_desc.load([K, 0])) + x.sum())

# gpu-tma-loads: the block loaded once and staged for wgmma (a_desc.load([K, 0]))
# comes by TMA straight into its buffer, on an mbarrier of its own, waited
# for where the dot first reads it; the block read into registers (x) stays
# a pointer load
# ONCE:        load {{.*}}, %arg0, {{%[0-9]+}}, {{%[0-9]+}} : tensor<64x128xf16
# ONCE:        local_alloc {smem_offset = {{[0-9]+}}} : !smem<1x1xi64
# ONCE:        mbarrier_init {{%[0-9]+}} {count = 1}
# ONCE:        [[BAR:%[0-9]+]] = memdesc_index {{%[0-9]+}}, {{%[0-9]+}} : !smem<1xi64
# ONCE-NEXT:   [[T:%[0-9]+]] = tensormap %arg0 : i64
# ONCE-NEXT:   [[B:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<64x128xf16
# ONCE-NEXT:   barrier
# ONCE-NEXT:   mbarrier_expect [[BAR]], _ {bytes = 16384}
# ONCE-NEXT:   tma_load [[T]], [[B]], [[BAR]], _, %K, {{%[0-9]+}}
# ONCE-NOT:    load
# ONCE:        mbarrier_wait [[BAR]], {{%[0-9]+}}
# ONCE-NEXT:   warp_group_dot {{%[0-9]+}}, [[B]]
# the mbarrier is invalidated at the end, after a barrier (here the reduction's) that every thread's wait precedes
# ONCE:        reduce
# ONCE:        mbarrier_inval [[BAR]]
# ONCE-NEXT:   return
# NOTMA-NOT:   tma_load
# NOTMA:       local_alloc {{%[0-9]+}} {smem_offset
# NOTMA-NOT:   tma_load

# TMA stores write whole 16-byte chunks of a row: only where the descriptor's
# innermost size (%arg7) is a multiple of 8 fp16; else the masked store
# STORE:       [[R:%[0-9]+]] = rem %arg7, {{%[0-9]+}} : i32
# STORE:       [[C:%[0-9]+]] = cmp [[R]], {{%[0-9]+}} {pred = "eq"} : i1
# STORE-NEXT:  if [[C]] {
# STORE:       [[B:%[0-9]+]] = local_alloc {{%[0-9]+}} {smem_offset = {{[0-9]+}}} : !smem<128x128xf16, [[L:#L[0-9]+]]>
# STORE-NEXT:  [[T:%[0-9]+]] = tensormap %arg5 : i64
# STORE-NEXT:  tma_store [[T]], [[B]], {{%[0-9]+}}, {{%[0-9]+}}
# STORE-NEXT:  yield
# STORE-NEXT:  } {
# STORE:       store {{.*}}, %arg5,
# STORE:       return

# STOREPTX:    .param .align 64 .b8 desc_out_tmap_0[128]
# STOREPTX:    stmatrix
# STOREPTX:    fence.proxy.async.shared::cta;
# STOREPTX:    bar.sync 0;
# STOREPTX:    cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%r[0-9]+}}];
# STOREPTX:    cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [{{%rd[0-9]+}}, {{{%r[0-9]+}}, {{%r[0-9]+}}}], [{{%r[0-9]+}}+16384];
# STOREPTX:    cp.async.bulk.commit_group;
# STOREPTX-NEXT: bra.uni
# STOREPTX:    cp.async.bulk.wait_group.read 0;
# STOREPTX-NEXT: ret;

# PLAINST-NOT: tma_store
# PLAINST:     store


@triton.jit
def attn(q_desc, k_desc, v_desc, L, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    # attention's shape: K is read transposed (k.T of its block), V as it is
    q = q_desc.load([tl.program_id(0) * BM, 0])
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for n in tl.range(0, L, BN):
        p = tl.dot(q, k_desc.load([n, 0]).T)
        acc = tl.dot(p.to(tl.float16), v_desc.load([n, 0]), acc)
    q_desc.store([tl.program_id(0) * BM, 0], acc.to(tl.float16))

# the K tile is staged as loaded (its descriptor's last dimension fastest) and read transposed
# the Q tile comes by TMA, issued before the K and V copies, waited for in front of the loop
# ATTN:      [[QB:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<128x64xf16, [[KL:#L[0-9]+]]>
# ATTN:      tma_load {{%[0-9]+}}, [[QB]]
# ATTN:      [[TK:%[0-9]+]] = tensormap %arg5 : i64
# ATTN:      [[TV:%[0-9]+]] = tensormap %arg10 : i64
# ATTN:      [[KB:%[0-9]+]] = local_alloc {smem_offset = {{[0-9]+}}} : !smem<3x64x64xf16, [[KL]]>
# P V, an accumulating dot, stays in flight into the next iteration; the
# copies ahead come after Q K^T, whose wait completes it (and its reads of
# the stage they refill)
# ATTN:      mbarrier_wait
# ATTN-NEXT: for
# ATTN-NOT:  async_copy
# ATTN:      mbarrier_wait
# ATTN:      [[K:%[0-9]+]] = memdesc_index [[KB]], {{%[0-9]+}} : !smem<64x64xf16, [[KL]]>
# ATTN-NEXT: [[KT:%[0-9]+]] = memdesc_trans [[K]] : !smem<64x64xf16, #L{{[0-9]+}}>
# ATTN-NEXT: warp_group_dot [[QB]], [[KT]]
# ATTN:      mbarrier_expect {{%[0-9]+}}, {{%[0-9]+}} {bytes = 16384}
# ATTN:      barrier
# ATTN-NEXT: tma_load [[TK]]
# ATTN:      tma_load [[TV]]
# ATTN-NOT:  trans
# ATTN:      warp_group_dot {{.*}} {is_async = true}
# ATTN:      yield
# ATTN-NEXT: }
# ATTN:      warp_group_dot_wait {{%[0-9]+}} {num = 0}
