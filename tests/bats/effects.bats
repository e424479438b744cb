#!/usr/bin/env bats
# Every host effect of the foundation: log, memory, template, checkpoint,
# input, clock, randomness, virtual timers, concurrency of outstanding calls.
load helpers

@test "console.* and chidori.log reach the parent's stderr with levels" {
  agent a.js <<'JS'
async function main() {
  console.log("plain", 1, { a: [1, 2] });
  console.warn("careful");
  console.error("bad");
  await chidori.log("direct");
  return "ok";
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '"ok"'
  assert_stderr_has "[agent] plain 1 { a: [ 1, 2 ] }"
  assert_stderr_has "[agent:warn] careful"
  assert_stderr_has "[agent:error] bad"
  assert_stderr_has "[agent] direct"
}

@test "memory persists across runs of the same agent" {
  agent a.js <<'JS'
async function main() {
  const n = ((await chidori.memory.get("n")) ?? 0) + 1;
  await chidori.memory.set("n", n);
  return n;
}
JS
  chid run --quiet "$T/a.js"; assert_stdout 1
  chid run --quiet "$T/a.js"; assert_stdout 2
  chid run --quiet "$T/a.js"; assert_stdout 3
  [[ -f $XDG_STATE_HOME/chidori/memory.sqlite3 ]]
}

@test "memory is namespaced per agent" {
  agent a.js <<'JS'
async function main() { await chidori.memory.set("k", "from a"); return 1; }
JS
  agent b.js <<'JS'
async function main() { return await chidori.memory.get("k"); }
JS
  chid run --quiet "$T/a.js"; assert_status 0
  chid run --quiet "$T/b.js"; assert_stdout 'null'
  chid run --quiet --memory-ns shared "$T/a.js"
  chid run --quiet --memory-ns shared "$T/b.js"; assert_stdout '"from a"'
}

@test "--state-dir moves the store" {
  agent a.js <<'JS'
async function main() { await chidori.memory.set("k", {deep: [1]}); return await chidori.memory.get("k"); }
JS
  chid run --quiet --state-dir "$T/elsewhere" "$T/a.js"
  assert_stdout '{"deep":[1]}'
  [[ -f $T/elsewhere/memory.sqlite3 ]]
  [[ ! -e $XDG_STATE_HOME/chidori/memory.sqlite3 ]]
}

@test "memory list and delete" {
  agent a.js <<'JS'
async function main() {
  for (const k of ["user:2", "user:1", "other", "user_x"]) await chidori.memory.set(k, k);
  const before = await chidori.memory.list("user:");
  const gone = await chidori.memory.delete("user:1");
  const again = await chidori.memory.delete("user:1");
  return { before, gone, again, after: await chidori.memory.list() };
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '{"before":["user:1","user:2"],"gone":true,"again":false,"after":["other","user:2","user_x"]}'
}

@test "a memory limit violation is an error the agent can catch" {
  agent a.js <<'JS'
async function main() {
  try { await chidori.memory.set("k".repeat(5000), 1); return "no error"; }
  catch (e) { return e.message; }
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  [[ $output == *"1024 bytes"* ]]
}

@test "template substitutes variables, and a missing one is a catchable error" {
  agent a.js <<'JS'
async function main() {
  const ok = await chidori.template("Hi {{ user.name }}, you have {{n}} {{ items.0 }}", { user: { name: "Ada" }, n: 3, items: ["notes"] });
  let err;
  try { await chidori.template("{{ nope }}", {}); } catch (e) { err = e.message; }
  return { ok, err };
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '{"ok":"Hi Ada, you have 3 notes","err":"template: no variable '"'"'nope'"'"' (line 1)"}'
}

@test "input answered from --answers (array, in order)" {
  agent a.js <<'JS'
async function main() { return [await chidori.input("name?"), await chidori.input("age?")]; }
JS
  echo '["Ada", "36"]' >"$T/answers.json"
  chid run --quiet --answers "$T/answers.json" "$T/a.js"
  assert_status 0
  assert_stdout '["Ada","36"]'
}

@test "input answered from --answers (object by prompt)" {
  agent a.js <<'JS'
async function main() { return await chidori.input("colour?"); }
JS
  echo '{"colour?": "blue"}' >"$T/answers.json"
  chid run --quiet --answers "$T/answers.json" "$T/a.js"
  assert_stdout '"blue"'
}

@test "input with no answers and no terminal is a clear error" {
  agent a.js <<'JS'
async function main() { return await chidori.input("name?"); }
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has 'input: no answer for "name?": pass --answers FILE'
}

@test "checkpoint resolves and is journaled" {
  agent a.js <<'JS'
async function main() { await chidori.checkpoint("half"); return "done"; }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  grep -q '"op":"checkpoint","args":{"label":"half"}' "$T/j.jsonl"
}

@test "Date, Math.random and crypto.getRandomValues come from the parent" {
  agent a.js <<'JS'
async function main() {
  const t = Date.now(), d = new Date();
  const r = Math.random();
  const b = crypto.getRandomValues(new Uint8Array(16));
  return { recent: Math.abs(t - 1e3 * EPOCH) < 86400e3 * 3650, sameClock: Math.abs(d.getTime() - t) < 60000,
           r: r >= 0 && r < 1, bytes: b.length, uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()) };
}
var EPOCH = 1790000000;
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '{"recent":true,"sameClock":true,"r":true,"bytes":16,"uuid":true}'
  grep -q '"op":"clock.now"' "$T/j.jsonl"
  grep -q '"op":"random.seed"' "$T/j.jsonl"
  grep -q '"op":"random.bytes"' "$T/j.jsonl"
}

@test "--virtual-time: timers run on a virtual clock: ordered, and nothing really waits" {
  agent a.js <<'JS'
async function main() {
  const seen = [];
  setTimeout(() => seen.push("c@3000"), 3000);
  setTimeout(() => seen.push("a@10"), 10);
  const id = setTimeout(() => seen.push("never"), 20);
  clearTimeout(id);
  setTimeout(() => seen.push("b@10"), 10);
  let n = 0;
  const iv = setInterval(() => { seen.push("tick" + ++n); if (n === 3) clearInterval(iv); }, 1000);
  await new Promise((r) => setTimeout(r, 5000));
  return seen;
}
JS
  start=$(date +%s%N)
  chid run --quiet --virtual-time "$T/a.js"
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  assert_status 0
  assert_stdout '["a@10","b@10","tick1","tick2","c@3000","tick3"]'
  (( elapsed < 3000 ))
}

@test "several outstanding host calls resolve the right promises" {
  agent a.js <<'JS'
async function main() {
  await Promise.all([1,2,3,4,5].map((i) => chidori.memory.set("k" + i, i * i)));
  const vals = await Promise.all([5,4,3,2,1].map((i) => chidori.memory.get("k" + i)));
  return vals;
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '[25,16,9,4,1]'
}

@test "web platform basics exist in the box" {
  agent a.js <<'JS'
async function main() {
  const u = new URL("https://example.com/a/../b?x=1#f");
  u.searchParams.append("y", "2 3");
  const enc = new TextEncoder().encode("hé");
  const cl = structuredClone({ m: new Map([[1, 2]]), d: new Date(0) });
  let micro = false; queueMicrotask(() => { micro = true; }); await null;
  return { href: u.href, enc: Array.from(enc), dec: new TextDecoder().decode(enc), b64: btoa("hi"), un: atob("aGk="),
           clone: cl.m.get(1) === 2 && cl.d.getTime() === 0, micro };
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '{"href":"https://example.com/b?x=1&y=2+3#f","enc":[104,195,169],"dec":"hé","b64":"aGk=","un":"hi","clone":true,"micro":true}'
}

@test "powers that need configuration say how to configure them" {
  agent a.js <<'JS'
async function main() {
  const out = [];
  for (const f of [() => chidori.prompt("x"), () => chidori.tool("t", {}), () => chidori.workspace.read("a"),
                   () => chidori.callAgent("b.js", {})]) {
    try { await f(); out.push("no error"); } catch (e) { out.push(e.message); }
  }
  out.push(typeof require("node:fs").readFileSync);
  return out;
}
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  [[ $output == *'"prompt: no model provider configured: set CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"tool t: no tools are declared (start chidori with --tools FILE)"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"workspace.read: no workspace configured (start chidori with --workspace DIR)"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"callAgent b.js: cannot open the agent: No such file or directory"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"function"]' ]] || { echo "$output"; return 1; }
}
