#!/usr/bin/env bats
# The parent is bounded whatever the worker does (issue 9, items 3 and 10):
# one test per pattern, each showing the launcher's own peak RSS (VmHWM read
# at its exit by tests/probes/peak_rss, the worker not included) stays under
# a stated bound and what the agent saw.  Limits that answer the agent say
# ELIMIT (ENOSPC for node:fs); the two flow-control limits make calls wait.
load helpers

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-bounds.XXXXXX)
  export SRVDIR
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 >"$SRVDIR/port" 2>"$SRVDIR/log" &
  echo $! >"$SRVDIR/pid"
  for _ in $(seq 100); do [[ -s $SRVDIR/port ]] && break; sleep 0.05; done
  P=$(head -1 "$SRVDIR/port")
  export P
}

teardown_file() {
  kill "$(cat "$SRVDIR/pid")" 2>/dev/null || true
  rm -rf "$SRVDIR"
}

# An ASan build carries shadow memory and a quarantine of freed blocks:
# its RSS is looser, so the bounds are too (and the quarantine is small).
# LeakSanitizer cannot run under ptrace (peak_rss): the other suites check leaks.
if grep -qa __asan_init "${CHIDORI_BIN:-$BATS_TEST_DIRNAME/../../build/chidori}" 2>/dev/null; then
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4:detect_leaks=0"
  RSS_SCALE=3
else
  RSS_SCALE=1
fi

# Like chid, under peak_rss: also sets $peak_kb, the launcher's peak RSS.
peak() {
  local out="$T/.stdout" err="$T/.stderr"
  set +e
  "$BUILD_DIR/probes/peak_rss" "$T/.peak" "$CHIDORI" "$@" >"$out" 2>"$err" </dev/null
  status=$?
  set -e
  output=$(cat "$out")
  stderr=$(cat "$err")
  peak_kb=$(cat "$T/.peak")
}

assert_peak_below() { # MiB
  local bound=$(($1 * RSS_SCALE))
  if ((peak_kb < 0 || peak_kb > bound * 1024)); then
    echo "launcher peak RSS ${peak_kb} KiB, expected below $bound MiB"; echo "stdout: $output"; echo "stderr: $stderr"
    return 1
  fi
}

# exactly one line on stderr contains $1
assert_stderr_once() {
  local n
  n=$(grep -cF -- "$1" <<<"$stderr" || true)
  if [[ $n -ne 1 ]]; then
    echo "expected one stderr line with: $1 (got $n)"; echo "stderr: $stderr"; return 1
  fi
}

# ---- flow control: the answer queue and the calls in flight ----

@test "answers the worker leaves unread stop at --max-queue: the parent stops reading calls" {
  agent flood.js <<'JS'
async function main() {
  await chidori.memory.set("big", "x".repeat(1000000));
  const ps = [];
  for (let i = 0; i < 300; i++) ps.push(chidori.memory.get("big"));
  let n = 0;
  for (const p of ps) n += (await p).length;
  return n;
}
JS
  # The variable, not the flag: the build before the limits ignores it and
  # shows the growth (~300 MiB of answers) instead of a usage error.
  CHIDORI_MAX_QUEUE=8M peak run --quiet --memory 2G "$T/flood.js"
  assert_status 0
  assert_stdout 300000000
  assert_peak_below 48
  assert_stderr_once "chidori: answer queue limit reached (8 MiB waiting for the worker to read; raise it with --max-queue)"
}

@test "an agent that returns without reading its answers ends normally, the parent bounded" {
  agent unread.js <<'JS'
async function main() {
  await chidori.memory.set("big", "x".repeat(1000000));
  for (let i = 0; i < 300; i++) chidori.memory.get("big");
  return "done";
}
JS
  CHIDORI_MAX_QUEUE=8M peak run --quiet --memory 2G "$T/unread.js"
  assert_status 0
  assert_stdout '"done"'
  assert_peak_below 48
}

@test "flow control never deadlocks: big calls keep coming while answers pile up" {
  # The worker's writes fill the socket while the parent, over its queue
  # cap, reads nothing: the worker must read answers while it waits to
  # write (engine/transport.c), or both wait until the deadline.
  agent both.js <<'JS'
async function main() {
  await chidori.memory.set("big", "x".repeat(1000000));
  const mid = "y".repeat(300000);
  const ps = [];
  for (let i = 0; i < 200; i++) { ps.push(chidori.memory.get("big")); ps.push(chidori.memory.set("m" + (i % 5), mid)); }
  let n = 0;
  for (const p of ps) { const v = await p; n += v ? v.length : 0; }
  return n;
}
JS
  CHIDORI_MAX_QUEUE=4M peak run --quiet --memory 2G --deadline 60000 "$T/both.js"
  assert_status 0
  assert_stdout 200000000
  assert_peak_below 48 # ~200 MiB without the cap
}

