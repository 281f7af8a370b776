#!/usr/bin/env bash
# Emulates N hosts on this machine (root only) and runs Open MPI jobs across them.
#
#   hosts.sh up N                 namespaces PREFIX-h0..h{N-1} on a bridge in PREFIX-hub,
#                                 addresses 10.213.7.1..N/24 (only inside the namespaces)
#   hosts.sh down                 removes them and kills what still runs in them (idempotent)
#   hosts.sh agent [opts] HOST cmd...
#                                 what mpirun calls instead of ssh: runs cmd on HOST
#   hosts.sh exec I cmd...        runs cmd (argv, no shell) on host I
#   hosts.sh run N PPN [--] [-np K] mpirun-args... prog args...
#                                 mpirun -np N*PPN (or K) over N hosts, from host 0; brings the hosts
#                                 up and down around the job unless they are already up
#
# Each host gets its own network, hostname (PREFIX-hI), /dev/shm and System V IPC, so
# shared-memory transports cannot cross "hosts"; /tmp and the rest of the filesystem are shared.
# Links with a delay, jitter (reordering) or loss, which this kernel cannot add (no netem): with
# RSHMEM_HOSTS_DELAY_MS, RSHMEM_HOSTS_JITTER_MS or RSHMEM_HOSTS_LOSS (percent) set at `up`, the
# hosts are joined by scripts/linkemu.py, a switch in user space, instead of the hub's bridge;
# `down` ends it, and it leaves its counts in /run/PREFIX-linkemu.stats.
# Environment: RSHMEM_HOSTS_PREFIX (default rshmem; lets two jobs run side by side),
# RSHMEM_HOSTS_FORWARD (variable names `run` passes to the ranks besides RSHMEM_*, SHMEM_*,
# OSHMEM_*, UCX_*, RUST_* and LD_LIBRARY_PATH).
set -euo pipefail

PREFIX=${RSHMEM_HOSTS_PREFIX:-rshmem}
NET=10.213.7 # each set of namespaces is isolated, so reusing one range is fine
HUB=$PREFIX-hub
SELF=$(readlink -f "${BASH_SOURCE[0]}")

