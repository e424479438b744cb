#!/usr/bin/env bats
# The Node/Web surface agents expect (issue 18, item 2): the node: modules,
# Buffer, EventTarget, Blob/File/FormData, WHATWG streams, setImmediate,
# process and navigator (engine/node/, engine/prelude.js; docs/api.md).
# node is the oracle: tests/surface/*.js run under chidori and under node and
# the JSON they return must be the same, byte for byte.
load helpers

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-surface.XXXXXX)
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

# same_as_node FILE: `chidori run FILE` prints what node prints for it.
same_as_node() {
  local f=$BATS_TEST_DIRNAME/../surface/$1 want
  if [[ $1 == *.mjs ]]; then
    want=$(node --input-type=module -e "import m from '$f'; console.log(JSON.stringify(await m()))")
  else
    want=$(node -e "require('$f')().then((v) => console.log(JSON.stringify(v)))")
  fi
  chid run --quiet "$f"
  assert_status 0
  if [[ $output != "$want" ]]; then
    echo "chidori: $output"; echo "node:    $want"; return 1
  fi
}

@test "surface: the node: modules (require, node:x and x) give what node gives" {
  same_as_node modules.js
}

@test "surface: Buffer, EventTarget, Blob/File/FormData, streams, setImmediate give what node gives" {
  same_as_node globals.js
}

@test "surface: ES-module imports of node:x and x (default, named, namespace, subpaths) give what node gives" {
  same_as_node esm.mjs
}

@test "surface: a node: module chidori lacks still names what it provides" {
  agent a.js <<'JS'
module.exports = () => { try { require('node:zlib'); } catch (e) { return [e.code, e.message]; } };
JS
  chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout "[\"MODULE_NOT_FOUND\",\"Cannot find module 'node:zlib': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)\"]"
}

@test "surface: process: empty env, argv, platform, versions, cwd; navigator" {
  agent p.js <<'JS'
module.exports = () => [Object.keys(process.env), process.env.HOME, process.env.PATH, process.argv, process.platform,
  process.version, process.versions.node, process.versions.chidori, process.cwd(), process.title, typeof process.pid,
  navigator.userAgent, navigator.hardwareConcurrency, navigator.language, String(process)];
JS
  HOME=/root PATH=/usr/bin SECRET=x chid run --quiet "$T/p.js"
  assert_status 0
  version=$("$CHIDORI" --version | awk '{print $2}')
  assert_stdout "[[],null,null,[\"chidori\",\"p.js\"],\"linux\",\"v22.12.0\",\"22.12.0\",\"$version\",\"/\",\"chidori\",\"number\",\"chidori/$version\",1,\"en-US\",\"[object process]\"]"
}

@test "surface: process.exit(0) ends the run at once, cleanly" {
  agent e.js <<'JS'
module.exports = async () => {
  process.on('exit', (c) => console.log('exit event', c));
  setTimeout(() => console.log('a timer after exit: must not run'), 1);
  try { process.exit(); } catch (e) { console.log('caught: must not happen'); }
  console.log('after exit: must not run');
  return 'not returned';
};
JS
  chid run "$T/e.js"
  assert_status 0
  assert_stdout "null"
  assert_stderr_has "exit event 0"
  [[ $stderr != *"must not"* ]] || { echo "$stderr"; return 1; }
}

@test "surface: process.exit(n) and process.exitCode: a non-zero code ends the run with that exit status, naming it" {
  agent e.js <<'JS'
module.exports = async () => { await null; process.exitCode = 4; process.exit(); };
JS
  chid run --quiet "$T/e.js"
  assert_status 4
  assert_stdout ""
  assert_stderr_has "chidori: agent called process.exit(4)"
  [[ $stderr != *"agent error"* ]] || { echo "$stderr"; return 1; }
  # --json: the outcome document says so, with the code.
  chid run --quiet --json "$T/e.js"
  assert_status 4
  [[ $output == *'"exit":4'* && $output == *'process.exit(4)'* ]] || { echo "$output"; return 1; }
  # 255 is the largest; replay ends the same way.
  agent e255.js <<'JS'
module.exports = () => process.exit(255);
JS
  chid run --quiet --journal "$T/j255" "$T/e255.js"
  assert_status 255
  chid replay --quiet "$T/j255"
  assert_status 255
  assert_stderr_has "chidori: agent called process.exit(255)"
  agent bad.js <<'JS'
module.exports = () => process.exit(1.5);
JS
  chid run --quiet "$T/bad.js"
  assert_status 1
  assert_stderr_has "RangeError: process.exit: the code must be an integer from 0 to 255, got 1.5"
}

