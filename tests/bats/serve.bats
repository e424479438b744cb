#!/usr/bin/env bats
# chidori serve: what a curl user sees (status, body, headers), over TCP on
# loopback and over a unix socket.  Each test starts its own server on a
# free port (--listen 127.0.0.1:0: the Listening: line says which).

load helpers

load serve-helpers

@test "serve: --help names the listen, token and limit options" {
  chid serve --help
  assert_status 0
  [[ $output == *"--listen ADDR"* && $output == *"--token-file FILE"* && $output == *"CHIDORI_SERVE_TOKEN"* ]]
  [[ $output == *"--max-body SIZE"* && $output == *"--max-running N"* && $output == *"--max-queued N"* ]]
  chid --help
  [[ $output == *"serve AGENT"* ]]
}

@test "serve: no agent, a missing agent, a bad --listen and a bad --max-body are usage errors" {
  chid serve
  assert_status 2
  assert_stderr_has "no agent file given"
  chid serve "$T/nope.js" --listen 127.0.0.1:0
  assert_status 2
  assert_stderr_has "nope.js"
  echo 'export default () => 1' >"$T/agent.js"
  chid serve "$T/agent.js" --listen 127.0.0.1
  assert_status 2
  assert_stderr_has "--listen '127.0.0.1' is not valid (expected HOST:PORT, [IPV6]:PORT or unix:PATH)"
  chid serve "$T/agent.js" --listen 127.0.0.1:99999
  assert_status 2
  assert_stderr_has "the port is not a number from 0 to 65535"
  chid serve "$T/agent.js" --max-body 12Q
  assert_status 2
  assert_stderr_has "--max-body '12Q' is not valid"
  chid serve "$T/agent.js" --max-running 0
  assert_status 2
  assert_stderr_has "--max-running '0' is not valid (expected an integer from 1 to 4096)"
  chid serve "$T/agent.js" --lisen 127.0.0.1:0
  assert_status 2
  assert_stderr_has "--listen"
}

@test "serve: /healthz, /readyz and /metrics answer over TCP; the banner says the policy is untrusted" {
  start_server --listen 127.0.0.1:0
  grep -q '^Policy: untrusted' "$T/server.err"
  req "$URL/healthz"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == ok ]]
  [[ $headers == *"Content-Type: application/json"* ]]
  req "$URL/readyz"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == ready ]]
  req "$URL/metrics"
  assert_code 200
  [[ $headers == *"Content-Type: text/plain; version=0.0.4"* ]]
  assert_body_has 'chidori_sessions{status="running"} 0'
  assert_body_has 'chidori_queue_depth 0'
  assert_body_has 'chidori_approvals_pending 0'
  assert_body_has 'chidori_runs_total{ending="ok"} 0'
  assert_body_has 'chidori_memory_limit_kills_total 0'
  assert_body_has 'chidori_run_duration_seconds_bucket{le="+Inf"} 0'
  assert_body_has 'chidori_box_start_seconds_count 0'
  assert_body_has '# TYPE chidori_effects_total counter'
  # Two answers so far (healthz, readyz), both 2xx.
  assert_body_has 'chidori_http_responses_total{class="2xx"} 2'
}

@test "serve: --trusted makes the policy permissive; CHIDORI_POLICY_PROFILE is used; a bad one fails closed" {
  start_server --listen 127.0.0.1:0 --trusted
  grep -q '^Policy: permissive' "$T/server.err"
  stop_server
  CHIDORI_POLICY_PROFILE=supervised start_server --listen 127.0.0.1:0
  grep -q '^Policy: supervised' "$T/server.err"
  stop_server
  CHIDORI_POLICY='{not json' start_server --listen 127.0.0.1:0
  grep -q '^chidori: warning: .*CHIDORI_POLICY' "$T/server.err"
  grep -q '^Policy: untrusted' "$T/server.err"
}

