#!/usr/bin/env bats
# Real time (issue 18): timers are timer.wait calls the parent answers when
# due, journaled; replay delivers them in the recorded order without
# waiting; call.cancel gives up a pending call (clearTimeout, abort(),
# AbortSignal.timeout, fetch's signal); --max-timers bounds the timers;
# --virtual-time keeps the virtual clock.  Fetches go to
# tests/servers/fake_http.py on loopback.
load helpers

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-time.XXXXXX)
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

ms_now() { echo $(( $(date +%s%N) / 1000000 )); }

# wait_log TEXT: the server's stderr has TEXT within 10 s
wait_log() {
  for _ in $(seq 200); do grep -qF "$1" "$SRVDIR/log" && return 0; sleep 0.05; done
  echo "the server never logged: $1"; cat "$SRVDIR/log"; return 1
}

@test "timers wait in real time: sleep(300) takes 300 ms, Date.now and performance.now advance as much" {
  agent a.js <<'JS'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
module.exports = async () => {
  const t0 = Date.now(), p0 = performance.now();
  await sleep(300);
  const dt = Date.now() - t0, dp = performance.now() - p0;
  return { dt: dt >= 299 && dt < 20000, dp: dp >= 299 && dp < 20000, mono: p0 >= 0 };
};
JS
  start=$(ms_now)
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  elapsed=$(( $(ms_now) - start ))
  assert_status 0
  assert_stdout '{"dt":true,"dp":true,"mono":true}'
  (( elapsed >= 300 )) || { echo "the run took $elapsed ms"; return 1; }
  head -1 "$T/j.jsonl" | grep -q '"time":"real"'
  grep -q '"op":"timer.wait","args":{"ms":300},"ok":true,"value":null' "$T/j.jsonl"
  grep -q '"op":"clock.mono"' "$T/j.jsonl"
}

@test "replay of a real-time run does not wait and gives the same values" {
  agent a.js <<'JS'
module.exports = async () => {
  const t0 = Date.now(), seen = [];
  setTimeout(() => seen.push("b@600"), 600);
  setTimeout(() => seen.push("a@300"), 300);
  await new Promise((r) => setTimeout(r, 1500));
  return { seen, dt: Date.now() - t0, p: performance.now() };
};
JS
  start=$(ms_now)
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  live=$(( $(ms_now) - start ))
  assert_status 0
  recorded=$output
  [[ $recorded == '{"seen":["a@300","b@600"],"dt":'* ]] || { echo "live: $recorded"; return 1; }
  (( live >= 1500 ))
  start=$(ms_now)
  chid replay --quiet "$T/j.jsonl"
  replayed=$(( $(ms_now) - start ))
  assert_status 0
  assert_stdout "$recorded"
  # The live run waited 1.5 s; the replay does not wait for the timers.
  (( replayed < 1000 )) || { echo "replay took $replayed ms"; return 1; }
}

@test "clearTimeout cancels: the timer never fires and the journal shows the cancel" {
  agent a.js <<'JS'
module.exports = async () => {
  const seen = [];
  const id = setTimeout(() => seen.push("never"), 200);
  clearTimeout(id);
  let n = 0;
  await new Promise((r) => { const iv = setInterval(() => { seen.push("tick" + ++n); if (n === 3) { clearInterval(iv); r(); } }, 20); });
  await new Promise((r) => setTimeout(r, 400));
  return seen;
};
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '["tick1","tick2","tick3"]'
  grep -q '"id":1,"op":"timer.wait","args":{"ms":200},"ok":false,"error":{"name":"AbortError"' "$T/j.jsonl"
  grep -q '"op":"call.cancel","args":{"id":1},"ok":true,"value":true' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '["tick1","tick2","tick3"]'
}

