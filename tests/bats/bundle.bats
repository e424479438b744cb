#!/usr/bin/env bats
# Bundled agents (ES modules, TypeScript): errors at the agent's own files and
# lines (source maps), top-level await, and modules the sandbox does not have.
load helpers

ts_agent() { # a TypeScript agent that throws in a helper two files away
  mkdir -p "$T/lib"
  agent lib/helper.ts <<'TS'
// helper module
export interface Opts { n: number }

export function explode(o: Opts): number {
  if (o.n > 1) {
    throw new RangeError("too big: " + o.n);
  }
  return o.n;
}
TS
  agent agent.ts <<'TS'
import { explode } from "./lib/helper";

type In = { n: number };

export default async function main(input: In): Promise<number> {
  const v: number = input.n;
  return explode({ n: v });
}
TS
}

@test "a TypeScript agent's error names its own files and lines, not the bundle's" {
  ts_agent
  chid run --quiet "$T/agent.ts" --input '{"n":5}'
  assert_status 1
  assert_stderr_has "chidori: agent error: RangeError: too big: 5 (at lib/helper.ts:6:"
  assert_stderr_has "    at explode@lib/helper.ts:6:"
  assert_stderr_has "    at main@agent.ts:7:"
  # no frame points into the bundle (the helper is on bundle line 20-something)
  [[ $stderr != *"agent.ts:2"[0-9]* && $stderr != *"agent.ts:1"[0-9]* ]]
}

@test "--json carries the mapped file, line, column and stack" {
  ts_agent
  chid run --quiet --json "$T/agent.ts" --input '{"n":5}'
  assert_status 1
  [[ $output == *'"file":"lib/helper.ts","line":6,"column":'* ]]
  [[ $output == *'"stack":"explode@lib/helper.ts:6:'*'\nmain@agent.ts:7:'* ]]
}

@test "an ES module's error points at its line" {
  agent a.mjs <<'JS'
const greet = (who) => {
  if (!who) throw new TypeError("nobody to greet");
  return "hi " + who;
};

export default async function main(input) {
  return greet(input);
}
JS
  chid run --quiet "$T/a.mjs"
  assert_status 1
  assert_stderr_has "agent error: TypeError: nobody to greet (at a.mjs:2:"
  assert_stderr_has "at greet@a.mjs:2:"
  assert_stderr_has "at main@a.mjs:7:"
}

@test "replay of a bundled agent maps its error the same way" {
  ts_agent
  chid run --quiet --journal "$T/j" "$T/agent.ts" --input '{"n":5}'
  assert_status 1
  first=$stderr
  chid replay --quiet "$T/j"
  assert_status 1
  [[ $stderr == "$first" ]]
  assert_stderr_has "(at lib/helper.ts:6:"
}

@test "top-level await works in .mjs and .ts" {
  agent a.mjs <<'JS'
const x = await Promise.resolve(41);
export default async () => x + 1;
JS
  chid run --quiet "$T/a.mjs"
  assert_status 0
  assert_stdout '42'
  agent b.ts <<'TS'
const start: number = Date.now();
await new Promise<void>((r) => setTimeout(r, 500));
const seen: number | null = await chidori.memory.get("k");
await chidori.memory.set("k", 1);
export default async (): Promise<string> => `${Date.now() - start >= 500} ${seen}`;
declare const chidori: any;
TS
  chid run --quiet --journal "$T/j" "$T/b.ts"
  assert_status 0
  assert_stdout '"true null"'
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout '"true null"'
}

@test "a throw at the top level of a module after an await is an agent error at its line" {
  agent a.mjs <<'JS'
const a = 1;
await null;
throw new Error("at top level");
export default () => a;
JS
  chid run --quiet "$T/a.mjs"
  assert_status 1
  assert_stderr_has "agent error: Error: at top level (at a.mjs:3:"
}

