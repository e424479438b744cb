#!/usr/bin/env bash
# The pod scenario (issue 13) under Debian's crun in the cgroup-v2 guest: `chidori serve`
# in an OCI container configured as deploy/kubernetes configures the pod (its own user
# namespace 0..65535 -> 100000.., uid 1000, no capabilities, no_new_privileges,
# read-only root, procMount Unmasked, the shipped seccomp profile
# deploy/seccomp/chidori.json; the bundle is tests/lib/pod-bundle.sh, as pod.bats's
# under runc), in a cgroup namespace with its own read-write cgroup2 mount and the
# container's cgroup made by crun's cgroupfs manager under this case's cgroup. crun
# delegates that cgroup to the container's root (uid 0 of the pod); a createRuntime hook
# hands it to the server's uid 1000 instead (what systemd's Delegate= does for a user).
# From the guest's root, through the shared folder's unix socket: doctor --json inside
# (cgroup v2 writable, every layer ok); hello; serve, the container's process, moved into
# chidori-launcher before its broker started; a memory bomb killed by the kernel in
# the box's cgroup (oom_kill counted in the container's memory.events); the box reaches
# neither the socket nor the app's files (the same probes succeed with the path bound
# in). Without the hand-over (crun's delegation only) uid 1000 cannot write the cgroup:
# doctor says so and --require refuses (78), while the pod's root with CAP_SETUID and
# CAP_SETGID gets it. A runtime-default-like profile: doctor shows the namespace
# layers missing and serve --require-sandbox refuses (78) naming the profile.
# vm-timeout: 240
# vm-users: root
# vm-include: /usr/bin/crun /usr/bin/jq /usr/bin/curl
# shellcheck source=tests/vm/lib.sh
. "$CHIDORI_VM_LIB"

vm_need_chidori
command -v crun >/dev/null || vm_skip "crun is not installed on the host (Debian package crun; scripts/deps.sh installs it)"
command -v jq >/dev/null && command -v curl >/dev/null || vm_fail "no jq or curl in the image"
PROFILE="$REPO/deploy/seccomp/chidori.json"
[ -f "$PROFILE" ] || vm_fail "no $PROFILE in the image"
T="$TMPDIR"
chmod 755 "$T"                     # the pod's uids (100000..) must reach the bundles
CRUN=(crun --root "$T/crun")
CGREL="${CG#/sys/fs/cgroup}"       # the case's cgroup as crun's cgroupsPath sees it
IDS=()
cleanup() { local id; for id in "${IDS[@]}"; do "${CRUN[@]}" delete -f "$id" >/dev/null 2>&1; done; }
trap cleanup EXIT
vm_check "enter a leaf, enable memory/pids/cpu in $CG" vm_enter_leaf self
echo "  crun: $(crun --version | head -1); cgroup: $(grep ' /sys/fs/cgroup ' /proc/mounts)"

mkdir -p "$T/app" "$T/shared"
chown 101000:101000 "$T/shared"    # uid 1000 of the pod is 101000 here
cat >"$T/app/agent.js" <<'JS'
async function main(input) {
  if (input && input.do === "bomb") {
    const keep = [];
    for (let i = 0; i < 384; i++) keep.push(new Uint8Array(1 << 20).fill(i & 255));
    return "survived " + keep.length + " MiB";
  }
  if (input && input.tool) return await chidori.tool(input.tool, {});
  return { hello: "from the pod" };
}
JS
"$REPO/tests/lib/pod-app.sh" "$T/app" # the secret, the token, four probe tools

# bundle NAME SECCOMP DELEGATE -- CMD...: an OCI bundle in $T/NAME, its cgroup
# $CG/pod-NAME (crun's cgroupfs manager, read-write cgroup2 mount in the container's
# cgroup namespace). DELEGATE=1 adds the createRuntime hook that hands the cgroup to
# POD_UID (its directory, cgroup.procs, cgroup.subtree_control, cgroup.threads).
bundle() {
  local name=$1 sc=$2 del=$3 o=$((100000 + ${POD_UID:-0}))
  shift 4
  POD_RUNTIME=crun POD_CGROUP="$CGREL/pod-$name" POD_CGROUP_MOUNT=rw \
    "$REPO/tests/lib/pod-bundle.sh" "$T/$name" "$REPO" "$T/shared" "$T/app" "$sc" 1 -- "$@" >/dev/null ||
    vm_fail "pod-bundle.sh $name"
  if [ "$del" = 1 ]; then
    local d="$CG/pod-$name"
    jq --arg o "$o:$o" --arg d "$d" '.hooks.createRuntime = [{path: "/bin/sh", args: ["sh", "-c",
        "chown \($o) \($d) \($d)/cgroup.procs \($d)/cgroup.subtree_control \($d)/cgroup.threads"]}]' \
      "$T/$name/config.json" >"$T/$name/c.tmp" && mv "$T/$name/c.tmp" "$T/$name/config.json"
  fi
}

