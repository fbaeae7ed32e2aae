#!/bin/sh
# The C conformance runner under the one judge: the program writes one
# observation per scenario into build/conformance/c-<library kind>, then
# ferrule-conformance judges them (it fails on any missing observation).
set -eu
program=$1
kind=${program##*_}
out="$FERRULE_OBSERVATIONS/c-$kind"
rm -rf "$out"
mkdir -p "$out"
"$program" "$out"
"$FERRULE_JUDGE" "$out"
