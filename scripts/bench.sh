#!/usr/bin/env bash
# `make bench` (BUILD=build ./scripts/bench.sh): every figure of docs/bench.md,
# measured side by side in one run and printed as tables with medians,
# differences, ratios and each target with PASS/MISS.  About 2 minutes.
#
# Method: tests/bench/timeit.c runs the commands of one table interleaved
# (round r runs each once), fork/exec/wait, output to /dev/null, and prints
# medians; tests/bench/pingpong.c is the bare C floor under a host call.
# Knobs (environment): BENCH_SCALE=0.25 shrinks every N (a quick look),
# BENCH_OUT=FILE also writes the output there (default $BUILD/bench.txt).
# Exit status 0 even when a target is missed (the tables say so); non-zero
# only when something could not be measured at all.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CH="$BUILD/chidori"
OUT=${BENCH_OUT:-$BUILD/bench.txt}
SCALE=${BENCH_SCALE:-1}
for f in "$CH" "$BUILD/chidori-worker" "$BUILD/jsc_hello"; do
  [[ -x $f ]] || { echo "bench: $f is missing: run 'make all' first" >&2; exit 1; }
done

n_of() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s + 0.5); print (v < 3 ? 3 : v) }'; }
N_START=$(n_of 40)   # start-up, 5 commands
N_TRUE=$(n_of 100)   # /bin/true under chidori and bwrap
N_LAYER=$(n_of 60)   # one launch per layer switched off
N_CALL10=$(n_of 20)  # host-call runs with 10 calls
N_CALLBIG=$(n_of 5)  # host-call runs with 10,000 calls
N_CG=$(n_of 100)     # cgroup on/off
N_COLD=$(n_of 8)     # cgroup on/off after a 500 ms pause
CALLS=10000

