#!/usr/bin/env bash
# Collectives across emulated hosts, side by side with Open MPI's OSHMEM (root; apt-get install
# openmpi-bin libopenmpi-dev), and what they send between hosts (issue 51, item 4):
#   - tests/bench/coll_sizes.c, 8-byte barrier, broadcast, float sum and fcollect (the
#     active-set forms both libraries have), on HOSTS hosts of PPN PEs, alternating the
#     libraries run by run; the figure of a run is PE 0's median block;
#   - rshmem's messages per call between hosts, counted by spml ucx
#     (SHMEM_MCA_spml_ucx_traffic=1) on tests/c/coll_traffic.c: the difference between 100
#     calls and none, the most any PE sent and the sum over the PEs.
# Links: "bridge" (the hub's bridge, the kernel's own forwarding) and "emu" (scripts/linkemu.py,
# a switch in user space, with BENCH_DELAY_MS of delay each way: this kernel has no netem).
# Prints one line per figure (median over REPS runs of each library, and rshmem/OSHMEM) and
# writes results/coll-hosts.csv.
# Usage: bash scripts/bench-coll-hosts.sh [REPS]   (default 3)
# BENCH_HOSTS (default "4 8"), BENCH_PPN (default "1 2"), BENCH_LINKS (default "bridge emu"),
# BENCH_DELAY_MS (default 0.05), COLL_ITERS (calls per block, default 100; OSHMEM takes 8-80 ms
# per collective across these hosts, so 16 PEs want 20).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
hosts_list=${BENCH_HOSTS:-4 8}
ppn_list=${BENCH_PPN:-1 2}
links=${BENCH_LINKS:-bridge emu}
delay=${BENCH_DELAY_MS:-0.05}
out=results
mkdir -p "$out/bin"
[ -x /usr/bin/oshcc ] || { echo "bench-coll-hosts: needs Open MPI's OSHMEM (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
# BENCH_RSHMEM_PREFIX: an installed rshmem (scripts/install.sh) to measure instead of this tree's
# release build, so the tree can be rebuilt meanwhile.
oshcc=target/release/oshcc
if [ -n "${BENCH_RSHMEM_PREFIX:-}" ]; then
    oshcc=$BENCH_RSHMEM_PREFIX/bin/oshcc
else
    cargo build --release --workspace
fi
$oshcc -O2 -o "$out/bin/rshmem_coll_sizes" tests/bench/coll_sizes.c
/usr/bin/oshcc -O2 -o "$out/bin/oshmem_coll_sizes" tests/bench/coll_sizes.c
$oshcc -O2 -Itests/c -o "$out/bin/rshmem_coll_traffic" tests/c/coll_traffic.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^rdma
export COLL_MIN=8 COLL_MAX=8 COLL_ITERS=${COLL_ITERS:-100} COLL_ONLY=barrier,broadcast,reduce,fcollect
export RSHMEM_HOSTS_FORWARD="COLL_MIN COLL_MAX COLL_ITERS COLL_ONLY COLL_OP OMPI_MCA_osc"
export RSHMEM_HOSTS_PREFIX=rshmem-bench
max_hosts=0
for h in $hosts_list; do [ "$h" -gt "$max_hosts" ] && max_hosts=$h; done
trap 'bash scripts/hosts.sh down >/dev/null 2>&1 || true' EXIT
raw="$out/coll-hosts-raw.txt"
# BENCH_APPEND=1 adds to the raw results of an earlier call (other layouts), and the summary
# covers both.
[ "${BENCH_APPEND:-0}" = 1 ] || : > "$raw"
for link in $links; do
    bash scripts/hosts.sh down >/dev/null 2>&1 || true
    if [ "$link" = emu ]; then
        RSHMEM_HOSTS_DELAY_MS=$delay bash scripts/hosts.sh up "$max_hosts" >/dev/null
    else
        bash scripts/hosts.sh up "$max_hosts" >/dev/null
    fi
    for h in $hosts_list; do
        for ppn in $ppn_list; do
            tag="$link $h $ppn"
            for ((r = 0; r < reps; r++)); do
                for lib in rshmem oshmem; do
                    timeout 300 bash scripts/hosts.sh run "$h" "$ppn" "$out/bin/${lib}_coll_sizes" 2>/dev/null |
                        sed -n "s/^RESULT/$lib $tag/p" >> "$raw" || echo "bench-coll-hosts: $lib $tag run $r failed" >&2
                done
            done
            for op in barrier broadcast reduce fcollect; do
                for iters in 0 100; do
                    COLL_OP=$op COLL_ITERS=$iters SHMEM_MCA_spml_ucx_traffic=1 timeout 300 \
                        bash scripts/hosts.sh run "$h" "$ppn" "$out/bin/rshmem_coll_traffic" 2>&1 >/dev/null |
                        sed -n "s/.*rshmem\[PE \([0-9]*\)\].*(SHMEM_MCA_spml_ucx_traffic) to other hosts: \([^;]*\);.*/traffic $tag $op $iters \1 \2/p" >> "$raw"
                done
            done
        done
    done
done
python3 - "$raw" "$out/coll-hosts.csv" <<'EOF'
import collections, statistics, sys
raw, csv = sys.argv[1], sys.argv[2]
times = collections.defaultdict(list)   # (link, hosts, ppn, bench, lib) -> [us]
sent = collections.defaultdict(dict)    # (link, hosts, ppn, op, iters) -> {pe: messages}
for line in open(raw):
    w = line.split()
    if w[0] == "traffic":
        link, h, ppn, op, iters, pe = w[1:7]
        sent[(link, h, ppn, op, iters)][int(pe)] = sum(int(kv.split("=")[1]) for kv in w[7:] if not kv.startswith("bytes="))
    else:
        # LIB LINK HOSTS PPN name size value unit
        lib, link, h, ppn, name, size, value = w[:7]
        times[(link, h, ppn, name, lib)].append(float(value))
rows = ["link,hosts,ppn,collective,rshmem_us,oshmem_us,ratio,msgs_max_pe,msgs_all_pes"]
names = {"coll_barrier": "barrier", "coll_broadcast": "broadcast", "coll_float_sum": "reduce", "coll_fcollect": "fcollect"}
for key in sorted({k[:4] for k in times}):
    link, h, ppn, name = key
    if name not in names:
        continue
    r = statistics.median(times[key + ("rshmem",)]) if times[key + ("rshmem",)] else float("nan")
    o = statistics.median(times[key + ("oshmem",)]) if times[key + ("oshmem",)] else float("nan")
    op = names[name]
    a, b = sent.get((link, h, ppn, op, "0"), {}), sent.get((link, h, ppn, op, "100"), {})
    if a and b and a.keys() == b.keys():
        per_pe = [(b[pe] - a[pe]) / 100 for pe in a]
        most, total = max(per_pe), sum(per_pe)
    else:
        most = total = float("nan")
    rows.append(f"{link},{h},{ppn},{op},{r:.1f},{o:.1f},{r / o:.3f},{most:g},{total:g}")
open(csv, "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
