#!/usr/bin/env bats
# chidori launch for ordinary programs (issue 15, item 5): --seccomp-errno,
# and the ownership of files in a --bind folder when chidori runs as root.
load helpers

PROBE=$BUILD_DIR/probes/probe

eval "helpers_$(declare -f setup)"
setup() {
  helpers_setup
  chmod 755 "$T"
}

show() { echo "status: $status"; echo "stdout: $output"; echo "stderr: $stderr"; }

legacy_tiocsti() { [[ $(cat /proc/sys/dev/tty/legacy_tiocsti 2>/dev/null || echo 1) == 1 ]]; }

# ---------------------------------------------------------------- --seccomp-errno

@test "--seccomp-errno: a syscall outside the allowlist returns EPERM and the program goes on; default kills and names it" {
  chid launch --quiet --seccomp-errno -- "$PROBE" errno-continue
  assert_status 0
  assert_stdout "OK chown: EPERM, fchown: EPERM; the program went on"
  # The default: kill-and-name, exit 159, nothing printed by the program.
  chid launch --quiet -- "$PROBE" errno-continue
  assert_status 159
  assert_stderr_has "chidori: sandbox violation: blocked syscall chown"
  [[ -z $output ]]
  # The EPERM is the filter's: without seccomp the kernel sees the bad arguments.
  chid launch --quiet --seccomp-errno --unsafe-disable=seccomp -- "$PROBE" errno-continue
  assert_status 0
  assert_stdout "OK chown: EFAULT, fchown: EBADF; the program went on"
  # An ordinary tool that meets EPERM reports it and carries on.
  echo hi >"$T/f"
  chid launch --quiet --seccomp-errno --bind "$T" -- /bin/chown 0:0 "$T/f"
  assert_status 1
  assert_stderr_has "Operation not permitted"
  chid launch --seccomp-errno -- /bin/true
  assert_status 0
  assert_stderr_has "seccomp allowlist; other syscalls fail with EPERM)"
  chid launch --help
  [[ $output == *"--seccomp-errno"* ]]
}

@test "--seccomp-errno: the fixed prefix still ends the box and is named (exit 159)" {
  for s in ptrace bpf mount keyctl unshare userfaultfd io_uring_setup perf_event_open open_by_handle_at; do
    chid launch --quiet --seccomp-errno -- "$PROBE" "$s"
    [[ $status -eq 159 && $stderr == *"chidori: sandbox violation: blocked syscall $s"* ]] || { echo "$s"; show; false; }
  done
  chid launch --quiet --seccomp-errno -- "$PROBE" clone-newuser
  [[ $status -eq 159 && $stderr == *"blocked syscall clone"* ]] || { show; false; }
  # The same probes reach the kernel without the filter (they are harmless).
  chid launch --quiet --seccomp-errno --unsafe-disable=seccomp -- "$PROBE" bpf
  [[ $status -eq 0 && $output == "OK bpf reached the kernel"* ]] || { show; false; }
}

@test "--seccomp-errno: TIOCSTI, TIOCLINUX and TIOCSCTTY still end the box, high bits or not" {
  for m in tiocsti tiocsti-highbits tioclinux tioclinux-highbits; do
    set +e
    "$PROBE" pty-run "$CHIDORI" launch --quiet --seccomp-errno -- "$PROBE" "$m" 0 >"$T/out" 2>&1 </dev/null
    status=$?
    set -e
    output=$(tr -d '\r' <"$T/out")
    [[ $status -eq 159 && $output == *"blocked syscall ioctl"* ]] || { echo "$m"; show; false; }
  done
  for m in tiocsti-steal tiocsti-steal-highbits; do
    set +e
    "$PROBE" pty-run-noctty "$CHIDORI" launch --quiet --seccomp-errno -- "$PROBE" "$m" 0 >"$T/out" 2>&1 </dev/null
    status=$?
    set -e
    output=$(tr -d '\r' <"$T/out")
    [[ $status -eq 159 && $output == *"blocked syscall ioctl"* && $output != *"worked"* ]] || { echo "$m"; show; false; }
  done
}

# ---------------------------------------------------------------- --bind ownership as root

need_root() { [[ $(id -u) -eq 0 ]] || skip "needs root: $1"; }

