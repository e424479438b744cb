#!/usr/bin/env bats
# ask_before on a terminal (issue 15, item 5): with stdin a TTY, the person at
# it is asked; y lets the call through (journaled as approved), anything else
# refuses it as before; CHIDORI_POLICY_AUTO_APPROVE=1 passes without asking;
# without a terminal the call is refused.  A pseudo-terminal stands in for the
# person (tests/bats/tty_answer.py).
load helpers

TTY=$BATS_TEST_DIRNAME/tty_answer.py

# The supervised profile asks before workspace:write.
writer() {
  mkdir -p "$T/ws"
  agent w.js <<'JS'
module.exports = async () => {
  try { await chidori.workspace.write("out\u001b[2J.txt", "hello"); return "written"; }
  catch (e) { return e.message; }
};
JS
}

asked() { # ANSWER: run the writer on a terminal, answering ANSWER
  set +e
  CHIDORI_POLICY_PROFILE=supervised python3 "$TTY" "$1" "$T/out" "$T/err" -- \
    "$CHIDORI" run --quiet --workspace "$T/ws" --journal "$T/j.jsonl" "$T/w.js" >"$T/tty"
  status=$?
  set -e
  output=$(cat "$T/out")
  stderr=$(cat "$T/err")
  tty=$(cat "$T/tty")
}

@test "ask_before on a terminal: y lets the call through, journaled as approved; auto-approval asks nothing" {
  writer
  asked y
  assert_status 0
  assert_stdout '"written"'
  # The question, on the terminal, with the agent's text escaped.
  [[ $tty == *'chidori: allow workspace:write {"path":"out\u001b[2J.txt","data_base64":"aGVsbG8=","create_dirs":true}? [y/N]'* ]] || { echo "$tty"; false; }
  [[ $tty != *$'\e[2J'* ]]
  [[ -f $T/ws/$'out\e[2J.txt' ]]
  grep -q '"type":"note","kind":"approved","message":"policy: `workspace:write` approved at the terminal"' "$T/j.jsonl"
  # The replay needs no terminal and asks nothing.
  chid replay --quiet "$T/j.jsonl"
  assert_status 0
  assert_stdout '"written"'
  # CHIDORI_POLICY_AUTO_APPROVE=1 still passes, without asking.
  rm -f "$T/ws"/*
  CHIDORI_POLICY_AUTO_APPROVE=1 asked -
  assert_status 0
  assert_stdout '"written"'
  [[ $tty != *'[y/N]'* ]]
}

@test "ask_before on a terminal: anything but y refuses; without a terminal nobody is asked" {
  writer
  for a in n "" nope; do
    asked "$a"
    assert_status 0
    [[ $output == '"policy: `workspace:write` needs approval: the supervised profile asks'*'; declined at the terminal"' ]] || { echo "$output"; false; }
    assert_stderr_has 'chidori: policy: `workspace:write` needs approval: '
    [[ $tty == *'? [y/N]'* ]]
    [[ ! -e $T/ws/$'out\e[2J.txt' ]]
    grep -q '"kind":"needs_approval"' "$T/j.jsonl"
  done
  # Without a terminal nobody is asked: refused as before.
  CHIDORI_POLICY_PROFILE=supervised chid run --quiet --workspace "$T/ws" "$T/w.js"
  assert_status 0
  [[ $output == '"policy: `workspace:write` needs approval: '*'; nothing can approve it here (set CHIDORI_POLICY_AUTO_APPROVE=1 to approve such calls)"' ]] || { echo "$output"; false; }
  [[ -z $(ls "$T/ws") ]]
}

@test "ask_before on a terminal: the run's deadline ends an unanswered question (refused)" {
  writer
  set +e
  CHIDORI_POLICY_PROFILE=supervised python3 "$TTY" - "$T/out" "$T/err" -- \
    "$CHIDORI" run --quiet --deadline 1500 --workspace "$T/ws" "$T/w.js" >"$T/tty"
  status=$?
  set -e
  [[ $status -eq 124 ]] || { echo "status $status"; cat "$T/err"; false; }
  grep -q "chidori: deadline exceeded (1500 ms)" "$T/err"
  [[ $(cat "$T/tty") == *'[y/N]'* ]]
}

@test "ask_before on a terminal: the same call is asked once per run; the answer covers it again" {
  mkdir -p "$T/ws"
  agent twice.js <<'JS'
module.exports = async () => {
  await chidori.workspace.write("same.txt", "hello");
  await chidori.workspace.write("same.txt", "hello");
  return "written twice";
};
JS
  set +e
  CHIDORI_POLICY_PROFILE=supervised python3 "$TTY" y "$T/out" "$T/err" -- \
    "$CHIDORI" run --quiet --deadline 20000 --workspace "$T/ws" --journal "$T/j.jsonl" "$T/twice.js" >"$T/tty"
  status=$?
  set -e
  output=$(cat "$T/out")
  tty=$(cat "$T/tty")
  assert_status 0
  assert_stdout '"written twice"'
  # One question on the terminal, one approval in the journal, two writes.
  [[ $(grep -o '\[y/N\]' <<<"$tty" | wc -l) == 1 ]] || { echo "$tty"; false; }
  [[ $(grep -c '"kind":"approved"' "$T/j.jsonl") == 1 ]]
  [[ $(grep -c '"op":"workspace.write"' "$T/j.jsonl") == 2 ]]
}
