#!/usr/bin/env bash
# hopper_sass.sh - what the H100 runs of Nereid's Hopper kernels: their SASS.
#
#   tools/hopper_sass.sh [OUT]
#
# Compiles matmuls for sm_90a with the CLI (and keeps the kernels of
# build/tests/test_wgmma, among them TMA copies into swizzled buffers),
# assembles them with ptxas -arch=sm_90a and checks cuobjdump -sass:
#   fp16, bf16, tf32 matmuls   HGMMA (wgmma on 16-bit and tf32 operands)
#   fp8 e4m3 matmul            QGMMA
#   int8 matmul                IGMMA
#   the TMA kernel             UTMALDG (cp.async.bulk.tensor), HGMMA
# and that the sm_90 (no 'a') matmul has no GMMA (mma.sync: HMMA).
# Needs ptxas and cuobjdump (CUDA toolkit); no GPU.  Exit status 0 when
# every check passed.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-build/hopper_sass}
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
for t in "$PTXAS" "$CUOBJDUMP"; do
    [ -x "$t" ] || { echo "hopper_sass.sh: $t not found (set PTXAS / CUOBJDUMP)"; exit 2; }
done
mkdir -p "$OUT"
status=0

# check NAME PTX ARCH PATTERN [NOT-PATTERN]
check() {
    local name=$1 ptx=$2 arch=$3 want=$4 not=${5:-}
    if ! "$PTXAS" -arch="$arch" "$ptx" -o "$OUT/$name.cubin" 2>"$OUT/$name.ptxas.log"; then
        echo "FAILED $name: ptxas -arch=$arch rejected $ptx (see $OUT/$name.ptxas.log)"; status=1; return
    fi
    "$CUOBJDUMP" -sass "$OUT/$name.cubin" >"$OUT/$name.sass"
    if ! grep -q "$want" "$OUT/$name.sass"; then
        echo "FAILED $name: no $want in $OUT/$name.sass"; status=1; return
    fi
    if [ -n "$not" ] && grep -q "$not" "$OUT/$name.sass"; then
        echo "FAILED $name: $not in $OUT/$name.sass"; status=1; return
    fi
    echo "ok     $name: $(grep -c "$want" "$OUT/$name.sass") x $want"
}

# matmul NAME ARCH SIGNATURE [WARPS]
matmul() {
    build/nereid ptx examples/matmul.py -k matmul_kernel -s "$3" --arch "$2" --num-warps "${4:-4}" --num-stages 4 \
        >"$OUT/$1.ptx" || { echo "FAILED $1: nereid ptx"; status=1; return 1; }
}
ROW='i32:16, i32:16, i32:16, i32:16, 1, i32:16, 1, i32:16, 1'   # A and B row-major
COL='i32:16, i32:16, i32:16, i32:16, 1, 1, i32:16, i32:16, 1'   # B column-major (K-major)
matmul f16 sm_90a "*fp16:16, *fp16:16, *fp16:16, $ROW, 128, 128, 64, 8, \"\"" && check f16 "$OUT/f16.ptx" sm_90a HGMMA
matmul f16_w8 sm_90a "*fp16:16, *fp16:16, *fp16:16, $ROW, 128, 256, 64, 8, \"\"" 8 && check f16_w8 "$OUT/f16_w8.ptx" sm_90a HGMMA
matmul bf16 sm_90a "*bf16:16, *bf16:16, *bf16:16, $ROW, 128, 128, 64, 8, \"\"" && check bf16 "$OUT/bf16.ptx" sm_90a HGMMA
matmul tf32 sm_90a "*fp32:16, *fp32:16, *fp32:16, $COL, 128, 128, 32, 8, \"\"" && check tf32 "$OUT/tf32.ptx" sm_90a HGMMA
matmul fp8 sm_90a "*fp8e4nv:16, *fp8e4nv:16, *fp16:16, $COL, 128, 128, 128, 8, \"\"" && check fp8 "$OUT/fp8.ptx" sm_90a QGMMA
build/nereid ptx tests/lit/ptx/wgmma_dtypes.py -k mmi -s '*i8:16, *i8:16, *i32:16, i32:16, 128, 128, 128' --arch sm_90a \
    >"$OUT/i8.ptx" && check i8 "$OUT/i8.ptx" sm_90a IGMMA
matmul f16_sm90 sm_90 "*fp16:16, *fp16:16, *fp16:16, $ROW, 128, 128, 64, 8, \"\"" && check f16_sm90 "$OUT/f16_sm90.ptx" sm_90 HMMA GMMA

# host tensor descriptors: the matmul's A/B tiles by TMA (UTMALDG), its C tile by a TMA store (UTMASTG)
build/nereid ptx bench/kernels/matmul.py -k matmul_tma_kernel --arch sm_90a --num-warps 8 --num-stages 4 \
    -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 256]>, tensordesc<fp16[128, 256]>, i32, i32, i32:16, 128, 256, 64, 8, 132' \
    >"$OUT/desc_mm.ptx" && check desc_mm "$OUT/desc_mm.ptx" sm_90a UTMALDG && check desc_mm_store "$OUT/desc_mm.ptx" sm_90a UTMASTG \
    && check desc_mm_gmma "$OUT/desc_mm.ptx" sm_90a HGMMA
build/nereid ptx examples/attention.py -k attn_fwd_desc_kernel --arch sm_90a --num-warps 8 --num-stages 3 \
    -s 'tensordesc<fp16[128, 128]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, *fp32:16, i32:16, fp32, 128, 128, 64, False' \
    >"$OUT/desc_attn.ptx" && check desc_attn "$OUT/desc_attn.ptx" sm_90a UTMALDG
build/nereid ptx bench/kernels/matmul.py -k matmul_tma_kernel --arch sm_90a --num-warps 8 --num-stages 4 --no-tma \
    -s 'tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 256]>, tensordesc<fp16[128, 256]>, i32, i32, i32:16, 128, 256, 64, 8, 132' \
    >"$OUT/desc_mm_notma.ptx" 2>/dev/null && check desc_mm_notma "$OUT/desc_mm_notma.ptx" sm_90a HGMMA UTMA

rm -rf "$OUT/keep" && mkdir -p "$OUT/keep"
if NR_TEST_KEEP="$OUT/keep" build/tests/test_wgmma >"$OUT/test_wgmma.log" 2>&1; then
    tma=$(ls "$OUT"/keep/*_tma_sm_90a.ptx 2>/dev/null | head -1)
    if [ -n "$tma" ]; then check tma "$tma" sm_90a UTMALDG; check tma_gmma "$tma" sm_90a HGMMA
    else echo "FAILED tma: test_wgmma kept no TMA kernel"; status=1; fi
else
    echo "FAILED test_wgmma (see $OUT/test_wgmma.log)"; status=1
fi
exit $status
