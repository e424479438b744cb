#!/bin/sh
# A launcher stopped politely (SIGTERM, SIGHUP: systemd stop, docker stop, a closed
# terminal) tears its run down like any other ending: the box dies, and the run leaf and
# the launcher's chidori-<pid>-... directory are removed at once, not left for the next
# launcher's stale cleanup. Checked for `chidori launch` and `chidori run`.
# vm-timeout: 90
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
command -v vm-boxprobe >/dev/null || vm_fail "no vm-boxprobe in the image"
BP="$(command -v vm-boxprobe)"
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
P="$CHIDORI_CGROUP_PARENT"
cd "$REPO" || vm_fail "cd $REPO"
echo 'function main() { for (;;) {} }' > "$TMPDIR/spin.js"

fails=""
# check SIG WHAT CMD...: start CMD in the background, wait for its box leaf to hold a
# process, send SIG to the launcher, then look at what is left.
check() {
  sig="$1"; what="$2"; shift 2
  "$@" > "$TMPDIR/sig.out" 2> "$TMPDIR/sig.err" &
  lpid=$!
  leaf=""; i=0
  while [ $i -lt 200 ]; do
    leaf="$(find "$P" -mindepth 3 -maxdepth 3 -type d -path '*/run-*/box' 2>/dev/null | head -1)"
    [ -n "$leaf" ] && [ -n "$(cat "$leaf/cgroup.procs" 2>/dev/null)" ] && break
    sleep 0.1; i=$((i + 1))
  done
  [ -n "$leaf" ] || { kill -KILL $lpid; vm_fail "$what: no populated run leaf within 20 s"; }
  box="$(cat "$leaf/cgroup.procs" | tr '\n' ' ')"
  kill -"$sig" $lpid
  i=0; while [ $i -lt 100 ] && kill -0 $lpid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  if kill -0 $lpid 2>/dev/null; then kill -KILL $lpid; vm_fail "$what: launcher alive 10 s after SIG$sig"; fi
  wait $lpid; rc=$?
  sleep 0.2
  alive=""; for b in $box; do [ -e /proc/$b ] && [ "$(cut -d' ' -f3 /proc/$b/stat 2>/dev/null)" != Z ] && alive="$alive $b"; done
  left="$(vm_chidori_dirs "$P" | tr '\n' ' ')"
  echo "  $what: SIG$sig -> launcher exit $rc; box ($box) alive:${alive:- none}; left: ${left:-nothing}"
  sed 's/^/    err| /' "$TMPDIR/sig.err"
  [ -n "$left" ] && find $left -type d | sed 's/^/    left| /'
  [ -z "$alive" ] || fails="$fails; $what: the box outlived SIG$sig to its launcher"
  [ -z "$left" ] || fails="$fails; $what: SIG$sig to the launcher left $left"
  # leave a clean parent for the next check (what the next launcher would do)
  for d in $left; do
    [ -e "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill"
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
}
check TERM "chidori launch" "$CHIDORI" launch --quiet -- "$BP" sleep 60 sigterm-$$
check HUP "chidori launch" "$CHIDORI" launch --quiet -- "$BP" sleep 60 sighup-$$
check TERM "chidori run" "$CHIDORI" run --quiet "$TMPDIR/spin.js"
[ -z "$fails" ] || vm_fail "${fails#; }"
echo "  ok: SIGTERM/SIGHUP tear the run down and remove its cgroups"
exit 0
