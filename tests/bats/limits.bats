#!/usr/bin/env bats
# Limits applied or refused (issue 9 items 7 and 8).  Without a cgroup the
# memory ceiling falls back to a watchdog on the box's resident memory and
# --pids to RLIMIT_NPROC in the box's own user namespace; a limit the user
# asked for that nothing can hold fails the run (78); a default that cannot
# apply is named in the banner.  Every run has an engine CPU budget by
# default (60 s, 10 s under --untrusted), and what the engine cannot
# interrupt (a regular expression) is stopped by the RLIMIT_CPU backstop.
# --unsafe-disable=cgroup stands for a host without cgroup delegation here;
# rootless.bats runs the same watchdog as an unprivileged user.
load helpers

# The plain build's probes, also under `make asan`: an instrumented probe's
# leak check at exit uses ptrace, which launch's filter refuses (as cgroup.bats).
P="${CHIDORI_BUILD:-$BATS_TEST_DIRNAME/../../build}/probes"

eval "helpers_$(declare -f setup)"
eval "helpers_$(declare -f teardown)"

setup() {
  helpers_setup
  BG_PIDS=()
  unset CHIDORI_JS_MEM_CAP_MB CHIDORI_PIDS_MAX CHIDORI_ISOLATE_CPU_SECS CHIDORI_ISOLATE_REQUIRE_SANDBOX CHIDORI_POLICY_PROFILE
}

teardown() {
  local p
  for p in "${BG_PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  helpers_teardown
}

# ---- memory: the watchdog -------------------------------------------------

@test "no cgroup: a JS memory bomb is killed by the watchdog: 137, the same message, peak and limit in --json" {
  # bounded (1.5 GiB), so a missing ceiling fails the test instead of the host
  agent bomb.js <<'JS'
function main() {
  const keep = [];
  for (let i = 0; i < 1536; i++) keep.push(new Uint8Array(1 << 20).fill(i & 255));
  let spin = 0;
  for (let i = 0; i < 3e8; i++) spin += i & 1;  // hold it a moment (a busy machine polls late)
  return "survived " + keep.length + " MiB";
}
JS
  chid run --quiet --json --memory 128M --unsafe-disable=cgroup "$T/bomb.js"
  assert_status 137
  assert_stderr_has "chidori: memory limit exceeded (limit 128 MiB)"
  [[ $output == *'"exit":137'* && $output == *'"memory_limit_bytes":134217728'* ]] || { echo "$output"; false; }
  peak=$(grep -o '"peak_memory_bytes":[0-9]*' <<<"$output" | cut -d: -f2)
  (( peak > 128 * 1024 * 1024 && peak < 1024 * 1024 * 1024 ))
  # the same agent with room for it survives: the watchdog is what stopped it
  chid run --quiet --memory 2G --unsafe-disable=cgroup "$T/bomb.js"
  assert_status 0
  assert_stdout '"survived 1536 MiB"'
}

@test "no cgroup: launch counts the whole box: two processes of 60 MiB are over 96M, not over 256M" {
  chid launch --quiet --memory 1G --unsafe-disable=cgroup -- "$P/cg_hog" 1000
  assert_status 0
  chid launch --quiet --memory 64M --unsafe-disable=cgroup -- "$P/cg_hog" 1000 3
  assert_status 137
  assert_stderr_has "chidori: memory limit exceeded (limit 64 MiB)"
  [[ $output != *survived* ]]
  # each process alone is under the limit, together they are not
  chid launch --quiet --memory 96M --unsafe-disable=cgroup -- "$P/cg_hog" 60 5 2
  assert_status 137
  assert_stderr_has "chidori: memory limit exceeded (limit 96 MiB)"
  chid launch --quiet --memory 256M --unsafe-disable=cgroup -- "$P/cg_hog" 60 1 2
  assert_status 0
  assert_stdout "survived 120 MiB in all"
}

@test "no cgroup: the banner names the fallbacks; --quiet hides them" {
  chid run --unsafe-disable=cgroup "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 0
  assert_stderr_has "no cgroup (disabled by --unsafe-disable): memory watchdog 512M, pids rlimit 64;"
  chid launch --memory 256M --pids 32 --unsafe-disable=cgroup -- /bin/true
  assert_status 0
  assert_stderr_has "no cgroup (disabled by --unsafe-disable): memory watchdog 256M, pids rlimit 32;"
  chid launch --quiet --unsafe-disable=cgroup -- /bin/true
  [[ $stderr != *Isolation* && $stderr != *watchdog* ]]
}

# ---- pids: RLIMIT_NPROC, per box -------------------------------------------

@test "no cgroup: --pids 16 holds a fork bomb (RLIMIT_NPROC), counted per box, not per uid" {
  # Box A holds 13 processes (all uid 65534 outside, like box B's).
  "$CHIDORI" launch --quiet --pids 16 --unsafe-disable=cgroup -- /bin/sh -c \
    'i=0; while [ $i -lt 12 ]; do sleep 60 & i=$((i+1)); done; echo ready; wait' >"$T/a.out" 2>"$T/a.err" </dev/null &
  BG_PIDS+=($!)
  for _ in $(seq 500); do grep -q ready "$T/a.out" && break; sleep 0.02; done
  grep -q ready "$T/a.out" || { cat "$T/a.err"; false; }
  # Box B still gets its own 16.
  chid launch --quiet --pids 16 --unsafe-disable=cgroup -- "$P/cg_forkbomb"
  assert_status 3
  [[ $output =~ ^forked\ 1[0-5],\ refused\ [0-9]+$ ]] || { echo "$output"; false; }
  # With neither the cgroup nor the rlimits layer, the same bomb is not held at 16.
  chid launch --unsafe-disable=cgroup,rlimits -- "$P/cg_forkbomb"
  [[ $output =~ forked\ ([0-9]+) ]]
  (( BASH_REMATCH[1] > 16 ))
  assert_stderr_has "pids: none"
}