@test "Promise.race([timeout, slow fetch]) times out, and its replay matches" {
  agent a.js <<JS
module.exports = async () => {
  const slow = fetch("http://127.0.0.1:$P/delay?ms=8000").then(() => "fetch");
  const timeout = new Promise((r) => setTimeout(() => r("timeout"), 200));
  return await Promise.race([slow, timeout]);
};
JS
  start=$(ms_now)
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  elapsed=$(( $(ms_now) - start ))
  assert_status 0
  assert_stdout '"timeout"'
  (( elapsed < 6000 )) || { echo "the run took $elapsed ms"; return 1; }
  # The fetch left behind is journaled as unanswered; replay expects it.
  grep -q '"type":"unanswered","id":1,"op":"http"' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '"timeout"'
}

@test "AbortSignal.timeout(100) aborts a stalled fetch and the server sees the connection closed" {
  agent a.js <<JS
module.exports = async () => {
  try {
    // The stalled server sends its head, then nothing: the body never ends.
    await (await fetch("http://127.0.0.1:$P/stall?ms=15000&tag=sigtimeout", { signal: AbortSignal.timeout(100) })).text();
    return "not aborted";
  } catch (e) {
    return e.name;
  }
};
JS
  start=$(ms_now)
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  elapsed=$(( $(ms_now) - start ))
  assert_status 0
  assert_stdout '"TimeoutError"'
  (( elapsed < 10000 )) || { echo "the run took $elapsed ms"; return 1; }
  wait_log "stall sigtimeout: closed by the client"
  # The parent stopped it: the call cancelled (call.cancel, its answer an
  # AbortError), or, once a streamed response's head is in, its body closed.
  grep -qE '"op":"call.cancel"|"op":"http.close"' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '"TimeoutError"'
}

@test "AbortController.abort() stops a fetch in flight: the parent closes the connection" {
  agent a.js <<JS
module.exports = async () => {
  const c = new AbortController();
  const p = fetch("http://127.0.0.1:$P/stall?ms=15000&tag=abortctl", { signal: c.signal }).then((r) => r.text());
  setTimeout(() => c.abort(), 200);
  try { await p; return "not aborted"; } catch (e) { return e.name; }
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '"AbortError"'
  wait_log "stall abortctl: closed by the client"
  grep -qE '"op":"call.cancel"|"op":"http.close"' "$T/j.jsonl"
}

@test "--max-timers: the timer over the limit fails with ELIMIT naming the flag; under it the run passes" {
  agent a.js <<'JS'
module.exports = async () => {
  for (let i = 0; i < 5; i++) setTimeout(() => {}, 60000);
  await new Promise((r) => setTimeout(r, 10));
  return "ok";
};
JS
  chid run --quiet --max-timers 5 "$T/a.js"
  assert_status 1
  assert_stderr_has "timer limit reached (5 timers pending; raise it with --max-timers)"
  chid run --quiet --max-timers 6 "$T/a.js"
  assert_status 0
  assert_stdout '"ok"'
  CHIDORI_MAX_TIMERS=5 chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has "raise it with --max-timers"
}

@test "--max-timers and CHIDORI_VIRTUAL_TIME: malformed values are usage errors" {
  agent a.js <<'JS'
module.exports = () => 1;
JS
  chid run --quiet --max-timers 0 "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: --max-timers '0' is not a number of timers from 1 to 1000000"
  CHIDORI_VIRTUAL_TIME=yes chid run --quiet "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_VIRTUAL_TIME='yes' is not valid (expected '1' or '0')"
  chid run --help
  [[ $output == *"--virtual-time"* && $output == *"--max-timers N"* ]]
}

@test "--virtual-time keeps the virtual clock: an hour's sleep returns at once; replay uses the journal's clock" {
  agent a.js <<'JS'
module.exports = async () => {
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, 3600e3));
  return Date.now() - t0 >= 3600e3;
};
JS
  start=$(ms_now)
  chid run --quiet --virtual-time --journal "$T/j.jsonl" "$T/a.js"
  elapsed=$(( $(ms_now) - start ))
  assert_status 0
  assert_stdout 'true'
  (( elapsed < 5000 ))
  head -1 "$T/j.jsonl" | grep -q '"time":"virtual"'
  ! grep -q '"op":"timer.wait"' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout 'true'
  CHIDORI_VIRTUAL_TIME=1 chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout 'true'
}