tmp=$(mktemp -d /tmp/chidori-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME="$tmp/state"
unset CHIDORI_ISOLATE CHIDORI_ISOLATE_REQUIRE_SANDBOX CHIDORI_JS_MEM_CAP_MB CHIDORI_PIDS_MAX CHIDORI_CGROUP_PARENT \
  CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_ISOLATE_CPU_SECS CHIDORI_JS_DEADLINE_MS || true
CC=${CC:-gcc}
$CC -O2 -Wall -Wextra -o "$tmp/timeit" tests/bench/timeit.c
$CC -O2 -Wall -Wextra -pthread -o "$tmp/pingpong" tests/bench/pingpong.c
T="$tmp/timeit"

exec > >(tee "$OUT") 2>&1

# ---------------------------------------------------------------- helpers
# measure PREFIX N [TIMEIT-OPTS] -- LABEL CMD... ::: LABEL CMD...
# Stores PREFIX_LABEL_{med,p10,p90,cpu,flt,sys}; a command that fails is shown
# with "!!" (and its stderr) and its figures read "fail"; the others still count.
measure() {
  local pre=$1 n=$2; shift 2
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  local labels=() args=() first=1
  for a in "$@"; do
    if [[ $first == 1 ]]; then labels+=("$a"); first=0; continue; fi
    args+=("$a")
    [[ $a == ::: ]] && first=1
  done
  local out i=0
  out=$("$T" -n "$n" "${opts[@]+"${opts[@]}"}" "${args[@]}" 2>"$tmp/err") || true
  if [[ -s $tmp/err ]]; then sed 's/^/  !! /' "$tmp/err" | cut -c1-160 | head -6; fi
  while read -r med p10 p90 cpu flt sys; do
    local l=${labels[$i]:-}
    [[ -n $l ]] || break
    if [[ $med == fail ]]; then
      p10=fail p90=fail cpu=fail flt=fail sys=fail
    fi
    printf -v "${pre}_${l}_med" %s "$med"; printf -v "${pre}_${l}_p10" %s "$p10"
    printf -v "${pre}_${l}_p90" %s "$p90"; printf -v "${pre}_${l}_cpu" %s "$cpu"
    printf -v "${pre}_${l}_flt" %s "$flt"; printf -v "${pre}_${l}_sys" %s "${sys:-}"
    i=$((i + 1))
  done <<<"$out"
}
v() { local n="$1_$2_$3"; printf %s "${!n:-fail}"; }
# calc EXPR with a, b, c...: prints the value, or "n/a" if any input failed
calc() {
  local expr=$1; shift
  for x in "$@"; do [[ $x =~ ^-?[0-9.]+$ ]] || { echo n/a; return; }; done
  awk -v a="${1:-0}" -v b="${2:-0}" -v c="${3:-0}" -v d="${4:-0}" "BEGIN { printf \"%.2f\", $expr }"
}
# verdict VALUE OP LIMIT -> PASS / MISS / n/a
verdict() {
  [[ $1 =~ ^-?[0-9.]+$ ]] || { echo n/a; return; }
  awk -v x="$1" -v y="$3" -v op="$2" 'BEGIN { ok = op == "<" ? x < y : op == "<=" ? x <= y : op == ">=" ? x >= y : x > y;
    print ok ? "PASS" : "MISS" }'
}
rule() { printf '%s\n' "--------------------------------------------------------------------------------------------------"; }
# row LABEL PREFIX KEY BASE_KEY: median p10 p90 cpu faults, and +ms / ratio over BASE
row() {
  local label=$1 pre=$2 key=$3 base=${4:-}
  local m; m=$(v "$pre" "$key" med)
  if [[ $m == fail ]]; then printf '%-58s %8s\n' "$label" "failed"; return; fi
  local plus="" ratio=""
  if [[ -n $base ]]; then
    plus=$(calc 'a - b' "$m" "$(v "$pre" "$base" med)")
    ratio=$(calc 'a / b' "$m" "$(v "$pre" "$base" med)")x
    [[ $plus != n/a ]] && plus="+$plus"; plus=${plus/+-/-}
  fi
  printf '%-58s %8.2f %7.2f %7.2f %7.2f %6s %8s %7s\n' "$label" "$m" "$(v "$pre" "$key" p10)" \
    "$(v "$pre" "$key" p90)" "$(v "$pre" "$key" cpu)" "$(v "$pre" "$key" flt)" "$plus" "$ratio"
}
head_row() {
  printf '%-58s %8s %7s %7s %7s %6s %8s %7s\n' "${1:-what}" median p10 p90 cpu faults "+ms" ratio
}
# target LABEL VALUE UNIT OP LIMIT
target() {
  local label=$1 val=$2 unit=$3 op=$4 lim=$5
  printf '  %-64s %9s %-3s  target %-2s %-7s %s\n' "$label" "$val" "$unit" "$op" "$lim" "$(verdict "$val" "$op" "$lim")"
}

start_s=$(date +%s)
echo "chidori bench — $(date -u '+%Y-%m-%d %H:%M UTC'), $(git describe --always --dirty 2>/dev/null || echo '?'), kernel $(uname -r), $(nproc) CPUs"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)   (the machine is shared: every figure is a median of interleaved runs)"
echo "columns: median/p10/p90 wall ms; cpu = median user+sys ms of the process tree; faults = median minor page faults;"
echo "         +ms and ratio are against the row named in each table"

# ---------------------------------------------------------------- setup
cat >"$tmp/hello.js" <<'JS'
function main() { return "hello " + (1 + 1); }
JS
cat >"$tmp/await.js" <<'JS'
async function main(input) {
  await chidori.memory.set("k", 1);
  for (let i = 0; i < input.n; i++) await chidori.memory.get("k");
  return input.n;
}
JS
cat >"$tmp/sync.js" <<'JS'
function main(input) {
  let t = 0;
  for (let i = 0; i < input.n; i++) t += Date.now() & 1; // one sync clock.now host call each
  return input.n + (t & 0);
}
JS
cat >"$tmp/bomb_buffers.js" <<'JS'
function main() {
  const keep = [];
  for (;;) { const b = new Uint8Array(1 << 20); b.fill(1); keep.push(b); }
}
JS
cat >"$tmp/bomb_objects.js" <<'JS'
function main() {
  const keep = [];
  for (let i = 0; ; i++) keep.push({ i, s: "x".repeat(64) + i, a: [i, i + 1, i + 2] });
}
JS