@test "an explicit --pids nothing can hold fails the run (78); the default is only noted" {
  chid launch --pids 16 --unsafe-disable=cgroup,user -- /bin/true
  assert_status 78
  assert_stderr_has "chidori: sandbox layer unavailable: --pids 16 (no cgroup pids.max: disabled by --unsafe-disable; RLIMIT_NPROC counts per box only in the box's own user namespace"
  CHIDORI_PIDS_MAX=16 chid run --quiet --unsafe-disable=cgroup,rlimits "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 78
  assert_stderr_has "sandbox layer unavailable: --pids 16 (no cgroup pids.max: disabled by --unsafe-disable; the rlimits layer"
  [[ -z $output ]]
  chid launch --unsafe-disable=cgroup,user -- /bin/true
  assert_status 0
  assert_stderr_has "memory watchdog 512M, pids: none"
}

# ---- cpus: no fallback -----------------------------------------------------

@test "an explicit --cpus without a cgroup fails the run (78): nothing else bounds a CPU share" {
  chid launch --cpus 0.5 --unsafe-disable=cgroup -- /bin/true
  assert_status 78
  assert_stderr_has "chidori: sandbox layer unavailable: --cpus 0.5 (no cgroup cpu.max: disabled by --unsafe-disable; nothing else bounds a share of the CPU"
  chid run --quiet --cpus 0.5 --unsafe-disable=cgroup "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 78
  [[ -z $output ]]
  # with the cgroup it applies (the control)
  chid launch --quiet --cpus 0.5 -- /bin/true
  assert_status 0
}

@test "--no-isolate has no box: an explicit box limit fails the run (78), the defaults do not" {
  hello="$BATS_TEST_DIRNAME/../../examples/hello.js"
  chid run --quiet --no-isolate --memory 256M "$hello"
  assert_status 78
  assert_stderr_has "chidori: sandbox layer unavailable: --memory (--no-isolate / CHIDORI_ISOLATE=off runs the engine in this process: no box to hold it"
  [[ -z $output ]]
  CHIDORI_PIDS_MAX=8 CHIDORI_ISOLATE=off chid run --quiet "$hello"
  assert_status 78
  assert_stderr_has "sandbox layer unavailable: --pids (--no-isolate"
  chid run --quiet --no-isolate "$hello"
  assert_status 0
  assert_stdout '{"greeting":"Hello, world!"}'
}

# ---- the engine CPU budget -------------------------------------------------

@test "the default engine CPU budget is in the banner: 60 s, 10 s under --untrusted, as given, or none" {
  hello="$BATS_TEST_DIRNAME/../../examples/hello.js"
  chid run "$hello"
  assert_stderr_has "; cpu budget 60 s)"
  chid run --untrusted "$hello"
  assert_stderr_has "; cpu budget 10 s)"
  CHIDORI_POLICY_PROFILE=untrusted chid run "$hello"
  assert_stderr_has "; cpu budget 10 s)"
  chid run --untrusted --js-deadline 2500 "$hello"
  assert_stderr_has "; cpu budget 2.5 s)"
  chid run --js-deadline 0 "$hello"
  assert_stderr_has "; cpu budget none)"
  CHIDORI_JS_DEADLINE_MS=0 chid run --untrusted "$hello"
  assert_stderr_has "; cpu budget none)"
  assert_status 0
}

@test "--untrusted: a loop of catastrophic regular expressions ends at the default budget (152)" {
  # /(a+)+$/ on 40 a's and a b: YARR gives up on it after ~0.5 s of backtracking
  # and returns false; the loop never ends on its own.  --deadline is only a
  # safety net for the test (a missing budget shows as 124).
  agent re.js <<'JS'
function main() { let n = 0; for (;;) { /(a+)+$/.test("a".repeat(40) + "b"); n++; } }
JS
  chid run --quiet --untrusted --deadline 120000 "$T/re.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (10 s); raise it with --js-deadline MS (0 = none)"
}

@test "a regular expression the engine cannot interrupt is stopped at the CPU budget; RLIMIT_CPU backs it up (152)" {
  # One match that runs for minutes: JavaScriptCore's watchdog does not
  # interrupt YARR; the engine's backstop thread (engine/backstop.c) ends the
  # run 100 ms past the budget, and RLIMIT_CPU stands behind it.
  agent re.js <<'JS'
function main() { return /(.*.*.*.*=.*)x/.test("=".repeat(3000)); }
JS
  chid run --quiet --js-deadline 500 --deadline 60000 "$T/re.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (0.5 s); raise it with --js-deadline MS (0 = none)"
  # No engine budget: the rlimit alone ends it.
  chid run --quiet --js-deadline 0 --cpu-secs 2 --deadline 60000 "$T/re.js"
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (2 s); raise it with --cpu-secs N (0 = none)"
  # Neither: only the wall-clock deadline ends it (so neither result above is an accident).
  chid run --quiet --js-deadline 0 --cpu-secs 0 --deadline 3000 "$T/re.js"
  assert_status 124
}
