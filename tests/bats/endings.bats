#!/usr/bin/env bats
# Every ending of the failure table, raced against host calls in flight, many
# times over while two busy processes keep both CPUs loaded: each run must end
# with the same exit status, the same message and the journal's end line
# (issue 17; the reasons for each race are in docs/decisions.md).  The whole
# file stays well under a minute; CHIDORI_ENDINGS_RUNS changes the count.
load helpers

N=${CHIDORI_ENDINGS_RUNS:-8}

setup_file() {
  LOAD_DIR=$(mktemp -d /tmp/chidori-endings.XXXXXX)
  export LOAD_DIR
  local i
  for i in 1 2; do
    sh -c 'while :; do :; done' >/dev/null 2>&1 3>&- </dev/null &
    echo $! >>"$LOAD_DIR/pids"
  done
}

teardown_file() {
  local p
  while read -r p; do kill "$p" 2>/dev/null || true; done <"$LOAD_DIR/pids"
  rm -rf "$LOAD_DIR"
}

# The journal's last line is the end line, with this exit status.
assert_end_line() {
  local last
  last=$(tail -n 1 "$T/j.jsonl" 2>/dev/null) || true
  if [[ $last != '{"type":"end"'* || $last != *"\"exit\":$1,"* ]]; then
    echo "run $i: no end line with exit $1 in the journal; last line: ${last:0:300}"
    echo "stderr: $stderr"
    return 1
  fi
}

# same_ending STATUS MESSAGE ARGS...: `chidori run --quiet --journal J ARGS`
# N times, each ending with STATUS, MESSAGE on stderr and the end line.
same_ending() {
  local want=$1 msg=$2
  shift 2
  for ((i = 1; i <= N; i++)); do
    rm -f "$T/j.jsonl"
    chid run --quiet --journal "$T/j.jsonl" "$@"
    if [[ $status -ne $want || $stderr != *"$msg"* ]]; then
      echo "run $i of $N: expected exit $want and '$msg'"
      echo "got exit $status; stderr: $stderr"
      return 1
    fi
    assert_end_line "$want"
  done
}

# same_signal_ending SIGNAL STATUS ARGS...: start the run, send SIGNAL once
# host calls are flowing (the journal has a call line), N times.
same_signal_ending() {
  local sig=$1 want=$2
  shift 2
  for ((i = 1; i <= N; i++)); do
    rm -f "$T/j.jsonl"
    "$CHIDORI" run --quiet --journal "$T/j.jsonl" "$@" >"$T/out" 2>"$T/err" 3>&- </dev/null &
    local pid=$! k
    for ((k = 0; k < 2000; k++)); do
      grep -q '"type":"call"' "$T/j.jsonl" 2>/dev/null && break
      sleep 0.005
    done
    kill -s "$sig" "$pid"
    set +e
    wait "$pid"
    status=$?
    set -e
    stderr=$(cat "$T/err")
    if [[ $status -ne $want || $stderr != *"chidori: interrupted by SIG$sig: the run was stopped"* ]]; then
      echo "run $i of $N: expected exit $want and 'interrupted by SIG$sig'; got exit $status; stderr: $stderr"
      return 1
    fi
    assert_end_line "$want"
  done
}

calls_loop() { # an agent that keeps host calls in flight, sync and async
  agent calls.js <<'JS'
async function main() { for (;;) { Date.now(); await chidori.memory.get("k"); } }
JS
}

# ---------------------------------------------------------------- CPU limit (152)

@test "CPU limit with synchronous host calls in flight: always 152, never a protocol error" {
  # The watchdog fires inside the JSC API calls that read a result frame.
  agent sync.js <<'JS'
function main() { for (;;) Date.now(); }
JS
  same_ending 152 "chidori: CPU limit exceeded (0.05 s)" --js-deadline 50 "$T/sync.js"
}

@test "CPU limit across awaited host calls (issue 17's agent): always 152" {
  agent busy.js <<'JS'
async function main() {
  for (;;) { const e = Date.now() + 0; let x = 0; for (let j = 0; j < 2e6; j++) x += j; await chidori.memory.get("k"); }
}
JS
  same_ending 152 "chidori: CPU limit exceeded (0.1 s)" --js-deadline 100 "$T/busy.js"
}

@test "CPU limit while the parent is still writing a large answer: 152, not SIGPIPE" {
  agent big.js <<'JS'
function main() { chidori.template("{{s}}".repeat(100), { s: "x".repeat(20000) }); for (;;) {} }
JS
  same_ending 152 "chidori: CPU limit exceeded (0.1 s)" --js-deadline 100 "$T/big.js"
}

