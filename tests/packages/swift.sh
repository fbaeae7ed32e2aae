#!/usr/bin/env bash
# The Swift package as a user gets it: a scratch package depending on the
# checkout's root package by path, as a user's would by URL, builds and runs an
# agent (the lookup example on the scripted model) against a release tarball's
# libferrule, found through the tarball's own pkg-config file (SwiftPM reads
# PKG_CONFIG_PATH) and loaded from its lib/ (LD_LIBRARY_PATH): no unsafe flags
# and no checkout library. Runs in the Swift root of scripts/swift.sh.
#
#   tests/packages/swift.sh RELEASE_DIR VERSION
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

fail() { echo "packages/swift: $*" >&2; exit 1; }

[ $# -eq 2 ] || fail "usage: $0 RELEASE_DIR VERSION"
release=$(realpath "$1") version=$2
name=ferrule-$version-$(uname -m)-linux-gnu
[ -f "$release/$name.tar.gz" ] || fail "no $name.tar.gz in $release"
work=build/packages/swift
rm -rf "$work"
mkdir -p "$work/consumer/Sources/Consumer"
tar -C "$work" -xzf "$release/$name.tar.gz"

cat > "$work/consumer/Package.swift" <<'MANIFEST'
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Consumer",
    dependencies: [.package(path: "../../../..")],
    targets: [.executableTarget(name: "Consumer", dependencies: [.product(name: "Ferrule", package: "ferrule")])]
)
MANIFEST
cp examples/swift/lookup/Sources/Lookup/main.swift "$work/consumer/Sources/Consumer/"

# Paths as the Swift root sees the checkout (/ferrule).
inside=/ferrule/$work
unset OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY
out=$(FERRULE_SWIFT_PKG_CONFIG_PATH=$inside/$name/lib/pkgconfig FERRULE_SWIFT_LIBRARY_PATH=$inside/$name/lib \
    bash scripts/swift.sh swift run --package-path "$inside/consumer" Consumer) || fail "the package failed: $out"
echo "$out" | grep -q "answer: C-100 is on the Gold plan." || fail "the program did not answer: $out"
echo "packages/swift: a package depending on ferrule by path built and ran against $name.tar.gz"
