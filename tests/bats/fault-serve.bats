#!/usr/bin/env bats
# Faults on the parent's side of `chidori serve` (issue 16, item 3;
# docs/faults.md): the state directory full, serve.db locked, damaged or
# deleted, the state directory made read-only, a session's worker killed
# mid-effect, the server killed with SIGKILL and started again.  What the
# client sees (HTTP status, error code and message), that no committed
# session or journal line is lost (across a restart), and that nothing is
# left behind.  `chidori run`'s cases are in fault.bats.

load helpers
load serve-helpers
load fault-helpers

teardown() {
  stop_server
  [[ -n ${NS_PID:-} ]] && { kill -KILL "$NS_PID" 2>/dev/null; wait "$NS_PID" 2>/dev/null || true; }
  [[ -n ${L:-} ]] && { kill -KILL "$L" 2>/dev/null; wait "$L" 2>/dev/null || true; }
  [[ -n ${FAKE_PID:-} ]] && { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null || true; }
  rm -rf "$T"
}

# start_server_ns SETUP ARGS...: `chidori serve $T/agent.js ARGS` in a
# private mount namespace after the shell command SETUP ($1 in it is
# $T/st); when the server ends the namespace's $T/st is copied to
# $T/saved (a tmpfs there goes with the namespace).  SERVER_PID is the
# server, NS_PID the shell around it.
start_server_ns() {
  rm -f "$T/server.out" "$T/server.err" "$T/server.pid"
  mkdir -p "$T/st"
  unshare -m --propagation private sh -c "$1"'
    c=$0 st=$1 ag=$2 t=$3; shift 3
    "$c" serve "$ag" "$@" >"$t/server.out" 2>"$t/server.err" </dev/null &
    echo $! >"$t/server.pid"; wait $!; echo $? >"$t/server.rc"
    rm -rf "$t/saved"; cp -a "$st" "$t/saved"' "$CHIDORI" "$T/st" "$T/agent.js" "$T" "${@:2}" 3>&- &
  NS_PID=$!
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -s $T/server.pid ]] && grep -q '^Listening: ' "$T/server.err" 2>/dev/null && break
    if ! kill -0 "$NS_PID" 2>/dev/null; then echo "server exited early:"; cat "$T/server.err"; return 1; fi
    sleep 0.05
  done
  SERVER_PID=$(cat "$T/server.pid")
  URL=$(sed -n 's/^Listening: \(http:.*\)$/\1/p' "$T/server.err")
  [[ -n $URL ]] || { echo "no Listening: line"; cat "$T/server.err"; return 1; }
}

# Stops the server started by start_server_ns and waits for the copy.
stop_server_ns() {
  stop_server
  wait "$NS_PID" 2>/dev/null || true
  NS_PID=
}

slow_agent() { # input {n, ms}: n memory writes, ms apart
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  for (let i = 0; i < input.n; i++) {
    await chidori.memory.set("k" + i, "v" + i);
    await new Promise((r) => setTimeout(r, input.ms));
  }
  return "done";
};
JS
}

@test "fault: serve: the state directory fills: new sessions are 503 naming serve.db; the session cut short is kept and resumes to its end at the next start" {
  need_unshare
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  const big = "x".repeat(20000);
  for (let i = 0; i < (input ? input.n : 100); i++) await chidori.memory.set("k" + i, big);
  return "done";
};
JS
  start_server_ns 'mount -t tmpfs -o size=1m none "$1" || exit 99' --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $id == s* ]] || { echo "$body"; return 1; }
  # Its ending could not be recorded: the server says so on stderr, and the
  # store keeps it running (resumed at the next start).
  wait_for "$T/server.err" "chidori: serve: session $id: $T/st/serve.db: update the session: the disk is full: No space left on device"
  req -X POST -d '{"input": {"n": 1}}' "$URL/sessions"
  assert_code 503
  assert_error_code unavailable
  assert_body_has "the state database cannot be written: $T/st/serve.db: record the session: the disk is full: No space left on device; free space and retry"
  see_tree "$SERVER_PID"
  stop_server_ns
  # Started again on a copy of that state directory with room: the session
  # resumes by replay of what its journal committed and ends.
  start_server --listen 127.0.0.1:0 --state-dir "$T/saved"
  grep -q "1 running session(s) resumed by replay" "$T/server.err" || { cat "$T/server.err"; return 1; }
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == done ]]
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"op":"memory.set"' <<<"$body") -ge 100 ]]
  see_tree "$SERVER_PID"
  stop_server
  assert_nothing_left
}

