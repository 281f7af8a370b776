#!/usr/bin/env bash
# The long stress run (issue 49): tests/tests/stress.rs with RUNS runs per case (default 200),
# under oshrun and then Open MPI's mpirun, each case under 4 busy processes per core. CI runs
# the same cases with 6 runs (oshrun) and 3 (mpirun) from scripts/test.sh.
#   bash scripts/stress.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
cargo build --workspace
for launcher in oshrun mpirun; do
    echo "== stress: $runs runs per case under $launcher"
    RSHMEM_TEST_LAUNCHER=$launcher RSHMEM_STRESS_RUNS=$runs \
        cargo test -p rshmem-tests --test stress -- --test-threads=1
done
