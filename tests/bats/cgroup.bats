#!/usr/bin/env bats
# Hard resource ceilings on this host (cgroup v1 for memory and pids here; the
# same assertions run against cgroup v2 in the qemu guest, tests/vm/).
load helpers

P="${CHIDORI_BUILD:-$BATS_TEST_DIRNAME/../../build}/probes"

# Every chidori cgroup directory below the hierarchies we may use.
chidori_cgroups() {
  local d
  for h in memory pids cpu unified; do
    d=/sys/fs/cgroup/$h$(awk -F: -v h="$h" '($2==h)||(h=="unified"&&$2==""){print $3}' /proc/self/cgroup | head -n1)
    [[ -d $d ]] && find "$d" -maxdepth 3 -type d -name 'chidori-*' 2>/dev/null
  done
  return 0
}

@test "a JS memory bomb is killed at the ceiling: exact message, exit 137, host fine" {
  agent bomb.js <<'JS'
function main() {
  const keep = new Map();
  for (let i = 0; ; i++) { keep.set(i, new Array(100000).fill(i)); keep.set("s" + i, "x".repeat(100000) + i); }
}
JS
  chid run --quiet --memory 128M "$T/bomb.js"
  assert_status 137
  assert_stderr_has "chidori: memory limit exceeded (limit 128 MiB)"
  # the host is healthy: the next run works
  chid run --quiet "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 0
}

@test "CHIDORI_JS_MEM_CAP_MB sets the ceiling in MiB" {
  agent bomb.js <<'JS'
function main() { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }
JS
  CHIDORI_JS_MEM_CAP_MB=96 chid run "$T/bomb.js"
  assert_status 137
  assert_stderr_has "memory limit exceeded (limit 96 MiB)"
  assert_stderr_has "memory.limit_in_bytes=96M"
}

@test "peak memory is reported in --json and the journal, never above the limit" {
  agent bomb.js <<'JS'
function main() { const a = []; for (;;) a.push("y".repeat(1 << 20) + a.length); }
JS
  chid run --quiet --json --memory 100M --journal "$T/j.jsonl" "$T/bomb.js"
  assert_status 137
  peak=$(grep -o '"peak_memory_bytes":[0-9]*' <<<"$output" | cut -d: -f2)
  limit=$(grep -o '"memory_limit_bytes":[0-9]*' <<<"$output" | cut -d: -f2)
  [[ -n $peak && -n $limit ]]
  (( limit == 100 * 1024 * 1024 ))
  (( peak <= limit ))
  tail -n1 "$T/j.jsonl" | grep -q '"peak_memory_bytes":'
  # a normal run reports its (small) peak too
  chid run --quiet --json "$BATS_TEST_DIRNAME/../../examples/hello.js"
  [[ $output == *'"peak_memory_bytes":'* ]]
}

@test "a C program that touches memory beyond the ceiling is killed under launch" {
  chid launch --quiet --memory 64M -- "$P/cg_hog" 200
  assert_status 137
  assert_stderr_has "memory limit exceeded (limit 64 MiB)"
  [[ $output != *survived* ]]
}

@test "a program that stays below the ceiling is not killed (no false positive)" {
  chid launch --quiet --memory 64M -- "$P/cg_hog" 32
  assert_status 0
  assert_stdout "survived 32 MiB"
}

@test "the same allocation succeeds without a memory ceiling (the ceiling is what stopped it)" {
  # (--unsafe-disable=cgroup alone no longer lifts it: the watchdog takes
  # over, tests/bats/limits.bats)
  CHIDORI_JS_MEM_CAP_MB=0 chid launch --quiet -- "$P/cg_hog" 200
  assert_status 0
  assert_stdout "survived 200 MiB"
}

@test "a fork bomb is stopped by pids.max and the launcher reports it" {
  chid launch --quiet --pids 16 -- "$P/cg_forkbomb"
  assert_status 3
  [[ $output =~ ^forked\ 1[0-5],\ refused\ [0-9]+$ ]]
  assert_stderr_has "process limit reached (pids.max 16)"
}

