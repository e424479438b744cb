#!/usr/bin/env bats
# `chidori serve --health-listen HOST:PORT` (issue 13): a second listener for
# the kubelet's probes on the pod IP: GET /healthz and /readyz without a
# token, everything else 404 there, the main listener unchanged.
load helpers
load serve-helpers

setup() {
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_HEALTH_LISTEN
  echo 'async function main(input) { return { echo: input }; }' >"$T/agent.js"
  echo tok-health-0123456789 >"$T/token"
}

health_url() {
  HEALTH=$(sed -n 's/^Health: \(http:[^ ]*\) .*/\1/p' "$T/server.err")
  [[ -n $HEALTH ]] || { echo "no Health: line"; cat "$T/server.err"; return 1; }
}

check_health_listener() {
  # The probes' routes answer without a token...
  req "$HEALTH/healthz"
  assert_code 200
  req "$HEALTH/readyz"
  assert_code 200
  # ...and nothing else is served there, with or without the token.
  local u
  for u in /sessions /metrics /sessions/s0 /; do
    req "$HEALTH$u"
    assert_code 404
    assert_error_code not_found
    assert_body_has "on --health-listen (routes: /healthz, /readyz)"
  done
  req -H 'Authorization: Bearer tok-health-0123456789' "$HEALTH/metrics"
  assert_code 404
  req -X POST -H 'Authorization: Bearer tok-health-0123456789' -H 'Content-Type: application/json' -d '{}' \
    "$HEALTH/sessions"
  assert_code 404
  # The main listener is as it was: the token is needed there.
  req "$URL/metrics"
  assert_code 401
  req -H 'Authorization: Bearer tok-health-0123456789' "$URL/metrics"
  assert_code 200
}

@test "serve --health-listen: /healthz and /readyz without a token on a second port, everything else 404 there" {
  start_server --listen 127.0.0.1:0 --token-file "$T/token" --health-listen 127.0.0.1:0 --state-dir "$T/st"
  health_url
  [[ $HEALTH != "$URL" ]]
  grep -q '^Health: http://127.0.0.1:[0-9]* (GET /healthz and /readyz only, no token)$' "$T/server.err"
  check_health_listener
}

@test "serve --health-listen: CHIDORI_HEALTH_LISTEN, and the one-process server (CHIDORI_RUN_BROKER=0) the same" {
  CHIDORI_HEALTH_LISTEN=127.0.0.1:0 start_server --listen 127.0.0.1:0 --token-file "$T/token" --state-dir "$T/st"
  health_url
  check_health_listener
  stop_server
  CHIDORI_RUN_BROKER=0 start_server --listen 127.0.0.1:0 --token-file "$T/token" --health-listen 127.0.0.1:0 \
    --state-dir "$T/st2"
  health_url
  check_health_listener
}

@test "serve --health-listen: a malformed value is a usage error (2), from the flag or the variable" {
  chid serve "$T/agent.js" --health-listen 8081
  assert_status 2
  assert_stderr_has "--health-listen '8081' is not valid (expected HOST:PORT, [IPV6]:PORT)"
  chid serve "$T/agent.js" --health-listen 127.0.0.1:99999
  assert_status 2
  assert_stderr_has "--health-listen '127.0.0.1:99999': the port is not a number from 0 to 65535"
  chid serve "$T/agent.js" --health-listen "unix:$T/h.sock"
  assert_status 2
  assert_stderr_has "--health-listen takes HOST:PORT (the kubelet probes over TCP), not a unix socket"
  CHIDORI_HEALTH_LISTEN=nope chid serve "$T/agent.js"
  assert_status 2
  assert_stderr_has "--health-listen 'nope' is not valid"
  chid serve "$T/agent.js" --health-listen
  assert_status 2
}
