#!/usr/bin/env bats
# chidori serve: three replicas on one PostgreSQL database (a throwaway
# cluster of tests/lib/pg.sh).  Any replica answers any route for any
# session; a running session is owned by one replica through a lease
# (docs/scale-out.md); when its owner dies another takes it over and
# resumes it from the journal, the effect that was in flight not performed
# again.  Effects are counted at tests/servers/fake_http.py (--record: one
# line per request it received).  Skipped, saying why, only when
# PostgreSQL is not installed.

load helpers
load serve-helpers
load fault-helpers
source "$BATS_TEST_DIRNAME/../lib/pg.sh"

setup_file() { pg_suite_start; }
teardown_file() { pg_suite_stop; }

setup() {
  [[ -z ${PG_SKIP:-} ]] || skip "$PG_SKIP"
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_STORE
  unset CHIDORI_REPLICA_ID CHIDORI_LEASE
  DB=r$BATS_SUITE_TEST_NUMBER
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d postgres -qAtc \
    "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
  STORE="postgres://postgres:$PG_PASSWORD@/$DB?host=$PGSOCK&port=$PGPORT_T"
  REPLICAS=()
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 --record "$T/hits" \
    >"$T/port" 2>"$T/fake.log" 3>&- &
  FAKE_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $T/port ]] && break; sleep 0.05; done
  FP=$(head -1 "$T/port")
  cat >"$T/agent.js" <<JS
export default async (input) => {
  if (input.mode === "ask") {
    let w;
    try { await chidori.workspace.write("a.txt", "x"); w = "written"; } catch (e) { w = e.code; }
    const v = await chidori.input("your name?");
    return { w, v };
  }
  if (input.mode === "hit") {
    try {
      await (await fetch("http://127.0.0.1:$FP/delay?ms=" + (input.ms || 0) + "&s=" + input.tag)).text();
    } catch (e) {
      return { interrupted: String(e && e.message || e) };
    }
    return input.tag;
  }
  if (input.mode === "slow") {
    try {
      return { ok: await (await fetch("http://127.0.0.1:$FP/delay?ms=" + input.ms + "&tag=" + input.tag)).text() };
    } catch (e) {
      return { interrupted: String(e && e.message || e) };
    }
  }
  if (input.mode === "timer") {
    await new Promise((r) => setTimeout(r, input.ms));
    await chidori.memory.set("timer-" + input.tag, 1);
    return "timer " + input.tag;
  }
  if (input.mode === "logs") {
    for (let i = 0; i < input.n; i++) {
      console.log("line " + i);
      await new Promise((r) => setTimeout(r, 300));
    }
    return "logged";
  }
  return input;
};
JS
}

teardown() {
  local n
  [[ -z ${PG_DOWN:-} ]] || { pg_startup; PG_DOWN=; }
  for n in "${REPLICAS[@]}"; do stop_replica "$n"; done
  if [[ -n ${FAKE_PID:-} ]]; then kill "$FAKE_PID" 2>/dev/null || true; wait "$FAKE_PID" 2>/dev/null || true; FAKE_PID=; fi
  rm -rf "$T"
}

sql() {
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d "$DB" -qAtc "$1"
}

# start_replica NAME [OPTIONS...]: a server on the test's database; sets
# URL_NAME and PID_NAME; its stderr in $T/NAME.err.
start_replica() {
  local name=$1; shift
  "$CHIDORI" serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st-$name" --store "$STORE" --trusted \
    --allow-host 127.0.0.1 --lease 3 "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null 3>&- &
  local pid=$! i
  printf -v "PID_$name" '%s' "$pid"
  REPLICAS+=("$name")
  for ((i = 0; i < 300; i++)); do
    if grep -q '^Listening: ' "$T/$name.err" 2>/dev/null; then
      printf -v "URL_$name" '%s' "$(sed -n 's/^Listening: \(http:.*\)$/\1/p' "$T/$name.err")"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "replica $name exited early:"; cat "$T/$name.err"; return 1; }
    sleep 0.05
  done
  echo "replica $name: no Listening: line after 15 s:"; cat "$T/$name.err"; return 1
}

stop_replica() {
  local v="PID_$1" pid i
  pid=${!v:-}
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  printf -v "PID_$1" '%s' ""
}

# kill -9 of a replica: its broker and boxes die with it (parent-death signal).
kill_replica() {
  local v="PID_$1" pid
  pid=${!v}
  kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
  printf -v "PID_$1" '%s' ""
}

