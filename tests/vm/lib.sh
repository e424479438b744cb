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
