#!/usr/bin/env bash
# gpu_check.sh - the whole GPU check of Nereid on a machine with an NVIDIA GPU.
#
#   tools/gpu_check.sh [--quick] [--bench NAMES] [--no-bench] [--out DIR]
#
# Builds the library, the CLI and the Python extension, then runs:
#   1. the driver smoke test (build/tests/rt_smoke);
#   2. the end-to-end corpus on the GPU (make gpu-test: every launch runs on
#      the interpreter and on the GPU, results compared);
#   3. the SASS of the Hopper kernels (tools/hopper_sass.sh: HGMMA, QGMMA,
#      IGMMA, UTMALDG), where the CUDA toolkit's cuobjdump is installed;
#   4. the memory-bound benchmarks against Triton and torch (bench/run.py).
# and prints one summary table.  Logs and results go to DIR (default
# build/gpu_check).  Exit status: 0 when every step passed.
set -u
cd "$(dirname "$0")/.."

QUICK=""
BENCH="vector_add,softmax,copy"
OUT=build/gpu_check
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) QUICK="--quick" ;;
    --bench) BENCH="$2"; shift ;;
    --no-bench) BENCH="" ;;
    --out) OUT="$2"; shift ;;
    *) echo "gpu_check.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT"
PY=${GPU_PYTHON:-python3}
JOBS=$(nproc 2>/dev/null || echo 4)

declare -a NAMES RESULTS
step() { # name, command...
    local name="$1"; shift
    local log="$OUT/$name.log" t0=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    NAMES+=("$name")
    RESULTS+=("$( [ $rc -eq 0 ] && echo ok || echo "FAILED (rc $rc)" )  $((SECONDS - t0)) s  $log")
    return $rc
}

step build make -j"$JOBS" all pyext build/tests/rt_smoke build/tests/test_wgmma PYTHON="$PY" WERROR= || { cat "$OUT/build.log" | tail -30; }
step rt_smoke build/tests/rt_smoke
# (a time limit, so that a hung launch still leaves the steps after it and the summary)
step gpu_e2e timeout "${GPU_TEST_TIMEOUT:-480}" make gpu-test GPU_PYTHON="$PY" GPU_TEST_JOBS="${GPU_TEST_JOBS:-8}" WERROR=
if command -v cuobjdump >/dev/null || [ -x /usr/local/cuda/bin/cuobjdump ]; then
    step hopper_sass tools/hopper_sass.sh "$OUT/hopper_sass"
fi
[ -n "$BENCH" ] && step bench "$PY" bench/run.py --no-build $QUICK --only "$BENCH" --out "$OUT/bench" --json --time-limit 280

echo
echo "== Nereid GPU check: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
printf '%-10s %s\n' step result
status=0
for i in "${!NAMES[@]}"; do
    printf '%-10s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}"
    case "${RESULTS[$i]}" in ok*) ;; *) status=1 ;; esac
done
echo
# the suite runs in shards (tools/gpu_pytest.sh), each with its log in build/gpu_pytest
cat build/gpu_pytest/shard*.log build/gpu_pytest_mma/shard*.log > "$OUT/gpu_shards.log" 2>/dev/null
grep -h -E "^shard [0-9]+/" "$OUT/gpu_e2e.log"
grep -h -E "^(FAILED|ERROR) " "$OUT/gpu_shards.log" | head -60
# each failure's message as it happened (NEREID_TEST_INSTAFAIL): there even when the run was cut
grep -h -A 1 "^===== FAILED" "$OUT/gpu_shards.log" | head -200
[ -f "$OUT/hopper_sass.log" ] && cat "$OUT/hopper_sass.log"
[ -f "$OUT/bench.log" ] && tail -40 "$OUT/bench.log"
exit $status
