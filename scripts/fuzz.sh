#!/usr/bin/env bash
# Run one libFuzzer target (fuzz_frame, fuzz_policy, fuzz_vfs, fuzz_json, fuzz_chan) for a short,
# fixed time (FUZZ_SECONDS, default 60) from its committed seed corpus
# (tests/fuzz/corpus for the frame decoder, tests/fuzz/corpus-<name> for the
# others, when present).  Exit non-zero on any crash, leak or UB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/fuzz_frame}
secs=${FUZZ_SECONDS:-60}
corpus=$(mktemp -d /tmp/chidori-fuzz.XXXXXX)
name=$(basename "$bin")
seeds=tests/fuzz/corpus; [[ $name == fuzz_frame ]] || seeds=tests/fuzz/corpus-${name#fuzz_}
cp "$seeds"/* "$corpus"/ 2>/dev/null || true
"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$corpus"
rm -rf "$corpus"
echo "fuzz: $name: ${secs}s without a finding"
