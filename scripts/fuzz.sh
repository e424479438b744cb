#!/usr/bin/env bash
# Run the frame-decoder fuzzer for a short, fixed time (FUZZ_SECONDS, default 60)
# from the committed seed corpus.  Exit non-zero on any crash, leak or UB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/fuzz_frame}
secs=${FUZZ_SECONDS:-60}
corpus=$(mktemp -d /tmp/chidori-fuzz.XXXXXX)
cp tests/fuzz/corpus/* "$corpus"/ 2>/dev/null || true
"$bin" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "$corpus"
echo "fuzz: ${secs}s without a finding"
