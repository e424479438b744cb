#!/bin/sh
# A run through the monitor's channel loop and chidori-broker on a second kernel
# (build/start-broker --serve: monitor/serve.c with the real box provider). Root on the
# guest's tmpfs /tmp gets the uid-0 fallback broker (no id-mapped tmpfs before 6.3),
# tester the rootless one. The value comes back, the memory store the broker writes in
# the state dir persists and is the caller's on disk, a deadline is still 124.
# vm-timeout: 120
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
SB="$REPO/build/start-broker"
[ -x "$SB" ] && [ -x "$REPO/build/chidori-broker" ] || vm_fail "no start-broker or chidori-broker in the image"
CHIDORI_BROKER="$REPO/build/chidori-broker"; export CHIDORI_BROKER
A="$TMPDIR/agent"; S="$TMPDIR/state"
mkdir -p "$A" "$S"
cat >"$A/a.js" <<'JS'
async function main(input) {
  const prev = await chidori.memory.get("n");
  await chidori.memory.set("n", (prev || 0) + 1);
  return [prev, input.x];
}
JS
cfg="agent=a.js,agent_dir=$A,state_dir=$S,input={\"x\":7}"
vm_run run1 60 "$SB" --serve --agent "$A" --state "$S" --config "$cfg" --
vm_expect_rc 0 "a run through monitor and broker"
vm_out_has '[null,7]' || vm_fail "first run's value: $OUT"
vm_run run2 60 "$SB" --serve --agent "$A" --state "$S" --config "$cfg" --
vm_expect_rc 0 "a second run"
vm_out_has '[1,7]' || vm_fail "the memory store did not persist: $OUT"
owner="$(stat -c %u "$S/memory.sqlite3")"
[ "$owner" = "$(id -u)" ] || vm_fail "memory.sqlite3 is uid $owner on disk, expected $(id -u)"
mode="$(sed -n 's/^start-broker: mode \([a-z0-9]*\).*/\1/p' "$LAST.err")"
echo "  ok: value and memory store through the broker (mode $mode on $(uname -r)), the store is uid $owner on disk"

echo 'function main() { for (;;) {} }' >"$A/loop.js"
vm_run deadline 60 "$SB" --serve --agent "$A" --config "agent=loop.js,agent_dir=$A,deadline_ms=1500" --
vm_expect_rc 124 "a deadline through the channel"
vm_err_has "chidori: deadline exceeded (1500 ms)" || vm_fail "the deadline message is missing"
echo "  ok: the deadline is 124 through the channel"
