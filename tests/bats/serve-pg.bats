#!/usr/bin/env bats
# chidori serve --store postgres://...: the server's sessions, journals and
# events in PostgreSQL (a throwaway cluster of tests/lib/pg.sh, on a unix
# socket in a temporary folder, and once over TCP on 127.0.0.1), what a
# curl user sees, what the rows hold, restarts of the server and of the
# database, and the bad inputs (exit codes and messages).  Skipped, saying
# why, only when PostgreSQL is not installed.

load helpers
load serve-helpers
source "$BATS_TEST_DIRNAME/../lib/pg.sh"

setup_file() { pg_suite_start; }
teardown_file() { pg_suite_stop; }

setup() {
  [[ -z ${PG_SKIP:-} ]] || skip "$PG_SKIP"
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_STORE
  # A database of its own per test: no test sees another's sessions.
  DB=t$BATS_SUITE_TEST_NUMBER
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d postgres -qAtc \
    "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null 2>&1
  STORE="postgres://postgres:$PG_PASSWORD@/$DB?host=$PGSOCK&port=$PGPORT_T"
}

sql() {
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d "$DB" -qAtc "$1"
}

# The password is never printed: banner, errors, logs.
no_password() {
  if grep -q "$PG_PASSWORD" "$T/server.err" "$T/server.out" 2>/dev/null; then
    echo "the password was printed:"; cat "$T/server.err"; return 1
  fi
}

@test "serve-pg: create, result, list, events, journal and delete on PostgreSQL; rows hold the text as written" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  grep -q "^Store: postgres postgres://postgres:\*\*\*@/$DB?host=$PGSOCK" "$T/server.err"
  no_password
  req "$URL/readyz"
  assert_code 200
  [[ $(jq -r '"\(.status) \(.store)"' <<<"$body") == "ready postgres" ]]
  # Numbers and escapes as the caller wrote them: 1.50, 1e2 and \u0000 survive (jsonb would not).
  req -X POST -d '{"input": {"n": 1.50, "e": 1e2, "z": "a\u0000b"}}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" done
  [[ $(jq -r .result.echo.z <<<"$body" | od -c | head -1) == *'a  \0   b'* ]]
  [[ $(sql "SELECT input FROM sessions WHERE id = '$id'") == '{"n":1.50,"e":1e2,"z":"a\u0000b"}' ]]
  [[ $(sql "SELECT data_type FROM information_schema.columns WHERE table_name = 'journal' AND column_name = 'line'") == text ]]
  [[ $(sql "SELECT version FROM chidori_schema") == 3 ]]
  # The journal: what GET /journal serves is the rows, in order.
  req "$URL/sessions/$id/journal"
  assert_code 200
  [[ $(head -1 <<<"$body" | jq -r .type) == header ]]
  [[ $(wc -l <<<"$body") == $(sql "SELECT COUNT(*) FROM journal WHERE session = '$id'") ]]
  [[ $(sql "SELECT line FROM journal WHERE session = '$id' ORDER BY seq" ) == "$body" ]]
  # List, and the events of the run.
  req "$URL/sessions"
  [[ $(jq -r '.sessions | length' <<<"$body") == 1 && $(jq -r '.sessions[0].id' <<<"$body") == "$id" ]]
  curl -sS -N --max-time 20 "$URL/sessions/$id/events" >"$T/sse"
  grep -q '^event: done$' "$T/sse"
  [[ $(sql "SELECT COUNT(*) FROM events WHERE session = '$id'") -ge 2 ]]
  # Delete: the session, its journal and events are gone.
  req -X DELETE "$URL/sessions/$id"
  assert_code 204
  req "$URL/sessions/$id"
  assert_code 404
  [[ $(sql "SELECT (SELECT COUNT(*) FROM sessions) + (SELECT COUNT(*) FROM journal) + (SELECT COUNT(*) FROM events)") == 0 ]]
  no_password
}

