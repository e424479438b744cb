#!/usr/bin/env bats
# chidori-launch (issue 12): `chidori-launch [launch options] -- PROGRAM [ARGS]`
# is `chidori launch` (cli/main.c dispatches on argv[0]; build/chidori-launch
# is a link to chidori): the same options, exit codes and messages; its own --help.
load helpers

WRAPPER=$BUILD_DIR/chidori-launch

# both ARGS...: runs `chidori launch ARGS` and `chidori-launch ARGS`; sets
# l_status/l_out/l_err and w_status/w_out/w_err.
both() {
  l_status=0 w_status=0
  "$CHIDORI" launch "$@" >"$T/l.out" 2>"$T/l.err" </dev/null || l_status=$?
  "$WRAPPER" "$@" >"$T/w.out" 2>"$T/w.err" </dev/null || w_status=$?
  l_out=$(cat "$T/l.out"); l_err=$(cat "$T/l.err"); w_out=$(cat "$T/w.out"); w_err=$(cat "$T/w.err")
}

same() { # EXPECTED_STATUS: both ended so, with the same stdout and stderr
  if [[ $l_status -ne $1 || $w_status -ne $1 || $l_out != "$w_out" || $l_err != "$w_err" ]]; then
    echo "chidori launch: $l_status"; echo "  stdout: $l_out"; echo "  stderr: $l_err"
    echo "chidori-launch: $w_status"; echo "  stdout: $w_out"; echo "  stderr: $w_err"
    return 1
  fi
}

@test "chidori-launch: a program runs in the box, its exit status passed through, as with chidori launch" {
  [[ -x $WRAPPER ]]
  both --quiet -- /bin/sh -c 'echo "uid=$(id -u) host=$(hostname) pid=$$"; exit 7'
  same 7
  # The box: its own pid and uts namespaces (the host's name is another), a minimal root.
  [[ $w_out == "uid=0 host=chidori pid=1" && $(hostname) != chidori ]]
  both --quiet -- /bin/ls /
  same 0
  [[ $w_out != *home* && $w_out != *root* && $w_out == *usr* ]]
  [[ -d /home || -d /root ]]
  # The banner goes to stderr as for chidori launch.
  "$WRAPPER" -- /bin/true >"$T/o" 2>"$T/e"
  [[ $(cat "$T/e") == Isolation:* ]]
}

@test "chidori-launch: usage errors, a missing program and a deadline end as chidori launch's do" {
  both
  same 2
  [[ $w_err == *"launch needs a program"* ]]
  both --ro-bnid /usr -- /bin/true
  same 2
  [[ $w_err == *"unknown option '--ro-bnid'"* ]]
  both --memory lots -- /bin/true
  same 2
  both --quiet -- /nonexistent/program
  same 127
  [[ $w_err == *"program '/nonexistent/program' not found"* ]]
  both --quiet --deadline 300 -- /bin/sleep 30
  same 124
}

@test "chidori-launch --help: its own usage line, the options of chidori launch" {
  run "$WRAPPER" --help
  [[ $status -eq 0 ]]
  [[ ${lines[0]} == "Usage: chidori-launch [OPTIONS] -- PROGRAM [ARGS...]" ]]
  "$CHIDORI" launch --help >"$T/launch.help"
  [[ $(head -n 1 "$T/launch.help") == "Usage: chidori launch [OPTIONS] -- PROGRAM [ARGS...]" ]]
  # Every other line is the same text.
  diff <(tail -n +2 "$T/launch.help") <(tail -n +2 <<<"$output")
  [[ $output == *"--seccomp-errno"* && $output == *"--ro-bind SRC[:DST]"* ]]
  # Any name but chidori-launch is chidori itself.
  ln -s "$CHIDORI" "$T/chidori-other"
  run "$T/chidori-other" launch --help
  [[ $status -eq 0 && ${lines[0]} == "Usage: chidori launch [OPTIONS] -- PROGRAM [ARGS...]" ]]
}
