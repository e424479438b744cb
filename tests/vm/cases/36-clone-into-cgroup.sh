#!/bin/sh
# The box is born in its run's box leaf (clone3 CLONE_INTO_CGROUP + CLONE_NEWCGROUP):
# inside, /proc/self/cgroup is `0::/` (the cgroup namespace is rooted at the leaf);
# outside, the box's pid sits in P/chidori-<launcher pid>-<starttime>-<pidns>/run-<id>/box,
# the limits written on the run's node run-<id> (which passes its controllers down and
# holds no process), while the launcher stays where it was.
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
  "$want"/run-*/box) ;;
  *) vm_fail "box cgroup '$path' is not $want/run-<id>/box" ;;
esac
node="${path%/box}"
leaf="${node##*/}"
echo "$leaf" | grep -Eq '^run-[A-Za-z0-9_.-]{1,64}$' || vm_fail "node name '$leaf' is not run-<id>"
[ "$lcg" = "0::${CG#$mnt}/self" ] || vm_fail "the launcher moved: '$lcg', expected 0::${CG#$mnt}/self"
grep -qx "$box" "$mnt$path/cgroup.procs" || vm_fail "$box not in $mnt$path/cgroup.procs"
d="$mnt$node"
[ -z "$(cat "$d/cgroup.procs")" ] || vm_fail "the run's node holds processes: $(cat "$d/cgroup.procs")"
for c in memory pids; do
  grep -qw $c "$d/cgroup.subtree_control" || vm_fail "$d does not pass $c down: $(cat "$d/cgroup.subtree_control")"
done
[ "$(cat "$d/memory.max")" = $((96 * 1024 * 1024)) ] || vm_fail "memory.max $(cat "$d/memory.max")"
[ "$(cat "$d/pids.max")" = 20 ] || vm_fail "pids.max $(cat "$d/pids.max")"
[ "$(cat "$d/memory.oom.group")" = 1 ] || vm_fail "memory.oom.group $(cat "$d/memory.oom.group")"
[ ! -e "$d/memory.swap.max" ] || [ "$(cat "$d/memory.swap.max")" = 0 ] || vm_fail "memory.swap.max $(cat "$d/memory.swap.max")"
echo "  ok: box $box is in $d/box (memory.max 96M, pids.max 20, oom.group 1 on the node); the launcher is not"

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
