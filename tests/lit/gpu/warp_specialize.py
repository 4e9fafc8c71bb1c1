# gpu-pipeline on sm_90a, tl.range(warp_specialize=True): a K loop whose
# tiles come by TMA from host descriptors into one async wgmma dot is split.
# A warp_specialize op in front of the loop holds the producer's loop: wait
# for the stage's `empty` mbarrier (parity 1 first: a fresh mbarrier passes
# it), expect the stage's bytes on its `full` mbarrier, issue the copies.
# The program's warps wait on `full`, run the dot, and once the wait for all
# but the newest group is done free the previous iteration's stage (one
# arrival per warp: `empty` counts num_warps).  Nothing is copied before
# the split, and the loop has no barrier.
# RUN: nereid ir %s -k ws_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90a --num-warps 4 --num-stages 3 --verify-each --after gpu-barriers | filecheck %s --check-prefix=IR
# RUN: nereid ptx %s -k ws_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90a --num-warps 8 --num-stages 3 | filecheck %s --check-prefix=PTX
# RUN: nereid ir %s -k ws_mm -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp16:16, i32, i32, i32:16, 128, 128, 64' --arch sm_90 --num-warps 4 --num-stages 3 --after gpu-barriers | filecheck %s --check-prefix=SM90
# RUN: nereid ir %s -k persistent -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 256]>, tensordesc<fp16[128, 256]>, i32, i32, i32:16, 128, 256, 64, 132' --arch sm_90a --num-warps 8 --num-stages 4 --verify-each --after gpu-barriers | filecheck %s --check-prefix=PERS
# RUN: nereid ptx %s -k persistent -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 256]>, tensordesc<fp16[128, 256]>, i32, i32, i32:16, 128, 256, 64, 132' --arch sm_90a --num-warps 8 --num-stages 4 | filecheck %s --check-prefix=PERSPTX
# RUN: nereid ir %s -k stores_first -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, *fp32:16, i32:16, 128, 128, 64' --arch sm_90a --num-warps 4 --num-stages 3 --after gpu-barriers | filecheck %s --check-prefix=PREFIX
import triton
import triton.language as tl


