#!/usr/bin/env bats
# The command line as a new user meets it (issue 15, item 5): options that
# are misspelt, sizes, files the run writes or creates, limits too low to
# start, stdin, --json for usage errors, a result too large for a frame.
load helpers

one() { echo 'function main(){return 1}' >"$T/a.js"; }

# ---- unknown options suggest the nearest ----

@test "unknown options name the nearest real one, in every command" {
  one
  chid run --jounral x.jsonl "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: unknown option '--jounral'; did you mean '--journal'?"
  assert_stderr_has "Try 'chidori run --help'."
  chid run --qiet "$T/a.js"
  assert_status 2
  assert_stderr_has "unknown option '--qiet'; did you mean '--quiet'?"
  chid replay --agnet "$T/a.js" "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "unknown option '--agnet'; did you mean '--agent'?"
  assert_stderr_has "Try 'chidori replay --help'."
  chid launch --ro-bnid /usr -- /bin/true
  assert_status 2
  assert_stderr_has "unknown option '--ro-bnid'; did you mean '--ro-bind'?"
  chid doctor --seccomp-tabel
  assert_status 2
  assert_stderr_has "unknown option '--seccomp-tabel'; did you mean '--seccomp-table'?"
  chid memory --stat-dir "$T/s" list --ns x
  assert_status 2
  assert_stderr_has "unknown option '--stat-dir'; did you mean '--state-dir'?"
  chid rnu "$T/a.js"
  assert_status 2
  assert_stderr_has "unknown command 'rnu'; did you mean 'run'?"
}

@test "an option nothing is close to is named without a guess; other option mistakes say what they are" {
  one
  chid run --frobnicate "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: unknown option '--frobnicate'"
  [[ $stderr != *"did you mean"* ]]
  chid run --j "$T/a.js"
  assert_status 2
  assert_stderr_has "option '--j' is ambiguous: it abbreviates --journal, --js-deadline, --json, --jit"
  chid run --json=yes "$T/a.js"
  assert_status 2
  assert_stderr_has "option '--json' takes no value (got '--json=yes')"
  chid run "$T/a.js" --journal
  assert_status 2
  assert_stderr_has "option '--journal' needs a value"
  chid run -x "$T/a.js"
  assert_status 2
  assert_stderr_has "unknown option '-x'"
  # An escape in the misspelt option reaches the terminal escaped.
  chid run "$(printf -- '--jour\033[2Jnal')" "$T/a.js"
  assert_status 2
  assert_stderr_has "unknown option '--jour\\x1b[2Jnal'"
}

# ---- --json also for usage errors ----

@test "--json: a usage error is JSON on stdout too, exit 2" {
  one
  chid run --json --jounral x "$T/a.js"
  assert_status 2
  assert_stdout '{"ok":false,"error":{"name":"UsageError","message":"unknown option '"'"'--jounral'"'"'; did you mean '"'"'--journal'"'"'?"},"exit":2}'
  assert_stderr_has "did you mean '--journal'?" # stderr says it as well
  chid run --json --memory 1X "$T/a.js"
  assert_status 2
  [[ $output == '{"ok":false,"error":{"name":"UsageError","message":"--memory: bad size suffix in '"'"'1X'"'"' (use K, M, G or T)"},"exit":2}' ]] || { echo "$output"; false; }
  chid run "$T/nope.js" --json
  assert_status 2
  [[ $output == '{"ok":false,"error":{"name":"UsageError","message":"agent file '"'$T/nope.js'"' not found: No such file or directory"},"exit":2}' ]] || { echo "$output"; false; }
  chid replay --json "$T/no-journal.jsonl"
  assert_status 2
  [[ $output == '{"ok":false,"error":{"name":"UsageError","message":"replay: '* ]] || { echo "$output"; false; }
  # --no-isolate leaves through its own exit path: the same JSON.
  chid run --no-isolate --json --input '{' "$T/a.js"
  assert_status 2
  [[ $output == '{"ok":false,"error":{"name":"UsageError","message":"--input is not valid JSON (line 1, column 2): '* ]] || { echo "$output"; false; }
  # Without --json, stdout stays empty; a run's own --json output is unchanged.
  chid run --jounral x "$T/a.js"
  [[ -z $output ]]
  chid run --quiet --json "$T/a.js"
  assert_status 0
  [[ $output == '{"ok":true,"value":1,"exit":0,'* ]] || { echo "$output"; false; }
}