# wait_on URL ID STATUS [SECS]: poll until the session has STATUS (bounded, default 60 s).
wait_on() {
  local i n=$(( ${4:-60} * 5 ))
  for ((i = 0; i < n; i++)); do
    req "$1/sessions/$2"
    [[ $(jq -r .status <<<"$body" 2>/dev/null) == "$3" ]] && return 0
    sleep 0.2
  done
  echo "session $2 never reached $3 in ${4:-60} s: $body"; return 1
}

hits() { # TAG: requests the fake server received carrying it
  grep -c "[=&]$1\"" "$T/hits" 2>/dev/null || true
}

@test "serve-replicas: create on A, approve on B, input on C, replay on A; the list is the same from all three" {
  start_replica A
  start_replica B
  start_replica C
  req -X POST -d '{"input": {"mode": "ask"}, "policy_profile": "supervised"}' "$URL_A/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  # Paused: no replica owns it.
  [[ $(sql "SELECT COALESCE(owner, 'none') FROM sessions WHERE id = '$id'") == none ]]
  req -X POST -d '{"decision": "allow", "approval_id": 1}' "$URL_B/sessions/$id/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  req -X POST -d '{"value": {"name": "bob", "n": 1.50}}' "$URL_C/sessions/$id/input"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done ]]
  [[ $(jq -c .result <<<"$body") == '{"w":"no_workspace","v":{"name":"bob","n":1.5}}' ]]
  # Each run was B's, then C's: the epoch counts the takes (1 create, 2 approve, 3 input).
  [[ $(sql "SELECT COALESCE(owner, 'none') || ' ' || epoch FROM sessions WHERE id = '$id'") == "none 3" ]]
  [[ $(sql "SELECT COUNT(*) FROM journal WHERE session = '$id' AND line LIKE '%approved by tenant default%'") == 1 ]]
  req -X POST "$URL_A/sessions/$id/replay"
  assert_code 200
  [[ $(jq -c '[.matched, .result]' <<<"$body") == '[true,{"w":"no_workspace","v":{"name":"bob","n":1.5}}]' ]]
  req -X POST -d '{"input": 7}' "$URL_C/sessions"
  assert_code 201
  local la lb lc
  req "$URL_A/sessions"; la=$(jq -c '[.sessions[] | [.id, .status]]' <<<"$body")
  req "$URL_B/sessions"; lb=$(jq -c '[.sessions[] | [.id, .status]]' <<<"$body")
  req "$URL_C/sessions"; lc=$(jq -c '[.sessions[] | [.id, .status]]' <<<"$body")
  [[ $(jq length <<<"$la") == 2 && $la == "$lb" && $lb == "$lc" ]] || { echo "$la / $lb / $lc"; return 1; }
}

