#!/usr/bin/env bats
# chidori serve: approvals and input.  A session that reaches an ask_before
# call or an unanswered chidori.input() pauses (its worker and box are gone);
# POST /sessions/ID/approve and /input resume it in a fresh box by replay of
# its journal.  Restarts: paused sessions stay paused, running ones resume.

load helpers
load serve-helpers

# Three workspace writes (a.txt twice) under the supervised profile, then an input.
asker() {
  cat >"$T/agent.js" <<'JS'
export default async () => {
  const out = [];
  for (const name of ["a.txt", "b.txt", "a.txt"]) {
    try { await chidori.workspace.write(name, "x"); out.push("written"); }
    catch (e) { out.push(e.code); }
  }
  const v = await chidori.input("your name?");
  return { out, v };
};
JS
}

@test "serve approve: ask_before pauses with no worker left; approve and input resume it to the end" {
  asker
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted
  req -X POST -d '{"policy_profile": "supervised"}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  [[ $(jq -r '.pending_approval | "\(.id) \(.target) \(.args.path)"' <<<"$body") == "1 workspace:write a.txt" ]]
  [[ $(jq -r '.pending_approval.reason' <<<"$body") == *"needs approval"* ]]
  # Pause is the worker exiting: the server has no child process at all.
  ! pgrep -P "$(sup_of "$SERVER_PID")" >/dev/null
  # Wrong state, older id, bad decision.
  req -X POST -d '{"value": 1}' "$URL/sessions/$id/input"
  assert_code 409
  assert_error_code conflict
  req -X POST -d '{"decision": "allow", "approval_id": 7}' "$URL/sessions/$id/approve"
  assert_code 409
  assert_body_has "approval 7 is not the pending one"
  req -X POST -d '{"decision": "yes"}' "$URL/sessions/$id/approve"
  assert_code 400
  assert_error_code invalid_field
  # allow: a.txt is performed (no workspace: no_workspace), then b.txt asks.
  req -X POST -d '{"decision": "allow", "approval_id": 1}' "$URL/sessions/$id/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  [[ $(jq -r '.pending_approval | "\(.id) \(.args.path)"' <<<"$body") == "2 b.txt" ]]
  # deny: b.txt is refused; a.txt again is not asked (remembered across resumes); then the input.
  req -X POST -d '{"decision": "deny"}' "$URL/sessions/$id/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  [[ $(jq -r .pending_input.prompt <<<"$body") == "your name?" ]]
  ! pgrep -P "$(sup_of "$SERVER_PID")" >/dev/null
  req -X POST -d '{"decision": "allow"}' "$URL/sessions/$id/approve"
  assert_code 409
  req -X POST -d '{"value": {"name": "bob", "n": 1.50}}' "$URL/sessions/$id/input"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done ]]
  [[ $(jq -c .result <<<"$body") == '{"out":["no_workspace","EPOLICY","no_workspace"],"v":{"name":"bob","n":1.5}}' ]]
  # effects: performed ones only (2 writes, 1 refusal, 1 input), not those replayed.
  [[ $(jq -r .stats.effects <<<"$body") == 4 ]]
  req -X POST -d '{"value": 2}' "$URL/sessions/$id/input"
  assert_code 409
  # Who approved is in the journal.
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"kind":"approved","message":"policy: `workspace:write` approved by tenant default"' <<<"$body") == 2 ]]
  [[ $(grep -c '"kind":"decided","message":"policy: `workspace:write` denied by tenant default"' <<<"$body") == 1 ]]
  # The events: approval and input asked, status at each pause, done at the end.
  curl -sS -N --max-time 20 "$URL/sessions/$id/events" >"$T/sse"
  [[ $(sed -n 's/^event: //p' "$T/sse" | grep -v call | tr '\n' ' ') == \
     "status approval status status approval status status input status status done " ]]
  # Each call is announced once, whatever the number of runs it took (a resume does not repeat it).
  [[ -z $(awk '/^event: call$/ { c = 1; next } c && /^data: / { sub(/^data: /, ""); print; c = 0 }' "$T/sse" | jq -r .id | sort | uniq -d) ]]
  [[ $(grep -c '^event: call$' "$T/sse") == 4 ]]
  # Pauses are counted apart from the runs' endings: two for approvals, one for input.
  req "$URL/metrics"
  grep -q '^chidori_pauses_total{for="approval"} 2$' <<<"$body"
  grep -q '^chidori_pauses_total{for="input"} 1$' <<<"$body"
  grep -q '^chidori_runs_total{ending="ok"} 1$' <<<"$body"
}