# ---- sizes ----

@test "every size option takes 1M, 512K, 1G and plain bytes alike; CHIDORI_JS_MEM_CAP_MB stays MiB" {
  one
  local -A bytes=([1M]=1048576 [512K]=524288 [1G]=1073741824 [4096]=4096)
  for v in 1M 512K 1G 4096; do
    chid launch --quiet --fsize "$v" -- "$BUILD_DIR/probes/probe" rlimits
    assert_status 0
    [[ $output == *"fsize=${bytes[$v]}/${bytes[$v]}"* ]] || { echo "--fsize $v: $output"; false; }
  done
  # (a box needs a few MiB to start: larger values, the same four forms)
  local -A shown=([64M]=64M [65536K]=64M [1G]=1G [268435456]=256M)
  for v in 64M 65536K 1G 268435456; do
    chid launch --memory "$v" -- /bin/true
    assert_status 0
    [[ $stderr == *"memory.limit_in_bytes=${shown[$v]} "* || $stderr == *"memory.max=${shown[$v]} "* ]] \
      || { echo "--memory $v: $stderr"; false; }
  done
  for v in 1M 512K 4096; do
    chid run --quiet --http-max-response "$v" "$T/a.js"
    assert_status 0
    CHIDORI_HTTP_MAX_RESPONSE=$v chid run --quiet "$T/a.js"
    assert_status 0
  done
  # 1G parses, and is refused for what it is: larger than a frame.
  chid run --quiet --http-max-response 1G "$T/a.js"
  assert_status 2
  assert_stderr_has "--http-max-response '1G': expected a size from 1 byte to 48M"
  # The same malformed value, the same message, whatever the option.
  for o in --fsize --memory --http-max-response; do
    chid run --quiet "$o" 1X "$T/a.js"
    assert_status 2
    assert_stderr_has "chidori: $o: bad size suffix in '1X' (use K, M, G or T)"
  done
  # The variable named in MiB takes a number of MiB, and says so otherwise.
  CHIDORI_JS_MEM_CAP_MB=256 chid launch -- /bin/true
  assert_status 0
  [[ $stderr == *"=256M pids.max"* ]] || { echo "$stderr"; false; }
  CHIDORI_JS_MEM_CAP_MB=256M chid launch -- /bin/true
  assert_status 2
  assert_stderr_has "CHIDORI_JS_MEM_CAP_MB='256M' is not a number of MiB (for a size such as 1G, use --memory)"
}

# ---- --journal does not overwrite what is not a journal ----

@test "--journal refuses a file that is not a journal unless --force; a journal is replaced" {
  one
  echo "my notes, not a journal" >"$T/notes.txt"
  chid run --quiet --journal "$T/notes.txt" "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: --journal '$T/notes.txt' exists and is not a chidori journal (its first line is not a journal header); refusing to overwrite it: choose another file, or add --force to replace it"
  [[ $(cat "$T/notes.txt") == "my notes, not a journal" ]]
  [[ -z $output ]] # the agent did not run
  chid run --quiet --journal "$T/notes.txt" --force "$T/a.js"
  assert_status 0
  [[ $(head -c 16 "$T/notes.txt") == '{"type":"header"' ]]
  # Now it is a journal: the next run replaces it without --force.
  old=$(head -n 1 "$T/notes.txt")
  chid run --quiet --journal "$T/notes.txt" "$T/a.js"
  assert_status 0
  [[ $(head -n 1 "$T/notes.txt") != "$old" ]]
  # New files, empty files (mktemp) and devices are fine.
  : >"$T/empty.jsonl"
  chid run --quiet --journal "$T/empty.jsonl" "$T/a.js"
  assert_status 0
  chid run --quiet --journal "$T/new.jsonl" "$T/a.js"
  assert_status 0
  chid run --quiet --journal /dev/null "$T/a.js"
  assert_status 0
  chid run --help
  [[ $output == *"an existing"*"journal is replaced, any other non-empty file only with --force"* ]]
}

# ---- --state-dir does not create missing parents ----