@test "serve-replicas: one approval sent to two replicas at once is applied once (the other answer is 409)" {
  start_replica A
  start_replica B
  local round id
  for round in 1 2 3; do
    req -X POST -d "{\"input\": {\"mode\": \"hit\", \"tag\": \"dbl$round\"}, \"policy_profile\": \"supervised\"}" \
      "$URL_A/sessions"
    assert_code 201
    id=$(jq -r .id <<<"$body")
    [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
    # The session's row held locked for 2 s (reads go on): both replicas read
    # it paused and both try to apply their answer before either can write.
    sql "BEGIN; SELECT 1 FROM sessions WHERE id = '$id' FOR UPDATE; SELECT pg_sleep(2); COMMIT" >/dev/null &
    local h=$! i
    for ((i = 0; i < 100; i++)); do
      [[ $(sql "SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(2)%' AND state = 'active' AND pid <> pg_backend_pid()") == 1 ]] && break
      sleep 0.05
    done
    curl -sS -o "$T/a.json" -w '%{http_code}\n' --max-time 30 -d '{"decision": "allow"}' \
      "$URL_A/sessions/$id/approve" >"$T/code-a" &
    local p=$!
    curl -sS -o "$T/b.json" -w '%{http_code}\n' --max-time 30 -d '{"decision": "allow"}' \
      "$URL_B/sessions/$id/approve" >"$T/code-b"
    wait "$p"
    wait "$h"
    cat "$T/code-a" "$T/code-b" >"$T/codes"
    [[ $(sort "$T/codes" | tr '\n' ' ') == "200 409 " ]] ||
      { cat "$T/codes" "$T/a.json" "$T/b.json"; return 1; }
    wait_on "$URL_B" "$id" done
    [[ $(jq -r .result <<<"$body") == "dbl$round" ]]
    # Applied once: one decision in the journal, one fetch performed.
    [[ $(sql "SELECT COUNT(*) FROM journal WHERE session = '$id' AND line LIKE '%\"kind\":\"decided\"%'") == 1 ]] || { cat "$T/codes" "$T/a.json" "$T/b.json" "$T/A.err" "$T/B.err"; sql "SELECT line FROM journal WHERE session = '$id'"; return 1; }
    [[ $(hits "dbl$round") == 1 ]] || { cat "$T/hits"; return 1; }
    # A second answer is a conflict whichever replica gets it.
    grep -q 409 "$T/codes" && grep -q '"code":"conflict"' "$T/a.json" "$T/b.json"
  done
}

@test "serve-replicas: cancel through a replica that does not own the session stops its run" {
  start_replica A
  start_replica B
  req -X POST -d '{"input": {"mode": "slow", "ms": 60000, "tag": "cx"}, "wait": false}' "$URL_A/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  wait_on "$URL_B" "$id" running
  for ((i = 0; i < 100; i++)); do [[ $(hits cx) == 1 ]] && break; sleep 0.1; done
  [[ $(sql "SELECT owner FROM sessions WHERE id = '$id'") != "" ]]
  req -X POST "$URL_B/sessions/$id/cancel"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == cancelled ]] || { echo "$body"; return 1; }
  [[ $(jq -r .exit <<<"$body") == 130 ]]
  [[ $(jq -r .error.message <<<"$body") == *"cancelled by tenant default"* ]]
  # A's box is gone: nothing of it runs.
  req "$URL_A/sessions/$id"
  [[ $(jq -r .status <<<"$body") == cancelled ]]
  [[ $(sql "SELECT COALESCE(owner, 'none') FROM sessions WHERE id = '$id'") == none ]]
  # A session no live replica owns (its owner died, its lease expired, and B
  # has no free slot to take it over) is cancelled directly by the one asked.
  stop_replica B
  start_replica B --max-running 1 --max-queued 0
  req -X POST -d '{"input": {"mode": "slow", "ms": 60000, "tag": "cb"}, "wait": false}' "$URL_B/sessions"
  assert_code 202
  req -X POST -d '{"input": {"mode": "slow", "ms": 60000, "tag": "cy"}, "wait": false}' "$URL_A/sessions"
  assert_code 202
  id=$(jq -r .id <<<"$body")
  for ((i = 0; i < 300; i++)); do [[ $(hits cy) == 1 && $(hits cb) == 1 ]] && break; sleep 0.1; done
  kill_replica A
  for ((i = 0; i < 300; i++)); do
    [[ $(sql "SELECT lease_until < now() FROM sessions WHERE id = '$id'") == t ]] && break
    sleep 0.1
  done
  req -X POST "$URL_B/sessions/$id/cancel"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == cancelled && $(jq -r .exit <<<"$body") == 130 ]] || { echo "$body"; return 1; }
  [[ $(jq -r .error.message <<<"$body") == *"no live replica ran it"* ]] || { echo "$body"; return 1; }
  [[ $(hits cy) == 1 ]]
}

@test "serve-replicas: SSE through a replica that does not run the session sees its events as they come, to the end" {
  start_replica A
  start_replica B
  req -X POST -d '{"input": {"mode": "logs", "n": 8}, "wait": false}' "$URL_A/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  curl -sS -N --max-time 60 "$URL_B/sessions/$id/events" >"$T/sse"
  grep -q '^event: done$' "$T/sse" || { cat "$T/sse"; return 1; }
  [[ $(grep -c '^event: log$' "$T/sse") == 8 ]] || { cat "$T/sse"; return 1; }
  grep -q '"message":"line 7"' "$T/sse"
  # The ids are the store's sequence, in order, each once.
  grep '^id: ' "$T/sse" | cut -d' ' -f2 >"$T/ids"
  sort -n -u "$T/ids" | diff - "$T/ids"
  req "$URL_B/sessions/$id"
  [[ $(jq -r .status <<<"$body") == done && $(jq -r .result <<<"$body") == logged ]]
}

