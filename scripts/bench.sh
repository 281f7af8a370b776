#!/usr/bin/env bash
# Benchmarks, side by side with Open MPI's OSHMEM (Debian: apt-get install openmpi-bin
# libopenmpi-dev). Builds tests/bench/*.c against both libraries, runs both with 2 PEs and 4 PEs
# (oversubscribed on 2 cores), alternating the libraries, REPS times (default 3), and writes
# results/bench.csv, results/bench.md and results/latency.png (medians and rshmem/OSHMEM ratios).
# Usage: bash scripts/bench.sh [REPS]; BENCH_PROGS="coll_sizes" runs only the named programs.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
out=results
mkdir -p "$out/bin"
bash scripts/deps.sh
cargo build --release --workspace
peer=1
if [ ! -x /usr/bin/oshcc ] || [ ! -x /usr/bin/oshrun ]; then
    peer=0
    echo "bench: Open MPI's OSHMEM is not installed (apt-get install openmpi-bin libopenmpi-dev): running rshmem alone"
fi
progs=${BENCH_PROGS:-"put_get_latency put_get_bandwidth collectives coll_sizes active_set atomics signal hints"}
for p in $progs; do
    target/release/oshcc -O2 -o "$out/bin/rshmem_$p" "tests/bench/$p.c"
    if [ $peer = 1 ]; then /usr/bin/oshcc -O2 -o "$out/bin/oshmem_$p" "tests/bench/$p.c"; fi
done
cc -O2 -o "$out/bin/memcpy_bw" tests/bench/memcpy_bw.c
# Open MPI as root, more PEs than cores, and its osc/rdma segfault at finalize avoided.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^rdma
raw="$out/raw.txt"
: > "$raw"
for rep in $(seq "$reps"); do
    for np in 2 4; do
        for p in $progs; do
            echo "bench: rep $rep/$reps, $np PEs, $p"
            target/release/oshrun -np "$np" --timeout 900 "$out/bin/rshmem_$p" | sed -n "s/^RESULT/rshmem $np $rep/p" >> "$raw"
            if [ $peer = 1 ]; then
                # Bounded: OSHMEM's run of hints.c spun for over 15 minutes on 2026-11-28.
                timeout 900 /usr/bin/oshrun --oversubscribe -np "$np" "$out/bin/oshmem_$p" 2>/dev/null | sed -n "s/^RESULT/oshmem $np $rep/p" >> "$raw" || echo "bench: OSHMEM's $p on $np PEs failed or ran past 900 s"
            fi
        done
    done
    "$out/bin/memcpy_bw" | sed -n "s/^RESULT/memcpy 1 $rep/p" >> "$raw"
done
python3 -c "import matplotlib" 2>/dev/null || pip install --quiet matplotlib >/dev/null 2>&1 || echo "bench: matplotlib unavailable, no plot"
python3 scripts/bench_report.py "$raw" "$out"