@test "--state-dir creates the folder itself but not missing parents, which it names" {
  one
  chid run --quiet --state-dir "$T/missing/parent/state" "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: --state-dir '$T/missing/parent/state': its parent folder '$T/missing/parent' does not exist"
  [[ ! -e $T/missing ]]
  chid run --quiet --state-dir "$T/state2" "$T/a.js"
  assert_status 0
  [[ -f $T/state2/memory.sqlite3 && $(stat -c %a "$T/state2") == 700 ]]
  # The default (XDG) place is chidori's own: its path is still created.
  XDG_STATE_HOME=$T/xdg/deep chid run --quiet "$T/a.js"
  assert_status 0
  [[ -f $T/xdg/deep/chidori/memory.sqlite3 ]]
  # memory: the same rule
  chid memory list --state-dir "$T/missing/parent/state" --ns x
  assert_status 2
  assert_stderr_has "its parent folder '$T/missing/parent' does not exist"
}

# ---- --pids too low to start the engine ----

@test "--pids below what the engine needs is a usage error up front, not SIGILL" {
  one
  for n in 1 2 6; do
    chid run --pids "$n" "$T/a.js"
    assert_status 2
    assert_stderr_has "chidori: process limit too low to start the engine (--pids $n; at least 7 needed)"
    [[ $stderr != *SIGILL* && $stderr != *Isolation:* ]]
  done
  CHIDORI_PIDS_MAX=2 chid run --json "$T/a.js"
  assert_status 2
  assert_stderr_has "process limit too low to start the engine (CHIDORI_PIDS_MAX=2; at least 7 needed)"
  [[ $output == '{"ok":false,"error":{"name":"UsageError","message":"process limit too low to start the engine (CHIDORI_PIDS_MAX=2; at least 7 needed)"},"exit":2}' ]]
  chid replay --pids 1 "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "process limit too low to start the engine (--pids 1; at least 7 needed)"
  # The floor holds for real: a JIT-heavy agent runs at --pids 7.
  cat >"$T/heavy.js" <<'JS'
function f(x) { return x * 2 + 1 }
function main() { let a = [], s = 0; for (let i = 0; i < 3e6; i++) { s += f(i) % 7; if (i % 10 == 0) a.push({ i }); if (a.length > 50000) a = [] } return s }
JS
  chid run --quiet --jit --pids 7 "$T/heavy.js"
  assert_status 0
  [[ $output =~ ^[0-9]+$ ]]
  # launch runs any program: one process may be all it needs.
  chid launch --quiet --pids 1 -- /bin/true
  assert_status 0
}

@test "a worker that cannot start its threads under the limit says so (exit 2), and runs with room" {
  one
  ln -s "$BUILD_DIR/probes/bad_worker" "$T/bad-threads-before-ready"
  CHIDORI_WORKER=$T/bad-threads-before-ready chid run --quiet --pids 8 --journal "$T/j.jsonl" "$T/a.js"
  assert_status 2
  assert_stderr_has "chidori: process limit too low to start the engine (--pids 8; at least 9 needed)"
  [[ $stderr != *"engine crashed"* && $stderr != *SIGILL* ]]
  tail -n 1 "$T/j.jsonl" | grep -q '"type":"end".*"exit":2'
  CHIDORI_WORKER=$T/bad-threads-before-ready chid run --quiet --json --pids 8 "$T/a.js"
  [[ $output == '{"ok":false,"error":{"message":"process limit too low to start the engine (--pids 8; at least 9 needed)"},"exit":2,'* ]] || { echo "$output"; false; }
  # The same worker with the default limit starts its 16 threads.
  CHIDORI_WORKER=$T/bad-threads-before-ready chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout '"16 threads started"'
}

# ---- stdin: the input, or the agent ----

@test "--input-file - reads the input from stdin" {
  echo 'function main(input){return input.who}' >"$T/a.js"
  echo '{"who":"ada"}' | "$CHIDORI" run --quiet --input-file - "$T/a.js" >"$T/out" 2>"$T/err"
  [[ $(cat "$T/out") == '"ada"' ]] || { cat "$T/err"; false; }
  rc=0
  printf '{"who":' | "$CHIDORI" run --quiet --input-file - "$T/a.js" >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc -eq 2 ]]
  grep -q "chidori: --input-file is not valid JSON" "$T/err"
}

