#!/usr/bin/env bash
# The network path, side by side with Open MPI's OSHMEM (root; apt-get install openmpi-bin
# libopenmpi-dev), both over UCX's TCP transport (UCX_TLS=tcp,self), alternating the libraries:
#   - tests/bench/netpath.c with 2 PEs on 2 emulated hosts (scripts/hosts.sh: network
#     namespaces, so the PEs reach each other only over TCP), and with 2 PEs on one host over
#     loopback (rshmem with SHMEM_LOCAL_MAP=0, every peer on the network path);
#   - the soak (tests/c/soak.c: blocking increments, fetch-adds, puts and fetches spread over
#     every PE) with 4 PEs on 4 emulated hosts and with 4 PEs on one host (oversubscribed).
# Prints, per figure, the median over REPS runs of each library (each run's own figure is a
# median of blocks) and the ratio rshmem/OSHMEM, and writes results/net.csv.
# Usage: bash scripts/bench-net.sh [REPS]   (default 5)
# BENCH_NET_ALT="VAR=value ..." adds a third contender, rshmem run with those settings (say
# SHMEM_MCA_spml_ucx_rma_in_messages=0), in the same alternation; its figures print as "alt".
# BENCH_NET_WHERE narrows the layouts (hosts2 host1 soak-hosts4 soak-host1).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
out=results
mkdir -p "$out/bin"
[ -x /usr/bin/oshcc ] || { echo "bench-net: needs Open MPI's OSHMEM (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
cargo build --release --workspace
for lib in rshmem oshmem; do
    cc=target/release/oshcc
    [ $lib = oshmem ] && cc=/usr/bin/oshcc
    $cc -O2 -o "$out/bin/${lib}_netpath" tests/bench/netpath.c
    $cc -O2 -Itests/c -o "$out/bin/${lib}_soak" tests/c/soak.c
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_osc=^rdma
export UCX_TLS=tcp,self SOAK_OPS=${SOAK_OPS:-20000} SOAK_RATE=1 RSHMEM_HOSTS_FORWARD="SOAK_OPS SOAK_RATE OMPI_MCA_osc"
export RSHMEM_HOSTS_PREFIX=rshmem-bench
bash scripts/hosts.sh up 4 >/dev/null
trap 'bash scripts/hosts.sh down >/dev/null 2>&1 || true' EXIT
raw="$out/net-raw.txt"
: > "$raw"
# run LIB WHERE: one run, its RESULT lines tagged "LIB WHERE"
run() {
    local lib=$1 where=$2 bin="$out/bin/$1" tag=$1
    if [ "$lib" = alt ]; then
        lib=rshmem bin="$out/bin/rshmem"
    fi
    # shellcheck disable=SC2086 # the settings are words
    [ "$tag" != alt ] || export ${BENCH_NET_ALT:?}
    case $where in
    hosts2) bash scripts/hosts.sh run 2 1 "${bin}_netpath" ;;
    host1) if [ $lib = rshmem ]; then SHMEM_LOCAL_MAP=0 target/release/oshrun -np 2 --timeout 300 "${bin}_netpath"
           else /usr/bin/oshrun --oversubscribe -np 2 -x UCX_TLS "${bin}_netpath"; fi ;;
    soak-hosts4) bash scripts/hosts.sh run 4 1 "${bin}_soak" ;;
    soak-host1) if [ $lib = rshmem ]; then SHMEM_LOCAL_MAP=0 target/release/oshrun -np 4 --timeout 300 "${bin}_soak"
                else /usr/bin/oshrun --oversubscribe -np 4 -x UCX_TLS -x SOAK_OPS -x SOAK_RATE "${bin}_soak"; fi ;;
    esac 2>/dev/null | sed -n "s/^RESULT/$tag $where/p" >> "$raw" ||
        echo "bench-net: $tag $where exited with status ${PIPESTATUS[0]}" >&2
    local kv
    if [ "$tag" = alt ]; then for kv in $BENCH_NET_ALT; do unset "${kv%%=*}"; done; fi
}
contenders="rshmem oshmem${BENCH_NET_ALT:+ alt}"
for rep in $(seq "$reps"); do
    for where in ${BENCH_NET_WHERE:-hosts2 host1 soak-hosts4 soak-host1}; do
        echo "bench-net: rep $rep/$reps, $where" >&2
        # alternate the order of the contenders
        order=$contenders
        [ $((rep % 2)) = 1 ] || order=$(echo "$contenders" | tr ' ' '\n' | tac | tr '\n' ' ')
        for lib in $order; do run "$lib" $where; done
    done
done
python3 - "$raw" "$out/net.csv" <<'EOF'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    lib, where, name, size, value, unit = f[:6]
    rows[(where, name, unit)].append((lib, float(value)))
higher_better = ("MB/s", "Mops/s", "ops/s/PE")
with open(sys.argv[2], "w") as csv:
    csv.write("where,figure,unit,rshmem_median,oshmem_median,ratio,rshmem_min,rshmem_max,oshmem_min,oshmem_max\n")
    print(f"{'where':12} {'figure':26} {'rshmem':>10} {'OSHMEM':>10} {'ratio':>6}  (rshmem/OSHMEM; unit)")
    for (where, name, unit), v in rows.items():
        r = [x for l, x in v if l == "rshmem"]
        o = [x for l, x in v if l == "oshmem"]
        a = [x for l, x in v if l == "alt"]
        if not r:
            continue
        rm = statistics.median(r)
        if a:
            am = statistics.median(a)
            print(f"{where:12} {name:26} {'alt':>10} {am:10.4g} {rm / am:6.2f}  (rshmem/alt; {unit})")
        if not o:  # a figure only rshmem has (put-with-signal: OSHMEM 4.1 implements OpenSHMEM 1.4)
            print(f"{where:12} {name:26} {rm:10.4g} {'-':>10} {'-':>6}  {unit}")
            csv.write(f"{where},{name},{unit},{rm:.6g},,,{min(r):.6g},{max(r):.6g},,\n")
            continue
        om = statistics.median(o)
        print(f"{where:12} {name:26} {rm:10.4g} {om:10.4g} {rm / om:6.2f}  {unit}{' (higher is better)' if unit in higher_better else ''}")
        csv.write(f"{where},{name},{unit},{rm:.6g},{om:.6g},{rm / om:.3f},{min(r):.6g},{max(r):.6g},{min(o):.6g},{max(o):.6g}\n")
EOF
