#!/usr/bin/env bats
# Confinement, attack by attack.  Every attack is shown to FAIL in the box and
# to WORK with the layer(s) that stop it turned off (--unsafe-disable) or
# outside the box, so no test passes by accident.  Where two layers each stop
# an attack on their own, both are shown: one off, the other still holds; both
# off, it works.  Syscalls the seccomp prefix denies are probed with bad
# arguments: "reached the kernel: EFAULT/EBADF/EINVAL" tells "not filtered"
# apart from "filtered" (exit 159, named on stderr).
#
# The probe is build/probes/probe (tests/probes/probe.c).  Runs as root from
# `make test`; scripts/rootless-tests.sh also runs this file as an unprivileged
# user, where the tests that need root skip themselves.
load helpers

PROBE=$BUILD_DIR/probes/probe
EXAMPLES=$BATS_TEST_DIRNAME/../../examples

eval "helpers_$(declare -f setup)"
eval "helpers_$(declare -f teardown)"

setup() {
  helpers_setup
  chmod 755 "$T" # the box's uid (65534, or the caller rootless) must reach --bind sources
  BG_PIDS=()
  IPC_KEY=
  unset CHIDORI_ISOLATE_REQUIRE_SANDBOX CHIDORI_ISOLATE_CPU_SECS
}

teardown() {
  local p
  for p in "${BG_PIDS[@]}"; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [[ -n $IPC_KEY ]]; then "$PROBE" ipc-rm "$IPC_KEY" >/dev/null 2>&1 || true; fi
  helpers_teardown
}

is_root() { [[ $(id -u) -eq 0 ]]; }
need_root() { is_root || skip "needs root: $1"; }

# inbox [launch options] -- PROBE-ARGS...   the probe in the box (--quiet)
inbox() {
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  chid launch --quiet "${opts[@]}" -- "$PROBE" "$@"
}

# outside PROBE-ARGS...   the probe as a plain child, same status/output/stderr
outside() {
  set +e
  "$PROBE" "$@" >"$T/.stdout" 2>"$T/.stderr" </dev/null
  status=$?
  set -e
  output=$(cat "$T/.stdout")
  stderr=$(cat "$T/.stderr")
}

