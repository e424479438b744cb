#!/usr/bin/env bats
# Policy selection as the banner reports it (the gated effects arrive with
# http and workspace; docs/policy.md).
load helpers

hello() { echo "$BATS_TEST_DIRNAME/../../examples/hello.js"; }

@test "run defaults to the permissive policy and says so" {
  chid run "$(hello)"
  assert_status 0
  assert_stderr_has "Policy: permissive (chidori run default)"
}

@test "--untrusted selects the deny-by-default profile and turns the JIT off" {
  chid run --untrusted "$(hello)"
  assert_status 0
  assert_stderr_has "Policy: untrusted (--untrusted)"
  assert_stderr_has "jit off, no executable memory"
  chid run --untrusted --jit "$(hello)"
  assert_stderr_has "jit on"
}

@test "--untrusted beats every CHIDORI_POLICY* variable" {
  echo '{"rules": [], "default": "always_allow"}' >"$T/allow.json"
  CHIDORI_POLICY_FILE="$T/allow.json" CHIDORI_POLICY='{"rules":[]}' CHIDORI_POLICY_PROFILE=permissive \
    chid run --untrusted "$(hello)"
  assert_status 0
  assert_stderr_has "Policy: untrusted (--untrusted"
}

@test "selection order: file, then inline JSON, then profile" {
  echo '{"rules": [{"target": "http", "decision": "never_allow"}], "default": "always_allow"}' >"$T/p.json"
  CHIDORI_POLICY_FILE="$T/p.json" CHIDORI_POLICY='{"rules":[]}' CHIDORI_POLICY_PROFILE=untrusted chid run "$(hello)"
  assert_stderr_has "CHIDORI_POLICY_FILE"
  CHIDORI_POLICY='{"rules":[]}' CHIDORI_POLICY_PROFILE=untrusted chid run "$(hello)"
  assert_stderr_has "Policy: custom"
  assert_stderr_has "CHIDORI_POLICY"
  CHIDORI_POLICY_PROFILE=supervised chid run "$(hello)"
  assert_stderr_has "Policy: supervised (CHIDORI_POLICY_PROFILE=supervised)"
}

@test "a malformed policy fails closed to untrusted with line and column" {
  CHIDORI_POLICY='{"rules": [}' chid run "$(hello)"
  assert_status 0
  assert_stderr_has "warning: CHIDORI_POLICY is not valid JSON at line 1, column 12"
  assert_stderr_has "Policy: untrusted (fail-closed"
  CHIDORI_POLICY_PROFILE=wideopen chid run --quiet "$(hello)"
  assert_stderr_has "warning:"
  assert_stderr_has "wideopen"
  CHIDORI_POLICY_FILE="$T/missing.json" chid run "$(hello)"
  assert_stderr_has "Policy: untrusted (fail-closed"
}

@test "--trusted with --untrusted is a usage error" {
  chid run --trusted --untrusted "$(hello)"
  assert_status 2
}

@test "untrusted code without isolation prints a nudge" {
  chid run --untrusted --no-isolate "$(hello)"
  assert_status 0
  assert_stderr_has "untrusted code is running without process isolation"
  chid run --no-isolate "$(hello)"
  [[ $stderr != *"without process isolation"* ]]
}
