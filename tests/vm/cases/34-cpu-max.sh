#!/bin/sh
# `chidori launch --cpus 0.25` writes cpu.max on cgroup v2: a program spinning for 1 s
# of wall time gets well under 500 ms of CPU; without --cpus it gets over 700 ms.
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_spin
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori

vm_run spin25 30 "$CHIDORI" launch --cpus 0.25 -- "$PROBES/cg_spin" 1000
vm_expect_rc 0 "cg_spin 1000 under --cpus 0.25"
vm_err_has "cpus=0.25" || vm_fail "banner lacks cpus=0.25"
ms="$(echo "$OUT" | awk '$1 == "cpu_ms" {print $2}')"
[ -n "$ms" ] && [ "$ms" -lt 500 ] || vm_fail "cpu_ms '$ms' under --cpus 0.25, expected < 500"
echo "  ok: --cpus 0.25: cpu_ms $ms"

vm_run spin 30 "$CHIDORI" launch --quiet -- "$PROBES/cg_spin" 1000
vm_expect_rc 0 "cg_spin 1000"
ms="$(echo "$OUT" | awk '$1 == "cpu_ms" {print $2}')"
[ -n "$ms" ] && [ "$ms" -gt 700 ] || vm_fail "cpu_ms '$ms' without --cpus, expected > 700"
echo "  ok: no --cpus: cpu_ms $ms"
exit 0
