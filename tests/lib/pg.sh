# tests/lib/pg.sh — a throwaway PostgreSQL cluster for the tests
# (tests/bats/serve-pg.bats): initdb + pg_ctl in a temporary folder,
# listening on a unix socket in it and on 127.0.0.1 at a free port,
# password (scram) authentication; stopped and removed by pg_teardown (only
# the postmaster pg_start started).  As root the cluster runs as the
# `postgres` user (initdb refuses root); else as the caller.
#
#   pg_available          0 when initdb and pg_ctl exist (else PG_MISSING says why)
#   pg_start              sets PGT (folder), PGSOCK (socket folder), PGPORT_T,
#                         PG_URL (unix socket) and PG_TCP_URL, creates database chidori
#   pg_stop / pg_startup  stop and start the same cluster (a restart mid-session)
#   pg_teardown           stop it, remove the folder
#   pg_psql SQL           run SQL in database chidori
#   pg_suite_start / pg_suite_stop   a bats setup_file / teardown_file around one cluster

PG_PASSWORD=chidori-test-pw

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x $d/initdb && -x $d/pg_ctl ]] && { echo "$d"; return 0; }
  done
  return 1
}

pg_available() {
  PG_BIN=$(pg_bin) || { PG_MISSING="PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; scripts/deps.sh installs the package postgresql)"; return 1; }
  if [[ $(id -u) == 0 ]] && ! id postgres >/dev/null 2>&1; then
    PG_MISSING="no user postgres to run the cluster as (the package postgresql creates it)"; return 1
  fi
  return 0
}

pg_as() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pg_start() {
  pg_available || return 1
  PGT=$(mktemp -d /tmp/chidori-pg.XXXXXX)
  chmod 0755 "$PGT"
  mkdir -p "$PGT/sock" "$PGT/data" "$PGT/log"
  chmod 0755 "$PGT/sock"
  chmod 0700 "$PGT/data"
  printf '%s\n' "$PG_PASSWORD" >"$PGT/pw"
  if [[ $(id -u) == 0 ]]; then chown postgres: "$PGT/sock" "$PGT/data" "$PGT/log" "$PGT/pw"; fi
  PGSOCK=$PGT/sock
  PGPORT_T=$(pg_free_port)
  pg_as "$PG_BIN/initdb" -D "$PGT/data" -U postgres --pwfile="$PGT/pw" --auth=scram-sha-256 -E UTF8 \
    --locale=C.UTF-8 >"$PGT/initdb.log" 2>&1 || { cat "$PGT/initdb.log"; return 1; }
  pg_startup || return 1
  PG_URL="postgres://postgres:$PG_PASSWORD@/chidori?host=$PGSOCK&port=$PGPORT_T"
  PG_TCP_URL="postgresql://postgres:$PG_PASSWORD@127.0.0.1:$PGPORT_T/chidori"
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d postgres -qAtc \
    'CREATE DATABASE chidori' >/dev/null || return 1
}

pg_startup() {
  pg_as "$PG_BIN/pg_ctl" -D "$PGT/data" -l "$PGT/log/server.log" -w -t 60 \
    -o "-k $PGSOCK -p $PGPORT_T -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null ||
    { cat "$PGT/log/server.log"; return 1; }
}

pg_stop() {
  pg_as "$PG_BIN/pg_ctl" -D "$PGT/data" -m fast -w -t 60 stop >/dev/null
}

pg_psql() {
  PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h "$PGSOCK" -p "$PGPORT_T" -U postgres -d chidori -qAtc "$1"
}

pg_teardown() {
  [[ -n ${PGT:-} && -d $PGT ]] || return 0
  [[ -f $PGT/data/postmaster.pid ]] && pg_stop 2>/dev/null
  rm -rf "$PGT"
  PGT=
}

# A bats file's setup_file / teardown_file around one cluster for all its
# tests: PG_SKIP says why the tests skip when PostgreSQL is not installed.
pg_suite_start() {
  if ! pg_available; then
    export PG_SKIP="$PG_MISSING"
    return 0
  fi
  pg_start >&3 2>&1 || { echo "# could not start PostgreSQL" >&3; return 1; }
  export PGT PGSOCK PGPORT_T PG_URL PG_TCP_URL PG_BIN
}

pg_suite_stop() {
  [[ -n ${PGT:-} ]] && pg_teardown
  return 0
}
