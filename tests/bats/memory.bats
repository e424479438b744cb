#!/usr/bin/env bats
# `chidori memory list|get|delete|clear`: the store behind chidori.memory,
# from outside a run (issue 15, item 5).
load helpers

# A run that stores what the test needs, in the agent's own namespace.
store() {
  cat >"$T/agent.js" <<'JS'
async function main(input) {
  for (const [k, v] of Object.entries(input)) await chidori.memory.set(k, v);
  return (await chidori.memory.list()).length;
}
JS
  chid run --quiet "$T/agent.js" --input "$1"
  assert_status 0
}

@test "memory list and get show what an agent stored, by its path, as run uses it" {
  store '{"b":{"x":[1,2.5,"s"]},"a":"text","c":null}'
  chid memory list "$T/agent.js"
  assert_status 0
  assert_stdout $'a\nb\nc'
  chid memory get "$T/agent.js" b
  assert_status 0
  assert_stdout '{"x":[1,2.5,"s"]}'
  chid memory get "$T/agent.js" c
  assert_stdout 'null'
  # The same namespace by name; a relative path resolves like run's.
  chid memory list --ns "$(realpath "$T/agent.js")" --prefix b
  assert_stdout 'b'
  (cd "$T" && "$CHIDORI" memory get agent.js a) >"$T/out"
  [[ $(cat "$T/out") == '"text"' ]]
  # --state-dir: where run kept it.
  chid run --quiet --state-dir "$T/elsewhere" --memory-ns shared "$T/agent.js" --input '{"k":1}'
  chid memory list --state-dir "$T/elsewhere" --ns shared
  assert_stdout 'k'
  chid memory list --ns shared
  assert_stdout ''
}

@test "memory get/delete of a missing key exit 1; delete and clear remove; clear needs --yes" {
  store '{"a":1,"b":2,"c":3}'
  chid memory get "$T/agent.js" nope
  assert_status 1
  assert_stderr_has "chidori: memory: no key 'nope' in namespace '$(realpath "$T/agent.js")'"
  chid memory delete "$T/agent.js" b
  assert_status 0
  chid memory delete "$T/agent.js" b
  assert_status 1
  chid memory list "$T/agent.js"
  assert_stdout $'a\nc'
  chid memory clear "$T/agent.js"
  assert_status 2
  assert_stderr_has "clear removes every key of the namespace: add --yes to do it"
  chid memory list "$T/agent.js"
  assert_stdout $'a\nc'
  chid memory clear --yes "$T/agent.js"
  assert_status 0
  assert_stderr_has "chidori: memory: cleared 2 keys from '$(realpath "$T/agent.js")'"
  chid memory list "$T/agent.js"
  assert_status 0
  assert_stdout ''
  # The agent sees the same: nothing left.
  echo 'async function main(){ return await chidori.memory.list() }' >"$T/agent.js.list"
  chid run --quiet --memory-ns "$(realpath "$T/agent.js")" "$T/agent.js.list"
  assert_stdout '[]'
}

@test "memory: keys and values an agent wrote cannot drive the terminal" {
  cat >"$T/agent.js" <<'JS'
async function main() {
  await chidori.memory.set("evil\u001b]0;owned\u0007\nkey\\", "v\u001b[2J\u009b31m\u007f");
  return 1;
}
JS
  chid run --quiet "$T/agent.js"
  assert_status 0
  chid memory list "$T/agent.js"
  assert_status 0
  assert_stdout 'evil\x1b]0;owned\x07\x0akey\x5c'
  chid memory get "$T/agent.js" "$(printf 'evil\033]0;owned\007\nkey\\')"
  assert_status 0
  # The same JSON value, with the controls escaped.
  assert_stdout '"v\u001b[2J\u009b31m\u007f"'
  [[ $output != *$'\e'* ]]
}

@test "memory does not create a store to say it is empty; usage errors exit 2" {
  chid memory list --ns anything
  assert_status 0
  assert_stdout ''
  chid memory get --ns anything k
  assert_status 1
  [[ ! -e $XDG_STATE_HOME/chidori ]]
  chid memory
  assert_status 2
  assert_stderr_has "no action given (list, get, delete or clear)"
  chid memory lsit --ns x
  assert_status 2
  assert_stderr_has "unknown action 'lsit'; did you mean 'list'?"
  chid memory list
  assert_status 2
  assert_stderr_has "name the agent (its path) or the namespace (--ns NAMESPACE)"
  chid memory get --ns x
  assert_status 2
  assert_stderr_has "get: which key?"
  chid memory list --ns x extra
  assert_status 2
  assert_stderr_has "unexpected argument 'extra' (--ns names the namespace: give no AGENT)"
  chid memory list "$T/no-such-agent.js"
  assert_status 2
  assert_stderr_has "agent file '$T/no-such-agent.js': No such file or directory"
  chid memory --help
  assert_status 0
  [[ $output == *"Usage: chidori memory list"*"--state-dir DIR"*"--ns NAMESPACE"*"--yes"* ]]
  chid --help
  [[ $output == *"memory ACTION"* ]]
}

# The parent's read cache of memory.get (effects/memory/memstore.c) is
# dropped by any write to the store: a nested agent's on the same
# connection, another run's in another process.  Each read below follows
# a read of the same key that could have been cached.
@test "memory.get after a nested agent wrote the same key sees its value" {
  agent self.js <<'JS'
async function main(input) {
  if (input === 'child') { await chidori.memory.set('k', 'from child'); return 'child done'; }
  await chidori.memory.set('k', 'from parent');
  const before = [await chidori.memory.get('k'), await chidori.memory.get('k')];
  const child = await chidori.callAgent('self.js', 'child');
  return [before, child, await chidori.memory.get('k'), await chidori.memory.get('k')];
}
JS
  chid run --quiet "$T/self.js"  # a nested run's namespace is its path: the same
  assert_status 0
  assert_stdout '[["from parent","from parent"],"child done","from child","from child"]'
}

@test "memory.get in a run sees a key another run of the namespace writes meanwhile" {
  agent reader.js <<'JS'
async function main() {
  await chidori.memory.set('ready', 1);
  const t0 = Date.now();
  while (Date.now() - t0 < 20000) {
    if ((await chidori.memory.get('flag')) === 'go')
      return 'saw go';
  }
  return 'never saw go';
}
JS
  agent writer.js <<'JS'
async function main() {
  const t0 = Date.now();
  while ((await chidori.memory.get('ready')) !== 1)
    if (Date.now() - t0 > 20000) return 'reader never started';
  await chidori.memory.set('flag', 'go');
  return 'wrote';
}
JS
  "$CHIDORI" run --quiet --memory-ns shared "$T/reader.js" >"$T/reader.out" 2>&1 &
  local pid=$!
  chid run --quiet --memory-ns shared "$T/writer.js"
  wait "$pid"
  assert_status 0
  assert_stdout '"wrote"'
  [[ $(cat "$T/reader.out") == '"saw go"' ]] || { cat "$T/reader.out"; return 1; }
}
