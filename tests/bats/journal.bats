#!/usr/bin/env bats
# Journal (record) and replay: byte-identical output, divergence, and the
# in-process path giving the same run as the isolated one.
load helpers

effectful() {
  agent a.js <<'JS'
async function main(input) {
  const n = ((await chidori.memory.get("n")) ?? 0) + 1;
  await chidori.memory.set("n", n);
  const pair = await Promise.all([chidori.template("{{a}}", { a: input.a }), chidori.memory.list("")]);
  const rnd = Math.random(), t = Date.now();
  console.log("run", n);
  await chidori.checkpoint("mid");
  let later = [];
  await new Promise((r) => setTimeout(() => { later.push(Date.now() - t >= 0); r(); }, 50));
  return { n, pair, rnd, t, later, bytes: Array.from(crypto.getRandomValues(new Uint8Array(4))) };
}
JS
}

@test "the journal has a header, one line per call, and an end line" {
  effectful
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js" --input '{"a":"x"}'
  assert_status 0
  head -n1 "$T/j.jsonl" | grep -q '^{"type":"header","chidori":"[0-9.]*","protocol":1,"run_id":"run-'
  head -n1 "$T/j.jsonl" | grep -q '"agent_sha256":"'"$(sha256sum "$T/a.js" | cut -c1-64)"'"'
  head -n1 "$T/j.jsonl" | grep -q '"input":{"a":"x"},"started":"20'
  tail -n1 "$T/j.jsonl" | grep -q '^{"type":"end","outcome":"ok","exit":0,"value":'
  calls=$(grep -c '"type":"call"' "$T/j.jsonl")
  (( calls >= 9 ))
  # seq numbers are 1..N in order
  seqs=$(grep -o '"seq":[0-9]*' "$T/j.jsonl" | cut -d: -f2 | tr '\n' ' ')
  [[ $seqs == "$(seq -s ' ' 1 "$calls") " ]]
}

@test "replay reproduces stdout byte for byte and performs nothing" {
  effectful
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js" --input '{"a":"x"}'
  assert_status 0
  first=$output
  chid run --quiet "$T/a.js" --input '{"a":"x"}'     # memory moves on: n=2 now
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout "$first"
  [[ $stderr != *"[agent]"* ]]
  # the memory store was not touched by the replay
  chid run --quiet "$T/a.js" --input '{"a":"x"}'
  [[ $output == '{"n":3,'* ]]
}

@test "replay divergence names the call and both ops" {
  agent a.js <<'JS'
async function main() { await chidori.memory.get("a"); await chidori.log("between"); return 1; }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  agent a.js <<'JS'
async function main() { await chidori.memory.get("a"); await chidori.memory.set("b", 2); return 1; }
JS
  chid replay --quiet --agent "$T/a.js" "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "replay diverged at call 2: expected log, got memory.set"
}

@test "replay divergence on arguments shows both calls" {
  agent a.js <<'JS'
async function main(input) { return await chidori.memory.get(input); }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js" --input '"k1"'
  sed -i 's/"input":"k1"/"input":"k2"/' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has 'replay diverged at call 1: expected memory.get {"key":"k1"}, got memory.get {"key":"k2"}'
}

@test "replay refuses an agent that changed since recording" {
  agent a.js <<'JS'
function main() { return 1; }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  echo '// edited' >>"$T/a.js"
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "has changed since the journal was recorded"
}

@test "replay of a missing or garbage journal is a clear error" {
  chid replay --quiet "$T/none.jsonl"
  assert_status 2
  assert_stderr_has "open journal"
  echo 'not json' >"$T/bad.jsonl"
  chid replay --quiet "$T/bad.jsonl"
  assert_status 2
  assert_stderr_has "line 1: not a journal line"
}

@test "a failing run's journal keeps every answered call and says how it ended" {
  agent a.js <<'JS'
async function main() { await chidori.memory.set("x", 1); await chidori.log("before"); throw new Error("late failure"); }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 1
  grep -q '"op":"memory.set"' "$T/j.jsonl"
  grep -q '"op":"log"' "$T/j.jsonl"
  tail -n1 "$T/j.jsonl" | grep -q '"type":"end","outcome":"agent_error","exit":1'
  tail -n1 "$T/j.jsonl" | grep -q '"message":"late failure"'
  # ... and replaying it reproduces the same failure
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "agent error: Error: late failure"
}

@test "a crashed worker's journal still holds the calls and the ending" {
  f=$(bad_worker crash)
  echo 'function main(){}' >"$T/a.js"
  CHIDORI_WORKER=$f chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 139
  tail -n1 "$T/j.jsonl" | grep -q '"outcome":"worker_exited","exit":139'
}

