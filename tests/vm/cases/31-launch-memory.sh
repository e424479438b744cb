#!/bin/sh
# `chidori launch --memory 64M` bounds a C program on cgroup v2: touching 200 MiB is
# OOM-killed (137, reported), 32 MiB is not (no false positive); with
# --unsafe-disable=cgroup the watchdog kills it instead, and with no ceiling at all
# (CHIDORI_JS_MEM_CAP_MB=0) it survives (the ceiling is what stopped it).
# vm-timeout: 90
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_hog
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori

vm_run hog200 60 "$CHIDORI" launch --memory 64M -- "$PROBES/cg_hog" 200
vm_err_has "cgroup2 memory.max=64M" || vm_fail "the banner does not say cgroup2 memory.max=64M"
vm_expect_rc 137 "cg_hog 200 under --memory 64M"
vm_err_has "memory limit exceeded (limit 64 MiB)" || vm_fail "stderr lacks 'memory limit exceeded (limit 64 MiB)'"
! vm_out_has survived || vm_fail "cg_hog 200 says it survived"
echo "  ok: 200 MiB under 64M is killed (137, reported)"

vm_run hog32 60 "$CHIDORI" launch --quiet --memory 64M -- "$PROBES/cg_hog" 32
vm_expect_rc 0 "cg_hog 32 under --memory 64M"
[ "$OUT" = "survived 32 MiB" ] || vm_fail "stdout '$OUT', expected 'survived 32 MiB'"
[ -z "$ERR" ] || vm_fail "unexpected stderr under --quiet: $ERR"
echo "  ok: 32 MiB under 64M runs to completion"

vm_run hog200off 60 "$CHIDORI" launch --memory 64M --unsafe-disable=cgroup -- "$PROBES/cg_hog" 200
vm_expect_rc 137 "cg_hog 200 with --unsafe-disable=cgroup (the watchdog holds the ceiling)"
vm_err_has "no cgroup (disabled by --unsafe-disable): memory watchdog 64M" || vm_fail "banner lacks 'no cgroup (disabled by --unsafe-disable): memory watchdog 64M'"
vm_err_has "memory limit exceeded (limit 64 MiB)" || vm_fail "stderr lacks 'memory limit exceeded (limit 64 MiB)'"
echo "  ok: with the cgroup layer off the watchdog kills the same 200 MiB (137, reported)"

vm_run hog200none 60 env CHIDORI_JS_MEM_CAP_MB=0 "$CHIDORI" launch --quiet -- "$PROBES/cg_hog" 200
vm_expect_rc 0 "cg_hog 200 with no memory ceiling"
vm_out_has "survived 200 MiB" || vm_fail "cg_hog 200 did not survive without a ceiling"
echo "  ok: the same 200 MiB survives with no ceiling at all"
left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup directories left behind: $left"
exit 0