@test "serve: unknown routes are 404, wrong methods 405 with Allow, errors are {error: {code, message}}" {
  start_server --listen 127.0.0.1:0
  req "$URL/nope"
  assert_code 404
  assert_error_code not_found
  assert_body_has "no route '/nope'"
  req -X POST "$URL/healthz"
  assert_code 405
  assert_error_code method_not_allowed
  [[ $headers == *"Allow: GET, HEAD"* ]]
  req -X DELETE "$URL/metrics"
  assert_code 405
  # The caller's path is escaped in messages, never echoed raw.
  req "$URL/a%01b"
  assert_code 404
  assert_body_has '\\x01'
}

@test "serve: a path with bytes that are not UTF-8 (%FF) is answered with UTF-8 JSON naming them \\xNN" {
  start_server --listen 127.0.0.1:0
  for path in /sessions/s%FF%FE /x%C3 /sessions/a/b%FF; do
    req "$URL$path"
    assert_code 404
    assert_error_code not_found
    # Strict UTF-8 decoding of the raw body, then JSON (found by tests/fuzz/fuzz_serve.c).
    python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' "$T/.b" ||
      { echo "not UTF-8 JSON for $path: $(od -c "$T/.b" | head -5)"; return 1; }
    assert_body_has '\\x'
  done
}

@test "serve: a body over --max-body is 413 too_large, declared or chunked, and the server goes on" {
  start_server --listen 127.0.0.1:0 --max-body 1K
  head -c 2048 /dev/zero | tr '\0' a >"$T/big"
  req -X POST -H 'Content-Type: application/json' --data-binary @"$T/big" "$URL/sessions"
  assert_code 413
  assert_error_code too_large
  assert_body_has "--max-body (1024 bytes)"
  [[ $headers == *"Connection: close"* ]]
  # No Content-Length: counted as it arrives, dropped, 413 at its end.
  req -X POST -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' --data-binary @"$T/big" "$URL/sessions"
  assert_code 413
  assert_error_code too_large
  req "$URL/healthz"
  assert_code 200
}

@test "serve: a token is required on every route but /healthz and /readyz; compared exactly" {
  CHIDORI_SERVE_TOKEN=s3cret-token start_server --listen 127.0.0.1:0
  grep -q '^Tokens: one' "$T/server.err"
  req "$URL/healthz"
  assert_code 200
  req "$URL/readyz"
  assert_code 200
  req "$URL/metrics"
  assert_code 401
  assert_error_code unauthorized
  [[ $headers == *'WWW-Authenticate: Bearer realm="chidori"'* ]]
  assert_body_has "send 'Authorization: Bearer TOKEN'"
  req -H 'Authorization: Bearer s3cret-tokeN' "$URL/metrics"
  assert_code 401
  assert_body_has "not one this server accepts"
  req -H 'Authorization: Bearer s3cret-token-longer' "$URL/metrics"
  assert_code 401
  req -H 'Authorization: Bearer s3cret' "$URL/metrics"
  assert_code 401
  req -H 'Authorization: Basic s3cret-token' "$URL/metrics"
  assert_code 401
  req -H 'Authorization: Bearer s3cret-token' "$URL/metrics"
  assert_code 200
  # An unknown route is not revealed without the token either.
  req "$URL/nope"
  assert_code 401
}

@test "serve: a tenants file maps tokens to tenants; a malformed one is refused, naming the line" {
  printf '# tenants\nacme tok-acme-1\n\nglobex tok-globex-2\nadmin tok-admin-3\n' >"$T/tokens"
  start_server --listen 127.0.0.1:0 --token-file "$T/tokens"
  grep -q '^Tokens: per tenant' "$T/server.err"
  for t in tok-acme-1 tok-globex-2 tok-admin-3; do
    req -H "Authorization: Bearer $t" "$URL/metrics"
    assert_code 200
  done
  req -H "Authorization: Bearer tok-other" "$URL/metrics"
  assert_code 401
  stop_server
  printf 'acme tok-1 extra\n' >"$T/bad"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/bad"
  assert_status 2
  assert_stderr_has "--token-file '$T/bad': line 1 has more than two fields (expected 'TENANT TOKEN')"
  printf 'acme tok-1\nglobex tok-1\n' >"$T/bad"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/bad"
  assert_status 2
  assert_stderr_has "the same token is given twice"
  printf 'tok-1\nacme tok-2\n' >"$T/bad"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/bad"
  assert_status 2
  assert_stderr_has "mixes bare tokens"
  : >"$T/bad"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/bad"
  assert_status 2
  assert_stderr_has "holds no token"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/missing"
  assert_status 2
  assert_stderr_has "--token-file '$T/missing'"
  CHIDORI_SERVE_TOKEN=x chid serve "$T/agent.js" --listen 127.0.0.1:0 --token-file "$T/tokens"
  assert_status 2
  assert_stderr_has "give --token-file or CHIDORI_SERVE_TOKEN, not both"
}

