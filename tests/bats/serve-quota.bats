#!/usr/bin/env bats
# chidori serve --quotas (issue 19 item 2): quotas per session, budgets per
# tenant over a window, kept in the state database across restarts.  Each
# limit is shown refusing (code EQUOTA, a message naming the quota, its limit
# and the use) and, with the limit off, the same agent going through.

load helpers
load serve-helpers

start_fake() { # [--verbose]
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 "$@" >"$T/port" 2>"$T/fake.log" 3>&- &
  FAKE_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $T/port ]] && break; sleep 0.05; done
  FP=$(head -1 "$T/port")
}

quotas() { # JSON
  printf '%s\n' "$1" >"$T/quotas.json"
}

# An agent making N calls of KIND, each result or {code, message}.
calls_agent() { # KIND N
  cat >"$T/agent.js" <<JS
const kind = "$1", n = $2;
const one = async (i) => {
  if (kind === "fetch") { const r = await fetch("http://127.0.0.1:$FP/echo"); await r.text(); return r.status; }
  if (kind === "bytes") return (await (await fetch("http://127.0.0.1:$FP/bytes?n=5000")).arrayBuffer()).byteLength;
  if (kind === "prompt") return await chidori.prompt("a b c");
  if (kind === "post") return (await fetch("http://127.0.0.1:$FP/echo", { method: "POST", body: "x".repeat(i === 0 ? 10 : 1000) })).status;
  if (kind === "memory") return await chidori.memory.get("k" + i);
  if (kind === "tool") return await chidori.tool("hi", {});
};
export default async () => {
  const out = [];
  for (let i = 0; i < n; i++) {
    try { out.push(await one(i)); }
    catch (e) { const c = e.cause || e; out.push({ code: c.code, message: c.message }); }
  }
  return out;
};
JS
}

@test "serve quota: a malformed --quotas (or CHIDORI_QUOTAS) file, an unknown quota or a bad value is a usage error naming it" {
  echo '{"session": {"effects": 10}' >"$T/bad.json"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/bad.json"
  assert_status 2
  assert_stderr_has "--quotas $T/bad.json: not valid JSON"
  echo '{"session": {"effectz": 10}}' >"$T/bad.json"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/bad.json"
  assert_status 2
  assert_stderr_has "unknown quota 'effectz'"
  echo '{"tenant": {"http_requests": -1}}' >"$T/bad.json"
  CHIDORI_QUOTAS="$T/bad.json" chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st"
  assert_status 2
  assert_stderr_has "quota 'http_requests' must be an integer from 1 to 2^53"
  echo '{"sessions": {}}' >"$T/bad.json"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/bad.json"
  assert_status 2
  assert_stderr_has "unknown field 'sessions'"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/none.json"
  assert_status 2
  assert_stderr_has "--quotas cannot open $T/none.json"
  chid serve --help
  [[ $output == *"--quotas FILE"* && $output == *"CHIDORI_QUOTAS"* ]]
}

@test "serve quota: http_requests: the call over it fails with EQUOTA naming the quota, the limit and the use; the session goes on; usage in the session JSON and /metrics" {
  start_fake
  calls_agent fetch 3
  quotas '{"session": {"http_requests": 2}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  assert_code 201
  [[ $(jq -r .status <<<"$body") == done ]] || { echo "$body"; false; }
  [[ $(jq -c '.result[0:2]' <<<"$body") == '[200,200]' ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[2].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[2].message' <<<"$body") == *"session quota exceeded: http_requests limit 2, used 2"* ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.http_requests' <<<"$body") == '{"used":2,"limit":2}' ]] || { echo "$body"; false; }
  [[ $(jq -r '.usage.effects.used >= 2 and .usage.effects.limit == null' <<<"$body") == true ]]
  [[ $(jq -r '.usage.ingress_bytes.used > 0 and .usage.egress_bytes.used > 0' <<<"$body") == true ]] || { echo "$body"; false; }
  local id; id=$(jq -r .id <<<"$body")
  # GET says the same, and the journal has the note.
  req "$URL/sessions/$id"
  [[ $(jq -c '.usage.http_requests' <<<"$body") == '{"used":2,"limit":2}' ]]
  req "$URL/sessions/$id/journal"
  [[ $body == *'"kind":"quota"'* ]] || { echo "$body"; false; }
  req "$URL/metrics"
  [[ $body == *'chidori_tenant_usage{tenant="default",quota="http_requests"} 2'* ]] || { echo "$body"; false; }
  # The control: without the quota, the third fetch goes through.
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[200,200,200]' ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.http_requests' <<<"$body") == '{"used":3,"limit":null}' ]] || { echo "$body"; false; }
}

