# tests/vm/lib.sh — helpers for tests/vm/cases/*.sh (sourced; busybox ash / POSIX sh).
# shellcheck shell=sh disable=SC2034
#
# A case runs once as root and once as the unprivileged user `tester` (uid 1000) unless
# it says otherwise with a `# vm-users: root` / `# vm-users: tester` line. Its
# environment:
#   CHIDORI_VM_USER    root | tester
#   CHIDORI_VM_CGROUP  the delegated cgroup the case was started in (the case's shell is
#                      a member): /sys/fs/cgroup/user-tester for tester (owned by uid
#                      1000, the systemd Delegate=yes shape), a fresh root-owned
#                      /sys/fs/cgroup/vm-root for root. Emptied and reset after the case.
#   CHIDORI_VM_REPO    the repository path in the guest (same as on the host)
#   CHIDORI_VM_LIB     this file
#   TMPDIR, HOME       a fresh temp dir owned by the user; the user's home
# Exit 0 = pass, 77 = skip, anything else = fail. Output is shown only for failures
# (and for everything with guest-run.sh -v).
# Other lines the harness reads in a case:
#   # vm-timeout: SECS   per-case limit (default 120)
#   # vm-include: PATH…  host files/dirs to put in the image (run.sh reads these)

CG="${CHIDORI_VM_CGROUP:-}"
REPO="${CHIDORI_VM_REPO:-/work/main}"

vm_skip() { echo "SKIP: $*"; exit 77; }
vm_fail() { echo "FAIL: $*"; exit 1; }
vm_note() { echo "# $*"; }

# vm_check DESCRIPTION CMD [ARGS...]: run CMD, fail the case if it fails.
vm_check() {
  _d="$1"; shift
  if "$@"; then echo "  ok: $_d"; else _rc=$?; vm_fail "$_d (exit $_rc: $*)"; fi
}

# vm_enter_leaf [NAME]: move the calling shell out of the delegated cgroup into the
# leaf $CG/NAME (default "self") and enable the memory, pids and cpu controllers in
# $CG, so that new children of $CG get memory.max etc. (cgroup v2's no-internal-
# process rule: a cgroup that distributes resources to children holds no processes).
vm_enter_leaf() {
  _leaf="$CG/${1:-self}"
  mkdir -p "$_leaf" || return 1
  echo $$ > "$_leaf/cgroup.procs" || return 1
  for _c in memory pids cpu; do
    grep -qw "$_c" "$CG/cgroup.controllers" || { echo "controller $_c not available in $CG"; return 1; }
    echo "+$_c" > "$CG/cgroup.subtree_control" || return 1
  done
}

# vm_in_cgroup DIR CMD [ARGS...]: run CMD as a member of cgroup DIR; returns its status.
vm_in_cgroup() {
  _dir="$1"; shift
  sh -c 'echo $$ > "$1/cgroup.procs" || exit 126; shift; exec "$@"' vm_in_cgroup "$_dir" "$@"
}

# vm_cgroup_parent [NAME]: vm_enter_leaf, then create $CG/NAME (default "chidori") and
# export CHIDORI_CGROUP_PARENT pointing at it: where chidori puts its run cgroups.
vm_cgroup_parent() {
  vm_enter_leaf self || return 1
  mkdir -p "$CG/${1:-chidori}" || return 1
  CHIDORI_CGROUP_PARENT="$CG/${1:-chidori}"; export CHIDORI_CGROUP_PARENT
}

# ---- helpers for the chidori cases (20-*.sh and up) ----------------------------------
CHIDORI="$REPO/build/chidori"
PROBES="$REPO/build/probes"

# vm_need_chidori [PROBE...]: fail unless build/chidori and the named build/probes exist.
vm_need_chidori() {
  [ -x "$CHIDORI" ] || vm_fail "no $CHIDORI in the image (run make all first)"
  for _p in "$@"; do
    [ -x "$PROBES/$_p" ] || vm_fail "no $PROBES/$_p in the image (run make all first)"
  done
}

# vm_uptime: seconds since boot (centiseconds), the guest's clock for timings.
vm_uptime() { cut -d' ' -f1 /proc/uptime; }
vm_since() { awk -v a="$1" -v b="$(vm_uptime)" 'BEGIN { printf "%.2f", b - a }'; }

# vm_run NAME SECS CMD [ARGS...]: run CMD (SIGKILLed after SECS) with stdin from
# /dev/null, stdout in $TMPDIR/NAME.out and stderr in $TMPDIR/NAME.err. Sets RC (its
# status), OUT and ERR (the two texts), LAST ($TMPDIR/NAME) and SECS_TAKEN, and prints
# the command, status, time and the first lines of both streams (shown for failures).
vm_run() {
  _n="$1"; _t="$2"; shift 2
  LAST="$TMPDIR/$_n"
  _t0="$(vm_uptime)"
  timeout -s KILL "$_t" "$@" >"$LAST.out" 2>"$LAST.err" </dev/null; RC=$?
  SECS_TAKEN="$(vm_since "$_t0")"
  OUT="$(cat "$LAST.out")"; ERR="$(cat "$LAST.err")"
  _to=""; awk -v s="$SECS_TAKEN" -v t="$_t" 'BEGIN { exit !(s >= t) }' && _to=" TIMED OUT"
  echo "  \$ $* -> exit $RC (${SECS_TAKEN}s$_to)"
  sed -n '1,15s/^/    out| /p' "$LAST.out"
  sed -n '1,15s/^/    err| /p' "$LAST.err"
}

# vm_expect_rc WANT WHAT: fail unless the last vm_run exited WANT.
vm_expect_rc() {
  [ "$RC" = "$1" ] || vm_fail "$2: exit $RC, expected $1"
}

# vm_err_has TEXT / vm_out_has TEXT: the last vm_run's stderr / stdout contains TEXT.
vm_err_has() { grep -qF -- "$1" "$LAST.err"; }
vm_out_has() { grep -qF -- "$1" "$LAST.out"; }

# vm_json_num KEY FILE: the number after "KEY": in FILE (first one), or nothing.
vm_json_num() { grep -o "\"$1\":[0-9]*" "$2" | head -1 | cut -d: -f2; }

# vm_chidori_dirs DIR: every chidori-* cgroup directory at or below DIR, one a line.
vm_chidori_dirs() { find "$1" -type d -name 'chidori-*' 2>/dev/null; }

# vm_pids_with TEXT: pids (other than this shell) whose command line contains TEXT.
# Busybox timeout's watchdog (left by vm_run; it keeps the command line of what it
# watched and lingers up to 1 s after that ended) does not count.
vm_pids_with() {
  for _f in /proc/[0-9]*/cmdline; do
    _p="${_f#/proc/}"; _p="${_p%/cmdline}"
    [ "$_p" = "$$" ] && continue
    [ "$(cat "/proc/$_p/comm" 2>/dev/null)" = timeout ] && continue
    _c="$(tr '\0' ' ' < "$_f" 2>/dev/null)"
    case "$_c" in *"$1"*) echo "$_p" ;; esac
  done
}

# vm_children PID: the pids whose parent is PID.
vm_children() {
  _pp="$1"
  for _f in /proc/[0-9]*/stat; do
    _s="$(cat "$_f" 2>/dev/null)" || continue
    set -- ${_s##*) }          # state ppid ... (after the ")" that ends the name)
    [ "$2" = "$_pp" ] && { _p="${_f#/proc/}"; echo "${_p%/stat}"; }
  done
  return 0
}
