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