@test "serve quota: egress_bytes: a request whose bytes would pass it fails with EQUOTA; a smaller one went through" {
  start_fake
  calls_agent post 2
  quotas '{"session": {"egress_bytes": 600}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == 200 ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"egress_bytes limit 600, used "*", this call needs "* ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[200,200]' ]] || { echo "$body"; false; }
}

@test "serve quota: ingress_bytes: once the bytes received pass it, the next fetch fails with EQUOTA" {
  start_fake
  calls_agent bytes 2
  quotas '{"session": {"ingress_bytes": 4000}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == 5000 ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"ingress_bytes limit 4000, used 5000"* ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[5000,5000]' ]] || { echo "$body"; false; }
}

@test "serve quota: llm_tokens: the provider's usage figures are charged; once past the limit a prompt fails with EQUOTA" {
  start_fake
  calls_agent prompt 2
  quotas '{"session": {"llm_tokens": 5}}'
  export CHIDORI_LLM_BASE_URL="http://127.0.0.1:$FP/v1" CHIDORI_LLM_API_KEY=test-key
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == "echo: a b c" ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  # 3 prompt tokens ("a b c") + 4 completion tokens ("echo: a b c")
  [[ $(jq -r '.result[1].message' <<<"$body") == *"llm_tokens limit 5, used 7"* ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.llm_tokens' <<<"$body") == '{"used":7,"limit":5}' ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '["echo: a b c","echo: a b c"]' ]] || { echo "$body"; false; }
}

@test "serve quota: effects: host calls past the limit fail with EQUOTA" {
  calls_agent memory 5
  quotas '{"session": {"effects": 3}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '[.result[] | if type == "object" then .code else . end]' <<<"$body") == '[null,null,null,"EQUOTA","EQUOTA"]' ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[3].message' <<<"$body") == *"effects limit 3, used 3"* ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.effects' <<<"$body") == '{"used":3,"limit":3}' ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null,null,null]' ]] || { echo "$body"; false; }
}

@test "serve quota: tool_calls: the second tool invocation fails with EQUOTA" {
  cat >"$T/tools.json" <<'JSON'
{"hi": {"command": ["sh", "-c", "read -r l; echo '\"hello\"'"], "timeout_ms": 30000}}
JSON
  calls_agent tool 2
  quotas '{"session": {"tool_calls": 1}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --tools "$T/tools.json" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true, "wait_ms": 60000}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == hello ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"tool_calls limit 1, used 1"* ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --tools "$T/tools.json"
  req -X POST -d '{"wait": true, "wait_ms": 60000}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '["hello","hello"]' ]] || { echo "$body"; false; }
}

@test "serve quota: wall_ms ends the session (failed, deadline); without it the same agent finishes" {
  cat >"$T/agent.js" <<'JS'
export default async () => { await new Promise((r) => setTimeout(r, 4000)); return "slept"; };
JS
  quotas '{"session": {"wall_ms": 1000}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true, "wait_ms": 30000}' "$URL/sessions"
  [[ $(jq -r .status <<<"$body") == failed ]] || { echo "$body"; false; }
  [[ $(jq -r .error.message <<<"$body") == *"deadline"* ]] || { echo "$body"; false; }
  [[ $(jq -r '.usage.wall_ms.limit' <<<"$body") == 1000 ]] || { echo "$body"; false; }
  [[ $(jq -r '.usage.wall_ms.used >= 1000' <<<"$body") == true ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2"
  req -X POST -d '{"wait": true, "wait_ms": 30000}' "$URL/sessions"
  [[ $(jq -r .result <<<"$body") == slept ]] || { echo "$body"; false; }
}

@test "serve quota: a tenant's budget holds across two sessions and across a restart (kill -TERM, same state dir)" {
  calls_agent memory 3
  quotas '{"tenant": {"effects": 4}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null]' ]] || { echo "$body"; false; }
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == null ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"tenant quota exceeded: effects limit 4, used 4"* ]] || { echo "$body"; false; }
  req "$URL/metrics"
  [[ $body == *'chidori_tenant_usage{tenant="default",quota="effects"} 4'* ]] || { echo "$body"; false; }
  [[ $body == *'chidori_tenant_quota_limit{tenant="default",quota="effects"} 4'* ]] || { echo "$body"; false; }
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[0].message' <<<"$body") == *"tenant quota exceeded: effects limit 4, used 4"* ]] || { echo "$body"; false; }
  # The control: the same budget in a fresh state directory is not spent.
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null]' ]] || { echo "$body"; false; }
}