@test "fault: serve: the state directory fills, then has room again: /readyz 503 naming the disk, then 200; the session cut short resumes by replay without a restart" {
  need_unshare
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  const big = "x".repeat(20000);
  for (let i = 0; i < input.n; i++) await chidori.memory.set("k" + i, big);
  return "done " + input.n;
};
JS
  # 4 MiB, 3 of them taken by a file the test removes later
  start_server_ns 'mount -t tmpfs -o size=4m none "$1" && head -c 3M /dev/zero >"$1/filler" || exit 99' \
    --listen 127.0.0.1:0 --state-dir "$T/st"
  req "$URL/readyz"
  assert_code 200
  req -X POST -d '{"input": {"n": 30}, "wait": true}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $id == s* ]] || { echo "$body"; return 1; }
  wait_for "$T/server.err" "chidori: serve: session $id: $T/st/serve.db: update the session: the disk is full: No space left on device"
  req "$URL/readyz"
  assert_code 503
  assert_body_has "the disk is full ("
  assert_body_has "KiB free, at least 256 KiB needed); free space"
  # Room again (the file is in the server's mount namespace): within the
  # sweep's second the store is writable, the session resumes by replay.
  rm "/proc/$SERVER_PID/root$T/st/filler"
  wait_for "$T/server.err" "chidori: serve: the store answers again: 1 session(s) resumed by replay"
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == "done 30" ]] || { echo "$body"; return 1; }
  req "$URL/readyz"
  assert_code 200
  req -X POST -d '{"input": {"n": 1}}' "$URL/sessions"
  assert_code 201
  see_tree "$SERVER_PID"
  stop_server_ns
  assert_nothing_left
}

@test "fault: serve: serve.db locked by another process: 503 naming the lock, then served again once it lets go" {
  echo 'export default async (input) => ({ echo: input })' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": 1}' "$URL/sessions"
  assert_code 201
  local first; first=$(jq -r .id <<<"$body")
  python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)' "$T/st/serve.db" >"$T/lock.out" 2>&1 3>&- &
  L=$!
  wait_for "$T/lock.out" locked
  req -X POST -d '{"input": 2}' "$URL/sessions"
  assert_code 503
  assert_error_code unavailable
  assert_body_has "the state database is locked by another process: $T/st/serve.db: write: database is locked; retry when it lets go"
  kill "$L"; wait "$L" 2>/dev/null || true; L=
  req -X POST -d '{"input": 3}' "$URL/sessions"
  assert_code 201
  [[ $(jq -c .result <<<"$body") == '{"echo":3}' ]]
  req "$URL/sessions/$first"
  [[ $(jq -c .result <<<"$body") == '{"echo":1}' ]]
  see_tree "$SERVER_PID"
  stop_server
  assert_nothing_left
}

@test "fault: serve: serve.db deleted under the running server: written again from its open copy; no session or journal line lost at the next start" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": {"n": 1, "ms": 1}}' "$URL/sessions"
  local before; before=$(jq -r .id <<<"$body")
  req -X POST -d '{"input": {"n": 20, "ms": 100}, "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  rm -f "$T/st/serve.db" "$T/st/serve.db-wal" "$T/st/serve.db-shm"
  wait_status "$id" done
  grep -qF "chidori: serve: the state database $T/st/serve.db was deleted while the server had it open; it was written again from the server's open copy (nothing committed was lost)" "$T/server.err" \
    || { cat "$T/server.err"; return 1; }
  [[ -f $T/st/serve.db ]]
  req -X POST -d '{"input": {"n": 1, "ms": 1}}' "$URL/sessions"
  local after; after=$(jq -r .id <<<"$body")
  see_tree "$SERVER_PID"
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  local s
  for s in "$before" "$id" "$after"; do
    req "$URL/sessions/$s"
    assert_code 200
    [[ $(jq -r .status <<<"$body") == done ]] || { echo "$s: $body"; return 1; }
  done
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"op":"memory.set"' <<<"$body") == 20 ]]
  tail -1 <<<"$body" | grep -q '"type":"end","outcome":"ok"'
  see_tree "$SERVER_PID"
  stop_server
  assert_nothing_left
}

