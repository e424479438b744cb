#!/usr/bin/env bats
# `chidori run`: agent shapes, input, output, errors a user meets first.
load helpers

@test "examples/hello.js prints its greeting and the banner" {
  chid run "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 0
  assert_stdout '{"greeting":"Hello, world!"}'
  assert_stderr_has "Isolation: process"
  assert_stderr_has "Policy: permissive (chidori run default)"
  assert_stderr_has "[agent] hello from inside the box"
}

@test "--quiet hides the banner" {
  chid run --quiet "$BATS_TEST_DIRNAME/../../examples/hello.js"
  assert_status 0
  [[ $stderr != *Isolation:* ]]
  [[ $stderr != *Policy:* ]]
}

@test "ES module with export default (bundled by esbuild)" {
  chid run --quiet "$BATS_TEST_DIRNAME/../../examples/hello.mjs" --input '{"name":"esm"}'
  assert_status 0
  assert_stdout '{"greeting":"Hello, esm!"}'
}

@test "a .js file with import/export is bundled too, with its local imports" {
  agent util.js <<'JS'
export const twice = (x) => x * 2;
JS
  agent main.js <<'JS'
import { twice } from "./util.js";
export default async (input) => twice(input);
JS
  chid run --quiet "$T/main.js" --input 21
  assert_status 0
  assert_stdout '42'
}

@test "bundling refuses imports from outside the agent's directory" {
  mkdir -p "$T/agent" && echo '{"secret":"s3cr3t"}' >"$T/secret.json"
  agent agent/a.mjs <<'JS'
import s from "../secret.json";
export default () => s;
JS
  chid run --quiet "$T/agent/a.mjs"
  [[ $status -ne 0 ]]
  [[ $output != *s3cr3t* ]]
  assert_stderr_has "outside its directory"
}

@test "TypeScript agent" {
  chid run --quiet "$BATS_TEST_DIRNAME/../../examples/counter.ts" --input '{"step":5}'
  assert_status 0
  assert_stdout '{"runs":5}'
}

@test "CommonJS module.exports function" {
  agent a.js <<'JS'
module.exports = async (input) => ({ got: input });
JS
  chid run --quiet "$T/a.js" --input '[1,"two",{"three":3}]'
  assert_status 0
  assert_stdout '{"got":[1,"two",{"three":3}]}'
}

@test "plain script defining main" {
  agent a.js <<'JS'
function helper(x) { return x + 1; }
function main(input) { return helper(input); }
JS
  chid run --quiet "$T/a.js" --input 1
  assert_status 0
  assert_stdout '2'
}

@test "--input-file supplies the input" {
  agent a.js <<'JS'
async function main(input) { return input.n * 3; }
JS
  echo '{"n": 14}' >"$T/in.json"
  chid run --quiet "$T/a.js" --input-file "$T/in.json"
  assert_status 0
  assert_stdout '42'
}

@test "no input means null" {
  agent a.js <<'JS'
function main(input) { return input === null ? "null input" : "other"; }
JS
  chid run --quiet "$T/a.js"
  assert_stdout '"null input"'
}

@test "undefined result prints null" {
  agent a.js <<'JS'
async function main() {}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout 'null'
}

@test "--json prints ok, value and run stats" {
  agent a.js <<'JS'
async function main() { await chidori.log("x"); return 7; }
JS
  chid run --quiet --json "$T/a.js"
  assert_status 0
  [[ $output =~ ^\{\"ok\":true,\"value\":7,\"exit\":0,\"stats\":\{\"run_id\":\"run-[0-9a-f]{16}\",\"wall_ms\":[0-9.]+,\"effects\":1(,\"peak_memory_bytes\":[0-9]+,\"memory_limit_bytes\":536870912)?\}\}$ ]]
}

@test "a thrown error exits 1 with name and message" {
  agent a.js <<'JS'
async function main() { throw new TypeError("boom"); }
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stdout ''
  assert_stderr_has "chidori: agent error: TypeError: boom"
}

@test "--json on failure reports the error too" {
  agent a.js <<'JS'
function main() { throw new Error("bad"); }
JS
  chid run --quiet --json "$T/a.js"
  assert_status 1
  [[ $output == '{"ok":false,"error":{"name":"Error","message":"bad"'* ]]
}

@test "a syntax error names file, line and column" {
  agent broken.js <<'JS'
function main() {
  let x = 1;
  return x +* 2;
}
JS
  chid run --quiet "$T/broken.js"
  assert_status 1
  assert_stderr_has "agent error: SyntaxError:"
  assert_stderr_has "broken.js:3:"
}

@test "a syntax error in an ES module names file, line and column" {
  agent broken.mjs <<'JS'
export default function main() {
  return 1 +;
}
JS
  chid run --quiet "$T/broken.mjs"
  assert_status 1
  assert_stderr_has "agent error: SyntaxError:"
  assert_stderr_has "broken.mjs:2:"
}

@test "an agent whose promise never settles is reported, not hung" {
  agent a.js <<'JS'
function main() { return new Promise(() => {}); }
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has "agent never settled"
}

@test "a script without an entry point says which shapes work" {
  agent a.js <<'JS'
const x = 1;
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has "agent error:"
  assert_stderr_has "main"
}

@test "an unhandled rejection from a timer ends the run as an agent error" {
  agent a.js <<'JS'
async function main() {
  return new Promise((res) => setTimeout(() => { throw new RangeError("late"); }, 10));
}
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has "RangeError: late"
}

@test "esbuild missing: a clear error naming the fix" {
  chid run --quiet "$BATS_TEST_DIRNAME/../../examples/hello.mjs"
  assert_status 0
  CHIDORI_ESBUILD=/nonexistent PATH=/usr/bin:/bin chid run --quiet "$BATS_TEST_DIRNAME/../../examples/hello.mjs"
  assert_status 2
  assert_stderr_has "esbuild was not found"
  assert_stderr_has "make deps"
}

@test "a build inside a private (0700) directory, e.g. under /root, runs in the box" {
  [[ $(id -u) -eq 0 ]] || skip "needs root: the box's uid is nobody only when chidori runs as root"
  mkdir -p "$T/private/bin" && chmod 700 "$T/private" "$T"
  cp "$BUILD_DIR/chidori" "$BUILD_DIR/chidori-worker" "$BUILD_DIR/chidori-broker" "$BUILD_DIR/chidori-monitor" \
    "$BUILD_DIR/chidori-privhelper" \
    "$BUILD_DIR/libchidori-engine.so" \
    "$T/private/bin/"
  echo 'function main(){ return "ok from a private build" }' >"$T/private/a.js"
  set +e; "$T/private/bin/chidori" run --quiet "$T/private/a.js" >"$T/out" 2>"$T/err"; st=$?; set -e
  [[ $st -eq 0 ]] || { cat "$T/err"; return 1; }
  [[ $(cat "$T/out") == '"ok from a private build"' ]]
  mkdir "$T/private/data" && echo secret-but-shared >"$T/private/data/f"
  run "$T/private/bin/chidori" launch --quiet --ro-bind "$T/private/data" -- /bin/cat "$T/private/data/f"
  [[ $status -eq 0 && $output == secret-but-shared ]]
}