# Layers this build knows (names changed over time: cgroup vs cgroupns).
LAYERS=()
for l in user pid mnt net ipc uts cgroupns cgroup caps landlock seccomp rlimits; do
  rc=0; "$CH" launch --quiet --unsafe-disable="$l" -- /bin/true >/dev/null 2>"$tmp/err" || rc=$?
  if [[ $rc == 2 ]] && grep -q "unknown layer" "$tmp/err"; then continue; fi
  LAYERS+=("$l")
done
ALL_OFF=$(IFS=,; echo "${LAYERS[*]}")

BWRAP=(bwrap --unshare-all --ro-bind / / --dev /dev)
have_bwrap=0
if command -v bwrap >/dev/null && "${BWRAP[@]}" /bin/true 2>/dev/null; then have_bwrap=1; fi
bw_true=() bw_js=()
if [[ $have_bwrap == 1 ]]; then
  bw_true=(::: bw_true "${BWRAP[@]}" /bin/true); bw_js=(::: bw_js "${BWRAP[@]}" "$BUILD/jsc_hello")
else
  echo "NOTE: bwrap (Debian package bubblewrap) is missing or cannot run here: no peer rows (scripts/deps.sh installs it)"
fi

# ================================================================= 1
echo
echo "== 1. Start-up: hello-world agent, median of $N_START runs each, interleaved (ms)"
measure S "$N_START" -- \
  bare "$BUILD/jsc_hello" ::: \
  inproc "$CH" run --quiet --no-isolate "$tmp/hello.js" ::: \
  proc "$CH" run --quiet --unsafe-disable="$ALL_OFF" "$tmp/hello.js" ::: \
  full "$CH" run --quiet "$tmp/hello.js" \
  "${bw_js[@]+"${bw_js[@]}"}"
rule; head_row "what (+ms/ratio vs jsc_hello)"; rule
row "jsc_hello: bare C, JSC context + one eval" S bare
row "chidori run --no-isolate (engine in the launcher)" S inproc bare
row "chidori run, process isolation only (all layers off)" S proc bare
row "chidori run (full sandbox: every layer)" S full bare
[[ $have_bwrap == 1 ]] && row "peer: bwrap --unshare-all --ro-bind / / --dev /dev jsc_hello" S bw_js bare
rule
iso=$(calc 'a - b' "$(v S proc med)" "$(v S inproc med)")
lay=$(calc 'a - b' "$(v S full med)" "$(v S proc med)")
target "process isolation over the bare engine (process-only − --no-isolate)" "$iso" ms "<" 1
target "all OS layers over the unsandboxed worker (full − process-only)" "$lay" ms "<=" 1.5
printf '  %-64s %9s ms   (reference, no target)\n' "chidori --no-isolate over bare jsc_hello" "$(calc 'a - b' "$(v S inproc med)" "$(v S bare med)")"
printf '  %-64s %9s ms   (reference, no target)\n' "chidori full sandbox over bare jsc_hello" "$(calc 'a - b' "$(v S full med)" "$(v S bare med)")"
[[ $have_bwrap == 1 ]] && printf '  %-64s %9s ms   (reference, no target)\n' "peer: bwrap over bare jsc_hello" "$(calc 'a - b' "$(v S bw_js med)" "$(v S bare med)")"

# ================================================================= 2
echo
echo "== 2. Box around /bin/true: chidori launch vs bubblewrap, median of $N_TRUE runs each, interleaved (ms)"
measure L "$N_TRUE" -- \
  true /bin/true ::: \
  ch "$CH" launch --quiet -- /bin/true ::: \
  ver "$CH" --version \
  "${bw_true[@]+"${bw_true[@]}"}"
