#!/usr/bin/env bats
# chidori serve as monitor + broker (issue 11 on issue 10's split): the
# process the shell started (the monitor) keeps the privilege; HTTP, SQLite
# and the workers' frames are the broker's, an unprivileged, confined
# child; every session's worker is a box the monitor starts in the
# server's cgroup tree.  CHIDORI_RUN_BROKER=0 keeps the one-process server
# (the control).  The other serve*.bats files run through both.

load helpers
load serve-helpers

slow_agent() {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  const t = Date.now();
  while (input === "forever" || Date.now() - t < 2500) {}
  return "finished";
};
JS
}

# The server's child whose command is NAME (one of them).
child_named() { # NAME
  pgrep -P "$(sup_of "$SERVER_PID")" -x "$1" | head -n 1
}

# A process's cgroup directory (the memory controller's on cgroup v1, else v2's).
cg_dir() { # PID
  local p
  p=$(sed -n 's/^[0-9]*:memory://p' "/proc/$1/cgroup")
  if [[ -n $p ]]; then echo "/sys/fs/cgroup/memory$p"; return; fi
  p=$(sed -n 's/^0:://p' "/proc/$1/cgroup")
  echo "/sys/fs/cgroup$p"
}

# status_field PID FIELD: the value of FIELD in /proc/PID/status (first column).
status_field() {
  awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

@test "serve broker: the process that parses HTTP is chidori-broker, not root and not the boxes' 65534, no capability, no_new_privs, seccomp, no /etc/shadow in its root; the one-process server (the control) is none of these" {
  [[ $(id -u) -eq 0 ]] || skip "the broker's own uid is root's case (rootless: its own user namespace, broker.bats)"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req "$URL/healthz"
  assert_code 200
  local b; b=$(child_named chidori-broker)
  [[ -n $b ]] || { echo "no chidori-broker child of the server $SERVER_PID"; ps -o pid,ppid,comm --ppid "$SERVER_PID"; return 1; }
  local uid; uid=$(status_field "$b" Uid)
  [[ $uid != 0 && $uid != 65534 ]]
  [[ $(status_field "$b" CapEff) == 0000000000000000 ]]
  [[ $(status_field "$b" NoNewPrivs) == 1 ]]
  [[ $(status_field "$b" Seccomp) == 2 ]]
  ! cat "/proc/$b/root/etc/shadow" >/dev/null 2>&1
  # libmicrohttpd is the broker's; the server (the monitor) maps none of it, nor SQLite.
  grep -q libmicrohttpd "/proc/$b/maps"
  ! grep -qE 'libmicrohttpd|libsqlite3|libcjson' "/proc/$SERVER_PID/maps"
  stop_server
  # The control: the same probes against the one-process server succeed.
  CHIDORI_RUN_BROKER=0 start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  grep -q '^chidori: WARNING: CHIDORI_RUN_BROKER=0: this server is one process with your privileges' "$T/server.err"
  req "$URL/healthz"
  assert_code 200
  [[ -z $(child_named chidori-broker) ]]
  [[ $(status_field "$SERVER_PID" Uid) == 0 ]]
  [[ $(status_field "$SERVER_PID" CapEff) != 0000000000000000 ]]
  [[ $(status_field "$SERVER_PID" NoNewPrivs) == 0 ]]
  [[ $(status_field "$SERVER_PID" Seccomp) == 0 ]]
  cat "/proc/$SERVER_PID/root/etc/shadow" >/dev/null
  grep -q libmicrohttpd "/proc/$SERVER_PID/maps"
}

@test "serve broker: two sessions at once each run in a box of their own, in run trees of their own below the server's cgroup" {
  cat >"$T/agent.js" <<'JS'
export default async () => { const t = Date.now(); while (Date.now() - t < 60000) {} return 1; };
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --js-deadline 120000 --max-running 2
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local a; a=$(jq -r .id <<<"$body")
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local c; c=$(jq -r .id <<<"$body")
  wait_status "$a" running
  wait_status "$c" running
  local i ws=
  for ((i = 0; i < 100; i++)); do
    ws=$(pgrep -P "$(sup_of "$SERVER_PID")" -x chidori-worker | tr '\n' ' ')
    [[ $(wc -w <<<"$ws") -eq 2 ]] && break
    sleep 0.1
  done
  [[ $(wc -w <<<"$ws") -eq 2 ]] || { echo "workers: '$ws'"; ps -o pid,ppid,comm --ppid "$SERVER_PID"; return 1; }
  local b; b=$(child_named chidori-broker)
  [[ -n $b ]] || { echo "no chidori-broker child of the server"; return 1; }
  local server_cg; server_cg=$(cg_dir "$SERVER_PID")
  local w dirs=()
  for w in $ws; do
    [[ $(status_field "$w" Uid) != "$(status_field "$b" Uid)" ]]
    local d; d=$(cg_dir "$w")
    [[ $d == "$server_cg"/chidori-"$SERVER_PID"-*/run-* ]] || { echo "worker $w in $d, not below $server_cg"; return 1; }
    dirs+=("$(sed -E 's|(/run-[^/]*)/.*|\1|' <<<"$d")")
  done
  # Not nested in each other: a run tree each.
  [[ ${dirs[0]} != "${dirs[1]}" && ${dirs[0]} != "${dirs[1]}"/* && ${dirs[1]} != "${dirs[0]}"/* ]]
  req -X POST "$URL/sessions/$a/cancel"
  assert_code 200
  req -X POST "$URL/sessions/$c/cancel"
  assert_code 200
}

@test "serve broker: kill -9 of the broker ends the server 70, naming it; no box, process or cgroup is left" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": "forever", "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  local b w i
  b=$(child_named chidori-broker)
  for ((i = 0; i < 100; i++)); do w=$(child_named chidori-worker); [[ -n $w ]] && break; sleep 0.1; done
  # Before: the box and its cgroup are there (the checks below can see them).
  [[ -n $b && -n $w ]]
  local cg run_tree; cg=$(cg_dir "$w")
  run_tree=$(dirname "$(sed -E 's|(/run-[^/]*)/.*|\1|' <<<"$cg")")
  [[ -d $cg && $run_tree == */chidori-"$SERVER_PID"-* ]]
  kill -0 "$w"
  kill -KILL "$b"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [[ $rc -eq 70 ]] || { echo "exit $rc"; cat "$T/server.err"; return 1; }
  grep -q '^chidori: the broker (chidori-broker) closed the channel without a result (it was killed by Killed); every box was killed$' "$T/server.err"
  ! kill -0 "$w" 2>/dev/null
  [[ ! -d $cg && ! -d $run_tree ]]
  # The session is still `running` in the store: the next start resumes it by replay.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  grep -q '1 running session(s) resumed by replay' "$T/server.err"
}

@test "serve broker: CHIDORI_RUN_BROKER takes 1 or 0; another value is a usage error" {
  echo 'export default () => 1' >"$T/agent.js"
  CHIDORI_RUN_BROKER=yes chid serve "$T/agent.js" --listen 127.0.0.1:0
  assert_status 2
  assert_stderr_has "CHIDORI_RUN_BROKER=yes: expected 1"
  CHIDORI_RUN_BROKER=1 start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  [[ -n $(child_named chidori-broker) ]]
  ! grep -q WARNING "$T/server.err"
}

@test "serve broker: a session's callAgent runs the callee in a box that joins the session's run tree; its answer is the call's" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "wait") return chidori.callAgent("./child.js", "wait");
  return { got: await chidori.callAgent("./child.js", { n: input }) };
};
JS
  cat >"$T/child.js" <<'JS'
