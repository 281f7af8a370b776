#!/usr/bin/env bash
# Make a self-contained rshmem tree for a Linux x86-64 machine that has none of its run-time
# dependencies installed (a GPU node without the UCX, PMIx and hwloc packages, say):
#   - install.sh's tree (bin/, lib/, lib/rshmem/, include/ ...), stripped of debug information;
#   - lib/deps/: every shared library that tree loads beyond the C runtime (glibc's libraries,
#     libgcc_s, the dynamic loader), as this machine has them;
#   - lib/deps/ucx/: UCX's loadable transport modules whose own libraries are all there
#     (Debian's: cma; the InfiniBand ones need libibverbs and are left out);
#   - env.sh: `source DIR/env.sh` puts bin/ first in PATH and points LD_LIBRARY_PATH and
#     UCX_MODULE_DIR at lib/deps.
# The other machine needs a glibc at least as new as this one's. Programs built there with
# DIR/bin/oshcc find libshmem through their rpath; its libraries come from env.sh's
# LD_LIBRARY_PATH. Launching under PMIx (srun, mpirun) needs the packages installed there.
#
# usage: bash scripts/bundle.sh DIR [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:?usage: bundle.sh DIR [--no-build]}"
shift
bash scripts/install.sh --prefix "$dir" "$@" > /dev/null
dir="$(cd "$dir" && pwd)"
deps="$dir/lib/deps"
mkdir -p "$deps/ucx"

# The C runtime: the other machine's own must be used.
runtime='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libgcc_s|libutil|libresolv)[.-]'

# Copy every library FILE needs (ldd's resolved paths) that is not the C runtime.
copy_deps() {
    ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
        [[ "$name" =~ $runtime ]] && continue
        [ -e "$deps/$name" ] || cp -L "$path" "$deps/$name"
    done
}

objects=("$dir"/bin/oshrun "$dir"/bin/shmem_info "$dir"/lib/libshmem.so.* "$dir"/lib/rshmem/*.so)
for f in "${objects[@]}"; do
    [ -L "$f" ] && continue
    strip --strip-debug "$f"
    copy_deps "$f"
done

# UCX's modules: those whose every library is present here or in the bundle.
# UCX looks for them beside libucs, in ucx/.
ucs="$(ldd "$dir"/lib/rshmem/librshmem_spml_ucx.so | awk '$1 ~ /^libucs[.]/ {print $3}')"
ucxdir="$(dirname "$(readlink -f "$ucs")")"
for m in "$ucxdir"/ucx/libuct_*.so.0; do
    [ -e "$m" ] || continue
    missing=$(ldd "$m" | awk '$2 == "=>" && $3 ~ /^\// {print $1}' | while read -r name; do
        [[ "$name" =~ $runtime ]] || [ -e "$deps/$name" ] || [[ "$name" =~ ^lib(ucs|uct|ucm|ucp)\. ]] || echo "$name"
    done)
    [ -z "$missing" ] && cp -L "$m" "$deps/ucx/"
done

cat > "$dir/env.sh" << 'EOF'
# Source this file to use this rshmem tree and the libraries bundled with it.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="$here/bin:$PATH"
export LD_LIBRARY_PATH="$here/lib/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UCX_MODULE_DIR="$here/lib/deps/ucx"
EOF
echo "bundle.sh: $dir ($(du -sh "$dir" | cut -f1)): $(ls "$deps" | grep -c '\.so') libraries, UCX modules: $(ls "$deps/ucx" | tr '\n' ' ')"
