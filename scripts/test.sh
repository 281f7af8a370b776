#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit tests, header check and multi-PE tests, the
# latter under oshrun, then the C programs and spec examples again under Open MPI's mpirun, under
# Slurm's srun --mpi=pmix, and across 2 and 4 hosts emulated with network namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo fmt --all --check
cargo build --workspace
ln -sf oshcxx target/debug/oshc++
cargo clippy --workspace --all-targets -- -D warnings
if [ -x ../shared/tools/api-coverage ]; then
    ../shared/tools/api-coverage target/debug/libshmem.so | tail -n 22
fi

# The launchers the multi-PE tests use besides oshrun: a single-node Slurm and 4 emulated hosts.
trap 'bash scripts/hosts.sh down; bash scripts/slurm.sh down' EXIT
bash scripts/slurm.sh up
eval "$(bash scripts/slurm.sh env)"
bash scripts/hosts.sh up 4
# Newer UCX versions for spml ucx's test against them (RAPIDS wheels from PyPI); a version that
# cannot be fetched is reported and its test skipped.
ucx_dirs=""
for v in 1.18.1 1.22.0; do
    if bash scripts/ucx-wheel.sh "$v" "target/ucx-$v"; then
        ucx_dirs="${ucx_dirs:+$ucx_dirs:}$PWD/target/ucx-$v"
    else
        echo "test: could not fetch UCX $v; the test against it is skipped" >&2
    fi
done
export RSHMEM_TEST_UCX_DIRS=$ucx_dirs

log=$(mktemp)
trap 'rm -f "$log"; bash scripts/hosts.sh down; bash scripts/slurm.sh down' EXIT
status=0
# One suite; a failed one is counted and the others still run (inside `if`, `set -e` and
# `pipefail` do not end the script at the first failure).
suite() {
    echo "== $*"
    if ! "$@" 2>&1 | tee -a "$log"; then
        status=1
    fi
}
suite cargo test --workspace -- --test-threads=2
for launcher in mpirun srun hosts2 hosts4; do
    suite env RSHMEM_TEST_LAUNCHER=$launcher \
        cargo test -p rshmem-tests --test c_programs --test spec_examples --test rust_programs -- --test-threads=2
done
# The stress programs again under mpirun (its PMIx start, the same mapped path), fewer runs.
suite env RSHMEM_TEST_LAUNCHER=mpirun RSHMEM_STRESS_RUNS=3 \
    cargo test -p rshmem-tests --test stress -- --test-threads=2
# One closing line over every test binary (cargo prints one per binary, the last often a
# doc-test run with nothing in it).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"
