#!/usr/bin/env bats
# chidori serve: what a curl user sees (status, body, headers), over TCP on
# loopback and over a unix socket.  Each test starts its own server on a
# free port (--listen 127.0.0.1:0: the Listening: line says which).

load helpers

SERVER_PID=

teardown() {
  stop_server
  rm -rf "$T"
}

# start_server [OPTIONS...]: serves $T/agent.js; sets SERVER_PID, URL (or
# SOCK for unix:), waits (bounded) for the Listening: line.
start_server() {
  [[ -f $T/agent.js ]] || echo 'export default async (input) => ({ echo: input })' >"$T/agent.js"
  "$CHIDORI" serve "$T/agent.js" "$@" >"$T/server.out" 2>"$T/server.err" </dev/null &
  SERVER_PID=$!
  local i
  for ((i = 0; i < 200; i++)); do
    if grep -q '^Listening: ' "$T/server.err"; then
      URL=$(sed -n 's/^Listening: \(http:.*\)$/\1/p' "$T/server.err")
      return 0
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "server exited early:"; cat "$T/server.err"; SERVER_PID=; return 1
    fi
    sleep 0.05
  done
  echo "no Listening: line after 10 s:"; cat "$T/server.err"; return 1
}

stop_server() {
  if [[ -n $SERVER_PID ]]; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}

# req ARGS...: curl, setting $code (HTTP status), $body, $headers.
req() {
  local out
  out=$(curl -sS -D "$T/.h" -o "$T/.b" -w '%{http_code}' --max-time 20 "$@") || true
  code=$out
  body=$(cat "$T/.b" 2>/dev/null || true)
  headers=$(tr -d '\r' <"$T/.h" 2>/dev/null || true)
}

assert_code() {
  if [[ $code != "$1" ]]; then
    echo "expected HTTP $1, got $code"; echo "headers: $headers"; echo "body: $body"; return 1
  fi
}

assert_body_has() {
  if [[ $body != *"$1"* ]]; then
    echo "expected the body to contain: $1"; echo "body: $body"; return 1
  fi
}

assert_error_code() { # CODE: {"error": {"code": CODE, "message": ...}}
  local got
  got=$(jq -r '.error.code' <<<"$body")
  if [[ $got != "$1" ]]; then
    echo "expected error code $1, got $got"; echo "body: $body"; return 1
  fi
  [[ $(jq -r '.error.message | length > 0' <<<"$body") == true ]] || { echo "no message: $body"; return 1; }
}

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
