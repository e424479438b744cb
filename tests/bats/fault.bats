#!/usr/bin/env bats
# Faults on the parent's side of `chidori run` (issue 16, item 3; docs/faults.md):
# the state directory's or the journal's filesystem full, the memory database
# locked, damaged or deleted, the journal's folder made read-only, the worker
# killed mid-effect, the parent killed with SIGKILL.  Each case checks what
# the user sees (exit code and message), that nothing committed is lost (the
# journal's lines, the stored keys, `chidori replay` up to the last line) and
# that nothing is left behind (processes, cgroup directories, temporary
# files).  `chidori serve`'s cases are in fault-serve.bats.

load helpers
load fault-helpers

teardown() {
  [[ -n ${L:-} ]] && kill -KILL "$L" 2>/dev/null; wait "${L:-}" 2>/dev/null || true
  [[ -n ${FAKE_PID:-} ]] && kill "$FAKE_PID" 2>/dev/null; wait "${FAKE_PID:-}" 2>/dev/null || true
  rm -rf "$T"
}

big_agent() { # memory.set of 100 values of 20 kB each
  cat >"$T/big.js" <<'JS'
export default async () => {
  const big = "x".repeat(20000);
  for (let i = 0; i < 100; i++) await chidori.memory.set("k" + i, big);
  return "done";
};
JS
}

slow_agent() { # N memory writes, MS apart
  cat >"$T/slow.js" <<'JS'
export default async (input) => {
  for (let i = 0; i < input.n; i++) {
    await chidori.memory.set("k" + i, "v" + i);
    await new Promise((r) => setTimeout(r, input.ms));
  }
  return "done";
};
JS
}

@test "fault: run: the journal's filesystem fills mid-run: exit 70 naming the journal and what to do; whole lines kept, replay reads to their end" {
  need_unshare
  big_agent
  mkdir "$T/j"
  local mode n
  for mode in 1 0; do
    # A 128 KiB tmpfs as the journal's folder, in a mount namespace of its own.
    CHIDORI_RUN_BROKER=$mode unshare -m --propagation private sh -c '
      mount -t tmpfs -o size=128k none "$1" || exit 99
      "$2" run --quiet --state-dir "$3" --journal "$1/j.jsonl" "$4" >"$5/out" 2>"$5/err" </dev/null
      echo $? >"$5/rc"; cp "$1/j.jsonl" "$5/j-$6.jsonl"' sh "$T/j" "$CHIDORI" "$T/st$mode" "$T/big.js" "$T" "$mode"
    [[ $(cat "$T/rc") == 70 ]] || { echo "CHIDORI_RUN_BROKER=$mode: exit $(cat "$T/rc")"; cat "$T/err"; return 1; }
    grep -qF "chidori: write journal '$T/j/j.jsonl': No space left on device; the run was stopped, the journal keeps every line before this one (chidori replay reads it up to there); free space on its filesystem, or give another --journal" "$T/err" \
      || { echo "CHIDORI_RUN_BROKER=$mode:"; cat "$T/err"; return 1; }
    # Whole lines only (the line that did not fit was cut off), then replay
    # answers every call the journal has and stops at the first it has not.
    assert_whole_lines "$T/j-$mode.jsonl"
    n=$(grep -c '"type":"call"' "$T/j-$mode.jsonl")
    (( n >= 2 && n < 100 )) || { echo "$n calls journaled"; return 1; }
    chid replay --quiet "$T/j-$mode.jsonl"
    assert_status 1
    assert_stderr_has "replay reached the end of the journal at call $((n + 1)) (memory.set): the recorded run stopped there; it ended with protocol_error: write journal '$T/j/j.jsonl': No space left on device"
  done
  assert_nothing_left
}