@test "--max-calls: a flood of slow fetches never awaited one by one waits; the parent holds at most N" {
  agent calls.js <<JS
async function main() {
  const ps = [];
  for (let i = 0; i < 6000; i++) ps.push(fetch("http://127.0.0.1:$P/delay?ms=20").then(r => r.status, e => String(e)));
  const r = await Promise.all(ps);
  return r.filter(x => x === 200).length;
}
JS
  CHIDORI_MAX_CALLS=64 peak run --quiet --allow-host 127.0.0.1 --deadline 120000 "$T/calls.js"
  assert_status 0
  assert_stdout 6000
  assert_peak_below 36 # ~80 MiB with 6000 transfers pending
  assert_stderr_once "chidori: host call limit reached (64 calls in flight; raise it with --max-calls)"
}

@test "fetch bodies in flight are capped by --max-queue: the fetch that would pass it fails with ELIMIT" {
  agent inflight.js <<JS
async function main() {
  const ps = [];
  let msg = "";
  for (let i = 0; i < 48; i++)
    ps.push(fetch("http://127.0.0.1:$P/bytes?n=4000000").then(r => r.arrayBuffer()).then(b => b.byteLength,
                                                                                       e => (msg = e.message, e.cause && e.cause.code)));
  const r = await Promise.all(ps);
  return { ok: r.filter(x => x === 4000000).length > 0, limit: r.filter(x => x === "ELIMIT").length > 0, msg };
}
JS
  CHIDORI_MAX_QUEUE=16M peak run --quiet --memory 2G --allow-host 127.0.0.1 "$T/inflight.js"
  assert_status 0
  assert_peak_below 100 # ~280 MiB without the cap
  assert_stdout '{"ok":true,"limit":true,"msg":"fetch failed: http limit reached (16 MiB of responses in flight; raise it with --max-queue)"}'
  assert_stderr_once "chidori: http limit reached (16 MiB of responses in flight; raise it with --max-queue)"
}

# ---- limits the agent sees: ELIMIT ----

