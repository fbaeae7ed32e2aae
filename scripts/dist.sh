#!/usr/bin/env bash
# Builds the libraries as packages ship them (the Cargo profile dist) for one
# target, into target/TARGET/dist: libferrule.a and the shared library.
#
#   scripts/dist.sh TARGET
#
# Linux targets are built with cargo-zigbuild against glibc $GLIBC_FLOOR (2.28 by
# default), so the shared library loads on every distribution with that glibc or
# newer, whichever machine built it (scripts/setup.sh packages installs
# cargo-zigbuild and zig). Apple targets need macOS with Xcode, Android targets
# the NDK through cargo-ndk (ANDROID_NDK_HOME); where those are missing the
# script says so and fails.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "dist: $*" >&2; exit 1; }

[ $# -eq 1 ] || fail "usage: $0 TARGET (such as aarch64-unknown-linux-gnu)"
target=$1
floor=${GLIBC_FLOOR:-2.28}

# What the target's linker needs, checked first.
case $target in
    *-linux-gnu)
        command -v cargo-zigbuild >/dev/null ||
            fail "cargo-zigbuild is missing (scripts/setup.sh packages installs it, with zig)"
        ;;
    *-apple-darwin | *-apple-ios | *-apple-ios-sim)
        [ "$(uname)" = Darwin ] || fail "$target needs macOS with Xcode"
        ;;
    *-linux-android | *-linux-androideabi)
        [ -n "${ANDROID_NDK_HOME:-}" ] && [ -d "$ANDROID_NDK_HOME" ] ||
            fail "$target needs the Android NDK (set ANDROID_NDK_HOME)"
        command -v cargo-ndk >/dev/null || fail "$target needs cargo-ndk (cargo install cargo-ndk --locked)"
        ;;
    *) fail "no recipe for $target" ;;
esac

if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" >&2 ||
        fail "the Rust standard library for $target cannot be added here (rustup target add $target)"
fi

# Built without the rlib, which would keep Cargo from optimising at link time.
build=(rustc --profile dist --lib --crate-type cdylib --crate-type staticlib)
case $target in
    *-linux-gnu) cargo-zigbuild "${build[@]}" --target "$target.$floor" ;;
    *-linux-android | *-linux-androideabi) cargo ndk --target "$target" --platform 24 "${build[@]}" ;;
    *) cargo "${build[@]}" --target "$target" ;;
esac
for library in "target/$target/dist/libferrule".{a,so,dylib}; do
    [ ! -f "$library" ] || awk -v size="$(wc -c <"$library")" -v name="$library" 'BEGIN { printf "%8.1f MB  %s\n", size / 1e6, name }'
done
