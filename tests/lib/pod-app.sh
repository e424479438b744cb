#!/usr/bin/env bash
# tests/lib/pod-app.sh APPDIR: the app container's files of the pod scenario,
# shared by tests/bats/pod.bats and tests/vm/cases/50-pod-crun.sh: a secret and
# the server's token (what a box must not read), and tools.json with four probes:
# reading the secret and reaching the shared socket, each without and with the
# path bound in (the bound one must succeed, so "denied"/"unreachable" is the
# box's doing).
set -euo pipefail
app=$1
cat='cat /app/secret.txt >/dev/null 2>&1 && echo "\"read\"" || echo "\"denied\""'
sock='curl -s --max-time 5 --unix-socket /shared/s.sock http://x/healthz >/dev/null 2>&1 && echo "\"reached\"" || echo "\"unreachable\""'
jq -n --arg cat "$cat" --arg sock "$sock" '{
  app_file: {command: ["sh", "-c", $cat]},
  app_file_bound: {command: ["sh", "-c", $cat], ro_bind: ["/app/secret.txt"]},
  socket: {command: ["sh", "-c", $sock]},
  socket_bound: {command: ["sh", "-c", $sock], ro_bind: ["/shared"]}
}' >"$app/tools.json"
echo "the app container's secret" >"$app/secret.txt"
echo tok-pod-0123456789 >"$app/token"
chmod 644 "$app"/*