@test "CPU limit in-process (--no-isolate) with host calls in flight: always 152" {
  agent sync.js <<'JS'
function main() { for (;;) Date.now(); }
JS
  same_ending 152 "chidori: CPU limit exceeded (0.05 s)" --no-isolate --js-deadline 50 "$T/sync.js"
}

# ---------------------------------------------------------------- deadline (124), memory (137)

@test "deadline with host calls in flight: always 124" {
  calls_loop
  same_ending 124 "chidori: deadline exceeded (300 ms)" --deadline 300 "$T/calls.js"
}

@test "memory limit while the parent is still writing a large answer: always 137, not SIGPIPE" {
  agent oom.js <<'JS'
function main() {
  chidori.template("{{s}}".repeat(100), { s: "x".repeat(20000) });
  const a = [];
  for (;;) a.push(new Array(1e6).fill(1));
}
JS
  same_ending 137 "chidori: memory limit exceeded (limit 64 MiB)" --memory 64M "$T/oom.js"
}

@test "memory limit with awaited host calls in flight: always 137" {
  agent oom.js <<'JS'
async function main() { const a = []; for (;;) { a.push(new Array(1e6).fill(1)); await chidori.memory.get("k"); } }
JS
  same_ending 137 "chidori: memory limit exceeded (limit 64 MiB)" --memory 64M "$T/oom.js"
}

# ---------------------------------------------------------------- the worker goes mid-answer

@test "engine crash while the parent writes a large answer: always 139 / 134" {
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker crash-mid-answer) same_ending 139 "chidori: engine crashed (signal SIGSEGV)" "$T/a.js"
  CHIDORI_WORKER=$(bad_worker abort-mid-answer) same_ending 134 "chidori: engine crashed (signal SIGABRT)" "$T/a.js"
}

@test "an engine abort past the CPU budget is the CPU limit (152), not a crash" {
  # JavaScriptCore has been seen to abort, rarely and under load, while it
  # unwinds the budget's termination; chidori-worker's SIGABRT handler then
  # says the budget was spent, and the ending is the budget's.
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker abort-past-budget) chid run --quiet --js-deadline 100 "$T/a.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.1 s); raise it with --js-deadline MS (0 = none)"
  # Without the budget's mark an abort stays a crash.
  CHIDORI_WORKER=$(bad_worker abort-mid-answer) chid run --quiet --js-deadline 100 "$T/a.js"
  assert_status 134
}

@test "blocked syscall while the parent writes a large answer: always 159" {
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker syscall-mid-answer) same_ending 159 "chidori: sandbox violation: blocked syscall ptrace" "$T/a.js"
}

@test "a worker that exits while the parent writes a large answer: 70 with the reason, never 141" {
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker exit-mid-answer) same_ending 70 "chidori: protocol error: worker exited before done (exit status 4)" "$T/a.js"
}

@test "a done frame that arrives while the parent writes a large answer wins: exit 0" {
  agent a.js <<<'function main() {}'
  for ((i = 1; i <= N; i++)); do
    rm -f "$T/j.jsonl"
    CHIDORI_WORKER=$(bad_worker done-mid-answer) chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
    assert_status 0
    assert_stdout '"done"'
    assert_end_line 0
  done
}

# ---------------------------------------------------------------- stop signals (130, 143, 129)

@test "SIGINT, SIGTERM and SIGHUP with host calls in flight: always 130, 143, 129" {
  calls_loop
  same_signal_ending INT 130 "$T/calls.js"
  same_signal_ending TERM 143 "$T/calls.js"
  same_signal_ending HUP 129 "$T/calls.js"
}

# ---------------------------------------------------------------- the launcher's own output closed

@test "stdout or stderr closed under the run (a pipe into head): no SIGPIPE death, the end line is written" {
  agent logs.js <<'JS'
async function main() { for (let i = 0; i < 20000; i++) chidori.log("line " + i + " " + "x".repeat(100)); return "ok"; }
JS
  rm -f "$T/j.jsonl"
  set +e
  "$CHIDORI" run --quiet --journal "$T/j.jsonl" "$T/logs.js" 2>&1 >"$T/out" </dev/null | head -c 10 >/dev/null
  status=${PIPESTATUS[0]}
  set -e
  assert_status 0
  [[ $(cat "$T/out") == '"ok"' ]]
  i=1 assert_end_line 0
  rm -f "$T/j.jsonl"
  set +e
  "$CHIDORI" run --quiet --journal "$T/j.jsonl" "$T/logs.js" 2>/dev/null </dev/null | true
  status=${PIPESTATUS[0]}
  set -e
  assert_status 0
  i=1 assert_end_line 0
}
