#!/usr/bin/env bats
# Secrets by reference (--secrets, docs/secrets.md): the value reaches the
# request the allowed server receives and nothing else — not another host,
# not a redirect's hop, not stdout, stderr, the journal, a replay, serve's
# events, journal, state directory or output.  Two recording servers
# (tests/servers/fake_http.py --record) on 127.0.0.1 and 127.0.0.2 show what
# each one was sent.
load helpers
load serve-helpers

VALUE=sk-test-4f1d9a7c3e8b2605

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-secrets.XXXXXX)
  export SRVDIR
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 --record "$SRVDIR/rec1" \
    >"$SRVDIR/port" 2>"$SRVDIR/log" 3>&- &
  echo $! >"$SRVDIR/pid"
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.2 --port 0 --record "$SRVDIR/rec2" \
    >"$SRVDIR/port2" 2>>"$SRVDIR/log" 3>&- &
  echo $! >"$SRVDIR/pid2"
  for _ in $(seq 200); do [[ -s $SRVDIR/port && -s $SRVDIR/port2 ]] && break; sleep 0.05; done
  P=$(head -1 "$SRVDIR/port"); P2=$(head -1 "$SRVDIR/port2")
  export P P2
}

teardown_file() {
  kill "$(cat "$SRVDIR/pid")" "$(cat "$SRVDIR/pid2")" 2>/dev/null || true
  rm -rf "$SRVDIR"
}

setup() {
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_SECRETS
  export API_TOKEN=$VALUE
  cat >"$T/secrets.json" <<JSON
{"API": {"from_env": "API_TOKEN", "hosts": ["127.0.0.1:$P"]}}
JSON
  # Each URL fetched with the secret in a header; what came back (or the
  # error and its code).  The servers' /text answers never echo a header.
  cat >"$T/fetch.js" <<'JS'
module.exports = async ({ urls }) => {
  const out = [];
  for (const u of urls) {
    try {
      const r = await fetch(u, { headers: { Authorization: "Bearer {{secret:API}}" } });
      out.push([r.status, await r.text()]);
    } catch (e) {
      out.push([e.message, e.cause && e.cause.code]);
    }
  }
  return out;
};
JS
}

# The recorded requests whose path holds TAG: their headers, one line each.
recorded() { # FILE TAG
  [[ -f $1 ]] || return 0
  jq -c --arg tag "$2" 'select(.path | contains($tag)) | .headers' "$1"
}

no_value_in() { # FILE...: none of them holds the value
  local f
  for f in "$@"; do
    if grep -rqaF -- "$VALUE" "$f"; then
      echo "the secret's value is in $f:"; grep -raF -- "$VALUE" "$f" | head -5; return 1
    fi
  done
}

@test "secrets: the allowed host receives the value; stdout, stderr and the journal hold only the placeholder (broker and one-process)" {
  for mode in 1 0; do
    tag="allowed-$mode-$RANDOM"
    CHIDORI_RUN_BROKER=$mode chid run --secrets "$T/secrets.json" --allow-host 127.0.0.1 --journal "$T/j$mode.jsonl" \
      "$T/fetch.js" --input "{\"urls\": [\"http://127.0.0.1:$P/text?s=$tag\"]}"
    assert_status 0
    [[ $output == "[[200,\"$tag\"]]" ]] || { echo "stdout: $output"; return 1; }
    # The server got "Bearer VALUE" in Authorization, exactly once.
    got=$(recorded "$SRVDIR/rec1" "$tag")
    [[ $(jq -r '.[] | select(.[0] == "Authorization") | .[1]' <<<"$got") == "Bearer $VALUE" ]] || {
      echo "recorded: $got"; return 1; }
    printf '%s\n' "$output" >"$T/out$mode"
    printf '%s\n' "$stderr" >"$T/err$mode"
    no_value_in "$T/out$mode" "$T/err$mode" "$T/j$mode.jsonl"
    # The journal's call holds the placeholder as the agent wrote it.
    [[ $(jq -r 'select(.op == "http") | .args.headers[0][1]' "$T/j$mode.jsonl") == "Bearer {{secret:API}}" ]]
  done
}

