#!/usr/bin/env bats
# The docs runner (tests/docs/run-docs.py) itself: it must fail a doc that
# drifted from the binary, and every way a block can be left unchecked.
# scripts/run-tests.sh runs it over README.md and docs/*.md.

load helpers

RUNNER=$BATS_TEST_DIRNAME/../docs/run-docs.py

# doc NAME <<'MD' ... MD   writes $T/NAME.md; rundoc NAME [ARGS] runs the runner on it
doc() { cat >"$T/$1.md"; }
rundoc() {
  local name=$1; shift
  set +e
  output=$("$RUNNER" --build "$BUILD_DIR" "$@" "$T/$name.md" 2>&1)
  status=$?
  set -e
}

@test "docs runner: a session whose output matches passes; one the binary contradicts fails with a diff" {
  doc good <<'MD'
<!-- doc: file a.mjs -->
```js
export default async (input) => input.n + 1;
```

```sh
$ chidori run --quiet a.mjs --input '{"n": 1}'
2
$ chidori run --quiet a.mjs --input '{"n": 41}' --json
{"ok":true,"value":42,...}
$ chidori run --quiet nope.mjs   # exit 2
chidori: agent file '...nope.mjs' not found...
```
MD
  rundoc good
  [[ $status == 0 && $output == *"# docs: 2 passed, 0 failed, 0 not run"* ]] || { echo "$output"; return 1; }
  sed 's/^2$/3/' "$T/good.md" >"$T/bad.md"
  rundoc bad
  [[ $status == 1 && $output == *"not ok 2 - "*"bad.md:6 session"* ]] || { echo "$output"; return 1; }
  [[ $output == *"-3"*"+2"* ]] || { echo "$output"; return 1; }
  [[ $output == *"# docs: 1 passed, 1 failed, 0 not run"* ]] || { echo "$output"; return 1; }
}

@test "docs runner: a command's exit status must be 0 or the one its '# exit N' names" {
  doc exits <<'MD'
```sh
$ chidori run --quiet missing.js
chidori: agent file '...' not found...
```

```sh
$ chidori --version   # exit 2
chidori ...
```
MD
  rundoc exits
  [[ $status == 1 && $output == *"exit 2, expected 0"* && $output == *"exit 0, expected 2"* ]] || { echo "$output"; return 1; }
  [[ $output == *"# docs: 0 passed, 2 failed, 0 not run"* ]] || { echo "$output"; return 1; }
}

@test "docs runner: a block with no way to run fails; norun needs a reason and is listed with it" {
  doc untagged <<'MD'
```sh
make something
```

<!-- norun: needs a network -->
```json
{"a": 1}
```

<!-- norun: -->
```
text
```
MD
  rundoc untagged
  [[ $status == 1 && $output == *"untagged.md:1 \`\`\`sh block"*"no way to run it"* ]] || { echo "$output"; return 1; }
  [[ $output == *"a norun tag needs a reason"* ]] || { echo "$output"; return 1; }
  [[ $output == *"# norun "*"untagged.md:6 (json): needs a network"* ]] || { echo "$output"; return 1; }
  [[ $output == *"# docs: 0 passed, 2 failed, 1 not run"* ]] || { echo "$output"; return 1; }
  doc dangling <<'MD'
<!-- doc: file a.js -->
Some text, then no block.
MD
  rundoc dangling
  [[ $status == 1 && $output == *"must come right before its code block"* ]] || { echo "$output"; return 1; }
}

@test "docs runner: doc: output, policy and tools blocks are checked by the binary" {
  doc checked <<'MD'
<!-- doc: setup
echo 'module.exports = async () => 1;' >x.js
-->
<!-- doc: output
$ chidori run --trusted --untrusted x.js   # exit 2
-->
```
chidori: --trusted and --untrusted contradict each other; ...
```

<!-- doc: policy -->
```json
{"rules": [{"target": "http", "decision": "never_allow"}], "default": "always_allow"}
```

<!-- doc: policy -->
```json
{"rules": [{"target": "http", "decision": "allow"}]}
```

<!-- doc: tools -->
```json
{"count": {"command": ["wc", "-c"]}}
```

<!-- doc: tools -->
```json
{"count": {"command": ["wc", "-c"], "timeout": 5}}
```
MD
  rundoc checked
  [[ $output == *"ok 2 - "*"checked.md:7 output"* && $output == *"ok 3 - "*"checked.md:12 policy"* ]] || { echo "$output"; return 1; }
  [[ $output == *"not ok 4 - "*"checked.md:17 policy"*'"allow" is not a decision'* ]] || { echo "$output"; return 1; }
  [[ $output == *"ok 5 - "*"checked.md:22 tools file"* ]] || { echo "$output"; return 1; }
  [[ $output == *"not ok 6 - "*"checked.md:27 tools file"*"count.timeout: unknown key"* ]] || { echo "$output"; return 1; }
  [[ $status == 1 && $output == *"# docs: 4 passed, 2 failed, 0 not run"* ]] || { echo "$output"; return 1; }
}

@test "docs runner: a command past --timeout is killed with what it started, and fails" {
  doc slow <<'MD'
```sh
$ sleep 60 & echo started; wait
started
```
MD
  start=$(date +%s)
  rundoc slow --timeout 2
  (( $(date +%s) - start < 20 ))
  [[ $status == 1 && $output == *"timed out after 2 s"* ]] || { echo "$output"; return 1; }
}