@test "fault: run: the state directory fills during a memory write: the agent's Error names the store and says to free space; the keys stored before, the journal and its replay are kept" {
  need_unshare
  big_agent
  mkdir "$T/st"
  unshare -m --propagation private sh -c '
    mount -t tmpfs -o size=256k none "$1" || exit 99
    "$2" run --quiet --state-dir "$1" --journal "$3/j.jsonl" "$4" >"$3/out" 2>"$3/err" </dev/null
    echo $? >"$3/rc"
    "$2" memory list --state-dir "$1" --ns "$4" >"$3/keys"' sh "$T/st" "$CHIDORI" "$T" "$T/big.js"
  [[ $(cat "$T/rc") == 1 ]] || { echo "exit $(cat "$T/rc")"; cat "$T/err"; return 1; }
  local msg="memory: cannot store a key in '$T/st/memory.sqlite3': database or disk is full; free some disk space"
  grep -qF "chidori: agent error: Error: $msg" "$T/err" || { cat "$T/err"; return 1; }
  # Each write the agent was told succeeded is in the store and in the journal.
  local ok; ok=$(grep -c '"op":"memory.set".*"ok":true' "$T/j.jsonl")
  (( ok >= 2 )) && [[ $(wc -l <"$T/keys") == "$ok" ]] || { echo "$ok writes journaled, keys: $(cat "$T/keys")"; return 1; }
  grep -q '"op":"memory.set".*"ok":false.*database or disk is full' "$T/j.jsonl"
  assert_whole_lines "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "agent error: Error: $msg"
  assert_nothing_left
}

@test "fault: run: the memory database locked by another process: the write fails after the 5 s wait, naming the lock; the run ends 1, nothing left" {
  slow_agent
  chid run --quiet --state-dir "$T/st" "$T/slow.js" --input '{"n":1,"ms":1}'
  assert_status 0
  python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)' "$T/st/memory.sqlite3" >"$T/lock.out" 2>&1 3>&- &
  L=$!
  wait_for "$T/lock.out" locked
  chid run --quiet --state-dir "$T/st" --journal "$T/j.jsonl" "$T/slow.js" --input '{"n":1,"ms":1}'
  assert_status 1
  assert_stderr_has "chidori: agent error: Error: memory: cannot store a key in '$T/st/memory.sqlite3': database is locked; another process held the database locked for over 5 s, try again"
  kill "$L"; wait "$L" 2>/dev/null || true; L=
  # Unlocked, the same run works and the store still has the first run's key.
  chid run --quiet --state-dir "$T/st" "$T/slow.js" --input '{"n":2,"ms":1}'
  assert_status 0
  chid memory list --state-dir "$T/st" --ns "$T/slow.js"
  assert_stdout $'k0\nk1'
  assert_nothing_left
}

@test "fault: run: the memory database overwritten mid-run: the next run refuses it, exit 2, saying to move it aside; the journal of the run replays" {
  slow_agent
  chid run --quiet --state-dir "$T/st" "$T/slow.js" --input '{"n":1,"ms":1}'
  "$CHIDORI" run --quiet --state-dir "$T/st" --journal "$T/j.jsonl" "$T/slow.js" --input '{"n":20,"ms":100}' \
    >"$T/out" 2>"$T/err" </dev/null 3>&- &
  L=$!
  wait_for "$T/j.jsonl" '"key":"k3"'
  python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.write(b"\xde\xad" * 2048)' "$T/st/memory.sqlite3"
  local rc=0; wait "$L" || rc=$?; L=
  # The run's own connection goes on with the pages it holds: what it was
  # told is journaled, the journal is whole and replays.
  [[ $rc == 0 ]] || { echo "exit $rc"; cat "$T/err"; return 1; }
  assert_whole_lines "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '"done"'
  chid run --quiet --state-dir "$T/st" "$T/slow.js" --input '{"n":1,"ms":1}'
  assert_status 2
  assert_stderr_has "memory: cannot switch to WAL journal mode in '$T/st/memory.sqlite3': file is not a database; the file is damaged or not a chidori memory database, move it aside to start empty"
  mv "$T/st/memory.sqlite3" "$T/damaged.sqlite3"
  rm -f "$T/st/memory.sqlite3-wal" "$T/st/memory.sqlite3-shm"
  chid run --quiet --state-dir "$T/st" "$T/slow.js" --input '{"n":1,"ms":1}'
  assert_status 0
  assert_nothing_left
}

