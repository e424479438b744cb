#!/usr/bin/env node
// tools/k8s-validate.mjs — offline validation of the manifests that
// `kubectl kustomize deploy/kubernetes/overlays/X` builds (tests/bats/k8s.bats,
// docs/kubernetes.md). No cluster is needed:
//   1. every object validates against the Kubernetes API schema of its kind
//      (the npm package kubernetes-models: each class's validate());
//   2. no field is unknown to that schema (the JSON schemas allow extra fields,
//      as `kubectl --validate=strict` would not: a misspelt
//      `readOnlyRootFilesytem` is a setting silently not applied), checked
//      against the properties of the package's type declarations;
//   3. the pods that run `chidori serve` have the settings its box needs and
//      nothing more (docs/kubernetes.md, "The securityContext, setting by
//      setting"); with --expect, the objects the overlay is made of.
//
// Usage: node tools/k8s-validate.mjs [--expect sidecar|scale-out] FILE|-
// Exit 0: valid (one line on stdout); 1: every problem on stderr, one a line;
// 2: usage error.
import { readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
const MODELS = join(here, "node_modules", "kubernetes-models");
const MODELS_SCOPE = join(here, "node_modules", "@kubernetes-models");
const SECCOMP_PROFILE = "chidori/chidori.json";

function usage(msg) {
  process.stderr.write(`k8s-validate: ${msg}\nUsage: node tools/k8s-validate.mjs [--expect sidecar|scale-out] FILE|-\n`);
  process.exit(2);
}

let expect = null;
const files = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--expect") {
    expect = argv[++i];
    if (expect !== "sidecar" && expect !== "scale-out")
      usage(`--expect '${expect ?? ""}': expected sidecar or scale-out`);
  } else if (argv[i].startsWith("--") && argv[i] !== "-") usage(`unknown option '${argv[i]}'`);
  else files.push(argv[i]);
}
if (files.length !== 1) usage("give one file (the output of kubectl kustomize), or - for stdin");
if (!existsSync(MODELS))
  usage(`${MODELS} is missing: run 'make deps' (npm ci in tools/ installs kubernetes-models)`);

const problems = [];
const where = (obj) => `${obj?.kind ?? "?"}/${obj?.metadata?.name ?? "?"}`;
const fail = (obj, path, msg) => problems.push(`${where(obj)}: ${path ? path + ": " : ""}${msg}`);

// ---- 1. the documents ---------------------------------------------------
let text;
try {
  text = readFileSync(files[0] === "-" ? 0 : files[0], "utf8");
} catch (e) {
  usage(`cannot read '${files[0]}': ${e.message}`);
}
const objects = [];
for (const doc of parseAllDocuments(text)) {
  if (doc.errors.length) {
    problems.push(`YAML: ${doc.errors[0].message}`);
    continue;
  }
  const obj = doc.toJS();
  if (obj === null || obj === undefined) continue;
  objects.push(obj);
}
if (!objects.length && !problems.length) problems.push("no objects in the input");

// ---- 2. the schema of each kind, and no unknown field ---------------------
// The type declarations (.d.ts) of kubernetes-models name every property of
// every object type; a tiny reader of their interfaces is enough for them.
const ifaceCache = new Map();

function stripComments(s) {
  return s.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

function resolveImport(fromFile, spec) {
  let base;
  if (spec.startsWith(".")) base = join(dirname(fromFile), spec);
  else if (spec.startsWith("@kubernetes-models/")) base = join(MODELS_SCOPE, spec.slice("@kubernetes-models/".length));
  else return null;
  base = base.replace(/\.js$/, "");
  for (const cand of [base + ".d.ts", join(base, "index.d.ts")]) if (existsSync(cand)) return cand;
  return null;
}

// The first interface of a .d.ts: { props: Map(name -> type text), imports }.
function readInterface(file) {
  if (ifaceCache.has(file)) return ifaceCache.get(file);
  const src = stripComments(readFileSync(file, "utf8"));
  const imports = new Map();
  for (const m of src.matchAll(/import\s*(type\s*)?\{([^}]*)\}\s*from\s*"([^"]+)"/g))
    for (const name of m[2].split(",").map((x) => x.trim().split(/\s+as\s+/).pop()).filter(Boolean))
      imports.set(name, m[3]);
  const head = /export interface \w+(?:\s+extends\s+[^{]+)?\s*\{/.exec(src);
  let result = null;
  if (head) {
    let i = head.index + head[0].length, depth = 1;
    const start = i;
    while (i < src.length && depth) {
      if (src[i] === "{") depth++;
      else if (src[i] === "}") depth--;
      i++;
    }
    const body = src.slice(start, i - 1);
    const props = new Map();
    const re = /"([^"]+)"\??\s*:\s*/g;
    let m;
    while ((m = re.exec(body))) {
      // the type runs to the next ';' outside braces and angle brackets
      let j = re.lastIndex, d = 0;
      while (j < body.length && !(d === 0 && body[j] === ";")) {
        if ("{<(".includes(body[j])) d++;
        else if ("}>)".includes(body[j])) d--;
        j++;
      }
      props.set(m[1], body.slice(re.lastIndex, j).trim());
      re.lastIndex = j + 1;
    }
    result = { props, imports, file };
  }
  ifaceCache.set(file, result);
  return result;
}

