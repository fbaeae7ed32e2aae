#!/usr/bin/env bash
# Writes the Go binding's release commit: a child of HEAD holding each
# platform's libferrule.a in its module (bindings/go/lib/<os>-<arch>) and the Go
# module's requirements set to the release's version, tagged for every module
# (bindings/go/vX.Y.Z, bindings/go/lib/<os>-<arch>/vX.Y.Z). The branch, the
# index and the work tree are left as they are: the libraries live only in
# release commits. Pushing the commit's tags publishes the modules.
#
#   scripts/release-go.sh REPO VERSION PLATFORM=LIBRARY...
#   scripts/release-go.sh . v0.1.0 linux-amd64=target/dist/libferrule.a \
#       linux-arm64=target/aarch64-unknown-linux-gnu/dist/libferrule.a
#
# Every platform the Go module requires must be given, and nothing else.
set -euo pipefail

fail() { echo "release-go: $*" >&2; exit 1; }

[ $# -ge 2 ] || fail "usage: $0 REPO VERSION PLATFORM=LIBRARY..."
repo=$1 version=$2
shift 2
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "$version is not a semantic version such as v0.1.0"

git -C "$repo" rev-parse --verify -q HEAD >/dev/null || fail "$repo is not a git repository with a commit"
gomod=$(git -C "$repo" show HEAD:bindings/go/go.mod) || fail "HEAD has no bindings/go/go.mod"
module=$(sed -n 's/^module //p' <<<"$gomod")

# The platforms are those whose library modules the Go module requires.
mapfile -t required < <(sed -n "s|^[[:space:]]*$module/lib/\([a-z0-9]*-[a-z0-9]*\) .*|\1|p" <<<"$gomod" | sort -u)
[ ${#required[@]} -gt 0 ] || fail "bindings/go/go.mod requires no library module"

declare -A library
for arg in "$@"; do
    platform=${arg%%=*} path=${arg#*=}
    [ "$platform" != "$arg" ] && [ -n "$path" ] || fail "$arg is not PLATFORM=LIBRARY"
    [ -f "$path" ] || fail "no library for $platform at $path (make dist builds it)"
    library[$platform]=$path
done
for platform in "${required[@]}"; do
    [ -n "${library[$platform]:-}" ] || fail "bindings/go/go.mod requires the $platform library: give $platform=PATH"
    git -C "$repo" cat-file -e "HEAD:bindings/go/lib/$platform/go.mod" 2>/dev/null ||
        fail "HEAD has no module for $platform (bindings/go/lib/$platform/go.mod)"
done
[ ${#library[@]} -eq ${#required[@]} ] || fail "given ${!library[*]}, but the Go module requires ${required[*]}"

tags=("bindings/go/$version")
for platform in "${required[@]}"; do tags+=("bindings/go/lib/$platform/$version"); done
for tag in "${tags[@]}"; do
    ! git -C "$repo" rev-parse --verify -q "refs/tags/$tag" >/dev/null || fail "tag $tag exists already"
done

# The commit is written through an index of its own.
index=$(mktemp)
trap 'rm -f "$index"' EXIT
export GIT_INDEX_FILE=$index
git -C "$repo" read-tree HEAD
for platform in "${required[@]}"; do
    blob=$(git -C "$repo" hash-object -w --no-filters -- "$(realpath "${library[$platform]}")")
    git -C "$repo" update-index --add --cacheinfo "100644,$blob,bindings/go/lib/$platform/libferrule.a"
done
blob=$(sed "s|^\([[:space:]]*$module/lib/[a-z0-9-]*\) v[^[:space:]]*|\1 $version|" <<<"$gomod" |
    git -C "$repo" hash-object -w --stdin)
git -C "$repo" update-index --cacheinfo "100644,$blob,bindings/go/go.mod"
tree=$(git -C "$repo" write-tree)
commit=$(git -C "$repo" commit-tree "$tree" -p HEAD -m "Go modules $version: the static library of ${required[*]}")
for tag in "${tags[@]}"; do git -C "$repo" tag "$tag" "$commit"; done

echo "release-go: commit $commit, tagged ${tags[*]}"
echo "release-go: publish with: git push origin ${tags[*]}"