@test "serve approve: another tenant cannot approve (404); a settled session has nothing to approve (409)" {
  asker
  printf 'alice tok-a\nbob tok-b\n' >"$T/tokens"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --token-file "$T/tokens"
  req -H 'Authorization: Bearer tok-a' -X POST -d '{"policy_profile": "supervised"}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  req -H 'Authorization: Bearer tok-b' -X POST -d '{"decision": "allow"}' "$URL/sessions/$id/approve"
  assert_code 404
  req -H 'Authorization: Bearer tok-b' -X POST -d '{"value": 1}' "$URL/sessions/$id/input"
  assert_code 404
  req -H 'Authorization: Bearer tok-a' -X POST -d '{"decision": "allow", "wait": false}' "$URL/sessions/$id/approve"
  assert_code 200
  wait_status "$id" awaitingapproval -H 'Authorization: Bearer tok-a'
  req -H 'Authorization: Bearer tok-a' -X POST -d '{"decision": "deny"}' "$URL/sessions/$id/approve"
  wait_status "$id" awaitinginput -H 'Authorization: Bearer tok-a'
  req -H 'Authorization: Bearer tok-a' -X POST -d '{"value": "x"}' "$URL/sessions/$id/input"
  [[ $(jq -r .status <<<"$body") == done ]]
  req -H 'Authorization: Bearer tok-a' -X POST -d '{"decision": "allow"}' "$URL/sessions/$id/approve"
  assert_code 409
  assert_error_code conflict
  assert_body_has "has no pending approval (it is done)"
}

@test "serve approve: after kill -9 a paused session stays paused and resumable; a running one resumes by replay" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "ask") { try { await chidori.workspace.write("a", "x"); } catch (e) { return e.code; } }
  await chidori.memory.set("k", "before");
  const t = Date.now(); while (Date.now() - t < 4000) {}
  return { got: await chidori.memory.get("k") };
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted
  req -X POST -d '{"input": "ask", "policy_profile": "supervised"}' "$URL/sessions"
  local paused; paused=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  req -X POST -d '{"input": "run", "wait": false}' "$URL/sessions"
  local running; running=$(jq -r .id <<<"$body")
  wait_status "$running" running
  sleep 1
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted
  grep -q '1 running session(s) resumed by replay' "$T/server.err"
  wait_status "$running" done
  [[ $(jq -c .result <<<"$body") == '{"got":"before"}' ]]
  req "$URL/sessions/$paused"
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  req -X POST -d '{"decision": "deny"}' "$URL/sessions/$paused/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == EPOLICY ]]
}

@test "serve approve: a pending approval past --approval-ttl is denied, saying so in the journal" {
  asker
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --approval-ttl 1
  req -X POST -d '{"policy_profile": "supervised"}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  # a.txt expires (denied), b.txt asks and expires, a.txt again is remembered: then the input.
  wait_status "$id" awaitinginput
  req -X POST -d '{"value": "z"}' "$URL/sessions/$id/input"
  [[ $(jq -c .result.out <<<"$body") == '["EPOLICY","EPOLICY","EPOLICY"]' ]]
  req "$URL/sessions/$id/journal"
  [[ $(grep -c '"kind":"decided","message":"policy: `workspace:write` denied by nobody: it expired (--approval-ttl)"' <<<"$body") == 2 ]]
  chid serve "$T/agent.js" --approval-ttl -1
  assert_status 2
  assert_stderr_has "--approval-ttl '-1' is not valid"
}

