#!/bin/sh
# /init of the chidori qemu guest (copied in by tests/vm/build-initramfs.sh; busybox ash).
#
# Kernel command line parameters it reads (from /proc/cmdline: dotted parameters are
# not passed to init's environment):
#   chidori.test=PATH     the entry script to run (required)
#   chidori.nonce=WORD    makes the output frame markers unique per run
#   chidori.timeout=SECS  in-guest timeout for the entry script (default 0: none)
#   chidori.args=A,B,C    arguments for the entry script (comma separated)
#   chidori.shell=1       drop to an interactive shell instead of powering off (debug)
#
# Output on the serial console: boot chatter, then
#   ===CHIDORI-VM-BEGIN-<nonce>===
#   ...everything the entry script writes to stdout/stderr...
#   ===CHIDORI-VM-END-<nonce>===
#   CHIDORI-VM-EXIT=<status>
#   CHIDORI-VM-TIMES=init:<uptime when /init got to mount /proc> boot:<uptime when the
#                    script started> end:<uptime at its end>
# and the guest powers off.
# Stage 1: the initramfs is the kernel's rootfs, the root of the whole mount tree, and
# pivot_root(2) refuses to move that (EINVAL) — every sandbox that pivots would fail here
# but not on a real host. So bind-mount it onto itself, move the bind over /, chroot
# into it and start again: the root then is an ordinary mount with a parent, as on a
# disk-booted system (switch_root without the copy and without deleting anything).
if [ "${CHIDORI_INIT_STAGE:-1}" = 1 ]; then
  /usr/bin/busybox mkdir -p /newroot
  /usr/bin/busybox mount --bind / /newroot
  cd /newroot && /usr/bin/busybox mount --move . / && export CHIDORI_INIT_STAGE=2 && \
    exec /usr/bin/busybox chroot . /init "$@"
  echo "init: could not move the root off rootfs; pivot_root will fail in sandboxes" >&2
  cd /
fi
unset CHIDORI_INIT_STAGE
read -r INIT_UPTIME _ < /proc/uptime 2>/dev/null || INIT_UPTIME="?"   # proc not mounted yet: see below
/usr/bin/busybox --install -s 2>/dev/null   # applet symlinks; existing files win
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb LANG=C.UTF-8
umask 022

mount -t proc -o nosuid,nodev,noexec proc /proc
[ "$INIT_UPTIME" = "?" ] && read -r INIT_UPTIME _ < /proc/uptime
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys
mount -t devtmpfs -o nosuid,mode=0755 devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o nosuid,noexec,gid=5,mode=620,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue 2>/dev/null
# /tmp becomes a tmpfs, but keep whatever the image put under /tmp (run.sh FILES).
if [ -n "$(ls -A /tmp 2>/dev/null)" ]; then
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /mnt && cp -a /tmp/. /mnt/ && mount --move /mnt /tmp
else
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /tmp
fi
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs /run
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# Kernel messages (e.g. OOM-killer reports) must not interleave with the test output.
dmesg -n 1 2>/dev/null

param() { # param NAME -> value of chidori.NAME= on the kernel command line
  for w in $(cat /proc/cmdline); do
    case "$w" in "chidori.$1="*) echo "${w#*=}"; return 0 ;; esac
  done
  return 1
}
TEST="$(param test || true)"
NONCE="$(param nonce || echo 0)"
TIMEOUT="$(param timeout || echo 0)"
ARGS="$(param args | tr ',' ' ' || true)"

# ---- cgroup v2, pure (cmdline: systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all) ----
CG=/sys/fs/cgroup
mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 "$CG" 2>/dev/null \
  || mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate cgroup2 "$CG" \
  || mount -t cgroup2 cgroup2 "$CG"
# Move init (and so everything it starts) into a leaf, then enable the controllers in
# the root for the subtrees (the root itself is exempt from the no-internal-process rule,
# but real hosts run everything in leaves, and so do we).
mkdir -p "$CG/init"
echo $$ > "$CG/init/cgroup.procs"
for c in cpuset cpu io memory pids; do
  echo "+$c" > "$CG/cgroup.subtree_control" 2>/dev/null || echo "init: cannot enable cgroup controller $c" >&2
done
# Delegated subtree for the unprivileged user, the shape systemd gives a Delegate=yes
# unit: the directory and its cgroup.procs, cgroup.subtree_control, cgroup.threads
# belong to the user; the resource knobs of the delegated cgroup itself stay root's.
mkdir -p "$CG/user-tester"
chown 1000:1000 "$CG/user-tester" "$CG/user-tester/cgroup.procs" \
  "$CG/user-tester/cgroup.subtree_control" "$CG/user-tester/cgroup.threads"

# ---- misc system state -------------------------------------------------------------
hostname chidori-vm
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
# Debian kernels carry kernel.unprivileged_userns_clone; make sure it is on.
[ -e /proc/sys/kernel/unprivileged_userns_clone ] && echo 1 > /proc/sys/kernel/unprivileged_userns_clone
chown -R 1000:1000 /home/tester
# Modules shipped by run.sh (overlay, veth, dummy, tun): index them for modprobe.
[ -d "/lib/modules/$(uname -r)" ] && depmod -a 2>/dev/null
ln -sf /proc/self/fd /dev/fd 2>/dev/null
ln -sf /proc/self/fd/0 /dev/stdin 2>/dev/null
ln -sf /proc/self/fd/1 /dev/stdout 2>/dev/null
ln -sf /proc/self/fd/2 /dev/stderr 2>/dev/null

if [ "$(param shell || true)" = 1 ]; then
  echo "init: chidori.shell=1, starting a shell (exit to power off)"
  setsid cttyhack sh -l
  poweroff -f
fi

# ---- run the entry script ----------------------------------------------------------
BOOT_UPTIME="$(cut -d' ' -f1 /proc/uptime)"
echo; echo "===CHIDORI-VM-BEGIN-$NONCE==="
if [ -z "$TEST" ]; then
  echo "init: no chidori.test=PATH on the kernel command line"; rc=2
elif [ ! -e "$TEST" ]; then
  echo "init: $TEST: not in the initramfs"; rc=2
else
  cd /
  RUN="sh"; [ -x "$TEST" ] && RUN=""   # executable: its #! line decides
  if [ "$TIMEOUT" -gt 0 ] 2>/dev/null; then
    # shellcheck disable=SC2086
    timeout -s KILL "$TIMEOUT" $RUN "$TEST" $ARGS </dev/null 2>&1; rc=$?
    [ "$rc" -eq 137 ] && echo "init: $TEST killed after the in-guest timeout of ${TIMEOUT}s" && rc=124
  else
    # shellcheck disable=SC2086
    $RUN "$TEST" $ARGS </dev/null 2>&1; rc=$?
  fi
fi
sync
echo "===CHIDORI-VM-END-$NONCE==="
echo "CHIDORI-VM-EXIT=$rc"
echo "CHIDORI-VM-TIMES=init:$INIT_UPTIME boot:$BOOT_UPTIME end:$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
# poweroff -f should not return; if it does, panic=-1 + -no-reboot ends qemu.
echo o > /proc/sysrq-trigger 2>/dev/null
sleep 5
exit "$rc"
