#!/usr/bin/env bash
# Fetches the libraries of UCX VERSION from the RAPIDS `libucx-cu12` wheel on PyPI into DIR/lib,
# to test spml ucx against a UCX other than Debian's (tests/tests/c_programs.rs,
# `other_ucx_versions_carry_rma_and_atomics_over_sockets`). Only the core libraries: TCP,
# shared memory and `self` are built into them; the CUDA modules are left out.
# Usage: bash scripts/ucx-wheel.sh VERSION DIR   (needs curl and unzip; a no-op when DIR has it)
set -euo pipefail
v=${1:?usage: ucx-wheel.sh VERSION DIR}
dest=${2:?usage: ucx-wheel.sh VERSION DIR}
[ -e "$dest/lib/libucp.so.0" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The project's JSON lists every release's files (PyPI gives absolute addresses; a mirror may
# give them relative to the JSON's own, "../../packages/...").
json=https://pypi.org/pypi/libucx-cu12/json
url=$(curl -fsSL "$json" | tr ',' '\n' |
    grep -o "\"url\": *\"[^\"]*/libucx_cu12-$v-[^\"]*x86_64[^\"]*\.whl\"" | head -n 1 |
    sed 's/^"url": *"\(.*\)"$/\1/') || true
[ -n "$url" ] || { echo "ucx-wheel: no x86_64 wheel of libucx-cu12 $v in $json" >&2; exit 1; }
case $url in
http*) ;;
../../*) url=https://pypi.org/${url#../../} ;;
*) echo "ucx-wheel: cannot resolve $url" >&2; exit 1 ;;
esac
curl -fsSL -o "$tmp/ucx.whl" "$url"
unzip -q -o "$tmp/ucx.whl" 'libucx/lib/libuc*.so.0*' -d "$tmp/x"
mkdir -p "$dest/lib"
cp -a "$tmp"/x/libucx/lib/libuc*.so.0* "$dest/lib/"
echo "ucx-wheel: UCX $v in $dest/lib"
