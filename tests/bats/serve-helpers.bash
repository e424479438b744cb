# tests/bats/serve-helpers.bash: starting a `chidori serve` and asking it with curl
# (serve.bats, serve-events.bats, serve-approve.bats).

SERVER_PID=

teardown() {
  stop_server
  if [[ -n ${FAKE_PID:-} ]]; then kill "$FAKE_PID" 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; FAKE_PID=; fi
  rm -rf "$T"
}

# SERVE_STORE (tests/bats/serve-pg.bats runs some files so): a --store URL
# for every server of a test, "{db}" replaced by a database of the test's
# own, made once with the command $SERVE_STORE_CREATEDB DB.
store_args() {
  STORE_ARGS=()
  [[ -n ${SERVE_STORE:-} ]] || return 0
  local db; db=t$(basename "$T" | tr -dc 'a-zA-Z0-9' | tr 'A-Z' 'a-z')
  if [[ ! -e $T/.db-made && -n ${SERVE_STORE_CREATEDB:-} ]]; then
    $SERVE_STORE_CREATEDB "$db" && touch "$T/.db-made"
  fi
  # A stable replica id: a server restarted by the test takes its own
  # running sessions back at once (docs/scale-out.md), as with SQLite.
  STORE_ARGS=(--store "${SERVE_STORE//\{db\}/$db}" --replica-id serve-test)
}

# start_server [OPTIONS...]: serves $T/agent.js; sets SERVER_PID, URL (or
# SOCK for unix:), waits (bounded) for the Listening: line.
start_server() {
  [[ -f $T/agent.js ]] || echo 'export default async (input) => ({ echo: input })' >"$T/agent.js"
  # A new file each time: what a killed server's leftovers write goes to the old one.
  rm -f "$T/server.out" "$T/server.err"
  store_args
  "$CHIDORI" serve "$T/agent.js" "$@" "${STORE_ARGS[@]}" >"$T/server.out" 2>"$T/server.err" </dev/null 3>&- &
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
    # SIGTERM drains (running sessions get --grace); a second one stops at once.
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    local i
    for ((i = 0; i < 20; i++)); do
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.05
    done
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

# wait_status ID STATUS: poll GET /sessions/ID until its status is STATUS (bounded: 60 s).
wait_status() {
  local i
  for ((i = 0; i < 300; i++)); do
    req "$URL/sessions/$1" "${@:3}"
    [[ $(jq -r .status <<<"$body" 2>/dev/null) == "$2" ]] && return 0
    sleep 0.2
  done
  echo "session $1 never reached $2: $body"; return 1
}

