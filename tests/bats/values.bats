#!/usr/bin/env bats
# Values come back exactly (issue 15, item 2): a property test with node as
# the oracle.  tests/values/gen.js generates 2000 values from a fixed seed
# (CHIDORI_VALUES_SEED to choose another; the seed is printed) — numbers at
# the edges of double precision, strings with NUL, control characters,
# U+2028/U+2029, lone surrogates and astral characters, deep (200) and wide
# (10,000) arrays and objects — and each path carries all of them in one
# run: the result on stdout, memory.set/get, the journal and replay,
# --input, --input-file, --answers, a tool's input and output, callAgent;
# then the edge values one run each.  What chidori prints must be what
# node's JSON.stringify prints, byte for byte; agents that read values
# back check them inside (=== for primitives, deep-equal otherwise).
load helpers

setup_file() {
  VDIR=$(mktemp -d /tmp/chidori-values.XXXXXX)
  export VDIR
  SEED=${CHIDORI_VALUES_SEED:-15}
  node "$BATS_TEST_DIRNAME/../values/gen.js" "$VDIR" "$SEED" 2000 >"$VDIR/gen.log"
  echo "# $(cat "$VDIR/gen.log") (CHIDORI_VALUES_SEED=$SEED)" >&3
}

teardown_file() {
  rm -rf "$VDIR"
}

# run_to FILE ARGS...: chidori ARGS with stdout to FILE, stderr to $T/err.
run_to() {
  local out=$1; shift
  set +e
  "$CHIDORI" "$@" >"$out" 2>"$T/err" </dev/null
  status=$?
  set -e
  stderr=$(cat "$T/err")
}

# same_as_node FILE JSONFILE: FILE is the JSON text of JSONFILE and a newline.
same_as_node() {
  if ! cmp -s "$1" <(cat "$2"; echo); then
    echo "stdout differs from node's JSON.stringify ($2):"
    cmp "$1" <(cat "$2"; echo) || true
    head -c 300 "$1"; echo; echo "stderr: $(tail -c 600 "$T/err")"
    return 1
  fi
}

@test "values: the result on stdout is what node's JSON.stringify prints, byte for byte" {
  run_to "$T/out" run --quiet "$VDIR/stdout.js"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
}

@test "values: each edge value alone, on stdout and in --json (lone surrogates escaped, not a protocol error)" {
  n=$(cat "$VDIR/edges")
  for ((i = 0; i < n; i++)); do
    run_to "$T/out" run --quiet "$VDIR/edge-$i.js"
    assert_status 0
    same_as_node "$T/out" "$VDIR/edge-$i.json"
    run_to "$T/out" run --quiet --json "$VDIR/edge-$i.js"
    assert_status 0
    [[ $(cat "$T/out") == "{\"ok\":true,\"value\":$(cat "$VDIR/edge-$i.json"),\"exit\":0,"* ]] ||
      { echo "--json of edge $i: $(head -c 200 "$T/out")"; false; }
  done
  # The three from the issue, spelled out.
  echo 'module.exports = async () => [0.1 + 0.2, 41 / 11, 1e-7, -0, "a\u0000b", "\ud800", "\u2028"]' >"$T/a.js"
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '[0.30000000000000004,3.727272727272727,1e-7,0,"a\u0000b","\ud800","'$'\u2028''"]'
}

@test "values: memory.set then memory.get gives every value back (checked in the agent, answers queued behind sync calls)" {
  run_to "$T/out" run --quiet "$VDIR/memory.js"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
}

@test "values: the journal records them exactly and replay prints the same bytes" {
  run_to "$T/out" run --quiet --journal "$T/j1.jsonl" "$VDIR/stdout.js"
  assert_status 0
  run_to "$T/replay" replay --quiet "$T/j1.jsonl"
  assert_status 0
  same_as_node "$T/replay" "$VDIR/values.json"
  # memory's values come from the journal on replay
  run_to "$T/out" run --quiet --journal "$T/j2.jsonl" "$VDIR/memory.js"
  assert_status 0
  grep -q '"values":"exact"' "$T/j2.jsonl"
  run_to "$T/replay" replay --quiet "$T/j2.jsonl"
  assert_status 0
  same_as_node "$T/replay" "$VDIR/values.json"
}

