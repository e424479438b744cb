#!/usr/bin/env bats
# scripts/fuzz.sh (make fuzz, make fuzz-long, make test's fuzz step): findings
# leave a reproducer and fail the command, fuzz-long grows the corpus, the short
# runs leave it alone.  Two tiny libFuzzer targets stand in for the real ones.
load helpers

REPO=$BATS_TEST_DIRNAME/../..

targets() {
  command -v clang >/dev/null || skip "clang is not installed"
  cat >"$T/ok.c" <<'C'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
        int s = 0;
        for (size_t i = 0; i < n && i < 8; i++)
                if (d[i] == "chidori!"[i]) s++; else break;
        return s > 100;
}
C
  cat >"$T/bug.c" <<'C'
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
        if (n >= 3 && d[0] == 'b' && d[1] == 'u' && d[2] == 'g')
                abort();
        return 0;
}
C
  clang -fsanitize=fuzzer "$T/ok.c" -o "$T/fuzz_ok"
  clang -fsanitize=fuzzer "$T/bug.c" -o "$T/fuzz_bug"
  mkdir -p "$T/corpus/fuzz_ok" "$T/corpus/fuzz_bug"
  printf 'chi' >"$T/corpus/fuzz_ok/seed"
  printf 'bu' >"$T/corpus/fuzz_bug/seed"
  export FUZZ_CORPUS_DIR=$T/corpus FUZZ_FINDINGS_DIR=$T/findings
}

@test "fuzz-long: a finding leaves its reproducer and fails the command; the other targets still run and grow their corpus" {
  targets
  run env FUZZ_SECONDS=10 "$REPO/scripts/fuzz.sh" --long "$T/fuzz_bug" "$T/fuzz_ok"
  [[ $status -eq 1 ]] || { echo "exit $status: $output"; return 1; }
  [[ $output == *"fuzz: fuzz_bug: FOUND something after "*"s; reproducer: $T/findings/fuzz_bug/crash-"* ]] || { echo "$output"; return 1; }
  repro=$(ls "$T"/findings/fuzz_bug/crash-*)
  [[ $(head -c 3 "$repro") == bug ]]
  [[ $output == *"fuzz: fuzz_ok: "*"s ("*" CPU-seconds) without a finding (corpus 1 -> "* ]] || { echo "$output"; return 1; }
  # what it found that reaches new code was merged back
  (($(ls "$T/corpus/fuzz_ok" | wc -l) > 1))
  [[ -f $T/corpus/fuzz_ok/seed ]]
  grep -q $'\tfuzz_ok\t.*\tno finding$' "$T/fuzz-long.log"
  grep -q $'\tfuzz_bug\t.*\tFINDING$' "$T/fuzz-long.log"
}

@test "fuzz (short runs, as make test does): the committed corpus is left as it was" {
  targets
  run env FUZZ_SECONDS=3 "$REPO/scripts/fuzz.sh" "$T/fuzz_ok"
  [[ $status -eq 0 ]] || { echo "exit $status: $output"; return 1; }
  [[ $output == *"fuzz: fuzz_ok: "*"without a finding (corpus 1 -> 1 inputs)"* ]] || { echo "$output"; return 1; }
  [[ $(ls "$T/corpus/fuzz_ok") == seed ]]
  [[ ! -e $T/fuzz-long.log ]]
}

@test "fuzz: FUZZ_SECONDS that is not a whole number is a usage error" {
  run env FUZZ_SECONDS=10s "$REPO/scripts/fuzz.sh" --long "$BUILD_DIR/fuzz_chan"
  [[ $status -eq 2 ]]
  [[ $output == *"FUZZ_SECONDS must be a whole number of seconds >= 1, not '10s'"* ]]
}
