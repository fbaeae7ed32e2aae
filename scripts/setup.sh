#!/usr/bin/env bash
# Installs what the build and the tests need, when it is missing: the pinned
# cbindgen (for the header check), cmake, ninja and cJSON (for the C tests), and
# the pinned Python MCP SDK the MCP tests' servers run on (build/mcp-python).
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
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The MCP tests' servers: a virtual environment with exactly the pinned packages.
mcp_python=build/mcp-python
mcp_requirements=tests/mcp/requirements.txt
if ! cmp -s "$mcp_requirements" "$mcp_python/requirements.txt" 2>/dev/null; then
    echo "setup: installing the MCP test servers' Python packages in $mcp_python"
    rm -rf "$mcp_python"
    python3 -m venv "$mcp_python"
    "$mcp_python/bin/pip" install --quiet --disable-pip-version-check -r "$mcp_requirements"
    cp "$mcp_requirements" "$mcp_python/requirements.txt"
fi