@test "serve-pg: approval and input pause (no worker left) and resume by replay of the journal in PostgreSQL" {
  cat >"$T/agent.js" <<'JS'
export default async () => {
  let w;
  try { await chidori.workspace.write("a.txt", "x"); w = "written"; } catch (e) { w = e.code; }
  const v = await chidori.input("your name?");
  return { w, v };
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE" --trusted
  req -X POST -d '{"policy_profile": "supervised"}' "$URL/sessions"
  assert_code 201
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitingapproval ]]
  ! pgrep -P "$(sup_of "$SERVER_PID")" >/dev/null
  [[ $(sql "SELECT status FROM sessions WHERE id = '$id'") == awaitingapproval ]]
  [[ $(sql "SELECT pending FROM sessions WHERE id = '$id'") == *'"approval"'* ]]
  req -X POST -d '{"decision": "allow", "approval_id": 1}' "$URL/sessions/$id/approve"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  req -X POST -d '{"value": {"name": "bob", "n": 1.50}}' "$URL/sessions/$id/input"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == done ]]
  [[ $(jq -c .result <<<"$body") == '{"w":"no_workspace","v":{"name":"bob","n":1.5}}' ]]
  # Who approved is in the journal rows.
  [[ $(sql "SELECT COUNT(*) FROM journal WHERE session = '$id' AND line LIKE '%approved by tenant default%'") == 1 ]]
  # Replay: the journal read back from the database runs to the same result.
  req -X POST "$URL/sessions/$id/replay"
  assert_code 200
  [[ $(jq -c '[.matched, .result]' <<<"$body") == '[true,{"w":"no_workspace","v":{"name":"bob","n":1.5}}]' ]]
  no_password
}

@test "serve-pg: a restart of the server keeps every session; a paused one resumes after it" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => ({ v: await chidori.input("more?"), input });
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  req -X POST -d '{"input": 7}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  stop_server
  # Another state dir: nothing of the session is on this machine's disk.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --store "$STORE"
  req "$URL/sessions/$id"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  req -X POST -d '{"value": "yes"}' "$URL/sessions/$id/input"
  assert_code 200
  [[ $(jq -c .result <<<"$body") == '{"v":"yes","input":7}' ]]
  [[ ! -e $T/st2/serve.db ]]
}

@test "serve-pg: a PostgreSQL restart mid-session: /readyz 503 naming the store, then 200; the session is not lost" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => ({ v: await chidori.input("more?"), input });
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  req -X POST -d '{"input": 1}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  pg_stop
  req "$URL/readyz"
  assert_code 503
  [[ $(jq -r '"\(.status) \(.store) \(.error.code)"' <<<"$body") == "unavailable postgres unavailable" ]]
  [[ $(jq -r .error.message <<<"$body") == *"postgres://postgres:***@/$DB"* ]]
  [[ $body != *"$PG_PASSWORD"* ]]
  req -X POST -d '{"input": 2}' "$URL/sessions"
  assert_code 503
  pg_startup
  req "$URL/readyz"
  assert_code 200
  [[ $(jq -r .status <<<"$body") == ready ]]
  req -X POST -d '{"value": "back"}' "$URL/sessions/$id/input"
  assert_code 200
  [[ $(jq -c .result <<<"$body") == '{"v":"back","input":1}' ]]
  no_password
}

@test "serve-pg: a session running while PostgreSQL is down is resumed by replay once it is back, without a server restart" {
  cat >"$T/agent.js" <<'JS'
export default async () => { await new Promise((r) => setTimeout(r, 4000)); await chidori.memory.set("k", 1); return "finished"; };
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  req -X POST -d '{"wait": false}' "$URL/sessions"
  assert_code 202
  local id; id=$(jq -r .id <<<"$body")
  wait_status "$id" running
  pg_stop
  # Its run ends while nothing can be recorded (bounded wait on the server's own words).
  local i
  for ((i = 0; i < 300; i++)); do grep -q "session $id: .*the connection is lost" "$T/server.err" && break; sleep 0.2; done
  grep -q "session $id: .*the connection is lost" "$T/server.err"
  kill -0 "$SERVER_PID" # the server (and its broker) still runs
  pg_startup
  wait_status "$id" done
  [[ $(jq -c .result <<<"$body") == '"finished"' ]]
  # Resumed by the server whose lease it is (or, had the outage outlasted the
  # lease, taken over as an expired one: by this server, the only one).
  grep -Eq "the store answers again: 1 session\(s\) resumed by replay|took over 0 queued and 1 running session" \
    "$T/server.err" || { cat "$T/server.err"; return 1; }
  no_password
}

