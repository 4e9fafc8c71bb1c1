# A blocked layout's flat index is the thread id shifted: one mask and one
# shift for the lane bits and for the warp bits, not three instructions per
# bit.  A cross-warp reduction needs no barrier before it writes its scratch
# when nothing has used shared memory yet; in a loop it waits for the
# previous iteration's readers.  After the barrier, lane l reads the partial
# of warp l mod 4, and two butterfly shuffles combine the four partials.
# RUN: nereid ptx %s -k rowsum -s '*fp32:16, *fp32:16, 1024' --arch sm_90 --num-warps 4 | filecheck %s
# RUN: nereid ptx %s -k rowsums -s '*fp32:16, *fp32:16, i32, 1024' --arch sm_90 --num-warps 4 | filecheck %s --check-prefix=LOOP
import triton
import triton.language as tl


@triton.jit
def rowsum(x_ptr, y_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + tl.program_id(0) * B + r)
    tl.store(y_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def rowsums(x_ptr, y_ptr, n, B: tl.constexpr):
    r = tl.arange(0, B)
    for i in range(tl.program_id(0), n, tl.num_programs(0)):
        x = tl.load(x_ptr + i * B + r)
        tl.store(y_ptr + i, tl.sum(x, axis=0))

# CHECK: shl.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 7;
# CHECK: and.b32 [[L:%r[0-9]+]], {{%r[0-9]+}}, 31;
# CHECK-NEXT: shl.b32 {{%r[0-9]+}}, [[L]], 2;
# CHECK: ld.global.v4
# CHECK-NOT: bar.sync
# CHECK: st.shared
# CHECK-NEXT: bar.sync 0;
# CHECK: and.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 3;
# CHECK: ld.shared
# CHECK-NOT: ld.shared
# CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 1, 31, -1;
# CHECK: shfl.sync.bfly.b32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2, 31, -1;
# CHECK-NOT: ld.shared
# CHECK: st.global

# LOOP: $L{{[0-9]+}}:
# LOOP: ld.global.v4
# LOOP: bar.sync 0;
# LOOP: st.shared
# LOOP: bar.sync 0;
# LOOP: ld.shared