@test "serve: listening beyond loopback without a token is refused (78), before it binds" {
  echo 'export default () => 1' >"$T/agent.js"
  chid serve "$T/agent.js" --listen 0.0.0.0:0
  assert_status 78
  assert_stderr_has "refusing to listen on http://0.0.0.0:"
  assert_stderr_has "without a token"
  assert_stderr_has "--token-file FILE or CHIDORI_SERVE_TOKEN"
  chid serve "$T/agent.js" --listen '[::]:0'
  assert_status 78
  assert_stderr_has "without a token"
  # (Started with a token it would listen there: tests stay on loopback.)
}

@test "serve: --listen unix:PATH answers over the socket (mode 0660), replaces a stale one, removes it at exit" {
  start_server --listen "unix:$T/s.sock"
  grep -q "^Listening: unix:$T/s.sock" "$T/server.err"
  [[ $(stat -c %a "$T/s.sock") == 660 ]]
  req --unix-socket "$T/s.sock" http://x/healthz
  assert_code 200
  req --unix-socket "$T/s.sock" http://x/metrics
  assert_code 200
  assert_body_has 'chidori_sessions{status="done"} 0'
  # A second server on the same live socket is refused.
  chid serve "$T/agent.js" --listen "unix:$T/s.sock"
  assert_status 2
  assert_stderr_has "another server is listening on this socket"
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  [[ -S $T/s.sock ]] # left behind by kill -9: stale
  # The broker, which answers on it, dies with the monitor (its parent-death
  # signal): on a loaded machine a moment later (bounded).
  local i
  for ((i = 0; i < 100; i++)); do
    curl -s --max-time 1 --unix-socket "$T/s.sock" http://x/healthz >/dev/null 2>&1 || break
    sleep 0.1
  done
  start_server --listen "unix:$T/s.sock"
  req --unix-socket "$T/s.sock" http://x/readyz
  assert_code 200
  stop_server
  [[ ! -e $T/s.sock ]]
  : >"$T/file"
  chid serve "$T/agent.js" --listen "unix:$T/file"
  assert_status 2
  assert_stderr_has "the path exists and is not a socket"
}

@test "serve: an idle connection is closed after --conn-timeout (slowloris)" {
  start_server --listen 127.0.0.1:0 --conn-timeout 1
  local port=${URL##*:}
  # Half a request, then nothing: the server closes the connection.
  local t0=$SECONDS
  run timeout 20 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
s.settimeout(15)
print("closed" if s.recv(100) == b"" else "answered")
' "$port"
  [[ $output == closed ]]
  (( SECONDS - t0 < 15 ))
  req "$URL/healthz"
  assert_code 200
}

@test "serve: SIGTERM stops the server with exit 0" {
  start_server --listen 127.0.0.1:0
  kill -TERM "$SERVER_PID"
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  [[ $rc -eq 0 ]]
}

# ---- sessions (step 2: real boxed runs through the session engine) ----

@test "serve sessions: POST /sessions runs the agent in a box and answers 201 once it settled, input as written" {
  echo 'export default async (input) => ({ echo: input, text: JSON.stringify(input) })' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -H 'Content-Type: application/json' -d '{"input": {"a": [1, "x", null], "n": 1.50}}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $id =~ ^s[0-9a-f]{28}$ ]]
  [[ $headers == *"Location: /sessions/$id"* ]]
  [[ $(jq -r .status <<<"$body") == done ]]
  [[ $(jq -r .exit <<<"$body") == 0 ]]
  [[ $(jq -c .result.echo.a <<<"$body") == '[1,"x",null]' ]]
  # The agent got the number as written (1.50 is the number 1.5).
  [[ $(jq -r .result.text <<<"$body") == '{"a":[1,"x",null],"n":1.5}' ]]
  [[ $(jq -r .tenant <<<"$body") == default && $(jq -r .policy_profile <<<"$body") == null ]]
  [[ $(jq -r '.stats | has("wall_ms") and has("cpu_ms") and has("peak_bytes") and has("effects")' <<<"$body") == true ]]
  [[ $(jq -r .created_at <<<"$body") =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]]
  req "$URL/sessions/$id"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done ]]
  req "$URL/metrics"
  assert_body_has 'chidori_runs_total{ending="ok"} 1'
  assert_body_has 'chidori_sessions{status="done"} 1'
  assert_body_has 'chidori_box_start_seconds_count 1'
}

