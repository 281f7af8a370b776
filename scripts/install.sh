#!/usr/bin/env bash
# Install rshmem into a conventional tree:
#   bin/                 oshcc, oshc++ (and oshcxx), oshrun, shmem_info
#   lib/                 libshmem.so.VERSION, with libshmem.so.MAJOR (the SONAME) and libshmem.so
#   lib/rshmem/          the component plugins
#   lib/pkgconfig/       rshmem.pc
#   include/             shmem.h, shmemx.h, shmemg.h, pshmem.h, mpp/, shmem_plugin.h (for plugin authors),
#                        shmem4py-rshmem.h (for building shmem4py: docs/python.md)
#   share/man/man1/      oshcc.1, oshc++.1, oshrun.1, shmem_info.1
#   etc/rshmem.toml      the install-wide configuration (a commented example; kept if present)
#
# usage: bash scripts/install.sh --prefix DIR [--no-build | --build-dir DIR]
# --no-build installs what `cargo build --release --workspace` left in target/release;
# --build-dir installs another build's output (the tests install target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."

prefix="" build=1 rel=target/release
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --no-build) build=0; shift ;;
        --build-dir) rel="${2:?--build-dir needs a directory}"; build=0; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument $1 (usage: install.sh --prefix DIR [--no-build | --build-dir DIR])" >&2; exit 2 ;;
    esac
done
[ -n "$prefix" ] || { echo "install.sh: --prefix DIR is required" >&2; exit 2; }
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
major="${version%%.*}"
[ -n "$version" ] || { echo "install.sh: no version in Cargo.toml" >&2; exit 1; }

if [ "$build" = 1 ]; then
    cargo build --release --workspace
fi
for f in libshmem.so oshcc oshcxx oshrun shmem_info; do
    [ -e "$rel/$f" ] || { echo "install.sh: $rel/$f is missing (build with cargo build --release --workspace)" >&2; exit 1; }
done

install -d "$prefix/bin" "$prefix/lib/rshmem" "$prefix/lib/pkgconfig" "$prefix/include/mpp" \
    "$prefix/share/man/man1"

install -m 755 "$rel/oshcc" "$rel/oshcxx" "$rel/oshrun" "$rel/shmem_info" "$prefix/bin/"
ln -sfn oshcxx "$prefix/bin/oshc++"

# The library under its full version, the SONAME link programs load, the link name -lshmem finds.
install -m 755 "$rel/libshmem.so" "$prefix/lib/libshmem.so.$version"
ln -sfn "libshmem.so.$version" "$prefix/lib/libshmem.so.$major"
ln -sfn "libshmem.so.$major" "$prefix/lib/libshmem.so"

# Plugins: every component the workspace built (librshmem_<framework>_<name>.so).
shopt -s nullglob
plugins=("$rel"/librshmem_*.so)
[ ${#plugins[@]} -gt 0 ] || { echo "install.sh: no plugins in $rel" >&2; exit 1; }
install -m 755 "${plugins[@]}" "$prefix/lib/rshmem/"

install -m 644 core/include/shmem.h core/include/shmemx.h core/include/shmemg.h core/include/pshmem.h core/include/shmem4py-rshmem.h "$prefix/include/"
install -m 644 core/include/mpp/shmem.h core/include/mpp/shmemx.h "$prefix/include/mpp/"
install -m 644 plugins/include/shmem_plugin.h "$prefix/include/"

# The prefix is found from the file's own place, so a moved install stays right (as oshcc
# and shmem_info, which look beside themselves).
cat > "$prefix/lib/pkgconfig/rshmem.pc" <<EOF
prefix=\${pcfiledir}/../..
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: rshmem
Description: OpenSHMEM 1.6 in Rust (libshmem), a drop-in for Open MPI OSHMEM and Sandia OpenSHMEM
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lshmem
EOF

for m in oshcc oshrun shmem_info; do
    install -m 644 "docs/man/$m.1" "$prefix/share/man/man1/"
done
ln -sfn oshcc.1 "$prefix/share/man/man1/oshc++.1"
ln -sfn oshcc.1 "$prefix/share/man/man1/oshcxx.1"

# A site's edited configuration survives a reinstall.
if [ ! -e "$prefix/etc/rshmem.toml" ]; then
    install -d "$prefix/etc"
    install -m 644 docs/rshmem.toml "$prefix/etc/rshmem.toml"
fi

echo "rshmem $version installed in $prefix"
echo "  PATH=$prefix/bin:\$PATH   PKG_CONFIG_PATH=$prefix/lib/pkgconfig   MANPATH=$prefix/share/man"
