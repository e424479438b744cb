#!/usr/bin/env bats
# chidori.tool, chidori.prompt and chidori.callAgent end to end: the
# declared tools (boxed by default), the model provider (a fake one on
# 127.0.0.1), nested agents; policy on each, replay of each.
load helpers

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-tools.XXXXXX)
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

tools_file() {
  cat >"$T/echo.sh" <<'SH'
#!/bin/sh
read -r line
printf '{"args":%s,"uid":%s}\n' "$line" "$(id -u)"
SH
  cat >"$T/escape.sh" <<'SH'
#!/bin/sh
read -r line
if echo pwned >/tmp/chidori-tool-probe 2>/dev/null; then w=wrote; else w=refused; fi
if cat /etc/shadow >/dev/null 2>&1; then s=read; else s=refused; fi
printf '{"write":"%s","shadow":"%s"}\n' "$w" "$s"
SH
  cat >"$T/bad.sh" <<'SH'
#!/bin/sh
echo "it broke" >&2
exit 3
SH
  cat >"$T/slow.sh" <<'SH'
#!/bin/sh
sleep 5
echo 1
SH
  cat >"$T/wait.sh" <<'SH'
#!/bin/sh
read -r line
sleep 2.37
echo 1
SH
  chmod +x "$T"/*.sh
  cat >"$T/tools.json" <<JSON
{"echo": {"command": ["$T/echo.sh"]},
 "wait": {"command": ["$T/wait.sh"], "timeout_ms": 30000},
 "wait_host": {"command": ["$T/wait.sh"], "sandbox": false, "timeout_ms": 30000},
 "escape": {"command": ["$T/escape.sh"]},
 "escape_host": {"command": ["$T/escape.sh"], "sandbox": false},
 "bad": {"command": ["$T/bad.sh"]},
 "slow": {"command": ["$T/slow.sh"], "timeout_ms": 500},
 "cat": {"command": ["cat"], "sandbox": false}}
JSON
}

@test "a declared tool gets its args as JSON on stdin and its stdout is the value; replay is exact" {
  tools_file
  agent t.js <<'JS'
module.exports = async () => {
  const a = await chidori.tool('echo', { q: 'héllo', n: [1, 2] });
  const many = await Promise.all([1, 2, 3].map((i) => chidori.tool('cat', { i })));
  return { a, many };
};
JS
  chid run --quiet --tools "$T/tools.json" --journal "$T/j" "$T/t.js"
  assert_status 0
  assert_stdout '{"a":{"args":{"q":"héllo","n":[1,2]},"uid":0},"many":[{"i":1},{"i":2},{"i":3}]}'
  first=$output
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout "$first"
}

@test "a tool runs in a box by default: no writes, no secrets; with sandbox false the same probe reaches the host" {
  tools_file
  rm -f /tmp/chidori-tool-probe
  agent e.js <<'JS'
module.exports = async (which) => chidori.tool(which, {});
JS
  chid run --quiet --tools "$T/tools.json" --input '"escape"' "$T/e.js"
  assert_status 0
  assert_stdout '{"write":"refused","shadow":"refused"}'
  [[ ! -e /tmp/chidori-tool-probe ]]
  if [[ $(id -u) == 0 ]]; then
    # The one-process run starts it as the caller: root.
    CHIDORI_RUN_BROKER=0 chid run --quiet --tools "$T/tools.json" --input '"escape_host"' "$T/e.js"
    assert_status 0
    assert_stdout '{"write":"wrote","shadow":"read"}'
    rm -f /tmp/chidori-tool-probe
    # Through the broker the monitor starts it as the broker's uid, never
    # root: the host is there, root's files are not (the test folder is
    # made traversable: that uid runs only what it can read).
    chmod 755 "$T"
    CHIDORI_RUN_BROKER=1 chid run --quiet --tools "$T/tools.json" --input '"escape_host"' "$T/e.js"
    assert_status 0
    assert_stdout '{"write":"wrote","shadow":"refused"}'
    rm -f /tmp/chidori-tool-probe
  fi
}

@test "a \"sandbox\": false tool through the broker runs as the broker's uid with no capability; one-process it is root" {
  [[ $(id -u) == 0 ]] || skip "as root only: the contrast is uid 0 against the broker's uid"
  cat >"$T/who.sh" <<'SH'
#!/bin/sh
read -r line
caps=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
nnp=$(sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/self/status)
printf '{"uid":%s,"gid":%s,"caps":"%s","nnp":%s}\n' "$(id -u)" "$(id -g)" "$caps" "$nnp"
SH
  chmod 755 "$T" "$T/who.sh"
  echo "{\"who\": {\"command\": [\"$T/who.sh\"], \"sandbox\": false}}" >"$T/tools.json"
  agent w.js <<'JS'
module.exports = async () => chidori.tool('who', {});
JS
  CHIDORI_RUN_BROKER=0 chid run --quiet --tools "$T/tools.json" "$T/w.js"
  assert_status 0
  [[ $output == '{"uid":0,"gid":0,'* ]] || { echo "one-process: $output"; return 1; }
  CHIDORI_RUN_BROKER=1 chid run --quiet --tools "$T/tools.json" "$T/w.js"
  assert_status 0
  [[ $output =~ ^\{\"uid\":([0-9]+),\"gid\":([0-9]+),\"caps\":\"0000000000000000\",\"nnp\":1\}$ ]] ||
    { echo "broker: $output"; return 1; }
  [[ ${BASH_REMATCH[1]} != 0 && ${BASH_REMATCH[1]} != 65534 && ${BASH_REMATCH[2]} != 0 ]] ||
    { echo "broker: $output"; return 1; }
}

@test "tool failures name the tool and the cause" {
  tools_file
  agent f.js <<'JS'
module.exports = async () => {
  const out = [];
  for (const n of ['bad', 'slow', 'missing']) {
    try { await chidori.tool(n, {}); out.push('ok'); } catch (e) { out.push(e.code + ': ' + e.message); }
  }
  return out;
};
JS
  chid run --quiet --tools "$T/tools.json" "$T/f.js"
  assert_status 0
  [[ $output == *'"exit: tool bad exited with status 3: it broke"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"timeout: tool slow timed out after 500 ms"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"unknown_tool: tool missing: no such tool in the --tools file"'* ]] || { echo "$output"; return 1; }
}

@test "tools are gated by tool:<name>; a bad --tools file is a usage error" {
  tools_file
  agent g.js <<'JS'
module.exports = async () => chidori.tool('echo', {});
JS
  chid run --quiet --untrusted --tools "$T/tools.json" "$T/g.js"
  assert_status 1
  assert_stderr_has 'policy: `tool:echo` denied'
  echo '{"x": {"command": []}}' >"$T/bad.json"
  chid run --quiet --tools "$T/bad.json" "$T/g.js"
  assert_status 2
  assert_stderr_has "x.command"
  chid run --quiet "$T/g.js"
  assert_status 1
  assert_stderr_has "no tools are declared (start chidori with --tools FILE)"
}

@test "prompt: the parent calls the provider; the key never enters the box or the journal" {
  agent p.js <<'JS'
module.exports = async () => {
  const a = await chidori.prompt('what is 2+2?', { system: 'terse', temperature: 0 });
  let bad; try { await chidori.prompt('x', { temperature: 7 }); } catch (e) { bad = e.code; }
  return { a, bad, env: JSON.stringify(process.env) };
};
JS
  CHIDORI_LLM_BASE_URL="http://127.0.0.1:$P/v1" CHIDORI_LLM_API_KEY=test-key chid run --quiet --journal "$T/j" "$T/p.js"
  assert_status 0
  assert_stdout '{"a":"echo: what is 2+2?","bad":"options","env":"{}"}'
  ! grep -q test-key "$T/j"
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout '{"a":"echo: what is 2+2?","bad":"options","env":"{}"}'
  # The provider being reachable for prompts does not open it to fetch().
  agent f.js <<JS
module.exports = async () => { try { await fetch('http://127.0.0.1:$P/json'); return 'reached'; } catch (e) { return e.cause.code; } };
JS
  CHIDORI_LLM_BASE_URL="http://127.0.0.1:$P/v1" CHIDORI_LLM_API_KEY=test-key chid run --quiet "$T/f.js"
  assert_stdout '"ssrf"'
}

@test "prompt errors: wrong key (redacted), no provider, malformed provider URL" {
  agent p.js <<'JS'
module.exports = async () => chidori.prompt('hi');
JS
  CHIDORI_LLM_BASE_URL="http://127.0.0.1:$P/v1" CHIDORI_LLM_API_KEY=sk-wrong-secret-123456 chid run --quiet "$T/p.js"
  assert_status 1
  assert_stderr_has "401"
  [[ $stderr != *sk-wrong-secret-123456* ]]
  chid run --quiet "$T/p.js"
  assert_status 1
  assert_stderr_has "no model provider configured: set CHIDORI_LLM_BASE_URL and CHIDORI_LLM_API_KEY"
  CHIDORI_LLM_BASE_URL="ftp://x" CHIDORI_LLM_API_KEY=k chid run --quiet "$T/p.js"
  assert_status 2
}

@test "callAgent runs another agent in a fresh box, journaled, with the stricter policy" {
  mkdir -p "$T/a/sub" "$T/ws"
  cat >"$T/a/sub/child.js" <<'JS'
module.exports = async (input) => {
  await chidori.log('child sees ' + JSON.stringify(input));
  if (input.write) await chidori.workspace.write('x.txt', 'from child');
  return { doubled: input.n * 2 };
};
JS
  cat >"$T/a/main.js" <<'JS'
module.exports = async () => {
  const r = await chidori.callAgent('sub/child.js', { n: 21 });
  const w = await chidori.callAgent('sub/child.js', { n: 1, write: true });
  let strict; try { await chidori.callAgent('sub/child.js', { n: 1, write: true }, { policy: 'untrusted' }); } catch (e) { strict = e.code; }
  let out; try { await chidori.callAgent('../../../etc/passwd'); } catch (e) { out = e.message.includes("inside the calling agent's folder") && !e.message.includes("/a"); }
  return { r, w, strict, out };
};
JS
  chid run --quiet --workspace "$T/ws" --journal "$T/j" "$T/a/main.js"
  assert_status 0
  assert_stdout '{"r":{"doubled":42},"w":{"doubled":2},"strict":"EAGENT","out":true}'
  assert_stderr_has '[sub/child.js] [agent] child sees {"n":21}'
  [[ $(cat "$T/ws/x.txt") == "from child" ]]
  [[ $(grep -c '"kind":"nested"' "$T/j") -eq 3 ]]
  # An untrusted caller cannot hand a callee more than it has.
  rm "$T/ws/x.txt"
  chid run --quiet --untrusted --workspace "$T/ws" "$T/a/main.js"
  assert_status 1
  [[ ! -e $T/ws/x.txt ]]
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout '{"r":{"doubled":42},"w":{"doubled":2},"strict":"EAGENT","out":true}'
}

@test "callAgent: the callee runs in the caller's time zone (--tz passes on)" {
  mkdir -p "$T/a"
  cat >"$T/a/child.js" <<'JS'
module.exports = async () => [new Date(0).getHours(), Intl.DateTimeFormat().resolvedOptions().timeZone];
JS
  cat >"$T/a/main.js" <<'JS'
module.exports = async () => ({ me: new Date(0).getHours(), child: await chidori.callAgent('child.js') });
JS
  chid run --quiet --tz Asia/Tokyo "$T/a/main.js"
  assert_status 0
  assert_stdout '{"me":9,"child":[9,"Asia/Tokyo"]}'
  chid run --quiet "$T/a/main.js"
  assert_stdout '{"me":0,"child":[0,"UTC"]}'
}

@test "a sandboxed tool sees only the variables its env list names" {
  cat >"$T/env.sh" <<'SH'
#!/bin/sh
read -r line
printf '{"token":"%s","secret":"%s","path":"%s"}\n' "${TOOL_TOKEN:-unset}" "${SECRET_X:-unset}" "$PATH"
SH
  chmod +x "$T/env.sh"
  cat >"$T/tools.json" <<JSON
{"envtool": {"command": ["$T/env.sh"], "env": ["TOOL_TOKEN"]},
 "bare": {"command": ["$T/env.sh"]}}
JSON
  agent e.js <<'JS'
module.exports = async () => [await chidori.tool('envtool', {}), await chidori.tool('bare', {})];
JS
  TOOL_TOKEN=t0k SECRET_X=s3cret chid run --quiet --tools "$T/tools.json" "$T/e.js"
  assert_status 0
  assert_stdout '[{"token":"t0k","secret":"unset","path":"/usr/local/bin:/usr/bin:/bin"},{"token":"unset","secret":"unset","path":"/usr/local/bin:/usr/bin:/bin"}]'
}

@test "a tool call given up with an AbortSignal is killed in the parent: its effect never happens; without the signal it runs to its end" {
  chmod 755 "$T"
  mkdir -m 0777 "$T/out"   # the host tool may run as the broker's uid
  cat >"$T/late.sh" <<SH
#!/bin/sh
cat >/dev/null
sleep 2
echo done >"$T/out/marker"
echo '"finished"'
SH
  chmod +x "$T/late.sh"
  for box in true false; do
    printf '{"late": {"command": ["%s"], "sandbox": %s, "timeout_ms": 10000}}\n' "$T/late.sh" "$box" >"$T/late.json"
    agent a.js <<'JS'
module.exports = async function main(input) {
  const ac = new AbortController();
  const t0 = Date.now();
  setTimeout(() => ac.abort(), 200);
  let r;
  try { r = await chidori.tool("late", {}, { signal: input.abort ? ac.signal : undefined }); }
  catch (e) { r = e.name + ":" + e.code; }
  return [r, Date.now() - t0 < 1500];
};
JS
    rm -f "$T/out/marker"
    chid run --quiet --tools "$T/late.json" --input '{"abort":true}' --journal "$T/j.jsonl" "$T/a.js"
    assert_status 0
    assert_stdout '["AbortError:ABORT_ERR",true]'
    sleep 2.5
    [[ ! -e $T/out/marker ]]
    grep -q '"op":"call.cancel"' "$T/j.jsonl"
    chid replay --quiet "$T/j.jsonl"
    assert_status 0
    assert_stdout '["AbortError:ABORT_ERR",true]'
    # The control: the same call without the signal finishes (a boxed tool
    # cannot write the host's folder: the marker is the host tool's only).
    chid run --quiet --tools "$T/late.json" --input '{"abort":false}' "$T/a.js"
    assert_status 0
    assert_stdout '["finished",false]'
    if [[ $box == false ]]; then [[ -e $T/out/marker ]]; fi
  done
}

@test "callAgent given up with an AbortSignal ends the nested run: its later effect never happens; without the signal it does" {
  cat >"$T/child.js" <<'JS'
module.exports = async function main(input) {
  await new Promise(r => setTimeout(r, 1500));
  await chidori.memory.set("mark", input);
  return "child done";
};
JS
  agent a.js <<'JS'
module.exports = async function main(input) {
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 200);
  let r;
  try { r = await chidori.callAgent("child.js", input.tag, { signal: input.abort ? ac.signal : undefined }); }
  catch (e) { r = e.name + ":" + e.code; }
  await new Promise(res => setTimeout(res, 2500));
  return r;
};
JS
  for broker in 1 0; do
    rm -rf "$T/st"
    CHIDORI_RUN_BROKER=$broker chid run --quiet --state-dir "$T/st" --input '{"abort":true,"tag":"x1"}' "$T/a.js"
    assert_status 0
    assert_stdout '"AbortError:ABORT_ERR"'
    chid memory get --state-dir "$T/st" --ns "$T/child.js" mark
    assert_status 1
    CHIDORI_RUN_BROKER=$broker chid run --quiet --state-dir "$T/st" --input '{"abort":false,"tag":"x2"}' "$T/a.js"
    assert_status 0
    assert_stdout '"child done"'
    chid memory get --state-dir "$T/st" --ns "$T/child.js" mark
    assert_status 0
    assert_stdout '"x2"'
  done
}

@test "callAgent of ES module and TypeScript callees: bundled in esbuild's box (while other nested runs go on), replayed exactly; a syntax error is the call's error" {
  cat >"$T/esm.mjs" <<'JS'
import { helper } from './lib.mjs';
export default async function main(input) { return helper(input); }
JS
  echo 'export const helper = (x) => "esm says " + x;' >"$T/lib.mjs"
  echo 'export default async function main(input: string): Promise<string> { const n: number = 2; return input + n; }' >"$T/t.ts"
  echo 'module.exports = async (x) => "plain " + x;' >"$T/plain.js"
  echo 'export default async () => { return ; ) };' >"$T/bad.mjs"
  agent top.js <<'JS'
module.exports = async function main() {
  const a = await chidori.callAgent("esm.mjs", "hi");
  const b = await chidori.callAgent("t.ts", "ts");
  const [c, d] = await Promise.all([chidori.callAgent("esm.mjs", "p1"), chidori.callAgent("plain.js", "x")]);
  let e;
  try { e = await chidori.callAgent("bad.mjs"); } catch (err) { e = err.message; }
  return [a, b, c, d, e];
};
JS
  chid run --quiet --journal "$T/j.jsonl" "$T/top.js"
  assert_status 0
  assert_stdout '["esm says hi","ts2","esm says p1","plain x","callAgent bad.mjs failed: Unexpected \")\" (bad.mjs:1:38)"]'
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '["esm says hi","ts2","esm says p1","plain x","callAgent bad.mjs failed: Unexpected \")\" (bad.mjs:1:38)"]'
}

# The programs between a run and its tool's process, from the host's /proc:
# "exe-basename:argv1" per ancestor below the run's pid, innermost first.
tool_ancestors() {
  local run=$1 p="" chain=""
  for _ in $(seq 200); do
    p=$(pgrep -x -f 'sleep 2.37' | head -1 || true)
    [[ -n $p ]] && break
    sleep 0.05
  done
  [[ -n $p ]] || { echo "no tool process"; return 1; }
  p=$(awk '{print $4}' "/proc/$p/stat")
  while [[ -n $p && $p != "$run" && $p -gt 1 ]]; do
    local exe arg1
    exe=$(basename "$(readlink "/proc/$p/exe" 2>/dev/null || echo '?')")
    arg1=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n 2p)
    chain+="$exe:$arg1 "
    p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
  done
  [[ $p == "$run" ]] || { echo "the tool is not below the run ($chain)"; return 1; }
  echo "$chain"
}

@test "a tool starts with no chidori binary running privileged: the monitor forks its launcher (one-process: chidori launch)" {
  [[ $(id -u) == 0 ]] || skip "needs root (the broker's uid for the host tool)"
  tools_file
  chmod 755 "$T"
  agent w.js <<'JS'
module.exports = async (which) => chidori.tool(which, {});
JS
  for which in wait wait_host; do
    "$CHIDORI" run --quiet --tools "$T/tools.json" --input "\"$which\"" "$T/w.js" >"$T/out" 2>"$T/err" &
    run_pid=$!
    chain=$(tool_ancestors "$run_pid") || { kill "$run_pid"; echo "$chain"; return 1; }
    wait "$run_pid" || { echo "run failed: $(cat "$T/err")"; return 1; }
    [[ $(cat "$T/out") == 1 ]]
    echo "$which through the broker: $chain"
    [[ $chain == *chidori-monitor:* ]]
    [[ $chain != *"chidori:"* ]]
  done
  # The same probe sees chidori launch / _host-tool in the one-process run.
  CHIDORI_RUN_BROKER=0 "$CHIDORI" run --quiet --tools "$T/tools.json" --input '"wait"' "$T/w.js" >"$T/out" 2>"$T/err" &
  run_pid=$!
  chain=$(tool_ancestors "$run_pid") || { kill "$run_pid"; echo "$chain"; return 1; }
  wait "$run_pid"
  echo "one process: $chain"
  [[ $chain == *"chidori:launch"* ]]
}

@test "callAgent: a callee's error is shown at its place in its own file (a TypeScript callee through its source map), both parents" {
  mkdir -p "$T/sub"
  cat >"$T/sub/callee.ts" <<'TS'
interface X { a: number }
export default async function main(input: X): Promise<number> {
  const y: number = input.a;
  if (y > 0) throw new TypeError("bad " + y);
  return y;
}
TS
  agent top.js <<'JS'
module.exports = async () => chidori.callAgent('./sub/callee.ts', { a: 1 }).catch((e) => e.message);
JS
  for b in 1 0; do
    CHIDORI_RUN_BROKER=$b chid run --quiet "$T/top.js"
    assert_status 0
    assert_stdout '"callAgent ./sub/callee.ts failed: TypeError: bad 1"'
    [[ $stderr == *"[./sub/callee.ts] chidori: agent error: TypeError: bad 1 (at callee.ts:4:24)"* ]] || { echo "$b: $stderr"; false; }
    [[ $stderr == *"[./sub/callee.ts]     at main@callee.ts:4:24"* ]] || { echo "$b: $stderr"; false; }
  done
}