@test "serve sessions: wait false answers 202 at once; a session past wait_ms answers 202; both settle" {
  # input "spin": a loop until cancelled (the engine's timers do not wait on the clock).
  echo 'export default async (input) => { if (input === "spin") while (true) {} ; return "quick" }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": 100, "wait": false}' "$URL/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") =~ ^(queued|running)$ ]]
  [[ $headers == *"Location: /sessions/$id"* ]]
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == quick ]]
  req -X POST -d '{"input": "spin", "wait_ms": 300}' "$URL/sessions"
  assert_code 202
  id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == running ]]
  req -X POST "$URL/sessions/$id/cancel"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == cancelled ]]
}

@test "serve sessions: an agent that throws is failed with error {name, message} and exit 1" {
  echo 'export default async () => { throw new TypeError("no good") }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST "$URL/sessions"
  assert_code 201
  [[ $(jq -r .status <<<"$body") == failed ]]
  [[ $(jq -r .error.name <<<"$body") == TypeError ]]
  [[ $(jq -r .error.message <<<"$body") == "no good" ]]
  [[ $(jq -r .exit <<<"$body") == 1 ]]
  [[ $(jq 'has("result")' <<<"$body") == false ]]
}

@test "serve sessions: bad bodies are 400 with the fixed codes, naming the field, line and column" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d $'{\n  "input": 1,\n  "wait": tru\n}' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_json
  assert_body_has "(line 3, column"
  req -X POST -d '{"input": 1, "inptu": 2}' "$URL/sessions"
  assert_code 400
  assert_error_code unknown_field
  assert_body_has "unknown field 'inptu'"
  req -X POST -d '{"policy_profile": "untrusted", "policyProfile": "untrusted"}' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_field
  assert_body_has "not both"
  req -X POST -d '{"policy_profile": "nobody"}' "$URL/sessions"
  assert_code 400
  assert_error_code unknown_profile
  assert_body_has "unknown policy profile 'nobody'"
  req -X POST -d '{"wait": "yes"}' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_field
  assert_body_has "'wait' must be true or false"
  req -X POST -d '{"wait_ms": -1}' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_field
  req -X POST -d '[1]' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_json
  req "$URL/sessions/s0000000000000000000000000000"
  assert_code 404
  assert_error_code not_found
  req "$URL/sessions/nonsense"
  assert_code 404
  req -X PUT "$URL/sessions"
  assert_code 405
  [[ $headers == *"Allow: GET, HEAD, POST"* ]]
  # Nothing was created by any of them.
  req "$URL/sessions"
  [[ $(jq '.sessions | length' <<<"$body") == 0 ]]
}

