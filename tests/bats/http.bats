#!/usr/bin/env bats
# fetch through the parent: the SSRF guard against real listeners on
# loopback (blocked without the allowlist, reachable with it), redirects,
# policy on every hop, caps, concurrency and replay.  The server is
# tests/servers/fake_http.py, started once for the file.
load helpers

setup_file() {
  SRVDIR=$(mktemp -d /tmp/chidori-http.XXXXXX)
  export SRVDIR
  # the battery's runs get a memory store of their own (not the user's)
  export XDG_STATE_HOME="$SRVDIR/state"
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.1 --port 0 >"$SRVDIR/port" 2>"$SRVDIR/log" &
  echo $! >"$SRVDIR/pid"
  python3 "$BATS_TEST_DIRNAME/../servers/fake_http.py" --host 127.0.0.2 --port 0 >"$SRVDIR/port2" 2>>"$SRVDIR/log" &
  echo $! >"$SRVDIR/pid2"
  for _ in $(seq 100); do [[ -s $SRVDIR/port && -s $SRVDIR/port2 ]] && break; sleep 0.05; done
  P=$(head -1 "$SRVDIR/port"); P2=$(head -1 "$SRVDIR/port2")
  export P P2
  # The battery: every URL below reaches (or would reach) a non-public
  # address.  One run without the allowlist, one with it.
  cat >"$SRVDIR/urls" <<URLS
reach http://127.0.0.1:$P/text?s=hi
reach http://localhost:$P/text?s=hi
reach http://LOCALHOST:$P/text?s=hi
reach http://2130706433:$P/text?s=hi
reach http://0x7f000001:$P/text?s=hi
reach http://0x7f.1:$P/text?s=hi
reach http://017700000001:$P/text?s=hi
reach http://0177.0.0.1:$P/text?s=hi
reach http://127.1:$P/text?s=hi
reach http://127.0.1:$P/text?s=hi
reach http://[::ffff:127.0.0.1]:$P/text?s=hi
reach http://[::ffff:7f00:1]:$P/text?s=hi
block http://127.0.0.2:$P2/text?s=hi
block http://0.0.0.0:$P/
block http://0:$P/
block http://[::]:$P/
block http://[::1]:$P/
block http://169.254.169.254/latest/meta-data/
block http://10.0.0.1/
block http://172.16.0.1/
block http://192.168.1.1/
block http://100.64.0.1/
block http://192.0.0.1/
block http://198.18.0.1/
block http://192.0.2.1/
block http://198.51.100.1/
block http://203.0.113.1/
block http://224.0.0.1/
block http://255.255.255.255/
block http://240.0.0.1/
block http://[fc00::1]/
block http://[fd12:3456::1]/
block http://[fe80::1]/
block http://[64:ff9b::7f00:1]:$P/
block http://[64:ff9b::a00:1]/
block http://[2002:7f00:1::1]/
block http://[::127.0.0.1]:$P/
block http://[::ffff:10.0.0.1]/
block http://[::ffff:169.254.169.254]/
URLS
  cat >"$SRVDIR/battery.js" <<'JS'
module.exports = async function (urls) {
  const out = {};
  await Promise.all(urls.map(async (u) => {
    try {
      const r = await fetch(u, { signal: undefined });
      out[u] = 'status ' + r.status + ' ' + (await r.text());
    } catch (e) {
      out[u] = 'error ' + (e.cause && e.cause.code) + ' ' + e.message;
    }
  }));
  return out;
};
JS
  jq -R -s 'split("\n") | map(select(length > 0) | split(" ")[1])' "$SRVDIR/urls" >"$SRVDIR/urls.json"
  "$CHIDORI" run --quiet --http-timeout 5000 --input-file "$SRVDIR/urls.json" \
    "$SRVDIR/battery.js" >"$SRVDIR/closed.json" 2>"$SRVDIR/closed.err" || true
  "$CHIDORI" run --quiet --http-timeout 5000 --allow-host 127.0.0.1 \
    --input-file "$SRVDIR/urls.json" "$SRVDIR/battery.js" >"$SRVDIR/open.json" 2>"$SRVDIR/open.err" || true
}

teardown_file() {
  kill "$(cat "$SRVDIR/pid")" "$(cat "$SRVDIR/pid2")" 2>/dev/null || true
  rm -rf "$SRVDIR"
}

