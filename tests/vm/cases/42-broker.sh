#!/bin/sh
# The broker's lockdown (monitor/broker.c) on a second kernel, through build/start-broker
# and build/probes/broker_probe (tests/bats/broker.bats has the full set on the host).
# Root: the guest's /tmp is tmpfs, which has id-mapped mounts only from Linux 6.3, so a
# state dir there sends the broker to the fallback — uid 0 of its own user namespace,
# no capabilities, Landlock and seccomp still on — named in the notes, and refused with
# --require (78); where the folder can be id-mapped, the broker uid (65533).
# Tester: the rootless mode (own user, pid and mount namespaces, uid unchanged).
# Every attack must fail locked and succeed in the control run: write outside its
# folders, signal and ptrace the monitor, exec a shell, write its cgroup's cgroup.procs
# (v2), load a kernel module (root).
# vm-timeout: 90
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori broker_probe
SB="$REPO/build/start-broker"
[ -x "$SB" ] || vm_fail "no $SB in the image (run make all first)"
CHIDORI_BROKER="$PROBES/broker_probe"; export CHIDORI_BROKER
mkdir -p "$TMPDIR/state" "$HOME" 2>/dev/null
fs="$(stat -f -c %T "$TMPDIR/state" 2>/dev/null || echo "?")"

vm_run posture 30 "$SB" --outside --state "$TMPDIR/state" -- posture
vm_expect_rc 0 "the broker probe's posture (state dir on $fs)"
for l in 'CapEff=0000000000000000' 'CapBnd=0000000000000000' 'NoNewPrivs=1' 'Seccomp=2' 'Seccomp_filters=2' \
         'dumpable=0' 'pid=1' 'open /=EACCES' 'open /etc/passwd=ENOENT' 'outside ns pid differs' 'outside ns mnt differs'; do
  vm_out_has "$l" || vm_fail "posture lacks '$l'"
done
if [ "$CHIDORI_VM_USER" = tester ]; then
  vm_err_has "mode rootless, uid 1000" || vm_fail "tester: not the rootless mode"
  vm_out_has "uid=1000/1000/1000" && vm_out_has "outside ns user differs" || vm_fail "tester: uid or user ns"
  echo "  ok: rootless broker on $(uname -r): uid 1000 in its own user, pid and mount namespaces"
elif vm_err_has "mode uid0"; then
  vm_err_has "broker: uid 0 of its own user namespace, no capabilities ($TMPDIR/state cannot be id-mapped" ||
    vm_fail "the fallback is not named"
  vm_out_has "uid=0/0/0" && vm_out_has "outside ns user differs" || vm_fail "fallback: uid or user ns"
  vm_run req 30 "$SB" --require --state "$TMPDIR/state" -- posture
  vm_expect_rc 78 "--require with a state dir on $fs"
  vm_err_has "sandbox layer unavailable: an id-mapped mount of $TMPDIR/state for the broker" ||
    vm_fail "--require does not name the folder"
  echo "  ok: $fs on $(uname -r): no id-mapped mount; broker as uid 0 of its own user ns, no caps; refused when required"
else
  vm_err_has "mode root, uid 65533" && vm_out_has "uid=65533/65533/65533" || vm_fail "root: not the broker uid"
  echo "  ok: $fs on $(uname -r): id-mapped state dir, broker uid 65533"
fi

# attack NAME PROBE-ARGS...: fails locked (DENIED or the seccomp kill, 159), works in the control.
attack() {
  _a="$1"; shift
  vm_run "$_a" 30 "$SB" --state "$TMPDIR/state" -- "$@"
  if [ "$RC" -ne 159 ] && ! vm_out_has "DENIED"; then vm_fail "$_a: not denied (exit $RC: $OUT)"; fi
  vm_run "$_a-control" 30 "$SB" --control --state "$TMPDIR/state" -- "$@"
  vm_expect_rc 0 "$_a: the control run"
  vm_out_has "OK" || vm_fail "$_a: the control did not succeed: $OUT"
  echo "  ok: $_a fails locked, works in the control"
}
attack write-home write "$HOME"
attack signal-monitor signal @MONITOR
attack exec-shell exec
attack ptrace-monitor ptrace @MONITOR
# cgroup v2: the case's cgroup is delegated to tester too, so both can write it in the control.
attack cgroup-procs cgroup
# An unprivileged user cannot load a module even in the control.
[ "$CHIDORI_VM_USER" = root ] && attack load-module module
exit 0
