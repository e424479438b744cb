#!/usr/bin/env bats
# deploy/: the Kubernetes manifests and the container image recipe, checked
# offline (no cluster, no registry here; docs/kubernetes.md):
# `kubectl kustomize` builds every overlay, tools/k8s-validate.mjs validates each
# object against the Kubernetes API schemas (npm kubernetes-models), refuses
# unknown fields and checks the settings chidori's box needs; a setting broken
# on purpose must fail it. scripts/containerfile-lint.py parses
# deploy/Containerfile.
load helpers

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
K8S=$REPO/deploy/kubernetes
VALIDATE=$REPO/tools/k8s-validate.mjs
CFLINT=$REPO/scripts/containerfile-lint.py

teardown() {
  if [[ -n ${SERVE_PID:-} ]]; then
    kill "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
  fi
  rm -rf "$T"
}

need_kubectl() {
  command -v kubectl >/dev/null ||
    skip "kubectl is not installed (Debian's kubernetes-client; scripts/deps.sh installs it)"
}

# build OVERLAY_DIR OUT: kubectl kustomize into OUT (its deprecation warnings
# about kustomize v2 fields go to $T/kustomize.err)
build() {
  kubectl kustomize "$1" >"$2" 2>"$T/kustomize.err" || { cat "$T/kustomize.err"; return 1; }
}

# validate FILE [--expect X]: $status, $output (stdout), $stderr
validate() {
  local f=$1; shift
  set +e
  output=$(node "$VALIDATE" "$@" "$f" 2>"$T/.verr")
  status=$?
  set -e
  stderr=$(cat "$T/.verr")
}

# mutate IN OUT SED_EXPR: OUT is IN edited, and the edit changed something
# (a mutation that matches nothing would let the test pass for no reason)
mutate() {
  sed "$3" "$1" >"$2"
  if cmp -s "$1" "$2"; then
    echo "the mutation '$3' changed nothing in $1"
    return 1
  fi
}

@test "k8s: kubectl kustomize builds the sidecar overlay; every object valid; app + chidori over a unix socket in an emptyDir" {
  need_kubectl
  build "$K8S/overlays/sidecar" "$T/sidecar.yaml"
  validate "$T/sidecar.yaml" --expect sidecar
  [[ $status == 0 && $output == *"2 objects valid (ConfigMap, Deployment)"* ]] || { echo "$output $stderr"; return 1; }
  # both containers in one pod, chidori on the socket, the app mounting its folder
  grep -q -- '- unix:/run/chidori/chidori.sock' "$T/sidecar.yaml"
  grep -qx '        name: app' "$T/sidecar.yaml"
  grep -q 'secretName: chidori-token' "$T/sidecar.yaml"
}

@test "k8s: kubectl kustomize builds the scale-out overlays; every object valid; each replica's id is its pod's name" {
  need_kubectl
  build "$K8S/overlays/scale-out" "$T/scale-out.yaml"
  validate "$T/scale-out.yaml" --expect scale-out
  [[ $status == 0 && $output == *"7 objects valid (ConfigMap, Deployment, HorizontalPodAutoscaler, NetworkPolicy, PersistentVolumeClaim, PodDisruptionBudget, Service)"* ]] ||
    { echo "$output $stderr"; return 1; }
  build "$K8S/overlays/scale-out-queue-depth" "$T/queue.yaml"
  validate "$T/queue.yaml" --expect scale-out
  [[ $status == 0 ]] || { echo "$output $stderr"; return 1; }
  grep -q 'name: chidori_queue_depth' "$T/queue.yaml"
  ! grep -q 'chidori_queue_depth' "$T/scale-out.yaml"
  # The replicas share the sessions through leases: each one's id is its pod's name.
  grep -A3 'name: CHIDORI_REPLICA_ID' "$T/scale-out.yaml" | grep -q 'fieldPath: metadata.name'
  grep -q 'name: CHIDORI_LEASE' "$T/scale-out.yaml"
  ! grep -rq 'needs the lease work' "$K8S" "$REPO/docs/kubernetes.md"
}

