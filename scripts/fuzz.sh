#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets; the checks are src/fuzzing) for
# FUZZ_SECONDS each with libFuzzer, from the committed seeds (fuzz/seeds), the
# recorded provider responses (FERRULE_FIXTURES) and what earlier runs kept
# (fuzz/corpus, not committed). An input a target fails on is left in
# fuzz/artifacts/TARGET; minimized (cargo fuzz tmin) and copied to
# fuzz/regressions/TARGET, it becomes a test of the ordinary suite. Usage:
# scripts/fuzz.sh [TARGET...] (every target when none is named).
set -euo pipefail
cd "$(dirname "$0")/.."

toolchain=${FUZZ_TOOLCHAIN:?FUZZ_TOOLCHAIN names the nightly toolchain (see the Makefile)}
seconds=${FUZZ_SECONDS:-60}
cargo_fuzz_version=0.13.1

rustup toolchain list | grep -q "^$toolchain" || rustup toolchain install "$toolchain" --profile minimal
if ! cargo fuzz --version 2>/dev/null | grep -q " $cargo_fuzz_version\$"; then
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked --quiet
fi

targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')

# The recorded provider responses, as the inputs of provider_stream (each
# provider's number first, whole JSON bodies with the high bit) and of sse.
fixtures="${FERRULE_FIXTURES:-$(pwd)/../shared/fixtures}"
recorded=build/fuzz/recorded
rm -rf "$recorded" && mkdir -p "$recorded/provider_stream" "$recorded/sse"
if [ -d "$fixtures/providers" ]; then
    python3 - "$fixtures/providers" "$recorded" <<'PY'
import json, pathlib, sys
providers, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for number, name in enumerate(["openai-chat", "openai-compatible", "openai-responses", "anthropic", "gemini"]):
    if not (providers / name).is_dir():
        continue
    for path in sorted((providers / name).iterdir()):
        body = path.read_bytes()
        if path.name.endswith(".chunks.jsonl"):
            events = []
            for line in body.decode().splitlines():
                if line.strip():
                    try:
                        kind = json.loads(line).get("type")
                    except (ValueError, AttributeError):
                        kind = None
                    events.append((f"event: {kind}\n" if isinstance(kind, str) else "") + f"data: {line}\n\n")
            if name in ("openai-chat", "openai-compatible"):
                events.append("data: [DONE]\n\n")
            body = "".join(events).encode()
        whole = path.suffix == ".json"
        (out / "provider_stream" / f"{name}-{path.name}").write_bytes(bytes([number | (0x80 if whole else 0), 5, 0]) + body)
        if not whole:
            (out / "sse" / f"{name}-{path.name}").write_bytes(b"\x07\x01\x00" + body)
PY
else
    echo "fuzz: no recorded provider responses at $fixtures; the committed seeds alone" >&2
fi

failed=()
for target in "${targets[@]}"; do
    echo "fuzz: $target for $seconds s"
    mkdir -p "fuzz/corpus/$target"
    extra=()
    [ -d "$recorded/$target" ] && extra+=("$recorded/$target")
    # -timeout: one input that takes longer is a failure (a hang); -rss_limit_mb: so is memory past it.
    # -O -a: optimized, with debug assertions and overflow checks.
    if ! cargo "+$toolchain" fuzz run --fuzz-dir fuzz -O -a "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" "${extra[@]}" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 > "build/fuzz/$target.log" 2>&1; then
        failed+=("$target")
        # What failed, and where its input is (the log also prints the whole input).
        grep -m 1 -A 4 -E "panicked at|ERROR: (libFuzzer|AddressSanitizer)|^error" "build/fuzz/$target.log" | cut -c 1-400 || true
        grep -m 1 "Test unit written to" "build/fuzz/$target.log" || true
    fi
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|cov:" "build/fuzz/$target.log" | tail -n 3 || true
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]} (inputs in fuzz/artifacts, logs in build/fuzz)" >&2
    exit 1
fi
echo "fuzz: every target held"
