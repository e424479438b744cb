#!/usr/bin/env bash
# The longest C functions of the project, longest first:
#   scripts/longest-functions.sh [N]        (default 10)
# A function is a line at column 0 that opens a definition (a name followed
# by "(" and no ";"), through the next "}" at column 0.  Prints
# "LINES FILE:LINE NAME" (issue 10: no function over ~100 lines without a
# stated reason; docs/architecture.md is to list the ten longest with theirs).
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