rule; head_row "what (+ms/ratio vs /bin/true)"; rule
row "/bin/true" L true
row "chidori launch -- /bin/true" L ch true
[[ $have_bwrap == 1 ]] && row "peer: bwrap --unshare-all --ro-bind / / --dev /dev /bin/true" L bw_true true
row "diagnostic: chidori --version (loading the launcher, no box)" L ver true
rule
cho=$(calc 'a - b' "$(v L ch med)" "$(v L true med)")
bwo=$(calc 'a - b' "$(v L bw_true med)" "$(v L true med)")
printf '  %-64s %9s ms\n' "chidori's overhead over /bin/true" "$cho"
printf '  %-64s %9s ms\n' "bubblewrap's overhead over /bin/true" "$bwo"
target "bubblewrap's overhead / chidori's overhead" "$(calc 'b / a' "$cho" "$bwo")" x ">=" 2
printf '  %-64s %9s ms   (launcher load share of chidori overhead)\n' "chidori --version − /bin/true" \
  "$(calc 'a - b' "$(v L ver med)" "$(v L true med)")"

# ================================================================= 3
echo
echo "== 3. Host-call round trip: (run with $CALLS calls − run with 10 calls) / $((CALLS - 10)), µs per call"
echo "   medians of $N_CALLBIG runs of $CALLS calls and $N_CALL10 runs of 10 calls, interleaved"
measure C "$N_CALL10" -- \
  aw_iso "$CH" run --quiet "$tmp/await.js" --input '{"n":10}' ::: \
  aw_in "$CH" run --quiet --no-isolate "$tmp/await.js" --input '{"n":10}' ::: \
  sy_iso "$CH" run --quiet "$tmp/sync.js" --input '{"n":10}' ::: \
  sy_in "$CH" run --quiet --no-isolate "$tmp/sync.js" --input '{"n":10}' ::: \
  aw_pin taskset -c 0 "$CH" run --quiet "$tmp/await.js" --input '{"n":10}'
measure CB "$N_CALLBIG" -w 1 -- \
  aw_iso "$CH" run --quiet "$tmp/await.js" --input "{\"n\":$CALLS}" ::: \
  aw_in "$CH" run --quiet --no-isolate "$tmp/await.js" --input "{\"n\":$CALLS}" ::: \
  sy_iso "$CH" run --quiet "$tmp/sync.js" --input "{\"n\":$CALLS}" ::: \
  sy_in "$CH" run --quiet --no-isolate "$tmp/sync.js" --input "{\"n\":$CALLS}" ::: \
  aw_pin taskset -c 0 "$CH" run --quiet "$tmp/await.js" --input "{\"n\":$CALLS}"
pp() { "$tmp/pingpong" -n 20000 "$@" 2>/dev/null || echo "fail fail fail fail"; }
read -r pp_proc _ _ _ <<<"$(pp -t process)"
read -r pp_thr _ _ _ <<<"$(pp -t thread)"
read -r pp_proc_pin _ _ _ <<<"$(pp -t process -c 0)"
read -r pp_thr_pin _ _ _ <<<"$(pp -t thread -c 0)"
rule
printf '%-58s %9s %11s %9s %8s %6s\n' "what" "10 calls" "$CALLS calls" "µs/call" target result
rule
call_row() {
  local label=$1 key=$2 tgt=$3
  local small big per
  small=$(v C "$key" med); big=$(v CB "$key" med)
  per=$(calc '(a - b) * 1000 / c' "$big" "$small" "$((CALLS - 10))")
  if [[ $tgt == - ]]; then
    printf '%-58s %9s %11s %9s %8s %6s\n' "$label" "$small" "$big" "$per" "(info)" ""
  else
    printf '%-58s %9s %11s %9s %8s %6s\n' "$label" "$small" "$big" "$per" "< $tgt" "$(verdict "$per" "<" "$tgt")"
  fi
}
call_row "awaited chidori.memory.get, isolated" aw_iso 15
call_row "awaited chidori.memory.get, --no-isolate" aw_in 15
call_row "sync Date.now() (clock.now), isolated" sy_iso 15
call_row "sync Date.now() (clock.now), --no-isolate" sy_in 15
call_row "awaited memory.get, isolated, all pinned to CPU 0 (taskset)" aw_pin -
printf '%-58s %9s %11s %9s %8s\n' "floor: C socketpair ping-pong, 64 B frames, two processes" "" "" "$pp_proc" "(floor)"
printf '%-58s %9s %11s %9s %8s\n' "floor: same, two threads of one process" "" "" "$pp_thr" "(floor)"
printf '%-58s %9s %11s %9s %8s\n' "floor: two processes, both pinned to CPU 0" "" "" "$pp_proc_pin" "(floor)"
printf '%-58s %9s %11s %9s %8s\n' "floor: two threads, both pinned to CPU 0" "" "" "$pp_thr_pin" "(floor)"
rule

