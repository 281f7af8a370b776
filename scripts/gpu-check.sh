#!/usr/bin/env bash
# The GPU check (issue 10): on a machine with an NVIDIA GPU and its driver, build rshmem and run
# tests/c/device_space.c on 2 and 4 PEs with the memheap "cuda": SHMEM_SPACE_GPU and a created
# GPU space in device memory, puts and gets between host and device memory both ways, strided
# and non-blocking forms, every kind of atomic, a wait and a put-with-signal on device words,
# every collective (reductions, scans, broadcast, collects, alltoalls, active-set forms) on
# device buffers, each value read back from the device and compared; and tests/c/default_gpu.c,
# shmem_malloc in GPU memory under SHMEM_DEFAULT_SPACE=GPU; device_space again with host memory
# reached only through the spml, so device bytes are staged through pinned buffers; and with no
# peer mapped (SHMEM_LOCAL_MAP=0), so peers' device memory is copied by their CPUs when UCX
# moves no CUDA memory. Then the same program with the device
# hidden (CUDA_VISIBLE_DEVICES=""), which must report the GPU space unavailable and run on.
#
# Usage: bash scripts/gpu-check.sh            (exit status 0: every check passed)
# Needs what the README's build needs (Rust, UCX, PMIx and hwloc headers); not CUDA's toolkit:
# cudarc loads libcuda.so at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed); nothing to check" >&2
    exit 2
fi
nvidia-smi -L
cargo build --release --workspace
out=$(mktemp -d /tmp/rshmem-gpu-check.XXXXXX)
trap 'rm -rf "$out"' EXIT
target/release/oshcc -O2 -Itests/c -o "$out/device_space" tests/c/device_space.c
target/release/oshcc -O2 -Itests/c -o "$out/default_gpu" tests/c/default_gpu.c
# sshmem "anon" (the C example), whose host segments no peer maps: host memory then goes
# through the spml while device memory stays mapped, so device bytes are staged through the
# memheap's page-locked buffers.
mkdir "$out/plugins"
gcc -shared -fPIC -fvisibility=hidden -Iplugins/include -o "$out/plugins/libsshmem_anon.so" \
    plugins/c-example/sshmem_anon.c
target/release/shmem_info 2>&1 | grep -i cuda || true

fail=0
run() { # PROGRAM NP, then environment assignments
    local prog=$1 np=$2
    shift 2
    local log="$out/$prog-np$np.log"
    if env "$@" timeout 300 target/release/oshrun -np "$np" "$out/$prog" > "$log" 2>&1 &&
        [ "$(grep -c "^$prog: PE [0-9]* ok\$" "$log")" = "$np" ]; then
        echo "gpu-check: $prog, $np PEs ($*): ok"
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
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M \
    SHMEM_MCA_plugin_path="$out/plugins" SHMEM_MCA_sshmem=anon
# No peer mapped: with a UCX without CUDA support, peers' device memory is reached through
# their CPUs (spml ucx's transfers through the target, cuMemcpy on the progress thread).
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 SHMEM_GPU_SYMMETRIC_SIZE=64M SHMEM_LOCAL_MAP=0
run device_space 2 SHMEM_ENABLE_GPU_SPACE=1 CUDA_VISIBLE_DEVICES= DEVICE_MODE=absent
if [ $fail = 0 ]; then
    echo "gpu-check: all passed ($(date -u +%Y-%m-%d), $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
fi
exit $fail
