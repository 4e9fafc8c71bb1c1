#!/usr/bin/env bash
# gpu_pytest.sh - the Python suites (tests/python, tests/compat) in GPU mode, split over
# JOBS processes that share the GPU (NEREID_TEST_SHARD), each with its own log.
#
#   tools/gpu_pytest.sh JOBS PYTHON LOGDIR [TEST_PATH...]
#
# With TEST_PATHs, only those run (e.g. the dot tests again with NEREID_DISABLE_HOPPER=1,
# so that Hopper also checks the mma.sync path); without, tests/python then tests/compat.
# Every failure is printed as it happens (NEREID_TEST_INSTAFAIL) into its shard's log; at the
# end the logs' failure reports and each shard's summary line are printed.  Exit status 0 when
# every shard passed.
set -u
JOBS=${1:-1}
PY=${2:-python3}
LOGS=${3:-build/gpu_pytest}
shift 3 2>/dev/null || shift $#
PATHS=("$@")
cd "$(dirname "$0")/.."
mkdir -p "$LOGS"
export NEREID_TEST_DEVICE=cuda NEREID_TEST_INSTAFAIL=1
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
pids=()
for ((i = 0; i < JOBS; i++)); do
    (
        export NEREID_TEST_SHARD="$i/$JOBS"
        rc=0
        if [ ${#PATHS[@]} -gt 0 ]; then
            "$PY" -m pytest -v -rf -p no:cacheprovider "${PATHS[@]}" || rc=$?
        else
            "$PY" -m pytest -v -rf -p no:cacheprovider tests/python || rc=$?
            "$PY" -m pytest -v -rf -p no:cacheprovider tests/compat || rc=$?
        fi
        exit $rc
    ) >"$LOGS/shard$i.log" 2>&1 &
    pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
done
for ((i = 0; i < JOBS; i++)); do
    grep -A 25 "^===== FAILED" "$LOGS/shard$i.log"
done
for ((i = 0; i < JOBS; i++)); do
    echo "shard $i/$JOBS: $(grep -E '(passed|failed|error)' "$LOGS/shard$i.log" | grep -E '^=+ |^[0-9]+ ' | tr '\n' ' ')"
done
grep -h -E "^(FAILED|ERROR) " "$LOGS"/shard*.log
exit $status
