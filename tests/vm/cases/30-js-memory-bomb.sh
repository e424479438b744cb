#!/bin/sh
# A JavaScript memory bomb (arrays and strings kept alive in a Map) under
# `chidori run --memory 128M` is killed at the cgroup v2 ceiling: exit 137 and the
# exact message on stderr; the run's cgroup is gone afterwards and the next run works.
# vm-timeout: 120
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
cd "$REPO" || vm_fail "cd $REPO"
cat > "$TMPDIR/bomb.js" <<'JS'
function main() {
  const keep = new Map();
  for (let i = 0; ; i++) { keep.set(i, new Array(100000).fill(i)); keep.set("s" + i, "x".repeat(100000) + i); }
}
JS

vm_run bomb 60 "$CHIDORI" run --memory 128M "$TMPDIR/bomb.js"
vm_err_has "cgroup2 memory.max=128M" || vm_fail "the banner does not say cgroup2 memory.max=128M"
vm_expect_rc 137 "memory bomb"
vm_err_has "chidori: memory limit exceeded (limit 128 MiB)" \
  || vm_fail "stderr lacks 'chidori: memory limit exceeded (limit 128 MiB)'"
echo "  ok: the bomb is killed at 128 MiB (exit 137, message) in ${SECS_TAKEN}s"

left="$(vm_chidori_dirs "$CHIDORI_CGROUP_PARENT")"
[ -z "$left" ] || vm_fail "cgroup directories left behind: $left"
echo "  ok: no chidori-* cgroup left under $CHIDORI_CGROUP_PARENT"

# the env knob, in MiB
vm_run bomb96 60 env CHIDORI_JS_MEM_CAP_MB=96 "$CHIDORI" run "$TMPDIR/bomb.js"
vm_expect_rc 137 "CHIDORI_JS_MEM_CAP_MB=96 bomb"
vm_err_has "cgroup2 memory.max=96M" || vm_fail "banner lacks cgroup2 memory.max=96M"
vm_err_has "memory limit exceeded (limit 96 MiB)" || vm_fail "stderr lacks 'limit 96 MiB'"
echo "  ok: CHIDORI_JS_MEM_CAP_MB=96 sets the ceiling"

vm_run hello 60 "$CHIDORI" run --quiet examples/hello.js
vm_expect_rc 0 "the run after the bomb"
vm_out_has '"greeting":"Hello, world!"' || vm_fail "no greeting after the bomb"
echo "  ok: the next run works"
exit 0
