#!/usr/bin/env bats
# chidori serve: the events of a session as SSE (GET /sessions/ID/events,
# POST /sessions/stream), seen with curl -N.

load helpers
load serve-helpers

# sse ARGS...: curl -N into $T/sse (bounded), headers into $headers.
sse() {
  curl -sS -N -D "$T/.sh" --max-time 60 "$@" >"$T/sse" 2>"$T/sse.err" || true
  headers=$(tr -d '\r' <"$T/.sh" 2>/dev/null || true)
}

# The `event:` names of $T/sse, space-separated.
sse_events() { sed -n 's/^event: //p' "$T/sse" | tr '\n' ' '; }
# The data of the event with id N.
sse_data() { awk -v id="$1" '$0 == "id: " id {f=1} f && /^data: / {sub(/^data: /, ""); print; exit}' "$T/sse"; }

@test "serve events: past events of a settled session, ids in order, ending with done and the session" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => { console.log("hello", input); console.warn("careful"); return { n: input }; }
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": 7}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  sse "$URL/sessions/$id/events"
  [[ $headers == *"HTTP/1.1 200"* && $headers == *"Content-Type: text/event-stream"* ]]
  local ev; ev=$(sse_events)
  [[ $ev == "status log log done " ]] || { echo "events: $ev"; cat "$T/sse"; return 1; }
  # ids 1, 2, 3, 4 in order.
  [[ $(sed -n 's/^id: //p' "$T/sse" | tr '\n' ' ') == "1 2 3 4 " ]]
  [[ $(sse_data 1 | jq -r .status) == running ]]
  [[ $(sse_data 2 | jq -r '.level + " " + .message') == "info hello 7" ]]
  [[ $(sse_data 3 | jq -r '.level + " " + .message') == "warn careful" ]]
  [[ $(sse_data 4 | jq -r '.status + " " + (.result.n | tostring) + " " + .id') == "done 7 $id" ]]
  # Last-Event-ID resumes after it.
  sse -H 'Last-Event-ID: 3' "$URL/sessions/$id/events"
  [[ $(sse_events) == "done " ]]
  [[ $(sed -n 's/^id: //p' "$T/sse") == 4 ]]
  req -H 'Last-Event-ID: x1' "$URL/sessions/$id/events"
  assert_code 400
  assert_error_code invalid_field
  req "$URL/sessions/s0000000000000000000000000000/events"
  assert_code 404
}

@test "serve events: POST /sessions/stream is text/event-stream from creation until settled, with Location" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => { console.log("at", typeof Date.now()); if (input === "boom") throw new TypeError("bad"); return input; }
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  sse -X POST -d '{"input": "x"}' "$URL/sessions/stream"
  [[ $headers == *"HTTP/1.1 201"* && $headers == *"Content-Type: text/event-stream"* ]]
  local loc; loc=$(sed -n 's/^Location: //p' <<<"$headers")
  [[ $loc =~ ^/sessions/s[0-9a-f]{28}$ ]]
  local ev; ev=$(sse_events)
  [[ $ev == "status "*"log "*"done " ]] || { echo "events: $ev"; cat "$T/sse"; return 1; }
  [[ $(tail -n 3 "$T/sse" | sed -n 's/^data: //p' | jq -r '.status + " " + .result') == "done x" ]]
  req "$URL$loc"
  [[ $(jq -r .status <<<"$body") == done ]]
  # A failing session ends the stream with done too, its error in it.
  sse -X POST -d '{"input": "boom"}' "$URL/sessions/stream"
  [[ $(tail -n 3 "$T/sse" | sed -n 's/^data: //p' | jq -r '.status + " " + .error.name') == "failed TypeError" ]]
  # Bad bodies are answered as for POST /sessions, not streamed.
  req -X POST -d '{"inptu": 1}' "$URL/sessions/stream"
  assert_code 400
  assert_error_code unknown_field
}

@test "serve events: a live stream gets events as they come; a client that disconnects never stops the session" {
  cat >"$T/agent.js" <<'JS'
export default async () => {
  console.log("first");
  const t = Date.now(); while (Date.now() - t < 3000) {}
  console.log("second");
  return "finished";
}
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  # A client that goes away early (1 s, mid-run).
  curl -sS -N --max-time 1 "$URL/sessions/$id/events" >"$T/early" 2>/dev/null || true
  grep -q '^event: status' "$T/early"
  ! grep -q '^event: done' "$T/early"
  # Another one stays to the end: it sees what came after it connected.
  sse "$URL/sessions/$id/events"
  [[ $(sse_events) == *"done " ]]
  grep -q '"message":"second"' "$T/sse"
  wait_status "$id" done
  [[ $(jq -r .result <<<"$body") == finished ]]
  req "$URL/healthz"
  assert_code 200
}

@test "serve events: an idle stream gets a ': keep-alive' comment every 15 s (a fetch the agent waits on)" {
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 >"$T/port" 2>/dev/null 3>&- &
  FAKE_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $T/port ]] && break; sleep 0.05; done
  local fp; fp=$(head -1 "$T/port")
  cat >"$T/agent.js" <<JS
export default async () => (await fetch("http://127.0.0.1:$fp/delay?ms=17000")).text();
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1
  sse -X POST -d '{}' "$URL/sessions/stream"
  kill "$FAKE_PID" 2>/dev/null || true
  grep -q '^: keep-alive$' "$T/sse" || { cat "$T/sse"; false; }
  [[ $(sse_events) == "status call done " ]] || { cat "$T/sse"; false; }
  [[ $(tail -n 3 "$T/sse" | sed -n 's/^data: //p' | jq -r '.status + " " + .result') == "done ok" ]]
}