# pod_run NAME SECCOMP DELEGATE -- ARGS...: chidori ARGS in a container, run in the foreground (vm_run: RC, OUT, ERR).
pod_run() {
  local name=$1 sc=$2 del=$3
  shift 4
  bundle "$name" "$sc" "$del" -- "$CHIDORI" "$@"
  IDS+=("pod-$name")
  vm_run "$name" 60 "${CRUN[@]}" run --bundle "$T/$name" "pod-$name"
}

# layer NAME: that layer's state in the last doctor --json.
layer() { jq -r --arg l "$1" '.layers[] | select(.name == $l) | .state' "$LAST.out"; }

# session INPUT: POST /sessions through the shared folder's socket: $code, $body.
session() {
  body=$(curl -sS --max-time 100 --unix-socket "$T/shared/s.sock" -H 'Authorization: Bearer tok-pod-0123456789' \
    -H 'Content-Type: application/json' -d "{\"input\": $1}" -w '\n%{http_code}' http://pod/sessions)
  code=${body##*$'\n'}
  body=${body%$'\n'*}
  echo "  POST $1 -> $code $(echo "$body" | jq -c '{status, exit, result, error}' 2>/dev/null || echo "$body")"
}

# ---- doctor --json with the cgroup handed to uid 1000 -------------------------------
POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run doctor "$PROFILE" 1 -- doctor --json --require
vm_expect_rc 0 "doctor --json --require in the delegated container"
got=$(jq -c '[.box.started, .mapping.box_root, .mapping.outside_uid, .cgroup.version, .cgroup.writable, .missing_core, .exit]' "$LAST.out")
[ "$got" = '[true,"self",1000,2,true,0,0]' ] || vm_fail "doctor: $got, expected [true,\"self\",1000,2,true,0,0]"
for l in user pid mount net ipc uts cgroupns seccomp landlock broker cgroup; do
  [ "$(layer $l)" = ok ] || vm_fail "doctor: layer $l is '$(layer $l)', expected ok"
done
echo "  ok: doctor --json: every layer ok, the memory ceiling's cgroup among them (cgroup v2, writable)"

# ---- serve, delegated: hello, the bomb, the box's reach -----------------------------
# serve alone in the container's cgroup, as the manifests start it: the monitor moves
# into chidori-launcher before it starts the broker (else both would stay in the cgroup
# and no controller could be enabled below it: every session on the watchdog).
POD_UID=1000 POD_MASK=0 POD_CAPS="" bundle serve "$PROFILE" 1 -- "$CHIDORI" serve /app/agent.js \
  --listen unix:/shared/s.sock --token-file /app/token --tools /app/tools.json --trusted --memory 128M
IDS+=(pod-serve)
"${CRUN[@]}" run -d --bundle "$T/serve" pod-serve >"$T/serve.out" 2>"$T/serve.err" </dev/null ||
  { cat "$T/serve.err"; vm_fail "crun run -d serve"; }
i=0
while [ ! -S "$T/shared/s.sock" ]; do
  i=$((i + 1)); [ $i -le 600 ] || { cat "$T/serve.err"; vm_fail "no socket after 60 s"; }
  sleep 0.1
done
PCG="$CG/pod-serve"
session '{}'
[ "$code" = 201 ] || vm_fail "hello: HTTP $code"
[ "$(echo "$body" | jq -c '[.status, .exit, .result.hello]')" = '["done",0,"from the pod"]' ] || vm_fail "hello: $body"
[ -n "$(cat "$PCG/chidori-launcher/cgroup.procs" 2>/dev/null)" ] && [ -z "$(cat "$PCG/cgroup.procs")" ] ||
  vm_fail "serve did not move into $PCG/chidori-launcher: $(find "$PCG" -name cgroup.procs -exec sh -c 'echo "$1: $(cat "$1" | tr "\n" " ")"' _ {} \;)"
echo "  ok: serve's monitor and broker are in $PCG/chidori-launcher, the sessions' cgroups beside it"
oom0=$(sed -n 's/^oom_kill //p' "$PCG/memory.events")
session '{"do": "bomb"}'
[ "$(echo "$body" | jq -c '[.status, .exit, .error.name]')" = '["failed",137,"MemoryLimit"]' ] ||
  vm_fail "bomb: $(echo "$body" | jq -c '[.status, .exit, .error.name]'), expected [\"failed\",137,\"MemoryLimit\"]"
oom1=$(sed -n 's/^oom_kill //p' "$PCG/memory.events")
[ "${oom1:-0}" -gt "${oom0:-0}" ] || vm_fail "the container's memory.events oom_kill stayed at ${oom0:-?}: not the cgroup's kill"
echo "  ok: the bomb ended 137 MemoryLimit, killed by the kernel in its cgroup (oom_kill $oom0 -> $oom1 in $PCG)"
for p in app_file:denied app_file_bound:read socket:unreachable socket_bound:reached; do
  session "{\"tool\": \"${p%%:*}\"}"
  [ "$(echo "$body" | jq -r .result)" = "${p#*:}" ] || vm_fail "tool ${p%%:*}: $(echo "$body" | jq -c .result), expected ${p#*:}"
done
echo "  ok: the box reads neither /app nor the socket; bound in, the same probes do"
sed -n '1,12s/^/    serve| /p' "$T/serve.err"
"${CRUN[@]}" kill pod-serve KILL >/dev/null 2>&1

# ---- crun's own delegation only: to the pod's root, not to uid 1000 -----------------
POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run nodeleg "$PROFILE" 0 -- doctor --json --require
vm_expect_rc 78 "doctor --json --require as uid 1000 in a cgroup delegated to the pod's root"
got=$(jq -c '[.box.started, .cgroup.writable, .missing_core]' "$LAST.out")
[ "$got" = '[true,false,1]' ] || vm_fail "doctor (no hand-over): $got, expected [true,false,1]"
[ "$(layer cgroup)" = missing ] || vm_fail "doctor (no hand-over): cgroup layer '$(layer cgroup)'"
echo "  ok: crun delegates the cgroup to the pod's root only: uid 1000 cannot write it, gets the watchdog, --require refuses"
POD_UID=0 POD_MASK=0 POD_CAPS=CAP_SETUID,CAP_SETGID pod_run root "$PROFILE" 0 -- doctor --json
vm_expect_rc 0 "doctor --json as the pod's root with CAP_SETUID/CAP_SETGID"
got=$(jq -c '[.box.started, .mapping.box_root, .cgroup.writable]' "$LAST.out")
[ "$got" = '[true,"65534",true]' ] && [ "$(layer cgroup)" = ok ] || vm_fail "doctor (pod root): $got, cgroup $(layer cgroup)"
echo "  ok: the pod's root (CAP_SETUID/CAP_SETGID, a runtime's default set has them) uses crun's delegation"

# ---- a runtime-default-like seccomp profile -----------------------------------------
jq '.syscalls[0].names -= ["clone3", "unshare", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "mount_setattr"]
    | .syscalls[1].names -= ["clone"]
    | .syscalls += [{names: ["clone3"], action: "SCMP_ACT_ERRNO", errnoRet: 38},
                    {names: ["clone"], action: "SCMP_ACT_ALLOW",
                     args: [{index: 0, value: 2114060288, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ"}]}]' \
  "$PROFILE" >"$T/runtime-default.json" || vm_fail "jq runtime-default.json"
POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run rtdoctor "$T/runtime-default.json" 1 -- doctor --json --require
vm_expect_rc 78 "doctor --json --require under a runtime-default-like profile"
[ "$(jq -r .box.started "$LAST.out")" = false ] || vm_fail "the box started under a runtime-default-like profile"
for l in user pid mount net broker; do
  [ "$(layer $l)" = missing ] || vm_fail "runtime default: layer $l is '$(layer $l)', expected missing"
done
jq -r '.layers[] | select(.name == "broker") | .reason' "$LAST.out" | grep -qF deploy/seccomp/chidori.json ||
  vm_fail "the broker's reason does not name deploy/seccomp/chidori.json"
echo "  ok: runtime default: no box, user/pid/mount/net/broker missing (the cgroup: $(layer cgroup))"
rm -f "$T/shared/s.sock"
POD_UID=1000 POD_MASK=0 POD_CAPS="" pod_run rtserve "$T/runtime-default.json" 1 -- \
  serve /app/agent.js --listen unix:/shared/s.sock --token-file /app/token --require-sandbox
vm_expect_rc 78 "serve --require-sandbox under a runtime-default-like profile"
vm_err_has "start the broker in new user, pid and mount namespaces (clone3; in a container, a seccomp profile that refuses clone3" ||
  vm_fail "serve's error does not name clone3 and the profile"
vm_err_has "deploy/seccomp/chidori.json" || vm_fail "serve's error does not name deploy/seccomp/chidori.json"
[ ! -S "$T/shared/s.sock" ] || vm_fail "serve listened under a runtime-default-like profile"
echo "  ok: serve --require-sandbox exits 78 naming clone3 and deploy/seccomp/chidori.json"
exit 0