@test "surface: nextTick callbacks run in one microtask queued by the first (nested ones too); an exception in one ends the run" {
  agent t.js <<'JS'
module.exports = async () => {
  const order = [];
  Promise.resolve().then(() => order.push('p1'));
  process.nextTick((a, b) => order.push('t1 ' + a + b), 'x', 'y');
  process.nextTick(() => { order.push('t2'); process.nextTick(() => order.push('t3 (nested)')); });
  queueMicrotask(() => order.push('m1'));
  await new Promise((r) => setImmediate(r));
  return order;
};
JS
  chid run --quiet "$T/t.js"
  assert_status 0
  assert_stdout '["p1","t1 xy","t2","t3 (nested)","m1"]'
  agent x.js <<'JS'
module.exports = () => new Promise(() => process.nextTick(() => { throw new Error('in a tick'); }));
JS
  chid run --quiet "$T/x.js"
  assert_status 1
  assert_stderr_has "agent error: Error: in a tick"
}

@test "surface: nothing of it is loaded until touched; a global replaces itself with its value" {
  agent l.js <<'JS'
module.exports = () => {
  const names = ['Buffer', 'EventTarget', 'Blob', 'FormData', 'ReadableStream', 'TextDecoderStream', 'process'];
  const before = names.map((n) => typeof Object.getOwnPropertyDescriptor(globalThis, n).get);
  const B = Buffer;
  const after = names.map((n) => typeof Object.getOwnPropertyDescriptor(globalThis, n).get);
  globalThis.Blob = 1;  // assignable, as in browsers and Node
  return [before, after, B === require('buffer').Buffer, Blob, Object.keys(globalThis).includes('Buffer')];
};
JS
  chid run --quiet "$T/l.js"
  assert_status 0
  assert_stdout '[["function","function","function","function","function","function","function"],["undefined","function","function","function","function","function","function"],true,1,false]'
}

@test "surface: node:fs read of a relative path not in the VFS says how to reach host files" {
  agent f.js <<'JS'
module.exports = () => require('node:fs').readFileSync('data.csv', 'utf8');
JS
  chid run --quiet "$T/f.js"
  assert_status 1
  assert_stderr_has "agent error: Error: ENOENT: no such file or directory, open 'data.csv' (node:fs is the run's own in-memory file system, empty at start; files of the host are reached with chidori.workspace.read(path) when the run has --workspace DIR)"
}

@test "surface: fetch sends Blob, File and FormData bodies (multipart/form-data), reads formData() back" {
  agent f.js <<JS
module.exports = async () => {
  const url = 'http://127.0.0.1:$P/echo';
  const echo = async (body) => {
    const j = await (await fetch(url, { method: 'POST', body })).json();
    return [j.headers['content-type'] || null, atob(j.body_base64)];
  };
  const fd = new FormData();
  fd.append('name', 'a "b"\nc');
  fd.append('file', new File(['file body'], 'f.txt', { type: 'text/plain' }));
  fd.append('blob', new Blob([new Uint8Array([0, 255])]));
  const [ct, text] = await echo(fd);
  const boundary = ct.split('boundary=')[1];
  const raw = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const back = await new Response(raw, { headers: { 'content-type': ct } }).formData();
  return [await echo(new Blob(['blob'], { type: 'application/x-thing' })), await echo(new Blob(['untyped'])),
    ct.startsWith('multipart/form-data; boundary='), text.split(boundary).length, text.split('\r\n').slice(0, 4),
    back.get('name'), back.get('file').name, await back.get('file').text(), back.get('blob').name,
    [...new Uint8Array(await back.get('blob').arrayBuffer())]];
};
JS
  chid run --quiet --allow-host "127.0.0.1:$P" "$T/f.js"
  assert_status 0
  [[ $output == '[["application/x-thing","blob"],[null,"untyped"],true,5,["--'*'","Content-Disposition: form-data; name=\"name\"","","a \"b\""],"a \"b\"\r\nc","f.txt","file body","blob",[0,255]]' ]] ||
    { echo "got: $output"; echo "$stderr"; return 1; }
}