@test "serve sessions: the list is newest first, paged with limit and after, filtered by status" {
  echo 'export default async (input) => { if (input === "boom") throw new Error("x"); return input }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  local ids=() i
  for i in 1 2 3; do
    req -X POST -d "{\"input\": $i}" "$URL/sessions"
    assert_code 201
    ids+=("$(jq -r .id <<<"$body")")
  done
  req -X POST -d '{"input": "boom"}' "$URL/sessions"
  local failed; failed=$(jq -r .id <<<"$body")
  req "$URL/sessions?limit=2"
  assert_code 200
  [[ $(jq -r '[.sessions[].id] | join(" ")' <<<"$body") == "$failed ${ids[2]}" ]]
  local next; next=$(jq -r .next <<<"$body")
  [[ $next == "${ids[2]}" ]]
  req "$URL/sessions?limit=2&after=$next"
  [[ $(jq -r '[.sessions[].id] | join(" ")' <<<"$body") == "${ids[1]} ${ids[0]}" ]]
  [[ $(jq -r .next <<<"$body") == null ]]
  req "$URL/sessions?status=failed"
  [[ $(jq -r '[.sessions[].id] | join(" ")' <<<"$body") == "$failed" ]]
  req "$URL/sessions?status=finished"
  assert_code 400
  assert_error_code invalid_field
  req "$URL/sessions?limit=0"
  assert_code 400
  req "$URL/sessions?after=zzz"
  assert_code 400
}

@test "serve sessions: the journal is NDJSON, header first and end last" {
  echo 'export default async () => { console.log("hi"); return Date.now() > 0 }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  req "$URL/sessions/$id/journal"
  assert_code 200
  [[ $headers == *"Content-Type: application/x-ndjson"* ]]
  [[ $(head -n 1 <<<"$body" | jq -r .type) == header ]]
  [[ $(head -n 1 <<<"$body" | jq -r .run_id) == "$id" ]]
  [[ $(tail -n 1 <<<"$body" | jq -r .type) == end ]]
  [[ $(tail -n 1 <<<"$body" | jq -r .outcome) == ok ]]
  # Every line is one JSON object.
  while IFS= read -r line; do jq -e 'type == "object"' <<<"$line" >/dev/null; done <<<"$body"
}

@test "serve sessions: tenants see only their own sessions (404 otherwise); admin sees all" {
  printf 'acme tok-a\nglobex tok-g\nadmin tok-root\n' >"$T/tokens"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --token-file "$T/tokens"
  req -X POST -H 'Authorization: Bearer tok-a' -d '{"input": "acme data"}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .tenant <<<"$body") == acme ]]
  for path in "" /journal; do
    req -H 'Authorization: Bearer tok-g' "$URL/sessions/$id$path"
    assert_code 404
    assert_error_code not_found
  done
  req -X POST -H 'Authorization: Bearer tok-g' "$URL/sessions/$id/cancel"
  assert_code 404
  req -X DELETE -H 'Authorization: Bearer tok-g' "$URL/sessions/$id"
  assert_code 404
  req -H 'Authorization: Bearer tok-g' "$URL/sessions"
  [[ $(jq '.sessions | length' <<<"$body") == 0 ]]
  req -H 'Authorization: Bearer tok-root' "$URL/sessions/$id"
  assert_code 200
  [[ $(jq -r .result.echo <<<"$body") == "acme data" ]]
  req -H 'Authorization: Bearer tok-root' "$URL/sessions"
  [[ $(jq '.sessions | length' <<<"$body") == 1 ]]
  req -H 'Authorization: Bearer tok-a' "$URL/sessions/$id"
  assert_code 200
  req "$URL/sessions/$id"
  assert_code 401
}

@test "serve sessions: a repeated Idempotency-Key returns the first session, per tenant" {
  printf 'acme tok-a\nglobex tok-g\n' >"$T/tokens"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --token-file "$T/tokens"
  req -X POST -H 'Authorization: Bearer tok-a' -H 'Idempotency-Key: k-1' -d '{"input": 1}' "$URL/sessions"
  assert_code 201
  local first; first=$(jq -r .id <<<"$body")
  req -X POST -H 'Authorization: Bearer tok-a' -H 'Idempotency-Key: k-1' -d '{"input": 2}' "$URL/sessions"
  assert_code 200
  [[ $(jq -r .id <<<"$body") == "$first" && $(jq -r .result.echo <<<"$body") == 1 ]]
  req -X POST -H 'Authorization: Bearer tok-g' -H 'Idempotency-Key: k-1' -d '{"input": 3}' "$URL/sessions"
  assert_code 201
  [[ $(jq -r .id <<<"$body") != "$first" ]]
  req -H 'Authorization: Bearer tok-a' "$URL/sessions"
  [[ $(jq '.sessions | length' <<<"$body") == 1 ]]
}

