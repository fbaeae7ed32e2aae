#!/usr/bin/env bash
# The C release tarballs as a user gets them: each is unpacked somewhere else
# than where it was made, and the program of tests/cmake-consumer (one agent run
# on the scripted model) is built against it and run with both libraries: on
# x86_64 through find_package(ferrule), on aarch64 with Debian's cross compiler
# through pkg-config, under qemu. Each shared library must ask for no glibc
# newer than the floor the release promises.
#
#   tests/packages/c.sh RELEASE_DIR VERSION
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

fail() { echo "packages/c: $*" >&2; exit 1; }

[ $# -eq 2 ] || fail "usage: $0 RELEASE_DIR VERSION"
release=$(realpath "$1") version=$2
floor=${GLIBC_FLOOR:-2.28}
work=$root/build/packages/c
rm -rf "$work"
mkdir -p "$work"

# The newest glibc symbol version a shared library asks for.
newest_glibc() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1; }

expect_run() {
    local out
    out=$("$@") || fail "$* failed: $out"
    echo "$out" | grep -q "completed" || fail "$* did not complete its run: $out"
}

for arch in x86_64 aarch64; do
    name=ferrule-$version-$arch-linux-gnu
    [ -f "$release/$name.tar.gz" ] || fail "no $name.tar.gz in $release"
    tar -C "$work" -xzf "$release/$name.tar.gz"
    prefix=$work/$name
    for file in include/ferrule.h lib/libferrule.a "lib/libferrule.so.$version" lib/pkgconfig/ferrule.pc \
        lib/cmake/ferrule/ferrule-config.cmake share/doc/ferrule/LICENSE-MIT share/doc/ferrule/LICENSE-APACHE \
        share/doc/ferrule/THIRD-PARTY-NOTICES; do
        [ -e "$prefix/$file" ] || fail "$name.tar.gz has no $file"
    done
    glibc=$(newest_glibc "$prefix/lib/libferrule.so.$version")
    [ "$(printf '%s\n%s\n' "$glibc" "$floor" | sort -V | tail -1)" = "$floor" ] ||
        fail "$name's libferrule.so needs glibc $glibc, newer than $floor"
done

# x86_64: find_package(ferrule) from the unpacked tree.
prefix=$work/ferrule-$version-x86_64-linux-gnu
cmake -S tests/cmake-consumer -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
expect_run "$work/cmake/agent_shared"
expect_run "$work/cmake/agent_static"
echo "packages/c: x86_64 tarball: built with find_package(ferrule), ran with both libraries"

# aarch64: pkg-config's flags from the unpacked tree, Debian's cross compiler,
# qemu with Debian's arm64 C library.
prefix=$work/ferrule-$version-aarch64-linux-gnu
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig
cflags=$(pkg-config --cflags ferrule)
aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror $cflags tests/cmake-consumer/main.c -o "$work/agent-arm64-shared" \
    $(pkg-config --libs ferrule)
# The static library with the system libraries ferrule.pc lists for static links.
system_libs=$(pkg-config --libs --static ferrule | tr ' ' '\n' | grep -v -e '^-lferrule$' -e '^-L' | tr '\n' ' ')
aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror $cflags tests/cmake-consumer/main.c -o "$work/agent-arm64-static" \
    "$prefix/lib/libferrule.a" $system_libs
expect_run qemu-aarch64 -L /usr/aarch64-linux-gnu -E "LD_LIBRARY_PATH=$prefix/lib" "$work/agent-arm64-shared"
expect_run qemu-aarch64 -L /usr/aarch64-linux-gnu "$work/agent-arm64-static"
echo "packages/c: aarch64 tarball: built with pkg-config's flags, ran under qemu with both libraries"