@test "serve quota: concurrent_sessions per tenant: one more is 429 with Retry-After, naming the quota; after one ends it is taken" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => { if (input === "slow") await new Promise((r) => setTimeout(r, 3000)); return input; };
JS
  quotas '{"tenant": {"concurrent_sessions": 1}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"input": "slow", "wait": false}' "$URL/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  req -X POST -d '{"input": "fast", "wait": true}' "$URL/sessions"
  assert_code 429
  assert_error_code queue_full
  assert_body_has "tenant quota exceeded: concurrent_sessions limit 1, used 1"
  [[ $headers == *"Retry-After: 1"* ]]
  wait_status "$id" done
  req -X POST -d '{"input": "fast", "wait": true}' "$URL/sessions"
  assert_code 201
  # The control: without the quota, two at once are taken.
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2"
  req -X POST -d '{"input": "slow", "wait": false}' "$URL/sessions"
  assert_code 202
  req -X POST -d '{"input": "fast", "wait": true}' "$URL/sessions"
  assert_code 201
}

@test "serve quota: a session's own quotas tighten the operator's (stricter wins); a looser one does not loosen them; a bad one is 400" {
  calls_agent memory 4
  quotas '{"session": {"effects": 3}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true, "quotas": {"effects": 1}}' "$URL/sessions"
  assert_code 201
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.effects' <<<"$body") == '{"used":1,"limit":1}' ]] || { echo "$body"; false; }
  req -X POST -d '{"wait": true, "quotas": {"effects": 100}}' "$URL/sessions"
  [[ $(jq -r '.result[3].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.effects' <<<"$body") == '{"used":3,"limit":3}' ]] || { echo "$body"; false; }
  req -X POST -d '{"wait": true, "quotas": {"effects": 0}}' "$URL/sessions"
  assert_code 400
  assert_error_code invalid_field
  assert_body_has "quota 'effects' must be an integer"
  req -X POST -d '{"wait": true, "quotas": {"nope": 1}}' "$URL/sessions"
  assert_code 400
  assert_body_has "unknown quota 'nope'"
  # With no operator quota, the session's own still holds.
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2"
  req -X POST -d '{"wait": true, "quotas": {"effects": 2}}' "$URL/sessions"
  [[ $(jq -r '.result[2].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null,null]' ]] || { echo "$body"; false; }
}

@test "serve quota: workspace_bytes and memory_bytes: the write that would pass it fails with EQUOTA and nothing is written" {
  mkdir -p "$T/ws"
  cat >"$T/agent.js" <<'JS'
const tryit = async (f) => { try { await f(); return "ok"; } catch (e) { return { code: e.code, message: e.message }; } };
export default async () => [
  await tryit(() => chidori.workspace.write("a.txt", "x".repeat(100))),
  await tryit(() => chidori.workspace.write("b.txt", "x".repeat(100))),
  await tryit(() => chidori.memory.set("k1", "y".repeat(100))),
  await tryit(() => chidori.memory.set("k2", "y".repeat(100))),
];
JS
  quotas '{"session": {"workspace_bytes": 150, "memory_bytes": 150}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --workspace "$T/ws" --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -c '[.result[] | if type == "object" then .code else . end]' <<<"$body") == '["ok","EQUOTA","ok","EQUOTA"]' ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"workspace_bytes limit 150, used 100, this call needs 100 more"* ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[3].message' <<<"$body") == *"memory_bytes limit 150, used "* ]] || { echo "$body"; false; }
  [[ -f $T/ws/$id/a.txt && ! -e $T/ws/$id/b.txt ]]
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --workspace "$T/ws"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '["ok","ok","ok","ok"]' ]] || { echo "$body"; false; }
}

