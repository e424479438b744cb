#!/bin/sh
# tests/vm/guest-run.sh [-v] [CASE...] — the in-guest entry point (busybox ash).
#
# Prints what the guest is (kernel, cgroup controllers, LSMs, user namespaces,
# chidori --version), then runs every tests/vm/cases/*.sh (or only the named CASEs,
# basenames without .sh) as root and as the unprivileged user `tester`, TAP style:
#   ok N - CASE (USER)  /  not ok N - CASE (USER)  /  ok N - CASE (USER) # SKIP why
# and ends with `# vm: P passed, F failed[, S skipped]`. Exit 0 iff F == 0.
# -v shows every case's output, not only the failures'.
# vm-include: /usr/bin/sqlite3
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CGROOT=/sys/fs/cgroup
VERBOSE=0
[ "$1" = -v ] && { VERBOSE=1; shift; }

line() { printf '# %-28s %s\n' "$1" "$2"; }
line "kernel:" "$(uname -r) ($(uname -v))"
line "cpus / memory:" "$(nproc) / $(awk '/MemTotal/{print int($2/1024) " MiB"}' /proc/meminfo)"
line "cgroup mount:" "$(grep ' /sys/fs/cgroup ' /proc/mounts)"
line "root cgroup.controllers:" "$(cat $CGROOT/cgroup.controllers)"
line "root subtree_control:" "$(cat $CGROOT/cgroup.subtree_control)"
line "user-tester controllers:" "$(cat $CGROOT/user-tester/cgroup.controllers 2>/dev/null || echo MISSING)"
line "user-tester owner:" "$(stat -c '%u:%g' $CGROOT/user-tester) (procs $(stat -c '%u' $CGROOT/user-tester/cgroup.procs))"
line "lsm:" "$(cat /sys/kernel/security/lsm 2>/dev/null || echo '?')"
line "unprivileged_userns_clone:" "$(cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null || echo absent)"
line "max_user_namespaces:" "$(cat /proc/sys/user/max_user_namespaces)"
if vm-runas 1000:1000 unshare -U true 2>/dev/null; then u=ok; else u=FAILED; fi
line "unshare -U true as tester:" "$u"
for who in root tester; do
  if [ $who = root ]; then f="$(vm-features)"; else f="$(vm-runas 1000:1000 vm-features)"; fi
  line "features ($who):" "$(echo "$f" | grep -v '^uid=' | tr '\n' ' ')"
done
if modprobe overlay 2>/dev/null && grep -qw overlay /proc/filesystems; then m=ok; else m="not loadable"; fi
line "modprobe overlay:" "$m ($(ls "/lib/modules/$(uname -r)"/kernel/*/* 2>/dev/null | sed 's#.*/##' | tr '\n' ' '))"
if [ -x "$REPO/build/chidori" ]; then
  v="$("$REPO/build/chidori" --version 2>&1)"; rc=$?
  line "chidori --version:" "$(echo "$v" | head -1) (exit $rc)"
else
  line "chidori --version:" "no $REPO/build/chidori in the image"
fi
if [ -x /usr/bin/sqlite3 ]; then
  line "sqlite3 (ldd check):" "$(/usr/bin/sqlite3 :memory: 'select sqlite_version();' 2>&1)"
fi

# ---- cases -------------------------------------------------------------------------
cases=""
for c in "$HERE"/cases/*.sh; do
  [ -e "$c" ] || continue
  n="$(basename "$c" .sh)"
  if [ $# -gt 0 ]; then
    want=0; for a in "$@"; do [ "$a" = "$n" ] && want=1; done
    [ $want = 1 ] || continue
  fi
  cases="$cases $c"
done
users_of() { # users a case runs as: its "# vm-users:" line, default both
  u="$(sed -n 's/^#[[:space:]]*vm-users:[[:space:]]*//p' "$1" | head -1)"
  echo "${u:-root tester}"
}
total=0
for c in $cases; do for u in $(users_of "$c"); do total=$((total + 1)); done; done
echo "1..$total"

# Leave a delegated cgroup empty and reset: kill leftovers, remove child cgroups,
# disable the controllers the case enabled for its children.
reset_cgroup() {
  d="$1"
  [ -e "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null
  i=0
  while [ $i -lt 50 ]; do
    find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -z "$(find "$d" -mindepth 1 -type d)" ] && [ -z "$(cat "$d/cgroup.procs")" ] && break
    [ -e "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null
    i=$((i + 1)); sleep 0.1
  done
  for ctl in $(cat "$d/cgroup.subtree_control"); do echo "-$ctl" > "$d/cgroup.subtree_control"; done
}

LOGDIR=/tmp/vm-cases; mkdir -p "$LOGDIR"
n=0; pass=0; fail=0; skip=0
for c in $cases; do
  name="$(basename "$c" .sh)"
  to="$(sed -n 's/^#[[:space:]]*vm-timeout:[[:space:]]*\([0-9]*\).*/\1/p' "$c" | head -1)"
  to="${to:-120}"
  for u in $(users_of "$c"); do
    n=$((n + 1))
    tmp="$(mktemp -d /tmp/case.XXXXXX)"
    log="$LOGDIR/$name.$u.log"
    runner="sh"; [ -x "$c" ] && runner=""   # executable: its #! line decides
    t0="$(cut -d' ' -f1 /proc/uptime)"
    if [ "$u" = root ]; then
      cg=$CGROOT/vm-root; mkdir -p $cg
      env CHIDORI_VM_USER=root CHIDORI_VM_CGROUP=$cg CHIDORI_VM_REPO="$REPO" CHIDORI_VM_LIB="$HERE/lib.sh" \
          TMPDIR="$tmp" HOME=/root USER=root LOGNAME=root \
        timeout -s KILL "$to" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec $0 "$@"' "${runner:-env}" "$cg" "$c" \
        >"$log" 2>&1 </dev/null
      rc=$?
    else
      cg=$CGROOT/user-tester
      chown 1000:1000 "$tmp"
      env CHIDORI_VM_USER=tester CHIDORI_VM_CGROUP=$cg CHIDORI_VM_REPO="$REPO" CHIDORI_VM_LIB="$HERE/lib.sh" \
          TMPDIR="$tmp" HOME=/home/tester USER=tester LOGNAME=tester \
        timeout -s KILL "$to" vm-runas 1000:1000 --cgroup "$cg" ${runner:-env} "$c" \
        >"$log" 2>&1 </dev/null
      rc=$?
    fi
    t1="$(cut -d' ' -f1 /proc/uptime)"
    secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')"
    reset_cgroup "$cg"
    [ "$u" = root ] && rmdir "$cg" 2>/dev/null
    rm -rf "$tmp"
    show=$VERBOSE
    if [ $rc -eq 0 ]; then
      pass=$((pass + 1)); echo "ok $n - $name ($u) # ${secs}s"
    elif [ $rc -eq 77 ]; then
      skip=$((skip + 1)); echo "ok $n - $name ($u) # SKIP $(grep -m1 '^SKIP: ' "$log" | sed 's/^SKIP: //')"
    else
      fail=$((fail + 1)); show=1
      why="exit $rc"; [ $rc -eq 137 ] && why="killed (timeout ${to}s?)"
      echo "not ok $n - $name ($u) # $why after ${secs}s"
    fi
    [ $show = 1 ] && sed -n '1,200s/^/#   /p' "$log"
  done
done

if [ $skip -gt 0 ]; then echo "# vm: $pass passed, $fail failed, $skip skipped"
else echo "# vm: $pass passed, $fail failed"; fi
[ $fail -eq 0 ]
