#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit tests, header check and multi-PE tests.
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
log=$(mktemp)
cargo test --workspace -- --test-threads=2 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# One closing line over every test binary (cargo prints one per binary, the last often a
# doc-test run with nothing in it).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
exit "$status"
