#!/bin/sh
# Without cgroup delegation there is no cgroup ceiling, and chidori says so: an
# unprivileged launcher (CHIDORI_CGROUP_PARENT unset) sitting in a cgroup it may not
# write gets `no cgroup (no cgroup delegation): memory watchdog 512M, pids rlimit 64`
# in the banner (the watchdog kills at --memory, RLIMIT_NPROC holds --pids, an
# explicit --cpus exits 78), and with
# --require-sandbox exits 78 with `sandbox layer unavailable: memory ceiling (no cgroup
# delegation)`. As root the shape is real (tester placed in a root-owned cgroup); as
# tester it is a cgroup of its own made read-only. Also: a launcher whose cgroup holds
# other processes says so, and one alone in a delegated cgroup moves itself into
# chidori-launcher and gets the ceiling.
# vm-timeout: 90
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_hog cg_forkbomb
unset CHIDORI_CGROUP_PARENT
vm_check "enter a leaf, enable controllers in $CG" vm_enter_leaf self
nd="$CG/nodeleg"
vm_check "create $nd" mkdir "$nd"
grep -qw memory "$nd/cgroup.controllers" || vm_fail "no memory controller in $nd"

if [ "$CHIDORI_VM_USER" = root ]; then
  # root-owned cgroup, the unprivileged launcher put there by root
  AS_NODELEG="vm-runas 1000:1000 --cgroup $nd"
  cd / || vm_fail "cd /"
  echo "  $nd: $(stat -c '%U %a' "$nd"), cgroup.procs $(stat -c '%U %a' "$nd/cgroup.procs")"
else
  # tester's own cgroup, made read-only for tester: faccessat says no, as for a
  # cgroup owned by someone else (or a read-only cgroupfs)
  echo $$ > "$nd/cgroup.procs" || vm_fail "enter $nd"
  chmod 0444 "$nd/cgroup.procs" "$nd/cgroup.subtree_control" "$nd/cgroup.threads" || vm_fail "chmod"
  chmod 0555 "$nd" || vm_fail "chmod $nd"
  AS_NODELEG="env"
  echo "  $nd: $(stat -c '%U %a' "$nd"), cgroup.procs $(stat -c '%U %a' "$nd/cgroup.procs")"
fi

vm_run req 30 $AS_NODELEG "$CHIDORI" launch --require-sandbox -- /bin/true
vm_expect_rc 78 "launch --require-sandbox without delegation"
vm_err_has "sandbox layer unavailable: memory ceiling (no cgroup delegation)" \
  || vm_fail "stderr lacks 'sandbox layer unavailable: memory ceiling (no cgroup delegation)'"
echo "  ok: --require-sandbox refuses with 78 and the reason"

vm_run noreq 30 $AS_NODELEG "$CHIDORI" launch -- /bin/true
vm_expect_rc 0 "launch without --require-sandbox"
vm_err_has "no cgroup (no cgroup delegation): memory watchdog 512M, pids rlimit 64" \
  || vm_fail "banner lacks 'no cgroup (no cgroup delegation): memory watchdog 512M, pids rlimit 64'"
echo "  ok: without --require-sandbox it runs and the banner names the fallbacks and why"

vm_run hog 60 $AS_NODELEG "$CHIDORI" launch --quiet --memory 64M -- "$PROBES/cg_hog" 200
vm_expect_rc 137 "cg_hog 200 under --memory 64M without delegation (the watchdog)"
vm_err_has "memory limit exceeded (limit 64 MiB)" || vm_fail "stderr lacks 'memory limit exceeded (limit 64 MiB)'"
vm_run bomb 30 $AS_NODELEG "$CHIDORI" launch --quiet --pids 16 -- "$PROBES/cg_forkbomb"
vm_expect_rc 3 "cg_forkbomb under --pids 16 without delegation (RLIMIT_NPROC)"
echo "$OUT" | grep -Eq '^forked 1[0-5], refused [0-9]+$' || vm_fail "stdout '$OUT', expected 'forked 10..15, refused N'"
vm_run cpus 30 $AS_NODELEG "$CHIDORI" launch --cpus 0.5 -- /bin/true
vm_expect_rc 78 "--cpus 0.5 without delegation"
vm_err_has "sandbox layer unavailable: --cpus 0.5 (no cgroup cpu.max: no cgroup delegation" \
  || vm_fail "stderr lacks 'sandbox layer unavailable: --cpus 0.5 (no cgroup cpu.max: no cgroup delegation'"
