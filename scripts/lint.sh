#!/usr/bin/env bash
# Banned calls (unbounded or unchecked) in our own C sources.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=$(grep -nE '\b(sprintf|vsprintf|strcpy|strcat|gets|atoi|atol|system|popen)\s*\(' \
      --include='*.c' --include='*.h' -r common proto chan monitor broker cli sandbox runtime policy effects engine server tests 2>/dev/null)
if [[ -n $bad ]]; then
  echo "lint: banned calls:"; echo "$bad"; exit 1
fi
echo "lint: ok"
