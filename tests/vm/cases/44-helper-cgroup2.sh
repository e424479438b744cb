#!/bin/sh
# The privileged helper on cgroup v2 (root only). The guest's /tmp is tmpfs, which cannot
# be id-mapped before 6.3, so root's runs elsewhere here keep root in the monitor (the
# fallback, with its note). Here the state dir is on ext4's driver (a loop device): `chidori run`
# as root then keeps root in chidori-privhelper and runs the monitor as uid 65532 in the
# cgroup v2 folder the helper delegated (CHIDORI_PRIVSEP=1 requires it: 78 otherwise).
# The value and the memory store come back through the broker, the store is root's on
# disk, --memory holds in the delegated cgroup (137), nested agents' tools share the
# run's --pids, and nothing is left behind.
# vm-users: root
# vm-timeout: 150
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori fork_hold
modprobe loop 2>/dev/null
modprobe ext4 2>/dev/null
grep -qw ext4 /proc/filesystems || vm_skip "no ext4 in this guest's kernel (tests/vm/setup.sh keeps the module)"
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
IMG="$TMPDIR/state.img" MNT="$TMPDIR/ext4"
dd if=/dev/zero of="$IMG" bs=1M count=24 2>/dev/null || vm_fail "make $IMG"
# busybox's mke2fs makes ext2, which the ext4 driver mounts (and id-maps: FS_ALLOW_IDMAP)
mke2fs -F "$IMG" >/dev/null || vm_fail "mke2fs $IMG"
mkdir -p "$MNT"
mount -t ext4 -o loop "$IMG" "$MNT" || vm_fail "mount -t ext4 -o loop $IMG"
S="$MNT/state" A="$TMPDIR/agent"
mkdir -p "$A"
cat >"$A/a.js" <<'JS'
async function main(input) {
  const prev = await chidori.memory.get("n");
  await chidori.memory.set("n", (prev || 0) + 1);
  return [prev, input.x];
}
JS
vm_run run1 60 env CHIDORI_PRIVSEP=1 "$CHIDORI" run --quiet --state-dir "$S" --input '{"x":7}' "$A/a.js"
vm_expect_rc 0 "a run through the helper (CHIDORI_PRIVSEP=1)"
vm_out_has '[null,7]' || vm_fail "first run's value: $OUT"
vm_run run2 60 env CHIDORI_PRIVSEP=1 "$CHIDORI" run --quiet --state-dir "$S" --input '{"x":7}' "$A/a.js"
vm_expect_rc 0 "a second run through the helper"
vm_out_has '[1,7]' || vm_fail "the memory store did not persist: $OUT"
owner="$(stat -c %u "$S/memory.sqlite3")"
[ "$owner" = 0 ] || vm_fail "memory.sqlite3 is uid $owner on disk, expected 0 (the broker's writes id-mapped)"
echo "  ok: value and memory store through the helper on $(uname -r), cgroup v2; the store is root's on disk"

# While a run is in progress: the monitor is uid 65532, in the folder the helper delegated.
echo 'function main() { for (;;) {} }' >"$A/loop.js"
env CHIDORI_PRIVSEP=1 "$CHIDORI" run --quiet --state-dir "$S" --deadline 20000 "$A/loop.js" \
  >"$TMPDIR/loop.out" 2>"$TMPDIR/loop.err" </dev/null &
lp=$!
sup=""
for _ in $(seq 100); do
  for c in $(cat /proc/"$lp"/task/*/children 2>/dev/null); do
    [ "$(cat /proc/"$c"/comm 2>/dev/null)" = chidori-monitor ] && sup=$c
  done
  [ -n "$sup" ] && [ -n "$(cat /proc/"$sup"/task/*/children 2>/dev/null)" ] && break
  sleep 0.1