# outcome FILE URL -> the agent's line for that URL
outcome() { jq -r --arg u "$2" '.[$u] // "missing"' "$SRVDIR/$1"; }

check_case() { # index into the battery
  local kind url got
  read -r kind url < <(sed -n "${1}p" "$SRVDIR/urls")
  got=$(outcome closed.json "$url")
  if [[ $got != "error ssrf fetch failed: http: destination host '"*"' is not public (SSRF guard); allow it with --allow-host" ]]; then
    echo "without the allowlist, $url gave: $got"; cat "$SRVDIR/closed.err"; return 1
  fi
  got=$(outcome open.json "$url")
  if [[ $kind == reach && $got != "status 200 hi" ]]; then
    echo "with --allow-host 127.0.0.1, $url gave: $got"; cat "$SRVDIR/open.err"; return 1
  fi
  if [[ $kind == block && $got == status* ]]; then
    echo "with --allow-host 127.0.0.1, $url was reached: $got"; return 1
  fi
}

@test "ssrf battery  1: 127.0.0.1" { check_case 1; }
@test "ssrf battery  2: localhost (a name that resolves to 127.0.0.1)" { check_case 2; }
@test "ssrf battery  3: LOCALHOST" { check_case 3; }
@test "ssrf battery  4: decimal 2130706433" { check_case 4; }
@test "ssrf battery  5: hex 0x7f000001" { check_case 5; }
@test "ssrf battery  6: 0x7f.1" { check_case 6; }
@test "ssrf battery  7: octal 017700000001" { check_case 7; }
@test "ssrf battery  8: 0177.0.0.1" { check_case 8; }
@test "ssrf battery  9: 127.1" { check_case 9; }
@test "ssrf battery 10: 127.0.1" { check_case 10; }
@test "ssrf battery 11: [::ffff:127.0.0.1]" { check_case 11; }
@test "ssrf battery 12: [::ffff:7f00:1]" { check_case 12; }
@test "ssrf battery 13: 127.0.0.2 (another loopback listener, not allowed)" { check_case 13; }
@test "ssrf battery 14: 0.0.0.0" { check_case 14; }
@test "ssrf battery 15: 0" { check_case 15; }
@test "ssrf battery 16: [::]" { check_case 16; }
@test "ssrf battery 17: [::1]" { check_case 17; }
@test "ssrf battery 18: 169.254.169.254 (cloud metadata)" { check_case 18; }
@test "ssrf battery 19: 10/8" { check_case 19; }
@test "ssrf battery 20: 172.16/12" { check_case 20; }
@test "ssrf battery 21: 192.168/16" { check_case 21; }
@test "ssrf battery 22: CGNAT 100.64/10" { check_case 22; }
@test "ssrf battery 23: 192.0.0/24" { check_case 23; }
@test "ssrf battery 24: benchmarking 198.18/15" { check_case 24; }
@test "ssrf battery 25: documentation 192.0.2/24" { check_case 25; }
@test "ssrf battery 26: documentation 198.51.100/24" { check_case 26; }
@test "ssrf battery 27: documentation 203.0.113/24" { check_case 27; }
@test "ssrf battery 28: multicast 224/4" { check_case 28; }
@test "ssrf battery 29: broadcast" { check_case 29; }
@test "ssrf battery 30: reserved 240/4" { check_case 30; }
@test "ssrf battery 31: unique-local fc00::/7" { check_case 31; }
@test "ssrf battery 32: unique-local fd00::/8" { check_case 32; }
@test "ssrf battery 33: link-local fe80::/10" { check_case 33; }
@test "ssrf battery 34: NAT64 of 127.0.0.1" { check_case 34; }
@test "ssrf battery 35: NAT64 of 10.0.0.1" { check_case 35; }
@test "ssrf battery 36: 6to4 of 127.0.0.1" { check_case 36; }
@test "ssrf battery 37: IPv4-compatible ::127.0.0.1" { check_case 37; }
@test "ssrf battery 38: IPv4-mapped 10.0.0.1" { check_case 38; }
@test "ssrf battery 39: IPv4-mapped metadata address" { check_case 39; }

@test "every refused address is named on the parent's stderr" {
  [[ $(grep -c "not public (SSRF guard)" "$SRVDIR/closed.err") -ge 30 ]]
  grep -q "refused 127.0.0.1 for call" "$SRVDIR/closed.err"
}

