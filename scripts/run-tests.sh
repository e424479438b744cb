#!/usr/bin/env bash
# Run every suite against the binaries in $BUILD and print one closing line:
#   tests: N passed, N failed[, N skipped]
# Suites: C unit tests (cmocka), JS web-platform tests (build/jsrun), end-to-end bats.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export CHIDORI_BIN="$PWD/$BUILD/chidori" CHIDORI_BUILD="$PWD/$BUILD"
# The ASan build: third-party allocations kept for the process's life (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
pass=0 fail=0 skip=0
logdir=$(mktemp -d /tmp/chidori-tests.XXXXXX)

count_cmocka() { # file
  local p f
  p=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$1" | awk '{s+=$4} END{print s+0}')
  f=$(grep -Eo '^\[  FAILED  \] [0-9]+ test' "$1" | awk '{s+=$4} END{print s+0}')
  local s; s=$(grep -Eo '^\[  SKIPPED \] [0-9]+ test' "$1" | awk '{s+=$4} END{print s+0}')
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  echo "  passed $p, failed $f, skipped $s"
}

echo "== unit tests (cmocka)"
for t in "$BUILD"/tests/test_*; do
  [[ -x $t ]] || continue
  name=$(basename "$t")
  echo "-- $name"
  # The engine's tests that need the real worker take this build's.
  if ! CHIDORI_WORKER=${CHIDORI_WORKER:-$BUILD/chidori-worker} "$t" >"$logdir/$name.log" 2>&1; then
    if ! grep -q '^\[  FAILED  \]' "$logdir/$name.log"; then
      echo "  $name crashed:"; tail -n 20 "$logdir/$name.log" | sed 's/^/    /'
      fail=$((fail + 1)); continue
    fi
    grep -E '^\[  FAILED  \]|^\[  ERROR   \]' "$logdir/$name.log" | sed 's/^/    /'
  fi
  count_cmocka "$logdir/$name.log"
done