@test "serve-pg: over TCP (postgresql://USER:PASSWORD@127.0.0.1:PORT/DB) and with the password in PGPASSWORD" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "postgresql://postgres:$PG_PASSWORD@127.0.0.1:$PGPORT_T/$DB"
  grep -q "^Store: postgres postgresql://postgres:\*\*\*@127.0.0.1:$PGPORT_T/$DB\$" "$T/server.err"
  req -X POST -d '{"input": "tcp"}' "$URL/sessions"
  assert_code 201
  [[ $(jq -c .result <<<"$body") == '{"echo":"tcp"}' ]]
  no_password
  stop_server
  # CHIDORI_STORE, and libpq's own PGPASSWORD (the broker's environment gets it from here).
  PGPASSWORD=$PG_PASSWORD CHIDORI_STORE="postgres://postgres@127.0.0.1:$PGPORT_T/$DB" \
    start_server --listen 127.0.0.1:0 --state-dir "$T/st"
  req "$URL/sessions"
  [[ $(jq -r '.sessions | length' <<<"$body") == 1 ]]
  no_password
}

@test "serve-pg: a malformed --store or CHIDORI_STORE is a usage error naming the accepted forms, without the password" {
  echo 'export default () => 1' >"$T/agent.js"
  chid serve "$T/agent.js" --store mysql://u:hunter2@h/db
  assert_status 2
  assert_stderr_has "is not a store (expected sqlite:PATH, postgres://"
  [[ $stderr != *hunter2* ]]
  CHIDORI_STORE=nonsense chid serve "$T/agent.js"
  assert_status 2
  assert_stderr_has "'nonsense' is not a store"
  # The flag wins over CHIDORI_STORE.
  CHIDORI_STORE="sqlite:$T/x.db" chid serve "$T/agent.js" --store other
  assert_status 2
  assert_stderr_has "'other' is not a store"
  # The rest of the URL is libpq's to check (in the broker): still a usage error.
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --store "postgres://u:hunter2@h/db?bogus=1"
  assert_status 2
  assert_stderr_has '--store postgres://u:***@h/db?bogus=1 is not a valid PostgreSQL URL: invalid URI query parameter: "bogus"'
  [[ $stderr != *hunter2* ]]
  chid serve "$T/agent.js" --store sqlite:
  assert_status 2
}

@test "serve-pg: an unreachable database at start exits 78 naming the host, not the password" {
  echo 'export default () => 1' >"$T/agent.js"
  mkdir -p "$T/nosock"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" \
    --store "postgres://postgres:$PG_PASSWORD@/$DB?host=$T/nosock&connect_timeout=5"
  assert_status 78
  assert_stderr_has "cannot connect to the PostgreSQL database postgres://postgres:***@/$DB?host=$T/nosock"
  assert_stderr_has "(host $T/nosock)"
  [[ $stderr != *"$PG_PASSWORD"* ]]
  # A socket folder that does not exist at all: the same exit, before the broker starts.
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" \
    --store "postgres://postgres:$PG_PASSWORD@/$DB?host=$T/gone"
  assert_status 78
  assert_stderr_has "cannot connect to the PostgreSQL database postgres://postgres:***@/$DB?host=$T/gone (host $T/gone): its socket folder: No such file or directory"
  [[ $stderr != *"$PG_PASSWORD"* ]]
  # TCP: a port nothing listens on.
  local port; port=$(pg_free_port)
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" \
    --store "postgres://postgres:$PG_PASSWORD@127.0.0.1:$port/$DB?connect_timeout=5"
  assert_status 78
  assert_stderr_has "(host 127.0.0.1)"
  assert_stderr_has "Connection refused"
  [[ $stderr != *"$PG_PASSWORD"* ]]
}

@test "serve-pg: a wrong password exits 78 with the server's message" {
  echo 'export default () => 1' >"$T/agent.js"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" \
    --store "postgres://postgres:wrong-pw@/$DB?host=$PGSOCK&port=$PGPORT_T"
  assert_status 78
  assert_stderr_has 'password authentication failed for user "postgres"'
  [[ $stderr != *wrong-pw* ]]
}