echo "  ok: the watchdog kills at --memory, RLIMIT_NPROC holds --pids, --cpus is refused (78)"

vm_run env 30 $AS_NODELEG env CHIDORI_ISOLATE_REQUIRE_SANDBOX=1 "$CHIDORI" launch -- /bin/true
vm_expect_rc 78 "CHIDORI_ISOLATE_REQUIRE_SANDBOX=1 without delegation"

vm_run doctor 30 $AS_NODELEG "$CHIDORI" doctor
echo "$OUT" | grep -E '^  cgroup \(memory ceiling\)' | grep -q 'no cgroup delegation' \
  || vm_fail "doctor's cgroup line does not say 'no cgroup delegation'"
echo "  ok: doctor names the missing delegation"
[ -z "$(vm_chidori_dirs "$CG")" ] || vm_fail "chidori-* directories appeared: $(vm_chidori_dirs "$CG")"

# ---- a launcher whose cgroup holds other processes (this shell) ---------------------
busy="$CG/busy"
mkdir "$busy" || vm_fail "mkdir $busy"
# sh moves itself into $busy, leaves a sleep there and becomes chidori
in_busy='echo 0 > "$1/cgroup.procs" || exit 126; shift; sleep 30 >/dev/null 2>&1 & exec "$@"'
vm_run busy 30 sh -c "$in_busy" busy "$busy" "$CHIDORI" launch -- /bin/true
vm_expect_rc 0 "launch from a cgroup holding other processes"
vm_err_has "no cgroup (launcher cgroup holds other processes): memory watchdog 512M" \
  || vm_fail "banner lacks 'no cgroup (launcher cgroup holds other processes): memory watchdog 512M'"
vm_run busyreq 30 sh -c "$in_busy" busy "$busy" "$CHIDORI" launch --require-sandbox -- /bin/true
vm_expect_rc 78 "launch --require-sandbox from a cgroup holding other processes"
vm_err_has "sandbox layer unavailable: memory ceiling (launcher cgroup holds other processes)" \
  || vm_fail "stderr lacks 'sandbox layer unavailable: memory ceiling (launcher cgroup holds other processes)'"
# shellcheck disable=SC2046  # one pid a word
kill $(cat "$busy/cgroup.procs") 2>/dev/null
echo "  ok: a busy cgroup is named as the reason"

# ---- alone in a delegated cgroup: moves itself into chidori-launcher ----------------
al="$CG/alone"
mkdir "$al" || vm_fail "mkdir $al"
vm_run alone 30 sh -c 'echo 0 > "$1/cgroup.procs" || exit 126; shift; exec "$@"' alone "$al" "$CHIDORI" launch --require-sandbox -- /bin/true
vm_expect_rc 0 "launch --require-sandbox alone in a delegated cgroup"
vm_err_has "cgroup2 memory.max=512M pids.max=64" || vm_fail "banner lacks the cgroup2 ceiling"
[ -d "$al/chidori-launcher" ] || vm_fail "no $al/chidori-launcher"
grep -qw memory "$al/cgroup.subtree_control" || vm_fail "memory not enabled in $al"
left="$(find "$al" -mindepth 1 -type d -name 'chidori-*' ! -name chidori-launcher)"
[ -z "$left" ] || vm_fail "run directories left: $left"
echo "  ok: alone in $al it moved into chidori-launcher, enabled memory and cleaned up"
exit 0