@test "serve approve: a journal written by another chidori version is not resumed: the session fails, saying why" {
  [[ -z ${SERVE_STORE:-} ]] || skip "edits DIR/serve.db with sqlite3 (SERVE_STORE is set)"
  asker
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted
  req -X POST -d '{"policy_profile": "supervised"}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  stop_server
  # The header as an older chidori would have written it.
  sqlite3 "$T/st/serve.db" "UPDATE journal SET line = replace(line, '\"chidori\":\"', '\"chidori\":\"0.0.0-old') WHERE session = '$id' AND seq = 1"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted
  req -X POST -d '{"decision": "allow"}' "$URL/sessions/$id/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == failed ]]
  [[ $(jq -r .error.message <<<"$body") == *"was written by chidori 0.0.0-old"*"it cannot replay it safely"* ]] || { echo "$body"; false; }
}

@test "serve approve: with --workspace each session has its own DIR/<id>/; an approved write lands there" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  let seen;
  try { seen = await chidori.workspace.read("note.txt"); } catch (e) { seen = e.code; }
  await chidori.workspace.write("note.txt", input);
  return { seen };
};
JS
  mkdir -p "$T/ws"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --workspace "$T/ws"
  req -X POST -d '{"input": "one", "policy_profile": "supervised"}' "$URL/sessions"
  local a; a=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  [[ ! -e $T/ws/$a/note.txt ]]
  req -X POST -d '{"decision": "allow"}' "$URL/sessions/$a/approve"
  [[ $(jq -r .status <<<"$body") == done ]]
  [[ $(cat "$T/ws/$a/note.txt") == one ]]
  # Another session does not see it.
  req -X POST -d '{"input": "two"}' "$URL/sessions"
  local b; b=$(jq -r .id <<<"$body")
  [[ $(jq -r .result.seen <<<"$body") != one ]]
  [[ $(cat "$T/ws/$b/note.txt") == two ]]
  stop_server
  # --shared-workspace: DIR itself, shared.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --workspace "$T/ws" --shared-workspace
  req -X POST -d '{"input": "x"}' "$URL/sessions"
  req -X POST -d '{"input": "y"}' "$URL/sessions"
  [[ $(jq -r .result.seen <<<"$body") == x ]]
  stop_server
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st3" --workspace "$T/nope"
  assert_status 2
  assert_stderr_has "--workspace"
}

@test "serve approve: an effect in flight at a kill -9 is not performed again: the agent gets 'interrupted by server restart'" {
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 >"$T/port" 2>"$T/fake.log" 3>&- &
  FAKE_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $T/port ]] && break; sleep 0.05; done
  local fp; fp=$(head -1 "$T/port")
  cat >"$T/agent.js" <<JS
export default async () => {
  try { return await (await fetch("http://127.0.0.1:$fp/delay?ms=30000")).text(); }
  catch (e) { return { code: e.code, message: e.message }; }
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  # The fetch's intent is committed (a start line) before it is performed.
  for ((i = 0; i < 200; i++)); do
    req "$URL/sessions/$id/journal"
    grep -q '"type":"start".*"op":"http' <<<"$body" && break
    sleep 0.1
  done
  grep -q '"type":"start".*"op":"http' <<<"$body"
  kill -KILL "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1
  wait_status "$id" done
  [[ $(jq -r .result.message <<<"$body") == *"interrupted by server restart"* ]] || { echo "$body"; false; }
  # Asked once only: the restart did not send the request again.
  kill "$FAKE_PID" 2>/dev/null || true
  [[ $(grep -c 'delay' "$T/fake.log") -le 1 ]]
}
