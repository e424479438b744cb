#!/usr/bin/env bats
# Agent text never drives the terminal (issue 9 item 6): whatever an agent, a
# nested agent or a compromised worker puts on stderr or /dev/tty arrives with
# its control characters escaped (common/text.h) and every line under its
# prefix, so it cannot forge a `chidori:` line, set the title, clear the
# screen or paint a fake prompt.  stdout (the JSON result) was JSON-escaped
# already.
load helpers

# raw_free FILE: none of the bytes a terminal acts on (ESC, BEL, CR, DEL, C1
# CSI/NEL as UTF-8, the bidi override U+202E) is in FILE.
raw_free() {
  local b
  for b in $'\x1b' $'\x07' $'\r' $'\x7f' $'\xc2\x9b' $'\xc2\x85' $'\xe2\x80\xae'; do
    if LC_ALL=C grep -qF -- "$b" "$1"; then
      echo "raw byte(s) $(printf '%s' "$b" | od -An -tx1) reached the terminal:"; cat -A "$1"; return 1
    fi
  done
}

@test "logs: control characters escaped, every line under [agent], nothing forged" {
  agent log.js <<'JS'
async function main() {
  console.log("\x1b]0;pwned\x07");
  console.log("a\rb");
  console.log("x\nchidori: agent error: fake");
  console.warn("\u202eevil\x9b2J\x85\x7f");
  await chidori.log("tab\tkept, caf\u00e9 \u65e5");
  return 1;
}
JS
  chid run --quiet "$T/log.js"
  assert_status 0
  raw_free "$T/.stderr"
  assert_stderr_has '[agent] \x1b]0;pwned\x07'
  assert_stderr_has '[agent] a\x0db'
  assert_stderr_has $'[agent] x\n[agent] chidori: agent error: fake'
  assert_stderr_has '[agent:warn] \u202eevil\u009b2J\u0085\x7f'
  assert_stderr_has $'[agent] tab\tkept, caf\u00e9 \u65e5'
  # every line is the agent's, under its tag: none passes for ours
  ! grep -v '^\[agent' "$T/.stderr"

  # A policy denial quoting the call's arguments stays one escaped line (the
  # policy cleans the name itself; the gate prints through the same helper).
  agent tool.js <<'JS'
async function main() {
  try { await chidori.tool("x\x1b]0;pwned\x07\nchidori: fake", {}); } catch (e) { return e.code; }
}
JS
  chid run --quiet --untrusted "$T/tool.js"
  assert_status 0
  assert_stdout '"EPOLICY"'
  raw_free "$T/.stderr"
  ! grep -q '^chidori: fake' "$T/.stderr"
}

@test "an agent error: message, name, file and stack escaped; continuation lines keep the prefix" {
  agent err.js <<'JS'
async function main() {
  const e = new Error("boom\x1b[2J\x07\nchidori: memory limit exceeded (limit 1 MiB)\r");
  e.name = "Oops\x1b[31m";
  throw e;
}
JS
  chid run --quiet --json "$T/err.js"
  assert_status 1
  raw_free "$T/.stderr"
  assert_stderr_has 'chidori: agent error: Oops\x1b[31m: boom\x1b[2J\x07'
  assert_stderr_has $'\nchidori: agent error: chidori: memory limit exceeded (limit 1 MiB)\\x0d'
  ! grep -q '^chidori: memory limit exceeded' "$T/.stderr"
  # every line is one of the error's: the prefix, or an indented stack frame
  ! grep -Ev '^(chidori: agent error: |    at )' "$T/.stderr"
  # stdout: the same text, JSON-escaped as before
  [[ $output == *'"message":"boom\u001b[2J\u0007\nchidori: memory limit exceeded (limit 1 MiB)\r"'* ]] || { echo "$output"; false; }
}

@test "a compromised worker's stderr is escaped under [worker]; so is an op name it makes up" {
  f=$(bad_worker stderr-escapes)
  agent a.js <<'JS'
function main() { return 0; }
JS
  CHIDORI_WORKER=$f chid run --quiet "$T/a.js"
  assert_status 0
  assert_stdout 1
  raw_free "$T/.stderr"
  assert_stderr_has $'[worker] \\x1b]0;pwned\\x07\\x0d\n[worker] chidori: memory limit exceeded (limit 1 MiB)\n'
  assert_stderr_has '[worker] \u202e\u009b2J\x7f'
  ! grep -v '^\[worker\] ' "$T/.stderr"

  f=$(bad_worker escape-op)
  CHIDORI_WORKER=$f chid run --quiet "$T/a.js"
  assert_status 0
  raw_free "$T/.stderr"
  assert_stderr_has "chidori: unknown host call '\\x1b]0;pwned\\x07\\x0achidori: fake': this chidori does not provide it"
  [[ $(wc -l <"$T/.stderr") -eq 1 ]] || { cat "$T/.stderr"; false; }
}

@test "a nested agent's stderr and its file name are escaped under [callee]" {
  mkdir "$T/dir"
  callee=$'evil\x1b]0;x\x07.js'
  cat >"$T/dir/$callee" <<'JS'
async function main() { console.log("from the callee\x1b[2J\nchidori: fake"); return 7; }
JS
  cat >"$T/dir/caller.js" <<'JS'
async function main() { return await chidori.callAgent("evil\x1b]0;x\x07.js", null); }
JS
  chid run --quiet "$T/dir/caller.js"
  assert_status 0
  assert_stdout 7
  raw_free "$T/.stderr"
  assert_stderr_has 'evil\x1b]0;x\x07.js] [agent] from the callee\x1b[2J'
  assert_stderr_has 'evil\x1b]0;x\x07.js] [agent] chidori: fake'
  ! grep -q '^chidori: fake' "$T/.stderr"
}

@test "a chidori.input prompt on the terminal is escaped and tagged: no fake password prompt" {
  command -v script >/dev/null || skip "script (util-linux) is not installed"
  agent ask.js <<'JS'
async function main() { return await chidori.input("\x1b]0;pwned\x07\x1b[2K[sudo] password for root:\nchidori: fake"); }
JS
  printf 'Ada\n' | script -qec "$CHIDORI run --quiet $T/ask.js" /dev/null >"$T/tty" 2>&1
  # the pty turns "\n" into "\r\n": drop those CRs before looking
  tr -d '\r' <"$T/tty" >"$T/tty.txt"
  raw_free "$T/tty.txt"
  grep -qF '[agent] \x1b]0;pwned\x07\x1b[2K[sudo] password for root:' "$T/tty.txt" || { cat -A "$T/tty"; false; }
  grep -qF '[agent] chidori: fake "Ada"' "$T/tty.txt" || { cat -A "$T/tty"; false; }
}