@test "serve sessions: past --max-running and --max-queued a new session is 429 queue_full with Retry-After" {
  echo 'export default async (input) => { if (input === "spin") while (true) {} ; return input }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --max-running 1 --max-queued 1
  req -X POST -d '{"input": "spin", "wait": false}' "$URL/sessions"
  assert_code 202
  local a; a=$(jq -r .id <<<"$body")
  req -X POST -d '{"input": 10, "wait": false}' "$URL/sessions"
  assert_code 202
  local b; b=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == queued ]]
  req "$URL/metrics"
  assert_body_has 'chidori_queue_depth 1'
  req -X POST -d '{"input": 10, "wait": false}' "$URL/sessions"
  assert_code 429
  assert_error_code queue_full
  [[ $headers == *"Retry-After: 1"* ]]
  req -X POST "$URL/sessions/$a/cancel"
  [[ $(jq -r .status <<<"$body") == cancelled ]]
  wait_status "$b" done
  [[ $(jq -r .result <<<"$body") == 10 ]]
}

@test "serve sessions: cancel kills the box (cancelled; 409 once settled); DELETE removes record and journal" {
  echo 'export default async () => { while (true) {} }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  req -X POST "$URL/sessions/$id/cancel"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == cancelled ]]
  [[ $(jq -r .error.name <<<"$body") == Cancelled ]]
  # No worker of it is left.
  ! pgrep -f "chidori-worker.*" -P "$SERVER_PID" >/dev/null
  req -X POST "$URL/sessions/$id/cancel"
  assert_code 409
  assert_error_code conflict
  req -X GET "$URL/sessions/$id/cancel"
  assert_code 405
  req -X DELETE "$URL/sessions/$id"
  assert_code 204
  req "$URL/sessions/$id"
  assert_code 404
  req "$URL/sessions/$id/journal"
  assert_code 404
  # A running session deleted: cancelled first, then gone.
  req -X POST -d '{"wait": false}' "$URL/sessions"
  id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  req -X DELETE "$URL/sessions/$id"
  assert_code 204
  req "$URL/sessions/$id"
  assert_code 404
  req "$URL/healthz"
  assert_code 200
}

@test "serve sessions: POST /sessions/ID/replay re-runs from the journal in a fresh box, performing nothing" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  const r = Math.random(), t = Date.now();
  await chidori.memory.set("n", String(input));
  return { r, t, n: await chidori.memory.get("n") };
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": 3}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  local first; first=$(jq -c .result <<<"$body")
  [[ $(jq -r .status <<<"$body") == done ]]
  req -X POST "$URL/sessions/$id/replay"
  assert_code 200
  [[ $(jq -r .matched <<<"$body") == true ]]
  # The same random number and clock: answered from the journal.
  [[ $(jq -c .result <<<"$body") == "$first" ]]
  req -X POST -d '{"x": 1}' "$URL/sessions/$id/replay"
  assert_code 400
  assert_error_code unknown_field
  req -X POST "$URL/sessions/s0000000000000000000000000000/replay"
  assert_code 404
  # The agent changed: the replay diverges (not matched), and says where.
  echo 'export default async () => ({ t: Date.now(), r: Math.random(), x: await chidori.memory.get("other") })' >"$T/agent.js"
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST "$URL/sessions/$id/replay"
  assert_code 200
  [[ $(jq -r .matched <<<"$body") == false ]]
  [[ $(jq -r .error.message <<<"$body") == *"replay diverged"* ]]
}