@test "serve-replicas: kill -9 of the owner of a running session: another replica finishes it after the lease; the fetch in flight is not performed twice" {
  start_replica A
  start_replica B
  start_replica C
  req -X POST -d '{"input": {"mode": "slow", "ms": 60000, "tag": "k9"}, "wait": false}' "$URL_A/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  local i
  for ((i = 0; i < 300; i++)); do [[ $(hits k9) == 1 ]] && break; sleep 0.1; done
  [[ $(hits k9) == 1 ]]
  local owner; owner=$(sql "SELECT owner FROM sessions WHERE id = '$id'")
  grep -q "^Replica: $owner " "$T/A.err" || { echo "owner $owner"; cat "$T/A.err"; return 1; }
  local t0=$SECONDS
  kill_replica A
  wait_on "$URL_B" "$id" done 30
  local took=$((SECONDS - t0))
  # The lease (3 s) and a few seconds of a loaded machine.
  ((took <= 20)) || { echo "took $took s"; return 1; }
  [[ $(jq -r .result.interrupted <<<"$body") == *interrupted* ]] || { echo "$body"; return 1; }
  [[ $(hits k9) == 1 ]] || { cat "$T/hits"; return 1; }
  local now; now=$(sql "SELECT COALESCE(owner, 'none') || ' ' || epoch FROM sessions WHERE id = '$id'")
  [[ $now == "none 2" ]] || { echo "$now"; return 1; }
  cat "$T/B.err" "$T/C.err" | grep -q "took over 0 queued and 1 running session(s)"
}

@test "serve-replicas: 200 sessions spread over three replicas, one of them killed and restarted midway: none lost, none run twice" {
  start_replica A --max-running 4 --max-queued 256
  start_replica B --max-running 4 --max-queued 256
  # C runs one at a time: it has a backlog when it dies.
  start_replica C --max-running 1 --max-queued 256
  local i url ids=()
  for ((i = 0; i < 200; i++)); do
    case $((i % 3)) in 0) url=$URL_A ;; 1) url=$URL_B ;; 2) url=$URL_C ;; esac
    req -X POST -d "{\"input\": {\"mode\": \"hit\", \"tag\": \"m$i\", \"ms\": 1500}, \"wait\": false}" "$url/sessions"
    assert_code 202
    ids+=("$(jq -r .id <<<"$body")")
    if ((i == 120)); then
      # C dies with sessions queued and running; a new C (a new replica id) starts.
      local cid backlog; cid=$(sed -n 's/^Replica: \([^ ]*\) .*/\1/p' "$T/C.err")
      backlog=$(sql "SELECT COUNT(*) FROM sessions WHERE status IN ('queued', 'running') AND owner = '$cid'")
      ((backlog > 1)) || { echo "C ($cid) has $backlog session(s)"; sql "SELECT status, owner FROM sessions" | sort | uniq -c; return 1; }
      mv "$T/C.err" "$T/C1.err"
      kill_replica C
      start_replica C --max-running 4 --max-queued 256
    fi
  done
  local left
  for ((i = 0; i < 600; i++)); do
    left=$(sql "SELECT COUNT(*) FROM sessions WHERE status <> 'done'")
    [[ $left == 0 ]] && break
    sleep 0.2
  done
  [[ $left == 0 ]] || { sql "SELECT id, status, owner, error FROM sessions WHERE status <> 'done'"; return 1; }
  [[ $(sql "SELECT COUNT(*) FROM sessions") == 200 ]]
  # Each run to its end once: one end line in each journal (a second run,
  # even one whose fetch a replay answered, writes a second).
  local ends; ends=$(sql "SELECT COUNT(*) FROM (SELECT session FROM journal WHERE line LIKE '{\"type\":\"end\"%' GROUP BY session HAVING COUNT(*) = 1) e")
  [[ $ends == 200 ]] || { echo "$ends sessions ended once"; sql "SELECT session, COUNT(*) FROM journal WHERE line LIKE '{\"type\":\"end\"%' GROUP BY session HAVING COUNT(*) <> 1"; return 1; }
  # None run twice: no tag hit more than once.  A session whose fetch was in
  # flight when C died is not performed again: it ends with "interrupted".
  local twice; twice=$(grep -o 's=m[0-9]*' "$T/hits" | sort | uniq -d)
  [[ -z $twice ]] || { echo "performed twice: $twice"; return 1; }
  local performed; performed=$(grep -o 's=m[0-9]*' "$T/hits" | sort -u | wc -l)
  local results; results=$(sql "SELECT COUNT(*) FROM sessions WHERE result LIKE '\"m%'")
  [[ $performed -ge 196 && $results -ge 196 ]] || { echo "performed $performed, results $results"; return 1; }
  # Every session that returned its tag had its fetch performed.
  sql "SELECT trim(both '\"' from result) FROM sessions WHERE result LIKE '\"m%'" | sort >"$T/returned"
  grep -o 's=m[0-9]*' "$T/hits" | cut -c3- | sort >"$T/performed"
  comm -23 "$T/returned" "$T/performed" >"$T/missing"
  [[ ! -s $T/missing ]] || { echo "returned without a fetch:"; cat "$T/missing"; return 1; }
  # The dead C's sessions were taken over (by A, B or the new C).
  cat "$T/A.err" "$T/B.err" "$T/C.err" | grep -q "took over [0-9]* queued and [0-9]* running session(s)"
}

