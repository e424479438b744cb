#!/usr/bin/env bash
# `make bench`: every figure measured side by side in one run, printed as a table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${BENCH_RUNS:-40}
CH="$BUILD/chidori"
tmp=$(mktemp -d /tmp/chidori-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME="$tmp/state"
gcc -O2 -o "$tmp/timeit" tests/bench/timeit.c

cat >"$tmp/hello.js" <<'JS'
function main() { return "hello " + (1 + 1); }
JS
cat >"$tmp/calls.js" <<'JS'
async function main(input) {
  await chidori.memory.set("k", 1);
  const n = input.n, t0 = Date.now();
  for (let i = 0; i < n; i++) await chidori.memory.get("k");
  return n;
}
JS

med() { "$tmp/timeit" "$N" "$@" | awk '{print $1}'; }

echo "== start-up (median of $N runs, ms)"
bare=$(med "$BUILD/jsc_hello")
inproc=$(med "$CH" run --quiet --no-isolate "$tmp/hello.js")
iso=$(med "$CH" run --quiet "$tmp/hello.js")
printf '%-52s %8s %8s\n' "what" "median" "vs bare"
printf '%-52s %8.2f %8s\n' "bare C program: JSC context + one eval (jsc_hello)" "$bare" "1.00x"
printf '%-52s %8.2f %7.2fx\n' "chidori run --no-isolate hello.js" "$inproc" "$(echo "$inproc / $bare" | bc -l)"
printf '%-52s %8.2f %7.2fx\n' "chidori run hello.js (process isolation)" "$iso" "$(echo "$iso / $bare" | bc -l)"
printf '%-52s %8.2f ms\n' "isolation overhead (run - run --no-isolate)" "$(echo "$iso - $inproc" | bc -l)"

echo
echo "== host call round trip (chidori.memory.get, awaited, in a loop)"
for mode in "" "--no-isolate"; do
  small=$(med "$CH" run --quiet $mode "$tmp/calls.js" --input '{"n":10}')
  big=$(N=5 "$tmp/timeit" 5 "$CH" run --quiet $mode "$tmp/calls.js" --input '{"n":10000}' | awk '{print $1}')
  per=$(echo "($big - $small) * 1000 / 9990" | bc -l)
  printf '%-52s %8.2f us\n' "round trip ${mode:-(isolated)} (10,000 calls)" "$per"
done