@test "serve sessions: a damaged state database is refused at start, naming the file" {
  mkdir -p "$T/st"
  head -c 8192 /dev/urandom >"$T/st/serve.db"
  echo 'export default () => 1' >"$T/agent.js"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st"
  assert_status 70
  assert_stderr_has "the state database $T/st/serve.db is damaged or not a database"
}

@test "serve sessions: queued sessions survive a kill -9 of the server and run at the next start" {
  echo 'export default async (input) => { if (input === "spin") while (true) {} ; return input }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --max-running 1
  req -X POST -d '{"input": "spin", "wait": false}' "$URL/sessions"
  local running; running=$(jq -r .id <<<"$body")
  wait_status "$running" running
  req -X POST -d '{"input": 5, "wait": false}' "$URL/sessions"
  local queued; queued=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == queued ]]
  # The spinning session's box, seen from outside; it must not outlive the server.
  local box="" i
  for ((i = 0; i < 100; i++)); do box=$(pgrep -P "$(sup_of "$SERVER_PID")" | head -n 1) || true; [[ -n $box ]] && break; sleep 0.05; done
  [[ -n $box ]]
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  for ((i = 0; i < 100; i++)); do
    st=$(awk '{print $3}' "/proc/$box/stat" 2>/dev/null) || st=gone
    [[ $st == gone || $st == Z ]] && break
    sleep 0.05
  done
  [[ $st == gone || $st == Z ]] # dead (a zombie until init reaps it), not spinning on
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --max-running 1
  grep -q "1 queued session(s) queued again, 1 running session(s) resumed by replay" "$T/server.err" || { cat "$T/server.err"; false; }
  wait_status "$queued" done
  [[ $(jq -r .result <<<"$body") == 5 ]]
  # The running one is resumed (serve-approve.bats checks its result).
  req "$URL/sessions/$running"
  [[ $(jq -r .status <<<"$body") == running ]]
}

# The keys of namespace NS in the state dir $T/st, and its rows in the file itself.
ns_keys() { "$CHIDORI" memory list --state-dir "$T/st" --ns "$1"; }
ns_rows() { sqlite3 "$T/st/memory.sqlite3" "SELECT (SELECT count(*) FROM memory WHERE ns = '$1') + (SELECT count(*) FROM memory_ns WHERE ns = '$1')"; }

