#!/usr/bin/env bats
# chidori serve: SIGTERM drains.  /readyz fails and new sessions get 503
# draining; running sessions get --grace seconds; a second SIGTERM stops at
# once; sessions still running then are killed and resumed at the next start.

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

@test "serve drain: SIGTERM fails /readyz, refuses new sessions (503 draining), lets a running one finish" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --grace 60
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  kill -TERM "$SERVER_PID"
  local i
  for ((i = 0; i < 50; i++)); do req "$URL/readyz"; [[ $code == 503 ]] && break; sleep 0.05; done
  assert_code 503
  assert_error_code draining
  req "$URL/healthz"
  assert_code 200
  req -X POST -d '{}' "$URL/sessions"
  assert_code 503
  assert_error_code draining
  # It exits (0) once the session has finished, well within the grace.
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [[ $rc -eq 0 ]]
  grep -q 'draining: 1 running session(s) get 60 s to finish' "$T/server.err"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req "$URL/sessions/$id"
  [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == finished ]]
}

@test "serve drain: past --grace the running session is killed, no worker is left, and it resumes at the next start" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --grace 1
  req -X POST -d '{"input": "forever", "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  local kids; kids=$(pgrep -P "$(sup_of "$SERVER_PID")" | tr '\n' ' ')
  [[ -n $kids ]]
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [[ $rc -eq 0 ]]
  # Nothing the server started outlives it.
  local k
  for k in $kids; do ! kill -0 "$k" 2>/dev/null; done
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  grep -q '1 running session(s) resumed by replay' "$T/server.err"
  wait_status "$id" running
}

@test "serve drain: a second SIGTERM stops at once; --grace takes seconds (a bad value is a usage error)" {
  slow_agent
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --grace 600
  req -X POST -d '{"input": "forever", "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  kill -TERM "$SERVER_PID"
  local i
  for ((i = 0; i < 100; i++)); do grep -q draining "$T/server.err" && break; sleep 0.1; done
  kill -TERM "$SERVER_PID"
  local rc=0 t0=$SECONDS
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [[ $rc -eq 0 && $((SECONDS - t0)) -lt 30 ]]
  chid serve "$T/agent.js" --grace soon
  assert_status 2
  assert_stderr_has "--grace 'soon' is not valid (expected an integer from 0 to 86400)"
}