@test "top-level await in every entry shape: named main, CommonJS mixed in; none says so" {
  agent m.mjs <<'JS'
const k = await Promise.resolve(2);
export async function main(i) { return i * k; }
JS
  chid run --quiet "$T/m.mjs" --input 21
  assert_status 0
  assert_stdout '42'
  mkdir -p "$T/lib" && echo 'export const x = 7;' >"$T/lib/x.js"
  agent mixed.js <<'JS'
import { x } from "./lib/x.js";
module.exports = async () => x;
JS
  chid run --quiet "$T/mixed.js"
  assert_status 0
  assert_stdout '7'
  agent none.mjs <<'JS'
export const a = await 1;
JS
  chid run --quiet "$T/none.mjs"
  assert_status 1
  assert_stderr_has "no entry point"
}

@test "the modules chidori provides import in every form from a bundle" {
  agent f.mjs <<'JS'
import fs from "fs";
import * as fsp from "fs/promises";
import { createHash } from "crypto";
import c2 from "node:crypto";
import { readFileSync } from "node:fs";
const r = require("node:fs");
await fsp.writeFile("/a.txt", "hi");
export default async () => [typeof fs.readFileSync, readFileSync("/a.txt", "utf8"),
  createHash("sha256").update("x").digest("hex").slice(0, 8), typeof c2.createHash, r === fs,
  typeof (await import("node:fs/promises")).readFile, typeof import.meta + " " + typeof import.meta.url];
JS
  chid run --quiet "$T/f.mjs"
  assert_status 0
  assert_stdout '["function","hi","2d711642","function",true,"function","object undefined"]'
}

@test "require() of a Node module the sandbox lacks names it (CommonJS)" {
  agent a.js <<'JS'
module.exports = async () => { const os = require('node:os'); return os.hostname(); };
JS
  chid run --quiet "$T/a.js"
  assert_status 1
  assert_stderr_has "agent error: Error: Cannot find module 'node:os': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)"
  agent b.js <<'JS'
module.exports = async () => {
  const out = [];
  for (const m of ['os', 'child_process', 'lodash'])
    try { require(m); } catch (e) { out.push(e.code + ' ' + e.message); }
  return out;
};
JS
  chid run --quiet "$T/b.js"
  assert_status 0
  assert_stdout "[\"MODULE_NOT_FOUND Cannot find module 'os': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)\",\"MODULE_NOT_FOUND Cannot find module 'child_process': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)\",\"MODULE_NOT_FOUND Cannot find module 'lodash': chidori agents are one script; bundle dependencies with esbuild\"]"
}

@test "import of a Node module the sandbox lacks names it (bundled)" {
  agent os.ts <<'TS'
import os from "node:os";
export default () => os.hostname();
TS
  chid run --quiet "$T/os.ts"
  assert_status 1
  assert_stderr_has "agent error: ImportError: os.ts imports 'node:os', which is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)"
  mkdir -p "$T/lib" && echo 'export { spawn } from "node:child_process";' >"$T/lib/sp.mjs"
  agent sp.mjs <<'JS'
import { spawn } from "./lib/sp.mjs";
export default () => typeof spawn;
JS
  chid run --quiet "$T/sp.mjs"
  assert_status 1
  assert_stderr_has "ImportError: lib/sp.mjs imports 'node:child_process', which is not available in the chidori sandbox"
  agent bare.mjs <<'JS'
import zlib from "zlib";
export default () => zlib.gzipSync("a");
JS
  chid run --quiet "$T/bare.mjs"
  assert_status 1
  assert_stderr_has "ImportError: Could not resolve \"zlib\" (bare.mjs:1:17); 'zlib' is a Node.js built-in module, which is not available in the chidori sandbox"
  # require() and import() in a bundle stay calls at run time: catchable
  agent dyn.mjs <<'JS'
export default async () => {
  const out = [];
  try { await import("node:os"); } catch (e) { out.push(e.message); }
  try { require("node:net"); } catch (e) { out.push(e.message); }
  return out;
};
JS
  chid run --quiet "$T/dyn.mjs"
  assert_status 0
  assert_stdout "[\"Cannot find module 'node:os': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)\",\"Cannot find module 'node:net': it is not available in the chidori sandbox (it provides node:assert, node:buffer, node:crypto, node:events, node:fs, node:fs/promises, node:path, node:process, node:querystring, node:stream, node:string_decoder, node:timers, node:url, node:util)\"]"
}

