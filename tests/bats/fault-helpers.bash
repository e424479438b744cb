# tests/bats/fault-helpers.bash: faults injected on the parent's side (fault.bats,
# fault-serve.bats; docs/faults.md).  Mounts happen only in private mount
# namespaces the tests make with `unshare -m --propagation private`; every
# chidori of a test writes its temporary files under $T/tmp (TMPDIR), so
# "nothing left behind" is checked on that folder, on the test's own cgroup
# directories and on the processes the test saw.

setup() {
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_RUN_BROKER
  mkdir -p "$T/tmp"
  export TMPDIR="$T/tmp"
  SEEN_PIDS=()
}

need_unshare() {
  command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
  [[ $(id -u) == 0 ]] || skip "mounts in a private mount namespace need root"
}

# The directory a launcher's cgroup goes in: this process's own cgroup (the
# memory controller's on cgroup v1, else v2's).
cg_parent() {
  local p
  p=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
  if [[ -n $p ]]; then echo "/sys/fs/cgroup/memory${p%/}"; return; fi
  p=$(sed -n 's/^0:://p' /proc/self/cgroup)
  echo "/sys/fs/cgroup${p%/}"
}

# The cgroup directories of launcher PID (chidori-PID-<start>-<pidns>).
cg_of() { # PID
  compgen -G "$(cg_parent)/chidori-$1-*" || true
}

# PID and its descendants, now.
tree_pids() { # PID
  local c
  echo "$1"
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree_pids "$c"; done
}

# Remembers the processes of PID's tree (monitor, broker, worker, ...).
see_tree() { # PID
  local p
  for p in $(tree_pids "$1"); do SEEN_PIDS+=("$p"); done
}

alive() { # PID: running (a zombie has ended)
  [[ -r /proc/$1/stat ]] && [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) != Z ]]
}

# The pid of the process named NAME in PID's tree, waiting up to 30 s.
pid_in_tree() { # PID NAME
  local i p
  for ((i = 0; i < 300; i++)); do
    for p in $(tree_pids "$1"); do
      [[ $(cat /proc/"$p"/comm 2>/dev/null) == "$2" ]] && { echo "$p"; return 0; }
    done
    sleep 0.1
  done
  echo "no $2 below $1"; return 1
}

wait_for() { # FILE TEXT: until FILE contains TEXT, up to 30 s
  local i
  for ((i = 0; i < 300; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no '$2' in $1 after 30 s:"; cat "$1"; return 1
}

# Nothing left behind: no process seen is still running (up to 10 s for a
# killed one to go), no cgroup directory of the given launchers, nothing in
# $T/tmp.
assert_nothing_left() { # LAUNCHER_PID...
  local p i l
  for p in "${SEEN_PIDS[@]}"; do
    for ((i = 0; i < 100; i++)); do alive "$p" || break; sleep 0.1; done
    if alive "$p"; then echo "process $p ($(cat /proc/"$p"/comm)) is still running"; return 1; fi
  done
  for l in "$@"; do
    [[ -z $(cg_of "$l") ]] || { echo "cgroup left: $(cg_of "$l")"; return 1; }
  done
  [[ -z $(ls -A "$T/tmp") ]] || { echo "temporary files left:"; ls -la "$T/tmp"; return 1; }
}

# Every line of a journal is a whole JSON object and the file ends with a newline.
assert_whole_lines() { # FILE
  [[ -s $1 && $(tail -c 1 "$1" | od -An -tx1 | tr -d ' ') == 0a ]] || { echo "$1 does not end with a newline"; tail -c 200 "$1"; return 1; }
  jq -e -c 'type == "object"' "$1" >/dev/null || { echo "$1 has a line that is not a JSON object"; return 1; }
}

# A fake HTTP server on loopback: FAKE_PID, FP (its port).
start_fake_http() {
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --verbose --host 127.0.0.1 --port 0 >"$T/port" 2>"$T/fake.log" 3>&- &
  FAKE_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do [[ -s $T/port ]] && break; sleep 0.05; done
  FP=$(head -1 "$T/port")
  [[ -n $FP ]]
}

# Until a client holds a connection to the fake server open (its request in flight), up to 30 s.
wait_for_connection() { # PORT
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -n $(ss -Htn state established "( dport = :$1 )" 2>/dev/null) ]] && return 0
    sleep 0.1
  done
  echo "no connection to port $1 after 30 s"; return 1
}
