#!/usr/bin/env bats
# chidori.workspace.* end to end: the directory given with --workspace, the
# traversal battery through the binary, the policy gate, replay.
load helpers

setup() {
  T=$(mktemp -d /tmp/chidori-bats.XXXXXX)
  export XDG_STATE_HOME="$T/state"
  unset CHIDORI_ISOLATE CHIDORI_JS_DEADLINE_MS CHIDORI_ISOLATE_DEADLINE_MS CHIDORI_WORKER CHIDORI_WORKSPACE
  mkdir -p "$T/ws/docs" "$T/outside"
  echo "inside" >"$T/ws/docs/a.txt"
  echo "SECRET" >"$T/outside/secret.txt"
  ln -s ../../outside/secret.txt "$T/ws/docs/escape"
  ln -s /etc/passwd "$T/ws/abs-link"
  ln -s docs "$T/ws/docs-link"
  ln -s "$T/outside" "$T/ws/dir-out"
}

@test "list, read, write, delete and manifest work on the --workspace directory" {
  agent w.js <<'JS'
module.exports = async () => {
  const ws = chidori.workspace;
  await ws.write('new/dir/b.txt', 'héllo');
  await ws.write('bin.dat', new Uint8Array([0, 255, 10, 13]));
  const r = {
    list: (await ws.list('docs')).map((e) => e.name + ':' + e.type),
    text: await ws.read('new/dir/b.txt'),
    bytes: Array.from(await ws.read('bin.dat', 'bytes')),
    viaLink: await ws.read('docs-link/a.txt'),
  };
  r.deleted = [await ws.delete('bin.dat'), await ws.delete('bin.dat')];
  r.manifest = (await ws.manifest()).map((f) => f.path + ' ' + f.size + ' ' + f.sha256.slice(0, 8));
  return r;
};
JS
  chid run --quiet --workspace "$T/ws" "$T/w.js"
  assert_status 0
  [[ $output == *'"list":["a.txt:file","escape:symlink"]'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"text":"héllo"'*'"bytes":[0,255,10,13]'*'"viaLink":"inside\n"'*'"deleted":[true,false]'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"docs/a.txt 7 '*'"new/dir/b.txt 6 '* ]] || { echo "$output"; return 1; }
  [[ $(cat "$T/ws/new/dir/b.txt") == "héllo" ]]
}

@test "without --workspace the calls fail with 'no workspace configured'" {
  agent n.js <<'JS'
module.exports = async () => chidori.workspace.list();
JS
  chid run --quiet "$T/n.js"
  assert_status 1
  assert_stderr_has "no workspace configured (start chidori with --workspace DIR)"
  # ... with a code the agent can test (it was an empty string)
  agent c.js <<'JS'
module.exports = async () => { try { await chidori.workspace.read("x"); } catch (e) { return e.code; } };
JS
  chid run --quiet "$T/c.js"
  assert_status 0
  assert_stdout '"no_workspace"'
}

@test "--workspace that is not a directory is a usage error" {
  agent n.js <<'JS'
module.exports = async () => 1;
JS
  chid run --quiet --workspace "$T/nope" "$T/n.js"
  assert_status 2
  assert_stderr_has "--workspace $T/nope"
}