@test "serve-pg: a schema written by a newer chidori is refused (exit 78 naming the versions)" {
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  stop_server
  sql "UPDATE chidori_schema SET version = 99"
  chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  assert_status 78
  assert_stderr_has "has chidori schema version 99, written by a newer chidori (this one knows versions up to 3)"
  [[ $stderr != *"$PG_PASSWORD"* ]]
}

# The broker's own process: below the supervisor as root (chidori-privhelper's pid), else below the server's.
broker_of() {
  local top=$1 m
  m=$(pgrep -P "$top" -x chidori-monitor | head -n 1)
  pgrep -P "${m:-$top}" -x chidori-broker | head -n 1
}

@test "serve-pg: no binary links libpq; the broker loads it when a postgres store is opened, not for SQLite" {
  local b
  for b in "$CHIDORI" "$(dirname "$CHIDORI")/chidori-broker" "$(dirname "$CHIDORI")/chidori-monitor"; do
    run ldd "$b"
    [[ $output != *libpq* ]]
  done
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  b=$(broker_of "$SERVER_PID")
  [[ -n $b ]]
  grep -q 'libpq\.so' "/proc/$b/maps"
  stop_server
  start_server --listen 127.0.0.1:0 --state-dir "$T/st-sqlite"
  b=$(broker_of "$SERVER_PID")
  [[ -n $b ]]
  run grep -c 'libpq\.so' "/proc/$b/maps"
  [[ $output == 0 ]]
}

@test "serve-pg: the one-process server (CHIDORI_RUN_BROKER=0) refuses postgres (exit 2)" {
  echo 'export default () => 1' >"$T/agent.js"
  CHIDORI_RUN_BROKER=0 chid serve "$T/agent.js" --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  assert_status 2
  assert_stderr_has "a PostgreSQL store is served by the broker (chidori-broker loads libpq)"
  [[ $(sql "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'sessions'") == 0 ]]
  [[ $stderr != *"$PG_PASSWORD"* ]]
}

@test "serve-pg: agent memory lives in PostgreSQL: kept across a session's runs and across servers with other state dirs" {
  cat >"$T/agent.js" <<'JS'
export default async (input) => {
  if (input === "read") return { got: await chidori.memory.get("k") };
  await chidori.memory.set("k", { n: 1.50, s: "a\u0000b" });
  const v = await chidori.input("more?");
  return { v, got: await chidori.memory.get("k"), keys: await chidori.memory.list() };
};
JS
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE"
  req -X POST -d '{"input": "write"}' "$URL/sessions"
  local id; id=$(jq -r .id <<<"$body")
  [[ $(jq -r .status <<<"$body") == awaitinginput ]]
  # The value's text as the agent's JSON.stringify wrote it.
  [[ $(sql "SELECT value FROM memory WHERE key = 'k'") == '{"n":1.5,"s":"a\u0000b"}' ]]
  [[ $(sql "SELECT ns FROM memory WHERE key = 'k'") == *"$id"* ]]
  stop_server
  # Another server, another state dir: the resumed run reads the memory from the database.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --store "$STORE"
  req -X POST -d '{"value": 2}' "$URL/sessions/$id/input"
  assert_code 200
  [[ $(jq -c .result <<<"$body") == '{"v":2,"got":{"n":1.5,"s":"a\u0000b"},"keys":["k"]}' ]]
  stop_server
  # --shared-memory: every session's namespace is the agent's; a new session reads what the first wrote.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st3" --store "$STORE" --shared-memory
  req -X POST -d '{"input": "write"}' "$URL/sessions"
  req -X POST -d '{"input": "read"}' "$URL/sessions"
  [[ $(jq -c .result <<<"$body") == '{"got":{"n":1.5,"s":"a\u0000b"}}' ]]
}