@test "fault: run: the memory database deleted mid-run: the next memory call fails naming it, instead of being acknowledged and lost" {
  slow_agent
  "$CHIDORI" run --quiet --state-dir "$T/st" --journal "$T/j.jsonl" "$T/slow.js" --input '{"n":40,"ms":100}' \
    >"$T/out" 2>"$T/err" </dev/null 3>&- &
  L=$!
  wait_for "$T/j.jsonl" '"key":"k3"'
  rm -f "$T/st/memory.sqlite3" "$T/st/memory.sqlite3-wal" "$T/st/memory.sqlite3-shm"
  local rc=0; wait "$L" || rc=$?; L=
  [[ $rc == 1 ]] || { echo "exit $rc"; cat "$T/err"; return 1; }
  grep -qF "chidori: agent error: Error: memory: the database '$T/st/memory.sqlite3' was deleted or replaced while this run had it open; nothing was read or stored; restore the file, or run again to start a new store" "$T/err" \
    || { cat "$T/err"; return 1; }
  grep -q '"op":"memory.set".*"ok":false.*was deleted or replaced' "$T/j.jsonl"
  assert_whole_lines "$T/j.jsonl"
  assert_nothing_left
}

@test "fault: run: the journal's folder made read-only mid-run (bind mount): the open journal keeps every line and replays; read-only at the start is refused, exit 2" {
  need_unshare
  slow_agent
  mkdir "$T/jd"
  unshare -m --propagation private sh -c '
    mount --bind "$1" "$1" || exit 99
    "$2" run --quiet --state-dir "$3/st" --journal "$1/j.jsonl" "$3/slow.js" --input "{\"n\":12,\"ms\":100}" \
      >"$3/out" 2>"$3/err" </dev/null &
    p=$!
    while ! grep -q "\"key\":\"k3\"" "$1/j.jsonl" 2>/dev/null; do sleep 0.05; done
    mount -o bind,remount,ro "$1" 2>"$3/remount.err" || mount --bind -o ro "$1" "$1" || exit 98
    touch "$1/probe" 2>"$3/probe.err" && exit 97
    wait $p; echo $? >"$3/rc"
    "$2" run --quiet --journal "$1/j2.jsonl" "$3/slow.js" --input "{\"n\":1,\"ms\":1}" >"$3/out2" 2>"$3/err2" </dev/null
    echo $? >"$3/rc2"' sh "$T/jd" "$CHIDORI" "$T"
  # The probe proves the folder was read-only.
  grep -q "Read-only file system" "$T/probe.err"
  [[ $(cat "$T/rc") == 0 ]] || { echo "exit $(cat "$T/rc")"; cat "$T/err"; return 1; }
  [[ $(cat "$T/out") == '"done"' ]]
  assert_whole_lines "$T/jd/j.jsonl"
  [[ $(grep -c '"op":"memory.set"' "$T/jd/j.jsonl") == 12 ]]
  tail -1 "$T/jd/j.jsonl" | grep -q '"type":"end","outcome":"ok"'
  chid replay --quiet "$T/jd/j.jsonl"
  assert_status 0
  assert_stdout '"done"'
  [[ $(cat "$T/rc2") == 2 ]] || { echo "exit $(cat "$T/rc2")"; cat "$T/err2"; return 1; }
  grep -qF "chidori: --journal: open journal '$T/jd/j2.jsonl' for writing: Read-only file system" "$T/err2"
  assert_nothing_left
}

