#!/usr/bin/env bash
# Writes the release commit: a child of HEAD holding each platform's
# libferrule.a in its Go module (bindings/go/lib/<os>-<arch>), the Go module's
# requirements set to the release's version, the licences and third-party
# notices in every Go module,
# and, when APPLE_FRAMEWORK_URL and APPLE_FRAMEWORK_CHECKSUM are set, the
# XCFramework named in Package.swift. The Temporal module (bindings/go/temporal)
# requires the binding and its libraries at the release's version too. It is
# tagged X.Y.Z (SwiftPM's version) and for every Go module (bindings/go/vX.Y.Z,
# bindings/go/lib/<os>-<arch>/vX.Y.Z, bindings/go/temporal/vX.Y.Z).
# The branch, the index and the work tree are left as they are: the libraries
# live only in release commits. Pushing the tags publishes the release.
#
#   scripts/release-go.sh REPO VERSION PLATFORM=LIBRARY...
#   scripts/release-go.sh . v0.1.0 \
#       linux-amd64=target/x86_64-unknown-linux-gnu/dist/libferrule.a \
#       linux-arm64=target/aarch64-unknown-linux-gnu/dist/libferrule.a
#
# (make release-go, after make release-libs.) HEAD must be what the libraries
# were built from: the work tree clean, and its Cargo.toml of this version. Every platform the Go module requires must be given, each library
# built for its machine, and nothing else.
set -euo pipefail

fail() { echo "release-go: $*" >&2; exit 1; }

