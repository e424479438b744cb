#!/bin/sh
# A fork bomb under `chidori launch --pids 16` is stopped by pids.max on cgroup v2 and
# the launcher reports it (`process limit reached (pids.max 16)`).
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_forkbomb
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori

vm_run bomb 30 "$CHIDORI" launch --pids 16 -- "$PROBES/cg_forkbomb"
vm_err_has "cgroup2 memory.max=512M pids.max=16" || vm_fail "banner lacks 'cgroup2 memory.max=512M pids.max=16'"
vm_expect_rc 3 "cg_forkbomb under --pids 16 (3 = some forks refused)"
echo "$OUT" | grep -Eq '^forked 1[0-5], refused [0-9]+$' || vm_fail "stdout '$OUT', expected 'forked 10..15, refused N'"
vm_err_has "process limit reached (pids.max 16)" || vm_fail "stderr lacks 'process limit reached (pids.max 16)'"
echo "  ok: stopped at pids.max 16 and reported"
left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup directories left behind: $left"
exit 0