# ================================================================= 4
echo
echo "== 4. Cost of each layer: chidori launch --unsafe-disable=L -- /bin/true vs full, median of $N_LAYER runs each (ms)"
largs=(full "$CH" launch --quiet -- /bin/true ::: none "$CH" launch --quiet --unsafe-disable="$ALL_OFF" -- /bin/true)
for l in "${LAYERS[@]}"; do largs+=(::: "off_$l" "$CH" launch --quiet --unsafe-disable="$l" -- /bin/true); done
measure Y "$N_LAYER" -- "${largs[@]}"
# Layers whose switch-off fails on its own still get a row saying so.
rule
printf '%-58s %8s %7s %7s %7s %6s %8s\n' "what" median p10 p90 cpu faults "layer ms"
rule
printf '%-58s %8.2f %7.2f %7.2f %7.2f %6s %8s\n' "full sandbox (every layer)" "$(v Y full med)" "$(v Y full p10)" \
  "$(v Y full p90)" "$(v Y full cpu)" "$(v Y full flt)" ""
best="" best_ms=-1
for l in "${LAYERS[@]}"; do
  m=$(v Y "off_$l" med)
  if [[ $m == fail ]]; then
    printf '%-58s %8s\n' "  without $l" "fails (see !! above)"
    continue
  fi
  cost=$(calc 'a - b' "$(v Y full med)" "$m")
  printf '%-58s %8.2f %7.2f %7.2f %7.2f %6s %8s\n' "  without $l" "$m" "$(v Y "off_$l" p10)" "$(v Y "off_$l" p90)" \
    "$(v Y "off_$l" cpu)" "$(v Y "off_$l" flt)" "$cost"
  if awk -v x="$cost" -v y="$best_ms" 'BEGIN { exit !(x > y) }'; then best=$l best_ms=$cost; fi
done
printf '%-58s %8.2f %7.2f %7.2f %7.2f %6s %8s\n' "no OS layer (--unsafe-disable=all: process only)" "$(v Y none med)" \
  "$(v Y none p10)" "$(v Y none p90)" "$(v Y none cpu)" "$(v Y none flt)" "$(calc 'a - b' "$(v Y full med)" "$(v Y none med)")"
rule
echo "  'layer ms' = full − without that layer (wall time the layer adds; within ±noise of 0 means free)."
echo "  most expensive single layer here: ${best:-?} (+${best_ms} ms); expected: net (the brief measured +0.5 ms wall + async cleanup CPU)"
# The network namespace is torn down by a kernel worker after the run: only a
# machine-wide CPU count sees it.
if [[ " ${LAYERS[*]} " == *" net "* ]]; then
  measure YN "$N_LAYER" -b -w 1 -- full "$CH" launch --quiet -- /bin/true ::: \
    nonet "$CH" launch --quiet --unsafe-disable=net -- /bin/true
  printf '  %-64s %9s ms CPU per run (machine-wide, incl. kernel workers; full %s vs without net %s)\n' \
    "net namespace: machine-wide CPU it adds" "$(calc 'a - b' "$(v YN full sys)" "$(v YN nonet sys)")" \
    "$(v YN full sys)" "$(v YN nonet sys)"
fi