@test "serve quota: a kill -9 (of the broker) mid-session keeps the tenant's use: each effect is charged with its journal line, a restart still counts it" {
  start_fake
  cat >"$T/agent.js" <<JS
export default async (input) => {
  const out = [];
  const one = async (path) => { try { const r = await fetch("http://127.0.0.1:$FP" + path); await r.text(); return r.status; } catch (e) { const c = e.cause || e; return { code: c.code, message: c.message }; } };
  if (input === "first") { out.push(await one("/echo")); out.push(await one("/echo")); out.push(await one("/delay?ms=30000")); }
  else { out.push(await one("/echo")); out.push(await one("/echo")); }
  return out;
};
JS
  quotas '{"tenant": {"http_requests": 4}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"input": "first", "wait": false}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  # The third fetch's intent is committed: three http requests are charged.
  local i
  for ((i = 0; i < 200; i++)); do
    req "$URL/sessions/$id/journal"
    grep -q '"type":"start".*"op":"http".*delay' <<<"$body" && break
    sleep 0.1
  done
  grep -q '"type":"start".*"op":"http".*delay' <<<"$body"
  # kill -9 of the process that keeps the state (the broker runs the server's
  # sessions and writes serve.db): nothing of it gets to write anything more.
  local b; b=$(pgrep -P "$(sup_of "$SERVER_PID")" -x chidori-broker | head -n 1)
  [[ -n $b ]]
  kill -KILL "$b"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  wait_status "$id" done
  req "$URL/metrics"
  [[ $body == *'chidori_tenant_usage{tenant="default",quota="http_requests"} 3'* ]] || { echo "$body"; false; }
  # One request is left of the budget of 4.
  req -X POST -d '{"input": "again", "wait": true}' "$URL/sessions"
  [[ $(jq -r '.result[0]' <<<"$body") == 200 ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result[1].message' <<<"$body") == *"tenant quota exceeded: http_requests limit 4, used 4"* ]] || { echo "$body"; false; }
  # The control: in a fresh state directory the same budget lets both through.
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"input": "again", "wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[200,200]' ]] || { echo "$body"; false; }
}

@test "serve quota: concurrent_sessions holds at a resume: approving a paused session of a tenant at its limit is 429, it stays paused; once one ends it is taken" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "ask") { try { await chidori.workspace.write("a", "x"); return "wrote"; } catch (e) { return e.code; } }
  if (input === "slow") await new Promise((r) => setTimeout(r, 120000));
  return input;
};
JS
  quotas '{"tenant": {"concurrent_sessions": 1}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --quotas "$T/quotas.json"
  req -X POST -d '{"input": "ask", "policy_profile": "supervised"}' "$URL/sessions"
  local paused; paused=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]] || { echo "$body"; false; }
  # A paused session is not counted: another one is taken and runs.
  req -X POST -d '{"input": "slow", "wait": false}' "$URL/sessions"
  assert_code 202
  local slow; slow=$(jq -r .id <<<"$body")
  wait_status "$slow" running
  req -X POST -d '{"decision": "deny"}' "$URL/sessions/$paused/approve"
  assert_code 429
  assert_error_code queue_full
  assert_body_has "tenant quota exceeded: concurrent_sessions limit 1, used 1"
  [[ $headers == *"Retry-After: 1"* ]]
  req "$URL/sessions/$paused"
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]] || { echo "$body"; false; }
  # The control: once the running one ends, the same approval is taken.
  req -X POST "$URL/sessions/$slow/cancel"
  wait_status "$slow" cancelled
  req -X POST -d '{"decision": "deny"}' "$URL/sessions/$paused/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == EPOLICY ]] || { echo "$body"; false; }
}

@test "serve quota: concurrent_sessions holds for the sessions a restart resumes: past it they wait queued, each starts when one of the tenant's ends" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => { await new Promise((r) => setTimeout(r, 120000)); return input; };
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req -X POST -d '{"input": "a", "wait": false}' "$URL/sessions"
  local a; a=$(jq -r .id <<<"$body")
  req -X POST -d '{"input": "b", "wait": false}' "$URL/sessions"
  local b; b=$(jq -r .id <<<"$body")
  wait_status "$a" running
  wait_status "$b" running
  local br; br=$(pgrep -P "$(sup_of "$SERVER_PID")" -x chidori-broker | head -n 1)
  [[ -n $br ]]
  kill -KILL "$br"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  # Restarted with a limit of one session at a time for the tenant.
  quotas '{"tenant": {"concurrent_sessions": 1}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json"
  local i sa sb
  for ((i = 0; i < 300; i++)); do
    req "$URL/sessions/$a"; sa=$(jq -r .status <<<"$body")
    req "$URL/sessions/$b"; sb=$(jq -r .status <<<"$body")
    [[ $sa == running || $sb == running ]] && break
    sleep 0.2
  done
  [[ "$sa $sb" == "running queued" || "$sa $sb" == "queued running" ]] || { echo "a $sa, b $sb"; false; }
  local first=$a second=$b
  [[ $sa == running ]] || { first=$b; second=$a; }
  req -X POST "$URL/sessions/$first/cancel"
  wait_status "$first" cancelled
  wait_status "$second" running
  req -X POST "$URL/sessions/$second/cancel"
  wait_status "$second" cancelled
}