@test "log flood: past --max-log chidori.log fails with ELIMIT, console.* goes on without crashing" {
  agent logs.js <<'JS'
async function main() {
  const s = "x".repeat(100000);
  for (let i = 0; i < 200; i++) console.log(s);   // 20 MB: fire-and-forget, never throws
  try {
    for (let i = 0; i < 200; i++) await chidori.log(s);
    return "no limit";
  } catch (e) {
    return { code: e.code, message: e.message };
  }
}
JS
  # The variable, so the old build (which ignores it) shows the call succeeding.
  CHIDORI_MAX_LOG=1M peak run --quiet "$T/logs.js"
  assert_status 0
  assert_stdout '{"code":"ELIMIT","message":"log limit reached (1 MiB per run; raise it with --max-log)"}'
  assert_stderr_once "chidori: log limit reached (1 MiB per run; raise it with --max-log)"
  ((${#stderr} < 2000000)) || { echo "stderr is ${#stderr} bytes"; return 1; }
  assert_peak_below 32
}

@test "VFS flood: past --max-vfs node:fs writes fail with ENOSPC naming the option" {
  agent vfs.js <<'JS'
async function main() {
  const fs = require("node:fs");
  const mb = "z".repeat(1 << 20);
  let n = 0;
  try {
    for (; n < 40; n++) fs.writeFileSync("/tmp/f" + n, mb);
    return "no limit";
  } catch (e) {
    return { n, code: e.code, message: e.message };
  }
}
JS
  CHIDORI_MAX_VFS=8M peak run --quiet "$T/vfs.js"
  assert_status 0
  assert_stdout '{"n":7,"code":"ENOSPC","message":"ENOSPC: no space left on device, write '"'"'/tmp/f7'"'"' (VFS limit reached (8 MiB per run; raise it with --max-vfs))"}'
  assert_stderr_once "chidori: VFS limit reached (8 MiB per run; raise it with --max-vfs)"
  assert_peak_below 40 # 40 MiB of files with the default cap
}

@test "template bomb: a lookup repeated over a big object costs one hash probe, not a walk" {
  agent tpl.js <<'JS'
async function main() {
  const o = {}, a = [];
  for (let i = 0; i < 30000; i++) { o["k" + i] = i; a.push(i); }
  const tpl = "{{o.k29999}}{{a.29999}}".repeat(30000);
  const t0 = Date.now();
  const out = await chidori.template(tpl, { o, a });
  const ms = Date.now() - t0;
  return { len: out.length, fast: ms < 3000 || ms };
}
JS
  peak run --quiet "$T/tpl.js"
  assert_status 0
  # ~10 s when every lookup walked the members (tags x members)
  assert_stdout '{"len":300000,"fast":true}'
  assert_peak_below 48
}

@test "memory-store flood: past --max-memory-store a new value fails with ELIMIT; overwriting smaller still works" {
  agent mem.js <<'JS'
async function main() {
  const v = "m".repeat(500000);
  let n = 0, err;
  try {
    for (; n < 40; n++) await chidori.memory.set("k" + n, v);
  } catch (e) {
    err = { code: e.code, message: e.message };
  }
  await chidori.memory.set("k0", "small");        // frees room: an overwrite counts its new size
  await chidori.memory.set("k" + n, v);
  return { n, err };
}
JS
  CHIDORI_MAX_MEMORY_STORE=4M peak run --quiet "$T/mem.js"
  assert_status 0
  assert_stdout '{"n":8,"err":{"code":"ELIMIT","message":"memory store limit reached (4 MiB per namespace; raise it with --max-memory-store)"}}'
  assert_stderr_once "chidori: memory store limit reached (4 MiB per namespace; raise it with --max-memory-store)"
  assert_peak_below 40
}

@test "workspace write flood: past --max-workspace-write writes fail with ELIMIT and the disk holds no more" {
  mkdir "$T/ws"
  agent ws.js <<'JS'
async function main() {
  const mb = "w".repeat(1 << 20);
  let n = 0;
  try {
    for (; n < 20; n++) await chidori.workspace.write("f" + n, mb);
    return "no limit";
  } catch (e) {
    return { n, code: e.code, message: e.message };
  }
}
JS
  CHIDORI_MAX_WORKSPACE_WRITE=4M peak run --quiet --workspace "$T/ws" "$T/ws.js"
  assert_status 0
  assert_stdout '{"n":4,"code":"ELIMIT","message":"workspace write limit reached (4 MiB per run; raise it with --max-workspace-write)"}'
  assert_stderr_once "chidori: workspace write limit reached (4 MiB per run; raise it with --max-workspace-write)"
  [[ $(du -sk "$T/ws" | cut -f1) -le 4200 ]]
  assert_peak_below 40
}

# ---- the journal and replay ----

@test "journal limit: the run stops at the first call it cannot record, the journal closed with a note and an end line" {
  agent jr.js <<'JS'
async function main() {
  const v = "j".repeat(100000);
  for (let i = 0; i < 50; i++) await chidori.memory.set("k", v);
  return "recorded";
}
JS
  CHIDORI_MAX_JOURNAL=1M peak run --quiet --journal "$T/j.jsonl" "$T/jr.js"
  assert_status 1
  assert_stderr_once "chidori: journal limit reached (1 MiB per run; raise it with --max-journal): the run was stopped at call 11, the first that could not be recorded"
  [[ $(stat -c %s "$T/j.jsonl") -le $((1024 * 1024 + 4096)) ]]
  tail -1 "$T/j.jsonl" | grep -q '"type":"end","outcome":"limit","exit":1'
  grep -q '"type":"note","kind":"limit","message":"journal limit reached (1 MiB per run; raise it with --max-journal): call 11 (memory.set) could not be recorded' "$T/j.jsonl"
  # What was recorded replays up to the stop.
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "replay reached the end of the journal at call 11 (memory.set): the recorded run stopped there; it ended with limit: journal limit reached"
  assert_peak_below 40
}

@test "replay refuses a journal over --max-journal before reading it" {
  agent small.js <<'JS'
async function main() { for (let i = 0; i < 30; i++) await chidori.memory.set("k", "s".repeat(100000)); return 1; }
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/small.js"
  assert_status 0
  size=$(stat -c %s "$T/j.jsonl")
  chid replay --quiet --max-journal 1M "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "chidori: replay: journal '$T/j.jsonl' is $size bytes, over the journal limit of 1 MiB; raise it with --max-journal"
  CHIDORI_MAX_JOURNAL=1M chid replay --quiet "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "over the journal limit of 1 MiB"
  chid replay --quiet --max-journal 8M "$T/j.jsonl"
  assert_status 0
  assert_stdout 1
}

@test "replay loads a 150,000-call journal in linear time, ids out of order" {
  # Delivery order (seq) reverses the ids, as concurrent calls completing
  # in reverse would: a lookup by id that walks the entries is quadratic.
  agent many.js <<'JS'
async function main() {
  const ps = [];
  for (let i = 0; i < 150000; i++) ps.push(chidori.memory.get("k"));
  let s = 0;
  for (const p of ps) s += await p;
  return s;
}
JS
  python3 - "$T/many.js" "$T/many.jsonl" <<'PY'
import hashlib, json, sys
agent, out = sys.argv[1], sys.argv[2]
sha = hashlib.sha256(open(agent, 'rb').read()).hexdigest()
n = 150000
with open(out, 'w') as f:
    f.write(json.dumps({"type": "header", "chidori": "0.1.0", "protocol": 1, "run_id": "run-0", "agent": agent,
                        "agent_sha256": sha, "filename": "many.js", "memory_ns": agent, "input": None,
                        "started": "2026-01-01T00:00:00.000Z"}, separators=(',', ':')) + "\n")
    for k in range(1, n + 1):
        f.write(json.dumps({"type": "call", "seq": k, "id": n - k + 1, "op": "memory.get", "args": {"key": "k"},
                            "ok": True, "value": 1}, separators=(',', ':')) + "\n")
PY
  start=$(date +%s%N)
  peak replay --quiet "$T/many.jsonl"
  ms=$((($(date +%s%N) - start) / 1000000))
  assert_status 0
  assert_stdout 150000
  ((ms < 15000)) || { echo "replay took $ms ms (40 s and more when quadratic)"; return 1; }
  assert_peak_below 64
}

@test "replay memory does not grow with the journal: lines are read again when needed" {
  agent big.js <<'JS'
async function main() {
  await chidori.memory.set("big", "x".repeat(1000000));
  let n = 0;
  for (let i = 0; i < 40; i++) n += (await chidori.memory.get("big")).length;
  return n;
}
JS
  chid run --quiet --journal "$T/big.jsonl" "$T/big.js"
  assert_status 0
  peak replay --quiet "$T/big.jsonl"
  assert_status 0
  assert_stdout 40000000
  assert_peak_below 24 # ~47 MiB when every parsed line was kept
}

# ---- hostile frames ----

@test "a frame of millions of tiny JSON values is refused before it is parsed" {
  w=$(bad_worker many-values)
  echo 'async function main() { return 1; }' >"$T/one.js"
  CHIDORI_WORKER=$w peak run --quiet --deadline 30000 "$T/one.js"
  assert_status 70
  assert_stderr_has "chidori: protocol error: frame holds more than 2097152 JSON values"
  assert_peak_below 48 # ~500 MiB of cJSON tree when parsed
}

# ---- the options ----

@test "the limit options: --help names them, malformed values and variables are usage errors" {
  chid run --help
  assert_status 0
  for o in --max-calls --max-queue --max-log --max-journal --max-vfs --max-memory-store --max-workspace-write; do
    [[ $output == *"$o"* ]] || { echo "run --help lacks $o"; return 1; }
  done
  chid replay --help
  [[ $output == *"--max-journal"* ]]
  echo 'async function main() { return 1; }' >"$T/one.js"
  for bad in "--max-calls=0" "--max-calls=x" "--max-queue=0" "--max-queue=12Q" "--max-log=-1" "--max-journal=" \
             "--max-vfs=1K" "--max-memory-store=abc" "--max-workspace-write=1.5G"; do
    chid run --quiet "$bad" "$T/one.js"
    [[ $status -eq 2 ]] || { echo "$bad: exit $status"; return 1; }
    [[ $stderr == "chidori: --max-"* ]] || { echo "$bad: $stderr"; return 1; }
  done
  CHIDORI_MAX_QUEUE=lots chid run --quiet "$T/one.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_MAX_QUEUE 'lots'"
  CHIDORI_MAX_CALLS=0 chid run --quiet "$T/one.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_MAX_CALLS '0' is not a number of calls from 1 to 1000000"
  chid run --quiet --max-calls 8 --max-queue 1M --max-log 1K --max-journal 1M --max-vfs 64K \
    --max-memory-store 1M --max-workspace-write 1M "$T/one.js"
  assert_status 0
  assert_stdout 1
}

@test "a nested agent runs under its caller's limits" {
  mkdir -p "$T/a"
  cat >"$T/a/child.js" <<'JS'
module.exports = async () => {
  try { await chidori.log("c".repeat(3000)); return "logged"; } catch (e) { return e.message; }
};
JS
  cat >"$T/a/main.js" <<'JS'
module.exports = async () => chidori.callAgent('child.js', {});
JS
  chid run --quiet --max-log 2K "$T/a/main.js"
  assert_status 0
  assert_stdout '"log limit reached (2 KiB per run; raise it with --max-log)"'
}
