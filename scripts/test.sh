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
cargo test --workspace -- --test-threads=2
