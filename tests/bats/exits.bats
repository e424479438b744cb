#!/usr/bin/env bats
# Exit statuses: README.md's "Exit status" table, row by row.  Most rows are
# provoked by tests elsewhere (named in ROWS below, not repeated here); this
# file adds the rows no other test provoked, and checks that the table and the
# list stay in step: a new row needs a test.

load helpers

# One line per row of the table, in its order: the code cell, then the tests
# that provoke the row and check its code and message (FILE: NAME, ' || '
# between several).
ROWS=$(cat <<'EOF'
0 | run.bats: examples/hello.js prints its greeting and the banner
1 | run.bats: a thrown error exits 1 with name and message || usage.bats: a result over 64 MiB: 'result too large (N MiB, limit 64 MiB)', exit 1, not a protocol error || run.bats: an agent whose promise never settles is reported, not hung
1 | journal.bats: replay divergence names the call and both ops || bounds.bats: journal limit: the run stops at the first call it cannot record, the journal closed with a note and an end line
1 | memory.bats: memory get/delete of a missing key exit 1; delete and clear remove; clear needs --yes
2 | usage.bats: unknown options name the nearest real one, in every command || usage.bats: --pids below what the engine needs is a usage error up front, not SIGILL
70 | failures.bats: worker exits before done: 70
78 | limits.bats: an explicit --cpus without a cgroup fails the run (78): nothing else bounds a CPU share
124 | failures.bats: a wedged worker is killed at the deadline: 124 || sandbox.bats: limits: --deadline 500 ends a busy loop: 124, deadline exceeded (500 ms)
127 | exits.bats: 127: launch of a program that does not exist
129,130,143 | endings.bats: SIGINT, SIGTERM and SIGHUP with host calls in flight: always 130, 143, 129 || exits.bats: 129, 130, 143: SIGHUP, SIGINT and SIGTERM to launch end the box, named
132 | exits.bats: 132: an engine that stops on a trap instruction (SIGILL) is a crash, named
134 | failures.bats: engine crash by SIGABRT: 134
137 | cgroup.bats: a JS memory bomb is killed at the ceiling: exact message, exit 137, host fine || cgroup.bats: a C program that touches memory beyond the ceiling is killed under launch
137 | exits.bats: 137: a worker killed with SIGKILL from outside is named || exits.bats: 137: a worker killed after the process limit refused it a thread says so
139 | failures.bats: engine crash by SIGSEGV: 139
152 | failures.bats: the engine CPU limit ends a busy loop: 152 || sandbox.bats: limits: run --cpu-secs 1 ends a busy agent: 152, CPU limit exceeded (1 s) || sandbox.bats: limits: --cpu-secs 1 ends a busy loop: 152, CPU limit exceeded (1 s)
159 | endings.bats: blocked syscall while the parent writes a large answer: always 159 || launch.bats: --seccomp-errno: the fixed prefix still ends the box and is named (exit 159)
1-255 | surface.bats: surface: process.exit(n) and process.exitCode: a non-zero code ends the run with that exit status, naming it
any | exits.bats: launch passes the program's exit status through; a signal that kills it is 128 + N, named
EOF
)

