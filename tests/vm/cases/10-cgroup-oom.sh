#!/bin/sh
# A cgroup v2 leaf created under the delegated subtree takes memory.max, and a process
# placed in it that touches more than memory.max is OOM-killed (SIGKILL), while one that
# stays under the limit runs to completion.
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_check "enter a leaf and enable controllers in $CG" vm_enter_leaf self
leaf="$CG/oom-test"
vm_check "create $leaf" mkdir "$leaf"
vm_check "memory.max exists in the leaf" test -e "$leaf/memory.max"
echo 32M > "$leaf/memory.max" || vm_fail "write memory.max"
[ "$(cat "$leaf/memory.max")" = 33554432 ] || vm_fail "memory.max reads back $(cat "$leaf/memory.max")"
[ -e "$leaf/memory.swap.max" ] && echo 0 > "$leaf/memory.swap.max"

vm_in_cgroup "$leaf" vm-memhog 8 >/dev/null; rc=$?
[ "$rc" -eq 0 ] || vm_fail "8 MiB under a 32 MiB limit: exit $rc"
echo "  ok: 8 MiB under memory.max=32M runs"

vm_in_cgroup "$leaf" vm-memhog 128 >/dev/null; rc=$?
[ "$rc" -eq 137 ] || vm_fail "128 MiB under a 32 MiB limit: exit $rc, expected 137 (SIGKILL)"
kills="$(awk '$1 == "oom_kill" {print $2}' "$leaf/memory.events")"
[ "${kills:-0}" -ge 1 ] || vm_fail "memory.events oom_kill=${kills:-?}"
echo "  ok: 128 MiB is OOM-killed (oom_kill=$kills)"

rmdir "$leaf" || vm_fail "rmdir $leaf"
exit 0
