#!/usr/bin/env bash
# run.sh - the tests of ahead-of-time compilation, without a GPU (make test-aot).
#
#   1. `nereid aot` generates C for the C examples and for the test kernels
#      (tests/aot/kernels.py); every generated file builds with gcc and clang
#      as strict C99 (-std=c99 -pedantic-errors -Wall -Wextra -Werror and
#      more) against the CUDA headers, and every program links against the
#      CUDA toolkit's stub libcuda: the driver entry points exist.
#   2. A fake libcuda.so.1 (fake_cuda.c) stands in for the driver: the C
#      examples run on it (their kernels on Nereid's interpreter) and check
#      their results against the CPU; test_aot_rt checks the generated
#      loader, dispatcher, launchers and error paths; test_c_api checks the C
#      API's JIT path (compile, metadata, launch on a stream, disk cache).
#   3. The CLI: nereid sass and info, and the errors of nereid aot.
# Prints one line per failing check; exits non-zero on failure.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
CC=${CC:-cc}
SAN=${SAN:-}     # e.g. -fsanitize=address,undefined, with BUILD=build-asan
NEREID=$PWD/$BUILD/nereid
B=$PWD/$BUILD/aot
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
step() { echo "== $*"; }

if [ ! -f "$CUDA_HOME/include/cuda.h" ]; then
    echo "test-aot: $CUDA_HOME/include/cuda.h not found (set CUDA_HOME); skipped"
    exit 0
fi
STUBS=""
for d in "$CUDA_HOME/lib64/stubs" "$CUDA_HOME/targets/x86_64-linux/lib/stubs" "$CUDA_HOME/targets/sbsa-linux/lib/stubs"; do
    [ -f "$d/libcuda.so" ] && STUBS=$d && break
done
AOT_FLAGS=""
if ! PATH="$PATH:$CUDA_HOME/bin" command -v ptxas >/dev/null; then
    echo "test-aot: ptxas not found: the generated code embeds PTX only (--ptx-only)"
    AOT_FLAGS="--ptx-only"
fi
export PATH="$PATH:$CUDA_HOME/bin"
rm -rf "$B" && mkdir -p "$B/fakecuda" "$B/gen" "$B/examples" "$B/stub" "$B/cli"

STRICT="-std=c99 -pedantic-errors -Wall -Wextra -Werror -Wshadow -Wconversion -Wsign-conversion -Wstrict-prototypes
        -Wmissing-prototypes -Wcast-qual -Wundef -Wredundant-decls -isystem $CUDA_HOME/include"
COMPILERS=$CC
command -v clang >/dev/null && [ "$CC" != clang ] && COMPILERS="$COMPILERS clang"

step "the fake driver"
$CC $SAN -std=c11 -D_GNU_SOURCE -O1 -g -fPIC -shared -Wall -Wextra -Werror -Iinclude -Isrc -Itests/aot \
    -isystem "$CUDA_HOME/include" -fvisibility=hidden tests/aot/fake_cuda.c "$BUILD/libnereid.a" \
    -Wl,--exclude-libs,ALL -Wl,-soname,libcuda.so.1 -o "$B/fakecuda/libcuda.so.1" -lm -lpthread -ldl \
    || { fail "building the fake driver"; exit 1; }
ln -sf libcuda.so.1 "$B/fakecuda/libcuda.so"
# (NEREID_PTXAS=0: the JIT hands the fake driver PTX, which it runs, not a cubin from ptxas)
FAKE="env NEREID_PTXAS=0 LD_LIBRARY_PATH=$B/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

step "the C examples, on the fake driver"
make --no-print-directory -s -C examples/c NEREID="$NEREID" OUT="$B/examples" CUDA_LIB="$B/fakecuda" \
    NEREID_INC="$PWD/include" NEREID_LIB="$PWD/$BUILD/libnereid.a" \
    AOT_FLAGS="$AOT_FLAGS" CC="$CC" CFLAGS="-O1 -g $SAN" all || fail "building the examples"
run_example() { # program args...
    local out
    if ! out=$($FAKE "$@" 2>&1); then
        echo "$out"
        fail "$*"
    elif ! grep -q ": OK$" <<<"$out"; then
        echo "$out"
        fail "$* did not report OK"
    fi
}
run_example "$B/examples/softmax" --no-timing 8 100 5 781 3 1500 2 5000 16 64
run_example "$B/examples/matmul" --no-timing 40 24 56 64 64 32 33 130 17
run_example "$B/examples/layer_norm" --no-timing 7 100 3 1500 2 64
# The JIT example compiles at run time; the fake driver learns its kernel from a manifest.
echo "examples/vector_add.py|add_kernel|*fp32:16, *fp32:16, *fp32:16, i32, 1024|sm_90|4|3" >"$B/examples/kernels.txt"
run_example env NEREID_CACHE_DIR="$B/examples/cache" FAKE_CUDA_KERNELS="$B/examples/kernels.txt" \
    "$B/examples/jit_vector_add" examples/vector_add.py 5000