@test "README's exit-status table: every row is listed here, and each names tests that exist" {
  readme=$BATS_TEST_DIRNAME/../../README.md
  got=$(awk '/^## Exit status/ { t = 1; next } /^## / { t = 0 }
             t && /^\| [0-9a-z]/ && !/^\| code / { split($0, c, "|"); gsub(/ /, "", c[2]); print c[2] }' "$readme")
  want=$(sed 's/ *|.*//' <<<"$ROWS")
  [[ -n $got && $got == "$want" ]] || { echo "README rows and ROWS differ:"; diff <(echo "$want") <(echo "$got"); return 1; }
  while IFS= read -r row; do
    refs=${row#* | }
    while [[ -n $refs ]]; do
      ref=${refs%% || *}
      [[ $refs == *" || "* ]] && refs=${refs#* || } || refs=
      file=${ref%%: *} name=${ref#*: }
      grep -qF "@test \"$name\"" "$BATS_TEST_DIRNAME/$file" || { echo "no test \"$name\" in $file"; return 1; }
    done
  done <<<"$ROWS"
}

# The box is a child of the launcher (the worker, or launch's program); the
# launcher may have other, short-lived children first.
box_pid() { # LAUNCHER_PID TEXT -> the pid of its child (or, under chidori-privhelper, the
  local i c p kids      # supervisor's child) whose command line has TEXT, waiting up to 30 s
  for ((i = 0; i < 600; i++)); do
    kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
    for p in $kids; do
      [[ $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null) == chidori-monitor* ]] &&
        kids="$kids $(cat /proc/"$p"/task/*/children 2>/dev/null)"
    done
    for c in $kids; do
      [[ $(tr '\0' ' ' </proc/"$c"/cmdline 2>/dev/null) == *"$2"* ]] && { echo "$c"; return 0; }
    done
    sleep 0.05
  done
  echo "no child of $1 runs '$2'"; return 1
}

wait_for() { # FILE TEXT: until FILE contains TEXT, up to 30 s
  local i
  for ((i = 0; i < 600; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "no '$2' in $1 after 30 s:"; cat "$1"; return 1
}

@test "127: launch of a program that does not exist" {
  chid launch --quiet -- no-such-program-here
  assert_status 127
  assert_stderr_has "chidori: launch: program 'no-such-program-here' not found"
  chid launch --quiet -- "$T/missing/prog"
  assert_status 127
  assert_stderr_has "chidori: launch: program '$T/missing/prog' not found"
}

@test "launch passes the program's exit status through; a signal that kills it is 128 + N, named" {
  for code in 0 3 42 124; do
    chid launch --quiet -- /bin/sh -c "exit $code"
    assert_status "$code"
    [[ -z $stderr ]] || { echo "stderr: $stderr"; return 1; }
  done
  # A fault the kernel forces on the box's pid 1 (a self-sent signal would be
  # ignored there): 128 + SIGSEGV, and chidori names it.
  chid launch --quiet -- /usr/bin/python3 -c 'import ctypes; ctypes.string_at(1)'
  assert_status 139
  assert_stderr_has "chidori: program killed by SIGSEGV"
}

@test "129, 130, 143: SIGHUP, SIGINT and SIGTERM to launch end the box, named" {
  for s in HUP:1:129 INT:2:130 TERM:15:143; do
    IFS=: read -r sig num code <<<"$s"
    "$CHIDORI" launch --quiet -- /bin/sleep 60 >/dev/null 2>"$T/err" 3>&- </dev/null & L=$!
    box_pid "$L" /bin/sleep >/dev/null
    kill -"$sig" "$L"
    set +e; wait "$L"; st=$?; set -e
    [[ $st == "$code" ]] || { echo "SIG$sig: exit $st, expected $code"; cat "$T/err"; return 1; }
    grep -qF "chidori: interrupted by SIG$sig: the box was stopped" "$T/err" || { cat "$T/err"; return 1; }
  done
}

@test "132: an engine that stops on a trap instruction (SIGILL) is a crash, named" {
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker trap) chid run --quiet --json "$T/a.js"
  assert_status 132
  assert_stderr_has "chidori: engine crashed (signal SIGILL)"
  [[ $output == *'"exit":132'* ]] || { echo "$output"; return 1; }
}

@test "137: a worker killed with SIGKILL from outside is named" {
  agent spin.js <<<'function main() { for (;;) {} }'
  "$CHIDORI" run --quiet "$T/spin.js" >"$T/out" 2>"$T/err" 3>&- </dev/null & L=$!
  w=$(box_pid "$L" chidori-worker)
  kill -KILL "$w"
  set +e; wait "$L"; st=$?; set -e
  [[ $st == 137 ]] || { echo "exit $st"; cat "$T/err"; return 1; }
  grep -qF "chidori: engine crashed (signal SIGKILL)" "$T/err" || { cat "$T/err"; return 1; }
}

@test "137: a worker killed after the process limit refused it a thread says so" {
  agent a.js <<<'function main() {}'
  CHIDORI_WORKER=$(bad_worker threads-after-ready) "$CHIDORI" run --quiet --pids 12 "$T/a.js" \
    >"$T/out" 2>"$T/err" 3>&- </dev/null & L=$!
  w=$(box_pid "$L" bad-threads-after-ready)
  wait_for "$T/err" "threads, then refused"
  kill -KILL "$w"
  set +e; wait "$L"; st=$?; set -e
  [[ $st == 137 ]] || { echo "exit $st"; cat "$T/err"; return 1; }
  grep -qF "chidori: process limit reached (the engine could not start a thread)" "$T/err" || { cat "$T/err"; return 1; }
}
