#!/usr/bin/env bash
# Installs what the build and the tests need, when it is missing: the pinned
# cbindgen (for the header check), cmake, ninja and cJSON (for the C tests), and
# the pinned Python MCP SDKs the MCP tests' servers run on (build/mcp-python:
# mcp 2.x; build/mcp-python-1: mcp 1.x) and the registry's Node MCP servers
# (build/mcp-node). With "packages", also what the release builds and the package
# tests need: the Rust standard library for aarch64 Linux, cargo-zigbuild with zig
# (build/zig-python), cargo-about, and Debian's aarch64 cross compiler, C library
# and qemu.
# Idempotent; run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

CBINDGEN_VERSION=0.29.4

if ! command -v cbindgen >/dev/null || ! cbindgen --version | grep -q " ${CBINDGEN_VERSION}\$"; then
    echo "setup: installing cbindgen ${CBINDGEN_VERSION}"
    cargo install cbindgen --version "${CBINDGEN_VERSION}" --locked --quiet
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
[ -f /usr/include/cjson/cJSON.h ] || missing+=(libcjson-dev)
if [ "${1:-}" = packages ]; then
    command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
    command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu)
    [ -f /usr/aarch64-linux-gnu/lib/libc.so.6 ] || missing+=(libc6-arm64-cross)
    command -v file >/dev/null || missing+=(file)
    command -v readelf >/dev/null || missing+=(binutils)
    command -v pkg-config >/dev/null || missing+=(pkg-config)
    command -v zip >/dev/null || missing+=(zip)
    command -v unzip >/dev/null || missing+=(unzip)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The MCP tests' servers: virtual environments with exactly the pinned packages,
# made again when their requirements change.
python_env() {
    local dir=$1 requirements=$2
    if ! cmp -s "$requirements" "$dir/requirements.txt" 2>/dev/null; then
        echo "setup: installing the Python packages of $requirements in $dir"
        rm -rf "$dir"
        python3 -m venv "$dir"
        "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
        cp "$requirements" "$dir/requirements.txt"
    fi
}
python_env build/mcp-python tests/mcp/requirements.txt
python_env build/mcp-python-1 tests/mcp/requirements-1.txt
# With "bench": the MCP benchmark's peer (make bench-mcp).
if [ "${1:-}" = bench ]; then
    python_env build/bench-python bench/mcp/requirements.txt
fi
# With "packages": the cross linker of the release builds (scripts/dist.sh) and
# cargo-about, which writes THIRD-PARTY-NOTICES.
CARGO_ABOUT_VERSION=0.9.3
if [ "${1:-}" = packages ]; then
    if ! cargo about --version 2>/dev/null | grep -q " ${CARGO_ABOUT_VERSION}\$"; then
        echo "setup: installing cargo-about ${CARGO_ABOUT_VERSION}"
        cargo install cargo-about --version "${CARGO_ABOUT_VERSION}" --locked --features cli --quiet
    fi
    python_env build/zig-python scripts/zig-requirements.txt
    rustup target list --installed | grep -qx aarch64-unknown-linux-gnu ||
        rustup target add aarch64-unknown-linux-gnu
fi

# The registry's Node MCP servers (and the MCP conformance suite), exactly as
# tests/mcp/node/package-lock.json pins them.
node_env=build/mcp-node
if ! cmp -s tests/mcp/node/package-lock.json "$node_env/package-lock.json" 2>/dev/null; then
    echo "setup: installing the Node packages of tests/mcp/node in $node_env"
    rm -rf "$node_env"
    mkdir -p "$node_env"
    cp tests/mcp/node/package.json tests/mcp/node/package-lock.json "$node_env/"
    (cd "$node_env" && npm ci --no-audit --no-fund --loglevel=error)
fi
