#!/usr/bin/env bash
# The GPU check (issue 10): on a machine with an NVIDIA GPU and its driver, build rshmem and run
# tests/c/device_space.c on 2, 4 and 8 PEs with the memheap "cuda": SHMEM_SPACE_GPU and a created
# GPU space in device memory, puts and gets between host and device memory both ways, strided
# and non-blocking forms, every kind of atomic, a wait and a put-with-signal on device words,
# every collective (reductions, scans, broadcast, collects, alltoalls, active-set forms) on
# device buffers, each value read back from the device and compared; and tests/c/default_gpu.c,
# shmem_malloc in GPU memory under SHMEM_DEFAULT_SPACE=GPU; device_space again with host memory
# reached only through the spml, so device bytes are staged through pinned buffers; and with no
# peer mapped (SHMEM_LOCAL_MAP=0), so peers' device memory is copied by their CPUs when UCX
# moves no CUDA memory; device_space with copies waited for by polling; tests/c/gpu_context.c, a driver-API program with a context of its own,
# which must still be current after every rshmem call; tests/c/gpu_direct_coll.c, collectives
# device to device between PEs' mapped copies; tests/c/on_stream.c, the stream-ordered
# operations on a stream of the program's own; tests/c/gpu_aux.c, the GPU auxiliary
# specification's host API (shmemg.h); tests/c/reinit.c, three rounds of
# shmem_init ... shmem_finalize, each with a GPU space made again. Where nvcc is installed, tests/gpu/gpu_kernel.cu: CUDA kernels writing
# and checking the device memory rshmem moves. Then device_space with the device hidden
# (CUDA_VISIBLE_DEVICES=""), which must report the GPU space unavailable and run on. A run
# that leaves rshmem's or UCX's names in /dev/shm or /tmp fails.
# --cuda-ucx DIR: also run device_space and gpu_kernel with no peer mapped over the UCX in DIR
# (DIR/lib/libucp.so.0, its modules in DIR/lib/ucx, libuct_cuda among them). With an RDMA
# device UCX must move the device memory itself ("peers' GPU memory reached by the spml" in
# SHMEM_INFO's report); over sockets only it must not be asked to (UCX then emulates RMA with
# its CPU, which cannot copy into device memory), and the peers' CPUs move it.
#
# Usage: bash scripts/gpu-check.sh [--prefix DIR] [--logs DIR] [--timeout S] [--cuda-ucx DIR]
# (exit 0: all passed)
# Without --prefix it builds, which needs what the README's build needs (Rust, UCX, PMIx and
# hwloc headers); not CUDA's toolkit: cudarc loads libcuda.so at run time. --prefix DIR uses an
# installed tree instead, one from scripts/bundle.sh too (its env.sh is sourced), for a GPU
# machine with none of the build's packages; it needs a C compiler there. --logs DIR keeps every
# program's output there. --timeout S limits each run (300 s unless given).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="" logs="" limit=300 cuda_ucx=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$(cd "${2:?--prefix needs a directory}" && pwd)"; shift 2 ;;
        --logs) logs="${2:?--logs needs a directory}"; shift 2 ;;
        --timeout) limit="${2:?--timeout needs seconds}"; shift 2 ;;
        --cuda-ucx) cuda_ucx="$(cd "${2:?--cuda-ucx needs a directory}" && pwd)"; shift 2 ;;
        *) echo "gpu-check: unknown argument $1 (usage: gpu-check.sh [--prefix DIR] [--logs DIR] [--timeout S] [--cuda-ucx DIR])" >&2; exit 2 ;;
    esac
done
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed); nothing to check" >&2
    exit 2
fi
nvidia-smi -L
if [ -n "$prefix" ]; then
    bin="$prefix/bin" inc="$prefix/include" libdir="$prefix/lib"
    if [ -f "$prefix/env.sh" ]; then
        # shellcheck disable=SC1091
        source "$prefix/env.sh"
    fi
else
    cargo build --release --workspace
    bin=target/release inc=core/include libdir=target/release
fi
out=$(mktemp -d /tmp/rshmem-gpu-check.XXXXXX)
trap 'if [ -n "$logs" ]; then mkdir -p "$logs" && cp "$out"/*.log "$logs"/; fi; rm -rf "$out"' EXIT
"$bin/oshcc" -O2 -Itests/c -o "$out/device_space" tests/c/device_space.c
"$bin/oshcc" -O2 -Itests/c -o "$out/default_gpu" tests/c/default_gpu.c
"$bin/oshcc" -O2 -Itests/c -o "$out/gpu_context" tests/c/gpu_context.c -ldl
"$bin/oshcc" -O2 -Itests/c -o "$out/reinit" tests/c/reinit.c
"$bin/oshcc" -O2 -Itests/c -o "$out/on_stream" tests/c/on_stream.c -ldl
"$bin/oshcc" -O2 -Itests/c -o "$out/gpu_aux" tests/c/gpu_aux.c
"$bin/oshcc" -O2 -Itests/c -o "$out/gpu_direct_coll" tests/c/gpu_direct_coll.c
# sshmem "anon" (the C example), whose host segments no peer maps: host memory then goes
# through the spml while device memory stays mapped, so device bytes are staged through the
# memheap's page-locked buffers.
mkdir "$out/plugins"
gcc -shared -fPIC -fvisibility=hidden -Iplugins/include -o "$out/plugins/libsshmem_anon.so" \
    plugins/c-example/sshmem_anon.c
"$bin/shmem_info" 2>&1 | grep -i cuda || true

fail=0 runs=0
# Our names in /dev/shm and /tmp before the runs: each run must leave no more of them.
ours() { find /dev/shm /tmp -maxdepth 1 \( -name 'rshmem-*' -o -name 'ucx_shm_posix_*' \) ! -name '*.lock' \
    ! -name 'rshmem-gpu-check.*' 2> /dev/null | sort; }