// What a type text says about the value: an object (its interface), an array
// or map of something, or a leaf (primitives, literal unions, aliases).
function typeOf(iface, t) {
  t = t.trim();
  let m;
  if ((m = /^Array<([\s\S]*)>$/.exec(t))) return { array: typeOf(iface, m[1]) };
  if ((m = /^\{\s*\[key: string\]:\s*([\s\S]*?);?\s*\}$/.exec(t))) return { map: typeOf(iface, m[1]) };
  if (/^I\w+$/.test(t) && iface.imports.has(t)) {
    const file = resolveImport(iface.file, iface.imports.get(t));
    const sub = file && readInterface(file);
    return sub ? { object: sub } : { leaf: true };
  }
  return { leaf: true };
}

function checkFields(obj, value, type, path) {
  if (value === null || value === undefined || type.leaf) return;
  if (type.array) {
    if (Array.isArray(value)) value.forEach((v, i) => checkFields(obj, v, type.array, `${path}[${i}]`));
    return;
  }
  if (type.map) {
    if (typeof value === "object" && !Array.isArray(value))
      for (const [k, v] of Object.entries(value)) checkFields(obj, v, type.map, `${path}.${k}`);
    return;
  }
  if (type.object && typeof value === "object" && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) {
      const p = path ? `${path}.${k}` : k;
      if (!type.object.props.has(k)) fail(obj, p, `unknown field (not in the ${obj.apiVersion} ${obj.kind} schema)`);
      else checkFields(obj, v, typeOf(type.object, type.object.props.get(k)), p);
    }
  }
}

for (const obj of objects) {
  if (typeof obj !== "object" || Array.isArray(obj) || !obj.apiVersion || !obj.kind) {
    problems.push(`a document without apiVersion and kind`);
    continue;
  }
  const gv = String(obj.apiVersion);
  const dir = join(MODELS, gv);
  const dts = join(dir, `${obj.kind}.d.ts`);
  if (!/^[a-z0-9.]*\/?v\w+$/.test(gv) || !existsSync(dts)) {
    fail(obj, "", `apiVersion ${gv} kind ${obj.kind} is not a Kubernetes API type`);
    continue;
  }
  const mod = await import(join(dir, `${obj.kind}.js`));
  const Cls = mod[obj.kind];
  try {
    new Cls(obj).validate();
  } catch (e) {
    fail(obj, "", `schema: ${e.message}`);
  }
  const iface = readInterface(dts);
  if (iface) checkFields(obj, obj, { object: iface }, "");
}

// ---- 3. what the box needs -----------------------------------------------
const podOf = (obj) => {
  switch (obj.kind) {
    case "Pod": return { spec: obj.spec, path: "spec" };
    case "Deployment": case "StatefulSet": case "DaemonSet": case "ReplicaSet": case "Job":
      return { spec: obj.spec?.template?.spec, labels: obj.spec?.template?.metadata?.labels, path: "spec.template.spec" };
    default: return null;
  }
};
const argAfter = (args, flag) => {
  const i = args.indexOf(flag);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => typeof a === "string" && a.startsWith(flag + "="));
  return eq === undefined ? undefined : eq.slice(flag.length + 1);
};
const volumeOfMount = (pod, container, file) => {
  for (const m of container.volumeMounts ?? [])
    if (file === m.mountPath || file.startsWith(m.mountPath.replace(/\/$/, "") + "/"))
      return { mount: m, volume: (pod.volumes ?? []).find((v) => v.name === m.name) };
  return null;
};

