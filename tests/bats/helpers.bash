# Shared setup for the end-to-end tests: every test gets its own temp dir and
# state dir, and runs the built binary exactly as a user would.
CHIDORI=${CHIDORI_BIN:-$BATS_TEST_DIRNAME/../../build/chidori}
BUILD_DIR=${CHIDORI_BUILD:-$BATS_TEST_DIRNAME/../../build}

setup() {
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER
}

teardown() {
  rm -rf "$T"
}

# agent NAME <<'JS' ... JS   writes $T/NAME from stdin
agent() {
  cat >"$T/$1"
}

# Run chidori quietly, keeping stdout and stderr apart:
#   $status, $output (stdout), $stderr
chid() {
  local out err
  out="$T/.stdout" err="$T/.stderr"
  set +e
  "$CHIDORI" "$@" >"$out" 2>"$err" </dev/null
  status=$?
  set -e
  output=$(cat "$out")
  stderr=$(cat "$err")
}

assert_status() {
  if [[ $status -ne $1 ]]; then
    echo "expected exit $1, got $status"; echo "stdout: $output"; echo "stderr: $stderr"; return 1
  fi
}

assert_stdout() {
  if [[ "$output" != "$1" ]]; then
    echo "expected stdout: $1"; echo "got stdout:      $output"; echo "stderr: $stderr"; return 1
  fi
}

assert_stderr_has() {
  if [[ "$stderr" != *"$1"* ]]; then
    echo "expected stderr to contain: $1"; echo "got stderr: $stderr"; return 1
  fi
}

bad_worker() { # mode -> path of a symlink selecting that misbehaviour
  ln -sf "$BUILD_DIR/probes/bad_worker" "$T/bad-$1"
  echo "$T/bad-$1"
}

# sup_of PID: the process whose children are the run's boxes and broker:
# PID itself, or under chidori-privhelper (decision 163) its supervisor
# child, chidori-monitor.
sup_of() {
  local c
  if [[ $(cat "/proc/$1/comm" 2>/dev/null) == chidori-privhel* ]]; then
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
      [[ $(cat "/proc/$c/comm" 2>/dev/null) == chidori-monitor ]] && { echo "$c"; return 0; }
    done
  fi
  echo "$1"
}
