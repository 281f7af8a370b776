#!/usr/bin/env bash
# The long stress run (issue 49): tests/tests/stress.rs with RUNS runs per case (default 200),
# under oshrun and then Open MPI's mpirun, each case under 4 busy processes per core or under
# SHMEM_PERTURB, and then once more under oshrun with the whole job on one CPU (taskset: every
# PE and every busy process share it, so each preemption hands the CPU to another). A failed
# pass does not stop the others (a long run should say everything it found); the script exits
# non-zero if any failed. CI runs the same cases with 6 runs (oshrun) and 3 (mpirun) from
# scripts/test.sh.
#   bash scripts/stress.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
cargo build --workspace
status=0
pass() {
    echo "== stress: $runs runs per case $1"
    shift
    if ! "$@"; then
        status=1
    fi
}
for launcher in oshrun mpirun; do
    pass "under $launcher" env RSHMEM_TEST_LAUNCHER=$launcher RSHMEM_STRESS_RUNS="$runs" \
        cargo test -p rshmem-tests --test stress -- --test-threads=1
done
pass "under oshrun, on CPU 0 alone" env RSHMEM_TEST_LAUNCHER=oshrun RSHMEM_STRESS_RUNS="$runs" \
    taskset -c 0 cargo test -p rshmem-tests --test stress -- --test-threads=1
exit "$status"
