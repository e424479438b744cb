#!/bin/sh
# Local-time Date and Intl on the second kernel, in the full box (--require-sandbox:
# cgroup v2, Landlock ABI 2, seccomp), JIT on and off: UTC by default, --tz Asia/Tokyo
# from the zone file the box shows with /usr; a zone the image lacks is a usage error.
# Before the fixed TZ, ICU listed /usr/share/zoneinfo and the run ended with 159.
# The one-process parent (CHIDORI_RUN_BROKER=0): as root the broker's store folder is on
# the image's tmpfs, which 6.1 cannot id-map, and --require-sandbox refuses the broker's
# uid-0 fallback (42-broker, 43-broker-run cover the broker here).
# vm-timeout: 120
# vm-include: /usr/share/zoneinfo/UTC /usr/share/zoneinfo/Asia/Tokyo
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"
CHIDORI_RUN_BROKER=0; export CHIDORI_RUN_BROKER

vm_need_chidori
vm_check "leaf + CHIDORI_CGROUP_PARENT under $CG" vm_cgroup_parent chidori
cat > "$TMPDIR/dates.js" <<'JS'
module.exports = async () => {
  const jan15 = new Date(2024, 0, 15), epoch = new Date(0), evening = new Date(Date.UTC(2024, 0, 15, 20));
  return [jan15.getDay(), jan15.getTime(), String(epoch), epoch.getHours(), epoch.getTimezoneOffset(),
          evening.toLocaleDateString(), Intl.DateTimeFormat().resolvedOptions().timeZone];
};
JS
utc='[1,1705276800000,"Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)",0,0,"1/15/2024","UTC"]'
tokyo='[1,1705244400000,"Thu Jan 01 1970 09:00:00 GMT+0900 (Japan Standard Time)",9,-540,"1/16/2024","Asia/Tokyo"]'
for jit in --jit --no-jit; do
  vm_run "utc$jit" 60 "$CHIDORI" run --require-sandbox "$jit" "$TMPDIR/dates.js"
  vm_expect_rc 0 "dates.js $jit (UTC)"
  [ "$OUT" = "$utc" ] || vm_fail "dates.js $jit: '$OUT', expected '$utc'"
  vm_err_has "seccomp allowlist" || vm_fail "the banner lacks 'seccomp allowlist'"
  vm_run "tokyo$jit" 60 "$CHIDORI" run --quiet --require-sandbox "$jit" --tz Asia/Tokyo "$TMPDIR/dates.js"
  vm_expect_rc 0 "dates.js $jit --tz Asia/Tokyo"
  [ "$OUT" = "$tokyo" ] || vm_fail "dates.js $jit --tz Asia/Tokyo: '$OUT', expected '$tokyo'"
done
echo "  ok: UTC by default and --tz Asia/Tokyo, JIT on and off, full box"
vm_run paris 30 "$CHIDORI" run --quiet --tz Europe/Paris "$TMPDIR/dates.js"
vm_expect_rc 2 "--tz Europe/Paris without its zone file in the image"
vm_err_has "chidori: --tz 'Europe/Paris' is not a zone of the tz database" || vm_fail "the usage error does not name the zone"
echo "  ok: a zone the host lacks is a usage error (2), named"
exit 0