@test "fault: run: the worker killed with SIGKILL while a fetch is in flight: exit 137 named; the journal ends with the call unanswered; replay stops where it stopped" {
  start_fake_http
  cat >"$T/fetch.js" <<JS
export default async () => {
  await chidori.memory.set("before", 1);
  return await (await fetch("http://127.0.0.1:$FP/delay?ms=30000")).text();
};
JS
  local mode w rc
  for mode in 1 0; do
    : >"$T/fake.log"
    SEEN_PIDS=()
    CHIDORI_RUN_BROKER=$mode "$CHIDORI" run --quiet --allow-host 127.0.0.1 --state-dir "$T/st" --journal "$T/j$mode.jsonl" \
      "$T/fetch.js" >"$T/out" 2>"$T/err" </dev/null 3>&- &
    L=$!
    local m=$L
    wait_for_connection "$FP"
    see_tree "$L"
    w=$(pid_in_tree "$L" chidori-worker) || { echo "$w"; for p in $(tree_pids "$L"); do echo "$p $(cat /proc/$p/comm)"; done; cat "$T/err"; return 1; }
    kill -KILL "$w"
    rc=0; wait "$L" || rc=$?; L=
    [[ $rc == 137 ]] || { echo "CHIDORI_RUN_BROKER=$mode: exit $rc"; cat "$T/err"; return 1; }
    grep -qF "chidori: engine crashed (signal SIGKILL)" "$T/err"
    assert_whole_lines "$T/j$mode.jsonl"
    grep -q '"type":"call","seq":1,"id":1,"op":"memory.set"' "$T/j$mode.jsonl"
    grep -q '"type":"unanswered","id":2,"op":"http"' "$T/j$mode.jsonl"
    tail -1 "$T/j$mode.jsonl" | grep -q '"type":"end","outcome":"worker_exited","exit":137'
    # Replay answers call 1, asks call 2 (performing nothing) and ends
    # there instead of waiting for ever for an answer the journal lacks.
    timeout -s KILL 60 "$CHIDORI" replay --quiet "$T/j$mode.jsonl" >"$T/rout" 2>"$T/rerr" </dev/null 3>&- && rc=0 || rc=$?
    [[ $rc == 1 ]] || { echo "replay: exit $rc"; cat "$T/rerr"; return 1; }
    grep -qF "chidori: replay reached the end of the journal at call 2 (http), in flight when the recorded run stopped; its worker went away (exit 137)" "$T/rerr" \
      || { cat "$T/rerr"; return 1; }
    assert_nothing_left "$m"
  done
}

@test "fault: run: the parent killed with SIGKILL mid-run: broker and worker go; the next start removes its cgroup directory and temporary folder; the journal replays to its last line" {
  slow_agent
  local cg rc
  # An agent read from stdin: the monitor keeps it in a temporary folder.
  "$CHIDORI" run --quiet --state-dir "$T/st" --journal "$T/j.jsonl" --input '{"n":100,"ms":100}' - \
    <"$T/slow.js" >"$T/out" 2>"$T/err" 3>&- &
  L=$!
  wait_for "$T/j.jsonl" '"key":"k3"'
  see_tree "$L"
  (( ${#SEEN_PIDS[@]} >= 3 )) || { echo "processes: ${SEEN_PIDS[*]}"; return 1; }
  local dead=$L
  [[ -n $(cg_of "$dead") ]] || { echo "no cgroup directory of $dead under $(cg_parent)"; return 1; }
  [[ -n $(ls -A "$T/tmp") ]]
  kill -KILL "$L"
  rc=0; wait "$L" || rc=$?; L=
  [[ $rc == 137 ]]
  # What the SIGKILL left: the killed monitor's cgroup directory and its
  # folder of the agent read from stdin.
  [[ -n $(cg_of "$dead") && -n $(ls -A "$T/tmp") ]]
  # The next start of chidori removes both (their owner is gone).
  echo 'export default () => "again"' >"$T/again.js"
  chid run --quiet --state-dir "$T/st" "$T/again.js"
  assert_status 0
  assert_stdout '"again"'
  # The journal of the killed run has no end line: replay answers what it
  # has and says where it stopped.
  assert_whole_lines "$T/j.jsonl"
  ! grep -q '"type":"end"' "$T/j.jsonl"
  local n; n=$(grep -c '"type":"call"' "$T/j.jsonl")
  chid replay --quiet --agent "$T/slow.js" "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "replay reached the end of the journal at call $((n + 1)) ("
  assert_stderr_has "): the recorded run stopped there; the journal has no end line (its writer was stopped before it could write one)"
  assert_nothing_left "$dead"
}