die() { echo "hosts.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"

# Installs Debian packages only when a command is missing (CI starts from a bare container).
need() {
    local cmd=$1 pkg=$2
    command -v "$cmd" >/dev/null && return
    echo "hosts.sh: installing $pkg" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$pkg" >/dev/null
}

ns_exists() { [ -e "/run/netns/$1" ]; }
# The link emulator's pid, while one runs for this prefix.
LINKEMU_PID=/run/$PREFIX-linkemu.pid
emulated_links() { [ -n "${RSHMEM_HOSTS_DELAY_MS:-}${RSHMEM_HOSTS_JITTER_MS:-}${RSHMEM_HOSTS_LOSS:-}" ]; }
host_ns() { echo "$PREFIX-h$1"; }

# Runs argv on host I: its network namespace, plus fresh UTS/IPC/mount namespaces with a
# private /dev/shm (unshare makes mounts private, so nothing leaks to the root namespace).
in_host() {
    local i=$1; shift
    exec ip netns exec "$(host_ns "$i")" unshare --mount --uts --ipc --propagation private \
        sh -c 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && hostname "$0" && exec "$@"' \
        "$(host_ns "$i")" "$@"
}

down() {
    local ns pids names
    if [ -f "$LINKEMU_PID" ]; then
        # It writes its counts (/run/PREFIX-linkemu.stats) as it ends.
        local emu
        emu=$(cat "$LINKEMU_PID")
        kill -TERM "$emu" 2>/dev/null || true
        for _ in $(seq 40); do kill -0 "$emu" 2>/dev/null || break; sleep 0.05; done
        rm -f "$LINKEMU_PID"
    fi
    names=$(ip netns list 2>/dev/null | awk '{print $1}' || true)
    for ns in $(grep -E "^$PREFIX-(hub|h[0-9]+)\$" <<<"$names" || true); do
        # Processes keep a namespace alive after `ip netns del`; end the ones left in it.
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then
            kill -TERM $pids 2>/dev/null || true
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                pids=$(ip netns pids "$ns" 2>/dev/null || true)
                [ -z "$pids" ] && break
                sleep 0.2
            done
            [ -n "$pids" ] && kill -KILL $pids 2>/dev/null || true
        fi
        ip netns del "$ns" # takes its veth ends (and in the hub, the bridge) with it
    done
    # `ip netns add` bind-mounts /run/netns onto itself; undo that once no namespace is left.
    if [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
        umount /run/netns 2>/dev/null || true
        rmdir /run/netns 2>/dev/null || true
    fi
}

up() {
    local n=$1 i j
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 250 ]] || die "up: N must be 1..250"
    need ip iproute2
    down
    ip netns add "$HUB"
    ip -n "$HUB" link add br0 type bridge
    ip -n "$HUB" link set br0 up
    local taps=()
    for ((i = 0; i < n; i++)); do
        ip netns add "$(host_ns "$i")"
        if emulated_links; then
            taps+=("$PREFIX-t$i")
        else
            # Created inside the hub with its peer straight in the host: the root namespace
            # never sees either end.
            ip -n "$HUB" link add "h$i" type veth peer name eth0 netns "$(host_ns "$i")"
            ip -n "$HUB" link set "h$i" master br0 up
        fi
    done
    if emulated_links; then
        # The switch opens one TAP device per host here, then each moves into its host.
        local ready
        ready=$(mktemp -u "/run/$PREFIX-linkemu.XXXXXX")
        setsid python3 "$(dirname "$SELF")/linkemu.py" --delay-ms "${RSHMEM_HOSTS_DELAY_MS:-0}" \
            --jitter-ms "${RSHMEM_HOSTS_JITTER_MS:-0}" --loss "${RSHMEM_HOSTS_LOSS:-0}" \
            --ready "$ready" --stats "/run/$PREFIX-linkemu.stats" "${taps[@]}" </dev/null >/dev/null 2>&1 &
        echo $! >"$LINKEMU_PID"
        for _ in $(seq 100); do [ -s "$ready" ] && break; sleep 0.05; done
        [ -s "$ready" ] || die "up: the link emulator did not start"
        rm -f "$ready"
        for ((i = 0; i < n; i++)); do
            ip link set "$PREFIX-t$i" netns "$(host_ns "$i")"
            ip -n "$(host_ns "$i")" link set "$PREFIX-t$i" name eth0
        done
    fi
    for ((i = 0; i < n; i++)); do
        ip -n "$(host_ns "$i")" addr add "$NET.$((i + 1))/24" dev eth0
        ip -n "$(host_ns "$i")" link set eth0 up
        ip -n "$(host_ns "$i")" link set lo up # PMIx and the ranks talk over loopback
    done
    # Reachability without ping: a connect to a closed port is refused (RST) only when the
    # address answers; a timeout or "No route" means it is not reachable.
    for ((i = 0; i < n; i++)); do
        for ((j = 0; j < n; j++)); do
            [ "$i" = "$j" ] && continue
            local ok= out
            for _ in $(seq 30); do
                out=$(LC_ALL=C ip netns exec "$(host_ns "$i")" timeout 1 \
                    bash -c "exec 3<>/dev/tcp/$NET.$((j + 1))/9" 2>&1 || true)
                [[ $out == *refused* ]] && { ok=1; break; }
                sleep 0.1
            done
            [ -n "$ok" ] || die "up: host $i cannot reach $NET.$((j + 1))"
        done
    done
    echo -n "hosts.sh: $n hosts up:"
    for ((i = 0; i < n; i++)); do echo -n " $(host_ns "$i")=$NET.$((i + 1))"; done
    echo
}