# js_suite TITLE LOG RUNNER ARGS...: a build/jsrun-style runner, its "# js: N passed, N failed" line.
js_suite() {
  local title=$1 log=$logdir/$2 line p f; shift 2
  echo "== $title"
  "$@" >"$log" 2>&1
  grep '^not ok' "$log" | sed 's/^/    /'
  line=$(grep -E '^# js: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ -n $line ]]; then
    p=$(awk '{print $3}' <<<"$line"); f=$(awk '{print $5}' <<<"$line")
    pass=$((pass + p)); fail=$((fail + f)); echo "  passed $p, failed $f"
  else
    echo "  $(basename "$1") crashed:"; tail -n 20 "$log" | sed 's/^/    /'; fail=$((fail + 1))
  fi
}

if [[ -x $BUILD/jsrun ]] && compgen -G "tests/js/*.test.js" >/dev/null; then
  js_suite "JS web-platform tests" js.log "$BUILD"/jsrun engine/fetch.js engine/crypto.js engine/fs.js tests/js/*.test.js
fi
# The same node:fs tests with natives over the real effects/fs/vfs.c.
if [[ -x $BUILD/vfsrun ]] && compgen -G "tests/js/fs_*.test.js" >/dev/null; then
  js_suite "node:fs tests against the parent's VFS (build/vfsrun)" vfsrun.log "$BUILD"/vfsrun engine/fs.js tests/js/fs_*.test.js
fi

# The hand-written parts of the Node/Web surface, as bundled (engine/node/build.mjs).
if [[ -x $BUILD/jsrun && -f $BUILD/gen/node/webEvents.js ]] && compgen -G "tests/js/surface/*.test.js" >/dev/null; then
  js_suite "Node/Web surface parts (build/gen/node/)" surface.log "$BUILD"/jsrun tests/js/surface/load.js \
    "$BUILD"/gen/node/webEvents.js "$BUILD"/gen/node/blob.js tests/js/surface/*.test.js
fi

# Every code block of README.md and docs/*.md, run and compared (docs/README.md).
if [[ -x tests/docs/run-docs.py ]]; then
  echo "== docs: the code blocks of README.md and docs/*.md (tests/docs/run-docs.py)"
  tests/docs/run-docs.py --build "$BUILD" >"$logdir/docs.log" 2>&1
  grep -E '^not ok' -A 12 "$logdir/docs.log" | grep -Ev '^(ok|--)' | sed 's/^/    /'
  line=$(grep -E '^# docs: [0-9]+ passed, [0-9]+ failed' "$logdir/docs.log" | tail -n 1)
  if [[ -n $line ]]; then
    p=$(awk '{print $3}' <<<"$line"); f=$(awk '{print $5}' <<<"$line")
    pass=$((pass + p)); fail=$((fail + f)); echo "  passed $p, failed $f (${line##*, })"
  else
    echo "  run-docs.py crashed:"; tail -n 20 "$logdir/docs.log" | sed 's/^/    /'; fail=$((fail + 1))
  fi
fi

# The client SDKs against a real `chidori serve` (sdk/python, sdk/typescript): each
# runner's last line is "# NAME: N passed, N failed[, N skipped]".
sdk_suite() { # TITLE LOG NAME CMD...
  local title=$1 log=$logdir/$2 name=$3 line p f s; shift 3
  echo "== $title"
  "$@" >"$log" 2>&1
  grep -E '^(not ok|FAIL:|ERROR:)' "$log" | sed 's/^/    /'
  line=$(grep -E "^# $name: [0-9]+ passed, [0-9]+ failed" "$log" | tail -n 1)
  if [[ -n $line ]]; then
    p=$(awk '{print $3}' <<<"$line"); f=$(awk '{print $5}' <<<"$line")
    s=$(grep -oE '[0-9]+ skipped' <<<"$line" | awk '{print $1}'); s=${s:-0}
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s)); echo "  passed $p, failed $f, skipped $s"
  else
    echo "  $name crashed:"; tail -n 20 "$log" | sed 's/^/    /'; fail=$((fail + 1))
  fi
}
# Debian's python3 (its python3-mypy and python3-hypothesis, from make deps), not
# another python3 first on PATH (pyenv).
sdk_py=/usr/bin/python3; [[ -x $sdk_py ]] || sdk_py=python3
sdk_suite "Python SDK (sdk/python/tests)" sdk-python.log sdk-python "$sdk_py" sdk/python/tests/run.py
sdk_suite "TypeScript SDK (sdk/typescript/test)" sdk-typescript.log sdk-typescript sdk/typescript/test/run.sh

echo "== end-to-end tests (bats)"
if compgen -G "tests/bats/*.bats" >/dev/null; then
  bats --tap $(ls tests/bats/*.bats | grep -v rootless.bats) >"$logdir/bats.log" 2>&1
  # The rootless part: a throwaway user runs the sandbox suite (skips with the reason when not root).
  BUILD="$BUILD" scripts/rootless-tests.sh >>"$logdir/bats.log" 2>&1
  # chidori serve's suites again with the one-process server (CHIDORI_RUN_BROKER=0), kept for comparison.
  CHIDORI_RUN_BROKER=0 bats --tap tests/bats/serve.bats tests/bats/serve-approve.bats tests/bats/serve-drain.bats \
    tests/bats/serve-events.bats 2>&1 | sed -E 's/^((not )?ok [0-9]+ )/\1[CHIDORI_RUN_BROKER=0] /' >>"$logdir/bats.log"
  # each failure with its diagnostics, up to 40 lines (the log has the rest)
  awk '/^(not )?ok [0-9]+ / { n = /^not ok/ ? 40 : 0 } n > 0 { print "    " $0; n-- }' "$logdir/bats.log"
  p=$(grep -Ec '^ok [0-9]+ ' "$logdir/bats.log")
  s=$(grep -Ec '^ok [0-9]+ .*# skip' "$logdir/bats.log")
  f=$(grep -Ec '^not ok [0-9]+ ' "$logdir/bats.log")
  p=$((p - s))
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  echo "  passed $p, failed $f, skipped $s"
  grep -E '^ok [0-9]+ .*# skip' "$logdir/bats.log" | sed 's/^/    /'
fi

# The untrusted-input parsers under libFuzzer (docs/fuzzing.md): the frame
# decoder, the policy parser, the VFS (random op sequences), the JSON text
# module, the monitor's channel decoder; URLs and the SSRF guard, templates,
# workspace paths, the journal reader, the tools file and serve's requests,
# each briefly, from its committed corpus (make fuzz-long runs them longer).
for fz in fuzz_frame fuzz_policy fuzz_vfs fuzz_json fuzz_chan \
          fuzz_url fuzz_template fuzz_workspace fuzz_journal fuzz_tools fuzz_serve; do
  [[ -x $BUILD/$fz ]] || continue
  case $fz in
    fuzz_frame) secs=${FUZZ_SECONDS:-20} ;;
    fuzz_policy | fuzz_vfs | fuzz_json | fuzz_chan) secs=${FUZZ_SECONDS:-10} ;;
    *) secs=${FUZZ_SECONDS:-8} ;;
  esac
  echo "== $fz (libFuzzer, ${secs}s)"
  if FUZZ_SECONDS=$secs ./scripts/fuzz.sh "$BUILD/$fz" >"$logdir/$fz.log" 2>&1; then
    pass=$((pass + 1)); echo "  passed 1 (no finding in ${secs}s)"
  else
    fail=$((fail + 1)); echo "  FAILED: the fuzzer found something:"; tail -n 30 "$logdir/$fz.log" | sed 's/^/    /'
  fi
done

if [[ ${CHIDORI_SKIP_VM:-0} != 1 ]] && command -v qemu-system-x86_64 >/dev/null && [[ -x tests/vm/run.sh ]]; then
  echo "== qemu guest: cgroup v2 and kernel 6.1 (tests/vm)"
  if tests/vm/setup.sh >"$logdir/vm-setup.log" 2>&1; then
    tests/vm/run.sh tests/vm/guest-run.sh >"$logdir/vm.log" 2>&1
    grep -E '^not ok' "$logdir/vm.log" | sed 's/^/    /'
    line=$(grep -E '^# vm: [0-9]+ passed, [0-9]+ failed' "$logdir/vm.log" | tail -n 1)
    if [[ -n $line ]]; then
      p=$(awk '{print $3}' <<<"$line"); f=$(awk '{print $5}' <<<"$line")
      s=$(grep -oE '[0-9]+ skipped' <<<"$line" | awk '{print $1}'); s=${s:-0}
      pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s)); echo "  passed $p, failed $f, skipped $s"
    else
      echo "  the guest run did not finish:"; tail -n 20 "$logdir/vm.log" | sed 's/^/    /'; fail=$((fail + 1))
    fi
  else
    echo "  guest setup failed:"; tail -n 10 "$logdir/vm-setup.log" | sed 's/^/    /'; fail=$((fail + 1))
  fi
else
  echo "== qemu guest: skipped (qemu-system-x86_64 not installed, or CHIDORI_SKIP_VM=1)"
  skip=$((skip + 1))
fi

echo "logs: $logdir"
if ((skip > 0)); then
  echo "tests: $pass passed, $fail failed, $skip skipped"
else
  echo "tests: $pass passed, $fail failed"
fi
((fail == 0))