@test "serve-replicas: a PostgreSQL restart under three replicas: each says not ready, then ready; a paused and a running session are not lost, the running one ends once" {
  start_replica A
  start_replica B
  start_replica C
  req -X POST -d '{"input": {"mode": "ask"}}' "$URL_A/sessions"
  assert_code 201
  local paused; paused=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  req -X POST -d '{"input": {"mode": "timer", "ms": 4000, "tag": "pg"}, "wait": false}' "$URL_B/sessions"
  assert_code 202
  local running; running=$(jq -r .id <<<"$body")
  wait_on "$URL_B" "$running" running 30
  pg_stop
  PG_DOWN=1 # teardown starts it again should this test fail before it does
  local n i
  for n in A B C; do
    local u="URL_$n"
    # at once, even on B, whose session holds a journal batch open
    req "${!u}/readyz"
    assert_code 503
    [[ $(jq -r '"\(.status) \(.store)"' <<<"$body") == "unavailable postgres" ]] || { echo "$n: $body"; return 1; }
  done
  pg_startup
  PG_DOWN=
  for n in A B C; do
    local u="URL_$n"
    for ((i = 0; i < 150; i++)); do req "${!u}/readyz"; [[ $code == 200 ]] && break; sleep 0.2; done
    assert_code 200
  done
  # The running session ends (resumed by its owner or taken over), once.
  wait_on "$URL_C" "$running" done 60
  [[ $(jq -c .result <<<"$body") == '"timer pg"' ]] || { echo "$body"; return 1; }
  [[ $(sql "SELECT COUNT(*) FROM journal WHERE session = '$running' AND line LIKE '{\"type\":\"end\"%'") == 1 ]]
  # The paused one answers through another replica.
  req -X POST -d '{"value": "after"}' "$URL_C/sessions/$paused/input"
  assert_code 200
  [[ $(jq -c .result <<<"$body") == '{"w":"no_workspace","v":"after"}' ]] || { echo "$body"; return 1; }
  [[ $(sql "SELECT COUNT(*) FROM sessions") == 2 ]]
}

@test "serve-replicas: a malformed --replica-id, --lease, CHIDORI_REPLICA_ID or CHIDORI_LEASE is a usage error (exit 2) naming it" {
  chid serve "$T/agent.js" --store "$STORE" --replica-id 'a b'
  assert_status 2
  assert_stderr_has "--replica-id 'a b' is not a replica id (expected 1 to 64 letters, digits, '.', '_' or '-'"
  chid serve "$T/agent.js" --store "$STORE" --replica-id "$(printf 'x%.0s' {1..65})"
  assert_status 2
  assert_stderr_has "is not a replica id"
  chid serve "$T/agent.js" --store "$STORE" --lease 0
  assert_status 2
  assert_stderr_has "--lease '0' is not valid (expected an integer from 1 to 3600)"
  CHIDORI_LEASE=10s chid serve "$T/agent.js" --store "$STORE"
  assert_status 2
  assert_stderr_has "CHIDORI_LEASE '10s' is not valid"
  CHIDORI_REPLICA_ID='a;b' chid serve "$T/agent.js" --store "$STORE"
  assert_status 2
  assert_stderr_has "CHIDORI_REPLICA_ID 'a;b' is not a replica id"
  # Given well, the banner names it.
  start_replica A --replica-id pod-a-0 --lease 7
  grep -q '^Replica: pod-a-0 (leases of 7 s)$' "$T/A.err"
  CHIDORI_REPLICA_ID=pod-b-0 CHIDORI_LEASE=5 start_replica B
  grep -q '^Replica: pod-b-0 (leases of 3 s)$' "$T/B.err" # the flag (--lease 3 of start_replica) wins
  req -X POST -d '{"input": 1}' "$URL_B/sessions"
  assert_code 201
}