@test "secrets: a second host and a redirect to it are refused naming the secret and the host; that server never sees the value" {
  for mode in 1 0; do
    tag="other-$mode-$RANDOM"
    direct="http://127.0.0.2:$P2/text?s=$tag-direct"
    hop="http://127.0.0.2:$P2/text%3Fs%3D$tag-hop"
    same="/text%3Fs%3D$tag-same"
    CHIDORI_RUN_BROKER=$mode chid run --secrets "$T/secrets.json" --allow-host 127.0.0.1,127.0.0.2 \
      --journal "$T/j$mode.jsonl" "$T/fetch.js" --input "{\"urls\": [\"$direct\",
        \"http://127.0.0.1:$P/redirect?to=$hop\", \"http://127.0.0.1:$P/redirect?to=$same\"]}"
    assert_status 0
    want="secret 'API' may not be sent to host '127.0.0.2' port $P2 (it is declared for 127.0.0.1:$P); the request was not sent there"
    [[ $(jq -r '.[0][0]' <<<"$output") == "fetch failed: http: $want" ]] || { echo "stdout: $output"; return 1; }
    [[ $(jq -r '.[0][1]' <<<"$output") == ESECRET ]]
    [[ $(jq -r '.[1][0]' <<<"$output") == "fetch failed: http: $want (redirect to http://127.0.0.2:$P2/text?s=$tag-hop)" ]] || {
      echo "stdout: $output"; return 1; }
    [[ $(jq -r '.[1][1]' <<<"$output") == ESECRET ]]
    # The control: a redirect that stays on the secret's host is followed,
    # and that hop carries the value.
    [[ $(jq -c '.[2]' <<<"$output") == "[200,\"$tag-same\"]" ]] || { echo "stdout: $output"; return 1; }
    [[ $(recorded "$SRVDIR/rec1" "s=$tag-same" | jq -r '.[] | select(.[0] == "Authorization") | .[1]') == "Bearer $VALUE" ]]
    # The operator is told on stderr (and the journal, a note).
    assert_stderr_has "chidori: http: call 1: $want ($direct)"
    [[ $(jq -r 'select(.type == "note" and .kind == "secret") | .message' "$T/j$mode.jsonl" | wc -l) -eq 2 ]]
    # 127.0.0.2 was sent nothing at all for these requests.
    [[ -z $(recorded "$SRVDIR/rec2" "$tag") ]] || { echo "127.0.0.2 got: $(recorded "$SRVDIR/rec2" "$tag")"; return 1; }
    printf '%s\n' "$output" >"$T/out$mode"
    printf '%s\n' "$stderr" >"$T/err$mode"
    no_value_in "$T/out$mode" "$T/err$mode" "$T/j$mode.jsonl"
  done
  [[ ! -f $SRVDIR/rec2 ]] || no_value_in "$SRVDIR/rec2"
  # The second host is reachable: without a placeholder the same URL answers.
  echo "module.exports = async (u) => (await fetch(u)).text()" >"$T/plain.js"
  chid run --quiet --allow-host 127.0.0.2 "$T/plain.js" --input "\"http://127.0.0.2:$P2/text?s=reachable\""
  assert_status 0
  assert_stdout '"reachable"'
}