[ "$(find "$B/examples/cache" -name '*.nrc' | wc -l)" = 1 ] || fail "jit_vector_add left no cubin in the disk cache"
# A kernel that reads past its rows is caught: a softmax row longer than every config fails cleanly.
out=$($FAKE "$B/examples/softmax" --no-timing 2 20000 2>&1) && fail "softmax of 20000 columns did not fail"
grep -q "CUDA_ERROR_INVALID_VALUE" <<<"$out" || { echo "$out"; fail "softmax of 20000 columns: no clear error"; }

step "the generated code for the test kernels"
aot() { # name args...
    local name=$1
    shift
    "$NEREID" aot "$@" $AOT_FLAGS -o "$B/gen/$name" 2>"$B/gen/$name.log" || { cat "$B/gen/$name.log"; fail "nereid aot $name"; }
}
K=tests/aot/kernels.py
MIXT='i1, i8, u16, i64, fp16, bf16, fp8e4nv, fp8e5, fp64, 256'
aot aot_mix $K -k mix -s "*fp32, *fp32, i32, $MIXT" -s "*fp32:16, *fp32:16, i32:16, i1, i8, u16, i64:1, ${MIXT#i1, i8, u16, i64, }" \
    -s "*fp32:16, *fp32:16, i32, $MIXT" -g 'cdiv(n, BLOCK)'
aot aot_grid $K -k grid3 -s '*i32:16, i32, i32, i32' \
    -g '(cdiv(n, 3) * (m % 7 + 1), (m - 1) // 2 + 1, min(max(k, 1), 4) * next_power_of_2(k) // next_power_of_2(k))'
aot aot_huge $K -k grid3 -s '*i32, i32, i32, i32' -g 'n * n * n * m'
aot aot_empty $K -k empty -s '' -g 4
aot aot_clash $K -k clash -s '*i32, i32, *i32, i32, i32, i32, 128' -g 'cdiv(n, BLOCK) + 0 * config'
V=examples/vector_add.py
aot aot_rules $V -k add_kernel -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE' \
    -c 'BLOCK_SIZE=128, num_warps=1 if n_elements < 1000' -c 'BLOCK_SIZE=1024, num_warps=4 if n_elements < 1000000' \
    -g 'cdiv(n_elements, BLOCK_SIZE)'
aot aot_tuned $V -k add_kernel -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE' -s '*fp32:16, *fp32:16, *fp32:16, i32:16, BLOCK_SIZE' \
    -c 'BLOCK_SIZE=128, num_warps=1' -c 'BLOCK_SIZE=512, num_warps=4' -c 'BLOCK_SIZE=2048, num_warps=8 if n_elements >= 2048' \
    --key n_elements -g 'cdiv(n_elements, BLOCK_SIZE)'
aot aot_big examples/matmul.py -k matmul_kernel \
    -s '*fp16:16, *fp16:16, *fp16:16, i32, i32, i32, i32, i32:1, i32, i32:1, i32, i32:1, 128, 64, 64, 8, ""' \
    --num-warps 8 -g 'cdiv(M, 128) * cdiv(N, 64)'
PTXONLY_FLAGS="--ptx-only --arch sm_80,sm_90a"
"$NEREID" aot $V -k add_kernel -s '*fp32:16, *fp32:16, *fp32:16, i32, 1024' -g 'cdiv(n_elements, 1024)' \
    $PTXONLY_FLAGS -o "$B/gen/aot_ptxonly" || fail "nereid aot --ptx-only"
grep -q "^static const int aot_big_first" "$B/gen/aot_big.c" || fail "aot_big.c has no binary table"
grep -q "73728u}" "$B/gen/aot_big.c" || fail "aot_big: the matmul's 72 KB of shared memory are not in its table"

