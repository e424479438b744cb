#!/usr/bin/env bats
# Every way a worker can end, mapped to the failure table; a broken worker
# never hangs or crashes the parent.
load helpers

setup_file() { :; }

a_js() { echo 'function main(){ return 1 }' >"$T/a.js"; }

run_bad() { # mode [extra args]
  local f; f=$(bad_worker "$1"); shift
  a_js
  CHIDORI_WORKER=$f chid run --quiet "$@" "$T/a.js"
}

@test "worker exits before ready: protocol error 70" {
  run_bad exit-before-ready
  assert_status 70
  assert_stderr_has "protocol error: worker exited before ready (exit status 3)"
}

@test "oversize frame: refused before allocating, 70" {
  run_bad oversize
  assert_status 70
  assert_stderr_has "protocol error: frame of 2147483647 bytes exceeds the 67108864-byte limit"
}

@test "zero-length frame: 70" {
  run_bad zero-length
  assert_status 70
  assert_stderr_has "protocol error: frame has length 0"
}

@test "truncated header: 70" {
  run_bad short-header
  assert_status 70
  assert_stderr_has "protocol error: short frame header: got 2 of 4 bytes"
}

@test "truncated body: 70" {
  run_bad short-body
  assert_status 70
  assert_stderr_has "protocol error: short frame body: got 9 of 100 bytes"
}

@test "garbage JSON: 70" {
  run_bad garbage
  assert_status 70
  assert_stderr_has "protocol error: frame is not valid JSON"
}

@test "unknown frame type: 70" {
  run_bad unknown-type
  assert_status 70
  assert_stderr_has 'protocol error: unknown frame type "bogus"'
}

@test "a call before ready: 70" {
  run_bad call-before-ready
  assert_status 70
  assert_stderr_has "protocol error: expected a ready frame first, got call"
}

@test "call ids out of order: 70" {
  run_bad bad-id
  assert_status 70
  assert_stderr_has "protocol error: call id 5 out of order (expected 1)"
}

@test "a result frame from the worker: 70" {
  run_bad result-frame
  assert_status 70
  assert_stderr_has "protocol error: unexpected result frame from the worker"
}

@test "worker exits before done: 70" {
  run_bad exit-before-done
  assert_status 70
  assert_stderr_has "protocol error: worker exited before done (exit status 4)"
}

@test "engine crash by SIGSEGV: 139" {
  run_bad crash
  assert_status 139
  assert_stderr_has "engine crashed (signal SIGSEGV)"
}

@test "engine crash by SIGABRT: 134" {
  run_bad abort
  assert_status 134
  assert_stderr_has "engine crashed (signal SIGABRT)"
}

@test "unknown host call op: the agent gets an error, the run goes on" {
  run_bad unknown-op
  assert_status 0
  [[ $output == *'"ok":false'* ]]
  [[ $output == *"unknown host call 'nope'"* ]]
}

@test "a wedged worker is killed at the deadline: 124" {
  start=$(date +%s%N)
  run_bad hang --deadline 300
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  assert_status 124
  assert_stderr_has "deadline exceeded (300 ms)"
  (( elapsed < 3000 ))
}

@test "a worker stalling mid-frame cannot wedge the parent: deadline still fires" {
  CHIDORI_ISOLATE_DEADLINE_MS=300 run_bad stall-midframe
  assert_status 124
  assert_stderr_has "deadline exceeded (300 ms)"
}

@test "the engine CPU limit ends a busy loop: 152" {
  agent busy.js <<'JS'
function main() { for (;;) {} }
JS
  start=$(date +%s%N)
  chid run --quiet --js-deadline 300 "$T/busy.js"
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  assert_status 152
  assert_stderr_has "CPU limit exceeded (0.3 s)"
  (( elapsed < 5000 ))
}

@test "the CPU limit cannot be caught by the agent" {
  agent busy.js <<'JS'
async function main() {
  try { for (;;) {} } catch (e) { return "caught"; } finally { return "finally"; }
}
JS
  CHIDORI_JS_DEADLINE_MS=200 chid run --quiet "$T/busy.js"
  assert_status 152
  [[ $output != *caught* && $output != *finally* ]]
}

@test "the CPU limit counts the whole run, across awaits" {
  agent busy.js <<'JS'
async function main() {
  for (let i = 0; ; i++) { const e = Date.now() + 0; let x = 0; for (let j = 0; j < 2e6; j++) x += j; await chidori.memory.get("k"); }
}
JS
  chid run --quiet --js-deadline 400 "$T/busy.js"
  assert_status 152
}

@test "deep recursion is a catchable RangeError, not a crash" {
  agent a.js <<'JS'
function main() { function f(n) { return f(n + 1) + 1; } try { f(0); } catch (e) { return e.name; } }
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '"RangeError"'
  chid run --quiet --no-isolate "$T/a.js"
  assert_status 0
  assert_stdout '"RangeError"'
}

@test "runaway string growth ends in an error, not a host OOM" {
  agent a.js <<'JS'
function main() { let s = "x"; try { for (;;) s += s; } catch (e) { return e.name + ": " + e.message; } }
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '"RangeError: Out of memory"'
}

@test "the worker's own stderr is forwarded with a prefix" {
  run_bad no-such-mode
  assert_stderr_has "[worker] bad_worker: unknown mode 'no-such-mode'"
}