@test "fault: serve: serve.db damaged between two starts: the next start refuses it, exit 70, naming the file and what to do" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": {"n": 1, "ms": 1}}' "$URL/sessions"
  assert_code 201
  see_tree "$SERVER_PID"
  stop_server
  # The running server's own connection rewrites what it holds at its
  # checkpoint; damage that outlives it is found at the next start.
  python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.write(b"\xde\xad" * 2048)' "$T/st/serve.db"
  set +e
  timeout -s KILL 60 "$CHIDORI" serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" >"$T/out" 2>"$T/err" </dev/null 3>&-
  status=$?
  set -e
  stderr=$(cat "$T/err")
  assert_status 70
  assert_stderr_has "the state database $T/st/serve.db is damaged or not a database"
  assert_stderr_has "move it away to start afresh, or restore it from a backup"
  assert_nothing_left
}

@test "fault: serve: the state directory made read-only mid-session (bind mount): the open database goes on; the session and its journal are kept" {
  need_unshare
  slow_agent
  start_server_ns 'mount --bind "$1" "$1" || exit 99' --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": {"n": 12, "ms": 100}, "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  # Read-only from now on, in the server's namespace (root ignores modes).
  nsenter -t "$SERVER_PID" -m sh -c 'mount -o bind,remount,ro "$1" 2>/dev/null || mount --bind -o ro "$1" "$1"; touch "$1/probe"' sh "$T/st" \
    2>"$T/probe.err" && { echo "the state directory is still writable"; return 1; }
  grep -q "Read-only file system" "$T/probe.err"
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == done ]]
  see_tree "$SERVER_PID"
  stop_server_ns
  start_server --listen 127.0.0.1:0 --state-dir "$T/saved"
  req "$URL/sessions/$id"
  [[ $(jq -r .status <<<"$body") == done ]]
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"op":"memory.set"' <<<"$body") == 12 ]]
  see_tree "$SERVER_PID"
  stop_server
  assert_nothing_left
}

@test "fault: serve: a session's worker killed with SIGKILL while a fetch is in flight: the session fails naming it; its journal is kept and the server goes on" {
  start_fake_http
  cat >"$T/agent.js" <<JS
export default async (input) => {
  if (input === "quick") return "quick";
  await chidori.memory.set("before", 1);
  return await (await fetch("http://127.0.0.1:$FP/delay?ms=30000")).text();
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_for_connection "$FP"
  see_tree "$SERVER_PID"
  local w; w=$(pid_in_tree "$SERVER_PID" chidori-worker)
  kill -KILL "$w"
  wait_status "$id" failed
  [[ $(jq -r .exit <<<"$body") == 137 ]] || { echo "$body"; return 1; }
  [[ $(jq -r .error.message <<<"$body") == *"engine crashed (signal SIGKILL)"* ]] || { echo "$body"; return 1; }
  req "$URL/sessions/$id/journal"
  grep -q '"type":"call","seq":1,"id":1,"op":"memory.set"' <<<"$body"
  grep -q '"type":"start","id":2,"op":"http"' <<<"$body"
  tail -1 <<<"$body" | grep -q '"type":"end"'
  req -X POST -d '{"input": "quick"}' "$URL/sessions"
  assert_code 201
  [[ $(jq -r .result <<<"$body") == quick ]]
  stop_server
  assert_nothing_left
}

@test "fault: serve: the server killed with SIGKILL mid-session: broker and worker go; the next start removes the stale cgroup directory and resumes the session to its end" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": {"n": 30, "ms": 100}, "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  pid_in_tree "$SERVER_PID" chidori-worker >/dev/null
  see_tree "$SERVER_PID"
  local dead=$SERVER_PID
  [[ -n $(cg_of "$dead") ]] || { echo "no cgroup directory of $dead under $(cg_parent)"; return 1; }
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  local p i
  for p in "${SEEN_PIDS[@]}"; do
    for ((i = 0; i < 100; i++)); do alive "$p" || break; sleep 0.1; done
    ! alive "$p" || { echo "$p ($(cat /proc/"$p"/comm)) outlived the server"; return 1; }
  done
  [[ -n $(cg_of "$dead") ]] # left by the SIGKILL
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  grep -q "1 running session(s) resumed by replay" "$T/server.err" || { cat "$T/server.err"; return 1; }
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == done ]]
  [[ -z $(cg_of "$dead") ]] || { echo "stale: $(cg_of "$dead")"; return 1; }
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"op":"memory.set"' <<<"$body") == 30 ]]
  see_tree "$SERVER_PID"
  local again=$SERVER_PID
  stop_server
  assert_nothing_left "$dead" "$again"
}