@test "--bind as root: what the box writes is root's on disk, root's 0600 files are readable through it; rootless unchanged" {
  need_root "the box maps root to 65534 only when chidori runs as root"
  mkdir "$T/d"
  echo "root's secret" >"$T/d/secret"
  chmod 600 "$T/d/secret"
  chid launch --quiet --bind "$T/d" -- /bin/sh -c "cat $T/d/secret; echo made >$T/d/new; mkdir $T/d/sub && echo x >$T/d/sub/f; stat -c '%u %a %n' $T/d/secret"
  assert_status 0
  assert_stdout "root's secret"$'\n'"0 600 $T/d/secret"
  [[ $(stat -c %u:%g "$T/d/new") == 0:0 && $(stat -c %u:%g "$T/d/sub") == 0:0 && $(stat -c %u:%g "$T/d/sub/f") == 0:0 ]] \
    || { ls -lnR "$T/d"; false; }
  # The bind is still noexec.
  cp /bin/true "$T/d/prog"
  chid launch --quiet --bind "$T/d" -- /bin/sh -c "$T/d/prog"
  assert_status 126
  assert_stderr_has "Permission denied"
  # --ro-bind keeps the box's own view: root's 0600 file is not the box's to read.
  chid launch --quiet --ro-bind "$T/d" -- /bin/cat "$T/d/secret"
  assert_status 1
  assert_stderr_has "Permission denied"
  # Rootless is unchanged: the box's root is the caller, and so are its files.
  if command -v setpriv >/dev/null && setpriv --reuid=12345 --regid=12345 --clear-groups unshare --user true 2>/dev/null; then
    mkdir "$T/u"
    chown 12345:12345 "$T/u"
    set +e
    setpriv --reuid=12345 --regid=12345 --clear-groups env HOME=/nonexistent \
      "$CHIDORI" launch --bind "$T/u" -- /bin/sh -c "echo x >$T/u/f; id -u" >"$T/out" 2>"$T/err" </dev/null
    status=$?
    set -e
    [[ $status -eq 0 && $(cat "$T/out") == 0 ]] || { cat "$T/out" "$T/err"; false; }
    [[ $(stat -c %u "$T/u/f") == 12345 && $(cat "$T/err") != *id-mapped* ]]
  fi
}

@test "--bind as root on a filesystem without id-mapped mounts: today's bind and a banner note; refused under --require-sandbox" {
  need_root "mounts a ramfs in a private mount namespace"
  command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
  mkdir "$T/r"
  cat >"$T/in-ns.sh" <<SH
mount -t ramfs none "$T/r" && chmod 777 "$T/r" || exit 90
"$CHIDORI" launch --bind "$T/r" -- /bin/sh -c 'echo x >"$T/r/f"' 2>"$T/err1"
echo "rc1=\$?"
stat -c %u "$T/r/f"
"$CHIDORI" launch --quiet --require-sandbox --bind "$T/r" -- /bin/true 2>"$T/err2"
echo "rc2=\$?"
SH
  run unshare -m sh "$T/in-ns.sh"
  [[ $output == $'rc1=0\n65534\nrc2=78' ]] || { echo "$output"; cat "$T/err1" "$T/err2"; false; }
  grep -q "; --bind $T/r not id-mapped (mount_setattr: Invalid argument): files the box writes there are owned by 65534)" "$T/err1"
  grep -q "chidori: sandbox layer unavailable: id-mapped --bind of $T/r (mount_setattr: Invalid argument; its filesystem cannot be id-mapped" "$T/err2"
}

@test "a box setup failure names the lockdown step that failed" {
  mkdir "$T/src"
  chid launch --ro-bind "$T/src:/usr/lib/chidori-nowhere/x" -- /bin/true
  assert_status 70
  assert_stderr_has "chidori: box setup, step 'root filesystem': mkdir /usr/lib/chidori-nowhere: Read-only file system"
}

@test "launch --setenv: the box's environment is fixed, plus the variables named (one may replace a fixed one; an unset one is left out)" {
  FOO=bar chid launch --quiet --setenv FOO --setenv HOME --setenv UNSET_HERE_X -- /usr/bin/env
  assert_status 0
  [[ $output == *"FOO=bar"* && $output == *"HOME=$HOME"* && $output == *"PATH=/usr/local/bin:/usr/bin:/bin"* ]] || { echo "$output"; return 1; }
  [[ $output != *"HOME=/"$'\n'* && $output != *UNSET_HERE_X* ]] || { echo "$output"; return 1; }
  # Nothing else of the caller's environment reaches the box.
  SECRET_TOKEN=s3 chid launch --quiet -- /usr/bin/env
  [[ $output != *SECRET_TOKEN* ]] || { echo "$output"; return 1; }
  chid launch --quiet --setenv 1BAD -- /usr/bin/env
  assert_status 2
  assert_stderr_has "--setenv '1BAD': expected a variable name"
}