@test "serve quota: egress and ingress bytes count every redirect hop: each hop's request, each redirect's body; a hop that would pass egress_bytes is not sent" {
  start_fake --verbose
  local u3="http://127.0.0.1:$FP/bytes?n=100"
  local u2="http://127.0.0.1:$FP/redirect?to=$(jq -rn --arg u "$u3" '$u|@uri')"
  local u1="http://127.0.0.1:$FP/redirect?to=$(jq -rn --arg u "$u2" '$u|@uri')"
  cat >"$T/agent.js" <<JS
export default async () => {
  try { const r = await fetch("$u1"); return [r.status, (await r.arrayBuffer()).byteLength]; }
  catch (e) { const c = e.cause || e; return { code: c.code, message: c.message }; }
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --trusted --allow-host 127.0.0.1
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c .result <<<"$body") == '[200,100]' ]] || { echo "$body"; false; }
  # Sent: the three URLs (no headers); received: two redirect bodies ("redirect") and 100 bytes.
  local sent=$(( ${#u1} + ${#u2} + ${#u3} ))
  [[ $(jq -c '.usage.egress_bytes.used' <<<"$body") == "$sent" ]] || { echo "want $sent: $body"; false; }
  [[ $(jq -c '.usage.ingress_bytes.used' <<<"$body") == 116 ]] || { echo "$body"; false; }
  # A limit the first two hops fit in and the third does not: refused before it is sent.
  stop_server
  quotas "{\"session\": {\"egress_bytes\": $(( ${#u1} + ${#u2} + 5 ))}}"
  local seen; seen=$(wc -l <"$T/fake.log")
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted --allow-host 127.0.0.1 --quotas "$T/quotas.json"
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -r '.result.code' <<<"$body") == EQUOTA ]] || { echo "$body"; false; }
  [[ $(jq -r '.result.message' <<<"$body") == *"session quota exceeded: egress_bytes limit $(( ${#u1} + ${#u2} + 5 )), used $(( ${#u1} + ${#u2} )), this call needs ${#u3} more"*"(redirect to $u3)"* ]] || { echo "$body"; false; }
  tail -n +"$((seen + 1))" "$T/fake.log" >"$T/fake2.log"
  ! grep -q 'bytes?n=100' "$T/fake2.log" || { cat "$T/fake2.log"; false; }
  [[ $(grep -c '/redirect' "$T/fake2.log") == 2 ]] || { cat "$T/fake2.log"; false; }
}

@test "serve quota: a nested agent's calls (callAgent) are charged to its caller's session and tenant: past the quota they fail with EQUOTA" {
  cat >"$T/child.js" <<'JS'
export default async () => {
  const out = [];
  for (let i = 0; i < 5; i++) {
    try { out.push(await chidori.memory.get("k" + i)); }
    catch (e) { const c = e.cause || e; out.push(c.code); }
  }
  return out;
};
JS
  echo 'export default async () => await chidori.callAgent("./child.js", {})' >"$T/agent.js"
  # The callAgent call is one effect of the session; the child's first two fit.
  quotas '{"session": {"effects": 3}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --quotas "$T/quotas.json" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,"EQUOTA","EQUOTA","EQUOTA"]' ]] || { echo "$body"; false; }
  [[ $(jq -c '.usage.effects' <<<"$body") == '{"used":3,"limit":3}' ]] || { echo "$body"; false; }
  stop_server
  # The tenant's budget: two sessions of 6 effects each against 8.
  quotas '{"tenant": {"effects": 8}}'
  start_server --listen 127.0.0.1:0 --state-dir "$T/st3" --quotas "$T/quotas.json" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null,null,null]' ]] || { echo "$body"; false; }
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,"EQUOTA","EQUOTA","EQUOTA","EQUOTA"]' ]] || { echo "$body"; false; }
  stop_server
  # The control: without quotas the child's calls all go through.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c '.result' <<<"$body") == '[null,null,null,null,null]' ]] || { echo "$body"; false; }
}
