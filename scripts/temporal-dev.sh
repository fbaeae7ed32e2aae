#!/usr/bin/env bash
# Runs a command beside a throwaway Temporal server: the tests' server
# (bindings/go/temporal/testserver, built by make test-temporal), on
# 127.0.0.1, in memory. The command finds it at FERRULE_TEMPORAL_ADDRESS and
# FERRULE_TEMPORAL_NAMESPACE; the server stops when the command ends.
#
#   scripts/temporal-dev.sh build/temporal-test-server go run . demo
set -euo pipefail
server=$1
shift
coproc SERVER { exec "$server" 2>/dev/null; }
stop() {
    eval "exec ${SERVER[1]}>&-" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}
trap stop EXIT
read -r address namespace <&"${SERVER[0]}"
FERRULE_TEMPORAL_ADDRESS=$address FERRULE_TEMPORAL_NAMESPACE=$namespace "$@"
