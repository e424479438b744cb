#!/bin/sh
# Teardown on cgroup v2: 50 launches (two launchers side by side; OOM-, deadline- and
# pids-ended runs among them) leave no chidori-* directory under the delegated parent;
# a deadline kill leaves no process of the run alive; the directory of a SIGKILLed
# launcher (and anything left in it) is removed by the next launcher.
# vm-timeout: 300
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori cg_hog cg_sleepers cg_forkbomb
command -v vm-boxprobe >/dev/null || vm_fail "no vm-boxprobe in the image"
BP="$(command -v vm-boxprobe)"
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
P="$CHIDORI_CGROUP_PARENT"

# ---- 50 runs, two streams at once ----------------------------------------------------
# stream A: 20 x /bin/true, 5 x cg_hog 100 under 32M (OOM, 137)
# stream B: 20 x /bin/true, 3 x cg_sleepers under --deadline 300 (124), 2 x fork bomb
# under --pids 8 (3). Each line of the stream's log: "<what> <exit>".
stream_a() {
  i=0; while [ $i -lt 25 ]; do
    if [ $((i % 5)) = 4 ]; then
      "$CHIDORI" launch --quiet --memory 32M -- "$PROBES/cg_hog" 100 >/dev/null 2>&1; echo "hog $?"
    else
      "$CHIDORI" launch --quiet -- /bin/true >/dev/null 2>&1; echo "true $?"
    fi
    i=$((i + 1))
  done
}
stream_b() {
  i=0; while [ $i -lt 25 ]; do
    case $i in
      3|11|19) "$CHIDORI" launch --quiet --deadline 300 -- "$PROBES/cg_sleepers" "cleanup-$$-$i" >/dev/null 2>&1; echo "sleepers $?" ;;
      7|15) "$CHIDORI" launch --quiet --pids 8 -- "$PROBES/cg_forkbomb" >/dev/null 2>&1; echo "forkbomb $?" ;;
      *) "$CHIDORI" launch --quiet -- /bin/true >/dev/null 2>&1; echo "true $?" ;;
    esac
    i=$((i + 1))
  done
}
t0="$(vm_uptime)"
stream_a > "$TMPDIR/a.log" 2>&1 &
apid=$!
stream_b > "$TMPDIR/b.log" 2>&1
wait $apid
echo "  50 launches in $(vm_since "$t0")s"
cat "$TMPDIR/a.log" "$TMPDIR/b.log" | sort | uniq -c | sed 's/^/    /'
n="$(cat "$TMPDIR/a.log" "$TMPDIR/b.log" | wc -l)"
[ "$n" = 50 ] || vm_fail "$n runs logged, expected 50"
bad="$(cat "$TMPDIR/a.log" "$TMPDIR/b.log" | awk '
  ($1 == "true" && $2 != 0) || ($1 == "hog" && $2 != 137) ||
  ($1 == "sleepers" && $2 != 124) || ($1 == "forkbomb" && $2 != 3)' | sort | uniq -c)"
[ -z "$bad" ] || vm_fail "unexpected exit statuses (want true 0, hog 137, sleepers 124, forkbomb 3): $bad"
left="$(vm_chidori_dirs "$P")"
[ -z "$left" ] || vm_fail "cgroup directories left after 50 runs: $left"
sub="$(find "$P" -mindepth 1 -type d)"
[ -z "$sub" ] || vm_fail "directories left under $P: $sub"
left="$(vm_pids_with "cleanup-$$-")"
[ -z "$left" ] || vm_fail "processes of deadline-killed runs alive: $left"
echo "  ok: 50 runs (OOM, deadline and pids endings included) leave nothing under $P"

# ---- a deadline kill leaves no process with the marker ---------------------------------
marker="chidori-deadline-$$-$(vm_uptime | tr -d .)"
vm_run deadline 30 "$CHIDORI" launch --quiet --deadline 400 -- "$PROBES/cg_sleepers" "$marker"
vm_expect_rc 124 "cg_sleepers under --deadline 400"
sleep 0.2
left="$(vm_pids_with "$marker")"
[ -z "$left" ] || vm_fail "processes with the marker alive after the deadline: $left ($(for p in $left; do tr '\0' ' ' < /proc/$p/cmdline; echo; done))"
left="$(vm_chidori_dirs "$P")"
[ -z "$left" ] || vm_fail "cgroup directories left after the deadline kill: $left"
echo "  ok: the deadline kill left no process with $marker"

# ---- a SIGKILLed launcher: the next launcher cleans up ---------------------------------
marker="chidori-orphan-$$"
"$CHIDORI" launch --quiet -- "$BP" sleep 60 "$marker" > "$TMPDIR/orphan.out" 2>&1 &
lpid=$!
i=0; while [ $i -lt 100 ] && [ -z "$(vm_pids_with "$marker" | grep -v "^$lpid\$")" ]; do sleep 0.1; i=$((i + 1)); done
box="$(vm_children $lpid)"
[ -n "$box" ] || vm_fail "no box process under launcher $lpid"
dir="$(vm_chidori_dirs "$P")"
echo "  launcher $lpid, box $box, cgroup $dir"
[ -n "$dir" ] || vm_fail "no chidori-* directory for the running launcher"
kill -KILL $lpid; wait $lpid 2>/dev/null
sleep 0.3
alive="$(vm_pids_with "$marker")"
echo "  after SIGKILL of the launcher: box processes alive: ${alive:-none}; dirs: $(vm_chidori_dirs "$P" | tr '\n' ' ')"
vm_run next 30 "$CHIDORI" launch --quiet -- /bin/true
vm_expect_rc 0 "the next launch"
left="$(vm_chidori_dirs "$P")"
[ -z "$left" ] || vm_fail "the next launcher left the dead launcher's directory: $left"
sleep 0.2
left="$(vm_pids_with "$marker")"
[ -z "$left" ] || vm_fail "the box of the SIGKILLed launcher is still alive after the next launch: $left"
echo "  ok: the next launcher removed the dead launcher's directory; its box is gone"
exit 0