@test "without the cgroup and rlimits layers the fork bomb is not bounded by 16" {
  # (without the cgroup alone, RLIMIT_NPROC holds --pids: tests/bats/limits.bats)
  chid launch --quiet --unsafe-disable=cgroup,rlimits -- "$P/cg_forkbomb"
  [[ $output =~ forked\ ([0-9]+) ]]
  (( BASH_REMATCH[1] > 16 ))
}

@test "--cpus bounds CPU time" {
  chid launch --quiet --cpus 0.25 -- "$P/cg_spin" 1000
  assert_status 0
  limited=$(awk '{print $2}' <<<"$output")
  (( limited < 450 ))
  # without the limit the same spin gets clearly more (relative: the host may be busy)
  chid launch --quiet -- "$P/cg_spin" 1000
  free=$(awk '{print $2}' <<<"$output")
  (( free * 2 > limited * 3 ))
}

@test "a deadline kill leaves no process of the run alive" {
  marker="chidori-deadline-$$-$RANDOM"
  chid launch --quiet --deadline 400 -- "$P/cg_sleepers" "$marker"
  assert_status 124
  sleep 0.2
  ! pgrep -f "$marker"
}

@test "the banner names the cgroup version and the limits" {
  chid launch --memory 256M --pids 32 -- /bin/true
  assert_status 0
  assert_stderr_has "memory.limit_in_bytes=256M pids.max=32"
}

@test "bad ceiling values are usage errors" {
  chid launch --memory lots -- /bin/true
  assert_status 2
  chid launch --pids 0 -- /bin/true
  assert_status 2
  chid launch --cpus -1 -- /bin/true
  assert_status 2
  CHIDORI_PIDS_MAX=x chid launch -- /bin/true
  assert_status 2
}

@test "a cgroup parent that does not exist is a configuration error, not a silent drop" {
  chid launch --cgroup-parent /no/such/cgroup -- /bin/true
  assert_status 2
}

@test "200 runs, killed ones included, leave no cgroup directory behind" {
  # Each launcher's directory carries its pid: look for ours only, so runs
  # of other launchers on the same host cannot confuse the count.
  pids=()
  for i in $(seq 1 190); do
    "$CHIDORI" launch --quiet -- /bin/true & pids+=($!); wait $! || return 1
  done
  for i in $(seq 1 10); do
    "$CHIDORI" launch --quiet --memory 32M -- "$P/cg_hog" 100 >/dev/null 2>&1 & pids+=($!); wait $! || true
  done
  (( ${#pids[@]} == 200 ))
  left=$(chidori_cgroups | grep -E "/chidori-($(IFS='|'; echo "${pids[*]}"))-" || true)
  [[ -z $left ]] || { echo "left behind: $left"; return 1; }
  # and the check itself sees a live launcher's directory
  "$CHIDORI" launch --quiet -- /bin/sleep 2 & live=$!
  sleep 0.5
  chidori_cgroups | grep -q "/chidori-$live-"
  wait $live
}

@test "SIGTERM or SIGINT to the launcher stops the box and removes its cgroups" {
  for sig in TERM INT HUP; do
    "$CHIDORI" launch --quiet -- /bin/sleep 30 2>"$T/err" & L=$!
    sleep 1
    kill -$sig $L
    set +e; wait $L; st=$?; set -e
    (( st > 128 ))
    grep -q "interrupted by SIG$sig: the box was stopped" "$T/err"
    [[ -z $(find /sys/fs/cgroup/pids /sys/fs/cgroup/memory /sys/fs/cgroup/unified -maxdepth 5 -type d -name "chidori-$L-*" 2>/dev/null) ]]
  done
  agent spin.js <<'JS'
function main() { for (;;) {} }
JS
  "$CHIDORI" run --quiet "$T/spin.js" 2>"$T/err" & L=$!
  sleep 1
  kill -TERM $L
  set +e; wait $L; st=$?; set -e
  (( st == 143 ))
  grep -q "chidori: interrupted by SIGTERM" "$T/err"
  [[ -z $(find /sys/fs/cgroup/pids /sys/fs/cgroup/memory -maxdepth 5 -type d -name "chidori-$L-*" 2>/dev/null) ]]
}