@test "serve-pg: serve-approve.bats and serve-events.bats pass with every server on PostgreSQL (SERVE_STORE)" {
  # Each of their tests gets a database of its own (serve-helpers.bash, store_args).
  SERVE_STORE="postgres://postgres:$PG_PASSWORD@/{db}?host=$PGSOCK&port=$PGPORT_T" \
    SERVE_STORE_CREATEDB="$PG_BIN/createdb -h $PGSOCK -p $PGPORT_T -U postgres" PGPASSWORD=$PG_PASSWORD \
    run bats "$BATS_TEST_DIRNAME/serve-approve.bats" "$BATS_TEST_DIRNAME/serve-events.bats"
  echo "$output"
  [[ $status -eq 0 ]]
  # One test is skipped (it edits serve.db with sqlite3); every other one ran on PostgreSQL.
  [[ $(grep -c '# skip' <<<"$output") == 1 ]]
  [[ $(PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d postgres -qAtc \
       "SELECT COUNT(*) FROM pg_database WHERE datname LIKE 'tchidoribats%'") -ge 10 ]]
}

@test "serve-pg: a tenant's budget is kept in PostgreSQL: it holds across two sessions, across a restart, and for a second server on the same database" {
  cat >"$T/agent.js" <<'JS'
export default async () => {
  const out = [];
  for (let i = 0; i < 3; i++) {
    try { out.push(await chidori.memory.get("k" + i)); }
    catch (e) { const c = e.cause || e; out.push(c.code); }
  }
  return out;
};
JS
  printf '%s\n' '{"tenant": {"effects": 8}}' >"$T/quotas.json"
  start_server --listen 127.0.0.1:0 --state-dir "$T/st" --store "$STORE" --quotas "$T/quotas.json" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c .result <<<"$body") == '[null,null,null]' ]] || { echo "$body"; false; }
  stop_server
  # Restarted, with another state dir: the use (3) is the database's.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st2" --store "$STORE" --quotas "$T/quotas.json" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c .result <<<"$body") == '[null,null,null]' ]] || { echo "$body"; false; }
  stop_server
  # A second server on the same database sees the 6 used: 2 left.
  start_server --listen 127.0.0.1:0 --state-dir "$T/st3" --store "$STORE" --quotas "$T/quotas.json" --trusted
  req -X POST -d '{"wait": true}' "$URL/sessions"
  [[ $(jq -c .result <<<"$body") == '[null,null,"EQUOTA"]' ]] || { echo "$body"; false; }
  [[ $(jq -r .result[2] <<<"$body") == EQUOTA ]]
  [[ $(sql "SELECT usage FROM tenant_usage WHERE tenant = 'default'") == *'"effects":{"used":8}'* ]] || { sql "SELECT usage FROM tenant_usage"; false; }
  stop_server
}

@test "serve-pg: two servers adding to one tenant's use at once both count (the row is locked for the add)" {
  cat >"$T/agent.js" <<'JS'
export default async () => { for (let i = 0; i < 5; i++) await chidori.memory.get("k" + i); return 5; };
JS
  printf '%s\n' '{"tenant": {"effects": 100000}}' >"$T/quotas.json"
  start_server --listen 127.0.0.1:0 --state-dir "$T/a" --store "$STORE" --quotas "$T/quotas.json" --trusted
  local pid_a=$SERVER_PID url_a=$URL
  cp "$T/server.err" "$T/a.err"
  start_server --listen 127.0.0.1:0 --state-dir "$T/b" --store "$STORE" --quotas "$T/quotas.json" --trusted
  local pid_b=$SERVER_PID url_b=$URL
  local i pids=()
  for i in 1 2 3 4 5 6; do
    curl -sS --max-time 60 -X POST -d '{"wait": true}' "$url_a/sessions" >"$T/ra$i" &
    pids+=($!)
    curl -sS --max-time 60 -X POST -d '{"wait": true}' "$url_b/sessions" >"$T/rb$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  for i in 1 2 3 4 5 6; do
    [[ $(jq -c .result "$T/ra$i") == 5 && $(jq -c .result "$T/rb$i") == 5 ]] || { cat "$T/ra$i" "$T/rb$i"; false; }
  done
  SERVER_PID=$pid_b; stop_server
  SERVER_PID=$pid_a; stop_server
  # 12 sessions x 5 calls: every add counted, none lost to the other server's.
  [[ $(sql "SELECT usage FROM tenant_usage WHERE tenant = 'default'") == *'"effects":{"used":60}'* ]] || { sql "SELECT usage FROM tenant_usage"; false; }
}
