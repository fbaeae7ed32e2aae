#!/bin/sh
# The C conformance runner under the one judge: the program writes one
# observation per scenario into build/conformance/c-<library kind>, and again
# with every scripted model replaced by a host model in C replaying the same
# script (c-<library kind>-host-model); ferrule-conformance judges each (it
# fails on any missing observation).
set -eu
program=$1
kind=${program##*_}
for mode in "" host-model; do
    out="$FERRULE_OBSERVATIONS/c-$kind${mode:+-$mode}"
    rm -rf "$out"
    mkdir -p "$out"
    "$program" ${mode:+--$mode} "$out"
    "$FERRULE_JUDGE" "$out"
done
