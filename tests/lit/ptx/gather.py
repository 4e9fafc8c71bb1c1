# gather through shared memory: the source stored once by its owners,
# bar.sync, each result element loaded at its coordinates with the axis
# replaced by the index (an index outside [0, n) gives 0); a few hundred
# lines for 1024 elements.  histogram: the bins zeroed, bar.sync, one
# red.shared.add per counted element, bar.sync, the bins read out.
# RUN: nereid ptx %s -k gat -s '*i32:16, *i32:16, 1024' --arch sm_80 --num-warps 8 | filecheck %s --check-prefix=G
# RUN: nereid ptx %s -k gat -s '*i32:16, *i32:16, 1024' --arch sm_80 --num-warps 8 | wc -l | filecheck %s --check-prefix=LINES
# RUN: nereid ptx %s -k hist -s '*i32:16, *i32:16, 512, 1024' --arch sm_90 | filecheck %s --check-prefix=H
import triton
import triton.language as tl


@triton.jit
def gat(x_ptr, o_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, tl.gather(x, (r * 7) & (B - 1), 0))

# G: kernel gat, 8 warps, 4240 bytes of dynamic shared memory
# G: ld.global.v4.b32
# G: bar.sync 0;
# G-COUNT-4: st.shared.b32
# G-NEXT: bar.sync 0;
# G: setp.lo.u32 [[OK:%p[0-9]+]], {{%r[0-9]+}}, 1024;
# G: ld.shared.b32 [[V:%r[0-9]+]]
# G-NEXT: selp.b32 {{%r[0-9]+}}, [[V]], 0, [[OK]];
# G-NOT: bar.sync
# G: st.global.v4.b32
# LINES: {{^[1-2][0-9][0-9]$}}


@triton.jit
def hist(x_ptr, o_ptr, B: tl.constexpr, NB: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + tl.arange(0, NB), tl.histogram(x, NB, mask=r < B - 3))

# H: kernel hist, 4 warps, 4096 bytes of dynamic shared memory
# H: bar.sync 0;
# H-COUNT-8: st.shared.b32 [{{%r[0-9]+}}], {{%r[0-9]+}};
# H-NEXT: bar.sync 0;
# H: @{{%p[0-9]+}} red.shared.add.u32 [{{%r[0-9]+}}], 1;
# H: bar.sync 0;
# H: ld.shared.b32