@test "k8s: each security setting broken in the built manifests fails the validation, naming it" {
  need_kubectl
  build "$K8S/overlays/scale-out" "$T/good.yaml"
  validate "$T/good.yaml" --expect scale-out
  [[ $status == 0 ]] || { echo "$stderr"; return 1; } # the control: unbroken, it passes
  local case expr want n=0
  while IFS='|' read -r expr want; do
    [[ -n $expr ]] || continue
    n=$((n + 1))
    mutate "$T/good.yaml" "$T/bad$n.yaml" "$expr"
    validate "$T/bad$n.yaml" --expect scale-out
    [[ $status == 1 && $stderr == *"$want"* ]] || { echo "mutation '$expr': status $status, expected '$want' in: $stderr"; return 1; }
  done <<'CASES'
s/hostUsers: false/hostUsers: true/|spec.template.spec.hostUsers: must be false
s/hostUsers: false/hostUsers: "false"/|hostUsers must be boolean
s/type: Localhost/type: Unconfined/|securityContext.seccompProfile: must be Localhost chidori/chidori.json
s#localhostProfile: chidori/chidori.json#localhostProfile: chidori/other.json#|securityContext.seccompProfile: must be Localhost chidori/chidori.json
s/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/|securityContext.readOnlyRootFilesystem: must be true
s/readOnlyRootFilesystem:/readOnlyRootFilesytem:/|securityContext.readOnlyRootFilesytem: unknown field
s/privileged: false/privileged: true/|securityContext.privileged: must not be true
s/allowPrivilegeEscalation: false/allowPrivilegeEscalation: true/|securityContext.allowPrivilegeEscalation: must be false
s/- ALL/- NET_RAW/|securityContext.capabilities.drop: must drop ALL
/^            - ALL$/a\            add: [SYS_ADMIN]|securityContext.capabilities.add: must add none
s/procMount: Unmasked/procMount: Default/|securityContext.procMount: must be Unmasked
s/runAsNonRoot: true/runAsNonRoot: false/|securityContext.runAsNonRoot: must run as a non-root uid
s#path: /healthz#path: /health#|livenessProbe.httpGet.path: must be /healthz
s#path: /readyz#path: /ready#|readinessProbe.httpGet.path: must be /readyz
s/containerPort: 8081/containerPort: 8082/|livenessProbe.httpGet.port: must reach --health-listen's port 8081
s/- 0.0.0.0:8081/- 127.0.0.1:8081/|--health-listen must be 0.0.0.0:PORT
/memory: 1536Mi/d|resources.limits.memory: must be set
s/secretName: chidori-token/configMapName: chidori-token/|secret.configMapName: unknown field
s/- name: CHIDORI_STORE/- name: CHIDORI_STOR/|CHIDORI_STORE must come from a Secret
s/- Egress/- Ingress/|NetworkPolicy/chidori: does not apply to Deployment/chidori (limits the server's egress)
s/averageUtilization: 70/averageUtilisation: 70/|resource.target.averageUtilisation: unknown field
CASES
  [[ $n == 21 ]]
}

@test "k8s: a sidecar whose app container does not mount the socket's folder, or a server without a token, fails" {
  need_kubectl
  build "$K8S/overlays/sidecar" "$T/good.yaml"
  # the app's only volumeMount is the socket's: drop it
  mutate "$T/good.yaml" "$T/nosock.yaml" '/^      - env:$/,/^      enableServiceLinks/{/^        volumeMounts:$/,/^          name: socket$/d}'
  validate "$T/nosock.yaml" --expect sidecar
  [[ $status == 1 && $stderr == *"no application container mounts the socket's volume 'socket'"* ]] || { echo "$stderr"; return 1; }
  mutate "$T/good.yaml" "$T/notoken.yaml" '/- --token-file/,/- \/etc\/chidori\/token\/token/d'
  validate "$T/notoken.yaml" --expect sidecar
  [[ $status == 1 && $stderr == *"the token must come from a Secret"* ]] || { echo "$stderr"; return 1; }
}

@test "k8s: the sidecar's chidori args run: uid 10001 on the socket, the app (uid 10002, fsGroup 10001) gets in with the Secret's token" {
  need_kubectl
  [[ $(id -u) -eq 0 ]] || skip "as root only: it switches to the pod's uids 10001 and 10002"
  command -v setpriv >/dev/null && command -v curl >/dev/null || skip "setpriv (util-linux) or curl is missing"
  build "$K8S/overlays/sidecar" "$T/sidecar.yaml"
  # the chidori container's args, as the kubelet would pass them
  mapfile -t args < <(node -e '
    const { parseAllDocuments } = require(process.argv[1]);
    const fs = require("fs");
    for (const d of parseAllDocuments(fs.readFileSync(process.argv[2], "utf8"))) {
      const o = d.toJS();
      if (o && o.kind === "Deployment")
        for (const c of o.spec.template.spec.containers) if (c.name === "chidori") console.log(c.args.join("\n"));
    }' "$REPO/tools/node_modules/yaml" "$T/sidecar.yaml")
  [[ ${args[0]} == serve ]] || { echo "no chidori args: ${args[*]}"; return 1; }
  if [[ " ${args[*]} " == *" --health-listen "* ]] && ! "$CHIDORI" serve --help | grep -q -- --health-listen; then
    skip "chidori serve has no --health-listen yet (issue 13, the pod work): the manifests' args need it"
  fi
  # the pod's folders, here: the socket emptyDir (root:fsGroup, setgid, 0777 as the
  # kubelet makes it), the Secret volume (..data symlinks, 0440 root:fsGroup), the state emptyDir
  chmod 755 "$T"
  mkdir -p "$T/run/chidori" "$T/secret/..2026_12_02" "$T/state" "$T/agent"
  chgrp 10001 "$T/run/chidori" "$T/state" && chmod 2777 "$T/run/chidori" "$T/state"
  cp "$K8S/base/agent.js" "$T/agent/agent.js" && chmod 755 "$T/agent"
  printf 'k8s-test-token-%s' "$RANDOM$RANDOM" >"$T/secret/..2026_12_02/token"
  ln -s ..2026_12_02 "$T/secret/..data" && ln -s ..data/token "$T/secret/token"
  chgrp -R 10001 "$T/secret" && chmod 0440 "$T/secret/..2026_12_02/token" && chmod 755 "$T/secret" "$T/secret/..2026_12_02"
  local port a mapped=()
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for a in "${args[@]}"; do
    a=${a//\/run\/chidori/$T/run/chidori}
    a=${a//\/etc\/chidori\/token/$T/secret}
    a=${a//\/etc\/chidori\/agent/$T/agent}
    a=${a//\/var\/lib\/chidori/$T/state}
    a=${a/#0.0.0.0:8081/127.0.0.1:$port}
    mapped+=("$a")
  done
  setpriv --reuid 10001 --regid 10001 --groups 10001 env HOME="$T/state" "$CHIDORI" "${mapped[@]}" >"$T/serve.out" 2>&1 &
  SERVE_PID=$!
  local i sock=$T/run/chidori/chidori.sock
  for i in $(seq 300); do [[ -S $sock ]] && break; kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
  [[ -S $sock ]] || { echo "no socket:"; cat "$T/serve.out"; return 1; }
  [[ $(stat -c '%a %u %g' "$sock") == "660 10001 10001" ]] || { stat -c '%a %u %g' "$sock"; return 1; }
  local tok; tok=$(cat "$T/secret/token")
  # the application container: uid 10002, the pod's fsGroup as a supplementary group
  out=$(setpriv --reuid 10002 --regid 10002 --groups 10001 curl -s --unix-socket "$sock" -H "Authorization: Bearer $tok" \
    -X POST http://chidori/sessions -d '{"input": {"name": "pod"}}')
  [[ $out == *'"status":"done"'* && $out == *'"greeting":"Hello, pod!"'* ]] || { echo "$out"; cat "$T/serve.out"; return 1; }
  out=$(setpriv --reuid 10002 --regid 10002 --groups 10001 curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" http://chidori/sessions)
  [[ $out == 401 ]] || { echo "without the token: $out"; return 1; }
  # the control: without the fsGroup, the same uid cannot connect
  run setpriv --reuid 10002 --regid 10002 --clear-groups curl -s --unix-socket "$sock" http://chidori/healthz
  [[ $status == 7 ]] || { echo "without the group: $status $output"; return 1; }
  if [[ " ${args[*]} " == *" --health-listen "* ]]; then # the kubelet's probes, no token
    out=$(curl -s "http://127.0.0.1:$port/healthz")
    [[ $out == *'"status":"ok"'* ]] || { echo "healthz: $out"; return 1; }
    out=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/sessions")
    [[ $out == 404 ]] || { echo "/sessions on the health port: $out"; return 1; }
  fi
}

@test "k8s: why procMount Unmasked: under a masked /proc path a run as uid 10001 cannot mount its fresh /proc (exit 70); unmasked it runs" {
  [[ $(id -u) -eq 0 ]] || skip "as root only: it makes a mount namespace and switches to uid 10001"
  command -v unshare >/dev/null && command -v setpriv >/dev/null || skip "unshare or setpriv (util-linux) is missing"
  chmod 755 "$T" && mkdir -p "$T/home" && chown 10001:10001 "$T/home"
  cp "$K8S/base/agent.js" "$T/agent.js" && chmod 644 "$T/agent.js"
  local as10001="setpriv --reuid 10001 --regid 10001 --clear-groups env -u XDG_STATE_HOME HOME=$T/home $CHIDORI run --quiet $T/agent.js"
  # the control: nothing over /proc, as with procMount Unmasked
  run unshare -m sh -c "mount --make-rprivate / && $as10001"
  [[ $status == 0 && $output == *'{"greeting":"Hello, world!"}'* ]] || { echo "unmasked: $status $output"; return 1; }
  # a path masked the way container runtimes mask /proc/timer_list (a bind mount of /dev/null)
  [[ -e /proc/timer_list ]] || skip "/proc/timer_list is missing on this kernel"
  run unshare -m sh -c "mount --make-rprivate / && mount --bind /dev/null /proc/timer_list && $as10001"
  [[ $status == 70 && $output == *"mount a fresh /proc"*"procMount: Unmasked"*"Operation not permitted"* ]] || { echo "masked: $status $output"; return 1; }
}

@test "k8s: a setting removed from the base's source fails every overlay built on it" {
  need_kubectl
  cp -r "$K8S" "$T/k8s"
  mutate "$K8S/base/deployment.yaml" "$T/k8s/base/deployment.yaml" '/procMount: Unmasked/d'
  for o in sidecar scale-out; do
    build "$T/k8s/overlays/$o" "$T/$o.yaml"
    validate "$T/$o.yaml" --expect $o
    [[ $status == 1 && $stderr == *"containers[chidori].securityContext.procMount: must be Unmasked"* ]] || { echo "$o: $stderr"; return 1; }
  done
}

@test "k8s-validate: a usage error exits 2; a file that is not manifests exits 1" {
  run node "$VALIDATE" --expect nope x.yaml
  [[ $status == 2 && $output == *"--expect 'nope': expected sidecar or scale-out"* ]] || { echo "$status $output"; return 1; }
  run node "$VALIDATE"
  [[ $status == 2 && $output == *"give one file"* ]] || { echo "$status $output"; return 1; }
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n' >"$T/pod.yaml"
  run node "$VALIDATE" "$T/pod.yaml"
  [[ $status == 1 && $output == *"no pod runs \`chidori serve\`"* ]] || { echo "$status $output"; return 1; }
  printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n' >"$T/w.yaml"
  run node "$VALIDATE" "$T/w.yaml"
  [[ $status == 1 && $output == *"Widget/w: apiVersion example.com/v1 kind Widget is not a Kubernetes API type"* ]] || { echo "$status $output"; return 1; }
}

@test "Containerfile: every instruction known, the files it copies exist, the final stage runs as a non-root uid" {
  run python3 "$CFLINT" --context "$REPO" "$REPO/deploy/Containerfile"
  [[ $status == 0 && $output == *"2 stages: ok"* ]] || { echo "$output"; return 1; }
  local expr want n=0
  while IFS='|' read -r expr want; do
    n=$((n + 1))
    mutate "$REPO/deploy/Containerfile" "$T/cf$n" "$expr"
    run python3 "$CFLINT" --context "$REPO" "$T/cf$n"
    [[ $status == 1 && $output == *"$want"* ]] || { echo "mutation '$expr': $status $output"; return 1; }
  done <<'CASES'
s/^WORKDIR \/src/WORKDRI \/src/|unknown instruction 'WORKDRI'
s/^COPY \. \/src/COPY no-such-dir \/src/|COPY no-such-dir: no such file in the build context
s/^USER 10001:10001/USER root/|the final stage must run as a non-root numeric USER
s/--from=build/--from=builder/|COPY --from=builder: no earlier stage is called that
s/^ENTRYPOINT \["\/usr\/bin\/chidori"\]/ENTRYPOINT ["\/usr\/bin\/chidori",]/|the exec form must be a JSON array of strings
CASES
  echo 'COPY build/chidori /usr/bin/chidori' >>"$T/cf1"
  run python3 "$CFLINT" --context "$REPO" "$T/cf1"
  [[ $status == 1 && $output == *"COPY build/chidori: "* ]] || { echo "$output"; return 1; }
}

# missing_libs PKGS: the libraries the built binaries load whose Debian
# package is not in PKGS (" pkg pkg ... "), one "LIB (PACKAGE)" a line
missing_libs() {
  local pkgs=$1 lib path pkg libs
  # the NEEDED entries of what `make install` puts in the image, and what is
  # loaded with dlopen (server/mhd.c: libmicrohttpd; sandbox/tz.c: ICU)
  libs=$(for f in chidori chidori-worker chidori-broker chidori-monitor libchidori-engine.so libchidori-net.so; do
    readelf -d "$BUILD_DIR/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
  done | sort -u)
  libs+=$'\n'libmicrohttpd.so.12$'\n'$(ldconfig -p | sed -n 's/^\s*\(libicui18n\.so\.[0-9]*\) .*/\1/p' | head -1)
  for lib in $libs; do
    [[ $lib == libc.so.6 || $lib == libchidori-* ]] && continue # libc6 is in every image; ours are copied
    path=$(ldconfig -p | sed -n "s/^\s*$lib (libc6,x86-64.*) => //p" | head -1)
    [[ -n $path ]] || { echo "$lib (not found by ldconfig)"; continue; }
    # this architecture's copy (libc6-i386 also ships a libm.so.6)
    pkg=$(dpkg-query -S "*/x86_64-linux-gnu/$(basename "$(readlink -f "$path")")" 2>/dev/null | head -1 | cut -d: -f1)
    [[ $pkg == libc6 ]] && continue
    [[ -n $pkg ]] || { echo "$lib (no Debian package owns $path)"; continue; }
    [[ $pkgs == *" $pkg "* ]] || echo "$lib ($pkg)"
  done
}

@test "Containerfile: the runtime stage installs the Debian package of every library the built binaries load" {
  command -v dpkg-query >/dev/null || skip "not a Debian system: dpkg-query is missing"
  # An ASan/UBSan build links the sanitizers' runtime libraries; the image ships the plain build.
  ! readelf -s "$BUILD_DIR/chidori" 2>/dev/null | grep -q ' __asan_init' ||
    skip "a sanitizer build (its runtime's libraries are not the image's): run it on the plain build"
  run python3 "$CFLINT" --packages "$REPO/deploy/Containerfile"
  [[ $status == 0 && -n $output ]] || { echo "$output"; return 1; }
  local pkgs=" ${output//$'\n'/ } " missing
  missing=$(missing_libs "$pkgs")
  [[ -z $missing ]] || { echo "not installed by deploy/Containerfile's runtime stage: $missing"; return 1; }
  # the control: without libmicrohttpd12 (dlopened) and libcjson1 (NEEDED) in the list, both are missed
  missing=$(missing_libs "${pkgs/ libmicrohttpd12 / }")
  [[ $missing == *"libmicrohttpd.so.12 (libmicrohttpd12)"* ]] || { echo "$missing"; return 1; }
  missing=$(missing_libs "${pkgs/ libcjson1 / }")
  [[ $missing == *"libcjson.so.1 (libcjson1)"* ]] || { echo "$missing"; return 1; }
}
