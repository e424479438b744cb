#!/bin/sh
# One cgroup budget for the run tree on cgroup v2, pids: the boxed tools of two nested
# agents fork at once under the caller's --pids, which bounds them together (issue 9
# item 2); the whole tree is removed after.
# vm-timeout: 240
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori fork_hold
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
A="$TMPDIR/agent"
mkdir -p "$A"
cat >"$A/child.js" <<'JS'
module.exports = async (x) => {
  if (x && x.tool) return chidori.tool('fork', {}).catch((e) => ({ held: 0, error: e.message }));
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
  const held = (p) => p.then((r) => r.held, () => 0);
  const r = await Promise.all([held(chidori.callAgent('child.js', { tool: 1 })), held(chidori.callAgent('child.js', { tool: 1 }))]);
  return r[0] + r[1];
};
JS
echo "{\"fork\": {\"command\": [\"$PROBES/fork_hold\", \"4000\", \"200\", \"12\"]}}" >"$TMPDIR/tools.json"

# pids: two nested agents' boxed tools fork at once under one --pids 64
vm_run bomb 120 "$CHIDORI" run --quiet --pids 64 --tools "$TMPDIR/tools.json" "$A/bomb.js"
vm_expect_rc 0 "fork bomb across nested calls"
[ "$OUT" -gt 10 ] && [ "$OUT" -lt 64 ] || vm_fail "held $OUT processes at once in all, --pids 64"
echo "  ok: the tools of two nested agents held $OUT processes together under --pids 64"

left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup directories left behind: $left"
exit 0
