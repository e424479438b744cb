#!/bin/sh
# build/chidori runs an agent end to end inside the guest (JavaScriptCore under TCG,
# the worker, whatever isolation layers this kernel offers), with its run cgroups under
# the delegated subtree (CHIDORI_CGROUP_PARENT). `chidori doctor` is printed for the
# record (guest-run.sh -v shows it); its cgroup line must say ok.
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

chidori="$REPO/build/chidori"
[ -x "$chidori" ] || vm_skip "no $chidori in the image (run make first)"
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
doc="$("$chidori" doctor 2>&1)"
echo "$doc" | sed 's/^/  doctor| /'
echo "$doc" | grep -q 'cgroup (memory ceiling) *ok' \
  || vm_fail "chidori doctor does not find a usable memory cgroup under $CHIDORI_CGROUP_PARENT"
cd "$REPO" || vm_fail "cd $REPO"
log="$TMPDIR/run.log"
timeout -s KILL 30 "$chidori" run examples/hello.js >"$log" 2>&1; rc=$?
sed 's/^/  run| /' "$log"
[ $rc -ne 137 ] || vm_fail "chidori run examples/hello.js: killed after 30 s (hung?)"
[ $rc -eq 0 ] || vm_fail "chidori run examples/hello.js: exit $rc"
grep -q '"greeting":"Hello, world!"' "$log" || vm_fail "no greeting in the output"
echo "  ok: chidori run examples/hello.js"
exit 0