before=$(ours)
run() { # PROGRAM NP, then environment assignments
    local prog=$1 np=$2
    shift 2
    runs=$((runs + 1))
    local log="$out/$runs-$prog-np$np.log"
    if env "$@" timeout "$limit" "$bin/oshrun" -np "$np" "$out/$prog" > "$log" 2>&1 &&
        [ "$(grep -c "^$prog: PE [0-9]* ok\$" "$log")" = "$np" ]; then
        echo "gpu-check: $prog, $np PEs ($*): ok"
        left=$(comm -13 <(echo "$before") <(ours))
        if [ -n "$left" ]; then
            echo "gpu-check: $prog, $np PEs ($*): left behind: $left"
            fail=1
        fi
    else
        echo "gpu-check: $prog, $np PEs ($*): FAILED"
        cat "$log"
        fail=1
    fi
}
for np in 2 4; do
    run device_space "$np" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_INFO=1
    run default_gpu "$np" SHMEM_DEFAULT_SPACE=GPU SHMEM_GPU_SYMMETRIC_SIZE=64M EXPECT_HEAP_SIZE=67108864
done
# Eight processes sharing a device, each mapping the other seven's memory by IPC handle.
run device_space 8 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M \
    SHMEM_MCA_plugin_path="$out/plugins" SHMEM_MCA_sshmem=anon
# Copies waited for by polling cuStreamQuery instead of cuStreamSynchronize.
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_MCA_memheap_cuda_poll_copies=1
# A program with a driver-API context of its own keeps it current across rshmem's calls.
run gpu_context 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M
# Initializing again after the last finalize: each finalize frees the GPU space, each
# shmem_init makes it again, and every round moves data in it.
run reinit 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M
# Stream-ordered operations on a stream of the program's own (stream copies, writes and
# waits where peers are mapped; waiting for the stream, then the host, where not).
for np in 2 4; do
    run on_stream "$np" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M
done
run on_stream 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_LOCAL_MAP=0
# Broadcasts, fcollects and alltoalls device to device between mapped copies, and through the
# host shadow (SHMEM_GPU_DIRECT_COLLECTIVES=0). PEs sharing the GPU without MPS keep to the
# shadow, so the direct runs are under MPS when the machine lets us start it.
for np in 2 4; do
    run gpu_direct_coll "$np" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M
done
run gpu_direct_coll 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_GPU_DIRECT_COLLECTIVES=0
# The GPU auxiliary specification's host API: SHMEM_DEVICE_HOST_INIT alone makes the GPU heap.
for np in 2 4; do
    run gpu_aux "$np" SHMEM_DEVICE_SYMMETRIC_SIZE=64M EXPECT_HEAP=67108864
done
run gpu_aux 2 SHMEM_DEVICE_SYMMETRIC_SIZE=64M SHMEM_LOCAL_MAP=0 EXPECT_SHARED=1
# No peer mapped: with a UCX without CUDA support, peers' device memory is reached through
# their CPUs (spml ucx's transfers through the target, cuMemcpy on the progress thread).
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_LOCAL_MAP=0
# CUDA kernels writing and reading the symmetric device memory rshmem moves (needs nvcc).
if command -v nvcc > /dev/null; then
    if nvcc -O2 -I"$inc" -o "$out/gpu_kernel" tests/gpu/gpu_kernel.cu \
        -L"$libdir" -Xlinker -rpath,"$(cd "$libdir" && pwd)" -lshmem; then
        for np in 2 4; do
            run gpu_kernel "$np" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=256M SHMEM_INFO=1
            # The program set its device before init: memheap cuda must have taken that one.
            if ! grep -q "GPU memory of PE 0: memheap cuda: .*current at shmem_init" "$out/$runs-gpu_kernel-np$np.log"; then
                echo "gpu-check: gpu_kernel, $np PEs: memheap cuda did not use the device current at init"
                fail=1
            fi
        done
        run gpu_kernel 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=256M SHMEM_LOCAL_MAP=0
    else
        echo "gpu-check: gpu_kernel: nvcc failed"
        fail=1
    fi
else
    echo "gpu-check: gpu_kernel skipped: no nvcc here"
fi
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 CUDA_VISIBLE_DEVICES= DEVICE_MODE=absent
run gpu_aux 2 CUDA_VISIBLE_DEVICES= EXPECT_GPU=0
# A UCX built with CUDA, no peer mapped (see --cuda-ucx above).
if [ -n "$cuda_ucx" ]; then
    ucx_env=(LD_LIBRARY_PATH="$cuda_ucx/lib:${LD_LIBRARY_PATH:-}" UCX_MODULE_DIR="$cuda_ucx/lib/ucx")
    if ls /sys/class/infiniband/* > /dev/null 2>&1; then
        want="peers' GPU memory reached by the spml"
    else
        want="peers' GPU memory reached through CUDA IPC mappings where peers map it, else through the peers' CPUs"
    fi
    for np in 2 4; do
        run device_space "$np" "${ucx_env[@]}" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M \
            SHMEM_LOCAL_MAP=0 SHMEM_INFO=1
        if ! grep -qF "$want" "$out/$runs-device_space-np$np.log"; then
            echo "gpu-check: device_space, $np PEs, UCX of $cuda_ucx: expected \"$want\""
            fail=1
        fi
    done
    if [ -x "$out/gpu_kernel" ]; then
        run gpu_kernel 2 "${ucx_env[@]}" SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=256M SHMEM_LOCAL_MAP=0
    fi
fi
if [ $fail = 0 ]; then
    echo "gpu-check: all passed ($(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
fi
exit $fail