[ $# -ge 2 ] || fail "usage: $0 REPO VERSION PLATFORM=LIBRARY..."
repo=$1 version=$2
shift 2
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "$version is not a semantic version such as v0.1.0"

git -C "$repo" rev-parse --verify -q HEAD >/dev/null || fail "$repo is not a git repository with a commit"
[ -z "$(git -C "$repo" status --porcelain)" ] ||
    fail "$repo has changes or files git does not know: the release is made of HEAD, so commit them (or stash them) first"
cargo_version=$(git -C "$repo" show HEAD:Cargo.toml 2>/dev/null | sed -n 's/^version = "\(.*\)"/\1/p' | head -1)
[ "v$cargo_version" = "$version" ] || fail "HEAD's Cargo.toml is version ${cargo_version:-(none)}, not ${version#v}"
command -v readelf >/dev/null || fail "readelf is missing (binutils)"
if [ -n "${APPLE_FRAMEWORK_URL:-}${APPLE_FRAMEWORK_CHECKSUM:-}" ]; then
    [[ ${APPLE_FRAMEWORK_URL:-} =~ ^https://[A-Za-z0-9._~/%:@+=,-]+\.zip$ ]] ||
        fail "APPLE_FRAMEWORK_URL must be the zip's https URL, of letters, digits and . _ ~ / % : @ + = , - only"
    [[ ${APPLE_FRAMEWORK_CHECKSUM:-} =~ ^[0-9a-f]{64}$ ]] ||
        fail "APPLE_FRAMEWORK_CHECKSUM must be the zip's SHA-256 (make xcframework prints it)"
fi
gomod=$(git -C "$repo" show HEAD:bindings/go/go.mod) || fail "HEAD has no bindings/go/go.mod"
module=$(sed -n 's/^module //p' <<<"$gomod")

# The platforms are those whose library modules the Go module requires.
mapfile -t required < <(sed -n "s|^[[:space:]]*$module/lib/\([a-z0-9]*-[a-z0-9]*\) .*|\1|p" <<<"$gomod" | sort -u)
[ ${#required[@]} -gt 0 ] || fail "bindings/go/go.mod requires no library module"

declare -A library
for arg in "$@"; do
    platform=${arg%%=*} path=${arg#*=}
    [ "$platform" != "$arg" ] && [ -n "$path" ] || fail "$arg is not PLATFORM=LIBRARY"
    [ -f "$path" ] || fail "no library for $platform at $path (make release-libs builds it)"
    case $platform in
        linux-amd64) machine="X86-64" ;;
        linux-arm64) machine="AArch64" ;;
        *) fail "no machine known for $platform" ;;
    esac
    machines=$({ readelf -h "$path" 2>/dev/null || true; } | sed -n 's/^ *Machine: *//p' | sort -u)
    [ -n "$machines" ] && ! grep -qv -- "$machine\$" <<<"$machines" ||
        fail "$path is not a library for $platform: its objects are for ${machines:-no machine readelf knows}"
    library[$platform]=$path
done
for platform in "${required[@]}"; do
    [ -n "${library[$platform]:-}" ] || fail "bindings/go/go.mod requires the $platform library: give $platform=PATH"
    git -C "$repo" cat-file -e "HEAD:bindings/go/lib/$platform/go.mod" 2>/dev/null ||
        fail "HEAD has no module for $platform (bindings/go/lib/$platform/go.mod)"
done
[ ${#library[@]} -eq ${#required[@]} ] || fail "given ${!library[*]}, but the Go module requires ${required[*]}"

# The Temporal module, when HEAD has it.
temporal_mod=$(git -C "$repo" show HEAD:bindings/go/temporal/go.mod 2>/dev/null || true)

# SwiftPM takes X.Y.Z; a root vX.Y.Z would make Go see a module at the root.
tags=("${version#v}" "bindings/go/$version")
for platform in "${required[@]}"; do tags+=("bindings/go/lib/$platform/$version"); done
[ -z "$temporal_mod" ] || tags+=("bindings/go/temporal/$version")
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
go_modules=(bindings/go "${required[@]/#/bindings/go/lib/}")
if [ -n "$temporal_mod" ]; then
    # The binding and its libraries at this version (a module depending on
    # this one ignores its replace lines).
    released=$(sed "s|^\([[:space:]]*$module\(/lib/[a-z0-9-]*\)\{0,1\}\) v[^[:space:]]*|\1 $version|" <<<"$temporal_mod")
    grep -q "^[[:space:]]*$module $version\$" <<<"$released" || fail "bindings/go/temporal/go.mod does not require $module"
    blob=$(git -C "$repo" hash-object -w --stdin <<<"$released")
    git -C "$repo" update-index --cacheinfo "100644,$blob,bindings/go/temporal/go.mod"
    go_modules+=(bindings/go/temporal)
fi
# Each Go module carries the licences (a module holds only its own directory).
for licence in LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES; do
    blob=$(git -C "$repo" rev-parse -q --verify "HEAD:$licence") || fail "HEAD has no $licence"
    for dir in "${go_modules[@]}"; do
        git -C "$repo" update-index --add --cacheinfo "100644,$blob,$dir/$licence"
    done
done
if [ -n "${APPLE_FRAMEWORK_URL:-}" ]; then
    manifest=$(git -C "$repo" show HEAD:Package.swift) || fail "HEAD has no Package.swift"
    grep -q '^let appleFramework: (url: String, checksum: String)? = nil$' <<<"$manifest" ||
        fail "Package.swift names no appleFramework to set"
    # The URL holds no character sed or Swift would read as syntax (checked above).
    named="let appleFramework: (url: String, checksum: String)? = (url: \"$APPLE_FRAMEWORK_URL\", checksum: \"$APPLE_FRAMEWORK_CHECKSUM\")"
    manifest=$(sed "s|^let appleFramework: (url: String, checksum: String)? = nil\$|$named|" <<<"$manifest")
    grep -qxF "$named" <<<"$manifest" || fail "Package.swift's appleFramework could not be set"
    blob=$(git -C "$repo" hash-object -w --stdin <<<"$manifest")
    git -C "$repo" update-index --cacheinfo "100644,$blob,Package.swift"
fi
tree=$(git -C "$repo" write-tree)
commit=$(git -C "$repo" commit-tree "$tree" -p HEAD -m "Release $version: the static library of ${required[*]} in the Go modules")
for tag in "${tags[@]}"; do git -C "$repo" tag "$tag" "$commit"; done

echo "release-go: commit $commit, tagged ${tags[*]}"
echo "release-go: publish with: git push origin ${tags[*]}"