@test "bundling leaves nothing behind in TMPDIR" {
  ts_agent
  mkdir "$T/tmp"
  TMPDIR="$T/tmp" chid run --quiet "$T/agent.ts" --input '{"n":1}'
  assert_status 0
  agent bad.ts <<'TS'
import os from "node:os";
export default () => os;
TS
  TMPDIR="$T/tmp" chid run --quiet "$T/bad.ts"
  assert_status 1
  [[ -z $(ls -A "$T/tmp") ]]
  TMPDIR="$T/nonexistent" chid run --quiet "$T/agent.ts" --input '{"n":1}'
  assert_status 2
  assert_stderr_has "create a temporary directory for bundling in $T/nonexistent"
}

@test "esbuild's box shows it only the agent's folder: a host file is not read, by symlink or absolute import" {
  esb=$(readlink -f "$BATS_TEST_DIRNAME/../../tools/node_modules/.bin/esbuild")
  [[ -x $esb ]] || skip "no esbuild in tools/ (make deps)"
  mkdir -p "$T/agent" "$T/host"
  echo '{"secret":"s3cr3t-host"}' >"$T/host/secret.json"
  ln -s "$T/host/secret.json" "$T/agent/link.json"
  agent agent/a.mjs <<'JS'
import s from "./link.json";
export default () => s;
JS
  # The control: the same esbuild outside a box reads the file through the link.
  run "$esb" --bundle --format=esm --log-level=error "$T/agent/a.mjs"
  [[ $status -eq 0 && $output == *s3cr3t-host* ]]
  # In its box (one process, and asked of the monitor by the broker) the link
  # leads nowhere: esbuild cannot resolve it.
  for broker in 0 1; do
    CHIDORI_RUN_BROKER=$broker chid run --quiet "$T/agent/a.mjs"
    assert_status 1
    assert_stderr_has 'agent error: ImportError: Could not resolve "./link.json" (a.mjs:1:14)'
    [[ $output$stderr != *s3cr3t* ]]
  done
  # An absolute import of the host file: named, never read.
  agent agent/b.mjs <<JS
import s from "$T/host/secret.json";
export default () => s;
JS
  for broker in 0 1; do
    CHIDORI_RUN_BROKER=$broker chid run --quiet "$T/agent/b.mjs"
    assert_status 1
    assert_stderr_has "agent error: ImportError: the agent imports '$T/host/secret.json', which is outside its directory $T/agent"
    [[ $output$stderr != *s3cr3t* ]]
  done
}

@test "a bundled agent's error through the broker maps to its own file and line" {
  agent m.mjs <<'JS'
import { f } from "./lib.mjs";
export default async () => f();
JS
  agent lib.mjs <<'JS'
export function f() {
  throw new TypeError("from lib");
}
JS
  for broker in 0 1; do
    CHIDORI_RUN_BROKER=$broker chid run --quiet "$T/m.mjs"
    assert_status 1
    assert_stderr_has "TypeError: from lib"
    assert_stderr_has "lib.mjs:2:"
  done
}

@test "through the broker, a bundler that hangs is killed at the run's deadline and the agent does not run" {
  mkdir -p "$T/bin"
  printf '#!/bin/sh\nsleep 100\n' >"$T/bin/esbuild"
  chmod +x "$T/bin/esbuild"
  agent a.mjs <<'JS'
export default () => "ran";
JS
  start=$SECONDS
  CHIDORI_RUN_BROKER=1 CHIDORI_ESBUILD="$T/bin/esbuild" chid run --quiet --deadline 2000 "$T/a.mjs"
  assert_status 2
  assert_stderr_has "esbuild did not finish within 2 s (its box's deadline); the agent was not run"
  [[ $output != *ran* ]]
  (( SECONDS - start < 30 ))
}
