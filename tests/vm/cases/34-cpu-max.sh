#!/bin/sh
# `chidori launch --cpus 0.25` writes cpu.max on cgroup v2: cg_spin spinning for 2 s of
# wall time gets well under half of it in CPU (< 1000 ms), and over 70 % (> 1400 ms)
# without --cpus. (2 s rather than the host test's 1 s: cg_spin reports the CPU time
# of its whole process, which includes the box setup before exec and the dynamic
# loader; under TCG on a busy host that is 120-260 ms, enough to push a 1 s run
# under 0.25 CPU over 500 ms although the quota held.)
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_spin
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori

# for the record: the CPU a box costs before and around a spin of 0 ms
vm_run spin0 30 "$CHIDORI" launch --quiet -- "$PROBES/cg_spin" 0
echo "  (startup: $OUT)"

vm_run spin25 30 "$CHIDORI" launch --cpus 0.25 -- "$PROBES/cg_spin" 2000
vm_expect_rc 0 "cg_spin 2000 under --cpus 0.25"
vm_err_has "cgroup2 memory.max=512M pids.max=64 cpus=0.25" || vm_fail "banner lacks 'cgroup2 memory.max=512M pids.max=64 cpus=0.25'"
ms="$(echo "$OUT" | awk '$1 == "cpu_ms" {print $2}')"
[ -n "$ms" ] && [ "$ms" -lt 1000 ] || vm_fail "cpu_ms '$ms' under --cpus 0.25 for 2 s, expected < 1000"
echo "  ok: --cpus 0.25: cpu_ms $ms for 2000 ms of spinning"

vm_run spin 30 "$CHIDORI" launch --quiet -- "$PROBES/cg_spin" 2000
vm_expect_rc 0 "cg_spin 2000"
ms="$(echo "$OUT" | awk '$1 == "cpu_ms" {print $2}')"
[ -n "$ms" ] && [ "$ms" -gt 1400 ] || vm_fail "cpu_ms '$ms' without --cpus for 2 s, expected > 1400"
echo "  ok: no --cpus: cpu_ms $ms for 2000 ms of spinning"
exit 0
