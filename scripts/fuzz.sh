#!/usr/bin/env bash
# Run libFuzzer targets (build/fuzz_*, docs/fuzzing.md) from their committed
# seed corpora, tests/fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh [BIN...]         each for FUZZ_SECONDS (default 60) on a copy of
#                                    its corpus; the corpus is left as it is
#                                    (make fuzz, make test)
#   scripts/fuzz.sh --long [BIN...]  each for FUZZ_SECONDS (default 300), resuming from
#                                    the corpus, then the new inputs that reach new code
#                                    are merged back into it (-merge=1: only those,
#                                    smallest first) (make fuzz-long)
#
# Without BIN, every build/fuzz_* binary.  Per target one line: the seconds run,
# the corpus size, and whether anything was found.  A finding (crash, leak, UB,
# timeout, out of memory) leaves its reproducer in build/fuzz-findings/<target>/
# and makes the exit status 1; the other targets still run.  --long also appends
# "date target wall-seconds CPU-seconds result" to build/fuzz-long.log (the
# minutes in docs/fuzzing.md come from there).  FUZZ_CORPUS_DIR and
# FUZZ_FINDINGS_DIR move the corpora and the findings (tests/bats/fuzz.bats).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
long=0
if [[ ${1:-} == --long ]]; then long=1; shift; fi
secs=${FUZZ_SECONDS:-$((long ? 300 : 60))}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1)); then
  echo "fuzz.sh: FUZZ_SECONDS must be a whole number of seconds >= 1, not '$secs'" >&2
  exit 2
fi
corpora=${FUZZ_CORPUS_DIR:-tests/fuzz/corpus}     # <target>/ under it
findings_root=${FUZZ_FINDINGS_DIR:-build/fuzz-findings}
bins=("$@")
((${#bins[@]})) || bins=(build/fuzz_*)

# Inputs longer than this are not tried (the parsers' own limits are tested
# by the unit tests); a journal, a tools file or a request needs more room.
max_len_of() {
  case $1 in
    fuzz_journal | fuzz_tools | fuzz_serve) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

found=0
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  if [[ ! -x $bin ]]; then
    echo "fuzz: $name: $bin is not built (make fuzz builds every target)" >&2
    found=1
    continue
  fi
  seeds=$corpora/$name
  mkdir -p "$seeds"
  findings=$findings_root/$name
  mkdir -p "$findings"
  work=$(mktemp -d /tmp/chidori-fuzz.XXXXXX)
  cp "$seeds"/* "$work"/ 2>/dev/null || true
  before=$(find "$seeds" -type f | wc -l)
  log=$findings/last.log
  start=$(date +%s)
  # The CPU seconds it had (user + system): on a shared machine, less than the wall time.
  TIMEFORMAT='%U %S'
  { time "$bin" -max_total_time="$secs" -max_len="$(max_len_of "$name")" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$work" >"$log" 2>&1; } 2>"$findings/cpu"
  rc=$?
  ran=$(($(date +%s) - start))
  cpu=$(awk '{printf "%d", $1 + $2}' "$findings/cpu" 2>/dev/null)
  if ((rc == 0)) && ((long)); then
    # New inputs that reach new code go back into the committed corpus.
    "$bin" -merge=1 -max_len="$(max_len_of "$name")" -timeout=10 -rss_limit_mb=2048 "$seeds" "$work" \
      >"$findings/merge.log" 2>&1 || { echo "fuzz: $name: merging into $seeds failed:"; tail -n 5 "$findings/merge.log"; rc=1; }
  fi
  rm -rf "$work"
  after=$(find "$seeds" -type f | wc -l)
  if ((rc == 0)); then
    result="no finding"
    echo "fuzz: $name: ${ran}s (${cpu:-?} CPU-seconds) without a finding (corpus $before -> $after inputs)"
  else
    result="FINDING"
    found=1
    repro=$(find "$findings" -maxdepth 1 -type f \( -name "crash-*" -o -name "leak-*" -o -name "timeout-*" -o -name "oom-*" -o -name "slow-unit-*" \) -printf "%T@ %p\n" | sort -rn | head -n 1 | cut -d" " -f2-)
    echo "fuzz: $name: FOUND something after ${ran}s; reproducer: ${repro:-none written (see $log)}"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -n 5 | sed 's/^/  /'
    tail -n 30 "$log" | sed 's/^/    /'
    echo "  rerun it: $bin ${repro:-CRASH_FILE}"
  fi
  ((long)) && printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$ran" "${cpu:-?}" "$result" >>"$findings_root/../fuzz-long.log"
done
exit $found
