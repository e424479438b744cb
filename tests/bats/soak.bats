#!/usr/bin/env bats
# `make soak`'s driver (tests/soak/soak.py, docs/soak.md) in a short run, so it
# cannot rot: the mixed corpus through `chidori run` and `chidori serve` passes,
# and the slope check fails when a leak is simulated or an outcome is wrong.
load helpers

SOAK=$BATS_TEST_DIRNAME/../soak/soak.py

# soak VAR=VALUE...: a 40-run soak, a sample every 8 runs, into $T/soak;
# sets $status, $output (the report), $stderr.
# At 40 runs the allocator and SQLite's cache are still warming up: the RSS and
# state slopes are loosened here (docs/soak.md gives the 10,000-run limits).
# Under AddressSanitizer (make asan) the RSS is not the heap: its quarantine keeps
# what was freed (256 MiB), so the RSS slope is not checked there.
soak() {
  local rss=64
  grep -q __asan_init "$CHIDORI" && rss=100000
  set +e
  env SOAK_RUNS=40 SOAK_SAMPLE=8 SOAK_JOBS=2 SOAK_OUT="$T/soak" CHIDORI_BIN="$CHIDORI" \
    SOAK_LIMITS=server_rss_kib=$rss,state_kib=16 "$@" python3 "$SOAK" >"$T/.out" 2>"$T/.err" </dev/null
  status=$?
  set -e
  stderr=$(cat "$T/.err")
  output=$(cat "$T/soak/report.md" 2>/dev/null || true)
}

# The driver's cgroups (soak-PID in every hierarchy) are gone.
no_cgroups_left() {
  local pid; pid=$(cat "$T/soak/driver.pid")
  [[ -n $pid ]] || return 1
  local left; left=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "soak-$pid" 2>/dev/null)
  [[ -z $left ]] || { echo "left: $left"; return 1; }
}

# report: the report for a failed assertion, its wrong outcomes first (the
# test log shows a failure's first lines)
report() {
  sed -n '/^## Wrong outcomes/,/^## Processes/p' <<<"$output"
  echo "$output"
}

# metric_result METRIC: its pass/FAIL in the report's slope table
metric_result() {
  awk -F' \\| ' -v m="| $1" '$1 == m { print $NF }' <<<"$output" | tr -d ' |'
}

@test "soak: 40 runs of every kind through run and serve pass; the report has each sample, slope and a PNG" {
  soak
  [[ $status == 0 ]] || { echo "exit $status"; echo "$stderr" | tail -30; report; return 1; }
  [[ $stderr == *"soak: PASS: 40 runs in "* ]] || { echo "$stderr" | tail -5; return 1; }
  [[ $output == *"- wrong outcomes: 0"* && $output == *"- result: **PASS**"* ]] || { report; return 1; }
  # every kind ran at least once, through both commands
  local k
  for k in run_ok run_throw run_memory run_deadline run_pids run_seccomp run_nested run_tool run_fetch run_kill \
    s_ok s_throw s_fetch s_nested s_tool s_memory s_approve s_input s_cancel s_delete_running s_bomb s_replay s_stream; do
    [[ $output =~ [[:space:]]$k\ [1-9] ]] || { echo "kind $k did not run: $output"; return 1; }
  done
  # a sample at start, every 8 runs and at the end; a verdict per metric
  [[ $(grep -cE '^\| (0|8|16|24|32|40) \| ' <<<"$output") == 6 ]] || { echo "$output"; return 1; }
  for k in server_rss_kib server_fds sqlite_fds procs zombies chidori_procs cgroup_dirs tmp_files state_kib wal_kib db_rows; do
    [[ $(metric_result "$k") == pass ]] || { echo "$k: $(metric_result "$k")"; report; return 1; }
  done
  # the plot is a PNG
  [[ $(head -c 8 "$T/soak/samples.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]
  # nothing of the soak is left: its cgroups, the server, the fake http server
  no_cgroups_left
}

@test "soak: a temp file leaked per run fails the tmp_files slope; a process leaked per run fails procs" {
  soak SOAK_SIMULATE_LEAK=tmpfile
  [[ $status == 1 ]] || { echo "exit $status"; echo "$stderr" | tail -5; return 1; }
  [[ $(metric_result tmp_files) == FAIL && $(metric_result procs) == pass ]] || { report; return 1; }
  [[ $output == *"- wrong outcomes: 0"* && $output == *"- result: **FAIL**"* ]] || { report; return 1; }
  [[ $stderr == *"soak: FAIL: 40 runs in "*"slopes FAIL"* ]] || { echo "$stderr" | tail -3; return 1; }
  soak SOAK_SIMULATE_LEAK=process
  [[ $status == 1 ]] || { echo "exit $status"; echo "$stderr" | tail -5; return 1; }
  [[ $(metric_result procs) == FAIL && $(metric_result tmp_files) == pass ]] || { report; return 1; }
}

@test "soak: a wrong outcome fails the soak, naming the run, the kind and the output" {
  # chidori as usual, but a throwing agent "succeeds"
  mkdir -p "$T/bin"
  ln -s "$BUILD_DIR/probes" "$T/bin/probes"
  cat >"$T/bin/chidori" <<EOF2
#!/bin/sh
case "\$*" in *throw.js*) echo '"not thrown"'; exit 0;; esac
exec "$CHIDORI" "\$@"
EOF2
  chmod +x "$T/bin/chidori"
  soak CHIDORI_BIN="$T/bin/chidori"
  [[ $status == 1 ]] || { echo "exit $status"; echo "$stderr" | tail -5; return 1; }
  [[ $stderr == *"(run_throw) failed: expected exit 1, stderr with 'chidori: agent error: Error: soak boom "*", got exit 0"* ]] \
    || { echo "$stderr" | tail -20; return 1; }
  [[ $output == *"## Wrong outcomes"* && $output == *'stdout: "not thrown"'* ]] || { echo "$output"; return 1; }
}

@test "soak: a server that does not start fails the soak at once, and leaves nothing behind" {
  mkdir -p "$T/bin"
  ln -s "$BUILD_DIR/probes" "$T/bin/probes"
  printf '#!/bin/sh\ncase "$1" in serve) echo "no serve today" >&2; exit 70;; esac\nexec "%s" "$@"\n' "$CHIDORI" >"$T/bin/chidori"
  chmod +x "$T/bin/chidori"
  soak CHIDORI_BIN="$T/bin/chidori"
  [[ $status == 1 && $stderr == *"soak: chidori serve did not start:"*"no serve today"* ]] || { echo "$status $stderr"; return 1; }
  # its fake HTTP server is stopped and its cgroups removed
  no_cgroups_left
  local fake; fake=$(cat "$T/soak/fake_http.pid")
  [[ -n $fake ]] && ! kill -0 "$fake" 2>/dev/null
}

@test "soak: a malformed SOAK_* value is a usage error (exit 2), naming it" {
  soak SOAK_RUNS=ten
  [[ $status == 2 && $stderr == "soak: SOAK_RUNS='ten': expected an integer from 1 to 10000000" ]] || { echo "$status $stderr"; return 1; }
  soak SOAK_LIMITS=rss=3
  [[ $status == 2 && $stderr == "soak: SOAK_LIMITS: 'rss=3': expected METRIC=N with METRIC one of "* ]] || { echo "$status $stderr"; return 1; }
  soak SOAK_SIMULATE_LEAK=fd
  [[ $status == 2 && $stderr == "soak: SOAK_SIMULATE_LEAK='fd': expected tmpfile or process" ]] || { echo "$status $stderr"; return 1; }
}
