#!/usr/bin/env bats
# --deadline and the stop signals interrupt everything (issue 9 item 4): long
# effects in the parent (template rendering, the workspace manifest, waiting
# for an answer on the terminal), loading a big journal for replay, and an
# in-process engine (--no-isolate) running JS that never yields.  Each case
# took far longer before (or forever); the bounds here are generous.
load helpers

# timed CMD...: run like chid, with the wall time in $ms.  Every run is
# bounded by `timeout -s KILL` so a regression fails instead of hanging.
timed() {
  local s=$EPOCHREALTIME
  set +e
  "$@" >"$T/.stdout" 2>"$T/.stderr"
  status=$?
  set -e
  local e=$EPOCHREALTIME
  ms=$(( (${e/./} - ${s/./}) / 1000 ))
  output=$(cat "$T/.stdout")
  stderr=$(cat "$T/.stderr")
}

assert_within() {
  if (( ms > $1 )); then
    echo "took $ms ms, expected at most $1 ms"; echo "stderr: $stderr"; return 1
  fi
}

# start_bg ARGS...: chidori in the background (pid in $bg), output in $T/bg.*
start_bg() {
  "$CHIDORI" "$@" >"$T/bg.out" 2>"$T/bg.err" 3>&- </dev/null &
  bg=$!
}

# stop_bg SIGNAL: signal $bg, wait for it (bounded), $status, $stderr, $ms
stop_bg() {
  local s=$EPOCHREALTIME k
  kill -s "$1" "$bg"
  for ((k = 0; k < 1000; k++)); do
    kill -0 "$bg" 2>/dev/null || break
    sleep 0.01
  done
  kill -0 "$bg" 2>/dev/null && kill -s KILL "$bg"
  set +e
  wait "$bg"
  status=$?
  set -e
  local e=$EPOCHREALTIME
  ms=$(( (${e/./} - ${s/./}) / 1000 ))
  stderr=$(cat "$T/bg.err")
}

wait_for_line() { # FILE PATTERN: until FILE has a line matching PATTERN (bounded)
  local k
  for ((k = 0; k < 2000; k++)); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.005
  done
  return 1
}

# ---------------------------------------------------------------- --no-isolate

@test "--no-isolate: an endless loop ends at --deadline with 124" {
  agent loop.js <<<'function main() { while (true) {} }'
  timed timeout -s KILL 20 "$CHIDORI" run --quiet --no-isolate --deadline 500 "$T/loop.js"
  assert_status 124
  assert_stderr_has "chidori: deadline exceeded (500 ms)"
  assert_within 3000
}

@test "--no-isolate: SIGTERM, SIGINT and SIGHUP stop an endless loop promptly (143, 130, 129)" {
  agent loop.js <<'JS'
async function main() { await chidori.memory.get("k"); while (true) {} }
JS
  for sig in TERM:143 INT:130 HUP:129; do
    rm -f "$T/j.jsonl"
    start_bg run --quiet --no-isolate --journal "$T/j.jsonl" "$T/loop.js"
    wait_for_line "$T/j.jsonl" '"type":"call"'
    stop_bg "${sig%:*}"
    assert_status "${sig#*:}"
    assert_stderr_has "chidori: interrupted by SIG${sig%:*}: the run was stopped"
    assert_within 1500
    tail -n 1 "$T/j.jsonl" | grep -q "\"type\":\"end\".*\"exit\":${sig#*:},"
  done
}

@test "the engine's watchdog slices do not change a CPU-limited run (isolated and in-process)" {
  agent spin.js <<<'function main() { let x = 0; for (;;) x++; }'
  chid run --quiet --js-deadline 300 "$T/spin.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.3 s)"
  chid run --quiet --no-isolate --js-deadline 300 "$T/spin.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.3 s)"
}