@test "traversal battery: 20 hostile paths, none reaches outside the workspace" {
  agent t.js <<'JS'
module.exports = async () => {
  const paths = ['../outside/secret.txt', '../../etc/passwd', '/etc/passwd', 'docs/../../outside/secret.txt',
    'docs/escape', 'abs-link', 'dir-out/secret.txt', 'docs/./../../outside/secret.txt', './../outside/secret.txt',
    'docs//../../outside/secret.txt', '..', '/', '/proc/self/environ', 'docs-link/../../outside/secret.txt',
    '....//outside/secret.txt', 'docs/..%2F..%2Foutside/secret.txt', '/proc/self/root/etc/passwd',
    'dir-out/../outside/secret.txt', '../' + 'a/'.repeat(30) + '../'.repeat(31) + 'outside/secret.txt', 'x\u0000/../../etc/passwd'];
  const out = [];
  for (const p of paths) {
    let read, write;
    try { read = 'READ ' + await chidori.workspace.read(p); } catch (e) { read = 'refused'; }
    try { await chidori.workspace.write(p, 'pwned'); write = 'WROTE'; } catch (e) { write = 'refused'; }
    out.push(read + '/' + write);
  }
  return out;
};
JS
  chid run --quiet --workspace "$T/ws/docs/.." "$T/t.js"
  assert_status 0
  [[ $output != *SECRET* && $output != *root:* ]] || { echo "$output"; return 1; }
  [[ $(cat "$T/outside/secret.txt") == SECRET ]]
  [[ ! -e $T/pwned && ! -e /tmp/pwned ]]
  [[ $(grep -rl pwned "$T/outside" /etc/passwd 2>/dev/null | wc -l) -eq 0 ]]
  # The harmless-looking ones are plain names inside the root, written there.
  echo "$output" | jq -e 'length == 20' >/dev/null
}

@test "a symlink swapped in while calls run never leads out" {
  agent s.js <<'JS'
module.exports = async () => {
  let leaked = 0, ok = 0;
  for (let i = 0; i < 300; i++) {
    try { const t = await chidori.workspace.read('swap/secret.txt'); if (t.includes('SECRET')) leaked++; else ok++; } catch (e) { ok++; }
  }
  return { leaked, ok };
};
JS
  mkdir -p "$T/ws/swapdir"; echo "fine" >"$T/ws/swapdir/secret.txt"
  ( for _ in $(seq 3000); do ln -sfn swapdir "$T/ws/swap"; ln -sfn "$T/outside" "$T/ws/swap"; done ) &
  swapper=$!
  chid run --quiet --workspace "$T/ws" "$T/s.js"
  kill $swapper 2>/dev/null || true; wait $swapper 2>/dev/null || true
  assert_status 0
  [[ $output == *'"leaked":0'* ]] || { echo "$output"; return 1; }
}

@test "the untrusted profile allows reading the workspace and denies writing and deleting" {
  agent u.js <<'JS'
module.exports = async () => {
  const r = [await chidori.workspace.read('docs/a.txt')];
  for (const f of [() => chidori.workspace.write('x.txt', 'x'), () => chidori.workspace.delete('docs/a.txt')]) {
    try { await f(); r.push('done'); } catch (e) { r.push(e.code + ': ' + e.message.split(' denied')[0] + ' denied'); }
  }
  return r;
};
JS
  chid run --quiet --untrusted --workspace "$T/ws" --journal "$T/j" "$T/u.js"
  assert_status 0
  assert_stdout '["inside\n","EPOLICY: policy: `workspace:write` denied","EPOLICY: policy: `workspace:delete` denied"]'
  assert_stderr_has 'policy: `workspace:write` denied'
  [[ ! -e $T/ws/x.txt && -e $T/ws/docs/a.txt ]]
  [[ $(grep -c '"type":"note","kind":"denied"' "$T/j") -eq 2 ]]
  # Replay reproduces the run, denials included, without the workspace.
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout '["inside\n","EPOLICY: policy: `workspace:write` denied","EPOLICY: policy: `workspace:delete` denied"]'
}

@test "a policy file decides per path with match_args" {
  cat >"$T/p.json" <<'POL'
{"rules": [{"target": "workspace:write", "decision": "always_allow", "match_args": {"path": "out/"}},
           {"target": "workspace:write", "decision": "never_allow", "reason": "only out/ is writable"}],
 "default": "always_allow"}
POL
  agent m.js <<'JS'
module.exports = async () => {
  await chidori.workspace.write('out/r.txt', 'ok');
  try { await chidori.workspace.write('docs/a.txt', 'no'); return 'overwrote'; } catch (e) { return e.message; }
};
JS
  CHIDORI_POLICY_FILE="$T/p.json" chid run --quiet --workspace "$T/ws" "$T/m.js"
  assert_status 0
  assert_stdout '"policy: `workspace:write` denied: only out/ is writable"'
  [[ $(cat "$T/ws/out/r.txt") == ok && $(cat "$T/ws/docs/a.txt") == inside ]]
}