done
helper="$(cat /proc/"$lp"/comm 2>/dev/null)"
dctl="$(cat "$CHIDORI_CGROUP_PARENT"/chidori-*/cgroup.controllers 2>/dev/null)"
suid="$(awk '/^Uid:/ {print $3}' /proc/"$sup"/status 2>/dev/null)"
scg="$(cut -d: -f3 /proc/"$sup"/cgroup 2>/dev/null)"
kill -TERM "$lp"; wait "$lp"; trc=$?
echo "  the process waited for: $helper; its supervisor $sup: euid $suid, cgroup $scg (controllers: $dctl); SIGTERM -> $trc"
[ "$helper" = chidori-privhel ] || vm_fail "the run's process is '$helper', expected chidori-privhelper"
[ "$suid" = 65532 ] || vm_fail "the supervisor's euid is '$suid', expected 65532"
case "$scg" in "${CHIDORI_CGROUP_PARENT#/sys/fs/cgroup}"/chidori-*) ;; *) vm_fail "the supervisor is in '$scg', not a folder the helper made under $CHIDORI_CGROUP_PARENT";; esac
[ "$trc" = 143 ] || vm_fail "SIGTERM: exit $trc, expected 143"
# memory and pids, which the parent offers, reach the delegated folder (the helper
# enables them below the parent: the last word of cgroup.controllers ends with a newline)
for c in memory pids; do
  case " $dctl " in *" $c "*) ;; *) vm_fail "the delegated folder offers '$dctl': no $c";; esac
done
echo "  ok: the helper keeps root, the monitor is uid 65532 in the delegated cgroup v2 folder"

cat > "$TMPDIR/bomb.js" <<'JS'
function main() {
  const keep = new Map();
  for (let i = 0; ; i++) { keep.set(i, new Array(100000).fill(i)); keep.set("s" + i, "x".repeat(100000) + i); }
}
JS
vm_run bomb 60 env CHIDORI_PRIVSEP=1 "$CHIDORI" run --state-dir "$S" --memory 96M "$TMPDIR/bomb.js"
vm_expect_rc 137 "a memory bomb under the helper"
vm_err_has "cgroup2 memory.max=96M" || vm_fail "the banner does not say cgroup2 memory.max=96M"
vm_err_has "pids.max=64" || vm_fail "the banner does not say pids.max=64 (the pids ceiling is the cgroup's under the helper too)"
vm_err_has "chidori: memory limit exceeded (limit 96 MiB)" || vm_fail "stderr lacks the memory limit message"
echo "  ok: --memory 96M holds in the delegated cgroup (137)"

# The run tree under the helper: two nested agents' boxed tools fork at once below the
# run's folder, under one --pids 64 (40-run-tree-pids, through the helper).
cat >"$A/child.js" <<'JS'
module.exports = async () => chidori.tool('fork', {}).catch((e) => ({ held: 0, error: e.message }));
JS
cat >"$A/tree.js" <<'JS'
module.exports = async () => {
  const held = (p) => p.then((r) => r.held, () => 0);
  const r = await Promise.all([held(chidori.callAgent('child.js', {})), held(chidori.callAgent('child.js', {}))]);
  return r[0] + r[1];
};
JS
echo "{\"fork\": {\"command\": [\"$PROBES/fork_hold\", \"4000\", \"200\", \"12\"]}}" >"$TMPDIR/tools.json"
vm_run tree 120 env CHIDORI_PRIVSEP=1 "$CHIDORI" run --quiet --state-dir "$S" --pids 64 --tools "$TMPDIR/tools.json" "$A/tree.js"
vm_expect_rc 0 "nested agents' tools under the helper"
[ "$OUT" -gt 10 ] && [ "$OUT" -lt 64 ] || vm_fail "held $OUT processes at once in all, --pids 64"
echo "  ok: the tools of two nested agents held $OUT processes together under --pids 64, through the helper"

left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup folders left behind: $left"
umount "$MNT" || vm_fail "umount $MNT (something of the runs still holds it)"
echo "  ok: no chidori-* cgroup left, the ext4 state dir unmounts"
