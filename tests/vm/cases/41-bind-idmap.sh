#!/bin/sh
# `chidori launch --bind` as root on a second kernel: where the folder's filesystem can
# be id-mapped, what the box writes there is root's on disk; where it cannot (the
# guest's root is tmpfs/ramfs, and tmpfs has id-mapped mounts only from Linux 6.3),
# the bind is today's (the box's root is 65534 on disk) and the banner says so, and
# --require-sandbox refuses with 78.  The two must agree: note <=> 65534.
# vm-users: root
# vm-timeout: 60
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
d="$TMPDIR/bind"
mkdir -p "$d" && chmod 777 "$d" && chmod 755 "$TMPDIR" || vm_fail "mkdir $d"
fs="$(stat -f -c %T "$d" 2>/dev/null || echo "?")"

vm_run bind 30 "$CHIDORI" launch --bind "$d" -- /bin/sh -c "echo x > $d/f"
vm_expect_rc 0 "launch --bind $d (a $fs folder)"
owner="$(stat -c %u "$d/f")"
if vm_err_has "--bind $d not id-mapped"; then
  [ "$owner" = 65534 ] || vm_fail "the banner says not id-mapped, yet $d/f is owned by $owner"
  vm_err_has "files the box writes there are owned by 65534" || vm_fail "the banner note lacks the consequence"
  vm_run req 30 "$CHIDORI" launch --quiet --require-sandbox --bind "$d" -- /bin/true
  vm_expect_rc 78 "launch --require-sandbox --bind on $fs without id-mapped mounts"
  vm_err_has "sandbox layer unavailable: id-mapped --bind of $d" || vm_fail "--require-sandbox does not name the bind"
  echo "  ok: $fs on $(uname -r): no id-mapped mount; today's bind (65534), named in the banner; refused when required"
else
  [ "$owner" = 0 ] || vm_fail "no banner note, yet $d/f is owned by $owner (expected root's 0)"
  echo "  ok: $fs on $(uname -r): id-mapped, the box's file is root's"
fi