@test "secrets: a replay of the journal needs neither the file nor the value" {
  tag="replay-$RANDOM"
  chid run --quiet --secrets "$T/secrets.json" --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/fetch.js" \
    --input "{\"urls\": [\"http://127.0.0.1:$P/text?s=$tag\", \"http://127.0.0.2:$P2/text?s=$tag\"]}"
  assert_status 0
  recorded_out=$output
  rm "$T/secrets.json"
  unset API_TOKEN
  for mode in 1 0; do
    CHIDORI_RUN_BROKER=$mode chid replay --quiet "$T/j.jsonl"
    assert_status 0
    [[ $output == "$recorded_out" ]] || { echo "replay: $output"; echo "recorded: $recorded_out"; return 1; }
  done
  # Nothing was performed again.
  [[ $(recorded "$SRVDIR/rec1" "$tag" | wc -l) -eq 1 ]]
}

@test "secrets: the policy gates secret:NAME; a refused request is not sent" {
  tag="policy-$RANDOM"
  in="{\"urls\": [\"http://127.0.0.1:$P/text?s=$tag\"]}"
  for mode in 1 0; do
    CHIDORI_RUN_BROKER=$mode CHIDORI_POLICY='{"rules": [{"target": "http", "decision": "always_allow"}], "default": "never_allow"}' \
      chid run --quiet --secrets "$T/secrets.json" --allow-host 127.0.0.1 "$T/fetch.js" --input "$in"
    assert_status 0
    [[ $(jq -c '.[0]' <<<"$output") == '["fetch failed: http: policy: `secret:API` denied","EPOLICY"]' ]] || {
      echo "stdout: $output"; return 1; }
    assert_stderr_has 'chidori: policy: `secret:API` denied'
  done
  [[ -z $(recorded "$SRVDIR/rec1" "$tag") ]]
  # The same policy with a rule for the secret lets it through.
  CHIDORI_POLICY='{"rules": [{"target": "http", "decision": "always_allow"}, {"target": "secret:API", "decision": "always_allow", "match_args": {"url_prefix": "http://127.0.0.1:'"$P"'/"}}], "default": "never_allow"}' \
    chid run --quiet --secrets "$T/secrets.json" --allow-host 127.0.0.1 "$T/fetch.js" --input "$in"
  assert_status 0
  [[ $output == "[[200,\"$tag\"]]" ]] || { echo "stdout: $output"; return 1; }
}

@test "secrets: an unknown name fails the call; a bad file, an unset variable or a bad value is a usage error naming the file, never the value" {
  echo 'module.exports = async (u) => { try { await fetch(u, { headers: { "X-Key": "{{secret:NOPE}}" } }); } catch (e) { return [e.message, e.cause.code]; } }' >"$T/unknown.js"
  chid run --quiet --secrets "$T/secrets.json" --allow-host 127.0.0.1 "$T/unknown.js" --input "\"http://127.0.0.1:$P/text\""
  assert_status 0
  assert_stdout '["fetch failed: http: secret '"'"'NOPE'"'"' is not declared (the operator declares secrets with --secrets FILE)","ESECRET"]'
  for mode in 1 0; do
    CHIDORI_RUN_BROKER=$mode chid run --secrets "$T/nope.json" "$T/unknown.js"
    assert_status 2
    assert_stderr_has "chidori: --secrets $T/nope.json: cannot be read: No such file or directory"
    echo '{"API": {"from_env": "API_TOKEN", "hosts": ["https://127.0.0.1/"]}}' >"$T/bad.json"
    CHIDORI_RUN_BROKER=$mode chid run --secrets "$T/bad.json" "$T/unknown.js"
    assert_status 2
    assert_stderr_has "chidori: --secrets $T/bad.json: secret 'API': host 'https://127.0.0.1/' is not HOST[:PORT]"
    CHIDORI_RUN_BROKER=$mode CHIDORI_SECRETS="$T/secrets.json" API_TOKEN= chid run "$T/unknown.js"
    assert_status 2
    assert_stderr_has "chidori: --secrets $T/secrets.json: secret \"API\": the environment variable 'API_TOKEN' (from_env) is not set or empty"
    printf '%s\r\nX-Smuggled: 1\n' "$VALUE" >"$T/token"
    echo '{"API": {"from_file": "token", "hosts": ["127.0.0.1"]}}' >"$T/file.json"
    CHIDORI_RUN_BROKER=$mode chid run --secrets "$T/file.json" "$T/unknown.js"
    assert_status 2
    assert_stderr_has "chidori: --secrets $T/file.json: the value of secret 'API' holds a control byte"
    [[ $stderr != *"$VALUE"* ]]
  done
  chid run --help
  [[ $output == *"--secrets FILE"* && $output == *"[CHIDORI_SECRETS]"* ]]
}

@test "secrets: chidori serve sends the value to the allowed host only; events, journal, replay, state dir and output never hold it" {
  tag="serve-$RANDOM"
  cp "$T/fetch.js" "$T/agent.js"
  mkdir "$T/st"
  start_server --listen 127.0.0.1:0 --trusted --state-dir "$T/st" --secrets "$T/secrets.json" --allow-host 127.0.0.1,127.0.0.2
  req -X POST "$URL/sessions" -d "{\"input\": {\"urls\": [\"http://127.0.0.1:$P/text?s=$tag\",
    \"http://127.0.0.1:$P/redirect?to=http://127.0.0.2:$P2/text%3Fs%3D$tag-hop\"]}}"
  assert_code 201
  id=$(jq -r .id <<<"$body")
  [[ $(jq -c '.result[0]' <<<"$body") == "[200,\"$tag\"]" ]] || { echo "$body"; return 1; }
  [[ $(jq -r '.result[1][0]' <<<"$body") == "fetch failed: http: secret 'API' may not be sent to host '127.0.0.2' port $P2"* ]] || {
    echo "$body"; return 1; }
  echo "$body" >"$T/session.json"
  [[ $(recorded "$SRVDIR/rec1" "$tag" | head -1 | jq -r '.[] | select(.[0] == "Authorization") | .[1]') == "Bearer $VALUE" ]]
  [[ -z $(recorded "$SRVDIR/rec2" "$tag") ]]
  req "$URL/sessions/$id/events"
  assert_code 200
  echo "$body" >"$T/events"
  req "$URL/sessions/$id/journal"
  assert_code 200
  echo "$body" >"$T/journal"
  grep -qF '{{secret:API}}' "$T/journal"
  req -X POST "$URL/sessions/$id/replay"
  assert_code 200
  [[ $(jq -r .matched <<<"$body") == true ]] || { echo "$body"; return 1; }
  echo "$body" >"$T/replay"
  stop_server
  no_value_in "$T/session.json" "$T/events" "$T/journal" "$T/replay" "$T/st" "$T/server.out" "$T/server.err"
  # A server policy that allows http but has no rule for the secret refuses it.
  rm -rf "$T/st2"
  mkdir "$T/st2"
  CHIDORI_POLICY='{"rules": [{"target": "http", "decision": "always_allow"}], "default": "never_allow"}' \
    start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --secrets "$T/secrets.json" --allow-host 127.0.0.1
  req -X POST "$URL/sessions" -d "{\"input\": {\"urls\": [\"http://127.0.0.1:$P/text?s=$tag-denied\"]}}"
  assert_code 201
  [[ $(jq -c '.result[0]' <<<"$body") == '["fetch failed: http: policy: `secret:API` denied","EPOLICY"]' ]] || {
    echo "$body"; return 1; }
  [[ -z $(recorded "$SRVDIR/rec1" "$tag-denied") ]]
  stop_server
  # A bad file stops serve at start (exit 2).
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --secrets "$T/missing.json"
  assert_status 2
  assert_stderr_has "--secrets $T/missing.json: cannot be read"
}

@test "secrets: a nested agent (callAgent) is not handed its caller's secrets (broker and one-process)" {
  mkdir "$T/ag"
  cp "$T/fetch.js" "$T/ag/child.js"
  cat >"$T/ag/parent.js" <<'JS'
module.exports = async (input) => chidori.callAgent("child.js", input);
JS
  tag="nested-$RANDOM"
  for mode in 1 0; do
    CHIDORI_RUN_BROKER=$mode chid run --quiet --secrets "$T/secrets.json" --allow-host 127.0.0.1 "$T/ag/parent.js" \
      --input "{\"urls\": [\"http://127.0.0.1:$P/text?s=$tag\"]}"
    assert_status 0
    [[ $(jq -c '.[0]' <<<"$output") == "[\"fetch failed: http: secret 'API' is not declared (the operator declares secrets with --secrets FILE)\",\"ESECRET\"]" ]] || {
      echo "stdout: $output"; echo "stderr: $stderr"; return 1; }
  done
  [[ -z $(recorded "$SRVDIR/rec1" "$tag") ]]
}