for cc in $COMPILERS; do
    for f in "$B"/gen/aot_*.c "$B"/examples/*_aot.c; do
        $cc $STRICT -I"$B/gen" -c "$f" -o "$B/stub/$(basename "$f" .c)-$cc.o" || fail "$cc: $f"
    done
done

# All generated files in one translation unit (a unity build): their names do not clash.
cat "$B"/gen/aot_*.c >"$B/stub/unity.c"
for cc in $COMPILERS; do
    $cc $STRICT -I"$B/gen" -c "$B/stub/unity.c" -o "$B/stub/unity-$cc.o" || fail "$cc: one translation unit"
done

step "the program of docs/aot.md"
mkdir -p "$B/doc"
awk '/^\/\* add_main.c \*\//{on=1} on&&/^```/{on=0} on' docs/aot.md >"$B/doc/add_main.c"
"$NEREID" aot examples/vector_add.py -k add_kernel -s '*fp32, *fp32, *fp32, i32, 1024' \
    -s '*fp32:16, *fp32:16, *fp32:16, i32:16, 1024' -g 'cdiv(n_elements, 1024)' --arch sm_80,sm_90a $AOT_FLAGS \
    -o "$B/doc/add" || fail "nereid aot of docs/aot.md"
$CC $SAN -std=c99 -pedantic-errors -Wall -Wextra -Werror -isystem "$CUDA_HOME/include" "$B/doc/add_main.c" \
    "$B/doc/add.c" -L"$B/fakecuda" -lcuda -o "$B/doc/add_main" || fail "building the program of docs/aot.md"
out=$($FAKE "$B/doc/add_main" 2>&1) && grep -q "^OK, specialization 1" <<<"$out" || { echo "$out"; fail "the program of docs/aot.md"; }

step "linking against the driver's stub library"
if [ -n "$STUBS" ]; then
    for p in softmax matmul layer_norm; do
        $CC $STRICT -Iexamples/c -I"$B/examples" examples/c/$p.c "$B/examples/${p}_aot.c" -L"$STUBS" -lcuda -lm \
            -o "$B/stub/$p" || fail "linking $p against $STUBS/libcuda.so"
    done
    printf '#include "aot_mix.h"\nint main(void) { return aot_mix_load() == CUDA_SUCCESS; }\n' >"$B/stub/main.c"
    $CC $STRICT -Wno-missing-prototypes -I"$B/gen" "$B/stub/main.c" "$B"/gen/aot_*.c -L"$STUBS" -lcuda \
        -o "$B/stub/all" || fail "linking the generated code against $STUBS/libcuda.so"
else
    echo "test-aot: no stub libcuda.so under $CUDA_HOME; linking against it skipped"
fi

step "test_aot_rt: loader, dispatcher, launchers, errors"
$CC $SAN $STRICT -Wno-missing-prototypes -Wno-conversion -Wno-sign-conversion -Wno-cast-qual -g -Itests/aot -Isrc \
    -I"$B/gen" tests/aot/test_aot_rt.c "$B"/gen/aot_*.c "$BUILD/libnereid.a" -L"$B/fakecuda" -lcuda -lm -lpthread -ldl \
    -o "$B/test_aot_rt" && $FAKE "$B/test_aot_rt" || fail "test_aot_rt"

step "test_c_api: the C API's JIT on the fake driver"
$CC $SAN -std=c11 -D_GNU_SOURCE -g -Wall -Wextra -Werror -Iinclude -Isrc -Itests/aot -isystem "$CUDA_HOME/include" \
    tests/aot/test_c_api.c "$BUILD/libnereid.a" -L"$B/fakecuda" -lcuda -lm -lpthread -ldl -o "$B/test_c_api" &&
    $FAKE "$B/test_c_api" || fail "test_c_api"

step "the CLI"
expect() { # description, pattern, command...
    local what=$1 pattern=$2 out
    shift 2
    out=$("$@" 2>&1)
    grep -qE -- "$pattern" <<<"$out" || { echo "$out"; fail "$what: no match for '$pattern'"; }
}
SIG='*fp32:16, *fp32:16, *fp32:16, i32, 1024'
if [ -z "$AOT_FLAGS" ]; then
    expect "info (ptxas)" "^registers: +[0-9]+ per thread \(from ptxas\)" "$NEREID" info $V -k add_kernel -s "$SIG" --from ptxas
    expect "info occupancy" "^occupancy: +sm_90 \(H100, H200, GH200\): [0-9]+ programs per SM" \
        "$NEREID" info $V -k add_kernel -s "$SIG" --from ptxas
    expect "info --gpu all" "sm_86 \(A10" "$NEREID" info $V -k add_kernel -s "$SIG" --gpu all --from ptxas
    expect "info --gpu A100" "^occupancy: +sm_80" "$NEREID" info $V -k add_kernel -s "$SIG" --gpu A100 --from ptxas
    if command -v cuobjdump >/dev/null || command -v nvdisasm >/dev/null; then
        expect "sass" "add_kernel" "$NEREID" sass $V -k add_kernel -s "$SIG"
    fi
fi
# Without the toolkit on PATH, sass and info say what is missing.
mkdir -p "$B/cli/bin"
NOTOOLS="env PATH=$B/cli/bin CUDA_HOME= CUDA_PATH="
if [ ! -x /usr/local/cuda/bin/cuobjdump ] && [ ! -x /usr/local/cuda/bin/nvdisasm ]; then
    expect "sass without cuobjdump" "cuobjdump not found \(looked on PATH" $NOTOOLS "$NEREID" sass $V -k add_kernel -s "$SIG"
fi
if [ ! -x /usr/local/cuda/bin/ptxas ]; then
    expect "aot without ptxas" "error: ptxas not found" $NOTOOLS "$NEREID" aot $V -k add_kernel -s "$SIG" -o "$B/cli/x"
fi
expect "info from the driver" "^registers: +40 per thread \(from the driver\)" \
    $FAKE "$NEREID" info $V -k add_kernel -s "$SIG" --from driver
expect "info without a driver" "no NVIDIA driver found" "$NEREID" info $V -k add_kernel -s "$SIG" --from driver
expect "unknown gpu" "unknown GPU 'Z80'; known: sm_80" "$NEREID" info $V -k add_kernel -s "$SIG" --gpu Z80
A="$NEREID aot $V -k add_kernel --ptx-only -o $B/cli/x"
expect "bad grid name" "<grid>:1:6: error: unknown name 'm' \(the integer arguments of add_kernel: n_elements\)" \
    $A -s "$SIG" -g 'cdiv(m, 1024)'
expect "grid of a pointer" "'x_ptr' is a pointer" $A -s "$SIG" -g 'x_ptr'
expect "grid syntax" "<grid>:1:9: error: expected an expression" $A -s "$SIG" -g 'cdiv(n, )'
expect "grid condition" "a grid dimension must be an integer, not a condition" $A -s "$SIG" -g 'n_elements > 3'
expect "grid dims" "a grid has 1 to 3 dimensions, got 4" $A -s "$SIG" -g '1, 2, 3, 4'
expect "chained comparison" "comparisons do not chain" $A -s "$SIG" -c 'num_warps=4 if 1 < n_elements < 9'
expect "differing specs" "signatures 1 and 2 differ in parameter 'x_ptr' \('\*fp32' and '\*fp16'\)" \
    $A -s "$SIG" -s '*fp16, *fp32:16, *fp32:16, i32, 1024'
expect "same facts" "signatures 1 and 2 assume the same facts" $A -s "$SIG" -s "$SIG"
expect "config unknown param" "<config 1>:1:1: error: 'BLOCK' is not a parameter of add_kernel" \
    $A -s "$SIG" -c 'BLOCK=3'
expect "config unset placeholder" "'BLOCK_SIZE' stands for a config value, but no --config sets it" \
    $A -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE'
expect "config missing value" "this config gives no value for 'BLOCK_SIZE'" \
    $A -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE' -c 'BLOCK_SIZE=64' -c 'num_warps=2'
expect "config not a constant" "the value of 'BLOCK_SIZE' must be a constant" \
    $A -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE' -c 'BLOCK_SIZE=i32'
expect "unreachable config" "warning: this config is never used" \
    $A -s '*fp32, *fp32, *fp32, i32, BLOCK_SIZE' -c 'BLOCK_SIZE=64' -c 'BLOCK_SIZE=128'
expect "key of a pointer" "the key names integer arguments of add_kernel \(n_elements\), not 'x_ptr'" \
    $A -s "$SIG" --key x_ptr
expect "bad arch" "unknown target 'sm_70'" $A -s "$SIG" --arch sm_70
expect "bad name" "the output name 'x-y' must be a C identifier" "$NEREID" aot $V -k add_kernel -s "$SIG" -o "$B/cli/x-y"
expect "entry count" "signature has 4 entries, but add_kernel has 5 parameters" $A -s '*fp32, *fp32, *fp32, i32'
expect "tensor descriptors" "<signature 1>:1:1: error: nereid aot does not take host tensor descriptors \(tensordesc<...>\)" \
    "$NEREID" aot tests/aot/desc_kernels.py -k desc_mm --ptx-only -o "$B/cli/x" \
    -s 'tensordesc<fp16[64, 64]>, tensordesc<fp16[64, 64]>, *fp32:16, i32, i32, i32:16, 64, 64, 64'
expect "kernel errors" "error: no @jit function named 'nope'" "$NEREID" aot $V -k nope -s "$SIG" -o "$B/cli/x"
expect "signature errors" "<signature>:1:2: error: unknown pointee type 'fp33'" $A -s '*fp33, *fp32, *fp32, i32, 1'

if [ "$FAILS" -ne 0 ]; then
    echo "test-aot: $FAILS failure(s)"
    exit 1
fi
echo "test-aot: OK"