strip_times() { # normalise timestamps, run ids, clock values and wall times
  sed -E 's/"(started|ended)":"[^"]*"/"\1":"T"/g; s/"run_id":"[^"]*"/"run_id":"R"/g; s/"wall_ms":[0-9.e+-]+/"wall_ms":0/g; s/,"peak_memory_bytes":[0-9]+,"memory_limit_bytes":[0-9]+//g; s/"op":"clock.now","args":\{\},"ok":true,"value":[0-9.e+]+/"op":"clock.now","args":{},"ok":true,"value":0/g' "$1"
}

@test "isolated and in-process runs give identical stdout and journals" {
  agent a.js <<'JS'
async function main(input) {
  await chidori.memory.set("k", input);
  const [a, b] = await Promise.all([chidori.memory.get("k"), chidori.template("{{x}}!", { x: "y" })]);
  console.log("hi");
  await new Promise((r) => setTimeout(r, 5)); // awaited: an unawaited one raced the host calls after it
  return { a, b, list: await chidori.memory.list(), t: typeof Date.now() };
}
JS
  chid run --quiet --journal "$T/iso.jsonl" "$T/a.js" --input '{"q":1}'
  assert_status 0
  iso=$output
  rm -rf "$XDG_STATE_HOME"
  chid run --quiet --no-isolate --journal "$T/inp.jsonl" "$T/a.js" --input '{"q":1}'
  assert_status 0
  assert_stdout "$iso"
  diff <(strip_times "$T/iso.jsonl") <(strip_times "$T/inp.jsonl")
  # CHIDORI_ISOLATE=off is the same switch
  CHIDORI_ISOLATE=off chid run "$T/a.js" --input '{"q":1}'
  assert_stderr_has "Isolation: off"
}

@test "a replay can run in-process too" {
  effectful
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js" --input '{"a":"x"}'
  first=$output
  chid replay --quiet --no-isolate "$T/j.jsonl"
  assert_status 0
  assert_stdout "$first"
}

tz_agent() {
  agent tz.js <<'JS'
async function main() { return [new Date(0).getHours(), new Date(2024, 0, 15).getTime(), Intl.DateTimeFormat().resolvedOptions().timeZone, Date.now() > 0]; }
JS
}

@test "replay runs in the time zone the journal header records, whatever CHIDORI_TZ says" {
  tz_agent
  chid run --quiet --tz Asia/Tokyo --journal "$T/j.jsonl" "$T/tz.js"
  assert_status 0
  assert_stdout '[9,1705244400000,"Asia/Tokyo",true]'
  head -n1 "$T/j.jsonl" | grep -q '"tz":"Asia/Tokyo"'
  CHIDORI_TZ=Europe/Paris chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '[9,1705244400000,"Asia/Tokyo",true]'
  chid replay --quiet --no-isolate "$T/j.jsonl"
  assert_stdout '[9,1705244400000,"Asia/Tokyo",true]'
  # Without --tz the run (and its replay) is UTC, not the caller's zone.
  TZ=Europe/Paris chid run --quiet --journal "$T/u.jsonl" "$T/tz.js"
  assert_stdout '[0,1705276800000,"UTC",true]'
  head -n1 "$T/u.jsonl" | grep -q '"tz":"UTC"'
  CHIDORI_TZ=Asia/Tokyo chid replay --quiet "$T/u.jsonl"
  assert_stdout '[0,1705276800000,"UTC",true]'
}

@test "replay --tz is a usage error; a journal naming a zone that does not exist is refused" {
  tz_agent
  chid run --quiet --tz Asia/Tokyo --journal "$T/j.jsonl" "$T/tz.js"
  assert_status 0
  chid replay --tz UTC "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "chidori: --tz: a replay runs in the time zone recorded in the journal"
  sed -i '1s|"tz":"Asia/Tokyo"|"tz":"Mars/Olympus"|' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "chidori: replay: the journal's time zone 'Mars/Olympus' is not a zone of the tz database"
  sed -i '1s|"tz":"Mars/Olympus"|"tz":7|' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "chidori: replay: the journal header's \"tz\" is not a string"
}

@test "in-process runs see the same zone as boxed ones: --tz, else UTC, never the caller's TZ" {
  tz_agent
  TZ=Europe/Paris chid run --quiet --no-isolate "$T/tz.js"
  assert_status 0
  assert_stdout '[0,1705276800000,"UTC",true]'
  TZ=Europe/Paris chid run --quiet --no-isolate --tz Asia/Tokyo "$T/tz.js"
  assert_stdout '[9,1705244400000,"Asia/Tokyo",true]'
}