let servers = 0;
for (const obj of objects) {
  const pod = podOf(obj);
  if (!pod || !pod.spec) continue;
  const ps = pod.spec, P = pod.path;
  const containers = [...(ps.initContainers ?? []), ...(ps.containers ?? [])];
  const chidori = (ps.containers ?? []).filter((c) => (c.args ?? [])[0] === "serve" || c.name === "chidori");
  if (!chidori.length) continue;
  servers++;
  if (ps.hostUsers !== false) fail(obj, `${P}.hostUsers`, `must be false (the pod's own user namespace), is ${JSON.stringify(ps.hostUsers)}`);
  for (const k of ["hostNetwork", "hostPID", "hostIPC"]) if (ps[k]) fail(obj, `${P}.${k}`, "must not be true");
  const podSc = ps.securityContext ?? {};
  containers.forEach((c) => {
    const cp = `${P}.containers[${c.name}]`;
    const sc = c.securityContext ?? {};
    const isChidori = chidori.includes(c);
    const nonRoot = sc.runAsNonRoot ?? podSc.runAsNonRoot;
    const uid = sc.runAsUser ?? podSc.runAsUser;
    if (nonRoot !== true || uid === 0 || uid === undefined)
      fail(obj, `${cp}.securityContext.runAsNonRoot`, "must run as a non-root uid (runAsNonRoot true and a runAsUser)");
    if (sc.privileged) fail(obj, `${cp}.securityContext.privileged`, "must not be true");
    if (sc.allowPrivilegeEscalation !== false)
      fail(obj, `${cp}.securityContext.allowPrivilegeEscalation`, "must be false (no_new_privs)");
    if (sc.readOnlyRootFilesystem !== true)
      fail(obj, `${cp}.securityContext.readOnlyRootFilesystem`, "must be true");
    const drop = sc.capabilities?.drop ?? [];
    if (!drop.includes("ALL")) fail(obj, `${cp}.securityContext.capabilities.drop`, "must drop ALL");
    if ((sc.capabilities?.add ?? []).length)
      fail(obj, `${cp}.securityContext.capabilities.add`, "must add none (the box needs no capability)");
    const seccomp = sc.seccompProfile ?? podSc.seccompProfile;
    if (isChidori) {
      if (seccomp?.type !== "Localhost" || seccomp?.localhostProfile !== SECCOMP_PROFILE)
        fail(obj, `${cp}.securityContext.seccompProfile`,
          `must be Localhost ${SECCOMP_PROFILE} (deploy/seccomp/chidori.json), is ${JSON.stringify(seccomp ?? null)}`);
      if (sc.procMount !== "Unmasked")
        fail(obj, `${cp}.securityContext.procMount`,
          "must be Unmasked: the box mounts a fresh /proc, which the kernel refuses under masked /proc paths");
    } else {
      if (!seccomp || !["RuntimeDefault", "Localhost"].includes(seccomp.type))
        fail(obj, `${cp}.securityContext.seccompProfile`, `must be RuntimeDefault or Localhost, is ${JSON.stringify(seccomp ?? null)}`);
      if (sc.procMount === "Unmasked") fail(obj, `${cp}.securityContext.procMount`, "only chidori's container needs Unmasked");
    }
    for (const kind of ["requests", "limits"])
      for (const r of ["cpu", "memory"])
        if (c.resources?.[kind]?.[r] === undefined) fail(obj, `${cp}.resources.${kind}.${r}`, "must be set");
  });
  for (const c of chidori) {
    const cp = `${P}.containers[${c.name}]`;
    const args = (c.args ?? []).map(String);
    // the kubelet probes the pod IP: --health-listen 0.0.0.0:PORT, /healthz and /readyz on PORT
    const hl = argAfter(args, "--health-listen");
    const hm = hl && /^(0\.0\.0\.0|\[::\]):(\d+)$/.exec(hl);
    if (!hm) fail(obj, `${cp}.args`, `--health-listen must be 0.0.0.0:PORT or [::]:PORT (the pod IP), is ${JSON.stringify(hl ?? null)}`);
    const portOf = (p) => (typeof p === "number" ? p : (c.ports ?? []).find((x) => x.name === p)?.containerPort);
    for (const [probe, path] of [["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
      const g = c[probe]?.httpGet;
      if (!g) { fail(obj, `${cp}.${probe}`, `must be an httpGet of ${path}`); continue; }
      if (g.path !== path) fail(obj, `${cp}.${probe}.httpGet.path`, `must be ${path}, is ${JSON.stringify(g.path)}`);
      if (hm && portOf(g.port) !== Number(hm[2]))
        fail(obj, `${cp}.${probe}.httpGet.port`, `must reach --health-listen's port ${hm[2]}, reaches ${JSON.stringify(portOf(g.port) ?? g.port)}`);
      if (g.host) fail(obj, `${cp}.${probe}.httpGet.host`, "must be unset (the pod IP)");
    }
    // the bearer token comes from a Secret
    const tf = argAfter(args, "--token-file");
    const envTok = (c.env ?? []).find((e) => e.name === "CHIDORI_SERVE_TOKEN");
    if (tf) {
      const v = volumeOfMount(ps, c, tf);
      if (!v?.volume?.secret) fail(obj, `${cp}.args`, `--token-file ${tf} must be in a mounted Secret volume`);
    } else if (!envTok?.valueFrom?.secretKeyRef) {
      fail(obj, `${cp}.args`, "the token must come from a Secret (--token-file in a Secret volume, or CHIDORI_SERVE_TOKEN from a secretKeyRef)");
    }
    const listen = argAfter(args, "--listen");
    if (expect === "sidecar") {
      const um = listen && /^unix:(.+)$/.exec(listen);
      if (!um) fail(obj, `${cp}.args`, `--listen must be unix:PATH in the sidecar, is ${JSON.stringify(listen ?? null)}`);
      else {
        const v = volumeOfMount(ps, c, um[1]);
        if (!v?.volume?.emptyDir) fail(obj, `${cp}.args`, `--listen ${listen}: the socket must be in an emptyDir volume`);
        else if (!(ps.containers ?? []).some((o) => o !== c && (o.volumeMounts ?? []).some((m) => m.name === v.volume.name)))
          fail(obj, `${P}.containers`, `no application container mounts the socket's volume '${v.volume.name}'`);
      }
    }
    if (expect === "scale-out") {
      const store = argAfter(args, "--store");
      const envStore = (c.env ?? []).find((e) => e.name === "CHIDORI_STORE");
      if (store !== undefined) fail(obj, `${cp}.args`, "--store on the command line shows the database password: use CHIDORI_STORE from a Secret");
      else if (!envStore?.valueFrom?.secretKeyRef) fail(obj, `${cp}.env`, "CHIDORI_STORE must come from a Secret (secretKeyRef)");
      if (!listen || listen.startsWith("unix:") || listen.startsWith("127.")) fail(obj, `${cp}.args`, `--listen must be the pod IP (0.0.0.0:PORT) behind the Service, is ${JSON.stringify(listen ?? null)}`);
    }
  }
  if (expect === "scale-out") {
    const labels = pod.labels ?? {};
    const selects = (sel) => sel && Object.entries(sel).every(([k, v]) => labels[k] === v);
    const need = (kind, ok, what) => {
      const found = objects.filter((o) => o.kind === kind);
      if (!found.length) fail(obj, "", `the scale-out needs a ${kind} (${what})`);
      else if (!found.some(ok)) fail(found[0], "", `does not apply to ${where(obj)} (${what})`);
    };
    need("Service", (s) => selects(s.spec?.selector), "one Service in front of the replicas");
    need("PodDisruptionBudget", (s) => selects(s.spec?.selector?.matchLabels), "at most one replica down at a time");
    need("HorizontalPodAutoscaler", (s) => s.spec?.scaleTargetRef?.kind === obj.kind && s.spec?.scaleTargetRef?.name === obj.metadata?.name
      && (s.spec?.metrics ?? []).some((m) => m.type === "Resource" && m.resource?.name === "cpu"), "scales on CPU");
    need("NetworkPolicy", (s) => selects(s.spec?.podSelector?.matchLabels) && (s.spec?.policyTypes ?? []).includes("Egress")
      && (s.spec?.egress ?? []).length > 0, "limits the server's egress");
  }
}
if (!servers && !problems.length) problems.push("no pod runs `chidori serve` (a container named chidori or with args 'serve ...')");

if (problems.length) {
  for (const p of problems) process.stderr.write(`k8s-validate: ${files[0]}: ${p}\n`);
  process.exit(1);
}
const kinds = [...new Set(objects.map((o) => o.kind))].sort().join(", ");
process.stdout.write(`k8s-validate: ${files[0]}: ${objects.length} objects valid (${kinds})\n`);
