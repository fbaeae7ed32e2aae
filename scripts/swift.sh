#!/usr/bin/env bash
# Runs a command of the Swift toolchain in the checkout's root (the package's
# Package.swift), inside a Debian trixie root (Swift is not on the project's
# machines; trixie packages it as swiftlang).
#
#   scripts/swift.sh swift build
#   scripts/swift.sh swift test
#   scripts/swift.sh swift run --package-path /ferrule/examples/swift/lookup Lookup
#
# Commands run in /ferrule; other packages of the checkout are reached through
# --package-path /ferrule/... The package finds libferrule through pkg-config:
# by default a ferrule.pc of the root's naming the checkout's target/release
# (/opt/ferrule-checkout), with the same directory on LD_LIBRARY_PATH;
# FERRULE_SWIFT_PKG_CONFIG_PATH and FERRULE_SWIFT_LIBRARY_PATH (paths inside the
# root, such as /ferrule/build/...) name others.
# The root is made once with debootstrap (about 25 s) plus `apt-get install
# swiftlang libc6-dev` inside it (about 25 s), and reused while it exists:
# FERRULE_SWIFT_ROOT (default /var/tmp/ferrule-swift/root). The checkout is
# bind-mounted into it (at /ferrule) for the command, unmounted on every way
# out, and runs take turns. The Rust library must be built
# on the host first (make lib). Needs root.
set -euo pipefail

ROOT=${FERRULE_SWIFT_ROOT:-/var/tmp/ferrule-swift/root}
REPO=$(cd "$(dirname "$0")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/swift.sh: needs root (debootstrap, mount, chroot)" >&2
    exit 1
fi

make_root() {
    command -v debootstrap >/dev/null || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    }
    local partial="$ROOT.partial"
    umount -l "$partial/proc" 2>/dev/null || true
    rm -rf --one-file-system "$partial"
    mkdir -p "$(dirname "$ROOT")"
    echo "swift: making a trixie root in $ROOT"
    debootstrap --variant=minbase trixie "$partial" http://deb.debian.org/debian >/dev/null
    mount -t proc proc "$partial/proc"
    trap 'umount -l "$partial/proc" 2>/dev/null || true' EXIT
    chroot "$partial" /bin/sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends swiftlang libc6-dev >/dev/null'
    umount "$partial/proc"
    trap - EXIT
    touch "$partial/.ferrule-swift-ready"
    # A half-made root may still have a mount left by a killed run: never follow
    # one (it could be the checkout).
    umount -l "$ROOT/ferrule" "$ROOT/proc" 2>/dev/null || true
    rm -rf --one-file-system "$ROOT"
    mv "$partial" "$ROOT"
}

# The marker is written last: a root without it was left half made.
[ -f "$ROOT/.ferrule-swift-ready" ] || make_root

# One run at a time: the checkout is mounted at /ferrule, a fixed path, because
# the build directory records absolute paths.
exec 9>"$ROOT.lock"
flock 9
inside=/ferrule
mkdir -p "$ROOT$inside"
# The command runs in PID and mount namespaces of its own, with its own /proc
# and the root as the mount namespace's root: when the script ends (a timeout
# or ^C included), unshare's child, the namespace's first process, is killed,
# and the kernel ends every process left in the namespace with it (SwiftPM
# starts test binaries in process groups of their own, which a signal to one
# group would miss).
child=
cleanup() {
    if [ -n "$child" ]; then
        kill -KILL "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    umount -l "$ROOT$inside" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mount --bind "$REPO" "$ROOT$inside"
checkout_pc=/opt/ferrule-checkout
mkdir -p "$ROOT$checkout_pc"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$REPO/Cargo.toml" | head -1)
printf '%s\n' "libdir=$inside/target/release" "includedir=$inside/include" "" "Name: ferrule" \
    "Description: The checkout's libferrule" "Version: $version" 'Libs: -L${libdir} -lferrule' 'Cflags: -I${includedir}' \
    > "$ROOT$checkout_pc/ferrule.pc"

# The build directories live in the checkout (.build beside each package),
# ignored by git. A real model's key and name pass through when set (the
# examples and benchmarks use them).
passed=()
for name in OPENAI_API_KEY ANTHROPIC_API_KEY FERRULE_MODEL FERRULE_BENCH_RUNS; do
    [ -n "${!name:-}" ] && passed+=("$name=${!name}")
done
# target/release is on PATH for the MCP test server the conformance scenarios start.
# The root becomes the mount namespace's own (pivot_root, not chroot): the
# kernel refuses user namespaces, which the bash sandbox makes, to a chrooted
# process.
unshare --pid --fork --kill-child --mount --propagation private /bin/sh -c '
    root=$1; shift
    mount --rbind "$root" "$root" && mount -t proc proc "$root/proc" && cd "$root" &&
        mkdir -p .old-root && pivot_root . .old-root && umount -l /.old-root && exec "$@"' \
    sh "$ROOT" /usr/bin/env -i HOME=/root \
    PATH="$inside/target/release:/usr/bin:/bin" LANG=C.UTF-8 \
    PKG_CONFIG_PATH="${FERRULE_SWIFT_PKG_CONFIG_PATH:-$checkout_pc}" \
    LD_LIBRARY_PATH="${FERRULE_SWIFT_LIBRARY_PATH:-$inside/target/release}" "${passed[@]}" \
    /bin/sh -c "cd $inside && exec \"\$@\"" swift "$@" &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"
