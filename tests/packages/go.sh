#!/usr/bin/env bash
# The Go modules as a user gets them: the binding's files of the work tree are
# committed to a scratch repository, scripts/release-go.sh writes the release
# commit with the given libraries, and a file-based GOPROXY serves the tagged
# modules. A program that depends on ferrule by version only (examples/go, which
# runs an agent on the scripted model) is fetched, built and run with no Rust
# and no checkout, on linux/amd64 and, cross-compiled, under qemu on linux/arm64.
#
#   tests/packages/go.sh VERSION PLATFORM=LIBRARY...   (as scripts/release-go.sh
#   takes them: linux-amd64=... linux-arm64=...)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

fail() { echo "packages/go: $*" >&2; exit 1; }

[ $# -ge 2 ] || fail "usage: $0 VERSION PLATFORM=LIBRARY..."
version=v$1
shift
libraries=()
for arg in "$@"; do libraries+=("${arg%%=*}=$(realpath "${arg#*=}")"); done
for tool in qemu-aarch64 aarch64-linux-gnu-gcc; do
    command -v $tool >/dev/null || fail "$tool is missing (scripts/setup.sh packages installs it)"
done

module=github.com/ferrule-dev/ferrule/bindings/go
work=$root/build/packages/go
rm -rf "$work"
mkdir -p "$work/repo"

# The release, from the files it is made of as they are in the work tree.
git ls-files -z --cached --others --exclude-standard bindings/go Cargo.toml Package.swift LICENSE-MIT LICENSE-APACHE \
    THIRD-PARTY-NOTICES |
    xargs -0 cp --parents -t "$work/repo"
export GIT_AUTHOR_NAME=ferrule GIT_AUTHOR_EMAIL=ferrule@localhost GIT_COMMITTER_NAME=ferrule GIT_COMMITTER_EMAIL=ferrule@localhost
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" commit -q -m "the binding"
scripts/release-go.sh "$work/repo" "$version" "${libraries[@]}"
(cd tests/packages/goproxy && go run . -repo "$work/repo" -out "$work/proxy")

# A user's module: its own module cache, nothing but the proxies (the other
# dependencies come from this machine's module cache, served as a proxy), and no
# Rust on PATH.
consumer=$work/consumer
mkdir -p "$consumer"
cp examples/go/main.go "$consumer/"
machine_cache=$(go env GOMODCACHE)/cache/download
# Each run releases the same version with new files, which a published module
# never does: Go's index of the module cache (kept in the build cache, by module
# and version) would list the files of an earlier run, so it is not used.
export GOMODCACHE=$work/modcache GOFLAGS=-modcacherw GOSUMDB=off GOTOOLCHAIN=local GODEBUG=goindex=0
export GOPROXY=file://$work/proxy,file://$machine_cache
export PATH=$(dirname "$(command -v go)"):/usr/bin:/bin
unset OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY
cd "$consumer"
go mod init example.com/consumer >/dev/null 2>&1
go get "$module@$version"

downloaded() { [ -f "$GOMODCACHE/cache/download/$module/lib/$1/@v/$version.zip" ]; }
# go get completes go.mod and go.sum for every platform, so it fetches each
# platform's library; a build of a module whose go.sum is complete (a fresh clone
# of the user's project, an empty module cache) fetches the host's alone.
go clean -modcache
go build -o agent-amd64 .
downloaded linux-amd64 || fail "go build did not download the linux-amd64 library's module"
! downloaded linux-arm64 || fail "go build on linux/amd64 downloaded the linux-arm64 library's module too"
for file in LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES; do
    [ -s "$GOMODCACHE/$module/lib/linux-amd64@$version/$file" ] || fail "the linux-amd64 module has no $file"
done
out=$(./agent-amd64) || fail "the amd64 program failed: $out"
echo "$out" | grep -q "answer: C-100 is on the Gold plan." || fail "the amd64 program did not answer: $out"
echo "packages/go: linux/amd64 built (fetching only its own library) and ran from $version by version only"

# The Temporal module by version: its example builds against it (running it
# needs a Temporal server, beside which make test-temporal runs it).
temporal=$work/temporal-consumer
mkdir -p "$temporal"
cp "$root/examples/go/temporal/main.go" "$temporal/"
(
    cd "$temporal"
    go mod init example.com/temporal-consumer
    go get "$module/temporal@$version"
    go mod tidy
    go build -o temporal-example .
) > "$temporal/go.log" 2>&1 || { cat "$temporal/go.log"; fail "the Temporal example did not build against $module/temporal@$version"; }
grep -q "^require $module/temporal $version\$\|^[[:space:]]$module/temporal $version\$" "$temporal/go.mod" ||
    fail "the Temporal example does not require $module/temporal@$version"
echo "packages/go: the Temporal module built from $version by version only"

CGO_ENABLED=1 GOARCH=arm64 CC=aarch64-linux-gnu-gcc go build -o agent-arm64 .
downloaded linux-arm64 || fail "the arm64 build did not download the linux-arm64 library's module"
file agent-arm64 | grep -q "ARM aarch64" || fail "agent-arm64 is not an arm64 program"
out=$(qemu-aarch64 -L /usr/aarch64-linux-gnu ./agent-arm64) || fail "the arm64 program failed: $out"
echo "$out" | grep -q "answer: C-100 is on the Gold plan." || fail "the arm64 program did not answer: $out"
echo "packages/go: linux/arm64 built and ran under qemu"