# ================================================================= 5
echo
echo "== 5. cgroup: per-run setup+teardown cost and the memory ceiling"
if ! "$CH" run --help 2>/dev/null | grep -q -- '--memory'; then
  echo "   PLACEHOLDER (integrator): this build has no --memory option yet.  To fill: per-run cgroup"
  echo "   setup+teardown cost on v1 (launch with vs without the run's cgroup) and the memory ceiling"
  echo "   overshoot (largest peak a memory-bomb run reaches / the limit)."
else
  cg_off=""
  for l in "${LAYERS[@]}"; do [[ $l == cgroup && " ${LAYERS[*]} " == *" cgroupns "* ]] && cg_off=cgroup; done
  echo "   $("$CH" doctor 2>/dev/null | grep -m1 'cgroup (memory' | sed 's/  */ /g')"
  if [[ -z $cg_off ]]; then
    echo "   (this build has no switch for the run's cgroup alone: cost rows are n/a)"
  else
    measure G "$N_CG" -- on "$CH" launch --quiet -- /bin/true ::: off "$CH" launch --quiet --unsafe-disable=cgroup -- /bin/true
    measure GC "$N_COLD" -p 500 -w 1 -- on "$CH" launch --quiet -- /bin/true ::: off "$CH" launch --quiet --unsafe-disable=cgroup -- /bin/true
    rule; head_row "what (+ms/ratio vs without the cgroup)"; rule
    row "launch /bin/true without a cgroup (--unsafe-disable=cgroup)" G off
    row "launch /bin/true with the run's cgroup (default)" G on off
    row "cold: without a cgroup, 500 ms pause before each run ($N_COLD runs)" GC off
    row "cold: with the run's cgroup, 500 ms pause before each run" GC on off
    rule
    printf '  %-64s %9s ms   (no target yet)\n' "cgroup setup+teardown per run, back to back" "$(calc 'a - b' "$(v G on med)" "$(v G off med)")"
    printf '  %-64s %9s ms   (no target yet)\n' "cgroup setup+teardown per run, after a pause (cold)" "$(calc 'a - b' "$(v GC on med)" "$(v GC off med)")"
  fi
  # memory ceiling: a bomb under --memory 64M, the peak the run's stats report
  LIMIT_MB=64
  rule
  printf '%-44s %6s %12s %12s %9s %6s\n' "memory bomb (--memory ${LIMIT_MB}M), 3 runs each" exit "peak MiB" "limit MiB" "overshoot" "wall s"
  rule
  max_over=""
  for b in buffers objects; do
    peak=0 lim=0 ex="" w=""
    for _ in 1 2 3; do
      s=$(date +%s.%N)
      js=$("$CH" run --quiet --json --memory ${LIMIT_MB}M "$tmp/bomb_$b.js" 2>/dev/null) && rc=0 || rc=$?
      w=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
      ex=$rc
      p=$(grep -o '"peak\(_memory\)\?_bytes":[0-9]*' <<<"$js" | grep -o '[0-9]*$' || true)
      l=$(grep -o '"memory_limit_bytes":[0-9]*' <<<"$js" | grep -o '[0-9]*$' || true)
      [[ -n $p ]] && ((p > peak)) && peak=$p
      [[ -n $l ]] && lim=$l
    done
    ((lim > 0)) || lim=$((LIMIT_MB << 20))
    if ((peak > 0)); then
      over=$(calc 'a / b' "$peak" "$lim")
      [[ -z $max_over ]] || awk -v x="$over" -v y="$max_over" 'BEGIN { exit !(x > y) }' && max_over=$over
    else
      over="n/a (no peak in --json stats)"
    fi
    printf '%-44s %6s %12s %12s %9s %6s\n' "  $b (typed arrays / JS objects)" "$ex" "$(calc 'a / 1048576' "$peak")" \
      "$(calc 'a / 1048576' "$lim")" "$over" "$w"
  done
  rule
  printf '  %-64s %9s x    (exit 137 expected; no target yet)\n' "largest peak / limit" "${max_over:-n/a}"
fi

echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); took $(($(date +%s) - start_s)) s; output saved in $OUT"
