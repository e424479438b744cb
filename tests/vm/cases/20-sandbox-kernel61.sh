#!/bin/sh
# The sandbox on a second kernel (Debian 12's 6.1: Landlock ABI 2, no Landlock network
# rules): `chidori doctor` finds every layer; `chidori run --require-sandbox` runs an
# agent with the full box (banner: cgroup2, landlock abi 2, seccomp); under launch a
# blocked syscall ends the box with 159 and its name, a TCP or abstract-unix connect to
# a listener outside fails (net namespace), and writes outside the box fail (read-only
# root, then Landlock alone with the mount namespace off).
# vm-timeout: 120
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
command -v vm-boxprobe >/dev/null || vm_fail "no vm-boxprobe (tests/vm/probes/vm-boxprobe.c) in the image"
BP="$(command -v vm-boxprobe)"
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
cd "$REPO" || vm_fail "cd $REPO"

# ---- doctor ---------------------------------------------------------------------------
vm_run doctor 60 "$CHIDORI" doctor
vm_expect_rc 0 "chidori doctor"
vm_out_has "kernel $(uname -r)" || vm_fail "doctor does not name the kernel $(uname -r)"
for l in "user namespace" "pid namespace" "mount namespace" "net namespace" "ipc namespace" \
         "uts namespace" "cgroup namespace" "seccomp" "capabilities"; do
  echo "$OUT" | grep -Eq "^  $l +ok " || vm_fail "doctor: '$l' is not ok"
done
echo "$OUT" | grep -Eq '^  landlock +ok +available, ABI 2 ' || vm_fail "doctor: landlock is not 'ok available, ABI 2'"
echo "$OUT" | grep -Eq '^  cgroup \(memory ceiling\) +ok +cgroup v2; memory usable, pids usable, cpu usable; delegation yes' \
  || vm_fail "doctor: cgroup line is not 'ok cgroup v2; memory usable, pids usable, cpu usable; delegation yes'"
vm_out_has "runs under $CHIDORI_CGROUP_PARENT" || vm_fail "doctor: cgroup runs not under $CHIDORI_CGROUP_PARENT"
vm_out_has "All core layers are available." || vm_fail "doctor: not all core layers available"
echo "  ok: doctor: every layer ok, Landlock ABI 2, cgroup v2 delegated"

# ---- an agent in the full box -------------------------------------------------------
# The box's layers on this kernel: as root the broker's memory store folder is on the
# image's tmpfs, which Linux 6.1 cannot id-map, so --require-sandbox would refuse the
# broker's uid-0 fallback (42-broker and 43-broker-run test that path): the box is
# tested here with the one-process parent.
CHIDORI_RUN_BROKER=0; export CHIDORI_RUN_BROKER
vm_run hello 60 "$CHIDORI" run --require-sandbox examples/hello.js
vm_expect_rc 0 "chidori run --require-sandbox examples/hello.js"
vm_out_has '"greeting":"Hello, world!"' || vm_fail "no greeting"
for w in "user,pid,mnt,net,ipc,uts,cgroup ns" "cgroup2 memory.max=512M pids.max=64" "landlock abi 2" "seccomp allowlist"; do
  vm_err_has "$w" || vm_fail "the banner lacks '$w'"
done
echo "  ok: hello.js with the full sandbox"

vm_run true 30 "$CHIDORI" launch --require-sandbox -- /bin/true
vm_expect_rc 0 "launch --require-sandbox -- /bin/true"
vm_err_has "landlock abi 2" || vm_fail "launch banner lacks 'landlock abi 2'"

# ---- blocked syscalls -----------------------------------------------------------------
for sc in unshare mount; do
  vm_run "sc-$sc" 30 "$CHIDORI" launch --quiet -- "$BP" "$sc"
  vm_expect_rc 159 "vm-boxprobe $sc under launch"
  vm_err_has "chidori: sandbox violation: blocked syscall $sc" || vm_fail "stderr does not name the blocked syscall $sc"
  ! vm_out_has "$sc:" || vm_fail "the probe returned from $sc: $OUT"
done
echo "  ok: unshare and mount end the box with 159, named"

