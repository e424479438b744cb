#!/usr/bin/env bats
# chidori serve --pool N (issue 14, item 2): N worker boxes started ahead by
# the monitor, each named chidori-pooled until a session takes it, handed to
# exactly one session, refilled after; /metrics counts hits and misses.

load helpers
load serve-helpers

# The pooled boxes (chidori-pooled) and the sessions' workers (chidori-worker)
# the server's monitor has now, as pids, one line.
kids() { # NAME
  pgrep -P "$(sup_of "$SERVER_PID")" -x "$1" | sort -n | tr '\n' ' ' || true
}

# Wait (bounded: 20 s) until the pool holds N boxes.
wait_pooled() { # N
  local i
  for ((i = 0; i < 200; i++)); do
    [[ $(kids chidori-pooled | wc -w) -eq $1 ]] && return 0
    sleep 0.1
  done
  echo "the pool never held $1 boxes: $(kids chidori-pooled)"; ps -o pid,ppid,comm --ppid "$(sup_of "$SERVER_PID")"; return 1
}

metric() { # NAME: its value in /metrics
  req "$URL/metrics"
  awk -v m="$1" '$1 == m { print $2 }' <<<"$body"
}

post() { # JSON body: POST /sessions, sets $code and $body
  req -X POST -H 'content-type: application/json' -d "$1" "$URL/sessions"
}

@test "serve pool: --pool 2 keeps two boxes ahead (chidori-pooled); a session takes one, which serves it as chidori-worker and ends with it; the pool refills with new boxes; a session paused on an input shows no chidori-worker; hits and misses in /metrics" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "busy") await new Promise((r) => setTimeout(r, 1500));
  if (input === "ask") return await chidori.input("go on?");
  return "ok";
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 2
  wait_pooled 2
  local before; before=$(kids chidori-pooled)
  [[ -z $(kids chidori-worker) ]]
  [[ $(metric chidori_pool_size) == 2 && $(metric chidori_pool_hits_total) == 0 ]]
  post '{"input":"busy","wait":false}'
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  local w= i
  for ((i = 0; i < 100; i++)); do w=$(kids chidori-worker); [[ -n $w ]] && break; sleep 0.05; done
  echo "pooled before: $before; the session's worker: $w; pooled now: $(kids chidori-pooled)"
  # The session's worker is one of the boxes that were waiting.
  [[ $(wc -w <<<"$w") -eq 1 && " $before " == *" ${w// /} "* ]]
  wait_status "$id" done
  assert_body_has '"result":"ok"'
  # It ended with its session and is not in the pool again.
  for ((i = 0; i < 50; i++)); do kill -0 "${w// /}" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "${w// /}" 2>/dev/null
  wait_pooled 2
  [[ " $(kids chidori-pooled) " != *" ${w// /} "* ]]
  [[ $(metric chidori_pool_hits_total) == 1 && $(metric chidori_pool_misses_total) == 0 ]]
  # Paused on an input: the box has ended, no chidori-worker runs; the pool's boxes wait.
  post '{"input":"ask"}'
  id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  for ((i = 0; i < 50; i++)); do [[ -z $(kids chidori-worker) ]] && break; sleep 0.1; done
  [[ -z $(kids chidori-worker) ]]
  wait_pooled 2
}

@test "serve pool: a box is handed out once: eight sessions one after another each find a fresh engine (a global the agent bumps is 1 each time, nothing of the box's warm-up on its global), every one a hit" {
  # The warm-up (engine.c warm_up) ran its own __defProp/__export in a
  # throwaway context: the agent's global has none of it.
  cat >"$T/agent.js" <<'JS'
export default async () => {
  if ("__defProp" in globalThis || "__export" in globalThis) return "warm-up leaked";
  globalThis.__runs = (globalThis.__runs || 0) + 1;
  return globalThis.__runs;
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 2
  local n
  for n in 1 2 3 4 5 6 7 8; do
    wait_pooled 2
    post '{"input":null,"wait":true}'
    assert_code 201
    [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == 1 ]] || { echo "session $n: $body"; return 1; }
  done
  [[ $(metric chidori_pool_hits_total) == 8 && $(metric chidori_pool_misses_total) == 0 ]]
}

