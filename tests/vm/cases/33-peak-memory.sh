#!/bin/sh
# `chidori run --json` reports the run's peak memory (cgroup v2 memory.peak): for a bomb
# killed at 100M, peak_memory_bytes <= memory_limit_bytes = 100 MiB (also in the
# journal's last line); a normal run reports its peak too.
# vm-timeout: 90
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
cd "$REPO" || vm_fail "cd $REPO"
cat > "$TMPDIR/bomb.js" <<'JS'
function main() { const a = []; for (;;) a.push("y".repeat(1 << 20) + a.length); }
JS

vm_run bomb 60 "$CHIDORI" run --quiet --json --memory 100M --journal "$TMPDIR/j.jsonl" "$TMPDIR/bomb.js"
vm_expect_rc 137 "bomb under --memory 100M"
peak="$(vm_json_num peak_memory_bytes "$LAST.out")"
limit="$(vm_json_num memory_limit_bytes "$LAST.out")"
[ -n "$peak" ] || vm_fail "no peak_memory_bytes in the --json output"
[ -n "$limit" ] || vm_fail "no memory_limit_bytes in the --json output"
[ "$limit" -eq $((100 * 1024 * 1024)) ] || vm_fail "memory_limit_bytes $limit != 104857600"
[ "$peak" -le "$limit" ] || vm_fail "peak_memory_bytes $peak > memory_limit_bytes $limit"
[ "$peak" -ge $((50 * 1024 * 1024)) ] || vm_fail "peak_memory_bytes $peak: implausibly low for a bomb killed at 100 MiB"
grep -q '"exit":137' "$LAST.out" || vm_fail "--json output lacks \"exit\":137"
echo "  ok: bomb: peak $peak <= limit $limit"
tail -n 1 "$TMPDIR/j.jsonl" | grep -q '"peak_memory_bytes":' || vm_fail "the journal's last line lacks peak_memory_bytes: $(tail -n 1 "$TMPDIR/j.jsonl")"
echo "  ok: the journal records the peak"

vm_run hello 60 "$CHIDORI" run --quiet --json examples/hello.js
vm_expect_rc 0 "hello --json"
peak="$(vm_json_num peak_memory_bytes "$LAST.out")"
limit="$(vm_json_num memory_limit_bytes "$LAST.out")"
[ -n "$peak" ] && [ "$peak" -gt 0 ] || vm_fail "hello: peak_memory_bytes missing or 0"
[ "$limit" = $((512 * 1024 * 1024)) ] || vm_fail "hello: memory_limit_bytes '$limit', expected the 512M default"
[ "$peak" -lt "$limit" ] || vm_fail "hello: peak $peak not below limit $limit"
echo "  ok: a normal run reports peak $peak (limit $limit)"
exit 0
