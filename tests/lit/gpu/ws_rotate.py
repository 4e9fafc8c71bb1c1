# gpu-pipeline on sm_90a: a warp-specialized attention key loop (Q K^T, a
# softmax, then P V into acc * alpha) is rotated by half an iteration.  A
# prologue, when the loop runs, issues Q K^T of the first key block and
# runs its softmax; each iteration then issues Q K^T of its block and P V
# of the block before (P carried in registers, V read from the previous
# stage), waits for all groups but P V's, runs its softmax while P V runs,
# waits for P V, frees P V's stage and rescales acc; an epilogue issues the
# last P V and frees its stage.  On 8 warps the two warpgroups take one
# turn at the tensor cores per iteration, one for the prologue and one for
# the epilogue.
# RUN: nereid ir %s -k attn -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, fp32, 64, 128, 64' --arch sm_90a --num-warps 8 --num-stages 3 --verify-each --after gpu-barriers | filecheck %s --check-prefix=IR
# RUN: nereid ir %s -k attn -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, fp32, 64, 64, 64' --arch sm_90a --num-warps 4 --num-stages 3 --verify-each --after gpu-barriers | filecheck %s --check-prefix=W4
# RUN: nereid ir %s -k attn -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32:16, fp32, 64, 128, 64' --arch sm_90 --num-warps 8 --num-stages 3 --after gpu-barriers | filecheck %s --check-prefix=SM90
import nereid as triton
import nereid.language as tl


@triton.jit
def attn(q_desc, k_desc, v_desc, o_ptr, L, qk_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    start_m = tl.program_id(0) * BM
    rows = start_m + tl.arange(0, BM)
    q = q_desc.load([start_m, 0])
    m_i = tl.full((BM,), -float("inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for start in tl.range(0, L, BN, warp_specialize=True):
        s = tl.dot(q, k_desc.load([start, 0]).T)
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([start, 0])
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    o = acc / l_i[:, None]
    offs_d = tl.arange(0, D)
    tl.store(o_ptr + rows[:, None] * D + offs_d[None, :], o)

# IR:        [[FULL:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# IR:        [[EMPTY:%[0-9]+]] = local_alloc {{.*}} : !smem<3x1xi64
# IR:        warp_specialize {consumer_regs = 232, regs = 40} {
# the turns: warpgroup 1 gives warpgroup 0 the first one
# IR:        [[WG:%[0-9]+]] = warpgroup_id : i32
# IR:        [[MINE:%[0-9]+]] = memdesc_index {{%[0-9]+}}, [[WG]]
# IR-NEXT:   [[OTHER:%[0-9]+]] = memdesc_index
# IR:        mbarrier_arrive [[OTHER]], {{%[0-9]+}}
# the prologue
# IR:        [[RAN:%[0-9]+]] = cmp {{%[0-9]+}}, %L {pred = "lt"} : i1
# IR:        if [[RAN]] : tensor<128xf32, #L{{[0-9]+}}>, tensor<128x64xf32, #L{{[0-9]+}}>, tensor<128xf32, #L{{[0-9]+}}>, i32, i32, tensor<128x64xf16, #L{{[0-9]+}}>, i32 {
# IR-NEXT:   mbarrier_wait [[MINE]],
# IR:        [[S0:%[0-9]+]] = warp_group_dot {{.*}} {is_async = true}
# IR-NEXT:   mbarrier_arrive [[OTHER]], _
# IR-NEXT:   warp_group_dot_wait [[S0]] {num = 0}
# IR:        exp2
# IR:        yield
# IR:        } {
# IR:        const {value = 0.0} : tensor<128x64xf16
# IR-NEXT:   yield
# the loop, from the second key block
# IR:        for {{.*}} {num_stages = 3, warp_specialize = true} : {{.*}}, tensor<128x64xf16, #L{{[0-9]+}}>, i32 {
# IR-NEXT:   ^({{.*}}, [[ACC:%[0-9]+]]: tensor<128x64xf32, #L{{[0-9]+}}>, {{.*}}, [[P:%[0-9]+]]: tensor<128x64xf16, #L{{[0-9]+}}>, [[T:%[0-9]+]]: i32):
# IR:        mbarrier_wait [[MINE]], [[T]]
# IR:        [[S:%[0-9]+]] = warp_group_dot {{.*}} {is_async = true}
# IR:        [[V:%[0-9]+]] = memdesc_index
# IR-NEXT:   [[PV:%[0-9]+]] = warp_group_dot {{%[0-9]+}}, [[V]], [[ACC]] {is_async = true}
# IR-NEXT:   mbarrier_arrive [[OTHER]], _
# IR-NEXT:   warp_group_dot_wait [[S]] {num = 1}
# IR:        exp2
# IR:        [[A:%[0-9]+]] = warp_group_dot_wait [[PV]] {num = 0}
# IR-NEXT:   [[FREE:%[0-9]+]] = memdesc_index [[EMPTY]],
# IR-NEXT:   mbarrier_arrive [[FREE]], _
# IR:        mul [[A]],
# IR:        yield
# the epilogue: the last P V
# IR:        if [[RAN]] : tensor<128x64xf32, #L{{[0-9]+}}>, i32 {
# IR-NEXT:   mbarrier_wait [[MINE]],
# IR:        warp_group_dot {{.*}} {is_async = false}
# IR-NEXT:   mbarrier_arrive [[OTHER]], _
# IR-NEXT:   [[LAST:%[0-9]+]] = memdesc_index [[EMPTY]],
# IR-NEXT:   mbarrier_arrive [[LAST]], _
# IR:        yield

# One consumer warpgroup: the same rotation, without turns.
# W4:        warp_specialize {consumer_regs = 0, regs = 0} {
# W4-NOT:    warpgroup_id
# W4:        if {{%[0-9]+}} : {{.*}}, tensor<64x64xf16, #L{{[0-9]+}}> {
# W4:        for {{.*}} {num_stages = 3, warp_specialize = true}
# W4:        warp_group_dot {{.*}} {is_async = true}
# W4:        warp_group_dot {{.*}} {is_async = true}
# W4-NEXT:   warp_group_dot_wait {{%[0-9]+}} {num = 1}
# W4:        warp_group_dot_wait {{%[0-9]+}} {num = 0}
# W4:        if {{%[0-9]+}} : tensor<64x64xf32, #L{{[0-9]+}}> {

# sm_90 has no wgmma: the loop stays as it is, its two dots in order.
# SM90-NOT:  warp_specialize {
# SM90-NOT:  = if
# SM90:      for {{.*}} {num_stages = 3, warp_specialize = true}
# SM90:      = dot
# SM90:      = dot
# SM90-NOT:  = if