@triton.jit
def ws_mm(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        a = a_desc.load([pid_m * BM, k * BK])
        b = b_desc.load([k * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16), mask=mask)

# IR:        [[FULL:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# IR-COUNT-3: mbarrier_init {{%[0-9]+}} {count = 1}
# IR:        [[EMPTY:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# IR-COUNT-3: mbarrier_init {{%[0-9]+}} {count = 4}
# IR-NOT:    tma_load
# IR:        barrier
# IR-NEXT:   warp_specialize {consumer_regs = 0, regs = 0} {
# IR-NEXT:   for {{.*}} : i32, i32 {
# IR-NEXT:   ^({{%[0-9]+}}: i32, [[W:%[0-9]+]]: i32, [[PP:%[0-9]+]]: i32):
# IR-NEXT:   [[E:%[0-9]+]] = memdesc_index [[EMPTY]], [[W]]
# IR-NEXT:   mbarrier_wait [[E]], [[PP]]
# IR-NEXT:   [[F:%[0-9]+]] = memdesc_index [[FULL]], [[W]]
# IR-NEXT:   mbarrier_expect [[F]], _ {bytes = 32768}
# IR:        tma_load {{%[0-9]+}}, {{%[0-9]+}}, [[F]], _,
# IR:        tma_load {{%[0-9]+}}, {{%[0-9]+}}, [[F]], _,
# IR:        yield
# IR-NEXT:   }
# IR-NEXT:   yield
# IR-NEXT:   }
# the consumers' loop (after the ops in front of the split that only they use)
# IR:        for {{.*}} {num_stages = 3, warp_specialize = true} : tensor<128x128xf32, #L{{[0-9]+}}>, i32, i32 {
# IR-NEXT:   ^([[IV:%[0-9]+]]: i32, {{%[0-9]+}}: tensor<128x128xf32, #L{{[0-9]+}}>, [[R:%[0-9]+]]: i32, [[PH:%[0-9]+]]: i32):
# IR-NEXT:   [[FR:%[0-9]+]] = memdesc_index [[FULL]], [[R]]
# IR-NEXT:   mbarrier_wait [[FR]], [[PH]]
# IR-NOT:    barrier
# IR:        warp_group_dot {{.*}} {is_async = true}
# IR-NEXT:   warp_group_dot_wait {{%[0-9]+}} {num = 1}
# IR:        [[EP:%[0-9]+]] = memdesc_index [[EMPTY]]
# IR-NEXT:   [[NOT1:%[0-9]+]] = cmp [[IV]], {{%[0-9]+}} {pred = "ne"}
# IR-NEXT:   mbarrier_arrive [[EP]], [[NOT1]]
# IR-NOT:    barrier
# IR-NOT:    tma_load
# IR:        yield
# IR:        warp_group_dot_wait {{%[0-9]+}} {num = 0}
# IR:        barrier
# IR-NEXT:   mbarrier_inval

# two warpgroups: 12 warps in all; 168 registers on entry, 40 for the
# producer (its first warp runs the loop), 232 for the others, whose
# barriers count 256 threads
# PTX:       kernel ws_mm, 12 warps
# PTX:       .maxnreg 168
# PTX-NEXT:  .reqntid 384, 1, 1
# PTX:       and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 255;
# PTX-NOT:   cp.async.bulk
# PTX:       bar.sync 0;
# PTX-NEXT:  setp.lo.u32 [[C:%p[0-9]+]], %r1, 256;
# PTX-NEXT:  @[[C]] bra [[CONS:\$L[0-9]+]];
# PTX-NEXT:  setmaxnreg.dec.sync.aligned.u32 40;
# PTX-NEXT:  setp.hs.u32 [[REST:%p[0-9]+]], %r1, 288;
# PTX-NEXT:  @[[REST]] ret;
# PTX:       mbarrier.try_wait.parity.shared::cta.b64
# PTX:       mbarrier.arrive.expect_tx.shared::cta.b64
# PTX:       cp.async.bulk.tensor.2d
# PTX:       ret;
# PTX-NEXT:  [[CONS]]:
# PTX-NEXT:  setmaxnreg.inc.sync.aligned.u32 232;
# PTX-NOT:   cp.async.bulk
# PTX:       mbarrier.try_wait.parity.shared::cta.b64
# PTX:       wgmma.mma_async
# PTX:       wgmma.wait_group.sync.aligned 1;
# PTX:       mbarrier.arrive.shared::cta.b64 _,
# PTX:       bar.sync 1, 256;
# PTX-NOT:   bar.sync 0;

# SM90-NOT:  warp_specialize {
# SM90-NOT:  mbarrier_arrive


@triton.jit
def stores_first(a_desc, b_desc, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a store in front of the loop: the producer's warps would repeat it, so
    # the loop is not split (the hint changes nothing)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.zeros((BM, BN), tl.float32))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=True):
        acc = tl.dot(a_desc.load([0, k * BK]), b_desc.load([k * BK, 0]), acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

# PREFIX-NOT: warp_specialize {
# PREFIX:     tma_load
# PREFIX-NOT: warp_specialize {


@triton.jit
def persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               NP: tl.constexpr):
    # the hint on a persistent loop around the K loop: the producer walks
    # the tiles too, computing their coordinates from its own induction
    # variables, and both sides carry the ring's position from tile to tile
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, NP, warp_specialize=True):
        pid_m = tile // tiles_n
        pid_n = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([k * BK, pid_n * BN])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

# 4 stages of 48 KiB and the 64 KiB epilogue tile do not fit: 3 stages
# PERS:      [[FULL:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# PERS:      [[EMPTY:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# PERS-COUNT-3: mbarrier_init {{%[0-9]+}} {count = 8}
# PERS:      warp_specialize {consumer_regs = 232, regs = 40} {
# PERS-NEXT: for {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, [[Z:%[0-9]+]], [[ONE:%[0-9]+]] : i32, i32 {
# PERS-NEXT: ^([[TILE:%[0-9]+]]: i32, [[W0:%[0-9]+]]: i32, [[P0:%[0-9]+]]: i32):
# the tile's coordinates, once a tile (not in the K loop)
# PERS:      div [[TILE]],
# PERS:      rem [[TILE]],
# PERS:      for {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}}, [[W0]], [[P0]] : i32, i32 {
# PERS-NEXT: ^({{%[0-9]+}}: i32, [[W:%[0-9]+]]: i32, [[PP:%[0-9]+]]: i32):
# PERS-NEXT: [[E:%[0-9]+]] = memdesc_index [[EMPTY]], [[W]]
# PERS-NEXT: mbarrier_wait [[E]], [[PP]]
# PERS-NOT:  div
# PERS:      tma_load
# PERS-NOT:  rem
# PERS:      tma_load
# PERS:      yield
# PERS-NEXT: }
# PERS-NEXT: yield
# PERS-NEXT: }
# PERS-NEXT: yield
# PERS-NEXT: }
# the consumers carry the ring's position (r, phase) through the tile loop
# PERS:      for {{.*}}, [[Z]], [[Z]] {warp_specialize = true} : i32, i32 {
# PERS-NEXT: ^({{%[0-9]+}}: i32, [[R0:%[0-9]+]]: i32, [[PH0:%[0-9]+]]: i32):
# PERS:      [[RES:%[0-9]+]], [[ROUT:%[0-9]+]], [[PHOUT:%[0-9]+]] = for {{.*}}, [[R0]], [[PH0]] {num_stages = 4}
# PERS:      mbarrier_arrive
# PERS:      yield
# PERS-NEXT: }
# each tile's last stage is freed once its dot is done, if the K loop ran
# PERS-NEXT: warp_group_dot_wait [[RES]] {num = 0}
# PERS-NEXT: [[RAN:%[0-9]+]] = cmp {{%[0-9]+}}, {{%[0-9]+}} {pred = "lt"}
# PERS:      [[LAST:%[0-9]+]] = memdesc_index [[EMPTY]],
# PERS-NEXT: mbarrier_arrive [[LAST]], [[RAN]]
# the epilogue's TMA store
# PERS:      tma_store
# PERS:      yield [[ROUT]], [[PHOUT]]
# PERS-NEXT: }
# PERS:      mbarrier_inval

# The epilogue's TMA store is waited for (until read) in front of the next
# tile's epilogue barrier, not right after its copies: it overlaps the next
# tile's main loop.  The program waits again before it ends.
# PERSPTX:      wgmma.wait_group.sync.aligned 0;
# PERSPTX:      cp.async.bulk.wait_group.read 0;
# PERSPTX-NEXT: bar.sync 1, 256;
# PERSPTX:      stmatrix
# PERSPTX:      cp.async.bulk.commit_group;
# PERSPTX-NEXT: bra.uni
# PERSPTX:      cp.async.bulk.wait_group.read 0;
# PERSPTX-NEXT: bar.sync 1, 256;
# PERSPTX-NEXT: mbarrier.inval
