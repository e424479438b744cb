#!/usr/bin/env bash
# tests/lib/pod-bundle.sh DIR TREE SHARED APPDIR SECCOMP USERNS -- ARGS...
# The OCI bundle of the pod scenario, shared by tests/bats/pod.bats (runc on
# the host) and tests/vm/cases/50-pod-crun.sh (crun in the cgroup-v2 guest).
# Writes an OCI bundle in DIR configured as deploy/kubernetes configures the
# pod: its own user namespace (USERNS=1: container 0..65535 -> host
# 100000..165535, as hostUsers: false), a read-only root, the capabilities
# of a runtime spec's default set (AUDIT_WRITE, KILL, NET_BIND_SERVICE: no
# SETUID/SETGID/SETFCAP/SYS_ADMIN; POD_CAPS="" drops them all),
# no_new_privileges and the seccomp profile SECCOMP (a JSON file, or
# "none").  /proc: POD_MASK=1 keeps runc's default masked and read-only
# paths (what a pod gets with procMount: Default), POD_MASK=0 drops them
# (procMount: Unmasked).  POD_UID: the process's uid and gid (runAsUser;
# default 0).  ASAN_OPTIONS=detect_leaks=0: an ASan build's LeakSanitizer
# stops the world with ptrace, which the profile refuses (make asan). The host's /usr and
# /etc are bound read-only, TREE (the built chidori tree) read-only at the
# same path, SHARED read-write at /shared (the emptyDir both containers
# mount) and APPDIR read-only at /app (the app container's files: outside
# any box, inside the pod). The process is ARGS.
# POD_RUNTIME (runc | crun, default runc): whose `spec` writes the base config.
# POD_CGROUP: the container's cgroupsPath (default "": the runtime's choice)
# and, when set, /sys/fs/cgroup is the container's own cgroup2 mount (in its
# cgroup namespace), read-only unless POD_CGROUP_MOUNT=rw; unset, in a user
# namespace, the container gets no cgroup mount of its own (the read-only /sys).
set -euo pipefail
dir=$1 tree=$2 shared=$3 appdir=$4 seccomp=$5 userns=$6
shift 6
[ "${1:-}" = "--" ] && shift
mkdir -p "$dir/rootfs"
cd "$dir/rootfs"
mkdir -p usr etc proc dev sys tmp shared app "${tree#/}"
for l in bin sbin lib lib32 lib64; do [ -L "/$l" ] && ln -sfn "$(readlink "/$l")" "$l"; done
cd "$dir"
"${POD_RUNTIME:-runc}" spec
args=$(printf '%s\n' "$@" | jq -R . | jq -s .)
jq --argjson args "$args" --arg tree "$tree" --arg shared "$shared" --arg app "$appdir" \
   --arg userns "$userns" --arg uid "${POD_UID:-0}" --arg mask "${POD_MASK:-1}" \
   --arg caps "${POD_CAPS--}" --arg cgpath "${POD_CGROUP:-}" --arg cgmode "${POD_CGROUP_MOUNT:-ro}" '
  .process.terminal = false
  | .process.args = $args
  | .process.cwd = "/tmp"
  | .process.env = ["PATH=/usr/bin:/bin", "HOME=/tmp", "XDG_STATE_HOME=/tmp/state", "ASAN_OPTIONS=detect_leaks=0"]
  | .root.readonly = true
  | .hostname = "chidori-pod"
  | .linux.cgroupsPath = $cgpath
  | .process.user = {uid: ($uid | tonumber), gid: ($uid | tonumber)}
  | .process.noNewPrivileges = true
  | if $caps != "-" then .process.capabilities |= with_entries(.value = ($caps | split(",") | map(select(. != ""))))
    else . end
  | if $mask == "0" then .linux.maskedPaths = [] | .linux.readonlyPaths = [] else . end
  | .mounts += [
      {destination: "/tmp", type: "tmpfs", source: "tmpfs", options: ["nosuid", "nodev", "mode=1777", "size=64m", "uid=\($uid)", "gid=\($uid)"]},
      {destination: "/usr", type: "bind", source: "/usr", options: ["rbind", "ro", "nosuid", "nodev"]},
      {destination: "/etc", type: "bind", source: "/etc", options: ["rbind", "ro", "nosuid", "nodev"]},
      {destination: $tree, type: "bind", source: $tree, options: ["rbind", "ro", "nosuid", "nodev"]},
      {destination: "/shared", type: "bind", source: $shared, options: ["rbind", "rw", "nosuid", "nodev"]},
      {destination: "/app", type: "bind", source: $app, options: ["rbind", "ro", "nosuid", "nodev"]}
    ]
  | if $userns == "1" then
      .linux.namespaces += [{type: "user"}, {type: "cgroup"}]
      | .linux.uidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
      | .linux.gidMappings = [{containerID: 0, hostID: 100000, size: 65536}]
      | .mounts |= map(if .destination == "/sys" then {destination: "/sys", type: "bind", source: "/sys", options: ["rbind", "nosuid", "noexec", "nodev", "ro"]} else . end)
      | .mounts |= map(select(.destination != "/sys/fs/cgroup"))
    else . end
  | if $cgpath != "" then
      .mounts |= map(select(.destination != "/sys/fs/cgroup"))
      | .mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup",
                     options: ["nosuid", "noexec", "nodev", "relatime", $cgmode]}]
    else . end
' config.json > config.tmp && mv config.tmp config.json
if [ "$seccomp" != none ]; then
  jq --slurpfile s "$seccomp" '.linux.seccomp = $s[0]' config.json > config.tmp && mv config.tmp config.json
fi