# as_worker MODE [run options]   the probe as the engine worker (argv[0] picks MODE)
as_worker() {
  local mode=$1; shift
  ln -sf "$PROBE" "$T/probe-worker-$mode"
  [[ -f $T/w.js ]] || echo 'function main() { return 1; }' >"$T/w.js"
  CHIDORI_WORKER="$T/probe-worker-$mode" chid run --quiet "$@" "$T/w.js"
  # The probe's line comes back as the run's value (a JSON string): unquote
  # it, and give a DENIED line exit status 1 as a plain probe would have.
  if [[ $status -eq 0 && $output =~ ^\"(OK|DENIED)\ .*\"$ ]]; then
    output=${output:1:${#output}-2}
    [[ $output == DENIED* ]] && status=1
  fi
  return 0
}

show() { echo "status: $status"; echo "stdout: $output"; echo "stderr: $stderr"; }

# The variables of an environment listing (one per word, or NUL-separated on
# stdin with -0), sorted, without the sanitizer options a `make asan` run
# passes through on purpose.
env_set() {
  if [[ ${1:-} == -0 ]]; then tr '\0' '\n'; else sed -E 's/^OK ?//' <<<"$output" | tr ' ' '\n'; fi |
    grep -Ev '^(ASAN|UBSAN|LSAN)_OPTIONS=' | grep -v '^$' | sort | xargs
}

expect_ok() { # [substring]
  [[ $status -eq 0 && $output == *OK* && $output == *"$1"* ]] || { echo "expected OK ${1:-}"; show; return 1; }
}
expect_denied() { # ERRNO [ERRNO...]: exit 1 and "DENIED <one of them>"
  local e
  if [[ $status -eq 1 ]]; then
    for e in "$@"; do [[ $output == "DENIED $e "* ]] && return 0; done
  fi
  echo "expected DENIED $*"; show; return 1
}
expect_killed() { # SYSCALL: exit 159, named, and the probe printed nothing
  if [[ $status -ne 159 || $stderr != *"chidori: sandbox violation: blocked syscall $1"* || -n $output ]]; then
    echo "expected exit 159 and 'blocked syscall $1'"; show; return 1
  fi
  [[ $stderr == *"blocked syscall $1"$'\n'* || $stderr == *"blocked syscall $1" ]] || { echo "wrong syscall name"; show; return 1; }
}
expect_warned() { # LAYERS as printed: the --unsafe-disable warning
  assert_stderr_has "chidori: WARNING: sandbox layers DISABLED ($1) by --unsafe-disable"
}

bg() { # FILE CMD...: run CMD in the background (killed by PID in teardown)
  local f=$1; shift
  "$@" >"$f" 2>&1 3>&- </dev/null &
  BG_PIDS+=($!)
  local i
  for i in $(seq 500); do [[ -s $f ]] && return 0; sleep 0.01; done
  echo "background helper printed nothing: $*"; return 1
}

# ---------------------------------------------------------------- network

@test "net: TCP connect to a host listener: Landlock and the net namespace each block it" {
  bg "$T/listen.out" "$PROBE" listen 0
  port=$(awk '{print $3}' "$T/listen.out")
  [[ $port =~ ^[0-9]+$ ]]

  outside tcp-connect 127.0.0.1 "$port"
  expect_ok "read: hello from the host"

  inbox -- tcp-connect 127.0.0.1 "$port"
  expect_denied EACCES                       # Landlock: no TCP connect at all
  inbox --unsafe-disable=net -- tcp-connect 127.0.0.1 "$port"
  expect_warned net
  expect_denied EACCES                       # host network, Landlock alone
  inbox --unsafe-disable=landlock -- tcp-connect 127.0.0.1 "$port"
  expect_denied ECONNREFUSED                 # empty net namespace alone: its lo has no listener
  inbox --unsafe-disable=net,landlock -- tcp-connect 127.0.0.1 "$port"
  expect_warned net,landlock
  expect_ok "read: hello from the host"
}

@test "net: a UDP datagram to a host listener never arrives (the net namespace; Landlock has no UDP rules)" {
  bg "$T/udp.out" "$PROBE" udp-listen 0
  port=$(awk 'NR == 1 {print $3}' "$T/udp.out")
  outside udp-send 127.0.0.1 "$port" from-outside
  expect_ok
  inbox -- udp-send 127.0.0.1 "$port" from-the-box
  expect_ok "sent a datagram"                # sendto succeeds: into the box's own lo
  inbox --unsafe-disable=landlock -- udp-send 127.0.0.1 "$port" from-the-box-without-landlock
  inbox --unsafe-disable=net -- udp-send 127.0.0.1 "$port" from-the-box-without-net
  expect_ok
  for i in $(seq 200); do [[ $(<"$T/udp.out") == *from-the-box-without-net* ]] && break; sleep 0.01; done
  out=$(<"$T/udp.out")
  [[ $out == *"got from-outside"* && $out == *"got from-the-box-without-net"* ]] || { echo "$out"; false; }
  [[ $'\n'$out$'\n' != *$'\ngot from-the-box\n'* && $out != *"without-landlock"* ]] || { echo "$out"; false; }
}

@test "net: socket(AF_INET) exists under launch, but netlink and packet sockets are blocked syscalls" {
  inbox -- socket-inet
  expect_ok "socket(inet)"
  inbox -- socket netlink
  expect_killed socket
  inbox -- socket packet
  expect_killed socket
  inbox --unsafe-disable=seccomp -- socket netlink
  expect_warned seccomp
  expect_ok "socket(netlink)"
}

@test "net: a host abstract unix socket: the net namespace and Landlock's scope each block it" {
  name="chidori-bats-$$-$RANDOM"
  bg "$T/unix.out" "$PROBE" unix-abstract-listen "$name"

  outside unix-abstract-connect "$name"
  expect_ok "hello from the host"

  inbox -- unix-abstract-connect "$name"
  expect_denied ECONNREFUSED                 # another net namespace: another abstract namespace
  inbox --unsafe-disable=net -- unix-abstract-connect "$name"
  expect_denied EPERM                        # Landlock abstract-unix scoping alone
  inbox --unsafe-disable=landlock -- unix-abstract-connect "$name"
  expect_denied ECONNREFUSED
  inbox --unsafe-disable=net,landlock -- unix-abstract-connect "$name"
  expect_ok "hello from the host"
}

# ---------------------------------------------------------------- file system: writes

@test "fs: /, /usr, /etc, /dev and the program's folder are read-only (the mount layer alone too)" {
  progdir=$(dirname "$(realpath "$PROBE")")
  for p in / /usr/ /etc/ /dev/ "$progdir/"; do
    inbox -- write-path "${p}chidori-probe-$$"
    expect_denied EROFS EACCES
    inbox --unsafe-disable=landlock -- write-path "${p}chidori-probe-$$"
    expect_denied EROFS
  done
  [[ ! -e $progdir/chidori-probe-$$ ]]
  inbox -- write-path /tmp/chidori-probe-$$
  expect_denied ENOENT EROFS EACCES          # no /tmp in the box (or a read-only one holding the program)
  # The probe's write works where writing is allowed: the harmless devices.
  inbox -- write-path /dev/null
  expect_ok "wrote /dev/null"
}

@test "fs: a --ro-bind folder is read-only, a --bind folder is writable" {
  mkdir -m 1777 "$T/ro" "$T/rw"
  inbox --ro-bind "$T/ro" --bind "$T/rw" -- write-path "$T/ro/x"
  expect_denied EROFS EACCES
  inbox --unsafe-disable=landlock --ro-bind "$T/ro" -- write-path "$T/ro/x"
  expect_denied EROFS                        # the read-only bind alone
  [[ ! -e $T/ro/x ]]
  inbox --ro-bind "$T/ro" --bind "$T/rw" -- write-path "$T/rw/x"
  expect_ok "wrote $T/rw/x"
  [[ $(cat "$T/rw/x") == probe ]]
  outside write-path "$T/ro/x"
  expect_ok
}

@test "fs: a --bind folder takes no symlinks and no fifos (Landlock; seccomp too for mknod)" {
  mkdir -m 1777 "$T/rw"
  inbox --bind "$T/rw" -- symlink /etc/shadow "$T/rw/link"
  expect_denied EACCES
  inbox --bind "$T/rw" --unsafe-disable=landlock -- symlink /etc/shadow "$T/rw/link"
  expect_ok "symlink $T/rw/link"
  inbox --bind "$T/rw" -- mkfifo "$T/rw/fifo"
  expect_killed mknodat
  inbox --bind "$T/rw" --unsafe-disable=seccomp -- mkfifo "$T/rw/fifo"
  expect_denied EACCES
  inbox --bind "$T/rw" --unsafe-disable=seccomp,landlock -- mkfifo "$T/rw/fifo"
  expect_ok "fifo $T/rw/fifo"
}

@test "fs: what the box writes into a --bind folder, it cannot run" {
  # Two walls: --bind folders are mounted noexec, and Landlock's rw rights
  # leave out EXECUTE (docs/sandbox.md).  Each holds alone.
  mkdir -m 1777 "$T/rw"
  inbox --bind "$T/rw" -- write-exec "$T/rw/planted"
  expect_denied EACCES
  [[ $output == *"execve what we wrote"* ]]
  inbox --bind "$T/rw" -- execve "$T/rw/planted" pid
  expect_denied EACCES
  inbox --bind "$T/rw" --unsafe-disable=landlock -- write-exec "$T/rw/planted2"
  expect_denied EACCES                        # noexec alone
  outside write-exec "$T/rw/planted3"
  expect_ok                                   # the same copy runs outside the box
}

@test "fs: without the mount layer, Landlock alone keeps host folders read-only" {
  mkdir -m 1777 "$T/open"
  inbox --unsafe-disable=mnt -- write-path "$T/open/x"
  expect_warned mnt
  expect_denied EACCES
  [[ ! -e $T/open/x ]]
  inbox --unsafe-disable=mnt,landlock -- write-path "$T/open/x"
  expect_ok "wrote $T/open/x"
  [[ -e $T/open/x ]]
}

@test "fs: /proc/self is not writable in the box (Landlock)" {
  inbox -- write-path /proc/self/comm
  expect_denied EACCES
  inbox --unsafe-disable=landlock -- write-path /proc/self/comm
  expect_ok "wrote /proc/self/comm"
  outside write-path /proc/self/comm
  expect_ok
}

@test "fs: the program cannot be overwritten through /proc/self/exe" {
  # Two copies of the probe: the first keeps an O_PATH fd of /proc/self/exe and
  # execs the second, which reopens that fd for writing (CVE-2019-5736's shape).
  install -m 0777 "$PROBE" "$T/p1"
  install -m 0777 "$PROBE" "$T/p2"
  outside_p1() { set +e; "$T/p1" "$@" >"$T/.stdout" 2>"$T/.stderr" </dev/null; status=$?; set -e; output=$(cat "$T/.stdout"); }
  outside_p1 write-self-exe "$T/p2"
  expect_ok "reopened $T/p1 for writing after exec"

  chid launch --quiet --ro-bind "$T/p2" -- "$T/p1" write-self-exe "$T/p2"
  expect_denied EROFS EACCES
  chid launch --quiet --unsafe-disable=landlock --ro-bind "$T/p2" -- "$T/p1" write-self-exe "$T/p2"
  expect_denied EROFS                        # the program's read-only bind alone
  chid launch --quiet --unsafe-disable=mnt --ro-bind "$T/p2" -- "$T/p1" write-self-exe "$T/p2"
  expect_denied EACCES                       # Landlock alone: it will not even run p2
  [[ $output == *"execve the second program"* ]]
  chid launch --quiet --unsafe-disable=mnt,landlock -- "$T/p1" write-self-exe "$T/p2"
  expect_ok "reopened $T/p1 for writing after exec"
  cmp -s "$PROBE" "$T/p1"                    # opened, never changed
}

# ---------------------------------------------------------------- file system: reads

@test "read: /etc/shadow is not in the box; Landlock denies it without the mount layer" {
  inbox -- read-path /etc/shadow
  expect_denied ENOENT
  inbox --unsafe-disable=mnt -- read-path /etc/shadow
  expect_denied EACCES
  [[ $output != *bytes* ]]
  if is_root; then
    inbox --unsafe-disable=mnt,landlock -- read-path /etc/shadow
    expect_denied EACCES                     # the user namespace: root inside is nobody outside
    inbox --unsafe-disable=mnt,landlock,user -- read-path /etc/shadow
    expect_ok "bytes from /etc/shadow"
    outside read-path /etc/shadow
    expect_ok "bytes from /etc/shadow"
  fi
}

@test "read: /root and the caller's \$HOME are not in the box" {
  mkdir -p "$T/home/.ssh"
  echo "-----BEGIN FAKE KEY-----" >"$T/home/.ssh/id_ed25519"
  chmod -R a+rX "$T/home"
  export HOME=$T/home
  inbox -- read-path "$HOME/.ssh/id_ed25519"
  expect_denied ENOENT
  inbox -- list-dir "$HOME"
  expect_denied ENOENT
  inbox --unsafe-disable=mnt -- read-path "$HOME/.ssh/id_ed25519"
  expect_denied EACCES                       # Landlock alone
  inbox --unsafe-disable=mnt,landlock -- read-path "$HOME/.ssh/id_ed25519"
  expect_ok "bytes from $HOME/.ssh/id_ed25519"
  outside read-path "$HOME/.ssh/id_ed25519"
  expect_ok

  inbox -- list-dir /root
  expect_denied ENOENT
  inbox --unsafe-disable=mnt -- list-dir /root
  expect_denied EACCES
  if is_root; then
    outside list-dir /root
    expect_ok "in /root"
  fi
}

@test "read: the host's /proc is invisible: one process, no /proc/sys" {
  inbox -- list-dir /proc
  expect_ok "(1 numeric) in /proc"
  inbox -- list-dir /proc/sys
  expect_denied ENOENT
  inbox -- read-path /proc/sys/kernel/hostname
  expect_denied ENOENT
  inbox -- pid
  expect_ok "pid 1 ppid 0"
  # Without the mount layer the host's /proc is the box's: Landlock still
  # denies it; with both off the host's processes show.
  inbox --unsafe-disable=mnt -- list-dir /proc
  expect_denied EACCES
  inbox --unsafe-disable=mnt,landlock -- list-dir /proc
  expect_ok
  n=$(sed -E 's/.*\(([0-9]+) numeric\).*/\1/' <<<"$output")
  (( n > 3 ))
  outside list-dir /proc
  expect_ok
}

# ---------------------------------------------------------------- processes

# launch_at_self "PROBE ARGS with PID" [launch options]: PID becomes the pid
# of the chidori process that runs the box (a bash that execs chidori).
launch_at_self() {
  local tmpl=$1; shift
  set +e
  bash -c 'a=$1; shift; exec "$0" launch --quiet "$@" ${a//PID/$$}' "$CHIDORI" "$tmpl" "$@" -- "$PROBE" \
    >"$T/.stdout" 2>"$T/.stderr" </dev/null
  status=$?
  set -e
  output=$(cat "$T/.stdout")
  stderr=$(cat "$T/.stderr")
}

@test "proc: the box cannot signal its parent chidori (pid namespace)" {
  launch_at_self "kill-pid PID 0"
  expect_denied ESRCH
  launch_at_self "kill-pid PID 0" --unsafe-disable=landlock
  expect_denied ESRCH
  if is_root; then
    launch_at_self "kill-pid PID 0" --unsafe-disable=user,pid,landlock
    expect_warned user,pid,landlock
    expect_ok "signal 0 delivered"
  fi
}

@test "proc: --unsafe-disable=pid turns off the pid namespace alone (then Landlock's signal scope still holds)" {
  # Bug reproducer: the box mounts a fresh /proc, which a user namespace may
  # only do for a pid namespace it owns; with pid off the run must still work.
  launch_at_self "kill-pid PID 0" --unsafe-disable=pid
  expect_warned pid
  expect_denied EPERM                        # Landlock signal scoping (and uid) alone
}

@test "proc: ptrace of the parent chidori is a blocked syscall" {
  launch_at_self "ptrace-attach PID"
  expect_killed ptrace
  launch_at_self "ptrace-attach PID" --unsafe-disable=seccomp
  expect_denied ESRCH EPERM                  # reached the kernel; the pid namespace hides the parent
  bg "$T/sleep.out" bash -c 'echo started; exec "$0" sleep 30' "$PROBE"
  outside ptrace-attach "${BG_PIDS[0]}"
  expect_ok "attached to ${BG_PIDS[0]}"
}

@test "proc: launch runs ordinary programs: fork and exec work in the box" {
  inbox -- fork
  expect_ok "fork: child"
  inbox -- clone-fork
  expect_ok "glibc fork"
  chid launch --quiet -- /bin/sh -c 'echo "$0 from a shell in the box"' hi
  assert_status 0
  assert_stdout "hi from a shell in the box"
}

# ---------------------------------------------------------------- the engine worker's filter

@test "worker: fork is a blocked syscall (fork); works with seccomp off" {
  as_worker fork
  expect_killed fork
  as_worker fork --unsafe-disable=seccomp
  expect_warned seccomp
  expect_ok "fork: child"
}

@test "worker: glibc fork (clone without CLONE_THREAD) is a blocked syscall (clone)" {
  as_worker clone-fork
  expect_killed clone
  as_worker clone-fork --unsafe-disable=seccomp
  expect_ok "glibc fork (clone): child"
}

@test "worker: execve is a blocked syscall; reaches the kernel with seccomp off" {
  as_worker execve
  expect_killed execve
  as_worker execve --unsafe-disable=seccomp
  expect_ok "execve reached the kernel: EFAULT"
}

@test "worker: socket is a blocked syscall; works with seccomp off" {
  as_worker socket-inet
  expect_killed socket
  as_worker socket-inet --unsafe-disable=seccomp
  expect_ok "socket(inet)"
}

@test "worker --no-jit: new executable memory is a blocked syscall; allowed with the JIT on" {
  as_worker mmap-exec --no-jit
  expect_killed mmap
  as_worker mprotect-exec --no-jit
  expect_killed mprotect
  as_worker mmap-exec
  expect_ok "mmap gave executable memory"
  as_worker mprotect-exec --jit
  expect_ok "mprotect gave executable memory"
}

@test "worker --no-jit: its own code cannot be rewritten through /proc/self/mem (Landlock)" {
  as_worker procmem-write --no-jit
  expect_denied EACCES
  as_worker procmem-write --no-jit --unsafe-disable=landlock
  expect_ok "wrote our own code through /proc/self/mem"
}

@test "worker: the SIGSYS reporter cannot be replaced (rt_sigaction of SIGSYS with bit 32 set)" {
  # Stage 2 allows rt_sigaction for any signal but SIGSYS; the kernel reads
  # the signal as an int, so the check must look at the low 32 bits only.
  as_worker sigsys-takeover
  expect_killed rt_sigaction
  as_worker sigsys-takeover --unsafe-disable=seccomp
  expect_ok "replaced the SIGSYS handler"
}

@test "worker: posture as the worker sees it (caps, no_new_privs, two filters, not dumpable, uid map)" {
  as_worker status
  expect_ok "CapEff=0000000000000000"
  [[ $output == *"CapPrm=0000000000000000"* && $output == *"CapBnd=0000000000000000"* ]]
  [[ $output == *"CapInh=0000000000000000"* && $output == *"CapAmb=0000000000000000"* ]]
  [[ $output == *"NoNewPrivs=1 Seccomp=2 Seccomp_filters=2 Dumpable=0"* ]]
  as_worker uid-map
  if is_root; then expect_ok "0 65534 1"; else expect_ok "0 $(id -u) 1"; fi
}

@test "worker: a caller's secret environment variable does not reach the worker" {
  # The fixed set: LANG, TZ (UTC unless --tz), the stage-2 flag (seccomp on),
  # JSC_useJIT=false (--no-jit).  The caller's own TZ does not pass either.
  export CHIDORI_TEST_SECRET=hunter2 TZ=Europe/Paris
  as_worker env
  expect_ok
  [[ $(env_set) == "CHIDORI_STAGE2_FD=4 LANG=C.UTF-8 TZ=UTC" ]] || { show; false; }
  as_worker env --no-jit --tz Asia/Tokyo
  [[ $(env_set) == "CHIDORI_STAGE2_FD=4 JSC_useJIT=false LANG=C.UTF-8 TZ=Asia/Tokyo" ]] || { show; false; }
  as_worker env --unsafe-disable=seccomp
  [[ $(env_set) == "LANG=C.UTF-8 TZ=UTC" ]] || { show; false; }
  outside env
  expect_ok "CHIDORI_TEST_SECRET=hunter2"
}

# Local time (issue 15): with TZ fixed, ICU takes the zone from it and reads
# its own data; before, it listed /usr/share/zoneinfo to find the host's zone
# and the filter killed the run (getdents64, exit 159).
dates_agent() {
  agent dates.js <<'JS'
module.exports = async () => {
  const jan15 = new Date(2024, 0, 15), epoch = new Date(0), evening = new Date(Date.UTC(2024, 0, 15, 20));
  return [jan15.getDay(), jan15.getTime(), String(epoch), String(new Date()).slice(24), epoch.getHours(),
          epoch.getTimezoneOffset(), evening.toLocaleDateString(), Intl.DateTimeFormat().resolvedOptions().timeZone,
          new Intl.DateTimeFormat("en-US", { hour: "numeric", hour12: false }).format(evening)];
};
JS
}
DATES_UTC='[1,1705276800000,"Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)"," GMT+0000 (Coordinated Universal Time)",0,0,"1/15/2024","UTC","20"]'
DATES_TOKYO='[1,1705244400000,"Thu Jan 01 1970 09:00:00 GMT+0900 (Japan Standard Time)"," GMT+0900 (Japan Standard Time)",9,-540,"1/16/2024","Asia/Tokyo","05"]'

expect_dates() { # EXPECTED
  [[ $status -eq 0 && $output == "$1" && $stderr != *violation* ]] || { echo "expected $1"; show; return 1; }
}

@test "worker: local-time Date and Intl work in the full box: UTC by default, --tz Asia/Tokyo, JIT on and off, --untrusted" {
  dates_agent
  export TZ=Europe/Paris # the caller's zone does not leak in
  unset CHIDORI_TZ
  chid run "$T/dates.js" # every layer on: the banner says which applied
  expect_dates "$DATES_UTC"
  [[ $stderr == *"Isolation: process (user,pid,mnt,net,ipc,uts,cgroup ns;"*"landlock abi "*"seccomp allowlist; jit on; cpu budget 60 s)"* ]] || { show; false; }
  for opts in "" --no-jit --untrusted; do
    echo "-- ${opts:-default}"
    chid run --quiet $opts "$T/dates.js"
    expect_dates "$DATES_UTC"
    chid run --quiet $opts --tz Asia/Tokyo "$T/dates.js"
    expect_dates "$DATES_TOKYO"
  done
  CHIDORI_TZ=Asia/Tokyo chid run --quiet --untrusted "$T/dates.js"
  expect_dates "$DATES_TOKYO"
  CHIDORI_TZ=Asia/Tokyo chid run --quiet --tz UTC "$T/dates.js" # the flag beats the variable
  expect_dates "$DATES_UTC"
}

@test "worker: the time-zone fix allows no new syscall: listing /usr/share/zoneinfo is still a blocked syscall (getdents64)" {
  # The zone files are in the box (read-only, with /usr); what ICU did without
  # TZ, listing them, stays forbidden.
  if nm -D "$CHIDORI" 2>/dev/null | grep -q ' __asan_init'; then
    skip "sanitizer build: its worker filter allows getdents64 for the ASan runtime (sandbox/seccomp.c)"
  fi
  as_worker list-zoneinfo
  expect_killed getdents64
  as_worker list-zoneinfo --unsafe-disable=seccomp
  expect_ok "in /usr/share/zoneinfo"
}

# ---------------------------------------------------------------- the fixed seccomp prefix (launch)

prefix_case() { # PROBE-CMD SYSCALL-NAME: killed and named in the box; reaches the kernel without seccomp
  echo "-- $2"
  inbox -- "$1"
  expect_killed "$2"
  inbox --unsafe-disable=seccomp -- "$1"
  expect_ok "$1 reached the kernel"
}

@test "prefix: mount, umount2, pivot_root, chroot and the new mount API are blocked syscalls" {
  prefix_case mount mount
  prefix_case umount umount2
  prefix_case pivot_root pivot_root
  prefix_case chroot chroot
  prefix_case fsopen fsopen
  prefix_case open_tree open_tree
}

@test "prefix: unshare and setns are blocked syscalls" {
  prefix_case unshare unshare
  prefix_case setns setns
}

@test "prefix: bpf, perf_event_open, userfaultfd, io_uring_setup, keyctl and add_key are blocked syscalls" {
  prefix_case bpf bpf
  prefix_case perf_event_open perf_event_open
  prefix_case userfaultfd userfaultfd
  prefix_case io_uring_setup io_uring_setup
  prefix_case keyctl keyctl
  prefix_case add_key add_key
}

@test "prefix: ptrace, process_vm_readv, pidfd_getfd, kcmp and personality are blocked syscalls" {
  prefix_case ptrace ptrace
  prefix_case process_vm_readv process_vm_readv
  prefix_case pidfd_getfd pidfd_getfd
  prefix_case kcmp kcmp
  prefix_case personality personality
}

@test "prefix: open_by_handle_at, name_to_handle_at and landlock_create_ruleset are blocked syscalls" {
  prefix_case open_by_handle_at open_by_handle_at
  prefix_case name_to_handle_at name_to_handle_at
  prefix_case landlock_create_ruleset landlock_create_ruleset
}

@test "prefix: unmounting the box's own /proc: seccomp, Landlock and caps each refuse it" {
  inbox -- umount /proc
  expect_killed umount2
  inbox --unsafe-disable=seccomp -- umount /proc
  expect_denied EPERM
  inbox --unsafe-disable=seccomp,landlock -- umount /proc
  expect_denied EPERM                        # no CAP_SYS_ADMIN
  inbox --unsafe-disable=seccomp,caps -- umount /proc
  expect_denied EPERM                        # Landlock forbids mount changes
  inbox --unsafe-disable=seccomp,caps,landlock -- umount /proc
  expect_warned caps,landlock,seccomp
  expect_ok "unmounted /proc"
}

@test "prefix: clone with CLONE_NEWUSER is a blocked syscall (clone)" {
  inbox -- clone-newuser
  expect_killed clone
  inbox --unsafe-disable=seccomp -- clone-newuser
  expect_ok "clone-newuser reached the kernel: returned"   # a child in a new user namespace
}

@test "prefix: clone3 answers ENOSYS in the box (glibc falls back to clone); EINVAL from the kernel without seccomp" {
  inbox -- clone3
  expect_denied ENOSYS
  inbox --unsafe-disable=seccomp -- clone3
  expect_ok "clone3 reached the kernel: EINVAL"
}

# ---------------------------------------------------------------- the terminal

legacy_tiocsti() { [[ $(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1) == 1 ]]; }

ptyrun() { # [pty-run|pty-run-noctty] CMD...: output without the terminal's \r
  outside "$@"
  output=${output//$'\r'/}
}

@test "tty: TIOCSTI on the inherited terminal is a blocked syscall (ioctl); outside it injects" {
  ptyrun pty-run "$CHIDORI" launch --quiet -- "$PROBE" tiocsti 0
  [[ $status -eq 159 && $output == *"chidori: sandbox violation: blocked syscall ioctl"* ]] || { show; false; }
  [[ $output != *"TIOCSTI on fd 0 worked"* ]]
  ptyrun pty-run "$CHIDORI" launch --quiet --unsafe-disable=seccomp -- "$PROBE" tiocsti 0
  [[ $status -eq 1 && $output == *"DENIED EPERM ioctl(TIOCSTI)"* ]] || { show; false; } # setsid: not its terminal any more
  if legacy_tiocsti; then
    ptyrun pty-run "$PROBE" tiocsti 0
    [[ $status -eq 0 && $output == *"OK TIOCSTI on fd 0 worked"* ]] || { show; false; }
  fi
}

@test "tty: TIOCSTI with bit 32 set is blocked too (CVE-2019-10063: compare the low 32 bits)" {
  ptyrun pty-run "$CHIDORI" launch --quiet -- "$PROBE" tiocsti-highbits 0
  [[ $status -eq 159 && $output == *"chidori: sandbox violation: blocked syscall ioctl"* ]] || { show; false; }
}

@test "tty: a terminal nobody controls cannot be taken over and typed into" {
  # The box is a session leader (setsid); TIOCSCTTY on a terminal that no
  # session holds makes it the box's, and then TIOCSTI is the kernel's to allow.
  ptyrun pty-run-noctty "$CHIDORI" launch --quiet -- "$PROBE" tiocsti-steal 0
  [[ $status -eq 159 && $output == *"blocked syscall ioctl"* ]] || { show; false; }
  ptyrun pty-run-noctty "$CHIDORI" launch --quiet -- "$PROBE" tiocsti-steal-highbits 0
  [[ $status -eq 159 && $output == *"blocked syscall ioctl"* ]] || { show; false; }
  [[ $output != *"TIOCSTI on fd 0 worked"* ]]
  if legacy_tiocsti; then
    ptyrun pty-run-noctty "$CHIDORI" launch --quiet --unsafe-disable=seccomp -- "$PROBE" tiocsti-steal 0
    [[ $status -eq 0 && $output == *"OK TIOCSTI on fd 0 worked"* ]] || { show; false; }
  fi
}

@test "tty: TIOCLINUX is a blocked syscall, with or without bit 32" {
  ptyrun pty-run "$CHIDORI" launch --quiet -- "$PROBE" tioclinux 0
  [[ $status -eq 159 && $output == *"blocked syscall ioctl"* ]] || { show; false; }
  ptyrun pty-run "$CHIDORI" launch --quiet -- "$PROBE" tioclinux-highbits 0
  [[ $status -eq 159 && $output == *"blocked syscall ioctl"* ]] || { show; false; }
}

# ---------------------------------------------------------------- what the box inherits

fd_numbers() { sed -E 's/^OK ?//' <<<"$output" | tr ' ' '\n' | grep -E '^[0-9]+=' | cut -d= -f1 | xargs; }

@test "fds: only 0, 1 and 2 reach the box; an extra fd of the caller does not (it reaches a plain child)" {
  exec 7</etc/hostname
  inbox -- list-fds
  assert_status 0
  [[ $(fd_numbers) == "0 1 2" ]] || { show; false; }
  [[ $output == *"0=/dev/null"* ]]
  outside list-fds
  expect_ok "7=/etc/hostname"
  exec 7<&-
}

@test "env: a caller's secret variable does not reach the box; a plain child has it" {
  export CHIDORI_TEST_SECRET=hunter2
  inbox -- env
  assert_status 0
  [[ $(env_set) == "HOME=/ LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin" ]] || { show; false; }
  outside env
  expect_ok "CHIDORI_TEST_SECRET=hunter2"
}

@test "caps: every capability set is empty in the box; with caps off its root has them" {
  inbox -- status
  expect_ok
  for s in CapInh CapPrm CapEff CapBnd CapAmb; do
    [[ $output == *"$s=0000000000000000"* ]] || { echo "$s not zero"; show; false; }
  done
  inbox --unsafe-disable=caps -- status
  expect_warned caps
  [[ $output != *"CapEff=0000000000000000"* && $output != *"CapBnd=0000000000000000"* ]] || { show; false; }
}

@test "no_new_privs is 1 and seccomp mode 2 (one filter); Seccomp 0 with seccomp off" {
  inbox -- status
  expect_ok "NoNewPrivs=1 Seccomp=2 Seccomp_filters=1"
  inbox --unsafe-disable=seccomp -- status
  expect_ok "NoNewPrivs=1 Seccomp=0 Seccomp_filters=0"
}

@test "user: uid and gid 0 inside map to nobody outside as root (to the caller rootless)" {
  if is_root; then want_u="0 65534 1" want_g="0 65534 1"; else want_u="0 $(id -u) 1" want_g="0 $(id -g) 1"; fi
  inbox -- uid-map
  assert_stdout "OK $want_u"
  inbox -- gid-map
  assert_stdout "OK $want_g"
  if is_root; then
    inbox --unsafe-disable=user -- uid-map
    expect_warned user
    assert_stdout "OK 0 0 4294967295"
  fi
}

@test "uts: the box's hostname is chidori; the host's with uts off" {
  host=$(uname -n)
  [[ $host != chidori ]]
  inbox -- hostname
  assert_stdout "OK chidori"
  inbox --unsafe-disable=uts -- hostname
  assert_stdout "OK $host"
}

@test "ipc: a host SysV segment is invisible (ipc namespace) and shm calls are blocked (seccomp)" {
  IPC_KEY=$(( 0x43480000 + ($$ & 0xffff) ))
  "$PROBE" ipc-rm "$IPC_KEY" >/dev/null 2>&1 || true
  outside ipc-create "$IPC_KEY"
  expect_ok "shm id"
  outside ipc-lookup "$IPC_KEY"
  expect_ok "has id"

  inbox -- ipc-lookup "$IPC_KEY"
  expect_killed shmget
  inbox --unsafe-disable=ipc -- ipc-lookup "$IPC_KEY"
  expect_killed shmget                       # seccomp alone
  inbox --unsafe-disable=seccomp -- ipc-lookup "$IPC_KEY"
  expect_denied ENOENT                       # the ipc namespace alone
  inbox --unsafe-disable=seccomp -- ipc
  expect_ok "shm id"                         # the box's own namespace works
  inbox --unsafe-disable=ipc,seccomp -- ipc-lookup "$IPC_KEY"
  expect_ok "has id"
}

@test "core: RLIMIT_CORE is 0/0 and cannot be raised, no core is written; with rlimits off one is" {
  pattern=$(cat /proc/sys/kernel/core_pattern)
  mkdir -m 1777 "$T/cores"
  ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)"
  inbox --bind "$T/cores" -- core-dump "$T/cores"
  assert_status 139
  assert_stderr_has "chidori: program killed by SIGSEGV"
  [[ $output == "DENIED EPERM raise RLIMIT_CORE (was 0 0, now 0); crashing" ]] || { show; false; }
  [[ -z $(ls -A "$T/cores") ]]
  if [[ $pattern == \|* || $pattern == /* || $(ulimit -c) != unlimited ]]; then
    skip "core_pattern '$pattern' does not write into the working folder: cannot show the positive side"
  fi
  inbox --unsafe-disable=rlimits --bind "$T/cores" -- core-dump "$T/cores"
  assert_status 139
  [[ $output == "OK RLIMIT_CORE raised"* ]] || { show; false; }
  [[ -n $(ls -A "$T/cores") ]]
}

@test "rlimits: nofile 256 and memlock 0 in the box; the caller's with rlimits off" {
  inbox -- rlimits
  expect_ok "core=0/0 nofile=256/256"
  [[ $output == *"memlock=0/0"* ]]
  inbox --nofile 64 -- rlimits
  expect_ok "nofile=64/64"
  inbox --unsafe-disable=rlimits -- rlimits
  [[ $output != *"nofile=256/256"* ]] || { show; false; }
}

# ---------------------------------------------------------------- limits

elapsed_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

@test "limits: --cpu-secs 1 ends a busy loop: 152, CPU limit exceeded (1 s)" {
  start=$(date +%s%N)
  inbox --cpu-secs 1 -- cpu-burn
  ms=$(elapsed_ms "$start")
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (1 s)"
  (( ms < 10000 ))
}

@test "limits: run --cpu-secs 1 ends a busy agent: 152, CPU limit exceeded (1 s)" {
  agent spin.js <<'JS'
function main() { for (;;) {} }
JS
  start=$(date +%s%N)
  chid run --quiet --cpu-secs 1 "$T/spin.js"
  ms=$(elapsed_ms "$start")
  assert_status 152
  assert_stderr_has "chidori: CPU limit exceeded (1 s)"
  (( ms < 10000 ))
}

@test "limits: --deadline 500 ends a busy loop: 124, deadline exceeded (500 ms)" {
  start=$(date +%s%N)
  inbox --deadline 500 -- cpu-burn
  ms=$(elapsed_ms "$start")
  assert_status 124
  assert_stderr_has "chidori: deadline exceeded (500 ms)"
  (( ms >= 450 && ms < 5000 ))
}

@test "limits: --deadline ends a sleeping program too; the environment variable works the same" {
  start=$(date +%s%N)
  CHIDORI_ISOLATE_DEADLINE_MS=300 inbox -- sleep 30
  ms=$(elapsed_ms "$start")
  assert_status 124
  assert_stderr_has "chidori: deadline exceeded (300 ms)"
  (( ms < 5000 ))
}

# ---------------------------------------------------------------- options and doctor

@test "options: --require-sandbox with --unsafe-disable is refused (2), by flag or by variable" {
  chid launch --require-sandbox --unsafe-disable=net -- "$PROBE" status
  assert_status 2
  assert_stderr_has "--unsafe-disable cannot be combined with --require-sandbox"
  [[ -z $output ]]
  CHIDORI_ISOLATE_REQUIRE_SANDBOX=1 chid launch --unsafe-disable=seccomp -- "$PROBE" status
  assert_status 2
  assert_stderr_has "--unsafe-disable cannot be combined with --require-sandbox"
  chid run --require-sandbox --unsafe-disable=landlock "$EXAMPLES/hello.js"
  assert_status 2
  assert_stderr_has "--unsafe-disable cannot be combined with --require-sandbox"
}

@test "options: --require-sandbox applies every core layer here, and the banner says so" {
  need_root "rootless has no cgroup delegation here: rootless.bats checks --require-sandbox"
  chid launch --require-sandbox -- "$PROBE" status
  assert_status 0
  assert_stderr_has "Isolation: process (user,pid,mnt,net,ipc,uts,cgroup ns;"
  assert_stderr_has "landlock abi"
  assert_stderr_has "seccomp allowlist"
  [[ $stderr != *skipped* ]] || { show; false; }
  expect_ok "NoNewPrivs=1 Seccomp=2"
}

@test "options: --unsafe-disable warns and names the layer in the banner; an unknown layer is a usage error" {
  chid launch --unsafe-disable=uts -- "$PROBE" hostname
  assert_status 0
  expect_warned uts
  assert_stderr_has "uts skipped: disabled by --unsafe-disable"
  chid launch --unsafe-disable=bogus -- "$PROBE" hostname
  assert_status 2
  assert_stderr_has "unknown layer 'bogus'"
}

@test "doctor: one line per layer, and --require exits 0 on this host" {
  chid doctor --require
  for l in "user namespace" "pid namespace" "mount namespace" "net namespace" "ipc namespace" "uts namespace" \
           "cgroup namespace" "seccomp" "landlock" "capabilities" "no_new_privs, rlimits"; do
    [[ $(grep -c "^  $l " <<<"$output") -eq 1 ]] || { echo "no single line for $l"; show; false; }
    grep -Eq "^  $l +ok " <<<"$output" || { echo "$l is not ok"; show; false; }
  done
  grep -q "^  cgroup (memory ceiling) " <<<"$output"
  if is_root; then # rootless: no cgroup delegation here (rootless.bats)
    assert_status 0
    [[ $output == *"All core layers are available."* ]]
  fi
}

# ---------------------------------------------------------------- the real engine worker, from outside

@test "engine posture: the running worker's caps, seccomp, fds, namespaces, environment, ids, limits, mounts" {
  agent busy.js <<'JS'
function main() { const end = Date.now() + 20000; let x = 0; while (Date.now() < end) { for (let i = 0; i < 1e5; i++) x += i; } return "done"; }
JS
  export CHIDORI_TEST_SECRET=hunter2
  "$CHIDORI" run --quiet "$T/busy.js" >"$T/busy.out" 2>"$T/busy.err" 3>&- </dev/null &
  cp=$!
  BG_PIDS+=("$cp")
  w=
  for i in $(seq 1000); do
    # The run's children: the broker and the worker's box (pick the box).
    w=
    for c in $(pgrep -P "$(sup_of "$cp")"); do
      [[ $(readlink "/proc/$c/exe" 2>/dev/null) == *chidori-broker* ]] || w=$c
    done
    [[ -n $w ]] && grep -q $'^Seccomp_filters:\t2' "/proc/$w/status" 2>/dev/null && break
    sleep 0.01
  done
  [[ -n $w ]]
  # (bash builtins where possible: this runs while the worker spins)
  st=$(<"/proc/$w/status")
  for s in CapInh CapPrm CapEff CapBnd CapAmb; do
    [[ $st == *"$s:"$'\t'"0000000000000000"* ]] || { echo "$s"; echo "$st"; false; }
  done
  [[ $st == *$'\nNoNewPrivs:\t1\n'* && $st == *$'\nSeccomp:\t2\n'* ]]
  [[ $st == *$'\nSeccomp_filters:\t2\n'* ]]   # stage 1 (launcher) + stage 2 (worker)
  if is_root; then want=65534; else want=$(id -u); fi
  [[ $st == *$'\nUid:\t'"$want"$'\t'"$want"$'\t'"$want"$'\t'"$want"$'\n'* ]]

  # Descriptors: 0-2 and 3 (frames) as handed over; fd 4 (the stage-2 filter)
  # is consumed.  What the engine opens itself afterwards is inside the box:
  # no directory, no memfd, nothing of the host's.
  declare -A fdt=()
  while read -r fd arrow t; do fdt[$fd]=$t; done < <(ls -l "/proc/$w/fd" | awk 'NR > 1 {print $9, $10, $11}')
  [[ ${fdt[0]} == /dev/null && ${fdt[1]} == /dev/null && ${fdt[2]} == pipe:* && ${fdt[3]} == socket:* ]] ||
    { declare -p fdt; false; }
  for fd in "${!fdt[@]}"; do
    t=${fdt[$fd]}
    (( fd <= 3 )) && continue
    [[ ! -d /proc/$w/fd/$fd ]] || { echo "fd $fd is a directory: $t"; false; }
    [[ $t == /dev/urandom || $t == /dev/random || $t == anon_inode:* || $t == /proc/1/* || $t == pipe:* ]] ||
      { echo "unexpected fd $fd -> $t"; declare -p fdt; false; }
  done

  declare -A nsw=() nsp=()
  while read -r n arrow t; do nsw[$n]=$t; done < <(ls -l "/proc/$w/ns" | awk 'NR > 1 {print $9, $10, $11}')
  while read -r n arrow t; do nsp[$n]=$t; done < <(ls -l "/proc/$cp/ns" | awk 'NR > 1 {print $9, $10, $11}')
  for n in user pid mnt net ipc uts cgroup; do
    [[ -n ${nsw[$n]} && -n ${nsp[$n]} && ${nsw[$n]} != "${nsp[$n]}" ]] ||
      { echo "$n namespace: worker ${nsw[$n]}, parent ${nsp[$n]}"; false; }
  done
  [[ $(env_set -0 <"/proc/$w/environ") == "CHIDORI_STAGE2_FD=4 LANG=C.UTF-8 TZ=UTC" ]] || { tr '\0' ' ' <"/proc/$w/environ"; false; }
  if is_root; then want="0 65534 1"; else want="0 $(id -u) 1"; fi
  read -r a b c <"/proc/$w/uid_map"
  [[ "$a $b $c" == "$want" ]]
  lim=$(<"/proc/$w/limits")
  [[ $lim =~ Max\ core\ file\ size\ +0\ +0\  && $lim =~ Max\ open\ files\ +256\ +256\  ]] || { echo "$lim"; false; }
  # Mounts: a read-only tmpfs root with the system libraries, the worker, five
  # devices and the box's own /proc; nothing else of the host.
  worker=$(realpath "$BUILD_DIR/chidori-worker")
  while read -r mp opts; do
    case $mp in
      /) [[ $opts == ro,* ]] ;;
      /usr|/lib|/lib64|/lib32|/libx32|/etc/ld.so.cache|"$worker") [[ $opts == ro,* ]] ;;
      /dev/null|/dev/zero|/dev/full|/dev/random|/dev/urandom|/proc) ;;
      *) echo "unexpected mount $mp"; false ;;
    esac
  done < <(awk '{print $5, $6}' "/proc/$w/mountinfo")

  # Still running (the agent spins for 20 s; teardown kills chidori by pid,
  # and the worker dies with it): nothing above raced the worker's exit.
  st=$(<"/proc/$w/status")
  [[ $st == *$'\nSeccomp_filters:\t2\n'* ]]
  [[ $(<"$T/busy.err") != *violation* ]]
}

# ---------------------------------------------------------------- no false positives

# Every agent style the suite knows runs to completion under the full sandbox,
# with the JIT on (the default for run) and with --no-jit (W^X enforced).
corpus_run() { # FILE EXPECTED [run options]
  local f=$1 want=$2 jit; shift 2
  for jit in "" --no-jit; do
    XDG_STATE_HOME="$T/state$jit" chid run --quiet $jit --answers "$T/answers.json" "$@" "$f"
    [[ $status -eq 0 && $output == "$want" ]] || { echo "$(basename "$f") ${jit:-jit}: expected $want"; show; return 1; }
    [[ $stderr != *violation* && $stderr != *crashed* && $stderr != *"protocol error"* ]] || { show; return 1; }
  done
}

@test "no false positives: the examples run in the full box, JIT on and off" {
  echo '[]' >"$T/answers.json"
  corpus_run "$EXAMPLES/hello.js" '{"greeting":"Hello, world!"}'
  corpus_run "$EXAMPLES/hello.mjs" '{"greeting":"Hello, box!"}' --input '{"name":"box"}'
  corpus_run "$EXAMPLES/counter.ts" '{"runs":3}' --input '{"step":3}'
}

@test "no false positives: every effect, timers, Promise.all, web APIs, recursion, hot loops, 100 MB, GC" {
  echo '["Ada"]' >"$T/answers.json"
  agent effects.js <<'JS'
async function main(input, ctx) {
  console.log("log", { n: 1 }); console.warn("warn"); console.error("err");
  await chidori.log("direct");
  await chidori.memory.set("k", { deep: [1, 2] });
  const got = await chidori.memory.get("k"), list = await chidori.memory.list(), del = await chidori.memory.delete("k");
  const tpl = await chidori.template("Hi {{ who }}", { who: "box" });
  await chidori.checkpoint("half");
  const ans = await chidori.input("name?");
  const t = Date.now(), d = new Date(), r = Math.random();
  const bytes = crypto.getRandomValues(new Uint8Array(8)), uuid = crypto.randomUUID();
  return { got, list, del, tpl, ans, clock: t > 0 && d.getTime() > 0, r: r >= 0 && r < 1, bytes: bytes.length, uuid: uuid.length, run: typeof ctx.runId };
}
JS
  corpus_run "$T/effects.js" '{"got":{"deep":[1,2]},"list":["k"],"del":true,"tpl":"Hi box","ans":"Ada","clock":true,"r":true,"bytes":8,"uuid":36,"run":"string"}'

  agent async.js <<'JS'
async function main() {
  const seen = [];
  setTimeout(() => seen.push("b"), 20); setTimeout(() => seen.push("a"), 10);
  let n = 0; const iv = setInterval(() => { if (++n === 3) clearInterval(iv); }, 5);
  await new Promise((r) => setTimeout(r, 100));
  const all = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(async (i) => { await chidori.memory.set("p" + i, i); return chidori.memory.get("p" + i); }));
  const settled = await Promise.allSettled([Promise.reject(new Error("x")), Promise.resolve(1)]);
  const race = await Promise.race([new Promise((r) => setTimeout(() => r("slow"), 50)), new Promise((r) => setTimeout(() => r("fast"), 1))]);
  let micro = 0; queueMicrotask(() => micro++); await null;
  return { seen, n, all, settled: settled.map((s) => s.status), race, micro };
}
JS
  corpus_run "$T/async.js" '{"seen":["a","b"],"n":3,"all":[1,2,3,4,5,6,7,8],"settled":["rejected","fulfilled"],"race":"fast","micro":1}'

  agent web.js <<'JS'
function main() {
  const u = new URL("https://example.com/a/../b?x=1#f"); u.searchParams.append("y", "2 3");
  const q = new URLSearchParams("a=1&b=2&a=3");
  const enc = new TextEncoder().encode("héllo ✓"), dec = new TextDecoder().decode(enc);
  const c = structuredClone({ m: new Map([[1, { s: new Set([2]) }]]), d: new Date(0), a: new Uint8Array([1, 2]) });
  return { href: u.href, q: q.getAll("a"), n: enc.length, dec, clone: c.m.get(1).s.has(2) && c.d.getTime() === 0 && c.a[1] === 2,
           b64: atob(btoa("box")), re: /(\d+)-(\d+)/.exec("10-20").slice(1) };
}
JS
  corpus_run "$T/web.js" '{"href":"https://example.com/b?x=1&y=2+3#f","q":["1","3"],"n":10,"dec":"héllo ✓","clone":true,"b64":"box","re":["10","20"]}'

  agent recursion.js <<'JS'
function main() {
  function f(n) { return n === 0 ? 0 : 1 + f(n - 1); }
  function g(n) { return g(n + 1) + 1; }
  let name; try { g(0); } catch (e) { name = e.name; }
  return { ok: f(5000), name };
}
JS
  corpus_run "$T/recursion.js" '{"ok":5000,"name":"RangeError"}'

  agent cpu.js <<'JS'
function main() {
  const N = 300000, sieve = new Uint8Array(N + 1); let primes = 0;
  for (let i = 2; i <= N; i++) { if (!sieve[i]) { primes++; for (let j = i * i; j <= N; j += i) sieve[j] = 1; } }
  function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
  let h = 0; for (let i = 0; i < 1e7; i++) h = (h * 31 + i) | 0;
  const s = Array.from({ length: 50000 }, (_, i) => (i * 7919) % 50000).sort((a, b) => a - b);
  return { primes, fib: fib(24), h, sorted: s[0] === 0 && s[49999] === 49999 };
}
JS
  corpus_run "$T/cpu.js" '{"primes":25997,"fib":46368,"h":823511872,"sorted":true}'

  agent bigalloc.js <<'JS'
function main() {
  const keep = [];
  for (let i = 0; i < 50; i++) { const a = new Uint8Array(1 << 20); a.fill(i); keep.push(a); }  // 50 MiB typed
  for (let i = 0; i < 6; i++) keep.push(new Array(1 << 20).fill(i + 0.5));                    // ~48 MiB of doubles
  let sum = 0; for (const a of keep) sum += a[a.length - 1];
  return { arrays: keep.length, sum };
}
JS
  corpus_run "$T/bigalloc.js" '{"arrays":56,"sum":1243}'

  agent gc.js <<'JS'
function main() {
  let live = null, made = 0;
  for (let i = 0; i < 1000000; i++) { const o = { i, s: "x" + (i % 100), next: null }; if (i % 1000 === 0) { o.next = live; live = o; } made++; }
  let strings = []; for (let i = 0; i < 200000; i++) { strings.push(String(i).repeat(3)); if (strings.length > 1000) strings = []; }
  let n = 0; for (let p = live; p; p = p.next) n++;
  return { made, chain: n };
}
JS
  corpus_run "$T/gc.js" '{"made":1000000,"chain":1000}'
}
