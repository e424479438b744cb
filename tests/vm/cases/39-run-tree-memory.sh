#!/bin/sh
# One cgroup budget for the run tree on cgroup v2, memory: a caller and its nested
# agent run below the caller's run cgroup, so --memory bounds them together (issue 9
# item 2): each alone fits, both together are stopped; the whole tree is removed after.
# vm-timeout: 240
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori fork_hold
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
A="$TMPDIR/agent"
mkdir -p "$A"
cat >"$A/child.js" <<'JS'
module.exports = async (x) => {
  if (x && x.tool) return chidori.tool('fork', {});
  const a = new Uint8Array(x.child << 20).fill(7);
  return a.length >> 20;
};
JS
cat >"$A/both.js" <<'JS'
module.exports = async (x) => {
  const a = new Uint8Array(x.mine << 20).fill(7);
  try { return [a.length >> 20, await chidori.callAgent('child.js', x)]; }
  catch (e) { return 'child failed: ' + e.message; }
};
JS
cat >"$A/bomb.js" <<'JS'
module.exports = async () => {
  const r = await Promise.all([chidori.callAgent('child.js', { tool: 1 }), chidori.callAgent('child.js', { tool: 1 })]);
  return r[0].held + r[1].held;
};
JS
echo "{\"fork\": {\"command\": [\"$PROBES/fork_hold\", \"4000\", \"200\", \"12\"]}}" >"$TMPDIR/tools.json"

# memory: each alone fits in 128M, both together do not
vm_run alone 90 "$CHIDORI" run --quiet --memory 128M "$A/both.js" --input '{"mine": 60, "child": 1}'
vm_expect_rc 0 "caller alone"
vm_out_has '[60,1]' || vm_fail "caller alone: $OUT"
vm_run alone2 90 "$CHIDORI" run --quiet --memory 128M "$A/both.js" --input '{"mine": 1, "child": 60}'
vm_expect_rc 0 "child alone"
vm_out_has '[1,60]' || vm_fail "child alone: $OUT"
vm_run both 90 "$CHIDORI" run --quiet --memory 128M "$A/both.js" --input '{"mine": 60, "child": 60}'
if [ "$RC" = 137 ]; then
  vm_err_has "memory limit exceeded" || vm_fail "137 without the memory message"
elif [ "$RC" = 141 ]; then
  # memory.oom.group takes the caller's worker along; answering it then raised
  # SIGPIPE in the launcher: issue 9 item 5 (MSG_NOSIGNAL), fixed on branch h-race
  vm_fail "the launcher died of SIGPIPE after the group OOM kill (issue 9 item 5)"
else
  vm_expect_rc 0 "caller + child"
  vm_out_has "memory limit exceeded" || vm_fail "caller + child over --memory together were not stopped: $OUT"
fi
echo "  ok: caller + nested agent share --memory 128M"

left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup directories left behind: $left"
exit 0
