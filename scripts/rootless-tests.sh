#!/usr/bin/env bash
# Run the confinement suites as an unprivileged user and print TAP on stdout
# (scripts/run-tests.sh counts its "ok"/"not ok" lines with the other bats).
#
#   scripts/rootless-tests.sh        as root; BUILD=build by default
#
# Creates (once) the throwaway user chidori-test (no home, no login shell),
# copies the built binaries, the probe, the bats files and the examples into a
# world-readable staging folder (the checkout itself may not be readable by
# other users), and runs tests/bats/rootless.bats there as that user, with the
# groups of tests/bats/sandbox.bats whose outcome can depend on who runs the
# box (files, reads, processes, the worker's filter, the terminal, id maps,
# the worker's posture; root-only steps inside them skip themselves), and
# tests/bats/broker.bats (the broker's posture and the compromised broker).  The
# rest of sandbox.bats runs once, as root.
# Prints one skipped TAP test with the reason when it cannot do that.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
TEST_USER=${CHIDORI_TEST_USER:-chidori-test}
# Which tests run unprivileged: all of rootless.bats, and these groups of sandbox.bats.
FILTER=${CHIDORI_ROOTLESS_FILTER:-'^(rootless|fs:|read:|proc:|worker:|tty:|user:|engine posture|broker:)'}

skip_all() {
  echo "1..1"
  echo "ok 1 rootless suites # skip $1"
  exit 0
}

[[ $(id -u) -eq 0 ]] || skip_all "not running as root: cannot create or become the $TEST_USER user"
command -v bats >/dev/null || skip_all "bats is not installed"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is not installed"
for f in "$BUILD/chidori" "$BUILD/chidori-worker" "$BUILD/probes/probe"; do
  [[ -x $f ]] || skip_all "$f is not built (make all)"
done

if ! id -u "$TEST_USER" >/dev/null 2>&1; then
  useradd --system -M -d /nonexistent -s /usr/sbin/nologin "$TEST_USER" >/dev/null 2>&1 ||
    skip_all "cannot create the user $TEST_USER (useradd failed)"
fi
uid=$(id -u "$TEST_USER") gid=$(id -g "$TEST_USER")
[[ $uid -ne 0 ]] || skip_all "$TEST_USER has uid 0"

# The box needs unprivileged user namespaces (kernel.unprivileged_userns_clone,
# user.max_user_namespaces, AppArmor's restriction on some distributions).
if ! setpriv --reuid="$uid" --regid="$gid" --init-groups unshare --user true 2>/dev/null; then
  skip_all "$TEST_USER cannot create a user namespace on this host (unprivileged user namespaces disabled)"
fi

stage=$(mktemp -d /tmp/chidori-rootless.XXXXXX) || skip_all "cannot create a staging folder in /tmp"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build/probes" "$stage/tests/bats" "$stage/examples" "$stage/home"
cp "$BUILD/chidori" "$BUILD/chidori-worker" "$BUILD/chidori-broker" "$BUILD/chidori-monitor" "$BUILD/start-broker" \
  "$BUILD/libchidori-net.so" "$stage/build/"
cp "$BUILD/probes/probe" "$BUILD/probes/cg_forkbomb" "$BUILD/probes/broker_probe" "$BUILD/probes/bad_worker" "$stage/build/probes/"
cp tests/bats/helpers.bash tests/bats/rootless.bats tests/bats/sandbox.bats tests/bats/broker.bats "$stage/tests/bats/"
cp examples/* "$stage/examples/"
# esbuild (ES-module and TypeScript agents) is found next to the binary.
if [[ -x tools/node_modules/.bin/esbuild ]]; then
  cp -L tools/node_modules/.bin/esbuild "$stage/build/esbuild"
fi
chmod -R a+rX "$stage"
chown "$uid:$gid" "$stage/home"

# A clean environment: nothing of root's reaches the user's runs (but the
# sanitizer options of a `make asan` run do).
envs=(PATH=/usr/local/bin:/usr/bin:/bin HOME="$stage/home" LANG=C.UTF-8 TMPDIR=/tmp
      CHIDORI_BIN="$stage/build/chidori" CHIDORI_BUILD="$stage/build")
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [[ -n ${!v:-} ]] && envs+=("$v=${!v}")
done
cd "$stage" || skip_all "cannot enter $stage"
setpriv --reuid="$uid" --regid="$gid" --init-groups --inh-caps=-all env -i "${envs[@]}" \
  bats --tap --filter "$FILTER" "$stage/tests/bats/rootless.bats" "$stage/tests/bats/sandbox.bats" \
  "$stage/tests/bats/broker.bats"
