# RUN: nereid ir %s -k kernel -s '*fp32' --after lower 2>&1 | filecheck %s
# Module-level constexpr globals, imports under any name, libdevice, and the
# triton module's cdiv.
import nereid as tr
import nereid.language as lang
from triton.language.extra.cuda import libdevice as ld
from triton import language as tl2

BLOCK = lang.constexpr(32)
HALF = BLOCK // 2
DT: lang.constexpr = lang.float16
SCALE = 0.5
NAME = "x" + "y"


@tr.jit
def kernel(p):
    offs = lang.arange(0, BLOCK)
    x = tl2.load(p + offs)
    y = ld.tanh(x) * SCALE
    n: lang.constexpr = tr.cdiv(100, HALF) + lang.cdiv(7, 2)
    lang.static_print(NAME, n, DT)
    tl2.store(p + offs, y.to(DT).to(tl2.float32) + n)

# CHECK: note: xy 11 fp16
# CHECK-LABEL: func @kernel
# CHECK:      arange {end = 32, start = 0} : tensor<32xi32>
# CHECK:      math {{%[0-9]+}} {fn = "tanh"} : tensor<32xf32>
# CHECK-NEXT: const {value = 0.5} : tensor<32xf32>
# CHECK:      const {value = 11.0} : tensor<32xf32>
