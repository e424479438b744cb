#!/usr/bin/env bash
# Builds @chidori/client and runs its node:test suite against a real chidori serve;
# the last line is "# sdk-typescript: N passed, N failed" (scripts/run-tests.sh counts it).
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x node_modules/.bin/tsc || ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "sdk/typescript/node_modules is missing or older than package-lock.json: run 'make deps' (it runs npm ci there)"
  echo "# sdk-typescript: 0 passed, 1 failed"
  exit 1
fi
if ! node_modules/.bin/tsc -p tsconfig.json; then
  echo "# sdk-typescript: 0 passed, 1 failed (tsc failed)"
  exit 1
fi
log=$(mktemp)
node --test --test-reporter=tap test/ | tee "$log"
p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$log" | tail -n 1)
f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$log" | tail -n 1)
c=$(sed -n 's/^# cancelled \([0-9]*\)$/\1/p' "$log" | tail -n 1)
rm -f "$log"
[[ -n $p && -n $f ]] || { echo "# sdk-typescript: 0 passed, 1 failed (no summary from node --test)"; exit 1; }
echo "# sdk-typescript: $p passed, $((f + ${c:-0})) failed"
(( f + ${c:-0} == 0 ))