@test "the agent's SSRF error names the host it asked for, never the address it resolved to" {
  agent o.js <<'JS'
module.exports = async (urls) => {
  const out = [];
  for (const u of urls) {
    try { await fetch(u); out.push('reached ' + u); } catch (e) { out.push(e.message + ' | ' + e.cause.message + ' | ' + e.cause.code); }
  }
  return out;
};
JS
  chid run --quiet --journal "$T/j.jsonl" --input "[\"http://localhost:$P/\", \"http://127.0.0.1:$P/\", \"http://10.1.2.3/\"]" "$T/o.js"
  assert_status 0
  # a name: the agent learns only that it is not public, not what it means
  [[ $output == *"destination host 'localhost' is not public (SSRF guard)"*"| ssrf"* ]] || { echo "$output"; return 1; }
  local first=${output%%\",\"*}
  [[ $first != *127.0.0.1* && $first != *::1* ]] || { echo "the resolved address leaked: $first"; return 1; }
  # a literal: its own text, nothing more
  [[ $output == *"destination host '127.0.0.1' is not public"* && $output == *"destination host '10.1.2.3' is not public"* ]] ||
    { echo "$output"; return 1; }
  [[ $output != *loopback* && $output != *private* && $output != *RFC* ]] || { echo "the class leaked: $output"; return 1; }
  # the operator's stderr and the journal name the address and why
  assert_stderr_has "http: refused 127.0.0.1 for call 1 (http://localhost:$P/): loopback"
  assert_stderr_has "http: refused 10.1.2.3 for call 3 (http://10.1.2.3/): private"
  grep '"kind":"ssrf"' "$T/j.jsonl" | grep -q 'refused 127.0.0.1 for call 1 (http://localhost'
}

@test "a redirect from an allowed host to a private address is refused at the hop" {
  agent r.js <<JS
module.exports = async () => {
  try { await fetch('http://127.0.0.1:$P/redirect?to=' + encodeURIComponent('http://127.0.0.2:$P2/text?s=secret')); return 'reached'; }
  catch (e) { return e.message; }
};
JS
  chid run --quiet --allow-host "127.0.0.1:$P" "$T/r.js"
  assert_status 0
  [[ $output == *"destination host '127.0.0.2' is not public (SSRF guard)"* ]] || { echo "$output"; return 1; }
  # The same redirect with the second host allowed too is followed.
  chid run --quiet --allow-host "127.0.0.1:$P" --allow-host "127.0.0.2" "$T/r.js"
  assert_status 0
  assert_stdout '"reached"'
}

@test "CHIDORI_HTTP_ALLOW_HOSTS is the same allowlist" {
  agent e.js <<JS
module.exports = async () => (await fetch('http://127.0.0.1:$P/text?s=env')).text();
JS
  CHIDORI_HTTP_ALLOW_HOSTS="example.org,127.0.0.1:$P" chid run --quiet "$T/e.js"
  assert_status 0
  assert_stdout '"env"'
  CHIDORI_HTTP_ALLOW_HOSTS="127.0.0.1:1" chid run --quiet "$T/e.js"
  assert_status 1
  assert_stderr_has "is not public (SSRF guard)"
  CHIDORI_HTTP_ALLOW_HOSTS="bad host!" chid run --quiet "$T/e.js"
  assert_status 2
  assert_stderr_has "CHIDORI_HTTP_ALLOW_HOSTS"
}

@test "policy: url_prefix allows its API and not a hostile URL carrying it in the query" {
  cat >"$T/pol.json" <<POL
{"rules": [{"target": "http", "decision": "always_allow", "match_args": {"url_prefix": "http://127.0.0.1:$P/text"}}],
 "default": "never_allow", "default_reason": "only the text API"}
POL
  agent p.js <<JS
module.exports = async () => {
  const ok = await (await fetch('http://127.0.0.1:$P/text?s=allowed')).text();
  let denied;
  try { await fetch('http://127.0.0.1:$P/echo?u=http://127.0.0.1:$P/text'); } catch (e) { denied = e.message + ' ' + e.cause.code; }
  return [ok, denied];
};
JS
  CHIDORI_POLICY_FILE="$T/pol.json" chid run --quiet --allow-host 127.0.0.1 --journal "$T/j" "$T/p.js"
  assert_status 0
  [[ $output == *'"allowed"'* && $output == *'policy: `http` denied: only the text API EPOLICY'* ]] || { echo "$output"; return 1; }
  assert_stderr_has 'policy: `http` denied: only the text API'
  grep -q '"kind":"denied"' "$T/j"
}

@test "policy is checked again on every redirect hop" {
  cat >"$T/pol.json" <<POL
{"rules": [{"target": "http", "decision": "always_allow", "match_args": {"url_prefix": "http://127.0.0.1:$P/redirect"}}],
 "default": "never_allow"}
POL
  agent h.js <<JS
module.exports = async () => {
  try { await fetch('http://127.0.0.1:$P/redirect?to=' + encodeURIComponent('http://127.0.0.1:$P/text?s=x')); return 'followed'; }
  catch (e) { return e.message; }
};
JS
  CHIDORI_POLICY_FILE="$T/pol.json" chid run --quiet --allow-host 127.0.0.1 "$T/h.js"
  assert_status 0
  [[ $output == *'policy: `http` denied'*'redirect to http://127.0.0.1'* ]] || { echo "$output"; return 1; }
}

@test "ask_before refuses on the CLI unless CHIDORI_POLICY_AUTO_APPROVE=1" {
  agent a.js <<JS
module.exports = async () => (await fetch('http://127.0.0.1:$P/text?s=approved')).text();
JS
  CHIDORI_POLICY_PROFILE=supervised chid run --quiet --allow-host 127.0.0.1 "$T/a.js"
  assert_status 1
  assert_stderr_has 'needs approval'
  assert_stderr_has 'CHIDORI_POLICY_AUTO_APPROVE=1'
  CHIDORI_POLICY_PROFILE=supervised CHIDORI_POLICY_AUTO_APPROVE=1 chid run --quiet --allow-host 127.0.0.1 "$T/a.js"
  assert_status 0
  assert_stdout '"approved"'
}

@test "the response cap fails cleanly and is configurable" {
  agent big.js <<JS
module.exports = async () => {
  try { const r = await fetch('http://127.0.0.1:$P/bytes?n=2000000'); return (await r.arrayBuffer()).byteLength; }
  catch (e) { return e.message; }
};
JS
  chid run --quiet --allow-host 127.0.0.1 --http-max-response 1M "$T/big.js"
  assert_status 0
  assert_stdout "\"fetch failed: http: response exceeds the 1048576-byte limit\""
  chid run --quiet --allow-host 127.0.0.1 "$T/big.js"
  assert_status 0
  assert_stdout '2000000'
}

@test "fetch is binary-safe both ways and replays byte for byte" {
  agent bin.js <<JS
module.exports = async () => {
  const body = new Uint8Array(256); for (let i = 0; i < 256; i++) body[i] = i;
  const r = await fetch('http://127.0.0.1:$P/echo', { method: 'POST', body, headers: { 'x-test': 'yes' } });
  const j = await r.json();
  const back = Uint8Array.from(atob(j.body_base64), (c) => c.charCodeAt(0));
  const bytes = new Uint8Array(await (await fetch('http://127.0.0.1:$P/bytes?n=1000')).arrayBuffer());
  let sum = 0; for (const b of bytes) sum = (sum * 31 + b) >>> 0;
  return { method: j.method, header: j.headers['x-test'], same: back.every((b, i) => b === i) && back.length === 256, n: bytes.length, sum };
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j" "$T/bin.js"
  assert_status 0
  first=$output
  [[ $first == *'"method":"POST"'*'"header":"yes"'*'"same":true'*'"n":1000'* ]] || { echo "$first"; return 1; }
  kill -STOP "$(cat "$SRVDIR/pid")"  # replay performs nothing: the server may as well be frozen
  chid replay --quiet "$T/j"
  kill -CONT "$(cat "$SRVDIR/pid")"
  assert_status 0
  assert_stdout "$first"
}

@test "a small body that has all arrived comes with the fetch's head: one host call per fetch, its replay the same bytes" {
  agent small.js <<JS
module.exports = async () => {
  const a = await (await fetch('http://127.0.0.1:$P/text?s=h%C3%A9llo')).text();
  const r = await fetch('http://127.0.0.1:$P/bytes?n=1000');
  const u = new Uint8Array(await r.arrayBuffer());
  let sum = 0; for (const b of u) sum = (sum * 31 + b) >>> 0;
  const reader = (await fetch('http://127.0.0.1:$P/text?s=piece')).body.getReader();
  const first = await reader.read(), end = await reader.read();
  return [a, u.length, sum, new TextDecoder().decode(first.value), end.done];
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j" "$T/small.js"
  assert_status 0
  first=$output
  [[ $first == '["héllo",1000,'*',"piece",true]' ]] || { echo "$first"; return 1; }
  # Three fetches, three http calls each answered with its body; no http.read.
  (( $(grep -c '"op":"http",' "$T/j") == 3 ))
  (( $(grep -c '"op":"http",.*"body_base64":' "$T/j") == 3 ))
  ! grep -q '"op":"http.read"' "$T/j"
  kill -STOP "$(cat "$SRVDIR/pid")"
  chid replay --quiet "$T/j"
  kill -CONT "$(cat "$SRVDIR/pid")"
  assert_status 0
  assert_stdout "$first"
}

@test "a journal written when every body was streamed (http.read) still replays, byte for byte" {
  # tests/journals/fetch-streamed-0.1.0.jsonl: recorded before small bodies
  # came with the head; each fetch there is an http call and its http.read.
  J="$BATS_TEST_DIRNAME/../journals"
  grep -q '"op":"http.read"' "$J/fetch-streamed-0.1.0.jsonl"
  kill -STOP "$(cat "$SRVDIR/pid")"
  chid replay --quiet --agent "$J/fetch-small.js" "$J/fetch-streamed-0.1.0.jsonl"
  kill -CONT "$(cat "$SRVDIR/pid")"
  assert_status 0
  assert_stdout '["héllo","chidori",200,300,32551]'
}

@test "100 concurrent fetches to a 50 ms endpoint run at once, not in a queue" {
  agent c.js <<JS
module.exports = async () => {
  const t0 = Date.now();
  const rs = await Promise.all(Array.from({ length: 100 }, (_, i) => fetch('http://127.0.0.1:$P/delay?ms=50&i=' + i).then((r) => r.text())));
  return { ok: rs.filter((t) => t === 'ok').length, ms: Date.now() - t0 };
};
JS
  chid run --quiet --allow-host 127.0.0.1 --journal "$T/j" "$T/c.js"
  assert_status 0
  first=$output
  ms=$(echo "$output" | jq .ms)
  echo "100 fetches took $ms ms in the agent" >&3
  [[ $(echo "$output" | jq .ok) == 100 && $ms -lt 1000 ]] || { echo "$output"; return 1; }
  # A queue would take 100 x 50 ms; replay serves the answers in the recorded order.
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout "$first"
}

@test "only http and https; errors name the cause" {
  agent s.js <<JS
module.exports = async () => {
  const out = [];
  for (const u of ['file:///etc/passwd', 'ftp://127.0.0.1/', 'gopher://127.0.0.1:70/', 'http://127.0.0.1:1/']) {
    try { await fetch(u); out.push('reached ' + u); } catch (e) { out.push(e.message); }
  }
  return out;
};
JS
  chid run --quiet --allow-host 127.0.0.1 "$T/s.js"
  assert_status 0
  [[ $(echo "$output" | jq -r '.[0:3][]' | grep -c -i "scheme\|only http") -eq 3 ]] || { echo "$output"; return 1; }
  [[ $output != *reached* ]]
}

@test "proxy variables are ignored and the total timeout applies" {
  agent x.js <<JS
module.exports = async () => {
  const ok = await (await fetch('http://127.0.0.1:$P/text?s=direct')).text();
  let slow; try { await fetch('http://127.0.0.1:$P/delay?ms=3000'); slow = 'waited'; } catch (e) { slow = e.cause.code; }
  return [ok, slow];
};
JS
  http_proxy=http://127.0.0.1:1 HTTP_PROXY=http://127.0.0.1:1 ALL_PROXY=http://127.0.0.1:1 \
    chid run --quiet --allow-host 127.0.0.1 --http-timeout 500 "$T/x.js"
  assert_status 0
  assert_stdout '["direct","timeout"]'
}

@test "a host name is resolved by the broker (glibc's resolver, sendmmsg in its filter): a name that does not resolve is the agent's error, not a dead broker" {
  agent dns.js <<'JS'
module.exports = async () => { try { await fetch("http://no-such-host.invalid/"); return "fetched"; } catch (e) { return e.cause && e.cause.code; } };
JS
  chid run --quiet "$T/dns.js"
  assert_status 0
  [[ $output == '"network"' ]] || { echo "$output"; echo "$stderr"; false; }
  [[ $stderr != *"closed the channel"* ]]
}
