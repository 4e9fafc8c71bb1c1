# The epilogue of a matmul with a 16-bit result on sm_90: the accumulator,
# converted to f16, goes to the conversion scratch by
# stmatrix.sync.aligned.m8n8.x4 (four 8x8 matrices per instruction, each
# register a row pair of the tensor-core fragment), then a barrier and
# 16-byte ld.shared for coalesced 16-byte global stores.  128 x 256 on 8
# warps: 128 f16 per thread, 16 stmatrix.x4 instead of 64 st.shared.b32.
# Both wgmma (sm_90a) and mma.sync (sm_90) accumulators; sm_80 has no
# stmatrix and keeps st.shared.  A column-major result uses .trans; fp8 and
# f32 results keep st.shared (stmatrix stores 16-bit elements only).
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 256, 64, 8, ""' --arch sm_90a --num-stages 3 --num-warps 8 | filecheck %s --check-prefix=WG
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 256, 64, 8, ""' --arch sm_90 --num-stages 3 --num-warps 8 | filecheck %s --check-prefix=MMA
# RUN: nereid ptx %S/../../../examples/matmul.py -k matmul_kernel -s '*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1, 128, 256, 64, 8, ""' --arch sm_80 --num-stages 3 --num-warps 8 | filecheck %s --check-prefix=A80
# RUN: nereid ptx %s -k mm -s '*fp16:16, *fp16:16, *bf16:16, 1, i32:16, 64, 64, 32' --arch sm_90 | filecheck %s --check-prefix=TRANS
# RUN: nereid ptx %s -k mm -s '*fp16:16, *fp16:16, *fp16:16, 1, i32:16, 64, 64, 32' --arch sm_80 | filecheck %s --check-prefix=T80
# RUN: nereid ptx %s -k mm -s '*fp16:16, *fp16:16, *fp8e4nv:16, i32:16, 1, 64, 64, 32' --arch sm_90 | filecheck %s --check-prefix=F8
# RUN: nereid ptx %s -k mm -s '*fp16:16, *fp16:16, *fp32:16, i32:16, 1, 64, 64, 32' --arch sm_90 | filecheck %s --check-prefix=F32
import triton
import triton.language as tl


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.arange(0, BM)
    n = tl.arange(0, BN)
    k = tl.arange(0, BK)
    a = tl.load(a_ptr + m[:, None] * BK + k[None, :])
    b = tl.load(b_ptr + k[:, None] * BN + n[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + m[:, None] * scm + n[None, :] * scn, c.to(c_ptr.dtype.element_ty))

# WG: .target sm_90a
# WG: wgmma.wait_group.sync.aligned 0;
# WG-NOT: st.shared
# WG: bar.sync 0;
# WG-NOT: st.shared
# WG: mov.b32 {{%r[0-9]+}}, {{[{]}}%rs{{[0-9]+}}, %rs{{[0-9]+}}};
# WG: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%r{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
# WG-COUNT-15: stmatrix.sync.aligned.m8n8.x4.shared.b16
# WG-NOT: st.shared
# WG-NEXT: bar.sync 0;
# WG-COUNT-16: ld.shared.v4.b32
# WG-NOT: stmatrix
# WG-NOT: st.shared
# WG: st.global.v4.b32

# MMA: .target sm_90
# MMA: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# MMA: bar.sync 0;
# MMA-NOT: st.shared
# MMA-COUNT-16: stmatrix.sync.aligned.m8n8.x4.shared.b16
# MMA-NEXT: bar.sync 0;
# MMA-COUNT-16: ld.shared.v4.b32
# MMA-NOT: stmatrix
# MMA: st.global.v4.b32

# A80: .target sm_80
# A80-NOT: stmatrix
# A80: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# A80-NOT: stmatrix
# A80-COUNT-64: st.shared.b32
# A80-NEXT: bar.sync 0;
# A80-COUNT-16: ld.shared.v4.b32
# A80-NOT: stmatrix

# 64 x 64 on 4 warps, column-major: 8 matrices per warp, the accumulator's
# pairs run along N, the buffer's rows along M.
# TRANS: .target sm_90
# TRANS-COUNT-4: stmatrix.sync.aligned.m8n8.x4.trans.shared.b16
# TRANS-NEXT: bar.sync 0;
# TRANS-NOT: st.shared.b16
# TRANS-NOT: stmatrix
# TRANS: st.global.v4.b32

# T80-NOT: stmatrix
# T80: st.shared.b16
# T80-NOT: stmatrix

# F8-NOT: stmatrix
# F8: st.shared.b8
# F8-NOT: stmatrix

# F32-NOT: stmatrix
