#!/usr/bin/env bash
# Installs what rshmem needs on Debian 12 (run as root; a no-op when everything is present).
set -euo pipefail
# The toolchain first: nothing is installed for a machine that cannot build anyway.
if ! command -v cargo >/dev/null; then
    echo "deps: a Rust toolchain (cargo, rustc >= 1.88) is required; install it with rustup" >&2
    exit 1
fi
# man-db: the man pages install.sh ships (oshcc, oshrun, shmem_info) are read with man, which a
# minimal Debian lacks. gdb: oshrun --get-stack-traces (the tests' hangs print their stacks).
# python3-venv, python3-dev: the test that builds shmem4py and runs its suite (docs/python.md).
# nftables: the test that drops packets between emulated hosts (this kernel has no netem).
pkgs=(pkg-config libclang-dev libucx-dev libhwloc-dev libudev-dev libpmix-dev openmpi-bin gcc g++ make curl unzip man-db gdb python3-venv python3-dev nftables)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