@test "serve sessions: DELETE and --session-ttl remove the session's own memory namespace; a shared one is kept" {
  echo 'export default async (input) => { await chidori.memory.set("k" + input, "v"); return input; }' >"$T/agent.js"
  local a; a=$(realpath "$T/agent.js")
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --session-ttl 3
  req -X POST -d '{"input": 1}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  req -X POST -d '{"input": 2}' "$URL/sessions"
  local aged; aged=$(jq -r .id <<<"$body")
  [[ $(ns_keys "$a#$id") == k1 ]] || { ns_keys "$a#$id"; return 1; }
  req -X DELETE "$URL/sessions/$id"
  assert_code 204
  [[ -z $(ns_keys "$a#$id") ]] || { echo "keys of a deleted session: $(ns_keys "$a#$id")"; return 1; }
  [[ $(ns_rows "$a#$id") == 0 ]] || { echo "rows of a deleted session's namespace: $(ns_rows "$a#$id")"; return 1; }
  # past --session-ttl: the same
  local i
  for ((i = 0; i < 150; i++)); do req "$URL/sessions/$aged"; [[ $code == 404 ]] && break; sleep 0.1; done
  assert_code 404
  [[ $(ns_rows "$a#$aged") == 0 ]] || { echo "rows of an expired session's namespace: $(ns_rows "$a#$aged")"; return 1; }
  stop_server
  # --shared-memory: the namespace is the agent's, not the session's: kept
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --shared-memory
  req -X POST -d '{"input": 3}' "$URL/sessions"
  id=$(jq -r .id <<<"$body")
  req -X DELETE "$URL/sessions/$id"
  assert_code 204
  [[ $(ns_keys "$a") == k3 ]] || { echo "the shared namespace: $(ns_keys "$a")"; return 1; }
}

@test "serve sessions: a finished session past --session-ttl is deleted with its journal; running ones are kept" {
  echo 'export default async (input) => { if (input === "spin") { const t = Date.now(); while (Date.now() - t < 8000) {} } return input; }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --session-ttl 2
  req -X POST -d '{"input": 1}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == done ]]
  req -X POST -d '{"input": "spin", "wait": false}' "$URL/sessions"
  local spin; spin=$(jq -r .id <<<"$body")
  local i
  for ((i = 0; i < 100; i++)); do req "$URL/sessions/$id"; [[ $code == 404 ]] && break; sleep 0.1; done
  assert_code 404
  req "$URL/sessions/$id/journal"
  assert_code 404
  req "$URL/sessions/$spin"
  assert_code 200
  chid serve "$T/agent.js" --session-ttl 1d
  assert_status 2
  assert_stderr_has "--session-ttl '1d' is not valid"
}

@test "serve sessions: 100 concurrent sessions all settle done (--max-queued raised to fit), none lost" {
  echo 'export default async (input) => input * 2' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --max-queued 100
  local i pids=()
  for ((i = 0; i < 100; i++)); do
    curl -sS -o "$T/c$i" -w '%{http_code}' --max-time 300 -X POST -d "{\"input\": $i, \"wait_ms\": 280000}" \
      "$URL/sessions" >"$T/code$i" 2>/dev/null &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || true; done
  for ((i = 0; i < 100; i++)); do
    [[ $(cat "$T/code$i") == 201 ]] || { echo "session $i: $(cat "$T/code$i") $(cat "$T/c$i")"; return 1; }
    [[ $(jq -r '.status + " " + (.result | tostring)' "$T/c$i") == "done $((i * 2))" ]] || { cat "$T/c$i"; return 1; }
  done
  req "$URL/sessions?status=done&limit=1000"
  [[ $(jq '.sessions | length' <<<"$body") == 100 ]]
  req "$URL/metrics"
  assert_body_has 'chidori_runs_total{ending="ok"} 100'
}

@test "serve sessions: --max-journal bounds a session's journal in the store: the run stops, failed with Limit" {
  echo 'export default async () => { for (let i = 0; i < 200; i++) await chidori.memory.set("k" + i, "x".repeat(100)); return "all" }' >"$T/agent.js"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --max-journal 8K
  req -X POST -d '{}' "$URL/sessions"
  assert_code 201
  [[ $(jq -r .status <<<"$body") == failed ]] || { echo "$body"; false; }
  [[ $(jq -r .error.name <<<"$body") == Limit ]]
  assert_body_has "journal"
  local id; id=$(jq -r .id <<<"$body")
  req "$URL/sessions/$id/journal"
  (( ${#body} < 12000 ))
  [[ $(tail -n 1 <<<"$body" | jq -r .type) == end ]]
}

@test "serve: libmicrohttpd (and the GnuTLS it brings) is loaded only by serve, not at every start" {
  run ldd "$CHIDORI"
  [[ $status -eq 0 && $output != *microhttpd* && $output != *gnutls* ]] || { echo "$output"; return 1; }
  # serve itself loads it: its help works, and a server answers (the tests above).
  chid serve --help
  assert_status 0
}

@test "serve: --store sqlite:PATH keeps the sessions in that file (outside --state-dir), across a restart" {
  mkdir -p "$T/db"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "sqlite:$T/db/sessions.db"
  grep -q "^Store: sqlite $T/db/sessions.db$" "$T/server.err"
  req -X POST -d '{"input": 5}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -c .result <<<"$body") == '{"echo":5}' ]]
  stop_server
  [[ -s $T/db/sessions.db && ! -e $T/st/serve.db ]]
  CHIDORI_STORE="sqlite:$T/db/sessions.db" start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req "$URL/sessions/$id"
  assert_code 200
  [[ $(jq -c .result <<<"$body") == '{"echo":5}' ]]
  stop_server
  # A folder that does not exist is the operator's mistake: a usage error naming it.
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --store "sqlite:$T/nope/x.db"
  assert_status 2
  assert_stderr_has "--store sqlite:$T/nope/x.db: No such file or directory"
}