@test "values: --input, --input-file and --input-file - hand the agent exactly that text" {
  run_to "$T/out" run --quiet "$VDIR/input.js" --input-file "$VDIR/values.json"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
  run_to "$T/out" run --quiet "$VDIR/input.js" --input "$(cat "$VDIR/input.json")"
  assert_status 0
  same_as_node "$T/out" "$VDIR/input.json"
  set +e
  "$CHIDORI" run --quiet --input-file - "$VDIR/input.js" <"$VDIR/values.json" >"$T/out" 2>"$T/err"
  status=$?
  set -e
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
  n=$(cat "$VDIR/edges")
  for ((i = 0; i < n; i++)); do
    run_to "$T/out" run --quiet "$VDIR/input.js" --input "$(cat "$VDIR/edge-$i.json")"
    assert_status 0
    same_as_node "$T/out" "$VDIR/edge-$i.json"
  done
  # written differently, the same value: the agent's JSON.stringify decides
  chid run --quiet "$VDIR/input.js" --input ' [ 1.0 , 1E2 , "\u0041\/" , "\uD83D\uDE00" ] '
  assert_status 0
  assert_stdout '[1,100,"A/","😀"]'
}

@test "values: --answers entries come back as chidori.input() answers exactly" {
  run_to "$T/out" run --quiet --answers "$VDIR/values.json" "$VDIR/answers.js"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
}

@test "values: a tool that echoes its args gives them back exactly" {
  run_to "$T/out" run --quiet --tools "$VDIR/tools.json" "$VDIR/tool.js"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
}

@test "values: callAgent of an identity agent gives them back exactly" {
  run_to "$T/out" run --quiet "$VDIR/nested.js"
  assert_status 0
  same_as_node "$T/out" "$VDIR/values.json"
}

@test "replay compares args as text and says where they differ" {
  agent rec.js <<'JS'
module.exports = async () => { await chidori.memory.set("k", { v: [1, 0.1 + 0.2] }); return 1; };
JS
  agent other.js <<'JS'
module.exports = async () => { await chidori.memory.set("k", { v: [1, 0.3] }); return 1; };
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/rec.js"
  assert_status 0
  chid replay --quiet --agent "$T/other.js" "$T/j.jsonl"
  assert_status 1
  assert_stderr_has 'replay diverged at call 1: expected memory.set {"key":"k","value":{"v":[1,0.30000000000000004]}}, got memory.set {"key":"k","value":{"v":[1,0.3]}} (args.value.v[1]: the journal has 0.30000000000000004, the agent sent 0.3)'
}

@test "a journal written before values were exact (cJSON-printed) still replays" {
  agent a.js <<'JS'
module.exports = async () => { await chidori.memory.set("k", [0.1 + 0.2, 1e-7]); return await chidori.memory.get("k"); };
JS
  sha=$(sha256sum "$T/a.js" | cut -d' ' -f1)
  # What chidori 0.1.0 wrote: no "values" in the header, numbers reprinted
  # by cJSON (%.15g, "1e-07").
  cat >"$T/old.jsonl" <<EOF
{"type":"header","chidori":"0.1.0","protocol":1,"run_id":"run-c33cc00234b01a08","agent":"$T/a.js","agent_sha256":"$sha","filename":"a.js","memory_ns":"$T/a.js","tz":"UTC","input":null,"started":"2026-12-01T15:31:57.955Z"}
{"type":"call","seq":1,"id":1,"op":"memory.set","args":{"key":"k","value":[0.3,1e-07]},"ok":true,"value":null}
{"type":"call","seq":2,"id":2,"op":"memory.get","args":{"key":"k"},"ok":true,"value":[0.3,1e-07]}
{"type":"end","outcome":"ok","exit":0,"value":[0.3,1e-07],"ended":"2026-12-01T15:31:57.984Z","stats":{"wall_ms":17.705,"effects":2}}
EOF
  chid replay --quiet "$T/old.jsonl"
  assert_status 0
  # the recorded value, printed as JSON.stringify prints it
  assert_stdout '[0.3,1e-7]'
}

@test "input JSON is checked strictly: a lone surrogate escape is a value, invalid UTF-8 is named" {
  echo 'module.exports = async (input) => [input, input.length, input.charCodeAt(0)]' >"$T/a.js"
  chid run --quiet "$T/a.js" --input '"\udc00"'
  assert_status 0
  assert_stdout '["\udc00",1,56320]'
  printf '"caf\xe9"' >"$T/in.json"
  chid run --quiet "$T/a.js" --input-file "$T/in.json"
  assert_status 2
  assert_stderr_has "chidori: --input-file is not valid JSON (line 1, column 5): invalid UTF-8 in a string (byte 0xe9)"
}
