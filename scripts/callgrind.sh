#!/usr/bin/env bash
# Instruction counts of the hot paths (8-byte shmem_putmem and shmem_getmem to an on-node peer,
# shmem_barrier_all with 2 PEs), per call, with valgrind --tool=callgrind: stable on small noisy
# machines, unlike timings. Counts rshmem, and Open MPI's OSHMEM when it is installed.
# Usage: bash scripts/callgrind.sh   (prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
cargo build --release --workspace >/dev/null 2>&1
out=results/callgrind
mkdir -p "$out"
target/release/oshcc -O2 -g -o "$out/rshmem_hotpath" tests/bench/hotpath.c
libs="rshmem"
if [ -x /usr/bin/oshcc ]; then
    /usr/bin/oshcc -O2 -g -o "$out/oshmem_hotpath" tests/bench/hotpath.c
    libs="rshmem oshmem"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^rdma
n=1000
echo "| routine | rshmem instructions/call | OSHMEM instructions/call |"
echo "| --- | ---: | ---: |"
for fn in shmem_putmem shmem_getmem shmem_barrier_all; do
    case $fn in
        shmem_barrier_all) row="| $fn (2 PEs on one node; includes waiting) |" ;;
        *) row="| $fn (8 B to a PE on the same node) |" ;;
    esac
    for lib in rshmem oshmem; do
        if [[ " $libs " != *" $lib "* ]]; then row="$row n/a |"; continue; fi
        rm -f "$out"/cg.*
        vg=(valgrind --tool=callgrind "--toggle-collect=*$fn*" "--callgrind-out-file=$out/cg.%p")
        if [ $lib = rshmem ]; then
            target/release/oshrun -np 2 --timeout 600 "${vg[@]}" "$out/rshmem_hotpath" 2>/dev/null
        else
            /usr/bin/oshrun --oversubscribe -np 2 "${vg[@]}" "$out/oshmem_hotpath" 2>/dev/null
        fi
        # PE 0's file has the most collected instructions (PE 1 issues no put/get).
        best=0
        for f in "$out"/cg.*; do
            ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$f")
            [ -n "$ir" ] && [ "$ir" -gt "$best" ] && best=$ir
        done
        row="$row $((best / n)) |"
    done
    echo "$row"
done
