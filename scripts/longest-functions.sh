#!/usr/bin/env bash
# The longest C functions of the project, longest first:
#   scripts/longest-functions.sh [N]        (default 10)
# A function is a line at column 0 that opens a definition (a name followed
# by "(" and no ";"), through the next "}" at column 0.  Prints
# "LINES FILE:LINE NAME".  docs/architecture.md lists the ten longest with
# the reason each is as long as it is; lint.sh fails on a function over 150
# lines that is not in that list.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
n=${1:-10}
git ls-files '*.c' | grep -vE '^(tests|build)/' | while read -r f; do
  awk -v file="$f" '
    /^[A-Za-z_][^;]*\(/ && !/;[[:space:]]*$/ && !/^(if|for|while|switch|return)/ && start == 0 {
      line = $0; sub(/\(.*/, "", line); k = split(line, w, /[ *]+/); name = w[k]; start = NR; next
    }
    start && /^}/ { printf "%d %s:%d %s\n", NR - start + 1, file, start, name; start = 0 }
    start && /^[A-Za-z_].*;[[:space:]]*$/ && !/^[[:space:]]/ { }
  ' "$f"
done | sort -rn | head -n "$n"
