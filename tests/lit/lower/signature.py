# RUN: nereid ir %s -k facts -s '*fp16:16, **fp32, *i1, i32:16, i64:1, u64, fp32, bf16, i1, *fp8e4nv, *fp8e5' --after lower | filecheck %s --check-prefix=FACTS
# RUN: nereid ir %s -k consts -s '*fp32, -3, 0x10, 2.5, True, None, "leaky", tl.float16, 18446744073709551615, 1e-05, tl.bf16' --after lower 2>&1 | filecheck %s --check-prefix=CONSTS
# RUN: nereid ir %s -k consts -s "*fp32, 7, 0b101, -0.5, False, None, 'relu', tl.int8, 0, inf, tl.float8e4nv" --after lower 2>&1 | filecheck %s --check-prefix=CONSTS2
# Signatures: pointer depth and divisibility, equal-to-1 integers (the
# constant 1 in the body, still an argument of the kernel), every dtype, and
# constexpr values of every kind; an unannotated parameter given a literal is
# a constexpr too.
import triton
import triton.language as tl


@triton.jit
def facts(a, pp, b, n16, one, big, f, h, flag, q8, r8):
    p = tl.load(pp)
    x = tl.load(p + n16 * one)
    tl.store(a + big, x.to(tl.float16))
    tl.store(b, flag)
    tl.store(q8, tl.load(r8).to(tl.float8e4nv))

# FACTS-LABEL: func @facts(%a: ptr<f16> {divisibility = 16}, %pp: ptr<ptr<f32>>, %b: ptr<i1>, %n16: i32 {divisibility = 16}, %one: i64 {equal_to_1}, %big: u64, %f: f32, %h: bf16, %flag: i1, %q8: ptr<f8e4nv>, %r8: ptr<f8e5>) kernel {
# FACTS-NEXT: [[P:%[0-9]+]] = load %pp, _, _ : ptr<f32>
# `one` is the constant 1: n16 * 1 stays i32
# FACTS-NEXT: [[ONE:%[0-9]+]] = const {value = 1} : i32
# FACTS-NEXT: [[OFF:%[0-9]+]] = mul %n16, [[ONE]] : i32
# FACTS-NEXT: addptr [[P]], [[OFF]] : ptr<f32>
# FACTS: addptr %a, %big : ptr<f16>
# i1 pointers are accessed as i8
# FACTS: [[B8:%[0-9]+]] = bitcast %b : ptr<i8>
# FACTS: store [[B8]], {{%[0-9]+}}, _
# FACTS: cast {{%[0-9]+}} : f8e4nv


@triton.jit
def consts(out, a, b, c, d, e, f, g, h, i, j):
    tl.static_print(a, b, c, d, e, f, g, h, i, j)
    if e is None:
        if f == "leaky":
            tl.store(out, tl.zeros((16,), g).to(tl.float32).sum() + a + b + c)
        else:
            tl.store(out, tl.full((16,), a, dtype=g).to(tl.float32).sum() + c)

# CONSTS: note: -3 16 2.5 True None leaky fp16 18446744073709551615 1e-05 bf16
# CONSTS-LABEL: func @consts(%out: ptr<f32>) kernel {
# CONSTS-NEXT: const {value = 0.0} : tensor<16xf16>
# numbers meeting an f32 scalar take its dtype
# CONSTS: const {value = -3.0} : f32
# CONSTS: const {value = 16.0} : f32
# CONSTS: const {value = 2.5} : f32
# CONSTS2: note: 7 5 -0.5 False None relu int8 0 inf fp8e4nv
# CONSTS2-LABEL: func @consts(%out: ptr<f32>) kernel {
# CONSTS2-NEXT: const {value = 7} : tensor<16xi8>
# CONSTS2: const {value = -0.5} : f32
