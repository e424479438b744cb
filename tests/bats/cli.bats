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