@test "serve pool: two pool boxes share no namespace (net, ipc, pid, mnt, uts, user, cgroup) and no cgroup; the control with --unsafe-disable=net,ipc,uts shares those with the host" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 2
  wait_pooled 2
  local a b ns
  read -r a b <<<"$(kids chidori-pooled)"
  for ns in net ipc pid mnt uts user cgroup; do
    echo "$ns: $(readlink "/proc/$a/ns/$ns") $(readlink "/proc/$b/ns/$ns") host $(readlink "/proc/self/ns/$ns")"
    [[ $(readlink "/proc/$a/ns/$ns") != "$(readlink "/proc/$b/ns/$ns")" ]]
    [[ $(readlink "/proc/$a/ns/$ns") != "$(readlink "/proc/self/ns/$ns")" ]]
  done
  [[ $(sed -n 's/^[0-9]*:memory://p; s/^0:://p' "/proc/$a/cgroup" | head -1) != \
     "$(sed -n 's/^[0-9]*:memory://p; s/^0:://p' "/proc/$b/cgroup" | head -1)" ]]
  stop_server
  # The control: the same probe sees the shared namespaces once those layers are off.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 2 --unsafe-disable=net,ipc,uts
  wait_pooled 2
  read -r a b <<<"$(kids chidori-pooled)"
  for ns in net ipc uts; do
    [[ $(readlink "/proc/$a/ns/$ns") == "$(readlink "/proc/$b/ns/$ns")" ]]
  done
}

@test "serve pool: a pooled box's deadline counts from its hand-out: boxes parked past --deadline still serve; a session that runs past it is killed at it" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => { if (input === "forever") for (;;) {} return "ok"; };
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 1 --deadline 1500 --js-deadline 0
  wait_pooled 1
  local p; p=$(kids chidori-pooled)
  sleep 2.5
  # Parked longer than the deadline, still there, and it serves a session.
  [[ $(kids chidori-pooled) == "$p" ]]
  post '{"input":1,"wait":true}'
  [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == ok ]] || { echo "$body"; return 1; }
  wait_pooled 1
  sleep 2
  local t0; t0=$(date +%s%N)
  post '{"input":"forever","wait":true}'
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "forever: $ms ms: $body"
  [[ $(jq -r .status <<<"$body") == failed && $ms -ge 1400 && $ms -lt 6000 ]]
  [[ $(metric chidori_pool_hits_total) == 2 ]]
}

@test "serve pool: sessions asking another posture than the pool's (CHIDORI_POLICY_PROFILE=permissive: the JIT on) are a miss once, then the pool turns to it" {
  echo 'export default async () => "ok"' >"$T/agent.js"
  CHIDORI_POLICY_PROFILE=permissive start_server --listen 127.0.0.1:0 --state-dir "$T/st" --pool 1
  wait_pooled 1
  post '{"wait":true}'
  [[ $(jq -r .result <<<"$body") == ok ]]
  [[ $(metric chidori_pool_misses_total) == 1 && $(metric chidori_pool_hits_total) == 0 ]]
  wait_pooled 1
  post '{"wait":true}'
  [[ $(jq -r .result <<<"$body") == ok ]]
  [[ $(metric chidori_pool_misses_total) == 1 && $(metric chidori_pool_hits_total) == 1 ]]
}

@test "serve pool: without --pool no box waits and nothing counts; --pool past 64 and --pool with CHIDORI_RUN_BROKER=0 are refused (exit 2)" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  post '{"wait":true}'
  sleep 0.3
  [[ -z $(kids chidori-pooled) ]]
  [[ $(metric chidori_pool_size) == 0 && $(metric chidori_pool_hits_total) == 0 && $(metric chidori_pool_misses_total) == 0 ]]
  stop_server
  run "$CHIDORI" serve "$T/agent.js" --pool 65
  [[ $status -eq 2 && $output == *"--pool"* ]]
  run env CHIDORI_RUN_BROKER=0 "$CHIDORI" serve "$T/agent.js" --pool 1
  echo "$output"
  [[ $status -eq 2 && $output == *"--pool keeps boxes started ahead by the monitor, and CHIDORI_RUN_BROKER=0 runs none"* ]]
}
