#!/bin/sh
# The box is born in its run leaf (clone3 CLONE_INTO_CGROUP + CLONE_NEWCGROUP): inside,
# /proc/self/cgroup is `0::/` (the cgroup namespace is rooted at the leaf); outside, the
# box's pid sits in P/chidori-<launcher pid>-<starttime>-<pidns>/run-<id> with the limits
# written, while the launcher stays where it was.
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
P="$CHIDORI_CGROUP_PARENT"
mnt=/sys/fs/cgroup

"$CHIDORI" launch --quiet --memory 96M --pids 20 -- /bin/sh -c 'cat /proc/self/cgroup; echo ready; exec sleep 30' \
  > "$TMPDIR/box.out" 2> "$TMPDIR/box.err" &
lpid=$!
i=0; while [ $i -lt 150 ] && ! grep -q '^ready' "$TMPDIR/box.out"; do sleep 0.1; i=$((i + 1)); done
sed 's/^/    box| /' "$TMPDIR/box.out" "$TMPDIR/box.err"
grep -q '^ready' "$TMPDIR/box.out" || vm_fail "the box did not start within 15 s"
inside="$(grep -v '^ready' "$TMPDIR/box.out")"
[ "$inside" = "0::/" ] || vm_fail "/proc/self/cgroup inside the box is '$inside', expected '0::/'"
echo "  ok: inside the box /proc/self/cgroup is 0::/"

box="$(vm_children $lpid)"
[ "$(echo "$box" | wc -w)" = 1 ] || vm_fail "launcher $lpid has children '$box', expected one box"
cgl="$(cat /proc/$box/cgroup)"
lcg="$(cat /proc/$lpid/cgroup)"
echo "  launcher $lpid: $lcg; box $box: $cgl"
path="${cgl#0::}"
starttime="$(cut -d')' -f2 /proc/$lpid/stat | awk '{print $20}')"
pidns="$(stat -L -c %i /proc/$lpid/ns/pid)"
want="${P#$mnt}/chidori-$lpid-$starttime-$pidns"
case "$path" in
  "$want"/run-*) ;;
  *) vm_fail "box cgroup '$path' is not $want/run-<id>" ;;
esac
leaf="${path##*/}"
echo "$leaf" | grep -Eq '^run-[A-Za-z0-9_.-]{1,64}$' || vm_fail "leaf name '$leaf' is not run-<id>"
[ "$lcg" = "0::${CG#$mnt}/self" ] || vm_fail "the launcher moved: '$lcg', expected 0::${CG#$mnt}/self"
d="$mnt$path"
grep -qx "$box" "$d/cgroup.procs" || vm_fail "$box not in $d/cgroup.procs: $(cat "$d/cgroup.procs")"
[ "$(cat "$d/memory.max")" = $((96 * 1024 * 1024)) ] || vm_fail "memory.max $(cat "$d/memory.max")"
[ "$(cat "$d/pids.max")" = 20 ] || vm_fail "pids.max $(cat "$d/pids.max")"
[ "$(cat "$d/memory.oom.group")" = 1 ] || vm_fail "memory.oom.group $(cat "$d/memory.oom.group")"
[ ! -e "$d/memory.swap.max" ] || [ "$(cat "$d/memory.swap.max")" = 0 ] || vm_fail "memory.swap.max $(cat "$d/memory.swap.max")"
echo "  ok: box $box is in $d (memory.max 96M, pids.max 20, oom.group 1); the launcher is not"

# the box ends (killed from outside): the launcher reports it and removes the leaf
kill -KILL "$box"
i=0; while [ $i -lt 100 ] && kill -0 $lpid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -0 $lpid 2>/dev/null && { kill -KILL $lpid; vm_fail "the launcher did not exit within 10 s of its box's end"; }
wait $lpid; rc=$?
[ "$rc" = 137 ] || vm_fail "launcher exit $rc after its box was SIGKILLed, expected 137"
[ ! -d "$d" ] || vm_fail "the leaf $d is left after the run"
left="$(vm_chidori_dirs "$P")"
[ -z "$left" ] || vm_fail "directories left after the run: $left"
echo "  ok: box SIGKILLed from outside: launcher exits 137 and removes its cgroups"
exit 0