@test "the CPU limit stops JS that runs as a chain of microtasks (isolated and in-process)" {
  # Each microtask is a VM entry of its own, too short for JSC's watchdog:
  # the backstop thread ends the run (engine/backstop.c).
  agent micro.js <<'JS'
async function main() { for (;;) { let x = 0; for (let j = 0; j < 1e6; j++) x += j; await null; } }
JS
  timed timeout -s KILL 20 "$CHIDORI" run --quiet --js-deadline 300 "$T/micro.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.3 s)"
  assert_within 5000
  agent micro2.js <<<'async function main() { for (;;) await null; }'
  timed timeout -s KILL 20 "$CHIDORI" run --quiet --no-isolate --js-deadline 300 "$T/micro2.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.3 s)"
  assert_within 5000
}

# ---------------------------------------------------------------- long effects in the parent

# Template rendering also checks the deadline and the stop flag per tag
# (template_render_until), but since the parent's template work budget
# (docs/sandbox.md, "The parent's limits") no render outlasts ~1 s (a 18 MB
# template of 1.5 million lookups renders in ~0.4 s), so no test here can
# make one slow enough to be interrupted; bounds.bats tests the work bound.

@test "a workspace manifest over a huge file is interrupted by --deadline" {
  mkdir "$T/ws"
  truncate -s 900M "$T/ws/big"   # sparse: no disk, but ~900 MB to hash
  agent man.js <<<'async function main() { return (await chidori.workspace.manifest()).length; }'
  timed timeout -s KILL 60 "$CHIDORI" run --quiet --workspace "$T/ws" --deadline 500 "$T/man.js"
  assert_status 124
  assert_stderr_has "chidori: deadline exceeded (500 ms)"
  assert_within 1500
}

@test "an answer awaited on the terminal is interrupted by --deadline" {
  command -v script >/dev/null || skip "script(1) (util-linux) is needed for a terminal"
  agent in.js <<<'async function main() { return await chidori.input("name?"); }'
  # script gives the run a terminal; its input stays open and silent
  timed timeout -s KILL 20 script -qec "'$CHIDORI' run --quiet --deadline 500 '$T/in.js'" /dev/null \
    < <(exec sleep 30)
  local sleeper=$!
  kill "$sleeper" 2>/dev/null || true
  assert_status 124
  [[ $output == *"chidori: deadline exceeded (500 ms)"* ]] || { echo "$output"; false; }
  assert_within 3000
}

# ---------------------------------------------------------------- replay loading

big_journal() {
  # a real header, then 100,000 call lines in descending id order
  agent loop.js <<<'function main() { while (true) {} }'
  chid run --quiet --deadline 100 --journal "$T/rec.jsonl" "$T/loop.js"
  assert_status 124
  head -n 1 "$T/rec.jsonl" >"$T/big.jsonl"
  awk 'BEGIN { n = 100000; for (i = n; i >= 1; i--)
         printf "{\"type\":\"call\",\"seq\":%d,\"id\":%d,\"op\":\"clock.now\",\"args\":{},\"ok\":true,\"value\":1}\n", n - i + 1, i }' \
    >>"$T/big.jsonl"
}

@test "replay: loading a big journal is interrupted by --deadline" {
  big_journal
  timed timeout -s KILL 60 "$CHIDORI" replay --quiet --deadline 500 "$T/big.jsonl"
  assert_status 124
  assert_stderr_has "chidori: deadline exceeded (500 ms)"
  assert_within 1500
}

@test "replay: loading a big journal is interrupted by SIGTERM (143)" {
  big_journal
  start_bg replay --quiet "$T/big.jsonl"
  # the loader has the journal open (then, if loading is fast, the agent
  # loops).  Bounded by wall time, not by a count: listing /proc/PID/fd costs
  # ~30 ms here, and a loader quicker than the first look left 2000 looks
  # (70 s) to run into the replay's 60 s CPU budget (exit 152, not 143).
  local s=$EPOCHREALTIME
  while (( (${EPOCHREALTIME/./} - ${s/./}) / 1000 < 2000 )); do
    ls -l "/proc/$bg/fd" 2>/dev/null | grep -q big.jsonl && break
    sleep 0.005
  done
  stop_bg TERM
  assert_status 143
  assert_stderr_has "chidori: interrupted by SIGTERM: the run was stopped"
  assert_within 1500
}
