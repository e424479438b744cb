#!/bin/sh
# The guest is what the other cases assume: pure cgroup v2 with the memory controller
# delegated, Landlock, unprivileged user namespaces, seccomp filters, and host binaries
# (with their shared libraries) that run.
# vm-timeout: 60
# vm-include: /usr/bin/sqlite3
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

grep -q '^cgroup2 /sys/fs/cgroup cgroup2 ' /proc/mounts || vm_fail "cgroup2 not mounted on /sys/fs/cgroup"
! grep -q ' cgroup ' /proc/mounts || vm_fail "a cgroup v1 hierarchy is mounted"
for c in memory pids cpu; do
  grep -qw "$c" "$CG/cgroup.controllers" || vm_fail "controller $c not in $CG/cgroup.controllers"
done
echo "  ok: pure cgroup v2, $CG has: $(cat "$CG/cgroup.controllers")"

out="$(vm-features)" || vm_fail "vm-features failed"
echo "$out" | sed 's/^/  /'
abi="$(echo "$out" | sed -n 's/^landlock_abi=//p')"
[ "${abi:-none}" -ge 1 ] 2>/dev/null || vm_fail "Landlock unavailable (landlock_abi=$abi)"
echo "$out" | grep -qx 'userns_all+pivot_root=ok' || vm_fail "user namespace (+mnt,pid,net,ipc,uts,cgroup) and pivot_root failed"
echo "$out" | grep -qx 'seccomp_filter=ok' || vm_fail "seccomp filters unavailable"
unshare -r -m -p -n -f true || vm_fail "busybox unshare -r -m -p -n -f true failed"
echo "  ok: busybox unshare -r -m -p -n -f"

if [ -x /usr/bin/sqlite3 ]; then
  v="$(/usr/bin/sqlite3 :memory: 'select sqlite_version();')" || vm_fail "/usr/bin/sqlite3 does not run (missing libraries?)"
  echo "  ok: dynamically linked /usr/bin/sqlite3 runs (sqlite $v)"
fi
# build/chidori links JavaScriptCore (~27 libraries): running it proves the ldd closure.
if [ -x "$REPO/build/chidori" ]; then
  v="$("$REPO/build/chidori" --version 2>&1)" || vm_fail "$REPO/build/chidori --version failed: $v"
  echo "  ok: $REPO/build/chidori --version: $v"
else
  echo "  (no $REPO/build/chidori in the image)"
fi
exit 0
