#!/usr/bin/env bats
# The pod scenario (issue 13): `chidori serve` inside a real OCI container
# started with runc, configured as deploy/kubernetes configures the pod (its
# own user namespace, read-only root, no capabilities, no_new_privileges,
# the shipped seccomp profile deploy/seccomp/chidori.json), and the host
# talking to it through the shared folder's unix socket (the "emptyDir").
# Each container gets its own runc state dir and id, deleted in teardown.
load helpers

setup() {
  T=$(mktemp -d /tmp/chidori-pod.XXXXXX)
  command -v runc >/dev/null || skip "runc is not installed (Debian package runc; scripts/deps.sh installs it)"
  [[ $(id -u) == 0 ]] || skip "runc needs root to start a container"
  TREE=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  BIN=$(readlink -f "$CHIDORI")
  [[ $BIN == "$TREE"/* ]] || skip "the binary under test ($BIN) is not inside the tree ($TREE) bound into the container"
  PROFILE=$TREE/deploy/seccomp/chidori.json
  RUNC=(runc --root "$T/runc")
  IDS=()
  chmod 755 "$T"
  mkdir -p "$T/app" "$T/shared"
  # uid 1000 of the pod's user namespace is 101000 outside (bundle.sh maps 0..65535 -> 100000..)
  chown 101000:101000 "$T/shared"
  cat >"$T/app/agent.js" <<'JS'
async function main(input) {
  if (input && input.do === "bomb") {
    const keep = [];
    for (let i = 0; i < 1536; i++) keep.push(new Uint8Array(1 << 20).fill(i & 255));
    let spin = 0;
    for (let i = 0; i < 3e8; i++) spin += i & 1;
    return "survived " + keep.length + " MiB";
  }
  if (input && input.tool) return await chidori.tool(input.tool, {});
  return { hello: "from the pod" };
}
JS
  "$TREE/tests/lib/pod-app.sh" "$T/app" # the secret, the token, four probe tools
}

teardown() {
  local id
  for id in "${IDS[@]}"; do "${RUNC[@]}" delete -f "$id" >/dev/null 2>&1 || true; done
  rm -rf "$T"
}

# bundle NAME SECCOMP -- ARGS...: an OCI bundle in $T/NAME (env POD_UID,
# POD_MASK, POD_CAPS as tests/lib/pod-bundle.sh reads them).
bundle() {
  local name=$1 sc=$2
  shift 3
  "$TREE/tests/lib/pod-bundle.sh" "$T/$name" "$TREE" "$T/shared" "$T/app" "$sc" 1 -- "$BIN" "$@" >/dev/null
}

# pod_run NAME SECCOMP -- ARGS...: run to the end in the foreground: $status, $output, $stderr.
pod_run() {
  local name=$1
  bundle "$@"
  IDS+=("chidori-pod-$name-$$")
  set +e
  (cd "$T/$name" && timeout 120 "${RUNC[@]}" run "chidori-pod-$name-$$" >"$T/.stdout" 2>"$T/.stderr" </dev/null)
  status=$?
  set -e
  output=$(cat "$T/.stdout")
  stderr=$(cat "$T/.stderr")
}

# pod_serve SECCOMP [SERVE OPTIONS...]: the sidecar, detached, on /shared/s.sock; waits for the socket.
pod_serve() {
  local sc=$1
  shift
  bundle serve "$sc" -- serve /app/agent.js --listen unix:/shared/s.sock --token-file /app/token \
    --tools /app/tools.json --trusted --memory 128M "$@"
  IDS+=("chidori-pod-serve-$$")
  (cd "$T/serve" && "${RUNC[@]}" run -d "chidori-pod-serve-$$" >"$T/serve.out" 2>"$T/serve.err" </dev/null)
  local i
  for ((i = 0; i < 200; i++)); do
    [[ -S $T/shared/s.sock ]] && return 0
    sleep 0.05
  done
  echo "no socket after 10 s:"; cat "$T/serve.err"; return 1
}

# session INPUT: POST /sessions through the emptyDir's socket: $code, $body.
session() {
  body=$(curl -sS --max-time 120 --unix-socket "$T/shared/s.sock" -H 'Authorization: Bearer tok-pod-0123456789' \
    -H 'Content-Type: application/json' -d "{\"input\": $1}" -w '\n%{http_code}' http://pod/sessions)
  code=${body##*$'\n'}
  body=${body%$'\n'*}
}

@test "pod: serve in a runc container (own user namespace, runAsUser 1000, no capabilities, read-only root, the shipped seccomp profile): hello, memory bomb, the box reaches neither the socket nor the app's files" {
  POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_serve "$PROFILE" --health-listen 0.0.0.0:8081
  grep -q '^Health: http://0.0.0.0:8081 ' "$T/serve.err" || { cat "$T/serve.err"; false; }
  session '{}'
  [[ $code == 201 ]] || { echo "$code $body"; cat "$T/serve.err"; false; }
  [[ $(jq -c '[.status, .exit, .result.hello]' <<<"$body") == '["done",0,"from the pod"]' ]] || { echo "$body"; false; }
  # The memory ceiling holds without a writable cgroup (the watchdog): 137.
  session '{"do": "bomb"}'
  [[ $(jq -c '[.status, .exit]' <<<"$body") == '["failed",137]' ]] || { echo "$body"; false; }
  # A session's box cannot read the app container's files nor reach the sidecar's socket...
  session '{"tool": "app_file"}'
  [[ $(jq -c .result <<<"$body") == '"denied"' ]] || { echo "$body"; false; }
  session '{"tool": "socket"}'
  [[ $(jq -c .result <<<"$body") == '"unreachable"' ]] || { echo "$body"; false; }
  # ...while the same probes succeed when the path is bound into the box.
  session '{"tool": "app_file_bound"}'
  [[ $(jq -c .result <<<"$body") == '"read"' ]] || { echo "$body"; false; }
  session '{"tool": "socket_bound"}'
  [[ $(jq -c .result <<<"$body") == '"reached"' ]] || { echo "$body"; false; }
  # The kubelet's probes on the pod's address (--health-listen): no token, nothing else served.
  local probe
  probe=$("${RUNC[@]}" exec --user 1000:1000 "chidori-pod-serve-$$" curl -s -w ' %{http_code}' http://127.0.0.1:8081/readyz)
  [[ $probe == *' 200' ]] || { echo "$probe"; false; }
  probe=$("${RUNC[@]}" exec --user 1000:1000 "chidori-pod-serve-$$" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8081/sessions)
  [[ $probe == 404 ]] || { echo "$probe"; false; }
}

@test "pod: doctor --json inside says which layers apply (the real box starts; no writable cgroup)" {
  POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run doctor "$PROFILE" -- doctor --json --require
  assert_status 78 # the memory ceiling's cgroup is core for --require, and a runc container here has none writable
  [[ $(jq -c '[.box.started, .mapping.box_root, .mapping.outside_uid, .cgroup.writable, .missing_core, .exit]' <<<"$output") == \
     '[true,"self",1000,false,1,78]' ]] || { echo "$output"; false; }
  local l
  for l in user pid mount net ipc uts cgroupns seccomp landlock broker; do
    [[ $(jq -r --arg l "$l" '.layers[] | select(.name == $l) | .state' <<<"$output") == ok ]] || { echo "$l: $output"; false; }
  done
  [[ $(jq -r '.layers[] | select(.name == "cgroup") | .state' <<<"$output") == missing ]]
}

@test "pod: root without CAP_SETUID/CAP_SETGID takes the rootless mapping, says so in the banner, and doctor agrees" {
  POD_UID=0 POD_MASK=0 POD_CAPS=CAP_SETFCAP pod_run run "$PROFILE" -- run /app/agent.js
  assert_status 0
  [[ $output == '{"hello":"from the pod"}' ]] || { echo "$output"; echo "$stderr"; false; }
  assert_stderr_has "box root is uid 0 outside, the rootless mapping (no CAP_SETUID/CAP_SETGID to map it to uid 65534)"
  assert_stderr_has "broker: uid 0 of its own user namespace, no capabilities"
  POD_UID=0 POD_MASK=0 POD_CAPS=CAP_SETFCAP pod_run doctor "$PROFILE" -- doctor --json
  [[ $(jq -c '[.box.started, .mapping.box_root, .mapping.outside_uid]' <<<"$output") == '[true,"self",0]' ]] || { echo "$output"; false; }
  [[ $(jq -r '.layers[] | select(.name == "user") | .state' <<<"$output") == degraded ]] || { echo "$output"; false; }
}

@test "pod: root with no capability at all cannot map any id: run refuses (78) naming the fix; doctor says the same" {
  POD_UID=0 POD_MASK=0 POD_CAPS="" pod_run run "$PROFILE" -- run /app/agent.js
  assert_status 78
  assert_stderr_has "root with no CAP_SETUID/CAP_SETGID to map it to uid 65533 nor CAP_SETFCAP to map it to uid 0"
  assert_stderr_has "run as a non-root user"
  POD_UID=0 POD_MASK=0 POD_CAPS="" pod_run doctor "$PROFILE" -- doctor --json --require
  assert_status 78
  [[ $(jq -c '[.mapping.box_root, .mapping.outside_uid, .box.started]' <<<"$output") == '["none",null,false]' ]] || { echo "$output"; false; }
  [[ $(jq -r '.layers[] | select(.name == "broker") | .state' <<<"$output") == missing ]]
}

@test "pod: runc's default masked /proc paths (procMount: Default): no fresh /proc for the box; run and doctor say procMount: Unmasked" {
  POD_UID=1000 POD_MASK=1 POD_CAPS="" pod_run run "$PROFILE" -- run /app/agent.js
  assert_status 70
  assert_stderr_has "mount a fresh /proc (the /proc of this container has paths masked by its runtime"
  assert_stderr_has "procMount: Unmasked"
  POD_UID=1000 POD_MASK=1 POD_CAPS="" pod_run doctor "$PROFILE" -- doctor --json
  [[ $(jq -r .box.started <<<"$output") == false && $(jq -r .box.error <<<"$output") == *"procMount: Unmasked"* ]] || { echo "$output"; false; }
  [[ $(jq -r '.layers[] | select(.name == "mount") | .state' <<<"$output") == missing ]]
}

@test "pod: a runtime-default-like seccomp profile (no clone3, unshare, mount, namespace clone flags): doctor shows the loss; serve --require-sandbox refuses loudly" {
  jq '.syscalls[0].names -= ["clone3", "unshare", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "mount_setattr"]
      | .syscalls[1].names -= ["clone"]
      | .syscalls += [{names: ["clone3"], action: "SCMP_ACT_ERRNO", errnoRet: 38},
                      {names: ["clone"], action: "SCMP_ACT_ALLOW",
                       args: [{index: 0, value: 2114060288, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ"}]}]' \
    "$PROFILE" >"$T/runtime-default.json"
  POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run doctor "$T/runtime-default.json" -- doctor --json --require
  assert_status 78
  [[ $(jq -r .box.started <<<"$output") == false ]] || { echo "$output"; false; }
  local l
  for l in user pid mount net broker; do
    [[ $(jq -r --arg l "$l" '.layers[] | select(.name == $l) | .state' <<<"$output") == missing ]] || { echo "$l: $output"; false; }
  done
  [[ $(jq -r '.layers[] | select(.name == "broker") | .reason' <<<"$output") == *"deploy/seccomp/chidori.json"* ]]
  POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run serve "$T/runtime-default.json" -- \
    serve /app/agent.js --listen unix:/shared/s.sock --token-file /app/token --require-sandbox
  assert_status 78
  assert_stderr_has "start the broker in new user, pid and mount namespaces (clone3; in a container, a seccomp profile that refuses clone3"
  assert_stderr_has "deploy/seccomp/chidori.json"
  [[ ! -S $T/shared/s.sock ]]
}

@test "pod: the shipped seccomp profile is an allowlist (not Unconfined), x86_64, and denies what chidori does not call" {
  [[ $(jq -r .defaultAction "$PROFILE") == SCMP_ACT_ERRNO ]]
  [[ $(jq -r '.architectures | join(",")' "$PROFILE") == SCMP_ARCH_X86_64 ]]
  [[ $(jq -r '[.syscalls[] | .action] | unique | join(",")' "$PROFILE") == SCMP_ACT_ALLOW ]]
  local s
  for s in clone3 unshare mount pivot_root landlock_restrict_self seccomp execve; do
    jq -e --arg s "$s" '[.syscalls[].names[]] | index($s)' "$PROFILE" >/dev/null || { echo "$s not allowed"; false; }
  done
  for s in ptrace kexec_load init_module bpf setns keyctl add_key userfaultfd perf_event_open; do
    ! jq -e --arg s "$s" '[.syscalls[].names[]] | index($s)' "$PROFILE" >/dev/null || { echo "$s allowed"; false; }
  done
}