@test "a streamed body is read piece by piece as it arrives: each chunk is read before the server sends the next" {
  agent a.js <<JS
module.exports = async () => {
  const r = await fetch("http://127.0.0.1:$P/gated?n=3&tag=piece");
  const reader = r.body.getReader(), dec = new TextDecoder(), seen = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    seen.push(dec.decode(value));
    // The server sends the next chunk only once this one has been read.
    if (seen.length < 3) await (await fetch("http://127.0.0.1:$P/release?tag=piece")).text();
  }
  return seen;
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '["chunk 0\n","chunk 1\n","chunk 2\n"]'
  wait_log "gated piece: released after chunk 0"
  wait_log "gated piece: released after chunk 1"
  ! grep -q "gated piece: not released" "$SRVDIR/log"
  grep -q '"op":"http.read","args":{"stream":1},"ok":true,"value":{"data_base64":"Y2h1bmsgMAo="}' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '["chunk 0\n","chunk 1\n","chunk 2\n"]'
}

@test "text(), json() and arrayBuffer() read a streamed body to its end" {
  agent a.js <<JS
module.exports = async () => {
  const text = await (await fetch("http://127.0.0.1:$P/chunks?n=3&ms=50&tag=whole")).text();
  const json = await (await fetch("http://127.0.0.1:$P/json")).json();
  const buf = await (await fetch("http://127.0.0.1:$P/bytes?n=3000000")).arrayBuffer();
  const u = new Uint8Array(buf);
  let ok = u.length === 3000000;
  for (let i = 0; ok && i < u.length; i += 997) ok = u[i] === i % 251;
  return { text, name: json.name, ok };
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '{"text":"chunk 0\nchunk 1\nchunk 2\n","name":"chidori","ok":true}'
  # 3 MB through a 1 MiB buffer per stream: several reads.
  (( $(grep -c '"op":"http.read"' "$T/j.jsonl") >= 6 ))
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '{"text":"chunk 0\nchunk 1\nchunk 2\n","name":"chidori","ok":true}'
}

@test "aborting a streamed body after its head: the read rejects with AbortError and the connection closes" {
  agent a.js <<JS
module.exports = async () => {
  const c = new AbortController();
  const r = await fetch("http://127.0.0.1:$P/stall?ms=15000&tag=bodyabort", { signal: c.signal });
  setTimeout(() => c.abort(), 200);
  try { await r.text(); return "not aborted"; } catch (e) { return [r.status, e.name]; }
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j.jsonl" "$T/a.js"
  assert_status 0
  assert_stdout '[200,"AbortError"]'
  wait_log "stall bodyabort: closed by the client"
  grep -q '"op":"http.close","args":{"stream":1}' "$T/j.jsonl"
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '[200,"AbortError"]'
}

@test "cancelling a body's stream closes the connection" {
  agent a.js <<JS
module.exports = async () => {
  const r = await fetch("http://127.0.0.1:$P/stall?ms=15000&tag=bodycancel");
  await r.body.cancel();
  await new Promise((res) => setTimeout(res, 100));
  return r.bodyUsed;
};
JS
  chid run --quiet --allow-host 127.0.0.1 "$T/a.js"
  assert_status 0
  assert_stdout 'true'
  wait_log "stall bodycancel: closed by the client"
}

@test "server-sent events through TextDecoderStream arrive event by event" {
  agent a.js <<JS
module.exports = async () => {
  const r = await fetch("http://127.0.0.1:$P/gated?n=3&tag=sse");
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader(), events = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    events.push(value.trim());
    if (events.length < 3) await (await fetch("http://127.0.0.1:$P/release?tag=sse")).text();
  }
  return events;
};
JS
  chid run --quiet --allow-host 127.0.0.1 "$T/a.js"
  assert_status 0
  assert_stdout '["chunk 0","chunk 1","chunk 2"]'
  wait_log "gated sse: released after chunk 1"
  ! grep -q "gated sse: not released" "$SRVDIR/log"
}
