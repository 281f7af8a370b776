#!/usr/bin/env bash
# A throw-away single-node Slurm for tests, so that `srun -n 4 --mpi=pmix ./prog` works (Slurm's
# slurmstepd serves PMIx to every task). Debian 12, as root, no init system needed: the daemons are
# started directly.
#
#   bash scripts/slurm.sh up       install (if missing) and start munged, slurmctld, slurmd
#   eval "$(bash scripts/slurm.sh env)"   sets SLURM_CONF for srun/sinfo/squeue
#   srun -n 4 --mpi=pmix -K ./prog      (KillOnBadExit=1 is also the default here)
#   bash scripts/slurm.sh down     stop what `up` started and remove its files
#   bash scripts/slurm.sh status
#
# Settings: RSHMEM_SLURM_DIR (scratch dir, default /run/rshmem-slurm), RSHMEM_SLURM_CPUS (CPUs the
# node claims, default max(16, 4*nproc): more than the machine has, so jobs may oversubscribe it),
# RSHMEM_SLURM_PORT (slurmctld port, slurmd uses the next one; default 6817).
set -euo pipefail

DIR=${RSHMEM_SLURM_DIR:-/run/rshmem-slurm}
CONF=$DIR/slurm.conf
HOST=$(hostname -s)
PORT=${RSHMEM_SLURM_PORT:-6817}
NCPU=$(nproc)
CPUS=${RSHMEM_SLURM_CPUS:-$((NCPU * 4 > 16 ? NCPU * 4 : 16))}
MUNGE_KEY=/etc/munge/munge.key
# mpi_pmix.so (in slurm-wlm-basic-plugins) dlopen()s the unversioned
# /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so, which only libpmix-dev ships.
PKGS=(munge slurm-client slurmctld slurmd slurm-wlm-basic-plugins libpmix-dev)

die() { echo "slurm.sh: $*" >&2; exit 1; }
log() { echo "slurm.sh: $*" >&2; }

# pid from a pid file, only if that process is alive and is the named program (a stale file
# may name a recycled pid).
pid_of() {
    local file=$1 name=$2 pid
    [[ -r $file ]] || return 1
    pid=$(tr -dc 0-9 <"$file")
    [[ -n $pid && -r /proc/$pid/comm ]] || return 1
    [[ $(cat "/proc/$pid/comm") == "$name"* ]] || return 1
    echo "$pid"
}