# ---- network: a listener outside is unreachable --------------------------------------
port=47011
"$BP" listen 127.0.0.1 $port 60 > "$TMPDIR/listen.out" 2>&1 &
lpid=$!
"$BP" ulisten "chidori-vm-$$" 60 > "$TMPDIR/ulisten.out" 2>&1 &
upid=$!
i=0; while [ $i -lt 50 ] && ! { grep -q listening "$TMPDIR/listen.out" && grep -q listening "$TMPDIR/ulisten.out"; }; do sleep 0.1; i=$((i + 1)); done
grep -q listening "$TMPDIR/listen.out" || vm_fail "the TCP listener did not start: $(cat "$TMPDIR/listen.out")"
grep -q listening "$TMPDIR/ulisten.out" || vm_fail "the unix listener did not start: $(cat "$TMPDIR/ulisten.out")"
vm_run tcp-out 10 "$BP" connect 127.0.0.1 $port
vm_expect_rc 0 "TCP connect outside the box (control)"
vm_run tcp-box 30 "$CHIDORI" launch --quiet -- "$BP" connect 127.0.0.1 $port
vm_expect_rc 1 "TCP connect to 127.0.0.1:$port from the box"
echo "$OUT" | grep -q '^connect: ' || vm_fail "no outcome from the probe"
vm_run unix-box 30 "$CHIDORI" launch --quiet -- "$BP" uconnect "chidori-vm-$$"
vm_expect_rc 1 "abstract unix connect from the box"
# with the net namespace off the same connect goes through (Landlock ABI 2 has no TCP rules)
vm_run tcp-nonet 30 "$CHIDORI" launch --quiet --unsafe-disable=net -- "$BP" connect 127.0.0.1 $port
vm_expect_rc 0 "TCP connect from the box with --unsafe-disable=net (control)"
sleep 0.3
kill "$lpid" "$upid" 2>/dev/null
n="$(grep -c '^accepted' "$TMPDIR/listen.out")"
[ "$n" = 2 ] || vm_fail "the TCP listener accepted $n connections, expected 2 (the two controls): $(cat "$TMPDIR/listen.out")"
n="$(grep -c '^accepted' "$TMPDIR/ulisten.out")"
[ "$n" = 0 ] || vm_fail "the unix listener accepted $n connections from the box"
echo "  ok: TCP and abstract unix listeners outside are unreachable from the box (reachable with net off)"

# ---- writes outside the box fail ------------------------------------------------------
# The box's user is the caller, or nobody (65534) when the caller is root: give it a
# folder it could write to without the sandbox, so that only the sandbox stops it.
wd="$TMPDIR/w"
mkdir "$wd" || vm_fail "mkdir $wd"
if [ "$(id -u)" = 0 ]; then chmod 0711 "$TMPDIR"; chown 65534:65534 "$wd"; fi
for f in /x /usr/x; do
  vm_run w-root 30 "$CHIDORI" launch --quiet -- "$BP" write $f
  vm_expect_rc 1 "write $f in the box"
  vm_out_has "Read-only file system" || vm_fail "write $f: not EROFS"
done
vm_run w-ro 30 "$CHIDORI" launch --quiet --ro-bind "$wd" -- "$BP" write "$wd/x"
vm_expect_rc 1 "write into a --ro-bind folder"
vm_out_has "Read-only file system" || vm_fail "write into a --ro-bind folder: not EROFS"
[ ! -e "$wd/x" ] || vm_fail "$wd/x was created through --ro-bind"
vm_run w-rw 30 "$CHIDORI" launch --quiet --bind "$wd" -- "$BP" write "$wd/x"
vm_expect_rc 0 "write into a --bind folder (control)"
[ "$(cat "$wd/x")" = "written from the box" ] || vm_fail "$wd/x does not hold what the box wrote"
echo "  ok: the root and --ro-bind are read-only, --bind is writable"
# Landlock alone: no mount namespace, so the box sees the host's file system
vm_run w-ll 30 "$CHIDORI" launch --unsafe-disable=mnt -- "$BP" write "$wd/y"
vm_expect_rc 1 "write into the host's $wd with only Landlock in the way"
vm_out_has "Permission denied" || vm_fail "write with the mount namespace off: not EACCES (Landlock)"
vm_err_has "landlock abi 2" || vm_fail "banner lacks 'landlock abi 2'"
[ ! -e "$wd/y" ] || vm_fail "$wd/y was created with only Landlock in the way"
vm_run w-noll 30 "$CHIDORI" launch --quiet --unsafe-disable=mnt,landlock -- "$BP" write "$wd/y"
vm_expect_rc 0 "the same write with Landlock off too (control)"
[ -e "$wd/y" ] || vm_fail "$wd/y missing after the control write"
echo "  ok: Landlock ABI 2 alone denies the write (the control without it succeeds)"
exit 0