export default async (input) => {
  if (input === "wait") { const t = Date.now(); while (Date.now() - t < 60000) {} }
  return { doubled: input.n * 2 };
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --js-deadline 120000
  [[ -n $(child_named chidori-broker) ]]
  req -X POST -d '{"input": 21}' "$URL/sessions"
  assert_code 201
  [[ $(jq -c .result <<<"$body") == '{"got":{"doubled":42}}' ]]
  req -X POST -d '{"input": "wait", "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  local i ws=
  for ((i = 0; i < 200; i++)); do
    ws=$(pgrep -P "$(sup_of "$SERVER_PID")" -x chidori-worker | tr '\n' ' ')
    [[ $(wc -w <<<"$ws") -eq 2 ]] && break
    sleep 0.1
  done
  [[ $(wc -w <<<"$ws") -eq 2 ]] || { echo "workers: '$ws'"; return 1; }
  local w1 w2 d1 d2 r1 r2
  read -r w1 w2 <<<"$ws"
  d1=$(cg_dir "$w1"); d2=$(cg_dir "$w2")
  # One box's run node is below the other's: the callee's joins the caller's tree.
  r1=$(sed -E 's|(/run-[^/]*)/.*|\1|' <<<"$d1"); r2=$(sed -E 's|(/run-[^/]*)/.*|\1|' <<<"$d2")
  [[ $d2 == "$r1"/* || $d1 == "$r2"/* ]] || { echo "not one tree: $d1 $d2"; return 1; }
  req -X POST "$URL/sessions/$id/cancel"
  assert_code 200
}

@test "serve broker: a session's tool runs below its own session's tree: another session ending does not end it" {
  cat >"$T/tools.json" <<'JSON'
{"slow": {"command": ["sh", "-c", "read -r l; sleep 3; echo '\"slept\"'"], "timeout_ms": 30000}}
JSON
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "tool") return chidori.tool("slow", {});
  const t = Date.now(); while (Date.now() - t < 60000) {}
  return "spun";
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --tools "$T/tools.json" --js-deadline 120000
  [[ -n $(child_named chidori-broker) ]]
  # The first session's worker is the first box (the one-run tree's holder before).
  req -X POST -d '{"input": "spin", "wait": false}' "$URL/sessions"
  local spin; spin=$(jq -r .id <<<"$body")
  wait_status "$spin" running
  local i
  for ((i = 0; i < 100; i++)); do [[ -n $(child_named chidori-worker) ]] && break; sleep 0.1; done
  req -X POST -d '{"input": "tool", "wait": false}' "$URL/sessions"
  local tool; tool=$(jq -r .id <<<"$body")
  # The tool is running (a sleep below the server) when the first session ends.
  for ((i = 0; i < 100; i++)); do pgrep -f 'sleep 3' >/dev/null && break; sleep 0.1; done
  pgrep -f 'sleep 3' >/dev/null
  req -X POST "$URL/sessions/$spin/cancel"
  assert_code 200
  wait_status "$tool" done
  [[ $(jq -r .result <<<"$body") == slept ]] || { echo "$body"; return 1; }
}

@test "serve broker: --broker-user: the server's broker runs as that uid; 0, 65534 and an unknown user are refused (exit 2), and so is it with CHIDORI_RUN_BROKER=0" {
  [[ $(id -u) -eq 0 ]] || skip "needs root (a rootless broker keeps the caller's uid)"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --broker-user 4242
  req "$URL/healthz"
  assert_code 200
  local b; b=$(child_named chidori-broker)
  [[ -n $b && $(status_field "$b" Uid) == 4242 ]]
  req -X POST -H 'Content-Type: application/json' -d '{"input": 7}' "$URL/sessions?wait=30"
  [[ $body == *'"result":{"echo":7}'* ]] || { echo "$body"; cat "$T/server.err"; false; }
  stop_server
  # Without it: the default broker uid (the control).
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2"
  b=$(child_named chidori-broker)
  [[ -n $b && $(status_field "$b" Uid) == 65533 ]]
  stop_server
  echo 'export default () => 1' >"$T/agent.js"
  for u in 0 65534 root nobody no-such-user-here; do
    chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st3" --broker-user "$u"
    assert_status 2
    assert_stderr_has "chidori: the broker's user:"
  done
  CHIDORI_RUN_BROKER=0 chid serve "$T/agent.js" --listen 127.0.0.1:0 --broker-user 4242
  assert_status 2
  assert_stderr_has "--broker-user names the user of the broker process, and CHIDORI_RUN_BROKER=0 runs none"
}