# TERM to all at once (each daemon takes 1-2 s to notice), wait up to 15 s, then KILL.
# Arguments: pids.
stop_pids() {
    local pid i left
    (($#)) || return 0
    kill "$@" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
        left=()
        for pid; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
        ((${#left[@]})) || return 0
        sleep 0.1
    done
    log "${left[*]} ignored SIGTERM, killing them"
    kill -9 "${left[@]}" 2>/dev/null || true
}

# Running and not a zombie (our own background children stay zombies until the script exits).
alive() {
    local st
    st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
    [[ -n $st && $st != Z ]]
}

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

node_state() { timeout 5 sinfo -h -N -n "$HOST" -o %T 2>/dev/null | head -n1; }

is_up() {
    [[ -f $CONF ]] || return 1
    pid_of "$DIR/run/slurmctld.pid" slurmctld >/dev/null || return 1
    pid_of "$DIR/run/slurmd.pid" slurmd >/dev/null || return 1
    munge_ok || return 1
    # idle/mixed/allocated all mean the node answers and takes jobs.
    [[ $(SLURM_CONF=$CONF node_state) =~ ^(idle|mixed|allocated|completing) ]]
}

install_pkgs() {
    local p missing=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Another process may hold the apt/dpkg locks: wait for them rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed"
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" \
        >/dev/null || die "apt-get install ${missing[*]} failed"
}

# Use a munged that already works (e.g. one the package's init script started); otherwise start
# one as the munge user, as its init script would, and note that it is ours to stop.
start_munge() {
    munge_ok && return 0
    id munge >/dev/null 2>&1 || die "no munge user (is the munge package installed?)"
    install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
    install -d -o munge -g munge -m 0755 /run/munge
    if [[ ! -s $MUNGE_KEY ]]; then
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$MUNGE_KEY" --force
        else
            dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
        fi
        echo "$MUNGE_KEY" >"$DIR/munge-key.ours"
    fi
    chown munge:munge "$MUNGE_KEY"
    chmod 0400 "$MUNGE_KEY"
    # A stale pid file or socket from a killed munged makes the new one refuse to start.
    pid_of /run/munge/munged.pid munged >/dev/null || rm -f /run/munge/munged.pid
    runuser -u munge -- /usr/sbin/munged --force >>"$DIR/log/munged.out" 2>&1 \
        || die "munged failed to start: $(tail -n 5 "$DIR/log/munged.out" /var/log/munge/munged.log 2>/dev/null)"
    local i
    for ((i = 0; i < 100; i++)); do
        if munge_ok; then
            cp /run/munge/munged.pid "$DIR/munged.ours" 2>/dev/null || echo >"$DIR/munged.ours"
            return 0
        fi
        sleep 0.1
    done
    die "munged started but munge -n | unmunge fails; see /var/log/munge/munged.log"
}

write_conf() {
    # No cgroup plugins (proctrack/linuxproc, task/none): works in containers without systemd or
    # a writable cgroup tree, and needs no cgroup.conf. SlurmdParameters=config_overrides lets the
    # node claim more CPUs than it has, so `srun -n 8` runs on 2 cores with no extra options;
    # OverSubscribe=FORCE:4 lets up to 4 jobs share each CPU (tests run in parallel). A single
    # step with more tasks than CPUS needs `srun --overcommit`.
    cat >"$CONF" <<EOF
# Written by rshmem scripts/slurm.sh; removed by 'slurm.sh down'.
ClusterName=rshmem
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
# Tests want a failing task to end its whole step (srun -K does the same per call).
KillOnBadExit=1
KillWait=5
MinJobAge=10
InactiveLimit=0
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE OverSubscribe=FORCE:4 State=UP
EOF
}

# Both the daemons' log files and their stderr (which has what they said before opening the log).
dump_logs() {
    local f
    for f in "$DIR"/log/*.log "$DIR"/log/*.out; do
        [[ -s $f ]] || continue
        # With -D the .out repeats the .log; show it only when the .log is missing.
        [[ $f == *.out && -s ${f%.out}.log ]] && continue
        echo "---- $f (last 15 lines)" >&2
        tail -n 15 "$f" >&2
    done
}

cmd_up() {
    ((EUID == 0)) || die "must run as root (installs packages, starts munged/slurmd as root)"
    export SLURM_CONF=$CONF
    if is_up; then
        log "already up ($HOST: $(node_state))"
        cmd_env
        return 0
    fi
    # Half up (a daemon died, a previous run was interrupted): start from scratch.
    [[ -d $DIR ]] && { log "found a stale $DIR, cleaning it up"; cmd_down; }
    install_pkgs
    mkdir -p "$DIR"/{state,spool,run,log}
    chmod 0755 "$DIR"
    start_munge
    write_conf

    # Foreground mode (-D) under setsid: no init system needed, detached from the caller's
    # terminal/session; the daemons still write their own pid files. setsid execs in place here
    # (a background job is no process group leader), so $! is the daemon.
    setsid /usr/sbin/slurmctld -D -i -f "$CONF" >>"$DIR/log/slurmctld.out" 2>&1 </dev/null &
    local ctld=$!
    setsid /usr/sbin/slurmd -D -f "$CONF" -N "$HOST" >>"$DIR/log/slurmd.out" 2>&1 </dev/null &
    local slurmd=$!

    # Wall-clock bound: sinfo itself can block ~10 s (MessageTimeout) while slurmctld is not
    # answering, so count seconds, not tries, and stop early when a daemon has exited.
    local start=$SECONDS state= why=
    while :; do
        if ! alive "$ctld"; then why="slurmctld exited"; break; fi
        if ! alive "$slurmd"; then why="slurmd exited"; break; fi
        state=$(timeout 5 sinfo -h -N -n "$HOST" -o %T 2>/dev/null | head -n1 || true)
        [[ $state == idle* ]] && break
        if ((SECONDS - start >= 60)); then why="node not idle after 60 s (state: ${state:-none})"; break; fi
        sleep 0.2
    done
    if [[ -n $why ]]; then
        log "Slurm failed to come up: $why"
        dump_logs
        cmd_down
        exit 1
    fi
    log "up: node $HOST idle, $CPUS CPUs, partition debug"
    cmd_env
}

cmd_down() {
    local pid id i pids
    if [[ -f $CONF ]]; then
        export SLURM_CONF=$CONF
        # Cancel running jobs first so their slurmstepd and tasks go away too.
        if pid_of "$DIR/run/slurmctld.pid" slurmctld >/dev/null; then
            for id in $(timeout 10 squeue -h -o %i 2>/dev/null); do timeout 10 scancel "$id" 2>/dev/null || true; done
            for ((i = 0; i < 50; i++)); do
                [[ -z $(timeout 10 squeue -h -o %i 2>/dev/null) ]] && break
                sleep 0.2
            done
        fi
    fi
    pids=()
    if pid=$(pid_of "$DIR/run/slurmd.pid" slurmd); then pids+=("$pid"); fi
    if pid=$(pid_of "$DIR/run/slurmctld.pid" slurmctld); then pids+=("$pid"); fi
    # munged only when `up` started it; a system munged is left alone.
    if [[ -f $DIR/munged.ours ]] && pid=$(pid_of "$DIR/munged.ours" munged); then pids+=("$pid"); fi
    stop_pids "${pids[@]}"
    if [[ -f $DIR/munge-key.ours ]]; then rm -f "$MUNGE_KEY"; fi
    rm -rf "$DIR"
    log "down"
}

cmd_env() {
    if [[ -f $CONF ]]; then
        echo "export SLURM_CONF=$CONF"
    else
        log "not up (no $CONF)"
        return 1
    fi
}

cmd_status() {
    if [[ -f $CONF ]]; then export SLURM_CONF=$CONF; fi
    if is_up; then
        echo "up: SLURM_CONF=$CONF"
        sinfo -N -l 2>/dev/null || true
    else
        echo "down"
        return 1
    fi
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
*) die "usage: $0 up|down|env|status" ;;
esac
