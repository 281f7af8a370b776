#!/usr/bin/env bash
# The main job: install dependencies, build everything (release), compile an OpenSHMEM C program
# with our oshcc and run it on 4 PEs with our oshrun.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release --workspace
ln -sf oshcxx target/release/oshc++
mkdir -p target/examples
target/release/oshcc -O2 -o target/examples/ring_demo examples/ring_demo.c
target/release/oshrun -np 4 target/examples/ring_demo
