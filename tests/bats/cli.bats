#!/usr/bin/env bats
# The command line: help, version, usage errors.
load helpers

@test "--version prints the version" {
  chid --version
  assert_status 0
  [[ $output =~ ^chidori\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "no command prints usage and exits 2" {
  chid
  assert_status 2
  assert_stderr_has "Usage: chidori COMMAND"
}

@test "unknown command exits 2 and says so" {
  chid frobnicate
  assert_status 2
  assert_stderr_has "unknown command 'frobnicate'"
}

@test "run --help lists every option and its environment variable" {
  chid run --help
  assert_status 0
  for o in --input --input-file --journal --answers --state-dir --js-deadline --deadline --no-isolate --json --quiet \
           CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_ISOLATE; do
    [[ $output == *"$o"* ]] || { echo "missing $o"; return 1; }
  done
}

@test "replay --help describes divergence" {
  chid replay --help
  assert_status 0
  [[ $output == *"replay diverged at call N"* ]]
}

@test "run without an agent is a usage error" {
  chid run
  assert_status 2
  assert_stderr_has "no agent file given"
}

@test "missing agent file: clear error, exit 2" {
  chid run "$T/nope.js"
  assert_status 2
  assert_stderr_has "agent file '$T/nope.js' not found"
}

@test "invalid --input JSON names line and column, exit 2" {
  echo 'function main(){return 1}' >"$T/a.js"
  chid run "$T/a.js" --input '{"a": nope}'
  assert_status 2
  assert_stderr_has "--input is not valid JSON (line 1, column 7)"
}

@test "--input and --input-file together are refused" {
  echo 'function main(){return 1}' >"$T/a.js"
  echo 1 >"$T/in.json"
  chid run "$T/a.js" --input 1 --input-file "$T/in.json"
  assert_status 2
  assert_stderr_has "not both"
}

@test "a malformed deadline variable is a usage error, not ignored" {
  echo 'function main(){return 1}' >"$T/a.js"
  CHIDORI_JS_DEADLINE_MS=abc chid run "$T/a.js"
  assert_status 2
  assert_stderr_has "CHIDORI_JS_DEADLINE_MS='abc' is not a number"
}

@test "CHIDORI_ISOLATE accepts only process or off" {
  echo 'function main(){return 1}' >"$T/a.js"
  CHIDORI_ISOLATE=maybe chid run "$T/a.js"
  assert_status 2
  assert_stderr_has "CHIDORI_ISOLATE='maybe' is not valid"
}

@test "unknown option is a usage error" {
  echo 'function main(){return 1}' >"$T/a.js"
  chid run --frob "$T/a.js"
  assert_status 2
}

@test "run --tz: a zone not in the tz database, a malformed name, a zone the engine lacks, a bad CHIDORI_TZ: exit 2, named" {
  echo 'function main(){return new Date(0).getHours()}' >"$T/a.js"
  chid run --tz Europe/Pariss "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: --tz 'Europe/Pariss' is not a zone of the tz database (no such zone in /usr/share/zoneinfo); use a name such as Europe/Paris"
  [[ -z $output ]]
  chid run --tz ../../etc/passwd "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: --tz '../../etc/passwd' is not a time-zone name (expected a zone of the tz database such as Europe/Paris or Asia/Tokyo, or UTC)"
  chid run --tz "$(printf 'Asia/Tokyo\033[2J')" "$T/a.js" # no terminal escape reaches the message
  assert_status 2
  assert_stderr_has "--tz 'Asia/Tokyo\\x1b[2J' is not a time-zone name"
  chid run --tz "" "$T/a.js"
  assert_status 2
  # A file of the tz directory that is not a zone ICU (the engine's copy of
  # the database) knows: it would silently become UTC in the box.
  if [[ -f /usr/share/zoneinfo/posixrules ]]; then
    chid run --tz posixrules "$T/a.js"
    assert_status 2
    assert_stderr_has "chidori: --tz 'posixrules' is not a zone the engine knows (ICU "
  fi
  CHIDORI_TZ=Nowhere/Land chid run "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_TZ='Nowhere/Land' is not a zone of the tz database"
  # The same values, well formed, run.
  chid run --quiet --tz Europe/Paris "$T/a.js"
  assert_status 0
  assert_stdout 1
  CHIDORI_TZ=Asia/Tokyo chid run --quiet "$T/a.js"
  assert_stdout 9
  chid run --help
  [[ $output == *"--tz ZONE"* && $output == *"[CHIDORI_TZ]"* ]] || { echo "$output"; false; }
}