@test "an agent on stdin: '-' as AGENT, --agent-name for traces, the journal and bundling; replay with --agent -" {
  src='async function main(input) { await chidori.memory.set("seen", input); throw new Error("boom " + input.n) }'
  rc=0
  echo "$src" | "$CHIDORI" run --quiet --input '{"n":7}' --journal "$T/j.jsonl" - >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc -eq 1 ]]
  grep -q 'chidori: agent error: Error: boom 7 (at stdin.js:1:' "$T/err" || { cat "$T/err"; false; }
  head -n 1 "$T/j.jsonl" | grep -q '"agent":"-".*"filename":"stdin.js","memory_ns":"stdin:stdin.js"'
  # Its memory namespace is stdin:NAME.
  chid memory get --ns stdin:stdin.js seen
  assert_status 0
  assert_stdout '{"n":7}'
  # A replay needs the agent again, from stdin or a file.
  chid replay --quiet "$T/j.jsonl"
  assert_status 2
  assert_stderr_has "the journal's agent was read from stdin; give it again with --agent FILE, or --agent - to read it from stdin"
  rc=0
  echo "$src" | "$CHIDORI" replay --quiet --agent - "$T/j.jsonl" >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc -eq 1 ]]
  grep -q 'boom 7 (at stdin.js:1:' "$T/err"
  # --agent-name: a TypeScript agent with top-level await, bundled from stdin.
  rc=0
  printf 'const n: number = await Promise.resolve(2);\nexport default async function main() {\n  throw new Error("ts " + n);\n}\n' |
    "$CHIDORI" run --quiet --agent-name tool.ts - >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc -eq 1 ]]
  grep -q 'chidori: agent error: Error: ts 2 (at tool.ts:3:' "$T/err" || { cat "$T/err"; false; }
  # It is one file: nothing of the host's can be imported into it.
  rc=0
  printf 'import k from "./secret.json";\nexport default async () => k;\n' |
    "$CHIDORI" run --quiet --agent-name a.mjs - >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc -eq 1 ]]
  grep -q 'Could not resolve "./secret.json"' "$T/err"
}

@test "agent and input cannot both be stdin; --agent-name needs an agent on stdin and a plain name" {
  one
  chid run --input-file - -
  assert_status 2
  assert_stderr_has "the agent and its input cannot both come from stdin (AGENT '-' and --input-file -)"
  chid run --agent-name x.js "$T/a.js"
  assert_status 2
  assert_stderr_has "--agent-name names an agent read from stdin (AGENT '-')"
  chid run --agent-name ../x.js -
  assert_status 2
  assert_stderr_has "--agent-name '../x.js' is not a file name"
}

# ---- a result larger than a frame ----

@test "a result over 64 MiB: 'result too large (N MiB, limit 64 MiB)', exit 1, not a protocol error" {
  echo 'function main(){ return "x".repeat(65 * 1024 * 1024) }' >"$T/big.js"
  chid run --quiet --journal "$T/j.jsonl" "$T/big.js"
  assert_status 1
  assert_stderr_has "chidori: agent error: RangeError: result too large (65 MiB, limit 64 MiB)"
  [[ $stderr != *"protocol error"* && -z $output ]]
  tail -n 1 "$T/j.jsonl" | grep -q '"outcome":"agent_error","exit":1'
  chid replay --quiet "$T/j.jsonl"
  assert_status 1
  assert_stderr_has "result too large (65 MiB, limit 64 MiB)"
  # Just above the limit, the size is given in bytes.
  echo 'function main(){ return "x".repeat(64 * 1024 * 1024) }' >"$T/big.js"
  chid run --quiet --json "$T/big.js"
  assert_status 1
  [[ $output == '{"ok":false,"error":{"name":"RangeError","message":"result too large (67108900 bytes, limit 64 MiB)"},"exit":1,'* ]] || { echo "$output"; false; }
  # Just below, it is printed.
  echo 'function main(){ return "x".repeat(64 * 1024 * 1024 - 40) }' >"$T/big.js"
  "$CHIDORI" run --quiet "$T/big.js" </dev/null >"$T/out" 2>"$T/err"
  [[ $(stat -c %s "$T/out") -eq $((64 * 1024 * 1024 - 40 + 3)) ]]
}