# mpirun calls this as it would call ssh: `agent [ssh options] HOST word...`; ssh would join
# the words with spaces and hand them to a shell, and so does this.
agent() {
    while [ $# -gt 0 ] && [[ $1 == -* ]]; do
        case $1 in
            -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;; # ssh options that take a value
            *) shift ;;
        esac
    done
    [ $# -ge 2 ] || die "agent: usage: agent [opts] HOST command..."
    local host=$1 i; shift
    case $host in
        "$NET".*) i=$((${host##*.} - 1)) ;;
        "$PREFIX"-h*) i=${host#"$PREFIX"-h} ;;
        *) die "agent: unknown host $host" ;;
    esac
    ns_exists "$(host_ns "$i")" || die "agent: host $host is not up"
    # A login-like environment, as over ssh: only what mpirun puts on the command line (its
    # PATH/LD_LIBRARY_PATH and -x variables) reaches the daemon and the ranks. The prefix is
    # kept for daemons that start further daemons through this agent (tree spawn).
    in_host "$i" env -i PATH="$PATH" HOME="${HOME:-/root}" USER=root LOGNAME=root SHELL=/bin/sh \
        RSHMEM_HOSTS_PREFIX="$PREFIX" sh -c "$*"
}

run() {
    [ $# -ge 3 ] || die "run: usage: run N PPN [--] mpirun-args... prog args..."
    local n=$1 ppn=$2 i hosts= v rc=0 pid; shift 2
    [ "${1:-}" = -- ] && shift
    [[ $n =~ ^[0-9]+$ && $n -ge 1 && $ppn =~ ^[0-9]+$ && $ppn -ge 1 ]] ||
        die "run: N and PPN must be >= 1"
    # Fewer processes than slots: `-np K` first among the mpirun arguments (hosts fill in turn).
    local np=$((n * ppn))
    if [ "${1:-}" = -np ]; then np=$2; shift 2; fi
    need mpirun openmpi-bin
    if ns_exists "$HUB"; then
        for ((i = 0; i < n; i++)); do
            ns_exists "$(host_ns "$i")" || die "run: hosts are up but $(host_ns "$i") is missing"
        done
    else
        trap 'down' EXIT
        up "$n" >&2
    fi
    for ((i = 0; i < n; i++)); do hosts+=${hosts:+,}$NET.$((i + 1)):$ppn; done
    # mpirun starts with the same clean environment the agent gives the other hosts, so ranks
    # on host 0 see no more than the rest; these variables are set there and passed on by -x.
    local envs=(PATH="$PATH" HOME="${HOME:-/root}" USER=root LOGNAME=root SHELL=/bin/sh) fwd=()
    for v in $({ compgen -e | grep -E '^(RSHMEM_|SHMEM_|OSHMEM_|UCX_|RUST_|LD_LIBRARY_PATH$)'
        printf '%s\n' ${RSHMEM_HOSTS_FORWARD:-}; } | sort -u); do
        [ -n "${!v+x}" ] || continue
        envs+=("$v=${!v}")
        fwd+=(-x "$v")
    done
    # The agent inherits mpirun's environment and needs the prefix to find the namespaces.
    envs+=(RSHMEM_HOSTS_PREFIX="$PREFIX")
    # oob/btl_tcp_if_include: Open MPI's own TCP stays on the emulated network.
    # Open MPI's default tree spawn is kept: with no_tree_spawn the daemons --daemonize, get
    # reparented to PID 1 and linger as zombies when it does not reap; attached, mpirun reaps them.
    # In the background so that a signal to this script reaches mpirun now, not after the job
    # (bash runs traps only between commands); <&0 keeps stdin, which mpirun gives rank 0.
    # --bind-to none: every host's daemon believes the machine's cores are its own and would
    # bind its first rank to core 0, so the ranks of all hosts shared one core (an 8-byte get
    # across 2 hosts took 23 us instead of 12).
    # Open MPI's session directories (mpirun's and each host's daemon's) go in a directory of
    # this run's, removed when mpirun has ended however it ended: a daemon or mpirun that is
    # killed leaves its own behind, which under /tmp would outlive the job. (The name does not
    # start with rshmem-: the tests' leak check would take a concurrent test's run for its own.)
    local sessions
    sessions=$(mktemp -d /tmp/hosts-sh-mpirun.XXXXXX)
    (in_host 0 env -i "${envs[@]}" mpirun --allow-run-as-root --oversubscribe --bind-to none \
        --mca orte_tmpdir_base "$sessions" \
        --mca plm_rsh_agent "bash $SELF agent" \
        --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24" \
        --host "$hosts" -np "$np" "${fwd[@]}" "$@") <&0 &
    pid=$!
    trap 'kill -TERM "$pid" 2>/dev/null; rc=130' INT
    trap 'kill -TERM "$pid" 2>/dev/null; rc=143' TERM
    while :; do
        wait "$pid" && i=0 || i=$?
        kill -0 "$pid" 2>/dev/null || break # wait was cut short by a signal: mpirun still ends it
    done
    trap - INT TERM
    rm -rf "$sessions"
    return $((rc ? rc : i))
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    up)
        [ $# = 1 ] || die "usage: up N"
        trap 'down' EXIT # leaves no half-built set behind
        up "$1"
        trap - EXIT
        ;;
    down) down ;;
    agent) agent "$@" ;;
    exec)
        [ $# -ge 2 ] || die "usage: exec I cmd..."
        ns_exists "$(host_ns "$1")" || die "host $1 is not up"
        in_host "$@"
        ;;
    run) run "$@" ;;
    *) die "usage: hosts.sh up N | down | agent [opts] HOST cmd... | exec I cmd... |" \
        "run N PPN [--] mpirun-args... prog..." ;;
esac