@test "surface: --env NAME and CHIDORI_ENV pass variables to process.env; the journal keeps them for replay" {
  agent e.js <<'JS'
module.exports = () => [process.env, Object.keys(process.env)];
JS
  FOO=bar BAZ='a b' OTHER=no chid run --quiet --env FOO --env BAZ --journal "$T/j.jsonl" "$T/e.js"
  assert_status 0
  assert_stdout '[{"FOO":"bar","BAZ":"a b"},["FOO","BAZ"]]'
  # replay hands the agent the recorded values, whatever this environment has
  FOO=changed chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '[{"FOO":"bar","BAZ":"a b"},["FOO","BAZ"]]'
  FOO=1 BAZ=2 CHIDORI_ENV=FOO,BAZ chid run --quiet "$T/e.js"
  assert_status 0
  assert_stdout '[{"FOO":"1","BAZ":"2"},["FOO","BAZ"]]'
  # a process.env the agent changes is its own
  agent w.js <<'JS'
module.exports = () => { process.env.X = '1'; delete process.env.FOO; return process.env; };
JS
  FOO=1 chid run --quiet --env FOO "$T/w.js"
  assert_status 0
  assert_stdout '{"X":"1"}'
}

@test "surface: --env and CHIDORI_ENV: a bad name or a variable that is not set is a usage error naming it" {
  agent e.js <<'JS'
module.exports = () => process.env;
JS
  chid run --quiet --env 1X "$T/e.js"
  assert_status 2
  assert_stderr_has "chidori: --env '1X' is not a variable name (expected letters, digits and _, not starting with a digit)"
  unset NOT_SET_HERE
  chid run --quiet --env NOT_SET_HERE "$T/e.js"
  assert_status 2
  assert_stderr_has "chidori: --env NOT_SET_HERE: the variable is not set in this environment (set it, or do not pass it)"
  CHIDORI_ENV='HOME,A-B' chid run --quiet "$T/e.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_ENV: 'A-B' is not a variable name"
  CHIDORI_ENV='NOT_SET_HERE' chid run --quiet "$T/e.js"
  assert_status 2
  assert_stderr_has "chidori: CHIDORI_ENV: NOT_SET_HERE: the variable is not set in this environment"
  chid run --help
  assert_status 0
  [[ $output == *"--env NAME"*"[CHIDORI_ENV=NAME,NAME...]"* ]]
}

@test "surface: fetch's Response.body is a ReadableStream read in chunks; a ReadableStream is a body (upload, Response)" {
  agent s.js <<JS
module.exports = async () => {
  const res = await fetch('http://127.0.0.1:$P/bytes?n=200000');
  const reader = res.body.getReader();
  const sizes = [];
  let ok = true, i = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    sizes.push(value.length);
    for (const b of value) ok = ok && b === (i++ % 251);
  }
  const up = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode('streamed ')); c.enqueue(new TextEncoder().encode('upload')); c.close(); } });
  const echo = await (await fetch('http://127.0.0.1:$P/echo', { method: 'POST', body: up, duplex: 'half' })).json();
  const text = await (await fetch('http://127.0.0.1:$P/text?s=h%C3%A9llo')).body.pipeThrough(new TextDecoderStream()).getReader().read();
  const res2 = await fetch('http://127.0.0.1:$P/text?s=once');
  const b = res2.body;
  await b.getReader().read();
  let again;
  try { await res2.text(); } catch (e) { again = e.name; }
  // The pieces are what arrived (the parent streams the body, at most 1 MiB a read).
  return [[sizes.length > 0, sizes.every((n) => n > 0 && n <= 1048576)], ok, i, res.bodyUsed, atob(echo.body_base64), text.value, res2.bodyUsed, again,
    Object.prototype.toString.call(b), b instanceof ReadableStream];
};
JS
  chid run --quiet --allow-host "127.0.0.1:$P" "$T/s.js"
  assert_status 0
  assert_stdout '[[true,true],true,200000,true,"streamed upload","héllo",true,"TypeError","[object ReadableStream]",true]'
}

@test "surface: --env and CHIDORI_ENV are the top run's: a nested agent (callAgent) gets an empty process.env" {
  agent callee.js <<'JS'
module.exports = () => process.env;
JS
  agent caller.js <<'JS'
module.exports = async () => [process.env, await chidori.callAgent('./callee.js', null)];
JS
  FOO=1 CHIDORI_ENV=FOO chid run --quiet "$T/caller.js"
  assert_status 0
  assert_stdout '[{"FOO":"1"},{}]'
  FOO=1 chid run --quiet --env FOO "$T/caller.js"
  assert_status 0
  assert_stdout '[{"FOO":"1"},{}]'
}
