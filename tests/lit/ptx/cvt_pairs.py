# f32 narrowed to f16 or bf16 two elements at a time: a thread's elements
# 2j and 2j+1 go through one cvt.rn.f16x2.f32 (cvt.rz with
# fp_downcast_rounding="rtz"), the element in the upper half first.  A
# store of more than 8 bytes packs 16-bit elements into words with
# mov.b32 {lo, hi}, which ptxas folds into the cvt's register; an f16 load
# is split into its halves the same way.
# RUN: nereid ptx %s -k narrow -s '*fp32:16, *fp16:16, *bf16:16, 256' --arch sm_90 --num-warps 1 | filecheck %s
# RUN: nereid ptx %s -k narrow -s '*fp32:16, *fp16:16, *bf16:16, 256' --arch sm_80 --num-warps 1 | filecheck %s
# RUN: nereid ptx %s -k widen -s '*fp16:16, *fp32:16, 256' --arch sm_90 --num-warps 1 | filecheck %s --check-prefix=WIDEN
# RUN: nereid ptx %s -k roundtrip -s '*fp16:16, *fp16:16, 256' --arch sm_90 --num-warps 1 | filecheck %s --check-prefix=WIDE
import triton
import triton.language as tl


@triton.jit
def narrow(x_ptr, h_ptr, b_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(h_ptr + r, x.to(tl.float16))
    tl.store(b_ptr + r, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))


@triton.jit
def widen(h_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(y_ptr + r, tl.load(h_ptr + r).to(tl.float32) * 2.0)

@triton.jit
def roundtrip(h_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    tl.store(y_ptr + r, (tl.load(h_ptr + r).to(tl.float32) * 3.0).to(tl.float16))

# CHECK: ld.global.v4.b32 {[[X0:%r[0-9]+]], [[X1:%r[0-9]+]], [[X2:%r[0-9]+]], [[X3:%r[0-9]+]]}
# CHECK-NOT: cvt.rn.f16.f32
# CHECK: cvt.rn.f16x2.f32 [[H01:%r[0-9]+]], [[X1]], [[X0]];
# CHECK-NEXT: mov.b32 {[[L0:%rs[0-9]+]], [[L1:%rs[0-9]+]]}, [[H01]];
# CHECK: cvt.rn.f16x2.f32 [[H23:%r[0-9]+]], [[X3]], [[X2]];
# CHECK-NEXT: mov.b32 {[[L2:%rs[0-9]+]], [[L3:%rs[0-9]+]]}, [[H23]];
# CHECK: st.global.v4.b16 [{{%rd[0-9]+}}], {[[L0]], [[L1]], [[L2]], [[L3]]};
# CHECK-NOT: cvt.rz.bf16.f32
# CHECK: cvt.rz.bf16x2.f32 {{%r[0-9]+}}, [[X1]], [[X0]];
# CHECK: cvt.rz.bf16x2.f32 {{%r[0-9]+}}, [[X3]], [[X2]];
# CHECK: st.global.v4.b16

# WIDEN: ld.global.v4.b32 {[[W0:%r[0-9]+]], [[W1:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}}}
# WIDEN: mov.b32 {{{%rs[0-9]+}}, {{%rs[0-9]+}}}, [[W0]];
# WIDEN: mov.b32 {{{%rs[0-9]+}}, {{%rs[0-9]+}}}, [[W1]];
# WIDEN-NOT: and.b32
# WIDEN: cvt.f32.f16

# WIDE: cvt.rn.f16x2.f32 [[P0:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
# WIDE-NEXT: mov.b32 {[[A:%rs[0-9]+]], [[B:%rs[0-9]+]]}, [[P0]];
# WIDE: mov.b32 {{%r[0-9]+}}, {[[A]], [[B]]};
# WIDE: st.global.v4.b32
